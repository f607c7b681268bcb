// Determinized regex DFAs shared across grammars (see shared_regex_dfas.h).
#include "grammar/shared_regex_dfas.h"

#include <utility>

#include "grammar/regex_compiler.h"

namespace zapgram::grammar {

SharedRegexDfas& SharedRegexDfas::Process() {
  static SharedRegexDfas* store = new SharedRegexDfas(kDefaultBudgetBytes);  // never destroyed
  return *store;
}

bool SharedRegexDfas::Find(const std::string& key, uint32_t max_dfa_states, absl::StatusOr<ClassDfa>* out) {
  std::shared_ptr<const absl::StatusOr<ClassDfa>> built;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (budget_bytes_ == 0) return false;
    auto it = entries_.find(key);
    if (it == entries_.end() || !RegexDfaCache::Answers(*it->second.built, it->second.max_dfa_states, max_dfa_states)) {
      ++misses_;
      return false;
    }
    ++hits_;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    built = it->second.built;
  }
  *out = *built;  // copied outside the lock
  return true;
}

void SharedRegexDfas::Add(const std::string& key, uint32_t max_dfa_states, const absl::StatusOr<ClassDfa>& built) {
  size_t bytes = key.size() + 160;
  if (built.ok()) bytes += 4 * built->next.size() + built->accepting.size() + sizeof(ClassDfa);
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes > budget_bytes_) return;  // also when the store is off: no copy made
  auto copy = std::make_shared<const absl::StatusOr<ClassDfa>>(built);
  auto [it, fresh] = entries_.try_emplace(key);
  Entry& entry = it->second;
  if (fresh) {
    lru_.push_front(&it->first);
    entry.lru = lru_.begin();
  } else {
    bytes_ -= entry.bytes;
    lru_.splice(lru_.begin(), lru_, entry.lru);
  }
  entry.built = std::move(copy);
  entry.max_dfa_states = max_dfa_states;
  entry.bytes = bytes;
  bytes_ += bytes;
  EvictDownTo(budget_bytes_);
}

void SharedRegexDfas::EvictDownTo(size_t budget) {
  while (bytes_ > budget && !lru_.empty()) {
    auto it = entries_.find(*lru_.back());
    bytes_ -= it->second.bytes;
    lru_.pop_back();
    entries_.erase(it);
    ++evictions_;
  }
}

void SharedRegexDfas::set_budget_bytes(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  budget_bytes_ = bytes;
  EvictDownTo(bytes);
}

size_t SharedRegexDfas::budget_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return budget_bytes_;
}

SharedRegexStats SharedRegexDfas::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {hits_, misses_, entries_.size(), bytes_, evictions_};
}

}  // namespace zapgram::grammar
