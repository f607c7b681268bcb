// Reader for Lark grammar syntax -> LarkGrammar (rules, terminals, %ignore,
// %declare), a structured form for the lexing layer (docs/lark-lexing.md) to
// lower into a plain grammar::Grammar. This stage reads syntax only: it does
// not decide how terminals are lexed.
//
// Syntax accepted (Lark's own grammar, lark/grammars/lark.lark):
//   definitions  `name: a b | c`, `?name`, `_name`, `!name` (also `!?name`,
//                `!_name`), priorities `name.2:` / `NAME.-1:`; a lowercase name
//                is a rule, an uppercase one (`_?[A-Z][_A-Z0-9]*`) a terminal.
//   alternatives `|`, also at the start of a following line; inside ( ) and
//                [ ] newlines are blanks. `-> alias` at the end of a rule's
//                alternative.
//   items        "literal", "literal"i, /regex/flags, "a".."z", names,
//                ( ), [ ] (optional), postfix ? * + ~ n and ~ n..m.
//   comments     `//` and `#` to the end of the line.
//   directives   %ignore <expansion>, %declare NAME..., %import common.X,
//                %import common.X -> Y, %import common (X, Y).
// Refused with "SOURCE:LINE:COL: message": templates (`name{...}`),
// %override, %extend, imports of modules other than the built-in `common`
// (relative imports need a file loader), the regex flag `l` (Python's
// LOCALE, invalid for str patterns). The flag `u` is accepted as a no-op
// (Python 3 str patterns are Unicode already).
//
// Tests: tests/grammar/lark_reader_test.cc.
#ifndef ZAPGRAM_GRAMMAR_LARK_READER_H_
#define ZAPGRAM_GRAMMAR_LARK_READER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "grammar/grammar.h"

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
struct LarkRule {
  RuleId rule = 0;               // in LarkGrammar::arena
  bool inline_children = false;  // `?name`: inlined when it has one child
  bool hidden = false;           // `_name`: never a tree node
  bool keep_all_tokens = false;  // `!name`: keeps anonymous tokens
  int32_t priority = 0;          // `.N`, 0 when absent (Lark's default 0)
  bool has_priority = false;
  std::vector<ExprId> alternatives;
  std::vector<std::string> aliases;  // per alternative; "" when none
  SourceLocation loc;
};

// One named terminal. Its arena rule body is its expression; terminal refs
// inside it are kept as kRuleRef (the lexing layer inlines them; this reader
// has checked there is no cycle and no reference to a rule). Terminals
// imported from `common` have their dependencies inlined.
struct LarkTerminal {
  RuleId rule = 0;
  int32_t priority = 0;  // `.N`; Lark's default is 0
  bool has_priority = false;
  bool hidden = false;    // `_NAME`: filtered out of the tree
  bool declared = false;  // %declare: no body (arena body kEmpty); must be supplied
  bool imported = false;  // from the built-in `common` module
  SourceLocation loc;
};

struct LarkIgnore {
  ExprId expr = 0;  // usually a kRuleRef to a terminal; may be a literal or regex
  SourceLocation loc;
};

struct LarkGrammar {
  // Expression arena; its rules are the Lark rules and terminals, in order of
  // first mention. arena.root is the start rule (or 0 when there is none).
  Grammar arena;
  std::vector<bool> is_terminal;     // per arena RuleId
  std::vector<int32_t> index_of;     // per arena RuleId: index into rules or terminals
  std::vector<LarkRule> rules;
  std::vector<LarkTerminal> terminals;
  std::vector<LarkIgnore> ignores;
  std::vector<std::string> declared;  // %declare'd names, in order
  std::vector<ExprId> istring_exprs;  // kRegex exprs that came from "x"i strings
  bool has_start = false;              // a rule named options.start exists
};

struct LarkReadOptions {
  std::string_view start = "start";
  // Open ( and [ around a point plus postfix operators stacked on one item.
  uint32_t max_nesting = 10000;
  // Largest n or m in `~ n..m`.
  uint32_t max_repeat_bound = 100000;
};

// Reads Lark text. `source_name` prefixes every error ("SOURCE:LINE:COL: message").
absl::StatusOr<LarkGrammar> ReadLark(std::string_view text, std::string_view source_name,
                                     const LarkReadOptions& options = {});

// The arena dump (grammar::Dump) followed by one line per terminal, ignore and
// declaration: "terminal NAME prio=N [hidden] [imported]", "ignore <expr>".
std::string DumpLark(const LarkGrammar& grammar);

// zapgram's own Lark text of the `common` module (grammar/lark_common.cc).
std::string_view LarkCommonText();

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_LARK_READER_H_
