// The Matcher's masks against a brute force: for every normal token, a
// separate recognizer fed the same text pushes the token's bytes and sees
// whether they survive (no trie, no shared walk). Run on real tokenizers and
// real trace documents, on random walks, and around rollback.
#include "masks/matcher.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "api/grammar_data.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"
#include "pruning/compact.h"
#include "transforms/regular_terminals.h"
#include "tests/support/test_paths.h"

namespace zapgram::masks {
namespace {

std::shared_ptr<const Vocabulary> LoadVocabulary(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const Vocabulary>> cache;
  auto& v = cache[name];
  if (v == nullptr) {
    absl::StatusOr<Vocabulary> loaded =
        Vocabulary::LoadFromFile(testing::DataPath("tokenizers/" + name + ".tokenizer.json"));
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    v = std::make_shared<const Vocabulary>(*std::move(loaded));
  }
  return v;
}

// As Grammar::Load compiles (regular parts merged into terminals), or with
// the plain lowering when `merge_regular` is false.
std::shared_ptr<const CompiledGrammar> CompileFor(const std::string& spec,
                                                  std::shared_ptr<const Vocabulary> vocab,
                                                  bool merge_regular = true) {
  absl::StatusOr<grammar::Grammar> ir = internal::ReadGrammarSpec(spec, testing::DataPath(""));
  EXPECT_TRUE(ir.ok()) << ir.status();
  auto data = std::make_shared<internal::CompiledGrammarData>();
  data->ir = *std::move(ir);
  if (merge_regular) {
    absl::StatusOr<grammar::Grammar> merged = transforms::MergeRegularTerminals(data->ir);
    EXPECT_TRUE(merged.ok()) << merged.status();
    data->ir = *std::move(merged);
  }
  absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(data->ir);
  EXPECT_TRUE(flat.ok()) << flat.status();
  data->flat = *std::move(flat);
  std::shared_ptr<const parser::FlatGrammar> shared_flat(data, &data->flat);
  absl::StatusOr<std::shared_ptr<const CompiledGrammar>> g =
      CompiledGrammar::Build(shared_flat, std::move(vocab));
  EXPECT_TRUE(g.ok()) << g.status();
  return *g;
}

// The brute-force mask after `text`.
std::vector<uint32_t> ReferenceMask(const CompiledGrammar& g, const std::string& text) {
  RecognizerOptions options;
  options.max_rollback = 0;
  parser::Recognizer r = pruning::MakeRecognizer(&g.grammar(), options);
  EXPECT_EQ(r.FeedBytes(text), text.size());
  std::vector<uint32_t> words(g.mask_words(), 0);
  const Vocabulary& vocab = g.vocabulary();
  for (TokenId id = 0; id < vocab.padded_size(); ++id) {
    bool allowed = false;
    if (vocab.kind(id) == TokenKind::kNormal) {
      const std::string_view bytes = vocab.token_bytes(id);
      size_t pushed = 0;
      while (pushed < bytes.size() && r.Push(static_cast<uint8_t>(bytes[pushed]))) ++pushed;
      allowed = pushed == bytes.size();
      for (size_t i = 0; i < pushed; ++i) r.Pop();
    }
    if (vocab.is_eos(id)) allowed = r.IsAccepting();
    if (allowed) words[id / 32] |= 1u << (id % 32);
  }
  return words;
}

bool Allowed(const std::vector<uint32_t>& words, TokenId id) {
  return (words[id / 32] >> (id % 32)) & 1;
}

int CompareMasks(const CompiledGrammar& g, const std::vector<uint32_t>& got,
                 const std::vector<uint32_t>& want, const std::string& where) {
  int mismatches = 0;
  for (TokenId id = 0; id < g.vocabulary().padded_size(); ++id) {
    if (Allowed(got, id) != Allowed(want, id) && ++mismatches <= 3) {
      ADD_FAILURE() << where << ": token " << id << " \"" << g.vocabulary().token_bytes(id)
                    << "\" mask " << Allowed(got, id) << " reference " << Allowed(want, id);
    }
  }
  return mismatches;
}

struct TraceRecord {
  std::string id, grammar, text;
  bool valid;
  std::vector<TokenId> tokens;
};

std::vector<TraceRecord> ReadTrace(const std::string& tokenizer, const std::string& set,
                                   size_t limit) {
  std::ifstream in(testing::DataPath("traces/" + tokenizer + "/" + set + ".jsonl"));
  std::vector<TraceRecord> out;
  std::string line;
  while (out.size() < limit && std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("roundtrip_mismatch", false)) continue;
    out.push_back({j.at("id"), j.at("grammar"), j.at("text"), j.value("valid", true),
                   j.at("tokens").get<std::vector<TokenId>>()});
  }
  return out;
}

// Teacher-forced: at each of the first `steps` tokens, mask == brute force and
// the trace's token is allowed exactly while the document is still valid.
// ZAPGRAM_BRUTE_FORCE_DOCS / ZAPGRAM_BRUTE_FORCE_STEPS widen the sample for
// long offline runs (every step of many documents).
void CheckTrace(const std::string& tokenizer, const std::string& set, size_t docs, size_t steps) {
  if (const char* d = std::getenv("ZAPGRAM_BRUTE_FORCE_DOCS")) docs = std::strtoull(d, nullptr, 10);
  if (const char* s = std::getenv("ZAPGRAM_BRUTE_FORCE_STEPS")) steps = std::strtoull(s, nullptr, 10);
  auto vocab = LoadVocabulary(tokenizer);
  std::map<std::string, std::shared_ptr<const CompiledGrammar>> grammars;
  int checked = 0, mismatches = 0;
  for (const TraceRecord& rec : ReadTrace(tokenizer, set, docs)) {
    auto& g = grammars[rec.grammar];
    if (g == nullptr) g = CompileFor(rec.grammar, vocab);
    Matcher m(g);
    std::vector<uint32_t> words(g->mask_words());
    std::string text;
    for (size_t k = 0; k < rec.tokens.size() && k < steps; ++k) {
      m.ComputeMask(words.data());
      mismatches += CompareMasks(*g, words, ReferenceMask(*g, text), rec.id + " step " + std::to_string(k));
      ++checked;
      const TokenId t = rec.tokens[k];
      const bool allowed = Allowed(words, t);
      EXPECT_EQ(allowed, m.AcceptToken(t)) << rec.id << " step " << k;
      if (!allowed) {
        EXPECT_FALSE(rec.valid) << rec.id << ": token " << k << " of a valid document rejected";
        break;
      }
      text += g->vocabulary().token_bytes(t);
    }
  }
  std::printf("%s/%s: %d masks checked against the brute force, %d mismatches\n", tokenizer.c_str(),
              set.c_str(), checked, mismatches);
  EXPECT_EQ(mismatches, 0);
}

TEST(MatcherTrace, JsonDocsLlama3) { CheckTrace("llama3", "json-docs", 3, 25); }
TEST(MatcherTrace, JsonDocsQwen) { CheckTrace("qwen2_5", "json-docs", 2, 20); }
TEST(MatcherTrace, JavaLlama3) { CheckTrace("llama3", "java", 1, 25); }
TEST(MatcherTrace, GoQwen) { CheckTrace("qwen2_5", "go", 1, 12); }
TEST(MatcherTrace, SqlQwen) { CheckTrace("qwen2_5", "sql", 3, 12); }
// JSON Schema grammars (schema:PATH): the first maskbench records.
TEST(MatcherTrace, MaskbenchLlama3) { CheckTrace("llama3", "maskbench", 4, 16); }

// Whole valid documents are accepted token by token, and end accepting.
TEST(MatcherTrace, ValidDocumentsAccepted) {
  auto vocab = LoadVocabulary("llama3");
  for (const char* set : {"json-docs", "sql"}) {
    std::map<std::string, std::shared_ptr<const CompiledGrammar>> grammars;
    int accepted = 0, valid = 0;
    for (const TraceRecord& rec : ReadTrace("llama3", set, 40)) {
      auto& g = grammars[rec.grammar];
      if (g == nullptr) g = CompileFor(rec.grammar, vocab);
      Matcher m(g);
      bool ok = true;
      for (TokenId t : rec.tokens) ok = ok && m.AcceptToken(t);
      ok = ok && m.IsAccepting();
      valid += rec.valid;
      accepted += ok;
      EXPECT_EQ(ok, rec.valid) << rec.id;
    }
    std::printf("%s: %d accepted, %d valid\n", set, accepted, valid);
  }
}

// A random walk of `steps` steps on `g`: at each, the mask equals the brute
// force, then a random allowed token (not EOS) is accepted. With
// `require_progress` a mask must allow something; else the walk stops there.
void RandomWalk(const std::shared_ptr<const CompiledGrammar>& g, const MatcherOptions& options,
                uint32_t seed, int steps, bool require_progress, const std::string& label,
                int* masks, int* mismatches) {
  const Vocabulary& vocab = g->vocabulary();
  std::vector<uint32_t> words(g->mask_words());
  std::mt19937 rng(seed);
  Matcher m(g, options);
  std::string text;
  for (int step = 0; step < steps; ++step) {
    const size_t n = m.ComputeMask(words.data());
    *mismatches += CompareMasks(*g, words, ReferenceMask(*g, text),
                                label + " seed " + std::to_string(seed) + " step " + std::to_string(step));
    ++*masks;
    if (require_progress) {
      ASSERT_GT(n, 0u) << label;
    }
    if (n == 0) return;
    std::vector<TokenId> allowed;
    for (TokenId id = 0; id < vocab.padded_size(); ++id) {
      if (Allowed(words, id) && !vocab.is_eos(id)) allowed.push_back(id);
    }
    if (allowed.empty()) return;
    const TokenId t = allowed[rng() % allowed.size()];
    ASSERT_TRUE(m.AcceptToken(t)) << label;
    text += vocab.token_bytes(t);
  }
}

// Random walks over every way of computing the mask (token sets + cache,
// token sets alone, the plain trie walk; merged and plain lowering).
TEST(MatcherRandomWalk, MasksMatchBruteForce) {
  auto vocab = LoadVocabulary("llama3");
  int mismatches = 0, masks = 0;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    auto g = CompileFor("builtin:json", vocab, /*merge_regular=*/seed % 2 == 1);
    MatcherOptions options;
    options.use_cache = seed % 3 != 0;
    options.use_token_sets = seed % 3 != 2;
    ASSERT_NO_FATAL_FAILURE(RandomWalk(g, options, seed, 12, /*require_progress=*/true,
                                       "builtin:json", &masks, &mismatches));
  }
  std::printf("random walks: %d masks checked, %d mismatches\n", masks, mismatches);
  EXPECT_EQ(mismatches, 0);
}

// Lexed (Lark) grammars: random walks with the cache off, so the per-lane
// token sets and guard sets answer every step.
TEST(MatcherRandomWalk, LexedGrammarsMatchBruteForce) {
  auto vocab = LoadVocabulary("llama3");
  int mismatches = 0, masks = 0;
  for (const char* spec : {"grammars/lark/syncode/sql.lark", "grammars/lark/syncode/java.lark"}) {
    auto g = CompileFor(spec, vocab);
    MatcherOptions options;
    options.use_cache = false;
    for (uint32_t seed = 1; seed <= 2; ++seed) {
      ASSERT_NO_FATAL_FAILURE(RandomWalk(g, options, seed, 10, /*require_progress=*/false, spec,
                                         &masks, &mismatches));
    }
  }
  std::printf("lexed random walks: %d masks checked, %d mismatches\n", masks, mismatches);
  EXPECT_EQ(mismatches, 0);
}

// The cache answers repeated states: a document with many equal contexts
// gets hits, and cached masks equal fresh ones.
TEST(Matcher, CacheHitsAreEqualToFreshMasks) {
  auto vocab = LoadVocabulary("llama3");
  auto g = CompileFor("builtin:json", vocab);
  const std::string doc = "[\"aa\", \"bb\", \"cc\", \"dd\", \"ee\", \"ff\"]";
  MatcherOptions fresh_options;
  fresh_options.use_cache = false;
  Matcher cached(g), fresh(g, fresh_options);
  std::vector<uint32_t> a(g->mask_words()), b(g->mask_words());
  for (char c : doc) {
    EXPECT_EQ(cached.ComputeMask(a.data()), fresh.ComputeMask(b.data()));
    EXPECT_EQ(a, b);
    ASSERT_TRUE(cached.AcceptBytes(std::string(1, c)));
    ASSERT_TRUE(fresh.AcceptBytes(std::string(1, c)));
  }
  const MaskCacheStats stats = g->cache_stats();
  EXPECT_GT(stats.hits, 10u);
  EXPECT_GT(stats.misses, 0u);
}

TEST(Matcher, RollbackRestoresTheMask) {
  auto vocab = LoadVocabulary("llama3");
  auto g = CompileFor("builtin:json", vocab);
  const std::vector<TraceRecord> recs = ReadTrace("llama3", "json-docs", 1);
  ASSERT_FALSE(recs.empty());
  Matcher m(g);
  std::vector<std::vector<uint32_t>> masks;
  std::vector<uint32_t> words(g->mask_words());
  const size_t n = std::min<size_t>(20, recs[0].tokens.size());
  for (size_t k = 0; k < n; ++k) {
    m.ComputeMask(words.data());
    masks.push_back(words);
    ASSERT_TRUE(m.AcceptToken(recs[0].tokens[k]));
  }
  for (size_t back : {1u, 3u, 5u}) {
    ASSERT_TRUE(m.Rollback(back));
    m.ComputeMask(words.data());
    EXPECT_EQ(words, masks[masks.size() - back]) << "after rolling back " << back;
    // Re-accept to return to the end.
    for (size_t k = masks.size() - back; k < masks.size(); ++k) {
      ASSERT_TRUE(m.AcceptToken(recs[0].tokens[k]));
    }
  }
}

TEST(Matcher, EosForcedBytesAndValidation) {
  auto vocab = LoadVocabulary("llama3");
  auto data = CompileFor("regex:hello [a-z]+!", vocab);
  Matcher m(data);
  EXPECT_EQ(m.ForcedBytes(), "hello ");
  std::vector<uint32_t> words(data->mask_words());
  m.ComputeMask(words.data());
  for (TokenId eos : vocab->eos_ids()) EXPECT_FALSE(Allowed(words, eos));
  ASSERT_TRUE(m.AcceptBytes("hello wor"));
  EXPECT_EQ(m.ForcedBytes(), "");
  ASSERT_TRUE(m.AcceptBytes("ld!"));
  EXPECT_TRUE(m.IsAccepting());
  m.ComputeMask(words.data());
  ASSERT_FALSE(vocab->eos_ids().empty());
  for (TokenId eos : vocab->eos_ids()) EXPECT_TRUE(Allowed(words, eos));
  EXPECT_FALSE(m.AcceptBytes("x"));  // all or nothing, state unchanged
  EXPECT_TRUE(m.IsAccepting());
  EXPECT_TRUE(m.AcceptToken(vocab->eos_ids()[0]));
  EXPECT_TRUE(m.IsFinished());
  EXPECT_EQ(m.ComputeMask(words.data()), 0u);
  EXPECT_TRUE(m.Rollback(1));
  EXPECT_FALSE(m.IsFinished());

  // ValidateTokens does not move the state.
  Matcher v(data);
  std::vector<TokenId> draft;
  for (std::string piece : {"hello", " wor", "ld", "!", "?"}) {
    std::optional<uint32_t> node = data->trie().FindNode(piece);
    ASSERT_TRUE(node.has_value()) << piece;
    ASSERT_FALSE(data->trie().TokensAt(*node).empty()) << piece;
    draft.push_back(data->trie().TokensAt(*node)[0]);
  }
  EXPECT_EQ(v.ValidateTokens(draft), 4u);
  EXPECT_EQ(v.position(), 0u);
}

TEST(Matcher, RejectedPrefixesAreMinimal) {
  auto vocab = LoadVocabulary("llama3");
  auto g = CompileFor("builtin:json", vocab);
  Matcher m(g);
  std::vector<uint32_t> words(g->mask_words());
  ASSERT_TRUE(m.AcceptBytes("{\"a\":"));
  const size_t allowed = m.ComputeMask(words.data());
  const std::vector<TokenId> rejected = m.LastRejectedTokens();
  // Every normal token is allowed or under a rejected prefix, never both.
  EXPECT_EQ(allowed + rejected.size(), static_cast<size_t>(vocab->count(TokenKind::kNormal)));
  for (TokenId id : rejected) EXPECT_FALSE(Allowed(words, id));
  for (const std::string& prefix : m.LastRejectedPrefixes()) {
    EXPECT_FALSE(m.ValidateTokens({}) != 0);
    // A rejected prefix minus its last byte is accepted (minimality).
    Matcher probe(g);
    ASSERT_TRUE(probe.AcceptBytes("{\"a\":"));
    EXPECT_TRUE(probe.AcceptBytes(prefix.substr(0, prefix.size() - 1))) << prefix;
    Matcher probe2(g);
    ASSERT_TRUE(probe2.AcceptBytes("{\"a\":"));
    EXPECT_FALSE(probe2.AcceptBytes(prefix)) << prefix;
  }
}

// Counted repetition must not multiply cache entries or token sets: the
// counting states of "[a-z]{0,500}" that no token can tell apart (more than
// the longest token's length left) share one mask class, so a walk through
// 500 letters meets a handful of classes; masks stay exact at every count.
TEST(MatcherCountedRepetition, CountsBeyondTheLongestTokenShareMasks) {
  absl::StatusOr<Vocabulary> loaded =
      Vocabulary::FromTokenBytes({"a", "aa", "aaa", "aaaa", "b", "\"", "a\"", "ab\"", ""}, {8});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto vocab = std::make_shared<const Vocabulary>(*std::move(loaded));
  auto g = CompileFor("regex:\"[a-z]{0,500}\"", vocab);
  const absl::Span<const uint32_t> classes = g->mask_classes();
  ASSERT_GT(classes.size(), 500u);
  std::vector<uint32_t> distinct(classes.begin(), classes.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  // dead, start, "far from the end", the last 4 counts, the end: a few, not 500.
  EXPECT_LE(distinct.size(), 12u);
  Matcher m(g);
  std::vector<uint32_t> words(g->mask_words());
  std::string text;
  int mismatches = 0;
  ASSERT_TRUE(m.AcceptToken(5));  // the opening quote
  text += "\"";
  for (int k = 0; k < 500; ++k) {
    m.ComputeMask(words.data());
    mismatches += CompareMasks(*g, words, ReferenceMask(*g, text), "count " + std::to_string(k));
    ASSERT_TRUE(m.AcceptToken(0)) << k;
    text += "a";
  }
  m.ComputeMask(words.data());
  mismatches += CompareMasks(*g, words, ReferenceMask(*g, text), "count 500");
  EXPECT_TRUE(Allowed(words, 5));
  EXPECT_FALSE(Allowed(words, 0));
  EXPECT_EQ(mismatches, 0);
  const MaskCacheStats stats = g->cache_stats();
  EXPECT_LE(stats.entries, 12u) << "one cache entry per count would be 501";
  EXPECT_GT(stats.hits, 480u);
}

}  // namespace
}  // namespace zapgram::masks

namespace zapgram {
namespace {

// One compiled grammar shared by matchers on several threads (the token
// sets are built on first use and the cache is shared): masks equal those
// computed one matcher at a time on a separate grammar.
TEST(MatcherThreads, SharedGrammarGivesTheSameMasks) {
  absl::StatusOr<Vocabulary> vocab = Vocabulary::Load(testing::DataPath("tokenizers/llama3.tokenizer.json"));
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  absl::StatusOr<Grammar> grammar = Grammar::Load("builtin:json");
  ASSERT_TRUE(grammar.ok());
  absl::StatusOr<CompiledGrammar> shared = CompiledGrammar::Compile(*grammar, *vocab);
  absl::StatusOr<CompiledGrammar> alone = CompiledGrammar::Compile(*grammar, *vocab);
  ASSERT_TRUE(shared.ok() && alone.ok());
  const std::vector<std::string> prefixes = {"", "{\"a\": ", "[1, 2", "{\"k\": \"v", "[tr", "{\"x\": [{\"y\": 1.5e",
                                             "  ", "[\"\\u00"};
  std::vector<Matcher> matchers;
  std::vector<Matcher*> pointers;
  for (const std::string& p : prefixes) {
    matchers.emplace_back(*shared);
    ASSERT_TRUE(matchers.back().AcceptBytes(p)) << p;
  }
  for (Matcher& m : matchers) pointers.push_back(&m);
  const size_t words = shared->mask_words();
  for (int round = 0; round < 3; ++round) {
    std::vector<uint32_t> batch(words * matchers.size());
    ComputeMasks(pointers, batch.data(), words, /*threads=*/4);
    for (size_t k = 0; k < prefixes.size(); ++k) {
      Matcher single(*alone);
      ASSERT_TRUE(single.AcceptBytes(prefixes[k]));
      std::vector<uint32_t> expected(words);
      single.ComputeMask(expected.data());
      EXPECT_TRUE(std::equal(expected.begin(), expected.end(), batch.begin() + k * words))
          << "prefix " << prefixes[k] << " round " << round;
    }
  }
  EXPECT_GT(shared->cache_stats().hits, 0u);
}

}  // namespace
}  // namespace zapgram
