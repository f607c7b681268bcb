// Past-the-match lookaheads in Lark terminals (grammar/lark_patterns.h):
// dropped exactly when they refuse no match on the match's own text.
#include "grammar/lark_patterns.h"

#include <string>

#include "gtest/gtest.h"
#include "grammar/lark_lowering.h"
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

TEST(LarkLookahead, TheLoweringWarnsAndLexes) {
  absl::StatusOr<Grammar> g = ReadLarkGrammar(
      "start: STRING+\nSTRING: /\"(?!\"\").*?\"/\n%ignore \" \"\n", "s.lark");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->warnings.size(), 1u);
  EXPECT_NE(g->warnings[0].find("lookahead (?!\"\") reads past the match only"), std::string::npos)
      << g->warnings[0];
}

}  // namespace
}  // namespace zapgram::grammar
