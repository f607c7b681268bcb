// The regular pieces of JSON Schema: string `format`s and numeric bounds, as
// terminals of the grammar IR. transforms/json_schema.cc (the schema walk)
// calls these; they know nothing of schemas.
//
// Bodies: json_schema_formats.cc (formats: what is exact and what is a
// documented restriction) and json_schema_numbers.cc (numbers). Tests:
// tests/transforms/json_schema_formats_test.cc, json_schema_numbers_test.cc.
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
// ipv4, ipv6, uri, uri-reference, uuid, json-pointer, relative-json-pointer.
std::vector<std::string_view> SupportedFormats();

// Is `format` one the JSON Schema specification defines (draft 2020-12
// section 7.3, and the older drafts' names)? Those are asserted when
// supported; any other format is an annotation.
bool IsStandardFormat(std::string_view format);

// A regex (grammar/regex_compiler.h dialect) for the *decoded* characters of a
// string with this `format` (the converter quotes and JSON-escapes it: the
// quoted local part of an email may hold " and \, a (relative) json-pointer
// any code point, control characters included; every other format is
// printable ASCII without " or \). kNotFound for a format without a grammar.
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
// that satisfy `constraints`, and returns it (it may add rules, named
// "number-multiple-N-S", for multipleOf). Output syntax (a subset of the
// valid texts, never a superset): `integer` emits digit-only integers
// (-?(0|[1-9][0-9]*), not "1.0" or "1e2"); `number` keeps the full syntax
// for a sign whose magnitudes are unconstrained ([0, inf), (0, inf) or {0})
// and no multipleOf, else fixed-point texts without exponent. Unsatisfiable
// bounds give an empty character class (matches nothing). Errors:
// kInvalidArgument for malformed bounds or multipleOf <= 0, kUnimplemented
// ("unsupported: <keyword> ...") past a size budget (multipleOf automaton
// over 32768 states; bounds with over 900 integer digits or 100 significant
// or fraction digits).
absl::StatusOr<grammar::ExprId> AddNumber(const NumericConstraints& constraints,
                                          grammar::Grammar* grammar);

}  // namespace zapgram::transforms

#endif  // ZAPGRAM_TRANSFORMS_JSON_SCHEMA_FORMATS_H_
