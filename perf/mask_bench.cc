// Token-mask computation on fixed parser states, with the Llama 3 vocabulary.
//
// States are prefixes of real trace documents (traces/llama3/<set>.jsonl):
// the first record of the set, cut after `k` of its tokens, for a few k. A
// benchmark iteration computes the mask of that state once:
//   BM_MaskHit/<set>/<k>      the state's mask is in the shared cache (the
//                             common case while decoding: a canonical-key
//                             computation, a lookup and a 16 KB copy);
//   BM_MaskMiss/<set>/<k>     the cache is off: token-set union plus the
//                             parser walk of the uncertain subtrees;
//   BM_MaskNoSets/<set>/<k>   the cache and the context-independent token
//                             sets are off: the full trie walk (ablation).
// The token sets are built before timing (they are built once per grammar).
// BM_ColdStringMask/<k>: the first mask of a fresh CompiledGrammar inside an
// open JSON string (k = 0: builtin:json after `["abc`; k = 1: a MaskBench
// schema inside a string value), so the string state's token sets are built
// in the timed region: what every new JSON Schema document pays on first use.
// BM_BuildStringTokenSets/<k>/<shortcut>: CompiledGrammar::BuildTokenSets
// alone for the open-string state of case k (the largest set after the
// prefix), with the whole-subtree shortcut (1) or node by node (0).
// BM_CompileForVocabulary: CompiledGrammar::Compile alone (builtin:json).
// BM_LoadVocabulary: tokenizer.json to Vocabulary (Llama 3, Qwen 2.5, Gemma 3).
// BM_Fork: Matcher::Fork of MaskBench states (see above it).
//
// Run e.g. build/zapgram_bench --benchmark_filter=Mask
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "masks/matcher.h"
#include "nlohmann/json.hpp"
#include "pruning/compact.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace {

const char* const kSets[] = {"json-docs", "sql", "java"};
const int kCuts[] = {1, 8, 24};

std::string DataPath(const std::string& relative) { return std::string(ZAPGRAM_DATA_DIR) + "/" + relative; }

const zapgram::Vocabulary& Llama3() {
  static const zapgram::Vocabulary* vocab = [] {
    auto v = zapgram::Vocabulary::Load(DataPath("tokenizers/llama3.tokenizer.json"));
    if (!v.ok()) {
      std::fprintf(stderr, "%s\n", std::string(v.status().message()).c_str());
      std::abort();
    }
    return new zapgram::Vocabulary(*std::move(v));
  }();
  return *vocab;
}

struct Fixture {
  std::unique_ptr<zapgram::CompiledGrammar> grammar;
  std::vector<int32_t> tokens;
};

// The first record of a set, its grammar compiled once per set.
const Fixture& SetFixture(int set) {
  static std::map<int, Fixture>* cache = new std::map<int, Fixture>;
  auto it = cache->find(set);
  if (it != cache->end()) return it->second;
  std::ifstream in(DataPath(std::string("traces/llama3/") + kSets[set] + ".jsonl"));
  std::string line;
  std::getline(in, line);
  nlohmann::json record = nlohmann::json::parse(line);
  auto grammar = zapgram::Grammar::Load(record.at("grammar").get<std::string>(), ZAPGRAM_DATA_DIR);
  if (!grammar.ok()) std::abort();
  auto compiled = zapgram::CompiledGrammar::Compile(*grammar, Llama3());
  if (!compiled.ok()) std::abort();
  Fixture f;
  f.grammar = std::make_unique<zapgram::CompiledGrammar>(*std::move(compiled));
  f.tokens = record.at("tokens").get<std::vector<int32_t>>();
  return cache->emplace(set, std::move(f)).first->second;
}

void MaskAt(benchmark::State& state, bool use_cache, bool use_sets) {
  const Fixture& f = SetFixture(static_cast<int>(state.range(0)));
  const size_t cut = std::min<size_t>(static_cast<size_t>(state.range(1)), f.tokens.size());
  zapgram::MatcherOptions options;
  options.use_cache = use_cache;
  options.use_token_sets = use_sets;
  zapgram::Matcher matcher(*f.grammar, options);
  for (size_t k = 0; k < cut; ++k) {
    if (!matcher.AcceptToken(f.tokens[k])) {
      state.SkipWithError("trace token refused");
      return;
    }
  }
  std::vector<uint32_t> words(f.grammar->mask_words());
  size_t allowed = matcher.ComputeMask(words.data());  // builds sets, fills the cache
  for (auto _ : state) {
    allowed = matcher.ComputeMask(words.data());
    benchmark::DoNotOptimize(words.data());
  }
  state.counters["allowed"] = static_cast<double>(allowed);
  state.SetLabel(kSets[state.range(0)]);
}

void BM_MaskHit(benchmark::State& state) { MaskAt(state, true, true); }
void BM_MaskMiss(benchmark::State& state) { MaskAt(state, false, true); }
void BM_MaskNoSets(benchmark::State& state) { MaskAt(state, false, false); }

void MaskArgs(benchmark::internal::Benchmark* b) {
  for (int set = 0; set < 3; ++set) {
    for (int cut : kCuts) b->Args({set, cut});
  }
}

BENCHMARK(BM_MaskHit)->Apply(MaskArgs)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskMiss)->Apply(MaskArgs)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskNoSets)->Apply(MaskArgs)->Unit(benchmark::kMicrosecond)->Iterations(3);

struct ColdCase {
  const char* spec;
  const char* prefix;
};
const ColdCase kColdCases[] = {
    {"builtin:json", "[\"abc"},
    {"schema:jsonschema/maskbench/BFCL_java_10.schema.json",
     "{\"JNIBridge.setLauncherInfo\": {\"launcher\": \"/usr"},
};

const zapgram::Grammar& ColdGrammar(int which) {
  static std::map<int, zapgram::Grammar>* cache = new std::map<int, zapgram::Grammar>;
  auto it = cache->find(which);
  if (it != cache->end()) return it->second;
  auto grammar = zapgram::Grammar::Load(kColdCases[which].spec, ZAPGRAM_DATA_DIR);
  if (!grammar.ok()) std::abort();
  return cache->emplace(which, *std::move(grammar)).first->second;
}

void BM_ColdStringMask(benchmark::State& state) {
  const ColdCase& c = kColdCases[state.range(0)];
  const zapgram::Grammar& grammar = ColdGrammar(static_cast<int>(state.range(0)));
  std::vector<uint32_t> words;
  size_t allowed = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto compiled = zapgram::CompiledGrammar::Compile(grammar, Llama3());
    if (!compiled.ok()) std::abort();
    zapgram::MatcherOptions options;
    options.use_cache = false;
    zapgram::Matcher matcher(*compiled, options);
    if (!matcher.AcceptBytes(c.prefix)) {
      state.SkipWithError("prefix refused");
      return;
    }
    words.assign(compiled->mask_words(), 0);
    state.ResumeTiming();
    allowed = matcher.ComputeMask(words.data());
    benchmark::DoNotOptimize(words.data());
  }
  state.counters["allowed"] = static_cast<double>(allowed);
  state.SetLabel(c.spec);
}
BENCHMARK(BM_ColdStringMask)->DenseRange(0, 1)->Unit(benchmark::kMillisecond);

void BM_BuildStringTokenSets(benchmark::State& state) {
  const ColdCase& c = kColdCases[state.range(0)];
  const zapgram::Grammar& grammar = ColdGrammar(static_cast<int>(state.range(0)));
  auto compiled = zapgram::CompiledGrammar::Compile(grammar, Llama3());
  if (!compiled.ok()) std::abort();
  const zapgram::masks::CompiledGrammar& g = *compiled->impl();
  zapgram::parser::Recognizer recognizer = zapgram::pruning::MakeRecognizer(&g.grammar(), {});
  const std::string_view prefix = c.prefix;
  if (recognizer.FeedBytes(prefix) != prefix.size()) {
    state.SkipWithError("prefix refused");
    return;
  }
  std::vector<uint32_t> scan_states;
  recognizer.CollectScanStates(&scan_states);
  uint32_t string_state = 0;
  size_t most = 0;
  for (uint32_t s : scan_states) {
    const size_t accepted = g.BuildTokenSets(s).bytes();
    if (accepted > most) most = accepted, string_state = s;
  }
  const bool shortcut = state.range(1) != 0;
  size_t bytes = 0;
  for (auto _ : state) {
    zapgram::masks::StateTokenSets sets = g.BuildTokenSets(string_state, shortcut);
    bytes = sets.bytes();
    benchmark::DoNotOptimize(sets);
  }
  state.counters["set_bytes"] = static_cast<double>(bytes);
  state.SetLabel(c.spec);
}
BENCHMARK(BM_BuildStringTokenSets)->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMicrosecond);

void BM_CompileForVocabulary(benchmark::State& state) {
  const zapgram::Grammar& grammar = ColdGrammar(0);
  Llama3();
  for (auto _ : state) {
    auto compiled = zapgram::CompiledGrammar::Compile(grammar, Llama3());
    if (!compiled.ok()) std::abort();
    benchmark::DoNotOptimize(compiled);
  }
}
BENCHMARK(BM_CompileForVocabulary)->Unit(benchmark::kMillisecond);

void BM_LoadVocabulary(benchmark::State& state) {
  static const char* const kNames[] = {"llama3", "qwen2_5", "gemma3"};
  const std::string path = DataPath(std::string("tokenizers/") + kNames[state.range(0)] + ".tokenizer.json");
  for (auto _ : state) {
    auto v = zapgram::Vocabulary::Load(path);
    if (!v.ok()) state.SkipWithError("load failed");
    benchmark::DoNotOptimize(v);
  }
  state.SetLabel(kNames[state.range(0)]);
}
BENCHMARK(BM_LoadVocabulary)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->Iterations(3);

// BM_Fork: Matcher::Fork on MaskBench states: 48 documents (every 229th
// record of the trace whose schema compiles), each cut at half its tokens.
// An iteration forks every state once; counters: per fork, mean (us) over
// the iterations and the p50 / max of each state's best of 5 timings.
void BM_Fork(benchmark::State& state) {
  struct Case {
    std::unique_ptr<zapgram::CompiledGrammar> grammar;
    std::unique_ptr<zapgram::Matcher> matcher;
  };
  std::vector<Case> cases;
  std::ifstream in(DataPath("traces/llama3/maskbench.jsonl"));
  std::string line;
  zapgram::LoadOptions options;
  options.schema.lenient = true;
  for (size_t n = 0; std::getline(in, line) && cases.size() < 48; ++n) {
    if (n % 229 != 0) continue;
    nlohmann::json record = nlohmann::json::parse(line);
    auto grammar = zapgram::Grammar::Load(record.at("grammar").get<std::string>(), ZAPGRAM_DATA_DIR, options);
    if (!grammar.ok()) continue;
    auto compiled = zapgram::CompiledGrammar::Compile(*grammar, Llama3());
    if (!compiled.ok()) continue;
    Case c;
    c.grammar = std::make_unique<zapgram::CompiledGrammar>(*std::move(compiled));
    c.matcher = std::make_unique<zapgram::Matcher>(*c.grammar);
    const auto tokens = record.at("tokens").get<std::vector<int32_t>>();
    for (size_t k = 0; k < tokens.size() / 2 && c.matcher->AcceptToken(tokens[k]); ++k) {
    }
    cases.push_back(std::move(c));
  }
  std::vector<double> best(cases.size(), 1e30);
  for (int round = 0; round < 5; ++round) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      zapgram::Matcher fork = cases[i].matcher->Fork();
      benchmark::DoNotOptimize(&fork);
      best[i] = std::min(best[i], std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    }
  }
  for (auto _ : state) {
    for (const Case& c : cases) {
      zapgram::Matcher fork = c.matcher->Fork();
      benchmark::DoNotOptimize(&fork);
    }
  }
  std::sort(best.begin(), best.end());
  state.counters["states"] = static_cast<double>(cases.size());
  state.counters["p50_us"] = best[best.size() / 2];
  state.counters["max_us"] = best.back();
  state.counters["us_per_fork"] = benchmark::Counter(static_cast<double>(state.iterations() * cases.size()),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Fork)->Unit(benchmark::kMicrosecond);

}  // namespace
