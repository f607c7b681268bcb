// `zapgram ngram train` and `zapgram ngram info` end to end with the Llama 3
// tokenizer: train on a small file, load the model back, check that it
// learned the corpus (its favourite continuations are the corpus's) and that
// bad usage and corrupt models exit with status 2.
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "masks/canonical_tokenizer.h"
#include "sampling/ngram_model.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"

namespace zapgram {
namespace {

testing::CliResult Zapgram(const std::vector<std::string>& args) {
  return testing::RunCliAt(ZAPGRAM_CLI_PATH, args);
}

std::string Llama3() { return testing::DataPath("tokenizers/llama3.tokenizer.json"); }

std::string WriteCorpus() {
  const std::string path = testing::FreshTempPath("corpus.txt");
  std::ofstream out(path);
  for (int i = 0; i < 20; ++i) out << "{\"name\": \"zap\", \"size\": " << i << "}\n";
  return path;
}

TEST(NgramCli, TrainsPerLineAndTheModelLoads) {
  const std::string corpus = WriteCorpus();
  const std::string model_path = testing::FreshTempPath("model.zgngram");
  testing::CliResult r = Zapgram({"ngram", "train", "--tokenizer", Llama3(), "--order", "3", "--per-line", corpus,
                                  "-o", model_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("on 20 documents"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote"), std::string::npos) << r.out;

  r = Zapgram({"ngram", "info", model_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("order 3\nvocab_size 128256\neos_id 128001\n"), std::string::npos) << r.out;

  absl::StatusOr<std::unique_ptr<sampling::NgramModel>> model = sampling::NgramModel::Load(model_path);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<std::shared_ptr<const masks::CanonicalTokenizer>> encoder =
      masks::CanonicalTokenizer::LoadFromFile(Llama3());
  ASSERT_TRUE(encoder.ok());
  // Every document starts with the same token and ends with `}` then EOS.
  const std::vector<int32_t> line = *(*encoder)->Encode("{\"name\": \"zap\", \"size\": 7}", masks::kDocumentEncoding);
  std::vector<float> logprobs;
  ASSERT_TRUE((*model)->NextLogProbs({}, &logprobs).ok());
  EXPECT_EQ(std::max_element(logprobs.begin(), logprobs.end()) - logprobs.begin(), line[0]);
  double total = 0;
  for (float lp : logprobs) total += std::exp(static_cast<double>(lp));
  EXPECT_NEAR(total, 1.0, 1e-4);
  ASSERT_TRUE((*model)->NextLogProbs(line, &logprobs).ok());
  EXPECT_EQ(std::max_element(logprobs.begin(), logprobs.end()) - logprobs.begin(), 128001);
  EXPECT_GT(std::exp(logprobs[128001]), 0.5);
}

TEST(NgramCli, UsageErrorsAndCorruptModels) {
  const std::string corpus = WriteCorpus();
  EXPECT_EQ(Zapgram({"ngram", "train", "--tokenizer", Llama3(), corpus}).exit_code, 2);  // no -o
  EXPECT_EQ(Zapgram({"ngram", "train", "--tokenizer", Llama3(), "-o", testing::FreshTempPath("m"),
                     testing::FreshTempPath("missing.txt")})
                .exit_code,
            2);
  EXPECT_EQ(Zapgram({"ngram", "train", "--tokenizer", Llama3(), "--order", "0", corpus, "-o",
                     testing::FreshTempPath("m")})
                .exit_code,
            2);
  EXPECT_EQ(Zapgram({"ngram", "frobnicate"}).exit_code, 2);
  testing::CliResult r = Zapgram({"ngram", "info", corpus});  // not a model
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("magic"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace zapgram
