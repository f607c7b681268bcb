// ZapFormat compaction: keep only what the newest Earley set can still reach.
//
// After a step, the future of the parse depends only on the newest set's
// items on terminals (the next scan consumes them) and on whatever their
// completions will consult: the items of earlier sets waiting on the
// completed nonterminals, transitively. Everything else — finished items,
// items of abandoned alternatives, whole sets nobody points into — is dead.
//
// The mark phase starts from the newest set's terminal items and follows
// "needs": an item with origin j whose rule has left-hand side A needs the
// group of set j waiting on A — its parent, which the item stores (chart.h).
// A group with a Leo entry needs only the Leo target's parent (the chain it
// stands for is never consulted again); a group without one needs the
// parents of its items. Each group is marked once, so the walk is linear in
// what is kept. The sweep copies the marked groups and the newest set's
// terminal items into a fresh chart, renumbering parents densely; sets left
// without groups disappear, except set 0 and the newest.
//
// With Leo entries, right recursion keeps O(1) sets; nested brackets keep
// O(depth); flat sequences (JSON arrays, statements) keep O(1).
//
// Tests: tests/pruning/compact_test.cc (golden dumps), differential_test.cc
// (pruning on/off agree with a textbook oracle), hard_cases_test.cc.
#ifndef ZAPGRAM_PRUNING_COMPACT_H_
#define ZAPGRAM_PRUNING_COMPACT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "parser/chart.h"
#include "parser/flat_grammar.h"
#include "parser/recognizer.h"

namespace zapgram::pruning {

class ZapFormatCompactor final : public parser::ChartCompactor {
 public:
  void Compact(const parser::FlatGrammar& grammar, const parser::Chart& in,
               parser::Chart* out) override;

 private:
  std::vector<uint8_t> group_marked_;  // per group of `in`
  std::vector<uint32_t> new_group_;    // per marked group of `in`: its index in `out`
  std::vector<uint32_t> stack_;        // groups to visit
};

// A recognizer with ZapFormat compaction when options.pruning is set.
parser::Recognizer MakeRecognizer(const parser::FlatGrammar* grammar,
                                  const RecognizerOptions& options = {});

}  // namespace zapgram::pruning

#endif  // ZAPGRAM_PRUNING_COMPACT_H_
