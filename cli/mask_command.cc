// `zapgram mask GRAMMAR --tokenizer T.json [--prefix TEXT] [--show N] [--tokens-left N]
//  [--no-pruning] [--data-root DIR]`: which tokens may come next?
//
// Compiles GRAMMAR for the tokenizer, feeds TEXT (default: empty), computes
// the token mask and prints how many ids are allowed, whether EOS is, the
// bytes the grammar forces next, and the first N allowed tokens (id and
// bytes, escaped). A TEXT the grammar rejects is an error naming the offset.
//
// Tests: tests/cli/cli_test.cc (CliTest.Mask*).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram::cli {
namespace {

constexpr std::string_view kHelp =
    "usage: zapgram mask GRAMMAR --tokenizer T.json [--prefix TEXT] [--show N]\n"
    "                    [--no-pruning] [--lenient] [--data-root DIR]\n"
    "                    [--tokens-left N]\n"
    "\n"
    "Prints how many tokens GRAMMAR allows after TEXT (default: the empty text),\n"
    "whether EOS is allowed, the bytes the grammar forces next, and the first N\n"
    "allowed tokens (default 20) as `id \"bytes\"`. --lenient: a schema:PATH grammar\n"
    "drops the keywords a grammar cannot enforce (reported on stderr).\n"
    "--indenter=auto|on|off: Lark's Indenter (Python's _INDENT/_DEDENT; default auto).\n"
    "--tokens-left N: the budget-aware mask, tokens after which the text can still\n"
    "be finished within N tokens, EOS counted (masks/budget_mask.h).\n"
    "\n"
    "exit status: 0 printed, 1 TEXT is not a prefix of the grammar's language,\n"
    "2 usage error, unreadable tokenizer, grammar that does not load.\n";

int RunMask(const std::vector<std::string>& args) {
  std::string tokenizer, prefix, show_text = "20", data_root, tokens_left_text;
  bool pruning = true;
  LoadOptions load_options;
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--no-pruning") {
      pruning = false;
    } else if (arg == "--lenient") {
      load_options.schema.lenient = true;
    } else if (std::string error; TakeIndenterOption(args, &i, &load_options.indenter, &error)) {
      if (!error.empty()) return UsageError("mask", error);
    } else if (absl::StartsWith(arg, "--tokenizer")) {
      if (!TakeOptionValue(args, &i, "--tokenizer", &tokenizer)) return UsageError("mask", "--tokenizer needs a file");
    } else if (absl::StartsWith(arg, "--prefix")) {
      if (!TakeOptionValue(args, &i, "--prefix", &prefix)) return UsageError("mask", "--prefix needs a text");
    } else if (absl::StartsWith(arg, "--show")) {
      if (!TakeOptionValue(args, &i, "--show", &show_text)) return UsageError("mask", "--show needs a number");
    } else if (absl::StartsWith(arg, "--tokens-left")) {
      if (!TakeOptionValue(args, &i, "--tokens-left", &tokens_left_text)) {
        return UsageError("mask", "--tokens-left needs a count");
      }
    } else if (absl::StartsWith(arg, "--data-root")) {
      if (!TakeOptionValue(args, &i, "--data-root", &data_root)) return UsageError("mask", "--data-root needs a directory");
    } else if (!arg.empty() && arg[0] == '-') {
      return UsageError("mask", absl::StrCat("unknown option '", arg, "'"));
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 1) return UsageError("mask", "expected exactly one GRAMMAR");
  if (tokenizer.empty()) return UsageError("mask", "--tokenizer is required");
  char* end = nullptr;
  const long show = std::strtol(show_text.c_str(), &end, 10);
  if (end == show_text.c_str() || *end != '\0' || show < 0) return UsageError("mask", "--show needs a number");
  int64_t tokens_left = -1;
  if (!tokens_left_text.empty() && (!absl::SimpleAtoi(tokens_left_text, &tokens_left) || tokens_left < 0)) {
    return UsageError("mask", "--tokens-left needs a count");
  }

  absl::StatusOr<Vocabulary> vocab = Vocabulary::Load(tokenizer);
  if (!vocab.ok()) {
    std::fprintf(stderr, "zapgram mask: %s\n", std::string(vocab.status().message()).c_str());
    return kExitError;
  }
  absl::StatusOr<Grammar> grammar = Grammar::Load(positional[0], data_root, load_options);
  if (grammar.ok()) {
    for (const std::string& w : grammar->warnings()) {
      std::fprintf(stderr, "zapgram mask: warning: %s\n", w.c_str());
    }
  }
  absl::StatusOr<CompiledGrammar> compiled =
      grammar.ok() ? CompiledGrammar::Compile(*grammar, *vocab) : absl::StatusOr<CompiledGrammar>(grammar.status());
  if (!compiled.ok()) {
    std::fprintf(stderr, "zapgram mask: %s\n", std::string(compiled.status().message()).c_str());
    return kExitError;
  }
  MatcherOptions options;
  options.pruning = pruning;
  Matcher matcher(*compiled, options);
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (!matcher.AcceptBytes(std::string_view(prefix).substr(i, 1))) {
      std::printf("prefix rejected at byte %zu\n", i);
      return kExitNo;
    }
  }
  std::vector<uint32_t> words(compiled->mask_words());
  const size_t allowed =
      tokens_left >= 0 ? matcher.ComputeMask(words.data(), tokens_left) : matcher.ComputeMask(words.data());
  bool eos = false;
  for (int32_t id : vocab->eos_ids()) eos = eos || ((words[id / 32] >> (id % 32)) & 1);
  std::printf("%zu of %d tokens allowed; EOS %s\n", allowed, vocab->padded_size(),
              eos ? "allowed" : "not allowed");
  if (tokens_left >= 0) {
    std::printf("tokens left: %lld (inexact masked: %llu)\n", static_cast<long long>(tokens_left),
                static_cast<unsigned long long>(matcher.BudgetMaskInexact()));
  }
  std::printf("forced next: \"%s\"\n", absl::CEscape(matcher.ForcedBytes()).c_str());
  long shown = 0;
  for (int32_t id = 0; id < vocab->padded_size() && shown < show; ++id) {
    if (!((words[id / 32] >> (id % 32)) & 1)) continue;
    std::printf("  %d \"%s\"\n", id, absl::CEscape(std::string(vocab->token_bytes(id))).c_str());
    ++shown;
  }
  return kExitOk;
}

}  // namespace

const Command kMaskCommand = {
    "mask",
    "the tokens a grammar allows after a prefix, for a real tokenizer",
    kHelp,
    &RunMask,
};

}  // namespace zapgram::cli
