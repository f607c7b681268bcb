// `zapgram ngram`: train a token n-gram language model, or describe one.
//
//   zapgram ngram train --tokenizer T --order N TEXTFILE... -o MODEL
//                       [--per-line | --per-paragraph] [--discount D] [--eos-id ID] [--quiet]
//   zapgram ngram info MODEL
//
// `train` tokenizes each file through T's own encoder as documents
// (masks/canonical_tokenizer.h, kDocumentEncoding: special tokens written in
// the text are plain text, any bytes encode), one document per file (or per
// non-empty line with --per-line, or per block of lines between empty lines
// with --per-paragraph, each block keeping the newline of its last line),
// appends the tokenizer's first EOS id to each document, counts, smooths
// (interpolated Kneser-Ney down to a uniform distribution,
// sampling/ngram_model.h) and writes MODEL. It prints what it did: documents, tokens, contexts, entries,
// file size and time. On a terminal, progress (KiB of the inputs
// tokenized, rate, time left, documents) is drawn on stderr (cli/progress.h)
// unless --quiet. `info` loads a model (checking the whole file) and
// prints its header. The samplers read the file through `--lm ngram:MODEL`.
//
// Exit status: 0 done; 2 usage error, unreadable input or a model that does
// not load.
//
// Tests: tests/cli/ngram_cli_test.cc.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "masks/canonical_tokenizer.h"
#include "sampling/ngram_model.h"
#include "zapgram/matcher.h"

namespace zapgram::cli {
namespace {

constexpr std::string_view kName = "ngram";

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "zapgram ngram: %s\n", std::string(status.message()).c_str());
  return kExitError;
}

// The inputs' total size in KiB (0, unknown, when one is standard input or
// cannot be sized).
uint64_t InputKiB(const std::vector<std::string>& inputs) {
  uint64_t bytes = 0;
  for (const std::string& input : inputs) {
    std::error_code error;
    const uintmax_t size = input == "-" ? 0 : std::filesystem::file_size(input, error);
    if (input == "-" || error) return 0;
    bytes += size;
  }
  return bytes / 1024;
}

int Train(const std::vector<std::string>& args) {
  std::string tokenizer_path, output_path, order_text = "3", discount_text, eos_text;
  bool per_line = false, per_paragraph = false, quiet = false;
  std::vector<std::string> inputs;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto is = [&](std::string_view name) { return IsOption(arg, name); };
    if (is("--tokenizer")) {
      if (!TakeOptionValue(args, &i, "--tokenizer", &tokenizer_path)) return UsageError(kName, "--tokenizer needs a path");
    } else if (is("--order")) {
      if (!TakeOptionValue(args, &i, "--order", &order_text)) return UsageError(kName, "--order needs a number");
    } else if (is("--discount")) {
      if (!TakeOptionValue(args, &i, "--discount", &discount_text)) return UsageError(kName, "--discount needs a number");
    } else if (is("--eos-id")) {
      if (!TakeOptionValue(args, &i, "--eos-id", &eos_text)) return UsageError(kName, "--eos-id needs a number");
    } else if (arg == "-o" || is("--output")) {
      if (!TakeOptionValue(args, &i, arg == "-o" ? "-o" : "--output", &output_path)) {
        return UsageError(kName, "-o needs a path");
      }
    } else if (arg == "--per-line") {
      per_line = true;
    } else if (arg == "--per-paragraph") {
      per_paragraph = true;
    } else if (arg == "--quiet") {
      quiet = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return UsageError(kName, absl::StrCat("unknown option '", arg, "'"));
    } else {
      inputs.push_back(arg);
    }
  }
  if (tokenizer_path.empty()) return UsageError(kName, "train needs --tokenizer T");
  if (output_path.empty()) return UsageError(kName, "train needs -o MODEL");
  if (inputs.empty()) return UsageError(kName, "train needs at least one TEXTFILE");
  if (per_line && per_paragraph) return UsageError(kName, "--per-line and --per-paragraph exclude each other");
  sampling::NgramOptions options;
  if (!absl::SimpleAtoi(order_text, &options.order)) return UsageError(kName, "--order must be an integer");
  if (!discount_text.empty()) {
    double discount;
    if (!absl::SimpleAtod(discount_text, &discount)) return UsageError(kName, "--discount must be a number");
    options.discount = discount;
  }
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<Vocabulary> vocabulary = Vocabulary::Load(tokenizer_path);
  if (!vocabulary.ok()) return Fail(vocabulary.status());
  absl::StatusOr<std::shared_ptr<const masks::CanonicalTokenizer>> encoder =
      masks::CanonicalTokenizer::LoadFromFile(tokenizer_path);
  if (!encoder.ok()) return Fail(encoder.status());
  masks::PieceCache piece_cache;
  options.vocab_size = vocabulary->padded_size();
  if (!eos_text.empty()) {
    if (!absl::SimpleAtoi(eos_text, &options.eos_id)) return UsageError(kName, "--eos-id must be an integer");
  } else {
    const std::vector<int32_t> eos = vocabulary->eos_ids();
    if (eos.empty()) return UsageError(kName, "the tokenizer names no EOS token; give --eos-id");
    options.eos_id = eos[0];
  }
  absl::StatusOr<sampling::NgramCounter> counter = sampling::NgramCounter::Create(options);
  if (!counter.ok()) return Fail(counter.status());
  // Progress in KiB of input, since one file may hold all the documents.
  const bool show_progress = ProgressWanted(quiet);
  Progress progress("ngram train", "KiB", show_progress ? InputKiB(inputs) : 0, show_progress);
  uint64_t bytes_before_file = 0;
  for (const std::string& input : inputs) {
    absl::StatusOr<std::string> text = ReadFileBytes(input);
    if (!text.ok()) return Fail(text.status());
    const std::vector<std::string_view> documents = sampling::SplitDocuments(
        *text, per_line        ? sampling::DocumentSplit::kPerLine
               : per_paragraph ? sampling::DocumentSplit::kPerParagraph
                               : sampling::DocumentSplit::kWhole);
    for (std::string_view document : documents) {
      const absl::StatusOr<std::vector<int32_t>> ids =
          (*encoder)->Encode(document, masks::kDocumentEncoding, &piece_cache);
      if (!ids.ok()) return Fail(ids.status());
      if (absl::Status status = counter->AddDocument(*ids); !status.ok()) {
        return Fail(absl::InvalidArgumentError(absl::StrCat(input, ": ", status.message())));
      }
      if (progress.enabled()) {
        const uint64_t bytes_done = bytes_before_file + (document.data() + document.size() - text->data());
        progress.Update(bytes_done / 1024, absl::StrCat(counter->documents(), " documents"));
      }
    }
    bytes_before_file += text->size();
  }
  progress.Finish(bytes_before_file / 1024, absl::StrCat(counter->documents(), " documents"));
  absl::StatusOr<std::unique_ptr<sampling::NgramModel>> model = counter->Build();
  if (!model.ok()) return Fail(model.status());
  if (absl::Status status = (*model)->Save(output_path); !status.ok()) return Fail(status);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const std::string bytes = (*model)->Serialize();
  std::printf("trained order-%d n-gram model on %lld documents, %lld tokens (EOS id %d)\n",
              (*model)->order(), static_cast<long long>(counter->documents()),
              static_cast<long long>(counter->tokens()), options.eos_id);
  std::printf("contexts %zu, entries %zu, file %zu bytes, memory %zu bytes, %.2f s\n",
              (*model)->num_contexts(), (*model)->num_entries(), bytes.size(), (*model)->MemoryBytes(),
              seconds);
  std::printf("wrote %s\n", output_path.c_str());
  return kExitOk;
}

int Info(const std::vector<std::string>& args) {
  if (args.size() != 2) return UsageError(kName, "info takes one MODEL path");
  absl::StatusOr<std::unique_ptr<sampling::NgramModel>> model = sampling::NgramModel::Load(args[1]);
  if (!model.ok()) return Fail(model.status());
  std::printf("order %d\nvocab_size %d\neos_id %d\ncontexts %zu\nentries %zu\ndiscounts",
              (*model)->order(), (*model)->vocab_size(), (*model)->eos_id(), (*model)->num_contexts(),
              (*model)->num_entries());
  for (int k = 1; k <= (*model)->order(); ++k) std::printf(" %.4f", (*model)->discount(k));
  std::printf("\n");
  return kExitOk;
}

int RunNgram(const std::vector<std::string>& args) {
  if (args.empty()) return UsageError(kName, "expected 'train' or 'info'");
  if (args[0] == "train") return Train(args);
  if (args[0] == "info") return Info(args);
  return UsageError(kName, absl::StrCat("unknown subcommand '", args[0], "' (expected train or info)"));
}

}  // namespace

const Command kNgramCommand = {
    "ngram",
    "train a token n-gram language model (for `sample --lm ngram:MODEL`)",
    "usage: zapgram ngram train --tokenizer T --order N TEXTFILE... -o MODEL\n"
    "                           [--per-line | --per-paragraph] [--discount D] [--eos-id ID]\n"
    "                           [--quiet]\n"
    "       zapgram ngram info MODEL\n"
    "\n"
    "train: tokenizes each TEXTFILE with the tokenizer T (tokenizer.json; byte-level\n"
    "BPE as Llama 3 / Qwen 2.5, or SentencePiece-style BPE as Gemma 3), one document\n"
    "per file (per non-empty line with --per-line; per block of lines between empty\n"
    "lines with --per-paragraph, keeping the block's last newline), appends T's EOS\n"
    "id (or ID) to each document, and writes an order-N model (default 3) with interpolated\n"
    "Kneser-Ney smoothing down to a uniform distribution: every token keeps a\n"
    "non-zero probability. --discount fixes the discount of every order (default:\n"
    "estimated per order). On a terminal, progress is drawn on stderr; --quiet\n"
    "turns it off.\n"
    "info: loads MODEL (checking the whole file) and prints its header.\n"
    "\n"
    "exit status: 0 done, 2 usage error, unreadable input or corrupt model.\n",
    RunNgram,
};

}  // namespace zapgram::cli
