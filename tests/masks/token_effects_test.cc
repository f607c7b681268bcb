// Matcher::TokenEffects (masks/token_effects.cc): tokens with equal labels
// leave equal states. Teacher-forced along real trace documents (JSON
// documents, MaskBench schemas, the Lark java/go/sql sets; Llama 3), at a few
// steps of each: every allowed token is labelled, then per label a few
// members (the first, the last and one at random) are accepted on the
// matcher and rolled back, and their exact keys (Matcher::ExactStateKey: the
// canonical live chart) must be equal. Labels must also group: the test
// fails if a set's labels are not fewer than its labelled tokens, and on the
// Lark sets if tokens go unlabelled (every allowed lexed token has one).
// Tokens with the `unchanged` label must leave the exact key as it was
// (byte-level sets: the test fails if none is found on JSON documents).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "masks/matcher.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_paths.h"
#include "tests/support/test_scale.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram::masks {
namespace {

struct SetStats {
  size_t states = 0, allowed = 0, labelled = 0, labels = 0, members_checked = 0, mismatches = 0, unchanged = 0;
};

std::vector<uint32_t> KeyAfter(Matcher& m, TokenId id) {
  std::vector<uint32_t> key;
  EXPECT_TRUE(m.AcceptToken(id)) << id;
  EXPECT_TRUE(m.ExactStateKey(&key));
  EXPECT_TRUE(m.Rollback(1));
  return key;
}

void CheckStep(Matcher& m, const CompiledGrammar& g, std::mt19937& rng, SetStats* stats) {
  std::vector<uint32_t> words(g.mask_words());
  m.ComputeMask(words.data());
  std::vector<TokenId> ids;
  for (TokenId id = 0; id < static_cast<TokenId>(words.size() * 32); ++id) {
    if (((words[id >> 5] >> (id & 31)) & 1u) && !g.vocabulary().is_eos(id)) ids.push_back(id);
  }
  std::vector<uint32_t> labels;
  uint32_t unchanged = 0;
  m.TokenEffects(ids, &labels, &unchanged);
  ASSERT_EQ(labels.size(), ids.size());
  if (g.grammar().lexed()) {
    EXPECT_EQ(unchanged, Matcher::kNoEffect);
  }
  std::map<uint32_t, std::vector<TokenId>> members;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (labels[i] != Matcher::kNoEffect) members[labels[i]].push_back(ids[i]);
  }
  ++stats->states;
  stats->allowed += ids.size();
  stats->labels += members.size();
  if (members.count(unchanged) != 0) {
    const std::vector<TokenId>& group = members[unchanged];
    std::vector<uint32_t> here;
    ASSERT_TRUE(m.ExactStateKey(&here));
    const TokenId some = group[std::uniform_int_distribution<size_t>(0, group.size() - 1)(rng)];
    for (TokenId id : {group.front(), group.back(), some}) {
      ++stats->unchanged;
      EXPECT_EQ(KeyAfter(m, id), here) << "token " << id << " \"" << g.vocabulary().token_bytes(id)
                                       << "\" has the unchanged label but changes the state";
    }
  }
  for (const auto& [label, group] : members) {
    stats->labelled += group.size();
    if (group.size() < 2) continue;
    const std::vector<uint32_t> first = KeyAfter(m, group.front());
    std::vector<TokenId> others = {group.back()};
    others.push_back(group[std::uniform_int_distribution<size_t>(1, group.size() - 1)(rng)]);
    for (TokenId other : others) {
      ++stats->members_checked;
      if (KeyAfter(m, other) != first) {
        ++stats->mismatches;
        ADD_FAILURE() << "label " << label << ": tokens " << group.front() << " \""
                      << g.vocabulary().token_bytes(group.front()) << "\" and " << other << " \""
                      << g.vocabulary().token_bytes(other) << "\" leave different states";
      }
    }
  }
}

SetStats CheckTrace(const std::string& set, size_t docs, size_t steps_per_doc, bool lenient = false) {
  absl::StatusOr<zapgram::Vocabulary> vocab =
      zapgram::Vocabulary::Load(testing::DataPath("tokenizers/llama3.tokenizer.json"));
  EXPECT_TRUE(vocab.ok()) << vocab.status();
  std::ifstream in(testing::DataPath("traces/llama3/" + set + ".jsonl"));
  LoadOptions options;
  options.schema.lenient = lenient;
  std::mt19937 rng(15);
  SetStats stats;
  std::string line;
  for (size_t n = 0; n < docs && std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (!j.value("valid", true)) continue;
    absl::StatusOr<Grammar> grammar =
        Grammar::Load(j.at("grammar").get<std::string>(), testing::DataPath(""), options);
    if (!grammar.ok()) continue;
    absl::StatusOr<zapgram::CompiledGrammar> compiled = zapgram::CompiledGrammar::Compile(*grammar, *vocab);
    EXPECT_TRUE(compiled.ok()) << compiled.status();
    if (!compiled.ok()) continue;
    ++n;
    const std::shared_ptr<const CompiledGrammar>& g = compiled->impl();
    Matcher m(g);
    const std::vector<TokenId> tokens = j.at("tokens").get<std::vector<TokenId>>();
    const size_t gap = std::max<size_t>(1, tokens.size() / steps_per_doc);
    for (size_t k = 0; k < tokens.size(); ++k) {
      if (k % gap == 0) CheckStep(m, *g, rng, &stats);
      if (!m.AcceptToken(tokens[k])) break;
    }
  }
  std::printf("[effects] %s: %zu states, %zu allowed tokens, %zu labelled in %zu labels, %zu members "
              "checked, %zu mismatches, %zu unchanged checked\n",
              set.c_str(), stats.states, stats.allowed, stats.labelled, stats.labels, stats.members_checked,
              stats.mismatches, stats.unchanged);
  EXPECT_GT(stats.members_checked, 0u);
  EXPECT_LT(stats.labels, stats.labelled);
  return stats;
}

constexpr size_t kDocs = testing::Scaled<size_t>(3, 1), kSteps = testing::Scaled<size_t>(6, 3);

TEST(TokenEffects, JsonDocumentsEqualLabelsEqualStates) {
  EXPECT_GT(CheckTrace("json-docs", kDocs, kSteps).unchanged, 0u);
}

TEST(TokenEffects, MaskbenchEqualLabelsEqualStates) {
  CheckTrace("maskbench", kDocs, kSteps, /*lenient=*/true);
}

TEST(TokenEffects, LarkSetsEqualLabelsEqualStates) {
  for (const char* set : {"sql", "java", "go"}) {
    const SetStats stats = CheckTrace(set, kDocs, kSteps);
    EXPECT_EQ(stats.labelled, stats.allowed) << set;
  }
}

}  // namespace
}  // namespace zapgram::masks
