// ZapFormat compaction: golden dumps of pruned charts, boundedness of the
// retained state on long inputs, and equivalence with the unpruned chart.
#include "pruning/compact.h"

#include <algorithm>
#include <string>

#include "gtest/gtest.h"
#include "grammar/grammar.h"
#include "parser/flat_grammar.h"
#include "parser/recognizer.h"

namespace zapgram::pruning {
namespace {

using grammar::Grammar;

// root ::= ("(" root ")" | "x")*   — nesting and flat repetition in one.
parser::FlatGrammar Parens() {
  Grammar g;
  g.source_name = "<parens>";
  g.rules.push_back({"root", 0, {}});
  auto group = g.AddSequence({g.AddLiteral("("), g.AddRuleRef(0), g.AddLiteral(")")});
  g.rules[0].body = g.AddRepeat(g.AddChoice({group, g.AddLiteral("x")}), 0, grammar::kUnbounded);
  absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(g);
  EXPECT_TRUE(flat.ok()) << flat.status();
  return *std::move(flat);
}

TEST(CompactTest, FlatInputKeepsConstantState) {
  parser::FlatGrammar flat = Parens();
  parser::Recognizer r = MakeRecognizer(&flat);
  // "()()()...": the state after each pair equals the state after the first.
  size_t baseline = 0;
  for (int i = 0; i < 5000; ++i) {
    ASSERT_TRUE(r.Feed(i % 2 ? ')' : '(')) << i;
    if (i < 2) baseline = std::max(baseline, r.RetainedItems());
    ASSERT_LE(r.RetainedItems(), baseline) << "step " << i;
    ASSERT_LE(r.RetainedSets(), 3u);
  }
  EXPECT_TRUE(r.IsAccepting());
}

TEST(CompactTest, NestedInputKeepsStateProportionalToDepth) {
  parser::FlatGrammar flat = Parens();
  parser::Recognizer pruned = MakeRecognizer(&flat);
  RecognizerOptions off;
  off.pruning = false;
  parser::Recognizer unpruned = MakeRecognizer(&flat, off);
  const int depth = 300;
  for (int i = 0; i < depth; ++i) {
    ASSERT_TRUE(pruned.Feed('('));
    ASSERT_TRUE(unpruned.Feed('x'));
    ASSERT_TRUE(unpruned.Feed('('));
  }
  // One set per open bracket, a handful of items each.
  EXPECT_EQ(pruned.RetainedSets(), static_cast<size_t>(depth) + 1);
  EXPECT_LE(pruned.RetainedItems(), static_cast<size_t>(depth) * 6);
  for (int i = 0; i < depth; ++i) ASSERT_TRUE(pruned.Feed(')'));
  EXPECT_TRUE(pruned.IsAccepting());
  EXPECT_LE(pruned.RetainedSets(), 2u);
  EXPECT_GT(unpruned.RetainedItems(), pruned.RetainedItems());
}

TEST(CompactTest, PrunedChartGolden) {
  parser::FlatGrammar flat = Parens();
  parser::Recognizer r = MakeRecognizer(&flat);
  ASSERT_EQ(r.FeedBytes("x(x(x"), 5u);
  // Each open group keeps two sets: the one where the group began (its Leo
  // entry says where completing it leads) and the one after its "(" (where
  // the inner repetition waits). Closed groups and scanned x's are gone.
  EXPECT_EQ(r.DumpChart(),
            "set 0 @0 accepting\n"
            "  <start> -> . root (0)\n"
            "  root -> . root root#alt1 (0)\n"
            "set 1 @1 accepting\n"
            "  leo root#alt1 => root -> root root#alt1 . (0)\n"
            "set 2 @2\n"
            "  root#alt1 -> \"(\" . root \")\" (1)\n"
            "  root -> . root root#alt1 (2)\n"
            "set 3 @3\n"
            "  leo root#alt1 => root -> root root#alt1 . (2)\n"
            "set 4 @4\n"
            "  root#alt1 -> \"(\" . root \")\" (3)\n"
            "  root -> . root root#alt1 (4)\n"
            "set 5 @5\n"
            "  leo root#alt1 => root -> root root#alt1 . (4)\n"
            "  root#alt1 -> \"(\" root . \")\" (3) state 3\n"
            "  root#alt1 -> . \"(\" root \")\" (5) state 1\n"
            "  root#alt1 -> . \"x\" (5) state 5\n");
}

// The incremental bookkeeping must agree with the naive mark after every
// step: LiveItems() equals the item count of CopyLive's dense chart, on a
// pseudo-random walk through the grammar (with rollbacks mixed in).
TEST(CompactTest, IncrementalLivenessEqualsNaiveMark) {
  parser::FlatGrammar flat = Parens();
  RecognizerOptions options;
  options.max_rollback = 40;
  parser::Recognizer r = MakeRecognizer(&flat, options);
  uint64_t seed = 12345;
  auto next = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  ZapFormatCompactor naive;
  for (int step = 0; step < 20000; ++step) {
    parser::ByteSet allowed = r.NextBytes();
    std::string choices;
    for (char c : std::string("(x)")) {
      if (allowed.test(static_cast<uint8_t>(c))) choices.push_back(c);
    }
    // Bias towards opening so that nesting goes deep and comes back.
    char c = choices[next() % choices.size()];
    if (step % 1000 > 500 && allowed.test(')')) c = ')';
    ASSERT_TRUE(r.Feed(static_cast<uint8_t>(c)));
    if (step % 97 == 0) {
      size_t n = std::min<size_t>(r.Position(), 1 + next() % 40);
      ASSERT_TRUE(r.Rollback(n)) << "step " << step << " n " << n;
    }
    parser::Chart dense;
    naive.CopyLive(flat, r.chart_for_testing(), &dense);
    ASSERT_EQ(r.RetainedItems(), dense.ItemCount()) << "step " << step;
    ASSERT_EQ(r.RetainedSets(), dense.sets.size()) << "step " << step;
  }
}

}  // namespace
}  // namespace zapgram::pruning
