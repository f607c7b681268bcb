// The Matcher's masks against a brute force: for every normal token, a
// separate recognizer fed the same text pushes the token's bytes and sees
// whether they survive (no trie, no shared walk). Run on real tokenizers and
// real trace documents, on random walks, and around rollback. The token sets
// of single terminal states against a node-by-node oracle (TokenSets.*).
#include "masks/matcher.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "api/grammar_data.h"
#include "masks/canonical_tokenizer.h"
#include "masks/class_masks.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"
#include "pruning/compact.h"
#include "transforms/regular_terminals.h"
#include "tests/support/ir_compile.h"
#include "tests/support/random_grammar.h"
#include "tests/support/test_paths.h"
#include "tests/support/test_scale.h"

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
// the plain lowering when `merge_regular` is false; schemas leniently when
// `lenient` (keywords a grammar cannot enforce dropped).
std::shared_ptr<const CompiledGrammar> CompileFor(const std::string& spec,
                                                  std::shared_ptr<const Vocabulary> vocab,
                                                  bool merge_regular = true, bool lenient = false,
                                                  bool lazy_terminals = false) {
  SchemaOptions schema;
  schema.lenient = lenient;
  absl::StatusOr<grammar::Grammar> ir = internal::ReadGrammarSpec(spec, testing::DataPath(""), schema, nullptr);
  EXPECT_TRUE(ir.ok()) << ir.status();
  auto data = std::make_shared<internal::CompiledGrammarData>();
  grammar::LazyRegexNfas lazy_nfas;  // the merge's lazy tier, when asked for
  if (merge_regular) {
    transforms::RegularTerminalOptions merge_options;
    if (lazy_terminals) merge_options.lazy_nfas = &lazy_nfas;
    absl::StatusOr<grammar::Grammar> merged = transforms::MergeRegularTerminals(*ir, nullptr, merge_options);
    EXPECT_TRUE(merged.ok()) << merged.status();
    ir = *std::move(merged);
  }
  absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(*ir, {}, nullptr, &lazy_nfas);
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
// The first `steps` masks along `rec` on `g` against the brute force; each
// real token must be allowed exactly when the matcher accepts it.
void CheckRecord(const std::shared_ptr<const CompiledGrammar>& g, const TraceRecord& rec, size_t steps,
                 const MatcherOptions& options, const std::string& label, int* checked, int* mismatches) {
  Matcher m(g, options);
  std::vector<uint32_t> words(g->mask_words());
  std::string text;
  for (size_t k = 0; k < rec.tokens.size() && k < steps; ++k) {
    m.ComputeMask(words.data());
    *mismatches += CompareMasks(*g, words, ReferenceMask(*g, text), label + " step " + std::to_string(k));
    ++*checked;
    const TokenId t = rec.tokens[k];
    const bool allowed = Allowed(words, t);
    EXPECT_EQ(allowed, m.AcceptToken(t)) << label << " step " << k;
    if (!allowed) {
      EXPECT_FALSE(rec.valid) << rec.id << ": token " << k << " of a valid document rejected";
      break;
    }
    text += g->vocabulary().token_bytes(t);
  }
}

// How a trace's grammars get their mask classes (CompiledGrammar::mask_classes).
enum class ClassesWhen {
  kDeferred,    // as compiled: computed only once the grammar recurs
  kUpFront,     // computed before the first mask
  kHalfway,     // each record checked twice: before and after they are computed
                // (the second pass reads masks cached under keys of the first)
};

void CheckTrace(const std::string& tokenizer, const std::string& set, size_t docs, size_t steps,
                const MatcherOptions& options = {}, ClassesWhen when = ClassesWhen::kDeferred) {
  if (const char* d = std::getenv("ZAPGRAM_BRUTE_FORCE_DOCS")) docs = std::strtoull(d, nullptr, 10);
  if (const char* s = std::getenv("ZAPGRAM_BRUTE_FORCE_STEPS")) steps = std::strtoull(s, nullptr, 10);
  auto vocab = LoadVocabulary(tokenizer);
  std::map<std::string, std::shared_ptr<const CompiledGrammar>> grammars;
  int checked = 0, mismatches = 0;
  for (const TraceRecord& rec : ReadTrace(tokenizer, set, docs)) {
    auto& g = grammars[rec.grammar];
    if (when == ClassesWhen::kHalfway) g = nullptr;  // each record sees the switch
    if (g == nullptr) {
      g = CompileFor(rec.grammar, vocab);
      if (when == ClassesWhen::kUpFront) g->EnsureMaskClasses();
    }
    if (when == ClassesWhen::kHalfway) {
      EXPECT_TRUE(g->mask_classes().empty()) << rec.id;
      CheckRecord(g, rec, steps, options, rec.id + " (no classes)", &checked, &mismatches);
      g->EnsureMaskClasses();
    }
    CheckRecord(g, rec, steps, options, rec.id, &checked, &mismatches);
  }
  std::printf("%s/%s: %d masks checked against the brute force, %d mismatches\n", tokenizer.c_str(),
              set.c_str(), checked, mismatches);
  EXPECT_GT(checked, 0);
  EXPECT_EQ(mismatches, 0);
}

TEST(MatcherTrace, JsonDocsLlama3) { CheckTrace("llama3", "json-docs", 3, 25); }
TEST(MatcherTrace, JsonDocsQwen) { CheckTrace("qwen2_5", "json-docs", 2, 20); }
TEST(MatcherTrace, JavaLlama3) { CheckTrace("llama3", "java", 1, 25); }
TEST(MatcherTrace, GoQwen) { CheckTrace("qwen2_5", "go", 1, 12); }
TEST(MatcherTrace, SqlQwen) { CheckTrace("qwen2_5", "sql", 3, 12); }
// JSON Schema grammars (schema:PATH): the first maskbench records.
TEST(MatcherTrace, MaskbenchLlama3) { CheckTrace("llama3", "maskbench", 4, 16); }
// Mask classes (BoundedEquivalence) are computed only once a grammar recurs;
// masks are the same with them, without them, and when the cache holds
// masks keyed both ways.
TEST(MatcherTrace, MaskbenchWithClassesUpFront) {
  CheckTrace("llama3", "maskbench", 4, 16, {}, ClassesWhen::kUpFront);
}
TEST(MatcherTrace, MaskbenchClassesComputedHalfway) {
  CheckTrace("llama3", "maskbench", 6, 12, {}, ClassesWhen::kHalfway);
}
TEST(MatcherTrace, JsonDocsClassesComputedHalfway) {
  CheckTrace("llama3", "json-docs", 2, 20, {}, ClassesWhen::kHalfway);
}
// The classes are computed by the matcher that makes a grammar's
// kMaskMissesBeforeClasses-th cache miss, not before; masks stay exact
// across the switch.
TEST(Matcher, MaskClassesComputedOnceTheGrammarRecurs) {
  auto vocab = LoadVocabulary("llama3");
  auto g = CompileFor("schema:jsonschema/maskbench/BFCL_java_10.schema.json", vocab);
  ASSERT_TRUE(g->mask_classes().empty());
  for (uint64_t k = 1; k < CompiledGrammar::kMaskMissesBeforeClasses; ++k) g->NoteCacheMiss();
  EXPECT_TRUE(g->mask_classes().empty());
  std::vector<uint32_t> words(g->mask_words()), again(g->mask_words());
  Matcher m(g);
  ASSERT_TRUE(m.AcceptBytes("{\""));
  m.ComputeMask(words.data());  // a miss: the 256th
  ASSERT_EQ(g->cache_stats().misses, 1u);
  EXPECT_EQ(g->mask_classes().size(), g->grammar().terminals.eager_states());
  EXPECT_EQ(CompareMasks(*g, words, ReferenceMask(*g, "{\""), "the switching mask"), 0);
  // The same state keyed by classes now: found or computed, the same mask.
  Matcher other(g);
  ASSERT_TRUE(other.AcceptBytes("{\""));
  other.ComputeMask(again.data());
  EXPECT_EQ(again, words);
}

// Every `stride`-th MaskBench record's schema compiled as `zapgram bench
// --lenient` compiles it (Grammar::Load, every transform) on `vocab`, and
// handed with the record's id and tokens to `visit`. The one remote $ref is
// skipped (the MaskBench test counts it).
void ForEachFreshSchema(const zapgram::Vocabulary& vocab, size_t stride,
                        absl::FunctionRef<void(const std::string& id, const std::shared_ptr<const CompiledGrammar>& g,
                                               const std::vector<TokenId>& tokens)>
                            visit,
                        bool lazy_terminals = false) {
  std::ifstream in(testing::DataPath("traces/llama3/maskbench.jsonl"));
  LoadOptions options;
  options.schema.lenient = true;
  options.lazy_terminals = lazy_terminals;
  std::string line;
  for (size_t n = 0; std::getline(in, line); ++n) {
    if (n % stride != 0) continue;
    nlohmann::json j = nlohmann::json::parse(line);
    absl::StatusOr<Grammar> grammar = Grammar::Load(j.at("grammar").get<std::string>(),
                                                    testing::DataPath(""), options);
    if (!grammar.ok()) continue;
    absl::StatusOr<zapgram::CompiledGrammar> compiled = zapgram::CompiledGrammar::Compile(*grammar, vocab);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    visit(j.at("id").get<std::string>(), compiled->impl(), j.at("tokens").get<std::vector<TokenId>>());
  }
}

// A document's tokens fed to a fresh matcher, its mask at `per_doc` steps
// spread over the document (the first, then evenly to its end) compared
// with the brute force; stops where a token is refused.
void CheckDocumentMasks(const std::shared_ptr<const CompiledGrammar>& g, const std::string& id,
                        const std::vector<TokenId>& tokens, size_t per_doc, int* checked, int* mismatches) {
  Matcher m(g);
  std::vector<uint32_t> words(g->mask_words());
  std::string text;
  const size_t gap = std::max<size_t>(1, tokens.size() / per_doc);
  for (size_t k = 0; k < tokens.size(); ++k) {
    m.ComputeMask(words.data());
    if (k % gap == 0) {
      *mismatches += CompareMasks(*g, words, ReferenceMask(*g, text), id + " step " + std::to_string(k));
      ++*checked;
    }
    if (!Allowed(words, tokens[k]) || !m.AcceptToken(tokens[k])) break;
    text += g->vocabulary().token_bytes(tokens[k]);
  }
}

// Fresh JSON Schema grammars, every `stride`th MaskBench record: masks at
// `per_doc` steps spread over each document (the first, then evenly to its
// end: keys, strings with maxLength, extra keys, numbers), each against the
// brute force.
struct SampleCounts {
  int records = 0, lazy_grammars = 0, checked = 0, mismatches = 0;
};
SampleCounts MaskbenchSampleAgainstBruteForce(size_t stride, size_t per_doc, bool lazy_terminals) {
  SampleCounts n;
  absl::StatusOr<zapgram::Vocabulary> vocab =
      zapgram::Vocabulary::Load(testing::DataPath("tokenizers/llama3.tokenizer.json"));
  EXPECT_TRUE(vocab.ok()) << vocab.status();
  if (!vocab.ok()) return n;
  ForEachFreshSchema(
      *vocab, stride,
      [&](const std::string& id, const std::shared_ptr<const CompiledGrammar>& g, const std::vector<TokenId>& tokens) {
        ++n.records;
        n.lazy_grammars += g->grammar().terminals.lazy != nullptr;
        CheckDocumentMasks(g, id, tokens, per_doc, &n.checked, &n.mismatches);
      },
      lazy_terminals);
  return n;
}

// Every 64th record (182 records, 180 schemas).
TEST(MatcherTrace, MaskbenchSampleAgreesWithBruteForce) {
  const SampleCounts n = MaskbenchSampleAgainstBruteForce(testing::Scaled<size_t>(64, 512),
                                                          testing::Scaled<size_t>(6, 4), /*lazy_terminals=*/false);
  std::printf("maskbench sample: %d records, %d masks checked against the brute force, %d mismatches\n", n.records,
              n.checked, n.mismatches);
  EXPECT_GE(n.records, 20);
  EXPECT_EQ(n.mismatches, 0);
}

// The same with the lazy tier (LoadOptions::lazy_terminals): large objects
// are terminals determinized as the text visits them, their token sets
// built over states made on demand (split, borrowed, walked with the
// self-loop shortcut); every 96th record.
TEST(MatcherTrace, MaskbenchSampleAgreesWithBruteForceWithLazyTerminals) {
  const SampleCounts n = MaskbenchSampleAgainstBruteForce(testing::Scaled<size_t>(96, 768),
                                                          testing::Scaled<size_t>(6, 3), /*lazy_terminals=*/true);
  std::printf("maskbench sample, lazy tier: %d records (%d with lazy terminals), %d masks checked, %d mismatches\n",
              n.records, n.lazy_grammars, n.checked, n.mismatches);
  EXPECT_GE(n.records, 10);
  EXPECT_GE(n.lazy_grammars, n.records / 4) << "the lazy tier left no terminal lazy";
  EXPECT_EQ(n.mismatches, 0);
}

// A server's life in small: a fresh schema per request, each grammar dropped
// after its document. With small budgets on what the vocabulary shares (the
// mask cache and the token-set store), both stay within them after every
// document while evicting, and masks computed after evictions still equal
// the brute force.
TEST(MatcherTrace, FreshSchemasStayWithinTheVocabularysBudgets) {
  const size_t stride = testing::Scaled<size_t>(16, 128);  // ~725 schemas
  constexpr size_t kMaskBudget = size_t{1} << 20, kSetBudget = size_t{2} << 20, kSteps = 40;
  zapgram::VocabularyOptions vocab_options;
  vocab_options.mask_cache_bytes = kMaskBudget;
  vocab_options.token_set_cache_bytes = kSetBudget;
  absl::StatusOr<zapgram::Vocabulary> vocab =
      zapgram::Vocabulary::Load(testing::DataPath("tokenizers/llama3.tokenizer.json"), vocab_options);
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  const Vocabulary& shared = *vocab->impl();
  int records = 0, masks = 0, checked = 0, mismatches = 0;
  ForEachFreshSchema(*vocab, stride, [&](const std::string& id, const std::shared_ptr<const CompiledGrammar>& g,
                                         const std::vector<TokenId>& tokens) {
    ++records;
    Matcher m(g);
    std::vector<uint32_t> words(g->mask_words());
    std::string text;
    for (size_t k = 0; k < tokens.size() && k < kSteps; ++k) {
      m.ComputeMask(words.data());
      ++masks;
      if (k == kSteps / 2) {
        mismatches += CompareMasks(*g, words, ReferenceMask(*g, text), id);
        ++checked;
      }
      if (!Allowed(words, tokens[k]) || !m.AcceptToken(tokens[k])) break;
      text += g->vocabulary().token_bytes(tokens[k]);
    }
    EXPECT_LE(shared.SharedMaskCache()->stats().bytes, kMaskBudget) << id;
    EXPECT_LE(shared.SharedTokenSets()->stats().bytes, kSetBudget) << id;
  });
  const MaskCacheStats mask_stats = shared.SharedMaskCache()->stats();
  const TokenSetStoreStats set_stats = shared.SharedTokenSets()->stats();
  std::printf("fresh schemas: %d records, %d masks (%d against the brute force, %d mismatches); mask cache "
              "%llu bytes, %llu evictions; token-set store %llu bytes, %llu evictions\n",
              records, masks, checked, mismatches, static_cast<unsigned long long>(mask_stats.bytes),
              static_cast<unsigned long long>(mask_stats.evictions),
              static_cast<unsigned long long>(set_stats.bytes),
              static_cast<unsigned long long>(set_stats.evictions));
  EXPECT_GE(records, 20);
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(mask_stats.evictions, 0u);
  EXPECT_GT(set_stats.evictions, 0u);
}

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

// Counted terminals (grammar/counted_automaton.h): strings of at most 40
// and 300 characters, a minimum, escapes; random walks run into the bounds
// (near them every count is its own class) and stay far from them (the
// unbounded twin's sets answer), with and without the cache.
TEST(MatcherRandomWalk, CountedTerminalsMatchBruteForce) {
  auto vocab = LoadVocabulary("llama3");
  const std::string path = ::testing::TempDir() + "/counted_terminals.gbnf";
  {
    std::ofstream out(path);
    out << "root ::= /\"(?:[^\"\\\\]|\\\\[nu\"]){3,40}\"/ \",\" "
           "/\"(?:[^\"\\\\\\x00-\\x1F]|\\\\u[0-9a-f]{4}){0,300}\"/\n";
  }
  auto g = CompileFor(path, vocab);
  ASSERT_FALSE(g->grammar().terminals.counted.empty()) << "the bounds should make counted terminals";
  int mismatches = 0, masks = 0;
  for (bool cache : {true, false}) {
    MatcherOptions options;
    options.use_cache = cache;
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      ASSERT_NO_FATAL_FAILURE(RandomWalk(g, options, seed, 40, /*require_progress=*/false,
                                         "counted", &masks, &mismatches));
    }
  }
  std::printf("counted terminals: %d masks checked, %d mismatches\n", masks, mismatches);
  EXPECT_EQ(mismatches, 0);
}

// Counted terminals with a body (grammar/counted_automaton.h): a format
// and a word-count pattern under maxLength bounds whose products pass the
// regex budget, so the JSON Schema converter writes them counted. Random
// walks run into the bounds.
TEST(MatcherRandomWalk, CountedBodiesMatchBruteForce) {
  auto vocab = LoadVocabulary("llama3");
  const std::string path = ::testing::TempDir() + "/counted_bodies.schema.json";
  {
    std::ofstream out(path);
    out << R"({"type":"object","properties":{"e":{"type":"string","format":"email","maxLength":254},)"
           R"("w":{"type":"string","pattern":"^(?:\\S+\\s+){0,9}\\S+$","maxLength":1700}},)"
           R"("required":["e","w"],"additionalProperties":false})";
  }
  auto g = CompileFor("schema:" + path, vocab);
  int bodies = 0;
  for (const auto& seg : g->grammar().terminals.counted) bodies += seg.automaton->has_body();
  ASSERT_EQ(bodies, 2) << "both strings should be counted terminals with a body";
  int mismatches = 0, masks = 0;
  for (bool cache : {true, false}) {
    MatcherOptions options;
    options.use_cache = cache;
    for (uint32_t seed = 1; seed <= 2; ++seed) {
      ASSERT_NO_FATAL_FAILURE(RandomWalk(g, options, seed, testing::Scaled(120, 30), /*require_progress=*/false,
                                         "counted bodies", &masks, &mismatches));
    }
  }
  std::printf("counted bodies: %d masks checked, %d mismatches\n", masks, mismatches);
  EXPECT_EQ(mismatches, 0);
}

// The MaskBench schemas whose patterns or formats under a maxLength became
// counted terminals with a body (their products were the slowest compiles
// of the sample, and lenient mode used to drop the maxLength): their dev
// documents, masks along each against the brute force.
TEST(MatcherTrace, MaskbenchCountedBodiesAgreeWithBruteForce) {
  absl::StatusOr<zapgram::Vocabulary> vocab =
      zapgram::Vocabulary::Load(testing::DataPath("tokenizers/llama3.tokenizer.json"));
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  std::ifstream in(testing::DataPath("traces/llama3/maskbench.jsonl"));
  LoadOptions options;
  options.schema.lenient = true;
  const size_t per_doc = testing::Scaled<size_t>(12, 3);
  int with_bodies = 0, checked = 0, mismatches = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("o21073") == std::string::npos && line.find("o62059") == std::string::npos &&
        line.find("o62060") == std::string::npos && line.find("o21053") == std::string::npos) {
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(line);
    absl::StatusOr<Grammar> grammar = Grammar::Load(j.at("grammar").get<std::string>(), testing::DataPath(""), options);
    ASSERT_TRUE(grammar.ok()) << grammar.status();
    absl::StatusOr<zapgram::CompiledGrammar> compiled = zapgram::CompiledGrammar::Compile(*grammar, *vocab);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    const std::shared_ptr<const CompiledGrammar> g = compiled->impl();
    bool body = false;
    for (const auto& seg : g->grammar().terminals.counted) body = body || seg.automaton->has_body();
    if (!body) continue;
    ++with_bodies;
    CheckDocumentMasks(g, j.at("id").get<std::string>(), j.at("tokens").get<std::vector<TokenId>>(), per_doc,
                       &checked, &mismatches);
  }
  std::printf("counted bodies in MaskBench: %d documents, %d masks checked, %d mismatches\n", with_bodies, checked,
              mismatches);
  EXPECT_GE(with_bodies, 4);
  EXPECT_EQ(mismatches, 0);
}

// Lexed (Lark) grammars with the cache off, so that every mask walks
// (masks/lexed_masks.cc): every step of the first tokens of the first
// documents of java, go and sql on Llama 3 against the brute force.
// How much of the lexed traces the brute-force tests walk: the first
// `docs` documents (sql: 4x, they are short), `steps` masks each, scaled
// down under the sanitizers.
constexpr size_t kLexedDocs = testing::Scaled<size_t>(2, 1), kLexedSteps = testing::Scaled<size_t>(12, 4);

TEST(MatcherLexed, UncachedMasksMatchBruteForce) {
  const size_t docs = kLexedDocs, steps = kLexedSteps;
  MatcherOptions uncached;
  uncached.use_cache = false;
  CheckTrace("llama3", "java", docs, steps, uncached);
  CheckTrace("llama3", "go", docs, steps, uncached);
  CheckTrace("llama3", "sql", 4 * docs, steps, uncached);  // short documents
}

// Token classes taken up mid-document (TokenClasses::kOnceRecurring): no
// classes before the grammar's kMaskMissesBeforeTokenClasses-th miss, the
// class masks after; each mask equal to the brute force, and a second
// matcher of the grammar adopts the classes at its first mask.
TEST(MatcherLexed, TokenClassesAdoptedOnceTheGrammarRecurs) {
  auto vocab = LoadVocabulary("llama3");
  const std::vector<TraceRecord> recs = ReadTrace("llama3", "java", 1);
  ASSERT_FALSE(recs.empty());
  const TraceRecord& rec = recs[0];
  auto g = CompileFor(rec.grammar, vocab);
  MatcherOptions options;
  options.token_classes = MatcherOptions::TokenClasses::kOnceRecurring;
  Matcher m(g, options);
  std::vector<uint32_t> words(g->mask_words());
  std::string text;
  int checked = 0, mismatches = 0;
  const size_t steps = std::min<size_t>(rec.tokens.size(), 16);
  for (size_t k = 0; k < steps; ++k) {
    if (k == steps / 2) {
      EXPECT_EQ(g->class_masks_if_built(), nullptr);
      // As if the grammar had served many masks by now, its classes
      // computed step by step on the way but for the last step, which the
      // next miss takes.
      EXPECT_FALSE(g->TokenClassesDue());
      g->AddMissTime(1e6);  // a second of masks computed without classes
      EXPECT_TRUE(g->TokenClassesDue());
      int steps_taken = 1;
      while (g->AdvanceClassMasks(CompiledGrammar::kClassWorkPerStep / 64) == nullptr) ++steps_taken;
      EXPECT_GT(steps_taken, 10);  // bounded steps, not all at once
    }
    m.ComputeMask(words.data());
    EXPECT_EQ(g->class_masks_if_built() != nullptr, k >= steps / 2) << k;
    mismatches += CompareMasks(*g, words, ReferenceMask(*g, text), "step " + std::to_string(k));
    ++checked;
    ASSERT_TRUE(m.AcceptToken(rec.tokens[k])) << k;
    text += vocab->token_bytes(rec.tokens[k]);
  }
  EXPECT_EQ(mismatches, 0) << checked << " masks";
  Matcher second(g, options);
  second.ComputeMask(words.data());
  EXPECT_EQ(CompareMasks(*g, words, ReferenceMask(*g, ""), "second matcher"), 0);
}

// Uncached masks along the first `docs` documents of `set` on Llama 3, each
// walked twice over one compiled grammar (set up by `configure` once
// compiled), against the brute force; returns the grammar.
std::shared_ptr<const CompiledGrammar> CheckTwoPasses(
    const char* set, size_t docs, size_t steps, const std::function<void(const CompiledGrammar&)>& configure,
    int* checked, int* mismatches) {
  auto vocab = LoadVocabulary("llama3");
  MatcherOptions uncached;
  uncached.use_cache = false;
  std::shared_ptr<const CompiledGrammar> g;
  const std::vector<TraceRecord> recs = ReadTrace("llama3", set, docs);
  for (int pass = 0; pass < 2; ++pass) {
    for (const TraceRecord& rec : recs) {
      if (g == nullptr) {
        g = CompileFor(rec.grammar, vocab);
        configure(*g);
      }
      CheckRecord(g, rec, steps, uncached, rec.id + " pass " + std::to_string(pass), checked, mismatches);
    }
  }
  EXPECT_GT(*checked, 0);
  EXPECT_EQ(*mismatches, 0);
  return g;
}

// The closure memo (masks/closure_memo.h): the second pass is served by the
// closures the first kept (and a later document by the earlier ones').
TEST(MatcherLexed, ClosureMemoMatchesBruteForce) {
  const size_t docs = kLexedDocs, steps = kLexedSteps;
  for (const char* set : {"java", "go", "sql"}) {
    int checked = 0, mismatches = 0;
    auto g = CheckTwoPasses(set, std::string(set) == "sql" ? 4 * docs : docs, steps, [](const CompiledGrammar&) {},
                            &checked, &mismatches);
    std::printf("%s: %d masks checked, %d mismatches, %llu closures found kept\n", set, checked, mismatches,
                static_cast<unsigned long long>(g->closure_memo().found()));
    EXPECT_GT(g->closure_memo().found(), 0u) << set << ": the second pass should find kept closures";
  }
}

// Partial masks (masks/partial_masks.h): along whole java, go and sql
// documents, a cached matcher (whose misses under a cut key that points
// deeper start from the cut key's partial and walk its deep roots only)
// against an uncached one, mask by mask; the masks that came from a partial
// are also checked against the brute force (the first few of each set).
// Marking no history deep fails here (go: masks short of the deep roots'
// tokens), and so does dropping the deep roots' part from the mask.
struct PartialStats {
  int compared = 0, mismatches = 0, replays_checked = 0;
  uint64_t found = 0, evictions = 0;
};

// One set's documents for PartialMasksMatchBruteForce, the partials kept
// within `budget_bytes`; with `classes`, the cached matcher walks the token
// classes' representatives (as the public API does for lexed grammars), so
// its partials are kept by the class grammar, over its trie.
PartialStats CheckPartials(const char* set, size_t budget_bytes, bool classes = false) {
  const size_t docs = testing::Scaled<size_t>(4, 2), max_steps = testing::Scaled<size_t>(600, 160),
               brute_force_per_set = testing::Scaled<size_t>(4, 1);
  auto vocab = LoadVocabulary("llama3");
  MatcherOptions uncached;
  uncached.use_cache = false;
  std::shared_ptr<const CompiledGrammar> g;
  const CompiledGrammar* walked = nullptr;  // whose partials the cached matcher keeps
  PartialStats stats;
  size_t steps = 0;
  for (const TraceRecord& rec : ReadTrace("llama3", set, std::string(set) == "sql" ? 4 * docs : docs)) {
    if (g == nullptr) {
      g = CompileFor(rec.grammar, vocab);
      walked = g.get();
      if (classes) {
        EXPECT_NE(g->class_masks(), nullptr) << set;
        if (g->class_masks() == nullptr) return stats;
        walked = g->class_masks()->representatives.get();
      }
      walked->partial_masks().set_budget_bytes(budget_bytes);
    }
    MatcherOptions cached_options;
    cached_options.token_classes =
        classes ? MatcherOptions::TokenClasses::kNow : MatcherOptions::TokenClasses::kOff;
    Matcher cached(g, cached_options), reference(g, uncached);
    std::vector<uint32_t> got(g->mask_words()), want(g->mask_words());
    std::string text;
    for (size_t k = 0; k < rec.tokens.size() && steps < max_steps; ++k, ++steps) {
      const uint64_t replays = walked->partial_masks().found();
      cached.ComputeMask(got.data());
      reference.ComputeMask(want.data());
      const std::string label = rec.id + " step " + std::to_string(k);
      stats.mismatches += CompareMasks(*g, got, want, label);
      ++stats.compared;
      if (walked->partial_masks().found() > replays && stats.replays_checked < static_cast<int>(brute_force_per_set)) {
        stats.mismatches += CompareMasks(*g, got, ReferenceMask(*g, text), label + " (from a partial)");
        ++stats.replays_checked;
      }
      const TokenId t = rec.tokens[k];
      if (!Allowed(got, t)) break;
      EXPECT_TRUE(cached.AcceptToken(t)) << label;
      EXPECT_TRUE(reference.AcceptToken(t)) << label;
      text += g->vocabulary().token_bytes(t);
    }
  }
  const PartialMasks& partials = walked->partial_masks();
  stats.found = partials.found();
  stats.evictions = partials.evictions();
  std::printf("%s (budget %zu KiB%s): %d masks compared with uncached ones, %llu from partials (%d of them against "
              "the brute force), %zu partials kept, %zu distinct words, %llu evictions; %d mismatches\n",
              set, budget_bytes >> 10, classes ? ", token classes" : "", stats.compared,
              static_cast<unsigned long long>(stats.found), stats.replays_checked, partials.size(),
              partials.distinct_words(), static_cast<unsigned long long>(stats.evictions), stats.mismatches);
  EXPECT_LE(partials.bytes(), budget_bytes) << set;
  return stats;
}

TEST(MatcherLexed, PartialMasksMatchBruteForce) {
  for (const char* set : {"go", "java", "sql"}) {
    const PartialStats stats = CheckPartials(set, size_t{32} << 20);
    EXPECT_EQ(stats.mismatches, 0) << set;
    if (std::string(set) != "sql") {
      EXPECT_GT(stats.replays_checked, 0) << set << ": some masks should come from partials";
    }
  }
  // A budget of ~30 masks' words: cleared along the way, partials found
  // between clears, masks unchanged.
  const PartialStats tiny = CheckPartials("go", size_t{512} << 10);
  EXPECT_EQ(tiny.mismatches, 0);
  EXPECT_GT(tiny.evictions, 0u);
  EXPECT_GT(tiny.found, 0u);
  // Over token classes: the partials are the class grammar's.
  const PartialStats classes = CheckPartials("go", size_t{32} << 20, /*classes=*/true);
  EXPECT_EQ(classes.mismatches, 0);
  EXPECT_GT(classes.replays_checked, 0);
}

// The lexed caches' budgets (closure memo, subtree sets) with eviction: at
// tiny budgets both are cleared several times along go and java documents
// walked twice, ids held from before a clear must find nothing rather than
// another set's steps (reusing ids after a clear fails here: 4 go
// mismatches), and masks stay equal to the brute force.
TEST(MatcherLexed, TinyLexedBudgetsEvictAndStayExact) {
  // 12 steps even under the sanitizers: enough for both caches to fill
  // their budgets on go (4 steps of one document did not: no clear at all).
  const size_t docs = kLexedDocs, steps = 12;
  const size_t memo_budget = size_t{4} << 10, subtree_budget = size_t{256} << 10;
  for (const char* set : {"java", "go"}) {
    int checked = 0, mismatches = 0;
    auto g = CheckTwoPasses(
        set, docs, steps,
        [&](const CompiledGrammar& compiled) {
          compiled.closure_memo().set_budget_bytes(memo_budget);
          compiled.set_subtree_budget_bytes(subtree_budget);
        },
        &checked, &mismatches);
    std::printf("%s: %d masks checked, %d mismatches; memo: %llu found, %llu evictions; subtree sets: %llu evictions\n",
                set, checked, mismatches, static_cast<unsigned long long>(g->closure_memo().found()),
                static_cast<unsigned long long>(g->closure_memo().evictions()),
                static_cast<unsigned long long>(g->subtree_evictions()));
    EXPECT_LE(g->closure_memo().bytes(), memo_budget);
    EXPECT_GT(g->closure_memo().evictions(), 0u) << set;
    EXPECT_GT(g->closure_memo().found(), 0u) << set << ": steps should still be found between clears";
    EXPECT_GT(g->subtree_evictions(), 0u) << set;
  }
}

// Inside comments (an ignored token whose lexer state loops on almost every
// byte: the lexed sets' whole-subtree shortcut settles most of the trie):
// uncached masks at positions of java and go documents that end inside a
// block or line comment, against the brute force.
TEST(MatcherLexed, MasksInsideCommentsMatchBruteForce) {
  const int per_set = testing::Scaled(4, 1);
  auto vocab = LoadVocabulary("llama3");
  MatcherOptions uncached;
  uncached.use_cache = false;
  int checked = 0, mismatches = 0;
  for (const char* set : {"java", "go"}) {
    std::shared_ptr<const CompiledGrammar> g;
    int found = 0;
    for (const TraceRecord& rec : ReadTrace("llama3", set, 20)) {
      if (found == per_set) break;
      if (g == nullptr) g = CompileFor(rec.grammar, vocab);
      Matcher m(g, uncached);
      std::vector<uint32_t> words(g->mask_words());
      std::string text;
      for (size_t k = 0; k < rec.tokens.size(); ++k) {
        const size_t open = text.rfind("/*"), line = text.rfind('\n'), slashes = text.rfind("//");
        const bool in_block = open != std::string::npos && text.find("*/", open + 2) == std::string::npos;
        const bool in_line = slashes != std::string::npos && (line == std::string::npos || slashes > line);
        if (in_block || in_line) {
          m.ComputeMask(words.data());
          mismatches += CompareMasks(*g, words, ReferenceMask(*g, text), rec.id + " step " + std::to_string(k));
          ++checked;
          ++found;
          break;  // one per document
        }
        if (!m.AcceptToken(rec.tokens[k])) break;
        text += vocab->token_bytes(rec.tokens[k]);
      }
    }
  }
  std::printf("masks inside comments: %d checked, %d mismatches\n", checked, mismatches);
  EXPECT_GE(checked, 2 * per_set);
  EXPECT_EQ(mismatches, 0);
}

// SynCode's python.lark with Lark's Indenter (parser/indenter.h): masks
// against the brute force where the Indenter decides: right after a newline
// (the next line's indentation being read: an indent, dedents, a level
// between two), inside brackets (newlines dropped), in or after a comment
// (comments fold into the newline token), and the first steps of each
// document. With the cache on (keys carry the indentation state), and a
// second pass with it off. ZAPGRAM_PYTHON_DOCS / ZAPGRAM_PYTHON_PER_KIND
// widen the sample for long offline runs.
enum PythonPosition { kAfterNewline, kInBrackets, kAfterComment, kStart, kNumPositions };

PythonPosition ClassifyPython(const std::string& text, size_t step) {
  const size_t line = text.rfind('\n');
  if (line != std::string::npos && text.find_first_not_of(" \t", line + 1) == std::string::npos) {
    // The last line so far is blank: after a comment when the line before
    // ends in one.
    const size_t prev = line == 0 ? std::string::npos : text.rfind('\n', line - 1);
    const std::string before = text.substr(prev == std::string::npos ? 0 : prev + 1,
                                           line - (prev == std::string::npos ? 0 : prev + 1));
    return before.find('#') != std::string::npos ? kAfterComment : kAfterNewline;
  }
  if (line != std::string::npos && text.find('#', line) != std::string::npos) return kAfterComment;
  int depth = 0;
  for (char c : text) depth += (c == '(' || c == '[' || c == '{') - (c == ')' || c == ']' || c == '}');
  if (depth > 0) return kInBrackets;
  return step < 8 ? kStart : kNumPositions;
}

void CheckPython(const MatcherOptions& options, size_t docs, int per_kind, const char* label) {
  if (const char* d = std::getenv("ZAPGRAM_PYTHON_DOCS")) docs = std::strtoull(d, nullptr, 10);
  if (const char* k = std::getenv("ZAPGRAM_PYTHON_PER_KIND")) per_kind = std::atoi(k);
  auto vocab = LoadVocabulary("llama3");
  std::shared_ptr<const CompiledGrammar> g;
  int checked[kNumPositions] = {}, mismatches = 0, eos_checked = 0, rejected_valid = 0;
  for (const TraceRecord& rec : ReadTrace("llama3", "python", docs)) {
    if (g == nullptr) g = CompileFor(rec.grammar, vocab);
    ASSERT_TRUE(g->grammar().lexer->indenter.on());
    Matcher m(g, options);
    std::vector<uint32_t> words(g->mask_words());
    std::string text;
    int taken[kNumPositions] = {};
    for (size_t k = 0; k <= rec.tokens.size(); ++k) {
      const PythonPosition kind = ClassifyPython(text, k);
      const bool at_end = k == rec.tokens.size();
      if (at_end || (kind != kNumPositions && taken[kind] < per_kind)) {
        m.ComputeMask(words.data());
        mismatches += CompareMasks(*g, words, ReferenceMask(*g, text),
                                   std::string(label) + " " + rec.id + " step " + std::to_string(k));
        if (at_end) {
          ++eos_checked;
          break;
        }
        ++taken[kind];
        ++checked[kind];
      }
      if (!m.AcceptToken(rec.tokens[k])) {
        // Verdicts against the labels: tests/data/lark_data_test.cc (one
        // valid-labelled document, a docstring-only class body, is rejected
        // as Debian's Lark rejects it).
        rejected_valid += rec.valid;
        break;
      }
      text += vocab->token_bytes(rec.tokens[k]);
    }
  }
  std::printf("python (%s): %d documents labelled valid rejected on the way\n", label, rejected_valid);
  std::printf("python (%s): masks against the brute force after a newline %d, in brackets %d, after a "
              "comment %d, at the start %d, at the end %d; %d mismatches\n",
              label, checked[kAfterNewline], checked[kInBrackets], checked[kAfterComment], checked[kStart],
              eos_checked, mismatches);
  EXPECT_GT(checked[kAfterNewline], 0);
  EXPECT_GT(checked[kInBrackets], 0);
  EXPECT_GT(checked[kAfterComment], 0);
  EXPECT_EQ(mismatches, 0);
}

TEST(MatcherPython, IndentationMasksMatchBruteForce) {
  CheckPython({}, testing::Scaled<size_t>(3, 1), testing::Scaled(2, 1), "cached");
}

TEST(MatcherPython, UncachedIndentationMasksMatchBruteForce) {
  MatcherOptions uncached;
  uncached.use_cache = false;
  CheckPython(uncached, testing::Scaled<size_t>(2, 1), testing::Scaled(2, 1), "uncached");
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
  // A counted terminal (grammar/counted_automaton.h): its states are numbered
  // but not stored; each has a class.
  const parser::TerminalTable& t = g->grammar().terminals;
  ASSERT_FALSE(t.counted.empty());
  ASSERT_GT(t.num_states(), 500u);
  std::vector<uint32_t> distinct;
  for (uint32_t s = 0; s < t.num_states(); ++s) distinct.push_back(g->MaskClass(s));
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  // dead, the quote, the unbounded twin's few states ("far from the end"),
  // the last 5 counts, the end: a few, not 500.
  EXPECT_LE(distinct.size(), 20u);
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

// Cut cache keys (MatcherOptions::key_sets): a key spells only the newest
// kept sets, so states at any depth with the same top share it; a mask whose
// walk consulted a group below the cut (here: closing tokens such as "]]",
// "}}}" that reach under the top levels) must be cached under the whole
// state's key instead. Deep and shallow states of one shared cache, in an
// order that stores shallow masks first, must all equal the brute force;
// and deep states must hit the cut keys. (Storing every mask under its cut
// key fails this test: "[[" then "[[[[[[[[[[" with key_sets 0 reuses a mask
// that refuses "]]]".)
TEST(MatcherCutKeys, DeepStatesShareMasksExactly) {
  auto vocab = LoadVocabulary("llama3");
  const std::vector<std::string> prefixes = {
      "[[", "[[[[[[[[[[", "[[[", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "[[[1", "[[[[[[[[[[[[[[1",
      "{\"a\": {\"a\": ", "{\"a\": [{\"a\": [{\"a\": [{\"a\": [{\"a\": [", "{\"a\": [1", "{\"a\": [{\"a\": [{\"a\": [{\"a\": [1",
      "[{}", "[[[[[[[[[{\"a\": {\"b\": {}", "[{\"a\": [[[[{\"b\": \"x\""};
  for (uint32_t key_sets : {0u, 1u, 3u}) {
    auto g = CompileFor("builtin:json", vocab);
    MatcherOptions options;
    options.key_sets = key_sets;
    std::vector<uint32_t> words(g->mask_words());
    int mismatches = 0;
    for (int round = 0; round < 2; ++round) {  // the second round answers from the cache
      for (const std::string& prefix : prefixes) {
        Matcher m(g, options);
        ASSERT_TRUE(m.AcceptBytes(prefix)) << prefix;
        m.ComputeMask(words.data());
        mismatches += CompareMasks(*g, words, ReferenceMask(*g, prefix),
                                   "key_sets " + std::to_string(key_sets) + " after " + prefix);
      }
    }
    EXPECT_EQ(mismatches, 0) << "key_sets " << key_sets;
    const MaskCacheStats stats = g->cache_stats();
    EXPECT_GE(stats.hits, prefixes.size()) << "key_sets " << key_sets;
    EXPECT_LT(stats.entries, 2 * prefixes.size()) << "key_sets " << key_sets;
  }
}

// A mask that reads below the cut (after a value, tokens such as `]]]` close
// several levels) is stored under a key spelled as far down as its walk
// read, and the cut key points there: states that differ only below that
// share the entry, so each new depth past the walk's reach is a hit. Masks
// equal brute force at every depth.
TEST(MatcherCutKeys, MasksReadingBelowTheCutAreSharedAcrossDepths) {
  auto vocab = LoadVocabulary("llama3");
  auto g = CompileFor("builtin:json", vocab);
  std::vector<uint32_t> words(g->mask_words());
  int mismatches = 0;
  uint64_t hits_before = 0, entries_before = 0;
  for (int depth = 12; depth <= 40; ++depth) {
    const std::string prefix = std::string(depth, '[') + "1";
    Matcher m(g);
    ASSERT_TRUE(m.AcceptBytes(prefix));
    m.ComputeMask(words.data());
    mismatches += CompareMasks(*g, words, ReferenceMask(*g, prefix), "depth " + std::to_string(depth));
    const MaskCacheStats stats = g->cache_stats();
    if (depth > 20) {  // past the reach of the longest closing token
      EXPECT_EQ(stats.hits, hits_before + 1) << depth;
      EXPECT_EQ(stats.entries, entries_before) << depth;
    }
    hits_before = stats.hits;
    entries_before = stats.entries;
  }
  EXPECT_EQ(mismatches, 0);
}

// Deep nesting costs the cache no more than shallow nesting: 2,000 levels of
// JSON arrays and objects, a mask before each byte; with cut keys the states
// of one shape at different depths share entries (the whole-state keys grew
// with depth, one entry per level, ~100 MB of keys at 5,000 levels).
TEST(MatcherCutKeys, DeepNestingKeepsTheCacheSmall) {
  auto vocab = LoadVocabulary("llama3");
  auto g = CompileFor("builtin:json", vocab);
  std::string doc;
  for (int i = 0; i < 2000; ++i) doc += i % 2 ? "[" : "{\"a\": ";
  doc += "1";
  for (int i = 2000; i-- > 0;) doc += i % 2 ? "]" : "}";
  Matcher m(g);
  std::vector<uint32_t> words(g->mask_words());
  for (char c : doc) {
    m.ComputeMask(words.data());
    ASSERT_TRUE(m.AcceptBytes(std::string(1, c)));
  }
  EXPECT_TRUE(m.IsAccepting());
  const MaskCacheStats stats = g->cache_stats();
  EXPECT_LT(stats.entries, 200u);
  EXPECT_LT(stats.bytes, size_t{8} << 20);
  EXPECT_GT(stats.hits, doc.size() * 9 / 10);
}

// ---------------------------------------------------------------------------
// Token sets of one terminal state (CompiledGrammar::BuildTokenSets) against
// an oracle that classifies every trie node on its own: the node's whole byte
// string is stepped through the terminal table from the state, with no
// shared walk, no subtree shortcut and no bitset. A token is accepted when
// the DFA stays live through all its bytes; a node is an uncertain root when
// the DFA dies (or the lazy DFA overflows) exactly on its last byte after
// passing an accepting state strictly before it (at depth 1 or more).
// The fast build (whole subtrees settled at once where the state loops on
// their bytes) must also equal the node-by-node build exactly, storage form
// included.

struct OracleSets {
  std::vector<TokenId> accepted;  // sorted
  std::vector<uint32_t> roots;    // DFS order
};

OracleSets ClassifyNodesOneByOne(const CompiledGrammar& g, uint32_t state) {
  const parser::TerminalTable& t = g.grammar().terminals;
  constexpr uint32_t kOverflow = parser::TerminalTable::kOverflow;
  const TokenTrie& trie = g.trie();
  OracleSets out;
  for (uint32_t i = TokenTrie::kRoot + 1; i < trie.nodes().size(); ++i) {
    const std::string path = g.NodeString(i);
    uint32_t s = state;
    bool ended = false, live = true;
    for (size_t k = 0; k < path.size() && live; ++k) {
      if (k >= 1 && t.accepting(s)) ended = true;
      const uint32_t next = s == 0 ? 0 : t.Step(s, static_cast<uint8_t>(path[k]));
      if (next == 0 || next == kOverflow) {
        live = false;
        if (k + 1 == path.size() && (ended || next == kOverflow)) out.roots.push_back(i);
      }
      s = next;
    }
    if (live) {
      for (TokenId id : trie.TokensAt(i)) out.accepted.push_back(id);
    }
  }
  std::sort(out.accepted.begin(), out.accepted.end());
  return out;
}

std::vector<TokenId> AcceptedIds(const StateTokenSets& sets) {
  std::vector<TokenId> ids = sets.accepted_ids;
  for (size_t w = 0; w < sets.accepted_words.size(); ++w) {
    for (uint32_t b = 0; b < 32; ++b) {
      if ((sets.accepted_words[w] >> b) & 1u) ids.push_back(static_cast<TokenId>(32 * w + b));
    }
  }
  return ids;  // sorted: the list is sorted and a grammar's sets use one form
}

// The accepted ids of a state's sets, a split state's core included.
std::vector<TokenId> AllAcceptedIds(const StateTokenSets& sets) {
  std::vector<TokenId> ids = AcceptedIds(sets);
  if (sets.core != nullptr) {
    const std::vector<TokenId> core = AcceptedIds(*sets.core);
    ids.insert(ids.end(), core.begin(), core.end());
    std::sort(ids.begin(), ids.end());
  }
  return ids;
}

// Checks `state` of `g` three ways; returns how many tokens the state accepts.
size_t CheckStateSets(const CompiledGrammar& g, uint32_t state, const std::string& where) {
  const StateTokenSets fast = g.BuildTokenSets(state, /*use_subtrees=*/true);
  const StateTokenSets slow = g.BuildTokenSets(state, /*use_subtrees=*/false);
  EXPECT_EQ(fast.accepted_words, slow.accepted_words) << where << " state " << state;
  EXPECT_EQ(fast.accepted_ids, slow.accepted_ids) << where << " state " << state;
  EXPECT_EQ(fast.uncertain_roots, slow.uncertain_roots) << where << " state " << state;
  EXPECT_TRUE(fast.accepted_words.empty() || fast.accepted_ids.empty()) << where;
  const OracleSets oracle = ClassifyNodesOneByOne(g, state);
  const std::vector<TokenId> accepted = AcceptedIds(fast);
  EXPECT_EQ(accepted, oracle.accepted) << where << " state " << state;
  EXPECT_EQ(fast.uncertain_roots, oracle.roots) << where << " state " << state;
  // Stored as a list exactly when the list is smaller than the bitset.
  EXPECT_EQ(fast.accepted_words.empty(), accepted.size() < g.mask_words()) << where << " state " << state;
  return accepted.size();
}

// Split builds (token_sets.h, TerminalCore): the core's sets plus the walks
// past its exits give the oracle's sets, each token once. Returns whether
// `state` has a core.
bool CheckSplitSets(const CompiledGrammar& g, uint32_t state, const std::string& where) {
  const parser::TerminalTable& t = g.grammar().terminals;
  const TerminalCore core = SpellTerminalCore(t, state);
  if (core.empty()) return false;
  EXPECT_EQ(core.states[0], state) << where;
  auto core_sets = std::make_shared<const StateTokenSets>(BuildCoreTokenSets(g.trie(), t, core, g.mask_words()));
  // The core walk's shortcuts change nothing: the same sets as stepping
  // every node, exits included.
  const StateTokenSets core_slow = BuildCoreTokenSets(g.trie(), t, core, g.mask_words(), /*use_subtrees=*/false);
  EXPECT_EQ(core_sets->accepted_words, core_slow.accepted_words) << where << " core of " << state;
  EXPECT_EQ(core_sets->accepted_ids, core_slow.accepted_ids) << where << " core of " << state;
  EXPECT_EQ(core_sets->uncertain_roots, core_slow.uncertain_roots) << where << " core of " << state;
  EXPECT_EQ(core_sets->core_exits, core_slow.core_exits) << where << " core of " << state;
  const StateTokenSets split = FinishSplitTokenSets(g.trie(), t, core, core_sets, g.mask_words());
  EXPECT_EQ(split.core, core_sets) << where;
  const std::vector<TokenId> accepted = AllAcceptedIds(split);
  std::vector<uint32_t> roots = core_sets->uncertain_roots;
  roots.insert(roots.end(), split.uncertain_roots.begin(), split.uncertain_roots.end());
  std::sort(roots.begin(), roots.end());
  OracleSets oracle = ClassifyNodesOneByOne(g, state);
  std::sort(oracle.roots.begin(), oracle.roots.end());
  EXPECT_EQ(accepted, oracle.accepted) << where << " split state " << state;
  EXPECT_EQ(roots, oracle.roots) << where << " split state " << state;
  return true;
}

// Borrowed builds (token_sets.h, BorrowTokenSets): a state read off the
// sets of the state most bytes take it to equals the oracle. Returns whether
// `state` has such a base.
bool CheckBorrowedSets(const CompiledGrammar& g, uint32_t state, const std::string& where) {
  const parser::TerminalTable& t = g.grammar().terminals;
  const uint32_t step = MajorityStep(t, state);
  if (step == 0) return false;
  const uint32_t base = step < g.mask_classes().size() ? g.mask_classes()[step] : step;  // lazy: its own class
  if (base == state || MajorityStep(t, base) != base) return false;
  const StateTokenSets borrowed =
      BorrowTokenSets(g.trie(), t, g.mask_classes(), state, base, g.TokenSets(base), g.mask_words());
  OracleSets oracle = ClassifyNodesOneByOne(g, state);
  std::sort(oracle.roots.begin(), oracle.roots.end());
  EXPECT_EQ(AcceptedIds(borrowed), oracle.accepted) << where << " borrowing state " << state;
  EXPECT_EQ(borrowed.uncertain_roots, oracle.roots) << where << " borrowing state " << state;
  EXPECT_EQ(borrowed.accepted_words.empty(), oracle.accepted.size() < g.mask_words()) << where;
  return true;
}

// A vocabulary over the random grammars' alphabet (a, b, c, d, é, stray
// halves of é): every single byte of it plus random strings up to 8 bytes,
// so subtrees are deep and some share bytes a state loops on.
std::shared_ptr<const Vocabulary> AlphabetVocabulary(std::mt19937_64& rng) {
  std::vector<std::string> tokens;
  for (uint8_t b : zapgram::testing::AlphabetBytes()) tokens.push_back(std::string(1, static_cast<char>(b)));
  for (const char* t : {"aaaaaa", "abababab", "aaaab", "abcabc", "cccc"}) tokens.push_back(t);
  while (tokens.size() < 400) {
    std::string t = zapgram::testing::RandomString(rng, 8);
    if (!t.empty()) tokens.push_back(std::move(t));
  }
  tokens.push_back("");  // EOS
  absl::StatusOr<Vocabulary> v = Vocabulary::FromTokenBytes(tokens, {static_cast<TokenId>(tokens.size() - 1)});
  EXPECT_TRUE(v.ok()) << v.status();
  return std::make_shared<const Vocabulary>(*std::move(v));
}

TEST(TokenSets, SubtreeShortcutMatchesNodeWalkOnRandomGrammars) {
  std::mt19937_64 rng(0x70CE'5E75ull);
  int grammars = 0, states = 0, loaded_states = 0, split_states = 0, borrowing_states = 0;
  for (int round = 0; round < 120; ++round) {
    auto vocab = AlphabetVocabulary(rng);
    const grammar::Grammar ir = zapgram::testing::RandomGrammar(rng);
    // Plain lowering and the merged form (whole regular rules as one DFA,
    // whose states loop more).
    absl::StatusOr<parser::FlatGrammar> flat =
        round % 2 == 0 ? parser::BuildFlatGrammar(ir) : zapgram::testing::CompileIr(ir);
    ASSERT_TRUE(flat.ok()) << flat.status();  // an empty language compiles too
    auto shared_flat = std::make_shared<const parser::FlatGrammar>(*std::move(flat));
    absl::StatusOr<std::shared_ptr<const CompiledGrammar>> g = CompiledGrammar::Build(shared_flat, vocab);
    ASSERT_TRUE(g.ok()) << g.status();
    (*g)->EnsureMaskClasses();  // the borrowing builds read them
    ++grammars;
    for (uint32_t state = 0; state < shared_flat->terminals.eager_states(); ++state) {
      const size_t accepted = CheckStateSets(**g, state, "round " + std::to_string(round));
      split_states += CheckSplitSets(**g, state, "round " + std::to_string(round));
      borrowing_states += CheckBorrowedSets(**g, state, "round " + std::to_string(round));
      ++states;
      loaded_states += accepted >= 20;
      if (::testing::Test::HasFailure()) return;
    }
  }
  std::printf("token sets: %d random grammars, %d states (%d accepting 20+ tokens, %d split, %d borrowing)\n",
              grammars, states, loaded_states, split_states, borrowing_states);
  EXPECT_GT(grammars, 60);
  EXPECT_GT(loaded_states, 50);
  EXPECT_GT(split_states, 5);
  EXPECT_GT(borrowing_states, 5);
}

// Real grammars with Llama 3: builtin:json and MaskBench schemas, a spread of
// their states (those of an open JSON string among them: the large sets).
TEST(TokenSets, SubtreeShortcutMatchesOracleOnJsonGrammars) {
  auto vocab = LoadVocabulary("llama3");
  size_t largest = 0;
  int checked = 0, mid_sized = 0, split_checked = 0, borrowing_checked = 0;
  for (const char* spec : {"builtin:json", "schema:jsonschema/maskbench/BFCL_java_10.schema.json",
                           "schema:jsonschema/maskbench/Github_easy---o10008.schema.json",
                           "schema:jsonschema/maskbench/Snowplow---sp_298_Normalized.schema.json",
                           "schema:jsonschema/maskbench/Snowplow---sp_116_Normalized.schema.json"}) {
    if (std::string(spec).starts_with("schema:") &&
        !std::ifstream(testing::DataPath(std::string(spec).substr(7))).good()) {
      continue;  // not in this data snapshot
    }
    auto g = CompileFor(spec, vocab);
    g->EnsureMaskClasses();  // the borrowing builds below read them
    // The states of an open string, then an even spread of the others.
    std::vector<uint32_t> states;
    RecognizerOptions options;
    parser::Recognizer r = pruning::MakeRecognizer(&g->grammar(), options);
    r.FeedBytes(std::string(spec) == "builtin:json" ? "[\"ab" : "{\"");
    r.CollectScanStates(&states);
    const uint32_t eager = g->grammar().terminals.eager_states();
    for (uint32_t s = 1; s < eager; s += std::max<uint32_t>(1, eager / 12)) states.push_back(s);
    // States too large to share whole that have a core (a string value
    // fused with the names after it): split, against the oracle.
    int split = 0;
    for (uint32_t s = 1; s < eager && split < 6; ++s) {
      if (g->grammar().terminals.live_bytes(s).count() < kSharedSetsMinLiveBytes ||
          !CanonicalSubautomaton(g->grammar().terminals, s).empty()) {
        continue;
      }
      split += CheckSplitSets(*g, s, spec);
    }
    split_checked += split;
    // States that read their sets off another's (a key that must not be one
    // of the schema's names, where the schema allows other properties).
    for (uint32_t s = 1, checked_here = 0; s < eager && checked_here < 6; ++s) {
      if (g->mask_classes()[s] != s || g->grammar().terminals.live_bytes(s).count() < kSharedSetsMinLiveBytes) continue;
      const bool borrowing = CheckBorrowedSets(*g, s, spec);
      checked_here += borrowing;
      borrowing_checked += borrowing;
    }
    for (uint32_t state : states) {
      if (state >= eager) continue;
      const size_t accepted = CheckStateSets(*g, state, spec);
      largest = std::max(largest, accepted);
      // Gathered in a bitset, stored as a list (matcher.cc, AcceptedTokens).
      mid_sized += accepted >= 512 && accepted < g->mask_words();
      ++checked;
    }
  }
  std::printf("token sets: %d JSON states checked (%d with 512..4007 ids, %d split, %d borrowing), largest "
              "accepts %zu tokens\n",
              checked, mid_sized, split_checked, borrowing_checked, largest);
  EXPECT_GT(borrowing_checked, 0) << "no state reading its sets off another's was checked";
  EXPECT_GT(split_checked, 2) << "no string value fused with its followers was checked";
  EXPECT_GT(largest, 100000u) << "no open-string state was checked";
  EXPECT_GT(mid_sized, 0) << "no state stored as a list from the bitset was checked";
}

// Keys under patternProperties: a key that must contain a 32-digit hex run
// (a counter the DFA moves along at most letters; its core is grown along
// the whole run, SpellTerminalCore, and the escape depth counts the letters
// left to the end of the run), or that must contain some letters (the DFA
// moves between string bodies). Every state with a core, split, against the
// oracle: the core walk's escape shortcut (token_sets.cc) settles such
// subtrees whole.
TEST(TokenSets, KeyPatternCoresMatchOracle) {
  auto vocab = LoadVocabulary("llama3");
  int split = 0, grown = 0;
  for (const char* spec : {"schema:jsonschema/maskbench/Github_trivial---o78129.schema.json",
                           "schema:jsonschema/maskbench/Handwritten---oneofpr2.schema.json"}) {
    if (!std::ifstream(testing::DataPath(std::string(spec).substr(7))).good()) continue;
    auto g = CompileFor(spec, vocab, /*merge_regular=*/true, /*lenient=*/true);
    const parser::TerminalTable& t = g->grammar().terminals;
    int here = 0;
    for (uint32_t s = 1; s < t.eager_states() && here < 40; ++s) {
      if (t.live_bytes(s).count() <= 64) continue;  // string bodies, not the middle of a character
      const bool has_core = CheckSplitSets(*g, s, spec);
      here += has_core;
      // Grown past the near core's few states: the whole 32-state run.
      grown += has_core && SpellTerminalCore(t, s).states.size() > 32;
      if (::testing::Test::HasFailure()) return;
    }
    split += here;
  }
  if (split == 0) GTEST_SKIP() << "schemas not in this data snapshot";
  EXPECT_GE(split, 8);
  EXPECT_GE(grown, 2) << "no counter's core was grown along its run";
}

// Keys that must not hold some words (patternProperties under `not`, or
// a pattern the key must match nowhere): cores of 12 to 40 states whose
// words' letters lead out of the core or to the dead state in a few steps.
// The core walk settles a subtree deeper than the escape depth when it
// holds none of the words' last letters (CoreExits::escaping); every such
// core, split, against the oracle.
TEST(TokenSets, WordPatternCoresMatchOracle) {
  const uint32_t per_schema = testing::Scaled(6u, 2u);
  auto vocab = LoadVocabulary("llama3");
  int checked = 0;
  for (const char* spec : {"schema:jsonschema/maskbench/Github_hard---o82151.schema.json",
                           "schema:jsonschema/maskbench/Github_hard---o83677.schema.json"}) {
    if (!std::ifstream(testing::DataPath(std::string(spec).substr(7))).good()) continue;
    auto g = CompileFor(spec, vocab, /*merge_regular=*/true, /*lenient=*/true);
    const parser::TerminalTable& t = g->grammar().terminals;
    for (uint32_t s = 1, here = 0; s < t.eager_states() && here < per_schema; ++s) {
      if (t.live_bytes(s).count() <= 64 || SpellTerminalCore(t, s).states.size() < 12) continue;
      here += CheckSplitSets(*g, s, spec);
      checked += 1;
      if (::testing::Test::HasFailure()) return;
    }
  }
  if (checked == 0) GTEST_SKIP() << "schemas not in this data snapshot";
  std::printf("token sets: %d word-pattern cores checked\n", checked);
  EXPECT_GE(checked, 2);
}

// Lazily determinized terminals (no shortcut there): states met while
// feeding text, against the oracle.
TEST(TokenSets, LazyTerminalStatesMatchOracle) {
  std::mt19937_64 rng(17);
  auto vocab = AlphabetVocabulary(rng);
  auto g = CompileFor("regex:(?:a|b)*a(?:a|b){16}c?d", vocab);
  ASSERT_NE(g->grammar().terminals.lazy, nullptr) << "the regex was determinized eagerly";
  RecognizerOptions options;
  parser::Recognizer r = pruning::MakeRecognizer(&g->grammar(), options);
  int checked = 0;
  std::vector<uint32_t> states;
  for (int k = 0; k < 40; ++k) {
    r.CollectScanStates(&states);
    for (uint32_t state : states) {
      CheckStateSets(*g, state, "after " + std::to_string(k) + " bytes");
      ++checked;
    }
    ASSERT_TRUE(r.Feed("ab"[rng() % 2])) << k;
  }
  EXPECT_GT(checked, 30);
}

// The lazy tier's states (large objects of MaskBench schemas merged into
// one terminal, determinized as the text visits them): the states met while
// feeding each document, every way their sets are built (the plain walk
// with the self-loop shortcut, split at a core, borrowed, and the grammar's
// own choice among them, CompiledGrammar::TokenSets) against the oracle.
TEST(TokenSets, LazyTierStatesMatchOracle) {
  const size_t per_grammar = testing::Scaled<size_t>(10, 3);
  auto vocab = LoadVocabulary("llama3");
  std::ifstream in(testing::DataPath("traces/llama3/maskbench.jsonl"));
  std::string line;
  int grammars = 0, checked = 0, split = 0, borrowing = 0, wide = 0;
  for (size_t n = 0; std::getline(in, line) && grammars < 6; ++n) {
    if (n % 37 != 0) continue;
    nlohmann::json j = nlohmann::json::parse(line);
    SchemaOptions lenient;
    lenient.lenient = true;
    if (!internal::ReadGrammarSpec(j.at("grammar").get<std::string>(), testing::DataPath(""), lenient, nullptr).ok()) {
      continue;  // a schema zapgram refuses
    }
    auto g = CompileFor(j.at("grammar").get<std::string>(), vocab, /*merge_regular=*/true, /*lenient=*/true,
                        /*lazy_terminals=*/true);
    const parser::TerminalTable& t = g->grammar().terminals;
    if (t.lazy == nullptr) continue;
    ++grammars;
    g->EnsureMaskClasses();
    const std::string text = j.at("text").get<std::string>();
    RecognizerOptions options;
    parser::Recognizer r = pruning::MakeRecognizer(&g->grammar(), options);
    // Every lazy state met, those inside strings (the costly sets) first.
    std::vector<uint32_t> states, lazy_states;
    for (size_t k = 0; k < text.size(); ++k) {
      r.CollectScanStates(&states);
      for (uint32_t s : states) {
        if (s >= t.eager_states() && !t.is_counted(s) &&
            std::find(lazy_states.begin(), lazy_states.end(), s) == lazy_states.end()) {
          lazy_states.push_back(s);
        }
      }
      if (!r.Feed(static_cast<uint8_t>(text[k]))) break;
    }
    std::stable_partition(lazy_states.begin(), lazy_states.end(),
                          [&](uint32_t s) { return t.live_bytes(s).count() > 64; });
    for (size_t k = 0; k < lazy_states.size() && k < per_grammar; ++k) {
      const uint32_t s = lazy_states[k];
      const std::string where = j.at("id").get<std::string>();
      CheckStateSets(*g, s, where);
      split += CheckSplitSets(*g, s, where);
      borrowing += CheckBorrowedSets(*g, s, where);
      wide += t.live_bytes(s).count() > 64;
      // The grammar's own build (shared through the store where that pays).
      const StateTokenSets& sets = g->TokenSets(s);
      std::vector<uint32_t> roots = sets.uncertain_roots;
      if (sets.core != nullptr) roots.insert(roots.end(), sets.core->uncertain_roots.begin(), sets.core->uncertain_roots.end());
      std::sort(roots.begin(), roots.end());
      OracleSets oracle = ClassifyNodesOneByOne(*g, s);
      std::sort(oracle.roots.begin(), oracle.roots.end());
      EXPECT_EQ(AllAcceptedIds(sets), oracle.accepted) << where << " lazy state " << s;
      EXPECT_EQ(roots, oracle.roots) << where << " lazy state " << s;
      ++checked;
      if (::testing::Test::HasFailure()) return;
    }
  }
  std::printf("lazy tier token sets: %d grammars, %d lazy states (%d wide, %d split, %d borrowing)\n", grammars,
              checked, wide, split, borrowing);
  EXPECT_GE(grammars, 3);
  EXPECT_GE(checked, 15);
  EXPECT_GT(wide, 0) << "no lazy state inside a string was checked";
  EXPECT_GT(split, 0) << "no lazy state was split at its core";
}

// Counted terminals (a string of at most 100 characters, stepped
// arithmetically) get the count-aware subtree shortcut: at every count,
// from the opening quote to the bound, the sets equal the node-by-node walk
// and the oracle.
TEST(TokenSets, CountedTerminalStatesMatchOracle) {
  auto vocab = LoadVocabulary("llama3");
  auto g = CompileFor("regex:\"(?:[a-z ]){0,100}\"", vocab);
  const parser::TerminalTable& t = g->grammar().terminals;
  ASSERT_FALSE(t.counted.empty()) << "the string was not made a counted terminal";
  int checked = 0;
  size_t largest = 0;
  for (size_t count : {0, 1, 30, 70, 90, 97, 99, 100}) {
    RecognizerOptions options;
    parser::Recognizer r = pruning::MakeRecognizer(&g->grammar(), options);
    std::string text(count + 1, 'a');
    text[0] = '"';
    ASSERT_EQ(r.FeedBytes(text), count + 1);
    std::vector<uint32_t> states;
    r.CollectScanStates(&states);
    for (uint32_t state : states) {
      if (!t.is_counted(state)) continue;
      largest = std::max(largest, CheckStateSets(*g, state, "count " + std::to_string(count)));
      ++checked;
    }
  }
  std::printf("counted token sets: %d states checked, largest accepts %zu tokens\n", checked, largest);
  EXPECT_GE(checked, 8);
  EXPECT_GT(largest, 1000u);
}

// Counted unit starts read off the vocabulary's profile (token_sets.h,
// CountedProfile) equal the oracle: JSON-string units (escapes, \u, UTF-8),
// a minimum, a suffix of several bytes, counts from 0 to the bound, and a
// grammar that reads the profile another built.
TEST(TokenSets, CountedProfilesMatchOracle) {
  auto vocab = LoadVocabulary("llama3");
  const std::string unit = R"((?:[^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4}))";
  int checked = 0, crossing = 0;
  for (const std::string& pattern : {std::string("\"(?:[a-z ]){0,100}\""), "\"" + unit + "{5,40}\"end", "\"" + unit + "{0,64}\"",
                                     "\"" + unit + "{3,33}\"end"}) {
    auto g = CompileFor("regex:" + pattern, vocab);
    const parser::TerminalTable& t = g->grammar().terminals;
    ASSERT_FALSE(t.counted.empty()) << pattern << " was not made a counted terminal";
    const grammar::CountedAutomaton& a = *t.counted[0].automaton;
    for (uint32_t count = 0; count <= a.parts().max; ++count) {
      RecognizerOptions options;
      parser::Recognizer r = pruning::MakeRecognizer(&g->grammar(), options);
      std::string text(count + 1, 'q');
      text[0] = '"';
      if (r.FeedBytes(text) != text.size()) break;
      std::vector<uint32_t> states;
      r.CollectScanStates(&states);
      for (uint32_t state : states) {
        if (!t.is_counted(state) || !a.IsUnitStart(state - t.SegmentOf(state).base)) continue;
        const StateTokenSets from_profile = g->BuildOnDemandSets(state);
        OracleSets oracle = ClassifyNodesOneByOne(*g, state);
        std::sort(oracle.roots.begin(), oracle.roots.end());
        EXPECT_EQ(AcceptedIds(from_profile), oracle.accepted) << pattern << " count " << count;
        EXPECT_EQ(from_profile.uncertain_roots, oracle.roots) << pattern << " count " << count;
        crossing += !oracle.roots.empty();
        ++checked;
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
  std::printf("counted profiles: %d unit starts checked (%d with uncertain roots)\n", checked, crossing);
  EXPECT_GT(checked, 150);
  EXPECT_GT(crossing, 20);
}

// Sharing token sets across grammars (masks/token_sets.h) is sound: states
// whose canonical spellings are equal, in one grammar or two, have equal
// sets; and the spelling shares for real (many states of different random
// grammars spell alike).
TEST(TokenSets, EqualSpellingsHaveEqualSetsAcrossGrammars) {
  std::mt19937_64 rng(0x5BE11);
  auto vocab = AlphabetVocabulary(rng);
  struct Seen {
    int grammar;
    std::vector<TokenId> accepted;
    std::vector<uint32_t> roots;
  };
  absl::flat_hash_map<std::vector<uint32_t>, Seen> seen;
  int compared = 0, across_grammars = 0, grammars = 0;
  for (int round = 0; round < 80; ++round) {
    const grammar::Grammar ir = zapgram::testing::RandomGrammar(rng);
    absl::StatusOr<parser::FlatGrammar> flat =
        round % 2 == 0 ? parser::BuildFlatGrammar(ir) : zapgram::testing::CompileIr(ir);
    ASSERT_TRUE(flat.ok()) << flat.status();  // an empty language compiles too
    auto shared_flat = std::make_shared<const parser::FlatGrammar>(*std::move(flat));
    absl::StatusOr<std::shared_ptr<const CompiledGrammar>> g = CompiledGrammar::Build(shared_flat, vocab);
    ASSERT_TRUE(g.ok()) << g.status();
    ++grammars;
    for (uint32_t state = 1; state < shared_flat->terminals.eager_states(); ++state) {
      const std::vector<uint32_t> spelling = CanonicalSubautomaton(shared_flat->terminals, state);
      ASSERT_FALSE(spelling.empty());
      const StateTokenSets sets = (*g)->BuildTokenSets(state, /*use_subtrees=*/false);
      Seen now{round, AcceptedIds(sets), sets.uncertain_roots};
      auto [it, fresh] = seen.try_emplace(spelling, now);
      if (fresh) continue;
      ++compared;
      across_grammars += it->second.grammar != round;
      EXPECT_EQ(it->second.accepted, now.accepted) << "round " << round << " state " << state;
      EXPECT_EQ(it->second.roots, now.roots) << "round " << round << " state " << state;
      if (::testing::Test::HasFailure()) return;
    }
  }
  std::printf("token-set spellings: %d grammars, %zu distinct, %d repeats (%d across grammars)\n", grammars,
              seen.size(), compared, across_grammars);
  EXPECT_GT(across_grammars, 50);
}

// Two JSON Schemas on Llama 3 share the sets of equal states (an open
// string among them): the second finds them in the vocabulary's store, the
// very same object.
TEST(TokenSets, JsonGrammarsShareSetsThroughTheVocabularyStore) {
  auto vocab = LoadVocabulary("llama3");
  auto first = CompileFor("schema:jsonschema/maskbench/BFCL_java_10.schema.json", vocab);
  auto second = CompileFor("schema:jsonschema/maskbench/BFCL_java_11.schema.json", vocab);
  first->EnsureMaskClasses();
  second->EnsureMaskClasses();
  const parser::TerminalTable& a = first->grammar().terminals;
  const parser::TerminalTable& b = second->grammar().terminals;
  absl::flat_hash_map<std::vector<uint32_t>, uint32_t> in_first;
  for (uint32_t s = 1; s < a.eager_states(); ++s) {
    if (first->mask_classes()[s] == s) in_first.try_emplace(CanonicalSubautomaton(a, s), s);
  }
  int shared = 0;
  size_t largest = 0;
  for (uint32_t s = 1; s < b.eager_states(); ++s) {
    if (second->mask_classes()[s] != s || b.live_bytes(s).count() < kSharedSetsMinLiveBytes) continue;
    auto it = in_first.find(CanonicalSubautomaton(b, s));
    if (it == in_first.end()) continue;
    const StateTokenSets& from_first = first->TokenSets(it->second);
    const TokenSetStoreStats before = vocab->SharedTokenSets()->stats();
    const StateTokenSets& from_second = second->TokenSets(s);
    EXPECT_EQ(&from_first, &from_second) << "state " << s;
    EXPECT_EQ(vocab->SharedTokenSets()->stats().hits, before.hits + 1);
    largest = std::max(largest, AllAcceptedIds(from_second).size());
    ++shared;
  }
  std::printf("two MaskBench schemas share %d states' sets (largest accepts %zu tokens)\n", shared,
              largest);
  EXPECT_GT(shared, 2);
  EXPECT_GT(largest, 100000u) << "an open-string state should be among them";
}

TEST(TokenSetStore, BoundedWithLeastRecentlyUsedEviction) {
  auto sets_of = [](uint32_t n) {
    StateTokenSets s;
    s.accepted_ids.assign(n, 1);
    return s;
  };
  TokenSetStore store(4 * (4 * 100 + 4 + 128));  // four entries of 100 ids
  int builds = 0;
  auto get = [&](uint32_t key) {
    return store.GetOrBuild({key}, [&] {
      ++builds;
      return sets_of(100);
    });
  };
  for (uint32_t k = 0; k < 4; ++k) get(k);
  EXPECT_EQ(builds, 4);
  get(0);  // a hit; 0 becomes the newest
  EXPECT_EQ(builds, 4);
  get(9);  // evicts 1, the oldest
  EXPECT_EQ(store.stats().entries, 4u);
  EXPECT_EQ(store.stats().evictions, 1u);
  get(0);
  EXPECT_EQ(builds, 5);
  get(1);
  EXPECT_EQ(builds, 6);
  EXPECT_LE(store.stats().bytes, 4u * (4 * 100 + 4 + 128));
  // Larger than the whole budget: built, returned, not kept.
  std::shared_ptr<const StateTokenSets> big = store.GetOrBuild({77}, [&] { return sets_of(10000); });
  EXPECT_EQ(big->accepted_ids.size(), 10000u);
  EXPECT_EQ(store.stats().entries, 4u);
}

// ---------------------------------------------------------------- tag dispatch

// Free text with tool calls (XGrammar's TagDispatch and structural tags,
// grammar/xgrammar_macros.h): teacher-forced through prose, a trigger split
// across tokens however the tokenizer splits it, the tag's body, and prose
// again; every mask against the brute force, then a short random walk.
struct TagDispatchCase {
  std::string spec;  // a grammar argument
  std::string text;  // a sentence of the grammar
};

void CheckTagDispatch(const std::string& tokenizer, const TagDispatchCase& c, int* masks,
                      int* mismatches) {
  auto vocab = LoadVocabulary(tokenizer);
  absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> encoder =
      CanonicalTokenizer::LoadFromFile(testing::DataPath("tokenizers/" + tokenizer + ".tokenizer.json"));
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  const absl::StatusOr<std::vector<TokenId>> ids = (*encoder)->Encode(c.text, kDocumentEncoding);
  ASSERT_TRUE(ids.ok()) << ids.status();
  auto g = CompileFor(c.spec, vocab);
  Matcher m(g);
  std::vector<uint32_t> words(g->mask_words());
  std::string text;
  for (int32_t id : *ids) {
    m.ComputeMask(words.data());
    *mismatches += CompareMasks(*g, words, ReferenceMask(*g, text),
                                c.spec + " after \"" + text + "\"");
    ++*masks;
    ASSERT_TRUE(Allowed(words, static_cast<TokenId>(id))) << c.spec << " after \"" << text << "\"";
    ASSERT_TRUE(m.AcceptToken(static_cast<TokenId>(id)));
    text += vocab->token_bytes(static_cast<TokenId>(id));
  }
  EXPECT_TRUE(m.IsAccepting()) << c.spec;
  RandomWalk(g, MatcherOptions{}, 7, 4, /*require_progress=*/false, c.spec, masks, mismatches);
}

TEST(MatcherTagDispatch, MasksMatchBruteForceOnLlama3AndQwen) {
  const std::string dir = testing::SourcePath("tests/testdata/structural_tags/");
  const TagDispatchCase cases[] = {
      {"structural:" + dir + "weather_qwen2_5.json",
       "Let me look that up.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
       "\"Paris\", \"unit\": \"celsius\"}}\n</tool_call> Done, <tool_ca is not a tag."},
      {"structural:" + dir + "weather_llama3.json",
       "Sure. {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\", \"days\": 3}} ok"},
      {"structural:" + dir + "function_tags.json",
       "<function=add>{\"a\": 1, \"b\": 22}</function> and <function=say>hi there</function>."},
      {"grammars/ebnf/xgrammar/test_grammar_matcher_macro/test_excluded_str__grammar_str.ebnf",
       "think it over start12345 then</think>"},
      {"grammars/ebnf/xgrammar/test_grammar_matcher_macro/"
       "test_regression_multiple_tag_dispatch__grammar_str.ebnf",
       "xtag1tag2abcdpp llw"},
  };
  int masks = 0, mismatches = 0;
  for (const std::string tokenizer : {"llama3", "qwen2_5"}) {
    for (const TagDispatchCase& c : cases) {
      ASSERT_NO_FATAL_FAILURE(CheckTagDispatch(tokenizer, c, &masks, &mismatches));
    }
  }
  std::printf("tag dispatch: %d masks checked against the brute force, %d mismatches\n", masks,
              mismatches);
  EXPECT_EQ(mismatches, 0);
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
