// The samplers (sampling/samplers.h) on toy grammars and table-driven toy
// models, where P|L_M can be enumerated: the chi-square exactness test of
// RS, ARS, RSFT and CARS (p > 1e-3 with fixed seeds) and the same test
// rejecting GCD (the negative control); the enumeration checked against a
// brute force with RE2 as the grammar oracle; the proposal mass p_root never
// below P(L_M) and never rising; budgets, freezing, the stats.
//
// ZAPGRAM_SAMPLER_TEST_SAMPLES widens the number of valid samples per method
// (default 12000) for offline runs; ZAPGRAM_SAMPLER_TEST_SEED changes the seed.
#include "sampling/samplers.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "sampling/exact_distribution.h"
#include "sampling/smc.h"
#include "tests/support/test_scale.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram::sampling {
namespace {

// A bigram table: row r (r = 1 + last token, 0 at the start) gives weights
// of the next token; rows are normalized. Deterministic and cheap.
class BigramModel final : public LanguageModel {
 public:
  explicit BigramModel(std::vector<std::vector<double>> rows) : rows_(std::move(rows)) {}
  int32_t vocab_size() const override { return static_cast<int32_t>(rows_[0].size()); }
  absl::Status NextLogProbs(absl::Span<const int32_t> prefix, std::vector<float>* logprobs) override {
    ++calls;
    const std::vector<double>& row = rows_[prefix.empty() ? 0 : 1 + prefix.back()];
    double total = 0;
    for (double w : row) total += w;
    logprobs->resize(row.size());
    for (size_t i = 0; i < row.size(); ++i) {
      (*logprobs)[i] = row[i] > 0 ? static_cast<float>(std::log(row[i] / total)) : -INFINITY;
    }
    return absl::OkStatus();
  }
  int64_t calls = 0;

 private:
  std::vector<std::vector<double>> rows_;
};

struct ToySetup {
  std::string name;
  std::vector<std::string> tokens;  // the last one is EOS
  std::string gbnf;
  std::string regex;                // the same language for RE2 (bounded where needed)
  std::vector<std::vector<double>> rows;
  int32_t max_tokens;
};

// Tokens a, b, c, ab, bc, EOS; L = a [bc]* c. The model likes to start with
// c (invalid) and to repeat a (invalid after the start), so the masked
// renormalization of GCD inflates some branches: GCD is visibly biased.
ToySetup Letters() {
  return {"letters",
          {"a", "b", "c", "ab", "bc", ""},
          "root ::= \"a\" [bc]* \"c\"\n",
          "a[bc]*c",
          {
              // a    b    c    ab   bc   EOS
              {3.0, 0.2, 4.0, 1.0, 0.5, 0.3},  // start
              {4.0, 1.0, 0.5, 0.2, 0.3, 0.5},  // after a
              {0.5, 1.0, 1.5, 0.3, 0.5, 1.0},  // after b
              {0.5, 0.5, 0.5, 0.5, 0.5, 3.0},  // after c
              {0.3, 0.5, 2.0, 0.5, 0.5, 1.0},  // after ab
              {1.0, 0.5, 1.0, 0.3, 0.3, 3.0},  // after bc
              {1.0, 1.0, 1.0, 1.0, 1.0, 1.0},  // after EOS (unused)
          },
          6};
}

// Tokens (, ), x, (x, x), EOS; L = balanced parentheses around one x, cut
// at 7 tokens (the regex lists the depths that fit).
ToySetup Parens() {
  std::string regex = "x";
  for (int depth = 1; depth <= 7; ++depth) {
    regex.append("|");
    for (int i = 0; i < depth; ++i) regex.append("\\(");
    regex.append("x");
    for (int i = 0; i < depth; ++i) regex.append("\\)");
  }
  return {"parens",
          {"(", ")", "x", "(x", "x)", ""},
          "root ::= \"(\" root \")\" | \"x\"\n",
          regex,
          {
              // (    )    x    (x   x)   EOS
              {3.0, 1.0, 0.5, 1.0, 1.0, 0.2},
              {2.0, 0.5, 0.5, 1.0, 0.5, 0.2},
              {0.5, 2.0, 0.2, 0.2, 0.2, 1.0},
              {0.3, 1.0, 0.5, 0.3, 1.0, 1.0},
              {0.3, 2.0, 0.2, 0.3, 0.2, 0.5},
              {0.2, 2.0, 0.2, 0.2, 0.2, 1.5},
              {1.0, 1.0, 1.0, 1.0, 1.0, 1.0},
          },
          7};
}

struct Compiled {
  CompiledGrammar grammar;
};

Compiled Compile(const ToySetup& setup) {
  const int32_t eos = static_cast<int32_t>(setup.tokens.size()) - 1;
  absl::StatusOr<Vocabulary> vocab = Vocabulary::FromTokens(setup.tokens, {eos});
  EXPECT_TRUE(vocab.ok()) << vocab.status();
  absl::StatusOr<Grammar> grammar = Grammar::FromGbnf(setup.gbnf);
  EXPECT_TRUE(grammar.ok()) << grammar.status();
  absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*grammar, *vocab);
  EXPECT_TRUE(compiled.ok()) << compiled.status();
  return {*std::move(compiled)};
}

int64_t SamplesPerMethod() {
  const char* env = std::getenv("ZAPGRAM_SAMPLER_TEST_SAMPLES");
  return env != nullptr ? std::atoll(env) : 12000;
}

uint64_t TestSeed() {
  const char* env = std::getenv("ZAPGRAM_SAMPLER_TEST_SEED");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 20261121;
}

// The enumeration agrees with a brute force over every token sequence of at
// most M tokens, RE2 deciding membership and the model's table giving P.
TEST(ExactDistributionTest, EnumerationMatchesRe2BruteForce) {
  for (const ToySetup& setup : {Letters(), Parens()}) {
    Compiled c = Compile(setup);
    BigramModel model(setup.rows);
    absl::StatusOr<ExactDistribution> exact = EnumerateTarget(c.grammar, &model, setup.max_tokens, 0.0, 1 << 20);
    ASSERT_TRUE(exact.ok()) << exact.status();
    const RE2 re(setup.regex);
    ASSERT_TRUE(re.ok());
    const int32_t eos = static_cast<int32_t>(setup.tokens.size()) - 1;
    std::map<std::vector<int32_t>, double> brute;
    double mass = 0;
    std::vector<std::vector<int32_t>> frontier = {{}};
    std::vector<float> lp;
    for (int32_t depth = 0; depth <= setup.max_tokens; ++depth) {
      std::vector<std::vector<int32_t>> next;
      for (const auto& prefix : frontier) {
        std::string text;
        for (int32_t t : prefix) text += setup.tokens[t];
        if (RE2::FullMatch(text, re)) {
          double p = 1;
          std::vector<int32_t> s = prefix;
          s.push_back(eos);
          for (size_t i = 0; i < s.size(); ++i) {
            ASSERT_TRUE(model.NextLogProbs(absl::MakeSpan(s.data(), i), &lp).ok());
            p *= std::exp(static_cast<double>(lp[s[i]]));
          }
          brute[s] = p;
          mass += p;
        }
        if (depth == setup.max_tokens) continue;
        for (int32_t t = 0; t < eos; ++t) {
          next.push_back(prefix);
          next.back().push_back(t);
        }
      }
      frontier = std::move(next);
    }
    ASSERT_EQ(brute.size(), exact->probability.size()) << setup.name;
    EXPECT_NEAR(mass, exact->valid_mass, 1e-6 * mass);
    EXPECT_EQ(exact->cut_mass_bound, 0.0);
    for (const auto& [s, p] : brute) {
      ASSERT_TRUE(exact->probability.count(s)) << setup.name;
      EXPECT_NEAR(exact->probability.at(s), p / mass, 1e-6);
    }
  }
}

TEST(ExactDistributionTest, ChiSquareSurvivalMatchesKnownQuantiles) {
  // Upper quantiles of the chi-square distribution (standard tables).
  EXPECT_NEAR(ChiSquareSurvival(3.841, 1), 0.05, 1e-4);
  EXPECT_NEAR(ChiSquareSurvival(18.307, 10), 0.05, 1e-4);
  EXPECT_NEAR(ChiSquareSurvival(23.209, 10), 0.01, 1e-4);
  EXPECT_NEAR(ChiSquareSurvival(124.342, 100), 0.05, 1e-4);
  EXPECT_NEAR(ChiSquareSurvival(2.0, 2), std::exp(-1.0), 1e-12);  // dof 2: exp(-x/2)
  EXPECT_NEAR(ChiSquareSurvival(0.0, 5), 1.0, 1e-12);
  EXPECT_LT(ChiSquareSurvival(400.0, 20), 1e-60);
}

struct RunResult {
  std::vector<std::vector<int32_t>> samples;
  SamplerStats stats;
};

RunResult RunSampler(Method method, const CompiledGrammar& grammar, LanguageModel* model, SamplerOptions options,
              int64_t count) {
  absl::StatusOr<std::unique_ptr<Sampler>> sampler = Sampler::Create(method, grammar, model, options);
  EXPECT_TRUE(sampler.ok()) << sampler.status();
  absl::StatusOr<std::vector<std::vector<int32_t>>> samples = (*sampler)->Sample(count);
  EXPECT_TRUE(samples.ok()) << samples.status();
  return {samples.ok() ? *samples : std::vector<std::vector<int32_t>>{}, (*sampler)->stats()};
}

// The heart: each exact method passes the chi-square test against the
// enumerated P|L_M; GCD, through the same test, fails it.
TEST(SamplersTest, ExactMethodsPassChiSquareAndGcdFails) {
  const int64_t n = SamplesPerMethod();
  for (const ToySetup& setup : {Letters(), Parens()}) {
    Compiled c = Compile(setup);
    BigramModel model(setup.rows);
    absl::StatusOr<ExactDistribution> exact = EnumerateTarget(c.grammar, &model, setup.max_tokens, 0.0, 1 << 20);
    ASSERT_TRUE(exact.ok()) << exact.status();
    for (Method method : {Method::kRs, Method::kArs, Method::kRsft, Method::kCars, Method::kGcd}) {
      SamplerOptions options;
      options.max_tokens = setup.max_tokens;
      options.seed = TestSeed();
      RunResult run = RunSampler(method, c.grammar, &model, options, n);
      ASSERT_EQ(static_cast<int64_t>(run.samples.size()), n);
      const Divergence d = CompareToExact(*exact, run.samples);
      std::printf("[exactness] %-7s %-4s p=%.3g chi2=%.1f bins=%d KL=%.5f TV=%.4f draws=%lld lm_calls=%lld "
                  "trie_nodes=%lld reuse=%.3f\n",
                  setup.name.c_str(), std::string(MethodName(method)).c_str(), d.p_value, d.chi_square, d.bins,
                  d.kl, d.tv, static_cast<long long>(run.stats.draws),
                  static_cast<long long>(run.stats.lm_calls), static_cast<long long>(run.stats.trie_nodes),
                  run.stats.trie_reuse());
      EXPECT_EQ(d.outside, 0);
      EXPECT_GE(d.bins, 5);
      if (method == Method::kGcd) {
        EXPECT_LT(d.p_value, 1e-6) << setup.name << ": the negative control passed";
        EXPECT_EQ(run.stats.draws, run.stats.valid + run.stats.truncated);  // dead ends only at M
      } else {
        EXPECT_GT(d.p_value, 1e-3) << setup.name << " " << MethodName(method);
      }
    }
  }
}

// Budget-aware masks (SamplerOptions::budget_aware): CARS and ARS stay exact
// (a budget-masked token is an invalid prefix of L_M), GCD never runs out of
// length (every draw valid, none truncated) and stays biased.
TEST(SamplersTest, BudgetAwareMasksKeepExactnessAndGcdAlwaysFinishes) {
  const int64_t n = SamplesPerMethod() / 2;
  for (const ToySetup& setup : {Letters(), Parens()}) {
    Compiled c = Compile(setup);
    BigramModel model(setup.rows);
    absl::StatusOr<ExactDistribution> exact = EnumerateTarget(c.grammar, &model, setup.max_tokens, 0.0, 1 << 20);
    ASSERT_TRUE(exact.ok()) << exact.status();
    for (Method method : {Method::kCars, Method::kArs, Method::kGcd}) {
      SamplerOptions options{.max_tokens = setup.max_tokens, .seed = TestSeed() + 2, .budget_aware = true};
      RunResult run = RunSampler(method, c.grammar, &model, options, n);
      ASSERT_EQ(static_cast<int64_t>(run.samples.size()), n);
      const Divergence d = CompareToExact(*exact, run.samples);
      std::printf("[budget-aware] %-7s %-4s p=%.3g TV=%.4f draws=%lld truncated=%lld lm_calls=%lld\n",
                  setup.name.c_str(), std::string(MethodName(method)).c_str(), d.p_value, d.tv,
                  static_cast<long long>(run.stats.draws), static_cast<long long>(run.stats.truncated),
                  static_cast<long long>(run.stats.lm_calls));
      EXPECT_EQ(d.outside, 0);
      if (method == Method::kGcd) {
        EXPECT_EQ(run.stats.draws, run.stats.valid) << setup.name;
        EXPECT_LT(d.p_value, 1e-6) << setup.name << ": budget-aware GCD is still biased";
      } else {
        EXPECT_GT(d.p_value, 1e-3) << setup.name << " " << MethodName(method);
      }
    }
  }
}

// A frozen trie stays exact: CARS frozen after 3 draws, ARS after 10.
TEST(SamplersTest, FrozenTriesStayExact) {
  ToySetup setup = Letters();
  Compiled c = Compile(setup);
  BigramModel model(setup.rows);
  absl::StatusOr<ExactDistribution> exact = EnumerateTarget(c.grammar, &model, setup.max_tokens, 0.0, 1 << 20);
  ASSERT_TRUE(exact.ok());
  for (auto [method, after] : {std::pair{Method::kCars, 3}, std::pair{Method::kArs, 10}}) {
    SamplerOptions options;
    options.max_tokens = setup.max_tokens;
    options.seed = 7;
    options.freeze_after_draws = after;
    RunResult run = RunSampler(method, c.grammar, &model, options, SamplesPerMethod() / 2);
    EXPECT_TRUE(run.stats.trie_frozen);
    EXPECT_EQ(run.stats.frozen_at_draw, after);
    EXPECT_GT(CompareToExact(*exact, run.samples).p_value, 1e-3) << MethodName(method);
  }
}

// The trie's byte budget keeps every exact method exact. At one byte, every
// node off the draw's path is evicted or stripped at each step (and the trie
// freezes after the first draw, since its records alone exceed the budget);
// at half of what an unbudgeted run holds, it evicts while it still learns.
TEST(SamplersTest, ExactMethodsStayExactUnderTightTrieBudgets) {
  const int64_t n = SamplesPerMethod() / 2;
  for (const ToySetup& setup : {Letters(), Parens()}) {
    Compiled c = Compile(setup);
    BigramModel model(setup.rows);
    absl::StatusOr<ExactDistribution> exact = EnumerateTarget(c.grammar, &model, setup.max_tokens, 0.0, 1 << 20);
    ASSERT_TRUE(exact.ok()) << exact.status();
    for (Method method : {Method::kRs, Method::kArs, Method::kRsft, Method::kCars}) {
      SamplerOptions options;
      options.max_tokens = setup.max_tokens;
      options.seed = TestSeed() + 1;
      options.max_trie_bytes = 0;  // no budget
      const RunResult unbounded = RunSampler(method, c.grammar, &model, options, n);
      EXPECT_EQ(unbounded.stats.trie_evictions + unbounded.stats.trie_strips + unbounded.stats.trie_refetches, 0);
      for (const size_t budget : {size_t{1}, static_cast<size_t>(unbounded.stats.trie_bytes / 2)}) {
        options.max_trie_bytes = budget;
        RunResult run = RunSampler(method, c.grammar, &model, options, n);
        ASSERT_EQ(static_cast<int64_t>(run.samples.size()), n);
        const Divergence d = CompareToExact(*exact, run.samples);
        std::printf("[budget] %-7s %-4s budget=%zu p=%.3g draws=%lld lm_calls=%lld nodes=%lld bytes=%lld "
                    "evictions=%lld strips=%lld refetches=%lld frozen_at=%lld\n",
                    setup.name.c_str(), std::string(MethodName(method)).c_str(), budget, d.p_value,
                    static_cast<long long>(run.stats.draws), static_cast<long long>(run.stats.lm_calls),
                    static_cast<long long>(run.stats.trie_nodes), static_cast<long long>(run.stats.trie_bytes),
                    static_cast<long long>(run.stats.trie_evictions), static_cast<long long>(run.stats.trie_strips),
                    static_cast<long long>(run.stats.trie_refetches),
                    static_cast<long long>(run.stats.frozen_at_draw));
        EXPECT_EQ(d.outside, 0);
        EXPECT_GT(d.p_value, 1e-3) << setup.name << " " << MethodName(method) << " budget " << budget;
        EXPECT_GT(run.stats.trie_evictions + run.stats.trie_strips, 0);
        EXPECT_GT(run.stats.trie_refetches, 0);
        EXPECT_GT(run.stats.lm_calls, unbounded.stats.lm_calls);  // refetches are model calls
        EXPECT_TRUE(run.stats.trie_frozen || run.stats.trie_bytes <= static_cast<int64_t>(budget));
        if (budget == 1) {
          EXPECT_EQ(run.stats.frozen_at_draw, 1);
        } else if (method == Method::kRs) {
          EXPECT_FALSE(run.stats.trie_frozen);  // RS keeps no record: it can always evict
          EXPECT_GT(run.stats.trie_nodes, 1);
        }
      }
    }
  }
}

// p_root is the proposal's mass: it never rises, never falls below P(L_M)
// (a recorded valid prefix would break exactness), and CARS drives it down to
// P(L_M) on a finite language. Acceptance rises: CARS's second half accepts
// at least as often as its first.
TEST(SamplersTest, RootMassBoundsAndAcceptanceRises) {
  for (const ToySetup& setup : {Letters(), Parens()}) {
    Compiled c = Compile(setup);
    BigramModel model(setup.rows);
    absl::StatusOr<ExactDistribution> exact = EnumerateTarget(c.grammar, &model, setup.max_tokens, 0.0, 1 << 20);
    ASSERT_TRUE(exact.ok());
    for (Method method : {Method::kArs, Method::kRsft, Method::kCars}) {
      SamplerOptions options;
      options.max_tokens = setup.max_tokens;
      options.seed = 99;
      RunResult run = RunSampler(method, c.grammar, &model, options, 2000);
      double last = 1.0 + 1e-9;
      for (double mass : run.stats.root_mass_by_draw) {
        EXPECT_LE(mass, last + 1e-12);
        EXPECT_GE(mass, exact->valid_mass - 1e-7) << setup.name << " " << MethodName(method);
        last = mass;
      }
      if (method == Method::kCars) {
        // On the small language CARS has seen every prefix: p_root = P(L_M).
        // On the larger one the unseen prefixes keep a little mass.
        const double gap = setup.name == "parens" ? 1e-5 : 0.05 * exact->valid_mass;
        EXPECT_NEAR(run.stats.root_mass, exact->valid_mass, gap) << setup.name;
        const auto& v = run.stats.valid_by_draw;
        const size_t half = v.size() / 2;
        int64_t first = 0, second = 0;
        for (size_t i = 0; i < half; ++i) first += v[i];
        for (size_t i = half; i < 2 * half; ++i) second += v[i];
        EXPECT_LE(first, second);
        // Every prefix's distribution is asked once: model calls = trie nodes.
        EXPECT_EQ(run.stats.lm_calls, run.stats.trie_nodes);
        EXPECT_GT(run.stats.trie_reuse(), 0.9);
      }
    }
  }
}

TEST(SamplersTest, BudgetsStopTheRun) {
  ToySetup setup = Parens();
  Compiled c = Compile(setup);
  BigramModel model(setup.rows);
  SamplerOptions options;
  options.max_tokens = setup.max_tokens;
  options.max_draws = 25;
  RunResult run = RunSampler(Method::kRs, c.grammar, &model, options, 1000000);
  EXPECT_EQ(run.stats.draws, 25);
  EXPECT_EQ(run.stats.stop, StopReason::kMaxDraws);
  EXPECT_EQ(static_cast<int64_t>(run.samples.size()), run.stats.valid);

  options.max_draws = 0;
  options.max_lm_calls = 40;
  model.calls = 0;
  run = RunSampler(Method::kGcd, c.grammar, &model, options, 1000000);
  EXPECT_EQ(run.stats.stop, StopReason::kLmBudget);
  EXPECT_EQ(run.stats.lm_calls, 40);
  EXPECT_EQ(model.calls, 40);

  run = RunSampler(Method::kCars, c.grammar, &model, SamplerOptions{.max_tokens = 7}, 10);
  EXPECT_EQ(run.stats.stop, StopReason::kDone);
  EXPECT_EQ(run.stats.valid, 10);
}

TEST(SamplersTest, EmptyTargetStopsCars) {
  // L = "ab" but the model never says b: P(L) = 0. CARS finds out and stops.
  ToySetup setup = Letters();
  setup.gbnf = "root ::= \"a\" \"b\"\n";
  for (auto& row : setup.rows) row[1] = 0.0, row[3] = 0.0;
  Compiled c = Compile(setup);
  BigramModel model(setup.rows);
  SamplerOptions options;
  options.max_tokens = 4;
  RunResult run = RunSampler(Method::kCars, c.grammar, &model, options, 5);
  EXPECT_EQ(run.stats.stop, StopReason::kEmptyLanguage);
  EXPECT_TRUE(run.samples.empty());
  EXPECT_EQ(run.stats.root_mass, 0.0);
}

TEST(SamplersTest, StatsJsonHasTheIssueFields) {
  ToySetup setup = Letters();
  Compiled c = Compile(setup);
  BigramModel model(setup.rows);
  RunResult run = RunSampler(Method::kArs, c.grammar, &model, SamplerOptions{.max_tokens = 6}, 20);
  nlohmann::json j = nlohmann::json::parse(StatsJson(run.stats));
  for (const char* key : {"method", "draws", "lm_calls", "valid", "trie_nodes", "trie_bytes", "trie_reuse"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["method"], "ars");
  EXPECT_EQ(j["valid"], 20);
  EXPECT_EQ(j["draws"], run.stats.draws);
  EXPECT_EQ(j["acceptance_curve"].back()["draws"], run.stats.draws);
}

TEST(SamplersTest, BadArgumentsAreErrors) {
  ToySetup setup = Letters();
  Compiled c = Compile(setup);
  BigramModel small({{1.0, 1.0}});
  EXPECT_FALSE(Sampler::Create(Method::kCars, c.grammar, &small, {}).ok());
  EXPECT_FALSE(Sampler::Create(Method::kCars, c.grammar, nullptr, {}).ok());
  EXPECT_FALSE(ParseMethod("mcmc").ok());
  EXPECT_EQ(*ParseMethod("rsft"), Method::kRsft);
}

// ---- SMC (sampling/smc.h) ----

// Over R independent runs of K particles, the weighted counts
// (1/K) sum_i w_i 1[x_i in bin] are unbiased for P(bin) (the model's
// probability, not renormalized), so their mean over the runs must agree
// with the enumerated target within sampling error in every bin: a z-test
// per bin (the 8 likeliest sequences, each its own bin, and the rest),
// Bonferroni-corrected, |z| < 4.4 (two-sided p ~ 1e-5 per bin). The total
// is Z_hat, checked against P(L_M) too.
struct SmcCheck {
  double max_abs_z = 0.0;
  double mean_tv = 0.0;   // mean over runs of TV(self-normalized weights, exact)
  int64_t valid = 0, particles = 0;
};

SmcCheck CheckSmc(const CompiledGrammar& grammar, LanguageModel* model, const ExactDistribution& exact,
                  SmcOptions options, int runs) {
  std::vector<std::pair<double, std::vector<int32_t>>> by_prob;
  for (const auto& [s, p] : exact.probability) by_prob.push_back({p, s});
  std::sort(by_prob.rbegin(), by_prob.rend());
  const size_t own = std::min<size_t>(8, by_prob.size());
  std::map<std::vector<int32_t>, size_t> bin_of;
  std::vector<double> target(own + 1, 0.0);
  for (size_t b = 0; b < by_prob.size(); ++b) {
    const size_t bin = std::min(b, own);
    bin_of[by_prob[b].second] = bin;
    target[bin] += by_prob[b].first * exact.valid_mass;
  }
  const size_t bins = own + 2;  // + the evidence Z_hat
  target.push_back(exact.valid_mass);
  std::vector<double> sum(bins, 0.0), sum_sq(bins, 0.0);
  absl::StatusOr<std::unique_ptr<SmcSampler>> smc = SmcSampler::Create(grammar, model, options);
  EXPECT_TRUE(smc.ok()) << smc.status();
  SmcCheck check;
  for (int r = 0; r < runs; ++r) {
    absl::StatusOr<SmcResult> result = (*smc)->Run();
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return check;
    std::vector<double> e(bins, 0.0);
    const double k = static_cast<double>(result->particles.size());
    std::map<std::vector<int32_t>, double> normalized;
    const std::vector<double> w = result->NormalizedWeights();
    for (size_t i = 0; i < result->particles.size(); ++i) {
      const WeightedParticle& p = result->particles[i];
      check.particles += 1;
      if (!p.valid) continue;
      check.valid += 1;
      const double weight = std::exp(p.log_weight) / k;
      auto it = bin_of.find(p.tokens);
      e[it == bin_of.end() ? own : it->second] += weight;
      e[own + 1] += weight;
      normalized[p.tokens] += w[i];
    }
    for (size_t b = 0; b < bins; ++b) {
      sum[b] += e[b];
      sum_sq[b] += e[b] * e[b];
    }
    double tv = 0.0;
    for (const auto& [seq, q] : exact.probability) {
      auto it = normalized.find(seq);
      tv += std::abs((it == normalized.end() ? 0.0 : it->second) - q);
    }
    for (const auto& [seq, q] : normalized) {
      if (!exact.probability.count(seq)) tv += q;
    }
    check.mean_tv += tv / 2 / runs;
  }
  for (size_t b = 0; b < bins; ++b) {
    const double mean = sum[b] / runs;
    const double var = std::max(sum_sq[b] / runs - mean * mean, 1e-30) * runs / (runs - 1);
    const double z = (mean - target[b]) / std::sqrt(var / runs);
    check.max_abs_z = std::max(check.max_abs_z, std::abs(z));
  }
  return check;
}

int SmcRuns() { return zapgram::testing::Scaled(3000, 400); }

TEST(SmcTest, WeightedCountsMatchTheExactTargetAndWrongWeightsFail) {
  for (const ToySetup& setup : {Letters(), Parens()}) {
    Compiled c = Compile(setup);
    BigramModel model(setup.rows);
    absl::StatusOr<ExactDistribution> exact = EnumerateTarget(c.grammar, &model, setup.max_tokens, 0.0, 1 << 20);
    ASSERT_TRUE(exact.ok()) << exact.status();
    for (bool budget_aware : {true, false}) {
      for (Resampling resampling : {Resampling::kSystematic, Resampling::kMultinomial}) {
        SmcOptions options{.particles = 8, .max_tokens = setup.max_tokens, .budget_aware = budget_aware,
                           .resampling = resampling, .seed = TestSeed()};
        const SmcCheck good = CheckSmc(c.grammar, &model, *exact, options, SmcRuns());
        EXPECT_LT(good.max_abs_z, 4.4) << setup.name << " budget_aware " << budget_aware;
        if (budget_aware) {
          EXPECT_EQ(good.valid, good.particles) << setup.name;  // every particle ends in L_M
        }
        options.wrong_weight_for_testing = true;
        const SmcCheck bad = CheckSmc(c.grammar, &model, *exact, options, SmcRuns());
        EXPECT_GT(bad.max_abs_z, 4.4) << setup.name << " budget_aware " << budget_aware;
        std::printf("[smc] %s budget_aware=%d %s: max |z| %.2f (wrong weight %.2f), valid %lld/%lld\n",
                    setup.name.c_str(), budget_aware, resampling == Resampling::kSystematic ? "systematic" : "multinomial",
                    good.max_abs_z, bad.max_abs_z, static_cast<long long>(good.valid),
                    static_cast<long long>(good.particles));
      }
    }
  }
}

// The self-normalized weighted set of one run approaches P|L_M as K grows:
// the mean total variation falls with K (and ends small), while the wrong
// weight stays away from the target however many particles it has.
TEST(SmcTest, SelfNormalizedDistanceShrinksWithParticles) {
  ToySetup setup = Letters();
  Compiled c = Compile(setup);
  BigramModel model(setup.rows);
  absl::StatusOr<ExactDistribution> exact = EnumerateTarget(c.grammar, &model, setup.max_tokens, 0.0, 1 << 20);
  ASSERT_TRUE(exact.ok());
  const int runs = SmcRuns() / 30;
  double previous = 2.0, first = 0.0;
  for (int32_t k : {4, 16, 64, 256}) {
    SmcOptions options{.particles = k, .max_tokens = setup.max_tokens, .seed = TestSeed() + k};
    const double tv = CheckSmc(c.grammar, &model, *exact, options, runs).mean_tv;
    std::printf("[smc] letters K=%d: mean TV %.4f\n", k, tv);
    EXPECT_LT(tv, previous) << "K = " << k;
    if (k == 4) first = tv;
    previous = tv;
  }
  // 64x the particles: the distance (mostly sampling noise of K draws over
  // the ~100 sequences of L_M) more than halves.
  EXPECT_LT(previous, 0.5 * first);
  SmcOptions wrong{.particles = 256, .max_tokens = setup.max_tokens, .seed = TestSeed(), .wrong_weight_for_testing = true};
  const double wrong_tv = CheckSmc(c.grammar, &model, *exact, wrong, runs).mean_tv;
  std::printf("[smc] letters K=256 wrong weight: mean TV %.4f\n", wrong_tv);
  EXPECT_GT(wrong_tv, previous);
}

TEST(SmcTest, BadOptionsAreErrors) {
  ToySetup setup = Letters();
  Compiled c = Compile(setup);
  BigramModel model(setup.rows);
  EXPECT_FALSE(SmcSampler::Create(c.grammar, &model, SmcOptions{.particles = 0}).ok());
  EXPECT_FALSE(SmcSampler::Create(c.grammar, &model, SmcOptions{.ess_threshold = 1.5}).ok());
  EXPECT_FALSE(SmcSampler::Create(c.grammar, nullptr, SmcOptions{}).ok());
  EXPECT_FALSE(ParseResampling("stratified").ok());
}

}  // namespace
}  // namespace zapgram::sampling
