// The five samplers of issue 6 over one interface: GCD, RS, ARS, RSFT, CARS.
//
// Target. P is the language model's distribution over token sequences ending
// in EOS; L the grammar's language; M = SamplerOptions::max_tokens. The
// exact samplers (RS, ARS, RSFT, CARS) draw from P restricted to
//   L_M = { s in L : s has at most M tokens before its EOS }
// and renormalized. The length bound is part of the target language: a draw
// that reaches M tokens and then draws anything but EOS is an invalid draw,
// and its prefix of M+1 tokens is an invalid prefix of L_M (recorded by ARS
// and CARS like any other). When the model puts little mass past M tokens,
// P|L_M is P|L up to that mass.
//
// Every exact sampler draws token by token from the trie's adjusted
// distribution P(a|u) * p_ua / p_u (sampling/prefix_trie.h), checks each
// token with the Matcher and stops a draw at the first invalid token: the
// outcome (accept / reject) and the accepted sequences are those of drawing
// the whole sequence first, but the model is not asked for the tail of a
// sequence already known to be invalid. A draw is valid when it ends in an
// EOS the grammar allows. Recorded prefixes are always truly invalid for
// L_M, so the adjusted proposal, restricted to L_M, is still P|L_M: every
// method is exact, and the proposal mass outside L_M only shrinks.
//   RS    records nothing (the trie only caches model distributions).
//   ARS   records the shortest invalid prefix of each rejected draw (u·a at
//         the first rejected token a).
//   RSFT  records the invalid first tokens: the complement of the root mask,
//         once, and the first token of a draw rejected at position 0.
//   CARS  at every prefix u it adds to the trie (valid draws too) records
//         u·a for every a the Matcher's mask at u rejects (EOS when u is not
//         a sentence; every non-EOS token at depth M): the mask it computes
//         to check its own draw, with no extra grammar work. A token drawn
//         at such a node on a later draw is valid, so later visits ask
//         neither the model nor the grammar (the Matcher catches up lazily,
//         only when a draw reaches a node not yet in the trie).
//
// One rule keeps the records exact: a draw samples from the trie as it was
// when the draw began. Below a prefix the trie did not hold, every p was 1,
// so at such a prefix the draw uses the model's own P(·|u) and checks the
// token (CARS: against the mask it has just recorded) even though the node
// now holds adjusted weights. Renormalizing there with the records of the
// same draw would be a partial GCD and biases the samples (the exactness
// test caught exactly that: p ~ 1e-4 .. 1e-9 on the letters setup).
//   GCD   draws from P(a|u) restricted to the mask at u and renormalized:
//         every complete draw is valid, but the distribution is biased
//         (it is P|L only when every allowed prefix has the same completion
//         mass). A prefix whose allowed tokens carry no mass is a failed draw.
//
// Budgets. max_draws and max_lm_calls stop a run early (stats.stop); a draw
// cut by the model budget is not counted. max_trie_bytes is the trie's byte
// budget: past it the trie evicts pristine nodes and strips distributions,
// least recently used first (prefix_trie.h); a draw that reaches a dropped
// prefix asks the model again (counted in lm_calls and trie_refetches).
// The trie freezes (no more nodes, no more records; drawing from what it
// holds stays exact) after freeze_after_draws draws, when the mean decrease
// of p_root over the last freeze_window draws falls below freeze_below_mass,
// or when, after a draw, freeing everything it may free still leaves it
// over max_trie_bytes.
//
// Tests: tests/sampling/samplers_test.cc (chi-square exactness test of every
// exact method against the enumerated P|L_M, GCD as the negative control,
// acceptance and bookkeeping properties).
#ifndef ZAPGRAM_SAMPLING_SAMPLERS_H_
#define ZAPGRAM_SAMPLING_SAMPLERS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sampling/language_model.h"
#include "zapgram/matcher.h"

namespace zapgram::sampling {

enum class Method { kGcd, kRs, kArs, kRsft, kCars };

// "gcd", "rs", "ars", "rsft", "cars".
std::string_view MethodName(Method method);
absl::StatusOr<Method> ParseMethod(std::string_view name);

// What every sampler (and the exact enumeration) checks of its model and
// grammar: the model scores the vocabulary's (padded) ids, and the
// vocabulary has an EOS id. `who` starts the message ("sampler", "smc").
absl::Status CheckModelFitsGrammar(const CompiledGrammar& grammar, const LanguageModel* model,
                                   std::string_view who);
// Per model id: whether it is an EOS id of `grammar`'s vocabulary.
std::vector<bool> EosFlags(const CompiledGrammar& grammar, const LanguageModel& model);

struct SamplerOptions {
  int32_t max_tokens = 256;          // M: tokens before EOS (see the target above)
  int64_t max_draws = 0;             // 0: no limit
  int64_t max_lm_calls = 0;          // 0: no limit
  int64_t freeze_after_draws = 0;    // 0: never
  double freeze_below_mass = 0.0;    // 0: never (mean p_root decrease per draw)
  int32_t freeze_window = 16;        // draws averaged for freeze_below_mass
  size_t max_trie_bytes = size_t{1} << 30;  // the trie's byte budget (0: none)
  uint64_t seed = 0;
  // Budget-aware masks (Matcher::ComputeMask with M + 1 - depth tokens
  // left): a token is allowed only if the text can still finish within M
  // tokens. GCD then never runs out of length ("budget-aware GCD", still
  // biased); the exact samplers stay exact (a budget-masked token is an
  // invalid prefix of L_M, so CARS records it like any other).
  bool budget_aware = false;
  MatcherOptions matcher;
};

enum class StopReason { kNone, kDone, kMaxDraws, kLmBudget, kEmptyLanguage };
std::string_view StopReasonName(StopReason reason);

struct SamplerStats {
  Method method = Method::kCars;
  int64_t draws = 0;       // finished draws, valid or not
  int64_t valid = 0;       // valid draws (samples)
  int64_t truncated = 0;   // invalid draws rejected only by the length bound M
  int64_t lm_calls = 0;
  int64_t masks = 0;       // Matcher::ComputeMask calls
  int64_t steps = 0;       // tokens drawn
  int64_t trie_steps = 0;  // steps that asked neither the model nor for a mask
  int64_t trie_nodes = 0;
  int64_t trie_bytes = 0;
  int64_t trie_peak_bytes = 0;  // the most bytes seen after a draw
  int64_t trie_evictions = 0;   // pristine (or dead) nodes dropped over the budget
  int64_t trie_strips = 0;      // node distributions dropped, records kept
  int64_t trie_refetches = 0;   // model calls re-asking a dropped prefix (in lm_calls)
  int64_t trie_stripped_nodes = 0;  // nodes holding only their records now
  int64_t trie_stripped_bytes = 0;  // their payload bytes (node records not included)
  bool trie_frozen = false;
  int64_t frozen_at_draw = -1;
  double root_mass = 1.0;  // p_root: the proposal's mass (>= P(L_M))
  StopReason stop = StopReason::kNone;
  // Acceptance over time: per finished draw, 1 when valid, and p_root after it
  // (the expected acceptance of the next draw is P(L_M) / p_root).
  std::vector<uint8_t> valid_by_draw;
  std::vector<double> root_mass_by_draw;

  double acceptance() const { return draws == 0 ? 0.0 : static_cast<double>(valid) / draws; }
  double trie_reuse() const { return steps == 0 ? 0.0 : static_cast<double>(trie_steps) / steps; }
};

// The stats as one JSON object: method, draws, lm_calls, valid, truncated,
// masks, steps, trie_nodes, trie_bytes, trie_bytes_per_node,
// trie_peak_bytes, trie_evictions, trie_strips, trie_refetches,
// trie_stripped_nodes, trie_stripped_bytes, trie_reuse,
// trie_frozen, frozen_at_draw, root_mass, acceptance, stop, the acceptance
// curve (valid count and p_root after every 2^k-th draw and the last one)
// and acceptance_blocks {"block": 100, "valid": [valid draws per block of
// 100 draws, the last one possibly partial]}.
inline constexpr int64_t kAcceptanceBlock = 100;
std::string StatsJson(const SamplerStats& stats);

struct Draw {
  enum class Outcome { kValid, kInvalid, kStopped };
  Outcome outcome = Outcome::kInvalid;
  std::vector<int32_t> tokens;  // as drawn; a valid draw ends with its EOS id
};

class Sampler {
 public:
  virtual ~Sampler() = default;
  // `grammar` and `model` must outlive the sampler; model->vocab_size() must
  // equal the grammar vocabulary's padded_size().
  static absl::StatusOr<std::unique_ptr<Sampler>> Create(Method method, const CompiledGrammar& grammar,
                                                         LanguageModel* model,
                                                         const SamplerOptions& options);

  // One draw. kStopped (and stats().stop set) when a budget is used up or
  // p_root = 0 (no sequence of L_M has positive probability). Errors: the
  // model's, and a Matcher budget that ran out.
  virtual absl::StatusOr<Draw> DrawOne() = 0;

  // Draws until `count` valid samples or a stop; returns the valid samples.
  // `progress`, when set, is called after every draw.
  absl::StatusOr<std::vector<std::vector<int32_t>>> Sample(
      int64_t count, const std::function<void(const SamplerStats&)>& progress = {});

  const SamplerStats& stats() const { return stats_; }

 protected:
  SamplerStats stats_;
};

}  // namespace zapgram::sampling

#endif  // ZAPGRAM_SAMPLING_SAMPLERS_H_
