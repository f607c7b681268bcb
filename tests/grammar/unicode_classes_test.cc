// Tests of grammar/unicode_classes: property lookup (short, long, script,
// binary, PROP=VALUE, unknown names), the shorthand classes in the three
// dialects (zapgram's convention is Python's; see the header), and case
// closure, checked against ICU's per-code-point answers and hand-picked
// code points.
#include "grammar/unicode_classes.h"

#include <unicode/uchar.h>

#include <algorithm>

#include "gtest/gtest.h"

namespace zapgram::grammar {
namespace {

bool In(const std::vector<CodepointRange>& r, uint32_t cp) {
  auto it = std::upper_bound(r.begin(), r.end(), cp,
                             [](uint32_t v, const CodepointRange& x) { return v < x.lo; });
  return it != r.begin() && std::prev(it)->hi >= cp;
}

bool Normalized(const std::vector<CodepointRange>& r) {
  for (size_t i = 0; i < r.size(); ++i) {
    if (r[i].lo > r[i].hi) return false;
    if (i > 0 && r[i].lo <= r[i - 1].hi + 1) return false;
  }
  return true;
}

TEST(UnicodeClassesTest, GeneralCategoriesAgreeWithIcuPerCodepoint) {
  struct Case {
    const char* name;
    uint32_t mask;
  };
  const Case cases[] = {{"L", U_GC_L_MASK},   {"Lu", U_GC_LU_MASK}, {"Ll", U_GC_LL_MASK},
                        {"Lt", U_GC_LT_MASK}, {"Lm", U_GC_LM_MASK}, {"Lo", U_GC_LO_MASK},
                        {"M", U_GC_M_MASK},   {"Mn", U_GC_MN_MASK}, {"N", U_GC_N_MASK},
                        {"Nd", U_GC_ND_MASK}, {"Nl", U_GC_NL_MASK}, {"No", U_GC_NO_MASK},
                        {"P", U_GC_P_MASK},   {"Pd", U_GC_PD_MASK}, {"S", U_GC_S_MASK},
                        {"Sm", U_GC_SM_MASK}, {"Z", U_GC_Z_MASK},   {"Zs", U_GC_ZS_MASK},
                        {"C", U_GC_C_MASK},   {"Cc", U_GC_CC_MASK}, {"Co", U_GC_CO_MASK}};
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<CodepointRange>> r = UnicodePropertyRanges(c.name);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status();
    EXPECT_TRUE(Normalized(*r)) << c.name;
    // Every 7th code point (plus the BMP densely) against u_charType.
    for (uint32_t cp = 0; cp <= kMaxCodepoint; cp += cp < 0x10000 ? 1 : 7) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;  // surrogates never match (no UTF-8)
      bool want = (U_MASK(u_charType(static_cast<UChar32>(cp))) & c.mask) != 0;
      ASSERT_EQ(In(*r, cp), want) << c.name << " U+" << std::hex << cp;
    }
  }
}

TEST(UnicodeClassesTest, LongNamesScriptsBinaryAndExplicitForms) {
  auto same = [](const char* a, const char* b) {
    absl::StatusOr<std::vector<CodepointRange>> x = UnicodePropertyRanges(a);
    absl::StatusOr<std::vector<CodepointRange>> y = UnicodePropertyRanges(b);
    ASSERT_TRUE(x.ok() && y.ok()) << a << " / " << b;
    EXPECT_EQ(*x, *y) << a << " / " << b;
  };
  same("Letter", "L");
  same("Uppercase_Letter", "Lu");
  same("Lowercase_Letter", "Ll");
  same("Decimal_Number", "Nd");
  same("Punctuation", "P");
  same("gc=Lu", "Lu");
  same("General_Category=Uppercase_Letter", "Lu");
  same("Script=Greek", "Greek");
  same("sc=Grek", "Greek");
  absl::StatusOr<std::vector<CodepointRange>> greek = UnicodePropertyRanges("Greek");
  ASSERT_TRUE(greek.ok());
  EXPECT_TRUE(In(*greek, 0x3B1));  // α
  EXPECT_FALSE(In(*greek, 'a'));
  absl::StatusOr<std::vector<CodepointRange>> any = UnicodePropertyRanges("Any");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(*any, (std::vector<CodepointRange>{{0, 0xD7FF}, {0xE000, kMaxCodepoint}}));
  absl::StatusOr<std::vector<CodepointRange>> ascii = UnicodePropertyRanges("ASCII");
  ASSERT_TRUE(ascii.ok());
  EXPECT_EQ(*ascii, (std::vector<CodepointRange>{{0, 0x7F}}));
  absl::StatusOr<std::vector<CodepointRange>> ws = UnicodePropertyRanges("White_Space");
  ASSERT_TRUE(ws.ok());
  EXPECT_TRUE(In(*ws, 0x3000));
}

TEST(UnicodeClassesTest, UnknownNamesAreErrorsNamingThem) {
  for (const char* name : {"NoSuchProperty", "Lx", "", "L}", "gc=Nope", "\xC3\xA9"}) {
    absl::StatusOr<std::vector<CodepointRange>> r = UnicodePropertyRanges(name);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_NE(r.status().message().find(std::string("'") + name + "'"), std::string::npos)
        << r.status();
  }
}

TEST(UnicodeClassesTest, PythonShorthandsAreUnicodeAware) {
  const auto& d = ShorthandRanges(ShorthandClass::kDigit, ShorthandDialect::kPython);
  const auto& w = ShorthandRanges(ShorthandClass::kWord, ShorthandDialect::kPython);
  const auto& s = ShorthandRanges(ShorthandClass::kSpace, ShorthandDialect::kPython);
  EXPECT_TRUE(In(d, '7'));
  EXPECT_TRUE(In(d, 0x0663));   // ARABIC-INDIC DIGIT THREE
  EXPECT_FALSE(In(d, 0x00B2));  // SUPERSCRIPT TWO is No, not Nd (str.isdecimal() is false)
  EXPECT_FALSE(In(d, 'a'));
  for (uint32_t cp : std::initializer_list<uint32_t>{'a', 'Z', '_', '5', 0xE9u, 0x3B1u, 0x4E00u, 0x00B2u, 0x2160u, 0x0663u}) {
    EXPECT_TRUE(In(w, cp)) << std::hex << cp;  // letters, digits, No, Nl, CJK
  }
  for (uint32_t cp : std::initializer_list<uint32_t>{' ', '-', '.', 0x0301u /* combining acute: Mn */, 0x2028u}) {
    EXPECT_FALSE(In(w, cp)) << std::hex << cp;
  }
  for (uint32_t cp : std::initializer_list<uint32_t>{' ', '\t', '\n', '\v', '\f', '\r', 0x1Cu, 0x1Fu, 0x85u, 0xA0u, 0x2003u,
                      0x2028u, 0x3000u}) {
    EXPECT_TRUE(In(s, cp)) << std::hex << cp;
  }
  for (uint32_t cp : std::initializer_list<uint32_t>{'a', 0x200Bu, 0xFEFFu, 0x180Eu}) EXPECT_FALSE(In(s, cp)) << std::hex << cp;
}

TEST(UnicodeClassesTest, AsciiAndEcmaDialects) {
  using V = std::vector<CodepointRange>;
  EXPECT_EQ(ShorthandRanges(ShorthandClass::kDigit, ShorthandDialect::kPythonAscii),
            (V{{'0', '9'}}));
  EXPECT_EQ(ShorthandRanges(ShorthandClass::kWord, ShorthandDialect::kPythonAscii),
            (V{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}));
  EXPECT_EQ(ShorthandRanges(ShorthandClass::kSpace, ShorthandDialect::kPythonAscii),
            (V{{0x09, 0x0D}, {0x20, 0x20}}));
  EXPECT_EQ(ShorthandRanges(ShorthandClass::kWord, ShorthandDialect::kEcma),
            ShorthandRanges(ShorthandClass::kWord, ShorthandDialect::kPythonAscii));
  const auto& es = ShorthandRanges(ShorthandClass::kSpace, ShorthandDialect::kEcma);
  EXPECT_TRUE(In(es, 0xFEFF));  // ECMA: BOM is whitespace
  EXPECT_FALSE(In(es, 0x1C));   // ... and U+001C is not
  EXPECT_FALSE(In(es, 0x85));
}

TEST(UnicodeClassesTest, CaseClosure) {
  using V = std::vector<CodepointRange>;
  EXPECT_EQ(CaseClosure({{'k', 'k'}}, false), (V{{'K', 'K'}, {'k', 'k'}, {0x212A, 0x212A}}));
  EXPECT_EQ(CaseClosure({{0x212A, 0x212A}}, false),
            (V{{'K', 'K'}, {'k', 'k'}, {0x212A, 0x212A}}));
  EXPECT_EQ(CaseClosure({{'s', 's'}}, false), (V{{'S', 'S'}, {'s', 's'}, {0x17F, 0x17F}}));
  EXPECT_EQ(CaseClosure({{0xE9, 0xE9}}, false), (V{{0xC9, 0xC9}, {0xE9, 0xE9}}));
  EXPECT_EQ(CaseClosure({{'1', '1'}}, false), (V{{'1', '1'}}));
  // Sigma: σ, ς and Σ fold together.
  EXPECT_EQ(CaseClosure({{0x3C3, 0x3C3}}, false),
            (V{{0x3A3, 0x3A3}, {0x3C2, 0x3C3}}));
  // Turkic dotless/dotted i are not simple folds of i.
  EXPECT_EQ(CaseClosure({{'i', 'i'}}, false), (V{{'I', 'I'}, {'i', 'i'}}));
  // ASCII-only folding leaves the Kelvin sign out.
  EXPECT_EQ(CaseClosure({{'k', 'k'}}, true), (V{{'K', 'K'}, {'k', 'k'}}));
  EXPECT_EQ(CaseClosure({{0xE9, 0xE9}}, true), (V{{0xE9, 0xE9}}));
  // A closure is closed: every member's fold equals the fold of some member.
  V closed = CaseClosure({{'a', 'z'}, {0x3B1, 0x3C9}}, false);
  EXPECT_EQ(CaseClosure(closed, false), closed);
  for (uint32_t cp = 0; cp < 0x500; ++cp) {
    UChar32 f = u_foldCase(static_cast<UChar32>(cp), U_FOLD_CASE_DEFAULT);
    bool in_by_fold = (f >= 'a' && f <= 'z') || (f >= 0x3B1 && f <= 0x3C9);
    EXPECT_EQ(In(closed, cp), in_by_fold) << std::hex << cp;
  }
}

}  // namespace
}  // namespace zapgram::grammar
