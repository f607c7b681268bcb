// Recognition throughput of the byte-level Earley engine on real JSON.
//
// Inputs are built from the real documents under ZAPGRAM_DATA_DIR/docs/json
// (SchemaStore tests, llama.cpp and llguidance samples, ...), never generated:
//   1 KB    the real document whose size is closest to 1024 bytes;
//   100 KB  a JSON array whose elements are the real documents in path order,
//   1 MB    cycled until the array reaches the size.
// The array inputs are what pruning is for: without it the chart keeps every
// Earley set and grows with the input; with ZapFormat compaction it stays
// proportional to the nesting depth.
//
// Each benchmark builds a fresh zapgram::Recognizer for builtin:json per
// iteration (the grammar is compiled once), feeds the whole input and checks
// that it is accepted; throughput is reported with SetBytesProcessed (MB/s).
// BM_RecognizeJson runs with pruning on, BM_RecognizeJsonUnpruned with it off.
// Counters, measured in one extra untimed pass: `max_items`, the most items
// the chart retained after any byte, and `bytes`, the input size.
//
// Arguments are the target size in KB (1, 100, 1000). Run e.g.
//   build/zapgram_bench --benchmark_filter=RecognizeJson
//
// BM_RecognizeLark/{java,go,sql}: SynCode's Lark grammar (lexed: the lexer
// automaton runs in the recognizer's lanes) on every document its trace set
// (traces/llama3/<set>.jsonl) labels valid, one fresh recognizer per
// document; MB/s over all of them.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "zapgram/grammar.h"

namespace {

namespace fs = std::filesystem;

const std::vector<std::string>& RealJsonDocs() {
  static const std::vector<std::string>* docs = [] {
    std::vector<fs::path> paths;
    for (const fs::directory_entry& e :
         fs::recursive_directory_iterator(fs::path(ZAPGRAM_DATA_DIR) / "docs" / "json")) {
      if (e.is_regular_file() && e.path().extension() == ".json") paths.push_back(e.path());
    }
    std::sort(paths.begin(), paths.end());
    auto* texts = new std::vector<std::string>;
    for (const fs::path& p : paths) {
      std::ifstream in(p, std::ios::binary);
      texts->emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return texts;
  }();
  return *docs;
}

// The input for a target size in KB (see the file comment).
const std::string& JsonInput(int64_t kb) {
  static std::map<int64_t, std::string> inputs;
  auto it = inputs.find(kb);
  if (it != inputs.end()) return it->second;
  const std::vector<std::string>& docs = RealJsonDocs();
  if (docs.empty()) {
    std::cerr << "recognizer_bench: no JSON documents under " << ZAPGRAM_DATA_DIR << "/docs/json\n";
    std::exit(1);
  }
  const size_t target = static_cast<size_t>(kb) * 1024;
  std::string input;
  if (kb <= 1) {
    auto closest = std::min_element(docs.begin(), docs.end(), [&](const auto& a, const auto& b) {
      auto distance = [&](const std::string& d) {
        return d.size() > target ? d.size() - target : target - d.size();
      };
      return distance(a) < distance(b);
    });
    input = *closest;
  } else {
    input = "[";
    for (size_t i = 0; input.size() + 1 < target; i = (i + 1) % docs.size()) {
      if (input.size() > 1) input += ',';
      input += docs[i];
    }
    input += ']';
  }
  return inputs.emplace(kb, std::move(input)).first->second;
}

const zapgram::Grammar& BuiltinJson() {
  static const zapgram::Grammar* grammar = [] {
    absl::StatusOr<zapgram::Grammar> g = zapgram::Grammar::Load("builtin:json");
    if (!g.ok()) {
      std::cerr << "recognizer_bench: builtin:json: " << g.status() << "\n";
      std::exit(1);
    }
    return new zapgram::Grammar(*std::move(g));
  }();
  return *grammar;
}

// Most items retained after any byte (0 when the input is not accepted).
size_t MaxRetainedItems(const std::string& input, bool pruning) {
  zapgram::RecognizerOptions options;
  options.pruning = pruning;
  zapgram::Recognizer recognizer(BuiltinJson(), options);
  size_t max_items = recognizer.RetainedItems();
  for (char c : input) {
    if (!recognizer.Feed(static_cast<uint8_t>(c))) return 0;
    max_items = std::max(max_items, recognizer.RetainedItems());
  }
  return recognizer.IsAccepting() ? max_items : 0;
}

void RecognizeJson(benchmark::State& state, bool pruning) {
  const std::string& input = JsonInput(state.range(0));
  const zapgram::Grammar& grammar = BuiltinJson();
  zapgram::RecognizerOptions options;
  options.pruning = pruning;
  for (auto _ : state) {
    zapgram::Recognizer recognizer(grammar, options);
    size_t taken = recognizer.FeedBytes(input);
    bool accepted = taken == input.size() && recognizer.IsAccepting();
    benchmark::DoNotOptimize(accepted);
    if (!accepted) {
      state.SkipWithError(recognizer.status().ok() ? "input rejected" : "budget exhausted");
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(input.size()));
  state.counters["bytes"] = static_cast<double>(input.size());
  state.counters["max_items"] = static_cast<double>(MaxRetainedItems(input, pruning));
}

void BM_RecognizeJson(benchmark::State& state) { RecognizeJson(state, /*pruning=*/true); }
void BM_RecognizeJsonUnpruned(benchmark::State& state) { RecognizeJson(state, /*pruning=*/false); }

constexpr const char* kLarkSets[] = {"java", "go", "sql"};

struct LarkSet {
  zapgram::Grammar grammar;
  std::vector<std::string> docs;
  size_t bytes = 0;
};

const LarkSet& LoadLarkSet(int64_t index) {
  static std::map<int64_t, LarkSet*> sets;
  if (auto it = sets.find(index); it != sets.end()) return *it->second;
  const std::string name = kLarkSets[index];
  std::ifstream in(fs::path(ZAPGRAM_DATA_DIR) / "traces" / "llama3" / (name + ".jsonl"));
  std::string line, spec;
  std::vector<std::string> docs;
  size_t bytes = 0;
  while (std::getline(in, line)) {
    nlohmann::json record = nlohmann::json::parse(line);
    if (!record.at("valid").get<bool>() || record.value("roundtrip_mismatch", false)) continue;
    spec = record.at("grammar");
    docs.push_back(record.at("text"));
    bytes += docs.back().size();
  }
  absl::StatusOr<zapgram::Grammar> g = zapgram::Grammar::Load(spec, ZAPGRAM_DATA_DIR);
  if (docs.empty() || !g.ok()) {
    std::cerr << "recognizer_bench: " << name << ": " << (g.ok() ? "no documents" : g.status().ToString())
              << "\n";
    std::exit(1);
  }
  auto* set = new LarkSet{*std::move(g), std::move(docs), bytes};
  sets[index] = set;
  return *set;
}

void BM_RecognizeLark(benchmark::State& state) {
  const LarkSet& set = LoadLarkSet(state.range(0));
  state.SetLabel(kLarkSets[state.range(0)]);
  for (auto _ : state) {
    for (const std::string& doc : set.docs) {
      zapgram::Recognizer recognizer(set.grammar);
      bool accepted = recognizer.FeedBytes(doc) == doc.size() && recognizer.IsAccepting();
      benchmark::DoNotOptimize(accepted);
      if (!accepted) {
        state.SkipWithError("a valid document was rejected");
        return;
      }
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(set.bytes));
  state.counters["docs"] = static_cast<double>(set.docs.size());
}

BENCHMARK(BM_RecognizeLark)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RecognizeJson)->Arg(1)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RecognizeJsonUnpruned)->Arg(1)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
