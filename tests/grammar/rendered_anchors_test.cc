// Tests of grammar/rendered_anchors: a refusal it claims is a refusal of the
// regex compiler on the rendered text (hand-written cases, then random
// expressions and runs over leaves with and without anchors), and the cases
// the merge meets are claimed (a JSON Schema pattern between quotes, and
// everything around it).
#include "grammar/rendered_anchors.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "grammar/grammar.h"
#include "grammar/regex_compiler.h"
#include "grammar/regex_render.h"

namespace zapgram::grammar {
namespace {

ExprId BodyOf(const Grammar& g, RuleId r) { return g.rules[r].body; }

// The verdict of the regex compiler on the parts' texts one after another:
// true when it refuses them for an anchor.
bool CompilerRefusesAnchor(const Grammar& g, const std::vector<ExprId>& parts) {
  std::string pattern;
  for (ExprId part : parts) {
    absl::StatusOr<std::string> text =
        RenderRegex(g, part, [&](RuleId r) { return BodyOf(g, r); }, size_t{1} << 20);
    EXPECT_TRUE(text.ok()) << text.status();
    pattern += *text;
  }
  absl::StatusOr<ClassDfa> dfa = DeterminizeRegexToClasses(pattern, 0);
  return !dfa.ok() && absl::StrContains(dfa.status().message(), "anchor");
}

struct Fixture {
  Grammar g;
  RenderedAnchors Anchors() const {
    return RenderedAnchors(g, [this](RuleId r) { return BodyOf(g, r); });
  }
};

// A JSON Schema string with a `pattern`: the anchored leaf compiles alone,
// the quoted string does not, nor anything that encloses it.
TEST(RenderedAnchorsTest, AnAnchoredPieceRefusesEveryCandidateAroundIt) {
  Fixture f;
  Grammar& g = f.g;
  const ExprId pattern = g.AddRegex("^[a-z]+$", kRegexJsonString);
  const ExprId quoted = g.AddSequence({g.AddLiteral("\""), pattern, g.AddLiteral("\"")});
  g.rules.push_back({"name", quoted, {}});
  const ExprId member = g.AddSequence({g.AddLiteral("\"name\":"), g.AddRuleRef(0)});
  const ExprId other = g.AddSequence({g.AddLiteral("\"id\":"), g.AddRegex("[0-9]+", 0)});
  const ExprId members = g.AddSequence({member, g.AddLiteral(","), other});
  const ExprId object = g.AddSequence({g.AddLiteral("{"), members, g.AddLiteral("}")});
  const ExprId some = g.AddRepeat(object, 0, kUnbounded);
  const ExprId either = g.AddChoice({object, g.AddLiteral("null")});
  RenderedAnchors anchors = f.Anchors();
  EXPECT_FALSE(anchors.Refused({pattern}));
  for (ExprId refused : {quoted, member, members, object, some, either}) {
    EXPECT_TRUE(anchors.Refused({refused})) << refused;
    EXPECT_TRUE(CompilerRefusesAnchor(g, {refused})) << refused;
  }
  EXPECT_TRUE(anchors.Refused({g.AddLiteral(","), pattern}));  // a run, as PlanSequence tries
  EXPECT_TRUE(anchors.Refused({pattern, g.AddLiteral(",")}));
  // Unanchored pieces are not claimed: they still merge.
  EXPECT_FALSE(anchors.Refused({other}));
  EXPECT_FALSE(anchors.Refused({g.AddLiteral(","), other}));
  EXPECT_FALSE(CompilerRefusesAnchor(g, {other}));
}

// Where the compiler accepts an anchor, no refusal is claimed.
TEST(RenderedAnchorsTest, AnchorsWhereNothingPrecedesOrFollowsAreNotRefused) {
  Fixture f;
  Grammar& g = f.g;
  const ExprId start = g.AddRegex("^a", 0);
  const ExprId end = g.AddRegex("b$", 0);
  const std::vector<std::vector<ExprId>> accepted = {
      {start, g.AddLiteral("x")},                   // ^a x
      {g.AddLiteral("x"), end},                     // x b$
      {g.AddEmpty(), start},                        // (?:)^a
      {g.AddRepeat(start, 0, 1)},                   // (?:^a)?
      {g.AddChoice({start, end})},                  // (?:^a|b$)
      {g.AddSequence({start, g.AddLiteral("y"), end})},
  };
  const std::vector<std::vector<ExprId>> refused = {
      {g.AddLiteral("x"), start},
      {end, g.AddLiteral("x")},
      {g.AddRepeat(start, 0, 2)},
      {g.AddRepeat(end, 1, kUnbounded)},
      {g.AddSequence({g.AddCharClass({{'0', '9'}}, false), g.AddChoice({start, end})})},
      {g.AddSequence({g.AddRepeat(g.AddLiteral("z"), 0, 1), start})},  // a quantifier is not blank
  };
  RenderedAnchors anchors = f.Anchors();
  for (const std::vector<ExprId>& parts : accepted) {
    EXPECT_FALSE(anchors.Refused(parts)) << parts[0];
    EXPECT_FALSE(CompilerRefusesAnchor(g, parts)) << parts[0];
  }
  for (const std::vector<ExprId>& parts : refused) {
    EXPECT_TRUE(anchors.Refused(parts)) << parts[0];
    EXPECT_TRUE(CompilerRefusesAnchor(g, parts)) << parts[0];
  }
}

// No claim where the pattern would not read the same inside a group, or
// does not parse alone.
TEST(RenderedAnchorsTest, NoClaimForPatternsItCannotReadAlone) {
  Fixture f;
  Grammar& g = f.g;
  const ExprId comment = g.AddRegex("^a # note", kRegexVerbose);
  const ExprId broken = g.AddRegex("^a)(b", 0);
  RenderedAnchors anchors = f.Anchors();
  EXPECT_FALSE(anchors.Refused({g.AddLiteral("x"), comment}));
  EXPECT_FALSE(anchors.Refused({g.AddLiteral("x"), broken}));
}

// Random expressions over anchored and plain leaves: every claimed refusal
// is the compiler's, and most of the compiler's refusals are claimed.
TEST(RenderedAnchorsTest, ClaimsAgreeWithTheCompilerOnRandomExpressions) {
  std::mt19937_64 rng(0xA2C4'0126'2026ull);
  const std::vector<std::string> patterns = {"^a", "b$", "^a$", "\\Ac", "d\\z", "[^a]", "e|^f",
                                             "(?:^)", "g(?:$)", "(?:^h)?", "$", "\\$i", "j"};
  uint64_t claimed = 0, refused_by_compiler = 0;
  for (int round = 0; round < 300; ++round) {
    Fixture f;
    Grammar& g = f.g;
    std::vector<ExprId> pool;
    for (int i = 0; i < 6; ++i) {
      switch (rng() % 5) {
        case 0:
          pool.push_back(g.AddLiteral(rng() % 4 == 0 ? "" : std::string(1 + rng() % 2, 'x')));
          break;
        case 1:
          pool.push_back(g.AddCharClass({{'0', '9'}}, false));
          break;
        default:
          pool.push_back(g.AddRegex(patterns[rng() % patterns.size()], 0));
          break;
      }
    }
    for (int i = 0; i < 12; ++i) {
      const ExprId a = pool[rng() % pool.size()], b = pool[rng() % pool.size()];
      switch (rng() % 5) {
        case 0:
          pool.push_back(g.AddChoice({a, b}));
          break;
        case 1: {
          const uint32_t max = rng() % 2 ? 1 : (rng() % 2 ? 2 : kUnbounded);
          pool.push_back(g.AddRepeat(a, static_cast<uint32_t>(rng() % 2), max));
          break;
        }
        case 2:
          g.rules.push_back({"r" + std::to_string(g.rules.size()), a, {}});
          pool.push_back(g.AddRuleRef(static_cast<RuleId>(g.rules.size() - 1)));
          break;
        default:
          pool.push_back(g.AddSequence({a, b}));
          break;
      }
    }
    RenderedAnchors anchors = f.Anchors();
    for (size_t i = 0; i < pool.size(); ++i) {
      std::vector<std::vector<ExprId>> candidates = {{pool[i]}};
      if (i + 2 < pool.size()) candidates.push_back({pool[i], pool[i + 1], pool[i + 2]});
      for (const std::vector<ExprId>& parts : candidates) {
        const bool claim = anchors.Refused(parts);
        const bool compiler = CompilerRefusesAnchor(g, parts);
        claimed += claim;
        refused_by_compiler += compiler;
        if (claim) ASSERT_TRUE(compiler) << "round " << round << " node " << pool[i];
      }
    }
  }
  EXPECT_GT(claimed, refused_by_compiler * 9 / 10);
}

}  // namespace
}  // namespace zapgram::grammar
