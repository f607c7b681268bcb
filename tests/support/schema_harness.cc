// See schema_harness.h.
#include "tests/support/schema_harness.h"

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "zapgram/grammar.h"

namespace zapgram::testing {

std::vector<SchemaGroup> ReadSchemaGroups(const std::string& trace_path) {
  std::ifstream in(trace_path);
  std::vector<SchemaGroup> groups;
  std::map<std::string, size_t> index;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.is_object()) continue;
    if (record.value("roundtrip_mismatch", false)) continue;
    const std::string spec = record.value("grammar", "");
    auto [it, inserted] = index.emplace(spec, groups.size());
    if (inserted) groups.push_back({spec, {}});
    SchemaInstance instance;
    instance.id = record.value("id", "");
    instance.text = record.value("text", "");
    instance.valid = record.value("valid", false);
    instance.optional = record.value("optional", false);
    groups[it->second].instances.push_back(std::move(instance));
  }
  return groups;
}

namespace {

std::vector<bool> Verdicts(const Grammar& grammar, const std::vector<SchemaInstance>& instances,
                           std::vector<std::string>* errors) {
  std::vector<bool> out;
  for (const SchemaInstance& instance : instances) {
    Recognizer recognizer(grammar);
    const bool accepted =
        recognizer.FeedBytes(instance.text) == instance.text.size() && recognizer.IsAccepting();
    if (!recognizer.status().ok()) {
      errors->push_back(instance.id + ": " + std::string(recognizer.status().message()));
    }
    out.push_back(accepted);
  }
  return out;
}

}  // namespace

SchemaVerdicts RunSchemaGroup(const SchemaGroup& group, const std::string& data_root,
                              const SchemaOptions& schema) {
  SchemaVerdicts v;
  LoadOptions strict_options;
  strict_options.schema = schema;
  strict_options.schema.lenient = false;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Grammar> strict = Grammar::Load(group.spec, data_root, strict_options);
  v.strict_compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  v.strict = strict.status();
  v.lenient = strict.status();
  if (strict.ok()) {
    v.strict_accepts = Verdicts(*strict, group.instances, &v.recognizer_errors);
    v.lenient_accepts = v.strict_accepts;
    return v;
  }
  v.strict_accepts.assign(group.instances.size(), false);
  LoadOptions options;
  options.schema = schema;
  options.schema.lenient = true;
  absl::StatusOr<Grammar> lenient = Grammar::Load(group.spec, data_root, options);
  v.lenient = lenient.status();
  if (lenient.ok()) {
    v.warnings = lenient->warnings();
    v.lenient_accepts = Verdicts(*lenient, group.instances, &v.recognizer_errors);
  } else {
    v.lenient_accepts.assign(group.instances.size(), false);
  }
  return v;
}

std::string UnsupportedKeyword(const absl::Status& status) {
  const std::string message(status.message());
  const size_t at = message.find("unsupported: ");
  if (at == std::string::npos) return "";
  const size_t begin = at + 13;
  const size_t end = message.find(" at ", begin);
  return message.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

std::string WarningKeyword(const std::string& warning) {
  const size_t begin = warning.find("dropped ");
  if (begin == std::string::npos) return "";
  const size_t end = warning.find(" at ", begin + 8);
  return warning.substr(begin + 8, end == std::string::npos ? std::string::npos : end - begin - 8);
}

}  // namespace zapgram::testing
