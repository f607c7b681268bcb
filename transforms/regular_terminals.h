// Regular parts of a grammar become single regex terminals.
//
// A rule is regular when it is not recursive and refers only to regular
// rules; an expression is regular when everything it refers to is. The
// largest regular expressions of the non-regular rules (a JSON string or
// number, the whitespace between tokens, a run of adjacent regular items in a
// sequence) are written as one regex (grammar/regex_render.h) and replaced by
// a kRegex node, which the lowering compiles into one byte DFA.
//
// Why: an Earley item sitting on one DFA terminal scans a whole string or
// number with one state per byte and no predictions or completions in
// between, and token masks can answer from per-(terminal, DFA state) token
// sets (masks/) instead of walking the parser through every byte.
//
// A merge is kept only when its automaton determinizes within
// `max_dfa_states` (else its parts are tried separately), so the pass never
// fails on size. The automaton is built from the expressions themselves
// (grammar/expression_nfa.h: regex leaves as their minimal DFAs, no text
// parsed), not from the regex text, which is only written for the output.
// Each node's regex text is written at most once and each expression (a rule
// reference counts as its rule's body) compiled at most once; a node whose
// text is too long fails everything containing it without more writing, so
// the pass stays near-linear on large finite automata written as rules (the
// JSON Schema multipleOf rules of transforms/json_schema_numbers.cc).
// Lexed grammars (tokens, Lark) are returned unchanged: their terminals are
// already tokens. Language-preserving (tests/transforms/regular_terminals_test.cc).
#ifndef ZAPGRAM_TRANSFORMS_REGULAR_TERMINALS_H_
#define ZAPGRAM_TRANSFORMS_REGULAR_TERMINALS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "grammar/grammar.h"
#include "grammar/expression_nfa.h"
#include "grammar/regex_compiler.h"

namespace zapgram::transforms {

// How large a merge may be. Smaller caps compile faster but cost masks:
// with 256 states and 2 KiB (measured on every 5th MaskBench schema, Llama
// 3, CPU clock) compile p90 fell from 16.4 to ~10 ms and first mask p99
// from 145 to ~60-70 ms, but mask time over the trace rose 17%, and 2-7x on
// schemas whose large enums or arrays of enums stop being one DFA (their
// masks inside a name, hits at ~1 us as one terminal, became ~200 us
// parser walks over every alternative). A choice-only exception did not
// recover it. Kept at the old caps until the merge decides by something
// cheaper than determinizing its candidates (issue 30).
struct RegularTerminalOptions {
  size_t max_regex_bytes = size_t{1} << 16;  // rendered regex length
  uint32_t max_dfa_states = 4096;            // DFA states of one merged terminal
  // Where the compiled candidates go, for the lowering to reuse (it asks for
  // the same patterns with the same limits); null = a private cache.
  grammar::RegexDfaCache* dfa_cache = nullptr;
  // The lazy tier: with `lazy_nfas` set, a candidate whose NFA (built from
  // its expressions) has more than `lazy_above_nfa_states` states is merged
  // without being determinized: its NFA goes to `lazy_nfas` and the
  // lowering determinizes it on demand (grammar/lazy_dfa.h), so the merge
  // never tries and drops large candidates and the compile builds no
  // automaton the input never visits. Smaller candidates (a string, a
  // number, an enum of a few names) are determinized as without the tier:
  // their minimal DFAs are shared across grammars.
  grammar::LazyRegexNfas* lazy_nfas = nullptr;
  uint32_t lazy_above_nfa_states = 256;
};

struct RegularTerminalStats {
  uint64_t merged = 0;     // expressions replaced by one regex
  uint64_t too_large = 0;  // regular expressions left alone (regex or DFA too large)
  uint64_t nodes_rendered = 0;  // expression nodes written as regex text
  uint64_t compiles = 0;        // regexes compiled to a DFA
  uint64_t lazy = 0;            // merged without a DFA (the lazy tier)
};

absl::StatusOr<grammar::Grammar> MergeRegularTerminals(const grammar::Grammar& g,
                                                       RegularTerminalStats* stats = nullptr,
                                                       const RegularTerminalOptions& options = {});

}  // namespace zapgram::transforms

#endif  // ZAPGRAM_TRANSFORMS_REGULAR_TERMINALS_H_
