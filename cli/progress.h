// Progress of the `zapgram` command's long loops, drawn on stderr.
//
// bench (documents of a trace), sample (valid samples), parse (files),
// ngram train (documents) and trace (files) can run for minutes; on a
// terminal they redraw one status line in place:
//
//   bench [#########               ] 1200/3000 docs  40%  85.2 docs/s  14s elapsed  21s left
//
// that is, a bar and the count done of the total, the rate since the start,
// the time spent and the time left at that rate (with an unknown total: the
// count, rate and time spent only), plus a command-specific detail (sample:
// draws and acceptance). The line is redrawn at most ten times a second
// ("\r" + text + erase-to-end-of-line) and ended with a newline by Finish.
// Nothing is drawn when stderr is not a terminal (pipes, files, CI logs) or
// with --quiet, so stdout and the JSON outputs are the same with and without
// progress, and logs hold no carriage returns.
//
// Tests: tests/cli/progress_test.cc (the formatting; the class writing to a
// file; the built tool under a pseudo-terminal, with and without --quiet, and
// with stderr a file).
#ifndef ZAPGRAM_CLI_PROGRESS_H_
#define ZAPGRAM_CLI_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace zapgram::cli {

// "0s", "42s", "2m05s", "1h02m": whole seconds, two units at most.
std::string FormatDuration(double seconds);

// The status line without "\r" or newline (see the top of this file).
// total == 0 means unknown. `detail`, when not empty, is appended.
std::string FormatProgress(std::string_view label, std::string_view unit, uint64_t done,
                           uint64_t total, double elapsed_seconds, std::string_view detail = {});

// Whether to draw: not `quiet` and stderr is a terminal, and, for a command
// that prints a result per item as it goes (`results_on_stdout`: parse,
// trace), stdout is not a terminal: there the results themselves show the
// progress, and a status line would be torn by them.
bool ProgressWanted(bool quiet, bool results_on_stdout = false);

// One status line for one loop. Not thread-safe. When constructed disabled,
// every call does nothing.
class Progress {
 public:
  Progress(std::string_view label, std::string_view unit, uint64_t total, bool enabled,
           std::FILE* out = stderr);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return enabled_; }
  // Redraws when 100 ms have passed since the last drawing (the first call
  // always draws).
  void Update(uint64_t done, std::string_view detail = {});
  // Draws the last state and ends the line; later calls do nothing.
  void Finish(uint64_t done, std::string_view detail = {});

 private:
  void Draw(uint64_t done, std::string_view detail);

  std::string label_;
  std::string unit_;
  uint64_t total_;
  bool enabled_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  bool drawn_ = false;
};

}  // namespace zapgram::cli

#endif  // ZAPGRAM_CLI_PROGRESS_H_
