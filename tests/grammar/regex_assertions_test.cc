// NeverMatchingAssertion (grammar/regex_assertions.cc): patterns whose
// assertions keep them from matching any text, whatever surrounds the
// match, and the Lark terminals that become the empty language for it.
//
// Chosen patterns with known answers, then random patterns of lookaheads and
// anchors checked against an independent engine: std::regex (ECMAScript:
// (?= (?! ^ $ as Python reads them without the m flag, on text without
// newlines). Every pattern said never to match must have no match, in
// std::regex, of any text of up to 4 letters between any contexts of up to 2
// letters; and every pattern with assertions that is not said so must still
// be refused by the compiler (the answer's contract).
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "grammar/regex_compiler.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram::grammar {
namespace {

TEST(RegexAssertions, ChosenPatterns) {
  struct Case {
    std::string pattern;
    uint32_t flags;
    std::string never;  // the assertion named, "" when none is proven
  };
  const std::vector<Case> cases = {
      {"a(?=b)c", 0, "(?=b) at offset 1"},
      {"a^b$c", 0, "^ at offset 1"},
      {"ab$c", 0, "$ at offset 2"},
      {"a(?!b)b", 0, "(?!b) at offset 1"},
      {"x(?<!x)", 0, "(?<!x) at offset 1"},
      {"a\\Ab", 0, "\\A at offset 1"},
      {"a\\Zb", 0, "\\Z at offset 1"},
      {"(a(?=bc)b)d", 0, "(?=bc) at offset 2"},  // inside an unquantified group
      {"a(?=b|c)d", 0, "(?=b|c) at offset 1"},
      {"a(?=xy)x", 0, ""},         // "x" is a prefix of "xy": the context decides
      {"a(?=b)", 0, ""},           // looks past the match
      {"a(?=b)b", 0, ""},          // may match
      {"a(?!b)c", 0, ""},
      {"a^b", kRegexMultiline, "^ at offset 1"},
      {"a\\n^b", kRegexMultiline, ""},  // ^ after a newline under m
      {"a$\\n", 0, ""},            // $ before a final newline
      {"a$\\nb", kRegexMultiline, ""},
      {"a$b", kRegexMultiline, "$ at offset 1"},
      {"(?<=a)b", 0, ""},          // lookbehind: the context decides
      {"(?:a(?=b)c)*", 0, ""},     // not at the top level: not proven
      {"a(?=b)c|d", 0, ""},        // a top-level alternative: not proven
      {"abc", 0, ""},              // not refused at all
      {"^ab$", 0, ""},             // anchors where they are no-ops
      {"a(?=b)c\\1", 0, ""},       // refused for a backreference
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pattern);
    const std::optional<std::string> why = NeverMatchingAssertion(c.pattern, c.flags);
    if (c.never.empty()) {
      EXPECT_FALSE(why.has_value()) << *why;
    } else {
      ASSERT_TRUE(why.has_value());
      EXPECT_TRUE(absl::StartsWith(*why, c.never)) << *why;
    }
  }
}

// A random pattern over {a, b}: a sequence of atoms, groups and assertions.
std::string RandomPattern(std::mt19937_64& rng) {
  static const char* const kAtoms[] = {"a", "b", "[ab]", "a*", "b?", "(?:a|bb)", "ab"};
  static const char* const kBodies[] = {"a", "b", "ab", "a*b", "(?:a|b)b", "b*"};
  std::string out;
  const int n = 1 + static_cast<int>(rng() % 5);
  for (int i = 0; i < n; ++i) {
    switch (rng() % 6) {
      case 0:
        out += std::string("(?=") + kBodies[rng() % 6] + ")";
        break;
      case 1:
        out += std::string("(?!") + kBodies[rng() % 6] + ")";
        break;
      case 2:
        out += rng() % 2 ? "^" : "$";
        break;
      default:
        out += kAtoms[rng() % 7];
    }
  }
  return out;
}

std::vector<std::string> TextsUpTo(size_t length) {
  std::vector<std::string> texts = {""};
  for (size_t begin = 0; texts.back().size() < length;) {
    const size_t end = texts.size();
    for (size_t k = begin; k < end; ++k) {
      for (char c : {'a', 'b'}) texts.push_back(texts[k] + c);
    }
    begin = end;
  }
  return texts;
}

TEST(RegexAssertions, NeverMatchingPatternsMatchNoTextInAnyContext) {
  std::mt19937_64 rng(0x33'0B'A55E'27ull);
  const std::vector<std::string> contexts = TextsUpTo(2);
  const std::vector<std::string> texts = TextsUpTo(4);
  int with_assertions = 0, proven = 0;
  for (int round = 0; round < 400; ++round) {
    const std::string pattern = RandomPattern(rng);
    SCOPED_TRACE(pattern);
    ByteNfa nfa;
    const bool refused = !AddRegex(nfa, 0, pattern, 0).ok();
    const std::optional<std::string> why = NeverMatchingAssertion(pattern, 0);
    if (!refused) {
      EXPECT_FALSE(why.has_value());
      continue;
    }
    ++with_assertions;
    if (!why) continue;  // the compiler refuses it: the contract holds
    ++proven;
    // The match must be exactly `text` between `before` and `after`: the
    // surrounding literals and an anchored lookahead pin it.
    for (const std::string& before : contexts) {
      for (const std::string& after : contexts) {
        const std::regex re("^" + before + "(?:" + pattern + ")(?=" + after + "$)",
                            std::regex::ECMAScript);
        for (const std::string& text : texts) {
          const std::string whole = before + text + after;
          std::smatch m;
          const bool found = std::regex_search(whole, m, re) &&
                             m.length(0) == static_cast<std::ptrdiff_t>(before.size() + text.size());
          ASSERT_FALSE(found) << *why << "; yet it matches \"" << text << "\" between \"" << before
                              << "\" and \"" << after << "\"";
        }
      }
    }
  }
  std::printf("[regex assertions] 400 random patterns, %d refused for their assertions, %d of "
              "them proven never to match (checked against std::regex)\n",
              with_assertions, proven);
  EXPECT_GT(proven, 20);
}

// A Lark terminal that can never match compiles to the empty language, with
// a warning naming it; the rest of the grammar is untouched.
TEST(RegexAssertions, LarkTerminalThatNeverMatchesIsEmptyWithAWarning) {
  absl::StatusOr<zapgram::Grammar> g = zapgram::Grammar::FromText(
      GrammarFormat::kLark, "start: \"x\" B?\nB: /a(?=b)c/\n", {}, "g.lark");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->warnings().size(), 1u);
  EXPECT_EQ(g->warnings()[0],
            "g.lark:2:1: terminal B /a(?=b)c/ can never match ((?=b) at offset 1 can never hold "
            "where it stands): compiled to the empty language");
  for (const auto& [text, accepted] :
       std::vector<std::pair<std::string, bool>>{{"x", true}, {"xac", false}, {"xabc", false}, {"", false}}) {
    zapgram::Recognizer r(*g);
    EXPECT_EQ(r.FeedBytes(text) == text.size() && r.IsAccepting(), accepted) << text;
  }
  // Nothing but that terminal: the empty language.
  absl::StatusOr<zapgram::Grammar> empty =
      zapgram::Grammar::FromText(GrammarFormat::kLark, "start: B\nB: /a^b$c/\n", {}, "e.lark");
  ASSERT_TRUE(empty.ok()) << empty.status();
  ASSERT_EQ(empty->warnings().size(), 1u);
  EXPECT_TRUE(absl::StrContains(empty->warnings()[0], "terminal B /a^b$c/ can never match (^ at offset 1"))
      << empty->warnings()[0];
  absl::StatusOr<Vocabulary> vocab = Vocabulary::FromTokens({"<eos>", "a", "b", "c", "abc"}, {0});
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*empty, *vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  Matcher m(*compiled);
  std::vector<uint32_t> words(compiled->mask_words());
  EXPECT_EQ(m.ComputeMask(words.data()), 0u);
  EXPECT_FALSE(m.IsAccepting());
  // Only optional: {""}.
  absl::StatusOr<zapgram::Grammar> optional =
      zapgram::Grammar::FromText(GrammarFormat::kLark, "start: B?\nB: /a(?=b)c/\n", {}, "o.lark");
  ASSERT_TRUE(optional.ok()) << optional.status();
  zapgram::Recognizer only_empty(*optional);
  EXPECT_TRUE(only_empty.IsAccepting());
  EXPECT_EQ(only_empty.FeedBytes("ac"), 0u);
  // A regex that may match stays refused, as before.
  absl::StatusOr<zapgram::Grammar> refused =
      zapgram::Grammar::FromText(GrammarFormat::kLark, "start: B\nB: /a(?=b)/\n", {}, "r.lark");
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "lookahead (?= is not supported"))
      << refused.status();
}

}  // namespace
}  // namespace zapgram::grammar
