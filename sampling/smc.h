// Sequential Monte Carlo over the constrained language (Lew et al. 2023,
// "Sequential Monte Carlo steering of LLMs"; Loula et al. 2025 for masks as
// proposals): K particles grow token by token; each step draws the next
// token of a particle from the proposal
//     q(a | u) = P(a | u) 1[a allowed at u] / Z(u),   Z(u) = sum over allowed a of P(a | u),
// and multiplies the particle's weight by the incremental importance weight
// P(a | u) / q(a | u) = Z(u). The allowed set is the Matcher's mask at u:
//   - budget-aware (default): ComputeMask(words, M + 1 - |u|), tokens that
//     can still finish within the length bound M (masks/budget_mask.h). Every
//     particle then ends in L_M, and q's support is exactly L_M's prefixes;
//   - plain: the mask with only EOS allowed at depth M (as GCD); a particle
//     reaching a prefix with no allowed mass (depth M, not a sentence) dies
//     with weight 0.
// The target is P|L_M, the samplers' target (samplers.h). For s in L_M,
// q(s) = prod_t P(s_t | s_<t) / Z(s_<t), so the weight of a finished
// particle is prod_t Z = P(s) / q(s) (a dead particle's is 0): importance
// sampling, exact in the limit K -> infinity.
//
// Resampling: after each step the effective sample size ESS = (sum w)^2 /
// sum w^2 is compared with ess_threshold * K; below it, K ancestors are
// drawn in proportion to the weights (systematic: one uniform, K evenly
// spaced points; or multinomial: K independent draws) and every weight is
// set to the mean weight. Finished particles take part (they are copied
// unchanged, not extended). With that convention both the evidence
// estimate Z_hat = (1/K) sum_i w_i and the weighted counts
// (1/K) sum_i w_i 1[x_i = s] are unbiased estimates of P(L_M) and P(s)
// at every K (the standard SMC unbiasedness of the particle approximation
// of the unnormalized target); the self-normalized distribution
// w_i / sum w converges to P|L_M as K grows.
// A copied particle gets its own Matcher replayed from its tokens.
//
// Output: the final weighted set (tokens, log weight, valid), Z_hat, and
// stats (LM calls: one per live particle per step; masks; resamples).
//
// Tests: tests/sampling/samplers_test.cc (SmcTest.*: over many runs the
// mean weighted counts match P(s) bin by bin (z-tests) and Z_hat matches
// P(L_M), on toy grammars where EnumerateTarget gives the exact target;
// the self-normalized distance shrinks as K grows; the deliberately wrong
// weight, SmcOptions::wrong_weight_for_testing, fails the same test).
#ifndef ZAPGRAM_SAMPLING_SMC_H_
#define ZAPGRAM_SAMPLING_SMC_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sampling/language_model.h"
#include "zapgram/matcher.h"

namespace zapgram::sampling {

enum class Resampling { kSystematic, kMultinomial };
// "systematic", "multinomial".
absl::StatusOr<Resampling> ParseResampling(std::string_view name);

struct SmcOptions {
  int32_t particles = 16;        // K
  int32_t max_tokens = 256;      // M: tokens before EOS
  bool budget_aware = true;      // the proposal's masks (see above)
  double ess_threshold = 0.5;    // resample when ESS < ess_threshold * K (0: never, 1: always)
  Resampling resampling = Resampling::kSystematic;
  int64_t max_lm_calls = 0;      // 0: no limit; past it Run stops (kLmBudget)
  uint64_t seed = 0;
  MatcherOptions matcher;
  // Negative control for the tests: the incremental weight is 1 instead of
  // Z(u) (the particles are then GCD draws, weighted as if exact).
  bool wrong_weight_for_testing = false;
};

struct WeightedParticle {
  std::vector<int32_t> tokens;  // a finished particle ends with its EOS
  double log_weight = 0.0;      // -inf: dead (not in L_M)
  bool valid = false;           // finished with an allowed EOS
};

struct SmcResult {
  std::vector<WeightedParticle> particles;
  double log_evidence = 0.0;  // log Z_hat, Z_hat = mean weight (estimates P(L_M))
  int64_t lm_calls = 0;
  int64_t masks = 0;
  int64_t steps = 0;          // tokens drawn, over all particles
  int64_t resamples = 0;
  int64_t valid = 0;          // particles finished in L_M
  bool stopped = false;       // the LM budget ran out (particles unfinished are dead)
  // The normalized weights w_i / sum w (zeros when every particle died).
  std::vector<double> NormalizedWeights() const;
};

class SmcSampler {
 public:
  // `grammar` and `model` must outlive the sampler; model->vocab_size() must
  // equal the vocabulary's padded_size(); K >= 1.
  static absl::StatusOr<std::unique_ptr<SmcSampler>> Create(const CompiledGrammar& grammar, LanguageModel* model,
                                                            const SmcOptions& options);
  // One run of K particles to the end. Successive runs continue the random
  // stream (independent runs); the budget-aware search memo is kept.
  absl::StatusOr<SmcResult> Run();

 private:
  SmcSampler(const CompiledGrammar& grammar, LanguageModel* model, const SmcOptions& options);
  struct State;
  const CompiledGrammar& grammar_;
  LanguageModel* model_;
  SmcOptions options_;
  std::shared_ptr<State> state_;
};

// The SMC result as one JSON object: particles, valid, lm_calls, masks,
// steps, resamples, log_evidence, ess (of the final weights), stopped.
std::string SmcStatsJson(const SmcResult& result);

}  // namespace zapgram::sampling

#endif  // ZAPGRAM_SAMPLING_SMC_H_
