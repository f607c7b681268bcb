// UniformModel (see uniform_model.h).
#include "sampling/uniform_model.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace zapgram::sampling {

absl::StatusOr<UniformModel> UniformModel::Create(int32_t vocab_size) {
  if (vocab_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("uniform model: vocabulary size ", vocab_size, " < 1"));
  }
  return UniformModel(vocab_size);
}

absl::Status UniformModel::NextLogProbs(absl::Span<const int32_t> prefix, std::vector<float>* logprobs) {
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (prefix[i] < 0 || prefix[i] >= vocab_size_) {
      return absl::InvalidArgumentError(absl::StrCat("uniform model: prefix token ", i, " is id ", prefix[i],
                                                     ", outside [0, ", vocab_size_, ")"));
    }
  }
  logprobs->assign(vocab_size_, static_cast<float>(-std::log(static_cast<double>(vocab_size_))));
  return absl::OkStatus();
}

}  // namespace zapgram::sampling
