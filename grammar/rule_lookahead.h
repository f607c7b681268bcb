// Rule lookahead assertions (XGrammar's `rule ::= body (= assertion)`):
// proved to follow from the grammar, or refused.
//
// What XGrammar means by one. The assertion says what the text after each
// occurrence of the rule begins with. XGrammar never checks it while it
// matches (its Earley parser ignores it, so its accept/reject verdicts are
// those of the grammar without the assertion); it only uses it, when it
// precomputes a rule's token masks, to reject a token that runs past the
// rule's end into bytes the assertion refuses. The end of the text is never a
// violation. Its own grammar optimizer adds such assertions where they are
// true, as a hint. A false one makes XGrammar's masks disagree with its own
// matcher.
//
// What zapgram does. It honours the assertion exactly by proving that it is
// implied: every occurrence of the rule, in every derivation, is followed by
// text that either has a prefix in the assertion's language or ends while
// still a prefix of one. Then the assertion removes nothing, the grammar
// without it is exact under either reading (XGrammar's verdicts and its
// masks), and the reader drops it. When the proof fails, the grammar is
// refused with the place where the rule can be followed by refused text:
// zapgram never loosens an assertion silently, and never narrows a
// language by one that XGrammar's own matcher ignores.
//
// How. The assertion must be regular (its rule references are inlined; a
// recursive one is refused); its minimal DFA has P "pending" states (live,
// not accepting) plus three outcomes that absorb: done (a prefix matched),
// refused (the DFA died first), opaque (a token-level element whose bytes
// only the vocabulary knows). Every expression X gets the exact relation
// T(X): pending state -> the pending states and outcomes its strings can
// lead to (a bit set of P + 3 bits). Terminals get it by walking their DFA
// against the assertion's; sequences compose, choices unite, repetitions
// iterate to a fixpoint, and rules are a least fixpoint over the grammar
// (unproductive parts contribute nothing). Then the pending sets flow from
// each occurrence of the rule through what follows it in its body (a repeat
// may run again: its star), and from the end of a body to every occurrence
// of that rule, with a worklist; a refused or opaque bit anywhere is the
// failure. At the end of the root nothing follows, which is fine. Only
// live places count: those some sentence derives through (reachable from the
// root, every sibling in a sequence deriving some string); a violation that
// no complete sentence shows is no violation. The flow is exact except at a
// counted repeat {m,n} with n > 1, where "more iterations" is taken as any
// number: it can refuse an assertion that is true, never accept a false one.
//
// Tests: tests/grammar/rule_lookahead_test.cc (cases, and a differential
// test against an enumeration of marked sentences with the reference
// recognizer).
#ifndef ZAPGRAM_GRAMMAR_RULE_LOOKAHEAD_H_
#define ZAPGRAM_GRAMMAR_RULE_LOOKAHEAD_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "grammar/grammar.h"

namespace zapgram::grammar {

struct RuleLookahead {
  RuleId rule = 0;
  ExprId assertion = 0;  // an expression of the grammar, usually outside every rule body
  SourceLocation loc;    // of its `(=`, for messages
};

struct RuleLookaheadLimits {
  // Pending states of an assertion's minimal DFA.
  uint32_t max_assertion_states = 60;
  // Rendered regex of an assertion.
  uint32_t max_assertion_bytes = 1u << 16;
  // Terminal DFA states times pending states walked, per assertion.
  uint64_t max_walk = uint64_t{1} << 26;
};

// OK when every assertion is implied by `g` (then dropping them changes no
// verdict and no mask); otherwise InvalidArgument "SOURCE:LINE:COL: ..." at
// the assertion, naming the rule and the place where it fails.
absl::Status CheckRuleLookaheadsImplied(const Grammar& g,
                                        const std::vector<RuleLookahead>& lookaheads,
                                        const RuleLookaheadLimits& limits = {});

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_RULE_LOOKAHEAD_H_
