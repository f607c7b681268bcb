// MergeRegularTerminals preserves the language: the reference recognizer on
// the original grammar and the engine on the merged one agree on every
// prefix of random and guided strings (viable prefix, acceptance), for
// thousands of random grammars; on real grammars the merged JSON grammars
// accept exactly the documents the original ones accept.
#include "transforms/regular_terminals.h"

#include <cstdio>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "api/grammar_data.h"
#include "parser/flat_grammar.h"
#include "pruning/compact.h"
#include "tests/support/random_grammar.h"
#include "tests/support/reference_recognizer.h"
#include "tests/support/test_paths.h"

namespace zapgram::transforms {
namespace {

TEST(RegularTerminals, RandomGrammarsKeepTheirLanguage) {
  std::mt19937_64 rng(0x5EC7'2026'1121ull);
  uint64_t merged = 0, strings = 0, grammars_changed = 0;
  for (int gi = 0; gi < 1500; ++gi) {
    grammar::Grammar g = testing::RandomGrammar(rng);
    testing::ReferenceRecognizer ref(g);
    if (ref.LanguageIsEmpty()) continue;
    RegularTerminalStats stats;
    absl::StatusOr<grammar::Grammar> out = MergeRegularTerminals(g, &stats);
    ASSERT_TRUE(out.ok()) << out.status();
    merged += stats.merged;
    grammars_changed += stats.merged > 0;
    absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(*out);
    ASSERT_TRUE(flat.ok()) << flat.status() << "\n" << grammar::Dump(*out);
    for (int s = 0; s < 12; ++s) {
      const std::string input = s % 2 ? testing::GuidedString(ref, rng, 12)
                                      : testing::RandomString(rng, 12);
      parser::Recognizer r = pruning::MakeRecognizer(&*flat);
      size_t taken = 0;
      while (taken < input.size() && r.Feed(static_cast<uint8_t>(input[taken]))) ++taken;
      ++strings;
      ASSERT_EQ(taken, ref.LongestViablePrefix(input))
          << "grammar:\n" << grammar::Dump(g) << "merged:\n" << grammar::Dump(*out)
          << "input: " << testing::EscapeBytes(input);
      if (taken == input.size()) {
        ASSERT_EQ(r.IsAccepting(), ref.Accepts(input))
            << "grammar:\n" << grammar::Dump(g) << "merged:\n" << grammar::Dump(*out)
            << "input: " << testing::EscapeBytes(input);
      }
    }
  }
  std::printf("regular terminals: %llu merges in %llu grammars, %llu strings agree\n",
              static_cast<unsigned long long>(merged),
              static_cast<unsigned long long>(grammars_changed),
              static_cast<unsigned long long>(strings));
  EXPECT_GT(grammars_changed, 100u);
}

TEST(RegularTerminals, JsonStringsAndNumbersBecomeTerminals) {
  for (const char* spec : {"builtin:json", "grammars/gbnf/llama.cpp/json.gbnf"}) {
    absl::StatusOr<grammar::Grammar> g = internal::ReadGrammarSpec(spec, testing::DataPath(""));
    ASSERT_TRUE(g.ok()) << g.status();
    RegularTerminalStats stats;
    absl::StatusOr<grammar::Grammar> out = MergeRegularTerminals(*g, &stats);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_GE(stats.merged, 3u) << spec;
    absl::StatusOr<parser::FlatGrammar> before = parser::BuildFlatGrammar(*g);
    absl::StatusOr<parser::FlatGrammar> after = parser::BuildFlatGrammar(*out);
    ASSERT_TRUE(before.ok() && after.ok());
    std::printf("%s: %llu merges; productions %u -> %u, terminals %zu -> %zu\n", spec,
                static_cast<unsigned long long>(stats.merged), before->num_productions(),
                after->num_productions(), before->terminals.start.size(),
                after->terminals.start.size());
    // Same verdicts on real documents and mutants of them.
    std::mt19937_64 rng(7);
    int docs = 0;
    for (const std::string& path : testing::ListFiles(testing::DataPath("docs/json"), ".json")) {
      if (++docs > 60) break;
      const std::string text = testing::ReadFileOrDie(path);
      for (int m = 0; m < 3; ++m) {
        const std::string input = m == 0 ? text : testing::MutateDocument(text, rng);
        parser::Recognizer a = pruning::MakeRecognizer(&*before);
        parser::Recognizer b = pruning::MakeRecognizer(&*after);
        const size_t ta = a.FeedBytes(input), tb = b.FeedBytes(input);
        ASSERT_EQ(ta, tb) << spec << " " << path << " mutant " << m;
        EXPECT_EQ(a.IsAccepting(), b.IsAccepting()) << spec << " " << path;
      }
    }
  }
}

TEST(RegularTerminals, LexedGrammarsAreUnchanged) {
  absl::StatusOr<grammar::Grammar> g =
      internal::ReadGrammarSpec("grammars/lark/syncode/sql.lark", testing::DataPath(""));
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<grammar::Grammar> out = MergeRegularTerminals(*g);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(grammar::Dump(*out), grammar::Dump(*g));
}

}  // namespace
}  // namespace zapgram::transforms
