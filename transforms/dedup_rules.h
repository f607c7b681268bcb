// Hash-consing of expressions and merging of identical rules (see the .cc).
//
// Tests: tests/transforms/transforms_test.cc (DedupRules.*).
#ifndef ZAPGRAM_TRANSFORMS_DEDUP_RULES_H_
#define ZAPGRAM_TRANSFORMS_DEDUP_RULES_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "grammar/grammar.h"
#include "transforms/report.h"

namespace zapgram::transforms {

struct DedupOptions {
  // Rounds of re-hashing inside one strongly connected component of the rule
  // graph after merges there (each round costs the component's size).
  uint32_t max_rounds_per_cycle = 4;
};

// Returns an equivalent grammar in which structurally identical expressions
// are one node (a DAG), duplicate alternatives of a choice are dropped, and
// rules whose bodies are identical once already-merged rules are identified
// are one rule (references redirected; ids renumbered; the surviving rule of
// the root's group is the root, with its name). Linear expected time.
// Errors: an invalid `grammar`. `report` (may be null) receives the merged
// rules as "merged: b=a" and counters.
absl::StatusOr<grammar::Grammar> DedupRules(const grammar::Grammar& grammar,
                                            const DedupOptions& options = {},
                                            PassReport* report = nullptr);

}  // namespace zapgram::transforms

#endif  // ZAPGRAM_TRANSFORMS_DEDUP_RULES_H_
