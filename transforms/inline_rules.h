// Inlining of single-use and trivial rules (see the .cc).
//
// Tests: tests/transforms/transforms_test.cc (InlineRules.*).
#ifndef ZAPGRAM_TRANSFORMS_INLINE_RULES_H_
#define ZAPGRAM_TRANSFORMS_INLINE_RULES_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "grammar/grammar.h"
#include "transforms/report.h"

namespace zapgram::transforms {

struct InlineOptions {
  // A rule whose body, written out with the rules inlined into it, has at
  // most this many expression nodes is inlined wherever it is used
  // (`ws ::= [ \t]*` has 2, `"," ws` 2 + the inlined ws). Each use then grows
  // the written-out grammar by at most this much. 0 inlines single-use rules only.
  uint32_t max_trivial_size = 3;
  // Inline rules used exactly once (the grammar does not grow).
  bool single_use = true;
};

// Returns an equivalent grammar in which every reference to an inlined rule
// is replaced by that rule's body, and the inlined rules are gone (ids
// renumbered, kept rules in their order). Never inlined: the root, and the
// rules that head a cycle of the rule graph (so inlining terminates; a
// recursive rule is never inlined into itself). Linear time. Errors: an
// invalid `grammar`. `report` (may be null) receives the inlined rules.
absl::StatusOr<grammar::Grammar> InlineRules(const grammar::Grammar& grammar,
                                             const InlineOptions& options = {},
                                             PassReport* report = nullptr);

}  // namespace zapgram::transforms

#endif  // ZAPGRAM_TRANSFORMS_INLINE_RULES_H_
