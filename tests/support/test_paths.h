// Where tests find their files: the shared data folder and the source tree.
//
// The build passes both locations as macros (ZAPGRAM_DATA_DIR, the shared
// `../shared/data` folder; ZAPGRAM_SOURCE_DIR, the project root), so tests run
// from any working directory and never need the network. Paths are plain
// strings joined with "/"; listings are sorted so test order is stable.
#ifndef ZAPGRAM_TESTS_SUPPORT_TEST_PATHS_H_
#define ZAPGRAM_TESTS_SUPPORT_TEST_PATHS_H_

#include <string>
#include <string_view>
#include <vector>

namespace zapgram::testing {

// ZAPGRAM_DATA_DIR + "/" + relative.
std::string DataPath(std::string_view relative);
// ZAPGRAM_SOURCE_DIR + "/" + relative.
std::string SourcePath(std::string_view relative);

// The whole file as bytes. Prints the path and aborts when it cannot be read
// (a missing fixture is a broken test setup, not a test failure to recover from).
std::string ReadFileOrDie(const std::string& path);

// Every regular file under `dir` (recursively) whose name ends with
// `extension` (e.g. ".json"; empty = every file), as full paths, sorted.
// A missing directory gives an empty list.
std::vector<std::string> ListFiles(const std::string& dir, std::string_view extension);

}  // namespace zapgram::testing

#endif  // ZAPGRAM_TESTS_SUPPORT_TEST_PATHS_H_
