#include "tests/support/cli_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>
#include <vector>

#include "gtest/gtest.h"

namespace zapgram::testing {

std::string ShellQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

namespace {

// Every path handed out, removed (files and folders alike) when the test
// process exits, so runs leave nothing behind in the temp dir.
class TempPaths {
 public:
  ~TempPaths() {
    std::error_code ignored;
    for (const std::string& path : paths_) std::filesystem::remove_all(path, ignored);
  }
  std::string Fresh(std::string_view name) {
    std::string path = (std::filesystem::path(::testing::TempDir()) /
                        ("zapgram_cli_" + std::to_string(getpid()) + "_" + std::to_string(paths_.size()) + "_" +
                         std::string(name)))
                           .string();
    paths_.push_back(path);
    return path;
  }

 private:
  std::vector<std::string> paths_;
};

}  // namespace

std::string FreshTempPath(std::string_view name) {
  static TempPaths paths;
  return paths.Fresh(name);
}

CliResult RunCliAt(const std::string& cli_path, const std::vector<std::string>& args) {
  const std::string err_path = FreshTempPath("stderr.txt");
  std::string command = ShellQuote(cli_path);
  for (const std::string& arg : args) {
    command.append(" ");
    command.append(ShellQuote(arg));
  }
  command.append(" 2>");
  command.append(ShellQuote(err_path));
  command.append(" </dev/null");
  CliResult result;
  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed: " << command;
    return result;
  }
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path, std::ios::binary);
  result.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
  std::filesystem::remove(err_path);
  return result;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

}  // namespace zapgram::testing
