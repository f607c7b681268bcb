// Test file locations (see the header).
#include "tests/support/test_paths.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#ifndef ZAPGRAM_DATA_DIR
#error "ZAPGRAM_DATA_DIR must be defined by the build (the shared data folder)"
#endif
#ifndef ZAPGRAM_SOURCE_DIR
#error "ZAPGRAM_SOURCE_DIR must be defined by the build (the project root)"
#endif

namespace zapgram::testing {

namespace {

std::string Join(std::string_view base, std::string_view relative) {
  std::string out(base);
  if (!out.empty() && out.back() != '/' && !relative.empty() && relative.front() != '/') {
    out.push_back('/');
  }
  out.append(relative);
  return out;
}

}  // namespace

std::string DataPath(std::string_view relative) { return Join(ZAPGRAM_DATA_DIR, relative); }

std::string SourcePath(std::string_view relative) { return Join(ZAPGRAM_SOURCE_DIR, relative); }

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "ReadFileOrDie: cannot open %s\n", path.c_str());
    std::abort();
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    std::fprintf(stderr, "ReadFileOrDie: error reading %s\n", path.c_str());
    std::abort();
  }
  return std::move(buffer).str();
}

std::vector<std::string> ListFiles(const std::string& dir, std::string_view extension) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::string path = it->path().string();
    if (path.size() >= extension.size() &&
        path.compare(path.size() - extension.size(), extension.size(), extension) == 0) {
      out.push_back(std::move(path));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace zapgram::testing
