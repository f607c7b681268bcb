// Matcher::Fork on real traces (json-docs, MaskBench schemas, a SynCode Lark
// grammar, Llama 3): a fork taken mid-document walks the rest of it with the
// masks of a matcher that was fed the whole prefix itself, while the
// original goes another way (a different allowed token, then a rollback)
// with the masks a fresh matcher has there; neither sees the other's steps.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/test_paths.h"
#include "tests/support/trace_docs.h"
#include "tests/support/test_scale.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram {
namespace {

std::vector<uint32_t> MaskOf(Matcher& m, size_t words) {
  std::vector<uint32_t> mask(words);
  m.ComputeMask(mask.data());
  return mask;
}

// The mask after `prefix`, from a matcher that was fed it.
std::vector<uint32_t> FreshMask(const CompiledGrammar& g, const std::vector<int32_t>& prefix) {
  Matcher m(g);
  for (int32_t id : prefix) EXPECT_TRUE(m.AcceptToken(id));
  return MaskOf(m, g.mask_words());
}

void CheckForks(const std::vector<testing::TraceDoc>& docs) {
  const Vocabulary& vocabulary = testing::Llama3Vocabulary();
  LoadOptions options;
  options.schema.lenient = true;
  for (const testing::TraceDoc& doc : docs) {
    absl::StatusOr<Grammar> grammar = Grammar::Load(doc.grammar, testing::DataPath(""), options);
    ASSERT_TRUE(grammar.ok()) << doc.grammar << ": " << grammar.status();
    absl::StatusOr<CompiledGrammar> g = CompiledGrammar::Compile(*grammar, vocabulary);
    ASSERT_TRUE(g.ok()) << g.status();
    const size_t words = g->mask_words();
    const size_t n = doc.tokens.size();
    for (size_t k : {n / 3, 2 * n / 3}) {
      const std::vector<int32_t> prefix(doc.tokens.begin(), doc.tokens.begin() + k);
      Matcher original(*g);
      for (int32_t id : prefix) ASSERT_TRUE(original.AcceptToken(id));
      const std::vector<uint32_t> at_fork = MaskOf(original, words);
      Matcher fork = original.Fork();
      EXPECT_EQ(MaskOf(fork, words), at_fork) << doc.grammar << " @" << k;
      // The original takes another allowed token, if there is one.
      int32_t other = -1;
      for (int32_t id = 0; id < vocabulary.size() && other < 0; ++id) {
        const bool allowed = (at_fork[id / 32] >> (id % 32)) & 1;
        if (allowed && id != doc.tokens[k] && vocabulary.is_normal(id)) other = id;
      }
      if (other >= 0) {
        ASSERT_TRUE(original.AcceptToken(other));
        std::vector<int32_t> diverged = prefix;
        diverged.push_back(other);
        EXPECT_EQ(MaskOf(original, words), FreshMask(*g, diverged)) << doc.grammar << " @" << k;
      }
      // The fork walks the rest of the document beside a matcher fed all of it.
      Matcher reference(*g);
      for (int32_t id : prefix) ASSERT_TRUE(reference.AcceptToken(id));
      for (size_t j = k; j < n; ++j) {
        ASSERT_EQ(MaskOf(fork, words), MaskOf(reference, words)) << doc.grammar << " token " << j;
        ASSERT_TRUE(fork.AcceptToken(doc.tokens[j])) << doc.grammar << " token " << j;
        ASSERT_TRUE(reference.AcceptToken(doc.tokens[j]));
      }
      EXPECT_EQ(fork.IsAccepting(), reference.IsAccepting());
      EXPECT_TRUE(fork.IsAccepting()) << doc.grammar;
      // The fork's walk left the original where it was.
      if (other >= 0) {
        ASSERT_TRUE(original.Rollback(1));
        EXPECT_EQ(MaskOf(original, words), at_fork) << doc.grammar << " @" << k;
      }
      // A fork of a fork, and of a finished matcher.
      Matcher again = fork.Fork();
      EXPECT_EQ(again.IsAccepting(), fork.IsAccepting());
      if (!vocabulary.eos_ids().empty() && fork.AcceptToken(vocabulary.eos_ids()[0])) {
        EXPECT_TRUE(fork.Fork().IsFinished());
        EXPECT_FALSE(again.IsFinished());
      }
    }
  }
}

TEST(MatcherFork, JsonDocs) {
  CheckForks(testing::ReadTraceDocs("traces/llama3/json-docs.jsonl", testing::Scaled(4, 2), 50));
}

TEST(MatcherFork, MaskBenchSchemas) {
  CheckForks(testing::ReadTraceDocs("traces/llama3/maskbench.jsonl", testing::Scaled(8, 2), 997));
}

TEST(MatcherFork, LarkGrammars) {
  CheckForks(testing::ReadTraceDocs("traces/llama3/sql.jsonl", 2, 11));
  CheckForks(testing::ReadTraceDocs("traces/llama3/java.jsonl", 1, 1));
}

}  // namespace
}  // namespace zapgram
