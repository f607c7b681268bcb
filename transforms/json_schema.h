// JSON Schema -> grammar IR: the converter behind `schema:PATH`
// (api/grammar_api.cc) and `zapgram schema2gbnf`.
//
// Reads draft 2020-12 and draft-07 spellings and returns a grammar whose
// language is the JSON texts valid under the schema, written in the
// canonical form of docs/json-schema.md (schema key order, bounded
// whitespace, canonical string escapes under pattern/format/keys). Keywords
// a context-free grammar cannot enforce are errors ("unsupported: <keyword>
// at <pointer>") unless `lenient`, which drops them and lists each in
// `warnings`. The stages live in json_schema*.cc (json_schema_internal.h
// maps them); numbers and formats come from json_schema_formats.h.
//
// Thread safety: the function is reentrant. Cost: linear in the schema plus
// one rule per distinct conjunction of subschemas (budget max_rules); no
// recursion over the schema's depth.
#ifndef ZAPGRAM_TRANSFORMS_JSON_SCHEMA_H_
#define ZAPGRAM_TRANSFORMS_JSON_SCHEMA_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "grammar/grammar.h"

namespace zapgram::transforms {

// Which draft's rules apply when the schema has no `$schema`: in draft-07
// and earlier a `$ref` replaces its sibling keywords; from 2019-09 on they
// apply together. Everything else is read the same way in both.
enum class JsonSchemaDraft { kDraft2020_12, kDraft7 };

struct JsonSchemaOptions {
  // Keywords a context-free grammar cannot enforce (uniqueItems, contains,
  // if/then/else, ...): false = error; true = dropped, each reported as a warning.
  bool lenient = false;
  // Whitespace between JSON tokens: none (compact) or at most this many bytes.
  bool compact = false;
  uint32_t max_whitespace = 2;
  // Object properties in schema order (default) or any order.
  bool any_order = false;
  JsonSchemaDraft draft = JsonSchemaDraft::kDraft2020_12;
  // Budget: grammar rules made (one per distinct subschema conjunction).
  // Exceeding it is a kResourceExhausted error.
  uint32_t max_rules = 1u << 20;
};

struct JsonSchemaWarning {
  std::string keyword;
  std::string pointer;  // JSON pointer of the schema object holding it
  std::string message;
  // true: lenient mode dropped a keyword the grammar cannot enforce (the
  // grammar accepts more than the schema). false: the keyword constrains
  // nothing under JSON Schema itself (an unknown `format` is an annotation),
  // so ignoring it is exact; said in either mode.
  bool dropped = true;
};

struct JsonSchemaGrammar {
  grammar::Grammar grammar;
  std::vector<JsonSchemaWarning> warnings;  // what was dropped (lenient) or ignored
};

// Errors: kInvalidArgument (not JSON, not a schema), kUnimplemented
// ("unsupported: <keyword> at <pointer>").
absl::StatusOr<JsonSchemaGrammar> JsonSchemaToGrammar(std::string_view schema_text,
                                                      std::string_view source_name,
                                                      const JsonSchemaOptions& options = {});

}  // namespace zapgram::transforms

#endif  // ZAPGRAM_TRANSFORMS_JSON_SCHEMA_H_
