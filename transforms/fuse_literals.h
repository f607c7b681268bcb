// Literal fusion and structural simplification (see the .cc).
//
// Tests: tests/transforms/transforms_test.cc (FuseLiterals.*).
#ifndef ZAPGRAM_TRANSFORMS_FUSE_LITERALS_H_
#define ZAPGRAM_TRANSFORMS_FUSE_LITERALS_H_

#include "absl/status/statusor.h"
#include "grammar/grammar.h"
#include "transforms/report.h"

namespace zapgram::transforms {

// Returns an equivalent grammar (same rules, same ids) in which nested
// sequences and nested choices are flattened, empty parts of sequences are
// dropped, adjacent literals of a sequence are one literal, alternatives that
// each match exactly one code point (classes, one-code-point literals) are
// one class, and trivial wrappers (one-element sequences and choices, x{1},
// x{0}, repeats of the empty string) are unwrapped. Regex terminals are
// opaque and never fused. Errors: an invalid `grammar`. `report` (may be
// null) receives counters ("literals fused", "classes merged", ...).
absl::StatusOr<grammar::Grammar> FuseLiterals(const grammar::Grammar& grammar,
                                              PassReport* report = nullptr);

}  // namespace zapgram::transforms

#endif  // ZAPGRAM_TRANSFORMS_FUSE_LITERALS_H_
