// Regex compiler, stage 1: pattern -> syntax tree (grammar/regex_parser.h).
//
// Parse. One left-to-right scan. Open groups live on an explicit stack of
//     frames; a frame holds the alternatives seen so far, each a list of node
//     ids (an implicit concatenation), and the flags to restore at its `)`.
//     Character classes, escapes, `.` and literal characters are resolved on
//     the spot to one kind of leaf, a code-point class (case closure applied
//     under the i flag), so the tree has few node kinds: empty, class,
//     concat, alternation, repeat{min,max}, the two anchors, and the set
//     operations (?&:) and (?~:).
// Check anchors (CheckAnchors). A walk (explicit stack) with two bits per node, "nothing
//     can precede it" and "nothing can follow it"; ^ \A need the first and
//     $ \Z \z the second, then they match the empty string; elsewhere the
//     pattern is refused (their meaning would depend on the surrounding text).
//
// The escapes, classes, flags and quantifiers read, and what is refused
// with "regex /PATTERN/: <what> at offset N", are listed in
// grammar/regex_compiler.h. A counted repetition above
// RegexLimits::max_repeat is marked while reading and refused at the end,
// unless it repeats one class as an operand of (?&:...) (counted there,
// not unrolled; grammar/regex_emitter.cc).
//
// Tests: tests/grammar/regex_compiler_test.cc (LiteralsAndEscapes, Classes,
// ShorthandsFollowPython, Properties, GroupsAndAlternation, Quantifiers,
// CaseInsensitive, Verbose, Anchors, RefusedConstructsNameThemselves,
// MalformedPatterns; RegexDifferential against RE2).
#include "grammar/regex_parser.h"

#include <optional>

#include <unicode/uchar.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grammar/unicode_classes.h"
#include "grammar/utf8.h"

namespace zapgram::grammar::regex_internal {
namespace {

std::vector<CodepointRange> Complement(const std::vector<CodepointRange>& r) {
  return NormalizeRanges(r, true);
}

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
uint32_t HexValue(char c) {
  if (c >= '0' && c <= '9') return static_cast<uint32_t>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<uint32_t>(c - 'a' + 10);
  return static_cast<uint32_t>(c - 'A' + 10);
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsOctal(char c) { return c >= '0' && c <= '7'; }
bool IsAsciiAlnum(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Where the class opening at `open` ends (one past its ']'), read the way
// ParseClass reads it: a ']' first (after an optional '^') is a member, a
// backslash takes the next byte with it (no escape's tail holds a ']' or a
// backslash). npos when unterminated or when it holds \N{...} (a name is
// read up to its '}', wherever that is).
size_t ClassEnd(std::string_view p, size_t open) {
  size_t pos = open + 1;
  if (pos < p.size() && p[pos] == '^') ++pos;
  for (bool first = true; pos < p.size(); first = false) {
    if (p[pos] == ']' && !first) return pos + 1;
    if (p[pos] == '\\') {
      if (pos + 1 < p.size() && p[pos + 1] == 'N') return std::string_view::npos;
      pos += 2;
    } else {
      ++pos;
    }
  }
  return std::string_view::npos;
}

}  // namespace

void Parser::SkipVerbose() {
  if (!(flags_ & kRegexVerbose)) return;
  while (pos_ < p_.size()) {
    char c = p_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      ++pos_;
    } else if (c == '#') {
      while (pos_ < p_.size() && p_[pos_] != '\n') ++pos_;
    } else {
      break;
    }
  }
}

absl::StatusOr<uint32_t> Parser::ReadCodepoint() {
  DecodedCodepoint d = DecodeUtf8(p_.substr(pos_));
  if (d.length == 0) return Error(pos_, "invalid UTF-8 in the pattern");
  pos_ += d.length;
  return d.codepoint;
}

absl::StatusOr<std::vector<CodepointRange>> Parser::ParseProperty(size_t offset, bool negated) {
  // pos_ is after \p or \P.
  std::string_view name;
  if (pos_ < p_.size() && p_[pos_] == '{') {
    size_t close = p_.find('}', pos_);
    if (close == std::string_view::npos) return Error(offset, "unterminated \\p{...}");
    name = p_.substr(pos_ + 1, close - pos_ - 1);
    pos_ = close + 1;
  } else if (pos_ < p_.size() && IsAsciiAlnum(p_[pos_])) {
    name = p_.substr(pos_, 1);
    ++pos_;
  } else {
    return Error(offset, "\\p needs a property name");
  }
  if (!name.empty() && name[0] == '^') {  // \p{^L} is \P{L}
    negated = !negated;
    name.remove_prefix(1);
  }
  absl::StatusOr<std::vector<CodepointRange>> r = UnicodePropertyRanges(name);
  if (!r.ok()) return Error(offset, std::string(r.status().message()));
  // Under i the positive property is closed first, then complemented (RE2 and
  // the `regex` module agree: (?i)\P{Lu} excludes lowercase letters too).
  std::vector<CodepointRange> positive = Fold(*std::move(r));
  return negated ? Complement(positive) : positive;
}

absl::StatusOr<Parser::Escape> Parser::ParseEscape(bool in_class) {
  const size_t offset = pos_;  // at the backslash
  ++pos_;
  if (pos_ >= p_.size()) return Error(offset, "trailing backslash");
  char c = p_[pos_];
  Escape e;
  auto simple = [&](uint32_t cp) -> absl::StatusOr<Escape> {
    ++pos_;
    e.cp = cp;
    return e;
  };
  auto hex = [&](size_t count) -> absl::StatusOr<Escape> {
    // pos_ is at the letter (x, u, U).
    uint32_t v = 0;
    for (size_t k = 1; k <= count; ++k) {
      if (pos_ + k >= p_.size() || !IsHex(p_[pos_ + k])) {
        return Error(offset, absl::StrFormat("\\%c needs %d hex digits", c, count));
      }
      v = v * 16 + HexValue(p_[pos_ + k]);
    }
    pos_ += count + 1;
    if (v > kMaxCodepoint) return Error(offset, "code point above U+10FFFF");
    e.cp = v;
    return e;
  };
  auto braced = [&]() -> absl::StatusOr<Escape> {
    // pos_ is at the letter, pos_ + 1 at '{'.
    size_t close = p_.find('}', pos_ + 2);
    if (close == std::string_view::npos || close == pos_ + 2 || close - pos_ - 2 > 6) {
      return Error(offset, absl::StrFormat("malformed \\%c{...}", c));
    }
    uint32_t v = 0;
    for (size_t k = pos_ + 2; k < close; ++k) {
      if (!IsHex(p_[k])) return Error(offset, absl::StrFormat("malformed \\%c{...}", c));
      v = v * 16 + HexValue(p_[k]);
    }
    if (v > kMaxCodepoint) return Error(offset, "code point above U+10FFFF");
    pos_ = close + 1;
    e.cp = v;
    return e;
  };
  auto shorthand = [&](ShorthandClass k, bool negated) -> absl::StatusOr<Escape> {
    ++pos_;
    e.kind = Escape::kClass;
    const std::vector<CodepointRange>& r = ShorthandRanges(k, Dialect());
    e.ranges = negated ? Complement(r) : r;
    return e;
  };
  switch (c) {
    case 'a': return simple(0x07);
    case 'f': return simple(0x0C);
    case 'n': return simple(0x0A);
    case 'r': return simple(0x0D);
    case 't': return simple(0x09);
    case 'v': return simple(0x0B);
    case 'd': return shorthand(ShorthandClass::kDigit, false);
    case 'D': return shorthand(ShorthandClass::kDigit, true);
    case 'w': return shorthand(ShorthandClass::kWord, false);
    case 'W': return shorthand(ShorthandClass::kWord, true);
    case 's': return shorthand(ShorthandClass::kSpace, false);
    case 'S': return shorthand(ShorthandClass::kSpace, true);
    case 'x':
      if (pos_ + 1 < p_.size() && p_[pos_ + 1] == '{') return braced();  // \x{N..} (Perl, RE2)
      return hex(2);
    case 'U': return hex(8);
    case 'u':
      if (pos_ + 1 < p_.size() && p_[pos_ + 1] == '{') return braced();  // ECMA \u{N..}
      return hex(4);
    case 'N': {
      if (pos_ + 1 >= p_.size() || p_[pos_ + 1] != '{') return Error(offset, "\\N needs {NAME}");
      size_t close = p_.find('}', pos_ + 2);
      if (close == std::string_view::npos) return Error(offset, "unterminated \\N{...}");
      std::string name(p_.substr(pos_ + 2, close - pos_ - 2));
      UErrorCode ec = U_ZERO_ERROR;
      UChar32 cp = u_charFromName(U_UNICODE_CHAR_NAME, name.c_str(), &ec);
      if (U_FAILURE(ec) || cp < 0) {
        return Error(offset, absl::StrFormat("unknown character name '%s'", name));
      }
      pos_ = close + 1;
      e.cp = static_cast<uint32_t>(cp);
      return e;
    }
    case 'p':
    case 'P': {
      ++pos_;
      absl::StatusOr<std::vector<CodepointRange>> r = ParseProperty(offset, c == 'P');
      if (!r.ok()) return r.status();
      e.kind = Escape::kClass;
      e.ranges = *std::move(r);
      e.foldable = true;
      return e;
    }
    case 'b':
      if (in_class) return simple(0x08);  // Python: backspace inside a class
      return Error(offset, "word boundary \\b is not supported");
    case 'B':
      return Error(offset, "\\B (not a word boundary) is not supported");
    case 'G':
      return Error(offset, "\\G is not supported");
    case 'A':
    case 'Z':
    case 'z':
      if (in_class) return Error(offset, absl::StrFormat("anchor \\%c inside a class", c));
      ++pos_;
      e.kind = c == 'A' ? Escape::kStart : Escape::kEnd;
      return e;
    case 'k':
      return Error(offset, "backreference \\k<...> is not supported");
    default:
      break;
  }
  if (IsDigit(c)) {
    // Python: \0 and three octal digits are octal escapes; 1..99 are backreferences.
    size_t n = 0;
    uint32_t v = 0;
    while (n < 3 && pos_ + n < p_.size() && IsOctal(p_[pos_ + n])) {
      v = v * 8 + static_cast<uint32_t>(p_[pos_ + n] - '0');
      ++n;
    }
    if (c == '0' || n == 3 || (in_class && n > 0)) {
      if (c == '0' && n > 3) n = 3;
      pos_ += n;
      if (v > 0xFF && c != '0') return Error(offset, "octal escape above \\377");
      e.cp = v;
      return e;
    }
    if (in_class) return Error(offset, "bad escape inside a class");
    return Error(offset, "backreference is not supported");
  }
  if (IsAsciiAlnum(c)) return Error(offset, absl::StrFormat("unknown escape \\%c", c));
  absl::StatusOr<uint32_t> cp = ReadCodepoint();
  if (!cp.ok()) return cp.status();
  e.cp = *cp;
  return e;
}

absl::StatusOr<uint32_t> Parser::ParseClass() {
  // A class text read before under the same flags has the same code points
  // (a class reads nothing outside its brackets); one read here is kept only
  // when it ended where ClassEnd says.
  const size_t offset = pos_;
  const size_t end = pieces_ != nullptr ? ClassEnd(p_, offset) : std::string_view::npos;
  std::string key;
  if (end != std::string_view::npos) {
    key = absl::StrCat(flags_, "/", absl::string_view(p_.data() + offset, end - offset));
    if (auto it = pieces_->classes.find(key); it != pieces_->classes.end()) {
      pos_ = end;
      return AddClass(it->second, offset);
    }
  }
  absl::StatusOr<std::vector<CodepointRange>> ranges = ReadClass();
  if (!ranges.ok()) return ranges.status();
  if (end != std::string_view::npos && pos_ == end) pieces_->classes.emplace(std::move(key), *ranges);
  return AddClass(*std::move(ranges), offset);
}

absl::StatusOr<std::vector<CodepointRange>> Parser::ReadClass() {
  const size_t offset = pos_;
  ++pos_;  // '['
  bool negated = false;
  if (pos_ < p_.size() && p_[pos_] == '^') {
    negated = true;
    ++pos_;
  }
  std::vector<CodepointRange> foldable;  // characters, ranges, \p
  std::vector<CodepointRange> fixed;     // \d \w \s and their complements
  bool first = true;
  while (true) {
    if (pos_ >= p_.size()) return Error(offset, "unterminated character class");
    const size_t item = pos_;
    char c = p_[pos_];
    if (c == ']' && !first) {
      ++pos_;
      break;
    }
    first = false;
    if (c == '[' && pos_ + 1 < p_.size() &&
        (p_[pos_ + 1] == ':' || p_[pos_ + 1] == '=' || p_[pos_ + 1] == '.')) {
      return Error(item, "POSIX class syntax [: :] is not supported (dialects disagree on it)");
    }
    // One endpoint: a character or a class escape.
    auto endpoint = [&]() -> absl::StatusOr<Escape> {
      if (p_[pos_] == '\\') return ParseEscape(true);
      Escape e;
      absl::StatusOr<uint32_t> cp = ReadCodepoint();
      if (!cp.ok()) return cp.status();
      e.cp = *cp;
      return e;
    };
    absl::StatusOr<Escape> lo = endpoint();
    if (!lo.ok()) return lo.status();
    if (lo->kind == Escape::kClass) {
      auto& into = lo->foldable ? foldable : fixed;
      into.insert(into.end(), lo->ranges.begin(), lo->ranges.end());
      continue;
    }
    if (pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
      ++pos_;
      absl::StatusOr<Escape> hi = endpoint();
      if (!hi.ok()) return hi.status();
      if (hi->kind != Escape::kChar) return Error(item, "bad character range");
      if (hi->cp < lo->cp) return Error(item, "bad character range (reversed)");
      foldable.push_back({lo->cp, hi->cp});
      continue;
    }
    foldable.push_back({lo->cp, lo->cp});
  }
  std::vector<CodepointRange> set = Fold(std::move(foldable));
  set.insert(set.end(), fixed.begin(), fixed.end());
  return NormalizeRanges(std::move(set), negated);
}

absl::StatusOr<bool> Parser::ParseBraces(uint32_t* min, uint32_t* max) {
  size_t at = pos_ + 1;
  auto number = [&](uint32_t* out) -> bool {
    size_t begin = at;
    uint64_t v = 0;
    while (at < p_.size() && IsDigit(p_[at])) {
      v = std::min<uint64_t>(v * 10 + static_cast<uint64_t>(p_[at] - '0'), 1ull << 32);
      ++at;
    }
    *out = static_cast<uint32_t>(std::min<uint64_t>(v, kUnbounded));
    return at > begin;
  };
  uint32_t lo = 0, hi = 0;
  bool has_lo = number(&lo);
  if (at < p_.size() && p_[at] == '}') {
    if (!has_lo) return false;
    hi = lo;
  } else if (at < p_.size() && p_[at] == ',') {
    ++at;
    bool has_hi = number(&hi);
    if (at >= p_.size() || p_[at] != '}') return false;
    if (!has_lo) lo = 0;
    if (!has_hi) hi = kUnbounded;
  } else {
    return false;
  }
  const size_t offset = pos_;
  pos_ = at + 1;
  if (hi < lo) return Error(offset, "min repeat greater than max repeat");
  *min = lo;
  *max = hi;
  return true;
}

absl::Status Parser::ApplyQuantifier(size_t offset, uint32_t min, uint32_t max) {
  Frame& f = frames_.back();
  if (f.quantified) return Error(offset, "multiple repeat");
  if (!f.can_repeat) return Error(offset, "nothing to repeat");
  if (pos_ < p_.size() && p_[pos_] == '?') {
    ++pos_;  // lazy: same language
  } else if (pos_ < p_.size() && p_[pos_] == '+') {
    return Error(pos_, "possessive quantifier is not supported");
  }
  Node n;
  n.kind = NodeKind::kRepeat;
  n.children = {f.alts.back().back()};
  n.min = min;
  n.max = max;
  n.offset = static_cast<uint32_t>(offset);
  // Checked once the pattern is read: an operand of (?&:...) that repeats
  // one class is counted, not unrolled, and may go higher.
  n.over_limit = min > limits_.max_repeat || (max != kUnbounded && max > limits_.max_repeat);
  f.alts.back().back() = AddNode(std::move(n));
  f.can_repeat = false;
  f.quantified = true;
  return absl::OkStatus();
}

std::optional<size_t> Parser::VacuousLookbehind(size_t offset) const {
  // The group at `offset` is `(?<=c)` or `(?<!c)` with one literal
  // character c (itself or backslash-escaped punctuation); the pattern
  // character before it is a literal punctuation character that no
  // backslash escapes (so it is the match's previous byte wherever the
  // group is reached); neither is a letter (case-insensitive flags cannot
  // change them). Returns the offset past the group when the assertion
  // holds there.
  auto punctuation = [](char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    return u < 0x80 && u > 0x20 && !IsAsciiAlnum(c) && c != '_';
  };
  constexpr std::string_view kSpecial = ".^$*+?()[]{}|\\";
  if (offset == 0 || (offset >= 2 && p_[offset - 2] == '\\')) return std::nullopt;
  const char before = p_[offset - 1];
  if (!punctuation(before) || kSpecial.find(before) != std::string_view::npos) return std::nullopt;
  size_t at = offset + 4;  // past "(?<=" or "(?<!"
  if (at >= p_.size()) return std::nullopt;
  char c = p_[at];
  if (c == '\\') {
    if (at + 1 >= p_.size() || !punctuation(p_[at + 1])) return std::nullopt;
    c = p_[++at];
  } else if (kSpecial.find(c) != std::string_view::npos || !punctuation(c)) {
    return std::nullopt;
  }
  if (at + 1 >= p_.size() || p_[at + 1] != ')') return std::nullopt;
  const bool negative = p_[offset + 3] == '!';
  const bool holds = negative ? before != c : before == c;
  if (!holds) return std::nullopt;  // never holds: refused as any lookbehind
  return at + 2;
}

absl::Status Parser::ParseGroupOpen() {
  const size_t offset = pos_;
  ++pos_;  // '('
  Frame frame;
  frame.saved_flags = flags_;
  frame.offset = offset;
  auto starts = [&](std::string_view s) { return p_.substr(pos_, s.size()) == s; };
  if (pos_ < p_.size() && p_[pos_] == '?') {
    if (starts("?:")) {
      pos_ += 2;
    } else if (starts("?P<") || (starts("?<") && !starts("?<=") && !starts("?<!"))) {
      pos_ += starts("?P<") ? 3 : 2;
      size_t close = p_.find('>', pos_);
      if (close == std::string_view::npos || close == pos_) {
        return Error(offset, "malformed group name");
      }
      for (size_t k = pos_; k < close; ++k) {
        if (!IsAsciiAlnum(p_[k]) && p_[k] != '_' && static_cast<unsigned char>(p_[k]) < 0x80) {
          return Error(offset, "malformed group name");
        }
      }
      pos_ = close + 1;
    } else if (starts("?=") || starts("?!") || starts("?<=") || starts("?<!")) {
      const bool behind = starts("?<");
      const size_t length = behind ? 3 : 2;
      if (behind && !read_lookarounds_) {
        // A lookbehind of one character right after a literal character
        // (SynCode's LONG_STRING: `"""(?<!\\).*?"""`) tests a character of
        // the match itself: it always holds, and is read as the empty string.
        if (std::optional<size_t> end = VacuousLookbehind(offset)) {
          pos_ = *end;
          return absl::OkStatus();
        }
      }
      if (!read_lookarounds_) {
        return Error(offset, absl::StrFormat("%s (%s is not supported",
                                             behind ? "lookbehind" : "lookahead",
                                             p_.substr(pos_, length)));
      }
      frame.set_op = NodeKind::kLookaround;
      frame.behind = behind;
      frame.negative = p_[pos_ + length - 1] == '!';
      pos_ += length;
    } else if (starts("?P=")) {
      return Error(offset, "backreference (?P=name) is not supported");
    } else if (starts("?&:") || starts("?~:")) {
      frame.set_op = starts("?&:") ? NodeKind::kAnd : NodeKind::kNot;
      pos_ += 3;
    } else if (starts("?P>") || starts("?R") || starts("?&")) {
      return Error(offset, "recursive pattern is not supported");
    } else if (starts("?>")) {
      return Error(offset, "atomic group (?> is not supported");
    } else if (starts("?(")) {
      return Error(offset, "conditional group (?( is not supported");
    } else if (starts("?#")) {
      size_t close = p_.find(')', pos_);
      if (close == std::string_view::npos) return Error(offset, "unterminated comment");
      pos_ = close + 1;
      return absl::OkStatus();
    } else {
      // Flags: (?aimsux-imsx) or (?aimsux-imsx:...)
      ++pos_;
      uint32_t on = 0, off = 0;
      bool minus = false;
      while (pos_ < p_.size() && p_[pos_] != ')' && p_[pos_] != ':') {
        char c = p_[pos_];
        const uint32_t bit = RegexFlagForLetter(c);
        if (c == '-' && !minus) {
          minus = true;
        } else if (!minus && c == 'a') {
          on |= kAsciiFlag;
        } else if (!minus && c == 'u') {
          on &= ~kAsciiFlag;
        } else if (bit != 0) {
          (minus ? off : on) |= bit;
        } else {
          return Error(pos_, absl::StrFormat("unknown or unsupported group syntax or flag '%s'",
                                             p_.substr(pos_, 1)));
        }
        ++pos_;
      }
      if (pos_ >= p_.size()) return Error(offset, "missing ), unterminated group");
      if (p_[pos_] == ':') {  // (?flags:...): a group with its own flags
        ++pos_;
        flags_ = (flags_ | on) & ~off;
      } else {
        // (?flags): for the rest of the enclosing group.
        ++pos_;
        flags_ = (flags_ | on) & ~off;
        Frame& f = frames_.back();
        f.can_repeat = false;
        f.quantified = false;
        return absl::OkStatus();
      }
    }
  }
  if (frames_.size() > limits_.max_nesting) {  // frames_[0] is the pattern itself
    return Error(offset, absl::StrFormat("groups nested deeper than max_nesting = %d",
                                         limits_.max_nesting));
  }
  frames_.push_back(std::move(frame));
  return absl::OkStatus();
}

uint32_t Parser::CloseFrame(Frame& f, size_t offset) {
  std::vector<uint32_t> alts;
  for (std::vector<uint32_t>& seq : f.alts) {
    if (seq.size() == 1) {
      alts.push_back(seq[0]);
      continue;
    }
    Node n;
    n.kind = seq.empty() ? NodeKind::kEmpty : NodeKind::kConcat;
    n.children = std::move(seq);
    n.offset = static_cast<uint32_t>(offset);
    alts.push_back(AddNode(std::move(n)));
  }
  if (alts.size() == 1) return alts[0];
  Node n;
  n.kind = NodeKind::kAlt;
  n.children = std::move(alts);
  n.offset = static_cast<uint32_t>(offset);
  return AddNode(std::move(n));
}

uint32_t Parser::CloseSetOp(Frame& f, uint32_t flags) {
  Node op;
  op.kind = f.set_op;
  op.offset = static_cast<uint32_t>(f.offset);
  op.spelling = SpellingOf(flags);
  if (f.set_op == NodeKind::kNot) {
    op.children = {CloseFrame(f, f.offset)};
    return AddNode(std::move(op));
  }
  for (std::vector<uint32_t>& seq : f.alts) {
    Frame one;
    one.alts = {std::move(seq)};
    const uint32_t operand = CloseFrame(one, f.offset);
    Node& n = nodes_[operand];
    if (n.kind == NodeKind::kRepeat && nodes_[n.children[0]].kind == NodeKind::kClass) {
      n.counted = true;
    }
    op.children.push_back(operand);
  }
  return AddNode(std::move(op));
}

absl::StatusOr<uint32_t> Parser::Parse() {
  frames_.emplace_back();
  frames_.back().saved_flags = flags_;
  while (true) {
    SkipVerbose();
    if (pos_ >= p_.size()) break;
    const size_t offset = pos_;
    char c = p_[pos_];
    switch (c) {
      case '(': {
        absl::Status st = ParseGroupOpen();
        if (!st.ok()) return st;
        break;
      }
      case ')': {
        if (frames_.size() == 1) return Error(offset, "unbalanced parenthesis");
        ++pos_;
        Frame f = std::move(frames_.back());
        frames_.pop_back();
        const uint32_t flags_inside = flags_;
        flags_ = f.saved_flags;
        if (f.set_op == NodeKind::kEmpty) {
          Atom(CloseFrame(f, f.offset));
        } else if (f.set_op == NodeKind::kLookaround) {
          Node n;
          n.kind = NodeKind::kLookaround;
          n.children = {CloseFrame(f, f.offset)};
          n.offset = static_cast<uint32_t>(f.offset);
          n.end = static_cast<uint32_t>(pos_);
          n.open_flags = f.saved_flags;
          n.behind = f.behind;
          n.negative = f.negative;
          Atom(AddNode(std::move(n)));
          frames_.back().can_repeat = false;  // Python: nothing to repeat
        } else {
          const uint32_t op = CloseSetOp(f, flags_inside);
          nodes_[op].end = static_cast<uint32_t>(pos_);
          nodes_[op].open_flags = f.saved_flags;
          Atom(op);
        }
        break;
      }
      case '|': {
        ++pos_;
        Frame& f = frames_.back();
        f.alts.emplace_back();
        f.can_repeat = false;
        f.quantified = false;
        break;
      }
      case '*':
      case '+':
      case '?': {
        ++pos_;
        absl::Status st = ApplyQuantifier(offset, c == '+' ? 1 : 0, c == '?' ? 1 : kUnbounded);
        if (!st.ok()) return st;
        break;
      }
      case '{': {
        uint32_t min = 0, max = 0;
        absl::StatusOr<bool> q = ParseBraces(&min, &max);
        if (!q.ok()) return q.status();
        if (*q) {
          absl::Status st = ApplyQuantifier(offset, min, max);
          if (!st.ok()) return st;
        } else {
          ++pos_;
          Atom(AddClass(Fold({{'{', '{'}}), offset));
        }
        break;
      }
      case '[': {
        absl::StatusOr<uint32_t> n = ParseClass();
        if (!n.ok()) return n.status();
        Atom(*n);
        break;
      }
      case '.': {
        ++pos_;
        std::vector<CodepointRange> r = {{0, kMaxCodepoint}};
        if (!(flags_ & kRegexDotAll)) r = {{0, 0x09}, {0x0B, kMaxCodepoint}};
        Atom(AddClass(std::move(r), offset));
        break;
      }
      case '^':
      case '$': {
        ++pos_;
        Node n;
        n.kind = c == '^' ? NodeKind::kStart : NodeKind::kEnd;
        n.offset = static_cast<uint32_t>(offset);
        n.open_flags = flags_;
        Atom(AddNode(std::move(n)));
        frames_.back().can_repeat = false;
        break;
      }
      case '\\': {
        absl::StatusOr<Escape> e = ParseEscape(false);
        if (!e.ok()) return e.status();
        if (e->kind == Escape::kStart || e->kind == Escape::kEnd) {
          Node n;
          n.kind = e->kind == Escape::kStart ? NodeKind::kStart : NodeKind::kEnd;
          n.offset = static_cast<uint32_t>(offset);
          n.open_flags = flags_;
          n.absolute = true;
          Atom(AddNode(std::move(n)));
          frames_.back().can_repeat = false;
        } else if (e->kind == Escape::kClass) {
          Atom(AddClass(std::move(e->ranges), offset));
        } else {
          Atom(AddClass(Fold({{e->cp, e->cp}}), offset));
        }
        break;
      }
      default: {
        absl::StatusOr<uint32_t> cp = ReadCodepoint();
        if (!cp.ok()) return cp.status();
        Atom(AddClass(Fold({{*cp, *cp}}), offset));
        break;
      }
    }
  }
  if (frames_.size() > 1) return Error(frames_.back().offset, "missing ), unterminated group");
  for (const Node& n : nodes_) {
    if (n.over_limit && !n.counted) {
      return Error(n.offset, absl::StrFormat("repetition count above max_repeat = %d",
                                             limits_.max_repeat));
    }
  }
  Frame root = std::move(frames_.back());
  frames_.clear();
  return CloseFrame(root, 0);
}

absl::Status Parser::CheckAnchors(uint32_t root) const {
  struct Task {
    uint32_t node;
    bool first, last;  // nothing can precede / follow it in a match
  };
  std::vector<Task> stack = {{root, true, true}};
  auto is_blank = [&](uint32_t id, NodeKind anchor) {
    return nodes_[id].kind == NodeKind::kEmpty || nodes_[id].kind == anchor;
  };
  while (!stack.empty()) {
    Task t = stack.back();
    stack.pop_back();
    const Node& n = nodes_[t.node];
    switch (n.kind) {
      case NodeKind::kStart:
        if (!t.first) {
          return Error(n.offset,
                       "anchor ^ or \\A is only supported where nothing can precede it");
        }
        break;
      case NodeKind::kEnd:
        if (!t.last) {
          return Error(n.offset,
                       "anchor $, \\Z or \\z is only supported where nothing can follow it");
        }
        break;
      case NodeKind::kAlt:
      case NodeKind::kAnd:
      case NodeKind::kNot:
        for (uint32_t c : n.children) stack.push_back({c, t.first, t.last});
        break;
      case NodeKind::kRepeat: {
        bool once = n.max <= 1;
        stack.push_back({n.children[0], t.first && once, t.last && once});
        break;
      }
      case NodeKind::kConcat: {
        const size_t k = n.children.size();
        std::vector<uint8_t> last(k, 0);
        bool tail_blank = t.last;
        for (size_t i = k; i-- > 0;) {
          last[i] = tail_blank;
          tail_blank = tail_blank && is_blank(n.children[i], NodeKind::kEnd);
        }
        bool head_blank = t.first;
        for (size_t i = 0; i < k; ++i) {
          stack.push_back({n.children[i], head_blank, last[i] != 0});
          head_blank = head_blank && is_blank(n.children[i], NodeKind::kStart);
        }
        break;
      }
      default:
        break;
    }
  }
  return absl::OkStatus();
}

}  // namespace zapgram::grammar::regex_internal
