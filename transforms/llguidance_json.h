// llguidance's `%json { schema }` inside a Lark grammar: the schema's
// grammar with the options llguidance documents (its docs/json_schema.md),
// read from the schema's top-level "x-guidance" object:
//   whitespace_flexible  true (default): any run of JSON whitespace between
//                        tokens (and around the value); false: compact JSON;
//   lenient              keywords that cannot be enforced are dropped (each
//                        a warning of the JSON Schema compiler);
//   coerce_one_of        oneOf read as anyOf: zapgram's reading of oneOf
//                        already (transforms/json_schema_build.cc), so true
//                        and false compile alike;
//   item_separator ",", key_separator ":", json_allowed_escapes "nrbtf\\\"u",
//   json_allow_general_unicode_escapes false
//                        accepted at these (default) values only;
//   whitespace_pattern   refused: zapgram's JSON Schema compiler has no
//                        whitespace regex.
// Any other value, or an unknown key, is an error naming it. Members follow
// the `properties` order (MemberOrder::kSchema), as llguidance's do.
//
// Tests: tests/grammar/lark_llguidance_test.cc (the %json cases).
#ifndef ZAPGRAM_TRANSFORMS_LLGUIDANCE_JSON_H_
#define ZAPGRAM_TRANSFORMS_LLGUIDANCE_JSON_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "grammar/grammar.h"
#include "transforms/json_schema.h"

namespace zapgram::transforms {

// `base` supplies the budgets (max_rules, max_grammar_bytes, max_depth);
// the options above replace its whitespace, order and leniency.
absl::StatusOr<grammar::Grammar> LlguidanceJsonSchema(std::string_view schema_json, std::string_view where,
                                                      const JsonSchemaOptions& base = {});

}  // namespace zapgram::transforms

#endif  // ZAPGRAM_TRANSFORMS_LLGUIDANCE_JSON_H_
