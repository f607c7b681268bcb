// The samplers (see samplers.h for the target, the five methods and what
// each records). Two classes: TrieSampler runs RS, ARS, RSFT and CARS, which
// share the drawing loop and differ in the `Record*` decisions; GcdSampler
// runs GCD. Tests: tests/sampling/samplers_test.cc.
#include "sampling/samplers.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "sampling/prefix_trie.h"

namespace zapgram::sampling {
namespace {

double Uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

bool Allowed(const std::vector<uint32_t>& words, int32_t id) { return (words[id / 32] >> (id % 32)) & 1; }

// What every sampler keeps: the grammar, the model, the options, the EOS set,
// a Matcher, the random source and the budgets.
class SamplerBase : public Sampler {
 protected:
  SamplerBase(Method method, const CompiledGrammar& grammar, LanguageModel* model,
              const SamplerOptions& options)
      : grammar_(grammar),
        model_(model),
        options_(options),
        matcher_(grammar, options.matcher),
        rng_(options.seed),
        words_(grammar.mask_words()) {
    stats_.method = method;
    is_eos_ = EosFlags(grammar, *model);
  }

  bool OutOfDraws() {
    if (options_.max_draws > 0 && stats_.draws >= options_.max_draws) {
      stats_.stop = StopReason::kMaxDraws;
      return true;
    }
    return false;
  }

  // The model's log-probabilities after `prefix_`; false when the budget is out.
  absl::StatusOr<bool> AskModel() {
    if (options_.max_lm_calls > 0 && stats_.lm_calls >= options_.max_lm_calls) {
      stats_.stop = StopReason::kLmBudget;
      return false;
    }
    ++stats_.lm_calls;
    if (auto status = model_->NextLogProbs(prefix_, &logprobs_); !status.ok()) return status;
    if (static_cast<int32_t>(logprobs_.size()) != model_->vocab_size()) {
      return absl::InvalidArgumentError(absl::StrCat("language model gave ", logprobs_.size(),
                                                     " log-probabilities, expected ", model_->vocab_size()));
    }
    return true;
  }

  // The mask at the Matcher's state into words_, with the length bound: at
  // depth M only EOS may follow.
  void ComputeMask() {
    ++stats_.masks;
    if (options_.budget_aware) {
      // Tokens that can still finish within M (EOS counted): M + 1 - depth left.
      matcher_.ComputeMask(words_.data(),
                           static_cast<int64_t>(options_.max_tokens) + 1 - static_cast<int64_t>(prefix_.size()));
    } else {
      matcher_.ComputeMask(words_.data());
    }
    if (static_cast<int32_t>(prefix_.size()) >= options_.max_tokens) {
      for (size_t w = 0; w < words_.size(); ++w) {
        uint32_t keep = 0;
        for (int bit = 0; bit < 32; ++bit) {
          const size_t id = w * 32 + bit;
          if (id < is_eos_.size() && is_eos_[id]) keep |= uint32_t{1} << bit;
        }
        words_[w] &= keep;
      }
    }
  }

  // Feeds `token` to the Matcher at the current depth; false when L_M rejects it.
  absl::StatusOr<bool> Check(int32_t token) {
    if (static_cast<int32_t>(prefix_.size()) >= options_.max_tokens && !is_eos_[token]) return false;
    if (matcher_.AcceptToken(token)) return true;
    if (!matcher_.status().ok()) return matcher_.status();
    return false;
  }

  void FinishDraw(bool valid, bool truncated, double root_mass) {
    ++stats_.draws;
    if (valid) ++stats_.valid;
    if (truncated) ++stats_.truncated;
    stats_.root_mass = root_mass;
    stats_.valid_by_draw.push_back(valid ? 1 : 0);
    stats_.root_mass_by_draw.push_back(root_mass);
  }

  Draw Result(Draw::Outcome outcome) {
    Draw draw;
    draw.outcome = outcome;
    draw.tokens = prefix_;
    return draw;
  }

  const CompiledGrammar& grammar_;
  LanguageModel* model_;
  SamplerOptions options_;
  Matcher matcher_;
  std::mt19937_64 rng_;
  std::vector<bool> is_eos_;
  std::vector<uint32_t> words_;
  std::vector<float> logprobs_;
  std::vector<float> probs_;
  std::vector<int32_t> prefix_;
};

class GcdSampler final : public SamplerBase {
 public:
  GcdSampler(const CompiledGrammar& grammar, LanguageModel* model, const SamplerOptions& options)
      : SamplerBase(Method::kGcd, grammar, model, options) {}

  absl::StatusOr<Draw> DrawOne() override {
    if (OutOfDraws()) return Result(Draw::Outcome::kStopped);
    matcher_.Reset();
    prefix_.clear();
    while (true) {
      absl::StatusOr<bool> asked = AskModel();
      if (!asked.ok()) return asked.status();
      if (!*asked) return Result(Draw::Outcome::kStopped);
      ComputeMask();
      if (!matcher_.status().ok()) return matcher_.status();
      if (auto status = ProbabilitiesFromLogProbs(logprobs_, &probs_); !status.ok()) return status;
      double total = 0.0;
      for (size_t id = 0; id < probs_.size(); ++id) {
        if (!Allowed(words_, static_cast<int32_t>(id))) probs_[id] = 0.0f;
        total += probs_[id];
      }
      ++stats_.steps;
      if (!(total > 0.0)) {  // a dead end: nothing allowed carries mass
        FinishDraw(false, static_cast<int32_t>(prefix_.size()) >= options_.max_tokens, 1.0);
        return Result(Draw::Outcome::kInvalid);
      }
      const int32_t token = DrawIndex(probs_, total, Uniform01(rng_));
      absl::StatusOr<bool> ok = Check(token);
      if (!ok.ok()) return ok.status();
      if (!*ok) return absl::InternalError(absl::StrCat("gcd: masked token ", token, " rejected"));
      prefix_.push_back(token);
      if (is_eos_[token]) {
        FinishDraw(true, false, 1.0);
        return Result(Draw::Outcome::kValid);
      }
    }
  }
};

class TrieSampler final : public SamplerBase {
 public:
  TrieSampler(Method method, const CompiledGrammar& grammar, LanguageModel* model,
              const SamplerOptions& options)
      : SamplerBase(method, grammar, model, options), trie_(model->vocab_size()) {
    trie_.set_byte_budget(options.max_trie_bytes);
  }

  absl::StatusOr<Draw> DrawOne() override {
    if (OutOfDraws()) return Result(Draw::Outcome::kStopped);
    if (trie_.root() != PrefixTrie::kNoNode && trie_.mass(trie_.root()) <= 0.0) {
      stats_.stop = StopReason::kEmptyLanguage;
      return Result(Draw::Outcome::kStopped);
    }
    matcher_.Reset();
    prefix_.clear();
    synced_ = 0;
    uint32_t node = trie_.root();
    uint32_t parent = PrefixTrie::kNoNode;
    int32_t last = -1;
    const double mass_before = RootMass();
    while (true) {
      const bool at_root = prefix_.empty();
      const int32_t depth = static_cast<int32_t>(prefix_.size());
      bool from_trie = node != PrefixTrie::kNoNode;
      bool asked_grammar = false;
      bool asked_model = false;
      bool expanded_now = false;
      int32_t token;
      if (node != PrefixTrie::kNoNode) {
        trie_.Touch(node);
        if (!trie_.has_distribution(node)) {  // stripped to its records: ask the model again
          absl::StatusOr<bool> asked = AskModel();
          if (!asked.ok()) return asked.status();
          if (!*asked) return Result(Draw::Outcome::kStopped);
          if (auto status = trie_.Restore(node, logprobs_); !status.ok()) return status;
          asked_model = true;
        }
      } else {
        absl::StatusOr<bool> asked = AskModel();
        if (!asked.ok()) return asked.status();
        if (!*asked) return Result(Draw::Outcome::kStopped);
        const bool can_add = !frozen_ && (at_root || parent != PrefixTrie::kNoNode);
        const bool expand = can_add && (stats_.method == Method::kCars ||
                                        (stats_.method == Method::kRsft && at_root));
        std::vector<int32_t> rejected;
        if (expand) {
          if (auto status = SyncMatcher(); !status.ok()) return status;
          ComputeMask();
          if (!matcher_.status().ok()) return matcher_.status();
          asked_grammar = true;
          for (int32_t id = 0; id < model_->vocab_size(); ++id) {
            if (!Allowed(words_, id)) rejected.push_back(id);
          }
        }
        if (can_add) {
          absl::StatusOr<uint32_t> added = trie_.AddNode(parent, last, logprobs_, rejected);
          if (!added.ok()) return added.status();
          node = *added;
          if (expand) trie_.set_expanded(node);
          expanded_now = expand;
        }
      }
      ++stats_.steps;
      if (from_trie && !asked_grammar && !asked_model) ++stats_.trie_steps;
      if (from_trie) {
        if (trie_.mass(node) <= 0.0) {  // not reachable by a draw; kept as a guard
          return absl::InternalError("sampler: a draw reached a prefix of mass 0");
        }
        token = trie_.Draw(node, Uniform01(rng_));
      } else {
        // A prefix the trie did not hold when the draw began: everything
        // below it was unknown then, so the draw goes on from the model's own
        // distribution, whatever this step just recorded. (Drawing from the
        // freshly adjusted weights would renormalize mid-draw, as GCD does,
        // and bias the samples; the records serve the next draws.)
        if (auto status = ProbabilitiesFromLogProbs(logprobs_, &probs_); !status.ok()) return status;
        token = DrawIndex(probs_, 1.0, Uniform01(rng_));
      }
      if (expanded_now && !Allowed(words_, token)) {  // recorded already
        prefix_.push_back(token);
        FinishDraw(false, depth >= options_.max_tokens && !is_eos_[token], RootMass());
        UpdateFreeze(mass_before);
        return Result(Draw::Outcome::kInvalid);
      }
      if (!expanded_now && (node == PrefixTrie::kNoNode || !trie_.expanded(node))) {
        if (auto status = SyncMatcher(); !status.ok()) return status;
        absl::StatusOr<bool> ok = Check(token);
        if (!ok.ok()) return ok.status();
        if (!*ok) {
          prefix_.push_back(token);
          const bool record = !frozen_ && node != PrefixTrie::kNoNode &&
                              (stats_.method == Method::kArs ||
                               (stats_.method == Method::kRsft && at_root));
          if (record) trie_.RecordInvalid(node, {token});
          const bool truncated = depth >= options_.max_tokens && !is_eos_[token];
          FinishDraw(false, truncated, RootMass());
          UpdateFreeze(mass_before);
          return Result(Draw::Outcome::kInvalid);
        }
        synced_ = prefix_.size() + 1;
      }
      prefix_.push_back(token);
      if (is_eos_[token]) {
        FinishDraw(true, false, RootMass());
        UpdateFreeze(mass_before);
        return Result(Draw::Outcome::kValid);
      }
      parent = node;
      last = token;
      node = node == PrefixTrie::kNoNode ? PrefixTrie::kNoNode : trie_.Child(node, token);
    }
  }

 private:
  double RootMass() const {
    return trie_.root() == PrefixTrie::kNoNode ? 1.0 : trie_.mass(trie_.root());
  }

  // Feeds the Matcher the tokens drawn at expanded nodes since it last saw
  // the prefix (they are valid by construction).
  absl::Status SyncMatcher() {
    for (; synced_ < prefix_.size(); ++synced_) {
      if (!matcher_.AcceptToken(prefix_[synced_])) {
        if (!matcher_.status().ok()) return matcher_.status();
        return absl::InternalError(absl::StrCat("sampler: token ", prefix_[synced_], " at position ", synced_,
                                                " was drawn at an expanded node but the grammar rejects it"));
      }
    }
    return absl::OkStatus();
  }

  void UpdateFreeze(double mass_before) {
    // Over the budget with nothing left to evict or strip: freeze.
    const bool full =
        !frozen_ && options_.max_trie_bytes > 0 && !trie_.Shrink(options_.max_trie_bytes, PrefixTrie::kNoNode);
    stats_.trie_nodes = static_cast<int64_t>(trie_.nodes());
    stats_.trie_bytes = static_cast<int64_t>(trie_.bytes());
    stats_.trie_peak_bytes = std::max(stats_.trie_peak_bytes, stats_.trie_bytes);
    stats_.trie_evictions = trie_.evictions();
    stats_.trie_strips = trie_.strips();
    stats_.trie_refetches = trie_.refetches();
    stats_.trie_stripped_nodes = static_cast<int64_t>(trie_.stripped_nodes());
    stats_.trie_stripped_bytes = static_cast<int64_t>(trie_.stripped_bytes());
    if (frozen_) return;
    removed_.push_back(mass_before - RootMass());
    bool freeze = options_.freeze_after_draws > 0 && stats_.draws >= options_.freeze_after_draws;
    freeze = freeze || full;
    const size_t window = static_cast<size_t>(std::max(1, options_.freeze_window));
    if (options_.freeze_below_mass > 0.0 && removed_.size() >= window) {
      double sum = 0.0;
      for (size_t i = removed_.size() - window; i < removed_.size(); ++i) sum += removed_[i];
      freeze = freeze || sum / window < options_.freeze_below_mass;
    }
    if (freeze) {
      frozen_ = true;
      stats_.trie_frozen = true;
      stats_.frozen_at_draw = stats_.draws;
    }
  }

  PrefixTrie trie_;
  bool frozen_ = false;
  size_t synced_ = 0;            // prefix_[0, synced_) is in the Matcher
  std::vector<double> removed_;  // p_root decrease per draw
};

}  // namespace

std::string_view MethodName(Method method) {
  switch (method) {
    case Method::kGcd: return "gcd";
    case Method::kRs: return "rs";
    case Method::kArs: return "ars";
    case Method::kRsft: return "rsft";
    case Method::kCars: return "cars";
  }
  return "?";
}

absl::StatusOr<Method> ParseMethod(std::string_view name) {
  for (Method m : {Method::kGcd, Method::kRs, Method::kArs, Method::kRsft, Method::kCars}) {
    if (MethodName(m) == name) return m;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown sampling method '", std::string(name), "' (expected cars, ars, rsft, rs or gcd)"));
}

std::string_view StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kNone: return "none";
    case StopReason::kDone: return "done";
    case StopReason::kMaxDraws: return "max_draws";
    case StopReason::kLmBudget: return "lm_budget";
    case StopReason::kEmptyLanguage: return "empty_language";
  }
  return "?";
}

absl::Status CheckModelFitsGrammar(const CompiledGrammar& grammar, const LanguageModel* model,
                                   std::string_view who) {
  const std::string prefix(who);
  if (model == nullptr) return absl::InvalidArgumentError(absl::StrCat(prefix, ": no language model"));
  if (model->vocab_size() != grammar.vocabulary().padded_size()) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, ": the language model has ", model->vocab_size(),
                                                   " ids but the vocabulary has ",
                                                   grammar.vocabulary().padded_size()));
  }
  if (grammar.vocabulary().eos_ids().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, ": the vocabulary has no EOS id"));
  }
  return absl::OkStatus();
}

std::vector<bool> EosFlags(const CompiledGrammar& grammar, const LanguageModel& model) {
  std::vector<bool> is_eos(model.vocab_size(), false);
  for (int32_t id : grammar.vocabulary().eos_ids()) {
    if (id >= 0 && id < model.vocab_size()) is_eos[id] = true;
  }
  return is_eos;
}

absl::StatusOr<std::unique_ptr<Sampler>> Sampler::Create(Method method, const CompiledGrammar& grammar,
                                                         LanguageModel* model, const SamplerOptions& options) {
  if (absl::Status st = CheckModelFitsGrammar(grammar, model, "sampler"); !st.ok()) return st;
  if (options.max_tokens < 0) return absl::InvalidArgumentError("sampler: max_tokens < 0");
  if (method == Method::kGcd) return std::unique_ptr<Sampler>(new GcdSampler(grammar, model, options));
  return std::unique_ptr<Sampler>(new TrieSampler(method, grammar, model, options));
}

absl::StatusOr<std::vector<std::vector<int32_t>>> Sampler::Sample(
    int64_t count, const std::function<void(const SamplerStats&)>& progress) {
  std::vector<std::vector<int32_t>> samples;
  while (static_cast<int64_t>(samples.size()) < count) {
    absl::StatusOr<Draw> draw = DrawOne();
    if (!draw.ok()) return draw.status();
    if (draw->outcome == Draw::Outcome::kStopped) return samples;
    if (draw->outcome == Draw::Outcome::kValid) samples.push_back(std::move(draw->tokens));
    if (progress) progress(stats_);
  }
  stats_.stop = StopReason::kDone;
  return samples;
}

std::string StatsJson(const SamplerStats& stats) {
  nlohmann::json curve = nlohmann::json::array();
  int64_t valid = 0;
  for (size_t i = 0; i < stats.valid_by_draw.size(); ++i) {
    valid += stats.valid_by_draw[i];
    const size_t n = i + 1;
    if ((n & (n - 1)) == 0 || n == stats.valid_by_draw.size()) {
      curve.push_back({{"draws", n}, {"valid", valid}, {"root_mass", stats.root_mass_by_draw[i]}});
    }
  }
  // Valid draws per block of kAcceptanceBlock draws (the last block may be partial).
  nlohmann::json blocks = nlohmann::json::array();
  for (size_t start = 0; start < stats.valid_by_draw.size(); start += kAcceptanceBlock) {
    const size_t end = std::min(stats.valid_by_draw.size(), start + kAcceptanceBlock);
    int64_t in_block = 0;
    for (size_t i = start; i < end; ++i) in_block += stats.valid_by_draw[i];
    blocks.push_back(in_block);
  }
  nlohmann::json j = {
      {"method", std::string(MethodName(stats.method))},
      {"draws", stats.draws},
      {"lm_calls", stats.lm_calls},
      {"valid", stats.valid},
      {"truncated", stats.truncated},
      {"masks", stats.masks},
      {"steps", stats.steps},
      {"trie_nodes", stats.trie_nodes},
      {"trie_bytes", stats.trie_bytes},
      {"trie_bytes_per_node",
       stats.trie_nodes == 0 ? 0.0 : static_cast<double>(stats.trie_bytes) / stats.trie_nodes},
      {"trie_peak_bytes", stats.trie_peak_bytes},
      {"trie_evictions", stats.trie_evictions},
      {"trie_strips", stats.trie_strips},
      {"trie_refetches", stats.trie_refetches},
      {"trie_stripped_nodes", stats.trie_stripped_nodes},
      {"trie_stripped_bytes", stats.trie_stripped_bytes},
      {"trie_reuse", stats.trie_reuse()},
      {"trie_frozen", stats.trie_frozen},
      {"frozen_at_draw", stats.frozen_at_draw},
      {"root_mass", stats.root_mass},
      {"acceptance", stats.acceptance()},
      {"stop", std::string(StopReasonName(stats.stop))},
      {"acceptance_curve", curve},
      {"acceptance_blocks", {{"block", kAcceptanceBlock}, {"valid", blocks}}},
  };
  return j.dump();
}

}  // namespace zapgram::sampling
