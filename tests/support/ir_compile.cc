#include "tests/support/ir_compile.h"

#include "gtest/gtest.h"
#include "pruning/compact.h"
#include "transforms/pipeline.h"
#include "transforms/regular_terminals.h"

namespace zapgram::testing {

absl::StatusOr<parser::FlatGrammar> CompileIr(const grammar::Grammar& g) {
  absl::StatusOr<grammar::Grammar> normalized = transforms::NormalizeForCompile(g);
  if (!normalized.ok()) return normalized.status();
  absl::StatusOr<grammar::Grammar> merged = transforms::MergeRegularTerminals(*normalized);
  if (!merged.ok()) return merged.status();
  return parser::BuildFlatGrammar(*merged);
}

bool FlatAccepts(const parser::FlatGrammar& flat, std::string_view text) {
  parser::Recognizer r = pruning::MakeRecognizer(&flat);
  return r.FeedBytes(text) == text.size() && r.IsAccepting();
}

parser::FlatGrammar CompileLarkText(std::string_view lark, const grammar::LarkLoweringOptions& options) {
  absl::StatusOr<grammar::Grammar> g = grammar::ReadLarkGrammar(lark, "test.lark", {}, options);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return {};
  absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(*g);
  EXPECT_TRUE(flat.ok()) << flat.status();
  return flat.ok() ? *std::move(flat) : parser::FlatGrammar{};
}

bool AcceptsByteByByte(const parser::FlatGrammar& flat, std::string_view input) {
  bool results[2];
  for (bool pruning : {false, true}) {
    RecognizerOptions options;
    options.pruning = pruning;
    parser::Recognizer r = pruning::MakeRecognizer(&flat, options);
    bool alive = true;
    for (size_t i = 0; i < input.size(); ++i) {
      const uint8_t c = static_cast<uint8_t>(input[i]);
      const bool announced = r.NextBytes().test(c);
      const bool fed = r.Feed(c);
      EXPECT_EQ(announced, fed) << "byte " << i << " of \"" << input << "\"";
      if (!fed) {
        alive = false;
        break;
      }
    }
    results[pruning] = alive && r.IsAccepting();
  }
  EXPECT_EQ(results[0], results[1]) << input;
  return results[1];
}

}  // namespace zapgram::testing
