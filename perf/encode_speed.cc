// Encoding speed of the tokenizer's encoder (text -> ids), in MB of text per
// second, over the texts of trace files, for each tokenizer given.
//
// Every record's text is one document, encoded alone (as `zapgram ngram
// train` encodes its documents). The first pass over the documents is
// reported apart from the best of the later ones: an encoder that remembers
// pieces it has seen is faster once warm.
//
// Encoders measured:
//   text-encoder  sampling::TextEncoder (the n-gram model's, with its piece
//                 cache; special tokens in the text as plain text)
//   canonical     masks::CanonicalTokenizer::Encode (HF's encode)
// and the number of documents where the two give different ids.
//
// Usage: zapgram_encode_speed --trace F.jsonl [--trace ...] [--passes N]
//        T.tokenizer.json...
//
// On the texts of traces/llama3/json-docs.jsonl and java.jsonl (401
// documents, 0.82 MB; a 2-core machine shared with other builds, so +-20%),
// first pass / warm, MB/s:
//                 text-encoder   canonical
//   llama3        12.0 / 30.2    10.8 / 12.1
//   qwen2_5        8.7 / 31.2     4.2 /  5.6
//   gemma3         2.9 /  2.9     2.2 /  2.9
// and both give the same ids on every document.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "masks/canonical_tokenizer.h"
#include "nlohmann/json.hpp"
#include "sampling/tokenize.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Speed {
  double first_mb_s = 0, warm_mb_s = 0;
};

// Runs encode(document) over all documents `passes` times.
template <typename Encode>
Speed Measure(const std::vector<std::string>& documents, int passes, Encode encode) {
  size_t bytes = 0;
  for (const std::string& d : documents) bytes += d.size();
  Speed speed;
  for (int pass = 0; pass < passes; ++pass) {
    const auto start = Clock::now();
    for (const std::string& d : documents) encode(d);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double mb_s = bytes / 1e6 / seconds;
    if (pass == 0) {
      speed.first_mb_s = mb_s;
    } else if (mb_s > speed.warm_mb_s) {
      speed.warm_mb_s = mb_s;
    }
  }
  return speed;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> traces, tokenizers;
  int passes = 4;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--trace" && i + 1 < argc) {
      traces.push_back(argv[++i]);
    } else if (arg == "--passes" && i + 1 < argc) {
      passes = std::max(2, std::atoi(argv[++i]));
    } else {
      tokenizers.push_back(arg);
    }
  }
  if (traces.empty() || tokenizers.empty()) {
    std::fprintf(stderr, "usage: zapgram_encode_speed --trace F.jsonl [--passes N] T.tokenizer.json...\n");
    return 2;
  }
  std::vector<std::string> documents;
  size_t bytes = 0;
  for (const std::string& trace : traces) {
    std::ifstream in(trace);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", trace.c_str());
      return 2;
    }
    for (std::string line; std::getline(in, line);) {
      documents.push_back(nlohmann::json::parse(line)["text"].get<std::string>());
      bytes += documents.back().size();
    }
  }
  std::printf("%zu documents, %.2f MB; first pass / best of %d later passes, MB/s\n", documents.size(), bytes / 1e6,
              passes - 1);
  for (const std::string& path : tokenizers) {
    auto start = Clock::now();
    absl::StatusOr<zapgram::sampling::TextEncoder> text_encoder = zapgram::sampling::TextEncoder::Load(path);
    const double text_load_s = std::chrono::duration<double>(Clock::now() - start).count();
    start = Clock::now();
    auto canonical = zapgram::masks::CanonicalTokenizer::LoadFromFile(path);
    const double canonical_load_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (!text_encoder.ok() || !canonical.ok()) {
      std::fprintf(stderr, "%s: does not load\n", path.c_str());
      return 2;
    }
    const Speed text = Measure(documents, passes, [&](const std::string& d) { text_encoder->Encode(d); });
    const Speed canon = Measure(documents, passes, [&](const std::string& d) { (void)(*canonical)->Encode(d); });
    size_t differ = 0;
    for (const std::string& d : documents) {
      const absl::StatusOr<std::vector<int32_t>> ids = (*canonical)->Encode(d);
      if (!ids.ok() || *ids != text_encoder->Encode(d)) ++differ;
    }
    std::printf(
        "%s\n  text-encoder %7.2f / %7.2f  (load %.2f s)\n  canonical    %7.2f / %7.2f  (load %.2f s)\n"
        "  documents encoded differently: %zu\n",
        path.c_str(), text.first_mb_s, text.warm_mb_s, text_load_s, canon.first_mb_s, canon.warm_mb_s,
        canonical_load_s, differ);
  }
  return 0;
}
