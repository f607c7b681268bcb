// Partial masks of lexed walks kept per cut key (see partial_masks.h).
#include "masks/partial_masks.h"

#include <utility>

namespace zapgram::masks {

std::shared_ptr<const PartialMasks::Partial> PartialMasks::Find(absl::Span<const uint32_t> key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(HashedSpan(key));
  if (it == by_key_.end()) return nullptr;
  found_.fetch_add(1, std::memory_order_relaxed);
  return it->second->partial;
}

void PartialMasks::Store(absl::Span<const uint32_t> key, absl::Span<const uint32_t> words,
                         absl::Span<const uint32_t> roots) {
  std::lock_guard<std::mutex> lock(mu_);
  const HashedSpan hashed_key(key);
  if (by_key_.contains(hashed_key)) return;
  const size_t entry_bytes = 4 * (key.size() + roots.size()) + 160;
  const size_t word_bytes = 4 * words.size() + 96;
  if (entry_bytes + word_bytes > budget_.budget_bytes()) return;  // could not be kept alone
  const auto clear = [this] {
    by_key_.clear();
    words_.clear();
  };
  const HashedSpan hashed_words(words);
  bool words_kept = words_.contains(hashed_words);
  const uint64_t generation = budget_.evictions();
  budget_.Reserve(entry_bytes + (words_kept ? 0 : word_bytes), clear);
  if (words_kept && budget_.evictions() != generation) {
    // The clear dropped the words this entry was to share: they are new
    // again (room for both was checked above, so no second clear).
    budget_.Reserve(word_bytes, clear);
    words_kept = false;
  }
  std::shared_ptr<const std::vector<uint32_t>> interned;
  if (words_kept) {
    interned = words_.find(hashed_words)->second;
  } else {
    interned = std::make_shared<const std::vector<uint32_t>>(words.begin(), words.end());
    words_.try_emplace(HashedSpan(*interned), interned);
  }
  auto partial = std::make_shared<Partial>();
  partial->words = std::move(interned);
  partial->roots.assign(roots.begin(), roots.end());
  auto kept = std::make_unique<Kept>(Kept{std::vector<uint32_t>(key.begin(), key.end()), std::move(partial)});
  const HashedSpan kept_key(kept->key);
  by_key_.try_emplace(kept_key, std::move(kept));
}

size_t PartialMasks::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_key_.size();
}

size_t PartialMasks::distinct_words() const {
  std::lock_guard<std::mutex> lock(mu_);
  return words_.size();
}

}  // namespace zapgram::masks
