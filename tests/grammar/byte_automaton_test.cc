// Byte DFAs of literals and classes: whole-string matching, trimming (every
// live state can still reach acceptance) and the state cap.
#include "grammar/byte_automaton.h"

#include <string>
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

}  // namespace
}  // namespace zapgram::grammar
