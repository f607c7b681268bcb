// One compiled grammar shared by many matchers on many threads: what a
// serving engine does. Built and run under ThreadSanitizer by
// `-DZAPGRAM_TSAN=ON` (target zapgram_thread_tests; scripts/test.sh), where
// TSan must report nothing, and as part of zapgram_tests everywhere else.
//
// What is shared, and exercised cold (the first masks of a grammar build
// what later ones find):
//   - the vocabulary's token trie, token-set store (masks/token_sets.h) and
//     mask cache (masks/mask_cache.h), with budgets small enough that entries
//     are evicted while other threads read them;
//   - a grammar's per-state token sets (std::call_once) and on-demand sets;
//   - a lazily determinized regex terminal (grammar/lazy_dfa.h), whose states
//     threads create while others step through them;
//   - the persistent mask pool (BatchMasker, api/batch_masker.cc) and the
//     per-call ComputeMasks; draft trees walked on threads and on the pool.
// Each sequence walks its grammar by its own masks: at step s it takes the
// k-th allowed token, k from the sequence's seed and s, so equal seeds give
// equal walks. Checked: every thread's walk of a seed equals the walk of the
// same seed on one thread afterwards (masks and accepted tokens), and
// BatchMasker/ComputeMasks rows equal the single-matcher masks.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "api/grammar_data.h"
#include "masks/matcher.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "parser/flat_grammar.h"
#include "tests/support/draft_trees.h"
#include "tests/support/test_paths.h"
#include "tests/support/test_scale.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram {
namespace {

constexpr int kSteps = testing::Scaled(64, 24);
constexpr int kThreads = 8;
constexpr int kSeeds = 3;

struct Walk {
  std::vector<size_t> allowed;  // mask counts
  std::vector<int32_t> taken;   // chosen ids
  std::vector<uint64_t> digest; // a hash of each mask
  bool operator==(const Walk& o) const {
    return allowed == o.allowed && taken == o.taken && digest == o.digest;
  }
};

uint64_t Digest(const std::vector<uint32_t>& words) {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t w : words) h = (h ^ w) * 1099511628211ull;
  return h;
}

// The k-th allowed id of a mask (k taken modulo the count), -1 when none.
int32_t Pick(const std::vector<uint32_t>& words, size_t allowed, uint64_t k) {
  if (allowed == 0) return -1;
  uint64_t target = k % allowed;
  for (size_t w = 0; w < words.size(); ++w) {
    const uint32_t bits = words[w];
    const uint64_t n = static_cast<uint64_t>(__builtin_popcount(bits));
    if (target >= n) {
      target -= n;
      continue;
    }
    uint32_t b = bits;
    for (uint64_t i = 0; i < target; ++i) b &= b - 1;
    return static_cast<int32_t>(w * 32 + static_cast<size_t>(__builtin_ctz(b)));
  }
  return -1;
}

uint64_t StepKey(int seed, int step) {
  return (static_cast<uint64_t>(seed) + 1) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step) * 7919;
}

// Up to `steps` random steps of `matcher` (each: mask, pick, accept).
Walk WalkMatcher(Matcher& matcher, size_t mask_words, int seed, int steps = kSteps) {
  Walk walk;
  std::vector<uint32_t> words(mask_words);
  for (int step = 0; step < steps; ++step) {
    const size_t allowed = matcher.ComputeMask(words.data());
    EXPECT_TRUE(matcher.status().ok()) << matcher.status();
    const int32_t id = Pick(words, allowed, StepKey(seed, step));
    walk.allowed.push_back(allowed);
    walk.digest.push_back(Digest(words));
    walk.taken.push_back(id);
    if (id < 0 || !matcher.AcceptToken(id) || matcher.IsFinished()) break;
  }
  return walk;
}

Walk WalkGrammar(const CompiledGrammar& grammar, int seed) {
  Matcher matcher(grammar);
  return WalkMatcher(matcher, grammar.mask_words(), seed);
}

struct Shared {
  Vocabulary vocabulary;
  std::vector<Grammar> grammars;
};

Shared& Load() {
  static Shared* shared = [] {
    VocabularyOptions options;
    // Small budgets: entries are evicted while other threads use them.
    options.mask_cache_bytes = size_t{1} << 20;
    options.token_set_cache_bytes = size_t{1} << 20;
    absl::StatusOr<Vocabulary> v =
        Vocabulary::Load(testing::DataPath("tokenizers/llama3.tokenizer.json"), options);
    EXPECT_TRUE(v.ok()) << v.status();
    auto* s = new Shared{*std::move(v), {}};
    for (const char* spec : {"builtin:json", "regex:(a|b|c)*a(a|b|c){9}(,[0-9]{1,3})*",
                             "schema:jsonschema/maskbench/Github_medium---o15172.schema.json",
                             "grammars/lark/syncode/json.lark"}) {
      absl::StatusOr<Grammar> g = Grammar::Load(spec, testing::DataPath(""));
      EXPECT_TRUE(g.ok()) << spec << ": " << g.status();
      s->grammars.push_back(*std::move(g));
    }
    return s;
  }();
  return *shared;
}

TEST(SharedGrammar, ManyThreadsOneCompiledGrammar) {
  Shared& shared = Load();
  const size_t n = shared.grammars.size();
  // Every thread compiles every grammar at once (the trie and token-set store
  // are per vocabulary); then all share thread 0's compiled grammars.
  std::vector<std::vector<std::unique_ptr<CompiledGrammar>>> compiled(kThreads);
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (size_t g = 0; g < n; ++g) {
          absl::StatusOr<CompiledGrammar> c = CompiledGrammar::Compile(shared.grammars[g], shared.vocabulary);
          if (c.ok()) compiled[t].push_back(std::make_unique<CompiledGrammar>(*std::move(c)));
        }
      });
    }
    for (std::thread& th : threads) th.join();
  }
  for (int t = 0; t < kThreads; ++t) ASSERT_EQ(compiled[t].size(), n);
  // Walks on many threads, cold caches: thread t walks seeds t % kSeeds and
  // (t + 1) % kSeeds of every grammar.
  std::vector<std::vector<std::vector<Walk>>> walks(kThreads);  // [thread][grammar][seed]
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        walks[t].assign(n, std::vector<Walk>(kSeeds));
        for (int k = 0; k < 2; ++k) {
          const int seed = (t + k) % kSeeds;
          for (size_t g = 0; g < n; ++g) walks[t][g][seed] = WalkGrammar(*compiled[0][g], seed);
        }
      });
    }
    for (std::thread& th : threads) th.join();
  }
  size_t masks = 0;
  for (const auto& per_thread : walks) {
    for (const auto& per_grammar : per_thread) {
      for (const Walk& w : per_grammar) masks += w.allowed.size();
    }
  }
  std::printf("%d threads, %zu grammars: %zu masks on shared compiled grammars\n", kThreads, n, masks);
  for (size_t g = 0; g < n; ++g) {
    for (int seed = 0; seed < kSeeds; ++seed) {
      const Walk reference = WalkGrammar(*compiled[0][g], seed);
      std::printf("  grammar %zu seed %d: %zu steps, first mask %zu ids\n", g, seed, reference.allowed.size(),
                  reference.allowed.empty() ? size_t{0} : reference.allowed[0]);
      EXPECT_GT(reference.allowed.size(), 1u);
      // Another thread's compiled copy walks the same way.
      EXPECT_TRUE(WalkGrammar(*compiled[kThreads - 1][g], seed) == reference);
      for (int t = 0; t < kThreads; ++t) {
        if (seed != t % kSeeds && seed != (t + 1) % kSeeds) continue;
        EXPECT_TRUE(walks[t][g][seed] == reference) << "grammar " << g << " seed " << seed << " thread " << t;
      }
    }
  }
}

// The batch calls fill the same rows as one matcher at a time.
// Forks of one matcher walked on threads at once, each its own way, while
// the original walks on too: every walk equals the same walk of a fork
// taken and walked alone.
TEST(SharedGrammar, ForksWalkApartOnThreads) {
  Shared& shared = Load();
  for (const Grammar& grammar : shared.grammars) {
    absl::StatusOr<CompiledGrammar> g = CompiledGrammar::Compile(grammar, shared.vocabulary);
    ASSERT_TRUE(g.ok()) << g.status();
    Matcher root(*g);
    WalkMatcher(root, g->mask_words(), /*seed=*/99, kSteps / 2);
    std::vector<Walk> expected;
    for (int t = 0; t <= kThreads; ++t) {
      Matcher alone = root.Fork();
      expected.push_back(WalkMatcher(alone, g->mask_words(), t));
    }
    std::vector<Matcher> forks;
    for (int t = 0; t < kThreads; ++t) forks.push_back(root.Fork());
    std::vector<Walk> got(kThreads + 1);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] { got[t] = WalkMatcher(forks[t], g->mask_words(), t); });
    }
    got[kThreads] = WalkMatcher(root, g->mask_words(), kThreads);
    for (std::thread& th : threads) th.join();
    for (int t = 0; t <= kThreads; ++t) {
      EXPECT_EQ(got[t].digest, expected[t].digest) << "fork " << t;
      EXPECT_EQ(got[t].taken, expected[t].taken) << "fork " << t;
    }
  }
}

TEST(SharedGrammar, BatchMaskerAndComputeMasksMatchSingleMasks) {
  Shared& shared = Load();
  std::vector<std::unique_ptr<CompiledGrammar>> compiled;
  for (const Grammar& g : shared.grammars) {
    absl::StatusOr<CompiledGrammar> c = CompiledGrammar::Compile(g, shared.vocabulary);
    ASSERT_TRUE(c.ok()) << c.status();
    compiled.push_back(std::make_unique<CompiledGrammar>(*std::move(c)));
  }
  // Two matchers per (grammar, seed), stepped in lockstep.
  std::vector<std::unique_ptr<Matcher>> batch, single;
  std::vector<int> seed_of;
  for (size_t g = 0; g < compiled.size(); ++g) {
    for (int seed = 0; seed < kSeeds; ++seed) {
      batch.push_back(std::make_unique<Matcher>(*compiled[g]));
      single.push_back(std::make_unique<Matcher>(*compiled[g]));
      seed_of.push_back(seed);
    }
  }
  const size_t words = compiled[0]->mask_words();
  std::vector<uint32_t> rows(batch.size() * words), one(words);
  std::vector<Matcher*> pointers;
  std::vector<uint32_t*> row_pointers;
  for (size_t i = 0; i < batch.size(); ++i) {
    pointers.push_back(batch[i].get());
    row_pointers.push_back(rows.data() + i * words);
  }
  std::vector<size_t> allowed(batch.size());
  BatchMasker masker(4);
  std::vector<bool> live(batch.size(), true);
  for (int step = 0; step < kSteps; ++step) {
    if (step % 2 == 0) {
      masker.Compute(pointers, row_pointers, absl::MakeSpan(allowed));
    } else {
      ComputeMasks(pointers, rows.data(), words, 4);
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!live[i]) continue;
      const size_t count = single[i]->ComputeMask(one.data());
      ASSERT_TRUE(std::equal(one.begin(), one.end(), rows.begin() + static_cast<ptrdiff_t>(i * words)))
          << "matcher " << i << " step " << step;
      if (step % 2 == 0) {
        EXPECT_EQ(allowed[i], count);
      }
      const int32_t id = Pick(one, count, StepKey(seed_of[i], step));
      if (id < 0 || !single[i]->AcceptToken(id) || single[i]->IsFinished()) {
        live[i] = false;
        batch[i]->Reset();
        single[i]->Reset();
        continue;
      }
      ASSERT_TRUE(batch[i]->AcceptToken(id));
    }
  }
}

// Draft trees (masks/draft_tree.h) of forks of one state walked on threads
// at once, each fork by itself and all of them through the batch form on a
// pool: every tree's rows equal the naive walk's (a fork fed each node's
// path), computed on one thread first. Covers the lexed grammar too.
TEST(SharedGrammar, DraftTreesOnThreads) {
  Shared& shared = Load();
  for (const Grammar& grammar : shared.grammars) {
    absl::StatusOr<CompiledGrammar> g = CompiledGrammar::Compile(grammar, shared.vocabulary);
    ASSERT_TRUE(g.ok()) << g.status();
    Matcher root(*g);
    WalkMatcher(root, g->mask_words(), /*seed=*/7, kSteps / 4);
    std::mt19937_64 rng(11);
    testing::DraftShape shape;
    shape.nodes = testing::Scaled<size_t>(48, 24);
    shape.foreign_rate = 0.1;
    std::vector<testing::DraftedTree> trees;
    std::vector<std::vector<uint32_t>> expected;
    for (int t = 0; t < kThreads; ++t) {
      trees.push_back(testing::DraftFrom(root, {}, shape, rng));
      expected.push_back(testing::NaiveRows(root, trees.back()));
    }
    std::vector<Matcher> forks;
    for (int t = 0; t < kThreads; ++t) forks.push_back(root.Fork());
    std::vector<std::vector<uint32_t>> got(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        got[t].assign(trees[t].size() * g->mask_words(), 0);
        for (int round = 0; round < 3; ++round) {
          absl::StatusOr<bool> done = forks[t].TraverseDraftTree(trees[t].view(), got[t].data());
          EXPECT_TRUE(done.ok() && *done);
        }
      });
    }
    for (std::thread& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(got[t], expected[t]) << "thread " << t;
    std::vector<Matcher*> pointers;
    std::vector<DraftTree> views;
    std::vector<uint32_t*> rows;
    for (int t = 0; t < kThreads; ++t) {
      pointers.push_back(&forks[t]);
      views.push_back(trees[t].view());
      std::fill(got[t].begin(), got[t].end(), 0xFFFFFFFFu);
      rows.push_back(got[t].data());
    }
    std::unique_ptr<bool[]> completed(new bool[kThreads]());
    BatchMasker pool(4);
    ASSERT_TRUE(pool.TraverseDraftTrees(pointers, views, rows, {}, {}, absl::MakeSpan(completed.get(), kThreads)).ok());
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_TRUE(completed[t]);
      EXPECT_EQ(got[t], expected[t]) << "batch item " << t;
    }
  }
}

// Loads of JSON Schemas on several threads at once, each thread in its own
// order, through the shared regex store at a 256 KiB budget: every load
// gives the tables one load gives alone with the store off.
TEST(SharedRegexStore, ConcurrentLoadsCompileToTheSameTables) {
  std::ifstream in(testing::DataPath("traces/llama3/maskbench.jsonl"));
  ASSERT_TRUE(in.good());
  std::vector<std::string> specs;
  std::string line;
  const size_t wanted = testing::Scaled<size_t>(24, 10);
  for (size_t n = 0; std::getline(in, line) && specs.size() < wanted; ++n) {
    if (n % 32 != 0) continue;
    const std::string spec = nlohmann::json::parse(line)["grammar"].get<std::string>();
    if (spec.rfind("schema:", 0) == 0 && std::find(specs.begin(), specs.end(), spec) == specs.end()) {
      specs.push_back(spec);
    }
  }
  LoadOptions options;
  options.schema.lenient = true;
  Grammar::SetSharedRegexCacheBytes(0);
  std::vector<uint64_t> reference(specs.size(), 0);
  for (size_t i = 0; i < specs.size(); ++i) {
    absl::StatusOr<Grammar> g = Grammar::Load(specs[i], testing::DataPath(""), options);
    if (g.ok()) reference[i] = parser::TablesDigest(g->data().flat);
  }
  Grammar::SetSharedRegexCacheBytes(size_t{256} << 10);
  const uint64_t hits_before = Grammar::GetSharedRegexCacheStats().hits;
  constexpr int kLoaders = 4;
  std::vector<std::vector<uint64_t>> got(kLoaders, std::vector<uint64_t>(specs.size(), 0));
  std::vector<std::thread> threads;
  for (int t = 0; t < kLoaders; ++t) {
    threads.emplace_back([&, t] {
      for (size_t k = 0; k < specs.size(); ++k) {
        // An order per thread: rotated, and reversed on odd threads.
        const size_t r = (k + static_cast<size_t>(t) * specs.size() / kLoaders) % specs.size();
        const size_t i = t % 2 == 1 ? specs.size() - 1 - r : r;
        absl::StatusOr<Grammar> g = Grammar::Load(specs[i], testing::DataPath(""), options);
        if (g.ok()) got[t][i] = parser::TablesDigest(g->data().flat);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  const SharedRegexCacheStats stats = Grammar::GetSharedRegexCacheStats();
  std::printf("%zu schemas x %d threads: %llu DFAs served by the store, %llu evictions\n", specs.size(), kLoaders,
              static_cast<unsigned long long>(stats.hits - hits_before),
              static_cast<unsigned long long>(stats.evictions));
  for (int t = 0; t < kLoaders; ++t) {
    for (size_t i = 0; i < specs.size(); ++i) EXPECT_EQ(got[t][i], reference[i]) << specs[i] << " thread " << t;
  }
  EXPECT_GT(stats.hits, hits_before);
  Grammar::SetSharedRegexCacheBytes(size_t{16} << 20);  // the default again
}

// A Lark grammar's token classes built in steps by whichever threads'
// matchers miss the cache (one step at a time, try-locked), and taken up
// by each matcher between its masks: the walks equal those of a grammar
// that never uses classes.
TEST(SharedGrammar, TokenClassesBuiltAlongConcurrentMasks) {
  Shared& shared = Load();
  absl::StatusOr<Grammar> lark = Grammar::Load("grammars/lark/syncode/sql.lark", testing::DataPath(""));
  ASSERT_TRUE(lark.ok()) << lark.status();
  absl::StatusOr<CompiledGrammar> stepped = CompiledGrammar::Compile(*lark, shared.vocabulary);
  absl::StatusOr<CompiledGrammar> plain = CompiledGrammar::Compile(*lark, shared.vocabulary);
  ASSERT_TRUE(stepped.ok() && plain.ok());
  // Due at once, as if its masks had already cost what the classes will.
  stepped->impl()->AddMissTime(1e7);
  ASSERT_TRUE(stepped->impl()->TokenClassesDue());
  // Thread t walks seeds t, t + kThreads, ...: many distinct states, so
  // many misses, each a chance to take a step.
  // Rounds of walks until the classes are complete (and one more, where
  // every matcher starts with them).
  constexpr int kSeedsPerRound = 4;
  std::vector<Walk> walks;
  bool complete_before = false;
  for (int round = 0; round < 40 && !complete_before; ++round) {
    complete_before = stepped->impl()->class_masks_if_built() != nullptr;
    const int first = static_cast<int>(walks.size());
    walks.resize(walks.size() + kThreads * kSeedsPerRound);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int k = 0; k < kSeedsPerRound; ++k) {
          const int seed = first + t + k * kThreads;
          walks[seed] = WalkGrammar(*stepped, seed);
        }
      });
    }
    for (std::thread& th : threads) th.join();
  }
  EXPECT_TRUE(complete_before) << "classes not complete after " << stepped->impl()->mask_misses() << " misses";
  std::printf("token classes built along %zu walks (%llu misses)\n", walks.size(),
              static_cast<unsigned long long>(stepped->impl()->mask_misses()));
  MatcherOptions never;
  never.token_classes = TokenClassUse::kNever;
  for (int seed = 0; seed < static_cast<int>(walks.size()); ++seed) {
    Walk reference;
    Matcher matcher(*plain, never);
    std::vector<uint32_t> words(plain->mask_words());
    for (int step = 0; step < kSteps; ++step) {
      const size_t allowed = matcher.ComputeMask(words.data());
      const int32_t id = Pick(words, allowed, StepKey(seed, step));
      reference.allowed.push_back(allowed);
      reference.digest.push_back(Digest(words));
      reference.taken.push_back(id);
      if (id < 0 || !matcher.AcceptToken(id) || matcher.IsFinished()) break;
    }
    EXPECT_TRUE(walks[seed] == reference) << "seed " << seed;
  }
}

}  // namespace
}  // namespace zapgram
