// Reader for Lark grammar syntax -> LarkGrammar (rules, terminals, %ignore,
// %declare), a structured form for the lexing layer (docs/lark-lexing.md) to
// lower into a plain grammar::Grammar. This stage reads syntax and resolves
// what is resolved at load time in Lark (imports, %override/%extend,
// templates); it does not decide how terminals are lexed.
//
// Syntax accepted (Lark's own grammar, lark/grammars/lark.lark):
//   definitions  `name: a b | c`, `?name`, `_name`, `!name` (also `!?name`,
//                `!_name`), priorities `name.2:` / `NAME.-1:`; a lowercase name
//                is a rule, an uppercase one (`_?[A-Z][_A-Z0-9]*`) a terminal.
//   templates    `_sep{x, sep}: x (sep x)*`, used as `_sep{item, ","}`; an
//                argument is any expansion. Expanded at read time into one
//                ordinary rule per distinct argument tuple, named as Lark
//                names it (`_sep{item,","}`); template definitions do not
//                appear in the result.
//   alternatives `|`, also at the start of a following line; inside ( ) [ ]
//                and { } newlines are blanks. `-> alias` at the end of a
//                rule's alternative.
//   items        "literal", "literal"i, /regex/flags, "a".."z", names,
//                ( ), [ ] (optional), postfix ? * + ~ n and ~ n..m.
//   comments     `//` and `#` to the end of the line.
//   directives   %ignore <expansion>, %declare NAME...,
//                %import [.]a.b.NAME [-> ALIAS], %import [.]a.b (NAME, ...),
//                %override <definition>, %extend <definition>.
// llguidance's dialect (LarkReadOptions::dialect; docs/llguidance-lark.md)
// adds `%json`, `%regex`, `%llguidance`, `<special>` and `<[ids]>` tokens,
// `{M,N}`, `&` and `~` in terminals, lexeme options, parametric rules and
// '-' in names (grammar/lark_llguidance.cc).
// Imports follow Lark: `common` is zapgram's built-in copy; other modules are
// files read through LarkReadOptions::loader; what an imported name needs is
// copied in under namespaced names (`a__b__X`, see grammar/lark_reader.cc).
// Refused with "SOURCE:LINE:COL: message": the regex flag `l` (Python's
// LOCALE, invalid for str patterns), template parameters used as templates,
// import cycles, missing modules, and the usual malformed input. The flag `u`
// is accepted as a no-op (Python 3 str patterns are Unicode already).
//
// Tests: tests/grammar/lark_reader_test.cc (fixtures in tests/testdata/lark/).
#ifndef ZAPGRAM_GRAMMAR_LARK_READER_H_
#define ZAPGRAM_GRAMMAR_LARK_READER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "grammar/grammar.h"
#include "grammar/rule_attributes.h"

namespace zapgram::grammar {

// One Lark rule. Its arena rule body is the kChoice of `alternatives` (or the
// one alternative). Inside rule bodies:
//   kRuleRef to a rule        a rule;
//   kRuleRef to a terminal    a named terminal (LarkGrammar::is_terminal);
//   kLiteral                  an anonymous string terminal "x";
//   kRegex                    an anonymous terminal /x/flags, or a "x"i string
//                             (then its id is in LarkGrammar::istring_exprs);
//   kCharClass                an anonymous range terminal "a".."z";
//   kRepeat/kSequence/kChoice the operators ? * + ~ [ ] ( ) |.
inline constexpr ExprId kNoLarkExpr = static_cast<ExprId>(-1);

// llguidance's constructs in the arena (docs/llguidance-lark.md). Each is a
// self-describing node, so every copy of the arena keeps it:
//   `A & B & C`  kChoice, flags kLarkIntersection, children the operands;
//   `~A`         kChoice, flags kLarkComplement, one child;
//   `%json {..}` kEmpty, flags kLarkJson, literal the schema's JSON text;
//   `<|x|>`, `<[1,5-9]>`  kTokenIds (grammar/grammar.h);
//   `%regex {..}`, `{M,N}`  a plain kRegex and kRepeat.
// The flags of kChoice and kEmpty mean nothing elsewhere in the IR; only
// the llguidance lowering (grammar/lark_llguidance_lowering.cc) reads them.
inline constexpr uint32_t kLarkIntersection = 1u << 28;
inline constexpr uint32_t kLarkComplement = 1u << 29;
inline constexpr uint32_t kLarkJson = 1u << 30;
// Parametric rules (llguidance's docs/parametric.md): `name::EXPR` is a
// kRuleRef flagged kLarkParamRef whose literal is EXPR; an alternative
// ending in `%if COND` is a kChoice flagged kLarkCondition, one child (the
// alternative), literal COND. grammar/lark_llguidance_params.h reads both.
inline constexpr uint32_t kLarkParamRef = 1u << 27;
inline constexpr uint32_t kLarkCondition = 1u << 26;

// Which Lark a text is written in. kAuto: plain Lark, unless the text uses a
// construct only llguidance's dialect has (then LarkGrammar::llguidance).
enum class LarkDialect { kAuto, kLark, kLlguidance };

// `%llguidance { ... }` options (merged over every occurrence).
struct LlguidanceOptions {
  bool ignore_once = false;         // %ignore matches once, not repeatedly, between lexemes
  bool allow_initial_skip = false;  // %ignore also before the first lexeme
  bool no_forcing = false;          // llguidance's tokenization forcing: no effect on masks
};

struct LarkRule {
  RuleId rule = 0;               // in LarkGrammar::arena
  bool inline_children = false;  // `?name`: inlined when it has one child
  bool hidden = false;           // `_name`: never a tree node
  bool keep_all_tokens = false;  // `!name`: keeps anonymous tokens
  int32_t priority = 0;          // `.N`, 0 when absent (Lark's default 0)
  bool has_priority = false;
  std::vector<ExprId> alternatives;
  std::vector<std::string> aliases;  // per alternative; "" when none
  // XGrammar's `name[capture, temperature=x]: ...` (grammar/rule_attributes.h).
  RuleAttributes attributes;
  // llguidance's lexeme options (docs/llguidance-lark.md): `lazy` is
  // attributes.lazy; `suffix=TERMINAL` is the arena expression of the
  // terminal (kNoLarkExpr when absent). Either makes the rule one lexeme.
  ExprId suffix = kNoLarkExpr;
  bool parametric = false;  // llguidance's `name::_ : ...`
  SourceLocation loc;
};

// One named terminal. Its arena rule body is its expression; terminal refs
// inside it are kept as kRuleRef (the lexing layer inlines them; this reader
// has checked there is no cycle and no reference to a rule). Imported
// terminals have their terminal references inlined (as Lark does).
struct LarkTerminal {
  RuleId rule = 0;
  int32_t priority = 0;  // `.N`; Lark's default is 0
  bool has_priority = false;
  bool hidden = false;    // `_NAME`: filtered out of the tree
  bool declared = false;  // %declare: no body (arena body kEmpty); must be supplied
  bool imported = false;  // by %import: from the built-in `common` or a grammar file
  SourceLocation loc;
};

struct LarkIgnore {
  ExprId expr = 0;  // usually a kRuleRef to a terminal; may be a literal or regex
  SourceLocation loc;
};

struct LarkGrammar {
  // Expression arena; its rules are the Lark rules and terminals, in order of
  // first mention in the text read, then the dependencies copied by imports,
  // then the template instances (named `template{arg,...}`). `rules` and
  // `terminals` are in definition order (imports at their %import line,
  // dependencies and instances last). arena.root is the start rule (or 0
  // when there is none). Templates themselves are not in the result.
  Grammar arena;
  std::vector<bool> is_terminal;     // per arena RuleId
  std::vector<int32_t> index_of;     // per arena RuleId: index into rules or terminals
  std::vector<LarkRule> rules;
  std::vector<LarkTerminal> terminals;
  std::vector<LarkIgnore> ignores;
  std::vector<std::string> declared;  // %declare'd names, in order
  std::vector<ExprId> istring_exprs;  // kRegex exprs that came from "x"i strings
  bool has_start = false;              // a rule named options.start exists
  // llguidance's dialect: set by LarkDialect::kLlguidance, or under kAuto by
  // the first llguidance-only construct, which `dialect_reason` names
  // ("'%json' at SOURCE:LINE:COL"). Such a grammar is lowered byte by byte
  // (grammar/lark_llguidance_lowering.cc), not through Lark's lexer.
  bool llguidance = false;
  std::string dialect_reason;
  LlguidanceOptions llguidance_options;
};

// Reads the text of a grammar file for %import. `path` is a folder below
// joined with the module's dotted path and ".lark" (`.a.b` -> "<dir>/a/b.lark").
// Returns absl::NotFoundError when there is no such file (the next folder is
// then tried); any other error stops the reading.
using LarkLoader = std::function<absl::StatusOr<std::string>(std::string_view path)>;

struct LarkReadOptions {
  std::string_view start = "start";
  LarkDialect dialect = LarkDialect::kAuto;
  // Open ( [ { around a point plus postfix operators stacked on one item.
  uint32_t max_nesting = 10000;
  // Largest n or m in `~ n..m`.
  uint32_t max_repeat_bound = 100000;

  // Imports. Without a loader only `common` (built in) can be imported.
  LarkLoader loader;
  // Folder of the text read: `%import .a.b.X` loads <base_dir>/a/b.lark, and
  // a relative import inside an imported file is relative to that file's
  // folder. `%import a.b.X` (other than `common`) tries <base_dir>/a/b.lark,
  // then <lark_grammars_dir>/a/b.lark. Empty means the current folder.
  std::string base_dir;
  // Lark's own grammars folder (lark/grammars: python.lark, unicode.lark...),
  // for `%import python (...)`; empty: those modules are not found.
  std::string lark_grammars_dir;
  // Files being read at once along one chain of imports (each is one level
  // of C++ recursion).
  uint32_t max_import_depth = 32;

  // Templates. Distinct instances (rules created) in one grammar; each costs
  // one rule plus a copy of the template's body.
  uint32_t max_template_instances = 10000;
  // Expression nodes the expansion may create beyond the grammar as read
  // (instance bodies and the copies of their arguments).
  uint32_t max_template_exprs = 1000000;
  // Bytes of all instance names together. A name holds the dumps of its
  // arguments, so nested uses `t{t{t{...}}}` give names quadratic in the depth.
  uint32_t max_template_name_bytes = 1u << 20;
};

// Reads Lark text. `source_name` prefixes every error ("SOURCE:LINE:COL: message");
// errors inside an imported file name that file and add where it was imported.
// Relative imports need options.loader (and options.base_dir).
absl::StatusOr<LarkGrammar> ReadLark(std::string_view text, std::string_view source_name,
                                     const LarkReadOptions& options = {});

// Reads the grammar file at `path` (through options.loader, or the file
// system when it is empty); relative imports are resolved against its folder
// (options.base_dir, when empty) with the same loader. Errors name the file.
absl::StatusOr<LarkGrammar> ReadLarkFile(std::string_view path, const LarkReadOptions& options = {});

// The file-system LarkLoader: the bytes of the file, NotFoundError when it
// does not exist.
absl::StatusOr<std::string> ReadLarkFileText(std::string_view path);

// The arena dump (grammar::Dump) followed by one line per terminal, ignore and
// declaration: "terminal NAME prio=N [hidden] [imported]", "ignore <expr>".
std::string DumpLark(const LarkGrammar& grammar);

// zapgram's own Lark text of the `common` module (grammar/lark_common.cc).
std::string_view LarkCommonText();

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_LARK_READER_H_
