// Budgets of the Earley engine. Every limit is explicit, with its default and
// its cost beside it; running out is reported as a status distinct from
// "input rejected" (kResourceExhausted, naming the limit and its value).
// docs/limits.md lists every budget of the engine (these and the readers',
// the JSON Schema converter's and the caches'), with defaults and costs.
#ifndef ZAPGRAM_LIMITS_H_
#define ZAPGRAM_LIMITS_H_

#include <cstddef>
#include <cstdint>

namespace zapgram {

struct ParserLimits {
  // Items created in one Earley set (one input byte). Guards against
  // pathological ambiguity; 12 bytes each.
  uint32_t max_items_per_set = 1u << 20;
  // Item attempts in one Earley set, duplicates included (each completion
  // step, prediction and scan): bounds the time of one byte, ~5-10 ns each.
  // An ambiguous grammar (`s ::= s s | "a" | ""`) makes O(n^2) attempts at
  // byte n with few distinct items; real grammars stay below ~10^4 (JSON,
  // Java, SQL, MaskBench: see docs/limits.md).
  uint64_t max_work_per_set = 1u << 18;
  // Items retained in the whole chart after a step (with pruning: proportional
  // to nesting depth; without: to input length). 12 bytes each.
  uint64_t max_total_items = 1ull << 27;
  // Earley sets retained after a step (with pruning this is the nesting depth
  // of the input; without, its length). 24 bytes each.
  uint32_t max_sets = 1u << 24;
  // Distinct lexer lanes (token in progress + pending guards) a lexed
  // grammar's recognizer may meet; each costs a few dozen bytes.
  uint32_t max_lanes = 1u << 20;
  // Levels on a Lark Indenter's indentation stack (parser/indenter.h; one
  // word per level in every lane that carries it). CPython's tokenizer
  // stops at 100.
  uint32_t max_indent_levels = 256;
};

struct RecognizerOptions {
  // ZapFormat compaction after every step. Off only for ablation and tests.
  bool pruning = true;
  // How many bytes Rollback() can undo while pruning is on (each costs one
  // snapshot of the pruned chart). Without pruning, any number can be undone.
  uint32_t max_rollback = 64;
  // A byte that only moves the terminals in progress along their automata
  // (every one stays alive and none can end there: the inside of a string,
  // a number, a run of whitespace) updates the newest Earley set in place
  // instead of building a new one, a few nanoseconds instead of a full
  // step. Verdicts, NextBytes, IsAccepting and item counts are the same;
  // the chart holds one set fewer per such run. Used with pruning, no
  // rollback (max_rollback = 0) and byte-level grammars only (else off);
  // `zapgram parse` turns it on.
  bool in_place_terminal_steps = false;
  // Bytes for a memo of transitions between the parser's canonical states
  // (parser/transition_memo.h), kept across Reset(): a recognizer that
  // validates many documents of one grammar takes each step it has taken
  // before from a state seen before in one table lookup. Same verdicts,
  // NextBytes, IsAccepting and item counts as without it. Used with pruning
  // and no rollback (max_rollback = 0), else ignored; 0 turns it off.
  // `zapgram parse` gives it 64 MiB per thread.
  size_t transition_memo_bytes = 0;
  ParserLimits limits;
};

struct CompileLimits {
  // States of all terminal automata together, those determinized ahead of
  // time and those a lazy automaton creates while parsing (running out then
  // is a kResourceExhausted status of the recognizer or matcher).
  uint32_t max_dfa_states = 1u << 20;
  // A regex terminal whose DFA has more states than this is not determinized
  // ahead of time but lazily, state by state as inputs reach them
  // (grammar/lazy_dfa.h): `(a|b)*a(a|b){20}` has ~2^21 DFA states, of which
  // an input visits at most one per byte. Eager states cost 1 KiB each while
  // compiling; lazy ones num_classes * 4 bytes, at run time.
  uint32_t max_eager_regex_states = 1u << 12;
  // Rules of the lowered grammar (after repetition expansion).
  uint32_t max_productions = 1u << 22;
  // Symbols of all right-hand sides together.
  uint64_t max_rhs_symbols = 1ull << 26;
  // Heap bytes of one form of the grammar on its way to the tables: the IR
  // as read (a JSON Schema's conversion checks it as it grows), then each
  // transform's output. A compile holds at most three such forms at once
  // (a pass's input, its output and a pass's scratch copy), so this and the
  // automata's budgets (max_dfa_states) bound the memory one compile can
  // take. A JSON Schema expands most: MaskBench's largest IR is ~40 MB
  // (an 8.9 KB schema whose combinators make 240k expressions); an object
  // of 8,000 optional array properties takes ~60 MB (~50 expressions of
  // ~150 bytes per property).
  size_t max_grammar_bytes = size_t{1} << 28;
  // States of a lexed (Lark) grammar's lexer automaton, the product of its
  // token automata; each costs num_classes * 4 bytes plus per-token bits.
  uint32_t max_lexer_states = 1u << 16;
};

// Budget-aware masks (Matcher::ComputeMask with tokens_left, masks/budget_mask.h):
// the searches that decide whether a token can still finish within the
// tokens left. Running out never allows a token that was not proven to
// finish; it masks it (conservative) and counts it as inexact.
struct BudgetMaskOptions {
  // Children evaluated by the exact token search, per mask (each one token
  // accepted, keyed, rolled back: ~2-20 us). The search runs only for tokens
  // whose bounds straddle the budget.
  uint64_t max_search_nodes = 1u << 14;
  // Of those, at most this many for one token of the mask: with a large
  // vocabulary a refutation needs the whole subtree, so a token whose witness
  // misses the budget is given up (masked) quickly rather than starving the
  // others.
  uint64_t max_search_nodes_per_token = 256;
  // Children evaluated by one byte search for a state's witness, each one
  // byte accepted, keyed, rolled back (~2-10 us): the breadth-first search
  // for the shortest completion, then, if it ran out, a best-first search
  // for any completion, each with this budget.
  uint64_t max_witness_nodes = 1u << 10;
  // Longest witness searched, in bytes (the matcher's rollback budget must
  // cover it plus the longest token).
  uint32_t max_witness_bytes = 256;
  // Distinct parser states whose bounds are remembered (a few hundred bytes
  // each); the memo is cleared when full.
  uint32_t max_memo_entries = 1u << 16;
  // Bytes of the per-state profiles: for each state a mask was asked at, the
  // bounds of its allowed tokens as a few masks (one per distinct bound,
  // mask_words() * 4 bytes each), so later masks of that state at any
  // budget are a few mask ORs. Cleared when full.
  size_t max_profile_bytes = size_t{64} << 20;
  // A state's first profile visits tokens of equal effect (they leave states
  // with equal futures) once; false visits every token (an ablation, and the
  // reference the grouping is tested against).
  bool group_equal_effects = true;
};

}  // namespace zapgram

#endif  // ZAPGRAM_LIMITS_H_
