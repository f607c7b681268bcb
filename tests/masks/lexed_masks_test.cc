// The lexed-grammar mask walk (masks/lexed_masks.cc) against the recognizer
// and the brute force.
//  - LexedViews.*: Recognizer::StepLaneViews with PushTokenEnd closures
//    equals a real Push, byte by byte, at positions of real java/go/sql
//    documents: the byte is accepted exactly when the views are not empty,
//    and the views, merged per (lexer state, guards), are the lanes that
//    CollectLanes gives after the push.
// The masks themselves: tests/masks/matcher_test.cc (MatcherTrace.*,
// MatcherLexed.*, MatcherRandomWalk.LexedGrammarsMatchBruteForce).
#include <cstdio>
#include <fstream>
#include <map>
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "api/grammar_data.h"
#include "parser/flat_grammar.h"
#include "pruning/compact.h"
#include "tests/support/test_paths.h"

namespace zapgram::masks {
namespace {

using LaneView = parser::Recognizer::LaneView;

std::shared_ptr<internal::CompiledGrammarData> LoadLark(const std::string& set) {
  absl::StatusOr<grammar::Grammar> ir =
      internal::ReadGrammarSpec("grammars/lark/syncode/" + set + ".lark", testing::DataPath(""));
  EXPECT_TRUE(ir.ok()) << ir.status();
  auto data = std::make_shared<internal::CompiledGrammarData>();
  absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(*ir);
  EXPECT_TRUE(flat.ok()) << flat.status();
  data->flat = *std::move(flat);
  return data;
}

struct Doc {
  std::string id, text;
};

std::vector<Doc> ReadDocs(const std::string& set, size_t limit) {
  std::ifstream in(testing::DataPath("traces/llama3/" + set + ".jsonl"));
  std::vector<Doc> out;
  std::string line;
  while (out.size() < limit && std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    out.push_back({j.at("id"), j.at("text")});
  }
  return out;
}

// (lexer state, guards) -> (tokens, accepting), tokens sorted and distinct.
using Merged = std::map<std::pair<uint32_t, std::vector<uint32_t>>, std::pair<std::vector<uint32_t>, bool>>;

Merged Merge(const std::vector<LaneView>& views) {
  Merged out;
  for (const LaneView& v : views) {
    auto& [tokens, accepting] = out[{v.lexer_state, v.guards}];
    parser::ForEachToken(v.tokens, [&](uint32_t token) { tokens.push_back(token); });
    std::sort(tokens.begin(), tokens.end());
    tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
    accepting = accepting || v.accepting;
  }
  return out;
}

// At every `stride`-th position of the first documents, every byte.
void CheckViews(const std::string& set, size_t docs, size_t stride) {
  auto data = LoadLark(set);
  const parser::FlatGrammar& flat = data->flat;
  ASSERT_TRUE(flat.lexed());
  RecognizerOptions options;
  options.max_rollback = 0;
  int positions = 0, bytes = 0, accepted = 0, closures = 0;
  for (const Doc& doc : ReadDocs(set, docs)) {
    parser::Recognizer r = pruning::MakeRecognizer(&flat, options);
    std::vector<LaneView> before, stepped, after, closed;
    for (size_t pos = 0; pos <= doc.text.size(); ++pos) {
      if (pos % stride == 0) {
        ++positions;
        r.CollectLanes(&before);
        const auto advance = [&](uint32_t source, uint32_t token, LaneView* boundary) {
          ++closures;
          if (!r.PushTokenEnd(source, token)) return false;
          r.CollectLanes(&closed);
          EXPECT_EQ(closed.size(), 1u);
          boundary->tokens = closed[0].tokens;
          boundary->accepting = closed[0].accepting;
          boundary->source = closed[0].source;
          r.Pop();
          return true;
        };
        for (uint32_t b = 0; b < 256; ++b) {
          ++bytes;
          parser::Recognizer::StepLaneViews(*flat.lexer, before, static_cast<uint8_t>(b), advance, &stepped);
          const bool pushed = r.Push(static_cast<uint8_t>(b));
          ASSERT_EQ(pushed, !stepped.empty()) << doc.id << " at byte " << pos << ", next byte " << b;
          if (!pushed) continue;
          ++accepted;
          r.CollectLanes(&after);
          EXPECT_EQ(Merge(stepped), Merge(after)) << doc.id << " at byte " << pos << ", next byte " << b;
          r.Pop();
        }
      }
      if (pos == doc.text.size() || !r.Feed(static_cast<uint8_t>(doc.text[pos]))) break;
    }
  }
  std::printf("%s: %d positions, %d bytes tried, %d accepted, %d closures\n", set.c_str(), positions, bytes,
              accepted, closures);
  EXPECT_GT(accepted, 0);
  EXPECT_GT(closures, 0);
}

TEST(LexedViews, JavaStepsLikePush) { CheckViews("java", 4, 3); }
TEST(LexedViews, GoStepsLikePush) { CheckViews("go", 4, 3); }
TEST(LexedViews, SqlStepsLikePush) { CheckViews("sql", 20, 1); }

}  // namespace
}  // namespace zapgram::masks
