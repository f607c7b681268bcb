// libFuzzer target for transforms/json_schema*.cc: JSON Schema text to a
// grammar. Input: SCHEMA [\xff\xfe OPTIONS INSTANCE] (fuzz/fuzz_support.h):
// OPTIONS is one byte choosing the schema options (bit 0 validation purpose,
// bit 1 lenient, bit 2 any_order, bit 3 compact; the draft is the
// schema's own `$schema`), INSTANCE runs through the recognizer invariants. Seeds (scripts/fuzz_seeds.py): MaskBench and
// JSON-Schema-Test-Suite schemas with one of their instances.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zapgram;
  const fuzz::SplitInput in = fuzz::Split(data, size);
  SchemaOptions schema;
  std::string_view instance = in.input;
  if (!instance.empty()) {
    const uint8_t bits = static_cast<uint8_t>(instance[0]);
    instance.remove_prefix(1);
    schema.purpose = (bits & 1) ? SchemaPurpose::kValidation : SchemaPurpose::kGeneration;
    schema.lenient = (bits & 2) != 0;
    schema.any_order = (bits & 4) != 0;
    schema.compact = (bits & 8) != 0;
  }
  LoadOptions options;
  options.limits = fuzz::FuzzLimits();
  options.schema = schema;
  absl::StatusOr<Grammar> grammar =
      Grammar::FromText(GrammarFormat::kJsonSchema, in.text, options, "<fuzz>");
  if (!grammar.ok()) {
    ZAPGRAM_FUZZ_CHECK(!grammar.status().message().empty());
    return 0;
  }
  fuzz::CheckRecognizer(*grammar, instance);
  return 0;
}
