// The `zapgram` command: a thin dispatcher over the subcommands.
//
//   zapgram --help | -h | help         list the commands
//   zapgram help CMD | CMD --help      a command's full help
//   zapgram CMD ARGS...                run a command (table in cli/commands.h)
//
// Usage errors (no command, unknown command, bad options) print a one-line
// message and a pointer to the help on stderr and exit with status 2; the
// commands' own statuses are documented in cli/commands.h. This file also
// defines the small helpers the commands share (file reading, path
// resolution, option values), which are too small for a file of their own.
//
// Tests: tests/cli/cli_test.cc (help, usage errors, every command end to end).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"

namespace zapgram::cli {
namespace {

const Command* const kCommands[] = {&kCheckCommand, &kParseCommand, &kMaskCommand,
                                    &kBenchCommand, &kSchema2GbnfCommand, &kNgramCommand,
                                    &kSampleCommand, &kTraceCommand};

const Command* FindCommand(std::string_view name) {
  for (const Command* command : kCommands) {
    if (command->name == name) return command;
  }
  return nullptr;
}

void PrintOverview(std::FILE* out) {
  std::fprintf(out,
               "zapgram: grammar-constrained decoding engine, command-line tool\n"
               "\n"
               "usage: zapgram COMMAND [ARGS...]\n"
               "       zapgram help COMMAND\n"
               "\n"
               "commands:\n");
  for (const Command* command : kCommands) {
    std::fprintf(out, "  %-11.*s %.*s\n", static_cast<int>(command->name.size()),
                 command->name.data(), static_cast<int>(command->summary.size()),
                 command->summary.data());
  }
  std::fprintf(out,
               "\n"
               "GRAMMAR is PATH.gbnf, PATH.ebnf or PATH.lark (by extension), builtin:NAME,\n"
               "regex:PATTERN or schema:PATH (a JSON Schema; --lenient drops keywords a\n"
               "grammar cannot enforce). builtin:json is RFC 8259 JSON.\n"
               "\n"
               "exit status: 0 yes (grammar usable / all accepted), 1 no (grammar errors /\n"
               "some input rejected), 2 could not run (usage, unreadable input, budget).\n");
}

int Main(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fprintf(stderr, "zapgram: no command given\n");
    PrintOverview(stderr);
    return kExitError;
  }
  const std::string& first = args[0];
  if (first == "--help" || first == "-h" || first == "help") {
    if (args.size() == 1) {
      PrintOverview(stdout);
      return kExitOk;
    }
    if (args.size() > 2) {
      std::fprintf(stderr, "zapgram help: expected one command name\n");
      return kExitError;
    }
    const Command* command = FindCommand(args[1]);
    if (command == nullptr) {
      std::fprintf(stderr, "zapgram help: unknown command '%s' (try 'zapgram --help')\n",
                   args[1].c_str());
      return kExitError;
    }
    std::fwrite(command->help.data(), 1, command->help.size(), stdout);
    return kExitOk;
  }
  const Command* command = FindCommand(first);
  if (command == nullptr) {
    std::fprintf(stderr, "zapgram: unknown command '%s' (try 'zapgram --help')\n", first.c_str());
    return kExitError;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const std::string& arg : rest) {
    if (arg == "--") break;
    if (arg == "--help" || arg == "-h") {
      std::fwrite(command->help.data(), 1, command->help.size(), stdout);
      return kExitOk;
    }
  }
  return command->run(rest);
}

}  // namespace

int UsageError(std::string_view command, std::string_view message) {
  std::fprintf(stderr, "zapgram %.*s: %.*s\n(see 'zapgram help %.*s')\n",
               static_cast<int>(command.size()), command.data(), static_cast<int>(message.size()),
               message.data(), static_cast<int>(command.size()), command.data());
  return kExitError;
}

absl::StatusOr<std::FILE*> OpenInput(const std::string& path) {
  if (path == "-") return stdin;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory"));
  }
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  return file;
}

void CloseInput(std::FILE* file) {
  if (file != nullptr && file != stdin) std::fclose(file);
}

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  absl::StatusOr<std::FILE*> opened = OpenInput(path);
  if (!opened.ok()) return opened.status();
  std::FILE* file = *opened;
  std::string bytes;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) bytes.append(buffer, n);
  bool failed = std::ferror(file) != 0;
  int saved_errno = errno;
  CloseInput(file);
  if (failed) {
    return absl::DataLossError(absl::StrCat(path, ": read error: ", std::strerror(saved_errno)));
  }
  return bytes;
}

std::string ResolvePath(std::string_view path, std::string_view data_root) {
  if (data_root.empty() || path.empty() || path.front() == '/') return std::string(path);
  return (std::filesystem::path(data_root) / std::filesystem::path(path)).string();
}

bool IsOption(std::string_view arg, std::string_view name) {
  return arg == name || (arg.size() > name.size() && arg.substr(0, name.size()) == name &&
                         arg[name.size()] == '=');
}

bool TakeOptionValue(const std::vector<std::string>& args, size_t* i, std::string_view name,
                     std::string* value) {
  std::string_view arg = args[*i];
  if (arg != name && IsOption(arg, name)) {
    *value = std::string(arg.substr(name.size() + 1));
    return true;
  }
  if (*i + 1 >= args.size()) return false;
  ++*i;
  *value = args[*i];
  return true;
}

bool TakeIndenterOption(const std::vector<std::string>& args, size_t* i, IndenterOptions* indenter,
                        std::string* error) {
  if (!IsOption(args[*i], "--indenter")) return false;
  std::string value;
  if (!TakeOptionValue(args, i, "--indenter", &value)) {
    *error = "--indenter needs auto, on or off";
    return true;
  }
  if (value == "auto") {
    indenter->mode = IndenterOptions::Mode::kAuto;
  } else if (value == "on") {
    indenter->mode = IndenterOptions::Mode::kOn;
  } else if (value == "off") {
    indenter->mode = IndenterOptions::Mode::kOff;
  } else {
    *error = "--indenter needs auto, on or off, not '" + value + "'";
  }
  return true;
}

}  // namespace zapgram::cli

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return zapgram::cli::Main(args);
}
