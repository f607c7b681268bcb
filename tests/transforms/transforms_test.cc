// Tests of the grammar -> grammar passes (transforms/).
//
// 1. Unit tests per pass with golden grammar::Dump() outputs and the pass
//    reports (which rules went where, which counters moved).
// 2. Language preservation: for thousands of random grammars
//    (tests/support/random_grammar.h, fixed seeds) and strings over their
//    alphabet (half random, half guided by the oracle so that deep viable
//    prefixes occur), the textbook recognizer (tests/support/
//    reference_recognizer.h) on the ORIGINAL grammar and the engine
//    (parser::BuildFlatGrammar + pruning::MakeRecognizer) on the TRANSFORMED
//    grammar agree at every prefix on: Feed succeeds (viable prefix),
//    IsAccepting, and NextBytes over the alphabet bytes. Each pass alone,
//    some compositions (so that passes also see DAG inputs made by dedup),
//    and the whole pipeline. An empty language must be reported as an error
//    (useless_rules, pipeline) or refused by the lowering (the others).
//    With regex terminals (opaque to the passes) the oracle's viability is a
//    bounded search, so there the engine on the original grammar is the
//    reference at every prefix and the oracle judges whole strings only.
// 3. Scale: dedup of a grammar with 20,000 duplicated rules (time printed,
//    sizes asserted), and deep nesting / long rule chains (no recursion).
// 4. Real grammars: every GBNF grammar under ZAPGRAM_DATA_DIR/grammars/gbnf
//    normalizes, its rules/symbols before and after are printed, and the
//    normalized grammar accepts tests/testdata/gbnf_docs/<name>/accept/ and
//    rejects reject/ (NAME@N.txt: at byte N), and agrees with the original
//    grammar's engine on mutated documents.
// 5. Lexed grammars (Lark): tokens are opaque leaves and the lexicon is
//    copied unchanged; a small grammar through each pass (dumps, token
//    indexes, documents), and SynCode's java, go and sql grammars normalized
//    (sizes per pass printed) accept exactly the documents of the llama3
//    trace records the original grammars accept, rejecting at the same byte.
// Sizes shrink tenfold under sanitizers (ZAPGRAM_SANITIZED).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grammar/builtin.h"
#include "grammar/gbnf_reader.h"
#include "grammar/grammar.h"
#include "grammar/lark_lowering.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "parser/flat_grammar.h"
#include "parser/recognizer.h"
#include "pruning/compact.h"
#include "tests/support/random_grammar.h"
#include "tests/support/reference_recognizer.h"
#include "tests/support/test_paths.h"
#include "tests/support/test_scale.h"
#include "transforms/dedup_rules.h"
#include "transforms/fuse_literals.h"
#include "transforms/inline_rules.h"
#include "transforms/pipeline.h"
#include "transforms/useless_rules.h"

namespace zapgram {
namespace {

constexpr int kScale = testing::Scaled(10, 1);

using grammar::ExprId;
using grammar::Grammar;
using transforms::PassReport;

Grammar Read(std::string_view text) {
  absl::StatusOr<Grammar> g = grammar::ReadGbnf(text, "<test>");
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : Grammar();
}

// The named list of a report, or {}.
std::vector<std::string> List(const PassReport& report, const std::string& name) {
  for (const auto& [key, names] : report.rules) {
    if (key == name) return names;
  }
  return {};
}

uint64_t Counter(const PassReport& report, const std::string& name) {
  for (const auto& [key, value] : report.counts) {
    if (key == name) return value;
  }
  return 0;
}

// --------------------------------------------------------------- useless_rules

TEST(UselessRules, RemovesUnproductiveAndUnreachable) {
  Grammar g = Read(
      "root ::= \"a\" b | c | d\n"
      "b ::= \"b\" | loop\n"
      "loop ::= \"x\" loop\n"
      "c ::= [b-c]* e\n"
      "d ::= loop \"y\"\n"
      "e ::= \"e\"\n"
      "unused ::= \"u\" e\n");
  PassReport report;
  absl::StatusOr<Grammar> out = transforms::RemoveUselessRules(g, &report);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(out->Validate().ok());
  EXPECT_EQ(grammar::Dump(*out),
            "root ::= \"a\" b | c\n"
            "b ::= \"b\"\n"
            "c ::= [b-c]* e\n"
            "e ::= \"e\"\n");
  EXPECT_EQ(List(report, "removed unproductive"), (std::vector<std::string>{"loop", "d"}));
  EXPECT_EQ(List(report, "removed unreachable"), (std::vector<std::string>{"unused"}));
  EXPECT_EQ(Counter(report, "alternatives dropped"), 2u);
}

TEST(UselessRules, UnproductiveRepeatBecomesEmpty) {
  Grammar g = Read(
      "root ::= \"a\" loop* \"b\" loop?\n"
      "loop ::= \"x\" loop\n");
  PassReport report;
  absl::StatusOr<Grammar> out = transforms::RemoveUselessRules(g, &report);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out), "root ::= \"a\" \"\" \"b\" \"\"\n");
  EXPECT_EQ(Counter(report, "repeats emptied"), 2u);
}

TEST(UselessRules, RulesOnlyBehindDroppedAlternativesAreUnreachable) {
  Grammar g = Read(
      "root ::= \"a\" | loop\n"
      "loop ::= helper loop\n"
      "helper ::= \"h\"\n");
  PassReport report;
  absl::StatusOr<Grammar> out = transforms::RemoveUselessRules(g, &report);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out), "root ::= \"a\"\n");
  EXPECT_EQ(List(report, "removed unreachable"), (std::vector<std::string>{"helper"}));
}

TEST(UselessRules, RootIsKeptAndRenumbered) {
  // The root is not rule 0; after removal it is renumbered, still the root.
  Grammar g = Read(
      "dead ::= \"x\" dead\n"
      "root ::= item+\n"
      "item ::= \"i\"\n");
  ASSERT_EQ(g.rules[g.root].name, "root");
  absl::StatusOr<Grammar> out = transforms::RemoveUselessRules(g);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->rules.size(), 2u);
  EXPECT_EQ(out->rules[out->root].name, "root");
  EXPECT_EQ(grammar::Dump(*out), "root ::= item+\nitem ::= \"i\"\n");
}

TEST(UselessRules, UnproductiveRootGivesTheEmptyLanguage) {
  Grammar g = Read("root ::= \"x\" root | [a] root | other\nother ::= \"y\" other\n");
  PassReport report;
  absl::StatusOr<Grammar> out = transforms::RemoveUselessRules(g, &report);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->rules.size(), 1u);
  EXPECT_EQ(out->rules[out->root].name, "root");
  EXPECT_EQ(out->rules[out->root].loc.line, 1u);
  const grammar::Expr& body = out->exprs[out->rules[out->root].body];
  EXPECT_EQ(body.kind, grammar::ExprKind::kCharClass);
  EXPECT_TRUE(body.ranges.empty());  // matches nothing
  EXPECT_FALSE(grammar::ProductiveRules(*out)[out->root]);
  EXPECT_EQ(Counter(report, "empty language"), 1u);
  EXPECT_EQ(List(report, "removed unproductive"), (std::vector<std::string>{"other"}));
  // The pass is idempotent on it.
  absl::StatusOr<Grammar> again = transforms::RemoveUselessRules(*out);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(grammar::Dump(*again), grammar::Dump(*out));
}

TEST(UselessRules, EmptyClassIsUnproductive) {
  Grammar g;
  g.source_name = "<test>";
  g.rules.push_back({"root", 0, {}});
  g.rules[0].body = g.AddChoice({g.AddCharClass({}, false), g.AddLiteral("a")});
  absl::StatusOr<Grammar> out = transforms::RemoveUselessRules(g);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out), "root ::= \"a\"\n");
}

// ---------------------------------------------------------------- inline_rules

TEST(InlineRules, SingleUseAndTrivialRules) {
  Grammar g = Read(
      "root ::= greeting ws name\n"
      "greeting ::= \"hello\" | \"hi\"\n"
      "ws ::= [ ]*\n"
      "name ::= [a-z]+ ws\n");
  PassReport report;
  absl::StatusOr<Grammar> out = transforms::InlineRules(g, {}, &report);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(out->Validate().ok());
  EXPECT_EQ(grammar::Dump(*out), "root ::= (\"hello\" | \"hi\") [ ]* [a-z]+ [ ]*\n");
  EXPECT_EQ(List(report, "inlined"), (std::vector<std::string>{"greeting", "ws", "name"}));
  // ws is inlined twice but built once: its body is shared.
  EXPECT_EQ(transforms::MeasureGrammar(*out).expressions, 9u);
}

TEST(InlineRules, RecursiveRulesAreNotInlinedIntoThemselves) {
  Grammar g = Read(
      "root ::= list\n"
      "list ::= \"[\" items? \"]\"\n"
      "items ::= value (\",\" items)?\n"
      "value ::= \"1\" | list\n");
  PassReport report;
  absl::StatusOr<Grammar> out = transforms::InlineRules(g, {}, &report);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out),
            "root ::= list\n"
            "list ::= \"[\" items? \"]\"\n"
            "items ::= (\"1\" | list) (\",\" items)?\n");
  EXPECT_EQ(List(report, "inlined"), (std::vector<std::string>{"value"}));
}

TEST(InlineRules, RootIsNeverInlined) {
  Grammar g = Read(
      "root ::= \"a\" b?\n"
      "b ::= \"b\" root\n");
  absl::StatusOr<Grammar> out = transforms::InlineRules(g);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out), "root ::= \"a\" (\"b\" root)?\n");
}

TEST(InlineRules, MutualRecursionKeepsOneRuleOfTheCycle) {
  Grammar g = Read(
      "root ::= a\n"
      "a ::= \"(\" b \")\" | \"x\"\n"
      "b ::= \"[\" a \"]\"\n");
  absl::StatusOr<Grammar> out = transforms::InlineRules(g);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out),
            "root ::= a\n"
            "a ::= \"(\" \"[\" a \"]\" \")\" | \"x\"\n");
}

TEST(InlineRules, LargeMultiUseRulesStayUnlessAllowed) {
  Grammar g = Read(
      "root ::= big big\n"
      "big ::= \"a\" \"b\" \"c\" \"d\"\n");
  absl::StatusOr<Grammar> out = transforms::InlineRules(g);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->rules.size(), 2u);
  transforms::InlineOptions options;
  options.max_trivial_size = 5;
  out = transforms::InlineRules(g, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out), "root ::= \"a\" \"b\" \"c\" \"d\" \"a\" \"b\" \"c\" \"d\"\n");
}

TEST(InlineRules, ChainOfSingleUseRules) {
  // r1 -> r2 -> ... -> r50, each used once: all fold into the root.
  std::string text = "root ::= \"<\" r1 \">\"\n";
  for (int i = 1; i < 50; ++i) absl::StrAppend(&text, "r", i, " ::= \"a\" r", i + 1, "\n");
  absl::StrAppend(&text, "r50 ::= \"z\"\n");
  Grammar g = Read(text);
  absl::StatusOr<Grammar> out = transforms::InlineRules(g);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->rules.size(), 1u);
  absl::StatusOr<Grammar> fused = transforms::FuseLiterals(*out);
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ(grammar::Dump(*fused), absl::StrCat("root ::= \"<", std::string(49, 'a'), "z>\"\n"));
}

// --------------------------------------------------------------- fuse_literals

TEST(FuseLiterals, AdjacentLiteralsAndNestedSequences) {
  Grammar g = Read(
      "root ::= \"a\" \"b\" (\"c\" \"d\") x \"e\" (\"\" \"f\")\n"
      "x ::= \"x\"\n");
  PassReport report;
  absl::StatusOr<Grammar> out = transforms::FuseLiterals(g, &report);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(out->Validate().ok());
  EXPECT_EQ(grammar::Dump(*out), "root ::= \"abcd\" x \"ef\"\nx ::= \"x\"\n");
  EXPECT_EQ(Counter(report, "literals fused"), 4u);
}

TEST(FuseLiterals, OneCodepointAlternativesBecomeOneClass) {
  Grammar g = Read("root ::= \"a\" | [b-c] | \"\\u00e9\" | \"xy\" | ([d] | \"q\") | x\nx ::= \"x\"\n");
  PassReport report;
  absl::StatusOr<Grammar> out = transforms::FuseLiterals(g, &report);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out), "root ::= [a-dq\\xE9] | \"xy\" | x\nx ::= \"x\"\n");
  EXPECT_EQ(Counter(report, "classes merged"), 4u);
}

TEST(FuseLiterals, StrayBytesAndRegexesAreNotMerged) {
  Grammar g;
  g.source_name = "<test>";
  g.rules.push_back({"root", 0, {}});
  grammar::Expr regex;
  regex.kind = grammar::ExprKind::kRegex;
  regex.literal = "a+";
  g.exprs.push_back(regex);
  ExprId re = static_cast<ExprId>(g.exprs.size() - 1);
  ExprId seq = g.AddSequence({g.AddLiteral("\xC3"), re, g.AddLiteral("b"), g.AddLiteral("c"), re,
                              g.AddLiteral("\xA9")});
  ExprId alt = g.AddChoice({g.AddLiteral("\xC3"), g.AddLiteral("a"), re});
  g.rules[0].body = g.AddSequence({seq, alt});
  absl::StatusOr<Grammar> out = transforms::FuseLiterals(g);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out), "root ::= \"\\xC3\" /a+/ \"bc\" /a+/ \"\\xA9\" (\"\\xC3\" | \"a\" | /a+/)\n");
}

TEST(FuseLiterals, TrivialWrappers) {
  Grammar g = Read("root ::= \"a\"{1} (\"\")* (\"b\"){0} (\"c\" | \"c\"){1,1} (\"x\")\n");
  absl::StatusOr<Grammar> out = transforms::FuseLiterals(g);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out), "root ::= \"a\" [c] \"x\"\n");
}

TEST(FuseLiterals, SharedNodesAreNotEditedInPlace) {
  // One literal node used by two sequences: fusing in one must not change the other.
  Grammar g;
  g.source_name = "<test>";
  g.rules.push_back({"root", 0, {}});
  g.rules.push_back({"other", 0, {}});
  ExprId a = g.AddLiteral("a");
  g.rules[0].body = g.AddSequence({a, g.AddLiteral("b")});
  g.rules[1].body = g.AddSequence({g.AddRuleRef(0), a});
  absl::StatusOr<Grammar> out = transforms::FuseLiterals(g);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out), "root ::= \"ab\"\nother ::= root \"a\"\n");
  EXPECT_EQ(grammar::Dump(g), "root ::= \"a\" \"b\"\nother ::= root \"a\"\n");
}

// ----------------------------------------------------------------- dedup_rules

TEST(DedupRules, IdenticalRulesMergeAndReferencesFollow) {
  Grammar g = Read(
      "root ::= a | b | c\n"
      "a ::= \"x\" [0-9]+\n"
      "b ::= \"x\" [0-9]+\n"
      "c ::= \"y\" a\n"
      "d ::= \"y\" b\n");
  PassReport report;
  absl::StatusOr<Grammar> out = transforms::DedupRules(g, {}, &report);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(out->Validate().ok());
  EXPECT_EQ(grammar::Dump(*out),
            "root ::= a | c\n"
            "a ::= \"x\" [0-9]+\n"
            "c ::= \"y\" a\n");
  EXPECT_EQ(List(report, "merged"), (std::vector<std::string>{"b=a", "d=c"}));
  EXPECT_EQ(Counter(report, "duplicate alternatives dropped"), 1u);
}

TEST(DedupRules, IdenticalSubexpressionsAreShared) {
  Grammar g = Read(
      "root ::= (\"k\" [0-9]+)* \"|\" (\"k\" [0-9]+)* x\n"
      "x ::= (\"k\" [0-9]+)+\n");
  absl::StatusOr<Grammar> out = transforms::DedupRules(g);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out), grammar::Dump(g));
  // "k", [0-9], [0-9]+, "k" [0-9]+, (...)*, "|", x, root's sequence, (...)+ .
  EXPECT_EQ(transforms::MeasureGrammar(*out).expressions, 9u);
  EXPECT_EQ(transforms::MeasureGrammar(*out).symbols, transforms::MeasureGrammar(g).symbols);
}

TEST(DedupRules, TheRootKeepsItsNameWhenMerged) {
  Grammar g = Read(
      "x ::= \"a\"\n"
      "root ::= \"a\"\n"
      "user ::= x root\n");
  absl::StatusOr<Grammar> out = transforms::DedupRules(g);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out), "root ::= \"a\"\nuser ::= root root\n");
}

TEST(DedupRules, SelfRecursiveCopiesMerge) {
  Grammar g = Read(
      "root ::= a b\n"
      "a ::= \"x\" a | \"y\"\n"
      "b ::= \"x\" b | \"y\"\n");
  absl::StatusOr<Grammar> out = transforms::DedupRules(g);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out), "root ::= a a\na ::= \"x\" a | \"y\"\n");
}

TEST(DedupRules, MergesInsideACycleIterate) {
  Grammar g = Read(
      "root ::= v\n"
      "v ::= \"n\" | l1 | l2\n"
      "l1 ::= \"[\" v \"]\"\n"
      "l2 ::= \"[\" v \"]\"\n");
  absl::StatusOr<Grammar> out = transforms::DedupRules(g);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out),
            "root ::= v\n"
            "v ::= \"n\" | l1\n"
            "l1 ::= \"[\" v \"]\"\n");
}

TEST(DedupRules, IsomorphicCyclesOfSeveralRulesAreLeftAlone) {
  // Coinductive equivalence (a1~b1 needs a2~b2 and back) is not attempted.
  Grammar g = Read(
      "root ::= a1 b1\n"
      "a1 ::= \"x\" a2 | \"y\"\n"
      "a2 ::= \"z\" a1\n"
      "b1 ::= \"x\" b2 | \"y\"\n"
      "b2 ::= \"z\" b1\n");
  absl::StatusOr<Grammar> out = transforms::DedupRules(g);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->rules.size(), 5u);
}

TEST(DedupRules, RegexesCompareByPatternAndFlags) {
  Grammar g;
  g.source_name = "<test>";
  g.rules.push_back({"root", 0, {}});
  auto regex = [&](const char* pattern, uint32_t flags) {
    grammar::Expr e;
    e.kind = grammar::ExprKind::kRegex;
    e.literal = pattern;
    e.flags = flags;
    g.exprs.push_back(e);
    return static_cast<ExprId>(g.exprs.size() - 1);
  };
  g.rules[0].body = g.AddChoice({regex("a+", 0), regex("a+", 0), regex("a+", grammar::kRegexIgnoreCase)});
  absl::StatusOr<Grammar> out = transforms::DedupRules(g);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(grammar::Dump(*out), "root ::= /a+/ | /a+/i\n");
}

// -------------------------------------------------------------------- pipeline

TEST(Pipeline, ReportsEveryPass) {
  Grammar g = Read(
      "root ::= \"{\" ws pair (\",\" ws pair)* \"}\"\n"
      "pair ::= key ws \":\" ws value\n"
      "key ::= \"\\\"\" [a-z]+ \"\\\"\"\n"
      "value ::= number | \"true\" | \"false\"\n"
      "number ::= [0-9]+\n"
      "ws ::= [ ]?\n"
      "unused ::= \"u\"\n"
      "dead ::= \"d\" dead\n");
  transforms::TransformReport report;
  absl::StatusOr<Grammar> out = transforms::Normalize(g, &report);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(report.passes.size(), 4u);
  EXPECT_EQ(report.passes[0].pass, "useless_rules");
  EXPECT_EQ(report.passes[1].pass, "inline_rules");
  EXPECT_EQ(report.passes[2].pass, "fuse_literals");
  EXPECT_EQ(report.passes[3].pass, "dedup_rules");
  for (size_t i = 1; i < report.passes.size(); ++i) {
    EXPECT_EQ(report.passes[i].before, report.passes[i - 1].after);
  }
  EXPECT_EQ(report.passes[0].before, transforms::MeasureGrammar(g));
  EXPECT_EQ(report.passes.back().after, transforms::MeasureGrammar(*out));
  std::string text = transforms::FormatReport(report);
  std::printf("%s%s", text.c_str(), grammar::Dump(*out).c_str());
  EXPECT_NE(text.find("useless_rules: 8 rules, "), std::string::npos) << text;
  EXPECT_NE(text.find("removed unreachable: unused; removed unproductive: dead"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("inlined: "), std::string::npos) << text;
  // pair is used twice and is not small: it stays; the rest is inlined.
  EXPECT_EQ(grammar::Dump(*out),
            "root ::= \"{\" [ ]? pair (\",\" [ ]? pair)* \"}\"\n"
            "pair ::= \"\\\"\" [a-z]+ \"\\\"\" [ ]? \":\" [ ]? ([0-9]+ | \"true\" | \"false\")\n");
}

TEST(Pipeline, EmptyLanguageGivesTheRootAlone) {
  Grammar g = Read("root ::= \"(\" root \")\"\n");
  absl::StatusOr<Grammar> out = transforms::Normalize(g);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->rules.size(), 1u);
  EXPECT_EQ(out->rules[out->root].name, "root");
  EXPECT_FALSE(grammar::ProductiveRules(*out)[out->root]);
}

TEST(Pipeline, DeepNestingAndLongChainsDoNotRecurse) {
  const int depth = 20000 * kScale;
  Grammar g;
  g.source_name = "<deep>";
  g.rules.push_back({"root", 0, {}});
  ExprId e = g.AddLiteral("x");
  for (int i = 0; i < depth; ++i) {
    e = i % 2 ? g.AddSequence({g.AddLiteral("a"), e}) : g.AddChoice({e, g.AddLiteral("b")});
  }
  g.rules[0].body = e;
  transforms::TransformReport report;
  absl::StatusOr<Grammar> out = transforms::Normalize(g, &report);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->rules.size(), 1u);

  // A chain of rules r_i ::= "a" r_{i+1} | "b": each used once, all inlined.
  Grammar chain;
  chain.source_name = "<chain>";
  const int n = 5000 * kScale;
  for (int i = 0; i < n; ++i) chain.rules.push_back({absl::StrCat("r", i), 0, {}});
  chain.rules[0].name = "root";
  for (int i = 0; i < n; ++i) {
    ExprId next = i + 1 < n ? chain.AddRuleRef(i + 1) : chain.AddLiteral("end");
    chain.rules[i].body =
        chain.AddChoice({chain.AddSequence({chain.AddLiteral("a"), next}), chain.AddLiteral("b")});
  }
  report = {};
  out = transforms::Normalize(chain, &report);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->rules.size(), 1u);
  std::printf("%s", transforms::FormatReport(report, 3).c_str());
}

// ------------------------------------------------------ dedup at scale (linear)

TEST(DedupScale, TwentyThousandDuplicatedRules) {
  // copies item_i ::= "k" digits_i ":" value   (one strongly connected
  // component with value and root), digits_i ::= [0-9] digits_i | [0-9]
  // (self-recursive), root ::= item_0 | ... | item_{n-1} ; value ::= "n" | "[" root "]".
  const int copies = 1000 * kScale;  // 2 * copies + 2 rules
  Grammar g;
  g.source_name = "<dups>";
  g.rules.push_back({"root", 0, {}});
  g.rules.push_back({"value", 0, {}});
  for (int i = 0; i < copies; ++i) {
    g.rules.push_back({absl::StrCat("item_", i), 0, {}});
    g.rules.push_back({absl::StrCat("digits_", i), 0, {}});
  }
  std::vector<ExprId> alternatives;
  for (int i = 0; i < copies; ++i) {
    const grammar::RuleId item = 2 + 2 * i, digits = 3 + 2 * i;
    g.rules[item].body = g.AddSequence(
        {g.AddLiteral("k"), g.AddRuleRef(digits), g.AddLiteral(":"), g.AddRuleRef(1)});
    g.rules[digits].body = g.AddChoice(
        {g.AddSequence({g.AddCharClass({{'0', '9'}}, false), g.AddRuleRef(digits)}),
         g.AddCharClass({{'0', '9'}}, false)});
    alternatives.push_back(g.AddRuleRef(item));
  }
  g.rules[0].body = g.AddChoice(alternatives);
  g.rules[1].body =
      g.AddChoice({g.AddLiteral("n"), g.AddSequence({g.AddLiteral("["), g.AddRuleRef(0),
                                                     g.AddLiteral("]")})});
  ASSERT_TRUE(g.Validate().ok());
  transforms::GrammarSize before = transforms::MeasureGrammar(g);

  auto start = std::chrono::steady_clock::now();
  PassReport report;
  absl::StatusOr<Grammar> out = transforms::DedupRules(g, {}, &report);
  double dedup_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(out.ok()) << out.status();
  transforms::GrammarSize after = transforms::MeasureGrammar(*out);
  EXPECT_EQ(after.rules, 4u) << grammar::Dump(*out);
  EXPECT_EQ(grammar::Dump(*out),
            "root ::= item_0\n"
            "value ::= \"n\" | \"[\" root \"]\"\n"
            "item_0 ::= \"k\" digits_0 \":\" value\n"
            "digits_0 ::= [0-9] digits_0 | [0-9]\n");
  EXPECT_EQ(Counter(report, "rules merged"), static_cast<uint64_t>(2 * copies - 2));

  start = std::chrono::steady_clock::now();
  transforms::TransformReport pipeline_report;
  absl::StatusOr<Grammar> normalized = transforms::Normalize(g, &pipeline_report);
  double pipeline_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  EXPECT_LE(normalized->rules.size(), 4u) << grammar::Dump(*normalized);
  std::printf("[dedup scale] %s -> %s: dedup %.1f ms, whole pipeline %.1f ms (%s)\n",
              transforms::FormatSize(before).c_str(), transforms::FormatSize(after).c_str(),
              dedup_ms, pipeline_ms,
              transforms::FormatSize(transforms::MeasureGrammar(*normalized)).c_str());
  std::printf("%s", transforms::FormatReport(pipeline_report, 3).c_str());
}

TEST(DedupScale, TwoParallelChainsOfTenThousandRules) {
  // a_i ::= "x" a_{i-1} | "y" and b_i ::= "x" b_{i-1} | "y" (acyclic, each
  // b_i equal to a_i only once b_{i-1} is merged with a_{i-1}): one pass over
  // the components, callees first, merges the whole chain.
  const int n = 1000 * kScale;
  Grammar g;
  g.source_name = "<chains>";
  g.rules.push_back({"root", 0, {}});
  for (int i = 0; i < n; ++i) {
    g.rules.push_back({absl::StrCat("a_", i), 0, {}});
    g.rules.push_back({absl::StrCat("b_", i), 0, {}});
  }
  for (int i = 0; i < n; ++i) {
    for (int side = 0; side < 2; ++side) {
      const grammar::RuleId self = 1 + 2 * i + side;
      ExprId tail = i == 0 ? g.AddLiteral("z") : g.AddRuleRef(self - 2);
      g.rules[self].body =
          g.AddChoice({g.AddSequence({g.AddLiteral("x"), tail}), g.AddLiteral("y")});
    }
  }
  g.rules[0].body = g.AddSequence({g.AddRuleRef(2 * n - 1), g.AddRuleRef(2 * n)});
  ASSERT_TRUE(g.Validate().ok());
  auto start = std::chrono::steady_clock::now();
  PassReport report;
  absl::StatusOr<Grammar> out = transforms::DedupRules(g, {}, &report);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->rules.size(), static_cast<size_t>(n + 1));
  EXPECT_EQ(Counter(report, "rules merged"), static_cast<uint64_t>(n));
  EXPECT_EQ(grammar::DumpExpr(*out, out->rules[out->root].body),
            absl::StrCat("a_", n - 1, " a_", n - 1));
  std::printf("[dedup chains] %s -> %s in %.1f ms\n",
              transforms::FormatSize(transforms::MeasureGrammar(g)).c_str(),
              transforms::FormatSize(transforms::MeasureGrammar(*out)).c_str(), ms);
}

// --------------------------------------------- language preservation (random)

using parser::ByteSet;
using testing::ReferenceRecognizer;

// The oracle's answers along one input (on the original grammar).
struct Trace {
  std::string input;
  size_t viable = 0;                   // longest viable prefix
  std::vector<uint8_t> accepting;      // per prefix length 0..viable
  std::vector<ByteSet> viable_next;    // per prefix: alphabet bytes b with prefix+b viable
};

Trace TraceOf(const ReferenceRecognizer& ref, const std::string& input) {
  const std::vector<uint8_t>& alphabet = testing::AlphabetBytes();
  Trace t;
  t.input = input;
  ReferenceRecognizer::Session session(&ref);
  auto record = [&] {
    t.accepting.push_back(session.IsAccepting());
    std::vector<bool> viable = session.ViableAfter(alphabet);
    ByteSet next;
    for (size_t k = 0; k < alphabet.size(); ++k) {
      if (viable[k]) next.set(alphabet[k]);
    }
    t.viable_next.push_back(next);
  };
  record();
  for (char c : input) {
    session.Push(static_cast<uint8_t>(c));
    if (!session.IsViable()) break;
    ++t.viable;
    record();
  }
  return t;
}

// Compares the engine on `flat` with the trace; returns "" or what differs.
std::string Compare(const parser::FlatGrammar& flat, const Trace& t, uint64_t* prefixes) {
  ByteSet alphabet_mask;
  for (uint8_t b : testing::AlphabetBytes()) alphabet_mask.set(b);
  RecognizerOptions options;
  options.pruning = true;
  parser::Recognizer rec = pruning::MakeRecognizer(&flat, options);
  auto where = [&](size_t i) {
    return absl::StrCat("input \"", testing::EscapeBytes(t.input), "\" after ", i, " bytes: ");
  };
  for (size_t i = 0;; ++i) {
    ++*prefixes;
    if (rec.IsAccepting() != static_cast<bool>(t.accepting[i])) {
      return absl::StrCat(where(i), "engine IsAccepting ", rec.IsAccepting(), ", oracle ",
                          static_cast<int>(t.accepting[i]));
    }
    if ((rec.NextBytes() & alphabet_mask) != t.viable_next[i]) {
      return absl::StrCat(where(i), "NextBytes on the alphabet differ: engine ",
                          (rec.NextBytes() & alphabet_mask).to_string(), ", oracle ",
                          t.viable_next[i].to_string());
    }
    if (i == t.input.size()) return "";
    bool fed = rec.Feed(static_cast<uint8_t>(t.input[i]));
    if (!rec.status().ok()) return absl::StrCat(where(i), rec.status().ToString());
    if (fed != (i < t.viable)) {
      return absl::StrCat(where(i), "Feed = ", fed, ", oracle viable = ", i < t.viable);
    }
    if (!fed) return "";
  }
}

using Pass = std::function<absl::StatusOr<Grammar>(const Grammar&)>;

struct Variant {
  std::string name;
  Pass run;
  uint64_t grammars = 0, empty = 0, strings = 0, prefixes = 0, accepted = 0, mismatches = 0;
  uint64_t rules_before = 0, rules_after = 0, symbols_before = 0, symbols_after = 0;
};

std::vector<Variant> Variants() {
  auto useless = [](const Grammar& g) { return transforms::RemoveUselessRules(g); };
  auto inline_default = [](const Grammar& g) { return transforms::InlineRules(g); };
  auto inline_eager = [](const Grammar& g) {
    transforms::InlineOptions o;
    o.max_trivial_size = 12;
    return transforms::InlineRules(g, o);
  };
  auto fuse = [](const Grammar& g) { return transforms::FuseLiterals(g); };
  auto dedup = [](const Grammar& g) { return transforms::DedupRules(g); };
  auto pipeline = [](const Grammar& g) { return transforms::Normalize(g); };
  auto after_dedup = [=](const Grammar& g) -> absl::StatusOr<Grammar> {
    // Passes on a DAG: dedup first, then inline and fuse (and dedup again).
    absl::StatusOr<Grammar> d = dedup(g);
    if (!d.ok()) return d;
    absl::StatusOr<Grammar> i = inline_eager(*d);
    if (!i.ok()) return i;
    absl::StatusOr<Grammar> f = fuse(*i);
    if (!f.ok()) return f;
    return dedup(*f);
  };
  auto twice = [=](const Grammar& g) -> absl::StatusOr<Grammar> {
    absl::StatusOr<Grammar> once = pipeline(g);
    if (!once.ok()) return once;
    return pipeline(*once);
  };
  return {
      {"useless_rules", useless},
      {"inline_rules", inline_default},
      {"inline_rules(max_trivial_size=12)", inline_eager},
      {"fuse_literals", fuse},
      {"dedup_rules", dedup},
      {"dedup+inline+fuse+dedup", after_dedup},
      {"pipeline", pipeline},
      {"pipeline twice", twice},
  };
}

void RunLanguagePreservation(uint64_t seed, int grammars, const testing::RandomGrammarOptions& gopt,
                             const char* label) {
  std::mt19937_64 rng(seed);
  std::vector<Variant> variants = Variants();
  const int kStrings = 16;
  const size_t kMaxLength = 12;
  for (int gi = 0; gi < grammars; ++gi) {
    Grammar g = testing::RandomGrammar(rng, gopt);
    ASSERT_TRUE(g.Validate().ok());
    ReferenceRecognizer ref(g);
    const bool empty = ref.LanguageIsEmpty();
    std::vector<Trace> traces;
    for (int s = 0; s < kStrings; ++s) {
      std::string input = s % 2 ? testing::GuidedString(ref, rng, kMaxLength)
                                : testing::RandomString(rng, kMaxLength);
      traces.push_back(TraceOf(ref, input));
    }
    transforms::GrammarSize size_before = transforms::MeasureGrammar(g);
    for (Variant& v : variants) {
      ++v.grammars;
      absl::StatusOr<Grammar> out = v.run(g);
      auto context = [&] {
        return absl::StrCat("[", label, "] pass ", v.name, ", grammar #", gi, ":\n",
                            grammar::Dump(g),
                            out.ok() ? absl::StrCat("transformed:\n", grammar::Dump(*out)) : "");
      };
      ASSERT_TRUE(out.ok()) << context() << out.status();
      v.empty += empty;
      ASSERT_TRUE(out->Validate().ok()) << context();
      transforms::GrammarSize size_after = transforms::MeasureGrammar(*out);
      v.rules_before += size_before.rules;
      v.symbols_before += size_before.symbols;
      v.rules_after += size_after.rules;
      v.symbols_after += size_after.symbols;
      // An empty language compiles too: its traces say nothing is viable.
      absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(*out);
      ASSERT_TRUE(flat.ok()) << context() << flat.status();
      for (const Trace& t : traces) {
        ++v.strings;
        if (t.viable == t.input.size() && t.accepting[t.viable]) ++v.accepted;
        std::string diff = Compare(*flat, t, &v.prefixes);
        if (!diff.empty()) {
          ++v.mismatches;
          ADD_FAILURE() << context() << diff;
          break;
        }
      }
      if (v.mismatches > 3) return;
    }
  }
  for (const Variant& v : variants) {
    std::printf(
        "[%s] %-34s %5llu grammars (%llu empty), %6llu strings (%llu sentences), %7llu prefixes "
        "compared; rules %llu -> %llu, symbols %llu -> %llu; mismatches %llu\n",
        label, v.name.c_str(), static_cast<unsigned long long>(v.grammars),
        static_cast<unsigned long long>(v.empty), static_cast<unsigned long long>(v.strings),
        static_cast<unsigned long long>(v.accepted), static_cast<unsigned long long>(v.prefixes),
        static_cast<unsigned long long>(v.rules_before),
        static_cast<unsigned long long>(v.rules_after),
        static_cast<unsigned long long>(v.symbols_before),
        static_cast<unsigned long long>(v.symbols_after),
        static_cast<unsigned long long>(v.mismatches));
  }
}

TEST(LanguagePreservation, RandomGrammars) {
  RunLanguagePreservation(0x7A4F'0003'0001ull, 300 * kScale, {}, "small");
}

TEST(LanguagePreservation, RandomGrammarsWithMoreRules) {
  testing::RandomGrammarOptions options;
  options.max_rules = 12;
  options.max_depth = 3;
  RunLanguagePreservation(0x7A4F'0003'0002ull, 200 * kScale, options, "many rules");
}

// Regex terminals are opaque atoms for the passes. Random grammars with some
// literal and class leaves replaced by regexes: the engine on the original
// and on the transformed grammar agree at every prefix (Feed, IsAccepting,
// NextBytes over all 256 bytes; the engine's regex DFAs have their own RE2
// differential test), and the oracle (RE2 full matches: exact for
// acceptance) agrees with both on whole strings.
Grammar WithRegexes(Grammar g, std::mt19937_64& rng) {
  static const char* const kPatterns[] = {"a+", "(ab|c)*", "[a-c]", "b?c", "a|bc", "[^a]", "(a|b)c?"};
  for (grammar::Expr& e : g.exprs) {
    if (e.kind != grammar::ExprKind::kLiteral && e.kind != grammar::ExprKind::kCharClass) continue;
    if (testing::Uniform(rng, 3) != 0) continue;
    e.kind = grammar::ExprKind::kRegex;
    e.literal = kPatterns[testing::Uniform(rng, std::size(kPatterns))];
    e.flags = 0;
    e.ranges.clear();
  }
  return g;
}

// "" when both engines agree along `input`, else what differs.
std::string CompareEngines(const parser::FlatGrammar& a, const parser::FlatGrammar& b,
                           const std::string& input, bool* accepted) {
  parser::Recognizer ra = pruning::MakeRecognizer(&a);
  parser::Recognizer rb = pruning::MakeRecognizer(&b);
  for (size_t i = 0;; ++i) {
    std::string where = absl::StrCat("input \"", testing::EscapeBytes(input), "\" after ", i, " bytes: ");
    if (ra.IsAccepting() != rb.IsAccepting()) return where + "IsAccepting differs";
    if (ra.NextBytes() != rb.NextBytes()) return where + "NextBytes differ";
    if (i == input.size()) {
      *accepted = ra.IsAccepting();
      return "";
    }
    bool fa = ra.Feed(static_cast<uint8_t>(input[i]));
    bool fb = rb.Feed(static_cast<uint8_t>(input[i]));
    if (!ra.status().ok() || !rb.status().ok()) return where + "a budget ran out";
    if (fa != fb) return where + "Feed differs";
    if (!fa) {
      *accepted = false;
      return "";
    }
  }
}

TEST(LanguagePreservation, RandomGrammarsWithRegexTerminals) {
  std::mt19937_64 rng(0x7A4F'0003'0004ull);
  std::vector<Variant> variants = Variants();
  const int kGrammars = 30 * kScale;
  uint64_t grammars = 0, strings = 0, sentences = 0, oracle_checked = 0, skipped = 0;
  for (int gi = 0; gi < kGrammars; ++gi) {
    Grammar g = WithRegexes(testing::RandomGrammar(rng), rng);
    ASSERT_TRUE(g.Validate().ok());
    absl::StatusOr<parser::FlatGrammar> original = parser::BuildFlatGrammar(g);
    if (!original.ok()) {  // an empty language (or a regex the compiler refuses)
      ++skipped;
      continue;
    }
    ++grammars;
    ReferenceRecognizer ref(g);
    const bool oracle_ok = ref.error().empty();
    std::vector<std::string> inputs;
    for (int s = 0; s < 16; ++s) {
      inputs.push_back(s % 2 ? testing::GuidedString(ref, rng, 10)
                             : testing::RandomString(rng, 10));
    }
    for (Variant& v : variants) {
      absl::StatusOr<Grammar> out = v.run(g);
      ASSERT_TRUE(out.ok()) << v.name << "\n" << grammar::Dump(g) << out.status();
      absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(*out);
      ASSERT_TRUE(flat.ok()) << v.name << "\n" << grammar::Dump(*out) << flat.status();
      for (const std::string& input : inputs) {
        bool accepted = false;
        std::string diff = CompareEngines(*original, *flat, input, &accepted);
        ASSERT_EQ(diff, "") << v.name << "\noriginal:\n" << grammar::Dump(g) << "transformed:\n"
                            << grammar::Dump(*out);
        ++strings;
        sentences += accepted;
        if (oracle_ok) {
          ++oracle_checked;
          ASSERT_EQ(ref.Accepts(input), accepted)
              << v.name << " \"" << testing::EscapeBytes(input) << "\"\n" << grammar::Dump(g);
        }
      }
    }
  }
  std::printf("[regex] %llu grammars (%llu skipped: empty language or refused regex), %zu passes, %llu strings "
              "compared engine vs engine (%llu sentences), %llu also against the RE2 oracle\n",
              static_cast<unsigned long long>(grammars), static_cast<unsigned long long>(skipped),
              variants.size(), static_cast<unsigned long long>(strings),
              static_cast<unsigned long long>(sentences),
              static_cast<unsigned long long>(oracle_checked));
}

// ----------------------------------------------------------- real GBNF grammars

struct Verdict {
  bool accepted = false;
  size_t offset = 0;  // first refused byte, or the length
};

Verdict RunDocument(const parser::FlatGrammar& flat, std::string_view text) {
  parser::Recognizer rec = pruning::MakeRecognizer(&flat);
  Verdict v;
  v.offset = rec.FeedBytes(text);
  EXPECT_TRUE(rec.status().ok()) << rec.status();
  v.accepted = v.offset == text.size() && rec.IsAccepting();
  return v;
}

std::optional<size_t> ExpectedOffset(const std::string& path) {
  std::string stem = std::filesystem::path(path).stem().string();
  size_t at = stem.rfind('@');
  if (at == std::string::npos) return std::nullopt;
  return static_cast<size_t>(std::stoul(stem.substr(at + 1)));
}

// Normalizes `g`, prints the sizes, checks the labelled documents and the
// agreement with the original grammar on mutated documents.
void CheckRealGrammar(const std::string& name, const Grammar& g,
                      const std::vector<std::string>& accept,
                      const std::vector<std::string>& reject, std::mt19937_64& rng) {
  transforms::TransformReport report;
  absl::StatusOr<Grammar> out = transforms::Normalize(g, &report);
  ASSERT_TRUE(out.ok()) << name << ": " << out.status();
  ASSERT_TRUE(out->Validate().ok()) << name;
  transforms::GrammarSize before = transforms::MeasureGrammar(g);
  transforms::GrammarSize after = transforms::MeasureGrammar(*out);
  std::printf("[real] %-12s %4zu rules, %5llu symbols, %5zu expressions -> %4zu rules, %5llu "
              "symbols, %5zu expressions\n",
              name.c_str(), before.rules, static_cast<unsigned long long>(before.symbols),
              before.expressions, after.rules, static_cast<unsigned long long>(after.symbols),
              after.expressions);
  std::string text = transforms::FormatReport(report, 6);
  std::printf("%s", text.c_str());
  absl::StatusOr<parser::FlatGrammar> original = parser::BuildFlatGrammar(g);
  absl::StatusOr<parser::FlatGrammar> normalized = parser::BuildFlatGrammar(*out);
  ASSERT_TRUE(original.ok()) << original.status();
  ASSERT_TRUE(normalized.ok()) << name << ": " << normalized.status() << "\n" << grammar::Dump(*out);
  std::printf("[real] %-12s lowered: %u -> %u productions, %zu -> %zu rhs symbols\n", name.c_str(),
              original->num_productions(), normalized->num_productions(), original->rhs.size(),
              normalized->rhs.size());
  size_t mutants = 0;
  for (const std::string& path : accept) {
    std::string doc = testing::ReadFileOrDie(path);
    EXPECT_TRUE(RunDocument(*normalized, doc).accepted) << name << ": " << path;
  }
  for (const std::string& path : reject) {
    std::string doc = testing::ReadFileOrDie(path);
    Verdict v = RunDocument(*normalized, doc);
    EXPECT_FALSE(v.accepted) << name << ": " << path;
    if (std::optional<size_t> at = ExpectedOffset(path)) {
      EXPECT_EQ(v.offset, *at) << name << ": " << path;
    }
  }
  std::vector<std::string> all = accept;
  all.insert(all.end(), reject.begin(), reject.end());
  for (const std::string& path : all) {
    std::string doc = testing::ReadFileOrDie(path);
    for (int m = 0; m < 2 * kScale; ++m) {
      std::string mutant = testing::MutateDocument(doc, rng);
      Verdict a = RunDocument(*original, mutant);
      Verdict b = RunDocument(*normalized, mutant);
      ++mutants;
      EXPECT_EQ(a.offset, b.offset) << name << ": mutant of " << path << ": \""
                                    << testing::EscapeBytes(mutant) << "\"";
      EXPECT_EQ(a.accepted, b.accepted) << name << ": mutant of " << path;
    }
  }
  std::printf("[real] %-12s %zu accept and %zu reject documents, %zu mutants agree\n",
              name.c_str(), accept.size(), reject.size(), mutants);
}

TEST(RealGrammars, NormalizeAndKeepTheirLanguage) {
  std::mt19937_64 rng(0x7A4F'0003'0003ull);
  std::vector<std::string> files =
      testing::ListFiles(testing::DataPath("grammars/gbnf"), ".gbnf");
  ASSERT_GE(files.size(), 9u);
  for (const std::string& file : files) {
    std::string name = std::filesystem::path(file).stem().string();
    absl::StatusOr<Grammar> g = grammar::ReadGbnf(testing::ReadFileOrDie(file), file);
    ASSERT_TRUE(g.ok()) << g.status();
    std::string docs = testing::SourcePath("tests/testdata/gbnf_docs/" + name);
    std::vector<std::string> accept = testing::ListFiles(docs + "/accept", ".txt");
    std::vector<std::string> reject = testing::ListFiles(docs + "/reject", ".txt");
    EXPECT_FALSE(accept.empty()) << name;
    CheckRealGrammar(name, *g, accept, reject, rng);
  }
  // builtin:json on json.gbnf's documents: only agreement with the original matters.
  absl::StatusOr<Grammar> json =
      grammar::ReadGbnf(grammar::BuiltinGrammarText("json"), "<builtin:json>");
  ASSERT_TRUE(json.ok()) << json.status();
  std::string docs = testing::SourcePath("tests/testdata/gbnf_docs/json");
  std::vector<std::string> accept = testing::ListFiles(docs + "/accept", ".txt");
  CheckRealGrammar("builtin:json", *json, accept, {}, rng);
}

// -------------------------------------------------------------- lexed grammars

Grammar ReadLarkOrDie(std::string_view text, std::string_view name) {
  absl::StatusOr<Grammar> g = grammar::ReadLarkGrammar(text, name);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : Grammar();
}

// The lexicons are equal field by field.
std::string LexiconDiff(const Grammar& a, const Grammar& b) {
  if (a.tokens.size() != b.tokens.size()) {
    return absl::StrCat(a.tokens.size(), " tokens vs ", b.tokens.size());
  }
  for (size_t t = 0; t < a.tokens.size(); ++t) {
    const grammar::Token& x = a.tokens[t];
    const grammar::Token& y = b.tokens[t];
    if (x.name != y.name || x.pattern != y.pattern || x.flags != y.flags ||
        x.is_string != y.is_string || x.text != y.text || x.priority != y.priority ||
        x.ignored != y.ignored || x.in_rules != y.in_rules) {
      return absl::StrCat("token ", t, " (", x.name, ") differs");
    }
  }
  return "";
}

TEST(LexedGrammars, EveryPassKeepsTheLexiconAndTokenIdentity) {
  // a and b have the same shape over different tokens: dedup must not merge
  // them (tokens are numbered Y, X, NUMBER, NAME: a token index lost on the
  // way would read as Y); "x" "y" must not fuse; a, b, c are inlined.
  const Grammar g = ReadLarkOrDie(
      "start: a | b | c c | \"x\" \"y\"\n"
      "a: \"x\" NAME\n"
      "b: \"y\" NAME\n"
      "c: NUMBER\n"
      "NAME: /[a-z]+/\n"
      "NUMBER: /[0-9]+/\n"
      "%ignore \" \"\n",
      "<lexed>");
  ASSERT_TRUE(g.lexed());
  absl::StatusOr<parser::FlatGrammar> original = parser::BuildFlatGrammar(g);
  ASSERT_TRUE(original.ok()) << original.status();
  const std::vector<std::string> docs = {"x foo", "y bar", "12 34", "x y", "xy", "x", "y 12",
                                         "z",     "x1",    "12",    "",    " x  a ", "yx"};
  std::vector<Variant> variants = Variants();
  for (const Variant& v : variants) {
    absl::StatusOr<Grammar> out = v.run(g);
    ASSERT_TRUE(out.ok()) << v.name << ": " << out.status();
    ASSERT_TRUE(out->Validate().ok()) << v.name;
    EXPECT_EQ(LexiconDiff(g, *out), "") << v.name;
    absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(*out);
    ASSERT_TRUE(flat.ok()) << v.name << ": " << flat.status();
    for (const std::string& doc : docs) {
      Verdict a = RunDocument(*original, doc);
      Verdict b = RunDocument(*flat, doc);
      EXPECT_EQ(a.accepted, b.accepted) << v.name << " on \"" << doc << "\"\n" << grammar::Dump(*out);
      EXPECT_EQ(a.offset, b.offset) << v.name << " on \"" << doc << "\"";
    }
  }
  absl::StatusOr<Grammar> normalized = transforms::Normalize(g);
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  EXPECT_EQ(grammar::Dump(*normalized),
            "start ::= X NAME | Y NAME | NUMBER NUMBER | X Y\n"
            "# token Y = /y/ prio=0 string\n"
            "# token X = /x/ prio=0 string\n"
            "# token NUMBER = /[0-9]+/ prio=0\n"
            "# token NAME = /[a-z]+/ prio=0\n"
            "# token __ANON_2 = /\\ / prio=0 string ignored\n");
  absl::StatusOr<Grammar> deduped = transforms::DedupRules(g);
  ASSERT_TRUE(deduped.ok()) << deduped.status();
  EXPECT_EQ(grammar::Dump(*deduped), grammar::Dump(g));
}

// Reads a SynCode grammar, normalizes it (printing each pass), and compares
// the engine on both grammars over the trace records of that language.
class LexedTraceTest : public ::testing::TestWithParam<const char*> {};

TEST_P(LexedTraceTest, NormalizedGrammarAcceptsTheSameDocuments) {
  const std::string set = GetParam();
  const std::string path = testing::DataPath("grammars/lark/syncode/" + set + ".lark");
  const Grammar g = ReadLarkOrDie(testing::ReadFileOrDie(path), path);
  ASSERT_TRUE(g.lexed());
  transforms::TransformReport report;
  absl::StatusOr<Grammar> out = transforms::Normalize(g, &report);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(out->Validate().ok());
  EXPECT_EQ(LexiconDiff(g, *out), "");
  std::printf("[lexed] %s\n%s", set.c_str(), transforms::FormatReport(report, 4).c_str());
  absl::StatusOr<parser::FlatGrammar> original = parser::BuildFlatGrammar(g);
  absl::StatusOr<parser::FlatGrammar> normalized = parser::BuildFlatGrammar(*out);
  ASSERT_TRUE(original.ok()) << original.status();
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  std::printf("[lexed] %s lowered: %u -> %u productions, %zu -> %zu rhs entries\n", set.c_str(),
              original->num_productions(), normalized->num_productions(), original->rhs.size(),
              normalized->rhs.size());

  std::ifstream in(testing::DataPath("traces/llama3/" + set + ".jsonl"));
  ASSERT_TRUE(in) << set;
  std::string line;
  size_t records = 0, accepted = 0, bytes = 0, skipped = 0;
  double seconds_original = 0, seconds_normalized = 0;
  // Sanitized builds check every 8th record (the engine is ~10x slower there).
  const size_t stride = kScale == 10 ? 1 : 8;
  for (size_t index = 0; std::getline(in, line); ++index) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record.value("roundtrip_mismatch", false) || index % stride != 0) {
      ++skipped;
      continue;
    }
    const std::string text = record.at("text");
    auto t0 = std::chrono::steady_clock::now();
    Verdict a = RunDocument(*original, text);
    auto t1 = std::chrono::steady_clock::now();
    Verdict b = RunDocument(*normalized, text);
    auto t2 = std::chrono::steady_clock::now();
    seconds_original += std::chrono::duration<double>(t1 - t0).count();
    seconds_normalized += std::chrono::duration<double>(t2 - t1).count();
    ++records;
    bytes += text.size();
    accepted += a.accepted;
    EXPECT_EQ(a.accepted, b.accepted) << set << ": " << record.at("id");
    EXPECT_EQ(a.offset, b.offset) << set << ": " << record.at("id");
    if (a.accepted) {
      // go: Lark's LALR(1) labels a few valid programs invalid (lark_data_test.cc).
      EXPECT_TRUE(record.at("valid").get<bool>() || set == "go") << record.at("id");
    }
  }
  std::printf("[lexed] %s: %zu records (%zu bytes, %zu skipped), %zu accepted by both, same "
              "verdicts and offsets; %.2f s original, %.2f s normalized\n",
              set.c_str(), records, bytes, skipped, accepted, seconds_original,
              seconds_normalized);
  EXPECT_GT(records, 0u);
}

INSTANTIATE_TEST_SUITE_P(SynCode, LexedTraceTest, ::testing::Values("java", "go", "sql"));

}  // namespace
}  // namespace zapgram
