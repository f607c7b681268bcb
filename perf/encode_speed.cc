// Encoding speed of the tokenizer's encoder (masks/canonical_tokenizer.h:
// text -> ids), in MB of text per second, over the texts of trace files, for
// each tokenizer given.
//
// Every record's text is one document, encoded alone (as `zapgram ngram
// train` encodes its documents). The first pass over the documents is
// reported apart from the best of the later ones: with a PieceCache the
// encoder is faster once warm. Ways of encoding measured:
//   hf              Encode(text): Hugging Face's encode
//   document        Encode(text, kDocumentEncoding)
//   document+cache  the same through one PieceCache (zapgram ngram train,
//                   zapgram trace)
// and the load time of the tokenizer.json.
//
// Usage: zapgram_encode_speed --trace F.jsonl [--trace ...] [--passes N]
//        T.tokenizer.json...
//
// On the texts of traces/llama3/json-docs.jsonl and java.jsonl (401
// documents, 0.82 MB), first pass / warm, MB/s, the best of three runs on a
// 2-core machine shared with other builds (single runs vary by 2x):
//              hf            document+cache   before the merge:
//                                             TextEncoder   CanonicalTokenizer
//   llama3     23.5 / 24.8   27.4 / 61.9      27.1 / 56.4   18.5 / 19.0
//   qwen2_5    10.5 / 10.5   22.7 / 53.3      23.2 / 49.1    9.0 /  9.1
//   gemma3      5.1 /  5.3    5.1 /  5.3       4.9 /  4.9    4.5 /  4.6
// (TextEncoder was the n-gram model's encoder, with the piece cache this one
// now has; CanonicalTokenizer::Encode is `hf` here. The merge kept the
// cache and made the shared paths cheaper: ASCII classes from a table in
// the pre-tokenizer, piece lists on the stack, added tokens tried only at
// the lengths they have.) Gemma 3 encodes a whole segment as one piece, so
// it has nothing to cache.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "masks/canonical_tokenizer.h"
#include "nlohmann/json.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using zapgram::masks::CanonicalTokenizer;
using zapgram::masks::PieceCache;

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
    const auto start = Clock::now();
    const auto tokenizer = CanonicalTokenizer::LoadFromFile(path);
    const double load_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (!tokenizer.ok()) {
      std::fprintf(stderr, "%s\n", std::string(tokenizer.status().message()).c_str());
      return 2;
    }
    const CanonicalTokenizer& t = **tokenizer;
    const Speed hf = Measure(documents, passes, [&](const std::string& d) { (void)t.Encode(d); });
    const Speed document =
        Measure(documents, passes, [&](const std::string& d) { (void)t.Encode(d, zapgram::masks::kDocumentEncoding); });
    PieceCache cache;
    const Speed cached = Measure(documents, passes, [&](const std::string& d) {
      (void)t.Encode(d, zapgram::masks::kDocumentEncoding, &cache);
    });
    std::printf("%s (load %.2f s)\n  hf             %7.2f / %7.2f\n  document       %7.2f / %7.2f\n"
                "  document+cache %7.2f / %7.2f  (%zu pieces kept)\n",
                path.c_str(), load_s, hf.first_mb_s, hf.warm_mb_s, document.first_mb_s, document.warm_mb_s,
                cached.first_mb_s, cached.warm_mb_s, cache.size());
  }
  return 0;
}
