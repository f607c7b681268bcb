// Lark reader, stage 1: the tokens of the grammar text.
//
// Lark's text has few kinds of token and needs no separate lexer pass: the
// parser (grammar/lark_parse.cc) looks at the next byte and calls one of the
// readers here, which consumes one token at pos_ and leaves pos_ just past
// it, or returns "SOURCE:LINE:COL: message". Blanks and comments (`//` and
// `#` to the end of the line) are skipped by SkipInlineFrom / SkipAllFrom
// (grammar/lark_reader_internal.h); a newline is itself meaningful, since
// Lark is line-oriented. Before anything is read, ValidateUtf8 checks the
// whole text and records the line starts that turn offsets into line:col.
//
// Strings are Python literals: escapes \n \r \t \f \v \a \b \0 \\ \" \' \xNN
// \uNNNN \UNNNNNNNN; other escapes keep their backslash (Python's rule).
// "x"i becomes a kRegex of the regex-escaped text with the i flag (its id is
// listed in LarkGrammar::istring_exprs so the lexing layer can still treat
// it as a string terminal). Regexes /.../ are kept verbatim (the regex
// compiler reads Python syntax, `\/` included); flags i m s x map to
// RegexFlags, u is a no-op, l is refused. "a".."z" is a kCharClass of the
// code points between two one-code-point strings.
//
// Tests: tests/grammar/lark_reader_test.cc (LarkReaderTest.Errors and the
// dumps of strings, ranges and regex flags in RulesFlagsPrioritiesAliases).
#include "grammar/lark_reader_internal.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grammar/utf8.h"

namespace zapgram::grammar::lark_internal {
namespace {

// Regex text matching exactly `bytes` (for "x"i strings).
std::string RegexEscape(std::string_view bytes) {
  std::string out;
  for (char ch : bytes) {
    const auto b = static_cast<unsigned char>(ch);
    if (b >= 0x80 || (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')) {
      out.push_back(ch);
    } else if (b > 0x20 && b < 0x7F) {
      out.push_back('\\');
      out.push_back(ch);
    } else {
      out += absl::StrFormat("\\x%02x", b);
    }
  }
  return out;
}

}  // namespace

absl::Status LarkReader::ValidateUtf8() {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size();) {
    const auto b = static_cast<unsigned char>(text_[i]);
    if (b == '\n') line_starts_.push_back(i + 1);
    if (b < 0x80) {
      ++i;
      continue;
    }
    const DecodedCodepoint d = DecodeUtf8(text_.substr(i));
    if (d.length == 0) return ErrorAt(i, "invalid UTF-8");
    i += d.length;
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> LarkReader::ReadNumber() {
  if (!IsDigit(At(pos_))) return ErrorAt(pos_, absl::StrCat("expected a number, found ", Describe(pos_)));
  uint64_t value = 0;
  const size_t start = pos_;
  while (IsDigit(At(pos_))) {
    value = value * 10 + static_cast<uint64_t>(At(pos_) - '0');
    if (value > options_.max_repeat_bound) {
      return ErrorAt(start, absl::StrFormat("number exceeds the limit %d", options_.max_repeat_bound));
    }
    ++pos_;
  }
  return static_cast<uint32_t>(value);
}

// At '"'. Returns the decoded bytes; pos_ just past the closing quote.
absl::StatusOr<std::string> LarkReader::ReadString() {
  const size_t open = pos_++;
  std::string bytes;
  while (true) {
    if (pos_ >= text_.size() || text_[pos_] == '\n') {
      return ErrorAt(open, "unterminated string: expected '\"' before the end of the line");
    }
    const char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      return bytes;
    }
    if (c != '\\') {
      bytes.push_back(c);
      ++pos_;
      continue;
    }
    const size_t esc = pos_;
    const char e = At(pos_ + 1);
    pos_ += 2;
    switch (e) {
      case 'n': bytes.push_back('\n'); break;
      case 'r': bytes.push_back('\r'); break;
      case 't': bytes.push_back('\t'); break;
      case 'f': bytes.push_back('\f'); break;
      case 'v': bytes.push_back('\v'); break;
      case 'a': bytes.push_back('\a'); break;
      case 'b': bytes.push_back('\b'); break;
      case '0': bytes.push_back('\0'); break;
      case '\\': bytes.push_back('\\'); break;
      case '"': bytes.push_back('"'); break;
      case '\'': bytes.push_back('\''); break;
      case 'x':
      case 'u':
      case 'U': {
        const int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (int i = 0; i < digits; ++i) {
          const int h = HexValue(At(pos_));
          if (h < 0) {
            return ErrorAt(pos_, absl::StrFormat("expected %d hex digits after '\\%c'", digits, e));
          }
          cp = cp * 16 + static_cast<uint32_t>(h);
          ++pos_;
        }
        if (cp > kMaxCodepoint || (cp >= 0xD800 && cp <= 0xDFFF)) {
          return ErrorAt(esc, "escape is not a Unicode scalar value");
        }
        AppendUtf8(cp, &bytes);
        break;
      }
      case '\n':
      case '\0':
        return ErrorAt(open, "unterminated string: expected '\"' before the end of the line");
      default:  // Python keeps unknown escapes verbatim
        bytes.push_back('\\');
        pos_ = esc + 1;
        break;
    }
  }
}

// At '"': a literal, "x"i, or a range "a".."z".
absl::StatusOr<ExprId> LarkReader::ReadStringItem() {
  const size_t start = pos_;
  const SourceLocation loc = LocationOf(start);
  auto first = ReadString();
  if (!first.ok()) return first.status();
  if (At(pos_) == 'i' && !IsNameChar(At(pos_ + 1))) {
    ++pos_;
    if (first->empty()) return out_.arena.AddEmpty(loc);
    const ExprId id = AddRegex(RegexEscape(*first), kRegexIgnoreCase, loc);
    istrings_.insert(id);
    return id;
  }
  const size_t after = SkipInlineFrom(pos_);
  if (At(after) == '.' && At(after + 1) == '.') {
    pos_ = SkipInlineFrom(after + 2);
    if (At(pos_) != '"') return ErrorAt(pos_, absl::StrCat("expected a string after '..', found ", Describe(pos_)));
    const size_t second_offset = pos_;
    auto second = ReadString();
    if (!second.ok()) return second.status();
    const DecodedCodepoint lo = DecodeUtf8(*first);
    const DecodedCodepoint hi = DecodeUtf8(*second);
    if (first->empty() || lo.length != first->size()) {
      return ErrorAt(start, "a range bound must be exactly one character");
    }
    if (second->empty() || hi.length != second->size()) {
      return ErrorAt(second_offset, "a range bound must be exactly one character");
    }
    if (lo.codepoint > hi.codepoint) return ErrorAt(start, "range bounds are reversed");
    return out_.arena.AddCharClass({{lo.codepoint, hi.codepoint}}, false, loc);
  }
  return out_.arena.AddLiteral(std::move(*first), loc);
}

// At '/' (not "//"): /pattern/flags.
absl::StatusOr<ExprId> LarkReader::ReadRegexItem() {
  const size_t open = pos_++;
  const SourceLocation loc = LocationOf(open);
  const size_t start = pos_;
  while (true) {
    if (pos_ >= text_.size() || text_[pos_] == '\n') {
      return ErrorAt(open, "unterminated regex: expected '/' before the end of the line");
    }
    if (text_[pos_] == '\\') {
      if (At(pos_ + 1) == '\n' || pos_ + 1 >= text_.size()) {
        return ErrorAt(open, "unterminated regex: expected '/' before the end of the line");
      }
      pos_ += 2;
      continue;
    }
    if (text_[pos_] == '/') break;
    ++pos_;
  }
  std::string pattern(text_.substr(start, pos_ - start));
  ++pos_;
  uint32_t flags = 0;
  while (IsNameChar(At(pos_))) {
    // Python's flags: zapgram's own J and E are not Lark's.
    const char c = At(pos_);
    const uint32_t bit = RegexFlagForLetter(c);
    if (bit != 0 && (bit & (kRegexJsonString | kRegexJsonAnySpelling)) == 0) {
      flags |= bit;
    } else if (c == 'l') {
      return ErrorAt(pos_, "regex flag 'l' (LOCALE) is not supported: its meaning depends on the "
                           "machine's locale and Python refuses it for str patterns");
    } else if (c != 'u') {  // u (Unicode): already the meaning of a Python 3 str pattern
      return ErrorAt(pos_, absl::StrFormat("unknown regex flag '%c' (expected i, m, s, x or u)", c));
    }
    ++pos_;
  }
  return AddRegex(std::move(pattern), flags, loc);
}

// After an opening bracket: `name (, name)* close`, on one line.
absl::StatusOr<std::vector<std::pair<std::string_view, size_t>>> LarkReader::ReadNameList(char close,
                                                                                         std::string_view what) {
  std::vector<std::pair<std::string_view, size_t>> names;
  while (true) {
    pos_ = SkipInlineFrom(pos_);
    const size_t offset = pos_;
    const std::string_view name = ReadName();
    if (name.empty()) return ErrorAt(offset, absl::StrFormat("expected %s, found %s", what, Describe(offset)));
    names.push_back({name, offset});
    pos_ = SkipInlineFrom(pos_);
    if (At(pos_) == ',') {
      ++pos_;
      continue;
    }
    if (At(pos_) == close) {
      ++pos_;
      return names;
    }
    return ErrorAt(pos_, absl::StrFormat("expected ',' or '%c', found %s", close, Describe(pos_)));
  }
}

absl::Status LarkReader::ExpectEndOfLine() {
  pos_ = SkipInlineFrom(pos_);
  if (!AtEnd() && At(pos_) != '\n') {
    return ErrorAt(pos_, absl::StrCat("expected end of line, found ", Describe(pos_)));
  }
  return absl::OkStatus();
}

}  // namespace zapgram::grammar::lark_internal
