// The subcommands of the `zapgram` tool and the few helpers they share.
//
// main.cc owns the dispatch: it looks the first argument up in the command
// table below and hands the remaining arguments to the command's Run function.
// Each command parses its own options, prints its own help, and returns the
// process exit status. The statuses are the same for every command, so that
// scripts can rely on them:
//   0  the command did what was asked and the answer is "yes" (grammar usable,
//      every file accepted);
//   1  the answer is "no" (grammar errors, some file rejected);
//   2  the command could not run: bad usage, unreadable input, a grammar that
//      does not load (for `parse`), or an engine budget that ran out.
//
// Options are parsed by hand, per command (IsOption, TakeOptionValue below),
// not with abseil flags: absl flags are global to the binary (every command
// would accept every other command's options, and two commands could not
// give one name different types or help), absl::ParseCommandLine is the only
// public parser and it takes the whole argv, prints its own messages
// ("ERROR: Unknown command line flag ...") and exits with status 1 on a bad
// flag, where our usage errors name the command, point at its help and exit
// 2 (1 means "rejected"); and its generated --help lists flags, not our
// per-command texts with their exit statuses.
//
// Layering: cli/ sees only include/zapgram/ and the grammar readers
// (grammar/gbnf_reader.h, grammar/builtin.h); nothing includes cli/.
//
// Tests: tests/cli/cli_test.cc runs the built binary on real grammars.
#ifndef ZAPGRAM_CLI_COMMANDS_H_
#define ZAPGRAM_CLI_COMMANDS_H_

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "zapgram/grammar.h"

namespace zapgram::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitNo = 1;
inline constexpr int kExitError = 2;

struct Command {
  std::string_view name;
  std::string_view summary;  // one line, for `zapgram --help`
  std::string_view help;     // full text, for `zapgram help NAME`
  // `args` are the arguments after the command name.
  int (*run)(const std::vector<std::string>& args);
};

// `zapgram check GRAMMAR [--dump] [--data-root DIR]` (check_command.cc).
extern const Command kCheckCommand;
// `zapgram parse GRAMMAR FILE... [--json] [--stats] [--no-pruning] [--data-root DIR]`
// (parse_command.cc).
extern const Command kParseCommand;
// `zapgram mask GRAMMAR --tokenizer T [--prefix TEXT] [--show N]` (mask_command.cc).
extern const Command kMaskCommand;
// `zapgram bench --tokenizer T --trace F [--limit N] [--json] [--per-doc OUT]` (bench_command.cc).
extern const Command kBenchCommand;
// `zapgram ngram train --tokenizer T --order N TEXTFILE... -o MODEL` | `ngram info MODEL`
// (ngram_command.cc).
extern const Command kNgramCommand;
// `zapgram sample GRAMMAR --tokenizer T --lm uniform|ngram:MODEL --method M -n N [...]`
// (sample_command.cc).
extern const Command kSampleCommand;
// `zapgram schema2gbnf SCHEMA [--lenient] [--compact] [--max-ws N] [--any-order] [--draft7]`
// (schema2gbnf_command.cc).
extern const Command kSchema2GbnfCommand;
// `zapgram trace --tokenizer T --grammar G [--invalid] FILE...` (trace_command.cc).
extern const Command kTraceCommand;

// Prints "zapgram CMD: MESSAGE" and a pointer to the command's help on stderr;
// returns kExitError so that callers can `return UsageError(...)`.
int UsageError(std::string_view command, std::string_view message);

// The whole content of a file as bytes; "-" reads standard input. Errors name the path.
absl::StatusOr<std::string> ReadFileBytes(const std::string& path);

// The file at `path` opened for reading bytes ("-": standard input, which
// the caller must not close; CloseInput closes anything else). Errors name
// the path (a directory, a missing file).
absl::StatusOr<std::FILE*> OpenInput(const std::string& path);
void CloseInput(std::FILE* file);

// `path` itself when absolute or when `data_root` is empty; else data_root/path.
std::string ResolvePath(std::string_view path, std::string_view data_root);

// Splits `--name=value` into its value; for `--name`, takes the next argument
// (advancing *i). Returns false when the value is missing.
// Whether `arg` is option `name`, spelled `--name` or `--name=value`.
bool IsOption(std::string_view arg, std::string_view name);

bool TakeOptionValue(const std::vector<std::string>& args, size_t* i, std::string_view name,
                     std::string* value);

// `--indenter=auto|on|off` (Lark's Indenter, IndenterOptions::mode): true
// when args[*i] is that option, with its value read into `indenter`;
// `*error` is set for a value other than those three.
bool TakeIndenterOption(const std::vector<std::string>& args, size_t* i, IndenterOptions* indenter,
                        std::string* error);

}  // namespace zapgram::cli

#endif  // ZAPGRAM_CLI_COMMANDS_H_
