// UTF-8: encoding, decoding, and the split of a code-point range into byte-range sequences.
//
// The split is what lowers a character class to a byte automaton: the code
// points [lo, hi] are cut at encoding-length boundaries and then wherever a
// sub-range would not cover whole blocks of continuation bytes, until every
// piece is a sequence of independent byte ranges ([E0][A0-BF][80-BF] ...).
// The idea is the classic one used by RE2 and Rust's regex-syntax; this
// version walks an explicit stack of pending ranges.
//
// Tests: tests/grammar/utf8_test.cc (exhaustive over all code points).
#ifndef ZAPGRAM_GRAMMAR_UTF8_H_
#define ZAPGRAM_GRAMMAR_UTF8_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zapgram::grammar {

struct ByteRange {
  uint8_t lo;
  uint8_t hi;
  friend bool operator==(const ByteRange&, const ByteRange&) = default;
};

// Appends the UTF-8 encoding of `cp` (<= 0x10FFFF, not a surrogate).
void AppendUtf8(uint32_t cp, std::string* out);

struct DecodedCodepoint {
  uint32_t codepoint;
  uint32_t length;  // 0 when the bytes do not start with a valid encoding
};
// Decodes the code point at the start of `s`. Rejects overlong forms,
// surrogates, values above 0x10FFFF and truncated sequences (length 0).
DecodedCodepoint DecodeUtf8(std::string_view s);

// Well-formed UTF-8 read a byte at a time: the phase of a reader within a
// character. Phase 0 is a boundary; 1, 2, 3 continuation bytes (80-BF) are
// still due; 4..7 await the second byte of an E0, ED, F0 or F4 sequence,
// whose range is narrower (no overlong forms, surrogates or values above
// 0x10FFFF: exactly what DecodeUtf8 accepts). kUtf8Invalid: `byte` cannot
// come next.
inline constexpr uint8_t kUtf8Invalid = 0xFF;
uint8_t Utf8Step(uint8_t phase, uint8_t byte);

// Byte-range sequences whose union matches exactly the UTF-8 encodings of
// the code points in [lo, hi]. Surrogates inside the range are skipped.
std::vector<std::vector<ByteRange>> Utf8Sequences(uint32_t lo, uint32_t hi);

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_UTF8_H_
