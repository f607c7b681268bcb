// Closures of the lexed mask walk, kept across masks.
//
// The uncertain walk of a lexed grammar (masks/lexed_masks.cc) closes the
// parser once per distinct sequence of tokens ended inside vocabulary
// tokens (a *history*: Recognizer::PushTokenEnd on the set the sequence so
// far left). On go.lark with Llama 3 a miss closes ~330 of them (~55 % of
// its instructions), about half for runs of one punctuation token ("****",
// ";;;;", "!!!!", "((((": every prefix of such a vocabulary token is a
// longer history), and the next miss closes the same ones again.
//
// A closure reads the items of its source set that wait for the token, and
// then the groups that completed items name: their waiting items and Leo
// entries. For ~85 % of go's closures those groups all lie in the source
// set itself (Recognizer::LowestConsultedGroup at or above its first
// group). Such a closure is a function of the source set's items and Leo
// entries alone, up to the names of the groups outside it, which it only
// copies into the new set. So sets are spelled with those outer groups
// renamed by first appearance (Recognizer::SpellClosureSet), and the memo
// keeps, per (spelling id, token), the new set's spelling id and what the
// walk reads of it: alive, accepting, the tokens its items wait for. A walk
// whose source has an id finds the step here and pushes nothing; chains of
// found steps (the punctuation runs) never touch the chart. A step that
// consulted older groups is not kept (its outcome depends on them).
//
// This is an LR(0)-like automaton over Earley sets, built lazily from the
// masks that need it and shared by every Matcher of the grammar.
//
// Where it does not pay: spelling a set costs about what closing it does
// (sql.lark's sets are large and few of its closures recur: 100 docs took
// ~23 % more mask instructions with the memo). So a grammar keeps using it
// only while it finds at least one kept step per set it spelled, judged
// after kWarmupSpellings (go: ~10 found per spelled; sql: ~0.5).
//
// Budget: spellings and steps count their bytes. An addition that would
// pass the budget first forgets everything (a new generation starts empty):
// no per-entry bookkeeping on the hot path, and what recurs is kept again
// within a few masks. Ids are never reused (64-bit, counted across
// generations), so an id that a walk holds from before a clear finds
// nothing instead of another set's steps; a step it records after the
// clear is still right (an id names one spelling forever). Thread-safe
// (one mutex).
//
// Tests: tests/masks/matcher_test.cc (MatcherLexed.ClosureMemoMatchesBruteForce:
// masks along java/go/sql documents, a second pass served by found steps,
// against the per-token brute force; TinyLexedBudgetsEvictAndStayExact:
// the same at a 4 KiB budget, cleared several times).
#ifndef ZAPGRAM_MASKS_CLOSURE_MEMO_H_
#define ZAPGRAM_MASKS_CLOSURE_MEMO_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/types/span.h"
#include "masks/generation_budget.h"
#include "parser/lexer.h"

namespace zapgram::masks {

// Hash maps keyed by uint32 vectors, looked up by span (no key is built to
// find one).
struct SpanHash {
  using is_transparent = void;
  size_t operator()(absl::Span<const uint32_t> s) const { return absl::HashOf(s); }
};
struct SpanEq {
  using is_transparent = void;
  bool operator()(absl::Span<const uint32_t> a, absl::Span<const uint32_t> b) const { return a == b; }
};

class ClosureMemo {
 public:
  // A spelling's id: never reused, also across generations.
  using Id = uint64_t;
  static constexpr Id kNone = ~Id{0};
  explicit ClosureMemo(size_t budget_bytes) : budget_(budget_bytes) {}

  // What the walk reads of the set a closure leaves.
  struct Step {
    Id next = kNone;        // its spelling id (kNone: not kept)
    bool alive = false;     // the closure left a set
    bool accepting = false;
    parser::TokenBits tokens;  // the tokens its items wait for
  };

  // The id of `spelling`, added when new (after a clear when the memo is
  // full); kNone only when it alone is larger than the budget.
  Id Intern(absl::Span<const uint32_t> spelling);
  // The step after `token` ends in set `id`: copied into *out when kept.
  bool Find(Id id, uint32_t token, Step* out) const;
  // Keeps a step (after a clear when the memo is full; an existing one is
  // kept).
  void Record(Id id, uint32_t token, const Step& step);

  size_t bytes() const { return budget_.bytes(); }
  size_t budget_bytes() const { return budget_.budget_bytes(); }
  // Takes effect at the next addition (tests use a tiny budget).
  void set_budget_bytes(size_t bytes) { budget_.set_budget_bytes(bytes); }
  // How many times the memo was cleared to stay within its budget.
  uint64_t evictions() const { return budget_.evictions(); }
  uint64_t found() const { return found_.load(std::memory_order_relaxed); }
  // Whether the walk should spell and look up (see above): before
  // kWarmupSpellings spellings, or while found() >= spellings.
  static constexpr uint64_t kWarmupSpellings = 2000;
  bool Pays() const {
    const uint64_t spelled = spelled_.load(std::memory_order_relaxed);
    return spelled < kWarmupSpellings || found() >= spelled;
  }

 private:
  // Makes room for `bytes` more (GenerationBudget::Reserve). Called with
  // mu_ held.
  bool Reserve(size_t bytes);
  GenerationBudget budget_;
  mutable std::mutex mu_;
  absl::flat_hash_map<std::vector<uint32_t>, Id, SpanHash, SpanEq> ids_;
  absl::flat_hash_map<std::pair<Id, uint32_t>, Step> steps_;  // (id, token)
  Id next_id_ = 0;
  mutable std::atomic<uint64_t> found_{0};
  std::atomic<uint64_t> spelled_{0};  // Intern calls
};

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_CLOSURE_MEMO_H_
