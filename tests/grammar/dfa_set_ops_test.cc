// Tests of grammar/dfa_set_ops: each operation against direct membership in
// its operands (ByteDfa::Matches) on every string of a small alphabet up to
// a length, plus the budget and the prefix-free check. The regex dialect's
// (?&:) and (?~:) are tested against RE2 in regex_compiler_test.cc.
#include "grammar/dfa_set_ops.h"

#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "grammar/regex_compiler.h"
#include "grammar/utf8.h"

namespace zapgram::grammar {
namespace {

ByteDfa Dfa(std::string_view pattern) {
  absl::StatusOr<ByteDfa> dfa = CompileRegex(pattern, 0);
  EXPECT_TRUE(dfa.ok()) << dfa.status();
  return dfa.ok() ? *std::move(dfa) : ByteDfa{};
}

// Every string over `alphabet` pieces with at most `max_pieces` pieces.
std::vector<std::string> AllStrings(const std::vector<std::string>& alphabet, int max_pieces) {
  std::vector<std::string> out = {""}, level = {""};
  for (int k = 0; k < max_pieces; ++k) {
    std::vector<std::string> next;
    for (const std::string& s : level) {
      for (const std::string& p : alphabet) next.push_back(s + p);
    }
    out.insert(out.end(), next.begin(), next.end());
    level = std::move(next);
  }
  return out;
}

size_t Codepoints(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

const std::vector<std::string> kAlphabet = {"a", "b", "\xc3\xa9", "\n"};

TEST(DfaSetOpsTest, IntersectionAndDifferenceAgreeWithTheOperands) {
  const std::vector<std::string> patterns = {"a*b", "(ab|b)*", "[^a]*", "\xc3\xa9?a+", "", "b{2,3}",
                                             "(?s:.)*a(?s:.)"};
  const std::vector<std::string> strings = AllStrings(kAlphabet, 5);
  for (const std::string& pa : patterns) {
    for (const std::string& pb : patterns) {
      const ByteDfa a = Dfa(pa), b = Dfa(pb);
      absl::StatusOr<ByteDfa> both = IntersectDfas(a, b, 1000);
      absl::StatusOr<ByteDfa> minus = SubtractDfa(a, b, 1000);
      ASSERT_TRUE(both.ok() && minus.ok());
      for (const std::string& s : strings) {
        EXPECT_EQ(both->Matches(s), a.Matches(s) && b.Matches(s)) << pa << " & " << pb << " " << s;
        EXPECT_EQ(minus->Matches(s), a.Matches(s) && !b.Matches(s)) << pa << " - " << pb << " " << s;
      }
      // Trimmed: every state reaches acceptance, the empty language is empty().
      EXPECT_EQ(MinimizeDfa(*both).num_states(), MinimizeDfa(MinimizeDfa(*both)).num_states());
      bool any = false;
      for (const std::string& s : strings) any = any || both->Matches(s);
      if (any) {
        EXPECT_FALSE(both->empty());
      }
    }
  }
}

// Read by the operands' joint byte classes, a difference is the byte-read
// one state for state (and so is a state limit's verdict).
TEST(DfaSetOpsTest, DifferenceByClassesIsTheDifferenceByBytes) {
  const std::vector<std::string> patterns = {"a*b", "(ab|b)*", "[^a]*", "\xc3\xa9?a+", "", "b{2,3}",
                                             "(?s:.)*a(?s:.)", "(?J)[\\s\\S]*", "(?J)\"[a-z_]+\""};
  for (const std::string& pa : patterns) {
    for (const std::string& pb : patterns) {
      absl::StatusOr<ClassDfa> a = DeterminizeRegexToClasses(pa, 0);
      absl::StatusOr<ClassDfa> b = DeterminizeRegexToClasses(pb, 0);
      ASSERT_TRUE(a.ok() && b.ok()) << pa << " " << pb;
      const ClassDfa ma = MinimizeDfaToClasses(*a), mb = MinimizeDfaToClasses(*b);
      for (const uint32_t limit : {1000u, 3u}) {
        absl::StatusOr<ByteDfa> by_bytes = SubtractDfa(ma.Widen(), mb.Widen(), limit);
        absl::StatusOr<ClassDfa> by_classes = SubtractDfa(ma, mb, limit);
        ASSERT_EQ(by_bytes.ok(), by_classes.ok()) << pa << " - " << pb;
        if (!by_bytes.ok()) continue;
        const ByteDfa widened = by_classes->Widen();
        EXPECT_EQ(by_bytes->next, widened.next) << pa << " - " << pb;
        EXPECT_EQ(by_bytes->accepting, widened.accepting) << pa << " - " << pb;
      }
    }
  }
}

TEST(DfaSetOpsTest, CountedIntersectionCountsCodePoints) {
  const ByteDfa one = Dfa("(?s:.)");
  const std::vector<std::string> strings = AllStrings(kAlphabet, 5);
  for (const char* pa : {"(?s:.)*", "a*b", "[ab\xc3\xa9]*"}) {
    const ByteDfa a = Dfa(pa);
    for (uint32_t lo = 0; lo <= 3; ++lo) {
      for (uint32_t hi : {lo, lo + 1, lo + 3, kUnbounded}) {
        absl::StatusOr<ByteDfa> counted = IntersectCounted(a, one, lo, hi, 1000);
        ASSERT_TRUE(counted.ok()) << counted.status();
        for (const std::string& s : strings) {
          const size_t n = Codepoints(s);
          EXPECT_EQ(counted->Matches(s), a.Matches(s) && n >= lo && (hi == kUnbounded || n <= hi))
              << pa << " {" << lo << "," << hi << "} " << s;
        }
      }
    }
  }
  // Only letters count as code points here: a "one" DFA of a narrower class.
  absl::StatusOr<ByteDfa> letters = IntersectCounted(Dfa("(?s:.)*"), Dfa("[ab]"), 2, 2, 100);
  ASSERT_TRUE(letters.ok());
  EXPECT_TRUE(letters->Matches("ab"));
  EXPECT_FALSE(letters->Matches("a\xc3\xa9"));
  EXPECT_FALSE(letters->Matches("a"));
}

TEST(DfaSetOpsTest, BudgetAndPrefixFreeChecks) {
  absl::StatusOr<ByteDfa> big = IntersectCounted(Dfa("a*"), Dfa("a"), 0, 500, 100);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(big.status().message().find("max_dfa_states = 100"), std::string::npos);
  absl::StatusOr<ByteDfa> not_prefix_free = IntersectCounted(Dfa("a*"), Dfa("aa?"), 0, 5, 100);
  ASSERT_FALSE(not_prefix_free.ok());
  EXPECT_EQ(not_prefix_free.status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<ByteDfa> none = IntersectDfas(Dfa("a+"), Dfa("b+"), 100);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(DfaSetOpsTest, StampedFragmentsKeepTheLanguage) {
  const std::vector<std::string> strings = AllStrings(kAlphabet, 5);
  for (std::string p : {"a*b", "(ab)*c", "(ab)*", "[^a]*", "", "b{2,3}"}) {
    const ByteDfa dfa = Dfa(p);
    // x (fragment)? : the optional copy must not accept a string that only
    // returns the fragment to its start.
    ByteNfa nfa;
    const uint32_t at = nfa.AddLiteral(0, "x");
    const uint32_t end = StampDfa(nfa, at, ClassDfa::Narrow(dfa));
    const uint32_t out = nfa.AddState();
    nfa.AddEpsilon(end, out);
    nfa.AddEpsilon(at, out);
    nfa.SetAccepting(out);
    absl::StatusOr<ByteDfa> round = Determinize(nfa, 1000);
    ASSERT_TRUE(round.ok());
    for (const std::string& s : strings) {
      EXPECT_EQ(round->Matches("x" + s), s.empty() || dfa.Matches(s)) << p << " " << s;
    }
  }
}

// A stamp reads its DFA by class; its ranges are the maximal runs of bytes
// with one target, state by state in byte order, as a scan of the widened
// rows finds them (checked here against that scan, on class DFAs whose
// classes are intervals and on joint classes that are not).
TEST(DfaSetOpsTest, StampedRangesAreTheByteRunsOfEachRow) {
  std::vector<ClassDfa> dfas;
  for (const char* p : {"a*b", "[^a]*", "(?J)[\\s\\S]*", "(?J)\"[a-z_]+\"", "[\xc3\xa9x-z]+b?"}) {
    absl::StatusOr<ClassDfa> dfa = DeterminizeRegexToClasses(p, 0);
    ASSERT_TRUE(dfa.ok()) << p;
    dfas.push_back(MinimizeDfaToClasses(*dfa));
  }
  absl::StatusOr<ClassDfa> joint = SubtractDfa(dfas[2], dfas[3], 1000);
  ASSERT_TRUE(joint.ok());
  dfas.push_back(*std::move(joint));
  for (const ClassDfa& dfa : dfas) {
    ByteNfa nfa;
    StampDfa(nfa, 0, dfa);
    // State 1 is the stamp's end, 2.. the DFA's states 1.. in order.
    const ByteDfa wide = dfa.Widen();
    ASSERT_EQ(nfa.num_states(), wide.num_states() + 1);
    for (uint32_t s = 1; s < wide.num_states(); ++s) {
      std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> expected, stamped;
      for (uint32_t lo = 0; lo < 256;) {
        uint32_t hi = lo;
        while (hi + 1 < 256 && wide.next[s][hi + 1] == wide.next[s][lo]) ++hi;
        if (wide.next[s][lo] != 0) expected.emplace_back(lo, hi, wide.next[s][lo] + 1);
        lo = hi + 1;
      }
      for (const ByteNfa::Range& r : nfa.ranges(s + 1)) stamped.emplace_back(r.lo, r.hi, r.to);
      EXPECT_EQ(stamped, expected) << "state " << s;
    }
  }
}

}  // namespace
}  // namespace zapgram::grammar
