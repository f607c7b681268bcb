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
// relative order); the root is kept. A root that derives no string (the
// empty language) gives the root rule alone with a body matching nothing
// (a class of no code point), not lexed. Errors: `grammar` invalid.
// `report` (may be null) receives the removed rules and the counters
// "alternatives dropped", "repeats emptied" and (for the empty language)
// "empty language"; its sizes are left alone.
absl::StatusOr<grammar::Grammar> RemoveUselessRules(const grammar::Grammar& grammar,
                                                    PassReport* report = nullptr);

}  // namespace zapgram::transforms

#endif  // ZAPGRAM_TRANSFORMS_USELESS_RULES_H_
