// llguidance's Lark dialect (grammar/lark_llguidance.cc, its lowering
// grammar/lark_llguidance_lowering.cc, transforms/llguidance_json.h), one
// test per construct of llguidance's docs/syntax.md, with our own examples:
//  - how the dialect is chosen (detected, explicit, refused under kLark);
//  - languages: texts accepted and refused by the public Recognizer;
//  - special tokens and token ids: masks on Llama 3 (a token by id or name
//    is allowed only as that id; ranges clipped to the vocabulary);
//  - refusals naming the construct and why;
//  - the llguidance grammars of the shared data folder.
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "grammar/lark_lowering.h"
#include "grammar/lark_reader.h"
#include "tests/support/test_paths.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram {
namespace {

absl::StatusOr<Grammar> Llg(const std::string& text, GrammarFormat format = GrammarFormat::kLark) {
  return Grammar::FromText(format, text, LoadOptions{}, "t.lark");
}

bool Accepts(const Grammar& g, std::string_view text) {
  Recognizer r(g);
  for (char c : text) {
    if (!r.Feed(static_cast<uint8_t>(c))) return false;
  }
  return r.IsAccepting();
}

// Every `yes` text is a sentence and no `no` text is.
void ExpectLanguage(const std::string& grammar, const std::vector<std::string>& yes,
                    const std::vector<std::string>& no, GrammarFormat format = GrammarFormat::kLark) {
  absl::StatusOr<Grammar> g = Llg(grammar, format);
  ASSERT_TRUE(g.ok()) << g.status() << "\n" << grammar;
  for (const std::string& t : yes) EXPECT_TRUE(Accepts(*g, t)) << "should accept \"" << t << "\" in\n" << grammar;
  for (const std::string& t : no) EXPECT_FALSE(Accepts(*g, t)) << "should refuse \"" << t << "\" in\n" << grammar;
}

void ExpectError(const std::string& grammar, const std::vector<std::string>& parts,
                 GrammarFormat format = GrammarFormat::kLark) {
  absl::StatusOr<Grammar> g = Llg(grammar, format);
  ASSERT_FALSE(g.ok()) << grammar;
  for (const std::string& p : parts) {
    EXPECT_NE(g.status().message().find(p), std::string_view::npos)
        << "'" << p << "' not in: " << g.status().message();
  }
}

TEST(LarkLlguidance, DialectIsDetectedChosenOrRefused) {
  absl::StatusOr<grammar::LarkGrammar> plain = grammar::ReadLark("start: \"a\"\n", "t.lark");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->llguidance);
  absl::StatusOr<grammar::LarkGrammar> marked = grammar::ReadLark("%llguidance {}\nstart: \"a\"\n", "t.lark");
  ASSERT_TRUE(marked.ok()) << marked.status();
  EXPECT_TRUE(marked->llguidance);
  EXPECT_EQ(marked->dialect_reason, "'%llguidance' at t.lark:1:1");
  absl::StatusOr<grammar::LarkGrammar> used = grammar::ReadLark("start: A{2}\nA: \"a\"\n", "t.lark");
  ASSERT_TRUE(used.ok()) << used.status();
  EXPECT_EQ(used->dialect_reason, "'{M,N}' (repetition) at t.lark:1:9");
  grammar::LarkReadOptions explicit_options;
  explicit_options.dialect = grammar::LarkDialect::kLlguidance;
  absl::StatusOr<grammar::LarkGrammar> chosen = grammar::ReadLark("start: \"a\"\n", "t.lark", explicit_options);
  ASSERT_TRUE(chosen.ok());
  EXPECT_TRUE(chosen->llguidance);
  grammar::LarkReadOptions lark_only;
  lark_only.dialect = grammar::LarkDialect::kLark;
  absl::StatusOr<grammar::LarkGrammar> refused = grammar::ReadLark("start: <|x|>\n", "t.lark", lark_only);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("t.lark:1:8: a special token '<...>' is llguidance's Lark syntax"),
            std::string_view::npos)
      << refused.status();
}

// Lark's lexer and llguidance's in-context lexemes differ on this grammar:
// the same text is refused as plain Lark and accepted in llguidance's dialect.
TEST(LarkLlguidance, LexemesAreMatchedInContext) {
  const std::string text = "start: \"a\" X\nX: /a+/\n";
  absl::StatusOr<Grammar> lark = Llg(text);
  ASSERT_TRUE(lark.ok()) << lark.status();
  EXPECT_FALSE(Accepts(*lark, "aaa"));  // Lark's lexer takes "aaa" as one X
  ExpectLanguage(text, {"aa", "aaa"}, {"a", "b"}, GrammarFormat::kLlguidanceLark);
}

// Where llguidance's greedy lexer would not split two adjacent lexemes the
// way the CFG may, the grammar loads with a warning naming them.
TEST(LarkLlguidance, GreedyLexemesWarned) {
  auto warnings = [](const std::string& text) {
    absl::StatusOr<Grammar> g = Llg(text, GrammarFormat::kLlguidanceLark);
    EXPECT_TRUE(g.ok()) << g.status();
    return g.ok() ? g->warnings() : std::vector<std::string>{};
  };
  const std::vector<std::string> w = warnings("start: W W\nW: /[a-z]+/\n");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("t.lark:1:8: W then W: the first can go on"), std::string::npos) << w[0];
  ASSERT_EQ(warnings("start: W+\nW: /[a-z]+/\n").size(), 1u);
  EXPECT_EQ(warnings("start: W \" \" W\nW: /[a-z]+/\n").size(), 0u);
  EXPECT_EQ(warnings("start: /[0-9]/+ \"x\"\n").size(), 0u);
  EXPECT_EQ(warnings("start: \"a\" X\nX: /a+/\n").size(), 0u);
}

TEST(LarkLlguidance, MinorSyntax) {
  // {M,N}, {N}, {M,}, {,N} on items and groups; '-' in names; both comments.
  ExpectLanguage("%llguidance {}\n"
                 "start: ab-pair{2} c{1,} d{,2} e-x{2,3}   // a comment\n"
                 "ab-pair: (\"a\" \"b\")   # another\n"
                 "c: \"c\"\nd: \"d\"\ne-x: \"e\"\n",
                 {"ababcee", "ababcccddeee"}, {"abcee", "ababee", "ababcdddee", "ababceeee"});
  ExpectLanguage("start: /[0-9]/{3}\n", {"123"}, {"12", "1234"});
}

TEST(LarkLlguidance, IgnoreBetweenLexemesNotAtTheStart) {
  const std::string g = "%llguidance {}\n%ignore /[ \\t]+/\nstart: \"A\" \"!\" NAME\nNAME: /[a-z]+/\n";
  ExpectLanguage(g, {"A!x", "A  ! \txy", "A!xy  "}, {" A!x", "A!x y", "A!"});
  ExpectLanguage("%llguidance {\"allow_initial_skip\": true}\n%ignore \" \"\nstart: \"A\" \"B\"\n", {" AB", "A  B"},
                 {"A\tB"});
  // ignore_once: the %ignore regex is the whole span between two lexemes.
  ExpectLanguage("%llguidance { \"ignore_once\": true }\n%ignore /[ \\t]{1,3}/\nstart: \"A\" \"!\"\n",
                 {"A!", "A !", "A   !"}, {"A    !", "A  \t  !"});
  // Several %ignore lines: any of them; also a terminal and a string.
  ExpectLanguage("%llguidance {}\n%ignore WS\n%ignore \"#\"\nWS: \" \"\nstart: \"a\" \"b\"\n", {"a #b", "a##  b"},
                 {"a-b"});
}

TEST(LarkLlguidance, IntersectionAndNegation) {
  ExpectLanguage("ASCII_LINES: /[a-zA-Z \\n]*/ & ~/(?s:.*)\\n\\n(?s:.*)/\nstart: ASCII_LINES\n",
                 {"", "ab\ncd", "a b\n"}, {"ab\n\ncd", "\n\n", "x1"});
  // `&` binds tighter than `|`; `~` tighter than `+`.
  ExpectLanguage("T: /[a-c]+/ & /a.*/ | \"zz\"\nstart: T\n", {"abc", "zz", "a"}, {"bc", "z"});
  // (~"a"){2} & a*: two parts, neither "a": every a^n but "a".
  ExpectLanguage("T: ~\"a\"{2} & /a*/\nstart: T\n", {"", "aa", "aaa"}, {"a", "b"});
  ExpectLanguage("T: ~(\"a\"{2}) & /a*/\nstart: T\n", {"", "a", "aaa"}, {"aa"});
  ExpectError("start: ~\"a\"\n", {"t.lark:1:8", "'~' (negation) may be used in terminal definitions only"});
  ExpectError("start: A\nA: \"a\" &\n", {"'&' or '~' must be followed by an item"});
  // Stacked negations count as nesting (each is a group of the terminal's regex).
  ExpectError("start: A\nA: " + std::string(20000, '~') + "\"a\"\n", {"nesting deeper than 10000 (max_nesting)"});
}

TEST(LarkLlguidance, StructuredRegexSubstrings) {
  ExpectLanguage("start: %regex { \"substring_chunks\": [\"abc\", \"de\", \"fg\"] }\n",
                 {"", "abc", "de", "abcde", "defg", "abcdefg", "fg"}, {"ab", "cde", "abcfg", "d"});
  ExpectLanguage("start: %regex { \"substring_words\": \"foo bar. baz\" }\n",
                 {"foo bar", "bar.", ". baz", "foo bar. baz", " "}, {"fo", "oo bar", "bar baz"});
  ExpectLanguage("X: %regex { \"substring_chars\": \"ab c\" }\nstart: X\n", {"b c", "ab", ""}, {"ac", "ca"});
  ExpectError("start: %regex { \"type\": \"number\" }\n", {"%regex: unknown key \"type\""});
}

TEST(LarkLlguidance, InlineJsonSchema) {
  const std::string g =
      "start: TEXT | fun_call\n"
      "TEXT: /[^{](.|\\n)*/\n"
      "fun_call: %json {\n"
      "  \"type\": \"object\",\n"
      "  \"properties\": {\n"
      "    \"name\": { \"const\": \"get_weather\" },\n"
      "    \"parameters\": { \"type\": \"object\", \"properties\": { \"city\": { \"type\": \"string\" } },\n"
      "                    \"required\": [\"city\"] }\n"
      "  },\n"
      "  \"required\": [\"name\", \"parameters\"]\n"
      "}\n";
  ExpectLanguage(g,
                 {"There is no function I can call", "{\"name\":\"get_weather\", \"parameters\": {\"city\":\"Seattle\"}}",
                  "{\"name\":\"get_weather\",\"parameters\":{\"city\":\"\"}}"},
                 {"{\"name\":\"other\",\"parameters\":{\"city\":\"x\"}}", "{\"name\":\"get_weather\"}", "{}"});
  // x-guidance: compact JSON.
  ExpectLanguage("start: \"=\" %json { \"x-guidance\": {\"whitespace_flexible\": false}, \"type\": \"array\", "
                 "\"items\": {\"type\": \"integer\"} }\n",
                 {"=[1,2]", "=[]"}, {"=[1, 2]", "= [1]"});
  ExpectError("start: %json { \"x-guidance\": {\"whitespace_pattern\": \" \"}, \"type\": \"integer\" }\n",
              {"t.lark:1:8: %json: x-guidance.whitespace_pattern: is not supported"});
  ExpectError("start: %json { \"type\": \"integer\" \n", {"unterminated %json block"});
  ExpectError("A: %json { \"type\": \"integer\" }\nstart: A\n", {"%json may be used in rules only"});
}

TEST(LarkLlguidance, LexemeOptions) {
  // lazy: the lexeme ends at the first place it can.
  ExpectLanguage("start: hd \"=x\"\nhd[lazy]: /(.|\\n)*/ \"<f\"\n", {"ab<f=x", "<f=x"}, {"a<fb<f=x"});
  ExpectLanguage("start: d \"x\"\nd[lazy]: /[0-9]+/\n", {"1x"}, {"12x"});
  // suffix: the body then the suffix, lazily; the next lexeme follows.
  ExpectLanguage("start: s \"!\"\ns[suffix=\"<end>\"]: /.*/\n", {"foo<end>!", "<end>!"}, {"foo<end>bar<end>!", "foo!"});
  // capture and temperature are observed, not part of the language.
  ExpectLanguage("start: w\nw[capture, temperature=0.7]: /[a-z]+/\n", {"abc"}, {"ab1"},
                 GrammarFormat::kLlguidanceLark);
  ExpectError("start: g\ng[stop=\"\\n\", max_tokens=10]: /.*/\n",
              {"t.lark:2:3: rule attribute 'stop' (rule 'g') is not supported", "rolling back tokens"});
  ExpectError("start: g\ng[lazy, max_tokens=10]: /.*/\n", {"'max_tokens' (rule 'g') is not supported"});
  ExpectError("start: g\ng[lazy]: x\nx: \"a\"\n", {"refers to the rule 'x'; it must be made of terminals only"});
  ExpectError("start: g\ng[capture, suffix=\"!\"]: /a*/\n", {"'capture' with 'suffix'"});
}

TEST(LarkLlguidance, RefusedConstructs) {
  ExpectError("start: <|python_tag|> @fcall\n", {"t.lark:1:23: '@name'", "zapgram reads one grammar text"});
  ExpectError("%llguidance { \"allow_invalid_utf8\": true }\nstart: \"a\"\n", {"allow_invalid_utf8"});
  ExpectError("%llguidance { \"ignore_once\": \"yes\" }\nstart: \"a\"\n", {"must be true or false"});
  ExpectError("%llguidance {}\nstart: A\nA.2: \"a\"\n", {"terminal priority on 'A'"});
  ExpectError("start: <[5-2]>\n", {"t.lark:1:10: token id range bounds are reversed"});
  ExpectError("start: A\nA: \"a\" <|x|>\n", {"special tokens '<...>' may be used in rules only"});
}

// Parametric rules (llguidance's docs/parametric.md), our own examples.
TEST(LarkLlguidance, ParametricRules) {
  // Each of x, y, z exactly once, in any order.
  ExpectLanguage("start: p::0\n"
                 "p::_ : \"\" %if is_ones([0:3])\n"
                 "     | \"x\" p::set_bit(0) %if bit_clear(0)\n"
                 "     | \"y\" p::set_bit(1) %if bit_clear(1)\n"
                 "     | \"z\" p::set_bit(2) %if not(bit_set(2))\n",
                 {"xyz", "zxy", "yzx"}, {"", "xy", "xxyz", "xyzx"});
  // At most three x's, counted in bits 0..3, then a tail checked by eq.
  ExpectLanguage("start: c::0x0\n"
                 "c::_ : \"x\" c::incr([0:4]) %if lt([0:4], 3)\n"
                 "     | \"!\" %if eq([0:4], 2)\n"
                 "     | \"?\" %if or(eq(_, 0), ge([0:4], 3))\n",
                 {"xx!", "?", "xxx?"}, {"x!", "xxxx?", "x?"});
  // One or two of a, b, c, each at most once (bit_count_*).
  ExpectLanguage("start: k::0\n"
                 "k::_ : \"\" %if bit_count_ge(_, 1)\n"
                 "     | \"a\" k::set_bit(0) %if and(bit_clear(0), bit_count_lt(_, 2))\n"
                 "     | \"b\" k::set_bit(1) %if and(bit_clear(1), bit_count_lt(_, 2))\n"
                 "     | \"c\" k::set_bit(2) %if and(bit_clear(2), bit_count_lt(_, 2))\n",
                 {"a", "ba", "ca"}, {"", "abc", "aa"});
  // decr, bit_and, bit_or, clear_bit and a plain rule in between.
  ExpectLanguage("start: d::0x3\n"
                 "d::_ : w d::decr([0:2]) %if ne([0:2], 0)\n"
                 "     | e::bit_or(0x10) %if is_zeros([0:2])\n"
                 "e::_ : \".\" %if eq(_, 0x10)\n"
                 "w: \"w\"\n",
                 {"www."}, {"ww.", "wwww."});
  ExpectError("start: a::_\na::_: \"x\"\n", {"t.lark:1:11: '_' (the parameter) outside a parametric rule"});
  ExpectError("start: a\na::_: \"x\"\n", {"the parametric rule 'a' needs a parameter"});
  ExpectError("start: a::1\na: \"x\"\n", {"'a::...': the rule 'a' takes no parameter"});
  ExpectError("start: a::0\na::_: \"x\" a::set_bit(64)\n", {"set_bit(...): a bit index is 0..63"});
  ExpectError("start: a::0\na::_: \"x\" %if lt([3:2], 1)\n", {"a bit range [x:y] needs x < y <= 64"});
  ExpectError("start: \"x\" %if true\n", {"%if ends an alternative of a parametric rule"});
  // A parameter that keeps growing stops at the instance budget.
  ExpectError("start: a::0\na::_: \"x\" a::incr(_) | \"\"\n", {"max_parametric_instances"});
}

// ------------------------------------------------------------ masks

class LarkLlguidanceMasks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<Vocabulary> v = Vocabulary::Load(testing::DataPath("tokenizers/llama3.tokenizer.json"));
    ASSERT_TRUE(v.ok()) << v.status();
    vocab_ = new Vocabulary(*std::move(v));
  }
  static void TearDownTestSuite() {
    delete vocab_;
    vocab_ = nullptr;
  }
  static absl::StatusOr<CompiledGrammar> Compile(const std::string& text) {
    absl::StatusOr<Grammar> g = Llg(text);
    if (!g.ok()) return g.status();
    return CompiledGrammar::Compile(*g, *vocab_);
  }
  static std::vector<int32_t> Allowed(Matcher& m) {
    std::vector<uint32_t> words((vocab_->size() + 31) / 32 + 8, 0);
    m.ComputeMask(words.data());
    std::vector<int32_t> out;
    for (int32_t id = 0; id < vocab_->size(); ++id) {
      if ((words[id / 32] >> (id % 32)) & 1) out.push_back(id);
    }
    return out;
  }
  static Vocabulary* vocab_;
};
Vocabulary* LarkLlguidanceMasks::vocab_ = nullptr;

// The data folder's Llama 3 tokenizer (3.0: 128010 is
// <|reserved_special_token_5|>, where 3.1 has <|python_tag|>; 128006 is
// <|start_header_id|>). A special token by name or by id is allowed as that
// id only; its text spelled by normal tokens is not.
TEST_F(LarkLlguidanceMasks, SpecialTokenByNameAndById) {
  for (const std::string name : {"<|reserved_special_token_5|>", "<[128010]>"}) {
    absl::StatusOr<CompiledGrammar> g = Compile("start: " + name + " \"x\"\n");
    ASSERT_TRUE(g.ok()) << g.status();
    Matcher m(*g);
    EXPECT_EQ(Allowed(m), std::vector<int32_t>{128010}) << name;
    EXPECT_FALSE(m.AcceptBytes("<|reserved_special_token_5|>")) << name;
    ASSERT_TRUE(m.AcceptToken(128010)) << name;
    const std::vector<int32_t> after = Allowed(m);
    ASSERT_FALSE(after.empty());
    for (int32_t id : after) EXPECT_EQ(vocab_->token_bytes(id).substr(0, 1), "x") << id;
    ASSERT_TRUE(m.AcceptBytes("x"));
    EXPECT_TRUE(m.IsAccepting());
  }
}

TEST_F(LarkLlguidanceMasks, TokenIdRangesAreClippedToTheVocabulary) {
  // A range: the listed ids the vocabulary has.
  absl::StatusOr<CompiledGrammar> g = Compile("start: <[128002-128004,128010]>\n");
  ASSERT_TRUE(g.ok()) << g.status();
  Matcher m(*g);
  EXPECT_EQ(Allowed(m), (std::vector<int32_t>{128002, 128003, 128004, 128010}));
  // Negation: every id but the listed ones (EOS ids excepted).
  absl::StatusOr<CompiledGrammar> neg = Compile("start: <[^0-127999]>\n");
  ASSERT_TRUE(neg.ok()) << neg.status();
  Matcher mn(*neg);
  const std::vector<int32_t> specials = Allowed(mn);
  ASSERT_FALSE(specials.empty());
  EXPECT_GE(specials.front(), 128000);
  const std::vector<int32_t> eos = vocab_->eos_ids();
  ASSERT_FALSE(eos.empty());
  for (int32_t id : eos) EXPECT_FALSE(std::binary_search(specials.begin(), specials.end(), id)) << id;
  // The wildcard: every token of the vocabulary once, here before "!".
  absl::StatusOr<CompiledGrammar> any = Compile("start: <[*]> \"!\"\n");
  ASSERT_TRUE(any.ok()) << any.status();
  Matcher ma(*any);
  EXPECT_GT(Allowed(ma).size(), size_t{128000});
  ASSERT_TRUE(ma.AcceptToken(1000));
  ASSERT_TRUE(ma.AcceptBytes("!"));
  EXPECT_TRUE(ma.IsAccepting());
  // A single id is checked: out of range is an error, as for Token(...).
  absl::StatusOr<CompiledGrammar> bad = Compile("start: <[300000]>\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("out of range"), std::string_view::npos) << bad.status();
  absl::StatusOr<CompiledGrammar> unknown = Compile("start: <|no_such_token|>\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown token"), std::string_view::npos) << unknown.status();
}

// The doc's Llama 3.1 tool call (free text, or <|python_tag|> then JSON),
// with a special token this tokenizer has.
TEST_F(LarkLlguidanceMasks, ToolCallAfterPythonTag) {
  absl::StatusOr<CompiledGrammar> g = Compile(
      "start: TEXT | fun_call\nTEXT: /[^{](.|\\n)*/\n"
      "fun_call: <|start_header_id|> %json { \"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}, "
      "\"required\": [\"a\"] }\n");
  ASSERT_TRUE(g.ok()) << g.status();
  Matcher m(*g);
  const std::vector<int32_t> first = Allowed(m);
  EXPECT_TRUE(std::binary_search(first.begin(), first.end(), 128006));
  for (int32_t id : first) {
    if (id >= 128000) {
      EXPECT_EQ(id, 128006);
    }
  }
  ASSERT_TRUE(m.AcceptToken(128006));
  ASSERT_TRUE(m.AcceptBytes("{\"a\": 12}"));
  EXPECT_TRUE(m.IsAccepting());
}

// ------------------------------------------------------------ shared data

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(LarkLlguidance, SharedGrammarsLoadAndRfcXmlParses) {
  const std::string dir = testing::DataPath("grammars/lark/llguidance/");
  for (const std::string name : {"rfc.lark", "lark.lark"}) {
    absl::StatusOr<Grammar> g = Llg(ReadFile(dir + name), GrammarFormat::kLlguidanceLark);
    EXPECT_TRUE(g.ok()) << name << ": " << g.status();
  }
  absl::StatusOr<Grammar> rfc = Llg(ReadFile(dir + "rfc.lark"), GrammarFormat::kLlguidanceLark);
  ASSERT_TRUE(rfc.ok()) << rfc.status();
  const std::string xml = ReadFile(dir + "rfc.xml");
  ASSERT_FALSE(xml.empty());
  EXPECT_TRUE(Accepts(*rfc, xml));
  EXPECT_FALSE(Accepts(*rfc, xml.substr(0, xml.size() / 2)));
  // lark.lark (Lark's own grammar, in llguidance's dialect) reads itself once
  // %ignore may also come first: the file opens with a comment, which
  // llguidance's default (no initial skip) refuses.
  const std::string lark_text = ReadFile(dir + "lark.lark");
  absl::StatusOr<Grammar> strict = Llg(lark_text, GrammarFormat::kLlguidanceLark);
  ASSERT_TRUE(strict.ok()) << strict.status();
  EXPECT_FALSE(Accepts(*strict, lark_text));
  EXPECT_TRUE(Accepts(*strict, "start: \"a\"\n"));
  absl::StatusOr<Grammar> lark =
      Llg("%llguidance {\"allow_initial_skip\": true}\n" + lark_text, GrammarFormat::kLlguidanceLark);
  ASSERT_TRUE(lark.ok()) << lark.status();
  EXPECT_TRUE(Accepts(*lark, lark_text));
  EXPECT_TRUE(Accepts(*lark, "start: \"a\" b\nb: /x+/ -> bee\n"));
  EXPECT_FALSE(Accepts(*lark, "start: : \"a\"\n"));
}

}  // namespace
}  // namespace zapgram
