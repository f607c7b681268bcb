// Lark lexing semantics, end to end: Lark text -> lowering -> lexer ->
// recognizer with lanes and guards (docs/lark-lexing.md). Each case is one
// where a plain CFG over the terminals (any split of the input into tokens)
// answers differently from Lark's lexer.
#include "parser/lexer.h"

#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "grammar/lark_lowering.h"
#include "parser/flat_grammar.h"
#include "pruning/compact.h"

namespace zapgram::parser {
namespace {

FlatGrammar Compile(std::string_view lark) {
  absl::StatusOr<grammar::Grammar> g = grammar::ReadLarkGrammar(lark, "test.lark");
  EXPECT_TRUE(g.ok()) << g.status();
  absl::StatusOr<FlatGrammar> flat = BuildFlatGrammar(*g);
  EXPECT_TRUE(flat.ok()) << flat.status();
  return *std::move(flat);
}

// Whether `input` is a sentence; checked with pruning on and off, and
// through NextBytes (each accepted byte must have been announced, and a
// rejected one must not have been).
bool Accepts(const FlatGrammar& flat, std::string_view input) {
  bool results[2];
  for (bool pruning : {true, false}) {
    RecognizerOptions options;
    options.pruning = pruning;
    Recognizer r = pruning::MakeRecognizer(&flat, options);
    bool alive = true;
    for (char c : input) {
      const bool announced = r.NextBytes().test(static_cast<uint8_t>(c));
      const bool fed = r.Feed(static_cast<uint8_t>(c));
      EXPECT_EQ(announced, fed) << "byte '" << c << "' of \"" << input << "\"";
      if (!fed) {
        alive = false;
        break;
      }
    }
    results[pruning] = alive && r.IsAccepting();
  }
  EXPECT_EQ(results[0], results[1]) << input;
  return results[1];
}

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

}  // namespace
}  // namespace zapgram::parser
