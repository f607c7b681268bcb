// Lark's Indenter (parser/indenter.h) on small grammars: the verdicts Lark
// gives (worked out by hand from lark/indenter.py's rules and checked with
// Debian's python3-lark when it was written), NextBytes against Feed at
// every byte, pruning on and off, rollback, the lowering's detection and
// errors, and the budget. SynCode's python.lark on the python traces is in
// tests/data/lark_data_test.cc and tests/masks/matcher_test.cc; the
// differential test against python3-lark in tests/data/lark_indenter_differential.py.
#include "parser/indenter.h"

#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "grammar/lark_lowering.h"
#include "parser/flat_grammar.h"
#include "pruning/compact.h"
#include "tests/support/ir_compile.h"

namespace zapgram::parser {
namespace {

constexpr std::string_view kBlocks = R"lark(
start: (_NL | stmt)*
?stmt: simple | compound
simple: NAME ["(" [NAME ("," NAME)*] ")"] _NL
compound: NAME ":" suite
suite: _NL _INDENT stmt+ _DEDENT
NAME: /[a-z]+/
_NL: /(\r?\n[\t ]*)+/
COMMENT: /#[^\n]*/
%ignore COMMENT
%ignore " "
%declare _INDENT _DEDENT
)lark";

FlatGrammar Compile(std::string_view lark, const grammar::LarkLoweringOptions& options = {}) {
  return testing::CompileLarkText(lark, options);
}

// Fed byte by byte with pruning on and off; NextBytes must announce exactly
// the bytes Feed takes.
bool Accepts(const FlatGrammar& flat, std::string_view input) { return testing::AcceptsByteByByte(flat, input); }

TEST(Indenter, BlocksOpenAndCloseWithTheIndentation) {
  const FlatGrammar flat = Compile(kBlocks);
  ASSERT_TRUE(flat.lexer->indenter.on());
  EXPECT_TRUE(Accepts(flat, "a\n"));
  EXPECT_TRUE(Accepts(flat, "a:\n  b\n"));
  EXPECT_TRUE(Accepts(flat, "a:\n  b\n  c\nd\n"));
  EXPECT_TRUE(Accepts(flat, "a:\n  b:\n    c\n  d\ne\n"));
  EXPECT_TRUE(Accepts(flat, "a:\n  b:\n    c\nd\n"));        // two dedents at once
  EXPECT_TRUE(Accepts(flat, "a:\n  b\n\n\n  c\n"));          // blank lines
  EXPECT_TRUE(Accepts(flat, "a:\n  b # note\n  c\n"));       // a comment before the newline
  EXPECT_TRUE(Accepts(flat, "\n\na\n"));
  EXPECT_FALSE(Accepts(flat, "a:\n  b\n c\n"));              // dedent between two levels
  EXPECT_FALSE(Accepts(flat, "a:\n  b\n    c\n"));           // unexpected indent
  EXPECT_FALSE(Accepts(flat, "a\n  b\n"));                   // indent after a simple statement
  EXPECT_FALSE(Accepts(flat, "a:\nb\n"));                    // a suite needs an indent
  EXPECT_FALSE(Accepts(flat, "a:\n  b"));                    // no newline after b
}

TEST(Indenter, TabsCountAsTabLenColumns) {
  const FlatGrammar flat = Compile(kBlocks);
  EXPECT_TRUE(Accepts(flat, "a:\n\tb\n        c\n"));         // a tab = 8 spaces
  EXPECT_FALSE(Accepts(flat, "a:\n\tb\n    c\n"));
  EXPECT_TRUE(Accepts(flat, "a:\n \tb\n         c\n"));       // 1 + 8 = 9
  grammar::LarkLoweringOptions four;
  four.indenter.tab_len = 4;
  const FlatGrammar flat4 = Compile(kBlocks, four);
  EXPECT_TRUE(Accepts(flat4, "a:\n\tb\n    c\n"));
  EXPECT_FALSE(Accepts(flat4, "a:\n\tb\n        c\n"));
}

TEST(Indenter, NoIndentationInsideBrackets) {
  const FlatGrammar flat = Compile(kBlocks);
  EXPECT_TRUE(Accepts(flat, "f(a,\n b)\n"));
  EXPECT_TRUE(Accepts(flat, "f(a,\n\n          b\n)\n"));
  EXPECT_TRUE(Accepts(flat, "a:\n  f(a,\nb)\n  c\n"));       // the column inside () is free
  EXPECT_FALSE(Accepts(flat, "a)\n"));                        // a close bracket at depth 0
  EXPECT_FALSE(Accepts(flat, "f(a\n"));                       // still open at the newline
}

TEST(Indenter, TheEndOfTheInputClosesEveryLevel) {
  const FlatGrammar flat = Compile(kBlocks);
  // The last newline keeps the level; the end of the input emits its dedent.
  EXPECT_TRUE(Accepts(flat, "a:\n  b\n  "));
  EXPECT_TRUE(Accepts(flat, "a:\n  b:\n    c\n    "));
  EXPECT_TRUE(Accepts(flat, "a:\n  b:\n    c\n  "));
  EXPECT_FALSE(Accepts(flat, "a:\n  b\n "));                  // between 0 and 2
}

TEST(Indenter, RollbackRestoresTheIndentation) {
  const FlatGrammar flat = Compile(kBlocks);
  RecognizerOptions options;
  options.max_rollback = 64;
  Recognizer r = pruning::MakeRecognizer(&flat, options);
  const std::string head = "a:\n  b:\n    c\n";
  ASSERT_EQ(r.FeedBytes(head), head.size());
  std::vector<uint32_t> key_before;
  ASSERT_TRUE(r.CanonicalState(&key_before));
  ASSERT_EQ(r.FeedBytes("d\ne\n"), 4u);
  ASSERT_TRUE(r.Rollback(4));
  std::vector<uint32_t> key_after;
  ASSERT_TRUE(r.CanonicalState(&key_after));
  EXPECT_EQ(key_before, key_after);
  // At 4 columns after the rollback: `d` is inside the inner block.
  EXPECT_EQ(r.FeedBytes("    d\n"), 6u);
  EXPECT_EQ(r.FeedBytes("  e\n"), 4u);
  EXPECT_EQ(r.FeedBytes(" f\n"), 1u);  // at `f` the newline lands between levels 0 and 2
}

TEST(Indenter, StatesOfDifferentIndentationHaveDifferentKeys) {
  const FlatGrammar flat = Compile(kBlocks);
  RecognizerOptions options;
  Recognizer one = pruning::MakeRecognizer(&flat, options);
  Recognizer two = pruning::MakeRecognizer(&flat, options);
  const std::string a = "a:\n  b\n  ", b = "a:\n    b\n    ";
  ASSERT_EQ(one.FeedBytes(a), a.size());
  ASSERT_EQ(two.FeedBytes(b), b.size());
  std::vector<uint32_t> k1, k2;
  ASSERT_TRUE(one.CanonicalState(&k1));
  ASSERT_TRUE(two.CanonicalState(&k2));
  EXPECT_NE(k1, k2);  // the same items, a different stack: " c" is a dedent for one only
}

TEST(Indenter, TheStackIsBounded) {
  const FlatGrammar flat = Compile(kBlocks);
  RecognizerOptions options;
  options.limits.max_indent_levels = 2;
  Recognizer r = pruning::MakeRecognizer(&flat, options);
  const std::string text = "a:\n b:\n  c:\n   d\n";
  const size_t fed = r.FeedBytes(text);
  EXPECT_LT(fed, text.size());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_NE(r.status().message().find("max_indent_levels = 2"), std::string_view::npos) << r.status();
}

TEST(Indenter, DetectedOnlyWhereTheGrammarDeclaresItsTokens) {
  // Detected: %declare _INDENT _DEDENT and a _NL token.
  absl::StatusOr<grammar::Grammar> on = grammar::ReadLarkGrammar(kBlocks, "test.lark");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_EQ(grammar::DescribeIndenter(*on),
            "indenter: on (newline _NL, indent _INDENT, dedent _DEDENT, open brackets [LPAR], "
            "close brackets [RPAR], tab 8)");
  // Off: the declared tokens have no producer, named in the error.
  grammar::LarkLoweringOptions off;
  off.indenter.mode = IndenterOptions::Mode::kOff;
  absl::StatusOr<grammar::Grammar> refused = grammar::ReadLarkGrammar(kBlocks, "test.lark", {}, off);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("is %declare'd and has no definition"), std::string_view::npos)
      << refused.status();
  EXPECT_NE(refused.status().message().find("the indenter option is off"), std::string_view::npos) << refused.status();
  // Not detected without the tokens; asking for it then is an error.
  constexpr std::string_view kFlat = "start: NAME+\nNAME: /[a-z]+/\n%ignore \" \"\n";
  absl::StatusOr<grammar::Grammar> plain = grammar::ReadLarkGrammar(kFlat, "flat.lark");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(grammar::DescribeIndenter(*plain), "indenter: off");
  grammar::LarkLoweringOptions required;
  required.indenter.mode = IndenterOptions::Mode::kOn;
  absl::StatusOr<grammar::Grammar> missing = grammar::ReadLarkGrammar(kFlat, "flat.lark", {}, required);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no newline terminal _NL or _NEWLINE"), std::string_view::npos)
      << missing.status();
  // Another %declare'd terminal is still refused, by name.
  constexpr std::string_view kOther = R"(
start: NAME _OTHER _NL
NAME: /[a-z]+/
_NL: /\n/
%declare _INDENT _DEDENT _OTHER
)";
  absl::StatusOr<grammar::Grammar> unknown = grammar::ReadLarkGrammar(kOther, "other.lark");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("_OTHER is %declare'd"), std::string_view::npos) << unknown.status();
}

TEST(Indenter, CountsFollowLarkOnTheTextAfterTheLastNewline) {
  IndenterTable t;
  t.nl = 0;
  t.tab_len = 8;
  t.bracket = {0, 1, -1};
  uint32_t count = kNoCount;
  for (char c : std::string_view("\n  # x\n \t")) count = StepIndentCount(t, count, static_cast<uint8_t>(c));
  EXPECT_EQ(count, 9u);
  std::vector<uint32_t> after;
  // [0] -> 9: one indent.
  IndentEffect e = IndentAfterToken(t, InitialIndentState(), 0, 9, 10, &after);
  EXPECT_EQ(e.kind, IndentEffect::kPassed);
  EXPECT_EQ(e.indents, 1u);
  EXPECT_EQ(after, (std::vector<uint32_t>{kNoCount, 0, 9}));
  // [0 4 9] -> 4: one dedent; -> 2: dead; -> 0: two dedents.
  const std::vector<uint32_t> deep = {kNoCount, 0, 4, 9};
  e = IndentAfterToken(t, deep, 0, 4, 10, &after);
  EXPECT_EQ(e.dedents, 1u);
  EXPECT_EQ(IndentAfterToken(t, deep, 0, 2, 10, &after).kind, IndentEffect::kDead);
  EXPECT_EQ(IndentAfterToken(t, deep, 0, 0, 10, &after).dedents, 2u);
  // No newline in the token: dead. Inside brackets: dropped.
  EXPECT_EQ(IndentAfterToken(t, deep, 0, kNoCount, 10, &after).kind, IndentEffect::kDead);
  EXPECT_EQ(IndentAfterToken(t, {kNoCount, 1}, 0, 3, 10, &after).kind, IndentEffect::kDropped);
  // Brackets: depth after the token; a close at depth 0 is dead.
  IndentAfterToken(t, InitialIndentState(), 1, kNoCount, 10, &after);
  EXPECT_EQ(after[kIndentDepth], 1u);
  EXPECT_EQ(IndentAfterToken(t, InitialIndentState(), 2, kNoCount, 10, &after).kind, IndentEffect::kDead);
  // Over the budget.
  EXPECT_EQ(IndentAfterToken(t, deep, 0, 12, 2, &after).kind, IndentEffect::kOverBudget);
}

}  // namespace
}  // namespace zapgram::parser
