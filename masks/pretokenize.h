// Pre-tokenization: the regex split a byte-level BPE tokenizer runs before
// its merges, and which of its pieces the text after the end could change.
//
// Hugging Face byte-level BPE tokenizers (Llama 3, Qwen 2.5) cut the text
// into pieces with one regular expression (`pre_tokenizer` Split, behavior
// Isolated) and run BPE on each piece alone, so a token never crosses a piece
// boundary. The expression is matched leftmost-first (Oniguruma, a
// backtracking engine) from where the previous piece ended:
//
//   A1 (?i:'s|'t|'re|'ve|'m|'ll|'d)   contractions
//   A2 [^\r\n\p{L}\p{N}]?\p{L}+        a word, with one leading non-letter
//   A3 \p{N}{1,k}                     a digit run (Llama 3: k = 3, Qwen: 1)
//   A4  ?[^\s\p{L}\p{N}]+[\r\n]*      punctuation, one leading space
//   A5 \s*[\r\n]+                     whitespace up to its last newline
//   A6 \s+(?!\S)                      whitespace but the last before a non-space
//   A7 \s+                            whitespace
//
// Rather than a general regex engine we recognize these two expressions by
// their text and run each alternative by hand, in order, with the
// backtracking the expression implies (A5 ends after the run's last newline;
// A6 gives back one character unless the run reaches the end). Every match
// exists (A2/A4 take any non-space, A5-A7 any space), so Isolated leaves no
// gaps.
//
// Stability. A piece is *stable* when the match that found it read no
// position at or past the end of the text: then the same match is found
// whatever follows, since a backtracking matcher's result depends only on
// the characters it reads. Reading the end (even to see that it is the end)
// makes a piece and every later one unstable. The fast-forward rule
// (masks/canonical_tokenizer.h) keeps only stable pieces of the forced text.
// The reads are the ones the alternatives need: a greedy run reads the
// character after it, A1 reads up to two characters after the quote, and
// the alternatives tried before the one that matched count too.
//
// Classes: \p{L} and \p{N} are Unicode general categories L* and N*; \s is
// ECMAScript's: the White_Space property without U+0085 (NEL), plus U+FEFF.
// That is what the traces' tokenizer ids show (a NEL before `@example` is
// not a space there); Oniguruma, under Rust `tokenizers`, counts NEL as a
// space and U+FEFF not, so the two differ on texts with those characters.
// ICU's tables: a code point assigned after ICU's Unicode version may
// classify differently.
// (?i) folds case as Unicode does: 's' also matches U+017F (long s).
//
// Tests: tests/masks/canonical_tokenizer_test.cc (hand cases of each
// alternative and of stability; whole traces through the tokenizer).
#ifndef ZAPGRAM_MASKS_PRETOKENIZE_H_
#define ZAPGRAM_MASKS_PRETOKENIZE_H_

#include <cstddef>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace zapgram::masks {

struct SplitRegex {
  int max_digits = 3;  // k of A3
};

// The split regex of `pattern` (a tokenizer.json Split pattern's Regex
// text); kUnimplemented for an expression other than the two above.
absl::StatusOr<SplitRegex> RecognizeSplitRegex(std::string_view pattern);

struct PreTokenized {
  // Byte offset where each piece ends, in order (the last is text.size()).
  std::vector<size_t> ends;
  // How many leading pieces are stable (see the file comment).
  size_t stable = 0;
};

// Splits `text`, valid UTF-8 (precondition; an invalid byte is taken as one
// character of no class, i.e. punctuation).
PreTokenized PreTokenize(const SplitRegex& regex, std::string_view text);

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_PRETOKENIZE_H_
