// Lark lexing semantics, end to end: Lark text -> lowering -> lexer ->
// recognizer with lanes and guards (docs/lark-lexing.md). Each case is one
// where a plain CFG over the terminals (any split of the input into tokens)
// answers differently from Lark's lexer.
#include "parser/lexer.h"

#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "re2/re2.h"
#include "grammar/lark_lowering.h"
#include "parser/flat_grammar.h"
#include "pruning/compact.h"
#include "api/grammar_data.h"
#include "nlohmann/json.hpp"
#include "tests/support/ir_compile.h"
#include "tests/support/test_paths.h"
#include "zapgram/grammar.h"

namespace zapgram::parser {
namespace {

FlatGrammar Compile(std::string_view lark) { return testing::CompileLarkText(lark); }

// Whether `input` is a sentence; checked with pruning on and off, and
// through NextBytes (each accepted byte must have been announced, and a
// rejected one must not have been).
bool Accepts(const FlatGrammar& flat, std::string_view input) { return testing::AcceptsByteByByte(flat, input); }

constexpr std::string_view kReturnGrammar = R"(
start: stmt+
stmt: "return" NAME ";" -> ret
    | NAME ";"
%import common.CNAME -> NAME
%import common.WS
%ignore WS
)";

TEST(LarkLexing, KeywordPrefixOfIdentifierIsOneIdentifier) {
  FlatGrammar g = Compile(kReturnGrammar);
  EXPECT_TRUE(Accepts(g, "return x;"));
  EXPECT_TRUE(Accepts(g, "returnx;"));   // NAME "returnx"
  EXPECT_TRUE(Accepts(g, "return returnx;"));
  EXPECT_FALSE(Accepts(g, "return;"));   // "return" is never a NAME
  EXPECT_FALSE(Accepts(g, "returnx y;"));
}

TEST(LarkLexing, KeywordCannotBeSplitFromFollowingIdentifier) {
  // A plain CFG reads "ifx" as "if" "x"; Lark's lexer reads one NAME.
  FlatGrammar g = Compile(R"(
start: "if" NAME
%import common.CNAME -> NAME
%import common.WS
%ignore WS
)");
  EXPECT_TRUE(Accepts(g, "if x"));
  EXPECT_FALSE(Accepts(g, "ifx"));
  EXPECT_FALSE(Accepts(g, "if"));
}

TEST(LarkLexing, NumberIsLongestMatchWithLookahead) {
  FlatGrammar g = Compile(R"(
start: NUMBER NAME?
%import common.NUMBER
%import common.CNAME -> NAME
)");
  EXPECT_TRUE(Accepts(g, "1.5e3"));  // one NUMBER
  EXPECT_TRUE(Accepts(g, "1.5ex"));  // "1.5" then NAME "ex": "1.5e" is no number
  EXPECT_TRUE(Accepts(g, "15"));
  EXPECT_TRUE(Accepts(g, "1.5e3x1"));    // NUMBER "1.5e3", NAME "x1"
  EXPECT_FALSE(Accepts(g, "1.5e3.5"));  // NUMBER "1.5e3", NUMBER ".5"
  EXPECT_TRUE(Accepts(g, "1.5e"));      // NUMBER "1.5", NAME "e"
}

TEST(LarkLexing, LongerOperatorWins) {
  FlatGrammar g = Compile(R"(
start: NAME "-" "-" NAME -> two_minus
%import common.CNAME -> NAME
%import common.WS
%ignore WS
_DEC: "--"
other: _DEC
)");
  // Without "--" among the lexer's tokens, a--b is two minus signs.
  EXPECT_TRUE(Accepts(g, "a--b"));
  FlatGrammar h = Compile(R"(
start: NAME "-" "-" NAME | NAME "--" NAME "!"
%import common.CNAME -> NAME
%import common.WS
%ignore WS
)");
  EXPECT_FALSE(Accepts(h, "a--b"));   // the lexer sees "--"
  EXPECT_TRUE(Accepts(h, "a- -b"));
  EXPECT_TRUE(Accepts(h, "a--b!"));
}

TEST(LarkLexing, CommentsNextToOperators) {
  FlatGrammar g = Compile(R"(
start: NAME "/" NAME | NAME NAME
%import common.CNAME -> NAME
%import common.C_COMMENT
%import common.WS
%ignore WS
%ignore C_COMMENT
)");
  EXPECT_TRUE(Accepts(g, "x/y"));
  EXPECT_TRUE(Accepts(g, "x/*c*/y"));   // a comment, then NAME NAME
  EXPECT_TRUE(Accepts(g, "x /*c*/ / y"));
  EXPECT_FALSE(Accepts(g, "x/*c"));    // unterminated: no sentence (yet)
  // Lazy comments end at the first */: the second */ is no token.
  EXPECT_FALSE(Accepts(g, "x /* a */ y */"));
  EXPECT_TRUE(Accepts(g, "x /* a */ y /* b */"));
}

TEST(LarkLexing, LongerKeywordAndIdentifier) {
  FlatGrammar g = Compile(R"(
start: (IN | INT | NAME)+
IN: "in"
INT: "int"
%import common.CNAME -> NAME
%import common.WS
%ignore WS
)");
  EXPECT_TRUE(Accepts(g, "in int inx"));
  FlatGrammar only_int = Compile(R"(
start: "int" "in" | NAME "!"
%import common.CNAME -> NAME
%import common.WS
%ignore WS
)");
  EXPECT_TRUE(Accepts(only_int, "int in"));
  EXPECT_FALSE(Accepts(only_int, "intin"));  // one NAME
  EXPECT_TRUE(Accepts(only_int, "intin!"));
  // A terminal only an unreachable rule uses is not in Lark's lexer.
  FlatGrammar unused = Compile(R"(
start: "int" "in"
unused: NAME
%import common.CNAME -> NAME
)");
  EXPECT_TRUE(Accepts(unused, "intin"));
}

TEST(LarkLexing, HigherPriorityTerminalWinsEvenWhenShorter) {
  // Lark's order: priority first. A.2 matches "ab" in "abc", so "abc" is A B.
  FlatGrammar g = Compile(R"(
start: A B | B
A.2: "ab"
B: /[a-z]+/
)");
  EXPECT_TRUE(Accepts(g, "abc"));
  EXPECT_TRUE(Accepts(g, "xyz"));
  FlatGrammar only_b = Compile(R"(
start: B
A.2: "ab"
B: /[a-z]+/
%ignore A
)");
  EXPECT_FALSE(Accepts(only_b, "ab"));  // ignored A, then nothing: no B
  EXPECT_TRUE(Accepts(only_b, "abc"));  // A (ignored) then B "c"
  EXPECT_TRUE(Accepts(only_b, "xab"));  // B starts at x and takes all
}

TEST(LarkLexing, IgnoredTokensAroundAndEmptyInput) {
  FlatGrammar g = Compile(R"(
start: NAME*
%import common.CNAME -> NAME
%import common.WS
%ignore WS
)");
  EXPECT_TRUE(Accepts(g, ""));
  EXPECT_TRUE(Accepts(g, "   "));
  EXPECT_TRUE(Accepts(g, "  a  b  "));
  EXPECT_FALSE(Accepts(g, "  a  b  !"));
}

TEST(LarkLexing, CaseInsensitiveKeywordBesideCaseSensitiveName) {
  // "select"i keeps a rank of its own (flags not a subset of NAME's), and a
  // NAME equal to it is retyped.
  FlatGrammar g = Compile(R"(
start: "select"i NAME
%import common.CNAME -> NAME
%import common.WS
%ignore WS
)");
  EXPECT_TRUE(Accepts(g, "SELECT x"));
  EXPECT_TRUE(Accepts(g, "select x"));
  EXPECT_FALSE(Accepts(g, "selectx"));
  EXPECT_FALSE(Accepts(g, "select select"));
}

TEST(LarkLexing, DeclaredTerminalIsRefused) {
  absl::StatusOr<grammar::Grammar> g = grammar::ReadLarkGrammar(R"(
start: _INDENT "x"
%declare _INDENT
)",
                                                                "t.lark");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("%declare'd"), std::string::npos) << g.status();
}

TEST(LarkLexing, EmptyTokenIsRefused) {
  absl::StatusOr<grammar::Grammar> g = grammar::ReadLarkGrammar(R"(
start: A "x"
A: /a*/
)",
                                                                "t.lark");
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<FlatGrammar> flat = BuildFlatGrammar(*g);
  ASSERT_FALSE(flat.ok());
  EXPECT_NE(flat.status().message().find("matches the empty string"), std::string::npos)
      << flat.status();
}


// ---------------------------------------------------------------------------
// Differential test against an independent model of Lark's basic lexer: the
// terminals in Lark's order (written out by hand below, not computed by
// zapgram), each matched with RE2's leftmost-first semantics — the same as
// Python's `re` for patterns without backreferences or lookaround — the
// first that matches wins, keywords retyped, ignored tokens dropped. The
// grammar is `start: item*` with `item` one of a random subset of the
// tokens, so a text is a sentence iff it lexes and every token is in the
// subset.

struct ReferenceToken {
  std::string name;
  std::string regex;  // RE2 syntax
  bool ignored = false;
  bool keyword = false;  // a string NAME matches in full: NAME's retype when NAME is lexed
};

// Lark's try order for kDifferentialTerminals: priority 2 first; then the
// unbounded regexes by pattern length (longest first), then strings by
// length, then name. Lark lexes only terminals some rule uses or %ignore
// names; IF, IN and INT are tried on their own only when NAME is not lexed
// (else they are NAME's retypes).
const std::vector<ReferenceToken>& ReferenceOrder() {
  static const auto* order = new std::vector<ReferenceToken>{
      {"HASHBANG", "#!"},
      {"NUMBER", "[0-9]+(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"},
      {"COMMENT", "/\\*(?s:.)*?\\*/", true},
      {"NAME", "[a-z_][a-z0-9_]*"},
      {"LINE", "//[^\\n]*", true},
      {"WS", "[ \\n]+", true},
      {"INT", "int", false, true},
      {"ARROW", "->"},
      {"DEC", "--"},
      {"IF", "if", false, true},
      {"IN", "in", false, true},
      {"DOT", "\\."},
      {"MINUS", "-"},
      {"SLASH", "/"},
  };
  return *order;
}

constexpr std::string_view kDifferentialTerminals = R"(
HASHBANG.2: "#!"
NUMBER: /[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/
COMMENT: /\/\*(.|\n)*?\*\//
NAME: /[a-z_][a-z0-9_]*/
LINE: /\/\/[^\n]*/
WS: /[ \n]+/
ARROW: "->"
DEC: "--"
DOT: "."
MINUS: "-"
SLASH: "/"
IF: "if"
IN: "in"
INT: "int"
%ignore COMMENT
%ignore LINE
%ignore WS
)";

// The reference: tokens of `text` (ignored ones dropped), or nullopt on a
// lexing error, for a grammar whose rules use `used`.
std::optional<std::vector<std::string>> ReferenceLex(std::string_view text,
                                                     const absl::flat_hash_set<std::string>& used) {
  static const auto* compiled = [] {
    auto* v = new std::vector<std::unique_ptr<RE2>>;
    for (const ReferenceToken& t : ReferenceOrder()) {
      v->push_back(std::make_unique<RE2>("(?:" + t.regex + ")"));
    }
    return v;
  }();
  const bool name_lexed = used.contains("NAME");
  std::vector<size_t> lexer;  // indices into ReferenceOrder(), in order
  for (size_t i = 0; i < ReferenceOrder().size(); ++i) {
    const ReferenceToken& t = ReferenceOrder()[i];
    if (!t.ignored && !used.contains(t.name)) continue;
    if (t.keyword && name_lexed) continue;
    lexer.push_back(i);
  }
  std::vector<std::string> out;
  size_t pos = 0;
  const re2::StringPiece input(text.data(), text.size());
  while (pos < text.size()) {
    bool matched = false;
    for (size_t i : lexer) {
      re2::StringPiece match;
      if (!(*compiled)[i]->Match(input, pos, text.size(), RE2::ANCHOR_START, &match, 1) ||
          match.empty()) {
        continue;
      }
      matched = true;
      pos += match.size();
      const ReferenceToken& t = ReferenceOrder()[i];
      if (t.ignored) break;
      std::string name = t.name;
      if (name == "NAME") {
        for (const ReferenceToken& k : ReferenceOrder()) {
          if (k.keyword && used.contains(k.name) && match == re2::StringPiece(k.regex)) name = k.name;
        }
      }
      out.push_back(name);
      break;
    }
    if (!matched) return std::nullopt;
  }
  return out;
}

TEST(LarkLexingDifferential, AgreesWithOrderedRe2Lexer) {
  const std::vector<std::string> all = {"HASHBANG", "NUMBER", "NAME", "ARROW", "DEC", "DOT",
                                        "MINUS",    "SLASH",  "IF",   "IN",    "INT"};
  const std::vector<std::string> pieces = {
      "if", "in", "int", "ifx", "intx", "inx", "x", "a1", "_", "1", "1.5", "1.5e3", "1.",
      "1e",  "2e+5", "3E-", ".", "-", "--", "->", "/", "/* a */", "/**/", "/* */ b */",
      "// c\n", " ", "\n", "#!", "#", "*", "e", ">", "/*"};
  std::mt19937 rng(20261121);
  int sentences = 0, texts = 0;
  for (int round = 0; round < 60; ++round) {
    // A random subset of the tokens for `item`.
    std::vector<std::string> subset;
    for (const std::string& t : all) {
      if (rng() % 2) subset.push_back(t);
    }
    if (subset.empty()) subset.push_back("NAME");
    std::string lark = "start: item*\nitem: " + absl::StrJoin(subset, " | ") + "\n";
    lark += kDifferentialTerminals;
    FlatGrammar g = Compile(lark);
    const absl::flat_hash_set<std::string> allowed(subset.begin(), subset.end());
    for (int k = 0; k < 150; ++k) {
      std::string text;
      const int n = 1 + static_cast<int>(rng() % 7);
      for (int i = 0; i < n; ++i) text += pieces[rng() % pieces.size()];
      std::optional<std::vector<std::string>> tokens = ReferenceLex(text, allowed);
      bool expected = tokens.has_value();
      if (expected) {
        for (const std::string& t : *tokens) expected = expected && allowed.contains(t);
      }
      ++texts;
      sentences += expected;
      ASSERT_EQ(Accepts(g, text), expected)
          << "text \"" << absl::CEscape(text) << "\" with item: " << absl::StrJoin(subset, " | ");
    }
  }
  std::printf("lexing differential: %d texts, %d sentences\n", texts, sentences);
  EXPECT_GT(sentences, texts / 20);
}

// Every set a lexed step builds holds distinct items, also where a step
// copies a lane's items without deduplicating them (one source set, no token
// ended: BuildNextLexedSets' fast path). Real grammars and documents; after
// each byte, and after a speculative push of each byte that can follow.
TEST(LarkLexing, LaneSetsHoldDistinctItems) {
  for (const char* set : {"go", "java", "sql"}) {
    const std::string lines = testing::ReadFileOrDie(testing::DataPath(std::string("traces/llama3/") + set + ".jsonl"));
    const nlohmann::json record = nlohmann::json::parse(lines.substr(0, lines.find('\n')));
    absl::StatusOr<zapgram::Grammar> g =
        zapgram::Grammar::Load(record.at("grammar").get<std::string>(), testing::DataPath(""));
    ASSERT_TRUE(g.ok()) << g.status();
    const FlatGrammar& flat = g->data().flat;
    ASSERT_TRUE(flat.lexed());
    Recognizer r = pruning::MakeRecognizer(&flat);
    auto check_newest = [&](const std::string& where) {
      const Chart& chart = r.chart_for_testing();
      absl::flat_hash_set<uint32_t> lanes;
      for (uint32_t s = chart.NewestFirst(); s < chart.sets.size(); ++s) {
        ASSERT_TRUE(lanes.insert(chart.sets[s].lane).second) << where << ": a lane twice";
        absl::flat_hash_set<std::pair<uint32_t, uint32_t>> items;
        for (uint32_t i = chart.sets[s].scan_begin; i < chart.sets[s].scan_end; ++i) {
          ASSERT_TRUE(items.insert({chart.scan[i].dot, chart.scan[i].parent}).second) << where << ": an item twice";
        }
      }
    };
    const std::string text = record.at("text").get<std::string>().substr(0, 600);
    for (size_t i = 0; i < text.size(); ++i) {
      ASSERT_TRUE(r.Feed(static_cast<uint8_t>(text[i]))) << set << " byte " << i;
      ASSERT_NO_FATAL_FAILURE(check_newest(std::string(set) + " byte " + std::to_string(i)));
      if (i % 7 != 0) continue;
      const ByteSet next = r.NextBytes();
      for (uint32_t b = 0; b < 256; ++b) {
        if (!next.test(b)) continue;
        ASSERT_TRUE(r.Push(static_cast<uint8_t>(b)));
        ASSERT_NO_FATAL_FAILURE(check_newest(std::string(set) + " byte " + std::to_string(i) + " + " + std::to_string(b)));
        r.Pop();
      }
    }
  }
}

}  // namespace
}  // namespace zapgram::parser
