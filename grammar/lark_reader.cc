// Lark reader: Lark grammar text -> LarkGrammar (grammar/lark_reader.h).
//
// How it works. Like the GBNF reader, a hand-written scanner fused with a
// parser that keeps its own stack; nothing on the C++ call stack grows with
// the input. Steps:
//
//   1. Validation: the text must be UTF-8; a table of line starts maps byte
//      offsets to line:col for messages.
//   2. Top level: Lark is line-oriented. Each definition or directive starts
//      a line: `[!?_]name[.prio]: body`, `%directive ...`. A body ends at a
//      newline, unless the next line (after blank and comment lines) starts
//      with `|`, or a ( or [ is still open (inside brackets newlines are
//      blanks; Lark's own parser is stricter there).
//   3. Bodies: a stack of group frames (frame 0 is the body, one frame per
//      open ( or [). `|` finishes a sequence, `)`/`]` pops a frame, and a
//      postfix operator (? * + ~n ~n..m; one per item, as in Lark) wraps the
//      last item in a kRepeat. `[x]` is read as x? (the same language; Lark's
//      maybe_placeholders only changes the tree).
//   4. Names become arena rules on first mention (rules and terminals share
//      the arena; LarkGrammar::is_terminal tells them apart). After reading,
//      every mentioned name must be defined, imported or %declare'd
//      ("undefined ..." at its first use), terminals must not be recursive,
//      and the start rule is looked up.
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
// %import common...: the text of grammar/lark_common.cc is read by this same
// reader and the requested terminals are copied into the arena with their
// terminal references inlined (so common's DIGIT never clashes with a user's
// DIGIT).
#include "grammar/lark_reader.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grammar/utf8.h"

namespace zapgram::grammar {
namespace {

constexpr size_t kNone = static_cast<size_t>(-1);

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsInlineBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Kind of a name: 1 terminal (`_?[A-Z]...`), 0 rule (`_*[a-z]...`), -1 neither.
int NameKind(std::string_view name) {
  size_t i = 0;
  while (i < name.size() && name[i] == '_') ++i;
  if (i == name.size()) return -1;
  if (name[i] >= 'A' && name[i] <= 'Z') return 1;
  if (name[i] >= 'a' && name[i] <= 'z') return 0;
  return -1;
}

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

enum class BodyKind { kRule, kTerminal, kIgnore };

struct Frame {
  char open = 0;  // '(' or '[' ; 0 for the body
  size_t open_offset = 0;
  std::vector<ExprId> alternatives;
  std::vector<std::string> aliases;  // frame 0 of a rule only
  struct Item {
    ExprId expr;
    bool has_operator;
  };
  std::vector<Item> items;
  size_t sequence_offset = 0;
  std::string alias;  // alias of the sequence being read
  bool after_alias = false;
};

struct Body {
  ExprId expr = 0;
  std::vector<ExprId> alternatives;
  std::vector<std::string> aliases;
};

class LarkReader {
 public:
  LarkReader(std::string_view text, std::string_view source_name, const LarkReadOptions& options)
      : text_(text), source_name_(source_name), options_(options) {
    out_.arena.source_name = std::string(source_name);
  }

  absl::StatusOr<LarkGrammar> Read();

 private:
  SourceLocation LocationOf(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    return {static_cast<uint32_t>(line), static_cast<uint32_t>(offset - line_starts_[line - 1] + 1)};
  }
  absl::Status ErrorAt(size_t offset, std::string_view message) const {
    const SourceLocation loc = LocationOf(std::min(offset, text_.size()));
    return absl::InvalidArgumentError(
        absl::StrFormat("%s:%d:%d: %s", source_name_, loc.line, loc.col, message));
  }
  std::string Describe(size_t offset) const {
    if (offset >= text_.size()) return "end of input";
    const char c = text_[offset];
    if (c == '\n') return "end of line";
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7F) return absl::StrFormat("'%c'", c);
    if (b >= 0x80) {
      const DecodedCodepoint d = DecodeUtf8(text_.substr(offset));
      return absl::StrFormat("'%s'", text_.substr(offset, d.length));
    }
    return absl::StrFormat("'\\x%02X'", b);
  }
  char At(size_t offset) const { return offset < text_.size() ? text_[offset] : '\0'; }
  bool AtEnd() const { return pos_ >= text_.size(); }

  // Skips spaces, tabs, CR and a comment up to (not including) the newline.
  size_t SkipInlineFrom(size_t p) const {
    while (p < text_.size()) {
      if (IsInlineBlank(text_[p])) {
        ++p;
      } else if (text_[p] == '#' || (text_[p] == '/' && At(p + 1) == '/')) {
        while (p < text_.size() && text_[p] != '\n') ++p;
      } else {
        break;
      }
    }
    return p;
  }
  size_t SkipAllFrom(size_t p) const {
    while (true) {
      p = SkipInlineFrom(p);
      if (p < text_.size() && text_[p] == '\n') {
        ++p;
      } else {
        return p;
      }
    }
  }
  std::string_view ReadName() {
    const size_t start = pos_;
    if (!IsNameStart(At(pos_))) return {};
    while (IsNameChar(At(pos_))) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  absl::Status ValidateUtf8();
  RuleId Symbol(std::string_view name, bool terminal, size_t use_offset);
  absl::StatusOr<std::string> ReadString();
  absl::StatusOr<ExprId> ReadStringItem();
  absl::StatusOr<ExprId> ReadRegexItem();
  absl::StatusOr<uint32_t> ReadNumber();
  absl::StatusOr<Body> ReadBody(BodyKind kind);
  absl::Status ReadDefinition();
  absl::Status ReadDirective();
  absl::Status ReadImport(size_t directive_offset);
  absl::Status ImportCommon(std::string_view name, std::string_view as, size_t offset);
  absl::Status ExpectEndOfLine();
  absl::Status Finish();

  ExprId AddRegex(std::string pattern, uint32_t flags, SourceLocation loc) {
    Expr e;
    e.kind = ExprKind::kRegex;
    e.literal = std::move(pattern);
    e.flags = flags;
    e.loc = loc;
    out_.arena.exprs.push_back(std::move(e));
    return static_cast<ExprId>(out_.arena.exprs.size() - 1);
  }

  std::string_view text_;
  std::string_view source_name_;
  const LarkReadOptions& options_;
  size_t pos_ = 0;
  std::vector<size_t> line_starts_;
  LarkGrammar out_;
  absl::flat_hash_map<std::string, RuleId> ids_;
  std::vector<size_t> first_use_;   // per arena rule
  std::vector<size_t> def_offset_;  // per arena rule; kNone until defined
  bool common_loaded_ = false;
  LarkGrammar common_;
};

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

RuleId LarkReader::Symbol(std::string_view name, bool terminal, size_t use_offset) {
  auto it = ids_.find(std::string(name));
  if (it != ids_.end()) {
    if (first_use_[it->second] == kNone) first_use_[it->second] = use_offset;
    return it->second;
  }
  const RuleId id = static_cast<RuleId>(out_.arena.rules.size());
  Rule rule;
  rule.name = std::string(name);
  rule.body = out_.arena.AddEmpty();
  out_.arena.rules.push_back(std::move(rule));
  out_.is_terminal.push_back(terminal);
  out_.index_of.push_back(-1);
  first_use_.push_back(use_offset);
  def_offset_.push_back(kNone);
  ids_.emplace(std::string(name), id);
  return id;
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
    out_.istring_exprs.push_back(id);
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
    switch (At(pos_)) {
      case 'i': flags |= kRegexIgnoreCase; break;
      case 'm': flags |= kRegexMultiline; break;
      case 's': flags |= kRegexDotAll; break;
      case 'x': flags |= kRegexVerbose; break;
      case 'u': break;  // Unicode: already the meaning of a Python 3 str pattern
      case 'l':
        return ErrorAt(pos_, "regex flag 'l' (LOCALE) is not supported: its meaning depends on the "
                             "machine's locale and Python refuses it for str patterns");
      default:
        return ErrorAt(pos_, absl::StrFormat("unknown regex flag '%c' (expected i, m, s, x or u)", At(pos_)));
    }
    ++pos_;
  }
  return AddRegex(std::move(pattern), flags, loc);
}

void FinishSequence(Grammar& g, Frame& frame, const SourceLocation& loc) {
  std::vector<ExprId> items;
  items.reserve(frame.items.size());
  for (const auto& item : frame.items) items.push_back(item.expr);
  frame.alternatives.push_back(g.AddSequence(std::move(items), loc));
  frame.aliases.push_back(std::move(frame.alias));
  frame.alias.clear();
  frame.items.clear();
  frame.after_alias = false;
}

absl::StatusOr<Body> LarkReader::ReadBody(BodyKind kind) {
  std::vector<Frame> stack(1);
  stack[0].open_offset = pos_;
  stack[0].sequence_offset = pos_;
  while (true) {
    pos_ = SkipInlineFrom(pos_);
    Frame& top = stack.back();
    const char c = At(pos_);
    if (AtEnd() || c == '\n') {
      if (stack.size() > 1) {
        if (AtEnd()) {
          return ErrorAt(pos_, absl::StrFormat("expected '%c' to close the '%c' at %d:%d",
                                               top.open == '(' ? ')' : ']', top.open,
                                               LocationOf(top.open_offset).line,
                                               LocationOf(top.open_offset).col));
        }
        ++pos_;
        continue;
      }
      const size_t next = SkipAllFrom(pos_);
      if (At(next) == '|') {
        pos_ = next;
        continue;
      }
      break;
    }
    if (top.after_alias && c != '|' && c != ')' && c != ']') {
      return ErrorAt(pos_, absl::StrCat("expected '|' or end of line after the alias, found ", Describe(pos_)));
    }
    if (c == '|') {
      FinishSequence(out_.arena, top, LocationOf(top.sequence_offset));
      ++pos_;
      top.sequence_offset = pos_;
      continue;
    }
    if (c == '(' || c == '[') {
      if (stack.size() >= options_.max_nesting) {
        return ErrorAt(pos_, absl::StrFormat("nesting deeper than %d", options_.max_nesting));
      }
      Frame f;
      f.open = c;
      f.open_offset = pos_;
      ++pos_;
      f.sequence_offset = pos_;
      stack.push_back(std::move(f));
      continue;
    }
    if (c == ')' || c == ']') {
      const char want = top.open == '(' ? ')' : top.open == '[' ? ']' : 0;
      if (want != c) {
        return ErrorAt(pos_, stack.size() == 1
                                 ? absl::StrFormat("unexpected '%c' with no open bracket", c)
                                 : absl::StrFormat("expected '%c', found '%c'", want, c));
      }
      if (!top.alias.empty()) return ErrorAt(pos_, "an alias '->' may only end a rule's alternative");
      FinishSequence(out_.arena, top, LocationOf(top.sequence_offset));
      const SourceLocation loc = LocationOf(top.open_offset);
      ExprId group = out_.arena.AddChoice(std::move(top.alternatives), loc);
      if (top.open == '[') group = out_.arena.AddRepeat(group, 0, 1, loc);
      stack.pop_back();
      stack.back().items.push_back({group, false});
      ++pos_;
      continue;
    }
    if (c == '?' || c == '*' || c == '+' || c == '~') {
      if (top.items.empty()) {
        return ErrorAt(pos_, absl::StrFormat("'%c' must follow an item", c));
      }
      if (top.items.back().has_operator) {
        return ErrorAt(pos_, absl::StrFormat("'%c': only one operator may follow an item (use parentheses)", c));
      }
      if (stack.size() + 1 > options_.max_nesting) {
        return ErrorAt(pos_, absl::StrFormat("nesting deeper than %d", options_.max_nesting));
      }
      const SourceLocation loc = LocationOf(pos_);
      uint32_t min = 0, max = kUnbounded;
      if (c == '?') max = 1;
      if (c == '+') min = 1;
      ++pos_;
      if (c == '~') {
        pos_ = SkipInlineFrom(pos_);
        auto lo = ReadNumber();
        if (!lo.ok()) return lo.status();
        min = max = *lo;
        const size_t after = SkipInlineFrom(pos_);
        if (At(after) == '.' && At(after + 1) == '.') {
          pos_ = SkipInlineFrom(after + 2);
          const size_t hi_offset = pos_;
          auto hi = ReadNumber();
          if (!hi.ok()) return hi.status();
          if (*hi < *lo) return ErrorAt(hi_offset, "repetition bounds are reversed");
          max = *hi;
        }
      }
      Frame::Item& item = top.items.back();
      item.expr = out_.arena.AddRepeat(item.expr, min, max, loc);
      item.has_operator = true;
      continue;
    }
    if (c == '-' && At(pos_ + 1) == '>') {
      if (kind != BodyKind::kRule || stack.size() > 1) {
        return ErrorAt(pos_, kind == BodyKind::kRule ? "an alias '->' may only end a rule's alternative"
                                                     : "aliases '->' are allowed in rules only");
      }
      pos_ = SkipInlineFrom(pos_ + 2);
      const size_t name_offset = pos_;
      const std::string_view name = ReadName();
      if (name.empty() || NameKind(name) != 0) {
        pos_ = name_offset;
        return ErrorAt(name_offset, absl::StrCat("expected a rule name after '->', found ", Describe(name_offset)));
      }
      top.alias = std::string(name);
      top.after_alias = true;
      continue;
    }
    ExprId item = 0;
    if (c == '"') {
      auto r = ReadStringItem();
      if (!r.ok()) return r.status();
      item = *r;
    } else if (c == '/') {
      auto r = ReadRegexItem();
      if (!r.ok()) return r.status();
      item = *r;
    } else if (IsNameStart(c)) {
      const size_t offset = pos_;
      const std::string_view name = ReadName();
      const int name_kind = NameKind(name);
      if (name_kind < 0) return ErrorAt(offset, absl::StrFormat("'%s' is neither a rule nor a terminal name", name));
      if (At(pos_) == '{') {
        return ErrorAt(pos_, absl::StrFormat("template use '%s{...}': Lark templates are not supported", name));
      }
      if (kind == BodyKind::kTerminal && name_kind == 0) {
        return ErrorAt(offset, absl::StrFormat("a terminal cannot refer to the rule '%s'", name));
      }
      item = out_.arena.AddRuleRef(Symbol(name, name_kind == 1, offset), LocationOf(offset));
    } else {
      return ErrorAt(pos_, absl::StrCat("expected an item, '|' or end of line, found ", Describe(pos_)));
    }
    stack.back().items.push_back({item, false});
  }
  Frame& body = stack[0];
  FinishSequence(out_.arena, body, LocationOf(body.sequence_offset));
  Body result;
  result.alternatives = body.alternatives;
  result.aliases = std::move(body.aliases);
  result.expr = out_.arena.AddChoice(std::move(body.alternatives), LocationOf(body.open_offset));
  return result;
}

absl::Status LarkReader::ReadDefinition() {
  const size_t start = pos_;
  bool keep = false, inline_children = false;
  while (At(pos_) == '!' || At(pos_) == '?') {
    (At(pos_) == '!' ? keep : inline_children) = true;
    ++pos_;
  }
  const size_t name_offset = pos_;
  const std::string_view name = ReadName();
  if (name.empty()) {
    return ErrorAt(pos_, absl::StrCat("expected a rule or terminal name, found ", Describe(pos_)));
  }
  const int name_kind = NameKind(name);
  if (name_kind < 0) return ErrorAt(name_offset, absl::StrFormat("'%s' is neither a rule nor a terminal name", name));
  const bool terminal = name_kind == 1;
  if (terminal && (keep || inline_children)) {
    return ErrorAt(start, absl::StrFormat("'?' and '!' apply to rules, not to the terminal '%s'", name));
  }
  pos_ = SkipInlineFrom(pos_);
  if (At(pos_) == '{') {
    return ErrorAt(pos_, absl::StrFormat("template definition '%s{...}': Lark templates are not supported", name));
  }
  bool has_priority = false;
  int32_t priority = 0;
  if (At(pos_) == '.') {
    pos_ = SkipInlineFrom(pos_ + 1);
    bool negative = false;
    if (At(pos_) == '-' || At(pos_) == '+') negative = At(pos_++) == '-';
    auto n = ReadNumber();
    if (!n.ok()) return n.status();
    priority = negative ? -static_cast<int32_t>(*n) : static_cast<int32_t>(*n);
    has_priority = true;
    pos_ = SkipInlineFrom(pos_);
  }
  if (At(pos_) != ':') {
    return ErrorAt(pos_, absl::StrFormat("expected ':' after '%s', found %s", name, Describe(pos_)));
  }
  ++pos_;
  const RuleId id = Symbol(name, terminal, kNone);
  if (def_offset_[id] != kNone) {
    const SourceLocation prev = LocationOf(def_offset_[id]);
    return ErrorAt(name_offset, absl::StrFormat("'%s' is already defined at %d:%d", name, prev.line, prev.col));
  }
  if (out_.is_terminal[id] != terminal) return ErrorAt(name_offset, "internal: kind mismatch");
  def_offset_[id] = name_offset;
  auto body = ReadBody(terminal ? BodyKind::kTerminal : BodyKind::kRule);
  if (!body.ok()) return body.status();
  Rule& rule = out_.arena.rules[id];
  rule.body = body->expr;
  rule.loc = LocationOf(name_offset);
  if (terminal) {
    LarkTerminal t;
    t.rule = id;
    t.priority = priority;
    t.has_priority = has_priority;
    t.hidden = name[0] == '_';
    t.loc = rule.loc;
    out_.index_of[id] = static_cast<int32_t>(out_.terminals.size());
    out_.terminals.push_back(std::move(t));
  } else {
    LarkRule r;
    r.rule = id;
    r.inline_children = inline_children;
    r.hidden = name[0] == '_';
    r.keep_all_tokens = keep;
    r.priority = priority;
    r.has_priority = has_priority;
    r.alternatives = std::move(body->alternatives);
    r.aliases = std::move(body->aliases);
    r.loc = rule.loc;
    out_.index_of[id] = static_cast<int32_t>(out_.rules.size());
    out_.rules.push_back(std::move(r));
  }
  return absl::OkStatus();
}

absl::Status LarkReader::ExpectEndOfLine() {
  pos_ = SkipInlineFrom(pos_);
  if (!AtEnd() && At(pos_) != '\n') {
    return ErrorAt(pos_, absl::StrCat("expected end of line, found ", Describe(pos_)));
  }
  return absl::OkStatus();
}

absl::Status LarkReader::ReadDirective() {
  const size_t start = pos_++;
  const size_t word_offset = pos_;
  while (At(pos_) >= 'a' && At(pos_) <= 'z') ++pos_;
  const std::string_view word = text_.substr(word_offset, pos_ - word_offset);
  if (word == "ignore") {
    const SourceLocation loc = LocationOf(start);
    auto body = ReadBody(BodyKind::kIgnore);
    if (!body.ok()) return body.status();
    if (out_.arena.exprs[body->expr].kind == ExprKind::kEmpty) {
      return ErrorAt(pos_, "expected what to ignore after '%ignore'");
    }
    out_.ignores.push_back({body->expr, loc});
    return absl::OkStatus();
  }
  if (word == "declare") {
    bool any = false;
    while (true) {
      pos_ = SkipInlineFrom(pos_);
      if (AtEnd() || At(pos_) == '\n') break;
      const size_t offset = pos_;
      const std::string_view name = ReadName();
      if (name.empty()) return ErrorAt(offset, absl::StrCat("expected a terminal name, found ", Describe(offset)));
      if (NameKind(name) != 1) {
        return ErrorAt(offset, absl::StrFormat("%%declare takes terminal names; '%s' is not one", name));
      }
      const RuleId id = Symbol(name, true, kNone);
      if (def_offset_[id] != kNone) {
        const SourceLocation prev = LocationOf(def_offset_[id]);
        return ErrorAt(offset, absl::StrFormat("'%s' is already defined at %d:%d", name, prev.line, prev.col));
      }
      def_offset_[id] = offset;
      LarkTerminal t;
      t.rule = id;
      t.hidden = name[0] == '_';
      t.declared = true;
      t.loc = LocationOf(offset);
      out_.arena.rules[id].loc = t.loc;
      out_.index_of[id] = static_cast<int32_t>(out_.terminals.size());
      out_.terminals.push_back(t);
      out_.declared.push_back(std::string(name));
      any = true;
    }
    if (!any) return ErrorAt(pos_, "expected at least one terminal name after '%declare'");
    return absl::OkStatus();
  }
  if (word == "import") return ReadImport(start);
  if (word == "override" || word == "extend") {
    return ErrorAt(start, absl::StrFormat("%%%s is not supported (it needs imported grammars to modify)", word));
  }
  return ErrorAt(start, absl::StrFormat("unknown directive '%%%s' (expected %%ignore, %%import or %%declare)", word));
}

absl::Status LarkReader::ReadImport(size_t directive_offset) {
  pos_ = SkipInlineFrom(pos_);
  const size_t path_offset = pos_;
  if (At(pos_) == '.') {
    return ErrorAt(path_offset, "relative %import is not supported (zapgram builds in only the 'common' module)");
  }
  std::vector<std::pair<std::string_view, size_t>> parts;
  while (true) {
    const size_t offset = pos_;
    const std::string_view part = ReadName();
    if (part.empty()) return ErrorAt(offset, absl::StrCat("expected a module or name, found ", Describe(offset)));
    parts.push_back({part, offset});
    if (At(pos_) != '.') break;
    ++pos_;
  }
  pos_ = SkipInlineFrom(pos_);
  std::vector<std::pair<std::string_view, size_t>> names;
  std::string_view alias;
  if (At(pos_) == '(') {
    ++pos_;
    while (true) {
      pos_ = SkipInlineFrom(pos_);
      const size_t offset = pos_;
      const std::string_view name = ReadName();
      if (name.empty()) return ErrorAt(offset, absl::StrCat("expected a name, found ", Describe(offset)));
      names.push_back({name, offset});
      pos_ = SkipInlineFrom(pos_);
      if (At(pos_) == ',') {
        ++pos_;
        continue;
      }
      if (At(pos_) == ')') {
        ++pos_;
        break;
      }
      return ErrorAt(pos_, absl::StrCat("expected ',' or ')', found ", Describe(pos_)));
    }
  } else {
    if (parts.size() < 2) {
      return ErrorAt(path_offset, "expected 'module.NAME' or 'module (NAME, ...)' after '%import'");
    }
    names.push_back(parts.back());
    parts.pop_back();
    if (At(pos_) == '-' && At(pos_ + 1) == '>') {
      pos_ = SkipInlineFrom(pos_ + 2);
      const size_t offset = pos_;
      alias = ReadName();
      if (alias.empty()) return ErrorAt(offset, absl::StrCat("expected a name after '->', found ", Describe(offset)));
    }
  }
  if (absl::Status s = ExpectEndOfLine(); !s.ok()) return s;
  std::string module;
  for (const auto& part : parts) {
    if (!module.empty()) module.push_back('.');
    module.append(part.first.data(), part.first.size());
  }
  if (module != "common") {
    return ErrorAt(path_offset,
                   absl::StrFormat("%%import from module '%s' is not supported (zapgram builds in only 'common')", module));
  }
  (void)directive_offset;
  for (const auto& [name, offset] : names) {
    if (absl::Status s = ImportCommon(name, alias.empty() ? name : alias, offset); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status LarkReader::ImportCommon(std::string_view name, std::string_view as, size_t offset) {
  if (!common_loaded_) {
    auto common = ReadLark(LarkCommonText(), "<builtin:lark-common>");
    if (!common.ok()) return common.status();
    common_ = std::move(*common);
    common_loaded_ = true;
  }
  const int64_t src_rule = common_.arena.FindRule(name);
  if (src_rule < 0 || !common_.is_terminal[static_cast<size_t>(src_rule)]) {
    return ErrorAt(offset, absl::StrFormat("module 'common' has no terminal '%s' in zapgram's built-in copy", name));
  }
  if (NameKind(as) != 1) {
    return ErrorAt(offset, absl::StrFormat("the terminal '%s' must be imported under a terminal name, not '%s'", name, as));
  }
  const RuleId id = Symbol(as, true, kNone);
  if (def_offset_[id] != kNone) {
    const SourceLocation prev = LocationOf(def_offset_[id]);
    return ErrorAt(offset, absl::StrFormat("'%s' is already defined at %d:%d", as, prev.line, prev.col));
  }
  def_offset_[id] = offset;
  const Grammar& src = common_.arena;
  auto resolve = [&](ExprId e) {
    // Common's terminals are not recursive (its reading checked it), so this ends.
    while (src.exprs[e].kind == ExprKind::kRuleRef) e = src.rules[src.exprs[e].rule].body;
    return e;
  };
  struct CopyFrame {
    ExprId src;
    size_t next = 0;
    std::vector<ExprId> done;
  };
  std::vector<CopyFrame> stack;
  stack.push_back({resolve(src.rules[static_cast<size_t>(src_rule)].body), 0, {}});
  ExprId copied = 0;
  while (!stack.empty()) {
    CopyFrame& f = stack.back();
    const Expr& e = src.exprs[f.src];
    if (f.next < e.children.size()) {
      const ExprId child = resolve(e.children[f.next++]);
      stack.push_back({child, 0, {}});
      continue;
    }
    Expr copy = e;
    copy.children = std::move(f.done);
    copy.loc = {};
    out_.arena.exprs.push_back(std::move(copy));
    copied = static_cast<ExprId>(out_.arena.exprs.size() - 1);
    stack.pop_back();
    if (!stack.empty()) stack.back().done.push_back(copied);
  }
  const LarkTerminal& src_terminal = common_.terminals[static_cast<size_t>(common_.index_of[static_cast<size_t>(src_rule)])];
  out_.arena.rules[id].body = copied;
  out_.arena.rules[id].loc = LocationOf(offset);
  LarkTerminal t;
  t.rule = id;
  t.priority = src_terminal.priority;
  t.has_priority = src_terminal.has_priority;
  t.hidden = as[0] == '_';
  t.imported = true;
  t.loc = LocationOf(offset);
  out_.index_of[id] = static_cast<int32_t>(out_.terminals.size());
  out_.terminals.push_back(t);
  return absl::OkStatus();
}

absl::Status LarkReader::Finish() {
  const size_t n = out_.arena.rules.size();
  // Undefined names, reported at the earliest first use.
  size_t worst = kNone;
  RuleId worst_id = 0;
  for (RuleId id = 0; id < n; ++id) {
    if (def_offset_[id] == kNone && (worst == kNone || first_use_[id] < worst)) {
      worst = first_use_[id];
      worst_id = id;
    }
  }
  if (worst != kNone) {
    return ErrorAt(worst, absl::StrFormat("undefined %s '%s'", out_.is_terminal[worst_id] ? "terminal" : "rule",
                                          out_.arena.rules[worst_id].name));
  }
  // Terminal references between terminals must form no cycle (Lark refuses
  // recursive terminals). Iterative DFS with colors over the terminal graph.
  std::vector<std::vector<RuleId>> deps(n);
  for (RuleId id = 0; id < n; ++id) {
    if (!out_.is_terminal[id]) continue;
    std::vector<ExprId> work = {out_.arena.rules[id].body};
    while (!work.empty()) {
      const Expr& e = out_.arena.exprs[work.back()];
      work.pop_back();
      if (e.kind == ExprKind::kRuleRef) deps[id].push_back(e.rule);
      for (ExprId c : e.children) work.push_back(c);
    }
  }
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  for (RuleId root = 0; root < n; ++root) {
    if (!out_.is_terminal[root] || color[root] != 0) continue;
    std::vector<std::pair<RuleId, size_t>> path = {{root, 0}};
    color[root] = 1;
    while (!path.empty()) {
      auto& [id, next] = path.back();
      if (next < deps[id].size()) {
        const RuleId d = deps[id][next++];
        if (color[d] == 1) {
          return ErrorAt(def_offset_[d], absl::StrFormat("terminal '%s' is recursive (terminals must be regular)",
                                                         out_.arena.rules[d].name));
        }
        if (color[d] == 0) {
          color[d] = 1;
          path.push_back({d, 0});
        }
        continue;
      }
      color[id] = 2;
      path.pop_back();
    }
  }
  const int64_t start = out_.arena.FindRule(options_.start);
  out_.has_start = start >= 0 && !out_.is_terminal[static_cast<size_t>(start)];
  out_.arena.root = out_.has_start ? static_cast<RuleId>(start) : 0;
  if (n == 0) {
    // The arena needs a rule for Validate(); an empty grammar has none to name.
    return absl::OkStatus();
  }
  return out_.arena.Validate();
}

absl::StatusOr<LarkGrammar> LarkReader::Read() {
  if (absl::Status s = ValidateUtf8(); !s.ok()) return s;
  if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
  while (true) {
    pos_ = SkipAllFrom(pos_);
    if (AtEnd()) break;
    const char c = At(pos_);
    absl::Status s;
    if (c == '%') {
      s = ReadDirective();
    } else if (c == '!' || c == '?' || IsNameStart(c)) {
      s = ReadDefinition();
    } else {
      s = ErrorAt(pos_, absl::StrCat("expected a rule or terminal definition or a %directive, found ", Describe(pos_)));
    }
    if (!s.ok()) return s;
  }
  if (absl::Status s = Finish(); !s.ok()) return s;
  return std::move(out_);
}

}  // namespace

absl::StatusOr<LarkGrammar> ReadLark(std::string_view text, std::string_view source_name,
                                     const LarkReadOptions& options) {
  LarkReader reader(text, source_name, options);
  return reader.Read();
}

std::string DumpLark(const LarkGrammar& g) {
  std::string out = g.arena.rules.empty() ? std::string() : Dump(g.arena);
  for (const LarkRule& r : g.rules) {
    out += absl::StrFormat("rule %s", g.arena.rules[r.rule].name);
    if (r.inline_children) out += " inline";
    if (r.hidden) out += " hidden";
    if (r.keep_all_tokens) out += " keep_all_tokens";
    if (r.has_priority) out += absl::StrFormat(" priority=%d", r.priority);
    out += absl::StrFormat(" alternatives=%d", r.alternatives.size());
    for (size_t i = 0; i < r.aliases.size(); ++i) {
      if (!r.aliases[i].empty()) out += absl::StrFormat(" alias[%d]=%s", i, r.aliases[i]);
    }
    out += "\n";
  }
  for (const LarkTerminal& t : g.terminals) {
    out += absl::StrFormat("terminal %s", g.arena.rules[t.rule].name);
    if (t.has_priority) out += absl::StrFormat(" priority=%d", t.priority);
    if (t.hidden) out += " hidden";
    if (t.imported) out += " imported";
    if (t.declared) out += " declared";
    out += "\n";
  }
  for (const LarkIgnore& i : g.ignores) out += absl::StrFormat("ignore %s\n", DumpExpr(g.arena, i.expr));
  for (ExprId id : g.istring_exprs) out += absl::StrFormat("istring %s\n", DumpExpr(g.arena, id));
  return out;
}

}  // namespace zapgram::grammar
