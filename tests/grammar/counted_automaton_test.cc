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

TEST(CountedAutomaton, AgreesWithTheUnrolledRegex) {
  std::mt19937 rng(7);
  int checks = 0;
  for (const auto& [min, max] : std::vector<std::pair<int, int>>{{0, 3}, {2, 5}, {0, 33}, {5, 40}, {7, 7}}) {
    for (const std::string& unit : {std::string(kJsonChar), std::string("ab|c")}) {
      const std::string pattern = absl::StrCat("\"(?:", unit, "){", min, ",", max, "}\"");
      const CountedAutomaton a = Counted(pattern);
      absl::StatusOr<ByteDfa> dfa = CompileRegex(pattern, 0);
      ASSERT_TRUE(dfa.ok()) << dfa.status();
      for (int trial = 0; trial < 400; ++trial) {
        std::string s = "\"" + RandomText(rng, rng() % (max + 12));
        if (trial % 3 == 0) s += "\"";
        uint32_t local = a.start(), state = 1;
        for (size_t i = 0; i < s.size(); ++i) {
          const uint8_t b = static_cast<uint8_t>(s[i]);
          // Live bytes agree with the regex's live transitions.
          for (uint32_t c = 0; c < 256; ++c) {
            ASSERT_EQ(a.live_bytes(local).test(c), dfa->next[state][c] != 0)
                << pattern << " after " << i << " bytes of '" << s << "', byte " << c;
          }
          local = a.Step(local, b);
          state = dfa->next[state][b];
          ASSERT_EQ(local == CountedAutomaton::kDead, state == 0) << pattern << " '" << s << "' at " << i;
          if (state == 0) break;
          ASSERT_EQ(a.accepting(local), dfa->accepting[state] != 0) << pattern << " '" << s << "'";
          ++checks;
        }
      }
    }
  }
  EXPECT_GT(checks, 10000);
}

TEST(CountedAutomaton, ClassesAgreeWithinTheirDepth) {
  // Two states of one class give the same outcome (dead / live / accepting)
  // on every string of at most `depth` bytes; sampled.
  const uint32_t depth = 6;
  const CountedAutomaton a = Counted("\"(?:ab|c){3,30}\"");
  const ByteDfa twin = a.TwinDfa();
  std::mt19937 rng(3);
  // Reach every state by the string c^k (ab)^... : states (k, u) for k <= 30.
  std::vector<uint32_t> states = {a.start()};
  uint32_t s = a.Step(a.start(), '"');
  for (int k = 0; k <= 30; ++k) {
    states.push_back(s);
    states.push_back(a.Step(s, 'a'));
    s = a.Step(s, 'c');
  }
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
  for (uint32_t x : states) {
    if (x == CountedAutomaton::kDead) continue;
    const uint32_t cx = a.MaskClass(x, depth);
    for (int trial = 0; trial < 300; ++trial) {
      std::string t;
      const size_t n = rng() % (depth + 1);
      for (size_t i = 0; i < n; ++i) t += "abc\""[rng() % 4];
      const int want = outcome_counted(x, t);
      if ((cx & CountedAutomaton::kLocalClass) != 0) {
        ASSERT_EQ(outcome_counted(cx & ~CountedAutomaton::kLocalClass, t), want) << "state " << x << " '" << t << "'";
      } else {
        ASSERT_EQ(outcome_twin(cx, t), want) << "state " << x << " twin " << cx << " '" << t << "'";
      }
      ++compared;
    }
  }
  EXPECT_GT(compared, 10000);
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
