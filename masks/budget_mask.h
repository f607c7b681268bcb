// Budget-aware masks: which tokens can still finish within n tokens.
//
// A plain mask (masks/matcher.h) allows token t at state S when S·t is a
// viable prefix: some completion exists, however long. With n tokens left
// (EOS counted as one, as the model emits it) a decoder also needs the
// completion to fit: t is allowed iff d(S·t) <= n - 1, where d(X), the
// *token distance* of a state X, is the fewest tokens of this vocabulary
// (the final EOS included) that take X to a finished sequence. d(X) = 1
// exactly when X is accepting (EOS alone). EOS itself is allowed iff S is
// accepting and n >= 1; with n = 1 only EOS can be allowed; with n <= 0
// nothing is.
//
// The method (BudgetMasker::Compute):
//   1. the plain mask of S (cached as usual), then, when n >= 2, for every
//      allowed id t other than EOS: accept t, decide "d(S·t) <= n - 1?",
//      roll t back.
//   2. Bounds per state, memoized by the recognizer's exact canonical state
//      (Matcher::ExactStateKey: the whole live chart, no cut, no state
//      classes, so equal keys mean equal futures at any distance):
//        upper bound (a witness): the shortest byte completion w of X, by a
//          breadth-first search over bytes (Recognizer::NextBytes, states
//          deduplicated by key), spelled with the fewest vocabulary tokens
//          (a shortest path over the positions of w, edges = tokens that
//          are substrings of w there) and *replayed through the matcher*;
//          ub = tokens + 1 (EOS). Only a replayed witness sets ub, so ub
//          is always a real completion: soundness never depends on the
//          search being complete.
//        lower bound: 1 when accepting, else 1 + ceil(|w| / L) with L the
//          longest token's byte length (every completion has >= |w| bytes
//          when the byte search finished; 2 when it ran out of budget).
//   3. When lb <= n - 1 < ub, an exact bounded search: depth first over the
//      allowed tokens of each state (their plain masks), depth n - 1,
//      children pruned by their own bounds; a success is a token path, so
//      it is a witness too; a fully explored failure raises lb. Every
//      child a search visits costs one node of max_search_nodes (at most
//      max_search_nodes_per_token of them for one token of the mask; per
//      Compute call); when the budget runs out the undecided tokens are
//      *masked* (fail sound: only what was proven to finish is allowed)
//      and stats().inexact counts them.
//
// Where it is exact: whenever every masked token was refuted (lb > n - 1)
// by a finished byte search or an exhausted token search, i.e. always on
// small vocabularies and grammars (tests/masks/budget_mask_test.cc checks
// this against enumeration of every token sequence). Where it is
// conservative: only when a search budget runs out (stats().inexact > 0).
// The witness alone is not exact (the shortest byte completion need not be
// the one with the fewest tokens), which is why step 3 exists.
//
// Cost: step 1 visits every allowed token once per call, unless the state
// was seen before: per exact key the masker remembers the largest
// child upper bound R (every allowed token finishes within R) and, for
// n - 1 >= R, returns the plain mask untouched. Each first visit of a
// state costs (allowed tokens) x (accept + key + rollback) plus the
// byte searches of the distinct successor states; see docs/sampling.md
// ("Budget-aware masks") for measured figures. Memory: the memo holds one
// key (the canonical chart, a few hundred bytes) and a few integers per
// distinct state, bounded by max_memo_entries (cleared when full).
// The plain mask path is untouched (a separate object, built on first use).
//
// Token terminals (Token/ExcludeToken): every allowed id goes through
// AcceptToken, so special tokens a grammar allows are searched like any
// other; witnesses use normal tokens only.
//
// Thread safety: one BudgetMasker per sequence, used with its matcher only.
// Tests: tests/masks/budget_mask_test.cc (enumeration oracle on small
// grammars and vocabularies: 0 unsound allows, over-masked counted; random
// walks under budgets on builtin:json, a MaskBench schema and a Lark grammar
// with Llama 3 end accepted within n).
#ifndef ZAPGRAM_MASKS_BUDGET_MASK_H_
#define ZAPGRAM_MASKS_BUDGET_MASK_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "masks/matcher.h"
#include "zapgram/limits.h"

namespace zapgram::masks {

struct BudgetStats {
  uint64_t calls = 0;           // Compute calls with n >= 2 that looked at tokens
  uint64_t skipped = 0;         // of them, answered by the remembered bound R
  uint64_t tokens_checked = 0;  // allowed tokens decided one by one
  uint64_t byte_nodes = 0;      // byte-search children evaluated
  uint64_t search_nodes = 0;    // token-search children evaluated
  uint64_t inexact = 0;         // tokens masked only because a budget ran out
  uint64_t memo_entries = 0;
};

class BudgetMasker {
 public:
  explicit BudgetMasker(const BudgetMaskOptions& options = {}) : options_(options) {}

  // Fills `words` with the budget-aware mask of `matcher`'s state for
  // `tokens_left` = n tokens still allowed (EOS counted) and returns the
  // number of allowed ids. The matcher ends in the state it started in
  // (tokens are accepted and rolled back; its last-mask records are those
  // of the plain mask of that state). Needs a matcher with pruning (exact
  // keys) and a rollback budget of at least options.max_witness_bytes +
  // the longest token; otherwise every non-EOS token is masked (sound).
  size_t Compute(Matcher& matcher, int64_t tokens_left, uint32_t* words);

  // Bounds on d(X) for the matcher's current state X (memoized); ub is
  // kUnknown when no witness was found within the budgets.
  static constexpr uint32_t kUnknown = 0xFFFFFFFFu;
  struct Bounds {
    uint32_t lb = 1, ub = kUnknown;
    uint32_t max_child_ub = kUnknown;  // R of the state (see above), when known
    bool witnessed = false;            // the byte search has run for this state
  };
  Bounds StateBounds(Matcher& matcher);
  // Decides d(X) <= r for the current state (exact within the search budget;
  // false when it ran out). Public for tests.
  bool FinishesWithin(Matcher& matcher, uint32_t r);

  const BudgetStats& stats() const { return stats_; }
  void ClearMemo() { memo_.clear(); }

 private:
  // The memo's bounds of the current state; when absent, computed with a
  // witness (and remembered) or, with witness false, the free ones only (in
  // a scratch slot, valid until the next call). Null without keys.
  Bounds* Lookup(Matcher& matcher, bool witness = true);
  Bounds light_;
  Bounds ComputeBounds(Matcher& matcher);
  // Shortest byte completion of the current state; false when the byte
  // budget ran out first.
  bool ShortestCompletion(Matcher& matcher, std::string* witness);
  // Fewest tokens spelling `bytes`, replayed through the matcher (state
  // unchanged after); kUnknown when it cannot be spelled or replayed.
  uint32_t WitnessTokens(Matcher& matcher, const std::string& bytes);

  // Speculative steps, each rolled back by Pop; refused (as undecided)
  // when they would exceed the matcher's rollback budget.
  bool Push(Matcher& matcher, int32_t id);
  bool PushBytes(Matcher& matcher, std::string_view bytes);
  void Pop(Matcher& matcher);

  BudgetMaskOptions options_;
  size_t speculative_bytes_ = 0;
  std::vector<size_t> pushed_;
  BudgetStats stats_;
  absl::flat_hash_map<std::vector<uint32_t>, Bounds> memo_;
  std::vector<uint32_t> key_;
  std::vector<uint32_t> scratch_words_;
  uint64_t nodes_left_ = 0;
  bool ran_out_ = false;
};

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_BUDGET_MASK_H_
