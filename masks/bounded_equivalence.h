// Terminal states that no token can tell apart.
//
// Two eager states of a terminal table are equivalent up to depth k when
// every string of at most k bytes leads both to the dead state or both to
// live states, accepting alike. A mask looks at most `depth` bytes (the
// longest token) past a terminal state, so such states have equal token sets
// and equal masks in equal contexts: the matcher keys its state cache and its
// token sets by the class (masks/matcher.h), and counting states (a string of
// at most 1000 letters) collapse to about `depth` classes instead of one per
// count. A grammar computes its classes only once it recurs (its 256th mask
// cache miss, CompiledGrammar::NoteCacheMiss): the refinement was half of a
// median MaskBench schema's compile (p50 2.07 -> 1.64 ms without it), and a
// fresh grammar's first masks do not measurably gain from it.
//
// The classes are those of Moore's refinement stopped after k rounds: round
// 0 splits dead / accepting / other; round r+1 splits states whose successors
// lie in different round-r classes. The textbook version recomputes every
// state's signature in every round, n * columns work per round for up to k
// rounds; merged JSON members are long literal chains that keep splitting
// for as many rounds as their length, so that was a third of a schema's
// compile. Here a round looks only at the states that can split: the
// predecessors of states whose class changed in the round before (but not
// a state alone in its class: such a class cannot split). A state
// none of whose successors changed class keeps its signature, so all such
// states of one class stay together, and the class keeps its id for them;
// each other signature among the class's re-examined states becomes a new
// class. Signatures are read off sparse rows (the live transitions only:
// the dead state is a class of its own for good), so a literal chain's state
// costs one pair, not one entry per byte class of the whole table; and rows
// are grouped by target ("fans"), so a JSON string body's state, re-examined
// round after round, hashes and compares a few fans rather than every
// column that loops back to it. The
// result is exactly Moore's after k rounds (tested against the textbook
// rounds on random tables and schema grammars), at a cost proportional to
// the splits.
//
// Tests: tests/masks/bounded_equivalence_test.cc (the lexer form through
// tests/masks/token_classes_test.cc).
#ifndef ZAPGRAM_MASKS_BOUNDED_EQUIVALENCE_H_
#define ZAPGRAM_MASKS_BOUNDED_EQUIVALENCE_H_

#include <cstdint>
#include <vector>

#include "parser/flat_grammar.h"

namespace zapgram::masks {

// Per eager state of `t`: the smallest state equivalent to it up to `depth`
// bytes.
std::vector<uint32_t> BoundedEquivalence(const parser::TerminalTable& t, uint32_t depth);

// The same over any automaton (`next[state * columns + column]`, state 0
// dead) whose round 0 is given: `initial[s]` is s's class before any byte
// is read (small numbers; state 0 alone in class 0). Token classes use it
// for the lexer (masks/token_classes.h), whose states differ by more than
// an accepting flag.
std::vector<uint32_t> BoundedEquivalence(const uint32_t* next, uint32_t columns,
                                         const std::vector<uint32_t>& initial, uint32_t depth);

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_BOUNDED_EQUIVALENCE_H_
