// ZapFormat compaction: keep only what the newest Earley set can still reach.
//
// After a step, the future of the parse depends only on the newest set's
// items on terminals (the next scan consumes them) and on whatever their
// completions will consult: the groups of earlier sets waiting on the
// completed nonterminals, transitively. An item stores that group as its
// parent (parser/chart.h); a group with a Leo entry needs only the Leo
// target's parent (the chain behind it is never consulted again), a group
// without one needs the parents of its items. Everything not reachable from
// the newest set this way — finished items, abandoned alternatives, whole
// sets — is dead.
//
// Done naively (mark from the newest set, copy what is marked) every step
// costs time proportional to everything kept, i.e. to nesting depth. This
// compactor gets the same result incrementally:
//  - Each group counts its *external* references: live references from
//    items in later sets (`external_refs_`). References inside one set (from
//    items predicted in that set, which may form cycles, e.g. left recursion)
//    are not counted; instead a set's liveness is recomputed locally: its
//    live groups are those reachable, inside the set, from groups with
//    external references (and, for the newest set, from its terminal items).
//  - A step recomputes the new newest set and the previous one (whose
//    terminal items stopped being roots). A group that dies releases its
//    external references; a count that falls to zero makes the lower set
//    dirty, and dirty sets are recomputed from the top down. Each group dies
//    once, so the work is proportional to what changed, not to what is kept.
//  - Dead entries stay in the arrays as tombstones until they outnumber the
//    live ones; then the chart is rewritten densely (CopyLive), amortized O(1)
//    per step.
// The result after every step equals the naive mark (a test checks
// LiveItems() against CopyLive on every step of real inputs).
//
// A lexed grammar's newest position holds one set per lexer lane
// (parser/recognizer.h); all of them are roots, and they stop being roots
// together at the next step.
//
// With Leo entries, right recursion keeps O(1) sets; nested brackets keep
// O(depth); flat sequences (JSON arrays, statements) keep O(1).
//
// CanonicalKey spells the live chart for the mask cache, newest set first:
// the same mark, driven by a max-heap of group indices so that sets come out
// newest first and the spelling can stop after a number of older sets, or
// once a given group is spelled (a cut key; references below the cut are
// spelled by rank). Its cost is then bounded by the sets spelled, not by
// nesting depth, and the states of one shape at any depth share a key. A cut key stands for the state only as far as the
// mask walk consults nothing below the cut (Recognizer::LowestConsultedGroup;
// masks/matcher.cc stores other masks under the whole key).
//
// Tests: tests/pruning/compact_test.cc (golden dumps, incremental = naive,
// keys: in-place = dense copy's, cut keys spell the top only),
// tests/masks/matcher_test.cc (MatcherCutKeys: masks under cut keys = brute force),
// differential_test.cc (pruning on/off agree with a textbook oracle),
// hard_cases_test.cc.
#ifndef ZAPGRAM_PRUNING_COMPACT_H_
#define ZAPGRAM_PRUNING_COMPACT_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "parser/chart.h"
#include "parser/flat_grammar.h"
#include "parser/recognizer.h"

namespace zapgram::pruning {

class ZapFormatCompactor final : public parser::ChartCompactor {
 public:
  void Reset(const parser::FlatGrammar& grammar, const parser::Chart& chart) override;
  std::unique_ptr<parser::ChartCompactor> Clone() const override {
    return std::make_unique<ZapFormatCompactor>(*this);
  }
  void AfterPush(const parser::FlatGrammar& grammar, const parser::Chart& chart) override;
  void Commit(const parser::FlatGrammar& grammar, parser::Chart* chart) override;
  void Undo() override;
  void CopyLive(const parser::FlatGrammar& grammar, const parser::Chart& in,
                parser::Chart* out) override;
  parser::KeyCut CanonicalKey(const parser::Chart& in,
                              absl::FunctionRef<void(const parser::EarleySet&)> set_header,
                              const parser::StateClasses& state_class, parser::KeyReach reach,
                              std::vector<uint32_t>* out) override;
  size_t LiveItems() const override { return live_group_items_ + newest_scan_items_; }
  size_t LiveSets() const override { return live_sets_; }

 private:
  // Recomputes which groups of `set` are live; `as_newest` adds the set's
  // terminal items as roots. Updates counts and marks lower sets dirty.
  void RecomputeSet(const parser::Chart& chart, uint32_t set, bool as_newest);
  void AddScanRoots(const parser::Chart& chart, uint32_t set, int delta);
  void ReleaseRef(uint32_t group);
  void AddRef(uint32_t group);
  void SetLive(uint32_t group, uint8_t live);
  void ProcessDirty(const parser::Chart& chart);
  void Grow(const parser::Chart& chart);
  void FinishStep(const parser::Chart& chart);
  size_t GroupItems(const parser::WaitingGroup& g) const {
    return g.leo_dot != parser::kNoLeo ? 1 : g.count;
  }

  // Per group of the chart.
  std::vector<uint32_t> external_refs_;
  std::vector<uint8_t> live_;
  std::vector<uint32_t> set_of_;
  // Per set: live groups, and whether it waits for recomputation.
  std::vector<uint32_t> set_live_groups_;
  std::vector<uint8_t> dirty_;
  std::vector<uint32_t> dirty_sets_;  // a max-heap of set indices
  size_t live_group_items_ = 0;   // items of live groups (a Leo group counts 1)
  size_t newest_scan_items_ = 0;  // the newest set's terminal items
  size_t live_sets_ = 0;          // sets with a live group, plus set 0 and the newest
  size_t sets_with_live_groups_ = 0;
  // Undo journal of the step since AfterPush: old values, newest last.
  struct Counters {
    size_t live_group_items, newest_scan_items, live_sets, sets_with_live_groups;
  };
  Counters saved_counters_{};
  std::vector<std::pair<uint32_t, uint32_t>> journal_refs_;        // (group, old count)
  std::vector<uint32_t> journal_live_;                             // groups whose live_ flipped
  std::vector<std::pair<uint32_t, uint32_t>> journal_set_groups_;  // (set, old count)
  // Scratch.
  parser::Chart spare_;  // recycled buffers for dense rewrites
  std::vector<uint8_t> local_live_;
  std::vector<uint32_t> stack_;
  std::vector<uint32_t> new_group_;
  // CanonicalKey scratch: a group is marked when key_stamp_[g] == key_epoch_,
  // so that nothing proportional to the whole chart is cleared per call.
  std::vector<uint32_t> key_stamp_;
  std::vector<uint32_t> key_index_;
  std::vector<uint32_t> key_marked_;
  std::vector<uint32_t> key_sets_;
  std::vector<std::array<uint32_t, 3>> key_items_;
  uint32_t key_epoch_ = 0;
};

// A recognizer with ZapFormat compaction when options.pruning is set.
parser::Recognizer MakeRecognizer(const parser::FlatGrammar* grammar,
                                  const RecognizerOptions& options = {});

}  // namespace zapgram::pruning

#endif  // ZAPGRAM_PRUNING_COMPACT_H_
