// `zapgram sample GRAMMAR --tokenizer T --lm uniform|ngram:MODEL
//  --method cars|ars|rsft|rs|gcd|smc -n N [options]`: draws N samples of the
// model's distribution restricted to the grammar (sampling/samplers.h;
// smc: sampling/smc.h, N runs of K particles, one sample per run drawn from
// its final weighted set; --weighted prints every particle with its weight).
// --budget-aware makes every mask budget-aware (masks/budget_mask.h).
//
// Samples go to stdout: each sample's text followed by a newline, or with
// --jsonl one JSON string per line (the text; bytes that are not UTF-8 are
// replaced by U+FFFD). The stats (draws, model calls, valid samples,
// acceptance, trie nodes, bytes per node, trie reuse) go to stderr at the
// end, and with --stats-json FILE as one JSON object (sampling::StatsJson,
// plus the options and, with --exact, the distances to the enumerated
// target). A progress line (valid samples of N, rate, time left, draws and
// acceptance; cli/progress.h) is drawn on stderr only when stderr is a
// terminal and --quiet is not given.
//
// Exit status: 0 all N samples drawn; 1 stopped early (--max-draws,
// --max-lm-calls, or no valid sequence has positive probability); 2 usage
// error, unreadable tokenizer or model, grammar that does not load, model
// or engine error.
//
// Tests: tests/cli/sample_cli_test.cc.
#include <chrono>
#include <cmath>
#include <random>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "nlohmann/json.hpp"
#include "sampling/exact_distribution.h"
#include "sampling/language_model.h"
#include "sampling/samplers.h"
#include "sampling/smc.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram::cli {
namespace {

constexpr std::string_view kName = "sample";

constexpr std::string_view kHelp =
    "usage: zapgram sample GRAMMAR --tokenizer T.json --lm uniform|ngram:MODEL\n"
    "                      --method cars|ars|rsft|rs|gcd|smc -n N [--seed S]\n"
    "                      [--max-tokens M] [--max-draws D] [--max-lm-calls C]\n"
    "                      [--freeze-after N] [--freeze-below MASS] [--jsonl]\n"
    "                      [--stats-json FILE] [--exact] [--max-trie-mb MB]\n"
    "                      [--data-root DIR] [--quiet] [--budget-aware]\n"
    "                      [--particles K] [--ess-threshold X]\n"
    "                      [--resampling systematic|multinomial] [--weighted]\n"
    "\n"
    "Draws N samples from the language model restricted to GRAMMAR and to at most\n"
    "M tokens before EOS (default 256). cars, ars, rsft and rs are exact; gcd\n"
    "(masked greedy-free decoding, renormalized) is biased. Samples are printed\n"
    "one per line (--jsonl: one JSON string per line); stats go to stderr and,\n"
    "with --stats-json, to FILE as JSON. --max-draws / --max-lm-calls stop early;\n"
    "--freeze-after N / --freeze-below MASS freeze the invalid-prefix trie after\n"
    "N draws / once the mean mass it removes per draw falls below MASS. --max-trie-mb\n"
    "is the trie's budget (default 1024, 0: none): past it the trie evicts nodes\n"
    "that hold no record and strips model distributions (the model is asked again\n"
    "when a draw needs one), and freezes only when that is not enough. --exact\n"
    "enumerates the target (at most 2000 prefixes, else an error) and reports\n"
    "KL, total variation and the chi-square p-value of the samples. On a terminal,\n"
    "progress is drawn on stderr; --quiet turns it off.\n"
    "--budget-aware: masks allow a token only if the text can still finish within\n"
    "M tokens (budget-aware GCD never runs out of length; exact methods stay exact).\n"
    "smc: N runs of K particles (--particles, default 16) extended by masked LM\n"
    "proposals with importance weights, resampled (--resampling, default\n"
    "systematic) when the effective sample size falls below X * K (--ess-threshold,\n"
    "default 0.5); each run prints one sample drawn from its weighted set\n"
    "(--weighted: every particle as JSON {\"text\", \"log_weight\", \"valid\", \"run\"}).\n"
    "\n"
    "exit status: 0 N samples drawn, 1 stopped early, 2 usage, input or model error.\n";

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "zapgram sample: %s\n", std::string(status.message()).c_str());
  return kExitError;
}

std::string SampleText(const Vocabulary& vocab, const std::vector<int32_t>& tokens) {
  std::string text;
  for (int32_t id : tokens) text.append(vocab.token_bytes(id));
  return text;
}

std::string ProgressDetail(const sampling::SamplerStats& stats) {
  return absl::StrFormat("%d draws, acceptance %.3f", stats.draws, stats.acceptance());
}

bool ParseCount(const std::string& text, int64_t* out) { return absl::SimpleAtoi(text, out) && *out >= 0; }

void PrintText(const std::string& text, bool jsonl) {
  if (jsonl) {
    std::printf("%s\n", nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
  }
}

struct SmcRun {
  std::string grammar, lm;
  int64_t runs;
  bool jsonl, exact, weighted, quiet;
  std::string stats_path;
};

// --method smc: `runs` independent runs of K particles; from each run's final
// weighted set one sample is drawn in proportion to the weights (a run whose
// particles all died gives none).
int RunSmc(const Vocabulary& vocab, const CompiledGrammar& compiled, sampling::LanguageModel* model,
           const sampling::SmcOptions& options, const SmcRun& run) {
  absl::StatusOr<std::unique_ptr<sampling::SmcSampler>> sampler =
      sampling::SmcSampler::Create(compiled, model, options);
  if (!sampler.ok()) return Fail(sampler.status());
  Progress progress("sample", "runs", static_cast<uint64_t>(run.runs), ProgressWanted(run.quiet));
  std::mt19937_64 pick(options.seed ^ 0x5EEDu);
  std::vector<std::vector<int32_t>> samples;
  int64_t lm_calls = 0, masks = 0, steps = 0, resamples = 0, particles_valid = 0, particles_total = 0, runs = 0;
  double ess_sum = 0.0;
  bool stopped = false;
  const auto started = std::chrono::steady_clock::now();
  for (int64_t r = 0; r < run.runs && !stopped; ++r) {
    absl::StatusOr<sampling::SmcResult> result = (*sampler)->Run();
    if (!result.ok()) return Fail(result.status());
    ++runs;
    lm_calls += result->lm_calls;
    masks += result->masks;
    steps += result->steps;
    resamples += result->resamples;
    particles_valid += result->valid;
    particles_total += static_cast<int64_t>(result->particles.size());
    stopped = result->stopped;
    const std::vector<double> w = result->NormalizedWeights();
    double sum_sq = 0.0;
    for (double v : w) sum_sq += v * v;
    if (sum_sq > 0) ess_sum += 1.0 / sum_sq;
    if (run.weighted) {
      for (const sampling::WeightedParticle& p : result->particles) {
        nlohmann::json line = {{"text", SampleText(vocab, p.tokens)}, {"valid", p.valid}, {"run", r},
                               {"log_weight", std::isfinite(p.log_weight) ? nlohmann::json(p.log_weight)
                                                                          : nlohmann::json()}};
        std::printf("%s\n", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      }
    }
    if (sum_sq > 0) {
      const double u = static_cast<double>(pick() >> 11) * 0x1.0p-53;
      double acc = 0.0;
      size_t chosen = w.size() - 1;
      for (size_t i = 0; i < w.size(); ++i) {
        acc += w[i];
        if (u < acc) {
          chosen = i;
          break;
        }
      }
      while (w[chosen] == 0.0 && chosen > 0) --chosen;
      samples.push_back(result->particles[chosen].tokens);
      if (!run.weighted) PrintText(SampleText(vocab, samples.back()), run.jsonl);
    }
    if (progress.enabled()) {
      progress.Update(static_cast<uint64_t>(runs), absl::StrFormat("%d samples", samples.size()));
    }
  }
  std::fflush(stdout);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  progress.Finish(static_cast<uint64_t>(runs), absl::StrFormat("%d samples", samples.size()));
  nlohmann::json json = {{"method", "smc"},
                         {"grammar", run.grammar},
                         {"lm", run.lm},
                         {"seed", options.seed},
                         {"max_tokens", options.max_tokens},
                         {"budget_aware", options.budget_aware},
                         {"particles", options.particles},
                         {"ess_threshold", options.ess_threshold},
                         {"runs", runs},
                         {"valid", static_cast<int64_t>(samples.size())},
                         {"particles_valid", particles_valid},
                         {"particles_total", particles_total},
                         {"lm_calls", lm_calls},
                         {"masks", masks},
                         {"steps", steps},
                         {"resamples", resamples},
                         {"mean_final_ess", runs > 0 ? ess_sum / runs : 0.0},
                         {"requested", run.runs},
                         {"stop", stopped ? "lm_budget" : "done"},
                         {"seconds", seconds}};
  if (run.exact) {
    absl::StatusOr<sampling::ExactDistribution> target =
        sampling::EnumerateTarget(compiled, model, options.max_tokens, 0.0, 2000);
    if (!target.ok()) return Fail(target.status());
    const sampling::Divergence d = sampling::CompareToExact(*target, samples);
    json["exact"] = {{"kl", d.kl},        {"tv", d.tv},     {"chi_square", d.chi_square}, {"bins", d.bins},
                     {"p_value", d.p_value}, {"outside", d.outside}, {"target_mass", target->valid_mass},
                     {"cut_mass_bound", target->cut_mass_bound}};
    std::fprintf(stderr, "exact target: KL %.6g, TV %.6g, chi-square p %.4g (%d bins)\n", d.kl, d.tv, d.p_value,
                 d.bins);
  }
  std::fprintf(stderr,
               "method smc (K = %d%s): %lld samples of %lld runs, %lld of %lld particles valid, %lld LM calls, "
               "%lld resamples, mean final ESS %.2f, %.2f s\n",
               options.particles, options.budget_aware ? ", budget-aware" : "",
               static_cast<long long>(samples.size()), static_cast<long long>(runs),
               static_cast<long long>(particles_valid), static_cast<long long>(particles_total),
               static_cast<long long>(lm_calls), static_cast<long long>(resamples),
               json["mean_final_ess"].get<double>(), seconds);
  if (!run.stats_path.empty()) {
    std::ofstream out(run.stats_path);
    out << json.dump(2) << "\n";
    if (!out) return Fail(absl::UnavailableError(absl::StrCat(run.stats_path, ": cannot write the stats")));
  }
  return static_cast<int64_t>(samples.size()) == run.runs ? kExitOk : kExitNo;
}

int RunSample(const std::vector<std::string>& args) {
  std::string tokenizer, lm_spec, method_text, count_text, seed_text = "0", max_tokens_text = "256";
  std::string max_draws_text = "0", max_lm_text = "0", freeze_after_text = "0", freeze_below_text = "0";
  std::string stats_path, data_root, max_trie_mb_text = "1024";
  std::string particles_text = "16", ess_text = "0.5", resampling_text = "systematic";
  bool jsonl = false, exact = false, quiet = false, budget_aware = false, weighted = false;
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto is = [&](std::string_view name) { return IsOption(arg, name); };
    struct Valued {
      std::string_view name;
      std::string* value;
    };
    const Valued valued[] = {{"--tokenizer", &tokenizer},       {"--lm", &lm_spec},
                             {"--method", &method_text},        {"-n", &count_text},
                             {"--seed", &seed_text},            {"--max-tokens", &max_tokens_text},
                             {"--max-draws", &max_draws_text},  {"--max-lm-calls", &max_lm_text},
                             {"--freeze-after", &freeze_after_text}, {"--freeze-below", &freeze_below_text},
                             {"--stats-json", &stats_path},     {"--data-root", &data_root},
                             {"--max-trie-mb", &max_trie_mb_text}, {"--particles", &particles_text},
                             {"--ess-threshold", &ess_text},    {"--resampling", &resampling_text}};
    bool matched = false;
    for (const Valued& v : valued) {
      if (!is(v.name)) continue;
      if (!TakeOptionValue(args, &i, v.name, v.value)) {
        return UsageError(kName, absl::StrCat(std::string(v.name), " needs a value"));
      }
      matched = true;
      break;
    }
    if (matched) continue;
    if (arg == "--jsonl") {
      jsonl = true;
    } else if (arg == "--quiet") {
      quiet = true;
    } else if (arg == "--exact") {
      exact = true;
    } else if (arg == "--budget-aware") {
      budget_aware = true;
    } else if (arg == "--weighted") {
      weighted = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return UsageError(kName, absl::StrCat("unknown option '", arg, "'"));
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 1) return UsageError(kName, "expected exactly one GRAMMAR");
  if (tokenizer.empty()) return UsageError(kName, "--tokenizer is required");
  if (lm_spec.empty()) return UsageError(kName, "--lm is required (uniform or ngram:MODEL)");
  if (method_text.empty()) return UsageError(kName, "--method is required (cars, ars, rsft, rs, gcd or smc)");
  const bool smc = method_text == "smc";
  absl::StatusOr<sampling::Method> method = smc ? sampling::Method::kGcd : sampling::ParseMethod(method_text);
  if (!method.ok()) return UsageError(kName, std::string(method.status().message()));
  int64_t count = 0, max_tokens = 0;
  sampling::SamplerOptions options;
  uint64_t seed = 0;
  if (count_text.empty() || !ParseCount(count_text, &count)) return UsageError(kName, "-n needs a count");
  if (!absl::SimpleAtoi(seed_text, &seed)) return UsageError(kName, "--seed needs a non-negative integer");
  if (!ParseCount(max_tokens_text, &max_tokens) || max_tokens > (1 << 30)) {
    return UsageError(kName, "--max-tokens needs a count");
  }
  if (!ParseCount(max_draws_text, &options.max_draws)) return UsageError(kName, "--max-draws needs a count");
  if (!ParseCount(max_lm_text, &options.max_lm_calls)) return UsageError(kName, "--max-lm-calls needs a count");
  if (!ParseCount(freeze_after_text, &options.freeze_after_draws)) {
    return UsageError(kName, "--freeze-after needs a count");
  }
  if (!absl::SimpleAtod(freeze_below_text, &options.freeze_below_mass) || options.freeze_below_mass < 0) {
    return UsageError(kName, "--freeze-below needs a non-negative number");
  }
  int64_t max_trie_mb = 0;
  if (!ParseCount(max_trie_mb_text, &max_trie_mb) || max_trie_mb > (int64_t{1} << 30)) {
    return UsageError(kName, "--max-trie-mb needs a count");
  }
  options.max_trie_bytes = static_cast<size_t>(max_trie_mb) << 20;
  options.seed = seed;
  options.max_tokens = static_cast<int32_t>(max_tokens);
  options.budget_aware = budget_aware;
  sampling::SmcOptions smc_options;
  int64_t particles = 0;
  if (!ParseCount(particles_text, &particles) || particles < 1 || particles > (1 << 20)) {
    return UsageError(kName, "--particles needs a positive count");
  }
  if (!absl::SimpleAtod(ess_text, &smc_options.ess_threshold) || !(smc_options.ess_threshold >= 0) ||
      smc_options.ess_threshold > 1) {
    return UsageError(kName, "--ess-threshold needs a number in [0, 1]");
  }
  absl::StatusOr<sampling::Resampling> resampling = sampling::ParseResampling(resampling_text);
  if (!resampling.ok()) return UsageError(kName, std::string(resampling.status().message()));
  smc_options.resampling = *resampling;
  smc_options.particles = static_cast<int32_t>(particles);
  smc_options.max_tokens = options.max_tokens;
  smc_options.budget_aware = budget_aware;
  smc_options.max_lm_calls = options.max_lm_calls;
  smc_options.seed = seed;

  absl::StatusOr<Vocabulary> vocab = Vocabulary::Load(tokenizer);
  if (!vocab.ok()) return Fail(vocab.status());
  absl::StatusOr<Grammar> grammar = Grammar::Load(positional[0], data_root);
  if (!grammar.ok()) return Fail(grammar.status());
  absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*grammar, *vocab);
  if (!compiled.ok()) return Fail(compiled.status());
  absl::StatusOr<std::unique_ptr<sampling::LanguageModel>> model =
      sampling::OpenLanguageModel(lm_spec, vocab->padded_size());
  if (!model.ok()) return Fail(model.status());
  if (smc) {
    return RunSmc(*vocab, *compiled, model->get(), smc_options, SmcRun{positional[0], lm_spec, count, jsonl, exact,
                                                                       weighted, quiet, stats_path});
  }
  absl::StatusOr<std::unique_ptr<sampling::Sampler>> sampler =
      sampling::Sampler::Create(*method, *compiled, model->get(), options);
  if (!sampler.ok()) return Fail(sampler.status());

  Progress progress("sample", "samples", static_cast<uint64_t>(count), ProgressWanted(quiet));
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<std::vector<int32_t>>> samples =
      (*sampler)->Sample(count, [&](const sampling::SamplerStats& stats) {
        if (progress.enabled()) progress.Update(stats.valid, ProgressDetail(stats));
      });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!samples.ok()) return Fail(samples.status());
  const sampling::SamplerStats& stats = (*sampler)->stats();
  progress.Finish(stats.valid, ProgressDetail(stats));

  for (const std::vector<int32_t>& tokens : *samples) PrintText(SampleText(*vocab, tokens), jsonl);
  std::fflush(stdout);

  nlohmann::json json = nlohmann::json::parse(sampling::StatsJson(stats));
  json["grammar"] = positional[0];
  json["lm"] = lm_spec;
  json["seed"] = seed;
  json["max_tokens"] = max_tokens;
  json["budget_aware"] = budget_aware;
  json["requested"] = count;
  json["seconds"] = seconds;
  if (exact) {
    absl::StatusOr<sampling::ExactDistribution> target =
        sampling::EnumerateTarget(*compiled, model->get(), options.max_tokens, 0.0, 2000);
    if (!target.ok()) return Fail(target.status());
    const sampling::Divergence d = sampling::CompareToExact(*target, *samples);
    json["exact"] = {{"kl", d.kl},        {"tv", d.tv},     {"chi_square", d.chi_square}, {"bins", d.bins},
                     {"p_value", d.p_value}, {"outside", d.outside}, {"target_mass", target->valid_mass},
                     {"cut_mass_bound", target->cut_mass_bound}};
  }
  std::fprintf(stderr,
               "method %s: %lld valid of %lld draws (acceptance %.4f), %lld truncated, %lld LM calls, "
               "%lld masks, trie %lld nodes, %.0f bytes/node, %lld evictions, %lld strips, %lld refetches, "
               "trie reuse %.4f, p_root %.6g, stop %s, %.2f s\n",
               std::string(sampling::MethodName(stats.method)).c_str(), static_cast<long long>(stats.valid),
               static_cast<long long>(stats.draws), stats.acceptance(), static_cast<long long>(stats.truncated),
               static_cast<long long>(stats.lm_calls), static_cast<long long>(stats.masks),
               static_cast<long long>(stats.trie_nodes), json["trie_bytes_per_node"].get<double>(),
               static_cast<long long>(stats.trie_evictions), static_cast<long long>(stats.trie_strips),
               static_cast<long long>(stats.trie_refetches), stats.trie_reuse(), stats.root_mass, std::string(sampling::StopReasonName(stats.stop)).c_str(),
               seconds);
  if (exact) {
    std::fprintf(stderr, "exact target: KL %.6g, TV %.6g, chi-square p %.4g (%d bins)\n",
                 json["exact"]["kl"].get<double>(), json["exact"]["tv"].get<double>(),
                 json["exact"]["p_value"].get<double>(), json["exact"]["bins"].get<int>());
  }
  if (!stats_path.empty()) {
    std::ofstream out(stats_path);
    out << json.dump(2) << "\n";
    if (!out) return Fail(absl::UnavailableError(absl::StrCat(stats_path, ": cannot write the stats")));
  }
  return static_cast<int64_t>(samples->size()) == count ? kExitOk : kExitNo;
}

}  // namespace

const Command kSampleCommand = {
    kName,
    "draw samples of a language model restricted to a grammar (CARS, ARS, RSFT, RS, GCD, SMC)",
    kHelp,
    &RunSample,
};

}  // namespace zapgram::cli
