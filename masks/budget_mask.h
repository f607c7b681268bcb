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
//      allowed id t other than EOS: decide "d(S·t) <= n - 1?" from the
//      bounds of S·t (accepting t and rolling it back; see Cost below for
//      how this is done once per state).
//   2. Bounds per state, memoized by the recognizer's exact canonical state
//      (Matcher::ExactStateKey: the whole live chart, no cut, no state
//      classes, so equal keys mean equal futures at any distance):
//        upper bound (a witness): the shortest byte completion w of X, by a
//          breadth-first search over bytes (Recognizer::NextBytes, states
//          deduplicated by key), spelled with the fewest vocabulary tokens
//          (a shortest path over the positions of w, edges = tokens that
//          are substrings of w there) and *replayed through the matcher*;
//          when the breadth-first search runs out of budget (deep nesting:
//          its frontier grows with every open structure), a best-first
//          search toward fewer live Earley sets and items finds some
//          completion instead (not the shortest, still a witness);
//          ub = tokens + 1 (EOS). Only a replayed witness sets ub, so ub
//          is always a real completion: soundness never depends on the
//          search being complete. Both searches step one byte per class
//          of bytes that every automaton reading the input steps alike
//          (parser::InputByteClasses): the others reach the same states.
//        lower bound: 1 when accepting, else 1 + ceil(b / L) with L the
//          longest token's byte length and b the fewest bytes any
//          completion has: |w| when the breadth-first search finished, else
//          one more than the depth it fully explored.
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
// Cost: the first mask asked at a state S visits every allowed token once
// (accept, key, bounds of S·t, roll back) and files the tokens by their
// bounds into a *profile* of S. Tokens that leave S in equal states share
// one visit (Matcher::TokenEffects labels them without accepting them,
// token_effects.cc): in a byte-level grammar those that no terminal of S can
// end inside and that leave its terminal automata alike (inside a string,
// most of the vocabulary), in a lexed grammar those that leave equal lanes
// after equal runs of ended tokens (after SQL's `select`, 48k tokens, ~400
// labels). The same labels cut the token searches of step 3: one search per
// label among the undecided tokens, and in byte-level grammars one child per
// label in each frame (lexed frames keep every child: labelling a large
// lexed mask costs more than the few children a frame usually visits).
// The byte searches stop at a state with a *known completion*: every state
// on a replayed witness, byte by byte, is remembered with the rest of it
// (completions_), so the children of one state, which mostly join one
// witness path within a byte or two (the end of an identifier, a closing
// quote), find theirs in a few nodes (such a stop gives an upper bound and
// the lower bound of the depth fully explored). The profile of S: one mask
// per distinct ub and per distinct lb (a handful). Every later mask of S, at
// any budget, is a few mask ORs plus the search for the tokens the bounds
// leave undecided (lb <= n - 1 < ub), at most max_search_nodes per call.
// Each first visit costs (labels) x (accept + key + roll back, ~2-20 us)
// plus the byte searches of the distinct successor states; docs/sampling.md
// ("Budget-aware masks") has measured figures. Memory: the memo holds one
// key (the canonical chart, a few hundred bytes) and a few integers per
// distinct state, the known completions a key and a few bytes per state
// (max_memo_entries each), the profiles a few masks per state
// (max_profile_bytes); all are cleared when full.
// The plain mask path is untouched (a separate object, built on first use).
//
// Token terminals (Token/ExcludeToken): every allowed id goes through
// AcceptToken, so special tokens a grammar allows are searched like any
// other; witnesses use normal tokens only.
//
// Thread safety: one BudgetMasker per sequence, used with its matcher only.
// Tests: tests/masks/budget_mask_test.cc (enumeration oracle on small
// grammars and vocabularies, a lexed one with and without grouping: 0
// unsound allows, over-masked counted; random
// walks under budgets on builtin:json, a MaskBench schema and a Lark grammar
// with Llama 3 end accepted within n).
#ifndef ZAPGRAM_MASKS_BUDGET_MASK_H_
#define ZAPGRAM_MASKS_BUDGET_MASK_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "masks/matcher.h"
#include "zapgram/limits.h"

namespace zapgram::masks {

struct BudgetStats {
  uint64_t calls = 0;           // Compute calls with n >= 2 that looked at tokens
  uint64_t skipped = 0;         // of them, answered by the remembered bound R
  uint64_t tokens_checked = 0;  // allowed tokens decided one by one
  uint64_t tokens_grouped = 0;  // allowed tokens given the bounds of an equal-effect one
  uint64_t byte_nodes = 0;      // byte-search children evaluated
  uint64_t search_nodes = 0;    // token-search children evaluated
  uint64_t inexact = 0;         // tokens masked only because a budget ran out
  uint64_t memo_entries = 0;
  uint64_t profile_bytes = 0;   // bytes of the per-state child profiles
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
    bool witnessed = false;            // the byte search has run for this state
  };
  Bounds StateBounds(Matcher& matcher);
  // Decides d(X) <= r for the current state (exact within the search budget;
  // false when it ran out). Public for tests.
  bool FinishesWithin(Matcher& matcher, uint32_t r);

  const BudgetStats& stats() const { return stats_; }
  void ClearMemo() {
    memo_.clear();
    completions_.clear();
    profiles_.clear();
    profile_bytes_ = 0;
  }

 private:
  // The memo's bounds of the current state; when absent, computed with a
  // witness (and remembered) or, with witness false, the free ones only (in
  // a scratch slot, valid until the next call). Null without keys.
  Bounds* Lookup(Matcher& matcher, bool witness = true);
  Bounds light_;
  Bounds ComputeBounds(Matcher& matcher);
  // Shortest byte completion of the current state, breadth first; false
  // when the byte budget ran out first (*explored: no completion has that
  // many bytes or fewer).
  bool ShortestCompletion(Matcher& matcher, std::string* witness, uint32_t* explored);
  // Some completion, best first toward fewer open structures (live sets,
  // then items); false when none was found within the byte budget.
  bool GuidedCompletion(Matcher& matcher, std::string* witness);
  // One step of either search, the matcher sitting after `path`: each live
  // next byte in byte order, one unit of `*budget` each. A byte that
  // completes the text gives kFound with *witness = path + byte; one that
  // reaches a state with a known completion (completions_) gives kFoundKnown
  // with *witness = path + byte + that completion (a completion, not
  // necessarily the shortest); one that reaches an exact state not in
  // `*seen` is handed to `discovered` (the matcher still after it).
  // kOutOfBudget when the node or the rollback budget runs out first.
  enum class SearchStep { kExpanded, kFound, kFoundKnown, kOutOfBudget };
  using SeenStates = absl::flat_hash_map<std::vector<uint32_t>, bool>;
  SearchStep ExpandByOneByte(Matcher& matcher, const std::string& path, uint64_t* budget,
                             SeenStates* seen, std::string* witness,
                             absl::FunctionRef<void(std::string next_path)> discovered);
  // Fewest tokens spelling `bytes`, replayed through the matcher (state
  // unchanged after); kUnknown when it cannot be spelled or replayed.
  uint32_t WitnessTokens(Matcher& matcher, const std::string& bytes);
  // Files the state after every byte of `bytes` (a completion of the
  // current state, replayed) in completions_ with the rest of `bytes`.
  void RememberCompletion(Matcher& matcher, const std::string& bytes);

  // Speculative steps, each rolled back by Pop; refused (as undecided)
  // when they would exceed the matcher's rollback budget.
  bool Push(Matcher& matcher, int32_t id);
  bool PushBytes(Matcher& matcher, std::string_view bytes);
  void Pop(Matcher& matcher);

  // Per state: its allowed children's bounds as masks, bucketed by value
  // (few distinct values: a handful of masks per state).
  struct Profile {
    std::vector<std::pair<uint32_t, std::vector<uint32_t>>> by_ub, by_lb;
    size_t bytes = 0;
  };
  // Files `ids` (the state's allowed tokens but EOS) by the bounds of the
  // states they lead to; stores the profile under key_ (the state's key).
  const Profile& BuildProfile(Matcher& matcher, const std::vector<int32_t>& ids);
  absl::flat_hash_map<std::vector<uint32_t>, Profile> profiles_;
  size_t profile_bytes_ = 0;

  BudgetMaskOptions options_;
  size_t speculative_bytes_ = 0;
  std::vector<size_t> pushed_;
  BudgetStats stats_;
  absl::flat_hash_map<std::vector<uint32_t>, Bounds> memo_;
  // States on the path of a replayed completion, each with the bytes that
  // complete it: a later search that reaches one stops there. Neighbouring
  // states (the children of one state: a token more or less of one
  // identifier or string) mostly join one path within a byte or two, so
  // one child's search serves its siblings. Cleared with memo_.
  absl::flat_hash_map<std::vector<uint32_t>, std::string> completions_;
  std::vector<uint32_t> key_;
  std::vector<uint32_t> scratch_words_;
  uint64_t nodes_left_ = 0;
  bool ran_out_ = false;
  // The byte searches' representative bytes (RepresentativeBytes), for the
  // grammar they were computed for.
  const parser::FlatGrammar* representatives_of_ = nullptr;
  parser::ByteSet representatives_;
};

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_BUDGET_MASK_H_
