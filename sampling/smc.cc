// Sequential Monte Carlo with masked proposals (see smc.h).
#include "sampling/smc.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "sampling/prefix_trie.h"
#include "sampling/samplers.h"

namespace zapgram::sampling {
namespace {

double Uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
bool Allowed(const std::vector<uint32_t>& words, int32_t id) { return (words[id / 32] >> (id % 32)) & 1; }
constexpr double kDead = -std::numeric_limits<double>::infinity();

// log(sum exp(x)) over finite entries; -inf when there are none.
double LogSumExp(const std::vector<double>& x) {
  double top = kDead;
  for (double v : x) top = std::max(top, v);
  if (top == kDead) return kDead;
  double sum = 0.0;
  for (double v : x) sum += std::exp(v - top);
  return top + std::log(sum);
}

}  // namespace

absl::StatusOr<Resampling> ParseResampling(std::string_view name) {
  if (name == "systematic") return Resampling::kSystematic;
  if (name == "multinomial") return Resampling::kMultinomial;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown resampling '", std::string(name), "' (expected systematic or multinomial)"));
}

std::vector<double> SmcResult::NormalizedWeights() const {
  std::vector<double> lw;
  for (const WeightedParticle& p : particles) lw.push_back(p.log_weight);
  const double total = LogSumExp(lw);
  std::vector<double> w(lw.size(), 0.0);
  if (total == kDead) return w;
  for (size_t i = 0; i < lw.size(); ++i) w[i] = lw[i] == kDead ? 0.0 : std::exp(lw[i] - total);
  return w;
}

struct SmcSampler::State {
  std::mt19937_64 rng;
  // The first particle's matcher owns the budget search memo; the others
  // share it (one thread).
  std::vector<std::unique_ptr<Matcher>> matchers;
  std::vector<uint32_t> words;
  std::vector<float> logprobs, probs;
  std::vector<bool> is_eos;
};

SmcSampler::SmcSampler(const CompiledGrammar& grammar, LanguageModel* model, const SmcOptions& options)
    : grammar_(grammar), model_(model), options_(options), state_(std::make_shared<State>()) {
  state_->rng.seed(options.seed);
  state_->words.resize(grammar.mask_words());
  state_->is_eos = EosFlags(grammar, *model);
  for (int32_t k = 0; k < options.particles; ++k) {
    state_->matchers.push_back(std::make_unique<Matcher>(grammar, options.matcher));
    if (k > 0) state_->matchers[k]->ShareBudgetSearch(*state_->matchers[0]);
  }
}

absl::StatusOr<std::unique_ptr<SmcSampler>> SmcSampler::Create(const CompiledGrammar& grammar,
                                                               LanguageModel* model, const SmcOptions& options) {
  if (absl::Status st = CheckModelFitsGrammar(grammar, model, "smc"); !st.ok()) return st;
  if (options.particles < 1) return absl::InvalidArgumentError("smc: particles < 1");
  if (options.max_tokens < 0) return absl::InvalidArgumentError("smc: max_tokens < 0");
  if (!(options.ess_threshold >= 0.0 && options.ess_threshold <= 1.0)) {
    return absl::InvalidArgumentError("smc: ess_threshold outside [0, 1]");
  }
  return std::unique_ptr<SmcSampler>(new SmcSampler(grammar, model, options));
}

absl::StatusOr<SmcResult> SmcSampler::Run() {
  State& st = *state_;
  const int32_t k_particles = options_.particles;
  const int32_t max_tokens = options_.max_tokens;
  SmcResult result;
  result.particles.resize(k_particles);
  std::vector<bool> done(k_particles, false);
  for (int32_t k = 0; k < k_particles; ++k) st.matchers[k]->Reset();

  // Extends particle k by one token; marks it done when it finishes or dies.
  auto extend = [&](int32_t k) -> absl::Status {
    WeightedParticle& p = result.particles[k];
    Matcher& matcher = *st.matchers[k];
    const int32_t depth = static_cast<int32_t>(p.tokens.size());
    if (options_.max_lm_calls > 0 && result.lm_calls >= options_.max_lm_calls) {
      result.stopped = true;
      p.log_weight = kDead;
      done[k] = true;
      return absl::OkStatus();
    }
    ++result.lm_calls;
    if (absl::Status s = model_->NextLogProbs(p.tokens, &st.logprobs); !s.ok()) return s;
    if (static_cast<int32_t>(st.logprobs.size()) != model_->vocab_size()) {
      return absl::InvalidArgumentError(absl::StrCat("language model gave ", st.logprobs.size(),
                                                     " log-probabilities, expected ", model_->vocab_size()));
    }
    ++result.masks;
    if (options_.budget_aware) {
      matcher.ComputeMask(st.words.data(), static_cast<int64_t>(max_tokens) + 1 - depth);
    } else {
      matcher.ComputeMask(st.words.data());
    }
    if (!matcher.status().ok()) return matcher.status();
    if (absl::Status s = ProbabilitiesFromLogProbs(st.logprobs, &st.probs); !s.ok()) return s;
    double z = 0.0;
    for (size_t id = 0; id < st.probs.size(); ++id) {
      const bool allowed = Allowed(st.words, static_cast<int32_t>(id)) &&
                           (depth < max_tokens || st.is_eos[id]);  // the length bound
      if (!allowed) st.probs[id] = 0.0f;
      z += st.probs[id];
    }
    ++result.steps;
    if (!(z > 0.0)) {  // no allowed mass: the particle leaves L_M
      p.log_weight = kDead;
      done[k] = true;
      return absl::OkStatus();
    }
    const int32_t token = DrawIndex(st.probs, z, Uniform01(st.rng));
    if (!matcher.AcceptToken(token)) {
      if (!matcher.status().ok()) return matcher.status();
      return absl::InternalError(absl::StrCat("smc: masked token ", token, " rejected"));
    }
    p.tokens.push_back(token);
    if (!options_.wrong_weight_for_testing) p.log_weight += std::log(z);
    if (st.is_eos[token]) {
      p.valid = true;
      done[k] = true;
    }
    return absl::OkStatus();
  };

  std::vector<double> lw(k_particles);
  std::vector<int32_t> ancestors(k_particles);
  while (true) {
    bool any = false;
    for (int32_t k = 0; k < k_particles; ++k) {
      if (done[k]) continue;
      any = true;
      if (absl::Status s = extend(k); !s.ok()) return s;
    }
    if (!any) break;
    // Effective sample size of the current weights.
    for (int32_t k = 0; k < k_particles; ++k) lw[k] = result.particles[k].log_weight;
    const double log_total = LogSumExp(lw);
    if (log_total == kDead) break;  // every particle died
    double sum_sq = 0.0;
    for (int32_t k = 0; k < k_particles; ++k) {
      if (lw[k] != kDead) sum_sq += std::exp(2.0 * (lw[k] - log_total));
    }
    const double ess = 1.0 / sum_sq;
    bool all_done = true;
    for (int32_t k = 0; k < k_particles; ++k) all_done = all_done && done[k];
    if (all_done || ess >= options_.ess_threshold * k_particles) continue;
    // Resample: ancestors in proportion to the weights.
    ++result.resamples;
    std::vector<double> cumulative(k_particles);
    double acc = 0.0;
    for (int32_t k = 0; k < k_particles; ++k) {
      acc += lw[k] == kDead ? 0.0 : std::exp(lw[k] - log_total);
      cumulative[k] = acc;
    }
    const double u0 = Uniform01(st.rng);
    for (int32_t i = 0; i < k_particles; ++i) {
      const double u = options_.resampling == Resampling::kSystematic ? (i + u0) / k_particles
                                                                       : Uniform01(st.rng);
      int32_t a = static_cast<int32_t>(std::upper_bound(cumulative.begin(), cumulative.end(), u * acc) -
                                       cumulative.begin());
      a = std::min(a, k_particles - 1);
      while (lw[a] == kDead && a > 0) --a;  // rounding at the top never picks a dead one
      ancestors[i] = a;
    }
    if (options_.resampling == Resampling::kMultinomial) std::sort(ancestors.begin(), ancestors.end());
    const double mean_log_weight = log_total - std::log(static_cast<double>(k_particles));
    std::vector<WeightedParticle> old = result.particles;
    std::vector<bool> old_done = done;
    for (int32_t i = 0; i < k_particles; ++i) {
      const int32_t a = ancestors[i];
      const bool same = old[i].tokens == old[a].tokens && old_done[i] == old_done[a];
      result.particles[i] = old[a];
      result.particles[i].log_weight = mean_log_weight;
      done[i] = old_done[a];
      if (same) continue;
      // A copy: replay the ancestor's tokens into this particle's matcher.
      Matcher& m = *st.matchers[i];
      m.Reset();
      for (int32_t t : old[a].tokens) {
        if (!m.AcceptToken(t)) return absl::InternalError("smc: replaying a particle failed");
      }
    }
  }
  for (int32_t k = 0; k < k_particles; ++k) {
    WeightedParticle& p = result.particles[k];
    if (!p.valid) p.log_weight = kDead;
    result.valid += p.valid;
    lw[k] = p.log_weight;
  }
  result.log_evidence = LogSumExp(lw) - std::log(static_cast<double>(k_particles));
  return result;
}

std::string SmcStatsJson(const SmcResult& result) {
  const std::vector<double> w = result.NormalizedWeights();
  double sum_sq = 0.0;
  for (double v : w) sum_sq += v * v;
  nlohmann::json j = {
      {"method", "smc"},
      {"particles", result.particles.size()},
      {"valid", result.valid},
      {"lm_calls", result.lm_calls},
      {"masks", result.masks},
      {"steps", result.steps},
      {"resamples", result.resamples},
      {"log_evidence", std::isfinite(result.log_evidence) ? nlohmann::json(result.log_evidence) : nlohmann::json()},
      {"ess", sum_sq > 0.0 ? 1.0 / sum_sq : 0.0},
      {"stopped", result.stopped},
  };
  return j.dump();
}

}  // namespace zapgram::sampling
