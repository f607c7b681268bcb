// The state cache's store: masks keyed by (grammar, canonical parser
// state), one store per vocabulary, shared by every grammar compiled on it.
//
// A server compiles a new grammar per request and keeps many alive. With a
// budget per grammar, memory grows with the number of grammars; here one
// byte budget (VocabularyOptions::mask_cache_bytes, 128 MiB by default)
// bounds the masks of all of them together, with least-recently-used
// eviction across grammars. A grammar that is no longer used, or has been
// destroyed, loses its entries as others need the room: nothing is purged
// eagerly (its unique id is never reused, so a stale entry is never hit).
//
// Entries are stored in the smallest of three exact forms: the bitset, the
// sorted allowed ids, or the sorted rejected ids (every id of the mask's
// range whose bit is clear, special and unused ids included). A list is
// used only when it is at least 8x smaller than the bitset, so a hit costs
// at most a memset of the mask and a few hundred bit stores more than a
// copy. JSON masks are often a handful of tokens (after a key, inside a
// number) or all but a handful (inside a string).
//
// Besides masks, an entry may hold a pointer to a longer key: a cut key
// (masks/matcher.h) whose state's mask walk read below the cut says how many
// sets the key that holds the mask spells, so a lookup goes there next.
//
// Concurrency: kShards independent shards, each with its own mutex, map
// and LRU list, chosen by the key's hash; the budget is split evenly.
// Accounting per grammar (hits, misses, entries, bytes) lives in a
// GrammarAccount the grammar owns and each of its entries shares, so
// eviction can discharge it after the grammar is gone.
//
// Tests: tests/masks/mask_cache_test.cc (forms round-trip, budget and LRU
// order across grammars, accounts); the matcher's brute-force tests run
// through it.
#ifndef ZAPGRAM_MASKS_MASK_CACHE_H_
#define ZAPGRAM_MASKS_MASK_CACHE_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/types/span.h"

namespace zapgram::masks {

struct MaskCacheStats {
  uint64_t hits = 0, misses = 0, entries = 0, bytes = 0, evictions = 0;
};

// One grammar's share of a MaskCache.
class GrammarAccount {
 public:
  GrammarAccount();
  uint64_t id() const { return id_; }
  MaskCacheStats stats() const;

 private:
  friend class MaskCache;
  const uint64_t id_;
  std::atomic<uint64_t> hits_{0}, misses_{0}, entries_{0}, bytes_{0}, evictions_{0};
};

class MaskCache {
 public:
  // Masks of `mask_words` uint32 words over `mask_ids` ids (the rest of the
  // last word is zero).
  MaskCache(size_t mask_words, uint32_t mask_ids, size_t budget_bytes);

  // What a lookup found: a mask (allowed >= 0, copied into the caller's
  // words), a pointer to a longer key (deeper_sets > 0: look under the key
  // that spells that many sets), or nothing (a miss).
  struct Found {
    int64_t allowed = -1;
    uint32_t deeper_sets = 0;
  };
  // Hits and misses are counted per mask: a pointer is neither.
  Found Lookup(GrammarAccount& account, absl::Span<const uint32_t> key, uint32_t* words);
  // Stores a mask (of `allowed` set bits); an entry already there stays.
  void Store(const std::shared_ptr<GrammarAccount>& account, absl::Span<const uint32_t> key,
             const uint32_t* words, size_t allowed);
  // Stores a pointer to the key spelling `deeper_sets` sets (> 0); an entry
  // already there stays.
  void StoreDeeper(const std::shared_ptr<GrammarAccount>& account, absl::Span<const uint32_t> key,
                   uint32_t deeper_sets);

  // Totals over every grammar.
  MaskCacheStats stats() const;
  size_t budget_bytes() const { return budget_bytes_.load(std::memory_order_relaxed); }
  // Evicts down to the new budget at the next store of each shard.
  void set_budget_bytes(size_t bytes) { budget_bytes_.store(bytes, std::memory_order_relaxed); }

 private:
  enum class Form : uint8_t { kBits, kAllowedIds, kRejectedIds, kDeeper };
  struct Key {
    uint64_t grammar;
    std::vector<uint32_t> state;
  };
  struct KeyView {
    uint64_t grammar;
    absl::Span<const uint32_t> state;
  };
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(const Key& k) const { return (*this)(KeyView{k.grammar, k.state}); }
    size_t operator()(const KeyView& k) const { return absl::HashOf(k.grammar, k.state); }
  };
  struct KeyEq {
    using is_transparent = void;
    static KeyView View(const Key& k) { return {k.grammar, k.state}; }
    static KeyView View(const KeyView& k) { return k; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      const KeyView x = View(a), y = View(b);
      return x.grammar == y.grammar && x.state == y.state;
    }
  };
  struct Entry {
    Form form = Form::kBits;
    uint32_t allowed = 0;  // kDeeper: the sets the longer key spells
    std::vector<uint32_t> payload;
    std::shared_ptr<GrammarAccount> account;
    std::list<const Key*>::iterator lru;
    size_t bytes = 0;
  };
  struct Shard {
    mutable std::mutex mu;
    absl::node_hash_map<Key, Entry, KeyHash, KeyEq> map;
    std::list<const Key*> lru;  // front = newest
    size_t bytes = 0;
    uint64_t hits = 0, misses = 0, evictions = 0;
  };
  static constexpr size_t kShards = 16;

  Shard& ShardOf(size_t hash) { return shards_[(hash >> 7) % kShards]; }
  void Encode(const uint32_t* words, size_t allowed, Entry* entry) const;
  void Insert(const std::shared_ptr<GrammarAccount>& account, absl::Span<const uint32_t> key, Entry entry);
  void Decode(const Entry& entry, uint32_t* words) const;

  const size_t mask_words_;
  const uint32_t mask_ids_;
  std::atomic<size_t> budget_bytes_;
  std::array<Shard, kShards> shards_;
};

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_MASK_CACHE_H_
