// Set operations on byte DFAs: intersection, difference, and intersection
// with a code-point count.
//
// The regex dialect's zapgram extensions (?&:A|B) and (?~:A)
// (grammar/regex_compiler.h) and, through them, the JSON Schema converter's
// intersections (pattern and format and minLength/maxLength; the keys that
// no patternProperties pattern finds) are built here. Each operation is the
// product construction over reachable pairs of states, breadth first from
// the pair of start states, capped at `max_states` (past it: a
// kResourceExhausted error naming the limit, never a truncated automaton).
// Results are trimmed (state 0 dead, 1 start, every other state can still
// reach acceptance), as every ByteDfa is; callers minimize when they keep
// them. A product reads its operands by byte, or by their joint byte classes
// when both come in class form (the regex compiler's key complements: a few
// dozen columns instead of 256, the same automaton state for state).
//
// The counted product never builds the automaton of "n code points": it
// pairs each state of the operand with (count so far, state inside the
// current code point's spelling), where the spelling is the DFA of exactly
// one code point of a class (raw UTF-8, or the JSON-string spelling under
// kRegexJsonString). Spellings are prefix-free, so a code point ends exactly
// when that DFA accepts. Counts past `min` are merged when `max` is
// unbounded, so the product has at most |operand| x (bound + 1) x |spelling|
// states, and bounds above the regex dialect's max_repeat are fine.
//
// Tests: tests/grammar/dfa_set_ops_test.cc (against a direct membership
// check on random strings), tests/grammar/regex_compiler_test.cc (the
// dialect's set operations against RE2).
#ifndef ZAPGRAM_GRAMMAR_DFA_SET_OPS_H_
#define ZAPGRAM_GRAMMAR_DFA_SET_OPS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "grammar/byte_automaton.h"

namespace zapgram::grammar {

// Strings both DFAs accept.
absl::StatusOr<ByteDfa> IntersectDfas(const ByteDfa& a, const ByteDfa& b, uint32_t max_states);

// Strings `universe` accepts and `removed` does not.
absl::StatusOr<ByteDfa> SubtractDfa(const ByteDfa& universe, const ByteDfa& removed,
                                    uint32_t max_states);
// The same read by the operands' joint byte classes rather than by byte
// (the same automaton, state for state: classes are read in order of their
// smallest bytes), and kept in them: its Widen() is the byte-read result.
absl::StatusOr<ClassDfa> SubtractDfa(const ClassDfa& universe, const ClassDfa& removed,
                                     uint32_t max_states);

// Strings `a` accepts that are sequences of min..max code points (max may
// be kUnbounded), each spelled as `one_codepoint` accepts: the DFA of
// exactly one code point of a class, which must be prefix-free (no
// accepting state has a live transition; InvalidArgument otherwise).
absl::StatusOr<ByteDfa> IntersectCounted(const ByteDfa& a, const ByteDfa& one_codepoint,
                                         uint32_t min, uint32_t max, uint32_t max_states);

// Copies `dfa` into `nfa` as a fragment entered at `from` (its start state
// becomes `from`); returns the fresh end state every accepting state reaches
// by an epsilon move. Each maximal run of bytes with one target becomes one
// range, in byte order (the same ranges as from dfa.Widen()).
uint32_t StampDfa(ByteNfa& nfa, uint32_t from, const ClassDfa& dfa);

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_DFA_SET_OPS_H_
