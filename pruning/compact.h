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
// group of set j waiting on A. A group with a Leo entry needs only the Leo
// target's origin set (the chain it stands for is never consulted again);
// a group without one needs, for each of its items, the group its own
// completion will consult. Each group is marked once, so the walk is linear
// in what is kept. The sweep copies the marked groups and the newest set's
// terminal items into a fresh chart and renumbers sets (origins) densely.
// Set 0 is always kept (accepting means "the start symbol completed from
// set 0").
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
  std::vector<uint8_t> set_kept_;      // per set of `in`
  std::vector<uint32_t> new_index_;    // per set of `in`: its index in `out`
  std::vector<uint32_t> stack_;        // groups to visit
};

// A recognizer with ZapFormat compaction when options.pruning is set.
parser::Recognizer MakeRecognizer(const parser::FlatGrammar* grammar,
                                  const RecognizerOptions& options = {});

}  // namespace zapgram::pruning

#endif  // ZAPGRAM_PRUNING_COMPACT_H_
