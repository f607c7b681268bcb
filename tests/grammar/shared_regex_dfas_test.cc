// The process-wide store of determinized regex DFAs (grammar/
// shared_regex_dfas.h): the reuse rule, the byte budget with LRU eviction,
// and that grammars compile to the same tables whether their DFAs were
// determinized or served by the store.
#include "grammar/shared_regex_dfas.h"

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "api/grammar_data.h"
#include "grammar/regex_compiler.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "parser/flat_grammar.h"
#include "tests/support/test_paths.h"
#include "tests/support/test_scale.h"
#include "zapgram/grammar.h"

namespace zapgram::grammar {
namespace {

ClassDfa DfaOf(std::string_view pattern) {
  absl::StatusOr<ClassDfa> dfa = RegexDfaCache().TakeDeterminized(pattern, 0, RegexLimits{});
  EXPECT_TRUE(dfa.ok()) << dfa.status();
  return *dfa;
}

TEST(SharedRegexDfas, AnswersByTheStateLimitRule) {
  SharedRegexDfas store(size_t{1} << 20);
  const ClassDfa dfa = DfaOf("[a-z]{2,5}");
  store.Add("k", 100, dfa);
  absl::StatusOr<ClassDfa> out = absl::InternalError("unset");
  EXPECT_FALSE(store.Find("k", 50, &out)) << "built under 100 says nothing of a limit of 50";
  ASSERT_TRUE(store.Find("k", 100, &out));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->next, dfa.next);
  EXPECT_EQ(out->accepting, dfa.accepting);
  EXPECT_EQ(out->class_of, dfa.class_of);
  EXPECT_TRUE(store.Find("k", 1000, &out));
  EXPECT_FALSE(store.Find("other", 1000, &out));
  // An overflow answers smaller limits only.
  store.Add("big", 100, absl::ResourceExhaustedError("too many states"));
  EXPECT_TRUE(store.Find("big", 50, &out));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(store.Find("big", 200, &out));
  // Another error (a bad pattern) answers any limit.
  store.Add("bad", 100, absl::InvalidArgumentError("bad pattern"));
  EXPECT_TRUE(store.Find("bad", 1000, &out));
  EXPECT_TRUE(store.Find("bad", 10, &out));
  const SharedRegexStats stats = store.stats();
  EXPECT_EQ(stats.entries, 3u);
  EXPECT_EQ(stats.hits, 5u);
  EXPECT_EQ(stats.misses, 3u);
}

TEST(SharedRegexDfas, KeepsItsBudgetLeastRecentlyUsedOut) {
  const ClassDfa dfa = DfaOf("[0-9]{1,40}");  // ~40 states
  SharedRegexDfas probe(size_t{1} << 20);
  probe.Add("x", 100, dfa);
  const size_t each = probe.stats().bytes;
  ASSERT_GT(each, 0u);
  SharedRegexDfas store(3 * each + each / 2);  // room for three
  absl::StatusOr<ClassDfa> out;
  store.Add("a", 100, dfa);
  store.Add("b", 100, dfa);
  store.Add("c", 100, dfa);
  ASSERT_TRUE(store.Find("a", 100, &out));  // a is now the most recent
  store.Add("d", 100, dfa);                 // b goes
  EXPECT_TRUE(store.Find("a", 100, &out));
  EXPECT_FALSE(store.Find("b", 100, &out));
  EXPECT_TRUE(store.Find("c", 100, &out));
  EXPECT_TRUE(store.Find("d", 100, &out));
  EXPECT_EQ(store.stats().evictions, 1u);
  EXPECT_LE(store.stats().bytes, store.budget_bytes());
  store.Add("a", 100, dfa);  // replaced in place: still three
  EXPECT_EQ(store.stats().entries, 3u);
  store.set_budget_bytes(each);  // evicts down now
  EXPECT_EQ(store.stats().entries, 1u);
  store.set_budget_bytes(0);  // off
  EXPECT_EQ(store.stats().entries, 0u);
  store.Add("e", 100, dfa);
  EXPECT_FALSE(store.Find("e", 100, &out));
}

// MaskBench schemas (every 64th record's) compiled three times in this
// process: with the store off, filling it, and served by it. The tables
// must be equal each time, and the third pass must find DFAs.
TEST(SharedRegexDfas, GrammarsCompileToTheSameTablesWhenServed) {
  const size_t stride = testing::Scaled<size_t>(64, 512);
  std::ifstream in(testing::DataPath("traces/llama3/maskbench.jsonl"));
  ASSERT_TRUE(in.good());
  std::vector<std::string> specs;
  std::set<std::string> seen;
  std::string line;
  for (size_t n = 0; std::getline(in, line); ++n) {
    if (n % stride != 0) continue;
    const std::string spec = nlohmann::json::parse(line)["grammar"].get<std::string>();
    if (spec.rfind("schema:", 0) == 0 && seen.insert(spec).second) specs.push_back(spec);
  }
  ASSERT_GE(specs.size(), 10u);
  ::zapgram::LoadOptions options;
  options.schema.lenient = true;
  std::vector<uint64_t> reference(specs.size(), 0);
  for (int pass = 0; pass < 3; ++pass) {
    ::zapgram::Grammar::SetSharedRegexCacheBytes(pass == 0 ? 0 : SharedRegexDfas::kDefaultBudgetBytes);
    const uint64_t hits_before = ::zapgram::Grammar::GetSharedRegexCacheStats().hits;
    int compiled = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      absl::StatusOr<::zapgram::Grammar> g = ::zapgram::Grammar::Load(specs[i], testing::DataPath(""), options);
      if (!g.ok()) {
        EXPECT_EQ(reference[i], 0u) << specs[i] << " compiled in pass 0 but not in " << pass;
        continue;
      }
      ++compiled;
      if (pass == 0) {
        reference[i] = parser::TablesDigest(g->data().flat);
      } else {
        EXPECT_EQ(parser::TablesDigest(g->data().flat), reference[i]) << specs[i] << ", pass " << pass;
      }
    }
    const uint64_t hits = ::zapgram::Grammar::GetSharedRegexCacheStats().hits - hits_before;
    std::printf("pass %d: %d of %zu schemas compiled, %llu DFAs served by the store\n", pass, compiled,
                specs.size(), static_cast<unsigned long long>(hits));
    if (pass == 0) {
      EXPECT_EQ(hits, 0u);
    } else if (pass == 2) {
      EXPECT_GT(hits, 0u);
    }
  }
  ::zapgram::Grammar::SetSharedRegexCacheBytes(SharedRegexDfas::kDefaultBudgetBytes);
}

}  // namespace
}  // namespace zapgram::grammar
