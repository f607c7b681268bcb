// UniformModel: every one of the V ids (EOS included) has probability 1/V.
//
// The simplest LanguageModel: a baseline for the samplers (under it, the
// grammar-restricted target is uniform over the language's token sequences
// weighted by V^-length) and a fixture for tests that need a model with no
// training. Tests: tests/sampling/language_model_test.cc.
#ifndef ZAPGRAM_SAMPLING_UNIFORM_MODEL_H_
#define ZAPGRAM_SAMPLING_UNIFORM_MODEL_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampling/language_model.h"

namespace zapgram::sampling {

class UniformModel final : public LanguageModel {
 public:
  // `vocab_size` >= 1 (the Vocabulary's padded_size()).
  static absl::StatusOr<UniformModel> Create(int32_t vocab_size);

  int32_t vocab_size() const override { return vocab_size_; }
  // Every entry is -log(V); the prefix's ids must lie in [0, V).
  absl::Status NextLogProbs(absl::Span<const int32_t> prefix, std::vector<float>* logprobs) override;

 private:
  explicit UniformModel(int32_t vocab_size) : vocab_size_(vocab_size) {}
  int32_t vocab_size_;
};

}  // namespace zapgram::sampling

#endif  // ZAPGRAM_SAMPLING_UNIFORM_MODEL_H_
