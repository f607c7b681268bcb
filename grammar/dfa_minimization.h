// DFA minimization by partition refinement over transitions (Valmari and
// Lehtinen, "Efficient minimization of DFAs with partial transition
// functions", STACS 2008; Valmari, "Fast brief practical DFA minimization",
// IPL 2012).
//
// Hopcroft's algorithm splits blocks by (block, symbol) pairs and visits
// every state of the splitter block for the symbol, whether or not it has a
// predecessor on it: O(k * n log n) for k symbols. Our DFAs are sparse: the
// long literal chains of merged JSON members have one live transition per
// state and send every other byte class to the dead state. Here the dead
// state and the transitions into it are left out (a partial DFA), and the
// live transitions are refined too, into "cords": transitions with one
// label whose targets lie in one block. Each new block (the smaller half of
// a split) splits the cords of the transitions entering it, and each cord
// splits the blocks by the sources of its transitions. Every transition and
// state is visited O(log n) times: O(n + m log m) for m live transitions,
// independent of the number of byte classes.
//
// Textbook names: blocks are the states' equivalence classes; the initial
// cords (one per label) stand for the splitter "every live state on a",
// which tells a state whose a-transition is live from one whose a-transition
// dies; with it, one of the accepting and non-accepting blocks need not be
// a splitter (a partition stable under a set and under its part is stable
// under the rest), and the dead state's block never is.
//
// The result is the coarsest partition refining {dead}, accepting, other
// states, as Moore's rounds over all 256 bytes find it, numbered with the
// dead state's block 0, the start's 1, the rest in order of their smallest
// state. Tests: RegexDifferential.MinimizationAgreesWithTextbookMoore,
// RegexDifferential.ClassFormMinimizationEqualsTheWidenedRoute,
// RegexCompilerTest.DfasAreMinimal.
#ifndef ZAPGRAM_GRAMMAR_DFA_MINIMIZATION_H_
#define ZAPGRAM_GRAMMAR_DFA_MINIMIZATION_H_

#include <cstdint>

#include "grammar/byte_automaton.h"

namespace zapgram::grammar {

// The minimal DFA of a DFA (state 0 dead, 1 start; states that cannot reach
// acceptance are not merged into the dead state, so pass a trimmed DFA for a
// minimal result). Past `max_work` steps (transition and state visits) it
// gives up and returns `dfa` unchanged (still correct, just not minimal).
ByteDfa MinimizeDfa(const ByteDfa& dfa, uint64_t max_work = uint64_t{1} << 28);
// The same from the class form (what determinization gives): the minimal
// DFA is widened to 256 columns only at the end, never the unminimized one.
ByteDfa MinimizeDfa(const ClassDfa& dfa, uint64_t max_work = uint64_t{1} << 28);
// The same minimal DFA kept in `dfa`'s byte classes (MinimizeDfa(dfa) is its
// Widen()), for callers that read it by class (the grammar lowering): no
// 256-column rows at all.
ClassDfa MinimizeDfaToClasses(const ClassDfa& dfa, uint64_t max_work = uint64_t{1} << 28);

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_DFA_MINIMIZATION_H_
