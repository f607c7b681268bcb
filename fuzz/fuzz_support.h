// Shared by the libFuzzer targets in fuzz/ (one per input-reading stage,
// named after its source: gbnf_reader_fuzzer.cc fuzzes grammar/gbnf_reader.cc).
//
// A fuzz input for a grammar reader is `TEXT [\xff\xfe INPUT]`: the grammar
// text, then optionally bytes to run through a recognizer of the grammar it
// gives. \xff\xfe never occurs in UTF-8 text, so a real grammar file is a seed
// as it is. The readers must answer every text with a grammar or a clear
// status (never a crash, a hang, a leak or a sanitizer report), and a grammar
// that loads must keep the recognizer's invariants on any input
// (CheckRecognizer).
//
// Budgets: the targets compile with CompileLimits smaller than the defaults
// (FuzzLimits) so that one input costs milliseconds; a budget error is an
// answer like any other. Hangs are libFuzzer's -timeout, memory its
// -rss_limit_mb / -malloc_limit_mb (scripts/fuzz.sh sets them).
#ifndef ZAPGRAM_FUZZ_FUZZ_SUPPORT_H_
#define ZAPGRAM_FUZZ_FUZZ_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "zapgram/grammar.h"
#include "zapgram/limits.h"

namespace zapgram::fuzz {

// A broken invariant: print it and abort, which libFuzzer reports as a crash
// with the input that caused it.
#define ZAPGRAM_FUZZ_CHECK(cond)                                                       \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

struct SplitInput {
  std::string_view text;   // the grammar / schema / pattern
  std::string_view input;  // bytes for the recognizer (may be empty)
};

inline SplitInput Split(const uint8_t* data, size_t size) {
  std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t at = all.find("\xff\xfe");
  if (at == std::string_view::npos) return {all, {}};
  return {all.substr(0, at), all.substr(at + 2)};
}

inline CompileLimits FuzzLimits() {
  CompileLimits limits;
  limits.max_dfa_states = 1u << 14;
  limits.max_eager_regex_states = 1u << 10;
  limits.max_productions = 1u << 16;
  limits.max_rhs_symbols = 1u << 20;
  limits.max_lexer_states = 1u << 12;
  return limits;
}

inline RecognizerOptions FuzzRecognizerOptions(bool pruning) {
  RecognizerOptions options;
  options.pruning = pruning;
  options.limits.max_items_per_set = 1u << 16;
  options.limits.max_total_items = 1u << 20;
  return options;
}

// Feeds `input` to a recognizer of `grammar` and checks what a recognizer
// promises: a byte is accepted exactly when NextBytes() had it; a rejected
// byte leaves the state unchanged; Rollback(1) after an accepted byte gives
// back the same NextBytes() and accepting flag; the pruned and the unpruned
// recognizer agree byte by byte (pruning is language-preserving); so does a
// recognizer with a transition memo (parser/transition_memo.h, a budget
// small enough to clear), on the input and on a second pass over it, which
// the memo serves from what the first recorded.
inline void CheckRecognizer(const Grammar& grammar, std::string_view input) {
  Recognizer pruned(grammar, FuzzRecognizerOptions(true));
  Recognizer plain(grammar, FuzzRecognizerOptions(false));
  RecognizerOptions memo_options = FuzzRecognizerOptions(true);
  memo_options.max_rollback = 0;
  memo_options.transition_memo_bytes = 16 << 10;
  Recognizer memo(grammar, memo_options);
  size_t taken = 0;  // bytes the first pass accepted
  bool stopped = false;
  for (const char c : input) {
    const uint8_t byte = static_cast<uint8_t>(c);
    const std::bitset<256> next = pruned.NextBytes();
    const bool accepting = pruned.IsAccepting();
    ZAPGRAM_FUZZ_CHECK(next == plain.NextBytes());
    ZAPGRAM_FUZZ_CHECK(accepting == plain.IsAccepting());
    ZAPGRAM_FUZZ_CHECK(next.any() == pruned.CanContinue());
    ZAPGRAM_FUZZ_CHECK(next == memo.NextBytes());
    ZAPGRAM_FUZZ_CHECK(accepting == memo.IsAccepting());
    ZAPGRAM_FUZZ_CHECK(pruned.RetainedItems() == memo.RetainedItems());
    const bool fed = pruned.Feed(byte);
    if (!pruned.status().ok()) return;  // a budget ran out: a status, not a verdict
    const bool fed_plain = plain.Feed(byte);
    if (!plain.status().ok()) return;
    const bool fed_memo = memo.Feed(byte);
    if (!memo.status().ok()) return;
    ZAPGRAM_FUZZ_CHECK(fed == fed_plain);
    ZAPGRAM_FUZZ_CHECK(fed == fed_memo);
    ZAPGRAM_FUZZ_CHECK(fed == next.test(byte));
    if (!fed) {
      ZAPGRAM_FUZZ_CHECK(pruned.NextBytes() == next);
      ZAPGRAM_FUZZ_CHECK(memo.NextBytes() == next);
      stopped = true;
      break;
    }
    ++taken;
    // Rollback of the plain recognizer restores the state before the byte.
    ZAPGRAM_FUZZ_CHECK(plain.Rollback(1));
    ZAPGRAM_FUZZ_CHECK(plain.NextBytes() == next);
    ZAPGRAM_FUZZ_CHECK(plain.IsAccepting() == accepting);
    ZAPGRAM_FUZZ_CHECK(plain.Feed(byte));
  }
  const bool accepting_at_end = pruned.IsAccepting();
  memo.Reset();
  const size_t again = memo.FeedBytes(input);
  if (!memo.status().ok()) return;
  ZAPGRAM_FUZZ_CHECK(again == taken);
  if (!stopped) ZAPGRAM_FUZZ_CHECK(memo.IsAccepting() == accepting_at_end);
}

// The grammar text of a fuzz input loaded with `format`; then the
// recognizer's invariants on its input part.
inline void FuzzGrammarText(GrammarFormat format, const uint8_t* data, size_t size,
                            const SchemaOptions& schema = {}) {
  const SplitInput in = Split(data, size);
  LoadOptions options;
  options.limits = FuzzLimits();
  options.schema = schema;
  absl::StatusOr<Grammar> grammar = Grammar::FromText(format, in.text, options, "<fuzz>");
  if (!grammar.ok()) {
    ZAPGRAM_FUZZ_CHECK(!grammar.status().message().empty());
    return;
  }
  CheckRecognizer(*grammar, in.input);
}

}  // namespace zapgram::fuzz

#endif  // ZAPGRAM_FUZZ_FUZZ_SUPPORT_H_
