// The C-callback adapter, the `--lm` spec parser and the file reader (see
// language_model.h).
// The models themselves live in uniform_model.cc and ngram_model.cc.
// Tests: tests/sampling/language_model_test.cc.
#include "sampling/language_model.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sampling/ngram_model.h"
#include "sampling/uniform_model.h"

namespace zapgram::sampling {

absl::Status CallbackModel::NextLogProbs(absl::Span<const int32_t> prefix, std::vector<float>* logprobs) {
  if (callback_ == nullptr || vocab_size_ < 1) {
    return absl::FailedPreconditionError("callback model: no callback or vocabulary size < 1");
  }
  logprobs->assign(vocab_size_, -INFINITY);
  const int code = callback_(user_data_, prefix.data(), prefix.size(), logprobs->data(), vocab_size_);
  if (code != 0) {
    return absl::UnavailableError(absl::StrCat("callback model: the callback returned ", code,
                                               " at prefix length ", prefix.size()));
  }
  double total = 0.0;
  for (int32_t i = 0; i < vocab_size_; ++i) {
    const float value = (*logprobs)[i];
    if (std::isnan(value) || value == INFINITY) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "callback model: log-probability of token %d is %f at prefix length %d", i, value, prefix.size()));
    }
    total += std::exp(static_cast<double>(value));
  }
  if (std::fabs(total - 1.0) > 1e-3) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "callback model: probabilities sum to %.6f, not 1, at prefix length %d", total, prefix.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LanguageModel>> OpenLanguageModel(std::string_view spec, int32_t vocab_size) {
  if (spec == "uniform") {
    absl::StatusOr<UniformModel> model = UniformModel::Create(vocab_size);
    if (!model.ok()) return model.status();
    return std::unique_ptr<LanguageModel>(new UniformModel(*std::move(model)));
  }
  constexpr std::string_view kNgram = "ngram:";
  if (spec.substr(0, kNgram.size()) == kNgram) {
    const std::string path(spec.substr(kNgram.size()));
    absl::StatusOr<std::unique_ptr<NgramModel>> model = NgramModel::Load(path);
    if (!model.ok()) return model.status();
    if ((*model)->vocab_size() != vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": n-gram model has ", (*model)->vocab_size(),
                                                     " ids but the tokenizer has ", vocab_size));
    }
    return std::unique_ptr<LanguageModel>(std::move(*model));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown language model '", std::string(spec), "' (expected uniform or ngram:PATH)"));
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open ", std::string(what)));
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  return buffer.str();
}

}  // namespace zapgram::sampling
