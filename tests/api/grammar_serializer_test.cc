// Persistent compiled grammars (api/grammar_serializer.cc): a grammar read
// back from its bytes, on a vocabulary loaded separately, has the same
// tables (TablesDigest) and the same masks as the one compiled, token by
// token along real traces (MaskBench schemas, JSON, Lark, GBNF) and along
// random walks (lazy terminals, counted repetition); and bad bytes (another
// vocabulary, another version, every truncation, corruptions with and
// without a recomputed checksum) are errors, never crashes.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "api/grammar_data.h"
#include "grammar/checksum.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "parser/flat_grammar.h"
#include "tests/support/test_paths.h"
#include "tests/support/test_scale.h"
#include "tests/support/trace_docs.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram {
namespace {

// Llama 3 loaded a second time: the loaded grammar shares no trie, token
// set or mask cache with the original.
const Vocabulary& SecondLlama3() {
  static const Vocabulary* vocabulary = [] {
    absl::StatusOr<Vocabulary> v = Vocabulary::Load(testing::DataPath("tokenizers/llama3.tokenizer.json"));
    EXPECT_TRUE(v.ok()) << v.status();
    return new Vocabulary(*std::move(v));
  }();
  return *vocabulary;
}

std::vector<uint32_t> MaskOf(Matcher& m, size_t words) {
  std::vector<uint32_t> mask(words);
  m.ComputeMask(mask.data());
  return mask;
}

CompiledGrammar RoundTrip(const CompiledGrammar& original, const Vocabulary& vocabulary) {
  const std::string bytes = original.Serialize();
  absl::StatusOr<CompiledGrammar> loaded = CompiledGrammar::Deserialize(bytes, vocabulary);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  if (!loaded.ok()) return original;
  EXPECT_EQ(parser::TablesDigest(loaded->grammar().data().flat), parser::TablesDigest(original.grammar().data().flat));
  EXPECT_EQ(parser::DumpFlatGrammar(loaded->grammar().data().flat),
            parser::DumpFlatGrammar(original.grammar().data().flat));
  EXPECT_EQ(loaded->grammar().warnings(), original.grammar().warnings());
  EXPECT_EQ(loaded->grammar().stats().rules, original.grammar().stats().rules);
  // Serializing the loaded grammar gives the same bytes.
  EXPECT_EQ(loaded->Serialize(), bytes);
  return *std::move(loaded);
}

// Masks of both grammars equal before each token of `tokens` and at the end.
void ExpectSameMasks(const CompiledGrammar& a, const CompiledGrammar& b, const std::vector<int32_t>& tokens,
                     const std::string& what) {
  Matcher ma(a), mb(b);
  const size_t words = a.mask_words();
  for (size_t k = 0; k < tokens.size(); ++k) {
    ASSERT_EQ(MaskOf(ma, words), MaskOf(mb, words)) << what << " token " << k;
    const bool accepted = ma.AcceptToken(tokens[k]);
    ASSERT_EQ(mb.AcceptToken(tokens[k]), accepted) << what << " token " << k;
    if (!accepted) return;
  }
  EXPECT_EQ(MaskOf(ma, words), MaskOf(mb, words)) << what << " at the end";
  EXPECT_EQ(ma.IsAccepting(), mb.IsAccepting()) << what;
}

// A random walk of up to `steps` tokens, each allowed by `a`'s mask (EOS
// only when nothing else is), comparing masks at every step.
void ExpectSameMasksOnWalk(const CompiledGrammar& a, const CompiledGrammar& b, size_t steps, uint32_t seed,
                           const std::string& what) {
  Matcher ma(a), mb(b);
  const size_t words = a.mask_words();
  std::mt19937 rng(seed);
  for (size_t k = 0; k < steps; ++k) {
    const std::vector<uint32_t> mask = MaskOf(ma, words);
    ASSERT_EQ(mask, MaskOf(mb, words)) << what << " step " << k;
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < a.vocabulary().padded_size(); ++id) {
      if (((mask[id / 32] >> (id % 32)) & 1) && a.vocabulary().is_normal(id)) allowed.push_back(id);
    }
    if (allowed.empty()) break;
    const int32_t id = allowed[rng() % allowed.size()];
    ASSERT_TRUE(ma.AcceptToken(id)) << what;
    ASSERT_TRUE(mb.AcceptToken(id)) << what;
  }
  EXPECT_EQ(ma.IsAccepting(), mb.IsAccepting()) << what;
}

void CheckTraceDocs(const std::vector<testing::TraceDoc>& docs, const LoadOptions& options) {
  ASSERT_FALSE(docs.empty());
  for (const testing::TraceDoc& doc : docs) {
    absl::StatusOr<Grammar> grammar = Grammar::Load(doc.grammar, testing::DataPath(""), options);
    if (!grammar.ok()) continue;  // a schema zapgram refuses: not this test's business
    absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*grammar, testing::Llama3Vocabulary());
    ASSERT_TRUE(compiled.ok()) << doc.grammar << ": " << compiled.status();
    const CompiledGrammar loaded = RoundTrip(*compiled, SecondLlama3());
    ExpectSameMasks(*compiled, loaded, doc.tokens, doc.grammar);
  }
}

TEST(GrammarSerializer, XxHash64TestVectors) {
  EXPECT_EQ(grammar::XxHash64(""), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(grammar::XxHash64("abc"), 0x44BC2CF5AD770999ull);
  std::mt19937 rng(7);
  for (size_t n : {0, 1, 3, 4, 7, 8, 31, 32, 33, 63, 64, 65, 100, 1000}) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    for (size_t cut : {size_t{0}, n / 3, n / 2, n}) {
      grammar::XxHash64Stream stream(99);
      stream.Update(std::string_view(s).substr(0, cut));
      stream.Update(std::string_view(s).substr(cut));
      EXPECT_EQ(stream.Digest(), grammar::XxHash64(s, 99)) << n << " cut " << cut;
    }
  }
}

TEST(GrammarSerializer, FingerprintIsTheVocabularysContent) {
  EXPECT_EQ(testing::Llama3Vocabulary().fingerprint(), SecondLlama3().fingerprint());
  absl::StatusOr<Vocabulary> a = Vocabulary::FromTokens({"a", "b", "</s>"}, {2});
  absl::StatusOr<Vocabulary> b = Vocabulary::FromTokens({"a", "c", "</s>"}, {2});
  absl::StatusOr<Vocabulary> c = Vocabulary::FromTokens({"a", "b", "</s>"}, {});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_NE(a->fingerprint(), b->fingerprint());
  EXPECT_NE(a->fingerprint(), c->fingerprint());
  EXPECT_NE(a->fingerprint(), testing::Llama3Vocabulary().fingerprint());
}

// MaskBench schemas (lenient, as the other trace tests read them): every
// 10th line's valid record; every 997th under the sanitizers.
TEST(GrammarSerializer, MaskBenchRoundTripsWithEqualMasks) {
  LoadOptions options;
  options.schema.lenient = true;
  CheckTraceDocs(testing::ReadTraceDocs("traces/llama3/maskbench.jsonl", testing::Scaled(2000, 3),
                                        testing::Scaled(10, 997)),
                 options);
}

TEST(GrammarSerializer, LazyTerminalsRoundTrip) {
  LoadOptions options;
  options.schema.lenient = true;
  options.lazy_terminals = true;
  CheckTraceDocs(testing::ReadTraceDocs("traces/llama3/maskbench.jsonl", testing::Scaled(60, 2),
                                        testing::Scaled(97, 997)),
                 options);
  // A regex whose DFA is too large to build ahead of time is lazy whatever
  // the option says; the loaded grammar makes its states afresh.
  absl::StatusOr<Grammar> grammar =
      Grammar::FromText(GrammarFormat::kGbnf, "root ::= \"<\" [ab]* \"a\" [ab]{14} \">\"\n");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*grammar, testing::Llama3Vocabulary());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const CompiledGrammar loaded = RoundTrip(*compiled, SecondLlama3());
  ExpectSameMasksOnWalk(*compiled, loaded, testing::Scaled(60, 10), 1, "lazy regex");
}

TEST(GrammarSerializer, JsonLarkAndGbnfRoundTrip) {
  CheckTraceDocs(testing::ReadTraceDocs("traces/llama3/json-docs.jsonl", testing::Scaled(4, 1), 50), {});
  CheckTraceDocs(testing::ReadTraceDocs("traces/llama3/sql.jsonl", testing::Scaled(3, 1), 97), {});
  CheckTraceDocs(testing::ReadTraceDocs("traces/llama3/java.jsonl", 1, 1), {});
  CheckTraceDocs(testing::ReadTraceDocs("traces/llama3/xgrammar-ebnf.jsonl", testing::Scaled(12, 3), 13), {});
}

TEST(GrammarSerializer, CountedRepetitionRoundTrips) {
  LoadOptions options;
  absl::StatusOr<Grammar> schema = Grammar::FromText(
      GrammarFormat::kJsonSchema,
      R"({"type":"object","properties":{"name":{"type":"string","minLength":3,"maxLength":200},)"
      R"("bio":{"type":"string","pattern":"^(?:[a-z]+ ){0,20}[a-z]+$","maxLength":2000},)"
      R"("tags":{"type":"array","items":{"type":"integer"},"maxItems":50}},"required":["name","bio","tags"]})",
      options);
  ASSERT_TRUE(schema.ok()) << schema.status();
  absl::StatusOr<Grammar> gbnf = Grammar::FromText(GrammarFormat::kGbnf, "root ::= \"[\" [0-9a-f]{40,300} \"]\"\n");
  ASSERT_TRUE(gbnf.ok()) << gbnf.status();
  uint32_t seed = 0;
  for (const Grammar* grammar : {&*schema, &*gbnf}) {
    absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*grammar, testing::Llama3Vocabulary());
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    ASSERT_FALSE(grammar->data().flat.terminals.counted.empty());
    // The schema's pattern with its maxLength: a counted terminal with a body.
    if (grammar == &*schema) {
      bool body = false;
      for (const auto& seg : grammar->data().flat.terminals.counted) body = body || seg.automaton->has_body();
      EXPECT_TRUE(body);
    }
    // The loader counts a twin's states rather than building it.
    for (const parser::TerminalTable::CountedSegment& seg : grammar->data().flat.terminals.counted) {
      EXPECT_EQ(seg.automaton->twin_states(), seg.automaton->TwinDfa().num_states());
    }
    const CompiledGrammar loaded = RoundTrip(*compiled, SecondLlama3());
    ExpectSameMasksOnWalk(*compiled, loaded, testing::Scaled(120, 15), ++seed, "counted");
  }
}

// Small grammars on a small vocabulary, for the error tests.
Vocabulary SmallVocabulary() {
  std::vector<std::string> tokens = {"</s>"};
  for (const char* t : {"a", "b", "ab", "ba", "\"", "{", "}", ":", ",", " ", "x", "1", "12", "[", "]", "<", ">",
                        "select", " from", "t", "true", "null", "aa", "bb"}) {
    tokens.push_back(t);
  }
  absl::StatusOr<Vocabulary> v = Vocabulary::FromTokens(tokens, {0});
  EXPECT_TRUE(v.ok()) << v.status();
  return *std::move(v);
}

std::vector<CompiledGrammar> SmallGrammars(const Vocabulary& vocabulary) {
  std::vector<absl::StatusOr<Grammar>> grammars;
  grammars.push_back(Grammar::FromText(GrammarFormat::kGbnf, "root ::= (\"a\" | \"b\" root) \"x\"?\n"));
  grammars.push_back(Grammar::FromText(GrammarFormat::kLark,
                                       "start: \"select\" NAME (\",\" NAME)* \" from\" NAME\n"
                                       "NAME: /[a-z]+/\n"));
  grammars.push_back(Grammar::FromText(GrammarFormat::kGbnf, "root ::= \"[\" [0-9ab]{35,40} \"]\"\n"));
  LoadOptions lazy;
  lazy.limits.max_eager_regex_states = 4;
  grammars.push_back(Grammar::FromText(GrammarFormat::kRegex, "<(a|b)*a(a|b){3}>", lazy));
  grammars.push_back(Grammar::FromText(GrammarFormat::kJsonSchema, R"({"enum":[true,null,12]})"));
  std::vector<CompiledGrammar> out;
  for (absl::StatusOr<Grammar>& g : grammars) {
    EXPECT_TRUE(g.ok()) << g.status();
    if (!g.ok()) continue;
    absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*g, vocabulary);
    EXPECT_TRUE(compiled.ok()) << compiled.status();
    if (compiled.ok()) out.push_back(*std::move(compiled));
  }
  return out;
}

// A loaded grammar, however odd, masks and accepts without crashing.
void Exercise(const CompiledGrammar& g) {
  Matcher m(g);
  std::vector<uint32_t> mask(g.mask_words());
  for (int step = 0; step < 4; ++step) {
    m.ComputeMask(mask.data());
    int32_t next = -1;
    for (int32_t id = 0; id < g.vocabulary().padded_size() && next < 0; ++id) {
      if ((mask[id / 32] >> (id % 32)) & 1) next = id;
    }
    if (next < 0 || !m.AcceptToken(next)) break;
  }
  m.AcceptBytes("ab");
  (void)m.IsAccepting();
}

void PutChecksum(std::string& bytes) {
  const uint64_t sum = grammar::XxHash64(std::string_view(bytes).substr(40));
  std::memcpy(&bytes[32], &sum, 8);
}

TEST(GrammarSerializer, SmallGrammarsRoundTrip) {
  const Vocabulary vocabulary = SmallVocabulary();
  const std::vector<CompiledGrammar> grammars = SmallGrammars(vocabulary);
  ASSERT_EQ(grammars.size(), 5u);
  ASSERT_TRUE(grammars[1].grammar().data().flat.lexed());
  ASSERT_FALSE(grammars[2].grammar().data().flat.terminals.counted.empty());
  ASSERT_NE(grammars[3].grammar().data().flat.terminals.lazy, nullptr);
  uint32_t seed = 0;
  for (const CompiledGrammar& g : grammars) {
    const CompiledGrammar loaded = RoundTrip(g, vocabulary);
    ExpectSameMasksOnWalk(g, loaded, 30, ++seed, "small");
  }
}

// Every Lark and GBNF grammar of the shared data that compiles loads back
// with the same tables (the loader's liveness checks hold for real lexers
// and terminal tables).
TEST(GrammarSerializer, EveryDataGrammarRoundTrips) {
  const Vocabulary vocabulary = SmallVocabulary();
  size_t checked = 0;
  for (const char* extension : {".lark", ".gbnf"}) {
    const std::vector<std::string> files = testing::ListFiles(testing::DataPath("grammars"), extension);
    for (size_t k = 0; k < files.size(); k += testing::Scaled<size_t>(1, 9)) {
      absl::StatusOr<Grammar> grammar = Grammar::Load(files[k]);
      if (!grammar.ok()) continue;
      absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*grammar, vocabulary);
      if (!compiled.ok()) continue;  // a token named by text this vocabulary lacks
      SCOPED_TRACE(files[k]);
      RoundTrip(*compiled, vocabulary);
      ++checked;
    }
  }
  EXPECT_GT(checked, testing::Scaled<size_t>(40, 5));
}

TEST(GrammarSerializer, OtherVocabularyVersionOrMagicIsAnError) {
  const Vocabulary vocabulary = SmallVocabulary();
  const CompiledGrammar g = SmallGrammars(vocabulary)[0];
  std::string bytes = g.Serialize();
  absl::StatusOr<CompiledGrammar> other = CompiledGrammar::Deserialize(bytes, testing::Llama3Vocabulary());
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition) << other.status();
  EXPECT_NE(other.status().message().find("another vocabulary"), std::string::npos) << other.status();

  std::string version = bytes;
  version[8] = static_cast<char>(CompiledGrammar::kSerialFormatVersion + 1);
  absl::StatusOr<CompiledGrammar> next = CompiledGrammar::Deserialize(version, vocabulary);
  EXPECT_EQ(next.status().code(), absl::StatusCode::kInvalidArgument) << next.status();
  EXPECT_NE(next.status().message().find(absl::StrCat("format version ", CompiledGrammar::kSerialFormatVersion + 1)),
            std::string::npos)
      << next.status();

  absl::StatusOr<CompiledGrammar> text = CompiledGrammar::Deserialize("root ::= \"a\"", vocabulary);
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument) << text.status();
  EXPECT_EQ(CompiledGrammar::Deserialize("", vocabulary).status().code(), absl::StatusCode::kInvalidArgument);

  std::string trailing = bytes + "x";
  EXPECT_EQ(CompiledGrammar::Deserialize(trailing, vocabulary).status().code(), absl::StatusCode::kDataLoss);
  PutChecksum(trailing);  // the header's length still disagrees
  EXPECT_EQ(CompiledGrammar::Deserialize(trailing, vocabulary).status().code(), absl::StatusCode::kDataLoss);
}

TEST(GrammarSerializer, EveryTruncationIsAnError) {
  const Vocabulary vocabulary = SmallVocabulary();
  for (const CompiledGrammar& g : SmallGrammars(vocabulary)) {
    const std::string bytes = g.Serialize();
    const size_t step = testing::Scaled<size_t>(1, 7);
    for (size_t n = 0; n < bytes.size(); n += step) {
      absl::StatusOr<CompiledGrammar> loaded = CompiledGrammar::Deserialize(bytes.substr(0, n), vocabulary);
      ASSERT_FALSE(loaded.ok()) << n << " of " << bytes.size();
      if (n >= 8) {
        EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss) << n << ": " << loaded.status();
      }
    }
    // With the header rewritten to match (length and checksum), the
    // structure itself must refuse a payload cut short.
    for (size_t n = 40; n < bytes.size(); n += step) {
      std::string cut = bytes.substr(0, n);
      const uint64_t length = n - 40;
      std::memcpy(&cut[24], &length, 8);
      PutChecksum(cut);
      absl::StatusOr<CompiledGrammar> loaded = CompiledGrammar::Deserialize(cut, vocabulary);
      ASSERT_FALSE(loaded.ok()) << n << " of " << bytes.size();
      EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss) << n << ": " << loaded.status();
    }
  }
}

TEST(GrammarSerializer, CorruptionsAreErrorsOrValidGrammars) {
  const Vocabulary vocabulary = SmallVocabulary();
  std::mt19937 rng(11);
  size_t loaded_count = 0, refused = 0;
  for (const CompiledGrammar& g : SmallGrammars(vocabulary)) {
    const std::string bytes = g.Serialize();
    const size_t step = testing::Scaled<size_t>(1, 13);
    for (size_t at = 0; at < bytes.size(); at += step) {
      std::string bad = bytes;
      bad[at] = static_cast<char>(bad[at] ^ (1 + rng() % 255));
      // Without a matching checksum: always an error.
      absl::StatusOr<CompiledGrammar> loaded = CompiledGrammar::Deserialize(bad, vocabulary);
      ASSERT_FALSE(loaded.ok()) << "byte " << at;
      // With it: the structure decides; a grammar that loads must work.
      if (at >= 40) {
        PutChecksum(bad);
        loaded = CompiledGrammar::Deserialize(bad, vocabulary);
        if (loaded.ok()) {
          ++loaded_count;
          Exercise(*loaded);
        } else {
          ++refused;
          EXPECT_NE(loaded.status().code(), absl::StatusCode::kOk);
        }
      }
    }
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GT(loaded_count, 0u);  // names, flags and ranks may change freely
}

}  // namespace
}  // namespace zapgram
