// The normalization pipeline: every grammar -> grammar pass, in order.
//
// Normalize runs
//   1. useless_rules  (useless_rules.h) drop what can never match or be reached;
//   2. inline_rules   (inline_rules.h)  unfold single-use and trivial rules;
//   3. fuse_literals  (fuse_literals.h) flatten, fuse literals, merge classes;
//   4. dedup_rules    (dedup_rules.h)   hash-cons expressions, merge equal rules;
// and reports each pass (report.h). The order: removing useless rules first
// makes the use counts of inlining exact; inlining puts literals of
// different rules next to each other for fusion; fusion puts expressions in
// a normal form so that hashing finds more duplicates. Each pass is linear,
// so the pipeline is. Every pass preserves the language generated from the
// root (tests: tests/transforms/transforms_test.cc, LanguagePreservation.*).
//
// Lexed grammars (Lark, grammar::Grammar::tokens): every pass copies the
// lexicon unchanged and treats a kToken as an opaque terminal leaf (never
// fused with anything, inlined or shared like any leaf), so the lexer built
// from the result is the one built from the input, and the language of
// token sequences is preserved; hence so is the language of documents
// (tests: LexedGrammars.*, SynCode java/go/sql traces).
//
// NormalizeForCompile is what compilation runs (api/grammar_api.cc) before
// lowering: the same passes, no report.
#ifndef ZAPGRAM_TRANSFORMS_PIPELINE_H_
#define ZAPGRAM_TRANSFORMS_PIPELINE_H_

#include "absl/status/statusor.h"
#include "grammar/grammar.h"
#include "transforms/dedup_rules.h"
#include "transforms/inline_rules.h"
#include "transforms/report.h"

namespace zapgram::transforms {

struct NormalizeOptions {
  InlineOptions inlining;
  DedupOptions dedup;
};

// Runs the passes above on `grammar`. `report` (may be null) receives one
// PassReport per pass, with sizes. Errors: an invalid grammar. A root that
// derives no string gives the empty language's grammar (useless_rules.h).
absl::StatusOr<grammar::Grammar> Normalize(const grammar::Grammar& grammar,
                                           TransformReport* report = nullptr,
                                           const NormalizeOptions& options = {});

// The pipeline as the compiler runs it (default options, no report). Errors
// as Normalize: an invalid grammar. Cost: linear in the grammar.
absl::StatusOr<grammar::Grammar> NormalizeForCompile(const grammar::Grammar& grammar);
// The same, releasing `grammar` once the first pass has read it (a compile
// then holds at most a pass's input, output and scratch at once).
absl::StatusOr<grammar::Grammar> NormalizeForCompile(grammar::Grammar&& grammar);

}  // namespace zapgram::transforms

#endif  // ZAPGRAM_TRANSFORMS_PIPELINE_H_
