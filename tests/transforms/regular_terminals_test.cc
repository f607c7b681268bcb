// MergeRegularTerminals preserves the language: the reference recognizer on
// the original grammar and the engine on the merged one agree on every
// prefix of random and guided strings (viable prefix, acceptance), for
// thousands of random grammars; on real grammars the merged JSON grammars
// accept exactly the documents the original ones accept. JSON Schema
// integers with bounds and multipleOf (finite automata written as thousands
// of rules) pin the work: each node written as regex text at most once, each
// expression compiled at most once, and the merged grammar accepts the same
// numbers as the unmerged one.
#include "transforms/regular_terminals.h"

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "api/grammar_data.h"
#include "grammar/gbnf_reader.h"
#include "parser/flat_grammar.h"
#include "pruning/compact.h"
#include "tests/support/random_grammar.h"
#include "tests/support/reference_recognizer.h"
#include "tests/support/test_paths.h"
#include "transforms/json_schema_formats.h"
#include "transforms/pipeline.h"

namespace zapgram::transforms {
namespace {

TEST(RegularTerminals, RandomGrammarsKeepTheirLanguage) {
  std::mt19937_64 rng(0x5EC7'2026'1121ull);
  uint64_t merged = 0, strings = 0, grammars_changed = 0;
  for (int gi = 0; gi < 1500; ++gi) {
    grammar::Grammar g = testing::RandomGrammar(rng);
    testing::ReferenceRecognizer ref(g);
    if (ref.LanguageIsEmpty()) continue;
    RegularTerminalStats stats;
    absl::StatusOr<grammar::Grammar> out = MergeRegularTerminals(g, &stats);
    ASSERT_TRUE(out.ok()) << out.status();
    merged += stats.merged;
    grammars_changed += stats.merged > 0;
    absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(*out);
    ASSERT_TRUE(flat.ok()) << flat.status() << "\n" << grammar::Dump(*out);
    for (int s = 0; s < 12; ++s) {
      const std::string input = s % 2 ? testing::GuidedString(ref, rng, 12)
                                      : testing::RandomString(rng, 12);
      parser::Recognizer r = pruning::MakeRecognizer(&*flat);
      size_t taken = 0;
      while (taken < input.size() && r.Feed(static_cast<uint8_t>(input[taken]))) ++taken;
      ++strings;
      ASSERT_EQ(taken, ref.LongestViablePrefix(input))
          << "grammar:\n" << grammar::Dump(g) << "merged:\n" << grammar::Dump(*out)
          << "input: " << testing::EscapeBytes(input);
      if (taken == input.size()) {
        ASSERT_EQ(r.IsAccepting(), ref.Accepts(input))
            << "grammar:\n" << grammar::Dump(g) << "merged:\n" << grammar::Dump(*out)
            << "input: " << testing::EscapeBytes(input);
      }
    }
  }
  std::printf("regular terminals: %llu merges in %llu grammars, %llu strings agree\n",
              static_cast<unsigned long long>(merged),
              static_cast<unsigned long long>(grammars_changed),
              static_cast<unsigned long long>(strings));
  EXPECT_GT(grammars_changed, 100u);
}

TEST(RegularTerminals, JsonStringsAndNumbersBecomeTerminals) {
  for (const char* spec : {"builtin:json", "grammars/gbnf/llama.cpp/json.gbnf"}) {
    absl::StatusOr<grammar::Grammar> g = internal::ReadGrammarSpec(spec, testing::DataPath(""));
    ASSERT_TRUE(g.ok()) << g.status();
    RegularTerminalStats stats;
    absl::StatusOr<grammar::Grammar> out = MergeRegularTerminals(*g, &stats);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_GE(stats.merged, 3u) << spec;
    absl::StatusOr<parser::FlatGrammar> before = parser::BuildFlatGrammar(*g);
    absl::StatusOr<parser::FlatGrammar> after = parser::BuildFlatGrammar(*out);
    ASSERT_TRUE(before.ok() && after.ok());
    std::printf("%s: %llu merges; productions %u -> %u, terminals %zu -> %zu\n", spec,
                static_cast<unsigned long long>(stats.merged), before->num_productions(),
                after->num_productions(), before->terminals.start.size(),
                after->terminals.start.size());
    // Same verdicts on real documents and mutants of them.
    std::mt19937_64 rng(7);
    int docs = 0;
    for (const std::string& path : testing::ListFiles(testing::DataPath("docs/json"), ".json")) {
      if (++docs > 60) break;
      const std::string text = testing::ReadFileOrDie(path);
      for (int m = 0; m < 3; ++m) {
        const std::string input = m == 0 ? text : testing::MutateDocument(text, rng);
        parser::Recognizer a = pruning::MakeRecognizer(&*before);
        parser::Recognizer b = pruning::MakeRecognizer(&*after);
        const size_t ta = a.FeedBytes(input), tb = b.FeedBytes(input);
        ASSERT_EQ(ta, tb) << spec << " " << path << " mutant " << m;
        EXPECT_EQ(a.IsAccepting(), b.IsAccepting()) << spec << " " << path;
      }
    }
  }
}

struct NumberCase {
  const char* minimum;
  const char* maximum;
  const char* multiple_of;
};

constexpr NumberCase kNumberCases[] = {
    {"1", "1000000", "7"},
    {"-2147483648", "2147483647", "3"},
    {"0", "99999", "13"},
    {"-1000", "100000000", "25"},
};

// The normalized grammar of {type: integer, minimum, maximum, multipleOf}.
grammar::Grammar NumberGrammar(const NumberCase& c) {
  NumericConstraints nc;
  nc.integer = true;
  nc.minimum = c.minimum;
  nc.maximum = c.maximum;
  nc.multiple_of = c.multiple_of;
  grammar::Grammar g;
  g.rules.push_back({"root", 0, {}});
  absl::StatusOr<grammar::ExprId> e = AddNumber(nc, &g);
  EXPECT_TRUE(e.ok()) << e.status();
  if (e.ok()) g.rules[0].body = *e;
  absl::StatusOr<grammar::Grammar> normalized = NormalizeForCompile(g);
  EXPECT_TRUE(normalized.ok()) << normalized.status();
  return normalized.ok() ? *std::move(normalized) : g;
}

TEST(RegularTerminals, NumberAutomataRenderAndCompileEachNodeOnce) {
  for (const NumberCase& c : kNumberCases) {
    const grammar::Grammar g = NumberGrammar(c);
    RegularTerminalStats stats;
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<grammar::Grammar> out = MergeRegularTerminals(g, &stats);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count();
    ASSERT_TRUE(out.ok()) << out.status();
    std::printf("integer [%s, %s] multipleOf %s: %zu rules, %zu exprs; %llu merges, %llu too "
                "large, %llu nodes rendered, %llu compiles, %.1f ms\n",
                c.minimum, c.maximum, c.multiple_of, g.rules.size(), g.exprs.size(),
                static_cast<unsigned long long>(stats.merged),
                static_cast<unsigned long long>(stats.too_large),
                static_cast<unsigned long long>(stats.nodes_rendered),
                static_cast<unsigned long long>(stats.compiles), ms);
    // Each node is written once, each expression compiled once (a rule
    // reference shares its body's verdict); before the memo both grew with
    // (rules x nodes below them).
    EXPECT_LE(stats.nodes_rendered, g.exprs.size()) << c.multiple_of;
    EXPECT_LE(stats.compiles, g.exprs.size()) << c.multiple_of;
    EXPECT_GE(stats.merged, 1u) << c.multiple_of;

    // Same verdicts as the unmerged grammar, on numbers around the bounds,
    // around multiples, and at random, plus malformed texts.
    absl::StatusOr<parser::FlatGrammar> before = parser::BuildFlatGrammar(g);
    absl::StatusOr<parser::FlatGrammar> after = parser::BuildFlatGrammar(*out);
    ASSERT_TRUE(before.ok() && after.ok());
    const long long lo = std::stoll(c.minimum), hi = std::stoll(c.maximum);
    const long long step = std::stoll(c.multiple_of);
    std::vector<std::string> inputs = {"", "-", "00", "-0", "1.0", "1e3", "+7", " 7"};
    std::mt19937_64 rng(11);
    for (long long center : {lo, hi, 0LL, step, lo + (hi - lo) / 2}) {
      for (long long d = -3 * step; d <= 3 * step; ++d) inputs.push_back(std::to_string(center + d));
    }
    for (int i = 0; i < 300; ++i) {
      const long long v = lo + static_cast<long long>(rng() % static_cast<uint64_t>(hi - lo + 1));
      inputs.push_back(std::to_string(v));
      inputs.push_back(std::to_string(v - v % step));
    }
    int accepted = 0;
    for (const std::string& input : inputs) {
      parser::Recognizer a = pruning::MakeRecognizer(&*before);
      parser::Recognizer b = pruning::MakeRecognizer(&*after);
      const size_t ta = a.FeedBytes(input), tb = b.FeedBytes(input);
      ASSERT_EQ(ta, tb) << c.multiple_of << " input " << input;
      const bool accepts = ta == input.size() && a.IsAccepting();
      ASSERT_EQ(accepts, tb == input.size() && b.IsAccepting()) << input;
      accepted += accepts;
    }
    EXPECT_GT(accepted, 100) << c.multiple_of;
  }
}

// A counted regex (a JSON string with maxLength >= 32) stays a terminal of
// its own, so the lowering matches it as a counted automaton; merged with
// its neighbours it was unrolled into (max + 1) x |unit| eager states with
// no loop. Below the bound the whole member merges into one regex.
TEST(RegularTerminals, CountedRegexesStayTerminalsOfTheirOwn) {
  for (const int bound : {256, 16}) {
    const std::string text = absl::StrCat(
        "root ::= \"{\" ws \"\\\"a\\\"\" ws \":\" ws /\"[a-z]{0,", bound, "}\"/ ws \"}\"\n",
        "ws ::= [ ]{0,2}\n");
    absl::StatusOr<grammar::Grammar> g = grammar::ReadGbnf(text, "counted.gbnf");
    ASSERT_TRUE(g.ok()) << g.status();
    absl::StatusOr<grammar::Grammar> out = MergeRegularTerminals(*g);
    ASSERT_TRUE(out.ok()) << out.status();
    const bool root_is_one_regex = out->exprs[out->rules[out->root].body].kind == grammar::ExprKind::kRegex;
    int counted_alone = 0;
    for (const grammar::Expr& e : out->exprs) {
      counted_alone += e.kind == grammar::ExprKind::kRegex && e.literal == absl::StrCat("\"[a-z]{0,", bound, "}\"");
    }
    absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(*out);
    ASSERT_TRUE(flat.ok()) << flat.status();
    if (bound >= grammar::kCountedMinBound) {
      EXPECT_EQ(counted_alone, 1) << grammar::Dump(*out);
      EXPECT_FALSE(root_is_one_regex);
      EXPECT_EQ(flat->terminals.counted.size(), 1u);
      EXPECT_LT(flat->terminals.eager_states(), 64u);
    } else {
      EXPECT_TRUE(root_is_one_regex) << grammar::Dump(*out);
      EXPECT_EQ(counted_alone, 0);
      EXPECT_TRUE(flat->terminals.counted.empty());
    }
    for (const std::string& doc : {absl::StrCat("{\"a\": \"", std::string(bound, 'x'), "\"}"),
                                   absl::StrCat("{\"a\":\"", std::string(bound + 1, 'x'), "\" }")}) {
      parser::Recognizer r = pruning::MakeRecognizer(&*flat);
      const bool accepted = r.FeedBytes(doc) == doc.size() && r.IsAccepting();
      EXPECT_EQ(accepted, doc.size() < static_cast<size_t>(bound) + 10) << doc;
    }
  }
}

// A sequence whose children are all regular is tried whole first; when it
// fails to compile, the run of all its children is the same automaton and is
// not determinized again: its children are tried one by one.
TEST(RegularTerminals, AFailedSequenceIsNotTriedAgainAsTheRunOfItsChildren) {
  absl::StatusOr<grammar::Grammar> g = grammar::ReadGbnf(
      "root ::= x y\nx ::= \"aaaaaaaaaa\"\ny ::= \"bbbbbbbbbb\"\n", "run.gbnf");
  ASSERT_TRUE(g.ok()) << g.status();
  RegularTerminalOptions options;
  options.max_dfa_states = 16;  // x y needs 22 (with the dead state), x and y 12 each
  RegularTerminalStats stats;
  absl::StatusOr<grammar::Grammar> out = MergeRegularTerminals(*g, &stats, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(stats.compiles, 3u);   // x y, x, y (not the run "x y" again)
  EXPECT_EQ(stats.too_large, 2u);  // x y, and its run, skipped
  const grammar::Expr& root = out->exprs[out->rules[out->root].body];
  ASSERT_EQ(root.kind, grammar::ExprKind::kSequence) << grammar::Dump(*out);
  for (grammar::ExprId c : root.children) {
    EXPECT_EQ(out->exprs[c].kind, grammar::ExprKind::kRegex) << grammar::Dump(*out);
  }
}

// A JSON Schema `pattern` between quotes is refused for its anchors, and so
// is every candidate around it: they are judged without a compile
// (grammar/rendered_anchors.h). The unanchored member still merges.
TEST(RegularTerminals, CandidatesAroundAMisplacedAnchorAreNotCompiled) {
  grammar::Grammar g;
  const grammar::ExprId quote = g.AddLiteral("\"");
  g.rules.push_back({"root", 0, {}});
  g.rules.push_back(
      {"name", g.AddSequence({quote, g.AddRegex("^[a-z]+$", grammar::kRegexJsonString), quote}), {}});
  g.rules.push_back({"id", g.AddSequence({quote, g.AddRegex("[0-9]+", 0), quote}), {}});
  g.rules[0].body = g.AddSequence({g.AddLiteral("{"), g.AddRuleRef(1), g.AddLiteral(","),
                                   g.AddRuleRef(2), g.AddLiteral("}")});
  RegularTerminalStats stats;
  absl::StatusOr<grammar::Grammar> out = MergeRegularTerminals(g, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(stats.compiles, 1u);  // "id" alone
  EXPECT_EQ(out->exprs[out->rules[2].body].kind, grammar::ExprKind::kRegex) << grammar::Dump(*out);
  EXPECT_EQ(out->exprs[out->rules[1].body].kind, grammar::ExprKind::kSequence)
      << grammar::Dump(*out);
  absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(*out);
  ASSERT_TRUE(flat.ok()) << flat.status();
  for (const auto& [doc, accepted] : std::vector<std::pair<std::string, bool>>{
           {"{\"abc\",\"12\"}", true}, {"{\"aBc\",\"12\"}", false}, {"{\"abc\",\"\"}", false}}) {
    parser::Recognizer r = pruning::MakeRecognizer(&*flat);
    EXPECT_EQ(r.FeedBytes(doc) == doc.size() && r.IsAccepting(), accepted) << doc;
  }
}

TEST(RegularTerminals, LexedGrammarsAreUnchanged) {
  absl::StatusOr<grammar::Grammar> g =
      internal::ReadGrammarSpec("grammars/lark/syncode/sql.lark", testing::DataPath(""));
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<grammar::Grammar> out = MergeRegularTerminals(*g);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(grammar::Dump(*out), grammar::Dump(*g));
}

}  // namespace
}  // namespace zapgram::transforms
