// Hard cases for the Earley engine: the grammars that break naive parsers.
//
// Each test builds its grammar with the IR builders (no reader involved) and
// drives parser::Recognizer through pruning::MakeRecognizer. What is checked:
//  - correctness on long inputs (acceptance at every step), against the
//    textbook oracle (tests/support/reference_recognizer.h) where that is cheap;
//  - boundedness: with ZapFormat pruning and Leo items the retained chart
//    (Recognizer::RetainedItems) stays O(1) on right recursion, left recursion
//    and flat sequences, and O(depth) on nesting, whatever the input length;
//  - no stack overflow on 100,000 nested brackets, with pruning on and off;
//  - budgets (ParserLimits): running out gives Feed() == false and a
//    kResourceExhausted status naming the limit, never a crash, and the
//    recognizer stays usable at its previous state;
//  - the rollback limit of a pruned recognizer (RollbackLimit()).
// The shapes: S ::= S S | "a" (ambiguous, cubic), A ::= A "a" | "" (left
// recursion + empty), A ::= "a" A | "a" (right recursion), nested nullable
// rules, cycles A ::= A | "a", S ::= "[" S "]" | "" (deep nesting), and
// E ::= E "+" E | "1" (Catalan-many parses).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grammar/grammar.h"
#include "gtest/gtest.h"
#include "parser/flat_grammar.h"
#include "parser/recognizer.h"
#include "pruning/compact.h"
#include "tests/support/random_grammar.h"
#include "tests/support/reference_recognizer.h"
#include "tests/support/test_scale.h"

namespace zapgram {
namespace {

using grammar::ExprId;
using grammar::Grammar;

constexpr size_t kLong = testing::Scaled<size_t>(100000, 10000);  // inputs of the "long" tests

Grammar WithRules(std::vector<std::string> names) {
  Grammar g;
  g.source_name = "<hard case>";
  for (std::string& name : names) g.rules.push_back({std::move(name), 0, {}});
  return g;
}

parser::FlatGrammar Flatten(const Grammar& g) {
  absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(g);
  EXPECT_TRUE(flat.ok()) << flat.status() << "\n" << grammar::Dump(g);
  return flat.ok() ? *std::move(flat) : parser::FlatGrammar{};
}

parser::Recognizer Make(const parser::FlatGrammar& flat, bool pruning) {
  RecognizerOptions options;
  options.pruning = pruning;
  return pruning::MakeRecognizer(&flat, options);
}

// The engine and the oracle agree on every prefix of every string over
// `alphabet` of at most `max_length` bytes (acceptance and next bytes on the
// alphabet), pruning on and off. Depth-first, one session, one engine each.
void ExpectAgreesWithOracle(const Grammar& g, const std::string& alphabet, size_t max_length) {
  parser::FlatGrammar flat = Flatten(g);
  testing::ReferenceRecognizer ref(g);
  for (bool pruning : {true, false}) {
    parser::Recognizer rec = Make(flat, pruning);
    testing::ReferenceRecognizer::Session session(&ref);
    std::vector<size_t> next_child = {0};
    size_t compared = 0;
    while (!next_child.empty()) {
      if (next_child.back() == 0) {
        ++compared;
        const std::string where = std::string("after \"") + testing::EscapeBytes(session.input()) +
                                  "\", pruning " + (pruning ? "on" : "off") + "\n" +
                                  grammar::Dump(g);
        ASSERT_EQ(rec.IsAccepting(), session.IsAccepting()) << where;
        for (char c : alphabet) {
          session.Push(static_cast<uint8_t>(c));
          bool viable = session.IsViable();
          session.Pop();
          ASSERT_EQ(rec.NextBytes().test(static_cast<uint8_t>(c)), viable)
              << where << "next byte " << testing::EscapeBytes(std::string(1, c));
        }
      }
      size_t& child = next_child.back();
      if (session.size() < max_length && child < alphabet.size()) {
        char c = alphabet[child++];
        session.Push(static_cast<uint8_t>(c));
        if (!session.IsViable()) {
          session.Pop();
          ASSERT_FALSE(rec.Feed(static_cast<uint8_t>(c)));
          continue;
        }
        ASSERT_TRUE(rec.Feed(static_cast<uint8_t>(c)));
        next_child.push_back(0);
      } else {
        next_child.pop_back();
        if (!next_child.empty()) {
          session.Pop();
          ASSERT_TRUE(rec.Rollback(1));
        }
      }
    }
    EXPECT_GT(compared, 1u);
  }
}

// S ::= S S | "a"
Grammar DoublingGrammar() {
  Grammar g = WithRules({"S"});
  g.rules[0].body =
      g.AddChoice({g.AddSequence({g.AddRuleRef(0), g.AddRuleRef(0)}), g.AddLiteral("a")});
  return g;
}

TEST(HardCases, AmbiguousDoublingOnLongInput) {
  Grammar g = DoublingGrammar();
  ExpectAgreesWithOracle(g, "ab", 12);
  parser::FlatGrammar flat = Flatten(g);
  const size_t n = 200;
  for (bool pruning : {true, false}) {
    parser::Recognizer rec = Make(flat, pruning);
    size_t max_items = 0;
    for (size_t i = 1; i <= n; ++i) {
      ASSERT_TRUE(rec.Feed('a')) << i;
      ASSERT_TRUE(rec.IsAccepting()) << i;
      max_items = std::max(max_items, rec.RetainedItems());
    }
    EXPECT_FALSE(rec.Feed('b'));
    // Every split point stays live (an S can end anywhere and S S complete
    // from any earlier origin), so set j keeps j waiting items S -> S . S and
    // the chart is inherently quadratic, pruning or not: about n^2 / 2 items.
    std::printf(
        "[hard cases] S ::= S S | \"a\", %zu a's, pruning %s: max retained items %zu, "
        "sets %zu\n",
        n, pruning ? "on" : "off", max_items, rec.RetainedSets());
    EXPECT_LE(max_items, n * n / 2 + 4 * n + 16) << "pruning " << pruning;
    // Deduplication stays linear in the items created: about n^2 / 2 over
    // the input (chains keyed by dot held one node per origin, ~n^3 / 6
    // probes: 1.3 million here).
    std::printf("[hard cases] dedup probes %llu\n",
                static_cast<unsigned long long>(rec.dedup_probes_for_testing()));
    EXPECT_LE(rec.dedup_probes_for_testing(), 2 * n * n) << "pruning " << pruning;
  }
}

TEST(HardCases, LeftRecursionWithEmptyStaysBounded) {
  // A ::= A "a" | ""
  Grammar g = WithRules({"A"});
  g.rules[0].body =
      g.AddChoice({g.AddSequence({g.AddRuleRef(0), g.AddLiteral("a")}), g.AddEmpty()});
  ExpectAgreesWithOracle(g, "ab", 10);
  parser::FlatGrammar flat = Flatten(g);
  parser::Recognizer rec = Make(flat, true);
  EXPECT_TRUE(rec.IsAccepting());
  size_t max_items = 0;
  for (size_t i = 1; i <= 10000; ++i) {
    ASSERT_TRUE(rec.Feed('a')) << i;
    ASSERT_TRUE(rec.IsAccepting()) << i;
    max_items = std::max(max_items, rec.RetainedItems());
    ASSERT_LT(rec.RetainedItems(), 50u) << "after " << i << " bytes";
  }
  std::printf("[hard cases] A ::= A \"a\" | \"\", 10000 a's, pruning on: max retained items %zu\n",
              max_items);
}

TEST(HardCases, DeepRightRecursionStaysBounded) {
  // A ::= "a" A | "a"
  Grammar g = WithRules({"A"});
  g.rules[0].body =
      g.AddChoice({g.AddSequence({g.AddLiteral("a"), g.AddRuleRef(0)}), g.AddLiteral("a")});
  ExpectAgreesWithOracle(g, "ab", 10);
  parser::FlatGrammar flat = Flatten(g);
  for (bool pruning : {true, false}) {
    parser::Recognizer rec = Make(flat, pruning);
    EXPECT_FALSE(rec.IsAccepting());
    size_t max_items = 0;
    for (size_t i = 1; i <= kLong; ++i) {
      ASSERT_TRUE(rec.Feed('a')) << i;
      ASSERT_TRUE(rec.IsAccepting()) << i;
      max_items = std::max(max_items, rec.RetainedItems());
      // Leo items make each step O(1); pruning then forgets the chain.
      if (pruning) {
        ASSERT_LT(rec.RetainedItems(), 50u) << "after " << i << " bytes";
      }
    }
    EXPECT_FALSE(rec.Feed('b'));
    std::printf(
        "[hard cases] A ::= \"a\" A | \"a\", %zu a's, pruning %s: max retained items "
        "%zu\n",
        kLong, pruning ? "on" : "off", max_items);
  }
}

TEST(HardCases, NestedNullableRules) {
  // A ::= B B B ; B ::= C | "" ; C ::= A | "x"   (A derives x*)
  Grammar g = WithRules({"A", "B", "C"});
  g.rules[0].body = g.AddSequence({g.AddRuleRef(1), g.AddRuleRef(1), g.AddRuleRef(1)});
  g.rules[1].body = g.AddChoice({g.AddRuleRef(2), g.AddEmpty()});
  g.rules[2].body = g.AddChoice({g.AddRuleRef(0), g.AddLiteral("x")});
  ExpectAgreesWithOracle(g, "xy", 10);
  parser::FlatGrammar flat = Flatten(g);
  for (bool pruning : {true, false}) {
    parser::Recognizer rec = Make(flat, pruning);
    EXPECT_TRUE(rec.IsAccepting());
    for (int i = 1; i <= 300; ++i) {
      ASSERT_TRUE(rec.Feed('x')) << i;
      ASSERT_TRUE(rec.IsAccepting()) << i;
    }
    EXPECT_FALSE(rec.Feed('y'));
  }
}

TEST(HardCases, Cycles) {
  // A ::= A | "a"
  Grammar g = WithRules({"A"});
  g.rules[0].body = g.AddChoice({g.AddRuleRef(0), g.AddLiteral("a")});
  ExpectAgreesWithOracle(g, "ab", 4);
  // A ::= B | "a" B ; B ::= A | "" (a cycle through two nullable rules)
  Grammar h = WithRules({"A", "B"});
  h.rules[0].body =
      h.AddChoice({h.AddRuleRef(1), h.AddSequence({h.AddLiteral("a"), h.AddRuleRef(1)})});
  h.rules[1].body = h.AddChoice({h.AddRuleRef(0), h.AddEmpty()});
  ExpectAgreesWithOracle(h, "ab", 8);
  parser::FlatGrammar flat = Flatten(g);
  for (bool pruning : {true, false}) {
    parser::Recognizer rec = Make(flat, pruning);
    EXPECT_FALSE(rec.IsAccepting());
    ASSERT_TRUE(rec.Feed('a'));
    EXPECT_TRUE(rec.IsAccepting());
    EXPECT_FALSE(rec.CanContinue());
    EXPECT_FALSE(rec.Feed('a'));
  }
}

// S ::= "[" S "]" | ""
Grammar BracketGrammar() {
  Grammar g = WithRules({"S"});
  g.rules[0].body = g.AddChoice(
      {g.AddSequence({g.AddLiteral("["), g.AddRuleRef(0), g.AddLiteral("]")}), g.AddEmpty()});
  return g;
}

TEST(HardCases, DeepNestingNoStackOverflow) {
  Grammar g = BracketGrammar();
  ExpectAgreesWithOracle(g, "[]", 12);
  parser::FlatGrammar flat = Flatten(g);
  const size_t depth = kLong;
  for (bool pruning : {true, false}) {
    parser::Recognizer rec = Make(flat, pruning);
    size_t max_items = 0;
    for (size_t i = 1; i <= depth; ++i) {
      ASSERT_TRUE(rec.Feed('[')) << i;
      max_items = std::max(max_items, rec.RetainedItems());
      // With pruning the chart holds one open bracket per level: O(depth).
      if (pruning) {
        ASSERT_LE(rec.RetainedItems(), 4 * i + 16) << "depth " << i;
      }
    }
    EXPECT_FALSE(rec.IsAccepting());
    for (size_t i = 1; i < depth; ++i) ASSERT_TRUE(rec.Feed(']')) << i;
    // One bracket missing: not a sentence yet, only ']' can follow.
    EXPECT_FALSE(rec.IsAccepting());
    parser::ByteSet only_close;
    only_close.set(']');
    EXPECT_EQ(rec.NextBytes(), only_close);
    ASSERT_TRUE(rec.Feed(']'));
    EXPECT_TRUE(rec.IsAccepting());
    EXPECT_FALSE(rec.Feed(']'));
    EXPECT_TRUE(rec.status().ok()) << rec.status();
    std::printf("[hard cases] %zu nested brackets, pruning %s: max retained items %zu\n", depth,
                pruning ? "on" : "off", max_items);
  }
}

TEST(HardCases, FlatBracketsStayBounded) {
  // S ::= "[" S "]" | "" has no concatenation, so "[][]" is not one of its
  // sentences; the Dyck grammar D ::= "[" D "]" D | "" has both shapes. On it,
  // "[[[...]]]" keeps O(depth) items and "[][][]..." of the same length O(1).
  Grammar g = WithRules({"D"});
  g.rules[0].body = g.AddChoice(
      {g.AddSequence({g.AddLiteral("["), g.AddRuleRef(0), g.AddLiteral("]"), g.AddRuleRef(0)}),
       g.AddEmpty()});
  ExpectAgreesWithOracle(g, "[]", 12);
  parser::FlatGrammar flat = Flatten(g);
  parser::Recognizer nested = Make(flat, true);
  size_t max_nested = 0;
  for (size_t i = 1; i <= kLong; ++i) {
    ASSERT_TRUE(nested.Feed('[')) << i;
    max_nested = std::max(max_nested, nested.RetainedItems());
    ASSERT_LE(nested.RetainedItems(), 4 * i + 16) << "depth " << i;
  }
  for (size_t i = 1; i <= kLong; ++i) ASSERT_TRUE(nested.Feed(']')) << i;
  EXPECT_TRUE(nested.IsAccepting());

  parser::Recognizer flat_rec = Make(flat, true);
  size_t max_flat = 0;
  for (size_t i = 0; i < kLong; ++i) {
    ASSERT_TRUE(flat_rec.Feed('[')) << i;
    max_flat = std::max(max_flat, flat_rec.RetainedItems());
    ASSERT_LT(flat_rec.RetainedItems(), 50u) << "after " << 2 * i + 1 << " bytes";
    ASSERT_TRUE(flat_rec.Feed(']')) << i;
    max_flat = std::max(max_flat, flat_rec.RetainedItems());
    ASSERT_LT(flat_rec.RetainedItems(), 50u) << "after " << 2 * i + 2 << " bytes";
    ASSERT_TRUE(flat_rec.IsAccepting());
  }
  std::printf(
      "[hard cases] D ::= \"[\" D \"]\" D | \"\", %zu bytes, pruning on: max retained "
      "items %zu nested, %zu flat\n",
      2 * kLong, max_nested, max_flat);

  // A repetition instead of recursion: L ::= ("[" L "]")*.
  Grammar h = WithRules({"L"});
  h.rules[0].body =
      h.AddRepeat(h.AddSequence({h.AddLiteral("["), h.AddRuleRef(0), h.AddLiteral("]")}), 0,
                  grammar::kUnbounded);
  ExpectAgreesWithOracle(h, "[]", 10);
  parser::FlatGrammar flat_list = Flatten(h);
  parser::Recognizer list = Make(flat_list, true);
  for (size_t i = 0; i < kLong; ++i) {
    ASSERT_TRUE(list.Feed('[')) << i;
    ASSERT_TRUE(list.Feed(']')) << i;
    ASSERT_LT(list.RetainedItems(), 50u) << "after " << 2 * i + 2 << " bytes";
    ASSERT_TRUE(list.IsAccepting());
  }
}

TEST(HardCases, ItemBudgetIsAnErrorNotACrash) {
  // root ::= "x" (w0 | w1 | ... | w39), each w_i a two-byte literal: the set
  // after "x" predicts 40 productions.
  Grammar g = WithRules({"root"});
  std::vector<ExprId> words;
  for (int i = 0; i < 40; ++i) {
    words.push_back(g.AddLiteral(std::string(1, static_cast<char>('a' + i % 26)) +
                                 std::string(1, static_cast<char>('0' + i / 26))));
  }
  g.rules[0].body = g.AddSequence({g.AddLiteral("x"), g.AddChoice(words)});
  parser::FlatGrammar flat = Flatten(g);
  for (bool pruning : {true, false}) {
    RecognizerOptions options;
    options.pruning = pruning;
    options.limits.max_items_per_set = 10;
    parser::Recognizer rec = pruning::MakeRecognizer(&flat, options);
    ASSERT_TRUE(rec.status().ok()) << rec.status();
    EXPECT_FALSE(rec.Feed('x'));
    EXPECT_EQ(rec.status().code(), absl::StatusCode::kResourceExhausted) << rec.status();
    EXPECT_NE(rec.status().message().find("max_items_per_set"), std::string::npos) << rec.status();
    EXPECT_EQ(rec.Position(), 0u);
    EXPECT_TRUE(rec.NextBytes().test('x'));  // still at the previous state
    rec.Reset();
    EXPECT_TRUE(rec.status().ok());

    // The same grammar with the default budget.
    parser::Recognizer ok = Make(flat, pruning);
    EXPECT_EQ(ok.FeedBytes("xn1"), 3u);
    EXPECT_TRUE(ok.IsAccepting());
  }
}

TEST(HardCases, SetBudgetIsAnErrorNotACrash) {
  parser::FlatGrammar flat = Flatten(BracketGrammar());
  for (bool pruning : {true, false}) {
    RecognizerOptions options;
    options.pruning = pruning;
    options.limits.max_sets = 100;
    parser::Recognizer rec = pruning::MakeRecognizer(&flat, options);
    size_t fed = 0;
    while (fed < 200 && rec.Feed('[')) ++fed;
    EXPECT_LT(fed, 200u);
    EXPECT_GT(fed, 50u);
    EXPECT_EQ(rec.Position(), fed);
    EXPECT_EQ(rec.status().code(), absl::StatusCode::kResourceExhausted) << rec.status();
    EXPECT_NE(rec.status().message().find("max_sets"), std::string::npos) << rec.status();
    // Usable at the previous state: closing brackets need no new depth when pruning.
    if (pruning) {
      EXPECT_TRUE(rec.Feed(']')) << rec.status();
      EXPECT_EQ(rec.Position(), fed + 1);
      EXPECT_TRUE(rec.status().ok()) << rec.status();  // cleared by the successful step
    }
  }
}

TEST(HardCases, TotalItemBudgetIsAnErrorNotACrash) {
  parser::FlatGrammar flat = Flatten(BracketGrammar());
  for (bool pruning : {true, false}) {
    RecognizerOptions options;
    options.pruning = pruning;
    options.limits.max_total_items = 60;
    parser::Recognizer rec = pruning::MakeRecognizer(&flat, options);
    size_t fed = 0;
    while (fed < 200 && rec.Feed('[')) ++fed;
    EXPECT_LT(fed, 200u);
    EXPECT_EQ(rec.Position(), fed);
    EXPECT_LE(rec.RetainedItems(), 60u);
    EXPECT_EQ(rec.status().code(), absl::StatusCode::kResourceExhausted) << rec.status();
    EXPECT_NE(rec.status().message().find("max_total_items"), std::string::npos) << rec.status();
    rec.Reset();
    EXPECT_TRUE(rec.status().ok());
    EXPECT_EQ(rec.FeedBytes("[[]]"), 4u);
    EXPECT_TRUE(rec.IsAccepting());
  }
}

TEST(HardCases, AmbiguousSumOf300Terms) {
  // E ::= E "+" E | "1"
  Grammar g = WithRules({"E"});
  g.rules[0].body = g.AddChoice(
      {g.AddSequence({g.AddRuleRef(0), g.AddLiteral("+"), g.AddRuleRef(0)}), g.AddLiteral("1")});
  ExpectAgreesWithOracle(g, "1+2", 9);
  parser::FlatGrammar flat = Flatten(g);
  std::string input = "1";
  for (int i = 1; i < 300; ++i) input += "+1";
  for (bool pruning : {true, false}) {
    parser::Recognizer rec = Make(flat, pruning);
    size_t max_items = 0;
    for (size_t i = 0; i < input.size(); ++i) {
      ASSERT_TRUE(rec.Feed(static_cast<uint8_t>(input[i]))) << i;
      ASSERT_EQ(rec.IsAccepting(), input[i] == '1') << i;
      max_items = std::max(max_items, rec.RetainedItems());
    }
    parser::ByteSet plus;
    plus.set('+');
    EXPECT_EQ(rec.NextBytes(), plus);
    EXPECT_TRUE(rec.status().ok()) << rec.status();
    std::printf(
        "[hard cases] E ::= E \"+\" E | \"1\", 300 terms, pruning %s: max retained "
        "items %zu\n",
        pruning ? "on" : "off", max_items);
  }
}

TEST(HardCases, RollbackLimit) {
  // With pruning, Recognizer::RollbackLimit() follows XGrammar: each accepted
  // byte adds one up to max_rollback, each rolled-back byte takes one away.
  parser::FlatGrammar flat = Flatten(BracketGrammar());
  RecognizerOptions options;
  options.pruning = true;
  options.max_rollback = 4;
  parser::Recognizer rec = pruning::MakeRecognizer(&flat, options);
  EXPECT_EQ(rec.RollbackLimit(), 0u);
  ASSERT_EQ(rec.FeedBytes("[[[[[[[["), 8u);
  EXPECT_EQ(rec.RollbackLimit(), 4u);
  EXPECT_FALSE(rec.Rollback(5));  // beyond the limit: nothing happens
  EXPECT_EQ(rec.Position(), 8u);
  ASSERT_TRUE(rec.Rollback(3));
  EXPECT_EQ(rec.Position(), 5u);
  EXPECT_EQ(rec.RollbackLimit(), 1u);
  EXPECT_FALSE(rec.Rollback(2));
  ASSERT_TRUE(rec.Rollback(1));
  EXPECT_EQ(rec.RollbackLimit(), 0u);
  EXPECT_FALSE(rec.Rollback(1));
  EXPECT_EQ(rec.FeedBytes("]]]]"), 4u);
  EXPECT_TRUE(rec.IsAccepting());
  EXPECT_EQ(rec.RollbackLimit(), 4u);
  ASSERT_TRUE(rec.Rollback(4));
  EXPECT_EQ(rec.Position(), 4u);
  parser::Recognizer fresh = Make(flat, true);
  ASSERT_EQ(fresh.FeedBytes("[[[["), 4u);
  EXPECT_EQ(rec.NextBytes(), fresh.NextBytes());
  EXPECT_EQ(rec.IsAccepting(), fresh.IsAccepting());

  // Across checkpoints (one every 32 bytes) with the default limit (64).
  parser::Recognizer deep = pruning::MakeRecognizer(&flat, {});
  ASSERT_EQ(deep.FeedBytes(std::string(100, '[')), 100u);
  EXPECT_EQ(deep.RollbackLimit(), 64u);
  ASSERT_TRUE(deep.Rollback(60));
  EXPECT_EQ(deep.Position(), 40u);
  EXPECT_EQ(deep.RollbackLimit(), 4u);
  EXPECT_FALSE(deep.Rollback(30));
  ASSERT_EQ(deep.FeedBytes(std::string(30, '[')), 30u);
  EXPECT_EQ(deep.RollbackLimit(), 34u);
  ASSERT_TRUE(deep.Rollback(34));
  EXPECT_EQ(deep.Position(), 36u);
  EXPECT_EQ(deep.FeedBytes(std::string(36, ']')), 36u);
  EXPECT_TRUE(deep.IsAccepting());

  // Without pruning any number of bytes can be undone.
  parser::Recognizer full = Make(flat, false);
  ASSERT_EQ(full.FeedBytes("[[[[[[[["), 8u);
  EXPECT_EQ(full.RollbackLimit(), 8u);
  ASSERT_TRUE(full.Rollback(8));
  EXPECT_TRUE(full.IsAccepting());
  EXPECT_FALSE(full.Rollback(1));
}

}  // namespace
}  // namespace zapgram
