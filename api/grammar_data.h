// What a zapgram::Grammar holds: the IR as read and its lowered flat form.
// Internal to the library; the CLI and tests reach it through Grammar::data().
#ifndef ZAPGRAM_API_GRAMMAR_DATA_H_
#define ZAPGRAM_API_GRAMMAR_DATA_H_

#include "grammar/grammar.h"
#include "parser/flat_grammar.h"
#include "parser/recognizer.h"
#include "zapgram/grammar.h"

#include <string>
#include <vector>

namespace zapgram::internal {

struct CompiledGrammarData {
  grammar::Grammar ir;
  parser::FlatGrammar flat;
  std::vector<std::string> warnings;  // Grammar::warnings()
  CompileTimes times;                 // Grammar::compile_times()
};

struct RecognizerState {
  explicit RecognizerState(parser::Recognizer r) : recognizer(std::move(r)) {}
  parser::Recognizer recognizer;
};

// Reads a grammar argument (see include/zapgram/grammar.h) to IR.
absl::StatusOr<grammar::Grammar> ReadGrammarSpec(std::string_view spec,
                                                 std::string_view data_root);
// The same, with the options of schema:PATH; its warnings are appended to
// `warnings` (may be null).
absl::StatusOr<grammar::Grammar> ReadGrammarSpec(std::string_view spec, std::string_view data_root,
                                                 const SchemaOptions& schema,
                                                 std::vector<std::string>* warnings);

// A JSON Schema's text to IR under `schema`; `source_name` prefixes errors.
// Lenient-conversion warnings are appended to `warnings` (may be null).
absl::StatusOr<grammar::Grammar> ReadSchemaText(std::string_view text, std::string_view source_name,
                                                const SchemaOptions& schema, bool draft7,
                                                std::vector<std::string>* warnings);

// A structural-tag specification (JSON, api/structural_tags.cc) to IR.
absl::StatusOr<grammar::Grammar> ReadStructuralTags(std::string_view text,
                                                    std::string_view source_name,
                                                    const SchemaOptions& schema,
                                                    std::vector<std::string>* warnings);

}  // namespace zapgram::internal

#endif  // ZAPGRAM_API_GRAMMAR_DATA_H_
