// The Lark reader's shared state (grammar/lark_reader.h is the interface).
//
// One LarkReader reads one text (a "module"); a top-level reader also builds
// the result. Its methods are defined stage by stage, one file each:
//   grammar/lark_lex.cc     the tokens of the text: UTF-8, line starts,
//                           strings, "a".."z" ranges, /regex/flags, numbers,
//                           name lists;
//   grammar/lark_parse.cc   definitions, bodies and directives into arena
//                           expressions (names become arena rules);
//   grammar/lark_import.cc  %import: finding and reading modules, copying
//                           what the imported names need under Lark's names;
//   grammar/lark_llguidance.cc  llguidance's extensions: special tokens,
//                           %json/%regex blocks, `{M,N}`, `&` and `~`,
//                           lexeme options, %llguidance, the dialect choice;
//   grammar/lark_build.cc   checks of the module as read (undefined names,
//                           recursive terminals, template uses) and the
//                           result, with templates expanded;
//   grammar/lark_reader.cc  the driver (the steps in order), %override and
//                           %extend, and the public entry points.
// Only those files include this header.
#ifndef ZAPGRAM_GRAMMAR_LARK_READER_INTERNAL_H_
#define ZAPGRAM_GRAMMAR_LARK_READER_INTERNAL_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "grammar/grammar.h"
#include "grammar/lark_reader.h"
#include "grammar/utf8.h"

namespace zapgram::grammar::lark_internal {

inline constexpr size_t kNone = static_cast<size_t>(-1);
inline constexpr RuleId kNoRule = static_cast<RuleId>(-1);

inline bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsInlineBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f'; }

inline int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Kind of a name: 1 terminal (`_?[A-Z]...`), 0 rule (`_*[a-z]...`), -1 neither.
inline int NameKind(std::string_view name) {
  size_t i = 0;
  while (i < name.size() && name[i] == '_') ++i;
  if (i == name.size()) return -1;
  if (name[i] >= 'A' && name[i] <= 'Z') return 1;
  if (name[i] >= 'a' && name[i] <= 'z') return 0;
  return -1;
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
  // llguidance: the operands of `&` read so far in this sequence, and `~`
  // prefixes waiting for the next item.
  std::vector<ExprId> conjuncts;
  uint32_t pending_complements = 0;
  std::string condition;  // llguidance's `%if COND` ending this sequence
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
  RuleAttributes attributes;  // `name[...]`
  ExprId suffix = kNoLarkExpr;  // llguidance's `suffix=...`
  bool parametric = false;      // llguidance's `name::_`
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
  // A name; llguidance's names may also hold '-' (not before '>', which
  // is Lark's alias arrow), which selects that dialect (UseLlguidance).
  std::string_view ReadName() {
    const size_t start = pos_;
    if (!IsNameStart(At(pos_))) return {};
    while (true) {
      if (IsNameChar(At(pos_))) {
        ++pos_;
      } else if (At(pos_) == '-' && IsNameChar(At(pos_ + 1)) && options_.dialect != LarkDialect::kLark) {
        if (dash_name_offset_ == kNone) dash_name_offset_ = start;
        ++pos_;
      } else {
        break;
      }
    }
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
  absl::Status ReadRuleAttributes(std::string_view name, Definition& def);
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

  // llguidance's dialect (grammar/lark_llguidance.cc).
  absl::Status UseLlguidance(size_t offset, std::string_view construct);
  absl::Status NoteDashNames();
  absl::StatusOr<ExprId> ReadSpecialToken();
  absl::StatusOr<std::string> ReadJsonBlock(std::string_view directive);
  absl::StatusOr<ExprId> ReadPercentItem(BodyKind kind);
  absl::StatusOr<ExprId> ReadRegexBlock(size_t offset, std::string_view json);
  absl::Status ReadLlguidanceDirective(size_t start);
  absl::Status ReadBraceRepeat(Frame& top);
  bool WantsLlguidanceAttributes(size_t open) const;
  absl::Status ReadLlguidanceAttributes(std::string_view name, Definition& def);
  absl::StatusOr<ExprId> ReadAttributeTerminal();
  void PushItem(Frame& frame, ExprId item);
  absl::StatusOr<ExprId> ReadParamRef(std::string_view name, size_t offset);
  absl::Status ReadCondition(Frame& top, size_t depth);
  absl::StatusOr<std::string> ReadParamText(bool condition);
  ExprId AddSetOperation(uint32_t op, std::vector<ExprId> operands, SourceLocation loc) {
    Expr e;
    e.kind = ExprKind::kChoice;
    e.flags = op;
    e.children = std::move(operands);
    e.loc = loc;
    return AddNode(std::move(e));
  }

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
  size_t dash_name_offset_ = kNone;  // first name holding '-' (llguidance)
  bool current_parametric_ = false;   // reading the body of `name::_`
};

}  // namespace zapgram::grammar::lark_internal

#endif  // ZAPGRAM_GRAMMAR_LARK_READER_INTERNAL_H_
