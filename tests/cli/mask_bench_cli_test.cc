// `zapgram mask`, `zapgram bench` and `zapgram trace` end to end on real
// tokenizers and traces.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "masks/canonical_tokenizer.h"
#include "nlohmann/json.hpp"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"

namespace zapgram {
namespace {

testing::CliResult Zapgram(const std::vector<std::string>& args) {
  return testing::RunCliAt(ZAPGRAM_CLI_PATH, args);
}

std::string Llama3() { return testing::DataPath("tokenizers/llama3.tokenizer.json"); }

TEST(MaskCli, CountsForcedBytesAndTokens) {
  testing::CliResult r =
      Zapgram({"mask", "builtin:json", "--tokenizer", Llama3(), "--prefix", "{\"a\": [1, tr", "--show", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = testing::SplitLines(r.out);
  ASSERT_GE(lines.size(), 3u) << r.out;
  // Only "u" and "ue" continue `tr` towards `true`.
  EXPECT_EQ(lines[0], "2 of 128256 tokens allowed; EOS not allowed");
  EXPECT_EQ(lines[1], "forced next: \"ue\"");
}

TEST(MaskCli, EosAfterACompleteDocumentAndRejectedPrefix) {
  testing::CliResult r = Zapgram({"mask", "builtin:json", "--tokenizer", Llama3(), "--prefix", "[1]"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("EOS allowed"), std::string::npos) << r.out;
  r = Zapgram({"mask", "builtin:json", "--tokenizer", Llama3(), "--prefix", "[1}"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("prefix rejected at byte 2"), std::string::npos) << r.out;
  r = Zapgram({"mask", "builtin:json"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(BenchCli, JsonSummaryAndPerDocumentLines) {
  const std::string per_doc = testing::FreshTempPath("per_doc.jsonl");
  testing::CliResult r = Zapgram({"bench", "--tokenizer", Llama3(), "--trace",
                                  testing::DataPath("traces/llama3/sql.jsonl"), "--limit", "12",
                                  "--json", "--per-doc", per_doc});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  for (const char* key : {"docs", "tokens", "accepted", "valid", "compile_ms", "mask_us", "peak_rss_mb"}) {
    EXPECT_TRUE(summary.contains(key)) << key;
  }
  EXPECT_EQ(summary["docs"], 12);
  for (const char* key : {"mean", "p50", "p90", "p99", "max"}) EXPECT_TRUE(summary["mask_us"].contains(key));
  std::ifstream in(per_doc);
  std::string line;
  int lines = 0, agree = 0;
  while (std::getline(in, line)) {
    const nlohmann::json doc = nlohmann::json::parse(line);
    ++lines;
    agree += doc["accepted"] == doc["valid"];
    // Every mask's time, for the latency plots (perf/mask_report.py --plots).
    ASSERT_TRUE(doc["mask_us_each"].is_array()) << line;
    double sum = 0;
    for (const nlohmann::json& us : doc["mask_us_each"]) sum += us.get<double>();
    EXPECT_NEAR(sum, doc["mask_us_total"].get<double>(), 0.01 * doc["mask_us_each"].size() + 1e-9);
    const size_t masks = doc["mask_us_each"].size();
    if (doc["accepted"] == true) {
      EXPECT_GT(masks, 0u);
    }
    EXPECT_TRUE(doc["grammar"].is_string());
    if (lines == 1) {
      EXPECT_GT(doc["first_mask_ms"].get<double>(), doc["compile_ms"].get<double>());
    }
    if (doc["accepted"] == false) {
      EXPECT_FALSE(doc["rejected_at_token"].is_null());
    }
  }
  EXPECT_EQ(lines, 12);
  EXPECT_EQ(agree, 12);  // sql labels agree (tests/data/lark_data_test.cc)
  EXPECT_EQ(summary["accepted"], summary["valid"]);
}

// Memory as budgets: bytes per compiled grammar are reported, and a
// grammar budget of 0 MB (every grammar dropped after its document, as a
// server's compiler cache would under pressure) changes no verdict; the
// shared caches take their budgets from the command line.
TEST(BenchCli, MemoryBudgetsAndBytesPerGrammar) {
  const std::string trace = testing::DataPath("traces/llama3/maskbench.jsonl");
  const std::vector<std::string> base = {"bench", "--tokenizer", Llama3(), "--trace", trace, "--limit", "6",
                                         "--lenient", "--json"};
  std::vector<nlohmann::json> summaries;
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, {"--grammar-cache-mb", "0", "--mask-cache-mb", "1", "--token-set-cache-mb", "0"}}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    testing::CliResult r = Zapgram(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    summaries.push_back(nlohmann::json::parse(r.out));
  }
  for (const nlohmann::json& summary : summaries) {
    EXPECT_GT(summary["bytes_per_grammar"]["p50"].get<double>(), 1000.0);
    EXPECT_GE(summary["bytes_per_grammar"]["max"].get<double>(), summary["bytes_per_grammar"]["p50"].get<double>());
  }
  EXPECT_EQ(summaries[0]["accepted"], summaries[1]["accepted"]);
  EXPECT_EQ(summaries[0]["tokens"], summaries[1]["tokens"]);
  testing::CliResult bad = Zapgram({"bench", "--tokenizer", Llama3(), "--trace", trace, "--mask-cache-mb", "lots"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--mask-cache-mb needs a number"), std::string::npos) << bad.err;
}

// `trace` writes records that `bench` replays: the tokens are the
// tokenizer's encoding of each file (the BPE encoder's own), valid and
// invalid documents keep their verdicts, grammar paths resolve against the
// data root.
TEST(TraceCli, WritesRecordsThatBenchReplays) {
  const std::string root = testing::FreshTempPath("trace_root");
  std::filesystem::create_directories(root + "/traces/llama3");
  std::filesystem::create_directories(root + "/grammars");
  {
    std::ofstream(root + "/grammars/ab.gbnf") << "root ::= s\ns ::= s s | \"a\" | \"b\"\n";
    std::ofstream(root + "/good.txt") << "abbaaab";
    std::ofstream(root + "/deep.json") << "{\"a\": [[[{\"b\": [1, 2]}]]]}";
    std::ofstream(root + "/bad.json") << "[1, 2}";
  }
  testing::CliResult good = Zapgram({"trace", "--tokenizer", Llama3(), "--grammar", "grammars/ab.gbnf", root + "/good.txt"});
  testing::CliResult json = Zapgram({"trace", "--tokenizer", Llama3(), "--grammar", "builtin:json", root + "/deep.json"});
  testing::CliResult bad =
      Zapgram({"trace", "--tokenizer", Llama3(), "--grammar", "builtin:json", "--invalid", root + "/bad.json"});
  ASSERT_EQ(good.exit_code, 0) << good.err;
  ASSERT_EQ(json.exit_code, 0) << json.err;
  ASSERT_EQ(bad.exit_code, 0) << bad.err;
  const nlohmann::json record = nlohmann::json::parse(json.out);
  EXPECT_EQ(record["id"], "deep.json");
  EXPECT_EQ(record["grammar"], "builtin:json");
  EXPECT_EQ(record["valid"], true);
  absl::StatusOr<std::shared_ptr<const masks::CanonicalTokenizer>> encoder =
      masks::CanonicalTokenizer::LoadFromFile(Llama3());
  ASSERT_TRUE(encoder.ok());
  EXPECT_EQ(record["tokens"].get<std::vector<int32_t>>(),
            *(*encoder)->Encode("{\"a\": [[[{\"b\": [1, 2]}]]]}", masks::kDocumentEncoding));
  EXPECT_EQ(nlohmann::json::parse(bad.out)["valid"], false);
  const std::string trace = root + "/traces/llama3/t.jsonl";
  std::ofstream(trace) << good.out << json.out << bad.out;
  testing::CliResult r = Zapgram({"bench", "--tokenizer", Llama3(), "--trace", trace, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary["docs"], 3);
  EXPECT_EQ(summary["valid"], 2);
  EXPECT_EQ(summary["accepted"], 2);
  EXPECT_EQ(Zapgram({"trace", "--tokenizer", Llama3(), root + "/good.txt"}).exit_code, 2);  // no --grammar
  EXPECT_EQ(Zapgram({"trace", "--tokenizer", Llama3(), "--grammar", "builtin:json", root + "/missing"}).exit_code, 2);
}

}  // namespace
}  // namespace zapgram
