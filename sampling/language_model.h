// The language-model interface the samplers draw from (sampling/samplers.h),
// and the built-in models: uniform, a token n-gram model, and an adapter for
// a C callback (a real model plugged in through the C API).
//
// OWNER (session 3): the LM helper. The LanguageModel interface below is
// fixed (the samplers helper codes against it); the rest may grow.
#ifndef ZAPGRAM_SAMPLING_LANGUAGE_MODEL_H_
#define ZAPGRAM_SAMPLING_LANGUAGE_MODEL_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace zapgram::sampling {

// A distribution over the next token given a token prefix. vocab_size()
// covers every id of the output layer, EOS included (the Vocabulary's
// padded_size()). Not thread-safe: one model per sampling thread.
class LanguageModel {
 public:
  virtual ~LanguageModel() = default;
  virtual int32_t vocab_size() const = 0;
  // Fills `logprobs` (resized to vocab_size()) with natural-log probabilities
  // of each next token after `prefix`; they sum to 1 in probability space
  // (-inf for impossible tokens). Errors come from the model (a callback).
  virtual absl::Status NextLogProbs(absl::Span<const int32_t> prefix,
                                    std::vector<float>* logprobs) = 0;
};

}  // namespace zapgram::sampling

#endif  // ZAPGRAM_SAMPLING_LANGUAGE_MODEL_H_
