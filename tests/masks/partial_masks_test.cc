// PartialMasks (masks/partial_masks.h) and the GenerationBudget it shares
// with the closure memo and the lexed subtree sets: found by key, words
// interned, the budget kept by clearing whole generations. Their use by the
// matcher is tested against the brute force in matcher_test.cc
// (MatcherLexed.PartialMasksMatchBruteForce).
#include "masks/partial_masks.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "masks/generation_budget.h"

namespace zapgram::masks {
namespace {

TEST(GenerationBudget, ClearsAWholeGenerationWhenFullAndRefusesWhatCannotFit) {
  GenerationBudget budget(100);
  int clears = 0;
  const auto clear = [&] { ++clears; };
  EXPECT_TRUE(budget.Reserve(60, clear));
  EXPECT_TRUE(budget.Reserve(40, clear));
  EXPECT_EQ(budget.bytes(), 100u);
  EXPECT_EQ(clears, 0);
  EXPECT_TRUE(budget.Reserve(1, clear));  // passes the budget: a new generation
  EXPECT_EQ(clears, 1);
  EXPECT_EQ(budget.evictions(), 1u);
  EXPECT_EQ(budget.bytes(), 1u);
  EXPECT_FALSE(budget.Reserve(101, clear));  // larger than the budget alone
  EXPECT_EQ(clears, 1);
  EXPECT_EQ(budget.bytes(), 1u);
  budget.set_budget_bytes(10);
  EXPECT_TRUE(budget.Reserve(10, clear));
  EXPECT_EQ(clears, 2);
  EXPECT_EQ(budget.bytes(), 10u);
}

TEST(PartialMasks, FindsByKeyAndInternsEqualWords) {
  PartialMasks partials(size_t{1} << 20);
  const std::vector<uint32_t> words_a = {1, 2, 3, 4}, words_b = {5, 6, 7, 8};
  partials.Store({10, 11}, words_a, {7, 9});
  partials.Store({12}, words_a, {});
  partials.Store({13, 14, 15}, words_b, {3});
  partials.Store({10, 11}, words_b, {1});  // an existing key stays
  EXPECT_EQ(partials.size(), 3u);
  EXPECT_EQ(partials.distinct_words(), 2u);
  EXPECT_EQ(partials.found(), 0u);

  auto a = partials.Find(std::vector<uint32_t>{10, 11});
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(*a->words, words_a);
  EXPECT_EQ(a->roots, (std::vector<uint32_t>{7, 9}));
  auto shared = partials.Find(std::vector<uint32_t>{12});
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(shared->words, a->words) << "equal words are one interned vector";
  EXPECT_TRUE(shared->roots.empty());
  auto b = partials.Find(std::vector<uint32_t>{13, 14, 15});
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(*b->words, words_b);
  EXPECT_EQ(partials.Find(std::vector<uint32_t>{10}), nullptr);
  EXPECT_EQ(partials.Find(std::vector<uint32_t>{}), nullptr);
  EXPECT_EQ(partials.found(), 3u);
}

TEST(PartialMasks, StaysWithinItsBudgetAndKeepsWhatWasFoundAlive) {
  // Each entry: 4 KiB of words (distinct per i % 8) and a small key.
  const size_t budget = size_t{40} << 10;
  PartialMasks partials(budget);
  std::vector<uint32_t> words(1024);
  std::shared_ptr<const PartialMasks::Partial> held;
  for (uint32_t i = 0; i < 200; ++i) {
    std::fill(words.begin(), words.end(), i % 8);
    partials.Store({i, i + 1}, words, {i});
    EXPECT_LE(partials.bytes(), budget) << i;
    if (i == 3) held = partials.Find(std::vector<uint32_t>{3, 4});
    // What was just stored is found, with its words.
    auto found = partials.Find(std::vector<uint32_t>{i, i + 1});
    ASSERT_NE(found, nullptr) << i;
    EXPECT_EQ((*found->words)[0], i % 8);
    EXPECT_EQ(found->roots, (std::vector<uint32_t>{i}));
  }
  EXPECT_GT(partials.evictions(), 0u);
  EXPECT_LE(partials.distinct_words(), 8u);
  EXPECT_EQ(partials.Find(std::vector<uint32_t>{3, 4}), nullptr) << "dropped by a clear";
  ASSERT_NE(held, nullptr);
  EXPECT_EQ((*held->words)[0], 3u) << "a partial found before a clear stays alive";
  // Larger than the whole budget: not kept.
  const std::vector<uint32_t> huge(budget / 4 + 1, 1);
  partials.Store({999}, huge, {});
  EXPECT_EQ(partials.Find(std::vector<uint32_t>{999}), nullptr);
  EXPECT_LE(partials.bytes(), budget);
}

}  // namespace
}  // namespace zapgram::masks
