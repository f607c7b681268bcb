// JSON Schema -> grammar IR: the converter behind `schema:PATH`
// (api/grammar_api.cc) and `zapgram schema2gbnf`.
//
// Reads draft 2020-12 and draft-07 spellings and returns a grammar whose
// language is the JSON texts valid under the schema, written in the
// canonical form of docs/json-schema.md (schema key order, bounded
// whitespace, canonical string escapes under pattern/format/keys) by
// default; the options widen it to what a validator accepts (any
// whitespace, member order and spelling: ValidationSchemaOptions). Keywords
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

// max_whitespace meaning "any run of JSON whitespace, wherever RFC 8259
// allows one" (its `ws` rule: between tokens and around the whole text).
inline constexpr uint32_t kAnyWhitespace = UINT32_MAX;

// The order of object members.
enum class MemberOrder {
  kSchema,  // `properties` order, then the others
  kAny,     // any order; an object whose any-order grammar would not be exact
            // (more than 10 required keys; minProperties/maxProperties) is an
            // error, or in lenient mode loses the counts
  // Any order where it can be exact, schema order for the other objects
  // (validation: such an object in another order is rejected, never an
  // invalid one accepted).
  kAnyWhereExact,
};

struct JsonSchemaOptions {
  // Keywords a context-free grammar cannot enforce (uniqueItems, contains,
  // if/then/else, ...): false = error; true = dropped, each reported as a warning.
  bool lenient = false;
  // The whitespace policy: none between JSON tokens (compact), at most
  // max_whitespace bytes of [ \t\n\r] around each structural character, or
  // with kAnyWhitespace any run of them there and before and after the value.
  bool compact = false;
  uint32_t max_whitespace = 2;
  MemberOrder member_order = MemberOrder::kSchema;
  // Strings under pattern/format, object keys and string enum/const values:
  // false = only the canonical spelling (raw UTF-8, \" \\ and the control
  // escapes: what serializers write, and what generation should emit);
  // true = every RFC 8259 spelling of the same characters (\/, \u00e9,
  // surrogate pairs), as a validator reads them.
  bool any_spelling = false;
  JsonSchemaDraft draft = JsonSchemaDraft::kDraft2020_12;
  // Budget: grammar rules made (one per distinct subschema conjunction).
  // Exceeding it is a kResourceExhausted error.
  uint32_t max_rules = 1u << 20;
  // Budget: bytes of the grammar being built, estimated as its expression
  // and rule records (CompileLimits::max_grammar_bytes; the compile then
  // measures the whole IR against the same budget). Exceeding it is a
  // kResourceExhausted error naming the schema object being converted.
  size_t max_grammar_bytes = size_t{1} << 28;
  // Budget: nesting of the schema document's arrays and objects (MaskBench's
  // deepest schema nests 63). Exceeding it is a kResourceExhausted error.
  uint32_t max_depth = 1000;
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

// The options of a grammar that validates documents: JSON text as RFC 8259
// reads it (kAnyWhitespace, kAnyWhereExact, any_spelling), `lenient` as given.
// Generation keeps the defaults above: a model must not loop on whitespace.
JsonSchemaOptions ValidationSchemaOptions(bool lenient);

// Errors: kInvalidArgument (not JSON, not a schema), kUnimplemented
// ("unsupported: <keyword> at <pointer>").
absl::StatusOr<JsonSchemaGrammar> JsonSchemaToGrammar(std::string_view schema_text,
                                                      std::string_view source_name,
                                                      const JsonSchemaOptions& options = {});

}  // namespace zapgram::transforms

#endif  // ZAPGRAM_TRANSFORMS_JSON_SCHEMA_H_
