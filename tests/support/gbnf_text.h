// Reading a GBNF text in a test as the file "t.gbnf": its dump, or its
// error message. Shared by the reader's tests and those of the stages it
// runs (rule lookaheads, rule attributes).
#ifndef ZAPGRAM_TESTS_SUPPORT_GBNF_TEXT_H_
#define ZAPGRAM_TESTS_SUPPORT_GBNF_TEXT_H_

#include <string>
#include <string_view>

#include "grammar/gbnf_reader.h"
#include "grammar/grammar.h"
#include "gtest/gtest.h"

namespace zapgram::testing {

// Dump of the grammar, or "ERROR: message".
inline std::string DumpOf(std::string_view text, const grammar::GbnfReadOptions& options = {}) {
  absl::StatusOr<grammar::Grammar> g = grammar::ReadGbnf(text, "t.gbnf", options);
  if (!g.ok()) return "ERROR: " + std::string(g.status().message());
  return grammar::Dump(*g);
}

// Error message of reading `text` as t.gbnf (always InvalidArgument), or "OK".
inline std::string ErrorOf(std::string_view text, const grammar::GbnfReadOptions& options = {}) {
  absl::StatusOr<grammar::Grammar> g = grammar::ReadGbnf(text, "t.gbnf", options);
  if (g.ok()) return "OK";
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(g.status().message());
}

}  // namespace zapgram::testing

#endif  // ZAPGRAM_TESTS_SUPPORT_GBNF_TEXT_H_
