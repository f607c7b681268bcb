// See mask_cache.h.
#include "masks/mask_cache.h"

#include "masks/vocabulary.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace zapgram::masks {

namespace {

std::atomic<uint64_t> next_grammar_id{1};

// Map node, list node and bookkeeping of one entry, beside its payload and key.
constexpr size_t kEntryOverhead = 128;

}  // namespace

GrammarAccount::GrammarAccount() : id_(next_grammar_id.fetch_add(1, std::memory_order_relaxed)) {}

MaskCacheStats GrammarAccount::stats() const {
  MaskCacheStats s;
  s.hits = hits_.load(std::memory_order_relaxed);
  s.misses = misses_.load(std::memory_order_relaxed);
  s.entries = entries_.load(std::memory_order_relaxed);
  s.bytes = bytes_.load(std::memory_order_relaxed);
  s.evictions = evictions_.load(std::memory_order_relaxed);
  return s;
}

MaskCache::MaskCache(size_t mask_words, uint32_t mask_ids, size_t budget_bytes)
    : mask_words_(mask_words), mask_ids_(mask_ids), budget_bytes_(budget_bytes) {}

void MaskCache::Encode(const uint32_t* words, size_t allowed, Entry* entry) const {
  const size_t rejected = mask_ids_ - allowed;
  entry->allowed = static_cast<uint32_t>(allowed);
  // A list only when it is at least 8x smaller than the bitset.
  if (8 * std::min(allowed, rejected) > mask_words_) {
    entry->form = Form::kBits;
    entry->payload.assign(words, words + mask_words_);
    return;
  }
  const bool list_allowed = allowed <= rejected;
  entry->form = list_allowed ? Form::kAllowedIds : Form::kRejectedIds;
  entry->payload.reserve(list_allowed ? allowed : rejected);
  for (size_t w = 0; w < mask_words_; ++w) {
    uint32_t bits = list_allowed ? words[w] : ~words[w];
    if (!list_allowed && w == mask_words_ - 1 && mask_ids_ % 32 != 0) bits &= (1u << (mask_ids_ % 32)) - 1;
    for (; bits != 0; bits &= bits - 1) {
      entry->payload.push_back(static_cast<uint32_t>(32 * w) + static_cast<uint32_t>(std::countr_zero(bits)));
    }
  }
}

void MaskCache::Decode(const Entry& entry, uint32_t* words) const {
  switch (entry.form) {
    case Form::kBits:
      std::memcpy(words, entry.payload.data(), 4 * mask_words_);
      return;
    case Form::kAllowedIds:
      std::memset(words, 0, 4 * mask_words_);
      for (uint32_t id : entry.payload) words[id / 32] |= 1u << (id % 32);
      return;
    case Form::kRejectedIds:
      std::memset(words, 0xFF, 4 * mask_words_);
      if (mask_ids_ % 32 != 0) words[mask_words_ - 1] = (1u << (mask_ids_ % 32)) - 1;
      for (size_t w = (mask_ids_ + 31) / 32; w < mask_words_; ++w) words[w] = 0;
      for (uint32_t id : entry.payload) words[id / 32] &= ~(1u << (id % 32));
      return;
    case Form::kDeeper:
      return;
  }
}

MaskCache::Found MaskCache::Lookup(GrammarAccount& account, absl::Span<const uint32_t> key, uint32_t* words) {
  const KeyView view{account.id(), key};
  const size_t hash = KeyHash()(view);
  Shard& shard = ShardOf(hash);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.map.find(view, hash);
  if (it == shard.map.end()) {
    ++shard.misses;
    account.misses_.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  shard.lru.splice(shard.lru.begin(), shard.lru, it->second.lru);
  if (it->second.form == Form::kDeeper) return {.allowed = -1, .deeper_sets = it->second.allowed};
  ++shard.hits;
  account.hits_.fetch_add(1, std::memory_order_relaxed);
  Decode(it->second, words);
  return {.allowed = it->second.allowed, .deeper_sets = 0};
}

void MaskCache::Store(const std::shared_ptr<GrammarAccount>& account, absl::Span<const uint32_t> key,
                      const uint32_t* words, size_t allowed) {
  Entry entry;
  Encode(words, allowed, &entry);
  Insert(account, key, std::move(entry));
}

void MaskCache::StoreDeeper(const std::shared_ptr<GrammarAccount>& account, absl::Span<const uint32_t> key,
                            uint32_t deeper_sets) {
  Entry entry;
  entry.form = Form::kDeeper;
  entry.allowed = deeper_sets;
  Insert(account, key, std::move(entry));
}

void MaskCache::Insert(const std::shared_ptr<GrammarAccount>& account, absl::Span<const uint32_t> key,
                       Entry entry) {
  const size_t shard_budget = budget_bytes() / kShards;
  const KeyView view{account->id(), key};
  const size_t hash = KeyHash()(view);
  entry.bytes = 4 * (entry.payload.size() + key.size()) + kEntryOverhead;
  if (entry.bytes > shard_budget) return;
  entry.account = account;
  Shard& shard = ShardOf(hash);
  std::lock_guard<std::mutex> lock(shard.mu);
  if (shard.map.find(view, hash) != shard.map.end()) return;
  const size_t bytes = entry.bytes;
  auto it = shard.map.try_emplace(Key{account->id(), std::vector<uint32_t>(key.begin(), key.end())},
                                  std::move(entry)).first;
  shard.lru.push_front(&it->first);
  it->second.lru = shard.lru.begin();
  shard.bytes += bytes;
  account->entries_.fetch_add(1, std::memory_order_relaxed);
  account->bytes_.fetch_add(bytes, std::memory_order_relaxed);
  while (shard.bytes > shard_budget && !shard.lru.empty()) {
    auto victim = shard.map.find(*shard.lru.back());
    shard.lru.pop_back();
    GrammarAccount& owner = *victim->second.account;
    owner.entries_.fetch_sub(1, std::memory_order_relaxed);
    owner.bytes_.fetch_sub(victim->second.bytes, std::memory_order_relaxed);
    owner.evictions_.fetch_add(1, std::memory_order_relaxed);
    shard.bytes -= victim->second.bytes;
    ++shard.evictions;
    shard.map.erase(victim);
  }
}

MaskCacheStats MaskCache::stats() const {
  MaskCacheStats total;
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    total.hits += shard.hits;
    total.misses += shard.misses;
    total.entries += shard.map.size();
    total.bytes += shard.bytes;
    total.evictions += shard.evictions;
  }
  return total;
}

std::shared_ptr<MaskCache> Vocabulary::SharedMaskCache() const {
  std::lock_guard<std::mutex> lock(trie_slot_->mu);
  if (trie_slot_->mask_cache == nullptr) {
    const uint32_t ids = static_cast<uint32_t>(padded_size());
    trie_slot_->mask_cache = std::make_shared<MaskCache>((ids + 31) / 32, ids, trie_slot_->mask_cache_bytes);
  }
  return trie_slot_->mask_cache;
}

}  // namespace zapgram::masks
