// Compiles a grammar IR built in a test the way zapgram::Grammar::Load does
// (api/grammar_api.cc: normalize, merge regular terminals, lower), for tests
// of passes that produce IR directly (transforms/json_schema_formats.h).
#ifndef ZAPGRAM_TESTS_SUPPORT_IR_COMPILE_H_
#define ZAPGRAM_TESTS_SUPPORT_IR_COMPILE_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "grammar/grammar.h"
#include "parser/flat_grammar.h"

namespace zapgram::testing {

absl::StatusOr<parser::FlatGrammar> CompileIr(const grammar::Grammar& g);

// The whole of `text` is a sentence (pruned recognizer).
bool FlatAccepts(const parser::FlatGrammar& flat, std::string_view text);

}  // namespace zapgram::testing

#endif  // ZAPGRAM_TESTS_SUPPORT_IR_COMPILE_H_
