// zapgram's own definitions of the terminals of Lark's `common` module
// (lark/grammars/common.lark), read by grammar/lark_reader.cc for
// `%import common.X`. Written for zapgram, in Lark syntax, with one difference
// in meaning from the original: where common.lark relies on a lazy quantifier
// or a lookbehind to stop a token early (ESCAPED_STRING, C_COMMENT), the
// definition here is the language of the tokens Lark's lexer actually cuts,
// so it stays correct under the longest-match rule of docs/lark-lexing.md
// and needs no lookaround (which grammar/regex_compiler.h refuses):
//   ESCAPED_STRING  a quote, then characters other than quote, backslash and
//                   newline or a backslash followed by any non-newline, then a quote;
//   C_COMMENT       /* ... */ ending at the first */.
// _STRING_INNER and _STRING_ESC_INNER (helpers of ESCAPED_STRING that only
// make sense with the lookbehind) are not provided.
#include <string_view>

#include "grammar/lark_reader.h"

namespace zapgram::grammar {

namespace {

constexpr std::string_view kLarkCommon = R"lark(// zapgram built-in: common
DIGIT: "0".."9"
HEXDIGIT: "a".."f" | "A".."F" | DIGIT
INT: DIGIT+
SIGNED_INT: ["+" | "-"] INT
DECIMAL: INT "." INT? | "." INT
_EXP: ("e" | "E") SIGNED_INT
FLOAT: INT _EXP | DECIMAL _EXP?
SIGNED_FLOAT: ["+" | "-"] FLOAT
NUMBER: FLOAT | INT
SIGNED_NUMBER: ["+" | "-"] NUMBER

ESCAPED_STRING: /"(?:[^"\\\n]|\\.)*"/

LCASE_LETTER: "a".."z"
UCASE_LETTER: "A".."Z"
LETTER: UCASE_LETTER | LCASE_LETTER
WORD: LETTER+
CNAME: ("_" | LETTER) ("_" | LETTER | DIGIT)*

WS_INLINE: (" " | /\t/)+
WS: /[ \t\f\r\n]/+
CR: /\r/
LF: /\n/
NEWLINE: (CR? LF)+

SH_COMMENT: /#[^\n]*/
CPP_COMMENT: /\/\/[^\n]*/
C_COMMENT: /\/\*(?:[^*]|\*+[^*\/])*\*+\//
SQL_COMMENT: /--[^\n]*/
)lark";

}  // namespace

std::string_view LarkCommonText() { return kLarkCommon; }

}  // namespace zapgram::grammar
