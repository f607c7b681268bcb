// Removal of useless rules: unproductive and unreachable ones (see the .cc).
//
// Tests: tests/transforms/transforms_test.cc (UselessRules.*).
#ifndef ZAPGRAM_TRANSFORMS_USELESS_RULES_H_
#define ZAPGRAM_TRANSFORMS_USELESS_RULES_H_

#include "absl/status/statusor.h"
#include "grammar/grammar.h"
#include "transforms/report.h"

namespace zapgram::transforms {

// Returns an equivalent grammar (same language from the root) without
// unproductive rules, alternatives or sequences, and without rules
// unreachable from the root. Rule ids are renumbered (kept rules keep their
// relative order); the root is kept. Errors: `grammar` invalid, or a root
// that derives no string (InvalidArgument naming the root rule).
// `report` (may be null) receives the removed rules and the counters
// "alternatives dropped" and "repeats emptied"; its sizes are left alone.
absl::StatusOr<grammar::Grammar> RemoveUselessRules(const grammar::Grammar& grammar,
                                                    PassReport* report = nullptr);

}  // namespace zapgram::transforms

#endif  // ZAPGRAM_TRANSFORMS_USELESS_RULES_H_
