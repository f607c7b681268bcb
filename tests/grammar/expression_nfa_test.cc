// Tests of grammar/expression_nfa: the automaton built from an expression
// tree has the language of the expression's rendered regex text compiled by
// the regex compiler (the route the merge took before), on hand-written
// shapes, random expressions, and every regular node of real JSON Schemas.
#include "grammar/expression_nfa.h"

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "api/grammar_data.h"
#include "gtest/gtest.h"
#include "grammar/dfa_minimization.h"
#include "grammar/grammar.h"
#include "grammar/regex_compiler.h"
#include "grammar/regex_render.h"
#include "grammar/rendered_anchors.h"
#include "tests/support/test_paths.h"
#include "tests/support/test_scale.h"
#include "transforms/pipeline.h"
#include "zapgram/grammar.h"

namespace zapgram::grammar {
namespace {

// Whether two trimmed DFAs accept the same strings: a walk over the pairs of
// states both reach on the same bytes (the dead state pairs with anything
// only as the dead state).
bool SameLanguage(const ByteDfa& a, const ByteDfa& b) {
  if (a.empty() || b.empty()) return a.empty() == b.empty();
  std::vector<std::pair<uint32_t, uint32_t>> stack = {{1, 1}};
  absl::flat_hash_set<std::pair<uint32_t, uint32_t>> seen = {{1, 1}};
  while (!stack.empty()) {
    const auto [x, y] = stack.back();
    stack.pop_back();
    if ((x == 0) != (y == 0)) return false;  // trimmed: a live state leads to a match
    if (x == 0) continue;
    if (a.accepting[x] != b.accepting[y]) return false;
    for (int c = 0; c < 256; ++c) {
      const std::pair<uint32_t, uint32_t> next = {a.next[x][c], b.next[y][c]};
      if (seen.insert(next).second) stack.push_back(next);
    }
  }
  return true;
}

struct Routes {
  absl::StatusOr<ByteDfa> from_tree;
  absl::StatusOr<ByteDfa> from_text;
};

// Both routes for the concatenation of `parts`, each minimized.
Routes BothRoutes(const Grammar& g, const std::vector<ExprId>& parts, const RegexLimits& limits) {
  auto body = [&g](RuleId r) { return g.rules[r].body; };
  RegexDfaCache cache;
  ExpressionNfaBuilder builder(g, body, &cache, limits);
  Routes routes;
  absl::StatusOr<ClassDfa> tree = builder.Determinize(parts);
  routes.from_tree = tree.ok() ? absl::StatusOr<ByteDfa>(MinimizeDfa(*tree)) : tree.status();
  std::string text;
  for (ExprId part : parts) {
    absl::StatusOr<std::string> piece = RenderRegex(g, part, body, size_t{1} << 20);
    if (!piece.ok()) {
      routes.from_text = piece.status();
      return routes;
    }
    text += *piece;
  }
  absl::StatusOr<ClassDfa> compiled = DeterminizeRegexToClasses(text, 0, limits);
  routes.from_text =
      compiled.ok() ? absl::StatusOr<ByteDfa>(MinimizeDfa(*compiled)) : compiled.status();
  return routes;
}

void ExpectSameLanguage(const Grammar& g, const std::vector<ExprId>& parts,
                        const std::string& what) {
  Routes routes = BothRoutes(g, parts, RegexLimits{});
  ASSERT_TRUE(routes.from_text.ok()) << what << ": " << routes.from_text.status();
  ASSERT_TRUE(routes.from_tree.ok()) << what << ": " << routes.from_tree.status();
  EXPECT_TRUE(SameLanguage(*routes.from_tree, *routes.from_text)) << what;
  // Both minimal: the same number of states.
  EXPECT_EQ(routes.from_tree->num_states(), routes.from_text->num_states()) << what;
}

TEST(ExpressionNfaTest, ShapesHaveTheirRegexLanguage) {
  Grammar g;
  const ExprId a = g.AddLiteral("a");
  const ExprId ab = g.AddLiteral("ab");
  const ExprId e_acute = g.AddLiteral("\xC3\xA9");
  const ExprId letters = g.AddCharClass({{'a', 'c'}, {0xE9, 0xE9}, {0x4E00, 0x4E10}}, false);
  const ExprId not_a = g.AddCharClass({{'a', 'a'}}, true);
  const ExprId digits = g.AddRegex("[0-9]+(?:\\.[0-9]*)?", 0);
  const ExprId folded = g.AddRegex("abc", kRegexIgnoreCase);
  const ExprId json = g.AddRegex("[a-z]{2,3}", kRegexJsonString);
  const ExprId empty = g.AddEmpty();
  g.rules.push_back({"r", g.AddSequence({ab, digits}), {}});
  const ExprId ref = g.AddRuleRef(0);
  const std::vector<std::pair<std::string, ExprId>> shapes = {
      {"sequence", g.AddSequence({a, letters, folded})},
      {"choice", g.AddChoice({ab, a, e_acute, empty})},
      {"star", g.AddRepeat(g.AddChoice({a, ab}), 0, kUnbounded)},
      {"plus", g.AddRepeat(letters, 1, kUnbounded)},
      {"at least two", g.AddRepeat(ab, 2, kUnbounded)},
      {"optional", g.AddRepeat(digits, 0, 1)},
      {"two to five", g.AddRepeat(g.AddSequence({a, not_a}), 2, 5)},
      {"exactly three", g.AddRepeat(json, 3, 3)},
      {"zero to three", g.AddRepeat(ref, 0, 3)},
      {"nullable star", g.AddRepeat(g.AddRepeat(a, 0, 1), 0, kUnbounded)},
      {"reference", g.AddSequence({ref, g.AddLiteral(","), ref})},
      {"nested", g.AddSequence({g.AddLiteral("{"),
                                g.AddRepeat(g.AddSequence({ref, g.AddChoice({folded, json})}), 0,
                                            kUnbounded),
                                g.AddLiteral("}")})},
  };
  for (const auto& [what, id] : shapes) ExpectSameLanguage(g, {id}, what);
  ExpectSameLanguage(g, {a, ref, letters}, "a run of parts");
}

TEST(ExpressionNfaTest, TokensAndOverflowsAreErrors) {
  Grammar g;
  const ExprId token = g.AddTokenIds({1}, false);
  RegexDfaCache cache;
  auto body = [&g](RuleId r) { return g.rules[r].body; };
  RegexLimits limits;
  limits.max_dfa_states = 64;
  ExpressionNfaBuilder builder(g, body, &cache, limits);
  EXPECT_FALSE(builder.Determinize({token}).ok());
  // (a|b)*a(a|b){8}: 2^9 DFA states, past a cap of 64.
  const ExprId ab = g.AddCharClass({{'a', 'b'}}, false);
  const ExprId blowup = g.AddSequence(
      {g.AddRepeat(ab, 0, kUnbounded), g.AddLiteral("a"), g.AddRepeat(ab, 8, 8)});
  absl::StatusOr<ClassDfa> dfa = builder.Determinize({blowup});
  ASSERT_FALSE(dfa.ok());
  EXPECT_EQ(dfa.status().code(), absl::StatusCode::kResourceExhausted);
  // The NFA's own budget.
  limits.max_nfa_states = 100;
  ExpressionNfaBuilder small(g, body, &cache, limits);
  absl::StatusOr<ClassDfa> long_repeat = small.Determinize({g.AddRepeat(g.AddLiteral("xyz"), 50, 50)});
  ASSERT_FALSE(long_repeat.ok());
  EXPECT_EQ(long_repeat.status().code(), absl::StatusCode::kResourceExhausted);
}

// Random trees over literals, classes, regexes and rule references.
TEST(ExpressionNfaTest, RandomExpressionsHaveTheirRegexLanguage) {
  std::mt19937_64 rng(0x5EED'2811'2026ull);
  const std::vector<std::pair<std::string, uint32_t>> regexes = {
      {"a+b?", 0}, {"[b-c]*", 0}, {"AB", kRegexIgnoreCase}, {"(?:x|yz){1,2}", 0},
      {"[^\"]{0,2}", kRegexJsonString}, {"\\d", 0}};
  const int rounds = testing::Scaled(300, 60);
  for (int round = 0; round < rounds; ++round) {
    Grammar g;
    std::vector<ExprId> pool;
    for (int i = 0; i < 6; ++i) {
      switch (rng() % 4) {
        case 0:
          pool.push_back(g.AddLiteral(std::string(1 + rng() % 2, "abc"[rng() % 3])));
          break;
        case 1:
          pool.push_back(rng() % 2 ? g.AddCharClass({{'a', 'b'}, {0xE9, 0xE9}}, false)
                                   : g.AddCharClass({{'a', 'a'}}, true));
          break;
        case 2:
          pool.push_back(g.AddEmpty());
          break;
        default: {
          const auto& [pattern, flags] = regexes[rng() % regexes.size()];
          pool.push_back(g.AddRegex(pattern, flags));
          break;
        }
      }
    }
    for (int i = 0; i < 10; ++i) {
      const ExprId x = pool[rng() % pool.size()], y = pool[rng() % pool.size()];
      switch (rng() % 5) {
        case 0:
          pool.push_back(g.AddChoice({x, y}));
          break;
        case 1: {
          const uint32_t min = static_cast<uint32_t>(rng() % 3);
          const uint32_t max = rng() % 3 == 0 ? kUnbounded : min + static_cast<uint32_t>(rng() % 3);
          pool.push_back(g.AddRepeat(x, min, max));
          break;
        }
        case 2:
          g.rules.push_back({"r" + std::to_string(g.rules.size()), x, {}});
          pool.push_back(g.AddRuleRef(static_cast<RuleId>(g.rules.size() - 1)));
          break;
        default:
          pool.push_back(g.AddSequence({x, y}));
          break;
      }
    }
    for (size_t i = 6; i < pool.size(); ++i) {
      ExpectSameLanguage(g, {pool[i]}, "round " + std::to_string(round) + " node " +
                                           std::to_string(pool[i]));
      if (::testing::Test::HasFatalFailure()) return;
    }
    ExpectSameLanguage(g, {pool[6], pool[8], pool[10]}, "round " + std::to_string(round) + " run");
  }
}

// Every node of real schemas that the merge could ask for (regular, its
// text within 64 KiB, no misplaced anchor) and whose text compiles within
// 4,096 states: the same language both ways.
TEST(ExpressionNfaTest, MaskBenchCandidatesHaveTheirRegexLanguage) {
  std::vector<std::string> files =
      testing::ListFiles(testing::DataPath("jsonschema/maskbench"), ".schema.json");
  ASSERT_FALSE(files.empty());
  const size_t stride = files.size() / testing::Scaled<size_t>(40, 8) + 1;
  RegexLimits limits;
  limits.max_dfa_states = 4096;
  size_t schemas = 0, compared = 0;
  for (size_t f = 0; f < files.size(); f += stride) {
    SchemaOptions options;
    options.lenient = true;
    absl::StatusOr<Grammar> read =
        internal::ReadSchemaText(testing::ReadFileOrDie(files[f]), files[f], options, false, nullptr);
    if (!read.ok()) continue;
    absl::StatusOr<Grammar> g = transforms::NormalizeForCompile(*read);
    ASSERT_TRUE(g.ok()) << files[f];
    ++schemas;
    auto body = [&](RuleId r) { return g->rules[r].body; };
    RenderedAnchors anchors(*g, body);
    RegexRenderMemo memo;
    for (const Rule& rule : g->rules) {
      const ExprId id = rule.body;
      if (RecursiveRuleReachedFrom(*g, id) >= 0) continue;
      absl::StatusOr<std::string> text = RenderRegex(*g, id, body, size_t{1} << 16, &memo);
      if (!text.ok() || anchors.Refused({id})) continue;  // a token, or too long, or anchored
      absl::StatusOr<ClassDfa> compiled = DeterminizeRegexToClasses(*text, 0, limits);
      if (!compiled.ok()) continue;
      RegexDfaCache cache;
      ExpressionNfaBuilder builder(*g, body, &cache, limits);
      absl::StatusOr<ClassDfa> tree = builder.Determinize({id});
      ASSERT_TRUE(tree.ok()) << files[f] << " rule " << rule.name << ": " << tree.status();
      ASSERT_TRUE(SameLanguage(MinimizeDfa(*tree), MinimizeDfa(*compiled)))
          << files[f] << " rule " << rule.name;
      ++compared;
    }
  }
  EXPECT_GE(schemas, testing::Scaled<size_t>(30, 6));
  EXPECT_GE(compared, schemas);
}

}  // namespace
}  // namespace zapgram::grammar
