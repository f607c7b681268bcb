// `zapgram bench --tokenizer T.json --trace F.jsonl [--limit N] [--json]
//  [--per-doc OUT.jsonl] [--no-pruning] [--no-cache] [--no-ci-sets] [--token-classes | --no-token-classes] [--no-lazy-terminals] [--data-root DIR] [--quiet]
//  [--cpu-clock]`:
//  teacher-forced
// mask benchmark over a trace file (format and output fixed by DESIGN.md,
// since other engines are measured the same way).
//
// For each document of the trace: its grammar is compiled once per distinct
// grammar argument (Grammar::Load + CompiledGrammar::Compile, timed: compile
// ms; and the token classes where they are used), then a fresh Matcher walks the document's real token ids: before each
// token the mask is computed (timed: mask µs per token) and the token must be
// allowed by it; then it is accepted. A document is accepted when every token
// is allowed and the end state accepts (EOS allowed). --cpu-clock times
// masks by the thread's CPU clock instead of the wall clock: on a loaded
// machine a wall-clock mask also counts the time the thread waited for a
// core (a 0.5 ms mask preempted for a 4 ms slice reads 4.5 ms). Rejected documents stop
// at their first disallowed token (`rejected_at_token`). Records with
// "roundtrip_mismatch": true are skipped (their tokens encode a normalized
// text). Peak RSS is the process's (getrusage).
//
// The default data root is ROOT for a trace at ROOT/traces/<tokenizer>/<set>.jsonl.
// On a terminal, progress (documents done of the trace's lines, rate, time
// left) is drawn on stderr (cli/progress.h); --quiet turns it off.
//
// Tests: tests/cli/cli_test.cc (CliTest.Bench*).
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "nlohmann/json.hpp"
#include "api/grammar_data.h"
#include "masks/matcher.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram::cli {
namespace {

constexpr std::string_view kHelp =
    "usage: zapgram bench --tokenizer T.json --trace F.jsonl [--limit N] [--json]\n"
    "                     [--per-doc OUT.jsonl] [--no-pruning] [--no-cache] [--no-ci-sets]\n"
    "                     [--token-classes | --no-token-classes] [--no-lazy-terminals]\n"
    "                     [--lenient] [--data-root DIR] [--grammar-cache-mb N]\n"
    "                     [--mask-cache-mb N] [--token-set-cache-mb N] [--regex-cache-mb N] [--quiet]\n"
    "                     [--budget-slack S] [--cpu-clock]\n"
    "\n"
    "Teacher-forced mask benchmark: for every document of the trace, compute the\n"
    "token mask before each of its real tokens, check the token is allowed, accept it.\n"
    "\n"
    "prints: docs, tokens, docs accepted, valid docs, compile ms (p50, p90, p99,\n"
    "max), mask us per token (mean, p50, p90, p99, max), time to first mask (compile\n"
    "+ first mask, p50, p90, p99, max), compile time by stage summed over the\n"
    "grammars (read, normalize, merge, lower: Grammar::compile_times; join: the\n"
    "vocabulary join and first Matcher; first mask), the vocabulary's load time\n"
    "(its token trie included: never part of a compile), bytes per compiled grammar\n"
    "(p50, max; measured after its first document), peak RSS.\n"
    "\n"
    "options:\n"
    "  --tokenizer T.json  Hugging Face tokenizer.json of the trace's token ids\n"
    "  --trace F.jsonl     trace: {\"id\",\"grammar\",\"text\",\"tokens\",\"valid\"} per line\n"
    "  --limit N           only the first N documents\n"
    "  --json              the summary as one JSON object\n"
    "  --per-doc OUT       one line per document: {\"id\",\"valid\",\"accepted\",\n"
    "                      \"rejected_at_token\",\"error\"} and \"grammar\", \"mask_us_total\",\n"
    "                      \"mask_us_max\", \"mask_us_each\" (every mask, 0.01 us), and\n"
    "                      \"compile_ms\", \"first_mask_ms\", \"compile_stages_ms\" on the\n"
    "                      document that compiled its grammar (perf/mask_report.py\n"
    "                      --plots draws them)\n"
    "  --no-pruning        switch ZapFormat compaction off (ablation; also no cache)\n"
    "  --no-cache          switch the state cache off (ablation)\n"
    "  --no-ci-sets        switch the context-independent token sets off (ablation)\n"
    "  --token-classes     compute every grammar's masks over token classes and\n"
    "                      expand them (default: Lark grammars only, where they\n"
    "                      pay; MatcherOptions::token_classes)\n"
    "  --no-token-classes  never use token classes (ablation)\n"
    "  --no-lazy-terminals determinize every terminal at compile time, without\n"
    "                      the lazy tier (large regular parts as terminals\n"
    "                      determinized as the text visits them, the default;\n"
    "                      LoadOptions::lazy_terminals; ablation)\n"
    "  --budget-slack S    budget-aware masks (masks/budget_mask.h) with n = the\n"
    "                      document's remaining tokens + 1 (EOS) + S: a valid\n"
    "                      document must still be accepted (its own rest finishes in\n"
    "                      budget); the JSON summary adds \"budget_inexact\"\n"
    "  --indenter=MODE   Lark's Indenter (Python's _INDENT/_DEDENT): auto (default:\n"
    "                    when the grammar %declares _INDENT and _DEDENT and uses\n"
    "                    _NL or _NEWLINE), on, off\n"
    "  --lenient           schema:PATH grammars drop the keywords a grammar cannot\n"
    "                      enforce instead of failing to compile\n"
    "  --data-root DIR     resolve the trace's grammar paths against DIR (default: the\n"
    "                      folder two levels above the trace's folder)\n"
    "  --grammar-cache-mb N  keep compiled grammars between documents up to N MB of\n"
    "                      their memory, least recently used dropped first, as a\n"
    "                      server's compiler cache would (default: keep all)\n"
    "  --mask-cache-mb N   the vocabulary's shared mask cache budget (default 128)\n"
    "  --token-set-cache-mb N  the vocabulary's shared token-set budget (default 64;\n"
    "                      0: every grammar builds its own sets)\n"
    "  --regex-cache-mb N  the process's shared regex DFA budget (default 16; 0:\n"
    "                      every grammar determinizes all its terminals)\n"
    "  --quiet             no progress line on stderr (drawn only when stderr is a\n"
    "                      terminal)\n"
    "  --cpu-clock         time masks (and compiles) by the thread's CPU clock, not\n"
    "                      the wall clock: time waiting for a core on a loaded\n"
    "                      machine is left out\n"
    "\n"
    "exit status: 0 ran (whatever the verdicts), 2 usage error or unreadable input.\n";

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(k, v.size() - 1)];
}

double Max(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

// Wall-clock milliseconds since `start`.
double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Non-empty lines of the trace: the documents to expect, for the progress line.
uint64_t CountLines(const std::string& path) {
  std::ifstream in(path);
  uint64_t lines = 0;
  std::string line;
  while (std::getline(in, line)) lines += !line.empty();
  return lines;
}

struct CompiledEntry {
  std::optional<CompiledGrammar> grammar;
  std::string error;
  uint64_t last_used = 0;  // document number
};

// Parses a megabyte count for `option` into bytes.
bool ParseMegabytes(const std::string& text, size_t* bytes) {
  char* end = nullptr;
  const unsigned long long mb = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || end == text.c_str() || *end != '\0' || mb > (SIZE_MAX >> 20)) return false;
  *bytes = static_cast<size_t>(mb) << 20;
  return true;
}

// Drops the least recently used compiled grammars until those kept hold at
// most `budget` bytes (the one used last always stays).
void DropLeastRecentlyUsed(size_t budget, std::map<std::string, CompiledEntry>* compiled) {
  struct Kept {
    uint64_t last_used;
    size_t bytes;
    std::string spec;
  };
  size_t total = 0;
  std::vector<Kept> by_age;
  for (const auto& [spec, entry] : *compiled) {
    if (!entry.grammar.has_value()) continue;
    by_age.push_back({entry.last_used, entry.grammar->memory_bytes(), spec});
    total += by_age.back().bytes;
  }
  std::sort(by_age.begin(), by_age.end(), [](const Kept& a, const Kept& b) { return a.last_used < b.last_used; });
  for (size_t k = 0; k + 1 < by_age.size() && total > budget; ++k) {
    total -= by_age[k].bytes;
    compiled->erase(by_age[k].spec);
  }
}

int RunBench(const std::vector<std::string>& args) {
  std::string tokenizer, trace, per_doc_path, data_root, limit_text;
  std::string grammar_cache_text, mask_cache_text, token_set_cache_text, regex_cache_text, budget_slack_text;
  bool json = false, pruning = true, use_cache = true, use_token_sets = true, quiet = false, cpu_clock = false;
  TokenClassUse token_classes = TokenClassUse::kAuto;
  LoadOptions load_options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--json") {
      json = true;
    } else if (arg == "--quiet") {
      quiet = true;
    } else if (arg == "--cpu-clock") {
      cpu_clock = true;
    } else if (arg == "--lenient") {
      load_options.schema.lenient = true;
    } else if (std::string error; TakeIndenterOption(args, &i, &load_options.indenter, &error)) {
      if (!error.empty()) return UsageError("bench", error);
    } else if (arg == "--no-pruning") {
      pruning = false;
    } else if (arg == "--no-cache") {
      use_cache = false;
    } else if (arg == "--token-classes") {
      token_classes = TokenClassUse::kAlways;
    } else if (arg == "--no-token-classes") {
      token_classes = TokenClassUse::kNever;
    } else if (arg == "--no-lazy-terminals") {
      load_options.lazy_terminals = false;
    } else if (arg == "--lazy-terminals") {  // the default; kept for older scripts
      load_options.lazy_terminals = true;
    } else if (arg == "--no-ci-sets") {
      use_token_sets = false;
    } else if (absl::StartsWith(arg, "--tokenizer")) {
      if (!TakeOptionValue(args, &i, "--tokenizer", &tokenizer)) return UsageError("bench", "--tokenizer needs a file");
    } else if (absl::StartsWith(arg, "--trace")) {
      if (!TakeOptionValue(args, &i, "--trace", &trace)) return UsageError("bench", "--trace needs a file");
    } else if (absl::StartsWith(arg, "--budget-slack")) {
      if (!TakeOptionValue(args, &i, "--budget-slack", &budget_slack_text)) {
        return UsageError("bench", "--budget-slack needs a count");
      }
    } else if (absl::StartsWith(arg, "--per-doc")) {
      if (!TakeOptionValue(args, &i, "--per-doc", &per_doc_path)) return UsageError("bench", "--per-doc needs a file");
    } else if (absl::StartsWith(arg, "--data-root")) {
      if (!TakeOptionValue(args, &i, "--data-root", &data_root)) return UsageError("bench", "--data-root needs a directory");
    } else if (absl::StartsWith(arg, "--grammar-cache-mb")) {
      if (!TakeOptionValue(args, &i, "--grammar-cache-mb", &grammar_cache_text)) {
        return UsageError("bench", "--grammar-cache-mb needs a number");
      }
    } else if (absl::StartsWith(arg, "--mask-cache-mb")) {
      if (!TakeOptionValue(args, &i, "--mask-cache-mb", &mask_cache_text)) {
        return UsageError("bench", "--mask-cache-mb needs a number");
      }
    } else if (absl::StartsWith(arg, "--token-set-cache-mb")) {
      if (!TakeOptionValue(args, &i, "--token-set-cache-mb", &token_set_cache_text)) {
        return UsageError("bench", "--token-set-cache-mb needs a number");
      }
    } else if (absl::StartsWith(arg, "--regex-cache-mb")) {
      if (!TakeOptionValue(args, &i, "--regex-cache-mb", &regex_cache_text)) {
        return UsageError("bench", "--regex-cache-mb needs a number");
      }
    } else if (absl::StartsWith(arg, "--limit")) {
      if (!TakeOptionValue(args, &i, "--limit", &limit_text)) return UsageError("bench", "--limit needs a number");
    } else {
      return UsageError("bench", absl::StrCat("unknown argument '", arg, "'"));
    }
  }
  if (tokenizer.empty() || trace.empty()) return UsageError("bench", "--tokenizer and --trace are required");
  size_t limit = SIZE_MAX;
  if (!limit_text.empty()) {
    char* end = nullptr;
    limit = std::strtoull(limit_text.c_str(), &end, 10);
    if (end == limit_text.c_str() || *end != '\0') return UsageError("bench", "--limit needs a number");
  }
  size_t grammar_cache_bytes = SIZE_MAX;
  VocabularyOptions vocabulary_options;
  if (!grammar_cache_text.empty() && !ParseMegabytes(grammar_cache_text, &grammar_cache_bytes)) {
    return UsageError("bench", "--grammar-cache-mb needs a number");
  }
  if (!mask_cache_text.empty() && !ParseMegabytes(mask_cache_text, &vocabulary_options.mask_cache_bytes)) {
    return UsageError("bench", "--mask-cache-mb needs a number");
  }
  if (!token_set_cache_text.empty() &&
      !ParseMegabytes(token_set_cache_text, &vocabulary_options.token_set_cache_bytes)) {
    return UsageError("bench", "--token-set-cache-mb needs a number");
  }
  if (!regex_cache_text.empty()) {
    size_t regex_cache_bytes = 0;
    if (!ParseMegabytes(regex_cache_text, &regex_cache_bytes)) {
      return UsageError("bench", "--regex-cache-mb needs a number");
    }
    ::zapgram::Grammar::SetSharedRegexCacheBytes(regex_cache_bytes);
  }
  if (data_root.empty()) {
    data_root = std::filesystem::absolute(trace).parent_path().parent_path().parent_path().string();
  }
  std::ifstream in(trace);
  if (!in) {
    std::fprintf(stderr, "zapgram bench: cannot read trace '%s'\n", trace.c_str());
    return kExitError;
  }
  const auto vocab_start = std::chrono::steady_clock::now();
  absl::StatusOr<Vocabulary> vocab = Vocabulary::Load(tokenizer, vocabulary_options);
  const double vocab_load_ms = MsSince(vocab_start);
  if (!vocab.ok()) {
    std::fprintf(stderr, "zapgram bench: %s\n", std::string(vocab.status().message()).c_str());
    return kExitError;
  }
  std::ofstream per_doc;
  if (!per_doc_path.empty()) {
    per_doc.open(per_doc_path);
    if (!per_doc) {
      std::fprintf(stderr, "zapgram bench: cannot write '%s'\n", per_doc_path.c_str());
      return kExitError;
    }
  }
  MatcherOptions matcher_options;
  matcher_options.pruning = pruning;
  matcher_options.use_cache = use_cache;
  matcher_options.use_token_sets = use_token_sets;
  matcher_options.token_classes = token_classes;
  matcher_options.max_rollback_bytes = 0;
  // --budget-slack S: budget-aware masks with n = the document's tokens from
  // here on + its EOS + S, so a valid document's own next token must stay
  // allowed (its rest is a completion in budget): a rejection is over-masking.
  int64_t budget_slack = -1;
  if (!budget_slack_text.empty()) {
    if (!absl::SimpleAtoi(budget_slack_text, &budget_slack) || budget_slack < 0) {
      return UsageError("bench", "--budget-slack needs a count");
    }
    matcher_options.max_rollback_bytes = 512;  // the budget searches roll back
  }
  // Microseconds on the chosen clock (--cpu-clock: this thread's CPU time).
  const auto now_us = [cpu_clock] {
    if (cpu_clock) {
      timespec t{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
      return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
    }
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  uint64_t budget_inexact = 0;
  std::map<std::string, CompiledEntry> compiled;
  std::vector<double> compile_ms, mask_us, first_mask_ms, grammar_bytes;
  // Summed over the grammars compiled (wall clock, ms): Grammar::compile_times,
  // then the vocabulary join (CompiledGrammar::Compile and a first Matcher),
  // then the first masks.
  double stage_read = 0, stage_normalize = 0, stage_merge = 0, stage_lower = 0, stage_join = 0,
         stage_first_mask = 0;
  size_t docs = 0, tokens = 0, accepted = 0, valid = 0;
  std::vector<uint32_t> words;
  std::string line;
  const bool show_progress = ProgressWanted(quiet);
  Progress progress("bench", "docs", show_progress ? std::min<uint64_t>(CountLines(trace), limit) : 0,
                    show_progress);
  while (docs < limit && std::getline(in, line)) {
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      std::fprintf(stderr, "zapgram bench: %s: bad record: %s\n", trace.c_str(), e.what());
      return kExitError;
    }
    if (record.value("roundtrip_mismatch", false)) continue;
    ++docs;
    const std::string id = record.value("id", "");
    const bool is_valid = record.value("valid", true);
    valid += is_valid;
    const std::string spec = record.at("grammar");
    CompiledEntry& entry = compiled[spec];
    entry.last_used = docs;
    double doc_compile_ms = 0;
    nlohmann::json doc = {{"id", id}, {"valid", is_valid}, {"accepted", false},
                          {"rejected_at_token", nullptr}, {"error", nullptr}, {"grammar", spec}};
    if (!entry.grammar.has_value() && entry.error.empty()) {
      const double start = now_us();
      absl::StatusOr<Grammar> g = Grammar::Load(spec, data_root, load_options);
      const auto join_start = std::chrono::steady_clock::now();
      absl::StatusOr<CompiledGrammar> c =
          g.ok() ? CompiledGrammar::Compile(*g, *vocab) : absl::StatusOr<CompiledGrammar>(g.status());
      // A first Matcher builds the token classes and their masks' grammar
      // where the options ask for them up front (--token-classes: once per
      // compiled grammar), so that compile ms says what they cost. By
      // default a Lark grammar's classes are built along its masks, once
      // they pay, and their cost shows in the mask times.
      if (c.ok()) Matcher(*c, matcher_options);
      doc_compile_ms = (now_us() - start) / 1000;
      if (g.ok()) {
        const CompileTimes& t = g->compile_times();
        const double join_ms = MsSince(join_start);
        stage_read += t.read_ms;
        stage_normalize += t.normalize_ms;
        stage_merge += t.merge_ms;
        stage_lower += t.lower_ms;
        stage_join += join_ms;
        doc["compile_stages_ms"] = {{"read", t.read_ms}, {"normalize", t.normalize_ms},
                                    {"merge", t.merge_ms}, {"lower", t.lower_ms}, {"join", join_ms}};
      }
      compile_ms.push_back(doc_compile_ms);
      if (c.ok()) {
        entry.grammar = *std::move(c);
      } else {
        entry.error = std::string(c.status().message());
      }
    }
    if (doc_compile_ms > 0) doc["compile_ms"] = doc_compile_ms;
    if (!entry.grammar.has_value()) {
      doc["error"] = entry.error;
    } else {
      Matcher matcher(*entry.grammar, matcher_options);
      words.assign(entry.grammar->mask_words(), 0);
      const std::vector<int32_t> ids = record.at("tokens").get<std::vector<int32_t>>();
      bool ok = true;
      double doc_mask_us = 0, doc_max_us = 0;
      std::vector<double> doc_each_us;
      for (size_t k = 0; k < ids.size() && ok; ++k) {
        const double start = now_us();
        if (budget_slack >= 0) {
          matcher.ComputeMask(words.data(), static_cast<int64_t>(ids.size() - k) + 1 + budget_slack);
        } else {
          matcher.ComputeMask(words.data());
        }
        const double us = now_us() - start;
        mask_us.push_back(us);
        doc_mask_us += us;
        doc_max_us = std::max(doc_max_us, us);
        doc_each_us.push_back(std::round(us * 100) / 100);
        if (k == 0 && doc_compile_ms > 0) {
          first_mask_ms.push_back(doc_compile_ms + us / 1000);
          stage_first_mask += us / 1000;
          doc["first_mask_ms"] = first_mask_ms.back();
        }
        ++tokens;
        const int32_t t = ids[k];
        const bool allowed = t >= 0 && t < vocab->padded_size() && ((words[t / 32] >> (t % 32)) & 1);
        if (!allowed || !matcher.AcceptToken(t)) {
          ok = false;
          doc["rejected_at_token"] = k;
          if (!matcher.status().ok()) doc["error"] = std::string(matcher.status().message());
        }
      }
      budget_inexact += matcher.BudgetMaskInexact();
      doc["mask_us_total"] = doc_mask_us;
      doc["mask_us_max"] = doc_max_us;
      doc["mask_us_each"] = doc_each_us;
      if (ok) {
        if (matcher.IsAccepting()) {
          doc["accepted"] = true;
          ++accepted;
        } else {
          doc["rejected_at_token"] = ids.size();
        }
      }
    }
    if (entry.grammar.has_value()) {
      const size_t bytes = entry.grammar->memory_bytes();
      const masks::CompiledGrammar::Memory m = entry.grammar->impl()->memory();
      doc["grammar_bytes"] = bytes;
      doc["grammar_memory"] = {
                               {"tables", m.grammar}, {"token_sets_built", m.token_sets_built},
                               {"token_sets_found", m.token_sets_found}, {"lexed_sets", m.lexed_sets},
                               {"mask_cache", m.mask_cache}};
      if (doc_compile_ms > 0) grammar_bytes.push_back(static_cast<double>(bytes));
    }
    if (per_doc.is_open()) per_doc << doc.dump() << "\n";
    if (grammar_cache_bytes != SIZE_MAX) DropLeastRecentlyUsed(grammar_cache_bytes, &compiled);
    progress.Update(docs);
  }
  progress.Finish(docs);
  double mean = 0;
  for (double v : mask_us) mean += v;
  if (!mask_us.empty()) mean /= static_cast<double>(mask_us.size());
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  const double peak_rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;
  const double max_us = Max(mask_us);
  const double max_ms = Max(compile_ms);
  const double max_grammar_bytes = Max(grammar_bytes);
  uint64_t hits = 0, lookups = 0;
  for (const auto& [spec, entry] : compiled) {
    if (!entry.grammar.has_value()) continue;
    const CompiledGrammar::CacheStats s = entry.grammar->cache_stats();
    hits += s.hits;
    lookups += s.hits + s.misses;
  }
  const double hit_rate = lookups == 0 ? 0 : static_cast<double>(hits) / static_cast<double>(lookups);
  const SharedRegexCacheStats regex_cache = ::zapgram::Grammar::GetSharedRegexCacheStats();
  if (json) {
    nlohmann::json summary = {
        {"docs", docs}, {"tokens", tokens}, {"accepted", accepted}, {"valid", valid},
        {"compile_ms", {{"p50", Percentile(compile_ms, 0.5)}, {"p90", Percentile(compile_ms, 0.9)},
                        {"p99", Percentile(compile_ms, 0.99)}, {"max", max_ms}}},
        {"compile_stages_ms", {{"read", stage_read}, {"normalize", stage_normalize}, {"merge", stage_merge},
                               {"lower", stage_lower}, {"join", stage_join}, {"first_mask", stage_first_mask}}},
        {"vocab_load_ms", vocab_load_ms},
        {"mask_us", {{"mean", mean}, {"p50", Percentile(mask_us, 0.5)}, {"p90", Percentile(mask_us, 0.9)},
                     {"p99", Percentile(mask_us, 0.99)}, {"max", max_us}}},
        {"first_mask_ms", {{"p50", Percentile(first_mask_ms, 0.5)}, {"p90", Percentile(first_mask_ms, 0.9)},
                           {"p99", Percentile(first_mask_ms, 0.99)}, {"max", Max(first_mask_ms)}}},
        {"bytes_per_grammar", {{"p50", Percentile(grammar_bytes, 0.5)}, {"max", max_grammar_bytes}}},
        {"peak_rss_mb", peak_rss_mb}, {"cache_hit_rate", hit_rate},
        {"regex_cache", {{"hits", regex_cache.hits}, {"misses", regex_cache.misses}, {"bytes", regex_cache.bytes}}}};
    if (budget_slack >= 0) {
      summary["budget_slack"] = budget_slack;
      summary["budget_inexact"] = budget_inexact;
    }
    std::printf("%s\n", summary.dump().c_str());
  } else {
    std::printf("docs %zu, tokens %zu, accepted %zu, valid %zu\n", docs, tokens, accepted, valid);
    std::printf("compile ms: p50 %.2f, p90 %.2f, max %.2f\n", Percentile(compile_ms, 0.5),
                Percentile(compile_ms, 0.9), max_ms);
    std::printf("mask us: mean %.1f, p50 %.1f, p90 %.1f, p99 %.1f, max %.1f\n", mean,
                Percentile(mask_us, 0.5), Percentile(mask_us, 0.9), Percentile(mask_us, 0.99), max_us);
    std::printf("first mask ms (compile + first mask): p50 %.2f, p90 %.2f, p99 %.2f, max %.2f\n",
                Percentile(first_mask_ms, 0.5), Percentile(first_mask_ms, 0.9),
                Percentile(first_mask_ms, 0.99), Max(first_mask_ms));
    std::printf("compile ms by stage (summed): read %.1f, normalize %.1f, merge %.1f, lower %.1f, "
                "join %.1f, first mask %.1f; vocabulary load %.1f\n",
                stage_read, stage_normalize, stage_merge, stage_lower, stage_join, stage_first_mask,
                vocab_load_ms);
    std::printf("bytes per compiled grammar: p50 %.0f, max %.0f\n", Percentile(grammar_bytes, 0.5),
                max_grammar_bytes);
    std::printf("peak RSS: %.1f MB\n", peak_rss_mb);
    std::printf("state cache hit rate: %.1f%%\n", 100 * hit_rate);
    std::printf("shared regex DFAs: %llu found, %llu built, %.1f MB\n",
                static_cast<unsigned long long>(regex_cache.hits), static_cast<unsigned long long>(regex_cache.misses),
                static_cast<double>(regex_cache.bytes) / (1 << 20));
    if (budget_slack >= 0) {
      std::printf("budget-aware masks: slack %lld, tokens masked undecided %llu\n",
                  static_cast<long long>(budget_slack), static_cast<unsigned long long>(budget_inexact));
    }
  }
  return kExitOk;
}

}  // namespace

const Command kBenchCommand = {
    "bench",
    "teacher-forced mask benchmark over a trace file (DESIGN.md's format)",
    kHelp,
    &RunBench,
};

}  // namespace zapgram::cli
