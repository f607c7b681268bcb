// The progress line (cli/progress.h): formatting and throttled redrawing.
#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace zapgram::cli {

namespace {
constexpr int kBarWidth = 24;
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
}  // namespace

std::string FormatDuration(double seconds) {
  const uint64_t total = seconds > 0 && std::isfinite(seconds) ? static_cast<uint64_t>(seconds) : 0;
  const uint64_t hours = total / 3600, minutes = total / 60 % 60, secs = total % 60;
  if (hours > 0) return absl::StrFormat("%dh%02dm", hours, minutes);
  if (minutes > 0) return absl::StrFormat("%dm%02ds", minutes, secs);
  return absl::StrFormat("%ds", secs);
}

std::string FormatProgress(std::string_view label, std::string_view unit, uint64_t done,
                           uint64_t total, double elapsed_seconds, std::string_view detail) {
  std::string line(label);
  const double rate = elapsed_seconds > 0 ? static_cast<double>(done) / elapsed_seconds : 0;
  if (total > 0) {
    const uint64_t shown = std::min(done, total);
    const int filled = static_cast<int>(kBarWidth * shown / total);
    absl::StrAppend(&line, " [", std::string(filled, '#'), std::string(kBarWidth - filled, ' '), "] ");
    // The count right-aligned to the width of the total, so the line does
    // not shift as the count grows.
    const std::string total_text = absl::StrCat(total);
    absl::StrAppendFormat(&line, "%*d/%s %s  %d%%", static_cast<int>(total_text.size()), done,
                          total_text, unit, 100 * shown / total);
  } else {
    absl::StrAppendFormat(&line, " %d %s", done, unit);
  }
  // Three significant digits below 100/s, so that a slow run (sample with a
  // low acceptance: a few samples a minute) does not read "0.0/s".
  if (rate >= 100) {
    absl::StrAppendFormat(&line, "  %.0f %s/s", rate, unit);
  } else {
    absl::StrAppendFormat(&line, "  %.3g %s/s", rate, unit);
  }
  absl::StrAppendFormat(&line, "  %s elapsed", FormatDuration(elapsed_seconds));
  if (total > 0) {
    if (done >= total) {
      absl::StrAppend(&line, "  done");
    } else if (rate > 0) {
      absl::StrAppend(&line, "  ", FormatDuration(static_cast<double>(total - done) / rate), " left");
    } else {
      absl::StrAppend(&line, "  ? left");
    }
  }
  if (!detail.empty()) line.append("  ").append(detail);
  return line;
}

bool ProgressWanted(bool quiet, bool results_on_stdout) {
  if (quiet || isatty(STDERR_FILENO) == 0) return false;
  return !results_on_stdout || isatty(STDOUT_FILENO) == 0;
}

Progress::Progress(std::string_view label, std::string_view unit, uint64_t total, bool enabled,
                   std::FILE* out)
    : label_(label), unit_(unit), total_(total), enabled_(enabled), out_(out),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

void Progress::Update(uint64_t done, std::string_view detail) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  Draw(done, detail);
}

void Progress::Finish(uint64_t done, std::string_view detail) {
  if (!enabled_) return;
  Draw(done, detail);
  std::fputc('\n', out_);
  std::fflush(out_);
  enabled_ = false;
}

void Progress::Draw(uint64_t done, std::string_view detail) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string line = FormatProgress(label_, unit_, done, total_, elapsed, detail);
  // "\x1b[K" erases what a longer previous line left to the right.
  std::fprintf(out_, "\r%s\x1b[K", line.c_str());
  std::fflush(out_);
  drawn_ = true;
}

}  // namespace zapgram::cli
