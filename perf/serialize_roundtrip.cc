// Persistent compiled grammars (api/grammar_serializer.cc): what loading a
// serialized grammar costs against compiling it, and whether the parts a
// grammar builds lazily (token sets, cached masks) should travel with it.
//
// For each valid document of a trace (each grammar once), in one process:
//   compile   Grammar::Load + CompiledGrammar::Compile, what a server pays
//             for a grammar it has not seen
//   load      CompiledGrammar::Deserialize of the grammar's serialized form
//             (the vocabulary already loaded, as on a server; the median
//             of three loads)
//   bytes     the serialized size
// and, to decide whether lazy parts should travel: the document's masks
// walked on the loaded grammar twice, cold (what a loaded grammar pays: its
// token sets and masks are built as the walk needs them) and warm (a second
// matcher on the same grammar: every set and mask built), and the heap bytes
// those parts take after the walk (CompiledGrammar::memory_bytes minus the
// loaded tables). Carrying them could save at most cold - warm, for that
// many more bytes. The vocabulary's shared token-set store is off
// (token_set_cache_bytes = 0) so that one grammar's sets do not warm the
// next (a fresh replica), unless --shared-token-sets (a replica that has
// served other grammars: sets of automata they share are found built); the
// process-wide regex DFA cache is on, as in a server, unless
// --no-regex-cache.
//
// Usage: zapgram_serialize_roundtrip --tokenizer T.json --trace F.jsonl
//        [--data-root DIR] [--lenient] [--lazy] [--no-regex-cache]
//        [--shared-token-sets] [--json] [--verbose: one line per grammar on stderr]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The q-quantile (nearest rank) of `v`, sorted here.
double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(rank, v.size() - 1)];
}

nlohmann::json Summary(const std::vector<double>& v) {
  return {{"p50", Quantile(v, 0.5)}, {"p99", Quantile(v, 0.99)}, {"max", Quantile(v, 1.0)}};
}

// Milliseconds to walk `tokens` with a fresh matcher, a mask before each.
double WalkMs(const zapgram::CompiledGrammar& g, const std::vector<int32_t>& tokens) {
  std::vector<uint32_t> mask(g.mask_words());
  const auto start = Clock::now();
  zapgram::Matcher m(g);
  for (int32_t id : tokens) {
    m.ComputeMask(mask.data());
    if (!m.AcceptToken(id)) break;
  }
  return MsSince(start);
}

int Usage() {
  std::fprintf(stderr,
               "usage: zapgram_serialize_roundtrip --tokenizer T.json --trace F.jsonl [--data-root DIR]\n"
               "       [--lenient] [--lazy] [--no-regex-cache] [--shared-token-sets] [--json] [--verbose]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string tokenizer, trace, data_root;
  bool json = false, no_regex_cache = false, shared_token_sets = false, verbose = false;
  zapgram::LoadOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--tokenizer" && i + 1 < argc) tokenizer = argv[++i];
    else if (arg == "--trace" && i + 1 < argc) trace = argv[++i];
    else if (arg == "--data-root" && i + 1 < argc) data_root = argv[++i];
    else if (arg == "--lenient") options.schema.lenient = true;
    else if (arg == "--lazy") options.lazy_terminals = true;
    else if (arg == "--no-regex-cache") no_regex_cache = true;
    else if (arg == "--shared-token-sets") shared_token_sets = true;
    else if (arg == "--json") json = true;
    else if (arg == "--verbose") verbose = true;
    else return Usage();
  }
  if (tokenizer.empty() || trace.empty()) return Usage();
  if (data_root.empty()) {
    // ROOT for a trace at ROOT/traces/<tokenizer>/<set>.jsonl.
    data_root = std::filesystem::path(trace).parent_path().parent_path().parent_path().string();
  }
  if (no_regex_cache) zapgram::Grammar::SetSharedRegexCacheBytes(0);
  zapgram::VocabularyOptions vocabulary_options;
  if (!shared_token_sets) vocabulary_options.token_set_cache_bytes = 0;
  absl::StatusOr<zapgram::Vocabulary> vocabulary = zapgram::Vocabulary::Load(tokenizer, vocabulary_options);
  if (!vocabulary.ok()) {
    std::fprintf(stderr, "%s\n", std::string(vocabulary.status().message()).c_str());
    return 2;
  }
  (void)vocabulary->fingerprint();  // computed once per vocabulary, not per load

  std::ifstream in(trace);
  std::set<std::string> seen;
  std::vector<double> compile_ms, load_ms, ratio, bytes, cold_ms, warm_ms, lazy_bytes;
  size_t failed = 0, mismatched = 0;
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (!record.value("valid", true)) continue;
    const std::string spec = record["grammar"].get<std::string>();
    if (!seen.insert(spec).second) continue;
    auto start = Clock::now();
    absl::StatusOr<zapgram::Grammar> grammar = zapgram::Grammar::Load(spec, data_root, options);
    if (!grammar.ok()) {
      ++failed;
      continue;
    }
    absl::StatusOr<zapgram::CompiledGrammar> compiled = zapgram::CompiledGrammar::Compile(*grammar, *vocabulary);
    if (!compiled.ok()) {
      ++failed;
      continue;
    }
    const double compile = MsSince(start);
    const std::string serialized = compiled->Serialize();
    // The median of three loads (a load takes microseconds to milliseconds,
    // so one preemption on a shared machine would swamp a single one).
    std::vector<double> loads;
    absl::StatusOr<zapgram::CompiledGrammar> loaded = absl::UnknownError("not loaded");
    for (int k = 0; k < 3; ++k) {
      start = Clock::now();
      loaded = zapgram::CompiledGrammar::Deserialize(serialized, *vocabulary);
      loads.push_back(MsSince(start));
    }
    const double load = Quantile(loads, 0.5);
    if (verbose) {
      std::fprintf(stderr, "%s compile %.3f load %.3f bytes %zu\n", spec.c_str(), compile, load, serialized.size());
    }
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s: %s\n", spec.c_str(), std::string(loaded.status().message()).c_str());
      ++mismatched;
      continue;
    }
    compile_ms.push_back(compile);
    load_ms.push_back(load);
    ratio.push_back(load / compile);
    bytes.push_back(static_cast<double>(serialized.size()));
    const std::vector<int32_t> tokens = record["tokens"].get<std::vector<int32_t>>();
    const size_t tables = loaded->memory_bytes();
    cold_ms.push_back(WalkMs(*loaded, tokens));
    warm_ms.push_back(WalkMs(*loaded, tokens));
    lazy_bytes.push_back(static_cast<double>(loaded->memory_bytes() - std::min(tables, loaded->memory_bytes())));
  }
  const double load_p50 = Quantile(load_ms, 0.5), load_p99 = Quantile(load_ms, 0.99);
  const double compile_p50 = Quantile(compile_ms, 0.5), compile_p99 = Quantile(compile_ms, 0.99);
  const nlohmann::json out = {
      {"grammars", compile_ms.size()},
      {"failed", failed},
      {"load_errors", mismatched},
      {"compile_ms", Summary(compile_ms)},
      {"load_ms", Summary(load_ms)},
      {"load_over_compile", {{"p50_over_p50", load_p50 / compile_p50}, {"p99_over_p99", load_p99 / compile_p99},
                             {"per_grammar", Summary(ratio)}}},
      {"bytes", Summary(bytes)},
      {"walk_cold_ms", Summary(cold_ms)},
      {"walk_warm_ms", Summary(warm_ms)},
      {"lazy_parts_bytes", Summary(lazy_bytes)},
  };
  if (json) {
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("grammars %zu (failed %zu, load errors %zu)\n", compile_ms.size(), failed, mismatched);
  std::printf("compile ms  p50 %.3f  p99 %.3f  max %.3f\n", compile_p50, compile_p99, Quantile(compile_ms, 1));
  std::printf("load ms     p50 %.3f  p99 %.3f  max %.3f\n", load_p50, load_p99, Quantile(load_ms, 1));
  std::printf("load/compile  p50/p50 %.3f  p99/p99 %.3f  per grammar p50 %.3f p99 %.3f\n", load_p50 / compile_p50,
              load_p99 / compile_p99, Quantile(ratio, 0.5), Quantile(ratio, 0.99));
  std::printf("bytes       p50 %.0f  p99 %.0f  max %.0f\n", Quantile(bytes, 0.5), Quantile(bytes, 0.99),
              Quantile(bytes, 1));
  std::printf("walk ms cold p50 %.3f p99 %.3f; warm p50 %.3f p99 %.3f\n", Quantile(cold_ms, 0.5),
              Quantile(cold_ms, 0.99), Quantile(warm_ms, 0.5), Quantile(warm_ms, 0.99));
  std::printf("lazy parts bytes after the walk  p50 %.0f  p99 %.0f  max %.0f\n", Quantile(lazy_bytes, 0.5),
              Quantile(lazy_bytes, 0.99), Quantile(lazy_bytes, 1));
  return 0;
}
