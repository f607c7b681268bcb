// Draft-tree masks (masks/draft_tree.h) against the naive walk
// (tests/support/draft_trees.h: a fresh fork of the start state fed each
// node's path, its mask filled): random trees drafted from MaskBench and
// json-docs states with Llama 3, whose tokens are the documents' true
// tokens, random allowed tokens, EOS and random ids of the vocabulary
// (refused), with children under refused and terminated nodes. Every row
// must equal the oracle's (which runs with the mask cache off), with both
// undo strategies and with a rollback window smaller than the paths; the
// matcher must be left as it was; terminated matchers, deadlines, malformed
// trees and the batch form are checked on their own.
#include "masks/draft_tree.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/draft_trees.h"
#include "tests/support/test_paths.h"
#include "tests/support/trace_docs.h"
#include "tests/support/test_scale.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram {
namespace {

using testing::DraftedTree;
using testing::DraftFrom;
using testing::DraftShape;
using testing::NaiveRows;

// The document's grammar, or null when it does not compile or does not
// take the whole document (a schema grammar for generation keeps members
// in `properties` order; some MaskBench documents do not).
std::unique_ptr<CompiledGrammar> CompileDoc(const testing::TraceDoc& doc) {
  LoadOptions options;
  options.schema.lenient = true;
  absl::StatusOr<Grammar> grammar = Grammar::Load(doc.grammar, testing::DataPath(""), options);
  if (!grammar.ok()) return nullptr;
  absl::StatusOr<CompiledGrammar> g = CompiledGrammar::Compile(*grammar, testing::Llama3Vocabulary());
  if (!g.ok()) return nullptr;
  Matcher m(*g);
  for (int32_t id : doc.tokens) {
    if (!m.AcceptToken(id)) return nullptr;
  }
  if (!m.IsAccepting()) return nullptr;
  return std::make_unique<CompiledGrammar>(*std::move(g));
}

Matcher Fed(const CompiledGrammar& g, absl::Span<const int32_t> prefix, const MatcherOptions& options = {}) {
  Matcher m(g, options);
  for (size_t k = 0; k < prefix.size(); ++k) {
    EXPECT_TRUE(m.AcceptToken(prefix[k])) << "token " << k << " (" << prefix[k] << "): " << m.status();
  }
  return m;
}

// What the caller can observe of a matcher's state.
struct Observed {
  std::vector<uint32_t> mask;
  size_t position, rollback_limit;
  bool accepting, finished;
  std::vector<int32_t> rejected;
  bool operator==(const Observed&) const = default;
};

Observed Observe(Matcher& m, size_t words) {
  Observed o;
  o.mask.resize(words);
  m.ComputeMask(o.mask.data());
  o.position = m.impl().position();
  o.rollback_limit = m.impl().RollbackLimit();
  o.accepting = m.IsAccepting();
  o.finished = m.IsFinished();
  o.rejected = m.LastRejectedTokens();
  return o;
}

bool Bit(const std::vector<uint32_t>& rows, size_t words, size_t row, int64_t id) {
  return ((rows[row * words + id / 32] >> (id % 32)) & 1) != 0;
}

bool ZeroRow(const std::vector<uint32_t>& rows, size_t words, size_t row) {
  return std::all_of(rows.begin() + row * words, rows.begin() + (row + 1) * words, [](uint32_t w) { return !w; });
}

size_t NonzeroRows(const std::vector<uint32_t>& rows, size_t words) {
  size_t count = 0;
  for (size_t r = 0; r * words < rows.size(); ++r) count += !ZeroRow(rows, words, r);
  return count;
}

// Filled with a pattern first: every row must be written.
std::vector<uint32_t> Garbage(size_t n) { return std::vector<uint32_t>(n, 0xA5A5A5A5u); }

struct Totals {
  size_t trees = 0, nodes = 0, visited = 0, refused = 0, copied = 0;
};

// Trees drafted at a few cuts of each document: the traversal (both undo
// strategies, and the public call with its temperatures) equals the naive
// walk, and leaves the matcher as it was.
void CheckDocs(const std::vector<testing::TraceDoc>& docs, const std::vector<size_t>& sizes, uint64_t seed,
               const MatcherOptions& options, Totals* totals) {
  std::mt19937_64 rng(seed);
  MatcherOptions oracle_options = options;
  oracle_options.use_cache = false;
  for (const testing::TraceDoc& doc : docs) {
    std::unique_ptr<CompiledGrammar> g = CompileDoc(doc);
    if (g == nullptr) continue;
    const size_t words = g->mask_words();
    const size_t n = doc.tokens.size();
    for (size_t cut : {size_t{0}, n / 3, 2 * n / 3, n}) {
      const absl::Span<const int32_t> prefix(doc.tokens.data(), cut);
      const absl::Span<const int32_t> truth(doc.tokens.data() + cut, n - cut);
      Matcher start = Fed(*g, prefix, options);
      const Matcher oracle_start = Fed(*g, prefix, oracle_options);
      for (size_t size : sizes) {
        DraftShape shape;
        shape.nodes = size;
        shape.foreign_rate = 0.1;
        shape.eos_rate = 0.05;
        shape.dead_expand_rate = 0.3;
        shape.shuffle = (rng() & 1) != 0;
        const DraftedTree tree = DraftFrom(start, truth, shape, rng);
        const std::vector<uint32_t> expected = NaiveRows(oracle_start, tree);
        const Observed before = Observe(start, words);
        std::vector<uint32_t> rows = Garbage(tree.size() * words);
        std::vector<float> temperatures(tree.size(), 3.0f);
        absl::StatusOr<bool> done = start.TraverseDraftTree(tree.view(), rows.data(), absl::MakeSpan(temperatures));
        ASSERT_TRUE(done.ok()) << done.status();
        EXPECT_TRUE(*done);
        for (size_t i = 0; i < tree.size(); ++i) {
          ASSERT_TRUE(std::equal(rows.begin() + i * words, rows.begin() + (i + 1) * words,
                                 expected.begin() + i * words))
              << doc.grammar << " @" << cut << " tree of " << tree.size() << ": row " << i;
        }
        EXPECT_EQ(temperatures, std::vector<float>(tree.size(), masks::kNoTemperature));
        for (int variant = 0; variant < 3; ++variant) {
          std::vector<uint32_t> again = Garbage(rows.size());
          masks::DraftWalkOptions walk;
          walk.undo = variant == 1 ? masks::DraftUndo::kCopy : masks::DraftUndo::kRollback;
          walk.use_effects = variant != 2;
          const masks::DraftWalkResult result =
              masks::WalkDraftTree(start.impl(), {tree.first_child, tree.next_sibling, tree.tokens}, again.data(),
                                   words, walk);
          EXPECT_TRUE(result.status.ok() && result.completed);
          EXPECT_EQ(again, expected) << doc.grammar << " @" << cut << " variant " << variant;
          EXPECT_EQ(result.visited, NonzeroRows(expected, words));
          if (variant == 2) {
            EXPECT_EQ(result.copied, 0u);
          }
          if (variant == 0) totals->copied += result.copied;
        }
        EXPECT_EQ(Observe(start, words), before) << doc.grammar << " @" << cut;
        ++totals->trees;
        totals->nodes += tree.size();
        totals->visited += NonzeroRows(expected, words);
        // Nodes whose visited parent refuses their token.
        for (size_t i = 1; i < tree.size(); ++i) {
          const int64_t p = tree.parent[i];
          totals->refused += !ZeroRow(expected, words, p) && !Bit(expected, words, p, tree.tokens[i]);
        }
      }
      // The rest of the document still goes through the matcher.
      for (size_t j = cut; j < n; ++j) ASSERT_TRUE(start.AcceptToken(doc.tokens[j])) << doc.grammar << " " << j;
      EXPECT_TRUE(start.IsAccepting()) << doc.grammar;
    }
  }
}

TEST(DraftTree, RowsEqualNaiveWalkOnMaskBench) {
  Totals totals;
  CheckDocs(testing::ReadTraceDocs("traces/llama3/maskbench.jsonl", testing::Scaled(16, 3), 401), {16, 64}, 31, {},
            &totals);
  EXPECT_GE(totals.trees, testing::Scaled<size_t>(80, 12));
  // The trees visit most nodes and refuse some (the test can fail both
  // ways); some rows are copied (token effects).
  EXPECT_GT(totals.visited, totals.nodes / 2);
  EXPECT_GT(totals.refused, totals.trees);
  EXPECT_GT(totals.copied, totals.trees);
  std::printf("[draft trees] maskbench: %zu trees, %zu nodes, %zu visited (%zu rows copied), %zu refused\n",
              totals.trees, totals.nodes, totals.visited, totals.copied, totals.refused);
}

TEST(DraftTree, RowsEqualNaiveWalkOnJsonDocs) {
  Totals totals;
  CheckDocs(testing::ReadTraceDocs("traces/llama3/json-docs.jsonl", testing::Scaled(6, 2), 41),
            {16, testing::Scaled<size_t>(256, 64)}, 7, {}, &totals);
  EXPECT_GT(totals.visited, totals.nodes / 2);
  EXPECT_GT(totals.copied, totals.trees);
  std::printf("[draft trees] json-docs: %zu trees, %zu nodes, %zu visited (%zu rows copied), %zu refused\n",
              totals.trees, totals.nodes, totals.visited, totals.copied, totals.refused);
}

// A rollback window smaller than the trees' paths: children past it are
// walked on copies (new levels), with the same rows.
TEST(DraftTree, RollbackWindowSmallerThanPaths) {
  MatcherOptions options;
  options.max_rollback_bytes = 6;
  Totals totals;
  CheckDocs(testing::ReadTraceDocs("traces/llama3/json-docs.jsonl", 2, 101), {64}, 11, options, &totals);
  CheckDocs(testing::ReadTraceDocs("traces/llama3/maskbench.jsonl", 3, 2003), {64}, 12, options, &totals);
  options.max_rollback_bytes = 0;
  CheckDocs(testing::ReadTraceDocs("traces/llama3/maskbench.jsonl", 1, 4001), {64}, 13, options, &totals);
  EXPECT_GT(totals.visited, totals.trees * 8);
}

// A deep chain (the document's own tokens, one child each) walks a long
// path down and back up in one matcher.
TEST(DraftTree, DeepChainIsTheDocument) {
  const std::vector<testing::TraceDoc> docs = testing::ReadTraceDocs("traces/llama3/json-docs.jsonl", 1, 3);
  ASSERT_EQ(docs.size(), 1u);
  std::unique_ptr<CompiledGrammar> g = CompileDoc(docs[0]);
  ASSERT_NE(g, nullptr);
  const std::vector<int32_t>& tokens = docs[0].tokens;
  const size_t n = std::min<size_t>(tokens.size(), 400) + 1;
  DraftedTree chain;
  for (size_t i = 0; i < n; ++i) {
    chain.first_child.push_back(i + 1 < n ? static_cast<int64_t>(i + 1) : -1);
    chain.next_sibling.push_back(-1);
    chain.tokens.push_back(i == 0 ? 0 : tokens[i - 1]);
    chain.parent.push_back(static_cast<int64_t>(i) - 1);
  }
  const Matcher start(*g);
  const size_t words = g->mask_words();
  std::vector<uint32_t> rows = Garbage(n * words);
  absl::StatusOr<bool> done = start.TraverseDraftTree(chain.view(), rows.data());
  ASSERT_TRUE(done.ok() && *done);
  EXPECT_EQ(rows, NaiveRows(start, chain));
  EXPECT_EQ(NonzeroRows(rows, words), n);
}

const CompiledGrammar& ListGrammar() {
  // [1, 1, ...]: digits, commas, brackets.
  static const CompiledGrammar* g = [] {
    absl::StatusOr<Grammar> grammar =
        Grammar::FromText(GrammarFormat::kGbnf, "root ::= \"[\" [0-9]+ (\",\" [0-9]+)* \"]\"");
    EXPECT_TRUE(grammar.ok()) << grammar.status();
    absl::StatusOr<CompiledGrammar> c = CompiledGrammar::Compile(*grammar, testing::Llama3Vocabulary());
    EXPECT_TRUE(c.ok()) << c.status();
    return new CompiledGrammar(*std::move(c));
  }();
  return *g;
}

int32_t IdOf(std::string_view text) {
  const Vocabulary& v = testing::Llama3Vocabulary();
  for (int32_t id = 0; id < v.size(); ++id) {
    if (v.is_normal(id) && v.token_bytes(id) == text) return id;
  }
  ADD_FAILURE() << "no token " << text;
  return 0;
}

// Rows at EOS and below it, and at a matcher that terminated before the
// call; XGrammar's terminate_without_stop_token.
TEST(DraftTree, TerminatedNodesAndMatchers) {
  const CompiledGrammar& g = ListGrammar();
  const size_t words = g.mask_words();
  const int32_t eos = testing::Llama3Vocabulary().eos_ids()[0];
  Matcher m(g);
  ASSERT_TRUE(m.AcceptBytes("[1,2"));
  //   0 -> 1 "]" -> 2 EOS -> 3 "]"
  //              -> 4 ","
  //     -> 5 "3"
  const std::vector<int64_t> first_child = {1, 2, 3, -1, -1, -1};
  const std::vector<int64_t> next_sibling = {-1, 5, 4, -1, -1, -1};
  const std::vector<int64_t> tokens = {IdOf("9"), IdOf("]"), eos, IdOf("]"), IdOf(","), IdOf("3")};
  const DraftTree tree{first_child, next_sibling, tokens};
  std::vector<uint32_t> rows = Garbage(6 * words);
  ASSERT_TRUE(*m.TraverseDraftTree(tree, rows.data()));
  EXPECT_TRUE(Bit(rows, words, 0, IdOf("]")) && Bit(rows, words, 0, IdOf("3")) && !Bit(rows, words, 0, eos));
  EXPECT_TRUE(Bit(rows, words, 1, eos));  // after "]": only EOS
  EXPECT_TRUE(ZeroRow(rows, words, 2));   // EOS: terminated
  EXPECT_TRUE(ZeroRow(rows, words, 3));   // below EOS
  EXPECT_TRUE(ZeroRow(rows, words, 4));   // "," refused after "]"
  EXPECT_TRUE(Bit(rows, words, 5, IdOf("]")));
  // With terminate_when_accepting, "]" (a sentence) terminates: its row is
  // zero and its children are not visited.
  DraftTreeOptions options;
  options.terminate_when_accepting = true;
  rows = Garbage(6 * words);
  ASSERT_TRUE(*m.TraverseDraftTree(tree, rows.data(), {}, options));
  EXPECT_FALSE(ZeroRow(rows, words, 0));
  for (size_t i = 1; i <= 4; ++i) EXPECT_TRUE(ZeroRow(rows, words, i)) << i;
  EXPECT_FALSE(ZeroRow(rows, words, 5));
  // A finished matcher: every row zero, the traversal complete.
  ASSERT_TRUE(m.AcceptBytes("]"));
  ASSERT_TRUE(m.AcceptToken(eos));
  rows = Garbage(6 * words);
  std::vector<float> temperatures(6, 0.5f);
  ASSERT_TRUE(*m.TraverseDraftTree(tree, rows.data(), absl::MakeSpan(temperatures)));
  EXPECT_EQ(NonzeroRows(rows, words), 0u);
  EXPECT_EQ(temperatures, std::vector<float>(6, -1.0f));
  EXPECT_TRUE(m.IsFinished());
}

// Tokens outside the vocabulary, nodes the root does not reach, duplicate
// siblings, a root whose token is nonsense (never read), a custom row
// stride.
TEST(DraftTree, OddTokensAndUnreachedNodes) {
  const CompiledGrammar& g = ListGrammar();
  const size_t words = g.mask_words();
  Matcher m(g);
  ASSERT_TRUE(m.AcceptBytes("[1"));
  // 0 -> 1 (-5), 2 (1 << 40), 3 "2", 4 "2" -> 5 "]";  6 -> 7 unreached.
  const std::vector<int64_t> first_child = {1, -1, -1, -1, 5, -1, 7, -1};
  const std::vector<int64_t> next_sibling = {-1, 2, 3, 4, -1, -1, -1, -1};
  const std::vector<int64_t> tokens = {-7, -5, int64_t{1} << 40, IdOf("2"), IdOf("2"), IdOf("]"), IdOf("3"),
                                       IdOf("3")};
  const DraftTree tree{first_child, next_sibling, tokens};
  DraftTreeOptions options;
  options.row_stride = words + 3;
  std::vector<uint32_t> rows(8 * (words + 3), 0xFFFFFFFFu);
  ASSERT_TRUE(*m.TraverseDraftTree(tree, rows.data(), {}, options));
  const auto row = [&](size_t i) {
    return std::vector<uint32_t>(rows.begin() + i * (words + 3), rows.begin() + i * (words + 3) + words);
  };
  EXPECT_NE(row(0), std::vector<uint32_t>(words, 0));
  EXPECT_EQ(row(1), std::vector<uint32_t>(words, 0));
  EXPECT_EQ(row(2), std::vector<uint32_t>(words, 0));
  EXPECT_EQ(row(3), row(4));
  EXPECT_EQ(row(3), row(0));  // "[1" and "[12" have the same continuations
  EXPECT_NE(row(5), std::vector<uint32_t>(words, 0));
  EXPECT_EQ(row(6), std::vector<uint32_t>(words, 0));
  EXPECT_EQ(row(7), std::vector<uint32_t>(words, 0));
  // The gaps between rows are not written.
  for (size_t i = 0; i < 8; ++i) {
    for (size_t w = words; w < words + 3; ++w) EXPECT_EQ(rows[i * (words + 3) + w], 0xFFFFFFFFu);
  }
}

TEST(DraftTree, MalformedTreesAreErrors) {
  const CompiledGrammar& g = ListGrammar();
  const size_t words = g.mask_words();
  const Matcher m(g);
  std::vector<uint32_t> rows(4 * words, 7u);
  const auto error = [&](std::vector<int64_t> first_child, std::vector<int64_t> next_sibling,
                         std::vector<int64_t> tokens, std::vector<float> temperatures = {},
                         DraftTreeOptions options = {}) {
    const absl::StatusOr<bool> r = m.TraverseDraftTree({first_child, next_sibling, tokens}, rows.data(),
                                                       absl::MakeSpan(temperatures), options);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(r.status().message());
  };
  EXPECT_NE(error({}, {}, {}).find("empty"), std::string::npos);
  EXPECT_NE(error({1, -1}, {-1}, {0, 0}).find("differ in length"), std::string::npos);
  EXPECT_NE(error({1, -1}, {1, -1}, {0, 0}).find("sibling"), std::string::npos);
  EXPECT_NE(error({2, -1}, {-1, -1}, {0, 0}).find("retrieve_next_token[0]"), std::string::npos);
  EXPECT_NE(error({1, -1}, {-1, -2}, {0, 0}).find("retrieve_next_sibling[1]"), std::string::npos);
  EXPECT_NE(error({1, 2, 1}, {-1, -1, -1}, {0, 0, 0}).find("reached twice"), std::string::npos);  // cycle
  EXPECT_NE(error({1, 2, -1}, {-1, 2, -1}, {0, 0, 0}).find("reached twice"), std::string::npos);
  EXPECT_NE(error({1, 0}, {-1, -1}, {0, 0}).find("reached twice"), std::string::npos);  // back to the root
  EXPECT_NE(error({1, -1}, {-1, -1}, {0, 0}, {1.0f}).find("temperatures"), std::string::npos);
  DraftTreeOptions overlap;
  overlap.row_stride = words - 1;
  EXPECT_NE(error({1, -1}, {-1, -1}, {0, 0}, {}, overlap).find("overlap"), std::string::npos);
  EXPECT_EQ(rows, std::vector<uint32_t>(4 * words, 7u));  // nothing written
}

// A parser budget that runs out inside a token the parent's row allows
// (the masks push bytes without the chart budgets; feeding checks them):
// the walk stops with the budget's error, and the matcher is as it was.
TEST(DraftTree, BudgetErrorsStopTheWalk) {
  absl::StatusOr<Grammar> grammar = Grammar::Load("builtin:json");
  ASSERT_TRUE(grammar.ok());
  absl::StatusOr<CompiledGrammar> g = CompiledGrammar::Compile(*grammar, testing::Llama3Vocabulary());
  ASSERT_TRUE(g.ok());
  const size_t words = g->mask_words();
  const int32_t open2 = IdOf("[[");
  MatcherOptions options;
  options.limits.max_sets = 6;
  Matcher m(*g, options);
  // Nest until "[[" no longer fits, then one level back.
  size_t depth = 0;
  while (true) {
    Matcher probe = m.Fork();
    if (!probe.AcceptToken(open2)) {
      ASSERT_FALSE(probe.status().ok());
      break;
    }
    ASSERT_TRUE(m.AcceptToken(IdOf("[")));
    ASSERT_LT(++depth, 20u);
  }
  std::vector<uint32_t> before(words);
  m.ComputeMask(before.data());
  ASSERT_TRUE(Bit(before, words, 0, open2));  // the mask allows it
  const std::vector<int64_t> first_child = {1, -1, -1};
  const std::vector<int64_t> next_sibling = {-1, 2, -1};
  const std::vector<int64_t> tokens = {0, IdOf("1"), open2};
  std::vector<uint32_t> rows = Garbage(3 * words);
  const absl::StatusOr<bool> done = m.TraverseDraftTree({first_child, next_sibling, tokens}, rows.data());
  EXPECT_EQ(done.status().code(), absl::StatusCode::kResourceExhausted) << done.status();
  EXPECT_TRUE(m.status().ok());
  std::vector<uint32_t> after(words);
  m.ComputeMask(after.data());
  EXPECT_EQ(after, before);
  EXPECT_TRUE(m.AcceptToken(IdOf("]")));
}

// A deadline: the walk stops at the first node entered past it; the rows
// before are the naive walk's, the rest zero, the result false.
TEST(DraftTree, TimeThresholdStopsTheWalk) {
  const std::vector<testing::TraceDoc> docs = testing::ReadTraceDocs("traces/llama3/json-docs.jsonl", 1, 5);
  ASSERT_EQ(docs.size(), 1u);
  std::unique_ptr<CompiledGrammar> g = CompileDoc(docs[0]);
  ASSERT_NE(g, nullptr);
  const size_t words = g->mask_words();
  MatcherOptions options;
  options.use_cache = false;  // every node costs a walk of the trie
  Matcher start(*g, options);
  std::mt19937_64 rng(5);
  DraftShape shape;
  shape.nodes = 256;
  const DraftedTree tree = DraftFrom(start, docs[0].tokens, shape, rng);
  const std::vector<uint32_t> expected = NaiveRows(start, tree);
  const size_t visitable = NonzeroRows(expected, words);
  ASSERT_GT(visitable, 100u);
  // A deadline already passed: the root only.
  masks::DraftWalkOptions walk;
  walk.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  std::vector<uint32_t> rows = Garbage(expected.size());
  masks::DraftWalkResult result =
      masks::WalkDraftTree(start.impl(), {tree.first_child, tree.next_sibling, tree.tokens}, rows.data(), words, walk);
  EXPECT_FALSE(result.completed);
  EXPECT_EQ(result.visited, 1u);
  EXPECT_TRUE(std::equal(rows.begin(), rows.begin() + words, expected.begin()));
  EXPECT_EQ(NonzeroRows(rows, words), 1u);
  // A threshold of a fraction of the whole walk's time: halved until it
  // stops the walk partway.
  const auto begin = std::chrono::steady_clock::now();
  ASSERT_TRUE(*start.TraverseDraftTree(tree.view(), rows.data()));
  double threshold = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() / 2;
  EXPECT_EQ(rows, expected);
  bool stopped = false;
  for (int attempt = 0; attempt < 12 && !stopped; ++attempt, threshold /= 2) {
    rows = Garbage(expected.size());
    DraftTreeOptions limited;
    limited.time_threshold = threshold;
    absl::StatusOr<bool> done = start.TraverseDraftTree(tree.view(), rows.data(), {}, limited);
    ASSERT_TRUE(done.ok());
    stopped = !*done;
  }
  ASSERT_TRUE(stopped);
  const size_t filled = NonzeroRows(rows, words);
  EXPECT_GE(filled, 1u);
  EXPECT_LT(filled, visitable);
  for (size_t i = 0; i < tree.size(); ++i) {
    const bool zero = ZeroRow(rows, words, i);
    EXPECT_TRUE(zero || std::equal(rows.begin() + i * words, rows.begin() + (i + 1) * words,
                                   expected.begin() + i * words))
        << "row " << i;
  }
}

// The batch form: matchers at different states of different grammars, on
// pools of 1, 2 and 4 threads, equal one call each.
TEST(DraftTreeBatch, EqualsOneByOne) {
  std::vector<std::unique_ptr<CompiledGrammar>> grammars;
  std::vector<std::unique_ptr<Matcher>> matchers;
  std::vector<DraftedTree> trees;
  std::mt19937_64 rng(3);
  for (const std::string trace : {"traces/llama3/maskbench.jsonl", "traces/llama3/json-docs.jsonl"}) {
    for (const testing::TraceDoc& doc : testing::ReadTraceDocs(trace, 4, 61)) {
      grammars.push_back(CompileDoc(doc));
      if (grammars.back() == nullptr) {
        grammars.pop_back();
        continue;
      }
      const size_t cut = doc.tokens.size() / 2;
      matchers.push_back(std::make_unique<Matcher>(Fed(*grammars.back(), {doc.tokens.data(), cut})));
      DraftShape shape;
      shape.nodes = 32;
      shape.foreign_rate = 0.1;
      trees.push_back(DraftFrom(*matchers.back(), {doc.tokens.data() + cut, doc.tokens.size() - cut}, shape, rng));
    }
  }
  ASSERT_GE(matchers.size(), 6u);
  const size_t words = grammars[0]->mask_words();
  std::vector<std::vector<uint32_t>> expected;
  for (size_t k = 0; k < matchers.size(); ++k) expected.push_back(NaiveRows(*matchers[k], trees[k]));
  std::vector<Matcher*> raw;
  std::vector<DraftTree> views;
  for (size_t k = 0; k < matchers.size(); ++k) {
    raw.push_back(matchers[k].get());
    views.push_back(trees[k].view());
  }
  for (int threads : {1, 2, 4}) {
    BatchMasker batch(threads);
    for (int round = 0; round < 2; ++round) {
      std::vector<std::vector<uint32_t>> rows;
      std::vector<std::vector<float>> temperatures;
      std::vector<uint32_t*> row_ptrs;
      std::vector<absl::Span<float>> temperature_spans;
      for (size_t k = 0; k < matchers.size(); ++k) {
        rows.push_back(Garbage(trees[k].size() * words));
        temperatures.emplace_back(trees[k].size(), 0.0f);
      }
      for (size_t k = 0; k < matchers.size(); ++k) {
        row_ptrs.push_back(rows[k].data());
        temperature_spans.push_back(absl::MakeSpan(temperatures[k]));
      }
      std::unique_ptr<bool[]> completed(new bool[matchers.size()]());
      const absl::Status status = batch.TraverseDraftTrees(raw, views, row_ptrs, temperature_spans, {},
                                                           absl::MakeSpan(completed.get(), matchers.size()));
      ASSERT_TRUE(status.ok()) << status;
      for (size_t k = 0; k < matchers.size(); ++k) {
        EXPECT_TRUE(completed[k]);
        EXPECT_EQ(rows[k], expected[k]) << "threads " << threads << " matcher " << k;
        EXPECT_EQ(temperatures[k], std::vector<float>(trees[k].size(), -1.0f));
      }
    }
    // A malformed tree fails the whole call before any row is written.
    std::vector<DraftTree> bad = views;
    const std::vector<int64_t> no_links(trees[2].size() - 1, -1);
    bad[2].retrieve_next_sibling = no_links;
    std::vector<std::vector<uint32_t>> rows;
    std::vector<uint32_t*> row_ptrs;
    for (size_t k = 0; k < matchers.size(); ++k) rows.push_back(Garbage(trees[k].size() * words));
    for (auto& r : rows) row_ptrs.push_back(r.data());
    std::unique_ptr<bool[]> completed(new bool[matchers.size()]());
    const absl::Status status =
        batch.TraverseDraftTrees(raw, bad, row_ptrs, {}, {}, absl::MakeSpan(completed.get(), matchers.size()));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find("tree 2"), std::string::npos) << status;
    for (size_t k = 0; k < matchers.size(); ++k) EXPECT_EQ(rows[k], Garbage(rows[k].size()));
  }
}

}  // namespace
}  // namespace zapgram
