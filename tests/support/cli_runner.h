// Running the built `zapgram` binary from tests: arguments are shell-quoted,
// stdout is captured through popen, stderr through a temp file, stdin is
// /dev/null. The path comes from ZAPGRAM_CLI_PATH (set by the build).
#ifndef ZAPGRAM_TESTS_SUPPORT_CLI_RUNNER_H_
#define ZAPGRAM_TESTS_SUPPORT_CLI_RUNNER_H_

#include <string>
#include <string_view>
#include <vector>

namespace zapgram::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// `s` quoted for /bin/sh.
std::string ShellQuote(std::string_view s);

// Runs `cli_path ARGS...`.
CliResult RunCliAt(const std::string& cli_path, const std::vector<std::string>& args);

// A fresh file path under the test temp dir (unique per call and process),
// removed with whatever was made there when the process exits.
std::string FreshTempPath(std::string_view name);

// `text` split into lines (without the newlines).
std::vector<std::string> SplitLines(const std::string& text);

}  // namespace zapgram::testing

#endif  // ZAPGRAM_TESTS_SUPPORT_CLI_RUNNER_H_
