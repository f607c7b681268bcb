// Regular expression -> syntax tree -> Thompson NFA on a ByteNfa -> DFA.
//
// The dialect and its refusals are listed in the header. Stages:
//
//  1. Parse. One left-to-right scan. Open groups live on an explicit stack of
//     frames; a frame holds the alternatives seen so far, each a list of node
//     ids (an implicit concatenation), and the flags to restore at its `)`.
//     Character classes, escapes, `.` and literal characters are resolved on
//     the spot to one kind of leaf, a code-point class (case closure applied
//     under the i flag), so the tree has few node kinds: empty, class,
//     concat, alternation, repeat{min,max}, the two anchors, and the set
//     operations (?&:) and (?~:).
//  2. Check anchors. A walk (explicit stack) with two bits per node, "nothing
//     can precede it" and "nothing can follow it"; ^ \A need the first and
//     $ \Z \z the second, then they match the empty string; elsewhere the
//     pattern is refused (their meaning would depend on the surrounding text).
//  3. Emit. Thompson's construction with an explicit stack of frames. A
//     fragment is entered at a given state and returns its end state, which
//     is always a fresh state with no outgoing edges; no construction ever
//     adds an edge into a fragment's entry, which is what makes it safe to
//     chain fragments through shared states. x{m,n} is unrolled into m copies
//     and n-m nested optional copies; x{m,} into m copies and a star.
//     Lazy quantifiers have the same language as greedy ones. Set
//     operations are built first, innermost first (BuildSetOperations: each
//     operand emitted alone, determinized, minimized, then combined by
//     grammar/dfa_set_ops.h), and stamped like classes wherever they occur.
//     With a RegexPieces (a RegexDfaCache holds one), the classes read,
//     the class fragments and the set operations are shared by every
//     pattern of a compilation, keyed by what decides them (a class's text
//     and flags; its ranges and spelling; a set operation's text, opening
//     flags and limits): the regular-terminal merge parses the same member
//     texts inside many candidates.
//  4. Determinize (grammar/byte_automaton.h) with the DFA state cap, kept in
//     byte classes, then minimize (grammar/dfa_minimization.h: partition
//     refinement over the live transitions). Minimizing matters: every
//     UTF-8 range sequence of a big class gets its own NFA states, so the
//     subset construction of \w+ yields ~830 states where ~40 suffice, and
//     every DFA state costs a 1 KiB row here and token sets in masks/.
//
// Tests: tests/grammar/regex_compiler_test.cc.
#include "grammar/regex_compiler.h"

#include <unicode/uchar.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grammar/dfa_set_ops.h"
#include "grammar/shared_regex_dfas.h"
#include "grammar/unicode_classes.h"
#include "grammar/utf8.h"

namespace zapgram::grammar {

// What a compilation's regexes share (see RegexPieces in the header).
struct RegexPieces {
  // A class as parsed: its code points, normalized, before any spelling.
  // Key: the parser's flags, then the class text from '[' to ']'.
  absl::flat_hash_map<std::string, std::vector<CodepointRange>> classes;
  struct Fragment {
    ByteNfa nfa;
    uint32_t end = 0;
  };
  // The NFA fragment of one code point of a class, stamped at each use.
  // Key: the spelling byte, then each range's lo and hi (native bytes).
  absl::node_hash_map<std::string, Fragment> class_fragments;
  // The DFA of each set operation that was built without error, in its
  // byte classes (stamped from them).
  // Key: the limits and the flags it was opened under, then its text.
  absl::node_hash_map<std::string, ClassDfa> set_ops;
  // What set operations complement within and counted operands start from
  // (all text spelled as the flags say), by the flags and the limits: one
  // automaton for every set operation of a compilation.
  absl::node_hash_map<std::string, absl::StatusOr<ClassDfa>> universes;  // minimal
};

namespace {

// Flag bits beyond RegexFlags, internal to the parser.
constexpr uint32_t kAsciiFlag = 1u << 16;  // (?a)
constexpr uint32_t kNone = 0xFFFFFFFFu;

// How a class's code points are spelled: as UTF-8 text, or inside a JSON
// string (J) in the canonical spelling or (J with E) in every spelling.
enum class JsonSpelling : uint8_t { kNone, kCanonical, kAny };

JsonSpelling SpellingOf(uint32_t flags) {
  if ((flags & kRegexJsonString) == 0) return JsonSpelling::kNone;
  return (flags & kRegexJsonAnySpelling) != 0 ? JsonSpelling::kAny : JsonSpelling::kCanonical;
}

uint32_t FlagsOf(JsonSpelling spelling) {
  switch (spelling) {
    case JsonSpelling::kNone:
      return 0;
    case JsonSpelling::kCanonical:
      return kRegexJsonString;
    case JsonSpelling::kAny:
      return kRegexJsonString | kRegexJsonAnySpelling;
  }
  return 0;
}

// kAnd and kNot are zapgram's set operations (?&:A|B) and (?~:A).
enum class NodeKind : uint8_t { kEmpty, kClass, kConcat, kAlt, kRepeat, kStart, kEnd, kAnd, kNot };

struct Node {
  NodeKind kind = NodeKind::kEmpty;
  std::vector<CodepointRange> ranges;  // kClass (normalized)
  std::vector<uint32_t> children;      // kConcat, kAlt (>= 2), kRepeat (1), kAnd (>= 1), kNot (1)
  uint32_t min = 0, max = 0;           // kRepeat
  uint32_t offset = 0;                 // in the pattern, for messages
  // kClass under kRegexJsonString: JSON-string spelling; kNot: the universe
  // it complements within is spelled so.
  JsonSpelling spelling = JsonSpelling::kNone;
  bool over_limit = false;  // kRepeat: a count above max_repeat
  bool counted = false;     // kRepeat of a class that is an operand of kAnd (no unrolling)
  // kAnd, kNot: the group's text is pattern[offset, end), read under
  // open_flags (which, with the limits, decide its automaton).
  uint32_t end = 0;
  uint32_t open_flags = 0;
};

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

class Parser {
 public:
  // `pieces` (may be null) lends and keeps parsed classes.
  Parser(std::string_view pattern, uint32_t flags, const RegexLimits& limits,
         RegexPieces* pieces = nullptr)
      : p_(pattern), flags_(flags), limits_(limits), pieces_(pieces) {}

  // Parses the whole pattern; returns the root node.
  absl::StatusOr<uint32_t> Parse();
  absl::Status CheckAnchors(uint32_t root) const;
  const std::vector<Node>& nodes() const { return nodes_; }
  std::string_view pattern() const { return p_; }

  absl::Status Error(size_t offset, std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrFormat("regex /%s/: %s at offset %d",
                                                      std::string(p_), std::string(what),
                                                      offset));
  }

 private:
  struct Frame {
    std::vector<std::vector<uint32_t>> alts = {{}};
    uint32_t saved_flags = 0;
    size_t offset = 0;       // of the '('
    bool can_repeat = false;  // the last thing in the current alternative is an atom
    bool quantified = false;  // the last thing is a quantified atom
    NodeKind set_op = NodeKind::kEmpty;  // kAnd for (?&:, kNot for (?~:
  };
  // What an escape denotes.
  struct Escape {
    enum Kind { kChar, kClass, kStart, kEnd } kind = kChar;
    uint32_t cp = 0;
    std::vector<CodepointRange> ranges;  // kClass, final (folding already decided)
    bool foldable = false;               // kClass: \p (folded under i), not \d \w \s
  };

  uint32_t AddNode(Node n) {
    nodes_.push_back(std::move(n));
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  uint32_t AddClass(std::vector<CodepointRange> ranges, size_t offset) {
    Node n;
    n.kind = NodeKind::kClass;
    n.ranges = std::move(ranges);
    n.offset = static_cast<uint32_t>(offset);
    n.spelling = SpellingOf(flags_);
    return AddNode(std::move(n));
  }
  bool IgnoreCase() const { return (flags_ & kRegexIgnoreCase) != 0; }
  bool Ascii() const { return (flags_ & kAsciiFlag) != 0; }
  std::vector<CodepointRange> Fold(std::vector<CodepointRange> r) const {
    r = NormalizeRanges(std::move(r), false);
    return IgnoreCase() ? CaseClosure(r, Ascii()) : r;
  }
  ShorthandDialect Dialect() const {
    return Ascii() ? ShorthandDialect::kPythonAscii : ShorthandDialect::kPython;
  }

  void Atom(uint32_t node) {
    Frame& f = frames_.back();
    f.alts.back().push_back(node);
    f.can_repeat = true;
    f.quantified = false;
  }
  uint32_t CloseFrame(Frame& f, size_t offset);
  // The node of a (?&:...) or (?~:...) group; `flags` are those inside it.
  uint32_t CloseSetOp(Frame& f, uint32_t flags);
  void SkipVerbose();
  absl::StatusOr<uint32_t> ReadCodepoint();  // a literal (UTF-8) character at pos_
  absl::StatusOr<Escape> ParseEscape(bool in_class);
  absl::StatusOr<std::vector<CodepointRange>> ParseProperty(size_t offset, bool negated);
  absl::StatusOr<uint32_t> ParseClass();
  absl::StatusOr<std::vector<CodepointRange>> ReadClass();  // ParseClass without the pieces
  absl::Status ParseGroupOpen();
  // At a '{': parses {m}, {m,}, {m,n}, {,n}, {,}; false (pos_ unchanged) when it is a literal.
  absl::StatusOr<bool> ParseBraces(uint32_t* min, uint32_t* max);
  absl::Status ApplyQuantifier(size_t offset, uint32_t min, uint32_t max);

  std::string_view p_;
  size_t pos_ = 0;
  uint32_t flags_;
  const RegexLimits& limits_;
  RegexPieces* pieces_;
  std::vector<Node> nodes_;
  std::vector<Frame> frames_;
};

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
    } else if (starts("?=") || starts("?!")) {
      return Error(offset, absl::StrFormat("lookahead (%s is not supported", p_.substr(pos_, 2)));
    } else if (starts("?<=") || starts("?<!")) {
      return Error(offset,
                   absl::StrFormat("lookbehind (%s is not supported", p_.substr(pos_, 3)));
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
        uint32_t bit = c == 'i'   ? uint32_t{kRegexIgnoreCase}
                       : c == 's' ? uint32_t{kRegexDotAll}
                       : c == 'm' ? uint32_t{kRegexMultiline}
                       : c == 'x' ? uint32_t{kRegexVerbose}
                       : c == 'J' ? uint32_t{kRegexJsonString}
                       : c == 'E' ? uint32_t{kRegexJsonAnySpelling}
                       : 0u;
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

// Hex digits of the values lo..hi, `digits` of them, either case for a-f,
// from `from` to `end`. The values split on their leading digit: a value
// range inside one leading digit goes on with one digit fewer; leading
// digits whose whole tail is in range share one step per remaining digit.
// The work list holds at most 16 entries per digit level (4 levels).
void AddHexRange(ByteNfa& nfa, uint32_t from, uint32_t lo, uint32_t hi, int digits, uint32_t end) {
  auto add_digits = [&nfa](uint32_t at, uint32_t d_lo, uint32_t d_hi, uint32_t to) {
    if (d_lo <= 9) nfa.AddRange(at, static_cast<uint8_t>('0' + d_lo),
                                static_cast<uint8_t>('0' + std::min<uint32_t>(d_hi, 9)), to);
    if (d_hi >= 10) {
      const uint32_t a = std::max<uint32_t>(d_lo, 10) - 10, b = d_hi - 10;
      nfa.AddRange(at, static_cast<uint8_t>('a' + a), static_cast<uint8_t>('a' + b), to);
      nfa.AddRange(at, static_cast<uint8_t>('A' + a), static_cast<uint8_t>('A' + b), to);
    }
  };
  struct Task {
    uint32_t from, lo, hi;
    int digits;
  };
  std::vector<Task> work = {{from, lo, hi, digits}};
  while (!work.empty()) {
    const Task t = work.back();
    work.pop_back();
    if (t.digits == 0) {
      nfa.AddEpsilon(t.from, end);
      continue;
    }
    const int shift = 4 * (t.digits - 1);
    const uint32_t tail = (1u << shift) - 1;  // values of the remaining digits
    const uint32_t first = t.lo >> shift, last = t.hi >> shift;
    // Leading digits whose tails are complete: one class, then any digits.
    const int64_t full_lo = (t.lo & tail) == 0 ? first : int64_t{first} + 1;
    const int64_t full_hi = (t.hi & tail) == tail ? last : int64_t{last} - 1;
    if (full_lo <= full_hi) {
      uint32_t at = nfa.AddState();
      add_digits(t.from, static_cast<uint32_t>(full_lo), static_cast<uint32_t>(full_hi), at);
      for (int k = 1; k < t.digits; ++k) {
        const uint32_t next = nfa.AddState();
        add_digits(at, 0, 15, next);
        at = next;
      }
      nfa.AddEpsilon(at, end);
    }
    for (const uint32_t d : first == last ? std::vector<uint32_t>{first} : std::vector<uint32_t>{first, last}) {
      if (d >= full_lo && d <= full_hi) continue;  // done above
      const uint32_t at = nfa.AddState();
      add_digits(t.from, d, d, at);
      const uint32_t sub_lo = std::max(t.lo, d << shift) & tail;
      const uint32_t sub_hi = std::min(t.hi, (d << shift) | tail) & tail;
      work.push_back({at, sub_lo, sub_hi, t.digits - 1});
    }
  }
}

// One code point of `ranges` as it is spelled inside a JSON string literal.
// Canonical (kRegexJsonString): raw UTF-8, except `"` and `\` (\" and \\)
// and the controls U+0000..U+001F (\b \f \n \r \t, the others \u00XX in
// either hex case). This is the one spelling JSON serializers emit (Python
// json.dumps with ensure_ascii=False, JSON.stringify); other spellings of
// ordinary characters (\/, \u0041) are not matched. Any (with
// kRegexJsonAnySpelling): those plus \/ and \uXXXX for every code point
// (either hex case; a surrogate pair \uD8xx\uDCxx above U+FFFF), i.e. every
// spelling RFC 8259 section 7 allows. kNone: plain UTF-8.
uint32_t AddSpelledCodepoints(ByteNfa& nfa, uint32_t from, const std::vector<CodepointRange>& ranges,
                              JsonSpelling spelling) {
  if (spelling == JsonSpelling::kNone) return nfa.AddCodepoints(from, ranges);
  const bool any = spelling == JsonSpelling::kAny;
  std::vector<CodepointRange> raw;
  std::vector<uint32_t> escaped;  // code points that take an escape
  for (const CodepointRange& r : ranges) {
    uint32_t lo = r.lo;
    for (; lo <= r.hi && lo < 0x20; ++lo) escaped.push_back(lo);
    for (uint32_t special : {0x22u, 0x2Fu, 0x5Cu}) {
      if (special < lo || special > r.hi) continue;
      if (special == 0x2F && !any) continue;  // `/` is raw; \/ only in any spelling
      if (special != 0x2F) {
        if (lo < special) raw.push_back({lo, special - 1});
        lo = special + 1;
      }
      escaped.push_back(special);
    }
    if (lo <= r.hi) raw.push_back({lo, r.hi});
  }
  const uint32_t end = nfa.AddState();
  if (!raw.empty()) nfa.AddEpsilon(nfa.AddCodepoints(from, raw), end);
  constexpr std::string_view kHex = "0123456789abcdef";
  for (uint32_t c : escaped) {
    std::string_view short_form = c == 0x22   ? "\\\""
                                  : c == 0x5C ? "\\\\"
                                  : c == 0x2F ? "\\/"
                                  : c == 0x08 ? "\\b"
                                  : c == 0x0C ? "\\f"
                                  : c == 0x0A ? "\\n"
                                  : c == 0x0D ? "\\r"
                                  : c == 0x09 ? "\\t"
                                              : "";
    if (!short_form.empty()) {
      nfa.AddEpsilon(nfa.AddLiteral(from, short_form), end);
      if (!any) continue;
    }
    if (any) continue;  // \uXXXX of every code point below
    std::string prefix = "\\u00";
    prefix.push_back(kHex[c >> 4]);
    const uint32_t at = nfa.AddLiteral(from, prefix);
    const char digit = kHex[c & 0xF];
    nfa.AddRange(at, static_cast<uint8_t>(digit), static_cast<uint8_t>(digit), end);
    if (digit >= 'a') {
      const uint8_t upper = static_cast<uint8_t>(digit - 'a' + 'A');
      nfa.AddRange(at, upper, upper, end);
    }
  }
  if (!any) return end;
  // \uXXXX: the BMP code points outside the surrogates; \uHHHH\uLLLL: the rest.
  for (const CodepointRange& r : ranges) {
    for (const CodepointRange bmp : {CodepointRange{0, 0xD7FF}, CodepointRange{0xE000, 0xFFFF}}) {
      const uint32_t lo = std::max(r.lo, bmp.lo), hi = std::min(r.hi, bmp.hi);
      if (lo <= hi) AddHexRange(nfa, nfa.AddLiteral(from, "\\u"), lo, hi, 4, end);
    }
    if (r.hi < 0x10000) continue;
    // Offsets v = c - 0x10000 split into high (v >> 10) and low (v & 0x3FF)
    // halves: a partial first high, the complete highs between, a partial last.
    const uint32_t v_lo = std::max<uint32_t>(r.lo, 0x10000) - 0x10000, v_hi = r.hi - 0x10000;
    const uint32_t h_first = v_lo >> 10, h_last = v_hi >> 10;
    auto pair = [&](uint32_t h_lo, uint32_t h_hi, uint32_t l_lo, uint32_t l_hi) {
      const uint32_t mid = nfa.AddState();
      AddHexRange(nfa, nfa.AddLiteral(from, "\\u"), 0xD800 + h_lo, 0xD800 + h_hi, 4, mid);
      AddHexRange(nfa, nfa.AddLiteral(mid, "\\u"), 0xDC00 + l_lo, 0xDC00 + l_hi, 4, end);
    };
    if (h_first == h_last) {
      pair(h_first, h_first, v_lo & 0x3FF, v_hi & 0x3FF);
      continue;
    }
    pair(h_first, h_first, v_lo & 0x3FF, 0x3FF);
    if (h_first + 1 <= h_last - 1) pair(h_first + 1, h_last - 1, 0, 0x3FF);
    pair(h_last, h_last, 0, v_hi & 0x3FF);
  }
  return end;
}

// Per emission: the fragment of each class node (owned by `pieces`, shared
// by every node of equal ranges and spelling) and the minimal DFA of each
// set operation node.
struct EmitContext {
  explicit EmitContext(RegexPieces* shared) : pieces(shared != nullptr ? shared : &own) {}
  EmitContext(const EmitContext&) = delete;
  EmitContext& operator=(const EmitContext&) = delete;
  const RegexPieces::Fragment& ClassFragment(const Node& n) {
    std::string key(1 + n.ranges.size() * sizeof(CodepointRange), '\0');
    key[0] = static_cast<char>(n.spelling);
    if (!n.ranges.empty()) std::memcpy(&key[1], n.ranges.data(), n.ranges.size() * sizeof(CodepointRange));
    auto [it, fresh] = pieces->class_fragments.try_emplace(std::move(key));
    if (fresh) it->second.end = AddSpelledCodepoints(it->second.nfa, 0, n.ranges, n.spelling);
    return it->second;
  }
  RegexPieces own;
  RegexPieces* pieces;
  absl::flat_hash_map<uint32_t, const RegexPieces::Fragment*> class_fragments;  // by node
  absl::flat_hash_map<uint32_t, const ClassDfa*> set_op_dfas;  // owned by `pieces`
};

// Thompson construction, explicit stack (see the file comment). Set
// operation nodes must already be in ctx.set_op_dfas.
absl::StatusOr<uint32_t> EmitInto(const Parser& parser, uint32_t root, ByteNfa& nfa,
                                  uint32_t from, const RegexLimits& limits, EmitContext& ctx) {
  const std::vector<Node>& nodes = parser.nodes();
  struct Frame {
    uint32_t node, from, step, cur, end;
  };
  std::vector<Frame> stack = {{root, from, 0, from, kNone}};
  uint32_t ret = kNone;
  auto& class_fragments = ctx.class_fragments;
  auto push = [&](uint32_t node, uint32_t at) { stack.push_back({node, at, 0, at, kNone}); };
  while (!stack.empty()) {
    if (nfa.num_states() > limits.max_nfa_states) {
      return parser.Error(nodes[stack.back().node].offset,
                          absl::StrFormat("automaton exceeds max_nfa_states = %d",
                                          limits.max_nfa_states));
    }
    Frame& f = stack.back();
    const Node& n = nodes[f.node];
    switch (n.kind) {
      case NodeKind::kEmpty:
      case NodeKind::kStart:
      case NodeKind::kEnd:
        ret = nfa.AddState();
        nfa.AddEpsilon(f.from, ret);
        stack.pop_back();
        break;
      case NodeKind::kClass: {
        // Built once per distinct class as a fragment, then stamped at each use.
        auto [fragment, fresh] = class_fragments.try_emplace(f.node, nullptr);
        if (fresh) fragment->second = &ctx.ClassFragment(n);
        ret = nfa.Stamp(f.from, fragment->second->nfa, fragment->second->end);
        stack.pop_back();
        break;
      }
      case NodeKind::kAnd:
      case NodeKind::kNot:
        ret = StampDfa(nfa, f.from, *ctx.set_op_dfas.at(f.node));
        stack.pop_back();
        break;
      case NodeKind::kConcat: {
        if (f.step > 0) f.cur = ret;
        if (f.step == n.children.size()) {
          ret = f.cur;
          stack.pop_back();
          break;
        }
        uint32_t child = n.children[f.step++], at = f.cur;
        push(child, at);
        break;
      }
      case NodeKind::kAlt: {
        if (f.step == 0) f.end = nfa.AddState();
        if (f.step > 0) nfa.AddEpsilon(ret, f.end);
        if (f.step == n.children.size()) {
          ret = f.end;
          stack.pop_back();
          break;
        }
        uint32_t entry = nfa.AddState();
        nfa.AddEpsilon(f.from, entry);
        uint32_t child = n.children[f.step++];
        push(child, entry);
        break;
      }
      case NodeKind::kRepeat: {
        const uint32_t child = n.children[0];
        if (f.step > 0) f.cur = ret;
        if (f.step < n.min) {
          ++f.step;
          uint32_t at = f.cur;
          push(child, at);
          break;
        }
        if (n.max == kUnbounded) {
          if (f.step == n.min) {  // the loop: cur -> L, L -> body -> L, L -> out
            uint32_t loop = nfa.AddState();
            nfa.AddEpsilon(f.cur, loop);
            f.end = loop;
            ++f.step;
            push(child, loop);
            break;
          }
          nfa.AddEpsilon(f.cur, f.end);
          ret = nfa.AddState();
          nfa.AddEpsilon(f.end, ret);
          stack.pop_back();
          break;
        }
        if (f.end == kNone) f.end = nfa.AddState();
        nfa.AddEpsilon(f.cur, f.end);  // stop after this many copies
        if (f.step < n.max) {
          ++f.step;
          uint32_t at = f.cur;
          push(child, at);
          break;
        }
        ret = f.end;
        stack.pop_back();
        break;
      }
    }
  }
  if (nfa.num_states() > limits.max_nfa_states) {
    return parser.Error(0, absl::StrFormat("automaton exceeds max_nfa_states = %d",
                                           limits.max_nfa_states));
  }
  return ret;
}

// The minimal DFA of the sub-pattern at `node`, matched whole, in the
// classes it was determinized in.
absl::StatusOr<ClassDfa> OperandClassDfa(const Parser& parser, uint32_t node,
                                         const RegexLimits& limits, EmitContext& ctx) {
  ByteNfa nfa;
  absl::StatusOr<uint32_t> end = EmitInto(parser, node, nfa, 0, limits, ctx);
  if (!end.ok()) return end.status();
  nfa.SetAccepting(*end);
  absl::StatusOr<ClassDfa> dfa = DeterminizeToClasses(nfa, limits.max_dfa_states);
  if (!dfa.ok()) return dfa.status();
  return MinimizeDfaToClasses(*dfa);
}

// The same widened to bytes.
absl::StatusOr<ByteDfa> OperandDfa(const Parser& parser, uint32_t node, const RegexLimits& limits,
                                   EmitContext& ctx) {
  absl::StatusOr<ClassDfa> dfa = OperandClassDfa(parser, node, limits, ctx);
  if (!dfa.ok()) return dfa.status();
  return dfa->Widen();
}

// Exactly one code point of `ranges`, spelled raw or as in a JSON string.
absl::StatusOr<ByteDfa> OneCodepointDfa(const std::vector<CodepointRange>& ranges,
                                        JsonSpelling spelling) {
  ByteNfa nfa;
  nfa.SetAccepting(AddSpelledCodepoints(nfa, 0, ranges, spelling));
  absl::StatusOr<ClassDfa> dfa = DeterminizeToClasses(nfa, 1u << 16);
  if (!dfa.ok()) return dfa.status();
  return MinimizeDfa(*dfa);
}

// The DFA of every (?&:...) and (?~:...) node, innermost first: a node's
// operands have smaller ids than the node (the parser adds a node when it
// closes), so operands meet only set operations already built, and no call
// recurses.
absl::Status BuildSetOperations(const Parser& parser, const RegexLimits& limits,
                                EmitContext& ctx) {
  const std::vector<Node>& nodes = parser.nodes();
  for (uint32_t id = 0; id < nodes.size(); ++id) {
    const Node& n = nodes[id];
    if (n.kind != NodeKind::kAnd && n.kind != NodeKind::kNot) continue;
    // The same group text under the same flags and limits is the same
    // automaton (nested set operations included): built once per RegexPieces.
    std::string key = absl::StrCat(n.open_flags, "/", limits.max_nesting, "/", limits.max_repeat,
                                   "/", limits.max_nfa_states, "/", limits.max_dfa_states, "/");
    key.append(parser.pattern().substr(n.offset, n.end - n.offset));
    if (auto it = ctx.pieces->set_ops.find(key); it != ctx.pieces->set_ops.end()) {
      ctx.set_op_dfas.emplace(id, &it->second);
      continue;
    }
    auto fail = [&](const absl::Status& st) {
      return absl::Status(st.code(), parser.Error(n.offset, std::string(st.message())).message());
    };
    // All text in the node's spelling: what (?~:) complements within, and
    // what counted operands start from when no plain operand comes first.
    auto universe = [&]() -> const absl::StatusOr<ClassDfa>& {
      const uint32_t flags = FlagsOf(n.spelling);
      auto [it, fresh] = ctx.pieces->universes.try_emplace(
          absl::StrFormat("%d/%d/%d/%d/%d", flags, limits.max_nesting, limits.max_repeat,
                          limits.max_nfa_states, limits.max_dfa_states),
          absl::UnknownError("unset"));
      if (fresh) {
        it->second = DeterminizeRegexToClasses("[\\s\\S]*", flags, limits);
        if (it->second.ok()) it->second = MinimizeDfaToClasses(*it->second);
      }
      return it->second;
    };
    absl::StatusOr<ClassDfa> built = absl::UnknownError("unset");
    if (n.kind == NodeKind::kNot) {
      absl::StatusOr<ClassDfa> removed = OperandClassDfa(parser, n.children[0], limits, ctx);
      if (!removed.ok()) return fail(removed.status());
      const absl::StatusOr<ClassDfa>& all = universe();
      if (!all.ok()) return fail(all.status());
      built = SubtractDfa(*all, *removed, limits.max_dfa_states);
    } else {
      absl::StatusOr<ByteDfa> result;
      // Plain operands first (their product is usually small), counted
      // classes last.
      std::vector<uint32_t> order;
      for (uint32_t c : n.children) {
        if (!nodes[c].counted) order.push_back(c);
      }
      for (uint32_t c : n.children) {
        if (nodes[c].counted) order.push_back(c);
      }
      // The first plain operand replaces this placeholder.
      result = ByteDfa{};
      if (nodes[order[0]].counted) {
        const absl::StatusOr<ClassDfa>& all = universe();
        result = all.ok() ? absl::StatusOr<ByteDfa>(all->Widen()) : all.status();
      }
      for (size_t k = 0; k < order.size() && result.ok(); ++k) {
        const Node& operand = nodes[order[k]];
        if (operand.counted) {
          const Node& cls = nodes[operand.children[0]];
          absl::StatusOr<ByteDfa> one = OneCodepointDfa(cls.ranges, cls.spelling);
          if (!one.ok()) return fail(one.status());
          result = IntersectCounted(*result, *one, operand.min, operand.max,
                                    limits.max_dfa_states);
        } else {
          absl::StatusOr<ByteDfa> dfa = OperandDfa(parser, order[k], limits, ctx);
          if (!dfa.ok()) return fail(dfa.status());
          result = k == 0 ? *std::move(dfa)
                          : IntersectDfas(*result, *dfa, limits.max_dfa_states);
        }
        if (result.ok()) result = MinimizeDfa(*result);
      }
      built = result.ok() ? absl::StatusOr<ClassDfa>(ClassDfa::Narrow(*result)) : result.status();
    }
    if (!built.ok()) return fail(built.status());
    auto [it, inserted] = ctx.pieces->set_ops.emplace(std::move(key), *std::move(built));
    ctx.set_op_dfas.emplace(id, &it->second);
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> Emit(const Parser& parser, uint32_t root, ByteNfa& nfa, uint32_t from,
                              const RegexLimits& limits, RegexPieces* pieces) {
  EmitContext ctx(pieces);
  absl::Status st = BuildSetOperations(parser, limits, ctx);
  if (!st.ok()) return st;
  return EmitInto(parser, root, nfa, from, limits, ctx);
}

}  // namespace

absl::StatusOr<uint32_t> AddRegex(ByteNfa& nfa, uint32_t from, std::string_view pattern,
                                  uint32_t flags, const RegexLimits& limits, RegexPieces* pieces) {
  Parser parser(pattern, flags, limits, pieces);
  absl::StatusOr<uint32_t> root = parser.Parse();
  if (!root.ok()) return root.status();
  absl::Status st = parser.CheckAnchors(*root);
  if (!st.ok()) return st;
  return Emit(parser, *root, nfa, from, limits, pieces);
}

absl::StatusOr<uint32_t> AddRegex(ByteNfa& nfa, uint32_t from, std::string_view pattern,
                                  uint32_t flags, const RegexLimits& limits) {
  return AddRegex(nfa, from, pattern, flags, limits, nullptr);
}

absl::StatusOr<ClassDfa> DeterminizeRegexToClasses(std::string_view pattern, uint32_t flags,
                                                   const RegexLimits& limits) {
  return DeterminizeRegexToClasses(pattern, flags, limits, nullptr);
}

absl::StatusOr<ClassDfa> DeterminizeRegexToClasses(std::string_view pattern, uint32_t flags,
                                                   const RegexLimits& limits, RegexPieces* pieces) {
  ByteNfa nfa;
  absl::StatusOr<uint32_t> end = AddRegex(nfa, 0, pattern, flags, limits, pieces);
  if (!end.ok()) return end.status();
  nfa.SetAccepting(*end);
  absl::StatusOr<ClassDfa> dfa = DeterminizeToClasses(nfa, limits.max_dfa_states);
  if (!dfa.ok()) {
    return absl::Status(dfa.status().code(),
                        absl::StrFormat("regex /%s/: %s at offset 0", std::string(pattern),
                                        std::string(dfa.status().message())));
  }
  return dfa;
}

absl::StatusOr<ByteDfa> DeterminizeRegex(std::string_view pattern, uint32_t flags,
                                         const RegexLimits& limits) {
  absl::StatusOr<ClassDfa> dfa = DeterminizeRegexToClasses(pattern, flags, limits);
  if (!dfa.ok()) return dfa.status();
  return dfa->Widen();
}

absl::StatusOr<ByteDfa> CompileRegex(std::string_view pattern, uint32_t flags,
                                     const RegexLimits& limits) {
  absl::StatusOr<ClassDfa> dfa = DeterminizeRegexToClasses(pattern, flags, limits);
  if (!dfa.ok()) return dfa.status();
  return MinimizeDfa(*dfa);
}

bool MayHaveCountedBound(std::string_view pattern) {
  // A bound's digits follow '{' or ',' directly (Parser::ParseBraces).
  uint32_t value = 0;  // of the digit run ending here, clipped at the bound
  bool counts = false;  // that run could be a bound
  char before = 0;
  for (char c : pattern) {
    if (c >= '0' && c <= '9') {
      if (before < '0' || before > '9') counts = before == '{' || before == ',';
      value = std::min<uint32_t>(value * 10 + static_cast<uint32_t>(c - '0'), kCountedMinBound);
      if (counts && value >= kCountedMinBound) return true;
    } else {
      value = 0;
    }
    before = c;
  }
  return false;
}

absl::StatusOr<std::optional<CountedParts>> SplitCountedRegex(std::string_view pattern,
                                                              uint32_t flags,
                                                              const RegexLimits& limits) {
  if ((flags & kRegexJsonString) != 0) return std::nullopt;  // literals spelled otherwise
  // The counted group's bound is not unrolled, so max_repeat does not apply
  // to it; the unit's own counts are held to it below.
  RegexLimits outer = limits;
  outer.max_repeat = kUnbounded - 1;
  Parser parser(pattern, flags, outer);
  absl::StatusOr<uint32_t> root = parser.Parse();
  if (!root.ok()) return root.status();
  if (absl::Status st = parser.CheckAnchors(*root); !st.ok()) return st;
  const std::vector<Node>& nodes = parser.nodes();
  const Node& top = nodes[*root];
  if (top.kind != NodeKind::kConcat) return std::nullopt;
  CountedParts parts;
  bool have_repeat = false;
  uint32_t repeat = 0, unit = 0;  // the counted node and its operand
  for (uint32_t child : top.children) {
    const Node& n = nodes[child];
    if (n.kind == NodeKind::kClass && n.ranges.size() == 1 && n.ranges[0].lo == n.ranges[0].hi) {
      AppendUtf8(n.ranges[0].lo, have_repeat ? &parts.suffix : &parts.prefix);
    } else if (n.kind == NodeKind::kRepeat && !have_repeat && n.max != kUnbounded) {
      have_repeat = true;
      repeat = child;
      unit = n.children[0];
      parts.min = n.min;
      parts.max = n.max;
    } else {
      return std::nullopt;
    }
  }
  if (!have_repeat || parts.suffix.empty()) return std::nullopt;
  for (uint32_t id = 0; id < nodes.size(); ++id) {
    const Node& n = nodes[id];
    if (id != repeat && n.kind == NodeKind::kRepeat &&
        (n.min > limits.max_repeat || (n.max != kUnbounded && n.max > limits.max_repeat))) {
      return parser.Error(n.offset, absl::StrFormat("repetition count above max_repeat = %d",
                                                    limits.max_repeat));
    }
  }
  EmitContext ctx(nullptr);
  if (absl::Status st = BuildSetOperations(parser, limits, ctx); !st.ok()) return st;
  absl::StatusOr<ByteDfa> dfa = OperandDfa(parser, unit, limits, ctx);
  if (!dfa.ok()) return dfa.status();
  parts.unit = *std::move(dfa);
  return parts;
}

RegexDfaCache::RegexDfaCache() : pieces_(std::make_unique<RegexPieces>()) {}
RegexDfaCache::~RegexDfaCache() = default;
RegexDfaCache::RegexDfaCache(RegexDfaCache&&) noexcept = default;
RegexDfaCache& RegexDfaCache::operator=(RegexDfaCache&&) noexcept = default;

std::string RegexDfaCache::KeyOf(std::string_view pattern, uint32_t flags,
                                 const RegexLimits& limits) {
  // The state limit is not part of the key: a DFA built within a limit is
  // the same under any larger one, and a pattern that overflowed a limit
  // overflows every smaller one. Only a result that says nothing about the
  // asked limit is built again (and replaces the entry).
  std::string key = absl::StrCat(flags, "/", limits.max_nesting, "/", limits.max_repeat, "/",
                                 limits.max_nfa_states, "/");
  key.append(pattern);
  return key;
}

bool RegexDfaCache::Answers(const absl::StatusOr<ClassDfa>& built, uint32_t built_under, uint32_t asked) {
  if (!built.ok() && built.status().code() == absl::StatusCode::kResourceExhausted) return asked <= built_under;
  return !built.ok() || asked >= built_under;
}

RegexDfaCache::Entry& RegexDfaCache::Find(std::string_view pattern, uint32_t flags,
                                          const RegexLimits& limits,
                                          absl::FunctionRef<absl::StatusOr<ClassDfa>()>* build) {
  auto [it, inserted] = entries_.try_emplace(KeyOf(pattern, flags, limits));
  Entry& entry = it->second;
  if (!inserted && Answers(entry.determinized, entry.max_dfa_states, limits.max_dfa_states)) {
    ++hits_;
    return entry;
  }
  // An earlier grammar of the process may have built it (shared_regex_dfas.h).
  // `build` may ask this cache for other patterns: entries are nodes (they
  // stay put), iterators are not kept across it.
  const std::string& key = it->first;
  SharedRegexDfas& shared = SharedRegexDfas::Process();
  if (!shared.Find(key, limits.max_dfa_states, &entry.determinized)) {
    entry.determinized = build != nullptr ? (*build)()
                                          : DeterminizeRegexToClasses(pattern, flags, limits,
                                                                      pieces_.get());
    shared.Add(key, limits.max_dfa_states, entry.determinized);
  }
  entry.max_dfa_states = limits.max_dfa_states;
  entry.minimal.reset();
  return entry;
}

const absl::StatusOr<ClassDfa>& RegexDfaCache::Determinized(std::string_view pattern,
                                                            uint32_t flags,
                                                            const RegexLimits& limits) {
  return Find(pattern, flags, limits).determinized;
}

const absl::StatusOr<ClassDfa>& RegexDfaCache::Determinized(
    std::string_view pattern, uint32_t flags, const RegexLimits& limits,
    absl::FunctionRef<absl::StatusOr<ClassDfa>()> build) {
  return Find(pattern, flags, limits, &build).determinized;
}

const absl::StatusOr<ByteDfa>& RegexDfaCache::Compile(std::string_view pattern, uint32_t flags,
                                                      const RegexLimits& limits) {
  Entry& entry = Find(pattern, flags, limits);
  if (!entry.minimal.has_value()) {
    if (entry.determinized.ok()) {
      entry.minimal = MinimizeDfa(*entry.determinized);
    } else {
      entry.minimal = entry.determinized.status();
    }
  }
  return *entry.minimal;
}

absl::StatusOr<ByteDfa> RegexDfaCache::Take(std::string_view pattern, uint32_t flags,
                                            const RegexLimits& limits,
                                            std::array<uint8_t, 256>* class_of) {
  Compile(pattern, flags, limits);
  auto it = entries_.find(KeyOf(pattern, flags, limits));
  if (class_of != nullptr && it->second.determinized.ok()) {
    *class_of = it->second.determinized->class_of;
  }
  absl::StatusOr<ByteDfa> dfa = *std::move(it->second.minimal);
  entries_.erase(it);
  return dfa;
}

absl::StatusOr<ClassDfa> RegexDfaCache::TakeClasses(std::string_view pattern, uint32_t flags,
                                                   const RegexLimits& limits) {
  Entry& entry = Find(pattern, flags, limits);
  absl::StatusOr<ClassDfa> dfa = absl::UnknownError("unset");
  if (entry.minimal.has_value()) {  // Compile widened it already
    dfa = entry.minimal->ok() ? absl::StatusOr<ClassDfa>(ClassDfa::Narrow(**entry.minimal))
                              : absl::StatusOr<ClassDfa>(entry.minimal->status());
  } else if (entry.determinized.ok()) {
    dfa = MinimizeDfaToClasses(*entry.determinized);
  } else {
    dfa = entry.determinized.status();
  }
  entries_.erase(KeyOf(pattern, flags, limits));
  return dfa;
}

std::optional<RegexAnchorUse> AnchorUseOf(std::string_view pattern, uint32_t flags) {
  if (pattern.find('#') != std::string_view::npos) return std::nullopt;
  const RegexLimits limits;
  Parser parser(pattern, flags, limits);
  absl::StatusOr<uint32_t> root = parser.Parse();
  if (!root.ok()) return std::nullopt;
  const std::vector<Node>& nodes = parser.nodes();
  RegexAnchorUse use;
  std::vector<uint32_t> stack = {*root};
  while (!stack.empty()) {
    const Node& n = nodes[stack.back()];
    stack.pop_back();
    use.has_start = use.has_start || n.kind == NodeKind::kStart;
    use.has_end = use.has_end || n.kind == NodeKind::kEnd;
    stack.insert(stack.end(), n.children.begin(), n.children.end());
  }
  use.refused = (use.has_start || use.has_end) && !parser.CheckAnchors(*root).ok();
  const NodeKind top = nodes[*root].kind;
  use.never_blank = top != NodeKind::kEmpty && top != NodeKind::kStart && top != NodeKind::kEnd;
  return use;
}

std::string RegexDisplayName(std::string_view pattern, uint32_t flags) {
  std::string out;
  out.reserve(pattern.size() + 8);
  out += '/';
  // Copied in runs between slashes; a slash gets a backslash (\/ is / in
  // the dialect) unless an odd run of backslashes already escapes it.
  size_t from = 0;
  for (size_t slash = pattern.find('/'); slash != std::string_view::npos;
       slash = pattern.find('/', slash + 1)) {
    size_t backslashes = 0;
    while (backslashes < slash && pattern[slash - 1 - backslashes] == '\\') ++backslashes;
    out.append(pattern.data() + from, slash - from);
    if (backslashes % 2 == 0) out += '\\';
    out += '/';
    from = slash + 1;
  }
  out.append(pattern.data() + from, pattern.size() - from);
  out += "/";
  if (flags & kRegexIgnoreCase) out += "i";
  if (flags & kRegexMultiline) out += "m";
  if (flags & kRegexDotAll) out += "s";
  if (flags & kRegexVerbose) out += "x";
  if (flags & kRegexJsonString) out += "J";
  if (flags & kRegexJsonAnySpelling) out += "E";
  return out;
}

}  // namespace zapgram::grammar
