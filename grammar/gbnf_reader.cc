// GBNF / XGrammar-EBNF reader: grammar text -> grammar IR (grammar/grammar.h).
//
// How it works. The reader is a hand-written scanner fused with a parser that
// keeps its own stack: nothing on the C++ call stack grows with the input, so
// 100000 nested parentheses cost memory (bounded by max_nesting), never a
// stack overflow. Reading happens in four steps:
//
//   1. Validation. The whole text must be UTF-8 (an optional BOM is skipped);
//      the first bad byte is an error at its line:col. Afterwards every
//      multi-byte character can be decoded without further checks, and a
//      table of line starts turns byte offsets into line:col for messages.
//   2. Rules. At the top level the text is a list of `NAME ::= body`. A body
//      ends where the next `NAME ::=` starts (a name followed, after blanks
//      and comments, by `::=`), or at the end of the text. This covers both
//      llama.cpp files (one rule per line, `|` continuing lines) and XGrammar
//      files (bodies spread over lines freely).
//   3. Bodies. The body is read token by token into a stack of group frames.
//      A frame is one open parenthesis (frame 0 is the body itself) and holds
//      the alternatives finished so far plus the items of the sequence being
//      read. `|` finishes a sequence, `(` pushes a frame, `)` pops one and
//      hands the group to its parent as a single item, and a quantifier
//      (`*`, `+`, `?`, `{m,n}`) wraps the last item of the current sequence in
//      a kRepeat. This is an operator-precedence parse in the shunting-yard
//      family: postfix quantifiers bind tightest, then juxtaposition, then
//      `|`. Grouping parentheses are not kept: a parenthesized sequence inside
//      a sequence (or a choice inside a choice) is spliced into its parent, so
//      `"a" ("b" "c")` and `"a" "b" "c"` read alike.
//   4. Resolution. Rule references may precede their definitions, so every
//      reference is recorded with its position and bound to a rule id after
//      all rules are read; an unknown name is "undefined symbol" at the first
//      place it is used. Expressions orphaned by the splicing of step 3 are
//      dropped, and the root is the rule named options.root_rule.
//
// Lexical details. Names are [A-Za-z0-9_-]+ with inner dots (`a.b`), as in
// llama.cpp and XGrammar; a standalone `.` is the any-code-point class.
// Blanks are space, tab, CR and LF; `#` starts a comment up to the end of the
// line. Literals use "..." or '...'. Escapes (in literals and classes alike)
// denote code points: \xNN, \uNNNN, \UNNNNNNNN with exactly that many hex
// digits, the C escapes \n \r \t \a \b \f \v \0, XGrammar's \e (U+001B), and a
// backslash before any of \ " ' [ ] - ^ / ? . * + ( ) { } | $ for the character
// itself. XGrammar reads \x with any number of hex digits ("\x41B" is U+041B);
// zapgram, like llama.cpp, takes exactly two ("A" then "B"); no grammar in the
// shared data has a hex digit after \xNN, and \uNNNN reads alike in both. Every
// code point is stored UTF-8 encoded, so "\xff" is the two bytes C3 BF. A class
// `[...]` lists code points and ranges `a-z`; `-` first or last is literal,
// `^` first negates, and the reader resolves negation (and `.`) into positive
// ranges; `[]` matches nothing, and a reversed range `z-a` is an error.
// Literals and classes may span lines (llama.cpp allows raw newlines).
// Repetition braces accept {m} {m,} {m,n} {,n}, blanks inside, and XGrammar's
// printed form {m, -1} for "unbounded". Quantifiers may stack (`"a"?*`), as in
// llama.cpp; XGrammar rejects that, zapgram reads it as nested repetition.
//
// Limits. max_nesting bounds the open parentheses around a point plus the
// quantifiers stacked on one item (so `((x??))` nests 4 deep); max_repeat_bound
// bounds every number in braces. Exceeding either is an error at the offending
// character.
//
// Macros. `Name(` with a macro name starts an XGrammar macro call: its
// arguments (strings, integers, true/false, rule names, tuples, name=value)
// are read with an explicit stack of open tuples into a MacroCall, and
// grammar/xgrammar_macros.h checks them and builds the IR (rule names in the
// arguments are bound like any reference).
//
// Lookahead assertions. `rule ::= body (= assertion)` must end the body,
// outside parentheses. The assertion is read like a group, kept aside, and
// once every reference is bound, grammar/rule_lookahead.h proves that the
// grammar implies it (then it changes nothing and is dropped) or refuses the
// grammar at the assertion.
//
// Rule attributes. `name[lazy, capture="x"] ::= ...` is read by
// grammar/rule_attributes.h: lazy rules become their lazy language once the
// grammar is resolved; capture and temperature stay on the rule
// (grammar::Rule) and change nothing it matches.
//
// Refusals. XGrammar constructs that change what a grammar matches and that
// the engine does not implement are errors, never silently dropped: the
// budget attributes (`r[max_tokens=3] ::= ...`), lazy rules that are not
// regular, and lookahead assertions the grammar does not imply. llama.cpp token references (`<[1234]>`, `<think>`,
// `!<...>`) are refused as well: zapgram grammars name token ids only through
// XGrammar's token-level macros.
//
// Every error is absl::InvalidArgumentError("SOURCE:LINE:COL: message"), the
// column counting bytes. Tests: tests/grammar/gbnf_reader_test.cc (constructs,
// golden dumps in tests/testdata/gbnf_golden/, errors, the data files).
#include "grammar/gbnf_reader.h"

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
#include "grammar/rule_attributes.h"
#include "grammar/rule_lookahead.h"
#include "grammar/utf8.h"
#include "grammar/xgrammar_macros.h"

namespace zapgram::grammar {
namespace {

constexpr std::string_view kDefinitionOperator = "::=";

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsSurrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

// Debian's abseil keeps its own absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW
// is 0), which absl::StrCat and the hash maps expect; this converts without copying.
absl::string_view AsAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// The code point at text[pos] (pos < size); length 0 when the bytes there
// are not valid UTF-8 (grammar/utf8.h rejects overlong forms, surrogates,
// values above U+10FFFF and truncated sequences).
DecodedCodepoint DecodeUtf8At(std::string_view text, size_t pos) {
  return DecodeUtf8(text.substr(pos));
}

// The character at text[pos] quoted for a message: 'a', '\x07', 'é', "end of input".
std::string DescribeCharAt(std::string_view text, size_t pos) {
  if (pos >= text.size()) return "end of input";
  const DecodedCodepoint ch = DecodeUtf8At(text, pos);
  if (ch.length > 1) return absl::StrCat("'", AsAbsl(text.substr(pos, ch.length)), "'");
  const auto byte = static_cast<unsigned char>(text[pos]);
  if (byte >= 0x20 && byte < 0x7F) return absl::StrCat("'", AsAbsl(text.substr(pos, 1)), "'");
  return absl::StrFormat("'\\x%02X'", byte);
}

// One open group: a parenthesis, or (frame 0) the rule body itself.
struct GroupFrame {
  size_t open_offset = 0;      // offset of '(' (of the body start for frame 0)
  size_t sequence_offset = 0;  // where the sequence being read began
  bool lookahead = false;      // `(= ...)`: the rule's lookahead assertion, not an item
  std::vector<ExprId> alternatives;
  struct Item {
    ExprId expr;
    uint32_t quantifiers;  // repetitions stacked directly on this item: "a"?* has 2
  };
  std::vector<Item> items;  // the sequence being read
};

class GbnfReader : public MacroBuilder {
 public:
  GbnfReader(std::string_view text, std::string_view source_name, const GbnfReadOptions& options)
      : text_(text), source_name_(source_name), options_(options) {
    grammar_.source_name = std::string(source_name);
  }

  absl::StatusOr<Grammar> Read();

  // ---- MacroBuilder ----
  Grammar& grammar() override { return grammar_; }
  SourceLocation LocationOf(size_t offset) const override;
  ExprId ReferenceRule(std::string_view name, size_t offset) override;
  absl::Status ErrorAt(size_t offset, std::string_view message) const override;

 private:
  // ---- positions and messages ----
  absl::Status NestingError(size_t offset) const;
  std::string LineColOf(size_t offset) const;

  // ---- scanning ----
  bool AtEnd() const { return pos_ >= text_.size(); }
  char CharAt(size_t offset) const { return offset < text_.size() ? text_[offset] : '\0'; }
  bool TextAt(size_t offset, std::string_view s) const {
    return text_.substr(std::min(offset, text_.size())).substr(0, s.size()) == s;
  }
  size_t SkipBlanksAndCommentsFrom(size_t offset) const;
  void SkipBlanksAndComments() { pos_ = SkipBlanksAndCommentsFrom(pos_); }
  size_t NameEndFrom(size_t offset) const;
  // Offset just past `NAME[...]` when a bracket block follows the name at
  // `name_end` on the same line, else npos.
  size_t AttributeBlockEndFrom(size_t name_end) const;
  // True when the name at `offset` begins a rule definition (`NAME ::=` or `NAME[...] ::=`).
  bool RuleDefinitionStartsAt(size_t offset) const;
  bool IsLineLeading(size_t offset) const;

  // ---- pieces of a body ----
  absl::Status ValidateUtf8() const;
  absl::StatusOr<uint32_t> ReadEscape();
  // Reads one code point inside a literal or class, raw or escaped. The
  // caller has checked that the input does not end here.
  absl::StatusOr<uint32_t> ReadCodepoint();
  // The bytes of a quoted string at pos_ ("..." or '...').
  absl::StatusOr<std::string> ReadQuoted();
  absl::StatusOr<ExprId> ReadLiteral();
  // The arguments of the XGrammar macro call whose name ends at pos_ (at '(').
  absl::StatusOr<MacroCall> ReadMacroCall(std::string name, size_t name_offset);
  absl::StatusOr<MacroValue> ReadMacroScalar();
  absl::StatusOr<ExprId> ReadCharClass();
  // A regex terminal /pattern/flags, as Dump prints one (zapgram's own).
  absl::StatusOr<ExprId> ReadRegex();
  absl::StatusOr<uint32_t> ReadRepeatBound();
  absl::Status ReadQuantifier(GroupFrame& frame, size_t open_groups);
  // Reads a rule name used as a reference; sets *line_leading_name to the
  // name when it stands first on its line. Refuses XGrammar macro calls.
  absl::StatusOr<ExprId> ReadReference(std::string* line_leading_name);
  // The error for a character that cannot start an item. A name that stood
  // first on its line just before it was most likely a rule missing its '::='.
  absl::Status UnexpectedTokenError(size_t offset,
                                    std::string_view previous_line_leading_name) const;
  absl::StatusOr<ExprId> ReadRuleBody();

  // ---- building ----
  void FinishSequence(GroupFrame& frame);
  ExprId FinishGroup(GroupFrame& frame);
  absl::Status ResolveReferences();
  void DropUnreferencedExprs();

  std::string_view text_;
  std::string_view source_name_;
  const GbnfReadOptions& options_;
  size_t pos_ = 0;
  std::vector<size_t> line_starts_;
  Grammar grammar_;
  absl::flat_hash_map<std::string, RuleId> rule_ids_;
  struct PendingReference {
    ExprId expr;
    std::string name;
    size_t offset;
  };
  std::vector<PendingReference> references_;
  std::vector<RuleLookahead> lookaheads_;
  struct LazyRule {
    RuleId rule;
    size_t offset;  // of its name
  };
  std::vector<LazyRule> lazy_rules_;
};

SourceLocation GbnfReader::LocationOf(size_t offset) const {
  const auto next_line = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const size_t line_index = static_cast<size_t>(next_line - line_starts_.begin()) - 1;
  return {static_cast<uint32_t>(line_index + 1),
          static_cast<uint32_t>(offset - line_starts_[line_index] + 1)};
}

std::string GbnfReader::LineColOf(size_t offset) const {
  const SourceLocation loc = LocationOf(offset);
  return absl::StrCat(loc.line, ":", loc.col);
}

absl::Status GbnfReader::ErrorAt(size_t offset, std::string_view message) const {
  return absl::InvalidArgumentError(
      absl::StrCat(AsAbsl(source_name_), ":", LineColOf(offset), ": ", AsAbsl(message)));
}

absl::Status GbnfReader::NestingError(size_t offset) const {
  return ErrorAt(offset, absl::StrCat("nesting deeper than max_nesting = ", options_.max_nesting,
                                      " (parentheses plus stacked repetitions)"));
}

size_t GbnfReader::SkipBlanksAndCommentsFrom(size_t offset) const {
  while (offset < text_.size()) {
    const char c = text_[offset];
    if (IsBlank(c)) {
      ++offset;
    } else if (c == '#') {
      while (offset < text_.size() && text_[offset] != '\n') ++offset;
    } else {
      break;
    }
  }
  return offset;
}

size_t GbnfReader::NameEndFrom(size_t offset) const {
  while (offset < text_.size()) {
    const char c = text_[offset];
    if (IsNameChar(c) || (c == '.' && IsNameChar(CharAt(offset + 1)))) {
      ++offset;
    } else {
      break;
    }
  }
  return offset;
}

size_t GbnfReader::AttributeBlockEndFrom(size_t name_end) const {
  if (CharAt(name_end) != '[') return std::string_view::npos;
  for (size_t k = name_end + 1; k < text_.size() && text_[k] != '\n'; ++k) {
    if (text_[k] == ']') return k + 1;
  }
  return std::string_view::npos;
}

bool GbnfReader::RuleDefinitionStartsAt(size_t offset) const {
  size_t end = NameEndFrom(offset);
  if (end == offset) return false;
  if (TextAt(SkipBlanksAndCommentsFrom(end), kDefinitionOperator)) return true;
  end = AttributeBlockEndFrom(end);
  return end != std::string_view::npos &&
         TextAt(SkipBlanksAndCommentsFrom(end), kDefinitionOperator);
}

bool GbnfReader::IsLineLeading(size_t offset) const {
  while (offset > 0 && (text_[offset - 1] == ' ' || text_[offset - 1] == '\t')) --offset;
  return offset == 0 || text_[offset - 1] == '\n' || text_[offset - 1] == '\r';
}

absl::Status GbnfReader::ValidateUtf8() const {
  size_t offset = 0;
  while (offset < text_.size()) {
    const DecodedCodepoint ch = DecodeUtf8At(text_, offset);
    if (ch.length == 0) {
      return ErrorAt(offset, absl::StrFormat("invalid UTF-8 byte 0x%02X",
                                             static_cast<unsigned char>(text_[offset])));
    }
    offset += ch.length;
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> GbnfReader::ReadEscape() {
  const size_t escape_offset = pos_;  // at the backslash
  if (escape_offset + 1 >= text_.size()) {
    return ErrorAt(escape_offset, "incomplete escape at end of input");
  }
  const char kind = text_[escape_offset + 1];
  size_t hex_digits = 0;
  switch (kind) {
    case 'x':
      hex_digits = 2;
      break;
    case 'u':
      hex_digits = 4;
      break;
    case 'U':
      hex_digits = 8;
      break;
    default:
      break;
  }
  if (hex_digits > 0) {
    uint32_t codepoint = 0;
    for (size_t k = 0; k < hex_digits; ++k) {
      const int digit = HexValue(CharAt(escape_offset + 2 + k));
      if (digit < 0) {
        return ErrorAt(escape_offset,
                       absl::StrFormat("expected %d hex digits after '\\%c'", hex_digits, kind));
      }
      codepoint = (codepoint << 4) | static_cast<uint32_t>(digit);
    }
    if (codepoint > kMaxCodepoint) {
      return ErrorAt(escape_offset,
                     absl::StrCat("escape '", AsAbsl(text_.substr(escape_offset, 2 + hex_digits)),
                                  "' is beyond U+10FFFF"));
    }
    pos_ = escape_offset + 2 + hex_digits;
    return codepoint;
  }
  uint32_t codepoint = 0;
  switch (kind) {
    case 'n':
      codepoint = '\n';
      break;
    case 'r':
      codepoint = '\r';
      break;
    case 't':
      codepoint = '\t';
      break;
    case 'a':
      codepoint = 0x07;
      break;
    case 'b':
      codepoint = 0x08;
      break;
    case 'f':
      codepoint = 0x0C;
      break;
    case 'v':
      codepoint = 0x0B;
      break;
    case 'e':  // XGrammar's escape for ESC; llama.cpp has none
      codepoint = 0x1B;
      break;
    case '0':
      codepoint = 0;
      break;
    case '\\':
    case '"':
    case '\'':
    case '[':
    case ']':
    case '-':
    case '^':
    case '/':
    case '?':
    case '.':
    case '*':
    case '+':
    case '(':
    case ')':
    case '{':
    case '}':
    case '|':
    case '$':
      codepoint = static_cast<unsigned char>(kind);
      break;
    default: {
      const DecodedCodepoint escaped = DecodeUtf8At(text_, escape_offset + 1);
      return ErrorAt(escape_offset,
                     absl::StrCat("bad escape '\\",
                                  AsAbsl(text_.substr(escape_offset + 1, escaped.length)), "'"));
    }
  }
  pos_ = escape_offset + 2;
  return codepoint;
}

absl::StatusOr<uint32_t> GbnfReader::ReadCodepoint() {
  if (text_[pos_] == '\\') return ReadEscape();
  const DecodedCodepoint ch = DecodeUtf8At(text_, pos_);  // valid: the text was validated
  pos_ += ch.length;
  return ch.codepoint;
}

absl::StatusOr<std::string> GbnfReader::ReadQuoted() {
  const size_t open_offset = pos_;
  const char quote = text_[pos_++];
  std::string bytes;
  while (true) {
    if (AtEnd()) return ErrorAt(open_offset, "unterminated string literal");
    if (text_[pos_] == quote) {
      ++pos_;
      break;
    }
    const size_t char_offset = pos_;
    absl::StatusOr<uint32_t> codepoint = ReadCodepoint();
    if (!codepoint.ok()) return codepoint.status();
    if (IsSurrogate(*codepoint)) {
      return ErrorAt(char_offset,
                     absl::StrFormat("escape denotes the surrogate U+%04X, which has no UTF-8 "
                                     "encoding",
                                     *codepoint));
    }
    AppendUtf8(*codepoint, &bytes);
  }
  return bytes;
}

absl::StatusOr<ExprId> GbnfReader::ReadLiteral() {
  const size_t open_offset = pos_;
  absl::StatusOr<std::string> bytes = ReadQuoted();
  if (!bytes.ok()) return bytes.status();
  return grammar_.AddLiteral(std::move(*bytes), LocationOf(open_offset));
}

absl::StatusOr<MacroValue> GbnfReader::ReadMacroScalar() {
  MacroValue value;
  value.offset = pos_;
  const char c = CharAt(pos_);
  if (c == '"' || c == '\'') {
    absl::StatusOr<std::string> bytes = ReadQuoted();
    if (!bytes.ok()) return bytes.status();
    value.kind = MacroValue::Kind::kString;
    value.text = std::move(*bytes);
    return value;
  }
  const bool negative = c == '-' && IsDigit(CharAt(pos_ + 1));
  if (IsDigit(c) || negative) {
    if (negative) ++pos_;
    uint64_t magnitude = 0;
    while (IsDigit(CharAt(pos_))) {
      magnitude = std::min<uint64_t>(magnitude * 10 + static_cast<uint64_t>(text_[pos_] - '0'),
                                     uint64_t{1} << 40);
      ++pos_;
    }
    if (IsNameChar(CharAt(pos_))) {
      return ErrorAt(value.offset, "a macro argument that starts with a digit must be an integer");
    }
    value.kind = MacroValue::Kind::kInteger;
    value.integer = negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
    return value;
  }
  if (IsNameChar(c)) {
    pos_ = NameEndFrom(pos_);
    const std::string_view word = text_.substr(value.offset, pos_ - value.offset);
    if (word == "true" || word == "false") {
      value.kind = MacroValue::Kind::kBoolean;
      value.boolean = word == "true";
    } else {
      value.kind = MacroValue::Kind::kName;
      value.text = std::string(word);
    }
    return value;
  }
  return ErrorAt(pos_, absl::StrCat("expected a macro argument (a string, an integer, true, "
                                    "false, a rule name or a tuple) but found ",
                                    DescribeCharAt(text_, pos_)));
}

// The argument list is read with an explicit stack of open tuples (frame 0 is
// the call itself), so nesting depth costs memory, never C++ stack.
absl::StatusOr<MacroCall> GbnfReader::ReadMacroCall(std::string name, size_t name_offset) {
  MacroCall call;
  call.name = std::move(name);
  call.offset = name_offset;
  struct Frame {
    size_t open_offset;
    MacroValue tuple;         // the values read so far (frame 0: unused)
    std::string arg_name;     // frame 0: the name of the argument being read
    size_t arg_name_offset = 0;
  };
  std::vector<Frame> frames;
  frames.push_back({pos_, {}, {}, 0});
  ++pos_;  // '('
  // Hands a finished value to the innermost open frame.
  auto deliver = [&](MacroValue value) {
    if (frames.size() == 1) {
      call.arguments.push_back({std::move(frames[0].arg_name), frames[0].arg_name_offset,
                                std::move(value)});
      frames[0].arg_name.clear();
    } else {
      frames.back().tuple.elements.push_back(std::move(value));
    }
  };
  bool expect_value = true;  // after '(' or ','
  while (true) {
    SkipBlanksAndComments();
    const size_t token_offset = pos_;
    const char c = CharAt(pos_);
    if (AtEnd()) {
      return ErrorAt(frames.back().open_offset,
                     absl::StrCat("unterminated ", frames.size() == 1 ? "macro call" : "tuple",
                                  " (expected ')')"));
    }
    if (c == ')') {
      if (frames.size() == 1 && !frames[0].arg_name.empty()) {
        return ErrorAt(token_offset, absl::StrCat("expected a value for '", frames[0].arg_name,
                                                  "=' before ')'"));
      }
      if (frames.size() == 1 && expect_value && !call.arguments.empty()) {
        return ErrorAt(token_offset, "a macro call must not end with ','");
      }
      ++pos_;
      if (frames.size() == 1) break;
      MacroValue tuple = std::move(frames.back().tuple);
      frames.pop_back();
      deliver(std::move(tuple));
      expect_value = false;
      continue;
    }
    if (!expect_value) {
      if (c != ',') {
        return ErrorAt(token_offset, absl::StrCat("expected ',' or ')' in the arguments of ",
                                                  call.name, "(...) but found ",
                                                  DescribeCharAt(text_, token_offset)));
      }
      ++pos_;
      expect_value = true;
      continue;
    }
    if (c == '(') {
      if (frames.size() > options_.max_nesting) return NestingError(token_offset);
      Frame frame{token_offset, {}, {}, 0};
      frame.tuple.kind = MacroValue::Kind::kTuple;
      frame.tuple.offset = token_offset;
      frames.push_back(std::move(frame));
      ++pos_;
      continue;
    }
    // `name = value` at the top level.
    if (frames.size() == 1 && frames[0].arg_name.empty() && IsNameChar(c)) {
      const size_t name_end = NameEndFrom(pos_);
      const size_t after = SkipBlanksAndCommentsFrom(name_end);
      if (CharAt(after) == '=' && name_end > pos_) {
        frames[0].arg_name = std::string(text_.substr(pos_, name_end - pos_));
        frames[0].arg_name_offset = pos_;
        pos_ = after + 1;
        continue;
      }
    }
    absl::StatusOr<MacroValue> value = ReadMacroScalar();
    if (!value.ok()) return value.status();
    deliver(std::move(*value));
    expect_value = false;
  }
  return call;
}

absl::StatusOr<ExprId> GbnfReader::ReadRegex() {
  const size_t open_offset = pos_++;
  std::string pattern;
  while (true) {
    if (AtEnd()) return ErrorAt(open_offset, "unterminated regex (expected a closing '/')");
    const char c = text_[pos_++];
    if (c == '/') break;
    if (c == '\\' && !AtEnd()) {
      const char next = text_[pos_++];
      if (next != '/') pattern += c;  // \/ is the delimiter escaped: a plain /
      pattern += next;
      continue;
    }
    pattern += c;
  }
  uint32_t flags = 0;
  for (;; ++pos_) {
    const char f = CharAt(pos_);
    const uint32_t bit = RegexFlagForLetter(f);
    if (bit == 0) break;
    flags |= bit;
  }
  if (IsNameChar(CharAt(pos_))) {
    return ErrorAt(pos_, absl::StrCat("unknown regex flag '", AsAbsl(text_.substr(pos_, 1)),
                                      "' (flags: i m s x J E)"));
  }
  // The pattern itself is checked where it is compiled (the lowering names
  // this location).
  return grammar_.AddRegex(std::move(pattern), flags, LocationOf(open_offset));
}

absl::StatusOr<ExprId> GbnfReader::ReadCharClass() {
  const size_t open_offset = pos_++;
  const bool negated = CharAt(pos_) == '^';
  if (negated) ++pos_;
  std::vector<CodepointRange> ranges;
  while (true) {
    if (AtEnd()) return ErrorAt(open_offset, "unterminated character class");
    if (text_[pos_] == ']') {
      ++pos_;
      break;
    }
    const size_t range_offset = pos_;
    absl::StatusOr<uint32_t> lo = ReadCodepoint();
    if (!lo.ok()) return lo.status();
    uint32_t hi = *lo;
    if (CharAt(pos_) == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
      ++pos_;
      absl::StatusOr<uint32_t> range_end = ReadCodepoint();
      if (!range_end.ok()) return range_end.status();
      if (*range_end < *lo) {
        return ErrorAt(range_offset,
                       absl::StrCat("reversed range '",
                                    AsAbsl(text_.substr(range_offset, pos_ - range_offset)),
                                    "' in character class"));
      }
      hi = *range_end;
    }
    ranges.push_back({*lo, hi});
  }
  return grammar_.AddCharClass(std::move(ranges), negated, LocationOf(open_offset));
}

absl::StatusOr<uint32_t> GbnfReader::ReadRepeatBound() {
  const size_t digits_offset = pos_;
  uint64_t value = 0;
  const uint64_t limit = std::min<uint64_t>(options_.max_repeat_bound, kUnbounded - 1);
  while (IsDigit(CharAt(pos_))) {
    if (value <= limit) value = value * 10 + static_cast<uint64_t>(text_[pos_] - '0');
    ++pos_;
  }
  if (value > limit) {
    return ErrorAt(
        digits_offset,
        absl::StrCat("repetition bound ", AsAbsl(text_.substr(digits_offset, pos_ - digits_offset)),
                     " exceeds the limit of ", limit, " (max_repeat_bound)"));
  }
  return static_cast<uint32_t>(value);
}

absl::Status GbnfReader::ReadQuantifier(GroupFrame& frame, size_t open_groups) {
  const size_t quantifier_offset = pos_;
  const char op = text_[pos_];
  if (frame.items.empty()) {
    return ErrorAt(quantifier_offset,
                   absl::StrCat("'", std::string(1, op), "' must follow an expression"));
  }
  uint32_t min = 0;
  uint32_t max = kUnbounded;
  if (op == '*' || op == '+' || op == '?') {
    ++pos_;
    if (op == '+') min = 1;
    if (op == '?') max = 1;
  } else {  // '{'
    auto skip_blanks = [&] {
      while (IsBlank(CharAt(pos_))) ++pos_;
    };
    ++pos_;
    skip_blanks();
    bool has_min = false;
    if (IsDigit(CharAt(pos_))) {
      absl::StatusOr<uint32_t> bound = ReadRepeatBound();
      if (!bound.ok()) return bound.status();
      min = *bound;
      has_min = true;
      skip_blanks();
    }
    if (CharAt(pos_) == '}' && has_min) {
      max = min;
    } else if (CharAt(pos_) == ',') {
      ++pos_;
      skip_blanks();
      if (IsDigit(CharAt(pos_))) {
        absl::StatusOr<uint32_t> bound = ReadRepeatBound();
        if (!bound.ok()) return bound.status();
        max = *bound;
        skip_blanks();
      } else if (TextAt(pos_, "-1") && !IsDigit(CharAt(pos_ + 2))) {
        pos_ += 2;  // XGrammar prints an unbounded upper bound as {m, -1}
        skip_blanks();
      } else if (!has_min) {
        return ErrorAt(pos_, absl::StrCat("expected an upper bound in '{,n}' but found ",
                                          DescribeCharAt(text_, pos_)));
      }
    } else {
      return ErrorAt(pos_,
                     absl::StrCat(has_min ? "expected ',' or '}'" : "expected a number",
                                  " in repetition braces but found ", DescribeCharAt(text_, pos_)));
    }
    if (CharAt(pos_) != '}') {
      return ErrorAt(pos_, absl::StrCat("expected '}' to close the repetition opened at ",
                                        LineColOf(quantifier_offset), " but found ",
                                        DescribeCharAt(text_, pos_)));
    }
    ++pos_;
    if (min > max) {
      return ErrorAt(
          quantifier_offset,
          absl::StrFormat("repetition bounds {%d,%d}: the minimum exceeds the maximum", min, max));
    }
  }
  GroupFrame::Item& item = frame.items.back();
  if (open_groups + item.quantifiers + 1 > options_.max_nesting) {
    return NestingError(quantifier_offset);
  }
  item.expr = grammar_.AddRepeat(item.expr, min, max, LocationOf(quantifier_offset));
  ++item.quantifiers;
  return absl::OkStatus();
}

void GbnfReader::FinishSequence(GroupFrame& frame) {
  std::vector<ExprId> children;
  if (frame.items.size() == 1) {
    children.push_back(frame.items[0].expr);
  } else {
    for (const GroupFrame::Item& item : frame.items) {
      const Expr& expr = grammar_.exprs[item.expr];
      if (expr.kind == ExprKind::kSequence) {  // a parenthesized sequence: splice it in
        children.insert(children.end(), expr.children.begin(), expr.children.end());
      } else {
        children.push_back(item.expr);
      }
    }
  }
  const SourceLocation loc =
      children.empty() ? LocationOf(frame.sequence_offset) : grammar_.exprs[children[0]].loc;
  frame.alternatives.push_back(grammar_.AddSequence(std::move(children), loc));
  frame.items.clear();
}

ExprId GbnfReader::FinishGroup(GroupFrame& frame) {
  FinishSequence(frame);
  if (frame.alternatives.size() == 1) return frame.alternatives[0];
  std::vector<ExprId> children;
  for (ExprId alternative : frame.alternatives) {
    const Expr& expr = grammar_.exprs[alternative];
    if (expr.kind == ExprKind::kChoice) {  // a parenthesized choice: splice it in
      children.insert(children.end(), expr.children.begin(), expr.children.end());
    } else {
      children.push_back(alternative);
    }
  }
  const SourceLocation loc = grammar_.exprs[children[0]].loc;
  return grammar_.AddChoice(std::move(children), loc);
}

absl::StatusOr<ExprId> GbnfReader::ReadRuleBody() {
  std::vector<GroupFrame> frames(1);
  frames[0].open_offset = frames[0].sequence_offset = pos_;
  // A rule reference that stood first on its line, kept for one token so that
  // `value = ...` on a new line can be reported as a definition missing its '::='.
  std::string line_leading_name;
  while (true) {
    SkipBlanksAndComments();
    const std::string previous_line_leading_name = std::move(line_leading_name);
    line_leading_name.clear();
    const size_t token_offset = pos_;
    const char c = CharAt(pos_);
    const bool at_next_rule = !AtEnd() && IsNameChar(c) && RuleDefinitionStartsAt(pos_);
    if (AtEnd() || at_next_rule) {
      if (frames.size() > 1) {
        return ErrorAt(token_offset,
                       absl::StrCat("expected ')' to close '(' opened at ",
                                    LineColOf(frames.back().open_offset), " but found ",
                                    at_next_rule ? "the next rule definition" : "end of input"));
      }
      break;
    }
    GroupFrame& frame = frames.back();
    absl::StatusOr<ExprId> item = ExprId{0};
    switch (c) {
      case '|':
        FinishSequence(frame);
        frame.sequence_offset = ++pos_;
        continue;
      case '(': {
        const size_t after_paren = SkipBlanksAndCommentsFrom(pos_ + 1);
        const bool lookahead = CharAt(after_paren) == '=';
        if (lookahead && frames.size() > 1) {
          return ErrorAt(token_offset,
                         "a lookahead assertion '(= ...)' must end the rule body, outside "
                         "any parentheses");
        }
        if (frames.size() > options_.max_nesting) return NestingError(token_offset);
        pos_ = lookahead ? after_paren + 1 : pos_ + 1;
        GroupFrame group;
        group.open_offset = token_offset;
        group.sequence_offset = pos_;
        group.lookahead = lookahead;
        frames.push_back(std::move(group));
        continue;
      }
      case ')': {
        if (frames.size() == 1) {
          return ErrorAt(token_offset, "unexpected ')' without a matching '('");
        }
        ++pos_;
        const ExprId group = FinishGroup(frame);
        if (frame.lookahead) {
          const size_t open_offset = frame.open_offset;
          frames.pop_back();
          lookaheads_.push_back({static_cast<RuleId>(grammar_.rules.size() - 1), group,
                                 LocationOf(open_offset)});
          const size_t next = SkipBlanksAndCommentsFrom(pos_);
          if (next < text_.size() && !(IsNameChar(text_[next]) && RuleDefinitionStartsAt(next))) {
            return ErrorAt(next, absl::StrCat("a lookahead assertion '(= ...)' must end the rule "
                                              "body, but ",
                                              DescribeCharAt(text_, next), " follows it"));
          }
          continue;
        }
        frames.pop_back();
        frames.back().items.push_back({group, 0});
        continue;
      }
      case '*':
      case '+':
      case '?':
      case '{': {
        absl::Status status = ReadQuantifier(frame, frames.size() - 1);
        if (!status.ok()) return status;
        continue;
      }
      case '"':
      case '\'':
        item = ReadLiteral();
        break;
      case '[':
        item = ReadCharClass();
        break;
      case '/':
        item = ReadRegex();
        break;
      case '.':
        ++pos_;
        item = grammar_.AddCharClass({{0, kMaxCodepoint}}, false, LocationOf(token_offset));
        break;
      case '<':
        return ErrorAt(token_offset,
                       "token references like '<...>' are not supported "
                       "(zapgram grammars match bytes, not token ids)");
      case '!':
        if (CharAt(pos_ + 1) == '<') {
          return ErrorAt(token_offset,
                         "token references like '!<...>' are not supported "
                         "(zapgram grammars match bytes, not token ids)");
        }
        [[fallthrough]];
      default:
        if (!IsNameChar(c)) return UnexpectedTokenError(token_offset, previous_line_leading_name);
        item = ReadReference(&line_leading_name);
        break;
    }
    if (!item.ok()) return item.status();
    frame.items.push_back({*item, 0});
  }
  return FinishGroup(frames[0]);
}

absl::StatusOr<ExprId> GbnfReader::ReadReference(std::string* line_leading_name) {
  const size_t name_offset = pos_;
  pos_ = NameEndFrom(pos_);
  std::string name(text_.substr(name_offset, pos_ - name_offset));
  // Only `Name(` with nothing in between is a macro call, so that `Token ("x")`
  // stays a reference followed by a group, as Dump prints it.
  if (CharAt(pos_) == '(' && IsXGrammarMacroName(name)) {
    absl::StatusOr<MacroCall> call = ReadMacroCall(std::move(name), name_offset);
    if (!call.ok()) return call.status();
    return LowerXGrammarMacro(*call, *this);
  }
  if (IsLineLeading(name_offset)) *line_leading_name = name;
  return ReferenceRule(name, name_offset);
}

ExprId GbnfReader::ReferenceRule(std::string_view name, size_t offset) {
  const ExprId ref = grammar_.AddRuleRef(0, LocationOf(offset));  // bound in ResolveReferences
  references_.push_back({ref, std::string(name), offset});
  return ref;
}

absl::Status GbnfReader::UnexpectedTokenError(size_t offset,
                                              std::string_view previous_line_leading_name) const {
  if (!previous_line_leading_name.empty()) {
    return ErrorAt(offset, absl::StrCat("expected '::=' after rule name '",
                                        AsAbsl(previous_line_leading_name), "'"));
  }
  if (TextAt(offset, kDefinitionOperator)) {
    return ErrorAt(offset, "unexpected '::=' (a rule name must precede it)");
  }
  return ErrorAt(offset, absl::StrCat("unexpected ", DescribeCharAt(text_, offset),
                                      "; expected a literal, a character class, a rule name, "
                                      "'(', '|' or a quantifier"));
}

absl::Status GbnfReader::ResolveReferences() {
  for (const PendingReference& reference : references_) {
    const auto it = rule_ids_.find(reference.name);
    if (it == rule_ids_.end()) {
      return ErrorAt(reference.offset, absl::StrCat("undefined symbol '", reference.name, "'"));
    }
    grammar_.exprs[reference.expr].rule = it->second;
  }
  return absl::OkStatus();
}

// Splicing groups into their parents leaves the group's own node unreferenced;
// keep only the expressions reachable from some rule body, in their order
// (children stay before parents), and renumber.
void GbnfReader::DropUnreferencedExprs() {
  std::vector<bool> reachable(grammar_.exprs.size(), false);
  std::vector<ExprId> work;
  for (const Rule& rule : grammar_.rules) work.push_back(rule.body);
  while (!work.empty()) {
    const ExprId id = work.back();
    work.pop_back();
    if (reachable[id]) continue;
    reachable[id] = true;
    for (ExprId child : grammar_.exprs[id].children) work.push_back(child);
  }
  std::vector<ExprId> new_id(grammar_.exprs.size(), 0);
  std::vector<Expr> kept;
  for (ExprId id = 0; id < grammar_.exprs.size(); ++id) {
    if (!reachable[id]) continue;
    new_id[id] = static_cast<ExprId>(kept.size());
    kept.push_back(std::move(grammar_.exprs[id]));
  }
  for (Expr& expr : kept) {
    for (ExprId& child : expr.children) child = new_id[child];
  }
  for (Rule& rule : grammar_.rules) rule.body = new_id[rule.body];
  grammar_.exprs = std::move(kept);
}

absl::StatusOr<Grammar> GbnfReader::Read() {
  line_starts_.push_back(0);
  for (size_t k = 0; k < text_.size(); ++k) {
    if (text_[k] == '\n') line_starts_.push_back(k + 1);
  }
  if (absl::Status status = ValidateUtf8(); !status.ok()) return status;
  if (TextAt(0, "\xEF\xBB\xBF")) pos_ = 3;  // byte order mark

  while (true) {
    SkipBlanksAndComments();
    if (AtEnd()) break;
    const size_t name_offset = pos_;
    if (!IsNameChar(text_[pos_])) {
      if (TextAt(pos_, kDefinitionOperator)) {
        return ErrorAt(name_offset, "expected a rule name before '::='");
      }
      return ErrorAt(name_offset,
                     absl::StrCat("expected a rule name but found ", DescribeCharAt(text_, pos_)));
    }
    pos_ = NameEndFrom(pos_);
    std::string name(text_.substr(name_offset, pos_ - name_offset));
    RuleAttributes attributes;
    if (const size_t attributes_end = AttributeBlockEndFrom(pos_);
        attributes_end != std::string_view::npos &&
        TextAt(SkipBlanksAndCommentsFrom(attributes_end), kDefinitionOperator)) {
      size_t error_offset = 0;
      std::string error;
      if (!ParseRuleAttributes(text_.substr(pos_ + 1, attributes_end - pos_ - 2), &attributes,
                               &error_offset, &error)) {
        return ErrorAt(pos_ + 1 + error_offset, absl::StrCat(error, " (rule '", name, "')"));
      }
      pos_ = attributes_end;
    }
    SkipBlanksAndComments();
    if (!TextAt(pos_, kDefinitionOperator)) {
      return ErrorAt(pos_, absl::StrCat("expected '::=' after rule name '", name, "'"));
    }
    pos_ += kDefinitionOperator.size();
    const auto [existing, inserted] =
        rule_ids_.try_emplace(name, static_cast<RuleId>(grammar_.rules.size()));
    if (!inserted) {
      const SourceLocation first = grammar_.rules[existing->second].loc;
      return ErrorAt(name_offset, absl::StrFormat("duplicate rule '%s' (first defined at %d:%d)",
                                                  name, first.line, first.col));
    }
    grammar_.rules.push_back({std::move(name), 0, LocationOf(name_offset)});
    const size_t rule_index = grammar_.rules.size() - 1;
    ApplyRuleAttributes(attributes, grammar_.rules[rule_index]);
    if (attributes.lazy) lazy_rules_.push_back({static_cast<RuleId>(rule_index), name_offset});
    absl::StatusOr<ExprId> body = ReadRuleBody();
    if (!body.ok()) return body.status();
    grammar_.rules[rule_index].body = *body;
  }

  if (absl::Status status = ResolveReferences(); !status.ok()) return status;
  const auto root = rule_ids_.find(AsAbsl(options_.root_rule));
  if (root == rule_ids_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(AsAbsl(source_name_), ": no rule named '", AsAbsl(options_.root_rule), "'"));
  }
  grammar_.root = root->second;
  // Implied assertions change nothing and are dropped with the other
  // orphaned expressions; the others are refused (grammar/rule_lookahead.h).
  if (absl::Status status = CheckRuleLookaheadsImplied(grammar_, lookaheads_); !status.ok()) {
    return status;
  }
  // Lazy rules become their regular lazy language (grammar/rule_attributes.h),
  // after the lookaheads, which are proved of the grammar as written.
  for (const LazyRule& lazy : lazy_rules_) {
    if (absl::Status status = MakeRuleLazy(grammar_, lazy.rule); !status.ok()) {
      return ErrorAt(lazy.offset, std::string_view(status.message().data(), status.message().size()));
    }
  }
  DropUnreferencedExprs();
  if (absl::Status status = grammar_.Validate(); !status.ok()) return status;
  return std::move(grammar_);
}

}  // namespace

absl::StatusOr<Grammar> ReadGbnf(std::string_view text, std::string_view source_name,
                                 const GbnfReadOptions& options) {
  return GbnfReader(text, source_name, options).Read();
}

}  // namespace zapgram::grammar
