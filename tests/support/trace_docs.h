// Trace documents and the Llama 3 vocabulary for the API-level tests
// (traces/<tokenizer>/<set>.jsonl, the format of ../DESIGN.md).
#ifndef ZAPGRAM_TESTS_SUPPORT_TRACE_DOCS_H_
#define ZAPGRAM_TESTS_SUPPORT_TRACE_DOCS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "zapgram/matcher.h"

namespace zapgram::testing {

struct TraceDoc {
  std::string grammar;  // the record's grammar argument
  std::vector<int32_t> tokens;
};

// Up to `count` valid records of `trace` (a path under the data folder),
// every `stride`-th line (invalid records on those lines are skipped).
std::vector<TraceDoc> ReadTraceDocs(const std::string& trace, size_t count, size_t stride);

// traces' tokenizer: Llama 3, loaded once.
const Vocabulary& Llama3Vocabulary();

}  // namespace zapgram::testing

#endif  // ZAPGRAM_TESTS_SUPPORT_TRACE_DOCS_H_
