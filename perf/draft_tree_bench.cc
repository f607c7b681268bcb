// Draft-tree masks (masks/draft_tree.h) against the ways around them, with
// the Llama 3 vocabulary.
//
// Trees are drafted (tests/support/draft_trees.h) from real states: 24
// MaskBench documents (every 211th record whose schema compiles and takes
// the document) and 12 json-docs documents (every 23rd), each cut at a
// random point between a quarter and three quarters of its tokens. A
// tree's tokens are the document's true next tokens along one path and
// random tokens the parent's mask allows elsewhere; each node has 2-8
// children, 1-3 nodes expanded per level (EAGLE-like), 16, 64 or 256 nodes.
//
// BM_DraftTree/<set>/<nodes>/<method>/<regime>, method:
//   0 traverse  Matcher::TraverseDraftTree (one walk, AcceptToken /
//               ComputeMask / Rollback, each row computed once);
//   1 copy      the same walk entering each child on a copy of its parent's
//               matcher (DraftUndo::kCopy) instead of rolling back;
//   2 naive     per node: the path's tokens accepted from the root state,
//               the mask filled, the path rolled back;
//   3 masks     one plain ComputeMask per visited node, on matchers placed
//               at the nodes beforehand (untimed): the masks alone;
// regime:
//   0 fresh     a grammar compiled afresh for each tree (its mask cache
//               empty), the prefix decoded with a mask per token as a
//               server would (untimed): the tree's states are new unless
//               the prefix or another node of the tree reached them;
//   1 warm      the same tree again: every state's mask is cached;
//   2 uncached  the mask cache off (every mask walks the trie; method 0
//               and 3 only).
// Timed on the thread's CPU clock (a busy machine slows the wall clock).
// Counters: us_per_node (the timed total over the nodes of every tree),
// nodes, and tree_hit_rate (method 0, fresh: the share of the tree's masks
// that the cache served).
//
// Measured (2 cores shared with other jobs; CPU clock; median of 5 runs of 5
// iterations; Release), us per node:
//                       fresh                       warm                 uncached
//   set        nodes  traverse copy  naive masks   traverse copy naive masks  traverse masks
//   maskbench    16     11.4  13.3  13.6   9.7      2.45  2.92  4.67  1.06     6.1  11.6
//   maskbench    64      7.8   8.2  11.9   5.7      1.57  1.90  5.60  1.03     5.2  14.5
//   maskbench   256      5.2   6.3  17.0   5.6      1.94  2.43  10.9  1.58     4.6  13.5
//   json-docs    16     10.3  12.5  13.6   8.4      3.19  5.10  9.64  2.12    14.3  47.6
//   json-docs    64      5.3   7.5  13.5   6.1      4.19  4.61  14.3  2.40    13.1  36.5
//   json-docs   256      6.2   7.1  19.8   4.9      3.09  4.33  16.3  2.72    11.8  29.5
// (tree_hit_rate, fresh: MaskBench 0.41-0.53, json-docs 0.80-0.88.) The
// walk always beats the naive walk (1.2-3.3x fresh, 1.9-5.6x warm: the naive
// walk re-feeds every path from the root), and beats one mask per node by
// 1.9-3.3x whenever masks are computed (uncached): about half its rows are
// copied from a parent or sibling in the same state (token effects) and
// cost no mask at all. When the tree's states are new to the cache
// (fresh), it costs 0.88-1.37x one mask per node: the copied rows
// save only what the cache would have served, and the accept and rollback
// of each other node (~1-2 us) are paid on top. With every state cached
// (warm) a mask is a lookup (~1-2.5 us) and the walk costs 1.1-2.3x that.
// Entering children on copies (kCopy) is slower than rolling back in
// every row.
//
// Run: build/zapgram_bench --benchmark_filter=DraftTree
#include <benchmark/benchmark.h>

#include <algorithm>
#include <ctime>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "masks/draft_tree.h"
#include "nlohmann/json.hpp"
#include "tests/support/draft_trees.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace {

using zapgram::testing::DraftedTree;

const char* const kSets[] = {"maskbench", "json-docs"};
const size_t kSizes[] = {16, 64, 256};

std::string DataPath(const std::string& relative) { return std::string(ZAPGRAM_DATA_DIR) + "/" + relative; }

const zapgram::Vocabulary& Llama3() {
  static const zapgram::Vocabulary* vocab = [] {
    auto v = zapgram::Vocabulary::Load(DataPath("tokenizers/llama3.tokenizer.json"));
    if (!v.ok()) std::abort();
    return new zapgram::Vocabulary(*std::move(v));
  }();
  return *vocab;
}

struct Root {
  std::unique_ptr<zapgram::Grammar> grammar;
  std::vector<int32_t> prefix, truth;
};

struct Case {
  const Root* root;
  DraftedTree tree;
  std::vector<std::vector<int32_t>> paths;
};

absl::StatusOr<zapgram::CompiledGrammar> Compile(const zapgram::Grammar& grammar) {
  return zapgram::CompiledGrammar::Compile(grammar, Llama3());
}

// A matcher fed the prefix, with a mask computed before each token (the
// decoding that led to the tree's root).
zapgram::Matcher Decoded(const zapgram::CompiledGrammar& g, const Root& root, const zapgram::MatcherOptions& options) {
  zapgram::Matcher m(g, options);
  std::vector<uint32_t> words(g.mask_words());
  for (int32_t id : root.prefix) {
    m.ComputeMask(words.data());
    if (!m.AcceptToken(id)) std::abort();
  }
  return m;
}

const std::vector<Root>& Roots(int set) {
  static std::map<int, std::vector<Root>>* cache = new std::map<int, std::vector<Root>>;
  auto it = cache->find(set);
  if (it != cache->end()) return it->second;
  const size_t count = set == 0 ? 24 : 12, stride = set == 0 ? 211 : 23;
  std::ifstream in(DataPath(std::string("traces/llama3/") + kSets[set] + ".jsonl"));
  std::mt19937_64 rng(17 + set);
  std::vector<Root> roots;
  std::string line;
  zapgram::LoadOptions options;
  options.schema.lenient = true;
  for (size_t n = 0; std::getline(in, line) && roots.size() < count; ++n) {
    if (n % stride != 0) continue;
    const nlohmann::json record = nlohmann::json::parse(line);
    if (!record.value("valid", true)) continue;
    auto grammar = zapgram::Grammar::Load(record.at("grammar").get<std::string>(), ZAPGRAM_DATA_DIR, options);
    if (!grammar.ok()) continue;
    auto compiled = Compile(*grammar);
    if (!compiled.ok()) continue;
    const auto tokens = record.at("tokens").get<std::vector<int32_t>>();
    zapgram::Matcher m(*compiled);
    bool whole = true;
    for (int32_t id : tokens) whole = whole && m.AcceptToken(id);
    if (!whole || !m.IsAccepting() || tokens.size() < 8) continue;
    const size_t cut = tokens.size() / 4 + rng() % (tokens.size() / 2);
    Root root;
    root.grammar = std::make_unique<zapgram::Grammar>(*std::move(grammar));
    root.prefix.assign(tokens.begin(), tokens.begin() + cut);
    root.truth.assign(tokens.begin() + cut, tokens.end());
    roots.push_back(std::move(root));
  }
  return cache->emplace(set, std::move(roots)).first->second;
}

const std::vector<Case>& Cases(int set, size_t nodes) {
  using Key = std::pair<int, size_t>;
  static std::map<Key, std::vector<Case>>* cache = new std::map<Key, std::vector<Case>>;
  auto it = cache->find({set, nodes});
  if (it != cache->end()) return it->second;
  std::mt19937_64 rng(nodes * 31 + set);
  std::vector<Case> cases;
  for (const Root& root : Roots(set)) {
    auto compiled = Compile(*root.grammar);
    if (!compiled.ok()) std::abort();
    const zapgram::Matcher start = Decoded(*compiled, root, {});
    zapgram::testing::DraftShape shape;
    shape.nodes = nodes;
    Case c{&root, zapgram::testing::DraftFrom(start, root.truth, shape, rng), {}};
    for (size_t i = 0; i < c.tree.size(); ++i) c.paths.push_back(c.tree.Path(static_cast<int64_t>(i)));
    cases.push_back(std::move(c));
  }
  return cache->emplace(std::make_pair(set, nodes), std::move(cases)).first->second;
}

enum Method { kTraverse, kCopy, kNaive, kMasks };
enum Regime { kFresh, kWarm, kUncached };

// The calling thread's CPU time: other processes on the machine (a test
// run beside the benchmark) do not count.
struct Clock {
  using time_point = double;
  static double now() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
  }
};
double MicrosSince(double start) { return Clock::now() - start; }

// One method on one tree from `start`; returns the timed microseconds.
double RunOnce(Method method, const Case& c, zapgram::Matcher& start, std::vector<uint32_t>& rows, size_t words) {
  const zapgram::DraftTree view = c.tree.view();
  switch (method) {
    case kTraverse: {
      const auto t0 = Clock::now();
      if (!start.TraverseDraftTree(view, rows.data()).ok()) std::abort();
      return MicrosSince(t0);
    }
    case kCopy: {
      zapgram::masks::DraftWalkOptions walk;
      walk.undo = zapgram::masks::DraftUndo::kCopy;
      const auto t0 = Clock::now();
      zapgram::masks::WalkDraftTree(start.impl(), {view.retrieve_next_token, view.retrieve_next_sibling,
                                                   view.draft_tokens},
                                    rows.data(), words, walk);
      return MicrosSince(t0);
    }
    case kNaive: {
      const auto t0 = Clock::now();
      zapgram::Matcher work = start.Fork();
      for (size_t i = 0; i < c.paths.size(); ++i) {
        size_t taken = 0;
        bool visited = !work.IsFinished();
        for (int32_t id : c.paths[i]) {
          if (!visited) break;
          visited = work.AcceptToken(id);
          taken += visited;
          visited = visited && !work.IsFinished();
        }
        uint32_t* row = rows.data() + i * words;
        if (visited) {
          work.ComputeMask(row);
        } else {
          std::fill_n(row, words, 0u);
        }
        if (!work.Rollback(taken)) work = start.Fork();
      }
      return MicrosSince(t0);
    }
    case kMasks: {
      std::vector<zapgram::Matcher> at;
      std::vector<size_t> index;
      for (size_t i = 0; i < c.paths.size(); ++i) {
        zapgram::Matcher m = start.Fork();
        bool visited = !m.IsFinished();
        for (int32_t id : c.paths[i]) visited = visited && m.AcceptToken(id) && !m.IsFinished();
        if (!visited) continue;
        at.push_back(std::move(m));
        index.push_back(i);
      }
      const auto t0 = Clock::now();
      for (size_t k = 0; k < at.size(); ++k) at[k].ComputeMask(rows.data() + index[k] * words);
      return MicrosSince(t0);
    }
  }
  return 0;
}

void BM_DraftTree(benchmark::State& state) {
  const int set = static_cast<int>(state.range(0));
  const size_t nodes = kSizes[state.range(1)];
  const auto method = static_cast<Method>(state.range(2));
  const auto regime = static_cast<Regime>(state.range(3));
  const std::vector<Case>& cases = Cases(set, nodes);
  size_t total_nodes = 0;
  for (const Case& c : cases) total_nodes += c.tree.size();
  zapgram::MatcherOptions options;
  options.use_cache = regime != kUncached;
  // Warm and uncached: one grammar and start per case, built once.
  std::vector<std::unique_ptr<zapgram::CompiledGrammar>> grammars;
  std::vector<std::unique_ptr<zapgram::Matcher>> starts;
  std::vector<uint32_t> rows;
  const size_t words = (static_cast<size_t>(Llama3().padded_size()) + 31) / 32;
  if (regime != kFresh) {
    for (const Case& c : cases) {
      grammars.push_back(std::make_unique<zapgram::CompiledGrammar>(*Compile(*c.root->grammar)));
      starts.push_back(std::make_unique<zapgram::Matcher>(Decoded(*grammars.back(), *c.root, options)));
      rows.assign(c.tree.size() * words, 0);
      if (regime == kWarm && !starts.back()->TraverseDraftTree(c.tree.view(), rows.data()).ok()) std::abort();
    }
  }
  uint64_t hits = 0, lookups = 0;
  for (auto _ : state) {
    double micros = 0;
    for (size_t k = 0; k < cases.size(); ++k) {
      const Case& c = cases[k];
      rows.assign(c.tree.size() * words, 0);
      if (regime == kFresh) {
        const zapgram::CompiledGrammar g = *Compile(*c.root->grammar);
        zapgram::Matcher start = Decoded(g, *c.root, options);
        const zapgram::CompiledGrammar::CacheStats before = g.cache_stats();
        micros += RunOnce(method, c, start, rows, words);
        const zapgram::CompiledGrammar::CacheStats after = g.cache_stats();
        hits += after.hits - before.hits;
        lookups += after.hits + after.misses - before.hits - before.misses;
      } else {
        micros += RunOnce(method, c, *starts[k], rows, words);
      }
      benchmark::DoNotOptimize(rows.data());
    }
    state.SetIterationTime(micros / 1e6);
  }
  state.counters["nodes"] = static_cast<double>(total_nodes);
  state.counters["trees"] = static_cast<double>(cases.size());
  state.counters["us_per_node"] =
      benchmark::Counter(static_cast<double>(total_nodes) * static_cast<double>(state.iterations()) / 1e6,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  if (lookups > 0) state.counters["tree_hit_rate"] = static_cast<double>(hits) / static_cast<double>(lookups);
  static const char* const kMethods[] = {"traverse", "copy", "naive", "masks"};
  static const char* const kRegimes[] = {"fresh", "warm", "uncached"};
  state.SetLabel(std::string(kSets[set]) + " " + kMethods[method] + " " + kRegimes[regime]);
}

void DraftTreeArgs(benchmark::internal::Benchmark* b) {
  for (int set = 0; set < 2; ++set) {
    for (int size = 0; size < 3; ++size) {
      for (int regime = 0; regime < 3; ++regime) {
        for (int method = 0; method < 4; ++method) {
          if (regime == kUncached && (method == kCopy || method == kNaive)) continue;
          b->Args({set, size, method, regime});
        }
      }
    }
  }
}

BENCHMARK(BM_DraftTree)->Apply(DraftTreeArgs)->UseManualTime()->Iterations(5)->Unit(benchmark::kMillisecond);

}  // namespace
