// The progress line of the `zapgram` command (cli/progress.h): its exact
// formatting, the throttled drawing into a file, and the built tool's
// behaviour: drawn on stderr when stderr is a pseudo-terminal, not drawn with
// --quiet or when stderr is a file, and stdout the same JSON either way.
#include "cli/progress.h"

#include <fcntl.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"

namespace zapgram::cli {
namespace {

TEST(FormatDurationTest, WholeSecondsInTwoUnitsAtMost) {
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(42.9), "42s");
  EXPECT_EQ(FormatDuration(125), "2m05s");
  EXPECT_EQ(FormatDuration(3720 + 59), "1h02m");
  EXPECT_EQ(FormatDuration(-3), "0s");
  EXPECT_EQ(FormatDuration(1.0 / 0.0), "0s");
}

TEST(FormatProgressTest, KnownTotalHasBarRateAndTimeLeft) {
  EXPECT_EQ(FormatProgress("bench", "docs", 1200, 3000, 14.08),
            "bench [#########               ] 1200/3000 docs  40%  85.2 docs/s  14s elapsed  21s left");
  // The count is padded to the total's width, so the line keeps its layout.
  EXPECT_EQ(FormatProgress("parse", "files", 7, 120, 2, "x"),
            "parse [#                       ]   7/120 files  5%  3.5 files/s  2s elapsed  "
            "32s left  x");  // 113 files at 3.5/s
}

TEST(FormatProgressTest, FinishedStalledAndUnknownTotals) {
  EXPECT_EQ(FormatProgress("sample", "samples", 10, 10, 4, "12 draws, acceptance 0.833"),
            "sample [########################] 10/10 samples  100%  2.5 samples/s  4s elapsed  done"
            "  12 draws, acceptance 0.833");
  EXPECT_EQ(FormatProgress("bench", "docs", 0, 5, 0),
            "bench [                        ] 0/5 docs  0%  0 docs/s  0s elapsed  ? left");
  EXPECT_EQ(FormatProgress("ngram train", "KiB", 12, 0, 2, "3 documents"),
            "ngram train 12 KiB  6 KiB/s  2s elapsed  3 documents");
  // Slow and fast rates: three significant digits, no decimals from 100/s.
  EXPECT_EQ(FormatProgress("sample", "samples", 2, 20, 600),
            "sample [##                      ]  2/20 samples  10%  0.00333 samples/s  10m00s elapsed  "
            "1h30m left");
  EXPECT_EQ(FormatProgress("bench", "docs", 40, 0, 0.0964), "bench 40 docs  415 docs/s  0s elapsed");
}

std::string ReadAll(std::FILE* file) {
  std::rewind(file);
  std::string text;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, n);
  return text;
}

TEST(ProgressTest, DrawsInPlaceThrottledAndEndsTheLine) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  Progress progress("bench", "docs", 4, /*enabled=*/true, file);
  progress.Update(1);
  progress.Update(2);  // within 100 ms of the first drawing: skipped
  progress.Finish(4);
  progress.Finish(4);  // after Finish: nothing
  const std::string text = ReadAll(file);
  std::fclose(file);
  ASSERT_EQ(std::count(text.begin(), text.end(), '\r'), 2) << text;
  EXPECT_NE(text.find("1/4 docs"), std::string::npos) << text;
  EXPECT_EQ(text.find("2/4 docs"), std::string::npos) << text;
  EXPECT_NE(text.find("4/4 docs  100%"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
}

TEST(ProgressTest, DisabledWritesNothing) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  Progress progress("bench", "docs", 4, /*enabled=*/false, file);
  progress.Update(1);
  progress.Finish(4);
  EXPECT_EQ(ReadAll(file), "");
  std::fclose(file);
}

// Runs the built tool with stdout to `stdout_path` and stderr on a new
// pseudo-terminal; returns what the terminal received.
std::string RunWithStderrOnTerminal(const std::vector<std::string>& args, const std::string& stdout_path,
                                    int* exit_code) {
  int terminal = -1, program_side = -1;
  if (openpty(&terminal, &program_side, nullptr, nullptr, nullptr) != 0) return "openpty failed";
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = open("/dev/null", O_RDONLY);
    dup2(in, STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    dup2(program_side, STDERR_FILENO);
    close(terminal);
    std::vector<char*> argv;
    std::string path = ZAPGRAM_CLI_PATH;
    argv.push_back(path.data());
    std::vector<std::string> copies = args;
    for (std::string& arg : copies) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(path.c_str(), argv.data());
    _exit(127);
  }
  close(program_side);
  std::string received;
  char buffer[4096];
  while (true) {
    const ssize_t n = read(terminal, buffer, sizeof buffer);
    if (n > 0) {
      received.append(buffer, n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EIO once the program has closed its side
    }
  }
  close(terminal);
  int status = 0;
  waitpid(pid, &status, 0);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return received;
}

std::vector<std::string> BenchArgs() {
  return {"bench", "--tokenizer", testing::DataPath("tokenizers/llama3.tokenizer.json"), "--trace",
          testing::DataPath("traces/llama3/json-docs.jsonl"), "--limit", "3", "--json"};
}

TEST(ProgressCliTest, BenchDrawsOnATerminalOnly) {
  const std::string out_path = testing::FreshTempPath("bench_progress.json");
  int exit_code = -1;
  const std::string terminal = RunWithStderrOnTerminal(BenchArgs(), out_path, &exit_code);
  ASSERT_EQ(exit_code, 0) << terminal;
  EXPECT_NE(terminal.find("\rbench ["), std::string::npos) << terminal;
  EXPECT_NE(terminal.find("3/3 docs  100%"), std::string::npos) << terminal;
  EXPECT_NE(terminal.find("docs/s"), std::string::npos) << terminal;
  const nlohmann::json on_terminal = nlohmann::json::parse(testing::ReadFileOrDie(out_path));

  std::vector<std::string> quiet = BenchArgs();
  quiet.push_back("--quiet");
  const std::string silent = RunWithStderrOnTerminal(quiet, out_path, &exit_code);
  ASSERT_EQ(exit_code, 0) << silent;
  EXPECT_EQ(silent, "");

  // stderr a file (the usual case in scripts and CI): nothing drawn.
  const testing::CliResult piped = testing::RunCliAt(ZAPGRAM_CLI_PATH, BenchArgs());
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err, "");
  // The summary has the same fields and counts however stderr is attached
  // (timings differ from run to run).
  const nlohmann::json summary = nlohmann::json::parse(piped.out);
  ASSERT_EQ(summary.size(), on_terminal.size());
  for (const auto& [key, value] : summary.items()) EXPECT_TRUE(on_terminal.contains(key)) << key;
  for (const char* key : {"docs", "tokens", "accepted", "valid"}) EXPECT_EQ(summary[key], on_terminal[key]);
}

TEST(ProgressCliTest, ParseDrawsOnlyWhenItsResultsAreNotOnTheTerminal) {
  const std::string doc = testing::DataPath("docs/json");
  std::vector<std::string> files = testing::ListFiles(doc, ".json");
  ASSERT_GE(files.size(), 2u);
  std::vector<std::string> args = {"parse", "builtin:json", files[0], files[1], "--json"};
  const std::string out_path = testing::FreshTempPath("parse_progress.jsonl");
  int exit_code = -1;
  const std::string terminal = RunWithStderrOnTerminal(args, out_path, &exit_code);
  EXPECT_NE(terminal.find("2/2 files  100%"), std::string::npos) << terminal;
  EXPECT_EQ(testing::SplitLines(testing::ReadFileOrDie(out_path)).size(), 2u);
  args.push_back("--quiet");
  EXPECT_EQ(RunWithStderrOnTerminal(args, out_path, &exit_code), "");
}

}  // namespace
}  // namespace zapgram::cli
