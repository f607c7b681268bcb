// Language models (sampling/language_model.h, uniform_model.h,
// ngram_model.h). The encoder that turns their training text into ids is
// masks/canonical_tokenizer.h, tested in tests/masks/canonical_tokenizer_test.cc.
//
// N-gram model: conditional probabilities of tiny corpora computed by hand
// (the derivations are in the comments), normalisation and positivity on
// random prefixes, the dense fill against the per-token recursion, the file
// round trip, and corrupt files (every truncation, every byte flip, and
// structurally bad files with a valid checksum).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sampling/language_model.h"
#include "sampling/ngram_model.h"
#include "sampling/uniform_model.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"

namespace zapgram::sampling {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------- models

double SumOfProbabilities(const std::vector<float>& logprobs) {
  double total = 0;
  for (float lp : logprobs) total += std::exp(static_cast<double>(lp));
  return total;
}

std::vector<std::string> Documents(std::string_view text, DocumentSplit split) {
  std::vector<std::string> out;
  for (std::string_view document : SplitDocuments(text, split)) out.emplace_back(document);
  return out;
}

TEST(SplitDocuments, WholeLinesAndParagraphs) {
  const std::string text = "a = 1\r\nb = 2\n\n\nc = 3\n\nd";
  EXPECT_EQ(Documents(text, DocumentSplit::kWhole), std::vector<std::string>({text}));
  EXPECT_EQ(Documents(text, DocumentSplit::kPerLine), std::vector<std::string>({"a = 1", "b = 2", "c = 3", "d"}));
  EXPECT_EQ(Documents(text, DocumentSplit::kPerParagraph),
            std::vector<std::string>({"a = 1\r\nb = 2\n", "c = 3\n", "d"}));
  EXPECT_TRUE(Documents("", DocumentSplit::kWhole).empty());
  EXPECT_TRUE(Documents("\n\n", DocumentSplit::kPerParagraph).empty());
}

TEST(UniformModel, EveryIdHasOneOverV) {
  absl::StatusOr<UniformModel> model = UniformModel::Create(7);
  ASSERT_TRUE(model.ok());
  std::vector<float> logprobs;
  ASSERT_TRUE(model->NextLogProbs({1, 2, 6}, &logprobs).ok());
  ASSERT_EQ(logprobs.size(), 7u);
  for (float lp : logprobs) EXPECT_NEAR(std::exp(lp), 1.0 / 7, 1e-7);
  EXPECT_FALSE(model->NextLogProbs({7}, &logprobs).ok());
  EXPECT_FALSE(UniformModel::Create(0).ok());
}

// V = 5: tokens 0..3 and EOS = 4.
constexpr int32_t kV = 5;
constexpr int32_t kEos = 4;

std::unique_ptr<NgramModel> Train(const std::vector<std::vector<int32_t>>& documents, int order,
                                  std::optional<double> discount) {
  NgramOptions options;
  options.order = order;
  options.vocab_size = kV;
  options.eos_id = kEos;
  options.discount = discount;
  absl::StatusOr<NgramCounter> counter = NgramCounter::Create(options);
  EXPECT_TRUE(counter.ok()) << counter.status();
  for (const auto& document : documents) EXPECT_TRUE(counter->AddDocument(document).ok());
  absl::StatusOr<std::unique_ptr<NgramModel>> model = counter->Build();
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// Checks the dense fill against the scalar recursion for every token.
void ExpectDenseMatchesScalar(NgramModel& model, const std::vector<int32_t>& prefix) {
  std::vector<float> logprobs;
  ASSERT_TRUE(model.NextLogProbs(prefix, &logprobs).ok());
  for (int32_t w = 0; w < model.vocab_size(); ++w) {
    EXPECT_NEAR(std::exp(static_cast<double>(logprobs[w])), model.Probability(prefix, w),
                1e-6 * model.Probability(prefix, w))
        << "token " << w;
  }
}

TEST(NgramModel, BigramProbabilitiesByHand) {
  // Documents [0 1] and [0 2], order 2, D = 0.5; read as S 0 1 E and S 0 2 E.
  // Unigram Kneser-Ney counts (distinct left neighbours): a(0) = |{S}| = 1,
  // a(1) = a(2) = |{0}| = 1, a(E) = |{1, 2}| = 2; T = 5, 4 types, so
  //   P1(w) = max(a - 0.5, 0) / 5 + 0.5 * 4 / 5 * 1/5
  //   P1(0) = P1(1) = P1(2) = 0.1 + 0.08 = 0.18, P1(E) = 0.38, P1(3) = 0.08.
  // Context [S]: a(S 0) = 2 (raw), T = 2, 1 type:
  //   P(0 | S) = 1.5 / 2 + 0.5 * 1/2 * 0.18 = 0.795;  P(3 | S) = 0.25 * 0.08 = 0.02.
  // Context [0]: a(0 1) = a(0 2) = 1, T = 2, 2 types:
  //   P(1 | 0) = 0.5 / 2 + 0.5 * 0.18 = 0.34;  P(E | 0) = 0.5 * 0.38 = 0.19.
  // Context [3] never seen: P(E | 3) = P1(E) = 0.38.
  std::unique_ptr<NgramModel> model = Train({{0, 1}, {0, 2}}, 2, 0.5);
  EXPECT_NEAR(model->Probability({}, 0), 0.795, 1e-12);
  EXPECT_NEAR(model->Probability({}, 3), 0.02, 1e-12);
  EXPECT_NEAR(model->Probability({0}, 1), 0.34, 1e-12);
  EXPECT_NEAR(model->Probability({0}, kEos), 0.19, 1e-12);
  EXPECT_NEAR(model->Probability({3}, kEos), 0.38, 1e-12);
  EXPECT_NEAR(model->Probability({0, 2, 3}, 1), 0.18, 1e-12);
  for (const std::vector<int32_t>& prefix : std::vector<std::vector<int32_t>>{{}, {0}, {3}, {0, 1}}) {
    ExpectDenseMatchesScalar(*model, prefix);
  }
  std::vector<float> logprobs;
  ASSERT_TRUE(model->NextLogProbs({0}, &logprobs).ok());
  EXPECT_NEAR(std::exp(logprobs[1]), 0.34, 1e-6);
  EXPECT_NEAR(SumOfProbabilities(logprobs), 1.0, 1e-6);
}

TEST(NgramModel, TrigramUsesRawCountsAtTheDocumentStart) {
  // Same documents, order 3, D = 0.5. Order-2 counts: a(S 0) = 2 (starts at
  // S: raw), a(0 1) = a(0 2) = |{S}| = 1, a(1 E) = a(2 E) = |{0}| = 1.
  //   P2(E | 1) = 0.5 / 1 + 0.5 * 1/1 * P1(E) = 0.5 + 0.19 = 0.69
  //   P(E | 0 1) = 0.5 / 1 + 0.5 * 0.69 = 0.845           (context [0 1])
  //   P2(1 | 0) = 0.34 (as in the bigram test)
  //   P(1 | S 0) = 0.5 / 2 + 0.5 * 2/2 * 0.34 = 0.42      (context [S 0])
  std::unique_ptr<NgramModel> model = Train({{0, 1}, {0, 2}}, 3, 0.5);
  EXPECT_NEAR(model->Probability({0, 1}, kEos), 0.845, 1e-12);
  EXPECT_NEAR(model->Probability({0}, 1), 0.42, 1e-12);
  // After [3 0] the context [3 0] is unknown: the order-2 value.
  EXPECT_NEAR(model->Probability({3, 0}, 1), 0.34, 1e-12);
  ExpectDenseMatchesScalar(*model, {0});
  ExpectDenseMatchesScalar(*model, {0, 1});
}

TEST(NgramModel, DiscountsAreEstimatedPerOrder) {
  // Bigram model of {0 1}, {0 2}: order-1 counts 1, 1, 1, 2 -> n1 = 3, n2 = 1,
  // D1 = 3 / (3 + 2) = 0.6; order-2 counts 2, 1, 1, 1, 1 -> D2 = 4 / 6.
  std::unique_ptr<NgramModel> model = Train({{0, 1}, {0, 2}}, 2, std::nullopt);
  EXPECT_DOUBLE_EQ(model->discount(1), 0.6);
  EXPECT_DOUBLE_EQ(model->discount(2), 4.0 / 6.0);
}

TEST(NgramModel, EmptyTrainingGivesUniform) {
  std::unique_ptr<NgramModel> model = Train({}, 3, std::nullopt);
  std::vector<float> logprobs;
  ASSERT_TRUE(model->NextLogProbs({1, 2}, &logprobs).ok());
  for (float lp : logprobs) EXPECT_NEAR(std::exp(lp), 1.0 / kV, 1e-7);
}

TEST(NgramModel, RejectsBadOptionsAndIds) {
  NgramOptions options;
  options.vocab_size = kV;
  options.eos_id = kV;
  EXPECT_FALSE(NgramCounter::Create(options).ok());
  options.eos_id = kEos;
  options.order = 0;
  EXPECT_FALSE(NgramCounter::Create(options).ok());
  options.order = 2;
  options.discount = 1.5;
  EXPECT_FALSE(NgramCounter::Create(options).ok());
  options.discount.reset();
  absl::StatusOr<NgramCounter> counter = NgramCounter::Create(options);
  ASSERT_TRUE(counter.ok());
  EXPECT_FALSE(counter->AddDocument({0, 9}).ok());
  std::unique_ptr<NgramModel> model = Train({{0, 1}}, 2, std::nullopt);
  std::vector<float> logprobs;
  EXPECT_FALSE(model->NextLogProbs({-1}, &logprobs).ok());
}

// A random corpus over `v` ids with some structure (token t tends to follow t-1).
std::unique_ptr<NgramModel> RandomModel(int32_t v, int order, uint32_t seed) {
  std::mt19937 rng(seed);
  NgramOptions options;
  options.order = order;
  options.vocab_size = v;
  options.eos_id = v - 1;
  absl::StatusOr<NgramCounter> counter = NgramCounter::Create(options);
  EXPECT_TRUE(counter.ok());
  for (int d = 0; d < 60; ++d) {
    std::vector<int32_t> document;
    int32_t t = static_cast<int32_t>(rng() % (v - 1));
    const int length = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < length; ++i) {
      document.push_back(t);
      t = rng() % 3 == 0 ? static_cast<int32_t>(rng() % (v - 1)) : (t + 1) % (v - 1);
    }
    EXPECT_TRUE(counter->AddDocument(document).ok());
  }
  absl::StatusOr<std::unique_ptr<NgramModel>> model = counter->Build();
  EXPECT_TRUE(model.ok());
  return *std::move(model);
}

std::vector<std::vector<int32_t>> RandomPrefixes(int32_t v, int count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<int32_t>> prefixes;
  for (int i = 0; i < count; ++i) {
    std::vector<int32_t> prefix(rng() % 8);
    int32_t t = static_cast<int32_t>(rng() % v);
    for (int32_t& id : prefix) {
      id = t;
      t = rng() % 2 == 0 ? static_cast<int32_t>(rng() % v) : (t + 1) % (v - 1);
    }
    prefixes.push_back(prefix);
  }
  return prefixes;
}

TEST(NgramModel, NormalisedAndPositiveOnRandomPrefixes) {
  for (int order : {1, 2, 3, 5}) {
    std::unique_ptr<NgramModel> model = RandomModel(40, order, 7 + order);
    std::vector<float> logprobs;
    for (const std::vector<int32_t>& prefix : RandomPrefixes(40, 200, 11)) {
      ASSERT_TRUE(model->NextLogProbs(prefix, &logprobs).ok());
      ASSERT_EQ(logprobs.size(), 40u);
      for (float lp : logprobs) {
        ASSERT_TRUE(std::isfinite(lp));
        ASSERT_LT(lp, 0.0f);
      }
      EXPECT_NEAR(SumOfProbabilities(logprobs), 1.0, 1e-5) << "order " << order;
    }
    for (const std::vector<int32_t>& prefix : RandomPrefixes(40, 10, 12)) ExpectDenseMatchesScalar(*model, prefix);
  }
}

TEST(NgramModel, FileRoundTripGivesIdenticalLogProbs) {
  std::unique_ptr<NgramModel> model = RandomModel(40, 4, 3);
  const std::string path = testing::FreshTempPath("model.zgngram");
  ASSERT_TRUE(model->Save(path).ok());
  absl::StatusOr<std::unique_ptr<NgramModel>> loaded = NgramModel::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->order(), 4);
  EXPECT_EQ((*loaded)->num_contexts(), model->num_contexts());
  EXPECT_EQ((*loaded)->num_entries(), model->num_entries());
  EXPECT_EQ((*loaded)->Serialize(), model->Serialize());
  std::vector<float> a, b;
  for (const std::vector<int32_t>& prefix : RandomPrefixes(40, 100, 5)) {
    ASSERT_TRUE(model->NextLogProbs(prefix, &a).ok());
    ASSERT_TRUE((*loaded)->NextLogProbs(prefix, &b).ok());
    ASSERT_EQ(a, b);
  }
  EXPECT_FALSE(NgramModel::Load(testing::FreshTempPath("missing")).ok());
}

// Independent FNV-1a 64, to forge files whose checksum is valid.
uint64_t Fnv(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

void Reseal(std::string* file) {
  file->resize(file->size() - 8);
  const uint64_t h = Fnv(*file);
  for (int i = 0; i < 8; ++i) file->push_back(static_cast<char>((h >> (8 * i)) & 0xFF));
}

void PutU32At(std::string* file, size_t offset, uint32_t value) {
  for (int i = 0; i < 4; ++i) (*file)[offset + i] = static_cast<char>((value >> (8 * i)) & 0xFF);
}

TEST(NgramModel, CorruptFilesAreCleanErrors) {
  std::unique_ptr<NgramModel> model = Train({{0, 1, 2}, {0, 2}, {3}}, 3, std::nullopt);
  const std::string good = model->Serialize();
  ASSERT_TRUE(NgramModel::Parse(good, "good").ok());
  for (size_t length = 0; length < good.size(); ++length) {
    EXPECT_FALSE(NgramModel::Parse(good.substr(0, length), "cut").ok()) << length;
  }
  EXPECT_FALSE(NgramModel::Parse(good + "x", "long").ok());
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x10;
    EXPECT_FALSE(NgramModel::Parse(bad, "flip").ok()) << "byte " << i;
  }
  // Structural errors behind a valid checksum. Layout: 8 magic, 16 header
  // fields, 16 counts, 8 * order discounts, then 12 bytes per context.
  const size_t contexts_at = 8 + 16 + 16 + 8 * 3;
  absl::StatusOr<std::unique_ptr<NgramModel>> parsed;
  std::string bad = good;
  PutU32At(&bad, 8, 2);  // version
  Reseal(&bad);
  parsed = NgramModel::Parse(bad, "v2");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("version 2"), std::string_view::npos) << parsed.status();
  bad = good;
  PutU32At(&bad, contexts_at + 12, 5);  // context 1's parent: not before it
  Reseal(&bad);
  parsed = NgramModel::Parse(bad, "parent");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("context 1"), std::string_view::npos) << parsed.status();
  bad = good;
  PutU32At(&bad, bad.size() - 8 - 8, 99);  // last entry's token: out of range
  Reseal(&bad);
  EXPECT_FALSE(NgramModel::Parse(bad, "token").ok());
  bad = good;
  PutU32At(&bad, 12, 99);  // order 99
  Reseal(&bad);
  EXPECT_FALSE(NgramModel::Parse(bad, "order").ok());
  bad = good;
  std::memcpy(bad.data(), "NOTMODEL", 8);
  parsed = NgramModel::Parse(bad, "magic");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("magic"), std::string_view::npos);
}

// ---------------------------------------------------------------- adapters

int UniformCallback(void* user_data, const int32_t*, size_t, float* logprobs, int32_t v) {
  const float scale = *static_cast<float*>(user_data);
  for (int32_t i = 0; i < v; ++i) logprobs[i] = std::log(scale / static_cast<float>(v));
  return 0;
}

int FailingCallback(void*, const int32_t*, size_t, float*, int32_t) { return 7; }

TEST(CallbackModel, ChecksWhatTheCallbackReturns) {
  float scale = 1.0f;
  CallbackModel good(10, UniformCallback, &scale);
  std::vector<float> logprobs;
  ASSERT_TRUE(good.NextLogProbs({1, 2}, &logprobs).ok());
  EXPECT_NEAR(SumOfProbabilities(logprobs), 1.0, 1e-6);
  scale = 2.0f;  // sums to 2
  EXPECT_FALSE(good.NextLogProbs({}, &logprobs).ok());
  CallbackModel failing(10, FailingCallback, nullptr);
  absl::Status status = failing.NextLogProbs({}, &logprobs);
  EXPECT_NE(status.message().find("returned 7"), std::string_view::npos) << status;
}

TEST(OpenLanguageModel, ParsesSpecs) {
  absl::StatusOr<std::unique_ptr<LanguageModel>> model = OpenLanguageModel("uniform", 12);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ((*model)->vocab_size(), 12);
  const std::string path = testing::FreshTempPath("spec.zgngram");
  ASSERT_TRUE(Train({{0, 1}}, 2, std::nullopt)->Save(path).ok());
  model = OpenLanguageModel(absl::StrCat("ngram:", path), kV);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->vocab_size(), kV);
  EXPECT_FALSE(OpenLanguageModel(absl::StrCat("ngram:", path), 128256).ok());
  EXPECT_FALSE(OpenLanguageModel("gpt5", 12).ok());
}

}  // namespace
}  // namespace zapgram::sampling
