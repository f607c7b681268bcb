// Past-the-match lookaheads in Lark terminals (grammar/lark_patterns.h):
// dropped exactly when they refuse no match on the match's own text.
#include "grammar/lark_patterns.h"

#include <string>

#include "gtest/gtest.h"
#include "grammar/lark_lowering.h"
#include "parser/flat_grammar.h"
#include "tests/support/ir_compile.h"
#include "grammar/regex_compiler.h"

namespace zapgram::grammar {
namespace {

TEST(LarkLookahead, PythonStringsLookOnlyPastTheEmptyString) {
  // SynCode's STRING: (?!"") refuses no string on its own text (a string
  // with a character has no quote there; "" reaches one character past).
  const std::string string_pattern = R"([ubf]?r?("(?!"").*?"|'(?!'').*?'))";
  std::optional<DroppedLookaheads> d = DropPastMatchLookaheads(string_pattern, kRegexIgnoreCase | kRegexDotAll);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->pattern, R"([ubf]?r?(".*?"|'.*?'))");
  EXPECT_EQ(d->what, R"((?!""), (?!''))");
  // The killer: the prefix up to the lookahead on its alternative, then Y.
  EXPECT_EQ(d->killer, R"((?:[ubf]?r?("(?:"")))|(?:[ubf]?r?('(?:''))))");
}

TEST(LarkLookahead, LookaheadsThatRefuseMatchesStayRefused) {
  // (?!ab) refuses "abc" on its own text: not dropped.
  EXPECT_FALSE(DropPastMatchLookaheads("x(?!ab)[a-c]+", 0).has_value());
  // Not a literal lookahead, or none at all.
  EXPECT_FALSE(DropPastMatchLookaheads("x(?![ab])c", 0).has_value());
  EXPECT_FALSE(DropPastMatchLookaheads("x[(?!a)]c", 0).has_value());
  // Vacuous where it stands (the next character is fixed): dropped.
  std::optional<DroppedLookaheads> d = DropPastMatchLookaheads("a(?!b)c", 0);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->pattern, "ac");
}

TEST(LarkLazy, FirstCloseInsideGreedyRepetitions) {
  // A docstring inside a repeated newline token (python.lark's _NL): the
  // lazy part closes at the first """, the repetition goes on.
  const std::string nl = R"((?:\n[ ]*|"""(?<!\\).*?""")+)";
  std::optional<std::string> greedy = RewriteLazyQuantifiers(nl);
  ASSERT_TRUE(greedy.has_value());
  EXPECT_FALSE(HasLazyQuantifier(*greedy));
  absl::StatusOr<ByteDfa> dfa = CompileRegex(*greedy, kRegexDotAll);
  ASSERT_TRUE(dfa.ok()) << dfa.status();
  EXPECT_TRUE(dfa->Matches("\n  \"\"\"a\nb\"\"\"\n  "));
  EXPECT_TRUE(dfa->Matches("\"\"\"a\"\"\"\"\"\"b\"\"\""));   // two docstrings
  EXPECT_FALSE(dfa->Matches("\"\"\"a\"\"\"b\"\"\""));           // one closes at the first """
  // Not rewritten: a lazy group, a lazy count, a literal that more pattern
  // follows.
  EXPECT_FALSE(RewriteLazyQuantifiers("(ab)*?c").has_value());
  EXPECT_FALSE(RewriteLazyQuantifiers("a{1,3}?b").has_value());
  EXPECT_FALSE(RewriteLazyQuantifiers(".*?ab+").has_value());
  EXPECT_FALSE(RewriteLazyQuantifiers(".*?a(b|c)").has_value());
  EXPECT_FALSE(RewriteLazyQuantifiers("abc").has_value());
  // A class atom.
  EXPECT_EQ(RewriteLazyQuantifiers("/[^x]+?;"), "/(?&:[^x]+;|(?~:[\\s\\S]*;[\\s\\S]+))");
}

// Python's strings: `""` is a string unless a third quote follows (then
// only a long string can start there, as in Lark's lexer).
// (LONG_STRING's pattern is the longer: Lark tries it first, as in python.lark.)
constexpr std::string_view kStrings = R"lark(
start: (STRING | LONG_STRING)+
STRING: /"(?!"").*?"/s
LONG_STRING: /"""[\s\S]*?"""/
%ignore " "
)lark";

bool Accepts(const parser::FlatGrammar& flat, std::string_view text) { return testing::AcceptsByteByByte(flat, text); }

TEST(LarkLookahead, TheKillerRefutesTheEmptyStringBeforeAQuote) {
  absl::StatusOr<Grammar> g = ReadLarkGrammar(kStrings, "s.lark");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(g->warnings.empty());
  bool killer = false;
  for (const Token& t : g->tokens) killer = killer || (t.name == "STRING__lookahead" && t.lookahead_of >= 0);
  EXPECT_TRUE(killer);
  absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(*g);
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_TRUE(Accepts(*flat, R"("" "abc")"));
  EXPECT_TRUE(Accepts(*flat, R"("""abc""")"));
  EXPECT_TRUE(Accepts(*flat, R"("""a"b""" "")"));
  EXPECT_FALSE(Accepts(*flat, R"("""abc")"));     // no long string closes: Lark fails at the first quote
  EXPECT_FALSE(Accepts(*flat, R"(""""abc")"));
  EXPECT_TRUE(Accepts(*flat, R"("")"));           // at the end: nothing follows the string
  // Tried before LONG_STRING, STRING's tentative `""` would drop it from the
  // lexer's product where Lark tries it once the lookahead fails: refused.
  absl::StatusOr<Grammar> first = ReadLarkGrammar(
      "start: (STRING | LONG_STRING)+\nSTRING: /\"(?!\"\").*?\"/s\nLONG_STRING: /\"\"\".*?\"\"\"/s\n", "f.lark");
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<parser::FlatGrammar> refused = parser::BuildFlatGrammar(*first);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("terminal STRING has a lookahead that reads past its match"),
            std::string::npos)
      << refused.status();
}

}  // namespace
}  // namespace zapgram::grammar
