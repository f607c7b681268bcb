// Tests of the Lark reader (grammar/lark_reader.cc) and zapgram's built-in
// `common` module (grammar/lark_common.cc):
//   - every construct, read and checked through DumpLark and the side tables;
//   - malformed inputs and refusals, each with its exact "source:line:col: message";
//   - hostile nesting (no crash, no C++ recursion), also of template uses;
//   - templates: instances per argument tuple, nesting, literal and
//     expression arguments, errors, the instance and expression budgets;
//   - imports through an in-memory loader (namespacing, `->`, grouping,
//     nested and absolute modules, cycles, missing modules and names) and
//     through ReadLarkFile on the fixtures in tests/testdata/lark/;
//   - %override and %extend;
//   - every .lark file under the shared data folder, read as a file (the
//     count read and the exact message of each refusal);
//   - a golden dump of SynCode's calc.lark.
#include "grammar/lark_reader.h"
#include "grammar/lark_lowering.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grammar/grammar.h"
#include "gtest/gtest.h"

#ifndef ZAPGRAM_DATA_DIR
#error "ZAPGRAM_DATA_DIR must name the shared data folder"
#endif
#ifndef ZAPGRAM_SOURCE_DIR
#error "ZAPGRAM_SOURCE_DIR must name the project root"
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
            // Lark reads imports before definitions: the local DIGIT comes second.
            "ERROR: t.lark:2:1: 'DIGIT' is already defined at 4:33 (by %import)");
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

// XGrammar's rule attributes on Lark rules (grammar/rule_attributes.h):
// the EBNF forms' meaning, through the lowering onto the rules.
TEST(LarkRuleAttributes, CaptureAndTemperatureReachTheRules) {
  absl::StatusOr<Grammar> g = ReadLarkGrammar(
      "start: a b\na[capture]: \"x\"\nb [ capture=\"bee\", temperature=0.5 ]: c\nc: /[0-9]+/\n", "t.lark");
  ASSERT_TRUE(g.ok()) << g.status();
  std::map<std::string, std::pair<std::string, float>> attributes;
  for (const Rule& r : g->rules) attributes[r.name] = {r.capture, r.temperature};
  EXPECT_EQ(attributes["a"], std::make_pair(std::string("a"), -1.0f));
  EXPECT_EQ(attributes["b"], std::make_pair(std::string("bee"), 0.5f));
  EXPECT_EQ(attributes["c"], std::make_pair(std::string(), -1.0f));
  EXPECT_EQ(attributes["start"], std::make_pair(std::string(), -1.0f));
  // Priorities and flags still go with them.
  EXPECT_EQ(ErrorOf("start: a\n?a[capture].2: \"x\"\n"), "OK");
}

TEST(LarkRuleAttributes, RefusalsNameThePlace) {
  EXPECT_EQ(ErrorOf("start: A\nA[capture]: \"x\"\n"),
            "t.lark:2:2: rule attributes apply to rules, not to the terminal 'A'");
  // XGrammar's Lark form; under the default dialect choice `lazy`, `stop`
  // and `max_tokens` select llguidance's dialect (tests/grammar/lark_llguidance_test.cc).
  LarkReadOptions lark;
  lark.dialect = LarkDialect::kLark;
  EXPECT_EQ(ErrorOf("start: a\na[lazy]: \"x\"\n"), "OK");
  EXPECT_EQ(ErrorOf("start: a\na[lazy]: \"x\"\n", lark),
            "t.lark:2:3: rule attribute 'lazy' is not supported in a Lark grammar (rule 'a'): its rules match "
            "whole tokens of the lexer, and zapgram makes only byte-level regular rules lazy (write it in EBNF)");
  EXPECT_EQ(ErrorOf("start: a\na[max_tokens=3]: \"x\"\n", lark),
            "t.lark:2:3: rule attribute 'max_tokens' is not supported: a budget per occurrence of a rule, which "
            "XGrammar relaxes when the rule cannot end where it runs out, is not a language zapgram can mask "
            "exactly (rule 'a')");
  EXPECT_EQ(ErrorOf("start: a\na[stop=\"!\"]: \"x\"\n", lark),
            "t.lark:2:3: rule attribute 'stop' is not supported (XGrammar's lazy rules that end at a marker) "
            "(rule 'a')");
  EXPECT_EQ(ErrorOf("start: a\na[capture: \"x\"\n"), "t.lark:2:2: unterminated rule attributes of 'a' (expected ']')");
  EXPECT_EQ(ErrorOf("start: a\na[bogus]: \"x\"\n"), "t.lark:2:3: unknown rule attribute 'bogus' (rule 'a')");
  EXPECT_EQ(ErrorOf("start: t{a}\nt[capture]{x}: x\na: \"x\"\n"),
            "t.lark:2:2: rule attributes on the template 't' are not supported");
  EXPECT_EQ(ErrorOf("start: a\na: \"x\"\n%extend a[capture]: \"y\"\n"),
            "t.lark:3:9: %extend cannot give the rule 'a' rule attributes; put them on its definition");
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
  EXPECT_EQ(ErrorOf("%foo\n"),
            "t.lark:1:1: unknown directive '%foo' (expected %ignore, %import, %declare, %override, %extend or "
            "llguidance's %llguidance)");
  EXPECT_EQ(ErrorOf("%import common.WS extra\n"), "t.lark:1:19: expected end of line, found 'e'");
  EXPECT_EQ(ErrorOf("start: \"\\x4\"\n"), "t.lark:1:12: expected 2 hex digits after '\\x'");
  EXPECT_EQ(ErrorOf("start: \"a\"\n\xff\n"), "t.lark:2:1: invalid UTF-8");
}

TEST(LarkReaderTest, HostileNestingNeverRecurses) {
  const std::string deep = "start: " + std::string(200000, '(') + "\"a\"" + std::string(200000, ')') + "\n";
  EXPECT_EQ(ErrorOf(deep), "t.lark:1:10007: nesting deeper than 10000 (max_nesting)");
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

// An in-memory file tree for imports: paths as the reader builds them.
struct FakeFiles {
  std::map<std::string, std::string> files;
  std::vector<std::string> loaded;
  LarkReadOptions Options(std::string base_dir = "g") {
    LarkReadOptions options;
    options.base_dir = std::move(base_dir);
    options.loader = [this](std::string_view path) -> absl::StatusOr<std::string> {
      loaded.emplace_back(path);
      auto it = files.find(std::string(path));
      if (it == files.end()) return absl::NotFoundError(absl::StrCat("no file '", std::string(path), "'"));
      return it->second;
    };
    return options;
  }
};

std::string DumpWith(std::string_view text, const LarkReadOptions& options) {
  absl::StatusOr<LarkGrammar> g = ReadLark(text, "g/t.lark", options);
  if (!g.ok()) return "ERROR: " + std::string(g.status().message());
  return DumpLark(*g);
}

TEST(LarkReaderTest, TemplatesExpandToOneRulePerArgumentTuple) {
  absl::StatusOr<LarkGrammar> g = ReadLark(
      "start: _sep{item, \",\"} \";\" _sep{item, \",\"} _sep{NAME, /;+/i}\n"
      "_sep{x, sep}: x (sep x)*  // Lark's example\n"
      "item: NAME\n"
      "NAME: /[a-z]+/\n",
      "t.lark");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(DumpLark(*g),
            "start ::= _sep{item,\",\"} \";\" _sep{item,\",\"} _sep{NAME,/;+/i}\n"
            "item ::= NAME\n"
            "NAME ::= /[a-z]+/\n"
            "_sep{item,\",\"} ::= item (\",\" item)*\n"
            "_sep{NAME,/;+/i} ::= NAME (/;+/i NAME)*\n"
            "rule start alternatives=1\n"
            "rule item alternatives=1\n"
            "rule _sep{item,\",\"} hidden alternatives=1\n"
            "rule _sep{NAME,/;+/i} hidden alternatives=1\n"
            "terminal NAME\n");
  // The template itself is gone; each instance is an ordinary rule.
  EXPECT_LT(g->arena.FindRule("_sep"), 0);
  EXPECT_EQ(g->rules.size(), 4u);
  // Arguments copied into instances keep their kind: an /x/i regex stays a
  // regex, a "x"i string stays listed as an istring in every copy.
  EXPECT_EQ(DumpOf("start: t{\"k\"i}\n"
                   "t{a}: a a\n"),
            "start ::= t{/k/i}\n"
            "t{/k/i} ::= /k/i /k/i\n"
            "rule start alternatives=1\n"
            "rule t{/k/i} alternatives=1\n"
            "istring /k/i\n"
            "istring /k/i\n");
}

TEST(LarkReaderTest, NestedTemplatesLiteralAndExpressionArguments) {
  // A template calling templates with its own parameter, flags and aliases
  // carried into instances, arguments that are literals, ranges and groups.
  EXPECT_EQ(DumpOf("start: list{\"a\"..\"c\"} pair{(\"x\" | \"y\")+, \"=\"}\n"
                   "?list{item}: \"[\" _sep{item, \",\"} \"]\" -> brackets\n"
                   "    | \"()\"\n"
                   "_sep{x, sep}: x (sep x)*\n"
                   "!pair{k, s}: k s list{k}\n"),
            "start ::= list{[a-c]} pair{(\"x\" | \"y\")+,\"=\"}\n"
            "list{[a-c]} ::= \"[\" _sep{[a-c],\",\"} \"]\" | \"()\"\n"
            "pair{(\"x\" | \"y\")+,\"=\"} ::= (\"x\" | \"y\")+ \"=\" list{(\"x\" | \"y\")+}\n"
            "_sep{[a-c],\",\"} ::= [a-c] (\",\" [a-c])*\n"
            "list{(\"x\" | \"y\")+} ::= \"[\" _sep{(\"x\" | \"y\")+,\",\"} \"]\" | \"()\"\n"
            "_sep{(\"x\" | \"y\")+,\",\"} ::= (\"x\" | \"y\")+ (\",\" (\"x\" | \"y\")+)*\n"
            "rule start alternatives=1\n"
            "rule list{[a-c]} inline alternatives=2 alias[0]=brackets\n"
            "rule pair{(\"x\" | \"y\")+,\"=\"} keep_all_tokens alternatives=1\n"
            "rule _sep{[a-c],\",\"} hidden alternatives=1\n"
            "rule list{(\"x\" | \"y\")+} inline alternatives=2 alias[0]=brackets\n"
            "rule _sep{(\"x\" | \"y\")+,\",\"} hidden alternatives=1\n");
  // A recursive template with constant arguments is one recursive rule.
  EXPECT_EQ(DumpOf("start: nest{\"(\"}\n"
                   "nest{o}: o nest{o} \")\" | \"x\"\n"),
            "start ::= nest{\"(\"}\n"
            "nest{\"(\"} ::= \"(\" nest{\"(\"} \")\" | \"x\"\n"
            "rule start alternatives=1\n"
            "rule nest{\"(\"} alternatives=2\n");
}

TEST(LarkReaderTest, TemplateErrorsAndBudgets) {
  EXPECT_EQ(ErrorOf("start: t{\"a\"}\nt{x, y}: x y\n"), "t.lark:1:8: the template 't' takes 2 arguments, got 1");
  EXPECT_EQ(ErrorOf("start: r{\"a\"}\nr: \"b\"\n"),
            "t.lark:1:8: 'r' is used with arguments '{...}' but is not a template");
  EXPECT_EQ(ErrorOf("start: t\nt{x}: x\n"), "t.lark:1:8: the template 't' is used without arguments '{...}'");
  EXPECT_EQ(ErrorOf("start: t{\"a\"}\n"), "t.lark:1:8: undefined rule 't'");
  EXPECT_EQ(ErrorOf("start: t{\"a\"}\nt{x}: x\nx: \"b\"\n"),
            "t.lark:2:1: the template parameter 'x' of 't' has the name of the rule defined at 3:1");
  EXPECT_EQ(ErrorOf("t{x, x}: x\n"), "t.lark:1:6: duplicate template parameter 'x'");
  EXPECT_EQ(ErrorOf("t{X}: \"a\"\n"), "t.lark:1:3: a template parameter must be a rule name, not 'X'");
  EXPECT_EQ(ErrorOf("t{x y}: x\n"), "t.lark:1:5: expected ',' or '}', found 'y'");
  EXPECT_EQ(ErrorOf("t{}: \"a\"\n"), "t.lark:1:3: expected a template parameter, found '}'");
  EXPECT_EQ(ErrorOf("%import common (WS INT)\n"), "t.lark:1:20: expected ',' or ')', found 'I'");
  EXPECT_EQ(ErrorOf("T{x}: \"a\"\n"), "t.lark:1:2: 'T{...}': templates are rules; Lark has no terminal templates");
  EXPECT_EQ(ErrorOf("t{x}: x{\"a\"}\n"),
            "t.lark:1:7: the template parameter 'x' is used as a template; zapgram does not support templates "
            "passed as arguments");
  EXPECT_EQ(ErrorOf("A: t{\"a\"}\n"), "t.lark:1:4: template use 't{...}': templates are rules, usable in rules only");
  EXPECT_EQ(ErrorOf("start: t{}\nt{x}: x\n"), "t.lark:1:10: expected a template argument before '}'");
  EXPECT_EQ(ErrorOf("start: t{\"a\",}\nt{x}: x\n"), "t.lark:1:14: expected a template argument before '}'");
  EXPECT_EQ(ErrorOf("start: t{\"a\"\n"), "t.lark:2:1: expected '}' to close the '{' at 1:9");
  EXPECT_EQ(ErrorOf("start: (\"a\", \"b\")\n"), "t.lark:1:12: expected ')', found ','");
  EXPECT_EQ(ErrorOf("start: \"a\", \"b\"\n"), "t.lark:1:11: unexpected ',' outside template arguments");
  EXPECT_EQ(ErrorOf("start: \"a\" }\n"), "t.lark:1:12: unexpected '}' with no open '{'");
  // A template that instantiates itself with growing arguments stops at a budget.
  const std::string growing = "start: g{\"a\"}\ng{x}: x | g{(x x)}\n";
  // Its instance names double at each step: the name budget stops it first.
  EXPECT_EQ(ErrorOf(growing),
            "t.lark:2:11: template expansion exceeds its budget of 1048576 bytes of instance names "
            "(LarkReadOptions::max_template_name_bytes) at 'g{...}'; are template uses nested too deeply?");
  LarkReadOptions small;
  small.max_template_exprs = 100;
  EXPECT_EQ(ErrorOf(growing, small),
            "t.lark:2:11: template expansion exceeds its budget of 100 expression nodes "
            "(LarkReadOptions::max_template_exprs); does a template instantiate itself with growing arguments?");
  LarkReadOptions few;
  few.max_template_instances = 5;
  EXPECT_EQ(ErrorOf(growing, few),
            "t.lark:2:11: template expansion exceeds its budget of 5 instances "
            "(LarkReadOptions::max_template_instances) at 'g{...}'; does a template instantiate itself with "
            "growing arguments?");
  const std::string wide = "start: g{\"a\"}\ng{x}: x | g{(x | \"b\")}\n";
  EXPECT_EQ(ErrorOf(wide, few),
            "t.lark:2:11: template expansion exceeds its budget of 5 instances "
            "(LarkReadOptions::max_template_instances) at 'g{...}'; does a template instantiate itself with "
            "growing arguments?");
  // Nested uses: instance names hold their arguments' dumps, so they grow
  // with the depth and have their own budget.
  std::string nested = "start: ";
  for (int i = 0; i < 2000; ++i) nested += "t{";
  nested += "\"a\"" + std::string(2000, '}') + "\nt{x}: x\n";
  EXPECT_EQ(ErrorOf(nested),
            "t.lark:1:2338: template expansion exceeds its budget of 1048576 bytes of instance names "
            "(LarkReadOptions::max_template_name_bytes) at 't{...}'; are template uses nested too deeply?");
  LarkReadOptions roomy;
  roomy.max_template_name_bytes = 1u << 23;
  absl::StatusOr<LarkGrammar> g = ReadLark(nested, "t.lark", roomy);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->rules.size(), 2001u);
  // Deeply nested arguments and uses never recurse on the C++ stack.
  std::string deep = "start: " + std::string(20000, '(') + "t{";
  for (int i = 0; i < 20000; ++i) deep += "t{";
  deep += "\"a\"" + std::string(20001, '}') + std::string(20000, ')') + "\nt{x}: x\n";
  EXPECT_EQ(ErrorOf(deep), "t.lark:1:10007: nesting deeper than 10000 (max_nesting)");
  roomy.max_nesting = 100000;
  EXPECT_EQ(ErrorOf(deep, roomy),
            "t.lark:1:55282: template expansion exceeds its budget of 8388608 bytes of instance names "
            "(LarkReadOptions::max_template_name_bytes) at 't{...}'; are template uses nested too deeply?");
  std::string deep_arg = "start: t{" + std::string(200000, '(') + "\"a\"" + std::string(200000, ')') + "}\n"
                         "t{x}: x x\n";
  roomy.max_nesting = 300000;
  g = ReadLark(deep_arg, "t.lark", roomy);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->rules.size(), 2u);
}

TEST(LarkReaderTest, ImportsNamespaceDependencies) {
  FakeFiles fs;
  fs.files["g/lib/ab.lark"] =
      "startab: expr\n"
      "expr: A B | A expr B | _inner\n"
      "_inner: C\n"
      "A: \"a\"\n"
      "B: \"b\"\n"
      "C: B \"c\" B\n"
      "UNUSED: \"u\"\n"
      "%ignore \" \"\n";
  // `expr` keeps its name, its dependencies are renamed into lib.ab's
  // namespace (`_` stays in front), C's reference to B is inlined, the
  // module's %ignore and unused definitions are not copied.
  EXPECT_EQ(DumpWith("start: X expr\n"
                     "X: \"x\"\n"
                     "A: \"mine\"\n"
                     "%import .lib.ab.expr\n",
                     fs.Options()),
            "start ::= X expr\n"
            "X ::= \"x\"\n"
            "expr ::= lib__ab__A lib__ab__B | lib__ab__A expr lib__ab__B | _lib__ab__inner\n"
            "A ::= \"mine\"\n"
            "lib__ab__A ::= \"a\"\n"
            "lib__ab__B ::= \"b\"\n"
            "_lib__ab__inner ::= lib__ab__C\n"
            "lib__ab__C ::= \"b\" \"c\" \"b\"\n"
            // Definition order; dependencies last.
            "rule start alternatives=1\n"
            "rule expr alternatives=3\n"
            "rule _lib__ab__inner hidden alternatives=1\n"
            "terminal X\n"
            "terminal A\n"
            "terminal lib__ab__A imported\n"
            "terminal lib__ab__B imported\n"
            "terminal lib__ab__C imported\n");
  EXPECT_EQ(fs.loaded, (std::vector<std::string>{"g/lib/ab.lark"}));
  // A byte order mark does not hide an %import on the first line.
  EXPECT_EQ(DumpWith("\xEF\xBB\xBF%import .lib.ab.B\nstart: B\n", fs.Options()),
            "start ::= B\nB ::= \"b\"\nrule start alternatives=1\nterminal B imported\n");
  // `-> alias`, and several names from one module: the module is read once
  // and shared dependencies are copied once.
  fs.loaded.clear();
  EXPECT_EQ(DumpWith("start: ab startab\n"
                     "%import .lib.ab.expr -> ab\n"
                     "%import .lib.ab (startab, A)\n",
                     fs.Options()),
            "start ::= ab startab\n"
            "ab ::= A lib__ab__B | A ab lib__ab__B | _lib__ab__inner\n"
            "startab ::= ab\n"
            "A ::= \"a\"\n"
            "lib__ab__B ::= \"b\"\n"
            "_lib__ab__inner ::= lib__ab__C\n"
            "lib__ab__C ::= \"b\" \"c\" \"b\"\n"
            "rule start alternatives=1\n"
            "rule ab alternatives=3\n"
            "rule startab alternatives=1\n"
            "rule _lib__ab__inner hidden alternatives=1\n"
            "terminal A imported\n"
            "terminal lib__ab__B imported\n"
            "terminal lib__ab__C imported\n");
  EXPECT_EQ(fs.loaded, (std::vector<std::string>{"g/lib/ab.lark"}));
  // Nested imports: the inner module's names get both prefixes, relative
  // imports inside lib/ are relative to lib/.
  fs.files["g/lib/outer.lark"] = "o: inner__x\n%import .inner.i -> inner__x\n";
  fs.files["g/lib/inner.lark"] = "i: j\nj: \"j\"\n";
  EXPECT_EQ(DumpWith("start: o\n%import .lib.outer.o\n", fs.Options()),
            "start ::= o\n"
            "o ::= lib__outer__inner__x\n"
            "lib__outer__inner__x ::= lib__outer__inner__j\n"
            "lib__outer__inner__j ::= \"j\"\n"
            "rule start alternatives=1\n"
            "rule o alternatives=1\n"
            "rule lib__outer__inner__x alternatives=1\n"
            "rule lib__outer__inner__j alternatives=1\n");
  // Absolute module paths: the grammar's folder, then Lark's grammars folder.
  fs.files["g/mine.lark"] = "M: \"m\"\n";
  fs.files["lark/grammars/python.lark"] = "NAME: /[a-z]+/\n";
  LarkReadOptions with_lark = fs.Options();
  with_lark.lark_grammars_dir = "lark/grammars";
  EXPECT_EQ(DumpWith("start: M NAME\n%import mine.M\n%import python (NAME)\n", with_lark),
            "start ::= M NAME\n"
            "M ::= \"m\"\n"
            "NAME ::= /[a-z]+/\n"
            "rule start alternatives=1\n"
            "terminal M imported\n"
            "terminal NAME imported\n");
  EXPECT_EQ(DumpWith("start: NAME\n%import python (NAME)\n", fs.Options()),
            "ERROR: g/t.lark:2:9: cannot find module 'python' (tried 'g/python.lark') (set "
            "LarkReadOptions::lark_grammars_dir to Lark's lark/grammars folder for its modules)");
  // An imported template: its instances are made in the importing grammar.
  fs.files["g/t2.lark"] = "sep{item, delim}: item (delim item)*\n";
  EXPECT_EQ(DumpWith("start: sep{N, \",\"}\nN: \"1\"\n%import .t2.sep\n", fs.Options()),
            "start ::= sep{N,\",\"}\n"
            "N ::= \"1\"\n"
            "sep{N,\",\"} ::= N (\",\" N)*\n"
            "rule start alternatives=1\n"
            "rule sep{N,\",\"} alternatives=1\n"
            "terminal N\n");
}

TEST(LarkReaderTest, ImportErrors) {
  FakeFiles fs;
  fs.files["g/a.lark"] = "start: b\n%import .b.b\n";
  fs.files["g/b.lark"] = "b: \"b\" c\n%import .a.start -> c\n";
  fs.files["g/bad.lark"] = "x: y\nz: \"z\"\nQ: \"q\"\n";
  fs.files["g/rec.lark"] = "r: R\nR: \"r\" S\nS: R\n";
  EXPECT_EQ(DumpWith("start: c\n%import .missing.c\n", fs.Options()),
            "ERROR: g/t.lark:2:9: cannot find module '.missing' (tried 'g/missing.lark')");
  EXPECT_EQ(DumpWith("start: c\n%import .bad.c\n", fs.Options()),
            "ERROR: g/t.lark:2:14: module '.bad' (g/bad.lark) defines no rule or terminal 'c'");
  // Only what the import needs must be defined (Lark's rule): z imports, x does not.
  EXPECT_EQ(DumpWith("start: z\n%import .bad.z\n", fs.Options()).substr(0, 13), "start ::= z\nz");
  EXPECT_EQ(DumpWith("start: x\n%import .bad.x\n", fs.Options()),
            "ERROR: g/bad.lark:1:4: undefined rule 'y'; in module '.bad' imported at g/t.lark:2:9");
  EXPECT_EQ(DumpWith("start: r\n%import .rec.r\n", fs.Options()),
            "ERROR: g/rec.lark:2:1: terminal 'R' is recursive (terminals must be regular); in module '.rec' "
            "imported at g/t.lark:2:9");
  EXPECT_EQ(DumpWith("start: q\n%import .bad.Q -> q\n", fs.Options()),
            "ERROR: g/t.lark:2:14: the terminal 'Q' must be imported under a terminal name, not 'q'");
  EXPECT_EQ(DumpWith("start: z\nz: \"mine\"\n%import .bad.z\n", fs.Options()),
            "ERROR: g/t.lark:2:1: 'z' is already defined at 3:14 (by %import)");
  EXPECT_EQ(DumpWith("start: z bad__Q\nbad__Q: \"q\"\n%import .bad.z\n%import .bad.Q -> R\n"
                     "%import .bad.x -> w\n",
                     fs.Options()),
            "ERROR: g/bad.lark:1:4: undefined rule 'y'; in module '.bad' imported at g/t.lark:3:9");
  fs.files["g/dep.lark"] = "d: E\nE: \"e\"\n";
  EXPECT_EQ(DumpWith("start: d\ndep__E: \"x\"\n%import .dep.d\n", fs.Options()),
            "ERROR: g/t.lark:2:1: 'dep__E' is already defined at 3:9 (by %import)");
  // Two modules whose renamed names meet.
  fs.files["g/dep2.lark"] = "d2: dep__E\ndep__E: \"f\"\n";
  EXPECT_EQ(DumpWith("start: d d2\n%import .dep.d\n%import .dep2.d2 -> d2\n%import .dep2.dep__E -> dep__E\n",
                     fs.Options()),
            "ERROR: g/t.lark:4:15: 'dep__E' is already defined at 2:9 (by %import)");
  fs.files["g/dep3.lark"] = "d3: E\nE: \"g\"\n%import .dep.d -> dep3__d\n";
  EXPECT_EQ(DumpWith("start: d d3\n%import .dep.d\n%import .dep3.d3\n", fs.Options()),
            "start ::= d d3\n"
            "d ::= dep__E\n"
            "d3 ::= dep3__E\n"
            "dep__E ::= \"e\"\n"
            "dep3__E ::= \"g\"\n"
            "rule start alternatives=1\n"
            "rule d alternatives=1\n"
            "rule d3 alternatives=1\n"
            "terminal dep__E imported\n"
            "terminal dep3__E imported\n");
  // A renamed dependency keeps its kind (Lark's rule), whatever its new name looks like.
  EXPECT_EQ(DumpWith("start: d\n%import .dep.d\n%extend dep__E: \"z\"\n", fs.Options()),
            "ERROR: g/t.lark:3:9: 'dep__E' is the imported terminal defined at 2:9; it cannot be modified as "
            "a rule");
  // A cycle: t -> a -> b -> a.
  EXPECT_EQ(DumpWith("start: b\n%import .a.b\n", fs.Options()),
            "ERROR: g/b.lark:2:9: import cycle: g/t.lark -> g/a.lark -> g/b.lark -> g/a.lark; in module '.b' "
            "imported at g/a.lark:2:9; in module '.a' imported at g/t.lark:2:9");
  fs.files["g/self.lark"] = "s: \"s\"\n%import .self.s -> t\n";
  EXPECT_EQ(DumpWith("start: s\n%import .self.s\n", fs.Options()),
            "ERROR: g/self.lark:2:9: import cycle: g/t.lark -> g/self.lark -> g/self.lark; in module '.self' "
            "imported at g/t.lark:2:9");
  LarkReadOptions shallow = fs.Options();
  shallow.max_import_depth = 1;
  EXPECT_EQ(DumpWith("start: d\n%import .dep.d\n", shallow),
            "ERROR: g/t.lark:2:9: imports nested deeper than 1 (LarkReadOptions::max_import_depth)");
  // Without a loader only `common` can be imported.
  EXPECT_EQ(ErrorOf("%import .other.x\n"),
            "t.lark:1:9: cannot import module '.other': no file loader (use ReadLarkFile, or set "
            "LarkReadOptions::loader; zapgram builds in only 'common')");
  EXPECT_EQ(ErrorOf("%import python (NAME)\n"),
            "t.lark:1:9: cannot import module 'python': no file loader (use ReadLarkFile, or set "
            "LarkReadOptions::loader; zapgram builds in only 'common')");
  EXPECT_EQ(ErrorOf("%import common\n"), "t.lark:1:9: expected 'module.NAME' or 'module (NAME, ...)' after '%import'");
  // A loader failure other than "not found" stops the search.
  LarkReadOptions broken;
  broken.loader = [](std::string_view) -> absl::StatusOr<std::string> {
    return absl::PermissionDeniedError("no access");
  };
  absl::StatusOr<LarkGrammar> g = ReadLark("%import .x.y\n", "t.lark", broken);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(g.status().message(), "t.lark:1:9: cannot import module '.x': no access");
}

TEST(LarkReaderTest, OverrideAndExtend) {
  FakeFiles fs;
  fs.files["g/base.lark"] = "value: NUMBER | \"null\" -> null\nNUMBER: /[0-9]+/\nlist: \"[\" value* \"]\"\n";
  // %extend puts the new alternatives first (Lark inserts them at 0); the
  // imported rule's dependency `list` sees the extension too.
  EXPECT_EQ(DumpWith("start: value\n"
                     "%import .base (value, NUMBER)\n"
                     "%extend value: \"true\" -> t | \"false\"\n"
                     "%override NUMBER.2: /[0-9]+(\\.[0-9]+)?/\n"
                     "%extend NUMBER: \"inf\"\n",
                     fs.Options()),
            "start ::= value\n"
            "value ::= \"true\" | \"false\" | NUMBER | \"null\"\n"
            "NUMBER ::= \"inf\" | /[0-9]+(\\.[0-9]+)?/\n"
            "rule start alternatives=1\n"
            "rule value alternatives=4 alias[0]=t alias[3]=null\n"
            "terminal NUMBER priority=2\n");
  // Local definitions can be modified after they appear; an override
  // replaces flags, priority and template parameters as well.
  EXPECT_EQ(DumpOf("start: a b{\"x\"}\n"
                   "?a: \"a\"\n"
                   "b{x}: x\n"
                   "%override !a.3: \"A\" | \"AA\"\n"
                   "%extend b{x}: x x\n"
                   "%declare T\n"
                   "%override T: \"t\"\n"),
            "start ::= a b{\"x\"}\n"
            "a ::= \"A\" | \"AA\"\n"
            "T ::= \"t\"\n"
            "b{\"x\"} ::= \"x\" \"x\" | \"x\"\n"
            "rule start alternatives=1\n"
            "rule a keep_all_tokens priority=3 alternatives=2\n"
            "rule b{\"x\"} alternatives=2\n"
            "terminal T\n");
  // The importer can replace a dependency under its renamed name.
  fs.files["g/pair.lark"] = "pair: key \"=\" key\nkey: /[a-z]+/\n";
  EXPECT_EQ(DumpWith("start: pair\n%import .pair.pair\n%override pair__key: \"k\"\n", fs.Options()),
            "start ::= pair\n"
            "pair ::= pair__key \"=\" pair__key\n"
            "pair__key ::= \"k\"\n"
            "rule start alternatives=1\n"
            "rule pair alternatives=1\n"
            "rule pair__key alternatives=1\n");
  EXPECT_EQ(ErrorOf("%extend start: \"a\"\nstart: \"b\"\n"),
            "t.lark:1:9: %extend: the rule 'start' has no earlier definition to extend");
  EXPECT_EQ(ErrorOf("%override X: \"a\"\n"),
            "t.lark:1:11: %override: the terminal 'X' has no earlier definition to override");
  EXPECT_EQ(ErrorOf("%declare X\n%extend X: \"a\"\n"),
            "t.lark:2:9: %extend: the terminal 'X' is %declare'd and has no body to extend");
  EXPECT_EQ(ErrorOf("b{x}: x\n%extend b: \"a\"\n"),
            "t.lark:2:9: %extend: 'b' must be extended with its own template parameters {x}");
  EXPECT_EQ(ErrorOf("b{x}: x\n%extend b{y}: y\n"),  // Lark compares the names too
            "t.lark:2:9: %extend: 'b' must be extended with its own template parameters {x}");
  EXPECT_EQ(ErrorOf("start: \"a\"\n%extend start: undefined_rule\n"), "t.lark:2:16: undefined rule 'undefined_rule'");
}

TEST(LarkReaderTest, ReadLarkFileResolvesImportsNextToTheFile) {
  const std::string dir = std::string(ZAPGRAM_SOURCE_DIR) + "/tests/testdata/lark";
  absl::StatusOr<LarkGrammar> g = ReadLarkFile(dir + "/main.lark");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(DumpLark(*g),
            "start ::= _sep{pair,\";\"}\n"
            "pair ::= NAME \"=\" value\n"
            "NAME ::= [a-z]+\n"
            "value ::= \"null\" | lib__values__NUMBER | lib__values__STRING | \"[\" _sep{value,\",\"} \"]\"\n"
            "lib__values__NUMBER ::= [0-9]+\n"
            "lib__values__STRING ::= \"\\\"\" [a-z]* \"\\\"\"\n"
            "_sep{pair,\";\"} ::= pair (\";\" pair)*\n"
            "_sep{value,\",\"} ::= value (\",\" value)*\n"
            "rule start alternatives=1\n"
            "rule pair alternatives=1\n"
            "rule value alternatives=4\n"
            "rule _sep{pair,\";\"} hidden alternatives=1\n"
            "rule _sep{value,\",\"} hidden alternatives=1\n"
            "terminal NAME imported\n"
            "terminal lib__values__NUMBER imported\n"
            "terminal lib__values__STRING imported\n"
            "ignore \" \"\n");
  absl::StatusOr<LarkGrammar> cycle = ReadLarkFile(dir + "/cycle/a.lark");
  ASSERT_FALSE(cycle.ok());
  EXPECT_EQ(cycle.status().message(),
            absl::StrCat(dir, "/cycle/b.lark:2:9: import cycle: ", dir, "/cycle/a.lark -> ", dir, "/cycle/b.lark -> ",
                         dir, "/cycle/a.lark; in module '.b' imported at ", dir, "/cycle/a.lark:3:9"));
  absl::StatusOr<LarkGrammar> missing = ReadLarkFile(dir + "/no_such_file.lark");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), absl::StrCat("no file '", dir, "/no_such_file.lark'"));
}

// Every .lark file in the shared data, read as a file (relative imports
// resolved next to it, Lark's own grammars folder for `%import python`).
TEST(LarkReaderTest, SharedDataGrammars) {
  const fs::path root = (fs::path(ZAPGRAM_DATA_DIR) / "grammars/lark").lexically_normal();
  ASSERT_TRUE(fs::is_directory(root)) << root;
  LarkReadOptions options;
  options.lark_grammars_dir = (root / "lark/lark/grammars").string();
  std::map<std::string, std::string> refused;
  int read = 0, total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".lark") continue;
    ++total;
    absl::StatusOr<LarkGrammar> g = ReadLarkFile(entry.path().string(), options);
    const std::string name = fs::relative(entry.path(), root).generic_string();
    if (g.ok()) {
      ++read;
      continue;
    }
    std::string message(g.status().message());
    // Messages name files by full path; keep them relative to the data folder.
    for (size_t at; (at = message.find(root.generic_string() + "/")) != std::string::npos;) {
      message.erase(at, root.generic_string().size() + 1);
    }
    refused[name] = message;
    std::cout << "refused " << message << "\n";
  }
  std::cout << "lark grammars: " << total << " files, " << read << " read, " << refused.size() << " refused\n";
  EXPECT_EQ(total, 65);
  EXPECT_EQ(read, 65 - static_cast<int>(refused.size()));
  // Every file reads: relative imports (15 files), templates (5) and
  // `%import python` (1), refused before, are all supported now.
  EXPECT_EQ(refused, (std::map<std::string, std::string>{}));
  // Without Lark's grammars folder, `%import python` is the one refusal.
  const fs::path create_ast = root / "lark/examples-inline/advanced--create_ast__Lark_arg.lark";
  absl::StatusOr<LarkGrammar> no_lark = ReadLarkFile(create_ast.string());
  ASSERT_FALSE(no_lark.ok());
  EXPECT_EQ(no_lark.status().message(),
            absl::StrCat(create_ast.generic_string(), ":15:13: cannot find module 'python' (tried '",
                         create_ast.parent_path().generic_string(), "/python.lark') (set "
                         "LarkReadOptions::lark_grammars_dir to Lark's lark/grammars folder for its modules)"));
  for (const char* must_read : {"syncode/java.lark", "syncode/go.lark", "syncode/sql.lark", "syncode/json.lark",
                                "syncode/calc.lark", "syncode/c.lark"}) {
    absl::StatusOr<LarkGrammar> g = ReadLarkFile((root / must_read).string());
    EXPECT_TRUE(g.ok()) << g.status();
  }
}

}  // namespace
}  // namespace zapgram::grammar
