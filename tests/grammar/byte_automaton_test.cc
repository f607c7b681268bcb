// Byte DFAs of literals and classes: whole-string matching, trimming (every
// live state can still reach acceptance) and the state cap.
#include "grammar/byte_automaton.h"

#include <array>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "grammar/regex_compiler.h"
#include "grammar/utf8.h"

namespace zapgram::grammar {
namespace {

TEST(ByteAutomatonTest, LiteralMatchesOnlyItself) {
  absl::StatusOr<ByteDfa> dfa = LiteralDfa("true");
  ASSERT_TRUE(dfa.ok());
  EXPECT_EQ(dfa->num_states(), 6u);  // dead + 5
  EXPECT_TRUE(dfa->Matches("true"));
  EXPECT_FALSE(dfa->Matches("tru"));
  EXPECT_FALSE(dfa->Matches("truee"));
  EXPECT_FALSE(dfa->Matches(""));
}

// LiteralClassDfa writes down what narrowing the determinized literal
// gives: same states, same classes, same table.
TEST(ByteAutomatonTest, LiteralClassDfaIsTheNarrowedLiteralDfa) {
  std::mt19937 rng(7);
  std::vector<std::string> literals = {"", "a", "aaaa", "true", "\"key\":", std::string(1, '\0')};
  std::string every_byte;
  for (int b = 255; b >= 0; --b) every_byte.push_back(static_cast<char>(b));
  literals.push_back(every_byte);
  for (int i = 0; i < 300; ++i) {
    std::string s(rng() % 12, '\0');
    const uint32_t alphabet = i % 3 == 0 ? 3 : 256;  // small alphabets repeat bytes
    for (char& c : s) c = static_cast<char>(i % 3 == 0 ? 'x' + rng() % alphabet : rng() % alphabet);
    literals.push_back(s);
  }
  for (const std::string& literal : literals) {
    absl::StatusOr<ByteDfa> dfa = LiteralDfa(literal);
    ASSERT_TRUE(dfa.ok());
    const ClassDfa expected = ClassDfa::Narrow(*dfa);
    const ClassDfa direct = LiteralClassDfa(literal);
    EXPECT_EQ(direct.class_of, expected.class_of) << literal;
    EXPECT_EQ(direct.num_classes, expected.num_classes) << literal;
    EXPECT_EQ(direct.next, expected.next) << literal;
    EXPECT_EQ(direct.accepting, expected.accepting) << literal;
  }
}

TEST(ByteAutomatonTest, ClassMatchesEncodedCodepoints) {
  // [^"\\] over all of Unicode.
  std::vector<CodepointRange> ranges = NormalizeRanges({{'"', '"'}, {'\\', '\\'}}, true);
  absl::StatusOr<ByteDfa> dfa = CodepointClassDfa(ranges);
  ASSERT_TRUE(dfa.ok());
  for (uint32_t cp = 0; cp <= 0x10FFFF; cp += (cp < 0x10000 ? 1 : 13)) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    AppendUtf8(cp, &s);
    ASSERT_EQ(dfa->Matches(s), cp != '"' && cp != '\\') << cp;
  }
  EXPECT_FALSE(dfa->Matches("\xED\xA0\x80"));  // surrogate
  EXPECT_FALSE(dfa->Matches("\xC0\x80"));      // overlong NUL
  EXPECT_FALSE(dfa->Matches("ab"));            // two code points
}

TEST(ByteAutomatonTest, TrimmedStatesAllReachAcceptance) {
  ByteNfa nfa;
  uint32_t a = nfa.AddLiteral(0, "ab");
  nfa.SetAccepting(a);
  nfa.AddLiteral(0, "ax");  // dead end: never accepting
  absl::StatusOr<ByteDfa> dfa = Determinize(nfa, 100);
  ASSERT_TRUE(dfa.ok());
  uint32_t s = dfa->next[1]['a'];
  ASSERT_NE(s, 0u);
  EXPECT_EQ(dfa->next[s]['x'], 0u);  // trimmed away
  EXPECT_NE(dfa->next[s]['b'], 0u);
}

TEST(ByteAutomatonTest, EmptyLanguageGivesEmptyDfa) {
  ByteNfa nfa;
  nfa.AddLiteral(0, "abc");  // nothing accepting
  absl::StatusOr<ByteDfa> dfa = Determinize(nfa, 100);
  ASSERT_TRUE(dfa.ok());
  EXPECT_TRUE(dfa->empty());
  EXPECT_FALSE(dfa->Matches("abc"));
}

TEST(ByteAutomatonTest, StateCapIsAnError) {
  absl::StatusOr<ByteDfa> dfa = [] {
    ByteNfa nfa;
    nfa.SetAccepting(nfa.AddLiteral(0, "abcdefghijklmnop"));
    return Determinize(nfa, 8);
  }();
  ASSERT_FALSE(dfa.ok());
  EXPECT_EQ(dfa.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(dfa.status().message().find("max_dfa_states = 8"), std::string::npos);
}

// The subset construction WithoutEmptyString replaces: a fresh start state
// with the old start's byte ranges, then the DFA's states as NFA states.
absl::StatusOr<ByteDfa> WithoutEmptyStringByNfa(const ByteDfa& dfa, uint32_t max_states) {
  ByteNfa nfa;  // state 0: the new start; states 1.. mirror the DFA's
  for (uint32_t s = 1; s < dfa.num_states(); ++s) nfa.AddState();
  auto copy_row = [&](uint32_t row, uint32_t into) {
    for (uint32_t b = 0; b < 256;) {
      uint32_t to = dfa.next[row][b], e = b;
      while (e + 1 < 256 && dfa.next[row][e + 1] == to) ++e;
      if (to != 0) nfa.AddRange(into, static_cast<uint8_t>(b), static_cast<uint8_t>(e), to);
      b = e + 1;
    }
  };
  copy_row(1, 0);
  for (uint32_t s = 1; s < dfa.num_states(); ++s) {
    copy_row(s, s);
    if (dfa.accepting[s]) nfa.SetAccepting(s);
  }
  return Determinize(nfa, max_states);
}

TEST(ByteAutomatonTest, WithoutEmptyStringIsTheSubsetConstructionOfItsNfa) {
  const std::vector<std::string> patterns = {
      "a*", "(?:ab)*c?", "[a-c]*x?", "(?:\"[^\"]*\")?", "(?:[ \\t]{0,2},)*", "(?:a|bc)*(?:d|)",
      "[\\x{0}-\\x{10FFFF}]*", "(?:\\{(?:x|y)*\\})?z?", "(?:aa|ab|ba)*", "", "a?", "(?:a*b)*a*"};
  int compared = 0;
  for (const std::string& p : patterns) {
    absl::StatusOr<ByteDfa> minimal = CompileRegex(p, 0);
    absl::StatusOr<ByteDfa> unminimized = DeterminizeRegex(p, 0);
    ASSERT_TRUE(minimal.ok() && unminimized.ok()) << p;
    for (const ByteDfa* dfa : {&*minimal, &*unminimized}) {
      for (uint32_t cap : {3u, 5u, 1u << 16}) {
        absl::StatusOr<ByteDfa> direct = WithoutEmptyString(*dfa, cap);
        absl::StatusOr<ByteDfa> by_nfa = WithoutEmptyStringByNfa(*dfa, cap);
        ASSERT_EQ(direct.ok(), by_nfa.ok()) << p << " cap " << cap;
        ++compared;
        if (!direct.ok()) {
          EXPECT_EQ(direct.status(), by_nfa.status());
          continue;
        }
        EXPECT_EQ(direct->next, by_nfa->next) << p << " cap " << cap;
        EXPECT_EQ(direct->accepting, by_nfa->accepting) << p << " cap " << cap;
        EXPECT_FALSE(!direct->empty() && direct->accepting[1]) << p;
      }
    }
  }
  EXPECT_EQ(compared, 72);
}

// The textbook subset construction over bytes (whole epsilon closures, no
// classes, no trim) walked in step with Determinize: every pair of states
// reached by the same bytes must agree on acceptance, and a state of ours is
// live (not 0) exactly when its subset can still reach acceptance. So the
// languages are equal and the DFA is trimmed, on random NFAs with dead
// ends, epsilon cycles and ranges that repeat one target under many bytes.
TEST(ByteAutomatonTest, DeterminizeAgreesWithTheTextbookSubsetConstruction) {
  std::mt19937 rng(12);
  auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  int trimmed_cases = 0;
  for (int round = 0; round < 400; ++round) {
    ByteNfa nfa;
    const uint32_t n = 1 + pick(10);
    for (uint32_t s = 1; s < n; ++s) nfa.AddState();
    for (uint32_t s = 0; s < n; ++s) {
      for (uint32_t r = pick(4); r > 0; --r) {
        uint8_t lo = static_cast<uint8_t>('a' + pick(8)), hi = static_cast<uint8_t>(lo + pick(3));
        if (pick(6) == 0) lo = 0, hi = 255;
        nfa.AddRange(s, lo, hi, pick(n));
      }
      for (uint32_t e = pick(3); e > 0; --e) nfa.AddEpsilon(s, pick(n));
      if (pick(4) == 0) nfa.SetAccepting(s);
    }
    absl::StatusOr<ByteDfa> dfa = Determinize(nfa, 1u << 12);
    ASSERT_TRUE(dfa.ok()) << round;

    using Subset = std::set<uint32_t>;
    auto closure = [&](Subset set) {
      std::vector<uint32_t> stack(set.begin(), set.end());
      while (!stack.empty()) {
        const uint32_t s = stack.back();
        stack.pop_back();
        for (uint32_t t : nfa.epsilons(s)) {
          if (set.insert(t).second) stack.push_back(t);
        }
      }
      return set;
    };
    auto step = [&](const Subset& set, uint8_t b) {
      Subset out;
      for (uint32_t s : set) {
        for (const ByteNfa::Range& r : nfa.ranges(s)) {
          if (r.lo <= b && b <= r.hi) out.insert(r.to);
        }
      }
      return closure(out);
    };
    auto accepts = [&](const Subset& set) {
      for (uint32_t s : set) {
        if (nfa.accepting(s)) return true;
      }
      return false;
    };
    // Live subsets: those from which some byte path reaches acceptance.
    std::map<Subset, std::vector<Subset>> successors;
    std::vector<Subset> order = {closure({0})};
    successors[order[0]];
    for (size_t i = 0; i < order.size(); ++i) {
      for (uint32_t b = 0; b < 256; ++b) {
        Subset to = step(order[i], static_cast<uint8_t>(b));
        successors[order[i]].push_back(to);
        if (successors.emplace(to, std::vector<Subset>{}).second) order.push_back(to);
      }
    }
    std::set<Subset> live;
    for (bool grew = true; grew;) {
      grew = false;
      for (const Subset& set : order) {
        if (live.count(set)) continue;
        bool is_live = accepts(set);
        for (const Subset& to : successors[set]) is_live = is_live || live.count(to) > 0;
        if (is_live) grew = live.insert(set).second;
      }
    }
    bool has_dead_end = false;
    for (const Subset& set : order) has_dead_end |= !set.empty() && !live.count(set);
    trimmed_cases += has_dead_end;

    std::set<std::pair<uint32_t, Subset>> seen;
    std::vector<std::pair<uint32_t, Subset>> work = {{dfa->empty() ? 0u : 1u, order[0]}};
    while (!work.empty()) {
      auto [d, set] = work.back();
      work.pop_back();
      if (!seen.insert({d, set}).second) continue;
      const bool is_live = live.count(set) > 0;
      ASSERT_EQ(d != 0, is_live) << "round " << round;
      if (d == 0) continue;
      ASSERT_EQ(dfa->accepting[d] != 0, accepts(set)) << "round " << round;
      for (uint32_t b = 0; b < 256; ++b) work.push_back({dfa->next[d][b], successors[set][b]});
    }
  }
  EXPECT_GT(trimmed_cases, 40);
}

// ForEachLiveColumn against the plain loop: rows of every width from 0 to
// 13 (the four-column groups and the tail), mostly dead or mostly live.
TEST(ByteAutomatonTest, ForEachLiveColumnVisitsTheNonZeroColumnsInOrder) {
  std::mt19937 rng(7);
  int visited = 0;
  for (int round = 0; round < 2000; ++round) {
    const uint32_t k = static_cast<uint32_t>(round % 22);  // groups of 8 and 4, and a tail
    const uint32_t dead_in_8 = 1 + static_cast<uint32_t>(rng() % 8);
    std::vector<uint32_t> row(k);
    for (uint32_t& to : row) to = rng() % 8 < dead_in_8 ? 0 : 1 + static_cast<uint32_t>(rng() % 50);
    std::vector<std::pair<uint32_t, uint32_t>> expected, got;
    for (uint32_t c = 0; c < k; ++c) {
      if (row[c] != 0) expected.push_back({c, row[c]});
    }
    ForEachLiveColumn(row.data(), k, [&](uint32_t c, uint32_t to) { got.push_back({c, to}); });
    ASSERT_EQ(got, expected) << "round " << round;
    visited += static_cast<int>(got.size());
  }
  EXPECT_GT(visited, 2000);
}

// A partition refined by an NFA's ranges, fresh (determinization's case)
// or already split: two bytes share a class exactly when they shared one
// before and no range boundary lies between them (classes are intervals
// of the ranges' end points, so a range covers whole classes), and classes
// are numbered in order of their smallest bytes.
TEST(ByteAutomatonTest, RefineByRangesSplitsExactlyWhereRangesDiffer) {
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    ByteNfa nfa;
    const int ranges = static_cast<int>(rng() % 12);
    std::vector<std::pair<uint32_t, uint32_t>> spans;
    for (int i = 0; i < ranges; ++i) {
      uint32_t lo = rng() % 256, hi = rng() % 256;
      if (rng() % 3 == 0) hi = lo;
      if (lo > hi) std::swap(lo, hi);
      nfa.AddRange(0, static_cast<uint8_t>(lo), static_cast<uint8_t>(hi), nfa.AddState());
      spans.push_back({lo, hi});
    }
    // Round 1 in 2 starts from a partition split by an arbitrary row.
    std::array<uint32_t, 256> before{};
    if (round % 2 == 1) {
      for (uint32_t& v : before) v = rng() % 3;
    }
    ByteClassPartition classes;
    classes.Refine(before);
    classes.RefineByRanges(nfa);
    for (uint32_t x = 0; x < 256; ++x) {
      for (uint32_t y = x + 1; y < 256; y += 1 + static_cast<uint32_t>(rng() % 7)) {
        // No range starts or ends between them (its first byte or the one
        // past its last lies in x+1..y).
        bool same = before[x] == before[y];
        for (const auto& [lo, hi] : spans) {
          same = same && !(x < lo && lo <= y) && !(x <= hi && hi < y);
        }
        ASSERT_EQ(classes.class_of(static_cast<uint8_t>(x)) == classes.class_of(static_cast<uint8_t>(y)),
                  same)
            << "round " << round << " bytes " << x << " " << y;
      }
    }
    const std::vector<uint8_t> firsts = classes.Representatives();
    ASSERT_EQ(firsts.size(), classes.num_classes());
    uint32_t seen = 0;  // classes met so far, in byte order
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t c = classes.class_of(static_cast<uint8_t>(b));
      ASSERT_LE(c, seen) << "round " << round << " byte " << b;
      if (c == seen) {
        EXPECT_EQ(firsts[c], b);
        ++seen;
      }
    }
    EXPECT_EQ(seen, classes.num_classes());
  }
}

}  // namespace
}  // namespace zapgram::grammar
