// The regular pieces of JSON Schema: string `format`s and numeric bounds, as
// terminals of the grammar IR. transforms/json_schema.cc (the schema walk)
// calls these; they know nothing of schemas.
//
// OWNER (session 3): the formats/numbers helper. Signatures fixed; bodies in
// json_schema_formats.cc. Tests: tests/transforms/json_schema_formats_test.cc.
#ifndef ZAPGRAM_TRANSFORMS_JSON_SCHEMA_FORMATS_H_
#define ZAPGRAM_TRANSFORMS_JSON_SCHEMA_FORMATS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "grammar/grammar.h"

namespace zapgram::transforms {

// Formats with a grammar: date, time, date-time, duration, email, hostname,
// ipv4, ipv6, uri, uuid, and whatever else FormatRegex accepts.
std::vector<std::string_view> SupportedFormats();

// A regex (grammar/regex_compiler.h dialect) for the *decoded* characters of a
// string with this `format` (the converter quotes and JSON-escapes it).
// kNotFound for a format without a grammar.
absl::StatusOr<std::string> FormatRegex(std::string_view format);

// Numeric constraints of one JSON Schema `integer`/`number` subschema. Bounds
// are the schema's numbers as written (JSON number text, e.g. "1e3", "-0.5").
struct NumericConstraints {
  bool integer = false;                  // type integer (else number)
  std::optional<std::string> minimum;    // inclusive
  std::optional<std::string> maximum;    // inclusive
  std::optional<std::string> exclusive_minimum;
  std::optional<std::string> exclusive_maximum;
  std::optional<std::string> multiple_of;
};

// Adds to `grammar` an expression matching exactly the RFC 8259 number texts
// that satisfy `constraints`, and returns it (it may add rules). Errors:
// kInvalidArgument for malformed bounds, kUnimplemented (message names the
// keyword) for a combination without an exact grammar.
absl::StatusOr<grammar::ExprId> AddNumber(const NumericConstraints& constraints,
                                          grammar::Grammar* grammar);

}  // namespace zapgram::transforms

#endif  // ZAPGRAM_TRANSFORMS_JSON_SCHEMA_FORMATS_H_
