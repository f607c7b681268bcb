// Partial masks of lexed walks kept per cut key (see partial_masks.h).
#include "masks/partial_masks.h"

#include <utility>

namespace zapgram::masks {

std::shared_ptr<const PartialMasks::Partial> PartialMasks::Find(absl::Span<const uint32_t> key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return nullptr;
  found_.fetch_add(1, std::memory_order_relaxed);
  return it->second;
}

void PartialMasks::Store(absl::Span<const uint32_t> key, absl::Span<const uint32_t> words,
                         absl::Span<const uint32_t> roots) {
  std::lock_guard<std::mutex> lock(mu_);
  if (by_key_.contains(key)) return;
  const size_t entry_bytes = 4 * (key.size() + roots.size()) + 128;
  const size_t word_bytes = 4 * words.size() + 64;
  if (entry_bytes + word_bytes > budget_.budget_bytes()) return;  // could not be kept alone
  const auto clear = [this] {
    by_key_.clear();
    words_.clear();
  };
  bool words_kept = words_.contains(words);
  const uint64_t generation = budget_.evictions();
  budget_.Reserve(entry_bytes + (words_kept ? 0 : word_bytes), clear);
  if (words_kept && budget_.evictions() != generation) {
    // The clear dropped the words this entry was to share: they are new
    // again (room for both was checked above, so no second clear).
    budget_.Reserve(word_bytes, clear);
    words_kept = false;
  }
  auto interned = words_kept ? words_.find(words)
                             : words_.insert(std::make_shared<const std::vector<uint32_t>>(words.begin(), words.end())).first;
  auto partial = std::make_shared<Partial>();
  partial->words = *interned;
  partial->roots.assign(roots.begin(), roots.end());
  by_key_.try_emplace(std::vector<uint32_t>(key.begin(), key.end()), std::move(partial));
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
