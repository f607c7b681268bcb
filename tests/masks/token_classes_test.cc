// Token equivalence classes (masks/token_classes.h) against a brute force:
// at states along real trace documents, every id gets its verdict from a
// separate recognizer that pushes the id's bytes (EOS: the text is a
// sentence; other special and unused ids: never), and every member of every
// class must get the verdict of the class's representative. A partition with
// a distinguishable pair merged must fail the same check.
#include "masks/token_classes.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "masks/matcher.h"
#include "pruning/compact.h"
#include "tests/support/test_paths.h"
#include "tests/support/test_scale.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram::masks {
namespace {

const zapgram::Vocabulary& LoadTokenizer(const std::string& name) {
  static std::map<std::string, zapgram::Vocabulary> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) {
    absl::StatusOr<zapgram::Vocabulary> v =
        zapgram::Vocabulary::Load(testing::DataPath("tokenizers/" + name + ".tokenizer.json"));
    EXPECT_TRUE(v.ok()) << v.status();
    it = loaded.emplace(name, *std::move(v)).first;
  }
  return it->second;
}

zapgram::CompiledGrammar CompileSpec(const std::string& spec, const zapgram::Vocabulary& vocab) {
  absl::StatusOr<zapgram::Grammar> g = zapgram::Grammar::Load(spec, testing::DataPath(""));
  EXPECT_TRUE(g.ok()) << spec << ": " << g.status();
  absl::StatusOr<zapgram::CompiledGrammar> c = zapgram::CompiledGrammar::Compile(*g, vocab);
  EXPECT_TRUE(c.ok()) << spec << ": " << c.status();
  return *std::move(c);
}

// Per id, the brute-force verdict after `text`.
std::vector<uint8_t> BruteForceVerdicts(const CompiledGrammar& g, const std::string& text) {
  RecognizerOptions options;
  options.max_rollback = 0;
  parser::Recognizer r = pruning::MakeRecognizer(&g.grammar(), options);
  EXPECT_EQ(r.FeedBytes(text), text.size());
  const Vocabulary& vocab = g.vocabulary();
  std::vector<uint8_t> verdict(vocab.padded_size(), 0);
  for (TokenId id = 0; id < vocab.padded_size(); ++id) {
    if (vocab.is_eos(id)) {
      verdict[id] = r.IsAccepting() ? 1 : 0;
      continue;
    }
    if (vocab.kind(id) != TokenKind::kNormal) continue;
    const std::string_view bytes = vocab.token_bytes(id);
    size_t depth = 0;
    for (; depth < bytes.size(); ++depth) {
      if (!r.Push(static_cast<uint8_t>(bytes[depth]))) break;
    }
    verdict[id] = depth == bytes.size() ? 1 : 0;
    while (depth-- > 0) r.Pop();
  }
  return verdict;
}

// Members whose verdict differs from their class representative's; the
// first few are described in `report`.
int Violations(const TokenClasses& classes, const std::vector<uint8_t>& verdict, const Vocabulary& vocab,
               const std::string& where, std::string* report) {
  int violations = 0;
  for (size_t id = 0; id < classes.class_of.size(); ++id) {
    const TokenId rep = classes.representative[classes.class_of[id]];
    if (verdict[id] != verdict[rep] && ++violations <= 3) {
      *report += where + ": token " + std::to_string(id) + " \"" +
                 std::string(vocab.token_bytes(static_cast<TokenId>(id))) + "\" verdict " +
                 std::to_string(verdict[id]) + ", its class representative " + std::to_string(rep) + " \"" +
                 std::string(vocab.token_bytes(rep)) + "\" verdict " + std::to_string(verdict[rep]) + "\n";
    }
  }
  return violations;
}

struct TraceDoc {
  std::string grammar;
  std::vector<TokenId> tokens;
};

// The first `limit` valid documents whose grammar contains `grammar_filter`.
std::vector<TraceDoc> ReadDocs(const std::string& tokenizer, const std::string& set, size_t limit,
                               const std::string& grammar_filter = "") {
  std::ifstream in(testing::DataPath("traces/" + tokenizer + "/" + set + ".jsonl"));
  std::vector<TraceDoc> out;
  std::string line;
  while (out.size() < limit && std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("roundtrip_mismatch", false) || !j.value("valid", true)) continue;
    if (j.at("grammar").get<std::string>().find(grammar_filter) == std::string::npos) continue;
    out.push_back({j.at("grammar"), j.at("tokens").get<std::vector<TokenId>>()});
  }
  return out;
}

// For the first `docs` valid documents of a trace set: the verdicts at
// `states` token positions spread over each document, against the classes.
// ZAPGRAM_BRUTE_FORCE_DOCS / ZAPGRAM_BRUTE_FORCE_STEPS widen the sample for
// offline runs.
void CheckClassesAlongTrace(const std::string& tokenizer, const std::string& set, size_t docs, size_t states,
                            const std::string& grammar_filter) {
  if (const char* d = std::getenv("ZAPGRAM_BRUTE_FORCE_DOCS")) docs = std::strtoull(d, nullptr, 10);
  if (const char* s = std::getenv("ZAPGRAM_BRUTE_FORCE_STEPS")) states = std::strtoull(s, nullptr, 10);
  const zapgram::Vocabulary& vocab = LoadTokenizer(tokenizer);
  std::map<std::string, zapgram::CompiledGrammar> grammars;
  int checked = 0, violations = 0;
  std::string report;
  for (const TraceDoc& doc : ReadDocs(tokenizer, set, docs, grammar_filter)) {
    auto it = grammars.find(doc.grammar);
    if (it == grammars.end()) it = grammars.emplace(doc.grammar, CompileSpec(doc.grammar, vocab)).first;
    const CompiledGrammar& g = *it->second.impl();
    const TokenClasses& classes = g.token_classes();
    ASSERT_EQ(classes.class_of.size(), static_cast<size_t>(g.vocabulary().padded_size()));
    std::string text;
    const size_t stride = std::max<size_t>(1, doc.tokens.size() / states);
    for (size_t k = 0; k <= doc.tokens.size(); ++k) {
      if (k % stride == 0 || k == doc.tokens.size()) {
        violations += Violations(classes, BruteForceVerdicts(g, text), g.vocabulary(),
                                 doc.grammar + " token " + std::to_string(k), &report);
        ++checked;
      }
      if (k < doc.tokens.size()) text += g.vocabulary().token_bytes(doc.tokens[k]);
    }
  }
  for (const auto& [spec, g] : grammars) {
    std::printf("%s/%s: %s: %u classes of %d ids\n", tokenizer.c_str(), set.c_str(), spec.c_str(),
                g.impl()->token_classes().num_classes(), g.vocabulary().padded_size());
  }
  std::printf("%s/%s: %d states checked, %d violations\n", tokenizer.c_str(), set.c_str(), checked, violations);
  EXPECT_GT(checked, 0);
  EXPECT_EQ(violations, 0) << report;
}

// (tokenizer, trace set, documents, states per document): builtin:json,
// MaskBench schemas and Lark grammars, on the three tokenizers.
struct TraceSample {
  const char* tokenizer;
  const char* set;
  size_t docs, states;
  const char* grammar_filter = "";  // only documents whose grammar contains this
};
class TokenClassesAlongTraces : public ::testing::TestWithParam<TraceSample> {};
TEST_P(TokenClassesAlongTraces, EveryMemberGetsItsRepresentativesVerdict) {
  const TraceSample& p = GetParam();
  CheckClassesAlongTrace(p.tokenizer, p.set, p.docs, p.states, p.grammar_filter);
}
INSTANTIATE_TEST_SUITE_P(Traces, TokenClassesAlongTraces,
                         ::testing::Values(TraceSample{"llama3", "json-docs", 2, 8},
                                           TraceSample{"gemma3", "json-docs", 1, 6},
                                           TraceSample{"llama3", "maskbench", 3, 5},
                                           TraceSample{"qwen2_5", "maskbench", 2, 5},
                                           TraceSample{"gemma3", "maskbench", 2, 4},
                                           TraceSample{"qwen2_5", "sql", 2, 5},
                                           TraceSample{"llama3", "java", 1, 5},
                                           TraceSample{"llama3", "go", 1, 5},
                                           TraceSample{"gemma3", "jsonschema-suite", 4, 3},
                                           TraceSample{"qwen2_5", "go", 1, 4},
                                           // maxLength strings (counted terminals)
                                           TraceSample{"llama3", "maskbench", 2, 6, "Github_medium---o82649"},
                                           TraceSample{"llama3", "maskbench", 1, 6, "Snowplow---sp_342"}),
                         [](const ::testing::TestParamInfo<TraceSample>& info) {
                           std::string name = std::string(info.param.tokenizer) + "_" + info.param.set +
                                              (*info.param.grammar_filter != '\0' ? "_" : "") +
                                              info.param.grammar_filter;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// Masks over token classes (MatcherOptions::token_classes) equal the
// plain masks at every step of trace documents, and the trace's tokens are
// accepted the same.
void CheckClassMasksAlongTrace(const std::string& tokenizer, const std::string& set, size_t docs) {
  const zapgram::Vocabulary& vocab = LoadTokenizer(tokenizer);
  std::map<std::string, zapgram::CompiledGrammar> grammars;
  zapgram::MatcherOptions with_classes, without_classes;
  with_classes.token_classes = zapgram::TokenClassUse::kAlways;
  without_classes.token_classes = zapgram::TokenClassUse::kNever;
  int masks = 0, mismatches = 0;
  for (const TraceDoc& doc : ReadDocs(tokenizer, set, docs)) {
    auto it = grammars.find(doc.grammar);
    if (it == grammars.end()) it = grammars.emplace(doc.grammar, CompileSpec(doc.grammar, vocab)).first;
    zapgram::Matcher plain(it->second, without_classes), classed(it->second, with_classes);
    std::vector<uint32_t> want(it->second.mask_words()), got(it->second.mask_words());
    for (TokenId t : doc.tokens) {
      const size_t allowed = plain.ComputeMask(want.data());
      EXPECT_EQ(classed.ComputeMask(got.data()), allowed);
      mismatches += want != got ? 1 : 0;
      ++masks;
      ASSERT_TRUE(plain.AcceptToken(t));
      ASSERT_TRUE(classed.AcceptToken(t));
    }
    ASSERT_EQ(plain.IsAccepting(), classed.IsAccepting());
    // Rollback moves both alike.
    if (doc.tokens.size() >= 2) {
      ASSERT_TRUE(plain.Rollback(2));
      ASSERT_TRUE(classed.Rollback(2));
      plain.ComputeMask(want.data());
      classed.ComputeMask(got.data());
      EXPECT_EQ(want, got);
    }
  }
  std::printf("%s/%s: %d masks over classes, %d differ from the plain ones\n", tokenizer.c_str(), set.c_str(),
              masks, mismatches);
  EXPECT_GT(masks, 0);
  EXPECT_EQ(mismatches, 0);
}

TEST(TokenClassMasks, JsonDocsLlama3) { CheckClassMasksAlongTrace("llama3", "json-docs", 2); }
TEST(TokenClassMasks, MaskbenchQwen) { CheckClassMasksAlongTrace("qwen2_5", "maskbench", 3); }
TEST(TokenClassMasks, SqlLlama3) { CheckClassMasksAlongTrace("llama3", "sql", 2); }
TEST(TokenClassMasks, JavaQwen) { CheckClassMasksAlongTrace("qwen2_5", "java", 1); }

// The check can fail: merge the classes of two tokens that builtin:json
// tells apart at the start of a document ("{" allowed, "}" not) and the
// brute force finds it.
TEST(TokenClasses, MergedDistinguishablePairIsCaught) {
  const zapgram::Vocabulary& vocab = LoadTokenizer("llama3");
  const zapgram::CompiledGrammar compiled = CompileSpec("builtin:json", vocab);
  const CompiledGrammar& g = *compiled.impl();
  TokenClasses merged = g.token_classes();
  TokenId open = -1, close = -1;
  for (TokenId id = 0; id < g.vocabulary().size(); ++id) {
    if (g.vocabulary().kind(id) != TokenKind::kNormal) continue;
    if (g.vocabulary().token_bytes(id) == "{") open = id;
    if (g.vocabulary().token_bytes(id) == "}") close = id;
  }
  ASSERT_GE(open, 0);
  ASSERT_GE(close, 0);
  const std::vector<uint8_t> verdict = BruteForceVerdicts(g, "");
  ASSERT_NE(verdict[open], verdict[close]);
  EXPECT_NE(merged.class_of[open], merged.class_of[close]);
  std::string report;
  EXPECT_EQ(Violations(merged, verdict, g.vocabulary(), "unmerged", &report), 0) << report;
  // Move every member of close's class into open's class.
  const uint32_t from = merged.class_of[close], to = merged.class_of[open];
  for (uint32_t& c : merged.class_of) {
    if (c == from) c = to;
  }
  EXPECT_GT(Violations(merged, verdict, g.vocabulary(), "merged", &report), 0);
  EXPECT_NE(report.find("verdict"), std::string::npos);
}

// Classes are a partition with representatives at their smallest ids, and
// the special ids are where the essay puts them.
TEST(TokenClasses, ShapeOfThePartition) {
  const zapgram::Vocabulary& vocab = LoadTokenizer("llama3");
  const zapgram::CompiledGrammar compiled = CompileSpec("builtin:json", vocab);
  const TokenClasses& classes = compiled.impl()->token_classes();
  const Vocabulary& v = compiled.impl()->vocabulary();
  EXPECT_EQ(classes.method, TokenClasses::Method::kBehaviour);
  std::vector<TokenId> smallest(classes.num_classes(), -1);
  for (size_t id = 0; id < classes.class_of.size(); ++id) {
    ASSERT_LT(classes.class_of[id], classes.num_classes());
    if (smallest[classes.class_of[id]] < 0) smallest[classes.class_of[id]] = static_cast<TokenId>(id);
  }
  EXPECT_EQ(smallest, classes.representative);
  // Every EOS id in one class, with no normal token.
  const absl::Span<const TokenId> eos = v.eos_ids();
  ASSERT_FALSE(eos.empty());
  for (TokenId id = 0; id < v.padded_size(); ++id) {
    EXPECT_EQ(v.is_eos(id), classes.class_of[id] == classes.class_of[eos[0]]) << id;
  }
  // Far fewer classes than ids, and the public map is the same.
  EXPECT_LT(classes.num_classes(), 5000u);
  EXPECT_EQ(compiled.token_classes().size(), classes.class_of.size());
}

// The classes computed in bounded steps (TokenClassesInProgress, stopping
// anywhere inside a lexer state's walk of the trie) are the classes
// computed at once.
TEST(TokenClasses, StepwiseEqualsWhole) {
  const zapgram::Vocabulary& vocab = LoadTokenizer("llama3");
  for (const char* spec : {"grammars/lark/syncode/sql.lark", "grammars/lark/syncode/go.lark"}) {
    if (testing::kSanitized && std::string(spec).find("go.lark") != std::string::npos) continue;  // sql alone there
    const zapgram::CompiledGrammar compiled = CompileSpec(spec, vocab);
    const CompiledGrammar& g = *compiled.impl();
    const TokenClasses whole = ComputeTokenClasses(g);
    for (const uint64_t budget : {uint64_t{997}, uint64_t{65536}}) {
      TokenClassesInProgress stepwise(g);
      int steps = 1;
      while (!stepwise.Step(budget)) ++steps;
      const TokenClasses got = stepwise.Finish();
      EXPECT_GT(steps, 2) << spec;
      EXPECT_EQ(got.num_classes(), whole.num_classes()) << spec << " budget " << budget;
      EXPECT_EQ(got.class_of, whole.class_of) << spec << " budget " << budget;
      EXPECT_EQ(got.method, whole.method);
    }
  }
}

}  // namespace
}  // namespace zapgram::masks
