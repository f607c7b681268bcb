// Lowering a Lark grammar (grammar/lark_reader.h) to a lexed grammar::Grammar.
//
// Lark separates lexing from parsing: terminals become the tokens of a lexer
// (parser/lexer.h), rules become rules over those tokens. This stage decides
// what the tokens are, the way Lark's grammar compiler does:
//  - the rules reachable from the start rule are kept (Lark drops the others,
//    and with them the terminals only they use);
//  - every terminal a kept rule names, every anonymous terminal a kept rule
//    writes ("x", "x"i, /re/f, "a".."z") and every %ignore'd terminal is a
//    token. An anonymous terminal whose pattern equals a named terminal's is
//    that terminal (`"return"` beside `RETURN: "return"`); equal anonymous
//    ones are one token;
//  - each token's definition becomes one regex, as Lark's to_regexp builds
//    it: references to other terminals are inlined, strings escaped, flags of
//    parts kept as scoped groups `(?i:...)`. A token written as a single
//    string stays a *string* token (text and flags), which is what lets the
//    lexer treat keywords as Lark does ("unless").
// A %declare'd terminal used by a kept rule has no pattern: Lark expects a
// postlexer to produce it. The one postlexer zapgram runs is Lark's
// Indenter (parser/indenter.h): with LarkLoweringOptions::indenter on (or
// detected: the grammar %declares the indent and dedent tokens and uses a
// newline token), the indent and dedent tokens become tokens no pattern
// matches, and the newline and bracket tokens are marked with their roles
// (grammar::Token::indent_role). Any other %declare'd terminal a kept rule
// uses is refused, naming it.
//
// Tests: tests/parser/lexer_test.cc (Lark semantics end to end),
// tests/data/lark_data_test.cc (SynCode's grammars on real code).
#ifndef ZAPGRAM_GRAMMAR_LARK_LOWERING_H_
#define ZAPGRAM_GRAMMAR_LARK_LOWERING_H_

#include <functional>
#include <string_view>

#include "absl/status/statusor.h"
#include "grammar/grammar.h"
#include "grammar/lark_reader.h"
#include "zapgram/grammar.h"

namespace zapgram::grammar {

struct LarkLoweringOptions {
  // Longest regex a token's definition may expand to (terminal references
  // are inlined, so a chain of references can double it at each level).
  size_t max_token_pattern_bytes = 1 << 20;
  // llguidance's `%json { schema }`: the grammar of the schema's JSON text
  // (`where` is "SOURCE:LINE:COL" for messages). grammar/ knows no JSON
  // Schema; the API layer supplies transforms/llguidance_json.h. Without it
  // a %json is an error.
  std::function<absl::StatusOr<Grammar>(std::string_view schema_json, std::string_view where)> json_schema;
  // llguidance's parametric rules: (rule, parameter value) instances the
  // start rule may reach, one grammar rule each (a rule of n alternatives
  // costs about n expression nodes per instance).
  uint32_t max_parametric_instances = 100000;
  // Lark's Indenter post-lexer: auto-detected by default.
  IndenterOptions indenter;
};

// Lark's name of an anonymous string token of one punctuation character
// ("(" -> "LPAR"), as Lark's grammar compiler names it; empty otherwise.
std::string_view LarkPunctuationName(std::string_view text);

// One line for `zapgram check`: "indenter: off" or "indenter: on (newline
// _NL, indent _INDENT, dedent _DEDENT, brackets LPAR/RPAR ..., tab 8)".
std::string DescribeIndenter(const Grammar& g);

// A grammar in llguidance's dialect (lark.llguidance) is lowered byte by
// byte by LowerLlguidanceLark (grammar/lark_llguidance_lowering.cc); any
// other through Lark's lexer, as above.

absl::StatusOr<Grammar> LowerLark(const LarkGrammar& lark, const LarkLoweringOptions& options = {});
absl::StatusOr<Grammar> LowerLlguidanceLark(const LarkGrammar& lark, const LarkLoweringOptions& options = {});

// ReadLark + LowerLark.
absl::StatusOr<Grammar> ReadLarkGrammar(std::string_view text, std::string_view source_name,
                                        const LarkReadOptions& read_options = {},
                                        const LarkLoweringOptions& options = {});

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_LARK_LOWERING_H_
