// Byte DFAs of literals and classes: whole-string matching, trimming (every
// live state can still reach acceptance) and the state cap.
#include "grammar/byte_automaton.h"

#include <string>

#include "gtest/gtest.h"
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

}  // namespace
}  // namespace zapgram::grammar
