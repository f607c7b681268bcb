// Partial masks of lexed walks, kept per cut key so that a later state
// with the same cut key walks only what depends on the chart below it.
//
// The state cache (masks/matcher.h) keys a mask by the newest kept sets of
// the chart (the *cut key*); a lexed walk that reads below them stores its
// mask under a longer key spelled down to the deepest group it read, and
// leaves a pointer under the cut key. On go.lark most misses are states
// whose cut key has such a pointer and whose longer key is new: a token
// such as `}\n\n` closes a block, then the function, and reaches the
// top-level declarations, so the longer key spells the whole chart, and
// two charts that differ only far below (the first declaration or a later
// one, a Leo entry or the items it stands for) miss each other although
// their masks agree.
//
// Most of such a walk does not depend on what lies below the cut. The walk
// (masks/lexed_masks.cc) sees the parser only through its histories'
// closures; a closure that consults a group below the cut, and every
// history after it, is *deep*; a trie root whose path asks a deep history
// is deep. Everything else the walk computes (the lanes' token sets, the
// roots whose paths ask no deep history, what they classify below them) is
// fixed by the cut key, because the histories it asks are. So the first
// walk of a cut key keeps here, under that key:
//   - the mask without the deep roots' part (the *partial* words),
//   - the deep roots.
// A later state with that cut key whose longer key misses starts from the
// partial words and walks the deep roots only (their nested roots are found
// again as the walk goes). On go (100 documents, Llama 3), the deep roots
// are ~12 % of the roots of walks that read below the cut, and ~13 % of
// their walk time.
//
// The words are interned: 5,700 cut keys of go's 100 documents share ~600
// distinct partial words. Budget: keys, roots and words count their bytes;
// an addition that would pass the budget first forgets everything (a new
// generation; callers hold what they found by shared_ptr), as ClosureMemo
// does. Thread-safe (one mutex).
//
// Tests: tests/masks/partial_masks_test.cc (interning, budget); the
// matcher's lexed brute-force tests (MatcherLexed.PartialMasksMatchBruteForce
// replays partials and compares every mask with the per-token brute force).
#ifndef ZAPGRAM_MASKS_PARTIAL_MASKS_H_
#define ZAPGRAM_MASKS_PARTIAL_MASKS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "masks/closure_memo.h"
#include "masks/generation_budget.h"

namespace zapgram::masks {

class PartialMasks {
 public:
  struct Partial {
    std::shared_ptr<const std::vector<uint32_t>> words;  // the mask without the deep roots' part
    std::vector<uint32_t> roots;                         // the deep roots, in trie order
  };
  explicit PartialMasks(size_t budget_bytes) : budget_(budget_bytes) {}

  // The partial kept under `key`, or null (counted in found() when there).
  std::shared_ptr<const Partial> Find(absl::Span<const uint32_t> key) const;
  // Keeps a partial under `key` (an existing one stays); nothing when it
  // alone is larger than the budget.
  void Store(absl::Span<const uint32_t> key, absl::Span<const uint32_t> words,
             absl::Span<const uint32_t> roots);

  size_t bytes() const { return budget_.bytes(); }
  // Takes effect at the next addition (tests use a tiny budget).
  void set_budget_bytes(size_t bytes) { budget_.set_budget_bytes(bytes); }
  uint64_t evictions() const { return budget_.evictions(); }
  uint64_t found() const { return found_.load(std::memory_order_relaxed); }
  // Kept partials and distinct words (this generation).
  size_t size() const;
  size_t distinct_words() const;

 private:
  // Tables of long keys (a partial's words are a whole mask) keep each
  // key's hash: growing a table rehashes from the kept hashes instead of
  // reading every key again (a 2 ms step on go's words before).
  struct HashedSpan {
    size_t hash;
    absl::Span<const uint32_t> span;  // into the value the table holds
    explicit HashedSpan(absl::Span<const uint32_t> s) : hash(SpanHash()(s)), span(s) {}
    bool operator==(const HashedSpan& o) const { return hash == o.hash && span == o.span; }
  };
  struct KeptHash {
    size_t operator()(const HashedSpan& k) const { return k.hash; }
  };
  GenerationBudget budget_;
  mutable std::mutex mu_;
  // Keys span the kept Partial's key; interned words span their vector.
  struct Kept {
    std::vector<uint32_t> key;
    std::shared_ptr<const Partial> partial;
  };
  absl::flat_hash_map<HashedSpan, std::unique_ptr<const Kept>, KeptHash> by_key_;
  absl::flat_hash_map<HashedSpan, std::shared_ptr<const std::vector<uint32_t>>, KeptHash> words_;
  mutable std::atomic<uint64_t> found_{0};
};

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_PARTIAL_MASKS_H_
