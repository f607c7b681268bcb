// A byte budget kept by generations, for the caches of the mask walk that
// are filled on the hot path (ClosureMemo, PartialMasks, the lexed subtree
// sets).
//
// An addition that would pass the budget first forgets everything the
// cache holds (a new generation starts empty): nothing is tracked per
// entry, so a hit costs no bookkeeping, and what recurs is kept again
// within a few masks. An addition larger than the whole budget is refused.
// The owner serializes Reserve (its own mutex); the counters are read
// without it.
#ifndef ZAPGRAM_MASKS_GENERATION_BUDGET_H_
#define ZAPGRAM_MASKS_GENERATION_BUDGET_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace zapgram::masks {

class GenerationBudget {
 public:
  explicit GenerationBudget(size_t budget_bytes) : budget_bytes_(budget_bytes) {}

  // Makes room for `bytes` more: when they would pass the budget, calls
  // `clear()` (which must drop everything counted) and starts a new
  // generation; false, with nothing cleared, when they alone pass it.
  template <typename Clear>
  bool Reserve(size_t bytes, Clear&& clear) {
    const size_t budget = budget_bytes_.load(std::memory_order_relaxed);
    if (bytes > budget) return false;
    if (bytes_.load(std::memory_order_relaxed) + bytes > budget) {
      clear();
      bytes_.store(0, std::memory_order_relaxed);
      evictions_.fetch_add(1, std::memory_order_relaxed);
    }
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
    return true;
  }

  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  size_t budget_bytes() const { return budget_bytes_.load(std::memory_order_relaxed); }
  // Takes effect at the next addition (tests use a tiny budget).
  void set_budget_bytes(size_t bytes) { budget_bytes_.store(bytes, std::memory_order_relaxed); }
  // How many generations were dropped to stay within the budget.
  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }

 private:
  std::atomic<size_t> budget_bytes_;
  std::atomic<size_t> bytes_{0};
  std::atomic<uint64_t> evictions_{0};
};

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_GENERATION_BUDGET_H_
