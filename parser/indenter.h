// Lark's Indenter post-lexer at byte level: the indentation state a lexed
// grammar's lane carries, and what one token end does to it.
//
// Lark (lark/indenter.py) runs the Indenter between its lexer and its
// parser. It keeps a stack of indentation levels (starting [0]) and a
// bracket depth. On the newline token (Python's _NL, whose text runs from a
// line's end over blank lines and comments to the next line's first
// character):
//  - inside brackets (depth > 0) the token is dropped;
//  - else it is passed on, and the indentation of the next line is counted
//    in the text after the token's last '\n': one per space, tab_len per
//    tab (every space and tab there, as Lark counts them: `str.count`). A
//    deeper indentation pushes a level and emits the indent token; a
//    shallower one pops levels, one dedent token each, and must land on a
//    level (else Lark's DedentError: here the lane dies). A token with no
//    '\n' at all makes Lark fail too (its rsplit finds no line): it dies.
// An open bracket token raises the depth after it is passed on, a close
// bracket lowers it (below 0 Lark's assertion fails: the lane dies). At the
// end of the input one dedent per level above 0 is emitted.
//
// Here the state is part of the lexer lane (parser/recognizer.h), so sets
// of different indentation never mix, and the canonical state (the mask
// cache's key), rollback and copies carry it like the lexer state. Its
// words: [count, depth, level_1, ..., level_k] (level 0 implicit, levels
// increasing). `count` is the indentation counted so far inside the open
// token since its last '\n' (kNoCount before any '\n'); it is kept only
// while the open token can still become the newline token at depth 0 (else
// it can never be read, and kNoCount keeps lanes and keys from splitting
// on it). Masks step the same words in lane views (Recognizer::
// StepLaneViews).
//
// Budget: ParserLimits::max_indent_levels levels on the stack; a deeper
// indentation is a kResourceExhausted status, never silently cut.
//
// Tests: tests/parser/indenter_test.cc (the rules above on small grammars
// and on SynCode's python.lark), tests/data/python_indenter_test.cc (the
// python traces: labels, masks by brute force), tests/data/
// lark_indenter_differential.py (against Debian's python3-lark).
#ifndef ZAPGRAM_PARSER_INDENTER_H_
#define ZAPGRAM_PARSER_INDENTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace zapgram::parser {

// The Indenter of a lexed grammar (LexerTable::indenter); off when `nl` is
// kNoIndentToken.
inline constexpr uint32_t kNoIndentToken = 0xFFFFFFFFu;
struct IndenterTable {
  uint32_t nl = kNoIndentToken;
  uint32_t indent = kNoIndentToken;  // may be kNoIndentToken when no rule uses it
  uint32_t dedent = kNoIndentToken;
  uint32_t tab_len = 8;
  std::vector<int8_t> bracket;  // per token: +1 opens, -1 closes, 0 neither (empty when off)
  bool on() const { return nl != kNoIndentToken; }
};

// Indentation state words (see above).
inline constexpr uint32_t kNoCount = 0xFFFFFFFFu;
inline constexpr uint32_t kIndentCount = 0, kIndentDepth = 1, kIndentLevels = 2;
// The state at the start of the input: [kNoCount, 0].
inline std::vector<uint32_t> InitialIndentState() { return {kNoCount, 0}; }
// How many levels above 0 the stack holds.
inline uint32_t IndentLevels(absl::Span<const uint32_t> state) {
  return state.empty() ? 0 : static_cast<uint32_t>(state.size() - kIndentLevels);
}

// The count after one more byte of the open token.
inline uint32_t StepIndentCount(const IndenterTable& t, uint32_t count, uint8_t byte) {
  if (byte == '\n') return 0;
  if (count == kNoCount) return count;
  const uint32_t add = byte == ' ' ? 1u : byte == '\t' ? t.tab_len : 0u;
  // Saturates far below kNoCount (an indentation of 2^30 columns is past
  // any budget of levels anyway).
  return count + add > (1u << 30) ? (1u << 30) : count + add;
}

// What the end of `token` does.
struct IndentEffect {
  enum Kind : uint8_t {
    kPassed,      // passed on, then `indents` indent tokens and `dedents` dedent tokens
    kDropped,     // the newline inside brackets: as if ignored
    kDead,        // Lark fails here (dedent between levels, no '\n', unmatched close)
    kOverBudget,  // more than max_levels levels
  };
  Kind kind = kPassed;
  uint32_t indents = 0;
  uint32_t dedents = 0;
};

// The end of `token`, whose count (StepIndentCount over its bytes) is
// `count`, in state `before`: writes the state after it (count reset) to
// `after`, unless kDead / kOverBudget.
IndentEffect IndentAfterToken(const IndenterTable& t, absl::Span<const uint32_t> before,
                              uint32_t token, uint32_t count, uint32_t max_levels,
                              std::vector<uint32_t>* after);

// The state of the lane going on after a byte (its open token not ended):
// `before` with the count `count`, kept only where it can still be read
// (see above); `nl_can_end_later` is LexerTable::CanContinue(state, nl).
void OpenIndentState(absl::Span<const uint32_t> before, uint32_t count, bool nl_can_end_later,
                     std::vector<uint32_t>* out);

// "indent count 4 depth 0 levels [4 8]" (count "-" for kNoCount).
std::string DumpIndentState(absl::Span<const uint32_t> state);

}  // namespace zapgram::parser

#endif  // ZAPGRAM_PARSER_INDENTER_H_
