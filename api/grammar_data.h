// What a zapgram::Grammar holds: the IR as read and its lowered flat form.
// Internal to the library; the CLI and tests reach it through Grammar::data().
#ifndef ZAPGRAM_API_GRAMMAR_DATA_H_
#define ZAPGRAM_API_GRAMMAR_DATA_H_

#include "grammar/grammar.h"
#include "parser/flat_grammar.h"
#include "parser/recognizer.h"
#include "parser/transition_memo.h"
#include "zapgram/grammar.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zapgram::internal {

struct CompiledGrammarData {
  // Rules of the grammar as read (GrammarStats::rules). The IR itself is
  // released once normalized: nothing after the compile reads it, and a
  // JSON Schema's can run to tens of MB (MaskBench every 5th: 567 MB over
  // 2,322 grammars had been kept for this one count).
  size_t ir_rules = 0;
  parser::FlatGrammar flat;
  std::vector<std::string> warnings;  // Grammar::warnings()
  CompileTimes times;                 // Grammar::compile_times()
};

// A zapgram::Recognizer: a parser::Recognizer, or with a transition memo
// (RecognizerOptions::transition_memo_bytes) the memo, which owns one as
// its scratch, and the memo state reached.
struct RecognizerState {
  explicit RecognizerState(parser::Recognizer r, size_t memo_bytes) {
    if (memo_bytes > 0 && r.compacting() && r.options().max_rollback == 0) {
      memo = std::make_unique<parser::TransitionMemo>(std::move(r), memo_bytes);
    } else {
      recognizer.emplace(std::move(r));
    }
  }
  std::optional<parser::Recognizer> recognizer;  // without a memo
  std::unique_ptr<parser::TransitionMemo> memo;
  uint32_t memo_state = parser::TransitionMemo::kStart;
  size_t position = 0;  // bytes accepted (with the memo)
  absl::Status status;  // with the memo: the last step's budget error, as Recognizer::status()
};

// Reads a grammar argument (see include/zapgram/grammar.h) to IR.
absl::StatusOr<grammar::Grammar> ReadGrammarSpec(std::string_view spec,
                                                 std::string_view data_root);
// The same, with the options of schema:PATH; its warnings are appended to
// `warnings` (may be null). A JSON Schema's conversion stops past
// limits.max_grammar_bytes.
absl::StatusOr<grammar::Grammar> ReadGrammarSpec(std::string_view spec, std::string_view data_root,
                                                 const SchemaOptions& schema,
                                                 std::vector<std::string>* warnings,
                                                 const CompileLimits& limits = {},
                                                 const IndenterOptions& indenter = {});

// A JSON Schema's text to IR under `schema`; `source_name` prefixes errors.
// Lenient-conversion warnings are appended to `warnings` (may be null).
absl::StatusOr<grammar::Grammar> ReadSchemaText(std::string_view text, std::string_view source_name,
                                                const SchemaOptions& schema, bool draft7,
                                                std::vector<std::string>* warnings,
                                                const CompileLimits& limits = {});

// A structural-tag specification (JSON, api/structural_tags.cc) to IR.
absl::StatusOr<grammar::Grammar> ReadStructuralTags(std::string_view text,
                                                    std::string_view source_name,
                                                    const SchemaOptions& schema,
                                                    std::vector<std::string>* warnings,
                                                    const CompileLimits& limits = {});

}  // namespace zapgram::internal

#endif  // ZAPGRAM_API_GRAMMAR_DATA_H_
