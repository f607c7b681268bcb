// Tests of the lazily determinized automaton (grammar/lazy_dfa.h) and of the
// terminals that use it inside grammars (parser/flat_grammar.h):
//  - lazy against eager: random regexes, the same NFA determinized both ways,
//    agree on liveness and acceptance after every prefix of random strings;
//  - a regex whose full DFA has ~2^21 states compiles, is recognized exactly
//    (RE2 as the oracle) and creates only the states its inputs reach;
//  - token masks over a lazy terminal equal a brute-force per-token check;
//  - the state cap: kOverflow from the automaton, kResourceExhausted from the
//    recognizer, never a silent rejection;
//  - concurrent readers of one automaton agree with a single-threaded run.
#include "grammar/lazy_dfa.h"

#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "grammar/regex_compiler.h"
#include "gtest/gtest.h"
#include "re2/re2.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram::grammar {
namespace {

// The NFA of `pattern` and a lazy automaton over it (one column per byte
// class of the NFA's ranges).
struct LazySetup {
  std::unique_ptr<LazyDfa> dfa;
  std::array<uint8_t, 256> byte_class{};
};

LazySetup MakeLazy(const std::string& pattern, uint32_t max_states) {
  ByteNfa nfa;
  absl::StatusOr<uint32_t> end = AddRegex(nfa, 0, pattern, 0);
  EXPECT_TRUE(end.ok()) << end.status();
  nfa.SetAccepting(*end);
  ByteClassPartition classes;
  classes.RefineByRanges(nfa);
  LazySetup out;
  for (uint32_t b = 0; b < 256; ++b) out.byte_class[b] = classes.class_of(static_cast<uint8_t>(b));
  out.dfa = std::make_unique<LazyDfa>(nfa, std::vector<uint32_t>{0}, classes.Representatives(),
                                      /*first_id=*/1, max_states);
  return out;
}

// A random regex over a, b, c and é (two bytes), with alternation, groups,
// stars and small counted repetition.
std::string RandomRegex(std::mt19937_64& rng, int depth) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  static const char* atoms[] = {"a", "b", "c", "\xC3\xA9", "[ab]", "[^a]", ".", "(?:ab)"};
  if (depth == 0 || pick(3) == 0) return atoms[pick(8)];
  switch (pick(4)) {
    case 0:
      return RandomRegex(rng, depth - 1) + RandomRegex(rng, depth - 1);
    case 1:
      return "(?:" + RandomRegex(rng, depth - 1) + "|" + RandomRegex(rng, depth - 1) + ")";
    case 2: {
      static const char* quantifiers[] = {"*", "+", "?", "{2}", "{1,3}", "{0,4}"};
      return "(?:" + RandomRegex(rng, depth - 1) + ")" + quantifiers[pick(6)];
    }
    default:
      return RandomRegex(rng, depth - 1);
  }
}

TEST(LazyDfa, AgreesWithTheEagerDfaOnRandomRegexes) {
  std::mt19937_64 rng(20261121);
  static const char* pieces[] = {"a", "b", "c", "\xC3\xA9", "\xC3", "\xA9", "x"};
  int regexes = 0, checks = 0;
  for (int r = 0; r < 300; ++r) {
    const std::string pattern = RandomRegex(rng, 4);
    absl::StatusOr<ByteDfa> eager = CompileRegex(pattern, 0);
    ASSERT_TRUE(eager.ok()) << pattern << ": " << eager.status();
    LazySetup lazy = MakeLazy(pattern, 1u << 16);
    ++regexes;
    for (int t = 0; t < 80; ++t) {
      std::string input;
      const int length = static_cast<int>(rng() % 9);
      for (int i = 0; i < length; ++i) input += pieces[rng() % 7];
      uint32_t e = eager->empty() ? 0 : 1;
      uint32_t l = lazy.dfa->start(0);
      ASSERT_EQ(e != 0, l != 0) << pattern;
      for (size_t i = 0; i < input.size() && e != 0; ++i) {
        const uint8_t byte = static_cast<uint8_t>(input[i]);
        e = eager->next[e][byte];
        l = lazy.dfa->Step(l, lazy.byte_class[byte]);
        ASSERT_NE(l, LazyDfa::kOverflow);
        ASSERT_EQ(e != 0, l != 0) << "/" << pattern << "/ on '" << input.substr(0, i + 1) << "'";
        if (e != 0) {
          ++checks;
          ASSERT_EQ(eager->accepting[e] != 0, lazy.dfa->accepting(l)) << pattern;
          ASSERT_EQ(lazy.dfa->live_bytes(l).any(), [&] {
            for (uint32_t b = 0; b < 256; ++b) {
              if (eager->next[e][b]) return true;
            }
            return false;
          }()) << pattern;
        }
      }
    }
  }
  EXPECT_EQ(regexes, 300);
  EXPECT_GT(checks, 10000);
}

TEST(LazyDfa, StatesPastTheCapOverflowAndAreNotStored) {
  // Every prefix of (a|b)*a(a|b){12} reaches a new subset for a while.
  LazySetup lazy = MakeLazy("(?:a|b)*a(?:a|b){12}", 8);
  uint32_t s = lazy.dfa->start(0);
  int steps = 0;
  while (s != LazyDfa::kOverflow && steps < 100) {
    s = lazy.dfa->Step(s, lazy.byte_class['a' + steps % 2]);
    ++steps;
  }
  EXPECT_EQ(s, LazyDfa::kOverflow);
  EXPECT_EQ(lazy.dfa->num_states(), 8u);
}

TEST(LazyDfa, ConcurrentReadersAgreeWithASingleThread) {
  const std::string pattern = "(?:a|b)*a(?:a|b){10}c";
  std::vector<std::string> inputs;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 400; ++i) {
    std::string s;
    for (int k = 0; k < 30; ++k) s += "ab"[rng() % 2];
    if (i % 3 == 0) s += 'c';
    inputs.push_back(s);
  }
  auto run = [&](const LazySetup& lazy, size_t from, size_t step, std::vector<int>* verdicts) {
    for (size_t i = from; i < inputs.size(); i += step) {
      uint32_t s = lazy.dfa->start(0);
      for (char c : inputs[i]) {
        if (s == 0) break;
        s = lazy.dfa->Step(s, lazy.byte_class[static_cast<uint8_t>(c)]);
      }
      (*verdicts)[i] = s != 0 && lazy.dfa->accepting(s);
    }
  };
  LazySetup single = MakeLazy(pattern, 1u << 20);
  std::vector<int> expected(inputs.size(), -1);
  run(single, 0, 1, &expected);
  LazySetup shared = MakeLazy(pattern, 1u << 20);
  std::vector<int> got(inputs.size(), -1);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t) threads.emplace_back(run, std::cref(shared), t, 4, &got);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(got, expected);
  int accepted = 0;
  for (int v : expected) accepted += v;
  EXPECT_GT(accepted, 0);
  EXPECT_EQ(shared.dfa->num_states(), single.dfa->num_states());
}

TEST(LazyTerminal, HugeRegexIsRecognizedExactly) {
  // About 2^21 DFA states: refused when determinized ahead of time, fine lazily.
  const std::string pattern = "(?:a|b)*a(?:a|b){20}";
  absl::StatusOr<ByteDfa> eager = CompileRegex(pattern, 0);
  ASSERT_FALSE(eager.ok());
  EXPECT_EQ(eager.status().code(), absl::StatusCode::kResourceExhausted);

  absl::StatusOr<zapgram::Grammar> grammar = zapgram::Grammar::Load("regex:" + pattern);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  const RE2 oracle(pattern);
  ASSERT_TRUE(oracle.ok());
  std::mt19937_64 rng(99);
  int matches = 0;
  for (int t = 0; t < 300; ++t) {
    std::string input;
    const int length = 15 + static_cast<int>(rng() % 30);
    for (int i = 0; i < length; ++i) input += "ab"[rng() % 2];
    if (t % 7 == 0) input[rng() % input.size()] = 'c';
    zapgram::Recognizer recognizer(*grammar);
    const size_t taken = recognizer.FeedBytes(input);
    ASSERT_TRUE(recognizer.status().ok()) << recognizer.status();
    const bool accepted = taken == input.size() && recognizer.IsAccepting();
    ASSERT_EQ(accepted, RE2::FullMatch(input, oracle)) << input;
    // Any a/b string is a prefix of a match; a `c` never is.
    ASSERT_EQ(taken, std::min(input.size(), input.find('c'))) << input;
    matches += accepted;
  }
  EXPECT_GT(matches, 30);
  const zapgram::GrammarStats stats = grammar->stats();
  // Only visited subsets exist: far fewer than 2^21 (at most one new state
  // per byte fed, 300 inputs of < 45 bytes).
  EXPECT_LT(stats.terminal_states, 300u * 45u);
}

TEST(LazyTerminal, MasksMatchABruteForceCheck) {
  // Tokens over a, b, c: masks of a lazy terminal (2^17 DFA states) must allow
  // exactly the tokens that a fresh recognizer accepts after the prefix.
  absl::StatusOr<zapgram::Grammar> grammar =
      zapgram::Grammar::Load("regex:<(?:a|b)*a(?:a|b){16}c?>");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  const std::vector<std::string> tokens = {"a", "b", "c", ">", "<", "ab", "ba", "aa", "bb", "abab",
                                           "bbbb", "aaaa", "ac", "bc", "c>", "a>", "<a", "b>", ""};
  absl::StatusOr<zapgram::Vocabulary> vocabulary =
      zapgram::Vocabulary::FromTokens(tokens, {static_cast<int32_t>(tokens.size() - 1)});
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status();
  absl::StatusOr<zapgram::CompiledGrammar> compiled = zapgram::CompiledGrammar::Compile(*grammar, *vocabulary);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  std::mt19937_64 rng(5);
  int masks = 0;
  for (int walk = 0; walk < 30; ++walk) {
    zapgram::Matcher matcher(*compiled);
    std::string text;
    for (int step = 0; step < 60; ++step) {
      std::vector<uint32_t> words(compiled->mask_words());
      matcher.ComputeMask(words.data());
      ASSERT_TRUE(matcher.status().ok()) << matcher.status();
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < static_cast<int32_t>(tokens.size()); ++id) {
        const bool in_mask = (words[id / 32] >> (id % 32)) & 1u;
        bool brute;
        if (id == static_cast<int32_t>(tokens.size() - 1)) {
          zapgram::Recognizer r(*grammar);
          brute = r.FeedBytes(text) == text.size() && r.IsAccepting();
        } else {
          zapgram::Recognizer r(*grammar);
          const std::string extended = text + tokens[id];
          brute = r.FeedBytes(extended) == extended.size();
        }
        ASSERT_EQ(in_mask, brute) << "after '" << text << "' token '" << tokens[id] << "'";
        if (in_mask) allowed.push_back(id);
      }
      ++masks;
      if (allowed.empty()) break;
      const int32_t id = allowed[rng() % allowed.size()];
      ASSERT_TRUE(matcher.AcceptToken(id));
      if (id == static_cast<int32_t>(tokens.size() - 1)) break;
      text += tokens[id];
    }
  }
  EXPECT_GT(masks, 300);
}

TEST(LazyTerminal, StateBudgetIsAnErrorNotARejection) {
  zapgram::CompileLimits limits;
  limits.max_dfa_states = 64;
  limits.max_eager_regex_states = 16;
  absl::StatusOr<zapgram::Grammar> grammar = zapgram::Grammar::Load("regex:(?:a|b)*a(?:a|b){12}", {}, limits);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  zapgram::Recognizer recognizer(*grammar);
  std::mt19937_64 rng(3);
  std::string input;
  for (int i = 0; i < 200; ++i) input += "ab"[rng() % 2];
  const size_t taken = recognizer.FeedBytes(input);
  EXPECT_LT(taken, input.size());
  EXPECT_EQ(recognizer.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(recognizer.status().message().find("max_dfa_states"), std::string::npos)
      << recognizer.status();
}

}  // namespace
}  // namespace zapgram::grammar
