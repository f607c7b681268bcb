// Data-driven tests of the whole pipeline (reader -> compiler -> recognizer)
// on grammars and documents written outside this project.
//
// 1. Every GBNF grammar under ZAPGRAM_DATA_DIR/grammars/gbnf (llama.cpp's
//    arithmetic, c, chess, english, japanese, json, json_arr, list and
//    llguidance's vllm-sql) loads through zapgram::Grammar::Load, and the
//    hand-written documents in tests/testdata/gbnf_docs/<grammar>/ parse as
//    labelled: accept/*.txt are sentences, reject/*.txt are not. A reject
//    document named NAME@N.txt must be rejected exactly at byte N (the first
//    byte the recognizer refuses, or the length when only the end is wrong).
//    Each document runs with pruning on and off; both must agree.
//    The documents pin each grammar's exact language, quirks included (json.gbnf's
//    one-space-or-newline `ws`, its exponent `[0-9] [1-9]{0,15}` that refuses
//    1e10; chess's mandatory "1. " and final newline; c.gbnf's mandatory
//    whitespace around `=`), and include rejections in the middle of a UTF-8
//    sequence (japanese, list).
// 2. Every real JSON document under ZAPGRAM_DATA_DIR/docs/json is accepted by
//    builtin:json; llama.cpp's json.gbnf (object root, restricted whitespace)
//    is run on them too and only its acceptance count is reported.
// 3. Mutations of those documents (one byte truncated, a stray ',' before the
//    closing bracket, '=' for ':', ...) are judged by an independent strict
//    JSON parser (nlohmann::json::accept); builtin:json must agree with it on
//    every mutant, invalid ones (the point of the test) and still-valid ones
//    (e.g. added surrounding whitespace) alike.
//
// The oracle for (1) is the labels themselves; they were also cross-checked
// by hand against a textbook Earley recognizer over code points.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "zapgram/grammar.h"

namespace zapgram {
namespace {

namespace fs = std::filesystem;

fs::path DataDir() { return fs::path(ZAPGRAM_DATA_DIR); }
fs::path DocsDir() { return fs::path(ZAPGRAM_SOURCE_DIR) / "tests" / "testdata" / "gbnf_docs"; }

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Regular files under `dir` (recursively) whose name ends in `suffix`, sorted.
std::vector<fs::path> FilesUnder(const fs::path& dir, std::string_view suffix) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::string name = entry.path().filename().string();
    if (name.size() >= suffix.size() && name.ends_with(suffix)) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The shared GBNF grammars by name (file stem).
std::map<std::string, fs::path> SharedGbnfGrammars() {
  std::map<std::string, fs::path> grammars;
  for (const fs::path& path : FilesUnder(DataDir() / "grammars" / "gbnf", ".gbnf")) {
    grammars[path.stem().string()] = path;
  }
  return grammars;
}

std::vector<std::string> SharedGbnfGrammarNames() {
  std::vector<std::string> names;
  for (const auto& [name, path] : SharedGbnfGrammars()) names.push_back(name);
  return names;
}

// A recognizer's verdict on a whole document.
struct Verdict {
  bool accepted = false;
  size_t offset = 0;  // first rejected byte, or the length
  std::string error;  // a budget ran out
};

Verdict Recognize(const Grammar& grammar, std::string_view text, bool pruning) {
  RecognizerOptions options;
  options.pruning = pruning;
  Recognizer recognizer(grammar, options);
  Verdict verdict;
  verdict.offset = recognizer.FeedBytes(text);
  if (!recognizer.status().ok()) {
    verdict.error = std::string(recognizer.status().message());
    return verdict;
  }
  verdict.accepted = verdict.offset == text.size() && recognizer.IsAccepting();
  return verdict;
}

// The expected rejection offset encoded in a reject document's name (NAME@N.txt).
std::optional<size_t> ExpectedOffset(const fs::path& doc) {
  std::string stem = doc.stem().string();
  size_t at = stem.rfind('@');
  if (at == std::string::npos) return std::nullopt;
  return static_cast<size_t>(std::stoul(stem.substr(at + 1)));
}

TEST(GbnfDataTest, EveryGrammarHasLabelledDocuments) {
  std::map<std::string, fs::path> grammars = SharedGbnfGrammars();
  ASSERT_GE(grammars.size(), 9u) << "expected llama.cpp's 8 grammars and vllm-sql under "
                                 << DataDir() / "grammars" / "gbnf";
  for (const auto& [name, path] : grammars) {
    EXPECT_GE(FilesUnder(DocsDir() / name / "accept", ".txt").size(), 3u) << name;
    EXPECT_GE(FilesUnder(DocsDir() / name / "reject", ".txt").size(), 3u) << name;
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(DocsDir())) {
    EXPECT_TRUE(grammars.count(entry.path().filename().string()))
        << entry.path() << " names no grammar under " << DataDir() / "grammars" / "gbnf";
  }
}

class GbnfDocsTest : public testing::TestWithParam<std::string> {};

TEST_P(GbnfDocsTest, LoadsAndParsesAsLabelled) {
  const std::string& name = GetParam();
  fs::path path = SharedGbnfGrammars().at(name);
  absl::StatusOr<Grammar> grammar = Grammar::Load(path.string());
  ASSERT_TRUE(grammar.ok()) << path << ": " << grammar.status();
  for (const char* kind : {"accept", "reject"}) {
    bool want = std::string_view(kind) == "accept";
    for (const fs::path& doc : FilesUnder(DocsDir() / name / kind, ".txt")) {
      std::string text = ReadFile(doc);
      std::optional<Verdict> first;
      for (bool pruning : {true, false}) {
        SCOPED_TRACE(testing::Message() << doc << (pruning ? " (pruning on)" : " (pruning off)"));
        Verdict verdict = Recognize(*grammar, text, pruning);
        ASSERT_EQ(verdict.error, "");
        EXPECT_EQ(verdict.accepted, want);
        if (!want) {
          if (std::optional<size_t> offset = ExpectedOffset(doc)) {
            EXPECT_EQ(verdict.offset, *offset);
          }
        }
        if (first) {
          EXPECT_EQ(verdict.accepted, first->accepted) << "pruning changed the verdict";
          EXPECT_EQ(verdict.offset, first->offset) << "pruning changed the rejection offset";
        } else {
          first = verdict;
        }
      }
    }
  }
}

std::string TestNameOf(const testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(GbnfData, GbnfDocsTest, testing::ValuesIn(SharedGbnfGrammarNames()),
                         TestNameOf);

std::vector<fs::path> JsonDocs() { return FilesUnder(DataDir() / "docs" / "json", ".json"); }

TEST(GbnfDataTest, BuiltinJsonAcceptsEveryJsonDocument) {
  absl::StatusOr<Grammar> json = Grammar::Load("builtin:json");
  ASSERT_TRUE(json.ok()) << json.status();
  std::vector<fs::path> docs = JsonDocs();
  ASSERT_GE(docs.size(), 100u) << "expected the json-docs set under " << DataDir() / "docs/json";
  size_t unpruned_checked = 0;
  for (const fs::path& doc : docs) {
    SCOPED_TRACE(doc.string());
    std::string text = ReadFile(doc);
    Verdict verdict = Recognize(*json, text, /*pruning=*/true);
    EXPECT_EQ(verdict.error, "");
    EXPECT_TRUE(verdict.accepted) << "rejected at byte " << verdict.offset;
    // Without pruning the chart grows with the input; the small documents suffice
    // to check that pruning does not change the verdict.
    if (text.size() <= 8192) {
      Verdict unpruned = Recognize(*json, text, /*pruning=*/false);
      EXPECT_EQ(unpruned.error, "");
      EXPECT_TRUE(unpruned.accepted) << "rejected without pruning at byte " << unpruned.offset;
      ++unpruned_checked;
    }
  }
  std::cout << "[ info     ] builtin:json accepted " << docs.size() << " JSON documents ("
            << unpruned_checked << " also without pruning)\n";
}

TEST(GbnfDataTest, LlamaCppJsonGbnfOnJsonDocuments) {
  fs::path path = SharedGbnfGrammars().at("json");
  absl::StatusOr<Grammar> json_gbnf = Grammar::Load(path.string());
  ASSERT_TRUE(json_gbnf.ok()) << json_gbnf.status();
  size_t accepted = 0;
  size_t objects = 0;
  std::vector<fs::path> docs = JsonDocs();
  for (const fs::path& doc : docs) {
    std::string text = ReadFile(doc);
    Verdict verdict = Recognize(*json_gbnf, text, /*pruning=*/true);
    EXPECT_EQ(verdict.error, "") << doc;
    bool object = !text.empty() && text[0] == '{';
    objects += object;
    if (verdict.accepted) {
      ++accepted;
      // json.gbnf's root is an object: it can accept nothing else.
      EXPECT_TRUE(object) << doc << " accepted by json.gbnf without an object at the root";
    }
  }
  // Not an assertion: json.gbnf only takes an object root and one space or a
  // newline plus up to 20 blanks between tokens, so pretty-printed documents
  // with deeper indentation (and numbers like 1e10 or 17+ digits) fall out.
  std::cout << "[ info     ] llama.cpp json.gbnf accepted " << accepted << " of " << docs.size()
            << " JSON documents (" << objects << " have an object root)\n";
  RecordProperty("json_gbnf_accepted", static_cast<int>(accepted));
}

// Mutants of a valid JSON text, each with a short description. Most are
// invalid; a few stay valid. Duplicates and the original itself are dropped.
std::vector<std::pair<std::string, std::string>> Mutants(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](std::string what, std::string mutant) {
    if (mutant == text) return;
    for (const auto& [w, m] : out) {
      if (m == mutant) return;
    }
    out.emplace_back(std::move(what), std::move(mutant));
  };
  if (!text.empty()) add("last byte dropped", text.substr(0, text.size() - 1));
  add("first half", text.substr(0, text.size() / 2));
  if (size_t pos = text.rfind('}'); pos != std::string::npos) {
    add("',' before the last '}'", text.substr(0, pos) + "," + text.substr(pos));
  }
  if (size_t pos = text.rfind(']'); pos != std::string::npos) {
    add("',' before the last ']'", text.substr(0, pos) + "," + text.substr(pos));
  }
  if (size_t pos = text.find(':'); pos != std::string::npos) {
    std::string m = text;
    m[pos] = '=';
    add("first ':' replaced by '='", m);
  }
  if (size_t pos = text.find('"'); pos != std::string::npos) {
    add("first '\"' deleted", text.substr(0, pos) + text.substr(pos + 1));
    add("control byte after the first '\"'",
        text.substr(0, pos + 1) + std::string(1, '\x01') + text.substr(pos + 1));
  }
  if (size_t pos = text.find(','); pos != std::string::npos) {
    add("first ',' doubled", text.substr(0, pos) + "," + text.substr(pos));
  }
  if (size_t pos = text.find("true"); pos != std::string::npos) {
    add("first 'true' cut to 'tru'", text.substr(0, pos + 3) + text.substr(pos + 4));
  }
  add("stray '}' appended", text + "}");
  add("second value appended", text + " 1");
  add("surrounding whitespace added", " \t\r\n" + text + "\n ");
  return out;
}

TEST(GbnfDataTest, BuiltinJsonAgreesWithStrictParserOnMutants) {
  absl::StatusOr<Grammar> json = Grammar::Load("builtin:json");
  ASSERT_TRUE(json.ok()) << json.status();
  size_t docs_used = 0;
  size_t docs_skipped = 0;
  size_t invalid = 0;
  size_t valid = 0;
  for (const fs::path& doc : JsonDocs()) {
    std::string text = ReadFile(doc);
    // The labels come from nlohmann's strict parser; a document it refuses
    // (e.g. a lone surrogate escape, which RFC 8259's grammar allows) is no
    // ground for judging mutants.
    if (!nlohmann::json::accept(text)) {
      ++docs_skipped;
      continue;
    }
    ++docs_used;
    for (const auto& [what, mutant] : Mutants(text)) {
      bool strict = nlohmann::json::accept(mutant);
      (strict ? valid : invalid) += 1;
      Verdict verdict = Recognize(*json, mutant, /*pruning=*/true);
      EXPECT_EQ(verdict.error, "") << doc << " (" << what << ")";
      EXPECT_EQ(verdict.accepted, strict)
          << doc << " (" << what << "): builtin:json "
          << (verdict.accepted ? "accepts" : "rejects at byte " + std::to_string(verdict.offset))
          << ", the strict parser " << (strict ? "accepts" : "rejects");
    }
  }
  EXPECT_GE(docs_used, 100u);
  EXPECT_GE(invalid, 5 * docs_used) << "too few invalid mutants to mean anything";
  std::cout << "[ info     ] " << docs_used << " documents (" << docs_skipped << " skipped), "
            << invalid << " invalid and " << valid << " valid mutants\n";
}

}  // namespace
}  // namespace zapgram
