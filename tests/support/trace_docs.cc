// Trace documents and the Llama 3 vocabulary (see trace_docs.h).
#include "tests/support/trace_docs.h"

#include <fstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_paths.h"

namespace zapgram::testing {

std::vector<TraceDoc> ReadTraceDocs(const std::string& trace, size_t count, size_t stride) {
  std::ifstream in(DataPath(trace));
  EXPECT_TRUE(in.good()) << trace;
  std::vector<TraceDoc> docs;
  std::string line;
  for (size_t n = 0; std::getline(in, line) && docs.size() < count; ++n) {
    if (n % stride != 0) continue;
    const nlohmann::json record = nlohmann::json::parse(line);
    if (!record.value("valid", true)) continue;
    docs.push_back({record["grammar"].get<std::string>(), record["tokens"].get<std::vector<int32_t>>()});
  }
  return docs;
}

const Vocabulary& Llama3Vocabulary() {
  static const Vocabulary* vocabulary = [] {
    absl::StatusOr<Vocabulary> v = Vocabulary::Load(DataPath("tokenizers/llama3.tokenizer.json"));
    EXPECT_TRUE(v.ok()) << v.status();
    return new Vocabulary(*std::move(v));
  }();
  return *vocabulary;
}

}  // namespace zapgram::testing
