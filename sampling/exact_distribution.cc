// Enumeration of P|L_M and the distances of samples to it (see
// exact_distribution.h). Tests: tests/sampling/samplers_test.cc.
#include "sampling/exact_distribution.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sampling/prefix_trie.h"
#include "sampling/samplers.h"

namespace zapgram::sampling {

absl::StatusOr<ExactDistribution> EnumerateTarget(const CompiledGrammar& grammar, LanguageModel* model,
                                                  int32_t max_tokens, double min_prefix_prob,
                                                  size_t max_sequences) {
  ExactDistribution out;
  const std::vector<bool> is_eos = EosFlags(grammar, *model);
  Matcher matcher(grammar);
  std::vector<uint32_t> words(grammar.mask_words());
  std::vector<float> logprobs, probs;
  std::vector<std::pair<std::vector<int32_t>, double>> stack = {{{}, 1.0}};
  std::vector<std::pair<std::vector<int32_t>, double>> raw;
  size_t expanded = 0;
  while (!stack.empty()) {
    if (++expanded > max_sequences || stack.size() > max_sequences) {
      return absl::ResourceExhaustedError(
          absl::StrCat("enumeration: more than ", max_sequences, " prefixes to expand"));
    }
    auto [prefix, prob] = std::move(stack.back());
    stack.pop_back();
    matcher.Reset();
    for (int32_t t : prefix) {
      if (!matcher.AcceptToken(t)) return absl::InternalError("enumeration: an allowed prefix was rejected");
    }
    matcher.ComputeMask(words.data());
    if (!matcher.status().ok()) return matcher.status();
    if (auto status = model->NextLogProbs(prefix, &logprobs); !status.ok()) return status;
    if (auto status = ProbabilitiesFromLogProbs(logprobs, &probs); !status.ok()) return status;
    const bool at_bound = static_cast<int32_t>(prefix.size()) >= max_tokens;
    for (int32_t id = 0; id < model->vocab_size(); ++id) {
      if (!((words[id / 32] >> (id % 32)) & 1) || probs[id] <= 0.0f) continue;
      if (at_bound && !is_eos[id]) continue;
      const double p = prob * probs[id];
      if (p < min_prefix_prob) {
        out.cut_mass_bound += p;
        continue;
      }
      std::vector<int32_t> next = prefix;
      next.push_back(id);
      if (is_eos[id]) {
        if (raw.size() >= max_sequences) {
          return absl::ResourceExhaustedError(
              absl::StrCat("enumeration: more than ", max_sequences, " valid sequences"));
        }
        raw.emplace_back(std::move(next), p);
        out.valid_mass += p;
      } else {
        stack.emplace_back(std::move(next), p);
      }
    }
  }
  if (!(out.valid_mass > 0.0)) return absl::FailedPreconditionError("enumeration: no valid sequence found");
  for (auto& [sequence, p] : raw) out.probability[sequence] += p / out.valid_mass;
  return out;
}

double RegularizedGammaQ(double a, double x) {
  if (x <= 0.0) return 1.0;
  const double log_prefactor = a * std::log(x) - x - std::lgamma(a);
  if (x < a + 1.0) {
    // P(a, x) by its power series: x^a e^-x / Gamma(a+1) * sum x^n / ((a+1)...(a+n)).
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 10000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (std::fabs(term) < std::fabs(sum) * 1e-16) break;
    }
    return std::max(0.0, 1.0 - sum * std::exp(log_prefactor));
  }
  // Q(a, x) by its continued fraction, evaluated with the modified Lentz method.
  constexpr double kTiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / kTiny, d = 1.0 / b, h = d;
  for (int n = 1; n < 10000; ++n) {
    const double an = -n * (n - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-16) break;
  }
  return std::exp(log_prefactor) * h;
}

double ChiSquareSurvival(double x, double dof) { return RegularizedGammaQ(dof / 2.0, x / 2.0); }

Divergence CompareToExact(const ExactDistribution& exact, const std::vector<std::vector<int32_t>>& samples,
                          double min_expected) {
  Divergence out;
  const double n = static_cast<double>(samples.size());
  if (samples.empty()) return out;
  std::map<std::vector<int32_t>, int64_t> counts;
  for (const auto& s : samples) {
    if (exact.probability.count(s) == 0) {
      ++out.outside;
    } else {
      ++counts[s];
    }
  }
  // Bins: sequences in ascending order of probability, grouped until each
  // group expects at least `min_expected` samples (a short last group joins
  // the one before), so large-probability sequences are bins of their own.
  std::vector<std::pair<double, double>> by_probability;  // (p, observed)
  double tv = 0.0;
  for (const auto& [sequence, p] : exact.probability) {
    auto it = counts.find(sequence);
    const double observed = it == counts.end() ? 0.0 : static_cast<double>(it->second);
    const double q = observed / n;
    tv += std::fabs(q - p);
    if (q > 0.0) out.kl += q * std::log(q / p);
    by_probability.emplace_back(p, observed);
  }
  out.tv = (tv + static_cast<double>(out.outside) / n) / 2.0;
  std::sort(by_probability.begin(), by_probability.end());
  std::vector<std::pair<double, double>> bins;  // (expected, observed)
  double expected = 0.0, observed = 0.0;
  for (const auto& [p, count] : by_probability) {
    expected += p * n;
    observed += count;
    if (expected >= min_expected) {
      bins.emplace_back(expected, observed);
      expected = observed = 0.0;
    }
  }
  if (expected > 0.0 || observed > 0.0) {
    if (bins.empty()) {
      bins.emplace_back(expected, observed);
    } else {
      bins.back().first += expected;
      bins.back().second += observed;
    }
  }
  // Samples outside the enumerated support: a bin that expects (almost) nothing.
  if (out.outside > 0) bins.emplace_back(1e-12, static_cast<double>(out.outside));
  for (const auto& [e, o] : bins) out.chi_square += (o - e) * (o - e) / e;
  out.bins = static_cast<int>(bins.size());
  if (out.outside > 0) out.kl = INFINITY;
  out.p_value = out.bins <= 1 ? 1.0 : ChiSquareSurvival(out.chi_square, out.bins - 1);
  return out;
}

}  // namespace zapgram::sampling
