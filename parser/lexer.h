// The lexer automaton of a lexed (Lark) grammar: which token the input
// starting at a token boundary turns into, at byte level.
//
// Lark's basic lexer (docs/lark-lexing.md) tries the terminals in a fixed
// order — priority, then longest possible width, then pattern length, then
// name — and the first whose regex matches at the current position wins,
// with that regex's own match length; a string terminal that some regex of
// the same priority matches in full (a keyword such as "return" against
// NAME) is not tried on its own: a match of the regex that equals the string
// is retyped to it. Ignored terminals are lexed like the others and dropped.
//
// At byte level this is a deterministic automaton over the bytes since the
// token's start. Its states are products of the tokens' DFAs, folded with
// `best`, the best rank of a terminal that has matched some nonempty prefix
// so far (a better-ranked terminal that matched a shorter prefix still wins,
// Lark's order is not longest-match across terminals). Per state it tells:
//  - `emit`: the token the lexer produces if the token ends here (the
//    best-ranked terminal accepting here, when nothing better-ranked matched a
//    shorter prefix, retyped to a keyword when one matches), or none;
//  - whether the choice is final: it is not while a terminal ranked as well
//    as the emitted one can still match a longer text (`min_rank_later`).
//    The parser then carries a *guard* (parser/recognizer.h): the state of
//    this automaton run on, killed when such a terminal accepts;
//  - which tokens a still-open token may turn into (`CanContinue`).
// A terminal's own match length is the longest for greedy patterns and the
// shortest for patterns with a lazy quantifier (`/\/\*.*?\*\//`): Python's
// backtracking order agrees with these on the grammars we read (a pattern
// like /a|ab/, where it picks a shorter alternative first, is the exception,
// documented in docs/lark-lexing.md).
//
// A terminal whose lookahead reads past its match (grammar/lark_patterns.h:
// python.lark's `"(?!"").*?"`, whose `""` must not be followed by `"`)
// comes with a *killer* token: the text that makes its lookahead fail. The
// killer rides in the product like a terminal but never ends a token; where
// it accepts, the tentative ends of its terminal from the same start die,
// through the guard that such an end carries (kill_rank, kill_later).
//
// Built eagerly, capped by CompileLimits::max_lexer_states.
//
// Tests: tests/parser/lexer_test.cc.
#ifndef ZAPGRAM_PARSER_LEXER_H_
#define ZAPGRAM_PARSER_LEXER_H_

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grammar/grammar.h"
#include "parser/indenter.h"
#include "zapgram/limits.h"

namespace zapgram::parser {

inline constexpr uint32_t kNoToken = 0xFFFFFFFFu;
inline constexpr uint32_t kNoRank = 0xFFFFFFFFu;

struct LexerTable {
  // Per token (indexes grammar::Grammar::tokens).
  std::vector<std::string> names;
  std::vector<uint32_t> rank;     // place in Lark's try order; kNoRank: only reached by retyping
  std::vector<uint8_t> ignored;
  std::vector<uint8_t> in_lexer;  // used by a rule or ignored, and matching some text
                                  // (Lark drops the others, or never produces them)

  // The automaton over byte classes. State 0 is dead, 1 the start (a token boundary).
  std::array<uint8_t, 256> byte_class{};
  uint32_t num_classes = 0;
  std::vector<uint32_t> next;  // [state * num_classes + class]

  // Per state.
  std::vector<uint32_t> emit;                // token if the token ends here, else kNoToken
  std::vector<uint32_t> emit_rank;           // rank of the terminal that matched (for the guard)
  std::vector<uint32_t> min_accepting_rank;  // best rank of a terminal accepting here
  std::vector<uint32_t> min_rank_later;      // best rank of one that can accept after more bytes
  std::vector<uint8_t> ignored_can_continue; // an ignored token may still end later
  uint32_t words_per_state = 0;
  std::vector<uint64_t> continue_bits;       // [state * words + t / 64]: token t may still end later

  // Lookahead killers (grammar::Token::lookahead_of): per state, the rank of
  // the terminal whose tentative end a killer accepting here refutes, and
  // the rank of the one a killer can still refute after more bytes
  // (kNoRank: none). Both empty when the grammar has no killer. A killer
  // never ends a token, never sets `best`, and has no rank of its own.
  std::vector<uint32_t> kill_rank;
  std::vector<uint32_t> kill_later;
  bool Kills(uint32_t state, uint32_t rank) const { return !kill_rank.empty() && kill_rank[state] == rank; }
  bool KillsLater(uint32_t state, uint32_t rank) const {
    return !kill_later.empty() && kill_later[state] == rank;
  }

  // Lark's Indenter, when the grammar runs one (parser/indenter.h). Its
  // indent and dedent tokens are not in the lexer; with it on, ' ', '\t'
  // and '\n' each have a byte class of their own (the indentation count
  // tells them apart where the token automata do not).
  IndenterTable indenter;

  uint32_t Step(uint32_t state, uint8_t byte) const {
    return next[static_cast<size_t>(state) * num_classes + byte_class[byte]];
  }
  bool CanContinue(uint32_t state, uint32_t token) const {
    return (continue_bits[static_cast<size_t>(state) * words_per_state + token / 64] >>
            (token % 64)) & 1;
  }
  // Whether a token emitted at `state` still needs a guard.
  bool NeedsGuard(uint32_t state) const {
    return min_rank_later[state] <= emit_rank[state] || KillsLater(state, emit_rank[state]);
  }
  // Whether a guard of rank `rank` that reached `state` fires (a terminal
  // ranked as well matched longer, or the emitted terminal's lookahead
  // failed), and whether it can still fire after more bytes.
  bool GuardFires(uint32_t state, uint32_t rank) const {
    return min_accepting_rank[state] <= rank || Kills(state, rank);
  }
  bool GuardPending(uint32_t state, uint32_t rank) const {
    return min_rank_later[state] <= rank || KillsLater(state, rank);
  }
  uint32_t num_states() const { return static_cast<uint32_t>(emit.size()); }
};

// A set of a lexed grammar's tokens: a bit per token, in
// LexerTable::words_per_state words (a lane's awaited tokens; the lexer's
// continue rows have the same layout, so filtering is a word-wise AND).
using TokenBits = std::vector<uint64_t>;
inline bool HasToken(const TokenBits& bits, uint32_t token) { return (bits[token / 64] >> (token % 64)) & 1; }
inline void AddToken(TokenBits* bits, uint32_t token) { (*bits)[token / 64] |= uint64_t{1} << (token % 64); }
inline bool AnyToken(const TokenBits& bits) {
  for (uint64_t w : bits) {
    if (w != 0) return true;
  }
  return false;
}
// Calls f(token) for each token of `bits`, in increasing order.
template <typename F>
void ForEachToken(const TokenBits& bits, F f) {
  for (size_t w = 0; w < bits.size(); ++w) {
    for (uint64_t b = bits[w]; b != 0; b &= b - 1) f(static_cast<uint32_t>(64 * w + std::countr_zero(b)));
  }
}

// Steps a lane's guards ((lexer state, rank) pairs, parser/recognizer.h) by
// `byte`: false when one fires (a longer or better-ranked match, or the
// emitted terminal's lookahead failed: the token that left the guard did
// not end there, and the lane dies); else appends to
// `out` the pairs still pending (a guard that dies or can no longer reach an
// acceptance good enough is dropped).
inline bool StepGuards(const LexerTable& lexer, const uint32_t* guards, size_t size, uint8_t byte,
                       std::vector<uint32_t>* out) {
  for (size_t k = 0; k + 1 < size; k += 2) {
    const uint32_t guard = lexer.Step(guards[k], byte);
    const uint32_t rank = guards[k + 1];
    if (guard == 0) continue;  // no terminal can match longer: the guard holds
    if (lexer.GuardFires(guard, rank)) return false;
    if (!lexer.GuardPending(guard, rank)) continue;
    out->push_back(guard);
    out->push_back(rank);
  }
  return true;
}

// Adds the guard of a token emitted at lexer state `state` to sorted guard
// pairs, when the choice is not final (LexerTable::NeedsGuard); sorted
// insertion keeps lanes canonical.
inline void AddEmitGuard(const LexerTable& lexer, uint32_t state, std::vector<uint32_t>* guards) {
  if (!lexer.NeedsGuard(state)) return;
  const uint32_t rank = lexer.emit_rank[state];
  size_t at = 0;
  while (at < guards->size() &&
         ((*guards)[at] < state || ((*guards)[at] == state && (*guards)[at + 1] < rank))) {
    at += 2;
  }
  guards->insert(guards->begin() + static_cast<std::ptrdiff_t>(at), {state, rank});
}

// Builds the lexer of `g.tokens`. Errors name the token: a pattern the regex
// compiler refuses, a token that matches the empty string, too many states.
absl::StatusOr<std::shared_ptr<const LexerTable>> BuildLexer(const grammar::Grammar& g,
                                                             const CompileLimits& limits);

// Per state, for tests and `zapgram check`: "state 3: emit NAME (rank 2), guard".
std::string DumpLexer(const LexerTable& lexer);

}  // namespace zapgram::parser

#endif  // ZAPGRAM_PARSER_LEXER_H_
