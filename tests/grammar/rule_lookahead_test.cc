// Tests for rule lookahead assertions (grammar/rule_lookahead.h), read from
// XGrammar's `rule ::= body (= assertion)`:
//   - implied assertions load and change nothing (the dump equals the
//     grammar's without them), through sequences, parents' ends, repeats,
//     nullable rules and the end of the text;
//   - assertions the grammar does not imply are refused at the assertion,
//     naming the rule and the use where refused text can follow;
//   - misplaced, recursive and token-level assertions are clear errors;
//   - the XGrammar test grammars that carry assertions;
//   - differential: on random grammars, a proof is checked against every
//     sentence up to 8 bytes of the grammar with each completion of the rule
//     marked (reference recognizer): no accepted assertion is ever violated,
//     and refused ones are mostly violated within that length.
#include "grammar/rule_lookahead.h"

#include <iostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/gbnf_reader.h"
#include "grammar/grammar.h"
#include "gtest/gtest.h"
#include "tests/support/gbnf_text.h"
#include "tests/support/random_grammar.h"
#include "tests/support/reference_recognizer.h"
#include "tests/support/test_paths.h"

namespace zapgram::grammar {
namespace {

using testing::DumpOf;
using testing::ErrorOf;

struct ImpliedCase {
  const char* with_assertion;
  const char* without;
};

TEST(RuleLookaheadTest, ImpliedAssertionsLoadAndChangeNothing) {
  const ImpliedCase cases[] = {
      // Only the end of the text follows the rule: never a violation.
      {"root ::= \"a\" (=\"b\")", "root ::= \"a\""},
      {"root ::= \"x\" rule1\nrule1 ::= \"a\" \"b\" (= \"c\" \"d\")",
       "root ::= \"x\" rule1\nrule1 ::= \"a\" \"b\""},
      // The next sibling begins as asserted.
      {"root ::= r \"cd\"\nr ::= \"ab\" (= \"c\")", "root ::= r \"cd\"\nr ::= \"ab\""},
      // A longer assertion matched across two siblings.
      {"root ::= r \"c\" [0-9]\nr ::= \"a\" (= \"c\" [0-9])", "root ::= r \"c\" [0-9]\nr ::= \"a\""},
      // Through the end of the parent: b ends a, a is followed by "c".
      {"root ::= a \"c\"\na ::= \"x\" b\nb ::= \"y\" (= \"c\")",
       "root ::= a \"c\"\na ::= \"x\" b\nb ::= \"y\""},
      // A repeat may run again: b+ then "c"; what follows b is b or "c".
      {"root ::= b+ \"c\"\nb ::= \"y\" (= [yc])", "root ::= b+ \"c\"\nb ::= \"y\""},
      // A nullable rule in between: s is "" or "d".
      {"root ::= b s \"c\"\ns ::= \"\" | \"d\"\nb ::= \"y\" (= [cd])",
       "root ::= b s \"c\"\ns ::= \"\" | \"d\"\nb ::= \"y\""},
      // An assertion through a rule reference, and a nullable one (always true).
      {"root ::= r x\nr ::= \"a\" (= x)\nx ::= \"x\" | \"xy\"", "root ::= r x\nr ::= \"a\"\nx ::= \"x\" | \"xy\""},
      {"root ::= r \"z\"\nr ::= \"a\" (= [b]?)", "root ::= r \"z\"\nr ::= \"a\""},
      // The assertion applies to the whole rule, all alternatives.
      {"root ::= r \";\"\nr ::= \"a\" | \"b\" (= \";\")", "root ::= r \";\"\nr ::= \"a\" | \"b\""},
      // A use in an unreachable rule does not count.
      {"root ::= r \";\"\nr ::= \"a\" (= \";\")\nu ::= r \"!\"",
       "root ::= r \";\"\nr ::= \"a\"\nu ::= r \"!\""},
  };
  for (const ImpliedCase& c : cases) {
    EXPECT_EQ(DumpOf(c.with_assertion), DumpOf(c.without)) << c.with_assertion;
  }
}

TEST(RuleLookaheadTest, AssertionsNotImpliedAreRefusedAtTheAssertion) {
  EXPECT_EQ(ErrorOf("root ::= r \"xd\"\nr ::= \"ab\" (= \"c\")"),
            "t.gbnf:2:12: lookahead assertion of rule 'r' does not follow from the grammar: "
            "where 'r' is used at 1:10, the text after it can begin with bytes the assertion "
            "refuses; zapgram accepts a rule lookahead only where the grammar implies it "
            "(XGrammar takes it as an unchecked hint)");
  // Through the end of a parent: the message names the parent's use.
  EXPECT_EQ(ErrorOf("root ::= a \"d\"\na ::= \"x\" b\nb ::= \"y\" (= \"c\")"),
            "t.gbnf:3:11: lookahead assertion of rule 'b' does not follow from the grammar: "
            "where 'a' is used at 1:10, the text after 'b' (which can end it) can begin with "
            "bytes the assertion refuses; zapgram accepts a rule lookahead only where the "
            "grammar implies it (XGrammar takes it as an unchecked hint)");
  // b can follow b.
  EXPECT_NE(ErrorOf("root ::= b+ \"c\"\nb ::= \"y\" (= \"c\")").find("does not follow"),
            std::string::npos);
  // s can be "d".
  EXPECT_NE(ErrorOf("root ::= b s \"c\"\ns ::= \"\" | \"d\"\nb ::= \"y\" (= \"c\")")
                .find("does not follow"),
            std::string::npos);
  // The text may end inside the assertion, but not diverge from it.
  EXPECT_EQ(DumpOf("root ::= r \"c\"\nr ::= \"a\" (= \"cd\")"), DumpOf("root ::= r \"c\"\nr ::= \"a\""));
  EXPECT_NE(ErrorOf("root ::= r \"ce\"\nr ::= \"a\" (= \"cd\")").find("does not follow"),
            std::string::npos);
  // An assertion that matches nothing holds only where nothing follows.
  EXPECT_EQ(DumpOf("root ::= \"a\" r\nr ::= \"b\" (= [])"), DumpOf("root ::= \"a\" r\nr ::= \"b\""));
  EXPECT_NE(ErrorOf("root ::= r \"a\"\nr ::= \"b\" (= [])").find("does not follow"),
            std::string::npos);
}

TEST(RuleLookaheadTest, MisplacedRecursiveAndTokenLevelAssertionsAreErrors) {
  EXPECT_EQ(ErrorOf("root ::= \"a\" (= \"b\") \"c\""),
            "t.gbnf:1:22: a lookahead assertion '(= ...)' must end the rule body, but '\"' "
            "follows it");
  EXPECT_EQ(ErrorOf("root ::= (\"a\" (= \"b\"))"),
            "t.gbnf:1:15: a lookahead assertion '(= ...)' must end the rule body, outside any "
            "parentheses");
  EXPECT_EQ(ErrorOf("root ::= \"a\" (= \"b\") (= \"c\")"),
            "t.gbnf:1:22: a lookahead assertion '(= ...)' must end the rule body, but '(' "
            "follows it");
  EXPECT_EQ(ErrorOf("root ::= r x\nr ::= \"a\" (= x)\nx ::= \"x\" | \"x\" x"),
            "t.gbnf:2:11: lookahead assertion of rule 'r' refers to the recursive rule 'x'; "
            "zapgram checks regular lookaheads only");
  EXPECT_EQ(ErrorOf("root ::= r Token(5)\nr ::= \"a\" (= \"b\")"),
            "t.gbnf:2:11: lookahead assertion of rule 'r' cannot be checked: where 'r' is used "
            "at 1:10, the text after it can begin with a token-level element, whose bytes "
            "depend on the vocabulary");
  EXPECT_EQ(ErrorOf("root ::= r \"b\"\nr ::= \"a\" (= Token(5))"),
            "t.gbnf:2:11: lookahead assertion of rule 'r' holds a token-level element; zapgram "
            "checks lookaheads over bytes");
  // A lookahead is still followed by the next rule definition on its line's successor.
  EXPECT_EQ(ErrorOf("root ::= \"a\" (= \"b\"\nx ::= \"b\""),
            "t.gbnf:2:1: expected ')' to close '(' opened at 1:14 but found the next rule "
            "definition");
}

// XGrammar's own test grammars with assertions: those its grammar implies
// load, the three whose assertions are false are refused.
TEST(RuleLookaheadTest, XGrammarTestGrammarsWithAssertions) {
  const std::string dir = testing::DataPath("grammars/ebnf/xgrammar/test_grammar_parser");
  const auto read = [&](std::string_view name) {
    return testing::ReadFileOrDie(dir + "/" + std::string(name));
  };
  const char* const loads[] = {
      "test_byte_string_fuser_lookahead_assertion__before.ebnf",
      "test_rule_inliner_preserves_lookahead_assertion__before.ebnf",
      "test_e2e_to_string_roundtrip__before.ebnf",
      "test_lookahead_assertion_simple__before.ebnf",
      "test_complex_lookahead__before.ebnf",
  };
  for (const char* name : loads) {
    absl::StatusOr<Grammar> g = ReadGbnf(read(name), name);
    EXPECT_TRUE(g.ok()) << name << ": " << g.status();
  }
  // rule1 ::= [a-z]{1,3} (=":") is followed by rule1, rule2 or "end".
  absl::StatusOr<Grammar> combined = ReadGbnf(
      read("test_combined_features__before.ebnf"), "combined.ebnf");
  ASSERT_FALSE(combined.ok());
  EXPECT_NE(combined.status().message().find("rule 'rule1' does not follow from the grammar"),
            std::string_view::npos)
      << combined.status();
  // characters_and_embrace (= [ \n\t]* [},]) can be followed by "]": [{"a":"b"}].
  absl::StatusOr<Grammar> json =
      ReadGbnf(read("test_e2e_json_grammar__before.ebnf"), "json.ebnf");
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.status().message(),
            "json.ebnf:69:3: lookahead assertion of rule 'characters_and_embrace' does not follow "
            "from the grammar: where 'members_and_embrace' is used at 27:18, the text after "
            "'characters_and_embrace' (which can end it) can begin with bytes the assertion "
            "refuses; zapgram accepts a rule lookahead only where the grammar implies it "
            "(XGrammar takes it as an unchecked hint)");
  absl::StatusOr<Grammar> normalizer = ReadGbnf(
      read("test_lookahead_assertion_with_normalizer__before.ebnf"), "normalizer.ebnf");
  ASSERT_FALSE(normalizer.ok());
  EXPECT_NE(normalizer.status().message().find("does not follow from the grammar"),
            std::string_view::npos)
      << normalizer.status();
}

// ---- differential ----

constexpr char kMark = '\xFF';  // never valid UTF-8: no class or literal of a random grammar has it

// `g` with every use of `rule` followed by the byte kMark.
Grammar MarkUses(Grammar g, RuleId rule) {
  const size_t num_exprs = g.exprs.size();
  for (ExprId id = 0; id < num_exprs; ++id) {
    if (g.exprs[id].kind != ExprKind::kRuleRef || g.exprs[id].rule != rule) continue;
    const ExprId ref = g.AddRuleRef(rule);
    const ExprId mark = g.AddLiteral(std::string(1, kMark));
    Expr& use = g.exprs[id];
    use.kind = ExprKind::kSequence;
    use.children = {ref, mark};
  }
  return g;
}

// True when the text after each mark of `sentence` (other marks removed) has
// a prefix among `assertion` or is a prefix of one of them.
bool MarksSatisfy(const std::string& sentence, const std::vector<std::string>& assertion,
                  std::string* violation) {
  for (size_t k = 0; k < sentence.size(); ++k) {
    if (sentence[k] != kMark) continue;
    std::string after;
    for (size_t j = k + 1; j < sentence.size(); ++j) {
      if (sentence[j] != kMark) after.push_back(sentence[j]);
    }
    bool ok = false;
    for (const std::string& x : assertion) {
      if (after.compare(0, x.size(), x) == 0 || x.compare(0, after.size(), after) == 0) ok = true;
    }
    if (!ok) {
      *violation = testing::EscapeBytes(sentence) + " (mark at " + std::to_string(k) + ")";
      return false;
    }
  }
  return true;
}

struct Enumeration {
  std::string violation;       // a violating sentence, or ""
  bool saw_mark = false;       // some sentence holds a mark
};

// Depth-first over viable prefixes of the marked grammar up to max_length,
// stopping at the first violating sentence.
Enumeration FindViolation(const testing::ReferenceRecognizer& marked,
                          const std::vector<std::string>& assertion, size_t max_length) {
  static const std::string kBytes = {'a', 'b', 'c', 'd', kMark};
  testing::ReferenceRecognizer::Session session(&marked);
  std::vector<size_t> next_choice = {0};  // per depth: the next byte index to try
  Enumeration result;
  if (session.IsAccepting() && !MarksSatisfy(session.input(), assertion, &result.violation)) {
    return result;
  }
  while (!next_choice.empty()) {
    if (next_choice.back() == kBytes.size() || session.size() == max_length) {
      next_choice.pop_back();
      if (session.size() > 0) session.Pop();
      continue;
    }
    session.Push(static_cast<uint8_t>(kBytes[next_choice.back()++]));
    if (!session.IsViable()) {
      session.Pop();
      continue;
    }
    if (session.IsAccepting()) {
      if (session.input().find(kMark) != std::string::npos) result.saw_mark = true;
      if (!MarksSatisfy(session.input(), assertion, &result.violation)) return result;
    }
    next_choice.push_back(0);
  }
  return result;
}

TEST(RuleLookaheadDifferential, ProofsHoldOnEveryShortSentence) {
  const std::vector<std::vector<std::string>> assertions = {
      {"a"}, {"b"}, {"c"}, {"ab"}, {"a", "c"}, {"ba", "c"}, {"bb"}, {"a", "b", "c"}};
  std::mt19937_64 rng(20261126);
  testing::RandomGrammarOptions options;
  options.max_rules = 5;
  options.max_depth = 3;
  options.multibyte = false;
  int proved = 0, proved_with_uses = 0, refused = 0, refused_with_witness = 0;
  for (int round = 0; round < 500; ++round) {
    Grammar g = testing::RandomGrammar(rng, options);
    const RuleId rule = static_cast<RuleId>(testing::Uniform(rng, g.rules.size()));
    const std::vector<std::string>& strings =
        assertions[testing::Uniform(rng, assertions.size())];
    std::vector<ExprId> literals;
    for (const std::string& s : strings) literals.push_back(g.AddLiteral(s));
    const ExprId assertion = literals.size() == 1 ? literals[0] : g.AddChoice(literals);
    const absl::Status verdict = CheckRuleLookaheadsImplied(g, {{rule, assertion, {1, 1}}});
    if (!verdict.ok()) {
      ASSERT_NE(verdict.message().find("does not follow from the grammar"), std::string::npos)
          << verdict;
    }
    const Grammar marked_grammar = MarkUses(g, rule);
    const testing::ReferenceRecognizer marked(marked_grammar);
    const Enumeration found = FindViolation(marked, strings, 8);
    const std::string& violation = found.violation;
    if (verdict.ok()) {
      ++proved;
      ASSERT_EQ(violation, "") << "round " << round << ": assertion on rule '"
                               << g.rules[rule].name << "' proved but violated by " << violation
                               << "\n"
                               << Dump(g);
      if (found.saw_mark) ++proved_with_uses;
    } else {
      ++refused;
      if (!violation.empty()) ++refused_with_witness;
    }
  }
  std::cout << "[ lookahead ] 500 random grammars: proved " << proved << " (" << proved_with_uses
            << " with uses of the rule), refused " << refused << " (" << refused_with_witness
            << " with a violating sentence of <= 8 bytes, marks included)\n";
  // The test must see both verdicts, and refusals must mostly be real.
  EXPECT_GT(proved_with_uses, 10);
  EXPECT_GT(refused_with_witness, 10);
  EXPECT_GE(refused_with_witness * 10, refused * 7);
}

}  // namespace
}  // namespace zapgram::grammar
