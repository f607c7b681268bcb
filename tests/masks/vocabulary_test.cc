// Tests of masks/vocabulary.{h,cc}: loading Hugging Face tokenizer.json files.
//
// On the three real tokenizers of ../shared/data/tokenizers (Llama 3, Qwen 2.5:
// byte-level BPE; Gemma 3: SentencePiece style with byte fallback):
//   - size() is 1 + the largest id of the file, found by an independent DOM
//     parse here, and agrees with the counts of ../shared/data/README.md;
//   - kinds follow the file's `special` flags, EOS ids follow the documented
//     rule, every byte value has a single-byte token;
//   - the round trip: for every record of every trace file of the tokenizer
//     (../shared/data/traces/<tokenizer>/*.jsonl, records flagged
//     roundtrip_mismatch skipped), the bytes of its `tokens` concatenate
//     exactly to its `text`. The counts are printed and recorded as test
//     properties.
// On small hand-written tokenizer.json texts: each decoder form (ByteLevel,
// Sequence with Replace/ByteFallback/Fuse/Strip, Metaspace, pre_tokenizer
// fallback, Unigram list vocab), padding, EOS options, and the error for each
// kind of malformed file.
#include "masks/vocabulary.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_paths.h"

namespace zapgram::masks {
namespace {

using Json = nlohmann::json;
using ::zapgram::testing::DataPath;
using ::zapgram::testing::ListFiles;
using ::zapgram::testing::ReadFileOrDie;

struct RealTokenizer {
  const char* name;  // file stem under tokenizers/ and folder under traces/
  // The README's count of ids, and how many ids the file defines beyond it.
  // Gemma 3's README figure (262,144) counts model.vocab; the file also has
  // the added token <image_soft_token> at id 262144.
  int64_t readme_ids;
  int64_t ids_beyond_readme;
  DecoderKind decoder_kind;
  // EOS ids known from the models' documentation; the rule must find them.
  std::vector<TokenId> known_eos_ids;
};

const RealTokenizer kRealTokenizers[] = {
    {"llama3", 128256, 0, DecoderKind::kByteLevel, {128001, 128009}},
    {"qwen2_5", 151665, 0, DecoderKind::kByteLevel, {151643, 151645}},
    {"gemma3", 262144, 1, DecoderKind::kSentencePiece, {1, 106}},
};

std::string TokenizerPath(const RealTokenizer& tokenizer) {
  return DataPath(std::string("tokenizers/") + tokenizer.name + ".tokenizer.json");
}

struct LoadedTokenizer {
  std::unique_ptr<Vocabulary> vocabulary;
  double load_ms = 0;
};

// Loads each tokenizer once per test binary (Gemma 3's file is 33 MB).
const LoadedTokenizer& Loaded(const RealTokenizer& tokenizer) {
  static auto* cache = new std::map<std::string, LoadedTokenizer>();
  auto it = cache->find(tokenizer.name);
  if (it != cache->end()) return it->second;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Vocabulary> vocabulary = Vocabulary::LoadFromFile(TokenizerPath(tokenizer));
  const auto stop = std::chrono::steady_clock::now();
  if (!vocabulary.ok()) {
    std::fprintf(stderr, "loading %s failed: %s\n", tokenizer.name, vocabulary.status().ToString().c_str());
    std::abort();
  }
  LoadedTokenizer& loaded = (*cache)[tokenizer.name];
  loaded.vocabulary = std::make_unique<Vocabulary>(*std::move(vocabulary));
  loaded.load_ms = std::chrono::duration<double, std::milli>(stop - start).count();
  return loaded;
}

// The file parsed as a plain DOM: the test's independent view of the ids.
const Json& FileDom(const RealTokenizer& tokenizer) {
  static auto* cache = new std::map<std::string, Json>();
  auto it = cache->find(tokenizer.name);
  if (it != cache->end()) return it->second;
  return (*cache)[tokenizer.name] = Json::parse(ReadFileOrDie(TokenizerPath(tokenizer)));
}

class VocabularyRealTest : public ::testing::TestWithParam<RealTokenizer> {};

TEST_P(VocabularyRealTest, SizeIsLargestIdOfTheFilePlusOne) {
  const RealTokenizer& tokenizer = GetParam();
  const Vocabulary& vocabulary = *Loaded(tokenizer).vocabulary;
  const Json& file = FileDom(tokenizer);
  int64_t largest = -1;
  for (const auto& [piece, id] : file["model"]["vocab"].items()) largest = std::max<int64_t>(largest, id.get<int64_t>());
  for (const Json& added : file["added_tokens"]) largest = std::max<int64_t>(largest, added["id"].get<int64_t>());
  EXPECT_EQ(vocabulary.size(), largest + 1);
  EXPECT_EQ(vocabulary.padded_size(), vocabulary.size());
  EXPECT_EQ(vocabulary.size(), tokenizer.readme_ids + tokenizer.ids_beyond_readme);
  EXPECT_EQ(vocabulary.decoder_kind(), tokenizer.decoder_kind) << DecoderKindName(vocabulary.decoder_kind());
  std::printf("[ vocab    ] %s: %d ids, %s, loaded in %.1f ms, %.1f MB\n", tokenizer.name, vocabulary.size(),
              std::string(DecoderKindName(vocabulary.decoder_kind())).c_str(), Loaded(tokenizer).load_ms,
              vocabulary.memory_bytes() / 1e6);
  ::testing::Test::RecordProperty("load_ms", static_cast<int>(Loaded(tokenizer).load_ms));
}

TEST_P(VocabularyRealTest, KindsFollowTheSpecialFlags) {
  const RealTokenizer& tokenizer = GetParam();
  const Vocabulary& vocabulary = *Loaded(tokenizer).vocabulary;
  const Json& file = FileDom(tokenizer);
  std::set<int64_t> special;
  std::set<int64_t> defined;
  for (const Json& added : file["added_tokens"]) {
    defined.insert(added["id"].get<int64_t>());
    if (added.value("special", false)) special.insert(added["id"].get<int64_t>());
  }
  for (const auto& [piece, id] : file["model"]["vocab"].items()) defined.insert(id.get<int64_t>());
  for (TokenId id = 0; id < vocabulary.size(); ++id) {
    const TokenKind expected = special.count(id) != 0   ? TokenKind::kSpecial
                               : defined.count(id) != 0 ? TokenKind::kNormal
                                                        : TokenKind::kUnused;
    ASSERT_EQ(vocabulary.kind(id), expected) << "id " << id;
  }
  EXPECT_EQ(vocabulary.count(TokenKind::kSpecial), static_cast<int32_t>(special.size()));
  EXPECT_GT(vocabulary.count(TokenKind::kNormal), 100000);
}

TEST_P(VocabularyRealTest, EosIdsFollowTheRule) {
  const RealTokenizer& tokenizer = GetParam();
  const Vocabulary& vocabulary = *Loaded(tokenizer).vocabulary;
  const std::vector<std::string> markers = DefaultEosTokenContents();
  std::set<TokenId> expected;
  for (const Json& added : FileDom(tokenizer)["added_tokens"]) {
    const std::string content = added["content"].get<std::string>();
    if (added.value("special", false) && std::find(markers.begin(), markers.end(), content) != markers.end()) {
      expected.insert(added["id"].get<TokenId>());
    }
  }
  const std::vector<TokenId> eos(vocabulary.eos_ids().begin(), vocabulary.eos_ids().end());
  EXPECT_EQ(std::set<TokenId>(eos.begin(), eos.end()), expected);
  for (TokenId id : tokenizer.known_eos_ids) {
    EXPECT_TRUE(vocabulary.is_eos(id)) << id;
    EXPECT_EQ(vocabulary.kind(id), TokenKind::kSpecial) << id;
  }
  int32_t flagged = 0;
  for (TokenId id = 0; id < vocabulary.padded_size(); ++id) flagged += vocabulary.is_eos(id) ? 1 : 0;
  EXPECT_EQ(flagged, static_cast<int32_t>(eos.size()));
  std::printf("[ vocab    ] %s EOS:", tokenizer.name);
  for (TokenId id : eos) std::printf(" %d=%s", id, std::string(vocabulary.token_bytes(id)).c_str());
  std::printf("\n");
}

TEST_P(VocabularyRealTest, EveryByteHasASingleByteToken) {
  const Vocabulary& vocabulary = *Loaded(GetParam()).vocabulary;
  std::set<int> single_bytes;
  for (TokenId id = 0; id < vocabulary.size(); ++id) {
    const std::string_view bytes = vocabulary.token_bytes(id);
    if (vocabulary.kind(id) == TokenKind::kNormal && bytes.size() == 1) {
      single_bytes.insert(static_cast<uint8_t>(bytes[0]));
    }
  }
  EXPECT_EQ(single_bytes.size(), 256u);
}

TEST_P(VocabularyRealTest, MarkerCharactersBecomeBytes) {
  const RealTokenizer& tokenizer = GetParam();
  const Vocabulary& vocabulary = *Loaded(tokenizer).vocabulary;
  const Json& vocab = FileDom(tokenizer)["model"]["vocab"];
  if (tokenizer.decoder_kind == DecoderKind::kByteLevel) {
    EXPECT_EQ(vocabulary.token_bytes(vocab["\xC4\xA0"].get<TokenId>()), " ");    // Ġ
    EXPECT_EQ(vocabulary.token_bytes(vocab["\xC4\x8A"].get<TokenId>()), "\n");   // Ċ
    EXPECT_EQ(vocabulary.token_bytes(vocab["\xC4\xA0the"].get<TokenId>()), " the");
  } else {
    EXPECT_EQ(vocabulary.token_bytes(vocab["\xE2\x96\x81"].get<TokenId>()), " ");  // ▁
    EXPECT_EQ(vocabulary.token_bytes(vocab["<0x0A>"].get<TokenId>()), "\n");
    EXPECT_EQ(vocabulary.token_bytes(vocab["<0xFF>"].get<TokenId>()), "\xFF");
    EXPECT_EQ(vocabulary.token_bytes(vocab["\xE2\x96\x81the"].get<TokenId>()), " the");
  }
}

TEST_P(VocabularyRealTest, TraceTokensConcatenateToTheirText) {
  const RealTokenizer& tokenizer = GetParam();
  const Vocabulary& vocabulary = *Loaded(tokenizer).vocabulary;
  const std::vector<std::string> traces =
      ListFiles(DataPath(std::string("traces/") + tokenizer.name), ".jsonl");
  ASSERT_FALSE(traces.empty());
  int64_t records = 0;
  int64_t skipped = 0;
  int64_t tokens = 0;
  int64_t mismatches = 0;
  for (const std::string& path : traces) {
    std::istringstream lines(ReadFileOrDie(path));
    std::string line;
    int64_t line_number = 0;
    while (std::getline(lines, line)) {
      ++line_number;
      if (line.empty()) continue;
      const Json record = Json::parse(line);
      if (record.value("roundtrip_mismatch", false)) {
        ++skipped;
        continue;
      }
      const std::vector<TokenId> ids = record["tokens"].get<std::vector<TokenId>>();
      absl::StatusOr<std::string> decoded = vocabulary.DecodeTokens(ids);
      ASSERT_TRUE(decoded.ok()) << path << ":" << line_number << ": " << decoded.status();
      ++records;
      tokens += static_cast<int64_t>(ids.size());
      for (TokenId id : ids) {
        EXPECT_EQ(vocabulary.kind(id), TokenKind::kNormal) << path << ":" << line_number << " id " << id;
      }
      if (*decoded != record["text"].get<std::string>()) {
        if (++mismatches <= 5) {
          ADD_FAILURE() << path << ":" << line_number << " (" << record["id"].get<std::string>()
                        << "): token bytes do not concatenate to the text";
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(records, 0);
  std::printf("[ roundtrip] %s: %zu files, %lld records (%lld skipped: roundtrip_mismatch), %lld tokens, %lld mismatches\n",
              tokenizer.name, traces.size(), static_cast<long long>(records), static_cast<long long>(skipped),
              static_cast<long long>(tokens), static_cast<long long>(mismatches));
  ::testing::Test::RecordProperty("records", static_cast<int>(records));
  ::testing::Test::RecordProperty("skipped", static_cast<int>(skipped));
  ::testing::Test::RecordProperty("tokens", static_cast<int>(tokens));
}

// Load time is measured in perf/mask_bench.cc (BM_LoadVocabulary), not here.
TEST_P(VocabularyRealTest, LoadsDeterministically) {
  const RealTokenizer& tokenizer = GetParam();
  absl::StatusOr<Vocabulary> a = Vocabulary::LoadFromFile(TokenizerPath(tokenizer));
  absl::StatusOr<Vocabulary> b = Vocabulary::LoadFromFile(TokenizerPath(tokenizer));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->padded_size(), b->padded_size());
  for (TokenId id = 0; id < a->padded_size(); ++id) {
    ASSERT_EQ(a->token_bytes(id), b->token_bytes(id)) << id;
    ASSERT_EQ(a->kind(id), b->kind(id)) << id;
  }
  EXPECT_TRUE(std::equal(a->eos_ids().begin(), a->eos_ids().end(), b->eos_ids().begin(), b->eos_ids().end()));
}

INSTANTIATE_TEST_SUITE_P(VocabularyOnRealTokenizers, VocabularyRealTest, ::testing::ValuesIn(kRealTokenizers),
                         [](const ::testing::TestParamInfo<RealTokenizer>& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------
// Small hand-written files.

absl::StatusOr<Vocabulary> Load(std::string_view json, const VocabularyOptions& options = {}) {
  return Vocabulary::LoadFromJson(json, "small.json", options);
}

std::vector<std::string> AllBytes(const Vocabulary& vocabulary) {
  std::vector<std::string> out;
  for (TokenId id = 0; id < vocabulary.padded_size(); ++id) out.emplace_back(vocabulary.token_bytes(id));
  return out;
}

TEST(VocabularySmallTest, ByteLevelMapsCharactersToBytes) {
  // Ã© is é's two bytes C3 A9 under the GPT-2 map; "<x y>" has a space, which
  // the map does not cover, so (as in HF) it keeps its own bytes.
  absl::StatusOr<Vocabulary> vocabulary = Load(R"({
    "model": {"type": "BPE", "vocab": {"Ġa": 0, "b": 1, "Ċ": 2, "Ã©": 3, "ĠĠ": 4, "Ā": 5, "ÿ": 6}, "merges": [["Ġ", "a"]]},
    "decoder": {"type": "ByteLevel", "add_prefix_space": true},
    "added_tokens": [{"id": 7, "content": "<|end|>", "special": true},
                     {"id": 8, "content": "<x y>", "special": false}]})");
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status();
  EXPECT_EQ(vocabulary->decoder_kind(), DecoderKind::kByteLevel);
  EXPECT_EQ(AllBytes(*vocabulary), (std::vector<std::string>{" a", "b", "\n", "\xC3\xA9", "  ", std::string(1, '\0'),
                                                              "\xFF", "<|end|>", "<x y>"}));
  EXPECT_EQ(vocabulary->kind(7), TokenKind::kSpecial);
  EXPECT_EQ(vocabulary->kind(8), TokenKind::kNormal);
  EXPECT_EQ(std::vector<TokenId>(vocabulary->eos_ids().begin(), vocabulary->eos_ids().end()), std::vector<TokenId>{7});
}

// Found by fuzz/vocabulary_fuzzer.cc (fuzz/seeds/vocabulary_fuzzer/
// empty_token): a vocab entry with an empty string was a normal token of no
// bytes, allowed by every mask and accepted without progress.
TEST(VocabularySmallTest, EmptyTokenIsUnused) {
  absl::StatusOr<Vocabulary> vocabulary = Load(R"({
    "model": {"type": "BPE", "vocab": {"a": 0, "": 3}, "merges": ["a b"]},
    "added_tokens": [{"id": 4, "content": "</s>", "special": true}],
    "decoder": {"type": "ByteLevel"}})");
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status();
  EXPECT_EQ(vocabulary->kind(0), TokenKind::kNormal);
  EXPECT_EQ(vocabulary->kind(3), TokenKind::kUnused);
  EXPECT_EQ(vocabulary->count(TokenKind::kNormal), 1);
}

TEST(VocabularySmallTest, SentencePieceReplaceAndByteFallback) {
  absl::StatusOr<Vocabulary> vocabulary = Load(R"({
    "model": {"type": "BPE", "byte_fallback": true,
              "vocab": {"<0x41>": 0, "▁hi": 1, "<0xe9>": 2, "<0x4G>": 3, "<0x410>": 4, "a▁▁b": 5}},
    "decoder": {"type": "Sequence", "decoders": [
      {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
      {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "added_tokens": [{"id": 6, "content": "<eos>", "special": true}]})");
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status();
  EXPECT_EQ(vocabulary->decoder_kind(), DecoderKind::kSentencePiece);
  EXPECT_EQ(AllBytes(*vocabulary),
            (std::vector<std::string>{"A", " hi", "\xE9", "<0x4G>", "<0x410>", "a  b", "<eos>"}));
  EXPECT_TRUE(vocabulary->is_eos(6));
}

TEST(VocabularySmallTest, MetaspaceDecoderWithUnigramListVocab) {
  absl::StatusOr<Vocabulary> vocabulary = Load(R"({
    "model": {"type": "Unigram", "vocab": [["<unk>", 0.0], ["▁a", -1.5], ["b", -2]]},
    "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"}})");
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status();
  EXPECT_EQ(vocabulary->decoder_kind(), DecoderKind::kSentencePiece);
  EXPECT_EQ(AllBytes(*vocabulary), (std::vector<std::string>{"<unk>", " a", "b"}));
  EXPECT_TRUE(vocabulary->eos_ids().empty());
}

TEST(VocabularySmallTest, WithoutDecoderThePreTokenizerDecides) {
  absl::StatusOr<Vocabulary> vocabulary = Load(R"({
    "model": {"vocab": {"Ġx": 0}, "merges": []}, "decoder": null,
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Digits"}, {"type": "ByteLevel"}]}})");
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status();
  EXPECT_EQ(vocabulary->decoder_kind(), DecoderKind::kByteLevel);
  EXPECT_EQ(vocabulary->token_bytes(0), " x");
}

TEST(VocabularySmallTest, PlainTextDecoder) {
  absl::StatusOr<Vocabulary> vocabulary =
      Load(R"({"model": {"type": "WordLevel", "vocab": {"héllo": 0}}, "decoder": {"type": "Fuse"}})");
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status();
  EXPECT_EQ(vocabulary->decoder_kind(), DecoderKind::kText);
  EXPECT_EQ(vocabulary->token_bytes(0), "h\xC3\xA9llo");
}

constexpr std::string_view kTinyByteLevel = R"({
  "model": {"type": "BPE", "vocab": {"a": 0, "c": 2}},
  "decoder": {"type": "ByteLevel"},
  "added_tokens": [{"id": 2, "content": "<|im_end|>", "special": true},
                   {"id": 3, "content": "</s>", "special": false}]})";

TEST(VocabularySmallTest, GapsAndPaddingAreUnused) {
  VocabularyOptions options;
  options.padded_size = 8;
  absl::StatusOr<Vocabulary> vocabulary = Load(kTinyByteLevel, options);
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status();
  EXPECT_EQ(vocabulary->size(), 4);
  EXPECT_EQ(vocabulary->padded_size(), 8);
  const std::vector<TokenKind> expected = {TokenKind::kNormal,  TokenKind::kUnused, TokenKind::kSpecial,
                                           TokenKind::kNormal,  TokenKind::kUnused, TokenKind::kUnused,
                                           TokenKind::kUnused,  TokenKind::kUnused};
  for (TokenId id = 0; id < 8; ++id) EXPECT_EQ(vocabulary->kind(id), expected[id]) << id;
  EXPECT_EQ(vocabulary->count(TokenKind::kUnused), 5);
  // The added token overrides the vocab entry with its id.
  EXPECT_EQ(vocabulary->token_bytes(2), "<|im_end|>");
  EXPECT_EQ(vocabulary->token_bytes(6), "");
  // A non-special "</s>" is not EOS; the special "<|im_end|>" is.
  EXPECT_EQ(std::vector<TokenId>(vocabulary->eos_ids().begin(), vocabulary->eos_ids().end()), std::vector<TokenId>{2});
  EXPECT_EQ(*vocabulary->DecodeTokens(std::vector<TokenId>{0, 3, 0}), "a</s>a");
  EXPECT_EQ(vocabulary->DecodeTokens(std::vector<TokenId>{0, 8}).status().code(), absl::StatusCode::kOutOfRange);

  options.padded_size = 3;
  absl::StatusOr<Vocabulary> too_small = Load(kTinyByteLevel, options);
  EXPECT_EQ(too_small.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(too_small.status().message().find("padded_size 3 is smaller than the tokenizer's 4 ids"),
            std::string_view::npos)
      << too_small.status();
}

TEST(VocabularySmallTest, EosOptionsOverrideTheRule) {
  VocabularyOptions options;
  options.eos_ids = std::vector<TokenId>{3, 0, 3};
  absl::StatusOr<Vocabulary> vocabulary = Load(kTinyByteLevel, options);
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status();
  EXPECT_EQ(std::vector<TokenId>(vocabulary->eos_ids().begin(), vocabulary->eos_ids().end()),
            (std::vector<TokenId>{0, 3}));
  EXPECT_FALSE(vocabulary->is_eos(2));

  options.eos_ids = std::vector<TokenId>{4};
  EXPECT_NE(Load(kTinyByteLevel, options).status().message().find("EOS id 4 from the options is outside [0, 4)"),
            std::string_view::npos);

  VocabularyOptions by_content;
  by_content.eos_token_contents = {"<|none|>"};
  absl::StatusOr<Vocabulary> none = Load(kTinyByteLevel, by_content);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->eos_ids().empty());
}

struct MalformedCase {
  const char* what;
  std::string json;
  absl::StatusCode code;
  const char* message;  // expected substring after "small.json: "
};

TEST(VocabularyErrorsTest, MalformedFilesNameTheProblem) {
  const std::string decoder = R"("decoder": {"type": "ByteLevel"})";
  const std::vector<MalformedCase> cases = {
      {"truncated", R"({"model": {"vocab": {"a": 0})", absl::StatusCode::kInvalidArgument, "not valid JSON"},
      {"not an object", "[1, 2]", absl::StatusCode::kInvalidArgument, "the top level is not an object"},
      {"no model", "{" + decoder + "}", absl::StatusCode::kInvalidArgument, "missing the 'model' object"},
      {"no vocab", R"({"model": {"type": "BPE", "merges": []}, )" + decoder + "}", absl::StatusCode::kInvalidArgument,
       "missing model.vocab"},
      {"duplicate vocab id", R"({"model": {"vocab": {"a": 0, "b": 1, "c": 0}}, )" + decoder + "}",
       absl::StatusCode::kInvalidArgument, "duplicate id 0 in model.vocab ('a' and 'c')"},
      {"duplicate added id",
       R"({"model": {"vocab": {"a": 0}}, "added_tokens": [{"id": 3, "content": "x"}, {"id": 3, "content": "y"}], )" +
           decoder + "}",
       absl::StatusCode::kInvalidArgument, "duplicate id 3 in added_tokens ('y')"},
      {"negative id", R"({"model": {"vocab": {"a": -1}}, )" + decoder + "}", absl::StatusCode::kInvalidArgument,
       "gives 'a' an id that is not a non-negative integer"},
      {"fractional id", R"({"model": {"vocab": {"a": 1.5}}, )" + decoder + "}", absl::StatusCode::kInvalidArgument,
       "gives 'a' an id that is not a non-negative integer"},
      {"string id", R"({"model": {"vocab": {"a": "1"}}, )" + decoder + "}", absl::StatusCode::kInvalidArgument,
       "entry 'a' has a string where an id was expected"},
      {"null id", R"({"model": {"vocab": {"a": null}}, )" + decoder + "}", absl::StatusCode::kInvalidArgument,
       "gives 'a' a value that is not an id"},
      {"id past max_vocab_size", R"({"model": {"vocab": {"a": 99999999999}}, )" + decoder + "}",
       absl::StatusCode::kInvalidArgument, "model.vocab id 99999999999 of 'a' is out of range"},
      {"added id out of range", R"({"model": {"vocab": {"a": 0}}, "added_tokens": [{"id": -2, "content": "x"}], )" +
           decoder + "}",
       absl::StatusCode::kInvalidArgument, "added_tokens[0] id -2 is out of range"},
      {"added without content", R"({"model": {"vocab": {"a": 0}}, "added_tokens": [{"id": 1}], )" + decoder + "}",
       absl::StatusCode::kInvalidArgument, "added_tokens[0] needs an integer 'id' and a string 'content'"},
      {"no tokens", R"({"model": {"vocab": {}}, )" + decoder + "}", absl::StatusCode::kInvalidArgument,
       "the tokenizer defines no tokens"},
      {"WordPiece model", R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}, )" + decoder + "}",
       absl::StatusCode::kUnimplemented, "model.type WordPiece is not supported"},
      {"Unigram with an object vocab", R"({"model": {"type": "Unigram", "vocab": {"a": 0}}, )" + decoder + "}",
       absl::StatusCode::kInvalidArgument, "model.vocab of a Unigram model must be a list of [token, score]"},
      {"Unigram entry without token", R"({"model": {"type": "Unigram", "vocab": [[0.5]]}, )" + decoder + "}",
       absl::StatusCode::kInvalidArgument, "model.vocab entry does not start with its token string"},
      {"WordPiece decoder", R"({"model": {"vocab": {"a": 0}}, "decoder": {"type": "WordPiece", "prefix": "##"}})",
       absl::StatusCode::kUnimplemented, "decoder type 'WordPiece' is not supported"},
      {"regex Replace", R"({"model": {"vocab": {"a": 0}}, "decoder": {"type": "Replace", "pattern": {"Regex": "a+"}, "content": ""}})",
       absl::StatusCode::kUnimplemented, "decoder Replace with a Regex pattern is not supported"},
      {"Strip before Fuse",
       R"({"model": {"vocab": {"a": 0}}, "decoder": {"type": "Sequence", "decoders": [{"type": "Strip", "content": " ", "start": 1, "stop": 0}]}})",
       absl::StatusCode::kUnimplemented, "decoder Strip before Fuse"},
      {"Sequence without list", R"({"model": {"vocab": {"a": 0}}, "decoder": {"type": "Sequence"}})",
       absl::StatusCode::kInvalidArgument, "decoder of type Sequence has no 'decoders' array"},
      {"no decoder", R"({"model": {"vocab": {"a": 0}}, "pre_tokenizer": {"type": "Whitespace"}})",
       absl::StatusCode::kInvalidArgument, "cannot tell how token strings map to bytes"},
      {"too deep", R"({"model": {"vocab": {"a": 0}}, )" + decoder + R"(, "x": )" + std::string(300, '[') +
           std::string(300, ']') + "}",
       absl::StatusCode::kResourceExhausted, "JSON nesting deeper than max_json_depth (256)"},
      {"very deep", std::string(200000, '['), absl::StatusCode::kInvalidArgument, "the top level is not an object"},
      {"very deep inside", R"({"x": )" + std::string(200000, '['), absl::StatusCode::kResourceExhausted,
       "JSON nesting deeper than max_json_depth"},
  };
  for (const MalformedCase& test : cases) {
    absl::StatusOr<Vocabulary> vocabulary = Load(test.json);
    ASSERT_FALSE(vocabulary.ok()) << test.what;
    EXPECT_EQ(vocabulary.status().code(), test.code) << test.what << ": " << vocabulary.status();
    const std::string expected = std::string("small.json: ");
    EXPECT_EQ(vocabulary.status().message().substr(0, expected.size()), expected) << test.what;
    EXPECT_NE(vocabulary.status().message().find(test.message), std::string_view::npos)
        << test.what << ": " << vocabulary.status();
  }
}

TEST(VocabularyErrorsTest, FileProblemsNameThePath) {
  const std::string missing = DataPath("tokenizers/no-such.tokenizer.json");
  absl::StatusOr<Vocabulary> absent = Vocabulary::LoadFromFile(missing);
  EXPECT_EQ(absent.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(absent.status().message().find(missing), std::string_view::npos) << absent.status();

  VocabularyOptions options;
  options.max_file_bytes = 1000;
  const std::string path = DataPath("tokenizers/llama3.tokenizer.json");
  absl::StatusOr<Vocabulary> large = Vocabulary::LoadFromFile(path, options);
  EXPECT_EQ(large.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(large.status().message().find(path + ": "), std::string_view::npos) << large.status();
  EXPECT_NE(large.status().message().find("exceed max_file_bytes (1000)"), std::string_view::npos) << large.status();

  options = {};
  options.max_vocab_size = 1000;
  absl::StatusOr<Vocabulary> many = Vocabulary::LoadFromFile(path, options);
  EXPECT_EQ(many.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(many.status().message().find("is out of range (max_vocab_size 1000)"), std::string_view::npos)
      << many.status();
}

TEST(VocabularyFromTokenBytes, IdsBytesAndEos) {
  absl::StatusOr<Vocabulary> v = Vocabulary::FromTokenBytes({"a", "bc", "", "</s>"}, {3});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->size(), 4);
  EXPECT_EQ(v->padded_size(), 4);
  EXPECT_EQ(v->token_bytes(1), "bc");
  EXPECT_EQ(v->kind(0), TokenKind::kNormal);
  EXPECT_EQ(v->kind(3), TokenKind::kSpecial);
  EXPECT_TRUE(v->is_eos(3));
  EXPECT_FALSE(v->is_eos(0));
  ASSERT_EQ(v->eos_ids().size(), 1u);
  absl::StatusOr<std::string> text = v->DecodeTokens({0, 1, 0});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "abca");
  absl::StatusOr<Vocabulary> bad = Vocabulary::FromTokenBytes({"a"}, {5});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("EOS id 5"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace zapgram::masks
