#include "tests/support/ir_compile.h"

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

}  // namespace zapgram::testing
