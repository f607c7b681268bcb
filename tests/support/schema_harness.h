// Shared by the JSON Schema data tests (tests/data/jsonschema_suite_test.cc,
// tests/data/maskbench_test.cc): trace records grouped by schema, and one
// schema's verdicts on its instances in strict and lenient mode.
//
// A verdict is the public recognizer's (zapgram::Grammar::Load +
// zapgram::Recognizer): every byte accepted and the end state accepting.
#ifndef ZAPGRAM_TESTS_SUPPORT_SCHEMA_HARNESS_H_
#define ZAPGRAM_TESTS_SUPPORT_SCHEMA_HARNESS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "zapgram/grammar.h"

namespace zapgram::testing {

struct SchemaInstance {
  std::string id;
  std::string text;
  bool valid = false;
  bool optional = false;  // the suite's optional/ tests
};

struct SchemaGroup {
  std::string spec;  // "schema:<path relative to the data folder>"
  std::vector<SchemaInstance> instances;
};

// The records of a trace file grouped by `grammar`, in first-seen order.
// Records flagged roundtrip_mismatch are skipped.
std::vector<SchemaGroup> ReadSchemaGroups(const std::string& trace_path);

struct SchemaVerdicts {
  absl::Status strict;   // Load status, strict mode
  absl::Status lenient;  // Load status, lenient mode (tried only when strict failed)
  std::vector<std::string> warnings;  // lenient mode's dropped keywords
  // Per instance: accepted by the strict grammar / the lenient grammar
  // (false when that grammar did not load).
  std::vector<bool> strict_accepts;
  std::vector<bool> lenient_accepts;
  // Recognizer errors (a budget ran out) while checking instances, one line
  // each "<instance id>: <status>"; such an instance is neither accepted nor
  // rejected and must be reported, never counted as a rejection.
  std::vector<std::string> recognizer_errors;
  double strict_compile_ms = 0;
  bool compiled() const { return strict.ok() || lenient.ok(); }
};

// `schema` gives the purpose and options of both grammars (its `lenient` is
// set by the harness: false, then true when strict mode refused a keyword).
SchemaVerdicts RunSchemaGroup(const SchemaGroup& group, const std::string& data_root,
                              const SchemaOptions& schema = {});

// "uniqueItems" for "...unsupported: uniqueItems at #/..."; "" when the
// status is not an unsupported-keyword error.
std::string UnsupportedKeyword(const absl::Status& status);
// The keyword of a lenient warning line "dropped <keyword> at ..."; "" for
// other lines ("ignored format at ...": an annotation, not a drop).
std::string WarningKeyword(const std::string& warning);

}  // namespace zapgram::testing

#endif  // ZAPGRAM_TESTS_SUPPORT_SCHEMA_HARNESS_H_
