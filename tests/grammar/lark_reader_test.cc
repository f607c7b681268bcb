// Tests of the Lark syntax reader (grammar/lark_reader.cc) and zapgram's
// built-in `common` module (grammar/lark_common.cc):
//   - every construct, read and checked through DumpLark and the side tables;
//   - malformed inputs and refusals, each with its exact "source:line:col: message";
//   - hostile nesting (no crash, no C++ recursion);
//   - every .lark file under the shared data folder reads or is refused with
//     one of the documented refusals (counts printed by reason);
//   - a golden dump of SynCode's calc.lark.
#include "grammar/lark_reader.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "gtest/gtest.h"

#ifndef ZAPGRAM_DATA_DIR
#error "ZAPGRAM_DATA_DIR must name the shared data folder"
#endif

namespace zapgram::grammar {
namespace {

namespace fs = std::filesystem;

std::string DumpOf(std::string_view text, const LarkReadOptions& options = {}) {
  absl::StatusOr<LarkGrammar> g = ReadLark(text, "t.lark", options);
  if (!g.ok()) return "ERROR: " + std::string(g.status().message());
  return DumpLark(*g);
}

std::string ErrorOf(std::string_view text, const LarkReadOptions& options = {}) {
  absl::StatusOr<LarkGrammar> g = ReadLark(text, "t.lark", options);
  if (g.ok()) return "OK";
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(g.status().message());
}

TEST(LarkReaderTest, RulesFlagsPrioritiesAliases) {
  const std::string text =
      "// a comment\n"
      "start: a _b | c  # another comment\n"
      "    | \"x\" -> ex\n"
      "?a.2: B+ [c] (B | c)* _b -> alias_a\n"
      "_b: \n"
      "!c.-1: \"k\"i\n"
      "B.3: \"0\"..\"9\" ~ 2..3 /ab\\/c/is\n";
  absl::StatusOr<LarkGrammar> g = ReadLark(text, "t.lark");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(g->has_start);
  ASSERT_EQ(g->rules.size(), 4u);
  const LarkRule& start = g->rules[0];
  EXPECT_EQ(start.alternatives.size(), 3u);
  EXPECT_EQ(start.aliases, (std::vector<std::string>{"", "", "ex"}));
  const LarkRule& a = g->rules[1];
  EXPECT_TRUE(a.inline_children);
  EXPECT_TRUE(a.has_priority);
  EXPECT_EQ(a.priority, 2);
  EXPECT_EQ(a.aliases, (std::vector<std::string>{"alias_a"}));
  EXPECT_TRUE(g->rules[2].hidden);
  EXPECT_EQ(g->arena.exprs[g->arena.rules[g->rules[2].rule].body].kind, ExprKind::kEmpty);
  EXPECT_TRUE(g->rules[3].keep_all_tokens);
  EXPECT_EQ(g->rules[3].priority, -1);
  ASSERT_EQ(g->terminals.size(), 1u);
  EXPECT_EQ(g->terminals[0].priority, 3);
  EXPECT_EQ(g->istring_exprs.size(), 1u);
  const std::string dump = DumpLark(*g);
  EXPECT_NE(dump.find("/ab\\/c/is"), std::string::npos) << dump;
  EXPECT_NE(dump.find("[0-9]{2,3}"), std::string::npos) << dump;
  EXPECT_NE(dump.find("/k/i"), std::string::npos) << dump;
  EXPECT_NE(dump.find("rule a inline priority=2 alternatives=1 alias[0]=alias_a"), std::string::npos) << dump;
  EXPECT_NE(dump.find("rule c keep_all_tokens priority=-1"), std::string::npos) << dump;
  EXPECT_NE(dump.find("terminal B priority=3"), std::string::npos) << dump;
}

TEST(LarkReaderTest, FullDumpOfSmallGrammar) {
  EXPECT_EQ(DumpOf("start: x (\",\" x)* \n"
                   "  | \"a\"i\n"
                   "x: NAME | \"\"\n"
                   "NAME: /[a-z]+/ | _Q\n"
                   "_Q: \"q\\n\\x41\"\n"
                   "%ignore \" \"\n"
                   "%ignore WS\n"
                   "%import common.WS\n"
                   "%declare _INDENT\n"),
            "start ::= x (\",\" x)* | /a/i\n"
            "x ::= NAME | \"\"\n"
            "NAME ::= /[a-z]+/ | _Q\n"
            "_Q ::= \"q\\nA\"\n"
            "WS ::= /[ \\t\\f\\r\\n]/+\n"
            "_INDENT ::= \"\"\n"
            "rule start alternatives=2\n"
            "rule x alternatives=2\n"
            "terminal NAME\n"
            "terminal _Q hidden\n"
            "terminal WS imported\n"
            "terminal _INDENT hidden declared\n"
            "ignore \" \"\n"
            "ignore WS\n"
            "istring /a/i\n");
}

TEST(LarkReaderTest, ImportsFromCommon) {
  absl::StatusOr<LarkGrammar> g = ReadLark(
      "start: N S\n"
      "DIGIT: \"x\"\n"  // the user's DIGIT does not clash with common's
      "%import common (ESCAPED_STRING, DIGIT2)\n",
      "t.lark");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(), "t.lark:3:33: module 'common' has no terminal 'DIGIT2' in zapgram's built-in copy");
  EXPECT_EQ(DumpOf("start: N S D\n"
                   "DIGIT: \"x\"\n"
                   "%import common.SIGNED_INT -> N\n"
                   "%import common (ESCAPED_STRING, DIGIT)\n"
                   "S: ESCAPED_STRING\n"
                   "D: DIGIT\n"),
            "ERROR: t.lark:4:33: 'DIGIT' is already defined at 2:1");
  const std::string dump = DumpOf(
      "start: N S\n"
      "%import common.SIGNED_INT -> N\n"
      "%import common (ESCAPED_STRING, C_COMMENT)\n"
      "S: ESCAPED_STRING\n");
  EXPECT_NE(dump.find("N ::= (\"+\" | \"-\")? [0-9]+\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("ESCAPED_STRING ::= /\"(?:[^\"\\\\\\n]|\\\\.)*\"/\n"), std::string::npos) << dump;
  // Every terminal of the built-in module reads and imports.
  absl::StatusOr<LarkGrammar> common = ReadLark(LarkCommonText(), "<common>");
  ASSERT_TRUE(common.ok()) << common.status();
  std::string imports = "start: \"\"\n";
  for (const LarkTerminal& t : common->terminals) {
    imports += "%import common." + common->arena.rules[t.rule].name + "\n";
  }
  absl::StatusOr<LarkGrammar> all = ReadLark(imports, "t.lark");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->terminals.size(), common->terminals.size());
  for (const auto& name : {"DIGIT", "INT", "SIGNED_INT", "DECIMAL", "FLOAT", "NUMBER", "SIGNED_NUMBER",
                           "WORD", "LETTER", "LCASE_LETTER", "UCASE_LETTER", "CNAME", "WS", "WS_INLINE",
                           "NEWLINE", "CR", "LF", "ESCAPED_STRING", "SH_COMMENT", "CPP_COMMENT", "C_COMMENT",
                           "SQL_COMMENT", "HEXDIGIT"}) {
    EXPECT_GE(all->arena.FindRule(name), 0) << name;
  }
}

TEST(LarkReaderTest, Errors) {
  EXPECT_EQ(ErrorOf("start: a\n"), "t.lark:1:8: undefined rule 'a'");
  EXPECT_EQ(ErrorOf("start: \"a\"\nstart: \"b\"\n"), "t.lark:2:1: 'start' is already defined at 1:1");
  EXPECT_EQ(ErrorOf("start \"a\"\n"), "t.lark:1:7: expected ':' after 'start', found '\"'");
  EXPECT_EQ(ErrorOf("start: \"a\n"), "t.lark:1:8: unterminated string: expected '\"' before the end of the line");
  EXPECT_EQ(ErrorOf("start: /a\n"), "t.lark:1:8: unterminated regex: expected '/' before the end of the line");
  EXPECT_EQ(ErrorOf("start: (\"a\"\n"), "t.lark:2:1: expected ')' to close the '(' at 1:8");
  EXPECT_EQ(ErrorOf("start: \"a\")\n"), "t.lark:1:11: unexpected ')' with no open bracket");
  EXPECT_EQ(ErrorOf("start: (\"a\"]\n"), "t.lark:1:12: expected ')', found ']'");
  EXPECT_EQ(ErrorOf("start: * \"a\"\n"), "t.lark:1:8: '*' must follow an item");
  EXPECT_EQ(ErrorOf("start: \"a\"*?\n"), "t.lark:1:12: '?': only one operator may follow an item (use parentheses)");
  EXPECT_EQ(ErrorOf("start: \"a\" ~ x\n"), "t.lark:1:14: expected a number, found 'x'");
  EXPECT_EQ(ErrorOf("start: \"a\" ~ 3..2\n"), "t.lark:1:17: repetition bounds are reversed");
  EXPECT_EQ(ErrorOf("start: \"ab\"..\"z\"\n"), "t.lark:1:8: a range bound must be exactly one character");
  EXPECT_EQ(ErrorOf("start: \"z\"..\"a\"\n"), "t.lark:1:8: range bounds are reversed");
  EXPECT_EQ(ErrorOf("start: /a/q\n"), "t.lark:1:11: unknown regex flag 'q' (expected i, m, s, x or u)");
  EXPECT_EQ(ErrorOf("start: /a/l\n"),
            "t.lark:1:11: regex flag 'l' (LOCALE) is not supported: its meaning depends on the machine's "
            "locale and Python refuses it for str patterns");
  EXPECT_EQ(ErrorOf("start: \"a\" -> x y\n"), "t.lark:1:17: expected '|' or end of line after the alias, found 'y'");
  EXPECT_EQ(ErrorOf("start: (\"a\" -> x)\n"), "t.lark:1:13: an alias '->' may only end a rule's alternative");
  EXPECT_EQ(ErrorOf("A: \"a\" -> x\n"), "t.lark:1:8: aliases '->' are allowed in rules only");
  EXPECT_EQ(ErrorOf("A: b\nb: \"x\"\n"), "t.lark:1:4: a terminal cannot refer to the rule 'b'");
  EXPECT_EQ(ErrorOf("?A: \"a\"\n"), "t.lark:1:1: '?' and '!' apply to rules, not to the terminal 'A'");
  EXPECT_EQ(ErrorOf("start: A\nA: \"a\" B\nB: A\n"), "t.lark:2:1: terminal 'A' is recursive (terminals must be regular)");
  EXPECT_EQ(ErrorOf("start: A\n  A: \"a\"\n| \"b\"\n"), "OK");
  EXPECT_EQ(ErrorOf("start: \"a\"\n\n+ \"b\"\n"),
            "t.lark:3:1: expected a rule or terminal definition or a %directive, found '+'");
  EXPECT_EQ(ErrorOf("%ignore\n"), "t.lark:1:8: expected what to ignore after '%ignore'");
  EXPECT_EQ(ErrorOf("%declare\n"), "t.lark:1:9: expected at least one terminal name after '%declare'");
  EXPECT_EQ(ErrorOf("%declare x\n"), "t.lark:1:10: %declare takes terminal names; 'x' is not one");
  EXPECT_EQ(ErrorOf("%foo\n"), "t.lark:1:1: unknown directive '%foo' (expected %ignore, %import or %declare)");
  EXPECT_EQ(ErrorOf("%import common.WS extra\n"), "t.lark:1:19: expected end of line, found 'e'");
  EXPECT_EQ(ErrorOf("start: \"\\x4\"\n"), "t.lark:1:12: expected 2 hex digits after '\\x'");
  EXPECT_EQ(ErrorOf("start: \"a\"\n\xff\n"), "t.lark:2:1: invalid UTF-8");
  // Refusals.
  EXPECT_EQ(ErrorOf("_sep{x}: x (\",\" x)*\n"),
            "t.lark:1:5: template definition '_sep{...}': Lark templates are not supported");
  EXPECT_EQ(ErrorOf("start: _sep{\"a\"}\n"), "t.lark:1:12: template use '_sep{...}': Lark templates are not supported");
  EXPECT_EQ(ErrorOf("%import .other.x\n"),
            "t.lark:1:9: relative %import is not supported (zapgram builds in only the 'common' module)");
  EXPECT_EQ(ErrorOf("%import python (NAME)\n"),
            "t.lark:1:9: %import from module 'python' is not supported (zapgram builds in only 'common')");
  EXPECT_EQ(ErrorOf("%override start: \"a\"\n"),
            "t.lark:1:1: %override is not supported (it needs imported grammars to modify)");
  EXPECT_EQ(ErrorOf("%extend start: \"a\"\n"),
            "t.lark:1:1: %extend is not supported (it needs imported grammars to modify)");
}

TEST(LarkReaderTest, HostileNestingNeverRecurses) {
  const std::string deep = "start: " + std::string(200000, '(') + "\"a\"" + std::string(200000, ')') + "\n";
  EXPECT_EQ(ErrorOf(deep), "t.lark:1:10007: nesting deeper than 10000");
  LarkReadOptions wide;
  wide.max_nesting = 300000;
  EXPECT_EQ(ErrorOf(deep, wide), "OK");
  const std::string unclosed = "start: " + std::string(5000, '[');
  EXPECT_EQ(ErrorOf(unclosed), "t.lark:1:5008: expected ']' to close the '[' at 1:5007");
}

TEST(LarkReaderTest, SyncodeCalcGolden) {
  const fs::path path = fs::path(ZAPGRAM_DATA_DIR) / "grammars/lark/syncode/calc.lark";
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(DumpOf(ss.str()),
            "start ::= expr\n"
            "expr ::= term | expr \"+\" term | expr \"-\" term\n"
            "term ::= factor | term \"*\" factor | term \"/\" factor\n"
            "factor ::= NUMBER | \"(\" expr \")\"\n"
            // NUMBER: FLOAT | INT from common, FLOAT and INT inlined (the choice nests).
            "NUMBER ::= ([0-9]+ (\"e\" | \"E\") (\"+\" | \"-\")? [0-9]+ | ([0-9]+ \".\" ([0-9]+)? | \".\" [0-9]+) "
            "((\"e\" | \"E\") (\"+\" | \"-\")? [0-9]+)?) | [0-9]+\n"
            "WS ::= /[ \\t\\f\\r\\n]/+\n"
            "rule start alternatives=1\n"
            "rule expr inline alternatives=3 alias[1]=add alias[2]=subtract\n"
            "rule term inline alternatives=3 alias[1]=multiply alias[2]=divide\n"
            "rule factor inline alternatives=2 alias[0]=number\n"
            "terminal NUMBER imported\n"
            "terminal WS imported\n"
            "ignore WS\n");
}

// Every .lark file in the shared data reads, or is refused for a documented reason.
TEST(LarkReaderTest, SharedDataGrammars) {
  const fs::path root = fs::path(ZAPGRAM_DATA_DIR) / "grammars/lark";
  ASSERT_TRUE(fs::is_directory(root)) << root;
  const std::vector<std::string> refusals = {
      "Lark templates are not supported", "relative %import is not supported",
      "is not supported (zapgram builds in only 'common')", "%override is not supported",
      "%extend is not supported", "regex flag 'l' (LOCALE) is not supported",
  };
  std::map<std::string, int> by_reason;
  int read = 0, total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".lark") continue;
    ++total;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string name = fs::relative(entry.path(), root).string();
    absl::StatusOr<LarkGrammar> g = ReadLark(ss.str(), name);
    if (g.ok()) {
      ++read;
      continue;
    }
    const std::string message(g.status().message());
    std::string reason;
    for (const auto& r : refusals) {
      if (message.find(r) != std::string::npos) reason = r;
    }
    EXPECT_FALSE(reason.empty()) << "unexpected error: " << message;
    by_reason[reason.empty() ? message : reason] += 1;
    std::cout << "refused " << message << "\n";
  }
  std::cout << "lark grammars: " << total << " files, " << read << " read\n";
  for (const auto& [reason, count] : by_reason) std::cout << "  refused " << count << ": " << reason << "\n";
  EXPECT_GE(total, 60);
  for (const char* must_read : {"syncode/java.lark", "syncode/go.lark", "syncode/sql.lark", "syncode/json.lark",
                                "syncode/calc.lark", "syncode/c.lark"}) {
    std::ifstream in(root / must_read, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    absl::StatusOr<LarkGrammar> g = ReadLark(ss.str(), must_read);
    EXPECT_TRUE(g.ok()) << g.status();
  }
}

}  // namespace
}  // namespace zapgram::grammar
