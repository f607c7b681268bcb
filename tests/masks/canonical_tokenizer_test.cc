// The canonical tokenizer (masks/canonical_tokenizer.h, masks/pretokenize.h)
// and the fast-forward tokens built on it:
//   - the pre-tokenizer's pieces and their stability on hand cases;
//   - the encoder against the traces' Hugging Face ids (Llama 3, Qwen 2.5,
//     Gemma 3; every record of the JSON sets and, for the byte-level
//     tokenizers, of the code sets), as Hugging Face's encode and as
//     documents (kDocumentEncoding through a PieceCache, as `zapgram ngram
//     train` and `zapgram trace` encode);
//   - hand-made BPE vocabularies: the merge order and ignore_merges;
//   - documents: special tokens as text, non-special added tokens as ids,
//     invalid UTF-8 spelled back byte for byte; the PieceCache changes no id;
//   - at every character of MaskBench and json-docs documents where the
//     grammar forces bytes, the fast-forward tokens spell a prefix of the
//     forced bytes, are accepted, and are a prefix of the tokenizer's own
//     encoding of the document from there on; the encoding of all the
//     forced bytes is not (it must fail somewhere, or the check proves
//     nothing);
//   - the API's errors.
#include "masks/canonical_tokenizer.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "grammar/utf8.h"
#include "gtest/gtest.h"
#include "masks/pretokenize.h"
#include "masks/vocabulary.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_paths.h"
#include "tests/support/test_scale.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram::masks {
namespace {

// ---------------------------------------------------------------------------
// Pre-tokenizer.

std::vector<std::string> Pieces(const PreTokenized& split, std::string_view text) {
  std::vector<std::string> out;
  size_t begin = 0;
  for (size_t end : split.ends) {
    out.emplace_back(text.substr(begin, end - begin));
    begin = end;
  }
  return out;
}

struct SplitCase {
  std::string text;
  int max_digits;
  std::vector<std::string> pieces;
  size_t stable;
};

TEST(PreTokenize, AlternativesAndStability) {
  const std::vector<SplitCase> cases = {
      // A2 words with a leading space or mark, A1, A5 up to the last newline, A2 reading the end.
      {"Hello world's  \n x", 3, {"Hello", " world", "'s", "  \n", " x"}, 4},
      // A3 in threes (the second group reads the end) or ones (nothing past a digit is read).
      {"12345", 3, {"123", "45"}, 1},
      {"12345", 1, {"1", "2", "3", "4", "5"}, 5},
      // A6 leaves one space for the word; a run reaching the end is unstable.
      {"a  b", 3, {"a", " ", " b"}, 2},
      {"x  ", 3, {"x", "  "}, 1},
      // JSON: punctuation runs stop at spaces and letters; ` "` reads the end.
      {"{\"a\": \"", 3, {"{\"", "a", "\":", " \""}, 3},
      // (?i) contractions; "'r" must read past the end to decide.
      {"'Re", 3, {"'Re"}, 1},
      {"'r", 3, {"'r"}, 0},
      // A4's trailing newlines; tabs as A2's leading mark.
      {"});\n\tif", 3, {"});\n", "\tif"}, 1},
      // U+0085 is not a space for the traces' tokenizer: one punctuation run.
      {"\"\xC2\x85@example", 3, {"\"\xC2\x85@", "example"}, 1},
  };
  for (const SplitCase& c : cases) {
    const PreTokenized split = PreTokenize(SplitRegex{c.max_digits}, c.text);
    EXPECT_EQ(Pieces(split, c.text), c.pieces) << c.text;
    EXPECT_EQ(split.stable, c.stable) << c.text;
  }
}

// Cut by hand (Llama 3's expression).
TEST(PreTokenize, CutsLikeTheLlama3Regex) {
  const auto pieces = [](std::string_view text) { return Pieces(PreTokenize(SplitRegex{3}, text), text); };
  // The first of two spaces before a digit is `\s+(?!\S)`, the second `\s+`;
  // digits go in threes; ` ?[^\s\p{L}\p{N}]+[\r\n]*` takes the space before
  // punctuation and the newlines after it.
  EXPECT_EQ(pieces("Hello world's  123456 ,.\n\n x"),
            std::vector<std::string>({"Hello", " world", "'s", " ", " ", "123", "456", " ,.\n\n", " x"}));
  // `\s*[\r\n]+` stops after the last newline; the spaces then split as above.
  EXPECT_EQ(pieces("a\n\n  b"), std::vector<std::string>({"a", "\n\n", " ", " b"}));
  // Contractions are case-insensitive; a trailing space run is one piece.
  EXPECT_EQ(pieces("WE'RE  "), std::vector<std::string>({"WE", "'RE", "  "}));
  // A non-letter, non-newline character joins the letters after it; U+00E9 is a letter.
  EXPECT_EQ(pieces("$caf\xC3\xA9!"), std::vector<std::string>({"$caf\xC3\xA9", "!"}));
}

TEST(PreTokenize, RecognizesOnlyKnownExpressions) {
  const std::string llama =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  ASSERT_TRUE(RecognizeSplitRegex(llama).ok());
  EXPECT_EQ(RecognizeSplitRegex(llama)->max_digits, 3);
  const std::string gpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
  EXPECT_EQ(RecognizeSplitRegex(gpt2).status().code(), absl::StatusCode::kUnimplemented);
}

// ---------------------------------------------------------------------------
// The reference tokenizers, loaded once.

struct Loaded {
  std::unique_ptr<Vocabulary> vocabulary;
  std::shared_ptr<const CanonicalTokenizer> tokenizer;
};

const Loaded& Tokenizer(const std::string& name) {
  static auto* loaded = new std::map<std::string, Loaded>();
  auto it = loaded->find(name);
  if (it != loaded->end()) return it->second;
  Loaded entry;
  absl::StatusOr<Vocabulary> v = Vocabulary::LoadFromFile(testing::DataPath("tokenizers/" + name + ".tokenizer.json"));
  EXPECT_TRUE(v.ok()) << v.status();
  entry.vocabulary = std::make_unique<Vocabulary>(*std::move(v));
  absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> t = entry.vocabulary->SharedCanonicalTokenizer();
  EXPECT_TRUE(t.ok()) << t.status();
  entry.tokenizer = *t;
  return loaded->emplace(name, std::move(entry)).first->second;
}

struct Record {
  std::string id, grammar, text;
  std::vector<int32_t> tokens;
  bool valid;
};

// Every `stride`-th record of traces/<tokenizer>/<set>.jsonl, without those
// whose tokens encode a normalized text (roundtrip_mismatch).
std::vector<Record> ReadRecords(const std::string& tokenizer, const std::string& set, size_t stride) {
  std::ifstream in(testing::DataPath("traces/" + tokenizer + "/" + set + ".jsonl"));
  EXPECT_TRUE(in.good()) << tokenizer << "/" << set;
  std::vector<Record> out;
  std::string line;
  for (size_t n = 0; std::getline(in, line); ++n) {
    if (n % stride != 0) continue;
    const nlohmann::json r = nlohmann::json::parse(line);
    if (r.value("roundtrip_mismatch", false)) continue;
    out.push_back({r["id"].get<std::string>(), r["grammar"].get<std::string>(), r["text"].get<std::string>(),
                   r["tokens"].get<std::vector<int32_t>>(), r.value("valid", true)});
  }
  return out;
}

// The bytes `ids` spell.
std::string Spell(const CanonicalTokenizer& t, const std::vector<TokenId>& ids) {
  std::string out;
  for (TokenId id : ids) out.append(t.token_bytes(id));
  return out;
}

// ---------------------------------------------------------------------------
// The encoder against Hugging Face's ids.

void ExpectTracesEncoded(const std::string& tokenizer, const std::vector<std::string>& sets, size_t stride) {
  const CanonicalTokenizer& t = *Tokenizer(tokenizer).tokenizer;
  for (const std::string& set : sets) {
    size_t agree = 0, total = 0;
    for (const Record& r : ReadRecords(tokenizer, set, stride)) {
      ++total;
      absl::StatusOr<std::vector<TokenId>> ids = t.Encode(r.text);
      ASSERT_TRUE(ids.ok()) << r.id << ": " << ids.status();
      if (*ids == r.tokens) {
        ++agree;
      } else {
        ADD_FAILURE() << tokenizer << " " << r.id << ": encoding differs from the trace's ids";
      }
    }
    EXPECT_GT(total, 0u) << set;
    std::printf("[ encoder ] %s %s: %zu / %zu records equal to Hugging Face's ids\n", tokenizer.c_str(),
                set.c_str(), agree, total);
  }
}

const std::vector<std::string> kJsonSets = {"maskbench", "json-docs", "jsonschema-suite"};

TEST(CanonicalTokenizer, Llama3EncodesLikeHuggingFace) {
  std::vector<std::string> sets = kJsonSets;
  for (const char* code : {"java", "go", "python", "c", "sql", "xgrammar-ebnf"}) sets.push_back(code);
  ExpectTracesEncoded("llama3", sets, testing::Scaled(1, 16));
}

TEST(CanonicalTokenizer, Qwen25EncodesLikeHuggingFace) {
  std::vector<std::string> sets = kJsonSets;
  for (const char* code : {"java", "go", "python", "c", "sql", "xgrammar-ebnf"}) sets.push_back(code);
  ExpectTracesEncoded("qwen2_5", sets, testing::Scaled(1, 16));
}

TEST(CanonicalTokenizer, Gemma3EncodesLikeHuggingFace) {
  ExpectTracesEncoded("gemma3", kJsonSets, testing::Scaled(1, 16));
}

// The ids mean the same bytes to the encoder as to the Vocabulary the
// matcher uses.
TEST(CanonicalTokenizer, IdsSpellWhatTheVocabularySpells) {
  for (const std::string name : {"llama3", "qwen2_5", "gemma3"}) {
    const Loaded& l = Tokenizer(name);
    size_t checked = 0;
    for (TokenId id = 0; id < l.vocabulary->size(); ++id) {
      if (l.vocabulary->kind(id) != TokenKind::kNormal) continue;
      ASSERT_EQ(l.tokenizer->token_bytes(id), l.vocabulary->token_bytes(id)) << name << " id " << id;
      ++checked;
    }
    EXPECT_GT(checked, 100000u) << name;
  }
}

TEST(CanonicalTokenizer, UnsupportedPipelinesAreRefused) {
  const std::string word_piece =
      R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}, "normalizer": null, "pre_tokenizer": null})";
  EXPECT_EQ(CanonicalTokenizer::LoadFromJson(word_piece, "wp").status().code(), absl::StatusCode::kUnimplemented);
  const std::string gpt2 = R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": null,
      "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}})";
  EXPECT_EQ(CanonicalTokenizer::LoadFromJson(gpt2, "gpt2").status().code(), absl::StatusCode::kUnimplemented);
  absl::StatusOr<Vocabulary> toy = Vocabulary::FromTokenBytes({"a", "b"}, {});
  ASSERT_TRUE(toy.ok());
  EXPECT_EQ(toy->SharedCanonicalTokenizer().status().code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<zapgram::Vocabulary> public_toy = zapgram::Vocabulary::FromTokens({"a", "b", ""}, {2});
  ASSERT_TRUE(public_toy.ok());
  absl::StatusOr<Grammar> grammar = Grammar::Load("regex:ab", "");
  ASSERT_TRUE(grammar.ok());
  absl::StatusOr<zapgram::CompiledGrammar> compiled = zapgram::CompiledGrammar::Compile(*grammar, *public_toy);
  ASSERT_TRUE(compiled.ok());
  zapgram::Matcher matcher(*compiled);
  EXPECT_EQ(matcher.ComputeFastForwardTokens().status().code(), absl::StatusCode::kFailedPrecondition);
}

// ---------------------------------------------------------------------------
// Hand-made byte-level tokenizers: the merge order and ignore_merges.

// A byte-level tokenizer.json with the Llama 3 pre-tokenizer over a tiny
// vocabulary: the 256 bytes plus `extra` tokens (spelled with GPT-2's byte
// map; only ASCII letters here, which stand for themselves).
std::string ByteLevelTokenizer(const std::vector<std::string>& extra, const std::vector<std::string>& merges,
                               bool ignore_merges) {
  nlohmann::json vocab = nlohmann::json::object();
  int id = 0;
  int next = 0;
  for (int b = 0; b < 256; ++b) {
    // GPT-2's table: printable bytes are themselves, the rest U+0100 + k.
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    const char32_t c = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
    std::string utf8;
    if (c < 0x80) {
      utf8.push_back(static_cast<char>(c));
    } else {
      utf8.push_back(static_cast<char>(0xC0 | (c >> 6)));
      utf8.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
    vocab[utf8] = id++;
  }
  for (const std::string& token : extra) vocab[token] = id++;
  nlohmann::json root = {
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         nlohmann::json::array(
             {{{"type", "Split"},
               {"pattern",
                {{"Regex",
                  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                  "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", ignore_merges}}},
      {"added_tokens", nlohmann::json::array()}};
  return root.dump();
}

TEST(CanonicalTokenizer, MergesApplyByRankNotByPosition) {
  // Ranks: "b c" first, then "a b", then "a bc". On "abc", rank order merges
  // b+c before a+b could, so the result is a+bc = abc. Ids: 256 ab, 257 bc, 258 abc.
  absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> t = CanonicalTokenizer::LoadFromJson(
      ByteLevelTokenizer({"ab", "bc", "abc"}, {"b c", "a b", "a bc"}, false), "test");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*(*t)->Encode("abc"), std::vector<TokenId>({258}));
  // "abab": two a+b merges (leftmost first, same rank) and no ab+ab merge.
  EXPECT_EQ(*(*t)->Encode("abab"), std::vector<TokenId>({256, 256}));
  // "cab": no merge for c+a; then a+b.
  EXPECT_EQ(*(*t)->Encode("cab"), std::vector<TokenId>({'c', 256}));

  // With "a b" ranked first, "abc" becomes ab + c: there is no "ab c" merge.
  t = CanonicalTokenizer::LoadFromJson(ByteLevelTokenizer({"ab", "bc", "abc"}, {"a b", "b c", "a bc"}, false), "test");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*(*t)->Encode("abc"), std::vector<TokenId>({256, 'c'}));
  // ignore_merges: a piece that is a vocabulary entry is emitted whole.
  t = CanonicalTokenizer::LoadFromJson(ByteLevelTokenizer({"ab", "bc", "abc"}, {"a b", "b c", "a bc"}, true), "test");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*(*t)->Encode("abc"), std::vector<TokenId>({258}));
}

TEST(CanonicalTokenizer, RejectsWhatItCannotEncode) {
  EXPECT_FALSE(CanonicalTokenizer::LoadFromJson("{", "t").ok());
  EXPECT_FALSE(CanonicalTokenizer::LoadFromJson(R"({"model": {"type": "WordPiece"}})", "t").ok());
  std::string tokenizer = ByteLevelTokenizer({"ab"}, {"a x"}, false);  // merge names a missing token
  absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> t = CanonicalTokenizer::LoadFromJson(tokenizer, "t");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("merges[0]"), std::string_view::npos) << t.status();
  EXPECT_FALSE(CanonicalTokenizer::LoadFromFile("/nonexistent/tokenizer.json").ok());
}

// ---------------------------------------------------------------------------
// Documents: kDocumentEncoding and the PieceCache (`zapgram ngram train`,
// `zapgram trace`).

// Every record of traces/<tokenizer>/<set>.jsonl encoded as a document
// through one cache: how many agree with the trace's ids, of how many.
std::pair<size_t, size_t> DocumentMatches(const CanonicalTokenizer& t, const std::string& tokenizer,
                                          const std::string& set, PieceCache* cache) {
  size_t exact = 0, total = 0;
  for (const Record& r : ReadRecords(tokenizer, set, 1)) {
    ++total;
    absl::StatusOr<std::vector<TokenId>> ids = t.Encode(r.text, kDocumentEncoding, cache);
    if (ids.ok() && *ids == r.tokens) {
      ++exact;
    } else {
      ADD_FAILURE() << tokenizer << "/" << set << " " << r.id << ": encoding differs";
    }
  }
  return {exact, total};
}

TEST(DocumentEncoding, ReproducesTheLlama3TraceTokens) {
  const CanonicalTokenizer& t = *Tokenizer("llama3").tokenizer;
  PieceCache cache;
  for (const char* set : {"json-docs", "go", "sql", "python", "jsonschema-suite", "xgrammar-ebnf"}) {
    const auto [exact, total] = DocumentMatches(t, "llama3", set, &cache);
    EXPECT_GT(total, 40u) << set;
    EXPECT_EQ(exact, total) << set;
  }
  EXPECT_GT(cache.size(), 1000u);
}

TEST(DocumentEncoding, ReproducesTheQwenAndGemmaTraceTokens) {
  for (const char* tokenizer : {"qwen2_5", "gemma3"}) {
    PieceCache cache;
    const auto [exact, total] = DocumentMatches(*Tokenizer(tokenizer).tokenizer, tokenizer, "json-docs", &cache);
    EXPECT_GT(total, 200u) << tokenizer;
    EXPECT_EQ(exact, total) << tokenizer;
  }
}

// A special token written in a document is text; a non-special added token
// is its id either way.
TEST(DocumentEncoding, SpecialTokensAreTextNonSpecialAddedTokensIds) {
  const CanonicalTokenizer& llama = *Tokenizer("llama3").tokenizer;
  const std::vector<TokenId> eot = *llama.Encode("<|eot_id|>");
  ASSERT_EQ(eot.size(), 1u);
  std::vector<TokenId> want = *llama.Encode("say ");
  want.push_back(eot[0]);
  const std::vector<TokenId> now = *llama.Encode(" now");
  want.insert(want.end(), now.begin(), now.end());
  EXPECT_EQ(*llama.Encode("say <|eot_id|> now"), want);
  const absl::StatusOr<std::vector<TokenId>> as_text = llama.Encode("say <|eot_id|> now", kDocumentEncoding);
  ASSERT_TRUE(as_text.ok());
  EXPECT_EQ(Spell(llama, *as_text), "say <|eot_id|> now");
  EXPECT_EQ(std::count(as_text->begin(), as_text->end(), eot[0]), 0);

  const CanonicalTokenizer& qwen = *Tokenizer("qwen2_5").tokenizer;
  const std::vector<TokenId> tool_call = *qwen.Encode("<tool_call>");  // not special
  const std::vector<TokenId> im_end = *qwen.Encode("<|im_end|>");      // special
  ASSERT_EQ(tool_call.size(), 1u);
  ASSERT_EQ(im_end.size(), 1u);
  const std::string text = "a<tool_call>{}<|im_end|>";
  const absl::StatusOr<std::vector<TokenId>> document = qwen.Encode(text, kDocumentEncoding);
  ASSERT_TRUE(document.ok());
  EXPECT_EQ(Spell(qwen, *document), text);
  EXPECT_EQ(std::count(document->begin(), document->end(), tool_call[0]), 1);
  EXPECT_EQ(std::count(document->begin(), document->end(), im_end[0]), 0);
  const std::vector<TokenId> hf = *qwen.Encode(text);
  EXPECT_EQ(std::count(hf.begin(), hf.end(), im_end[0]), 1);
}

// Bytes that are not UTF-8: refused by default; in a document each is a
// character of its own, spelled back exactly, and NFC still composes the
// valid text around them.
TEST(DocumentEncoding, InvalidUtf8IsEncodedByteForByte) {
  const std::string text = "ok \xFF\xFE x\xC3(caf\xC3\xA9) \xE2\x82 end\x80";
  for (const std::string name : {"llama3", "qwen2_5", "gemma3"}) {
    const CanonicalTokenizer& t = *Tokenizer(name).tokenizer;
    EXPECT_EQ(t.Encode(text).status().code(), absl::StatusCode::kInvalidArgument) << name;
    const absl::StatusOr<std::vector<TokenId>> ids = t.Encode(text, kDocumentEncoding);
    ASSERT_TRUE(ids.ok()) << name << ": " << ids.status();
    EXPECT_EQ(Spell(t, *ids), text) << name;
  }
  // Qwen 2.5 normalizes to NFC: e + U+0301 becomes U+00E9 on both sides of an
  // invalid byte.
  const CanonicalTokenizer& qwen = *Tokenizer("qwen2_5").tokenizer;
  const absl::StatusOr<std::vector<TokenId>> composed =
      qwen.Encode("cafe\xCC\x81\xFF" "cafe\xCC\x81", kDocumentEncoding);
  ASSERT_TRUE(composed.ok());
  EXPECT_EQ(Spell(qwen, *composed), "caf\xC3\xA9\xFF" "caf\xC3\xA9");
}

// The cache changes no id: code traces through a cache and without, a cache
// too small for them, and one cache handed from one tokenizer to another.
TEST(PieceCache, ChangesNoIds) {
  PieceCache shared;
  for (const std::string name : {"llama3", "qwen2_5"}) {
    const CanonicalTokenizer& t = *Tokenizer(name).tokenizer;
    PieceCache small(64);
    for (const Record& r : ReadRecords(name, "java", 4)) {
      const std::vector<TokenId> plain = *t.Encode(r.text, kDocumentEncoding);
      EXPECT_EQ(*t.Encode(r.text, kDocumentEncoding, &shared), plain) << name << " " << r.id;
      EXPECT_EQ(*t.Encode(r.text, kDocumentEncoding, &small), plain) << name << " " << r.id;
    }
    EXPECT_EQ(small.size(), 64u);
    EXPECT_GT(shared.size(), 1000u);
  }
}

// ---------------------------------------------------------------------------
// Fast-forward tokens.

// llguidance's examples, Llama 3: `order` may become `orderId`, a closing
// quote may become `":`; a piece the next byte could extend is dropped.
TEST(FastForward, StopsBeforeTokensTheNextTextCouldRespell) {
  const CanonicalTokenizer& t = *Tokenizer("llama3").tokenizer;
  EXPECT_EQ(Spell(t, t.FastForwardTokens("\"order")), "");
  EXPECT_EQ(Spell(t, t.FastForwardTokens("name_of_the_person\"")), "name_of_the_person");
  EXPECT_EQ(Spell(t, t.FastForwardTokens("name_of_the_person\": ")), "name_of_the_person\":");
  EXPECT_EQ(*t.Encode("name_of_the_person\":"), t.FastForwardTokens("name_of_the_person\": "));
  // The forced bytes end inside a character: only whole characters count.
  EXPECT_EQ(Spell(t, t.FastForwardTokens("ab cd\xC3")), "ab");
  // An added token's text is never fast-forwarded as plain text.
  EXPECT_EQ(Spell(t, t.FastForwardTokens("x y <|eot_id|> z")), "x y");
  // Gemma 3 (one BPE piece): the cut needs no vocabulary entry across it.
  const CanonicalTokenizer& g = *Tokenizer("gemma3").tokenizer;
  const std::string forced = "{\"name_of_the_person\": \"";
  const std::string spelled = Spell(g, g.FastForwardTokens(forced));
  EXPECT_EQ(forced.compare(0, spelled.size(), spelled), 0);
  EXPECT_LT(spelled.size(), forced.size());
}

bool IsPrefix(const std::vector<TokenId>& prefix, const std::vector<TokenId>& of) {
  return prefix.size() <= of.size() && std::equal(prefix.begin(), prefix.end(), of.begin());
}

struct WalkCounts {
  size_t docs = 0, outside_grammar = 0, forced_states = 0, fast_forwarded_states = 0, whole_not_canonical = 0;
};

// Walks each valid record character by character; at every state where the
// grammar forces bytes, checks the fast-forward tokens (file comment).
void CheckFastForwardOnWalks(const std::string& tokenizer, const std::vector<Record>& records, WalkCounts* counts) {
  const Loaded& l = Tokenizer(tokenizer);
  absl::StatusOr<zapgram::Vocabulary> vocabulary =
      zapgram::Vocabulary::Load(testing::DataPath("tokenizers/" + tokenizer + ".tokenizer.json"));
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status();
  LoadOptions options;
  options.schema.lenient = true;
  for (const Record& r : records) {
    if (!r.valid) continue;
    absl::StatusOr<Grammar> grammar = Grammar::Load(r.grammar, testing::DataPath(""), options);
    if (!grammar.ok()) continue;  // a schema beyond the converter: not this test's subject
    absl::StatusOr<zapgram::CompiledGrammar> compiled = zapgram::CompiledGrammar::Compile(*grammar, *vocabulary);
    ASSERT_TRUE(compiled.ok()) << r.id << ": " << compiled.status();
    zapgram::Matcher matcher(*compiled);
    // Only documents the grammar generates have a true remainder everywhere
    // (a schema's generation grammar takes members in `properties` order).
    if (!matcher.AcceptBytes(r.text) || !matcher.IsAccepting()) {
      ++counts->outside_grammar;
      continue;
    }
    matcher.Reset();
    ++counts->docs;
    for (size_t pos = 0; pos <= r.text.size();) {
      const std::string forced = matcher.ForcedBytes();
      const std::string_view rest = std::string_view(r.text).substr(pos);
      if (!forced.empty()) {
        ++counts->forced_states;
        ASSERT_EQ(rest.substr(0, forced.size()), forced) << r.id << " @" << pos << ": the document leaves the grammar";
        absl::StatusOr<std::vector<int32_t>> ff = matcher.ComputeFastForwardTokens();
        ASSERT_TRUE(ff.ok()) << ff.status();
        const absl::StatusOr<std::vector<TokenId>> canonical = l.tokenizer->Encode(rest);
        ASSERT_TRUE(canonical.ok()) << canonical.status();
        const std::string spelled = Spell(*l.tokenizer, *ff);
        ASSERT_EQ(forced.compare(0, spelled.size(), spelled), 0) << r.id << " @" << pos << ": longer than forced";
        ASSERT_TRUE(IsPrefix(*ff, *canonical))
            << tokenizer << " " << r.id << " @" << pos << ": ff tokens '" << spelled
            << "' are not a prefix of the canonical encoding of the rest";
        if (!ff->empty()) {
          ++counts->fast_forwarded_states;
          zapgram::Matcher ahead = matcher.Fork();
          for (int32_t id : *ff) ASSERT_TRUE(ahead.AcceptToken(id)) << r.id << " @" << pos;
        }
        const absl::StatusOr<std::vector<TokenId>> whole = l.tokenizer->Encode(forced);
        if (!whole.ok() || !IsPrefix(*whole, *canonical)) ++counts->whole_not_canonical;
      }
      if (pos == r.text.size()) break;
      const grammar::DecodedCodepoint c = grammar::DecodeUtf8(rest);
      const size_t length = c.length == 0 ? 1 : c.length;
      ASSERT_TRUE(matcher.AcceptBytes(rest.substr(0, length))) << r.id << " @" << pos;
      pos += length;
    }
    EXPECT_TRUE(matcher.IsAccepting()) << r.id;
  }
}

void ExpectFastForwardCanonical(const std::string& tokenizer, size_t maskbench_stride, size_t docs_stride) {
  WalkCounts counts;
  CheckFastForwardOnWalks(tokenizer, ReadRecords(tokenizer, "maskbench", maskbench_stride), &counts);
  CheckFastForwardOnWalks(tokenizer, ReadRecords(tokenizer, "json-docs", docs_stride), &counts);
  std::printf(
      "[ ff ] %s: %zu documents (%zu outside the generation grammar), %zu forced states, %zu with ff tokens; "
      "all forced bytes encoded not canonical in %zu\n",
      tokenizer.c_str(), counts.docs, counts.outside_grammar, counts.forced_states, counts.fast_forwarded_states,
      counts.whole_not_canonical);
  // Sanitized builds walk a larger stride (fewer documents).
  EXPECT_GT(counts.docs, testing::Scaled(20u, 8u));
  EXPECT_GT(counts.fast_forwarded_states, testing::Scaled(50u, 20u));
  // The property can fail: encoding all the forced bytes, without the rule, does.
  EXPECT_GT(counts.whole_not_canonical, 0u);
}

TEST(FastForward, Llama3PrefixOfTheCanonicalRemainder) {
  ExpectFastForwardCanonical("llama3", testing::Scaled(10, 200), testing::Scaled(4, 40));
}

TEST(FastForward, Qwen25PrefixOfTheCanonicalRemainder) {
  ExpectFastForwardCanonical("qwen2_5", testing::Scaled(30, 400), testing::Scaled(12, 80));
}

TEST(FastForward, Gemma3PrefixOfTheCanonicalRemainder) {
  ExpectFastForwardCanonical("gemma3", testing::Scaled(10, 200), testing::Scaled(12, 80));
}

}  // namespace
}  // namespace zapgram::masks
