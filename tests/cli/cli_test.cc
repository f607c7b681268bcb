// End-to-end tests of the `zapgram` binary (cli/): each test runs the built
// executable (ZAPGRAM_CLI_PATH) through popen on real grammars and documents
// and checks what a user or a script sees: exit statuses (0 yes, 1 no, 2 could
// not run), the human and JSON output of `parse` (each JSON line is parsed
// back with nlohmann::json; field names and order are fixed by DESIGN.md),
// rejection offsets with their line:col and expected bytes, the --stats fields
// and the pruning invariant max_items <= max_items_unpruned, and the
// diagnostics of `check` (unreachable/unproductive rules named with their
// definition line:col, syntax errors naming file:line:col) on GBNF and .lark
// files, with one line per transform pass.
//
// Grammars come from ZAPGRAM_DATA_DIR (the shared data folder) and from
// tests/testdata/gbnf_docs; small ad-hoc grammars and documents are written to
// testing::TempDir(). Standard error is captured through a temporary file.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_scale.h"
#include "re2/re2.h"
#include "nlohmann/json.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

fs::path DataDir() { return fs::path(ZAPGRAM_DATA_DIR); }
fs::path DocsDir() { return fs::path(ZAPGRAM_SOURCE_DIR) / "tests" / "testdata" / "gbnf_docs"; }
std::string JsonGbnf() { return (DataDir() / "grammars/gbnf/llama.cpp/json.gbnf").string(); }

// A fresh path under the test temp dir.
std::string TempPath(std::string_view name) { return zapgram::testing::FreshTempPath(name); }

std::string WriteTemp(std::string_view name, std::string_view content) {
  std::string path = TempPath(name);
  std::ofstream out(path, std::ios::binary);
  out << content;
  return path;
}

using CliResult = zapgram::testing::CliResult;

CliResult RunCli(const std::vector<std::string>& args) { return zapgram::testing::RunCliAt(ZAPGRAM_CLI_PATH, args); }

std::vector<std::string> Lines(const std::string& text) { return zapgram::testing::SplitLines(text); }

// Parses `parse --json` output: one object per line.
std::vector<Json> JsonLines(const std::string& text) {
  std::vector<Json> objects;
  for (const std::string& line : Lines(text)) {
    Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << line;
    if (!j.is_discarded()) objects.push_back(std::move(j));
  }
  return objects;
}

std::vector<std::string> Keys(const Json& j) {
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  return keys;
}

bool Contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

// ---------------------------------------------------------------- help / usage

TEST(CliTest, HelpListsCommands) {
  CliResult r = RunCli({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(Contains(r.out, "check")) << r.out;
  EXPECT_TRUE(Contains(r.out, "parse")) << r.out;

  r = RunCli({"help", "parse"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(Contains(r.out, "--json")) << r.out;
  EXPECT_TRUE(Contains(r.out, "--no-pruning")) << r.out;

  r = RunCli({"check", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(Contains(r.out, "--dump")) << r.out;
}

TEST(CliTest, UsageErrorsExitTwoWithAMessage) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"frobnicate"},
      {"help", "frobnicate"},
      {"check"},
      {"check", "builtin:json", "builtin:json"},
      {"check", "grammar.txt"},
      {"check", "builtin:nosuch"},
      {"check", "/nonexistent/grammar.gbnf"},
      {"check", "builtin:json", "--bogus"},
      {"parse"},
      {"parse", "builtin:json"},
      {"parse", "builtin:json", "x.json", "--bogus"},
      {"parse", "builtin:json", "x.json", "--data-root"},
  };
  for (const std::vector<std::string>& args : cases) {
    std::string shown;
    for (const std::string& a : args) shown += " " + a;
    CliResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2) << "zapgram" << shown;
    EXPECT_FALSE(r.err.empty()) << "zapgram" << shown << ": no message on stderr";
  }
}

// ----------------------------------------------------------------------- check

TEST(CliTest, CheckSharedGrammarsAreUsable) {
  int checked = 0;
  for (const fs::directory_entry& entry :
       fs::recursive_directory_iterator(DataDir() / "grammars" / "gbnf")) {
    if (entry.path().extension() != ".gbnf") continue;
    CliResult r = RunCli({"check", entry.path().string()});
    EXPECT_EQ(r.exit_code, 0) << entry.path() << "\n" << r.out << r.err;
    EXPECT_TRUE(Contains(r.out, "compiled: ")) << r.out;
    EXPECT_TRUE(Contains(r.out, ": ok (")) << r.out;
    ++checked;
  }
  EXPECT_GE(checked, 9);
}

TEST(CliTest, CheckReportsStatistics) {
  CliResult r = RunCli({"check", JsonGbnf()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // root, value, object, array, string, number, ws.
  EXPECT_TRUE(Contains(r.out, "grammar: 7 rules, ")) << r.out;
  EXPECT_TRUE(RE2::PartialMatch(r.out, R"(\d+ literal terminals, \d+ class terminals)")) << r.out;
  EXPECT_TRUE(RE2::PartialMatch(r.out, R"(compiled: \d+ nonterminals, \d+ productions, \d+ rhs )"
                                       R"(symbols, \d+ terminals, \d+ terminal automaton states)"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, ": ok (0 warnings)")) << r.out;
}

// The "transform PASS: R rules, E expressions, S symbols -> ..." lines of a
// check report, in order.
struct PassLine {
  std::string pass;
  uint64_t before[3] = {0, 0, 0};  // rules, expressions, symbols
  uint64_t after[3] = {0, 0, 0};
};

std::vector<PassLine> TransformLines(const std::string& out) {
  const RE2 line_re(
      R"(transform (\w+): (\d+) rules?, (\d+) expressions?, (\d+) symbols? -> )"
      R"((\d+) rules?, (\d+) expressions?, (\d+) symbols?(?:; .*)?)");
  std::vector<PassLine> lines;
  for (const std::string& line : Lines(out)) {
    PassLine p;
    if (RE2::FullMatch(line, line_re, &p.pass, &p.before[0], &p.before[1], &p.before[2],
                       &p.after[0], &p.after[1], &p.after[2])) {
      lines.push_back(p);
    }
  }
  return lines;
}

// One line per pass, in pipeline order; each pass starts from the previous one's result.
void ExpectPipelineLines(const std::vector<PassLine>& lines, const std::string& out) {
  std::vector<std::string> passes;
  for (size_t i = 0; i < lines.size(); ++i) {
    passes.push_back(lines[i].pass);
    if (i > 0) {
      EXPECT_TRUE(std::equal(lines[i].before, lines[i].before + 3, lines[i - 1].after))
          << lines[i].pass << "\n" << out;
    }
  }
  EXPECT_EQ(passes, (std::vector<std::string>{"useless_rules", "inline_rules", "fuse_literals",
                                              "dedup_rules"}))
      << out;
}

TEST(CliTest, CheckPrintsWhatEachTransformDid) {
  CliResult r = RunCli({"check", JsonGbnf()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ExpectPipelineLines(TransformLines(r.out), r.out);
  // json.gbnf as read: 7 rules; `array` and `number` are used once and inlined.
  EXPECT_TRUE(Contains(r.out, "transform useless_rules: 7 rules, ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "inlined: array, number")) << r.out;

  std::string path = WriteTemp("transforms.gbnf",
                               "root ::= \"a\" \"b\" b | loop\n"
                               "b ::= \"c\"\n"
                               "loop ::= \"x\" loop\n"
                               "unused ::= \"u\"\n");
  r = RunCli({"check", path});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // root: 6 expressions (4 symbols), b: 1 (1), loop: 3 (2), unused: 1 (1).
  EXPECT_TRUE(Contains(r.out, "transform useless_rules: 4 rules, 11 expressions, 8 symbols -> "
                              "2 rules, 5 expressions, 4 symbols; removed unproductive: loop; "
                              "removed unreachable: unused; alternatives dropped: 1\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "transform inline_rules: 2 rules, 5 expressions, 4 symbols -> "
                              "1 rule, 4 expressions, 3 symbols; inlined: b; rules inlined: 1\n"))
      << r.out;
  // "a" "b" "c" -> "abc".
  EXPECT_TRUE(Contains(r.out, "transform fuse_literals: 1 rule, 4 expressions, 3 symbols -> "
                              "1 rule, 1 expression, 1 symbol; literals fused: 2; "
                              "wrappers unwrapped: 1\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "transform dedup_rules: 1 rule, 1 expression, 1 symbol -> "
                              "1 rule, 1 expression, 1 symbol; no change\n"))
      << r.out;
}

// .lark files are read and lowered as `parse` loads them; the transforms run
// on the lexed IR (tokens are terminal symbols) and are printed as for GBNF.
TEST(CliTest, CheckLarkFilePrintsEachTransform) {
  std::string path = WriteTemp("pairs.lark",
                               "start: pair+\n"
                               "pair: key \"=\" value \";\"\n"
                               "key: NAME\n"
                               "value: NAME | NUMBER | \"(\" value \")\"\n"
                               "NAME: /[a-z]+/\n"
                               "NUMBER: /[0-9]+/\n"
                               "%ignore \" \"\n");
  CliResult r = RunCli({"check", path});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // start: 2 expressions (1 symbol), pair: 5 (4), value: 7 (5), key: 1 (1);
  // ";" "=" ")" "(" NUMBER NAME and the ignored " " are the 7 tokens.
  EXPECT_TRUE(Contains(r.out, "grammar: 4 rules, 15 expressions, 0 literal terminals, "
                              "0 class terminals, 7 tokens\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "transform useless_rules: 4 rules, 15 expressions, 11 symbols -> "
                              "4 rules, 15 expressions, 11 symbols; no change\n"))
      << r.out;
  // pair and key are used once: start ::= (NAME "=" value ";")+.
  EXPECT_TRUE(Contains(r.out, "transform inline_rules: 4 rules, 15 expressions, 11 symbols -> "
                              "2 rules, 13 expressions, 9 symbols; inlined: pair, key; "
                              "rules inlined: 2\n"))
      << r.out;
  // Adjacent tokens are never fused.
  EXPECT_TRUE(Contains(r.out, "transform fuse_literals: 2 rules, 13 expressions, 9 symbols -> "
                              "2 rules, 13 expressions, 9 symbols; no change\n"))
      << r.out;
  // The two NAME references become one node.
  EXPECT_TRUE(Contains(r.out, "transform dedup_rules: 2 rules, 13 expressions, 9 symbols -> "
                              "2 rules, 12 expressions, 9 symbols; nodes shared: 1\n"))
      << r.out;
  EXPECT_TRUE(RE2::PartialMatch(r.out, R"(compiled: \d+ nonterminals, \d+ productions, \d+ rhs )"
                                       R"(symbols, 7 terminals, \d+ terminal automaton states)"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, path + ": ok (0 warnings)")) << r.out;
}

TEST(CliTest, CheckSynCodeLarkGrammars) {
  for (const char* name : {"java", "go", "sql"}) {
    // Relative to --data-root, as `parse` resolves it.
    CliResult r = RunCli({"check", std::string("grammars/lark/syncode/") + name + ".lark",
                          "--data-root", DataDir().string()});
    ASSERT_EQ(r.exit_code, 0) << name << "\n" << r.out << r.err;
    EXPECT_TRUE(RE2::PartialMatch(r.out, R"(grammar: \d+ rules, \d+ expressions, 0 literal )"
                                         R"(terminals, 0 class terminals, \d+ tokens)"))
        << r.out;
    std::vector<PassLine> lines = TransformLines(r.out);
    ExpectPipelineLines(lines, r.out);
    // Lark grammars have many single-use rules (e.g. java's compilation_unit).
    ASSERT_FALSE(lines.empty());
    EXPECT_LT(lines.back().after[0], lines.front().before[0]) << r.out;
    EXPECT_TRUE(Contains(r.out, "compiled: ")) << r.out;
  }
}

TEST(CliTest, CheckLarkFollowsRelativeImports) {
  // Through the loader `parse` uses: `%import .lex (...)` is lex.lark beside the file.
  fs::path dir = fs::path(TempPath("lark_import"));
  fs::create_directories(dir);
  std::ofstream(dir / "lex.lark") << "NAME: /[a-z]+/\nNUMBER: /[0-9]+/\n";
  std::ofstream(dir / "main.lark") << "start: (NAME | NUMBER)+\n%import .lex (NAME, NUMBER)\n"
                                      "%ignore \" \"\n";
  CliResult r = RunCli({"check", (dir / "main.lark").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "grammar: 1 rule, 4 expressions, 0 literal terminals, "
                              "0 class terminals, 3 tokens\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "transform dedup_rules: 1 rule, 4 expressions, 2 symbols -> "
                              "1 rule, 4 expressions, 2 symbols; no change\n"))
      << r.out;
}

TEST(CliTest, CheckLarkErrorsNameFileLineCol) {
  std::string path = WriteTemp("undefined.lark", "start: pair+\npair: key \"=\"\n");
  CliResult r = RunCli({"check", path});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, path + ":2:7: error: undefined rule 'key'")) << r.out;
  EXPECT_TRUE(Contains(r.out, path + ": not usable (1 error)")) << r.out;

  path = WriteTemp("empty.lark", "start: a\na: \"x\" a\n");
  r = RunCli({"check", path});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;  // the empty language compiles
  EXPECT_TRUE(Contains(r.out, path + ":1:1: warning: root rule 'start' is unproductive")) << r.out;

  r = RunCli({"check", "/nonexistent/grammar.lark"});  // could not run
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_FALSE(r.err.empty());
}

TEST(CliTest, CheckBuiltinJson) {
  CliResult r = RunCli({"check", "builtin:json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "<builtin:json>: ok")) << r.out;
}

// --classes: the token classes of the grammar for a tokenizer, the largest
// first, with decoded members; it needs --tokenizer.
TEST(CliTest, CheckPrintsTokenClasses) {
  const std::string tokenizer = (DataDir() / "tokenizers/llama3.tokenizer.json").string();
  CliResult r = RunCli({"check", "builtin:json", "--tokenizer", tokenizer, "--classes"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, " classes of 128256 ids, computed in ")) << r.out;
  // The digits are one class in JSON: "0" and "1" are listed together.
  EXPECT_TRUE(Contains(r.out, "\"0\" \"1\" \"2\"")) << r.out;
  r = RunCli({"check", "builtin:json", "--classes"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(Contains(r.err, "--classes needs --tokenizer")) << r.err;
}

TEST(CliTest, CheckResolvesRelativePathsAgainstDataRoot) {
  CliResult r =
      RunCli({"check", "grammars/gbnf/llama.cpp/json.gbnf", "--data-root", DataDir().string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = RunCli({"check", "--data-root=" + DataDir().string(), "grammars/gbnf/llama.cpp/list.gbnf"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(CliTest, CheckWarnsAboutUnreachableRule) {
  std::string path = WriteTemp("unreachable.gbnf",
                               "root ::= \"a\" b\n"
                               "b ::= \"b\"\n"
                               "\n"
                               "# nobody refers to this one\n"
                               "unused ::= \"x\"\n");
  CliResult r = RunCli({"check", path});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, path + ":5:1: warning: rule 'unused' is unreachable")) << r.out;
  EXPECT_FALSE(Contains(r.out, "rule 'b'")) << r.out;
  EXPECT_TRUE(Contains(r.out, ": ok (1 warning)")) << r.out;
}

TEST(CliTest, CheckWarnsAboutUnproductiveRule) {
  std::string path = WriteTemp("unproductive.gbnf",
                               "root ::= \"a\" | loop\n"
                               "loop ::= \"x\" loop\n");
  CliResult r = RunCli({"check", path});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, path + ":2:1: warning: rule 'loop' is unproductive")) << r.out;
}

// The empty language compiles: check warns, parse rejects every file at its
// first byte (an empty file too) with nothing expected, mask allows nothing.
TEST(CliTest, EmptyLanguageIsAWarningAndRejectsEverything) {
  std::string path = WriteTemp("empty_language.gbnf", "root ::= \"x\" root\n");
  CliResult r = RunCli({"check", path});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, path + ":1:1: warning: root rule 'root' is unproductive")) << r.out;
  EXPECT_TRUE(Contains(r.out, "the language is empty")) << r.out;
  EXPECT_TRUE(Contains(r.out, path + ": ok (1 warning)")) << r.out;

  const std::string empty_file = WriteTemp("empty_input.txt", "");
  const std::string x_file = WriteTemp("x_input.txt", "xx");
  r = RunCli({"parse", path, empty_file, x_file, "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "\"accepted\":false,\"offset\":0,\"line\":1,\"col\":1,\"expected\":[]"))
      << r.out;
  EXPECT_FALSE(Contains(r.out, "\"accepted\":true")) << r.out;

  r = RunCli({"mask", path, "--tokenizer", (DataDir() / "tokenizers/llama3.tokenizer.json").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "0 of 128256 tokens allowed")) << r.out;
}

// {""}: check, parse and mask of a grammar whose only sentence is empty,
// GBNF and Lark (`start:` with an empty body).
TEST(CliTest, OnlyTheEmptyStringGrammarsLoad) {
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"only_empty.gbnf", "root ::= \"\"\n"},
           {"only_empty.lark", "start:\n"},
           {"only_empty_rules.lark", "start: a\na: b\nb:\n"}}) {
    SCOPED_TRACE(name);
    const std::string path = WriteTemp(name, text);
    CliResult r = RunCli({"check", path});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    const std::string empty_file = WriteTemp("empty_input.txt", "");
    const std::string a_file = WriteTemp("a_input.txt", "a");
    r = RunCli({"parse", path, empty_file, a_file, "--json"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(Contains(r.out, "\"accepted\":true")) << r.out;
    EXPECT_TRUE(Contains(r.out, "\"accepted\":false,\"offset\":0")) << r.out;
    r = RunCli({"mask", path, "--tokenizer", (DataDir() / "tokenizers/llama3.tokenizer.json").string()});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(Contains(r.out, "tokens allowed; EOS allowed")) << r.out;
  }
}

TEST(CliTest, CheckSyntaxErrorNamesFileLineCol) {
  std::string path = WriteTemp("syntax.gbnf",
                               "root ::= item\n"
                               "item ::= \"a\" ]\n");
  CliResult r = RunCli({"check", path});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, path + ":2:")) << r.out;
  EXPECT_TRUE(Contains(r.out, "error")) << r.out;
}

TEST(CliTest, CheckUndefinedSymbolIsAnError) {
  std::string path = WriteTemp("undefined.gbnf", "root ::= \"a\" missing\n");
  CliResult r = RunCli({"check", path});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, path + ":1:")) << r.out;
  EXPECT_TRUE(Contains(r.out, "missing")) << r.out;
}

TEST(CliTest, CheckDumpPrintsTheGrammar) {
  CliResult r = RunCli({"check", "--dump", JsonGbnf()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "\nroot ::= object\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\nws ::= ")) << r.out;
}

// ----------------------------------------------------------------------- parse

TEST(CliTest, ParseExitStatus) {
  std::string good = (DocsDir() / "json/accept/flat.txt").string();
  std::string bad = (DocsDir() / "json/reject/trailing_comma@8.txt").string();
  EXPECT_EQ(RunCli({"parse", JsonGbnf(), good}).exit_code, 0);
  EXPECT_EQ(RunCli({"parse", JsonGbnf(), good, bad}).exit_code, 1);
  EXPECT_EQ(RunCli({"parse", JsonGbnf(), good, "/nonexistent/doc.json"}).exit_code, 2);
  std::string broken = WriteTemp("broken.gbnf", "root ::= (\"a\"\n");
  CliResult r = RunCli({"parse", broken, good});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, broken)) << r.err;
  EXPECT_EQ(RunCli({"parse", "/nonexistent/grammar.gbnf", good}).exit_code, 2);
}

TEST(CliTest, ParseHumanOutput) {
  std::string good = (DocsDir() / "json/accept/flat.txt").string();
  std::string bad = (DocsDir() / "json/reject/trailing_comma@8.txt").string();
  CliResult r = RunCli({"parse", JsonGbnf(), good, bad});
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[0], good + ": accepted");
  // `{"a": 1,}`: after ", " json.gbnf's ws allows ' ' or '\n', then a key.
  EXPECT_EQ(lines[1], bad + ":1:9: rejected at byte 8; expected '\\x0A', ' ', '\"'");
}

TEST(CliTest, ParseJsonOutputFields) {
  std::vector<std::string> args = {"parse", "--json", JsonGbnf()};
  std::vector<fs::path> files;
  for (const char* kind : {"accept", "reject"}) {
    for (const fs::directory_entry& e : fs::directory_iterator(DocsDir() / "json" / kind)) {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) args.push_back(f.string());
  CliResult r = RunCli(args);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::vector<Json> objects = JsonLines(r.out);
  ASSERT_EQ(objects.size(), files.size()) << r.out;
  const std::vector<std::string> kFields = {"file", "accepted", "offset",
                                            "line", "col",      "expected"};
  for (size_t i = 0; i < files.size(); ++i) {
    const Json& j = objects[i];
    SCOPED_TRACE(j.dump());
    EXPECT_EQ(Keys(j), kFields);
    EXPECT_EQ(j["file"], files[i].string());
    bool want = files[i].parent_path().filename() == "accept";
    ASSERT_TRUE(j["accepted"].is_boolean());
    EXPECT_EQ(j["accepted"].get<bool>(), want);
    if (want) {
      for (const char* field : {"offset", "line", "col", "expected"}) {
        EXPECT_TRUE(j[field].is_null()) << field;
      }
    } else {
      std::string stem = files[i].stem().string();
      size_t offset = std::stoul(stem.substr(stem.rfind('@') + 1));
      EXPECT_EQ(j["offset"], offset);
      EXPECT_EQ(j["line"], 1);  // every json reject doc is one line
      EXPECT_EQ(j["col"], offset + 1);
      ASSERT_TRUE(j["expected"].is_array());
      for (const Json& e : j["expected"]) EXPECT_TRUE(e.is_string());
    }
  }
}

TEST(CliTest, ParseReportsRejectionLineColAndExpectedBytes) {
  // The stray ',' is taken (a key may follow), so the '}' at byte 12 is the
  // first rejected byte: line 3, column 1.
  std::string doc = WriteTemp("bad.json", "{\n  \"a\": 1,\n}\n");
  CliResult r = RunCli({"parse", "--json", "builtin:json", doc});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::vector<Json> objects = JsonLines(r.out);
  ASSERT_EQ(objects.size(), 1u) << r.out;
  const Json& j = objects[0];
  EXPECT_EQ(j["accepted"], false);
  EXPECT_EQ(j["offset"], 12);
  EXPECT_EQ(j["line"], 3);
  EXPECT_EQ(j["col"], 1);
  // RFC 8259 allows whitespace or the opening quote of a key there.
  EXPECT_EQ(j["expected"], Json::parse(R"(["'\\x09'", "'\\x0A'", "'\\x0D'", "' '", "'\"'"])"));

  r = RunCli({"parse", "builtin:json", doc});
  EXPECT_EQ(r.out, doc +
                       ":3:1: rejected at byte 12; expected '\\x09', '\\x0A', '\\x0D', ' ', "
                       "'\"'\n");
}

TEST(CliTest, ParseReportsEndOfInputNotAllowed) {
  std::string doc = WriteTemp("truncated.json", "{\"a\": [1, 2");
  CliResult r = RunCli({"parse", "builtin:json", doc});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.out, doc + ":1:12: rejected at byte 11; end of input not allowed; "
                                    "expected "))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "']'")) << r.out;
  EXPECT_TRUE(Contains(r.out, "'0'-'9'")) << r.out;

  r = RunCli({"parse", "--json", "builtin:json", doc});
  std::vector<Json> objects = JsonLines(r.out);
  ASSERT_EQ(objects.size(), 1u) << r.out;
  EXPECT_EQ(objects[0]["offset"], 11);
  EXPECT_EQ(objects[0]["col"], 12);
}

TEST(CliTest, ParseRejectionInsideUtf8Sequence) {
  // U+3000 (E3 80 80) is outside japanese.gbnf's ranges, but E3 80 starts
  // U+3001..U+303E: the third byte is the first rejected one.
  std::string doc = (DocsDir() / "japanese/reject/ideographic_space@8.txt").string();
  std::string grammar = (DataDir() / "grammars/gbnf/llama.cpp/japanese.gbnf").string();
  CliResult r = RunCli({"parse", "--json", grammar, doc});
  std::vector<Json> objects = JsonLines(r.out);
  ASSERT_EQ(objects.size(), 1u) << r.out << r.err;
  EXPECT_EQ(objects[0]["offset"], 8);
  EXPECT_EQ(objects[0]["col"], 9);
  EXPECT_EQ(objects[0]["expected"], Json::parse(R"(["'\\x81'-'\\xBE'"])"));
}

TEST(CliTest, ParseStatsFields) {
  std::vector<std::string> args = {"parse", "--json", "--stats", "builtin:json"};
  std::vector<fs::path> docs;
  for (const fs::directory_entry& e :
       fs::recursive_directory_iterator(DataDir() / "docs" / "json")) {
    if (e.is_regular_file() && e.path().extension() == ".json") docs.push_back(e.path());
  }
  std::sort(docs.begin(), docs.end());
  ASSERT_GE(docs.size(), 20u);
  docs.resize(20);
  // The largest document is where pruning must show.
  fs::path largest;
  for (const fs::directory_entry& e :
       fs::recursive_directory_iterator(DataDir() / "docs" / "json")) {
    if (e.is_regular_file() && e.path().extension() == ".json" &&
        (largest.empty() || e.file_size() > fs::file_size(largest))) {
      largest = e.path();
    }
  }
  docs.push_back(largest);
  for (const fs::path& d : docs) args.push_back(d.string());
  CliResult r = RunCli(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<Json> objects = JsonLines(r.out);
  ASSERT_EQ(objects.size(), docs.size()) << r.out;
  for (size_t i = 0; i < docs.size(); ++i) {
    const Json& j = objects[i];
    SCOPED_TRACE(j.dump());
    EXPECT_EQ(j["accepted"], true);
    ASSERT_TRUE(j.contains("bytes"));
    ASSERT_TRUE(j.contains("max_items"));
    ASSERT_TRUE(j.contains("max_items_unpruned"));
    EXPECT_EQ(j["bytes"].get<uint64_t>(), fs::file_size(docs[i]));
    EXPECT_GT(j["max_items"].get<uint64_t>(), 0u);
    EXPECT_LE(j["max_items"].get<uint64_t>(), j["max_items_unpruned"].get<uint64_t>());
  }
  const Json& big = objects.back();
  EXPECT_LT(big["max_items"].get<uint64_t>() * 4, big["max_items_unpruned"].get<uint64_t>())
      << "pruning should keep far fewer items than the unpruned chart on a " << big["bytes"]
      << "-byte document";
}

TEST(CliTest, ParseHumanStats) {
  std::string doc = (DocsDir() / "json/accept/pretty.txt").string();
  CliResult r = RunCli({"parse", "--stats", JsonGbnf(), doc});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[0], doc + ": accepted");
  EXPECT_TRUE(RE2::PartialMatch(lines[1], R"(36 bytes; items max \d+, mean [0-9.]+; )"
                                          R"(unpruned max \d+, mean [0-9.]+; peak work per byte \d+; )"
                                          R"(items every 2 bytes: (?:\d+ ){18}\d+$)"))
      << lines[1];
}

TEST(CliTest, ParseNoPruningGivesTheSameVerdicts) {
  std::vector<std::string> files;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(DocsDir() / "json")) {
    if (e.is_regular_file()) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> args = {"parse", "--json", JsonGbnf()};
  args.insert(args.end(), files.begin(), files.end());
  CliResult pruned = RunCli(args);
  args.push_back("--no-pruning");
  CliResult unpruned = RunCli(args);
  EXPECT_EQ(pruned.exit_code, unpruned.exit_code);
  EXPECT_EQ(pruned.out, unpruned.out);
  EXPECT_EQ(JsonLines(pruned.out).size(), files.size());
}

TEST(CliTest, ParseReadsStandardInput) {
  std::string doc = WriteTemp("stdin.json", "[1, 2, 3]");
  std::string command = zapgram::testing::ShellQuote(ZAPGRAM_CLI_PATH) + " parse builtin:json - < " + zapgram::testing::ShellQuote(doc);
  std::FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buffer[256] = {};
  size_t n = std::fread(buffer, 1, sizeof buffer - 1, pipe);
  int status = pclose(pipe);
  EXPECT_EQ(std::string(buffer, n), "-: accepted\n");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace

// ---------------------------------------------------------------- regex:PATTERN

namespace {

TEST(CliRegexTest, ParseMatchesWholeTextAgainstPattern) {
  std::string good = WriteTemp("regex_good.txt", "abc-def");
  std::string bad = WriteTemp("regex_bad.txt", "abc--def");
  CliResult r = RunCli({"parse", "regex:[a-z]+(-[a-z]+)*", good, bad, "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::vector<Json> lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["accepted"], true);
  EXPECT_EQ(lines[1]["accepted"], false);
  EXPECT_EQ(lines[1]["offset"], 4);
  EXPECT_EQ(lines[1]["expected"], Json::array({"'a'-'z'"}));
  fs::remove(good);
  fs::remove(bad);
}

TEST(CliRegexTest, CheckCompilesPatternOrNamesTheRefusedConstruct) {
  CliResult ok = RunCli({"check", "regex:\\d+(\\.\\d+)?"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_TRUE(Contains(ok.out, "compiled: ")) << ok.out;
  CliResult refused = RunCli({"check", "regex:a(?=b)"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_TRUE(Contains(refused.out, "lookahead (?= is not supported at offset 1")) << refused.out;
}

}  // namespace

// ---------------------------------------------------------------- schema:PATH, schema2gbnf

namespace {

constexpr std::string_view kTagsSchema =
    R"({"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": true,
        "items": {"type": "string"}}}, "required": ["tags"], "additionalProperties": false})";

TEST(CliTest, Schema2GbnfPrintsTheGrammar) {
  std::string schema = WriteTemp("s2g.schema.json", R"({"type": "array", "items": {"enum": [1, "a"]}})");
  CliResult r = RunCli({"schema2gbnf", schema, "--compact"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "root ::= ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\"\\\"a\\\"\"")) << r.out;
  CliResult bad = RunCli({"schema2gbnf", schema, "--max-ws", "x"});
  EXPECT_EQ(bad.exit_code, 2);
}

TEST(CliTest, Schema2GbnfStrictRefusesLenientWarns) {
  std::string schema = WriteTemp("tags.schema.json", kTagsSchema);
  CliResult strict = RunCli({"schema2gbnf", schema});
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_TRUE(Contains(strict.err, "unsupported: uniqueItems at #/properties/tags")) << strict.err;
  CliResult lenient = RunCli({"schema2gbnf", schema, "--lenient"});
  EXPECT_EQ(lenient.exit_code, 0) << lenient.err;
  EXPECT_TRUE(Contains(lenient.err, "warning: dropped uniqueItems at #/properties/tags")) << lenient.err;
}

TEST(CliTest, ParseAndCheckTakeSchemaSpecs) {
  std::string schema = WriteTemp("tags2.schema.json", kTagsSchema);
  std::string good = WriteTemp("tags_good.json", R"({"tags": ["a", "a"]})");
  std::string bad = WriteTemp("tags_bad.json", R"({"tags": [1]})");
  CliResult strict = RunCli({"parse", "schema:" + schema, good});
  EXPECT_EQ(strict.exit_code, 2);
  EXPECT_TRUE(Contains(strict.err, "unsupported: uniqueItems")) << strict.err;
  CliResult lenient = RunCli({"parse", "schema:" + schema, good, bad, "--lenient"});
  EXPECT_EQ(lenient.exit_code, 1) << lenient.err;
  EXPECT_TRUE(Contains(lenient.out, "tags_good.json: accepted")) << lenient.out;
  EXPECT_TRUE(Contains(lenient.err, "dropped uniqueItems")) << lenient.err;
  CliResult check = RunCli({"check", "schema:" + schema, "--lenient"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_TRUE(Contains(check.out, "warning: dropped uniqueItems")) << check.out;
  CliResult check_strict = RunCli({"check", "schema:" + schema});
  EXPECT_EQ(check_strict.exit_code, 1) << check_strict.out << check_strict.err;
}

// A schema grammar in `parse` validates: RFC 8259 whitespace, member order
// and escapes are the validator's, not the generation grammar's.
TEST(CliTest, ParseValidatesSchemaDocumentsAsRfc8259ReadsThem) {
  std::string schema = WriteTemp("two_keys.schema.json",
                                 R"({"type": "object", "properties": {"id": {"type": "integer"},
                                     "name": {"type": "string", "pattern": "^[a-z]+$"}},
                                     "required": ["id", "name"]})");
  std::string pretty = WriteTemp("pretty.json", "{\n    \"name\": \"\\u0061b\",\n    \"id\": 1\n}\n");
  std::string wrong = WriteTemp("wrong.json", "{\n    \"name\": \"AB\",\n    \"id\": 1\n}\n");
  CliResult validation = RunCli({"parse", "schema:" + schema, pretty, wrong});
  EXPECT_EQ(validation.exit_code, 1) << validation.err;
  EXPECT_TRUE(Contains(validation.out, "pretty.json: accepted")) << validation.out;
  EXPECT_TRUE(Contains(validation.out, "wrong.json:2:14: rejected at byte 15")) << validation.out;
  CliResult generation = RunCli({"parse", "schema:" + schema, pretty, "--generation"});
  EXPECT_EQ(generation.exit_code, 1) << generation.err;
  EXPECT_TRUE(Contains(generation.out, "pretty.json:2:2: rejected at byte 3")) << generation.out;
}

// --texts: documents inline, one per line (a JSON string or {"text": ...}).
// --lines: each non-blank line one document (JSON Lines as they come, CRLF
// too), named F:LINE, and a summary on stderr.
TEST(CliTest, ParseTakesJsonLines) {
  std::string lines = WriteTemp("lines.jsonl", "{\"a\": [1, 2]}\n\n[1,\n\"x\"\r\n  \n{\"b\": tru}\n7");
  CliResult r = RunCli({"parse", "builtin:json", "--lines", lines, "--json", "-j", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::vector<Json> out = JsonLines(r.out);
  ASSERT_EQ(out.size(), 5u) << r.out;
  const std::vector<std::pair<int, bool>> want = {{1, true}, {3, false}, {4, true}, {6, false}, {7, true}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(out[i]["file"], lines + ":" + std::to_string(want[i].first)) << r.out;
    EXPECT_EQ(out[i]["accepted"], want[i].second) << out[i];
  }
  EXPECT_EQ(out[1]["offset"], 3);  // "[1," may not end there
  EXPECT_EQ(out[3]["offset"], 9);  // {"b": tru}: "tru" may still become true, '}' may not
  EXPECT_EQ(out[3]["col"], 10);
  EXPECT_TRUE(Contains(r.err, "5 documents: 3 accepted, 2 rejected, 0 errors")) << r.err;
  // Standard input, human output.
  std::string command = zapgram::testing::ShellQuote(ZAPGRAM_CLI_PATH) + " parse builtin:json --lines - < " +
                        zapgram::testing::ShellQuote(lines) + " 2>/dev/null";
  std::FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string human;
  char buffer[512];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) human.append(buffer, n);
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1);
  EXPECT_TRUE(Contains(human, "-:1: accepted\n-:3:1:4: rejected at byte 3; end of input not allowed")) << human;
}

// A --lines line too long to hold (past 8 MiB) is fed as it is read: its
// verdict is the same, a rejected one's rest is skipped, CRLF is dropped,
// the lines after it are parsed as usual, and memory stays small.
TEST(CliTest, ParseStreamsLongJsonLines) {
  std::string element = "{\"id\": 12345, \"tags\": [\"a\", \"b\"], \"v\": {\"x\": 1.5e3}}";
  std::string big = "[";
  while (big.size() < (size_t{9} << 20)) big += element + ", ";
  big += element + "]";
  std::string broken = big;
  broken[100] = '!';
  std::string lines = WriteTemp("long.jsonl", "[1]\n" + big + "\r\n" + broken + "\n" + big + "\n{}\n");
  CliResult r = RunCli({"parse", "builtin:json", "--lines", lines, "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::vector<Json> out = JsonLines(r.out);
  ASSERT_EQ(out.size(), 5u) << r.out.substr(0, 2000);
  EXPECT_EQ(out[0]["accepted"], true);
  EXPECT_EQ(out[1]["accepted"], true) << out[1];
  EXPECT_EQ(out[2]["accepted"], false);
  EXPECT_EQ(out[2]["offset"], 100);
  EXPECT_EQ(out[3]["accepted"], true) << out[3];
  EXPECT_EQ(out[4]["file"], lines + ":5");
  EXPECT_EQ(out[4]["accepted"], true);
  EXPECT_TRUE(Contains(r.err, "5 documents: 4 accepted, 1 rejected, 0 errors")) << r.err;
  if (zapgram::testing::kSanitized) return;  // RSS is ASan's there
  // Memory: a 27 MiB line takes no more than a 9 MiB one (held whole, it
  // would take 18 MB more at least).
  auto peak_mb = [&](const std::string& text) {
    CliResult run = RunCli({"parse", "builtin:json", "--lines", WriteTemp("one.jsonl", text), "-j", "1"});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    const size_t at = run.err.find("peak RSS ");
    EXPECT_NE(at, std::string::npos) << run.err;
    return at == std::string::npos ? 0L : std::stol(run.err.substr(at + 9));
  };
  const long nine = peak_mb(big + "\n"), twenty_seven = peak_mb("[" + big + ", " + big + ", " + big + "]\n");
  std::printf("parse --lines peak RSS: %ld MB for a 9 MiB line, %ld MB for a 27 MiB one\n", nine, twenty_seven);
  EXPECT_LE(twenty_seven, nine + 8);
}

// -j: the same reports, in input order, whatever the thread count; files
// and lines alike.
TEST(CliTest, ParseInParallelKeepsInputOrder) {
  std::string text;
  for (int i = 0; i < 3000; ++i) {
    text += i % 7 == 3 ? "{\"k\": [" + std::to_string(i) + ",]}\n" : "{\"k\": [" + std::to_string(i) + "]}\n";
  }
  std::string lines = WriteTemp("many.jsonl", text);
  std::string good = WriteTemp("good.json", "[1, {\"a\": null}]"), bad = WriteTemp("bad.json", "[1, {\"a\" null}]");
  std::vector<std::string> outputs;
  for (const char* threads : {"1", "2", "4", "7"}) {
    CliResult r = RunCli({"parse", "builtin:json", good, bad, good, "--lines", lines, "--json", "-j", threads});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(Contains(r.err, "3003 documents: 2573 accepted, 430 rejected, 0 errors")) << r.err;
    outputs.push_back(r.out);
  }
  std::vector<Json> first = JsonLines(outputs[0]);
  ASSERT_EQ(first.size(), 3003u);
  EXPECT_EQ(first[1]["file"], bad);
  EXPECT_EQ(first[1]["accepted"], false);
  EXPECT_EQ(first[3 + 3]["accepted"], false);
  EXPECT_EQ(first[3 + 2999]["file"], lines + ":3000");
  for (size_t k = 1; k < outputs.size(); ++k) EXPECT_EQ(outputs[k], outputs[0]) << "run " << k;
  EXPECT_EQ(RunCli({"parse", "builtin:json", good, "-j", "0"}).exit_code, 2);
}

// The transition memo (--memo-mb, on by default) changes no output: the
// same JSON lines with it, without it (--memo-mb 0) and with a budget so
// small that it empties itself over and over; the summary says what it served.
TEST(CliTest, ParseMemoChangesNoOutput) {
  std::string text;
  for (int i = 0; i < 400; ++i) {
    text += i % 5 == 2 ? "{\"k\": [" + std::to_string(i) + ", {\"s\": \"x\"}], \"t\": tru}\n"
                       : "{\"k\": [" + std::to_string(i) + ", {\"s\": \"x\"}], \"t\": true}\n";
  }
  std::string lines = WriteTemp("memo.jsonl", text);
  std::vector<std::string> outputs;
  for (const char* mb : {"0", "64", "1"}) {
    CliResult r = RunCli({"parse", "builtin:json", "--lines", lines, "--json", "-j", "1", "--memo-mb", mb});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(Contains(r.err, "400 documents: 320 accepted, 80 rejected, 0 errors")) << r.err;
    EXPECT_EQ(Contains(r.err, "memo: "), std::string(mb) != "0") << r.err;
    outputs.push_back(r.out);
  }
  EXPECT_EQ(outputs[1], outputs[0]);
  EXPECT_EQ(outputs[2], outputs[0]);
  EXPECT_EQ(RunCli({"parse", "builtin:json", lines, "--memo-mb", "x"}).exit_code, 2);
  EXPECT_EQ(RunCli({"parse", "builtin:json", lines, "--memo-mb"}).exit_code, 2);
}

// Files are streamed: the peak memory of parsing 2 MB and 10x that of the
// same shape differs by little (it once grew by ~135 bytes per input byte).
TEST(CliTest, ParseMemoryDoesNotGrowWithTheInput) {
  // Under ASan the process's RSS follows the allocator's quarantine, not the
  // parser's state (CompactTest.HeldEntriesStayBoundedOnLongFlatInput checks
  // the state there).
  if (zapgram::testing::kSanitized) GTEST_SKIP() << "peak RSS is not the parser's under the sanitizers";
  std::string element = "{\"id\": 12345, \"tags\": [\"a\", \"b\"], \"v\": {\"x\": 1.5e3, \"ok\": true}}";
  auto make = [&](size_t bytes) {
    std::string name = zapgram::testing::FreshTempPath("big.json");
    std::ofstream out(name, std::ios::binary);
    out << "[\n";
    size_t written = 2;
    for (size_t i = 0; written < bytes; ++i) {
      out << (i ? ",\n  " : "  ") << element;
      written += element.size() + 4;
    }
    out << "\n]\n";
    return name;
  };
  auto peak_mb = [&](const std::string& path) {
    CliResult r = RunCli({"parse", "builtin:json", path, "--summary", "-j", "1"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const size_t at = r.err.find("peak RSS ");
    EXPECT_NE(at, std::string::npos) << r.err;
    return at == std::string::npos ? 0L : std::stol(r.err.substr(at + 9));
  };
  const size_t small = size_t{2} << 20;
  const std::string a = make(small), b = make(10 * small);
  const long small_mb = peak_mb(a), big_mb = peak_mb(b);
  std::printf("parse peak RSS: %ld MB for 2 MiB, %ld MB for 20 MiB\n", small_mb, big_mb);
  EXPECT_LE(big_mb, small_mb + 20);
  std::filesystem::remove(a);
  std::filesystem::remove(b);
}

TEST(CliTest, ParseTakesInlineTexts) {
  std::string texts = WriteTemp("texts.jsonl", "\"[1, 2]\"\n\n{\"id\": \"x\", \"text\": \"[1,\"}\n7\n");
  CliResult r = RunCli({"parse", "builtin:json", "--texts", texts, "--json"});
  EXPECT_EQ(r.exit_code, 2) << r.err;  // line 4 holds no text: an error of that document
  std::vector<Json> lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0]["file"], texts + ":1");
  EXPECT_EQ(lines[0]["accepted"], true);
  EXPECT_EQ(lines[1]["file"], texts + ":3");
  EXPECT_EQ(lines[1]["accepted"], false);
  EXPECT_EQ(lines[1]["offset"], 3);
  EXPECT_EQ(lines[2]["file"], texts + ":4");
  EXPECT_TRUE(lines[2]["accepted"].is_null());
  EXPECT_TRUE(Contains(lines[2]["error"].get<std::string>(), "not a JSON string")) << r.out;
}

}  // namespace
