// Grammars bundled with zapgram, kept as GBNF text and read like any user grammar.
//
// builtin:json is JSON text exactly as RFC 8259 defines it:
//   JSON-text = ws value ws, whitespace only [ \t\n\r], around every structural
//   character; strings of any code point except '"', '\' and U+0000..U+001F
//   (U+007F and all non-ASCII allowed), with the escapes \" \\ \/ \b \f \n \r
//   \t \uXXXX; numbers -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?.
// The grammar is unambiguous: whitespace is owned by exactly one `ws` at each
// place (values never end in whitespace, so `value ws ","` has one parse).
//
// Tests: tests/grammar/gbnf_reader_test.cc (loads, shape of the rules).
#include "grammar/builtin.h"

#include <string_view>
#include <vector>

namespace zapgram::grammar {
namespace {

constexpr std::string_view kJsonGrammar = R"gbnf(# builtin:json -- RFC 8259 JSON text.
root ::= ws value ws

value ::= object | array | string | number | "true" | "false" | "null"

object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value

array ::= "[" ws ( value ( ws "," ws value )* ws )? "]"

string ::= "\"" string_char* "\""
string_char ::= [^"\\\x00-\x1F] | "\\" escape
escape ::= ["\\/bfnrt] | "u" hex_digit hex_digit hex_digit hex_digit
hex_digit ::= [0-9a-fA-F]

number ::= "-"? integer_part fraction? exponent?
integer_part ::= "0" | [1-9] [0-9]*
fraction ::= "." [0-9]+
exponent ::= [eE] [+-]? [0-9]+

ws ::= [ \t\n\r]*
)gbnf";

struct BuiltinGrammar {
  std::string_view name;
  std::string_view text;
};

constexpr BuiltinGrammar kBuiltinGrammars[] = {
    {"json", kJsonGrammar},
};

}  // namespace

std::string_view BuiltinGrammarText(std::string_view name) {
  for (const BuiltinGrammar& grammar : kBuiltinGrammars) {
    if (grammar.name == name) return grammar.text;
  }
  return {};
}

std::vector<std::string_view> BuiltinGrammarNames() {
  std::vector<std::string_view> names;
  for (const BuiltinGrammar& grammar : kBuiltinGrammars) names.push_back(grammar.name);
  return names;
}

}  // namespace zapgram::grammar
