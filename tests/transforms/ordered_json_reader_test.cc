// ReadOrderedJson against nlohmann's own reader (its quadratic key lookup is
// the independent reference): the same value, member order and duplicate-key
// meaning on every MaskBench schema (every 7th), on generated objects small
// and large with repeated keys, and the same refusals of broken text.
#include "transforms/ordered_json_reader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace zapgram::transforms {
namespace {

using Json = nlohmann::ordered_json;

void ExpectSameAsNlohmann(const std::string& text) {
  const Json expected = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  const Json got = ReadOrderedJson(text);
  ASSERT_EQ(got.is_discarded(), expected.is_discarded()) << text.substr(0, 200);
  if (!expected.is_discarded()) {
    EXPECT_EQ(got.dump(), expected.dump()) << text.substr(0, 200);
  }
}

TEST(OrderedJsonReaderTest, AgreesOnMaskBenchSchemas) {
  const std::filesystem::path dir = std::filesystem::path(ZAPGRAM_DATA_DIR) / "jsonschema/maskbench";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  ASSERT_GT(files.size(), 1000u);
  for (size_t i = 0; i < files.size(); i += 7) {
    std::ifstream in(files[i], std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    ExpectSameAsNlohmann(text.str());
  }
}

// Objects of up to 200 members drawn from few names, so keys repeat both
// below and above the size where the reader starts indexing keys; members
// hold nested objects, arrays and scalars.
TEST(OrderedJsonReaderTest, AgreesOnGeneratedObjectsWithRepeatedKeys) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    const int members = static_cast<int>(rng() % 200);
    const int names = 1 + static_cast<int>(rng() % 120);
    std::string text = "{";
    for (int m = 0; m < members; ++m) {
      if (m) text += ",";
      text += "\"k" + std::to_string(rng() % names) + "\":";
      switch (rng() % 5) {
        case 0: text += std::to_string(static_cast<int>(rng() % 1000) - 500); break;
        case 1: text += "{\"a\":1,\"b\":[true,null],\"a\":2}"; break;
        case 2: text += "[1.5,\"x\",{}]"; break;
        case 3: text += "\"s" + std::to_string(m) + "\""; break;
        default: text += "18446744073709551615"; break;
      }
    }
    text += "}";
    ExpectSameAsNlohmann(text);
  }
}

TEST(OrderedJsonReaderTest, KeepsFirstPositionAndLastValueOfARepeatedKey) {
  std::string text = "{\"b\":1,\"a\":2";
  for (int i = 0; i < 100; ++i) text += ",\"m" + std::to_string(i) + "\":" + std::to_string(i);
  text += ",\"b\":{\"x\":[3]},\"a\":4}";
  const Json value = ReadOrderedJson(text);
  ASSERT_TRUE(value.is_object());
  EXPECT_EQ(value.size(), 102u);
  EXPECT_EQ(value.begin().key(), "b");
  EXPECT_EQ(value["b"].dump(), "{\"x\":[3]}");
  EXPECT_EQ(value["a"], 4);
  ExpectSameAsNlohmann(text);
}

TEST(OrderedJsonReaderTest, RefusesWhatNlohmannRefuses) {
  for (const std::string text :
       {"", " ", "{", "{\"a\":}", "[1,2", "{\"a\":1,}", "[1] [2]", "tru", "\"\\x\"", "{1:2}", "01",
        "[1e999999]", "\"\xff\"", "{\"a\":1}garbage", "nul", "[", "]", "3", "\"s\"", "null", "[[]]"}) {
    ExpectSameAsNlohmann(text);
  }
}

}  // namespace
}  // namespace zapgram::transforms
