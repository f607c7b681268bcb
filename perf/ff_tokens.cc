// How many tokens per document fast-forwarding takes off the model, with the
// canonical rule (Matcher::ComputeFastForwardTokens) and without it.
//
// Each valid document of a trace is decoded again with a stand-in model that
// always emits the first token of the tokenizer's own encoding of the rest
// of the document. Before each model step the grammar's forced bytes are
// turned into tokens and accepted at once, in one of three ways:
//   canonical  ComputeFastForwardTokens: tokens every canonical
//              continuation starts with (masks/canonical_tokenizer.h)
//   encode     the tokenizer's encoding of all the forced bytes
//   greedy     longest-match tokenization of all the forced bytes (a
//              jump-forward that ignores the tokenizer)
// and one run takes none (every token from the model). Reported per mode:
// fast-forwarded tokens per document (mean), all tokens per document, and
// how many fast-forwards were not a prefix of the canonical encoding of the
// rest (non-canonical: the model then sees a tokenization it was not
// trained on).
//
// Usage: zapgram_ff_tokens --tokenizer T.json --trace F.jsonl [--every N]
//        [--data-root DIR] [--json]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "masks/canonical_tokenizer.h"
#include "masks/vocabulary.h"
#include "nlohmann/json.hpp"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace {

using zapgram::masks::CanonicalTokenizer;
using zapgram::masks::TokenId;

enum class Mode { kNone, kCanonical, kEncode, kGreedy };
constexpr Mode kModes[] = {Mode::kNone, Mode::kCanonical, Mode::kEncode, Mode::kGreedy};
const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kNone: return "none";
    case Mode::kCanonical: return "canonical";
    case Mode::kEncode: return "encode";
    case Mode::kGreedy: return "greedy";
  }
  return "";
}

struct Totals {
  uint64_t ff_tokens = 0, all_tokens = 0, fast_forwards = 0, non_canonical = 0, not_accepted = 0;
};

class Greedy {
 public:
  explicit Greedy(const zapgram::Vocabulary& vocabulary) {
    for (int32_t id = 0; id < vocabulary.size(); ++id) {
      if (vocabulary.is_normal(id)) by_bytes_.emplace(std::string(vocabulary.token_bytes(id)), id);
    }
  }
  std::vector<TokenId> Tokenize(std::string_view bytes) const {
    std::vector<TokenId> out;
    for (size_t at = 0; at < bytes.size();) {
      size_t best = 0;
      TokenId best_id = -1;
      for (size_t length = 1; length <= std::min<size_t>(bytes.size() - at, 256); ++length) {
        const auto it = by_bytes_.find(bytes.substr(at, length));
        if (it != by_bytes_.end()) {
          best = length;
          best_id = it->second;
        }
      }
      if (best == 0) break;
      out.push_back(best_id);
      at += best;
    }
    return out;
  }

 private:
  std::map<std::string, TokenId, std::less<>> by_bytes_;
};

bool IsPrefix(const std::vector<TokenId>& prefix, const std::vector<TokenId>& of) {
  return prefix.size() <= of.size() && std::equal(prefix.begin(), prefix.end(), of.begin());
}

// One document decoded again under `mode`; false when a step failed.
bool Decode(const zapgram::CompiledGrammar& grammar, const CanonicalTokenizer& tokenizer, const Greedy& greedy,
            const std::string& text, Mode mode, Totals* totals) {
  zapgram::Matcher matcher(grammar);
  size_t pos = 0;
  while (pos < text.size()) {
    const std::string_view rest = std::string_view(text).substr(pos);
    absl::StatusOr<std::vector<TokenId>> canonical = tokenizer.Encode(rest);
    std::vector<TokenId> ff;
    if (mode == Mode::kCanonical) {
      absl::StatusOr<std::vector<int32_t>> tokens = matcher.ComputeFastForwardTokens();
      if (!tokens.ok()) return false;
      ff = *tokens;
    } else if (mode == Mode::kEncode) {
      const std::string forced = matcher.ForcedBytes();
      absl::StatusOr<std::vector<TokenId>> tokens = tokenizer.Encode(forced);
      if (tokens.ok()) ff = *tokens;
    } else if (mode == Mode::kGreedy) {
      ff = greedy.Tokenize(matcher.ForcedBytes());
    }
    std::vector<TokenId> step = ff;
    if (ff.empty()) {
      // The model's token: the canonical encoding's first (greedy where the
      // rest starts inside a character and cannot be encoded).
      step = canonical.ok() && !canonical->empty() ? std::vector<TokenId>{canonical->front()}
                                                   : greedy.Tokenize(rest.substr(0, 1 + rest.size() / 64));
      if (step.empty()) return false;
      step.resize(1);
    } else {
      ++totals->fast_forwards;
      totals->ff_tokens += ff.size();
      if (!canonical.ok() || !IsPrefix(ff, *canonical)) ++totals->non_canonical;
    }
    for (TokenId id : step) {
      if (!matcher.AcceptToken(id)) return false;
      pos += tokenizer.token_bytes(id).size();
      ++totals->all_tokens;
    }
  }
  if (!matcher.IsAccepting()) ++totals->not_accepted;
  return true;
}

int Usage() {
  std::fprintf(stderr,
               "usage: zapgram_ff_tokens --tokenizer T.json --trace F.jsonl [--every N] [--data-root DIR] [--json]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string tokenizer_path, trace, data_root;
  size_t every = 1;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json") {
      json = true;
    } else if (i + 1 < argc && arg == "--tokenizer") {
      tokenizer_path = argv[++i];
    } else if (i + 1 < argc && arg == "--trace") {
      trace = argv[++i];
    } else if (i + 1 < argc && arg == "--data-root") {
      data_root = argv[++i];
    } else if (i + 1 < argc && arg == "--every") {
      every = std::max(1L, std::atol(argv[++i]));
    } else {
      return Usage();
    }
  }
  if (tokenizer_path.empty() || trace.empty()) return Usage();
  if (data_root.empty()) {
    data_root = std::filesystem::absolute(trace).parent_path().parent_path().parent_path().string();
  }
  absl::StatusOr<zapgram::Vocabulary> vocabulary = zapgram::Vocabulary::Load(tokenizer_path);
  if (!vocabulary.ok()) {
    std::fprintf(stderr, "%s\n", std::string(vocabulary.status().message()).c_str());
    return 1;
  }
  const auto load_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> tokenizer =
      vocabulary->impl()->SharedCanonicalTokenizer();
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", std::string(tokenizer.status().message()).c_str());
    return 1;
  }
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();
  const Greedy greedy(*vocabulary);
  std::ifstream in(trace);
  if (!in) {
    std::fprintf(stderr, "%s: cannot open\n", trace.c_str());
    return 1;
  }
  std::map<Mode, Totals> totals;
  uint64_t docs = 0, skipped = 0;
  std::string line;
  for (size_t n = 0; std::getline(in, line); ++n) {
    if (n % every != 0) continue;
    const nlohmann::json record = nlohmann::json::parse(line);
    if (!record.value("valid", true) || record.value("roundtrip_mismatch", false)) continue;
    absl::StatusOr<zapgram::Grammar> grammar =
        zapgram::Grammar::Load(record["grammar"].get<std::string>(), data_root);
    absl::StatusOr<zapgram::CompiledGrammar> compiled =
        grammar.ok() ? zapgram::CompiledGrammar::Compile(*grammar, *vocabulary)
                     : absl::StatusOr<zapgram::CompiledGrammar>(grammar.status());
    if (!compiled.ok()) {
      ++skipped;
      continue;
    }
    const std::string text = record["text"].get<std::string>();
    std::map<Mode, Totals> doc;
    bool ok = true;
    for (Mode mode : kModes) ok = ok && Decode(*compiled, **tokenizer, greedy, text, mode, &doc[mode]);
    if (!ok) {
      ++skipped;
      continue;
    }
    ++docs;
    for (Mode mode : kModes) {
      Totals& t = totals[mode];
      t.ff_tokens += doc[mode].ff_tokens;
      t.all_tokens += doc[mode].all_tokens;
      t.fast_forwards += doc[mode].fast_forwards;
      t.non_canonical += doc[mode].non_canonical;
      t.not_accepted += doc[mode].not_accepted;
    }
  }
  const double d = docs == 0 ? 1.0 : static_cast<double>(docs);
  if (json) {
    nlohmann::json out = {{"docs", docs}, {"skipped", skipped}, {"tokenizer_load_ms", load_ms}};
    for (Mode mode : kModes) {
      const Totals& t = totals[mode];
      out[ModeName(mode)] = {{"ff_tokens_per_doc", t.ff_tokens / d},
                             {"tokens_per_doc", t.all_tokens / d},
                             {"fast_forwards", t.fast_forwards},
                             {"non_canonical", t.non_canonical},
                             {"not_accepted", t.not_accepted}};
    }
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("docs %llu (skipped %llu), tokenizer merges loaded in %.0f ms\n",
              static_cast<unsigned long long>(docs), static_cast<unsigned long long>(skipped), load_ms);
  std::printf("%-10s %18s %15s %14s %14s\n", "mode", "ff tokens/doc", "tokens/doc", "fast-forwards",
              "non-canonical");
  for (Mode mode : kModes) {
    const Totals& t = totals[mode];
    std::printf("%-10s %18.2f %15.2f %14llu %14llu\n", ModeName(mode), t.ff_tokens / d, t.all_tokens / d,
                static_cast<unsigned long long>(t.fast_forwards), static_cast<unsigned long long>(t.non_canonical));
  }
  return 0;
}
