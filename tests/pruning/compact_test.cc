// ZapFormat compaction: golden dumps of pruned charts, boundedness of the
// retained state on long inputs, and equivalence with the unpruned chart.
#include "pruning/compact.h"

#include <algorithm>
#include <string>

#include <array>
#include <map>
#include <random>
#include <memory>
#include <fstream>
#include <vector>

#include "api/grammar_data.h"
#include "gtest/gtest.h"
#include "grammar/grammar.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_paths.h"
#include "tests/support/test_scale.h"
#include "zapgram/grammar.h"
#include "parser/flat_grammar.h"
#include "parser/recognizer.h"

namespace zapgram::pruning {
namespace {

using grammar::Grammar;

// root ::= ("(" root ")" | "x")*   — nesting and flat repetition in one.
parser::FlatGrammar Parens() {
  Grammar g;
  g.source_name = "<parens>";
  g.rules.push_back({"root", 0, {}});
  auto group = g.AddSequence({g.AddLiteral("("), g.AddRuleRef(0), g.AddLiteral(")")});
  g.rules[0].body = g.AddRepeat(g.AddChoice({group, g.AddLiteral("x")}), 0, grammar::kUnbounded);
  absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(g);
  EXPECT_TRUE(flat.ok()) << flat.status();
  return *std::move(flat);
}

TEST(CompactTest, FlatInputKeepsConstantState) {
  parser::FlatGrammar flat = Parens();
  parser::Recognizer r = MakeRecognizer(&flat);
  // "()()()...": the state after each pair equals the state after the first.
  size_t baseline = 0;
  for (int i = 0; i < 5000; ++i) {
    ASSERT_TRUE(r.Feed(i % 2 ? ')' : '(')) << i;
    if (i < 2) baseline = std::max(baseline, r.RetainedItems());
    ASSERT_LE(r.RetainedItems(), baseline) << "step " << i;
    ASSERT_LE(r.RetainedSets(), 3u);
  }
  EXPECT_TRUE(r.IsAccepting());
}

// What the recognizer *holds* (live and dead entries, rollback checkpoints)
// stays bounded on a long flat input too, with and without a rollback
// window: dead sets and items are rewritten away once they dominate. (Dead
// sets were once left out of that test, so a flat input kept every set it
// ever made: `zapgram parse` held ~135 bytes per input byte.)
TEST(CompactTest, HeldEntriesStayBoundedOnLongFlatInput) {
  absl::StatusOr<zapgram::Grammar> json = zapgram::Grammar::Load("builtin:json");
  ASSERT_TRUE(json.ok()) << json.status();
  for (const uint32_t rollback : {0u, 64u}) {
    RecognizerOptions options;
    options.max_rollback = rollback;
    parser::Recognizer r = MakeRecognizer(&json->data().flat, options);
    ASSERT_TRUE(r.Feed('['));
    size_t most = 0;
    std::string element;
    for (int i = 0; i < testing::Scaled(200000, 20000); ++i) {
      element = i ? ", {\"k\": [1, 2.5, \"s\"]}" : "{\"k\": [1, 2.5, \"s\"]}";
      ASSERT_EQ(r.FeedBytes(element), element.size()) << i;
      most = std::max(most, r.HeldEntries());
    }
    ASSERT_TRUE(r.Feed(']'));
    EXPECT_TRUE(r.IsAccepting());
    // ~4.6 MB of input (460 KB under the sanitizers); the live chart is a few
    // sets and items throughout.
    EXPECT_LE(r.RetainedItems(), 64u);
    EXPECT_LE(most, 20000u) << "max_rollback " << rollback;
  }
}

// In-place terminal steps (RecognizerOptions::in_place_terminal_steps, what
// `zapgram parse` uses) against full steps, byte by byte: the same Feed
// results, IsAccepting, NextBytes and live items, on json-docs with
// builtin:json and MaskBench instances with their schemas' validation
// grammars, each document as written and with bytes changed at random.
TEST(CompactTest, InPlaceTerminalStepsChangeNothingObservable) {
  struct Doc {
    std::string grammar, text;
  };
  std::vector<Doc> docs;
  for (const char* set : {"json-docs", "maskbench"}) {
    std::ifstream in(testing::DataPath(std::string("traces/llama3/") + set + ".jsonl"));
    std::string line;
    for (int n = 0; n < testing::Scaled(60, 12) && std::getline(in, line); ++n) {
      const nlohmann::json j = nlohmann::json::parse(line);
      docs.push_back({j.at("grammar"), j.at("text")});
    }
  }
  std::mt19937 rng(5);
  std::map<std::string, std::shared_ptr<const zapgram::Grammar>> grammars;
  LoadOptions load;
  load.schema.lenient = true;
  load.schema.purpose = SchemaPurpose::kValidation;
  uint64_t bytes = 0, in_place = 0;
  for (const Doc& doc : docs) {
    auto& g = grammars[doc.grammar];
    if (g == nullptr) {
      absl::StatusOr<zapgram::Grammar> loaded = zapgram::Grammar::Load(doc.grammar, testing::DataPath(""), load);
      if (!loaded.ok()) continue;
      g = std::make_shared<const zapgram::Grammar>(*std::move(loaded));
    }
    for (int variant = 0; variant < 4; ++variant) {
      std::string text = doc.text;
      if (variant > 0 && !text.empty()) text[rng() % text.size()] = static_cast<char>(' ' + rng() % 95);
      RecognizerOptions full_options, in_place_options;
      full_options.max_rollback = 0;
      in_place_options.max_rollback = 0;
      in_place_options.in_place_terminal_steps = true;
      parser::Recognizer full = MakeRecognizer(&g->data().flat, full_options);
      parser::Recognizer fast = MakeRecognizer(&g->data().flat, in_place_options);
      for (size_t i = 0; i < text.size(); ++i) {
        const uint8_t b = static_cast<uint8_t>(text[i]);
        const bool a = full.Feed(b);
        ASSERT_EQ(fast.Feed(b), a) << doc.grammar << " byte " << i;
        ++bytes;
        if (!a) break;
        ASSERT_EQ(fast.IsAccepting(), full.IsAccepting()) << doc.grammar << " byte " << i;
        ASSERT_EQ(fast.NextBytes(), full.NextBytes()) << doc.grammar << " byte " << i;
        ASSERT_EQ(fast.RetainedItems(), full.RetainedItems()) << doc.grammar << " byte " << i;
        ASSERT_EQ(fast.Position(), full.Position());
      }
      EXPECT_EQ(fast.NextBytes(), full.NextBytes());
      in_place += fast.in_place_steps_for_testing();
      EXPECT_EQ(full.in_place_steps_for_testing(), 0u);
    }
  }
  std::printf("in-place terminal steps: %llu of %llu bytes\n", static_cast<unsigned long long>(in_place),
              static_cast<unsigned long long>(bytes));
  EXPECT_GT(in_place * 4, bytes);  // most bytes of JSON are inside strings, numbers, whitespace
}

TEST(CompactTest, NestedInputKeepsStateProportionalToDepth) {
  parser::FlatGrammar flat = Parens();
  parser::Recognizer pruned = MakeRecognizer(&flat);
  RecognizerOptions off;
  off.pruning = false;
  parser::Recognizer unpruned = MakeRecognizer(&flat, off);
  const int depth = 300;
  for (int i = 0; i < depth; ++i) {
    ASSERT_TRUE(pruned.Feed('('));
    ASSERT_TRUE(unpruned.Feed('x'));
    ASSERT_TRUE(unpruned.Feed('('));
  }
  // One set per open bracket, a handful of items each.
  EXPECT_EQ(pruned.RetainedSets(), static_cast<size_t>(depth) + 1);
  EXPECT_LE(pruned.RetainedItems(), static_cast<size_t>(depth) * 6);
  for (int i = 0; i < depth; ++i) ASSERT_TRUE(pruned.Feed(')'));
  EXPECT_TRUE(pruned.IsAccepting());
  EXPECT_LE(pruned.RetainedSets(), 2u);
  EXPECT_GT(unpruned.RetainedItems(), pruned.RetainedItems());
}

TEST(CompactTest, PrunedChartGolden) {
  parser::FlatGrammar flat = Parens();
  parser::Recognizer r = MakeRecognizer(&flat);
  ASSERT_EQ(r.FeedBytes("x(x(x"), 5u);
  // Each open group keeps two sets: the one where the group began (its Leo
  // entry says where completing it leads) and the one after its "(" (where
  // the inner repetition waits). Closed groups and scanned x's are gone.
  EXPECT_EQ(r.DumpChart(),
            "set 0 @0 accepting\n"
            "  <start> -> . root (0)\n"
            "  root -> . root root#alt1 (0)\n"
            "set 1 @1 accepting\n"
            "  leo root#alt1 => root -> root root#alt1 . (0)\n"
            "set 2 @2\n"
            "  root#alt1 -> \"(\" . root \")\" (1)\n"
            "  root -> . root root#alt1 (2)\n"
            "set 3 @3\n"
            "  leo root#alt1 => root -> root root#alt1 . (2)\n"
            "set 4 @4\n"
            "  root#alt1 -> \"(\" . root \")\" (3)\n"
            "  root -> . root root#alt1 (4)\n"
            "set 5 @5\n"
            "  leo root#alt1 => root -> root root#alt1 . (4)\n"
            "  root#alt1 -> \"(\" root . \")\" (3) state 3\n"
            "  root#alt1 -> . \"(\" root \")\" (5) state 1\n"
            "  root#alt1 -> . \"x\" (5) state 5\n");
}

// The incremental bookkeeping must agree with the naive mark after every
// step: LiveItems() equals the item count of CopyLive's dense chart, on a
// pseudo-random walk through the grammar (with rollbacks mixed in).
TEST(CompactTest, IncrementalLivenessEqualsNaiveMark) {
  parser::FlatGrammar flat = Parens();
  RecognizerOptions options;
  options.max_rollback = 40;
  parser::Recognizer r = MakeRecognizer(&flat, options);
  uint64_t seed = 12345;
  auto next = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  ZapFormatCompactor naive;
  for (int step = 0; step < 20000; ++step) {
    parser::ByteSet allowed = r.NextBytes();
    std::string choices;
    for (char c : std::string("(x)")) {
      if (allowed.test(static_cast<uint8_t>(c))) choices.push_back(c);
    }
    // Bias towards opening so that nesting goes deep and comes back.
    char c = choices[next() % choices.size()];
    if (step % 1000 > 500 && allowed.test(')')) c = ')';
    ASSERT_TRUE(r.Feed(static_cast<uint8_t>(c)));
    if (step % 97 == 0) {
      size_t n = std::min<size_t>(r.Position(), 1 + next() % 40);
      ASSERT_TRUE(r.Rollback(n)) << "step " << step << " n " << n;
    }
    parser::Chart dense;
    naive.CopyLive(flat, r.chart_for_testing(), &dense);
    ASSERT_EQ(r.RetainedItems(), dense.ItemCount()) << "step " << step;
    ASSERT_EQ(r.RetainedSets(), dense.sets.size()) << "step " << step;
  }
}

// The cache key spelled from a dense copy of the live chart (CopyLive), the
// straightforward way: the reference for CanonicalKey, which reads the live
// part in place.
std::vector<uint32_t> ReferenceKey(const parser::FlatGrammar& flat, const parser::Chart& chart) {
  ZapFormatCompactor copier;
  parser::Chart c;
  copier.CopyLive(flat, chart, &c);
  std::vector<uint32_t> out;
  for (const parser::EarleySet& s : c.sets) {
    out.insert(out.end(), {s.accepting, s.lane, s.group_end - s.group_begin});
    for (uint32_t g = s.group_begin; g < s.group_end; ++g) {
      const parser::WaitingGroup& group = c.groups[g];
      out.insert(out.end(), {group.nt, group.count, group.leo_dot, group.leo_parent});
      std::vector<std::array<uint32_t, 2>> pairs;
      for (uint32_t k = 0; k < group.count; ++k) {
        pairs.push_back({c.waiting[group.first + k].dot, c.waiting[group.first + k].parent});
      }
      std::sort(pairs.begin(), pairs.end());
      for (const auto& p : pairs) out.insert(out.end(), p.begin(), p.end());
    }
    out.push_back(s.scan_end - s.scan_begin);
    std::vector<std::array<uint32_t, 3>> triples;
    for (uint32_t i = s.scan_begin; i < s.scan_end; ++i) {
      triples.push_back({c.scan[i].dot, c.scan[i].parent, c.scan[i].state});
    }
    std::sort(triples.begin(), triples.end());
    for (const auto& t : triples) out.insert(out.end(), t.begin(), t.end());
  }
  return out;
}

// Feeds `texts` byte by byte (with occasional rollbacks); at every step the
// in-place key must be a function of the reference key and vice versa (so
// the mask cache shares masks exactly between equal live charts), and must
// not change when the chart is rewritten densely.
void CheckCanonicalKeys(const parser::FlatGrammar& flat, const std::vector<std::string>& texts,
                        size_t* states, size_t* distinct) {
  std::map<std::vector<uint32_t>, std::vector<uint32_t>> by_reference, by_key;
  ZapFormatCompactor keyer, copier;
  auto key_of = [&](const parser::Chart& chart) {
    std::vector<uint32_t> key;
    keyer.CanonicalKey(chart, [&](const parser::EarleySet& s) { key.insert(key.end(), {s.accepting, s.lane}); },
                       {}, {}, &key);
    return key;
  };
  RecognizerOptions options;
  options.max_rollback = 16;
  size_t distinct_keys = 0;
  for (const std::string& text : texts) {
    // Lane ids are interned per recognizer: compare lexed states within one text.
    if (flat.lexed()) {
      distinct_keys += by_key.size();
      by_reference.clear();
      by_key.clear();
    }
    parser::Recognizer r = MakeRecognizer(&flat, options);
    size_t furthest = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      if (!r.Feed(static_cast<uint8_t>(text[i]))) break;
      if (i > furthest && i % 37 == 36) {  // once per position: go back 3 bytes
        furthest = i;
        ASSERT_TRUE(r.Rollback(3));
        i -= 3;
        continue;
      }
      furthest = std::max(furthest, i);
      const std::vector<uint32_t> key = key_of(r.chart_for_testing());
      const std::vector<uint32_t> reference = ReferenceKey(flat, r.chart_for_testing());
      parser::Chart dense;
      copier.CopyLive(flat, r.chart_for_testing(), &dense);
      ASSERT_EQ(key_of(dense), key) << "byte " << i;
      auto [a, new_reference] = by_reference.emplace(reference, key);
      ASSERT_EQ(a->second, key) << "two keys for one live chart, byte " << i;
      auto [b, new_key] = by_key.emplace(key, reference);
      if (b->second != reference) {
        size_t d = 0;
        while (d < reference.size() && d < b->second.size() && reference[d] == b->second[d]) ++d;
        std::string window;
        for (size_t k = d > 8 ? d - 8 : 0; k < d + 8; ++k) {
          window += (k < reference.size() ? std::to_string(reference[k]) : "-") + "/" +
                    (k < b->second.size() ? std::to_string(b->second[k]) : "-") + " ";
        }
        auto join = [](const std::vector<uint32_t>& v) {
          std::string o;
          for (uint32_t x : v) o += std::to_string(static_cast<int32_t>(x)) + " ";
          return o;
        };
        FAIL() << "one key for two live charts, byte " << i << ", references differ at " << d << ": " << window
               << "\nkey " << join(key) << "\nref now " << join(reference) << "\nref old " << join(b->second);
      }
      ++*states;
    }
  }
  *distinct = distinct_keys + by_key.size();
}

std::vector<std::string> TraceTexts(const std::string& set, size_t limit) {
  std::vector<std::string> texts;
  const std::string lines = testing::ReadFileOrDie(testing::DataPath("traces/llama3/" + set + ".jsonl"));
  size_t at = 0;
  while (texts.size() < limit && at < lines.size()) {
    const size_t end = lines.find('\n', at);
    nlohmann::json record = nlohmann::json::parse(lines.substr(at, end - at));
    texts.push_back(record.at("text").get<std::string>());
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return texts;
}

TEST(CompactTest, CanonicalKeyEqualsTheDenseCopysSpelling) {
  struct Case {
    std::string spec, set;
    size_t docs, min_distinct;
  };
  for (const Case& c : {Case{"builtin:json", "json-docs", 8, 15},
                        Case{"grammars/lark/syncode/sql.lark", "sql", 20, 300}}) {
    absl::StatusOr<zapgram::Grammar> g = zapgram::Grammar::Load(c.spec, testing::DataPath(""));
    ASSERT_TRUE(g.ok()) << g.status();
    size_t states = 0, distinct = 0;
    CheckCanonicalKeys(g->data().flat, TraceTexts(c.set, c.docs), &states, &distinct);
    std::printf("%s: %zu states, %zu distinct keys\n", c.spec.c_str(), states, distinct);
    std::fflush(stdout);
    EXPECT_GT(states, 300u);
    EXPECT_GT(distinct, c.min_distinct);
  }
  const parser::FlatGrammar parens = Parens();
  size_t states = 0, distinct = 0;
  std::string nested;
  for (int k = 0; k < 300; ++k) nested += k % 50 < 25 ? "(x" : ")x";
  CheckCanonicalKeys(parens, {nested}, &states, &distinct);
  EXPECT_GT(distinct, 20u);
}

// A key cut after k kept sets (max_sets) spells the top of the live chart
// only: equal for equal tops at any depth, bounded in length, and the cut it
// returns is a group index below which nothing was spelled (0 when the
// whole chart fits).
TEST(CompactTest, CutKeysSpellTheTopOnly) {
  const parser::FlatGrammar parens = Parens();
  ZapFormatCompactor keyer;
  auto key_of = [&](const std::string& text, uint32_t max_sets, uint32_t* cut) {
    parser::Recognizer r = MakeRecognizer(&parens);
    EXPECT_EQ(r.FeedBytes(text), text.size());
    std::vector<uint32_t> key;
    *cut = keyer.CanonicalKey(r.chart_for_testing(), [&](const parser::EarleySet& s) { key.push_back(s.accepting); },
                              {}, {.max_sets = max_sets}, &key).cut;
    return key;
  };
  uint32_t cut = 0;
  const std::vector<uint32_t> shallow_full = key_of("((x", UINT32_MAX, &cut);
  EXPECT_EQ(cut, 0u);
  EXPECT_EQ(key_of("((x", 100, &cut), shallow_full);  // nothing to cut
  EXPECT_EQ(cut, 0u);
  const std::vector<uint32_t> deep_full = key_of(std::string(50, '(') + "x", UINT32_MAX, &cut);
  EXPECT_NE(deep_full, shallow_full);
  EXPECT_GT(deep_full.size(), 20 * shallow_full.size() / 2);
  for (uint32_t k : {0u, 1u, 2u, 5u}) {
    uint32_t cut_a = 0, cut_b = 0;
    const std::vector<uint32_t> a = key_of(std::string(20, '(') + "x", k, &cut_a);
    const std::vector<uint32_t> b = key_of(std::string(50, '(') + "x", k, &cut_b);
    EXPECT_EQ(a, b) << "max_sets " << k;
    EXPECT_GT(cut_a, 0u);
    EXPECT_GT(cut_b, cut_a);
    EXPECT_LT(a.size(), shallow_full.size() * (k + 3)) << "max_sets " << k;
    // A chart whose bottom is within reach is not cut, and differs.
    uint32_t cut_c = 0;
    if (k >= 2) {
      EXPECT_NE(key_of("(x", k, &cut_c), a) << "max_sets " << k;
      EXPECT_EQ(cut_c, 0u);
    }
  }
}

}  // namespace
}  // namespace zapgram::pruning
