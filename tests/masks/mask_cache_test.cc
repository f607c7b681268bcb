// The shared mask cache: every stored form reads back bit for bit, the
// budget holds across grammars with least-recently-used eviction, and each
// grammar's account follows its own entries.
#include "masks/mask_cache.h"

#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "masks/vocabulary.h"

namespace zapgram::masks {
namespace {

constexpr uint32_t kIds = 1000;  // not a multiple of 32: the last word is partial
constexpr size_t kWords = (kIds + 31) / 32;

std::vector<uint32_t> MaskWith(uint32_t allowed, uint32_t seed) {
  std::vector<uint32_t> words(kWords, 0);
  std::vector<uint32_t> ids(kIds);
  for (uint32_t i = 0; i < kIds; ++i) ids[i] = i;
  std::mt19937 rng(seed);
  std::shuffle(ids.begin(), ids.end(), rng);
  for (uint32_t k = 0; k < allowed; ++k) words[ids[k] / 32] |= 1u << (ids[k] % 32);
  return words;
}

TEST(MaskCache, EveryFormReadsBackExactly) {
  MaskCache cache(kWords, kIds, size_t{1} << 24);
  auto account = std::make_shared<GrammarAccount>();
  // Sparse (allowed ids), dense (bitset), nearly full (rejected ids), and
  // the extremes: none and all.
  const std::vector<uint32_t> counts = {0, 1, 3, 500, 997, 999, kIds};
  for (uint32_t k = 0; k < counts.size(); ++k) {
    const std::vector<uint32_t> mask = MaskWith(counts[k], k);
    const std::vector<uint32_t> key = {k, 7};
    cache.Store(account, key, mask.data(), counts[k]);
    std::vector<uint32_t> out(kWords, 0xDEADBEEFu);
    ASSERT_EQ(cache.Lookup(*account, key, out.data()).allowed, counts[k]) << counts[k];
    EXPECT_EQ(out, mask) << counts[k] << " allowed";
  }
  // Sparse and nearly full masks are stored smaller than the bitset.
  const MaskCacheStats stats = account->stats();
  EXPECT_EQ(stats.entries, counts.size());
  EXPECT_LT(stats.bytes, counts.size() * (4 * kWords + 128));
  EXPECT_EQ(stats.hits, counts.size());
}

TEST(MaskCache, GrammarsHaveTheirOwnKeys) {
  MaskCache cache(kWords, kIds, size_t{1} << 24);
  auto a = std::make_shared<GrammarAccount>();
  auto b = std::make_shared<GrammarAccount>();
  ASSERT_NE(a->id(), b->id());
  const std::vector<uint32_t> key = {1, 2, 3};
  const std::vector<uint32_t> mask = MaskWith(10, 1);
  cache.Store(a, key, mask.data(), 10);
  std::vector<uint32_t> out(kWords);
  EXPECT_EQ(cache.Lookup(*b, key, out.data()).allowed, -1);
  EXPECT_EQ(cache.Lookup(*a, key, out.data()).allowed, 10);
  EXPECT_EQ(b->stats().misses, 1u);
  EXPECT_EQ(a->stats().hits, 1u);
}

TEST(MaskCache, BudgetHoldsAcrossGrammarsAndEvictsLeastRecentlyUsed) {
  // Dense masks: each entry ~4 * 32 + key + overhead bytes. A budget for a
  // few dozen entries per shard.
  const size_t budget = 16 * 10 * (4 * kWords + 4 * 2 + 128);
  MaskCache cache(kWords, kIds, budget);
  std::vector<std::shared_ptr<GrammarAccount>> grammars;
  for (int g = 0; g < 20; ++g) grammars.push_back(std::make_shared<GrammarAccount>());
  const std::vector<uint32_t> mask = MaskWith(500, 3);
  const std::vector<uint32_t> hot = {0, 0};
  std::vector<uint32_t> out(kWords);
  for (uint32_t k = 0; k < 2000; ++k) {
    cache.Store(grammars[k % 20], std::vector<uint32_t>{k, 1}, mask.data(), 500);
    // One entry kept hot by lookups survives the churn.
    if (k == 0) cache.Store(grammars[0], hot, mask.data(), 500);
    ASSERT_EQ(cache.Lookup(*grammars[0], hot, out.data()).allowed, 500) << k;
    ASSERT_LE(cache.stats().bytes, budget);
  }
  const MaskCacheStats total = cache.stats();
  EXPECT_GT(total.evictions, 1000u);
  uint64_t entries = 0, bytes = 0;
  for (const auto& g : grammars) {
    entries += g->stats().entries;
    bytes += g->stats().bytes;
  }
  EXPECT_EQ(entries, total.entries);
  EXPECT_EQ(bytes, total.bytes);
  // The oldest entries are gone, the newest are there.
  EXPECT_EQ(cache.Lookup(*grammars[1], std::vector<uint32_t>{1, 1}, out.data()).allowed, -1);
  EXPECT_EQ(cache.Lookup(*grammars[1999 % 20], std::vector<uint32_t>{1999, 1}, out.data()).allowed, 500);
  // A smaller budget applies at the next stores.
  cache.set_budget_bytes(budget / 4);
  for (uint32_t k = 0; k < 200; ++k) cache.Store(grammars[0], std::vector<uint32_t>{k, 9}, mask.data(), 500);
  EXPECT_LE(cache.stats().bytes, budget / 4);
}

TEST(MaskCache, EntriesOutliveTheirGrammarWithinTheBudget) {
  MaskCache cache(kWords, kIds, size_t{1} << 20);
  const std::vector<uint32_t> mask = MaskWith(5, 9);
  {
    auto gone = std::make_shared<GrammarAccount>();
    cache.Store(gone, std::vector<uint32_t>{4}, mask.data(), 5);
  }
  EXPECT_EQ(cache.stats().entries, 1u);
  // A new grammar never sees the old one's entries.
  auto fresh = std::make_shared<GrammarAccount>();
  std::vector<uint32_t> out(kWords);
  EXPECT_EQ(cache.Lookup(*fresh, std::vector<uint32_t>{4}, out.data()).allowed, -1);
}

// A pointer to a longer key reads back as such, is neither a hit nor a
// miss, costs budget like any entry, and never replaces a mask (nor a mask
// it).
TEST(MaskCache, PointersToLongerKeys) {
  MaskCache cache(kWords, kIds, size_t{1} << 20);
  auto account = std::make_shared<GrammarAccount>();
  const std::vector<uint32_t> cut_key = {1, 5}, long_key = {1, 5, 6, 7};
  const std::vector<uint32_t> mask = MaskWith(20, 4);
  cache.StoreDeeper(account, cut_key, 9);
  cache.Store(account, long_key, mask.data(), 20);
  std::vector<uint32_t> out(kWords, 0);
  const MaskCache::Found pointer = cache.Lookup(*account, cut_key, out.data());
  EXPECT_EQ(pointer.allowed, -1);
  EXPECT_EQ(pointer.deeper_sets, 9u);
  EXPECT_EQ(out, std::vector<uint32_t>(kWords, 0));  // nothing copied
  const MaskCache::Found mask_found = cache.Lookup(*account, long_key, out.data());
  EXPECT_EQ(mask_found.allowed, 20);
  EXPECT_EQ(mask_found.deeper_sets, 0u);
  EXPECT_EQ(out, mask);
  cache.Store(account, cut_key, mask.data(), 20);  // the pointer stays
  EXPECT_EQ(cache.Lookup(*account, cut_key, out.data()).deeper_sets, 9u);
  cache.StoreDeeper(account, long_key, 12);  // the mask stays
  EXPECT_EQ(cache.Lookup(*account, long_key, out.data()).allowed, 20);
  const MaskCacheStats stats = account->stats();
  EXPECT_EQ(stats.entries, 2u);
  EXPECT_EQ(stats.hits, 2u);
  EXPECT_EQ(stats.misses, 0u);
  EXPECT_GE(stats.bytes, 2 * 128u);
}

TEST(MaskCache, ConcurrentStoresAndLookups) {
  MaskCache cache(kWords, kIds, size_t{1} << 16);
  auto account = std::make_shared<GrammarAccount>();
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint32_t> out(kWords);
      for (uint32_t k = 0; k < 2000; ++k) {
        const uint32_t slot = k % 300 + 300 * (t % 2), allowed = slot % 7;
        const std::vector<uint32_t> key = {slot};
        const int64_t found = cache.Lookup(*account, key, out.data()).allowed;
        if (found >= 0) {
          EXPECT_EQ(static_cast<uint32_t>(found), allowed);
          EXPECT_EQ(out, MaskWith(allowed, slot));
        } else {
          cache.Store(account, key, MaskWith(allowed, slot).data(), allowed);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_LE(cache.stats().bytes, size_t{1} << 16);
  EXPECT_EQ(account->stats().entries, cache.stats().entries);
}

TEST(MaskCache, OneCachePerVocabularySharedByCopies) {
  absl::StatusOr<Vocabulary> v = Vocabulary::FromTokenBytes({"a", "b", "ab"}, {});
  ASSERT_TRUE(v.ok());
  const Vocabulary copy = *v;
  EXPECT_EQ(v->SharedMaskCache().get(), copy.SharedMaskCache().get());
  EXPECT_EQ(v->SharedMaskCache()->budget_bytes(), VocabularyOptions().mask_cache_bytes);
}

}  // namespace
}  // namespace zapgram::masks
