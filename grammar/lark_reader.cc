// Lark reader: Lark grammar text -> LarkGrammar (grammar/lark_reader.h).
//
// How it works. Like the GBNF reader, a hand-written scanner fused with a
// parser that keeps its own stack; nothing on the C++ call stack grows with
// the input (the one exception, imports, is bounded by max_import_depth).
// One LarkReader reads one text (a "module"); the top-level reader then
// builds the result. Steps:
//
//   1. Validation: the text must be UTF-8; a table of line starts maps byte
//      offsets to line:col for messages.
//   2. Imports first, as Lark does: every line starting with `%import` is
//      parsed up front and the imports are grouped by module path, so each
//      imported module is read once per importing file with all the names
//      asked of it (Lark's GrammarBuilder.load_grammar / do_import).
//   3. Top level: Lark is line-oriented. Each definition or directive starts
//      a line: `[!?_]name[{params}][.prio]: body`, `%directive ...`. A body
//      ends at a newline, unless the next line (after blank and comment
//      lines) starts with `|`, or a ( [ or { is still open (inside brackets
//      newlines are blanks; Lark's own parser is stricter there).
//   4. Bodies: a stack of group frames (frame 0 is the body, one frame per
//      open ( [ or template-argument {). `|` finishes a sequence, `,` an
//      argument, `)`/`]`/`}` pops a frame, and a postfix operator (? * + ~n
//      ~n..m; one per item, as in Lark) wraps the last item in a kRepeat.
//      `[x]` is read as x? (the same language; Lark's maybe_placeholders only
//      changes the tree).
//   5. Names become arena rules on first mention (rules and terminals share
//      the arena; LarkGrammar::is_terminal tells them apart).
//   6. %override and %extend are applied after the whole text is read, in
//      text order; the target must be imported or defined earlier in the text.
//   7. The top-level reader checks that every mentioned name is defined,
//      imported or %declare'd ("undefined ..." at its first use), that
//      terminals are not recursive, and then builds the result: a fresh
//      arena in which templates are expanded (step "Templates" below).
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
// Templates (Lark's `_sep{x, sep}: x (sep x)*`, used as `_sep{item, ","}`).
// While a module is read, a template definition is an ordinary rule listed
// in `params_`; a parameter inside its body is a placeholder node (kEmpty,
// listed in `param_refs_`), and a use is a kRuleRef to the template whose
// `children` are the argument expressions (listed in `template_uses_` with
// its "file:line:col"). Arguments may be any expansion (Lark allows single
// values: names, literals, regexes, ranges, template uses). The build copies
// every non-template definition into a fresh arena; at a use it copies the
// arguments into a scratch arena, names the instance as Lark does,
// `name{arg,arg}` with each argument's dump (so equal argument tuples share
// one rule and no user name can clash: `{` is not a name character), and
// queues the instance, whose body is the template's with the parameters
// replaced by copies of the arguments. The queue is a loop, not recursion;
// a template instantiating itself with growing arguments stops at
// LarkReadOptions::max_template_instances or max_template_exprs with an
// error naming the use. Templates disappear from the result.
//
// Imports. `%import common...` reads zapgram's built-in text
// (grammar/lark_common.cc); any other module is read through
// LarkReadOptions::loader: `.a.b` relative to the importing file's folder,
// `a.b` in base_dir then lark_grammars_dir. The module is read by a child
// LarkReader (its own imports first, recursively; its %ignore lines are
// dropped, as in Lark), and what the imported names need is copied in
// (Lark's _remove_unused: the names, plus every rule and terminal a copied
// rule refers to; terminals refer to no rule). Copied names are renamed with
// Lark's mangling (_get_mangle): an imported name takes its alias (`-> Y`,
// or itself), any other name `prefix__name` (`_prefix__name` for a leading
// `_`) where prefix is the dotted module path joined by `__`, so
// dependencies never clash with the importer's names; nested imports
// compose the prefixes. Inside copied terminals, references to other
// terminals are inlined (Lark's resolve_term_references), so a terminal
// needed only by another terminal is not copied. A file already being read
// higher up the import chain is an import cycle (an error). Copied
// expressions lose their source locations (they point into another file);
// the definitions carry the location of the %import.
#include "grammar/lark_reader.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "grammar/utf8.h"

namespace zapgram::grammar {
namespace {

constexpr size_t kNone = static_cast<size_t>(-1);
constexpr RuleId kNoRule = static_cast<RuleId>(-1);
constexpr std::string_view kCommonSource = "<builtin:lark-common>";

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
enum class DefinitionMode { kDefine, kOverride, kExtend };

struct Frame {
  char open = 0;  // '(' '[' or '{' (template arguments); 0 for the body
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
  // '{' frames: the template and the arguments read so far.
  RuleId template_rule = 0;
  size_t name_offset = 0;
  std::vector<ExprId> args;
};

struct Body {
  ExprId expr = 0;
  std::vector<ExprId> alternatives;
  std::vector<std::string> aliases;
};

// One definition as read: `[!?]name[{params}][.prio]: body`.
struct Definition {
  RuleId id = 0;
  bool terminal = false;
  size_t name_offset = 0;
  bool keep = false;
  bool inline_children = false;
  bool has_priority = false;
  int32_t priority = 0;
  bool has_params = false;
  std::vector<std::string> params;
  Body body;
};

// An %override or %extend, applied after the text is read.
struct Modification {
  DefinitionMode mode;
  size_t directive_offset;
  Definition def;
};

// One name asked of a module: `%import mod.NAME -> ALIAS` or `%import mod (NAME, ...)`.
struct ImportRequest {
  std::string name;
  std::string alias;
  size_t offset;  // of NAME
};

// All %import lines of one file naming the same module.
struct ImportGroup {
  bool relative = false;
  std::vector<std::string> parts;  // dotted path
  size_t path_offset = 0;          // of the first mention
  std::vector<ImportRequest> requests;
};

class LarkReader;

// Shared by a top-level reader and the readers of the modules it imports.
struct ImportContext {
  std::vector<std::string> chain;  // files being read, outermost first
};

// One loaded module: its text (owned here; the reader views it) and reader.
struct LoadedModule {
  std::string text;
  std::string path;
  std::unique_ptr<LarkReader> reader;
};

class LarkReader {
 public:
  LarkReader(std::string_view text, std::string_view source_name, const LarkReadOptions& options,
             ImportContext* context, std::string dir)
      : text_(text), source_name_(source_name), options_(options), context_(context), dir_(std::move(dir)) {
    out_.arena.source_name = std::string(source_name);
  }

  // Reads a top-level text: ReadModule, then checks and builds the result.
  absl::StatusOr<LarkGrammar> Read();

  // Reads the text, its imports, and applies its %override/%extend.
  absl::Status ReadModule();

 private:
  friend struct ModuleCopier;

  SourceLocation LocationOf(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    return {static_cast<uint32_t>(line), static_cast<uint32_t>(offset - line_starts_[line - 1] + 1)};
  }
  std::string Site(size_t offset) const {
    const SourceLocation loc = LocationOf(std::min(offset, text_.size()));
    return absl::StrFormat("%s:%d:%d", source_name_, loc.line, loc.col);
  }
  absl::Status ErrorAt(size_t offset, std::string_view message) const {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s", Site(offset), message));
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
  std::string AlreadyDefined(std::string_view name, RuleId id) const {
    const SourceLocation prev = LocationOf(def_offset_[id]);
    return absl::StrFormat("'%s' is already defined at %d:%d%s", name, prev.line, prev.col,
                           imported_[id] ? " (by %import)" : "");
  }

  absl::Status ValidateUtf8();
  RuleId Symbol(std::string_view name, bool terminal, size_t use_offset);
  absl::StatusOr<std::string> ReadString();
  absl::StatusOr<ExprId> ReadStringItem();
  absl::StatusOr<ExprId> ReadRegexItem();
  absl::StatusOr<uint32_t> ReadNumber();
  absl::StatusOr<Body> ReadBody(BodyKind kind);
  absl::Status ReadDefinition(DefinitionMode mode);
  void Register(Definition def);
  absl::Status ReadDirective();
  absl::Status ReadImport(std::vector<ImportGroup>* groups);
  absl::Status ReadAllImports();
  absl::StatusOr<LoadedModule*> LoadModule(const ImportGroup& group);
  absl::Status ImportGroupNames(const ImportGroup& group);
  absl::Status ApplyModifications();
  absl::Status CheckTemplateUses() const;
  absl::Status CheckUndefined(const std::vector<uint8_t>* only, std::string_view suffix) const;
  absl::Status CheckTerminalCycles() const;
  absl::Status ExpectEndOfLine();
  absl::StatusOr<std::vector<std::pair<std::string_view, size_t>>> ReadNameList(char close, std::string_view what);
  absl::StatusOr<LarkGrammar> Build();

  ExprId AddRegex(std::string pattern, uint32_t flags, SourceLocation loc) {
    Expr e;
    e.kind = ExprKind::kRegex;
    e.literal = std::move(pattern);
    e.flags = flags;
    e.loc = loc;
    out_.arena.exprs.push_back(std::move(e));
    return static_cast<ExprId>(out_.arena.exprs.size() - 1);
  }
  ExprId AddNode(Expr e) {
    out_.arena.exprs.push_back(std::move(e));
    return static_cast<ExprId>(out_.arena.exprs.size() - 1);
  }

  std::string_view text_;
  std::string_view source_name_;
  const LarkReadOptions& options_;
  ImportContext* context_;
  std::string dir_;  // folder of this text, for relative imports
  size_t pos_ = 0;
  std::vector<size_t> line_starts_;
  // The module as read. out_.istring_exprs is unused here (istrings_ is);
  // out_.rules also holds template definitions (listed in params_).
  LarkGrammar out_;
  absl::flat_hash_map<std::string, RuleId> ids_;
  std::vector<size_t> first_use_;   // per arena rule: first mention in this text
  std::vector<size_t> def_offset_;  // per arena rule; kNone until defined
  std::vector<bool> imported_;      // per arena rule: defined by an %import
  std::vector<bool> dependency_;    // per arena rule: copied only as an import's dependency
  absl::flat_hash_set<ExprId> istrings_;
  absl::flat_hash_map<RuleId, std::vector<std::string>> params_;  // template definitions
  absl::flat_hash_map<ExprId, uint32_t> param_refs_;              // placeholder -> parameter index
  absl::flat_hash_map<ExprId, std::string> template_uses_;        // use -> "file:line:col"
  const std::vector<std::string>* current_params_ = nullptr;      // while reading a template body
  // Rule references read from this text, for the template checks:
  // (expr, offset, is a use with arguments).
  struct OwnRef {
    ExprId expr;
    size_t offset;
    bool use;
  };
  std::vector<OwnRef> own_refs_;
  std::vector<Modification> mods_;
  std::vector<std::unique_ptr<LoadedModule>> modules_;
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
  imported_.push_back(false);
  dependency_.push_back(false);
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
  auto closer = [](char open) { return open == '(' ? ')' : open == '[' ? ']' : open == '{' ? '}' : 0; };
  while (true) {
    pos_ = SkipInlineFrom(pos_);
    Frame& top = stack.back();
    const char c = At(pos_);
    if (AtEnd() || c == '\n') {
      if (stack.size() > 1) {
        if (AtEnd()) {
          return ErrorAt(pos_, absl::StrFormat("expected '%c' to close the '%c' at %d:%d", closer(top.open),
                                               top.open, LocationOf(top.open_offset).line,
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
    if (top.after_alias && c != '|' && c != ')' && c != ']' && c != '}' && c != ',') {
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
        return ErrorAt(pos_, absl::StrFormat("nesting deeper than %d (max_nesting)", options_.max_nesting));
      }
      Frame f;
      f.open = c;
      f.open_offset = pos_;
      ++pos_;
      f.sequence_offset = pos_;
      stack.push_back(std::move(f));
      continue;
    }
    if (c == ',' || c == '}') {
      if (top.open != '{') {
        return ErrorAt(pos_, stack.size() == 1 && c == '}'
                                 ? std::string("unexpected '}' with no open '{'")
                                 : top.open == 0 ? absl::StrFormat("unexpected '%c' outside template arguments", c)
                                                 : absl::StrFormat("expected '%c', found '%c'", closer(top.open), c));
      }
      if (!top.alias.empty()) return ErrorAt(pos_, "an alias '->' may only end a rule's alternative");
      if (top.items.empty()) return ErrorAt(pos_, absl::StrFormat("expected a template argument before '%c'", c));
      FinishSequence(out_.arena, top, LocationOf(top.sequence_offset));
      top.args.push_back(out_.arena.AddChoice(std::move(top.alternatives), LocationOf(top.sequence_offset)));
      top.alternatives.clear();
      top.aliases.clear();
      ++pos_;
      top.sequence_offset = pos_;
      if (c == ',') continue;
      Expr use;
      use.kind = ExprKind::kRuleRef;
      use.rule = top.template_rule;
      use.children = std::move(top.args);
      use.loc = LocationOf(top.name_offset);
      const ExprId id = AddNode(std::move(use));
      template_uses_.emplace(id, Site(top.name_offset));
      own_refs_.push_back({id, top.name_offset, true});
      stack.pop_back();
      stack.back().items.push_back({id, false});
      continue;
    }
    if (c == ')' || c == ']') {
      const char want = closer(top.open);
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
        return ErrorAt(pos_, absl::StrFormat("nesting deeper than %d (max_nesting)", options_.max_nesting));
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
      const size_t after = SkipInlineFrom(pos_);
      const bool use = At(after) == '{';
      int param = -1;
      if (current_params_ != nullptr) {
        auto it = std::find(current_params_->begin(), current_params_->end(), name);
        if (it != current_params_->end()) param = static_cast<int>(it - current_params_->begin());
      }
      if (use) {
        if (kind != BodyKind::kRule || name_kind != 0) {
          return ErrorAt(offset, absl::StrFormat("template use '%s{...}': templates are rules, usable in rules only",
                                                 name));
        }
        if (param >= 0) {
          return ErrorAt(offset, absl::StrFormat("the template parameter '%s' is used as a template; zapgram "
                                                 "does not support templates passed as arguments", name));
        }
        if (stack.size() >= options_.max_nesting) {
          return ErrorAt(after, absl::StrFormat("nesting deeper than %d (max_nesting)", options_.max_nesting));
        }
        Frame f;
        f.open = '{';
        f.open_offset = after;
        f.sequence_offset = after + 1;
        f.template_rule = Symbol(name, false, offset);
        f.name_offset = offset;
        pos_ = after + 1;
        stack.push_back(std::move(f));
        continue;
      }
      if (param >= 0) {
        Expr placeholder;
        placeholder.kind = ExprKind::kEmpty;
        placeholder.loc = LocationOf(offset);
        item = AddNode(std::move(placeholder));
        param_refs_.emplace(item, static_cast<uint32_t>(param));
      } else {
        if (kind == BodyKind::kTerminal && name_kind == 0) {
          return ErrorAt(offset, absl::StrFormat("a terminal cannot refer to the rule '%s'", name));
        }
        item = out_.arena.AddRuleRef(Symbol(name, name_kind == 1, offset), LocationOf(offset));
        if (name_kind == 0) own_refs_.push_back({item, offset, false});
      }
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

absl::Status LarkReader::ReadDefinition(DefinitionMode mode) {
  const size_t start = pos_;
  Definition def;
  while (At(pos_) == '!' || At(pos_) == '?') {
    (At(pos_) == '!' ? def.keep : def.inline_children) = true;
    ++pos_;
  }
  def.name_offset = pos_;
  const std::string_view name = ReadName();
  if (name.empty()) {
    return ErrorAt(pos_, absl::StrCat("expected a rule or terminal name, found ", Describe(pos_)));
  }
  const int name_kind = NameKind(name);
  if (name_kind < 0) return ErrorAt(def.name_offset, absl::StrFormat("'%s' is neither a rule nor a terminal name", name));
  def.terminal = name_kind == 1;
  if (def.terminal && (def.keep || def.inline_children)) {
    return ErrorAt(start, absl::StrFormat("'?' and '!' apply to rules, not to the terminal '%s'", name));
  }
  pos_ = SkipInlineFrom(pos_);
  if (At(pos_) == '{') {
    if (def.terminal) {
      return ErrorAt(pos_, absl::StrFormat("'%s{...}': templates are rules; Lark has no terminal templates", name));
    }
    def.has_params = true;
    ++pos_;
    auto params = ReadNameList('}', "a template parameter");
    if (!params.ok()) return params.status();
    for (const auto& [param, offset] : *params) {
      if (NameKind(param) != 0) {
        return ErrorAt(offset, absl::StrFormat("a template parameter must be a rule name, not '%s'", param));
      }
      if (std::find(def.params.begin(), def.params.end(), param) != def.params.end()) {
        return ErrorAt(offset, absl::StrFormat("duplicate template parameter '%s'", param));
      }
      def.params.emplace_back(param);
    }
    pos_ = SkipInlineFrom(pos_);
  }
  if (At(pos_) == '.') {
    pos_ = SkipInlineFrom(pos_ + 1);
    bool negative = false;
    if (At(pos_) == '-' || At(pos_) == '+') negative = At(pos_++) == '-';
    auto n = ReadNumber();
    if (!n.ok()) return n.status();
    def.priority = negative ? -static_cast<int32_t>(*n) : static_cast<int32_t>(*n);
    def.has_priority = true;
    pos_ = SkipInlineFrom(pos_);
  }
  if (At(pos_) != ':') {
    return ErrorAt(pos_, absl::StrFormat("expected ':' after '%s', found %s", name, Describe(pos_)));
  }
  ++pos_;
  def.id = Symbol(name, def.terminal, kNone);
  if (mode == DefinitionMode::kDefine && def_offset_[def.id] != kNone) {
    return ErrorAt(def.name_offset, AlreadyDefined(name, def.id));
  }
  if (out_.is_terminal[def.id] != def.terminal && def_offset_[def.id] == kNone) {
    return ErrorAt(def.name_offset, "internal: a name of both kinds");
  }
  if (out_.is_terminal[def.id] != def.terminal) {
    // Only an import can give a name the other kind: Lark keeps the kind of
    // a renamed dependency (`csv__INT` is a terminal).
    return ErrorAt(def.name_offset, absl::StrFormat("'%s' is the imported %s defined at %d:%d; it cannot be "
                                                    "modified as a %s", name,
                                                    out_.is_terminal[def.id] ? "terminal" : "rule",
                                                    LocationOf(def_offset_[def.id]).line,
                                                    LocationOf(def_offset_[def.id]).col,
                                                    def.terminal ? "terminal" : "rule"));
  }
  if (mode == DefinitionMode::kDefine) def_offset_[def.id] = def.name_offset;
  current_params_ = def.has_params ? &def.params : nullptr;
  auto body = ReadBody(def.terminal ? BodyKind::kTerminal : BodyKind::kRule);
  current_params_ = nullptr;
  if (!body.ok()) return body.status();
  def.body = std::move(*body);
  if (mode == DefinitionMode::kDefine) {
    Register(std::move(def));
  } else {
    mods_.push_back({mode, start, std::move(def)});
  }
  return absl::OkStatus();
}

// Makes `def` the definition of def.id (new, or replacing the current one).
void LarkReader::Register(Definition def) {
  const RuleId id = def.id;
  const std::string& name = out_.arena.rules[id].name;
  Rule& rule = out_.arena.rules[id];
  rule.body = def.body.expr;
  rule.loc = LocationOf(def.name_offset);
  const bool replace = out_.index_of[id] >= 0;
  const auto index = static_cast<size_t>(out_.index_of[id]);
  if (def.terminal) {
    LarkTerminal t;
    t.rule = id;
    t.priority = def.priority;
    t.has_priority = def.has_priority;
    t.hidden = name[0] == '_';
    t.loc = rule.loc;
    if (replace) {
      if (out_.terminals[index].declared) {
        out_.declared.erase(std::find(out_.declared.begin(), out_.declared.end(), name));
      }
      out_.terminals[index] = t;
    } else {
      out_.index_of[id] = static_cast<int32_t>(out_.terminals.size());
      out_.terminals.push_back(t);
    }
    return;
  }
  LarkRule r;
  r.rule = id;
  r.inline_children = def.inline_children;
  r.hidden = name[0] == '_';
  r.keep_all_tokens = def.keep;
  r.priority = def.priority;
  r.has_priority = def.has_priority;
  r.alternatives = std::move(def.body.alternatives);
  r.aliases = std::move(def.body.aliases);
  r.loc = rule.loc;
  if (def.has_params) {
    params_[id] = std::move(def.params);
  } else {
    params_.erase(id);
  }
  if (replace) {
    out_.rules[index] = std::move(r);
  } else {
    out_.index_of[id] = static_cast<int32_t>(out_.rules.size());
    out_.rules.push_back(std::move(r));
  }
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
      if (def_offset_[id] != kNone) return ErrorAt(offset, AlreadyDefined(name, id));
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
  if (word == "import") return ReadImport(nullptr);  // already done by ReadAllImports
  if (word == "override" || word == "extend") {
    pos_ = SkipInlineFrom(pos_);
    return ReadDefinition(word == "override" ? DefinitionMode::kOverride : DefinitionMode::kExtend);
  }
  return ErrorAt(start, absl::StrFormat(
                            "unknown directive '%%%s' (expected %%ignore, %%import, %%declare, %%override or %%extend)",
                            word));
}

// After "%import": reads the line; adds its names to `groups` (when not null).
absl::Status LarkReader::ReadImport(std::vector<ImportGroup>* groups) {
  pos_ = SkipInlineFrom(pos_);
  const size_t path_offset = pos_;
  const bool relative = At(pos_) == '.';
  if (relative) ++pos_;
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
  std::vector<ImportRequest> requests;
  if (At(pos_) == '(') {
    ++pos_;
    auto names = ReadNameList(')', "a name");
    if (!names.ok()) return names.status();
    for (const auto& [name, offset] : *names) requests.push_back({std::string(name), std::string(name), offset});
  } else {
    if (parts.size() < 2) {
      return ErrorAt(path_offset, "expected 'module.NAME' or 'module (NAME, ...)' after '%import'");
    }
    requests.push_back({std::string(parts.back().first), std::string(parts.back().first), parts.back().second});
    parts.pop_back();
    if (At(pos_) == '-' && At(pos_ + 1) == '>') {
      pos_ = SkipInlineFrom(pos_ + 2);
      const size_t offset = pos_;
      const std::string_view alias = ReadName();
      if (alias.empty()) return ErrorAt(offset, absl::StrCat("expected a name after '->', found ", Describe(offset)));
      requests.back().alias = std::string(alias);
    }
  }
  if (absl::Status s = ExpectEndOfLine(); !s.ok()) return s;
  if (groups == nullptr) return absl::OkStatus();
  std::vector<std::string> path;
  for (const auto& part : parts) path.emplace_back(part.first);
  ImportGroup* group = nullptr;
  for (ImportGroup& g : *groups) {
    if (g.relative == relative && g.parts == path) group = &g;
  }
  if (group == nullptr) {
    groups->push_back({relative, std::move(path), path_offset, {}});
    group = &groups->back();
  }
  for (ImportRequest& r : requests) {
    // As in Lark, a name imported twice from one module takes the last alias.
    auto it = std::find_if(group->requests.begin(), group->requests.end(),
                           [&](const ImportRequest& q) { return q.name == r.name; });
    if (it != group->requests.end()) {
      *it = std::move(r);
    } else {
      group->requests.push_back(std::move(r));
    }
  }
  return absl::OkStatus();
}

// Lark reads every %import of a file before its definitions: so does this.
absl::Status LarkReader::ReadAllImports() {
  std::vector<ImportGroup> groups;
  for (size_t line_start : line_starts_) {
    size_t p = line_start;
    if (p == 0 && text_.substr(0, 3) == "\xEF\xBB\xBF") p = 3;
    while (p < text_.size() && IsInlineBlank(text_[p])) ++p;
    if (text_.substr(p, 7) != "%import" || IsNameChar(At(p + 7))) continue;
    pos_ = p + 7;
    if (absl::Status s = ReadImport(&groups); !s.ok()) return s;
  }
  pos_ = 0;
  for (const ImportGroup& group : groups) {
    if (absl::Status s = ImportGroupNames(group); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<LoadedModule*> LarkReader::LoadModule(const ImportGroup& group) {
  const std::string display = absl::StrCat(group.relative ? "." : "", absl::StrJoin(group.parts, "."));
  auto module = std::make_unique<LoadedModule>();
  std::string dir;
  if (!group.relative && group.parts.size() == 1 && group.parts[0] == "common") {
    module->text = std::string(LarkCommonText());
    module->path = std::string(kCommonSource);
  } else {
    std::vector<std::string> folders;
    if (group.relative) {
      folders.push_back(dir_);
    } else {
      folders.push_back(options_.base_dir);
      if (!options_.lark_grammars_dir.empty()) folders.push_back(options_.lark_grammars_dir);
    }
    if (!options_.loader) {
      return ErrorAt(group.path_offset,
                     absl::StrFormat("cannot import module '%s': no file loader (use ReadLarkFile, or set "
                                     "LarkReadOptions::loader; zapgram builds in only 'common')",
                                     display));
    }
    std::vector<std::string> tried;
    bool found = false;
    for (const std::string& folder : folders) {
      std::filesystem::path file = folder;
      for (const std::string& part : group.parts) file /= part;
      file += ".lark";
      const std::string path = file.lexically_normal().generic_string();
      absl::StatusOr<std::string> text = options_.loader(path);
      if (text.ok()) {
        module->text = std::move(*text);
        module->path = path;
        dir = file.lexically_normal().parent_path().generic_string();
        found = true;
        break;
      }
      if (!absl::IsNotFound(text.status())) {
        return absl::Status(text.status().code(),
                            absl::StrCat(Site(group.path_offset), ": cannot import module '", display,
                                         "': ", text.status().message()));
      }
      tried.push_back(absl::StrCat("'", path, "'"));
    }
    if (!found) {
      std::string hint;
      if (!group.relative && options_.lark_grammars_dir.empty()) {
        hint = " (set LarkReadOptions::lark_grammars_dir to Lark's lark/grammars folder for its modules)";
      }
      return ErrorAt(group.path_offset, absl::StrFormat("cannot find module '%s' (tried %s)%s", display,
                                                        absl::StrJoin(tried, ", "), hint));
    }
  }
  std::vector<std::string>& chain = context_->chain;
  if (std::find(chain.begin(), chain.end(), module->path) != chain.end()) {
    return ErrorAt(group.path_offset,
                   absl::StrFormat("import cycle: %s -> %s", absl::StrJoin(chain, " -> "), module->path));
  }
  if (chain.size() >= options_.max_import_depth) {
    return ErrorAt(group.path_offset, absl::StrFormat("imports nested deeper than %d "
                                                      "(LarkReadOptions::max_import_depth)",
                                                      options_.max_import_depth));
  }
  module->reader = std::make_unique<LarkReader>(module->text, module->path, options_, context_, dir);
  chain.push_back(module->path);
  absl::Status s = module->reader->ReadModule();
  chain.pop_back();
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat(s.message(), "; in module '", display, "' imported at ",
                                               Site(group.path_offset)));
  }
  modules_.push_back(std::move(module));
  return modules_.back().get();
}

// Copies expressions of a module's reader into the importing reader.
struct ModuleCopier {
  const LarkReader& src;
  LarkReader& dst;
  const std::vector<RuleId>& map;  // module rule -> importer rule (kNoRule: not copied)

  // Copies `root`. With `inline_terminals` (a terminal body), references to
  // terminals are replaced by their bodies (the module has no terminal cycle).
  absl::StatusOr<ExprId> Copy(ExprId root, bool inline_terminals) {
    struct CopyFrame {
      ExprId src;
      size_t next = 0;
      std::vector<ExprId> done;
    };
    const Grammar& g = src.out_.arena;
    auto resolve = [&](ExprId e) -> absl::StatusOr<ExprId> {
      while (inline_terminals && g.exprs[e].kind == ExprKind::kRuleRef && src.out_.is_terminal[g.exprs[e].rule]) {
        const RuleId t = g.exprs[e].rule;
        if (src.out_.terminals[static_cast<size_t>(src.out_.index_of[t])].declared) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s: an imported terminal refers to the %%declare'd terminal '%s', which has no body to inline",
              src.source_name_, g.rules[t].name));
        }
        e = g.rules[t].body;
      }
      return e;
    };
    std::vector<CopyFrame> stack;
    auto first = resolve(root);
    if (!first.ok()) return first.status();
    stack.push_back({*first, 0, {}});
    ExprId copied = 0;
    while (!stack.empty()) {
      CopyFrame& f = stack.back();
      const Expr& e = g.exprs[f.src];
      if (f.next < e.children.size()) {
        auto child = resolve(e.children[f.next++]);
        if (!child.ok()) return child.status();
        stack.push_back({*child, 0, {}});
        continue;
      }
      Expr copy = e;
      copy.children = std::move(f.done);
      copy.loc = {};
      if (copy.kind == ExprKind::kRuleRef) {
        copy.rule = map[e.rule];
        if (copy.rule == kNoRule) return absl::InternalError("lark import: reference to a name not copied");
      }
      copied = dst.AddNode(std::move(copy));
      if (auto it = src.param_refs_.find(f.src); it != src.param_refs_.end()) dst.param_refs_[copied] = it->second;
      if (auto it = src.template_uses_.find(f.src); it != src.template_uses_.end()) {
        dst.template_uses_[copied] = it->second;
      }
      if (src.istrings_.contains(f.src)) dst.istrings_.insert(copied);
      stack.pop_back();
      if (!stack.empty()) stack.back().done.push_back(copied);
    }
    return copied;
  }
};

absl::Status LarkReader::ImportGroupNames(const ImportGroup& group) {
  auto loaded = LoadModule(group);
  if (!loaded.ok()) return loaded.status();
  const LarkReader& m = *(*loaded)->reader;
  const bool common = m.source_name_ == kCommonSource;
  const std::string display = absl::StrCat(group.relative ? "." : "", absl::StrJoin(group.parts, "."));
  const std::string prefix = absl::StrJoin(group.parts, "__");
  const size_t n = m.out_.arena.rules.size();
  // 1 = copied, 2 = needed only inside copied terminals (inlined there).
  std::vector<uint8_t> state(n, 0);
  std::vector<size_t> request_of(n, kNone);
  std::vector<RuleId> work;
  for (size_t i = 0; i < group.requests.size(); ++i) {
    const ImportRequest& r = group.requests[i];
    auto it = m.ids_.find(r.name);
    if (it == m.ids_.end() || m.def_offset_[it->second] == kNone) {
      if (common) {
        return ErrorAt(r.offset, absl::StrFormat("module 'common' has no terminal '%s' in zapgram's built-in copy",
                                                 r.name));
      }
      return ErrorAt(r.offset, absl::StrFormat("module '%s' (%s) defines no rule or terminal '%s'", display,
                                               m.source_name_, r.name));
    }
    const RuleId id = it->second;
    if (NameKind(r.alias) != NameKind(r.name)) {
      const char* kind = m.out_.is_terminal[id] ? "terminal" : "rule";
      return ErrorAt(r.offset, absl::StrFormat("the %s '%s' must be imported under a %s name, not '%s'", kind,
                                               r.name, kind, r.alias));
    }
    request_of[id] = i;
    if (state[id] == 0) work.push_back(id);
    state[id] = 1;
  }
  while (!work.empty()) {
    const RuleId id = work.back();
    work.pop_back();
    std::vector<ExprId> exprs = {m.out_.arena.rules[id].body};
    while (!exprs.empty()) {
      const Expr& e = m.out_.arena.exprs[exprs.back()];
      exprs.pop_back();
      for (ExprId c : e.children) exprs.push_back(c);
      if (e.kind != ExprKind::kRuleRef || state[e.rule] == 1) continue;
      const bool copy = !m.out_.is_terminal[id];  // a rule's references are copied
      if (state[e.rule] == 2 && !copy) continue;
      state[e.rule] = copy ? 1 : 2;
      work.push_back(e.rule);
    }
  }
  // What the import needs must be defined in the module (Lark checks only those).
  std::string suffix = absl::StrFormat("; in module '%s' imported at %s", display, Site(group.path_offset));
  if (absl::Status s = m.CheckUndefined(&state, suffix); !s.ok()) return s;
  if (absl::Status s = m.CheckTerminalCycles(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(s.message(), suffix));
  }
  auto mangle = [&](RuleId id) -> std::string {
    if (request_of[id] != kNone) return group.requests[request_of[id]].alias;
    const std::string& name = m.out_.arena.rules[id].name;
    if (name[0] == '_') return absl::StrCat("_", prefix, "__", name.substr(1));
    return absl::StrCat(prefix, "__", name);
  };
  std::vector<RuleId> map(n, kNoRule);
  for (RuleId id = 0; id < n; ++id) {
    if (state[id] != 1) continue;
    const std::string name = mangle(id);
    const size_t offset = request_of[id] != kNone ? group.requests[request_of[id]].offset : group.path_offset;
    const RuleId to = Symbol(name, m.out_.is_terminal[id], kNone);
    if (def_offset_[to] != kNone) {
      return ErrorAt(offset, request_of[id] != kNone
                                 ? AlreadyDefined(name, to)
                                 : absl::StrFormat("importing from module '%s' needs '%s', but %s", display, name,
                                                   AlreadyDefined(name, to)));
    }
    def_offset_[to] = offset;
    imported_[to] = true;
    dependency_[to] = request_of[id] == kNone;
    map[id] = to;
  }
  ModuleCopier copier{m, *this, map};
  for (RuleId id = 0; id < n; ++id) {
    if (state[id] != 1) continue;
    const RuleId to = map[id];
    const size_t offset = def_offset_[to];
    const std::string& name = out_.arena.rules[to].name;
    Rule& rule = out_.arena.rules[to];
    rule.loc = LocationOf(offset);
    const size_t index = static_cast<size_t>(m.out_.index_of[id]);
    if (m.out_.is_terminal[id]) {
      const LarkTerminal& from = m.out_.terminals[index];
      LarkTerminal t = from;
      t.rule = to;
      t.hidden = name[0] == '_';
      t.imported = true;
      t.loc = rule.loc;
      if (from.declared) {
        out_.declared.push_back(name);
        out_.arena.rules[to].body = out_.arena.AddEmpty();
      } else {
        auto body = copier.Copy(m.out_.arena.rules[id].body, true);
        if (!body.ok()) return body.status();
        out_.arena.rules[to].body = *body;
      }
      out_.index_of[to] = static_cast<int32_t>(out_.terminals.size());
      out_.terminals.push_back(t);
      continue;
    }
    const LarkRule& from = m.out_.rules[index];
    LarkRule r = from;
    r.rule = to;
    r.hidden = name[0] == '_';
    r.loc = rule.loc;
    r.alternatives.clear();
    for (ExprId alt : from.alternatives) {
      auto copied = copier.Copy(alt, false);
      if (!copied.ok()) return copied.status();
      r.alternatives.push_back(*copied);
    }
    out_.arena.rules[to].body = out_.arena.AddChoice(r.alternatives, rule.loc);
    if (auto it = m.params_.find(id); it != m.params_.end()) params_[to] = it->second;
    out_.index_of[to] = static_cast<int32_t>(out_.rules.size());
    out_.rules.push_back(std::move(r));
  }
  return absl::OkStatus();
}

// %override replaces a definition; %extend puts its alternatives before the
// existing ones (Lark inserts them first). Both need an imported definition
// or one earlier in the text.
absl::Status LarkReader::ApplyModifications() {
  for (Modification& mod : mods_) {
    Definition& def = mod.def;
    const RuleId id = def.id;
    const std::string name = out_.arena.rules[id].name;
    const char* kind = def.terminal ? "terminal" : "rule";
    const bool extend = mod.mode == DefinitionMode::kExtend;
    const char* word = extend ? "%extend" : "%override";
    if (def_offset_[id] == kNone || (!imported_[id] && def_offset_[id] > mod.directive_offset)) {
      return ErrorAt(def.name_offset, absl::StrFormat("%s: the %s '%s' has no earlier definition to %s", word,
                                                      kind, name, extend ? "extend" : "override"));
    }
    if (!extend) {
      Register(std::move(def));
      continue;
    }
    const size_t index = static_cast<size_t>(out_.index_of[id]);
    auto it = params_.find(id);
    const std::vector<std::string> none;
    const std::vector<std::string>& params = it == params_.end() ? none : it->second;
    if (params != def.params) {
      return ErrorAt(def.name_offset, absl::StrFormat("%%extend: '%s' must be extended with its own template "
                                                      "parameters {%s}", name, absl::StrJoin(params, ", ")));
    }
    const SourceLocation loc = LocationOf(def.name_offset);
    if (def.terminal) {
      if (out_.terminals[index].declared) {
        return ErrorAt(def.name_offset,
                       absl::StrFormat("%%extend: the terminal '%s' is %%declare'd and has no body to extend", name));
      }
      std::vector<ExprId> alternatives = def.body.alternatives;
      const ExprId old = out_.arena.rules[id].body;
      if (out_.arena.exprs[old].kind == ExprKind::kChoice) {
        const std::vector<ExprId> children = out_.arena.exprs[old].children;
        alternatives.insert(alternatives.end(), children.begin(), children.end());
      } else {
        alternatives.push_back(old);
      }
      out_.arena.rules[id].body = out_.arena.AddChoice(std::move(alternatives), loc);
      continue;
    }
    LarkRule& r = out_.rules[index];
    r.alternatives.insert(r.alternatives.begin(), def.body.alternatives.begin(), def.body.alternatives.end());
    r.aliases.insert(r.aliases.begin(), def.body.aliases.begin(), def.body.aliases.end());
    out_.arena.rules[id].body = out_.arena.AddChoice(r.alternatives, loc);
  }
  mods_.clear();
  return absl::OkStatus();
}

// Rule references read from this text: a template needs arguments, and
// arguments need a template of that arity. Template parameters must not
// shadow a definition (Lark's rule).
absl::Status LarkReader::CheckTemplateUses() const {
  for (const OwnRef& ref : own_refs_) {
    const Expr& e = out_.arena.exprs[ref.expr];
    if (def_offset_[e.rule] == kNone) continue;  // undefined: reported elsewhere
    const std::string& name = out_.arena.rules[e.rule].name;
    auto it = params_.find(e.rule);
    if (!ref.use && it != params_.end()) {
      return ErrorAt(ref.offset, absl::StrFormat("the template '%s' is used without arguments '{...}'", name));
    }
    if (ref.use && it == params_.end()) {
      return ErrorAt(ref.offset, absl::StrFormat("'%s' is used with arguments '{...}' but is not a template", name));
    }
    if (ref.use && it->second.size() != e.children.size()) {
      return ErrorAt(ref.offset, absl::StrFormat("the template '%s' takes %d arguments, got %d", name,
                                                 it->second.size(), e.children.size()));
    }
  }
  for (const LarkRule& r : out_.rules) {
    auto with_params = params_.find(r.rule);
    if (with_params == params_.end()) continue;
    const RuleId id = r.rule;
    for (const std::string& p : with_params->second) {
      auto it = ids_.find(p);
      if (it != ids_.end() && def_offset_[it->second] != kNone) {
        const SourceLocation at = LocationOf(def_offset_[it->second]);
        return ErrorAt(def_offset_[id], absl::StrFormat("the template parameter '%s' of '%s' has the name of the "
                                                        "rule defined at %d:%d", p, out_.arena.rules[id].name,
                                                        at.line, at.col));
      }
    }
  }
  return absl::OkStatus();
}

// Undefined names (of those with only[id] != 0, when given), reported at the
// earliest first use.
absl::Status LarkReader::CheckUndefined(const std::vector<uint8_t>* only, std::string_view suffix) const {
  const size_t n = out_.arena.rules.size();
  size_t worst = kNone;
  RuleId worst_id = 0;
  bool any = false;
  for (RuleId id = 0; id < n; ++id) {
    if (only != nullptr && (*only)[id] == 0) continue;
    if (def_offset_[id] == kNone && (!any || first_use_[id] < worst)) {
      worst = first_use_[id];
      worst_id = id;
      any = true;
    }
  }
  if (!any) return absl::OkStatus();
  const std::string message = absl::StrFormat("undefined %s '%s'", out_.is_terminal[worst_id] ? "terminal" : "rule",
                                              out_.arena.rules[worst_id].name);
  if (worst == kNone) return absl::InvalidArgumentError(absl::StrFormat("%s: %s%s", source_name_, message, suffix));
  return absl::InvalidArgumentError(absl::StrFormat("%s: %s%s", Site(worst), message, suffix));
}

// Terminal references between terminals must form no cycle (Lark refuses
// recursive terminals). Iterative DFS with colors over the terminal graph.
absl::Status LarkReader::CheckTerminalCycles() const {
  const size_t n = out_.arena.rules.size();
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
  return absl::OkStatus();
}

// Builds the result from the module as read: a fresh arena holding every
// definition except templates, plus one rule per distinct template instance.
class TemplateExpander {
 public:
  TemplateExpander(const LarkGrammar& in, const absl::flat_hash_map<RuleId, std::vector<std::string>>& params,
                   const absl::flat_hash_map<ExprId, uint32_t>& param_refs,
                   const absl::flat_hash_map<ExprId, std::string>& uses, const absl::flat_hash_set<ExprId>& istrings,
                   const LarkReadOptions& options, LarkGrammar* out)
      : in_(in), params_(params), param_refs_(param_refs), uses_(uses), istrings_(istrings), options_(options),
        out_(*out), budget_(in.arena.exprs.size() + options.max_template_exprs) {}

  std::vector<RuleId> map;  // input rule -> output rule (kNoRule for templates)

  // Copies input expression `root` into the output arena. `env` binds the
  // parameters of the template being instantiated (scratch expressions).
  absl::StatusOr<ExprId> Copy(ExprId root, const std::vector<ExprId>* env) {
    return CopyInto(root, env, &out_.arena);
  }

  // Builds the queued instances (and those they queue).
  absl::Status RunQueue() {
    for (size_t j = 0; j < jobs_.size(); ++j) {
      const Job job = jobs_[j];
      site_ = job.site;
      const LarkRule& from = in_.rules[static_cast<size_t>(in_.index_of[job.template_rule])];
      LarkRule r = from;
      r.rule = job.rule;
      r.alternatives.clear();
      for (ExprId alt : from.alternatives) {
        auto copied = CopyInto(alt, &job.args, &out_.arena);
        if (!copied.ok()) return copied.status();
        r.alternatives.push_back(*copied);
      }
      out_.arena.rules[job.rule].body = out_.arena.AddChoice(r.alternatives, from.loc);
      out_.index_of[job.rule] = static_cast<int32_t>(out_.rules.size());
      out_.rules.push_back(std::move(r));
    }
    return absl::OkStatus();
  }

 private:
  struct Job {
    RuleId template_rule;  // input rule
    RuleId rule;           // output rule of the instance
    std::vector<ExprId> args;  // in scratch_
    std::string site;
  };

  absl::Status OverBudget() const {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: template expansion exceeds its budget of %d expression nodes (LarkReadOptions::max_template_exprs); "
        "does a template instantiate itself with growing arguments?",
        site_, options_.max_template_exprs));
  }
  bool Over() const { return out_.arena.exprs.size() + scratch_.exprs.size() > budget_; }

  // Plain copy of scratch expression `root` into `dst` (which may be scratch_).
  absl::StatusOr<ExprId> CopyBound(ExprId root, Grammar* dst) {
    struct F {
      ExprId src;
      size_t next;
      std::vector<ExprId> done;
    };
    std::vector<F> stack = {{root, 0, {}}};
    ExprId copied = 0;
    while (!stack.empty()) {
      F& f = stack.back();
      if (f.next < scratch_.exprs[f.src].children.size()) {
        const ExprId child = scratch_.exprs[f.src].children[f.next++];
        stack.push_back({child, 0, {}});
        continue;
      }
      Expr copy = scratch_.exprs[f.src];
      copy.children = std::move(f.done);
      const bool istring = scratch_istrings_.contains(f.src);
      dst->exprs.push_back(std::move(copy));
      copied = static_cast<ExprId>(dst->exprs.size() - 1);
      Mark(istring, copied, dst);
      if (Over()) return OverBudget();
      stack.pop_back();
      if (!stack.empty()) stack.back().done.push_back(copied);
    }
    return copied;
  }

  void Mark(bool istring, ExprId id, const Grammar* dst) {
    if (!istring) return;
    if (dst == &scratch_) {
      scratch_istrings_.insert(id);
    } else {
      out_.istring_exprs.push_back(id);
    }
  }

  absl::StatusOr<ExprId> CopyInto(ExprId root, const std::vector<ExprId>* env, Grammar* target) {
    struct F {
      ExprId src;
      Grammar* dst;
      size_t next;
      std::vector<ExprId> done;
    };
    std::vector<F> stack = {{root, target, 0, {}}};
    ExprId copied = 0;
    while (!stack.empty()) {
      F& f = stack.back();
      const Expr& e = in_.arena.exprs[f.src];
      if (auto it = param_refs_.find(f.src); it != param_refs_.end()) {
        if (env == nullptr || it->second >= env->size()) {
          return absl::InternalError("lark templates: a parameter outside its template");
        }
        auto bound = CopyBound((*env)[it->second], f.dst);
        if (!bound.ok()) return bound.status();
        copied = *bound;
      } else {
        const bool use = uses_.contains(f.src);
        if (f.next < e.children.size()) {
          const ExprId child = e.children[f.next++];
          stack.push_back({child, use ? &scratch_ : f.dst, 0, {}});
          continue;
        }
        if (use) {
          auto instance = Instantiate(f.src, std::move(f.done));
          if (!instance.ok()) return instance.status();
          copied = f.dst->AddRuleRef(*instance, e.loc);
        } else {
          Expr copy = e;
          copy.children = std::move(f.done);
          if (copy.kind == ExprKind::kRuleRef) {
            copy.rule = map[e.rule];
            if (copy.rule == kNoRule) {
              return absl::InvalidArgumentError(absl::StrFormat(
                  "%s:%d:%d: the template '%s' is used without arguments '{...}'", in_.arena.source_name,
                  e.loc.line, e.loc.col, in_.arena.rules[e.rule].name));
            }
          }
          f.dst->exprs.push_back(std::move(copy));
          copied = static_cast<ExprId>(f.dst->exprs.size() - 1);
          Mark(istrings_.contains(f.src), copied, f.dst);
        }
        if (Over()) return OverBudget();
      }
      stack.pop_back();
      if (!stack.empty()) stack.back().done.push_back(copied);
    }
    return copied;
  }

  // The output rule of template use `use` with `args` (scratch expressions).
  absl::StatusOr<RuleId> Instantiate(ExprId use, std::vector<ExprId> args) {
    const Expr& e = in_.arena.exprs[use];
    const std::string& site = uses_.at(use);
    const std::string& name = in_.arena.rules[e.rule].name;
    auto it = params_.find(e.rule);
    if (it == params_.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: '%s' is used with arguments '{...}' but is not a template", site, name));
    }
    if (it->second.size() != args.size()) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: the template '%s' takes %d arguments, got %d", site,
                                                        name, it->second.size(), args.size()));
    }
    // Scratch names mirror the output's, for the dumps of the arguments.
    for (size_t r = scratch_.rules.size(); r < out_.arena.rules.size(); ++r) {
      scratch_.rules.push_back({out_.arena.rules[r].name, 0, {}});
    }
    std::vector<std::string> dumped;
    for (ExprId a : args) dumped.push_back(DumpExpr(scratch_, a));
    std::string key = absl::StrCat(name, "{", absl::StrJoin(dumped, ","), "}");
    if (auto found = instances_.find(key); found != instances_.end()) return found->second;
    name_bytes_ += key.size();
    if (name_bytes_ > options_.max_template_name_bytes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: template expansion exceeds its budget of %d bytes of instance names "
          "(LarkReadOptions::max_template_name_bytes) at '%s{...}'; are template uses nested too deeply?",
          site, options_.max_template_name_bytes, name));
    }
    if (instances_.size() >= options_.max_template_instances) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: template expansion exceeds its budget of %d instances (LarkReadOptions::max_template_instances) "
          "at '%s{...}'; does a template instantiate itself with growing arguments?",
          site, options_.max_template_instances, name));
    }
    const RuleId id = static_cast<RuleId>(out_.arena.rules.size());
    out_.arena.rules.push_back({key, 0, in_.arena.rules[e.rule].loc});  // body set by RunQueue
    out_.is_terminal.push_back(false);
    out_.index_of.push_back(-1);
    instances_.emplace(std::move(key), id);
    jobs_.push_back({e.rule, id, std::move(args), site});
    return id;
  }

  const LarkGrammar& in_;
  const absl::flat_hash_map<RuleId, std::vector<std::string>>& params_;
  const absl::flat_hash_map<ExprId, uint32_t>& param_refs_;
  const absl::flat_hash_map<ExprId, std::string>& uses_;
  const absl::flat_hash_set<ExprId>& istrings_;
  const LarkReadOptions& options_;
  LarkGrammar& out_;
  const size_t budget_;
  Grammar scratch_;  // template arguments
  absl::flat_hash_set<ExprId> scratch_istrings_;
  absl::flat_hash_map<std::string, RuleId> instances_;
  std::vector<Job> jobs_;
  std::string site_;
  size_t name_bytes_ = 0;
};

absl::StatusOr<LarkGrammar> LarkReader::Build() {
  const size_t n = out_.arena.rules.size();
  LarkGrammar g;
  g.arena.source_name = out_.arena.source_name;
  g.declared = out_.declared;
  TemplateExpander expander(out_, params_, param_refs_, template_uses_, istrings_, options_, &g);
  // Arena order: first mention in this text (imported dependencies last);
  // rules and terminals: definition order.
  auto own = [&](RuleId id, size_t offset) { return offset != kNone ? offset : text_.size() + 1 + id; };
  std::vector<RuleId> order(n);
  for (RuleId id = 0; id < n; ++id) order[id] = id;
  std::stable_sort(order.begin(), order.end(), [&](RuleId a, RuleId b) {
    auto key = [&](RuleId id) {
      return own(id, std::min(first_use_[id], dependency_[id] ? kNone : def_offset_[id]));
    };
    return key(a) < key(b);
  });
  expander.map.assign(n, kNoRule);
  for (RuleId id : order) {
    if (params_.contains(id)) continue;
    expander.map[id] = static_cast<RuleId>(g.arena.rules.size());
    g.arena.rules.push_back({out_.arena.rules[id].name, 0, out_.arena.rules[id].loc});
    g.is_terminal.push_back(out_.is_terminal[id]);
    g.index_of.push_back(-1);
  }
  auto def_key = [&](RuleId id) { return own(id, dependency_[id] ? kNone : def_offset_[id]); };
  std::vector<const LarkRule*> rules;
  for (const LarkRule& r : out_.rules) {
    if (!params_.contains(r.rule)) rules.push_back(&r);
  }
  std::stable_sort(rules.begin(), rules.end(),
                   [&](const LarkRule* a, const LarkRule* b) { return def_key(a->rule) < def_key(b->rule); });
  for (const LarkRule* from : rules) {
    LarkRule r = *from;
    r.rule = expander.map[from->rule];
    r.alternatives.clear();
    for (ExprId alt : from->alternatives) {
      auto copied = expander.Copy(alt, nullptr);
      if (!copied.ok()) return copied.status();
      r.alternatives.push_back(*copied);
    }
    const SourceLocation body_loc = out_.arena.exprs[out_.arena.rules[from->rule].body].loc;
    g.arena.rules[r.rule].body = g.arena.AddChoice(r.alternatives, body_loc);
    g.index_of[r.rule] = static_cast<int32_t>(g.rules.size());
    g.rules.push_back(std::move(r));
  }
  std::vector<const LarkTerminal*> terminals;
  for (const LarkTerminal& t : out_.terminals) terminals.push_back(&t);
  std::stable_sort(terminals.begin(), terminals.end(),
                   [&](const LarkTerminal* a, const LarkTerminal* b) { return def_key(a->rule) < def_key(b->rule); });
  for (const LarkTerminal* from : terminals) {
    LarkTerminal t = *from;
    t.rule = expander.map[from->rule];
    auto body = expander.Copy(out_.arena.rules[from->rule].body, nullptr);
    if (!body.ok()) return body.status();
    g.arena.rules[t.rule].body = *body;
    g.index_of[t.rule] = static_cast<int32_t>(g.terminals.size());
    g.terminals.push_back(t);
  }
  for (const LarkIgnore& i : out_.ignores) {
    auto expr = expander.Copy(i.expr, nullptr);
    if (!expr.ok()) return expr.status();
    g.ignores.push_back({*expr, i.loc});
  }
  if (absl::Status s = expander.RunQueue(); !s.ok()) return s;
  std::sort(g.istring_exprs.begin(), g.istring_exprs.end());
  const int64_t start = g.arena.FindRule(options_.start);
  g.has_start = start >= 0 && !g.is_terminal[static_cast<size_t>(start)];
  g.arena.root = g.has_start ? static_cast<RuleId>(start) : 0;
  if (g.arena.rules.empty()) {
    // The arena needs a rule for Validate(); an empty grammar has none to name.
    return g;
  }
  if (absl::Status s = g.arena.Validate(); !s.ok()) return s;
  return g;
}

absl::Status LarkReader::ReadModule() {
  if (absl::Status s = ValidateUtf8(); !s.ok()) return s;
  if (absl::Status s = ReadAllImports(); !s.ok()) return s;
  if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
  while (true) {
    pos_ = SkipAllFrom(pos_);
    if (AtEnd()) break;
    const char c = At(pos_);
    absl::Status s;
    if (c == '%') {
      s = ReadDirective();
    } else if (c == '!' || c == '?' || IsNameStart(c)) {
      s = ReadDefinition(DefinitionMode::kDefine);
    } else {
      s = ErrorAt(pos_, absl::StrCat("expected a rule or terminal definition or a %directive, found ", Describe(pos_)));
    }
    if (!s.ok()) return s;
  }
  if (absl::Status s = ApplyModifications(); !s.ok()) return s;
  return CheckTemplateUses();
}

absl::StatusOr<LarkGrammar> LarkReader::Read() {
  if (absl::Status s = ReadModule(); !s.ok()) return s;
  if (absl::Status s = CheckUndefined(nullptr, ""); !s.ok()) return s;
  if (absl::Status s = CheckTerminalCycles(); !s.ok()) return s;
  return Build();
}

}  // namespace

absl::StatusOr<LarkGrammar> ReadLark(std::string_view text, std::string_view source_name,
                                     const LarkReadOptions& options) {
  ImportContext context;
  context.chain.push_back(std::filesystem::path(source_name).lexically_normal().generic_string());
  LarkReader reader(text, source_name, options, &context, options.base_dir);
  return reader.Read();
}

absl::StatusOr<std::string> ReadLarkFileText(std::string_view path) {
  std::ifstream in{std::string(path), std::ios::binary};
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::path(path), ec)) {
      return absl::NotFoundError(absl::StrFormat("no file '%s'", path));
    }
    return absl::UnavailableError(absl::StrFormat("cannot open '%s'", path));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::UnavailableError(absl::StrFormat("cannot read '%s'", path));
  return ss.str();
}

absl::StatusOr<LarkGrammar> ReadLarkFile(std::string_view path, const LarkReadOptions& options) {
  LarkReadOptions with_files = options;
  if (!with_files.loader) with_files.loader = ReadLarkFileText;
  const std::string normal = std::filesystem::path(path).lexically_normal().generic_string();
  if (with_files.base_dir.empty()) {
    with_files.base_dir = std::filesystem::path(normal).parent_path().generic_string();
  }
  absl::StatusOr<std::string> text = with_files.loader(normal);
  if (!text.ok()) return text.status();
  return ReadLark(*text, normal, with_files);
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
