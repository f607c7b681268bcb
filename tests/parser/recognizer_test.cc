// Unit tests of the lowering and the Earley recognizer on grammars built with
// the IR builders (no reader involved), including golden dumps of the flat
// grammar and of a chart.
#include "parser/recognizer.h"

#include <string>

#include "gtest/gtest.h"
#include "grammar/gbnf_reader.h"
#include "grammar/grammar.h"
#include "parser/flat_grammar.h"
#include "pruning/compact.h"

namespace zapgram::parser {
namespace {

using grammar::CodepointRange;
using grammar::Grammar;

// root ::= "[" (item ("," item)*)? "]" ; item ::= [0-9]+ | root
Grammar ListGrammar() {
  Grammar g;
  g.source_name = "<list>";
  g.rules.push_back({"root", 0, {}});
  g.rules.push_back({"item", 0, {}});
  auto digit = g.AddCharClass({{'0', '9'}}, false);
  auto digits = g.AddRepeat(digit, 1, grammar::kUnbounded);
  auto item_body = g.AddChoice({digits, g.AddRuleRef(0)});
  g.rules[1].body = item_body;
  auto more = g.AddRepeat(g.AddSequence({g.AddLiteral(","), g.AddRuleRef(1)}), 0,
                          grammar::kUnbounded);
  auto items = g.AddRepeat(g.AddSequence({g.AddRuleRef(1), more}), 0, 1);
  g.rules[0].body = g.AddSequence({g.AddLiteral("["), items, g.AddLiteral("]")});
  return g;
}

bool Accepts(const FlatGrammar& flat, std::string_view input, bool pruning) {
  RecognizerOptions options;
  options.pruning = pruning;
  Recognizer r = pruning::MakeRecognizer(&flat, options);
  return r.FeedBytes(input) == input.size() && r.IsAccepting();
}

TEST(FlatGrammarTest, LowersListGrammarGolden) {
  absl::StatusOr<FlatGrammar> flat = BuildFlatGrammar(ListGrammar());
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_EQ(DumpFlatGrammar(*flat),
            "root -> \"[\" root#rep3 \"]\"\n"
            "item -> item#rep2\n"
            "item -> root\n"
            "item#rep2 -> [0-9]\n"
            "item#rep2 -> item#rep2 [0-9]\n"
            "root#rep3 -> root#rep3#item    (nullable)\n"
            "root#rep3 ->    (nullable)\n"
            "root#rep3#rep4 ->    (nullable)\n"
            "root#rep3#rep4 -> root#rep3#rep4 root#rep3#rep4#item    (nullable)\n"
            "root#rep3#item -> item root#rep3#rep4\n"
            "root#rep3#rep4#item -> \",\" item\n"
            "<start> -> root\n"
            "terminals: 4, states: 9, byte classes: 5\n");
}

TEST(RecognizerTest, AcceptsAndRejectsNestedLists) {
  absl::StatusOr<FlatGrammar> flat = BuildFlatGrammar(ListGrammar());
  ASSERT_TRUE(flat.ok()) << flat.status();
  for (bool pruning : {true, false}) {
    EXPECT_TRUE(Accepts(*flat, "[]", pruning));
    EXPECT_TRUE(Accepts(*flat, "[1,22,[3,[]],4]", pruning));
    EXPECT_FALSE(Accepts(*flat, "[1,]", pruning));
    EXPECT_FALSE(Accepts(*flat, "[1", pruning));
    EXPECT_FALSE(Accepts(*flat, "", pruning));
  }
}

// CanContinue means "some byte can follow". Items waiting on a token
// terminal (XGrammar's Token(...)) wait for a token step that no byte makes:
// alone they leave nothing to continue with (found by gbnf_reader_fuzzer:
// fuzz/seeds/gbnf_reader_fuzzer/token_terminal_can_continue).
TEST(RecognizerTest, ItemsWaitingForATokenDoNotContinueByBytes) {
  for (const char* text : {"root ::= Token(\"<tool_call>\")", "root ::= Token(7, 9) \"x\""}) {
    absl::StatusOr<Grammar> g = grammar::ReadGbnf(text, "t.gbnf");
    ASSERT_TRUE(g.ok()) << g.status();
    absl::StatusOr<FlatGrammar> flat = BuildFlatGrammar(*g);
    ASSERT_TRUE(flat.ok()) << flat.status();
    for (bool pruning : {true, false}) {
      RecognizerOptions options;
      options.pruning = pruning;
      Recognizer r = pruning::MakeRecognizer(&*flat, options);
      EXPECT_TRUE(r.NextBytes().none()) << text;
      EXPECT_FALSE(r.CanContinue()) << text;
    }
  }
  absl::StatusOr<Grammar> g = grammar::ReadGbnf("root ::= Token(7) | \"x\"", "t.gbnf");
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<FlatGrammar> flat = BuildFlatGrammar(*g);
  ASSERT_TRUE(flat.ok()) << flat.status();
  Recognizer r = pruning::MakeRecognizer(&*flat);
  EXPECT_TRUE(r.CanContinue());
  EXPECT_TRUE(r.Feed('x'));
  EXPECT_FALSE(r.CanContinue());
}

TEST(RecognizerTest, NextBytesAndRollback) {
  absl::StatusOr<FlatGrammar> flat = BuildFlatGrammar(ListGrammar());
  ASSERT_TRUE(flat.ok());
  Recognizer r = pruning::MakeRecognizer(&*flat);
  EXPECT_EQ(r.NextBytes().count(), 1u);
  EXPECT_TRUE(r.NextBytes().test('['));
  ASSERT_EQ(r.FeedBytes("[1"), 2u);
  ByteSet next = r.NextBytes();
  EXPECT_TRUE(next.test('0') && next.test('9') && next.test(',') && next.test(']'));
  EXPECT_FALSE(next.test('['));
  EXPECT_FALSE(r.Feed('['));
  EXPECT_EQ(r.Position(), 2u);
  ASSERT_EQ(r.FeedBytes("]"), 1u);
  EXPECT_TRUE(r.IsAccepting());
  EXPECT_FALSE(r.CanContinue());
  ASSERT_TRUE(r.Rollback(2));
  EXPECT_EQ(r.Position(), 1u);
  EXPECT_FALSE(r.IsAccepting());
  EXPECT_TRUE(r.NextBytes().test(']'));
  EXPECT_FALSE(r.Rollback(5));
}

TEST(RecognizerTest, UnicodeClassMatchesWholeCodepoints) {
  Grammar g;
  g.source_name = "<greek>";
  g.rules.push_back({"root", 0, {}});
  g.rules[0].body = g.AddRepeat(g.AddCharClass({{0x3B1, 0x3C9}}, false), 1, grammar::kUnbounded);
  absl::StatusOr<FlatGrammar> flat = BuildFlatGrammar(g);
  ASSERT_TRUE(flat.ok());
  EXPECT_TRUE(Accepts(*flat, "αβω", true));
  EXPECT_FALSE(Accepts(*flat, "αβΩ", true));
  EXPECT_FALSE(Accepts(*flat, "\xCE", true));  // half a code point
  EXPECT_FALSE(Accepts(*flat, "a", true));
}

TEST(RecognizerTest, EmptyLanguageCompilesAndAcceptsNothing) {
  Grammar g;
  g.source_name = "<loop>";
  g.rules.push_back({"root", 0, {}});
  g.rules[0].body = g.AddSequence({g.AddLiteral("a"), g.AddRuleRef(0)});
  absl::StatusOr<FlatGrammar> flat = BuildFlatGrammar(g);
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_EQ(flat->num_productions(), 1u);  // S' -> root alone; root keeps none
  for (bool pruning : {true, false}) {
    RecognizerOptions options;
    options.pruning = pruning;
    Recognizer r = pruning::MakeRecognizer(&*flat, options);
    EXPECT_FALSE(r.IsAccepting());
    EXPECT_TRUE(r.NextBytes().none());
    EXPECT_EQ(r.FeedBytes("a"), 0u);
    EXPECT_FALSE(Accepts(*flat, "", pruning));
  }
}

TEST(RecognizerTest, ChartDumpGolden) {
  absl::StatusOr<FlatGrammar> flat = BuildFlatGrammar(ListGrammar());
  ASSERT_TRUE(flat.ok());
  Recognizer r = pruning::MakeRecognizer(&*flat);
  ASSERT_EQ(r.FeedBytes("[[1"), 3u);
  // After "[[1": set 0 holds the start item (as a Leo entry: it is the only
  // item waiting on root); sets 1 and 2 the open lists
  // (the items waiting for their elements); set 3 the items that can scan
  // the next byte (another digit, a comma or the closing bracket).
  EXPECT_EQ(r.DumpChart(),
            "set 0 @0\n"
            "  leo root => <start> -> root . (0)\n"
            "set 1 @1\n"
            "  item -> . root (1)\n"
            "  root#rep3#item -> . item root#rep3#rep4 (1)\n"
            "  root -> \"[\" . root#rep3 \"]\" (0)\n"
            "  root#rep3 -> . root#rep3#item (1)\n"
            "set 2 @2\n"
            "  root#rep3#item -> . item root#rep3#rep4 (2)\n"
            "  item -> . item#rep2 (2)\n"
            "  item#rep2 -> . item#rep2 [0-9] (2)\n"
            "  root -> \"[\" . root#rep3 \"]\" (1)\n"
            "  root#rep3 -> . root#rep3#item (2)\n"
            "set 3 @3\n"
            "  root#rep3#item -> item . root#rep3#rep4 (2)\n"
            "  root#rep3#rep4 -> . root#rep3#rep4 root#rep3#rep4#item (3)\n"
            "  root#rep3#rep4 -> root#rep3#rep4 . root#rep3#rep4#item (3)\n"
            "  item#rep2 -> item#rep2 . [0-9] (2) state 1\n"
            "  root#rep3#rep4#item -> . \",\" item (3) state 7\n"
            "  root -> \"[\" root#rep3 . \"]\" (1) state 5\n");
}

}  // namespace
}  // namespace zapgram::parser
