// `zapgram trace --tokenizer T.json --grammar G [--invalid] FILE...`: writes a
// trace (DESIGN.md's format, one JSON line per FILE on standard output) whose
// token ids are T's encoding of each file's bytes as a document
// (masks/canonical_tokenizer.h, kDocumentEncoding),
// so that `zapgram bench` can replay any text, e.g. the stress inputs of
// perf/make_stress_traces.sh. The record's id is the file's name, its
// grammar the argument G as given (bench resolves it against its data root),
// "valid" false with --invalid. A file whose encoding does not spell its
// bytes again (Llama 3 encodes every byte string exactly) is an error. With
// stdout a file or a pipe and stderr a terminal, progress over the files is
// drawn on stderr (cli/progress.h) unless --quiet.
//
// Exit status: 0 written; 2 usage error or unreadable input.
//
// Tests: tests/cli/cli_test.cc (CliTest.Trace*).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "masks/canonical_tokenizer.h"
#include "nlohmann/json.hpp"
#include "zapgram/matcher.h"

namespace zapgram::cli {
namespace {

constexpr std::string_view kName = "trace";

constexpr std::string_view kHelp =
    "usage: zapgram trace --tokenizer T.json --grammar G [--invalid] [--quiet] FILE...\n"
    "\n"
    "Writes a trace for `zapgram bench` on standard output: one JSON line\n"
    "{\"id\",\"grammar\",\"text\",\"tokens\",\"valid\"} per FILE, its tokens T's BPE\n"
    "encoding of the file's bytes.\n"
    "\n"
    "options:\n"
    "  --tokenizer T.json  Hugging Face tokenizer.json (byte-level or SentencePiece BPE)\n"
    "  --grammar G         the records' grammar argument, written as given\n"
    "  --invalid           mark the documents \"valid\": false\n"
    "  --quiet             no progress line on stderr (drawn only when stderr is a\n"
    "                      terminal and stdout is not)\n"
    "\n"
    "exit status: 0 written, 2 usage error or unreadable input.\n";

int Fail(absl::string_view message) {
  std::fprintf(stderr, "zapgram trace: %.*s\n", static_cast<int>(message.size()), message.data());
  return kExitError;
}

int RunTrace(const std::vector<std::string>& args) {
  std::string tokenizer_path, grammar;
  bool valid = true, quiet = false;
  std::vector<std::string> files;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (IsOption(arg, "--tokenizer")) {
      if (!TakeOptionValue(args, &i, "--tokenizer", &tokenizer_path)) return UsageError(kName, "--tokenizer needs a path");
    } else if (IsOption(arg, "--grammar")) {
      if (!TakeOptionValue(args, &i, "--grammar", &grammar)) return UsageError(kName, "--grammar needs a value");
    } else if (arg == "--invalid") {
      valid = false;
    } else if (arg == "--quiet") {
      quiet = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return UsageError(kName, absl::StrCat("unknown option '", arg, "'"));
    } else {
      files.push_back(arg);
    }
  }
  if (tokenizer_path.empty() || grammar.empty()) return UsageError(kName, "--tokenizer and --grammar are required");
  if (files.empty()) return UsageError(kName, "needs at least one FILE");
  absl::StatusOr<std::shared_ptr<const masks::CanonicalTokenizer>> encoder =
      masks::CanonicalTokenizer::LoadFromFile(tokenizer_path);
  if (!encoder.ok()) return Fail(encoder.status().message());
  masks::PieceCache piece_cache;
  absl::StatusOr<Vocabulary> vocabulary = Vocabulary::Load(tokenizer_path);
  if (!vocabulary.ok()) return Fail(vocabulary.status().message());
  Progress progress("trace", "files", files.size(), ProgressWanted(quiet, /*results_on_stdout=*/true));
  for (size_t done = 0; done < files.size(); ++done) {
    const std::string& file = files[done];
    progress.Update(done);
    absl::StatusOr<std::string> text = ReadFileBytes(file);
    if (!text.ok()) return Fail(text.status().message());
    const absl::StatusOr<std::vector<int32_t>> encoded =
        (*encoder)->Encode(*text, masks::kDocumentEncoding, &piece_cache);
    if (!encoded.ok()) return Fail(encoded.status().message());
    const std::vector<int32_t>& tokens = *encoded;
    std::string spelled;
    for (int32_t id : tokens) spelled += vocabulary->token_bytes(id);
    if (spelled != *text) return Fail(absl::StrCat(file, ": the tokenizer does not spell the text back"));
    nlohmann::json record = {{"id", std::filesystem::path(file).filename().string()},
                             {"grammar", grammar},
                             {"text", *text},
                             {"tokens", tokens},
                             {"valid", valid}};
    std::printf("%s\n", record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  progress.Finish(files.size());
  return kExitOk;
}

}  // namespace

const Command kTraceCommand = {kName, "write a trace (token ids of text files) for bench", kHelp, RunTrace};

}  // namespace zapgram::cli
