// Counted terminals (grammar/counted_automaton.h) against the same regex
// unrolled and determinized (grammar/regex_compiler.h): acceptance and
// liveness on random strings and all their prefixes; mask classes: states
// of one class agree on every string up to the class depth.
#include "grammar/counted_automaton.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "grammar/regex_compiler.h"

namespace zapgram::grammar {
namespace {

// RFC 8259 string characters, any spelling (the JSON Schema converter's unit).
constexpr char kJsonChar[] =
    "[^\"\\\\\\x00-\\x1F]|\\\\[\"\\\\/bfnrt]|\\\\u(?:[0-9a-cA-CeEfF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2})"
    "|\\\\u[dD][89abAB][0-9a-fA-F]{2}\\\\u[dD][c-fC-F][0-9a-fA-F]{2}";

CountedAutomaton Counted(const std::string& pattern) {
  absl::StatusOr<std::optional<CountedParts>> parts = SplitCountedRegex(pattern, 0);
  EXPECT_TRUE(parts.ok()) << parts.status();
  EXPECT_TRUE(parts->has_value()) << pattern;
  absl::StatusOr<CountedAutomaton> a = CountedAutomaton::Build(**std::move(parts));
  EXPECT_TRUE(a.ok()) << a.status();
  return *std::move(a);
}

// Bytes that exercise the JSON unit: plain, quote, escapes, hex, UTF-8.
std::string RandomText(std::mt19937& rng, size_t n) {
  static const std::vector<std::string> pieces = {
      "a", "b", "\"", "\\", "n", "u", "0", "d", "D", "8", "c", "e", "\xc3\xa9", "\xc3", "\xe2\x82\xac", "x", "\x01"};
  std::string s;
  while (s.size() < n) s += pieces[rng() % pieces.size()];
  return s;
}

// Steps `a` and the regex's own DFA over random strings opening with `"`
// (some closed by `"`): the same live bytes, deaths and acceptance at every
// prefix. Returns the number of prefixes compared.
int CompareWithRegex(const std::string& pattern, const CountedAutomaton& a, int max_chars, std::mt19937& rng) {
  absl::StatusOr<ByteDfa> dfa = CompileRegex(pattern, 0);
  EXPECT_TRUE(dfa.ok()) << dfa.status();
  if (!dfa.ok()) return 0;
  int checks = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string s = "\"" + RandomText(rng, rng() % (max_chars + 12));
    if (trial % 3 == 0) s += "\"";
    uint32_t local = a.start(), state = 1;
    for (size_t i = 0; i < s.size(); ++i) {
      const uint8_t b = static_cast<uint8_t>(s[i]);
      // Live bytes agree with the regex's live transitions.
      for (uint32_t c = 0; c < 256; ++c) {
        if (a.live_bytes(local).test(c) != (dfa->next[state][c] != 0)) {
          ADD_FAILURE() << pattern << " after " << i << " bytes of '" << s << "', byte " << c;
          return checks;
        }
      }
      local = a.Step(local, b);
      state = dfa->next[state][b];
      if ((local == CountedAutomaton::kDead) != (state == 0)) {
        ADD_FAILURE() << pattern << " '" << s << "' at " << i;
        return checks;
      }
      if (state == 0) break;
      if (a.accepting(local) != (dfa->accepting[state] != 0)) {
        ADD_FAILURE() << pattern << " '" << s << "' accepting at " << i;
        return checks;
      }
      ++checks;
    }
  }
  return checks;
}

TEST(CountedAutomaton, AgreesWithTheUnrolledRegex) {
  std::mt19937 rng(7);
  int checks = 0;
  for (const auto& [min, max] : std::vector<std::pair<int, int>>{{0, 3}, {2, 5}, {0, 33}, {5, 40}, {7, 7}}) {
    // (ab)*c: a unit whose automaton comes back to its start inside a unit
    // (after "ab"), where the suffix must still not follow.
    for (const std::string& unit : {std::string(kJsonChar), std::string("ab|c"), std::string("(?:ab)*c")}) {
      const std::string pattern = absl::StrCat("\"(?:", unit, "){", min, ",", max, "}\"");
      checks += CompareWithRegex(pattern, Counted(pattern), max, rng);
    }
  }
  EXPECT_GT(checks, 10000);
}

TEST(CountedAutomaton, UnitStartReenteredInsideAUnit) {
  const CountedAutomaton a = Counted("x(?:(?:ab)*c){0,40}y");
  auto accepts = [&](const std::string& s) {
    uint32_t local = a.start();
    for (char c : s) {
      local = a.Step(local, static_cast<uint8_t>(c));
      if (local == CountedAutomaton::kDead) return false;
    }
    return a.accepting(local);
  };
  EXPECT_TRUE(accepts("xy"));
  EXPECT_TRUE(accepts("xabcy"));
  EXPECT_TRUE(accepts("xccababcy"));
  EXPECT_FALSE(accepts("xaby"));
  EXPECT_FALSE(accepts("xcaby"));
}

// A body: a pattern intersected with a count of code points, against the
// regex compiler's product of the two (small enough to build here).
TEST(CountedAutomaton, BodyAgreesWithTheProduct) {
  std::mt19937 rng(11);
  int checks = 0;
  for (const std::string& content : {std::string("(?:[a-e]+ ){0,3}[a-e]+"), std::string("[^x]*a[\\s\\S]*"),
                                     std::string("(?:ab|c)*"), std::string("[0-9a-f\\\\\"]*")}) {
    for (const auto& [min, max] : std::vector<std::pair<int, int>>{{0, 33}, {2, 40}, {5, 36}}) {
      for (const char* flags : {"J", "JE"}) {
        const std::string pattern =
            absl::StrCat("\"(?", flags, ":(?&:(?:", content, ")|(?:[\\s\\S]{", min, ",", max, "})))\"");
        absl::StatusOr<std::optional<CountedParts>> parts = SplitCountedRegex(pattern, 0);
        ASSERT_TRUE(parts.ok()) << parts.status();
        ASSERT_TRUE(parts->has_value()) << pattern;
        EXPECT_GT((*parts)->body.num_states(), 0u) << pattern;
        EXPECT_EQ((*parts)->min, 0u) << "the body counts the minimum";
        absl::StatusOr<CountedAutomaton> a = CountedAutomaton::Build(**std::move(parts));
        ASSERT_TRUE(a.ok()) << a.status();
        checks += CompareWithRegex(pattern, *a, max, rng);
      }
    }
  }
  EXPECT_GT(checks, 20000);
  // Anchors of the content stand at its own ends.
  absl::StatusOr<std::optional<CountedParts>> anchored =
      SplitCountedRegex("\"(?J:(?&:(?:^(?:\\S+\\s+){0,29}\\S+$)|(?:[\\s\\S]{0,300})))\"", 0);
  ASSERT_TRUE(anchored.ok()) << anchored.status();
  ASSERT_TRUE(anchored->has_value());
  EXPECT_EQ((*anchored)->max, 300u);
  // A count the body cannot reach within the bound: no string.
  absl::StatusOr<std::optional<CountedParts>> none =
      SplitCountedRegex("\"(?J:(?&:(?:a{50}b*)|(?:[\\s\\S]{0,40})))\"", 0);
  ASSERT_TRUE(none.ok()) << none.status();
  ASSERT_TRUE(none->has_value());
  EXPECT_FALSE(CountedAutomaton::Build(**none).ok());
}

// Two states of one class give the same outcome (dead / live / accepting)
// on every string of at most `depth` bytes over `alphabet`; sampled over
// the states `reach` lists. Returns the comparisons made.
int CompareClasses(const CountedAutomaton& a, const std::vector<uint32_t>& reach, uint32_t depth,
                   const std::string& alphabet, std::mt19937& rng) {
  const ByteDfa twin = a.TwinDfa();
  int compared = 0;
  auto outcome_counted = [&](uint32_t from, const std::string& t) {
    for (char c : t) {
      from = a.Step(from, static_cast<uint8_t>(c));
      if (from == CountedAutomaton::kDead) return 0;
    }
    return a.accepting(from) ? 2 : 1;
  };
  auto outcome_twin = [&](uint32_t from, const std::string& t) {
    for (char c : t) {
      from = twin.next[from][static_cast<uint8_t>(c)];
      if (from == 0) return 0;
    }
    return twin.accepting[from] ? 2 : 1;
  };
  for (uint32_t x : reach) {
    if (x == CountedAutomaton::kDead) continue;
    const uint32_t cx = a.MaskClass(x, depth);
    for (int trial = 0; trial < 300; ++trial) {
      std::string t;
      const size_t n = rng() % (depth + 1);
      for (size_t i = 0; i < n; ++i) t += alphabet[rng() % alphabet.size()];
      const int want = outcome_counted(x, t);
      const int got = (cx & CountedAutomaton::kLocalClass) != 0
                          ? outcome_counted(cx & ~CountedAutomaton::kLocalClass, t)
                          : outcome_twin(cx, t);
      if (got != want) {
        ADD_FAILURE() << "state " << x << " class " << cx << " '" << t << "'";
        return compared;
      }
      ++compared;
    }
  }
  return compared;
}

TEST(CountedAutomaton, ClassesAgreeWithinTheirDepth) {
  const uint32_t depth = 6;
  std::mt19937 rng(3);
  const CountedAutomaton a = Counted("\"(?:ab|c){3,30}\"");
  // Reach every state by the string c^k (ab)^... : states (k, u) for k <= 30.
  std::vector<uint32_t> states = {a.start()};
  uint32_t s = a.Step(a.start(), '"');
  for (int k = 0; k <= 30; ++k) {
    states.push_back(s);
    states.push_back(a.Step(s, 'a'));
    s = a.Step(s, 'c');
  }
  EXPECT_GT(CompareClasses(a, states, depth, "abc\"", rng), 10000);
  // With a body: words of a-e, at most 4, within 40 code points; states
  // reached by random walks along live bytes.
  absl::StatusOr<std::optional<CountedParts>> parts =
      SplitCountedRegex("\"(?J:(?&:(?:(?:[a-e]+ ){0,3}[a-e]+)|(?:[\\s\\S]{0,40})))\"", 0);
  ASSERT_TRUE(parts.ok() && parts->has_value());
  absl::StatusOr<CountedAutomaton> b = CountedAutomaton::Build(**std::move(parts));
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<uint32_t> reached;
  for (int walk = 0; walk < 60; ++walk) {
    uint32_t x = b->start();
    for (int i = 0; i < 45 && x != CountedAutomaton::kDead; ++i) {
      reached.push_back(x);
      std::vector<uint8_t> live;
      for (uint32_t c = 0; c < 256; ++c) {
        if (b->live_bytes(x).test(c)) live.push_back(static_cast<uint8_t>(c));
      }
      if (live.empty()) break;
      x = b->Step(x, live[rng() % live.size()]);
    }
  }
  EXPECT_GT(CompareClasses(*b, reached, depth, "abe \"", rng), 100000);
}

TEST(CountedAutomaton, RefusesPartsItCannotStep) {
  CountedParts p;
  absl::StatusOr<ByteDfa> unit = CompileRegex("a|ab", 0);  // not prefix-free
  ASSERT_TRUE(unit.ok());
  p.unit = *unit;
  p.max = 40;
  p.suffix = "\"";
  EXPECT_FALSE(CountedAutomaton::Build(p).ok());
  unit = CompileRegex("\"|b", 0);  // the suffix's byte starts a unit
  ASSERT_TRUE(unit.ok());
  p.unit = *unit;
  EXPECT_FALSE(CountedAutomaton::Build(p).ok());
  // Other shapes are not split: two counted groups, no suffix, J flag.
  for (const char* other : {"\"a{0,40}b{0,40}\"", "\"a{0,40}", "a*"}) {
    absl::StatusOr<std::optional<CountedParts>> split = SplitCountedRegex(other, 0);
    ASSERT_TRUE(split.ok()) << split.status();
    EXPECT_FALSE(split->has_value()) << other;
  }
  absl::StatusOr<std::optional<CountedParts>> j = SplitCountedRegex("\"a{0,40}\"", kRegexJsonString);
  ASSERT_TRUE(j.ok());
  EXPECT_FALSE(j->has_value());
  // The unit's own counts keep the dialect's limit.
  EXPECT_FALSE(SplitCountedRegex("\"(?:a{2000}){0,40}\"", 0).ok());
}

}  // namespace
}  // namespace zapgram::grammar
