// Reader for GBNF (llama.cpp) and the XGrammar EBNF dialect -> grammar IR.
//
// Syntax accepted (a superset of llama.cpp's GBNF):
//   rule      ::= NAME "::=" alternatives        (a rule ends where the next `NAME ::=` starts)
//   alternatives: sequence ("|" sequence)*
//   sequence  : item*     item: primary ("*" | "+" | "?" | "{m}" | "{m,}" | "{m,n}" | "{,n}")*
//   primary   : "literal" | 'literal' (XGrammar) | [class] | [^class] | . | NAME | "(" alternatives ")"
//               | /regex/flags (zapgram's own, as grammar::Dump prints regex terminals: the
//               dialect of grammar/regex_compiler.h, \/ for a slash, flags i m s x J)
//   comments  : `#` to end of line.  Names: [A-Za-z_][A-Za-z0-9_.-]* (also leading digits/`-`, as llama.cpp).
//   escapes   : \n \r \t \\ \" \' \[ \] \- \^ \/ \? \e \xNN \uNNNN \UNNNNNNNN — every escape denotes a
//               code point, stored UTF-8 encoded (so "\xff" is U+00FF, two bytes).
//   XGrammar macro calls `Regex(...)`, `Substring(...)`, `TagDispatch(...)` (Name directly followed
//   by '('): read and lowered by grammar/xgrammar_macros.h.
//   Refused with a clear error (each would change the language if ignored): XGrammar lookahead
//   assertions `rule ::= body (= lookahead)`, the token-level macros (`Token(`, `ExcludeToken(`,
//   `TokenTagDispatch(`), XGrammar rule attributes (`r[max_tokens=3] ::=`), llama.cpp token
//   references (`<[id]>`, `!<...>`).
// The start rule is `root`. Errors name source:line:col and say what was expected there.
#ifndef ZAPGRAM_GRAMMAR_GBNF_READER_H_
#define ZAPGRAM_GRAMMAR_GBNF_READER_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "grammar/grammar.h"

namespace zapgram::grammar {

struct GbnfReadOptions {
  std::string_view root_rule = "root";
  // Nesting depth of parentheses/repetitions the reader accepts (it never recurses
  // on the C++ stack; this bounds memory on hostile input).
  uint32_t max_nesting = 10000;
  // Largest m or n in {m,n}.
  uint32_t max_repeat_bound = 100000;
};

// Reads GBNF text. `source_name` (a path or "<builtin:json>") prefixes every error message.
// Undefined rule references are errors ("undefined symbol 'x'" at the reference).
absl::StatusOr<Grammar> ReadGbnf(std::string_view text, std::string_view source_name,
                                 const GbnfReadOptions& options = {});

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_GBNF_READER_H_
