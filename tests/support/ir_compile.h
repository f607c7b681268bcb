// Compiles a grammar IR built in a test the way zapgram::Grammar::Load does
// (api/grammar_api.cc: normalize, merge regular terminals, lower), for tests
// of passes that produce IR directly (transforms/json_schema_formats.h);
// Lark texts for the lexer's and the Indenter's tests.
#ifndef ZAPGRAM_TESTS_SUPPORT_IR_COMPILE_H_
#define ZAPGRAM_TESTS_SUPPORT_IR_COMPILE_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "grammar/grammar.h"
#include "grammar/lark_lowering.h"
#include "parser/flat_grammar.h"

namespace zapgram::testing {

absl::StatusOr<parser::FlatGrammar> CompileIr(const grammar::Grammar& g);

// The whole of `text` is a sentence (pruned recognizer).
bool FlatAccepts(const parser::FlatGrammar& flat, std::string_view text);

// A Lark grammar's text read and lowered (grammar/lark_lowering.h, with
// `options`), then laid out for the parser; a failure is a test failure.
parser::FlatGrammar CompileLarkText(std::string_view lark, const grammar::LarkLoweringOptions& options = {});

// Whether `input` is a sentence, fed byte by byte with pruning on and off:
// both must agree, and NextBytes must announce exactly the bytes Feed takes.
bool AcceptsByteByByte(const parser::FlatGrammar& flat, std::string_view input);

}  // namespace zapgram::testing

#endif  // ZAPGRAM_TESTS_SUPPORT_IR_COMPILE_H_
