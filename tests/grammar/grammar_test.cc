// Tests of the grammar IR (grammar/grammar.h): class normalization, the
// builders, the reachable / productive fixpoints and the text dump of
// grammars built by hand (the reader's dumps are tested in gbnf_reader_test.cc).
#include "grammar/grammar.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace zapgram::grammar {
namespace {

using Ranges = std::vector<CodepointRange>;

// ---------------------------------------------------------------- NormalizeRanges

TEST(NormalizeRangesTest, SortsAndMergesOverlappingAndAdjacentRanges) {
  EXPECT_EQ(NormalizeRanges({{20, 30}, {5, 10}, {1, 3}, {4, 4}, {25, 40}}, false),
            (Ranges{{1, 10}, {20, 40}}));
  EXPECT_EQ(NormalizeRanges({{'a', 'a'}, {'b', 'b'}, {'c', 'c'}}, false), (Ranges{{'a', 'c'}}));
  EXPECT_EQ(NormalizeRanges({{'a', 'a'}, {'c', 'c'}}, false), (Ranges{{'a', 'a'}, {'c', 'c'}}));
  EXPECT_EQ(NormalizeRanges({{1, 100}, {2, 3}}, false), (Ranges{{1, 100}}));
}

TEST(NormalizeRangesTest, SwapsReversedBoundsAndClampsToTheUnicodeRange) {
  EXPECT_EQ(NormalizeRanges({{10, 5}}, false), (Ranges{{5, 10}}));
  EXPECT_EQ(NormalizeRanges({{0x10FFF0, 0xFFFFFFFF}}, false), (Ranges{{0x10FFF0, kMaxCodepoint}}));
  EXPECT_EQ(NormalizeRanges({{0x110000, 0x120000}}, false), Ranges{});
}

TEST(NormalizeRangesTest, EmptyStaysEmpty) { EXPECT_EQ(NormalizeRanges({}, false), Ranges{}); }

TEST(NormalizeRangesTest, NegationComplementsWithinUnicodeWithoutSurrogates) {
  EXPECT_EQ(NormalizeRanges({{'"', '"'}}, true),
            (Ranges{{0, 0x21}, {0x23, 0xD7FF}, {0xE000, kMaxCodepoint}}));
  EXPECT_EQ(NormalizeRanges({}, true), (Ranges{{0, 0xD7FF}, {0xE000, kMaxCodepoint}}));
  EXPECT_EQ(NormalizeRanges({{0, kMaxCodepoint}}, true), Ranges{});
  // Bounds touching both ends of the code space.
  EXPECT_EQ(NormalizeRanges({{0, 10}, {kMaxCodepoint, kMaxCodepoint}}, true),
            (Ranges{{11, 0xD7FF}, {0xE000, 0x10FFFE}}));
  // Negating the surrogates alone leaves every scalar value.
  EXPECT_EQ(NormalizeRanges({{0xD800, 0xDFFF}}, true),
            (Ranges{{0, 0xD7FF}, {0xE000, kMaxCodepoint}}));
}

TEST(NormalizeRangesTest, RemovesSurrogates) {
  EXPECT_EQ(NormalizeRanges({{0xD800, 0xDFFF}}, false), Ranges{});
  EXPECT_EQ(NormalizeRanges({{0xDC00, 0xDC00}}, false), Ranges{});
  EXPECT_EQ(NormalizeRanges({{0xD000, 0xE100}}, false),
            (Ranges{{0xD000, 0xD7FF}, {0xE000, 0xE100}}));
  EXPECT_EQ(NormalizeRanges({{0xD7FF, 0xD800}}, false), (Ranges{{0xD7FF, 0xD7FF}}));
  EXPECT_EQ(NormalizeRanges({{0xDFFF, 0xE000}}, false), (Ranges{{0xE000, 0xE000}}));
}

TEST(NormalizeRangesTest, IsIdempotent) {
  const std::vector<Ranges> inputs = {
      {{5, 1}, {3, 9}, {0xD7F0, 0xE010}},
      {{0, 0}, {kMaxCodepoint, kMaxCodepoint}},
      {{'a', 'z'}, {'A', 'Z'}, {'_', '_'}},
  };
  for (const Ranges& input : inputs) {
    for (bool negated : {false, true}) {
      const Ranges once = NormalizeRanges(input, negated);
      EXPECT_EQ(NormalizeRanges(once, false), once);
    }
  }
}

// ---------------------------------------------------------------- builders

TEST(GrammarBuildersTest, EmptyLiteralIsEmptyAndSingletonGroupsCollapse) {
  Grammar g;
  const ExprId empty_literal = g.AddLiteral("");
  EXPECT_EQ(g.exprs[empty_literal].kind, ExprKind::kEmpty);
  const ExprId a = g.AddLiteral("a");
  EXPECT_EQ(g.AddSequence({a}), a);
  EXPECT_EQ(g.AddChoice({a}), a);
  EXPECT_EQ(g.exprs[g.AddSequence({})].kind, ExprKind::kEmpty);
  EXPECT_EQ(g.exprs[g.AddChoice({})].kind, ExprKind::kEmpty);
}

TEST(GrammarBuildersTest, CharClassIsNormalized) {
  Grammar g;
  const ExprId id = g.AddCharClass({{'z', 'a'}, {'0', '9'}, {'5', '7'}}, false);
  EXPECT_EQ(g.exprs[id].ranges, (Ranges{{'0', '9'}, {'a', 'z'}}));
  const ExprId negated = g.AddCharClass({{'a', 'a'}}, true);
  EXPECT_EQ(g.exprs[negated].ranges,
            (Ranges{{0, 'a' - 1}, {'b', 0xD7FF}, {0xE000, kMaxCodepoint}}));
}

TEST(GrammarBuildersTest, FindRule) {
  Grammar g;
  g.rules.push_back({"root", g.AddLiteral("x"), {}});
  g.rules.push_back({"other", g.AddLiteral("y"), {}});
  EXPECT_EQ(g.FindRule("root"), 0);
  EXPECT_EQ(g.FindRule("other"), 1);
  EXPECT_EQ(g.FindRule("missing"), -1);
}

TEST(GrammarValidateTest, AcceptsAWellFormedGrammarAndRejectsBrokenOnes) {
  Grammar g;
  g.source_name = "v.gbnf";
  g.rules.push_back({"root", g.AddRepeat(g.AddLiteral("a"), 1, 2, {3, 7}), {1, 1}});
  EXPECT_TRUE(g.Validate().ok());

  Grammar bad_repeat = g;
  bad_repeat.exprs[bad_repeat.rules[0].body].min = 5;
  const absl::Status status = bad_repeat.Validate();
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "v.gbnf:3:7: repetition {5,2} is malformed");

  Grammar bad_ref = g;
  bad_ref.rules[0].body = bad_ref.AddRuleRef(7);
  EXPECT_FALSE(bad_ref.Validate().ok());

  Grammar bad_root = g;
  bad_root.root = 3;
  EXPECT_FALSE(bad_root.Validate().ok());

  Grammar bad_class = g;
  bad_class.exprs[0].kind = ExprKind::kCharClass;
  bad_class.exprs[0].ranges = {{'b', 'c'}, {'a', 'a'}};
  EXPECT_FALSE(bad_class.Validate().ok());

  EXPECT_FALSE(Grammar().Validate().ok());
}

// ---------------------------------------------------------------- ReachableRules

TEST(ReachableRulesTest, FollowsReferencesFromTheRoot) {
  // 0: a ::= b            reachable through root
  // 1: root ::= a "x" | a*
  // 2: b ::= b "y" | ""   reachable, self-recursive
  // 3: c ::= a            unreachable (refers to reachable rules only)
  // 4: d ::= d            unreachable
  Grammar g;
  g.rules.resize(5);
  g.rules[0] = {"a", g.AddRuleRef(2), {}};
  g.rules[1] = {"root",
                g.AddChoice({g.AddSequence({g.AddRuleRef(0), g.AddLiteral("x")}),
                             g.AddRepeat(g.AddRuleRef(0), 0, kUnbounded)}),
                {}};
  g.rules[2] = {
      "b", g.AddChoice({g.AddSequence({g.AddRuleRef(2), g.AddLiteral("y")}), g.AddEmpty()}), {}};
  g.rules[3] = {"c", g.AddRuleRef(0), {}};
  g.rules[4] = {"d", g.AddRuleRef(4), {}};
  g.root = 1;
  ASSERT_TRUE(g.Validate().ok());
  EXPECT_EQ(ReachableRules(g), (std::vector<bool>{true, true, true, false, false}));
}

TEST(ReachableRulesTest, ReferencesUnderRepetitionCount) {
  Grammar g;
  g.rules.resize(2);
  g.rules[0] = {"root", g.AddRepeat(g.AddRuleRef(1), 0, 0), {}};
  g.rules[1] = {"x", g.AddLiteral("x"), {}};
  EXPECT_EQ(ReachableRules(g), (std::vector<bool>{true, true}));
}

// ---------------------------------------------------------------- ProductiveRules

TEST(ProductiveRulesTest, FindsRulesThatDeriveSomeString) {
  Grammar g;
  g.rules.resize(11);
  auto ref = [&](RuleId r) { return g.AddRuleRef(r); };
  g.rules[0] = {"root", g.AddChoice({ref(1), ref(2)}), {}};
  g.rules[1] = {"a", g.AddSequence({g.AddLiteral("x"), ref(1)}), {}};  // never ends
  g.rules[2] = {"b", g.AddChoice({g.AddLiteral("y"), ref(3)}), {}};
  g.rules[3] = {"c", g.AddSequence({ref(2), ref(2)}), {}};
  g.rules[4] = {"d", g.AddCharClass({}, false), {}};           // empty class
  g.rules[5] = {"e", g.AddRepeat(ref(4), 0, kUnbounded), {}};  // d* matches ""
  g.rules[6] = {"f", g.AddRepeat(ref(4), 1, kUnbounded), {}};  // d+ matches nothing
  g.rules[7] = {"g", g.AddEmpty(), {}};
  // A chain defined in the order that needs one fixpoint round per link.
  g.rules[8] = {"h1", ref(9), {}};
  g.rules[9] = {"h2", ref(10), {}};
  g.rules[10] = {"h3", g.AddLiteral("z"), {}};
  ASSERT_TRUE(g.Validate().ok());
  EXPECT_EQ(ProductiveRules(g), (std::vector<bool>{true, false, true, true, false, true, false,
                                                   true, true, true, true}));
}

TEST(ProductiveRulesTest, MutualRecursionWithoutABaseCaseIsUnproductive) {
  Grammar g;
  g.rules.resize(3);
  g.rules[0] = {"root", g.AddChoice({g.AddRuleRef(1), g.AddLiteral("ok")}), {}};
  g.rules[1] = {"p", g.AddSequence({g.AddLiteral("("), g.AddRuleRef(2)}), {}};
  g.rules[2] = {"q", g.AddSequence({g.AddRuleRef(1), g.AddLiteral(")")}), {}};
  EXPECT_EQ(ProductiveRules(g), (std::vector<bool>{true, false, false}));
}

// ---------------------------------------------------------------- Dump

TEST(DumpTest, PrintsRootFirstThenTheOtherRulesInOrder) {
  Grammar g;
  g.rules.push_back({"helper", g.AddLiteral("h"), {}});
  g.rules.push_back({"root", g.AddSequence({g.AddRuleRef(0), g.AddLiteral("!")}), {}});
  g.rules.push_back({"tail", g.AddEmpty(), {}});
  g.root = 1;
  EXPECT_EQ(Dump(g), "root ::= helper \"!\"\nhelper ::= \"h\"\ntail ::= \"\"\n");
}

TEST(DumpTest, EscapesLiterals) {
  Grammar g;
  g.rules.push_back({"root",
                     g.AddLiteral("a\"b\\c\n\r\t\x01\x7F"
                                  "\xC3\xA9"
                                  "\xE2\x98\x83"
                                  "\xF0\x9F\x98\x80'"),
                     {}});
  EXPECT_EQ(Dump(g), "root ::= \"a\\\"b\\\\c\\n\\r\\t\\x01\\x7F\\xE9\\u2603\\U0001F600'\"\n");
}

TEST(DumpTest, MarksBytesThatAreNotUtf8) {
  struct Case {
    std::string bytes;
    std::string dump;
  };
  const Case cases[] = {
      {std::string("\xFF") + "a" + "\xC3", R"("\xFFa\xC3")"},     // stray, truncated
      {"\xC0\xAF", R"("\xC0\xAF")"},                              // overlong '/'
      {"\xE0\x80\xAF", R"("\xE0\x80\xAF")"},                      // overlong '/'
      {"\xED\xA0\x80", R"("\xED\xA0\x80")"},                      // encoded surrogate
      {"\xF4\x90\x80\x80", R"("\xF4\x90\x80\x80")"},              // above U+10FFFF
      {"\xF8\x88\x80\x80", R"("\xF8\x88\x80\x80")"},              // 5-byte lead
      {"\xF4\x8F\xBF\xBF\xEF\xBF\xBD", R"("\U0010FFFF\uFFFD")"},  // valid
  };
  for (const Case& c : cases) {
    Grammar g;
    g.rules.push_back({"root", g.AddLiteral(c.bytes), {}});
    EXPECT_EQ(Dump(g), "root ::= " + c.dump + "\n");
  }
}

TEST(DumpTest, EscapesClassMetacharacters) {
  Grammar g;
  const ExprId specials = g.AddCharClass({{'-', '-'}, {']', ']'}, {'^', '^'}, {'\\', '\\'}}, false);
  const ExprId wide = g.AddCharClass({{0x3B1, 0x3C9}, {0x1F600, 0x1F64F}, {0, 0x1F}}, false);
  const ExprId dot = g.AddCharClass({{0, kMaxCodepoint}}, false);
  const ExprId nothing = g.AddCharClass({}, false);
  g.rules.push_back({"root", g.AddSequence({specials, wide, dot, nothing}), {}});
  EXPECT_EQ(Dump(g),
            "root ::= [\\-\\\\-\\^] [\\x00-\\x1F\\u03B1-\\u03C9\\U0001F600-\\U0001F64F] "
            "[\\x00-\\uD7FF\\uE000-\\U0010FFFF] []\n");
}

TEST(DumpTest, PrintsEveryRepetitionForm) {
  Grammar g;
  const ExprId a = g.AddLiteral("a");
  g.rules.push_back(
      {"root",
       g.AddSequence({g.AddRepeat(a, 0, kUnbounded), g.AddRepeat(a, 1, kUnbounded),
                      g.AddRepeat(a, 0, 1), g.AddRepeat(a, 3, 3), g.AddRepeat(a, 2, kUnbounded),
                      g.AddRepeat(a, 2, 5), g.AddRepeat(a, 0, 4), g.AddRepeat(a, 0, 0)}),
       {}});
  EXPECT_EQ(Dump(g),
            "root ::= \"a\"* \"a\"+ \"a\"? \"a\"{3} \"a\"{2,} \"a\"{2,5} \"a\"{0,4} \"a\"{0}\n");
}

TEST(DumpTest, ParenthesizesWhereThePrecedenceNeedsIt) {
  Grammar g;
  const ExprId a = g.AddLiteral("a");
  const ExprId b = g.AddLiteral("b");
  const ExprId ab = g.AddSequence({a, b});
  const ExprId a_or_b = g.AddChoice({a, b});
  const ExprId nested_repeat = g.AddRepeat(g.AddRepeat(a, 0, 1), 1, kUnbounded);
  g.rules.push_back({"root",
                     g.AddChoice({g.AddSequence({a_or_b, g.AddRepeat(ab, 0, kUnbounded)}),
                                  g.AddRepeat(a_or_b, 2, 2), nested_repeat, g.AddEmpty()}),
                     {}});
  EXPECT_EQ(Dump(g),
            "root ::= (\"a\" | \"b\") (\"a\" \"b\")* | (\"a\" | \"b\"){2} | (\"a\"?)+ | \"\"\n");
  EXPECT_EQ(DumpExpr(g, ab), "\"a\" \"b\"");
  EXPECT_EQ(DumpExpr(g, a_or_b), "\"a\" | \"b\"");
}

TEST(DumpTest, HandlesDeepExpressionTreesWithoutRecursion) {
  Grammar g;
  ExprId e = g.AddLiteral("x");
  constexpr int kDepth = 200000;
  for (int k = 0; k < kDepth; ++k) e = g.AddRepeat(e, 0, 1);
  g.rules.push_back({"root", e, {}});
  const std::string dump = Dump(g);
  EXPECT_EQ(dump.size(), std::string("root ::= ").size() + 3 + 3 * kDepth - 2 + 1);
  EXPECT_EQ(ReachableRules(g), std::vector<bool>{true});
  EXPECT_EQ(ProductiveRules(g), std::vector<bool>{true});
  EXPECT_TRUE(g.Validate().ok());
}

}  // namespace
}  // namespace zapgram::grammar
