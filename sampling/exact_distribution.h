// The exact target P|L_M by enumeration, and how far a set of samples is
// from it (KL, total variation, chi-square test with its p-value).
//
// EnumerateTarget walks every token prefix the grammar allows (depth first,
// an explicit stack; the Matcher is reset and replayed per prefix, so this is
// for toy vocabularies and small languages), multiplies the model's
// probabilities along it, and collects each sequence ending in an allowed
// EOS within M tokens. Prefixes whose probability falls below
// `min_prefix_prob` are cut; their total probability is reported as an
// upper bound on the valid mass missed, so a caller knows whether the
// enumeration is complete enough to compare against. More than
// `max_sequences` valid sequences, expanded prefixes or pending prefixes is
// a ResourceExhausted error (the language is too big to enumerate).
//
// The chi-square test bins the sequences by expected count: in ascending
// order of probability, sequences are grouped until each group expects at
// least `min_expected` samples (so likely sequences are bins of their own);
// samples outside the enumerated support form a bin expecting nothing. The
// p-value is the
// chi-square survival function with bins - 1 degrees of freedom (the
// regularized upper incomplete gamma function Q(k/2, x/2), by its series or
// continued fraction). KL is KL(empirical || exact), finite whenever every
// sample lies in the enumerated support.
//
// Tests: tests/sampling/samplers_test.cc (the exactness test; the gamma
// function against known chi-square quantiles; the enumeration against a
// brute-force RE2 oracle).
#ifndef ZAPGRAM_SAMPLING_EXACT_DISTRIBUTION_H_
#define ZAPGRAM_SAMPLING_EXACT_DISTRIBUTION_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "absl/status/statusor.h"
#include "sampling/language_model.h"
#include "zapgram/matcher.h"

namespace zapgram::sampling {

struct ExactDistribution {
  // Valid sequences (ending in EOS) -> P(s) / P(L_M), over the enumerated ones.
  std::map<std::vector<int32_t>, double> probability;
  double valid_mass = 0.0;        // sum of P(s) over the enumerated sequences
  double cut_mass_bound = 0.0;    // probability of the prefixes cut
};

absl::StatusOr<ExactDistribution> EnumerateTarget(const CompiledGrammar& grammar, LanguageModel* model,
                                                  int32_t max_tokens, double min_prefix_prob,
                                                  size_t max_sequences);

// Q(a, x), the regularized upper incomplete gamma function (a > 0, x >= 0).
double RegularizedGammaQ(double a, double x);
// P(X >= x) for X chi-square with `dof` degrees of freedom.
double ChiSquareSurvival(double x, double dof);

struct Divergence {
  double kl = 0.0;          // KL(empirical || exact), nats
  double tv = 0.0;          // total variation
  double chi_square = 0.0;
  int bins = 0;
  double p_value = 1.0;
  int64_t outside = 0;      // samples not in the enumerated support
};

Divergence CompareToExact(const ExactDistribution& exact, const std::vector<std::vector<int32_t>>& samples,
                          double min_expected = 5.0);

}  // namespace zapgram::sampling

#endif  // ZAPGRAM_SAMPLING_EXACT_DISTRIBUTION_H_
