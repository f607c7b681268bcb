// The byte-level BPE split regex, run by hand (see pretokenize.h).
#include "masks/pretokenize.h"

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "grammar/utf8.h"
#include "unicode/uchar.h"

namespace zapgram::masks {
namespace {

// Llama 3's expression; Qwen 2.5's has \p{N} in place of \p{N}{1,3}.
constexpr std::string_view kDigitsPlaceholder = "@DIGITS@";
constexpr std::string_view kSplitTemplate =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|@DIGITS@| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr uint32_t kEnd = 0xFFFFFFFFu;      // "past the text"
constexpr uint32_t kInvalid = 0xFFFFFFFEu;  // an invalid UTF-8 byte

bool IcuLetter(uint32_t c) { return c <= 0x10FFFF && (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_L_MASK) != 0; }
bool IcuNumber(uint32_t c) { return c <= 0x10FFFF && (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_N_MASK) != 0; }
// ECMAScript's \s (the traces' tokenizer): White_Space without U+0085, with U+FEFF.
bool IcuSpace(uint32_t c) {
  return c == 0xFEFF || (c <= 0x10FFFF && c != 0x85 && u_isUWhiteSpace(static_cast<UChar32>(c)));
}

// The three classes of each ASCII character, taken from ICU once: most text
// is ASCII, and ICU's lookups are calls into the library.
enum AsciiClass : uint8_t { kAsciiLetter = 1, kAsciiNumber = 2, kAsciiSpace = 4 };
const uint8_t* AsciiClasses() {
  static const auto* table = [] {
    auto* bits = new uint8_t[128];
    for (uint32_t c = 0; c < 128; ++c) {
      bits[c] = (IcuLetter(c) ? kAsciiLetter : 0) | (IcuNumber(c) ? kAsciiNumber : 0) | (IcuSpace(c) ? kAsciiSpace : 0);
    }
    return bits;
  }();
  return table;
}

bool IsLetter(uint32_t c) { return c < 128 ? (AsciiClasses()[c] & kAsciiLetter) != 0 : IcuLetter(c); }
bool IsNumber(uint32_t c) { return c < 128 ? (AsciiClasses()[c] & kAsciiNumber) != 0 : IcuNumber(c); }
bool IsSpace(uint32_t c) { return c < 128 ? (AsciiClasses()[c] & kAsciiSpace) != 0 : IcuSpace(c); }
bool IsNewline(uint32_t c) { return c == '\r' || c == '\n'; }
// [^\s\p{L}\p{N}]
bool IsOther(uint32_t c) { return c != kEnd && !IsSpace(c) && !IsLetter(c) && !IsNumber(c); }

// The letter (?i) folds `c` to, among those A1 names; 0 for any other.
char FoldContractionLetter(uint32_t c) {
  if (c == 0x017F) return 's';  // LATIN SMALL LETTER LONG S folds to 's'
  if (c >= 'A' && c <= 'Z') c += 'a' - 'A';
  switch (c) {
    case 's': case 't': case 'r': case 'e': case 'v': case 'm': case 'l': case 'd':
      return static_cast<char>(c);
    default:
      return 0;
  }
}

// One match attempt over code points; At() records a read past the end.
class SplitMatcher {
 public:
  SplitMatcher(const std::vector<uint32_t>& cps, int max_digits) : cps_(cps), max_digits_(max_digits) {}

  bool read_end() const { return read_end_; }

  // End of the match that starts at i (< size).
  size_t MatchAt(size_t i) {
    const uint32_t c = At(i);
    if (c == '\'') {  // A1
      const char second = FoldContractionLetter(At(i + 1));
      if (second == 's' || second == 't' || second == 'm' || second == 'd') return i + 2;
      if (second == 'r' || second == 'v') {
        if (FoldContractionLetter(At(i + 2)) == 'e') return i + 3;
      } else if (second == 'l') {
        if (FoldContractionLetter(At(i + 2)) == 'l') return i + 3;
      }
    }
    if (IsLetter(c)) return LetterRunEnd(i + 1);  // A2 without its prefix
    if (!IsNumber(c) && !IsNewline(c) && IsLetter(At(i + 1))) return LetterRunEnd(i + 2);  // A2
    if (IsNumber(c)) {  // A3
      size_t j = i + 1;
      while (static_cast<int>(j - i) < max_digits_ && IsNumber(At(j))) ++j;
      return j;
    }
    size_t punct = kNone;  // A4: where [^\s\p{L}\p{N}]+ starts
    if (c == ' ') {
      if (IsOther(At(i + 1))) punct = i + 1;
    } else if (IsOther(c)) {
      punct = i;
    }
    if (punct != kNone) {
      size_t j = punct + 1;
      while (IsOther(At(j))) ++j;
      while (IsNewline(At(j))) ++j;
      return j;
    }
    // c is whitespace: A5, A6, A7 over the run [i, j).
    size_t j = i + 1;
    while (IsSpace(At(j))) ++j;
    for (size_t k = j; k > i; --k) {
      if (IsNewline(cps_[k - 1])) return k;  // A5: after the run's last newline
    }
    if (j == cps_.size()) return j;  // A6: nothing follows the run
    if (j - i >= 2) return j - 1;    // A6: all but the last before the non-space
    return j;                        // A7
  }

 private:
  static constexpr size_t kNone = SIZE_MAX;

  uint32_t At(size_t k) {
    if (k >= cps_.size()) {
      read_end_ = true;
      return kEnd;
    }
    return cps_[k];
  }
  size_t LetterRunEnd(size_t j) {
    while (IsLetter(At(j))) ++j;
    return j;
  }

  const std::vector<uint32_t>& cps_;
  const int max_digits_;
  bool read_end_ = false;
};

}  // namespace

absl::StatusOr<SplitRegex> RecognizeSplitRegex(std::string_view pattern) {
  const size_t at = kSplitTemplate.find(kDigitsPlaceholder);
  const std::string_view head = kSplitTemplate.substr(0, at);
  const std::string_view tail = kSplitTemplate.substr(at + kDigitsPlaceholder.size());
  if (pattern.size() > head.size() + tail.size() && pattern.substr(0, head.size()) == head &&
      pattern.substr(pattern.size() - tail.size()) == tail) {
    const std::string_view digits = pattern.substr(head.size(), pattern.size() - head.size() - tail.size());
    if (digits == R"(\p{N}{1,3})") return SplitRegex{3};
    if (digits == R"(\p{N})") return SplitRegex{1};
  }
  return absl::UnimplementedError(absl::StrCat("pre-tokenizer regex not supported for canonical tokenization: ",
                                               absl::string_view(pattern.data(), pattern.size())));
}

PreTokenized PreTokenize(const SplitRegex& regex, std::string_view text) {
  std::vector<uint32_t> cps;
  std::vector<size_t> offsets;  // byte offset of each code point, then text.size()
  cps.reserve(text.size());
  offsets.reserve(text.size() + 1);
  for (size_t pos = 0; pos < text.size();) {
    offsets.push_back(pos);
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      cps.push_back(static_cast<uint8_t>(text[pos++]));
      continue;
    }
    const grammar::DecodedCodepoint decoded = grammar::DecodeUtf8(text.substr(pos));
    cps.push_back(decoded.length == 0 ? kInvalid : decoded.codepoint);
    pos += decoded.length == 0 ? 1 : decoded.length;
  }
  offsets.push_back(text.size());
  PreTokenized out;
  bool stable = true;
  for (size_t i = 0; i < cps.size();) {
    SplitMatcher matcher(cps, regex.max_digits);
    const size_t end = matcher.MatchAt(i);
    stable = stable && !matcher.read_end();
    if (stable) ++out.stable;
    out.ends.push_back(offsets[end]);
    i = end;
  }
  return out;
}

}  // namespace zapgram::masks
