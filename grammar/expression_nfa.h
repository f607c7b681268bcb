// The NFA of a regular IR expression, built from the expression tree itself.
//
// The regular-terminal merge (transforms/regular_terminals.h) asks, for each
// candidate, whether its language has a DFA within the state cap. It used to
// write the candidate as regex text and compile the text: parse it, emit a
// Thompson NFA with every code-point class spelled as a UTF-8 trie and every
// set operation of a JSON Schema pattern built again, then determinize.
// Most of that was repeated work: a candidate holds the same string, number
// and pattern leaves as its neighbours, and the text of a nested object
// is parsed once per enclosing candidate. Measured on the slowest tenth of
// MaskBench's schemas, parsing and emitting cost more than determinizing.
//
// Here the NFA comes from the IR: a literal is a chain of byte edges, a
// code-point class its UTF-8 ranges, a sequence, choice or repetition the
// usual Thompson fragments, a rule reference its (non-recursive) rule's
// body, and a regex leaf its own minimal DFA, compiled once per pattern and
// flags and stamped wherever it occurs (grammar/dfa_set_ops.h, StampDfa).
// A minimal leaf DFA has a few states where its text NFA had dozens, so the
// subsets of the determinization are small too.
//
// The language is the expression's as the lowering compiles it, leaf by
// leaf, which is the language of RenderRegex's text whenever that text
// compiles (anchors: the caller refuses candidates whose text would place
// one where the dialect refuses it, grammar/rendered_anchors.h).
//
// Budgets: the NFA's states (limits.max_nfa_states), the DFA's
// (limits.max_dfa_states): past either, kResourceExhausted. Explicit stack.
//
// Tests: tests/grammar/expression_nfa_test.cc (the determinized automaton
// against compiling the rendered text, on random expressions and on every
// merge candidate of real JSON Schemas).
#ifndef ZAPGRAM_GRAMMAR_EXPRESSION_NFA_H_
#define ZAPGRAM_GRAMMAR_EXPRESSION_NFA_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "grammar/byte_automaton.h"
#include "grammar/grammar.h"
#include "grammar/regex_compiler.h"

namespace zapgram::grammar {

// Merged terminals left to be determinized lazily (the merge's lazy tier,
// transforms/regular_terminals.h): each one's NFA, built from the
// expressions, under its pattern text, for the lowering to take.
struct LazyRegexNfas {
  absl::node_hash_map<std::string, ByteNfa> by_pattern;
};

class ExpressionNfaBuilder {
 public:
  // `rule_body` gives the expression a kRuleRef stands for; the expressions
  // reached must not be recursive (the merge asks only for regular nodes).
  // Regex leaves are compiled through `regex_cache` under `limits`.
  ExpressionNfaBuilder(const Grammar& g, std::function<ExprId(RuleId)> rule_body,
                       RegexDfaCache* regex_cache, const RegexLimits& limits);

  // Appends the NFA of the concatenation of `parts` from state `from` of
  // `nfa`; returns its end state (the caller decides whether it accepts).
  // Fails on a token node, a regex leaf that does not compile, or past
  // limits.max_nfa_states.
  absl::StatusOr<uint32_t> Append(ByteNfa& nfa, uint32_t from, absl::Span<const ExprId> parts);

  // The concatenation of `parts` determinized (trimmed, not minimized),
  // within limits.max_dfa_states.
  absl::StatusOr<ClassDfa> Determinize(absl::Span<const ExprId> parts);

 private:
  // The minimal DFA of a regex leaf, by flags and pattern.
  const absl::StatusOr<ClassDfa>& LeafDfa(const Expr& e);

  const Grammar& g_;
  std::function<ExprId(RuleId)> rule_body_;
  RegexDfaCache* regex_cache_;
  RegexLimits limits_;
  absl::node_hash_map<std::string, absl::StatusOr<ClassDfa>> leaves_;
};

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_EXPRESSION_NFA_H_
