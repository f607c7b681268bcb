// `zapgram sample` end to end with the Llama 3 tokenizer: samples of a regex
// grammar under the uniform model and under an n-gram model trained on a
// tiny corpus (every method), --jsonl and --stats-json output, determinism
// under a seed, budgets (exit 1) and usage errors (exit 2).
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"

namespace zapgram {
namespace {

testing::CliResult Zapgram(const std::vector<std::string>& args) {
  return testing::RunCliAt(ZAPGRAM_CLI_PATH, args);
}

std::string Llama3() { return testing::DataPath("tokenizers/llama3.tokenizer.json"); }

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return nlohmann::json::parse(buffer.str(), nullptr, false);
}

void ExpectSamplesMatch(const std::string& out, const std::string& pattern, size_t count) {
  const std::vector<std::string> lines = testing::SplitLines(out);
  ASSERT_EQ(lines.size(), count) << out;
  const RE2 re(pattern);
  for (const std::string& line : lines) {
    nlohmann::json text = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(text.is_string()) << line;
    EXPECT_TRUE(RE2::FullMatch(text.get<std::string>(), re)) << line;
  }
}

TEST(SampleCli, CarsUnderUniformModelWritesJsonlAndStats) {
  const std::string stats = testing::FreshTempPath("stats.json");
  testing::CliResult r = Zapgram({"sample", "regex:[0-9]", "--tokenizer", Llama3(), "--lm", "uniform",
                                  "--method", "cars", "-n", "20", "--seed", "3", "--max-tokens", "4", "--jsonl",
                                  "--stats-json", stats});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectSamplesMatch(r.out, "[0-9]", 20);
  EXPECT_NE(r.err.find("method cars: 20 valid"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos);  // no progress bar off a terminal
  nlohmann::json j = ReadJson(stats);
  ASSERT_TRUE(j.is_object());
  for (const char* key : {"method", "draws", "lm_calls", "valid", "trie_nodes", "trie_bytes", "trie_reuse"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["method"], "cars");
  EXPECT_EQ(j["valid"], 20);
  EXPECT_EQ(j["lm_calls"], j["trie_nodes"]);
  // CARS's nodes keep only the allowed continuations: far below 4 bytes x 128k ids.
  EXPECT_LT(j["trie_bytes_per_node"].get<double>(), 128000.0);

  // The same seed gives the same samples.
  testing::CliResult again = Zapgram({"sample", "regex:[0-9]", "--tokenizer", Llama3(), "--lm", "uniform",
                                      "--method", "cars", "-n", "20", "--seed", "3", "--max-tokens", "4",
                                      "--jsonl"});
  EXPECT_EQ(again.out, r.out);
}

// RSFT under a uniform model at 128k ids: the root keeps the ten digits,
// each digit's node is a dense, pristine 512 KB distribution, and a 1 MB
// budget holds about two of them: the trie evicts and re-adds instead of
// freezing, and the stats say so.
TEST(SampleCli, TrieBudgetEvictsPristineNodes) {
  const std::string stats = testing::FreshTempPath("budget_stats.json");
  testing::CliResult r = Zapgram({"sample", "regex:[0-9]", "--tokenizer", Llama3(), "--lm", "uniform",
                                  "--method", "rsft", "-n", "1", "--seed", "5", "--max-tokens", "4",
                                  "--max-draws", "40", "--max-trie-mb", "1", "--stats-json", stats});
  ASSERT_EQ(r.exit_code, 1) << r.err;  // one valid draw needs EOS at 1/128k: stopped by --max-draws
  nlohmann::json j = ReadJson(stats);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["draws"], 40);
  EXPECT_GT(j["trie_evictions"].get<int64_t>(), 0);
  EXPECT_GT(j["trie_refetches"].get<int64_t>(), 0);
  EXPECT_EQ(j["trie_frozen"], false);
  EXPECT_LE(j["trie_peak_bytes"].get<int64_t>(), int64_t{1} << 20);
  EXPECT_EQ(j["acceptance_blocks"]["block"], 100);
  EXPECT_EQ(j["acceptance_blocks"]["valid"].size(), 1u);
  EXPECT_NE(r.err.find("evictions"), std::string::npos) << r.err;
}

TEST(SampleCli, EveryMethodUnderAnNgramModel) {
  const std::string corpus = testing::FreshTempPath("digits.txt");
  {
    std::ofstream out(corpus);
    for (int i = 0; i < 60; ++i) out << (i * 37) % 1000 << "\n" << "n" << i << "\n";
  }
  const std::string model = testing::FreshTempPath("digits.zgngram");
  testing::CliResult train = Zapgram({"ngram", "train", "--tokenizer", Llama3(), "--order", "2", "--per-line",
                                      corpus, "-o", model});
  ASSERT_EQ(train.exit_code, 0) << train.err;
  for (const char* method : {"cars", "ars", "rsft", "rs", "gcd"}) {
    const std::string stats = testing::FreshTempPath("stats.json");
    testing::CliResult r = Zapgram({"sample", "regex:[0-9]+", "--tokenizer", Llama3(), "--lm",
                                    "ngram:" + model, "--method", method, "-n", "10", "--max-tokens", "8",
                                    "--max-draws", "2000", "--jsonl", "--stats-json", stats});
    ASSERT_EQ(r.exit_code, 0) << method << ": " << r.err;
    ExpectSamplesMatch(r.out, "[0-9]+", 10);
    nlohmann::json j = ReadJson(stats);
    EXPECT_EQ(j["method"], method);
    EXPECT_GE(j["draws"].get<int>(), 10);
  }
}

TEST(SampleCli, ExactReportsDistancesToTheEnumeratedTarget) {
  const std::string stats = testing::FreshTempPath("stats.json");
  testing::CliResult r = Zapgram({"sample", "regex:[0-9]", "--tokenizer", Llama3(), "--lm", "uniform", "--method",
                                  "cars", "-n", "200", "--max-tokens", "1", "--exact", "--stats-json", stats});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("exact target: KL"), std::string::npos) << r.err;
  nlohmann::json j = ReadJson(stats);
  ASSERT_TRUE(j.contains("exact"));
  EXPECT_EQ(j["exact"]["outside"], 0);
  EXPECT_GT(j["exact"]["p_value"].get<double>(), 1e-3);
  EXPECT_LT(j["exact"]["tv"].get<double>(), 0.25);  // 10 equally likely digits, 200 samples
  // Too big to enumerate: a clear error.
  testing::CliResult big = Zapgram({"sample", "regex:[0-9]+", "--tokenizer", Llama3(), "--lm", "uniform",
                                    "--method", "cars", "-n", "0", "--max-tokens", "3", "--exact"});
  EXPECT_EQ(big.exit_code, 2);
  EXPECT_NE(big.err.find("enumeration"), std::string::npos) << big.err;
}

TEST(SampleCli, BudgetStopsWithExitOne) {
  const std::string stats = testing::FreshTempPath("stats.json");
  testing::CliResult r = Zapgram({"sample", "regex:[0-9]{1,3}", "--tokenizer", Llama3(), "--lm", "uniform",
                                  "--method", "rs", "-n", "50", "--max-draws", "3", "--stats-json", stats});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  nlohmann::json j = ReadJson(stats);
  EXPECT_EQ(j["draws"], 3);
  EXPECT_EQ(j["stop"], "max_draws");
}

TEST(SampleCli, UsageErrors) {
  EXPECT_EQ(Zapgram({"sample", "regex:a", "--tokenizer", Llama3(), "--method", "cars", "-n", "1"}).exit_code, 2);
  testing::CliResult bad_method = Zapgram(
      {"sample", "regex:a", "--tokenizer", Llama3(), "--lm", "uniform", "--method", "mcmc", "-n", "1"});
  EXPECT_EQ(bad_method.exit_code, 2);
  EXPECT_NE(bad_method.err.find("mcmc"), std::string::npos);
  testing::CliResult bad_model = Zapgram({"sample", "regex:a", "--tokenizer", Llama3(), "--lm",
                                          "ngram:/nonexistent/model", "--method", "cars", "-n", "1"});
  EXPECT_EQ(bad_model.exit_code, 2);
  EXPECT_NE(bad_model.err.find("/nonexistent/model"), std::string::npos) << bad_model.err;
  EXPECT_EQ(Zapgram({"sample", "regex:a", "--tokenizer", Llama3(), "--lm", "uniform", "--method", "cars", "-n",
                     "x"}).exit_code,
            2);
  EXPECT_EQ(Zapgram({"sample", "regex:(a", "--tokenizer", Llama3(), "--lm", "uniform", "--method", "cars", "-n",
                     "1"}).exit_code,
            2);
}

// --method smc: one sample per run, every one in the language; --weighted
// prints the K particles of each run with their weights; --budget-aware
// keeps every particle (and every budget-aware GCD draw) within M tokens.
TEST(SampleCli, SmcRunsWriteOneSamplePerRunAndWeightedParticles) {
  const std::string stats = testing::FreshTempPath("smc_stats.json");
  testing::CliResult r = Zapgram({"sample", "regex:[0-9]{2,3}", "--tokenizer", Llama3(), "--lm", "uniform",
                                  "--method", "smc", "--particles", "8", "-n", "5", "--seed", "2", "--max-tokens",
                                  "3", "--budget-aware", "--jsonl", "--stats-json", stats});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectSamplesMatch(r.out, "[0-9]{2,3}", 5);
  nlohmann::json j = ReadJson(stats);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["method"], "smc");
  EXPECT_EQ(j["runs"], 5);
  EXPECT_EQ(j["particles_valid"], 40);  // budget-aware: no particle runs out of length
  testing::CliResult w = Zapgram({"sample", "regex:[0-9]{2,3}", "--tokenizer", Llama3(), "--lm", "uniform",
                                  "--method", "smc", "--particles", "4", "-n", "2", "--weighted",
                                  "--resampling", "multinomial", "--ess-threshold", "1"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  const std::vector<std::string> lines = testing::SplitLines(w.out);
  ASSERT_EQ(lines.size(), 8u) << w.out;
  for (const std::string& line : lines) {
    nlohmann::json p = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(p.is_object()) << line;
    EXPECT_TRUE(p.contains("log_weight") && p.contains("valid") && p.contains("run")) << line;
  }
  EXPECT_EQ(Zapgram({"sample", "regex:a", "--tokenizer", Llama3(), "--lm", "uniform", "--method", "smc",
                     "--particles", "0", "-n", "1"}).exit_code, 2);
  EXPECT_EQ(Zapgram({"sample", "regex:a", "--tokenizer", Llama3(), "--lm", "uniform", "--method", "smc",
                     "--resampling", "stratified", "-n", "1"}).exit_code, 2);
}

TEST(SampleCli, BudgetAwareGcdNeverRunsOutOfLength) {
  const std::string stats = testing::FreshTempPath("gcd_budget.json");
  testing::CliResult r = Zapgram({"sample", "builtin:json", "--tokenizer", Llama3(), "--lm", "uniform", "--method",
                                  "gcd", "-n", "4", "--seed", "5", "--max-tokens", "8", "--budget-aware", "--jsonl",
                                  "--stats-json", stats});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = ReadJson(stats);
  EXPECT_EQ(j["draws"], 4);
  EXPECT_EQ(j["valid"], 4);
  EXPECT_EQ(j["budget_aware"], true);
}

TEST(MaskCli, TokensLeftGivesTheBudgetAwareMask) {
  testing::CliResult plain = Zapgram({"mask", "builtin:json", "--tokenizer", Llama3(), "--prefix", "[1", "--show", "0"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  testing::CliResult one = Zapgram({"mask", "builtin:json", "--tokenizer", Llama3(), "--prefix", "[1", "--show", "0",
                                    "--tokens-left", "1"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("0 of 128256 tokens allowed; EOS not allowed"), std::string::npos) << one.out;
  EXPECT_EQ(plain.out.find("0 of 128256 tokens allowed"), std::string::npos) << plain.out;
  testing::CliResult two = Zapgram({"mask", "builtin:json", "--tokenizer", Llama3(), "--prefix", "[1", "--show",
                                    "50", "--tokens-left", "2"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  // Every token allowed with 2 left closes the list (then EOS).
  EXPECT_NE(two.out.find("\"]\""), std::string::npos) << two.out;
  EXPECT_EQ(Zapgram({"mask", "builtin:json", "--tokenizer", Llama3(), "--tokens-left", "x"}).exit_code, 2);
}

}  // namespace
}  // namespace zapgram
