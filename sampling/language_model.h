// The language-model interface the samplers draw from (sampling/samplers.h),
// and the built-in models: uniform, a token n-gram model, and an adapter for
// a C callback (a real model plugged in through the C API).
//
// OWNER (session 3): the LM helper. The LanguageModel interface below is
// fixed (the samplers helper codes against it); the rest may grow.
#ifndef ZAPGRAM_SAMPLING_LANGUAGE_MODEL_H_
#define ZAPGRAM_SAMPLING_LANGUAGE_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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

// A model behind a C function, so a real LM can be plugged in through the C
// API. The callback fills `logprobs[0 .. vocab_size)` for the prefix and
// returns 0, or a non-zero code on failure. The adapter checks what comes
// back: NaN or +inf entries, or probabilities that do not sum to 1 within
// 1e-3, are errors (a sampler must never draw from a broken distribution).
using NextLogProbsCallback = int (*)(void* user_data, const int32_t* prefix, size_t prefix_length,
                                     float* logprobs, int32_t vocab_size);

class CallbackModel final : public LanguageModel {
 public:
  // `user_data` is passed through untouched and must outlive the model.
  CallbackModel(int32_t vocab_size, NextLogProbsCallback callback, void* user_data)
      : vocab_size_(vocab_size), callback_(callback), user_data_(user_data) {}
  int32_t vocab_size() const override { return vocab_size_; }
  absl::Status NextLogProbs(absl::Span<const int32_t> prefix, std::vector<float>* logprobs) override;

 private:
  int32_t vocab_size_;
  NextLogProbsCallback callback_;
  void* user_data_;
};

// A built-in model by name, as the CLI's `--lm` takes it: `uniform` or
// `ngram:PATH` (a file written by `zapgram ngram train`). `vocab_size` is the
// tokenizer's padded size; an n-gram model trained for another size is an error.
absl::StatusOr<std::unique_ptr<LanguageModel>> OpenLanguageModel(std::string_view spec, int32_t vocab_size);

// The bytes of the file at `path`; errors name the path and `what` it is.
// (Shared by the model and tokenizer loaders of this folder.)
absl::StatusOr<std::string> ReadWholeFile(const std::string& path, std::string_view what);

}  // namespace zapgram::sampling

#endif  // ZAPGRAM_SAMPLING_LANGUAGE_MODEL_H_
