// The transition memo (parser/transition_memo.h) through zapgram::Recognizer:
// a recognizer with RecognizerOptions::transition_memo_bytes must answer
// exactly as a plain one (a fresh recognizer per document, no memo) on
// every byte of real documents and their mutations: the verdict of each
// Feed, and at the end and at each rejection IsAccepting, NextBytes and the
// item count. One memo serves all documents of a grammar (Reset between
// them), as in `zapgram parse`; tiny budgets make it clear between and
// within documents.
#include <cstdint>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_paths.h"
#include "tests/support/test_scale.h"
#include "zapgram/grammar.h"

namespace zapgram {
namespace {

struct Doc {
  std::string grammar;
  std::string text;
};

// Up to `count` records of a trace, every `stride`-th line.
std::vector<Doc> ReadDocs(const std::string& trace, size_t count, size_t stride) {
  std::ifstream in(testing::DataPath(trace));
  std::vector<Doc> docs;
  std::string line;
  for (size_t n = 0; std::getline(in, line) && docs.size() < count; ++n) {
    if (n % stride != 0) continue;
    nlohmann::json record = nlohmann::json::parse(line);
    docs.push_back({record["grammar"].get<std::string>(), record["text"].get<std::string>()});
  }
  return docs;
}

// The document and a few mutations of it: a byte replaced, a byte
// deleted, cut short, a piece repeated.
std::vector<std::string> Variants(const std::string& text, std::mt19937& rng) {
  std::vector<std::string> out = {text};
  if (text.empty()) return out;
  std::uniform_int_distribution<size_t> at(0, text.size() - 1);
  const std::string alphabet = "{}[]\":, \n0a\\-.e";
  std::string replaced = text;
  replaced[at(rng)] = alphabet[at(rng) % alphabet.size()];
  out.push_back(replaced);
  std::string deleted = text;
  deleted.erase(at(rng), 1);
  out.push_back(deleted);
  out.push_back(text.substr(0, at(rng)));
  const size_t from = at(rng);
  out.push_back(text.substr(0, from) + text.substr(from, 16) + text.substr(from));
  return out;
}

struct Tally {
  size_t documents = 0, bytes = 0, rejected = 0;
};

// The options of `zapgram parse`; a memo of `bytes` (0: none).
RecognizerOptions MemoOptions(size_t bytes) {
  RecognizerOptions options;
  options.max_rollback = 0;
  options.in_place_terminal_steps = true;
  options.transition_memo_bytes = bytes;
  return options;
}

// Feeds `text` to the memo recognizer (after Reset) and a fresh plain one,
// comparing them at every byte.
void ExpectSameRun(const Grammar& grammar, Recognizer& memo, const std::string& text,
                   const std::string& label, Tally* tally) {
  Recognizer plain(grammar, MemoOptions(0));
  memo.Reset();
  ++tally->documents;
  for (size_t i = 0; i < text.size(); ++i) {
    const uint8_t byte = static_cast<uint8_t>(text[i]);
    const bool a = plain.Feed(byte), b = memo.Feed(byte);
    ASSERT_EQ(a, b) << label << " byte " << i;
    ASSERT_EQ(plain.status().ok(), memo.status().ok()) << label << " byte " << i;
    if (!a) {
      ++tally->rejected;
      EXPECT_EQ(plain.NextBytes(), memo.NextBytes()) << label << " byte " << i;
      EXPECT_EQ(plain.IsAccepting(), memo.IsAccepting()) << label << " byte " << i;
      return;
    }
    ++tally->bytes;
    ASSERT_EQ(plain.RetainedItems(), memo.RetainedItems()) << label << " byte " << i;
  }
  EXPECT_EQ(plain.IsAccepting(), memo.IsAccepting()) << label;
  EXPECT_EQ(plain.NextBytes(), memo.NextBytes()) << label;
  EXPECT_EQ(memo.Position(), text.size());
}

// Every document of `docs` (grouped by grammar, one memo per grammar) and
// its mutations, under a memo of `budget` bytes.
void CheckTrace(const std::vector<Doc>& docs, const LoadOptions& load, size_t budget, bool mutate,
                uint64_t* clears = nullptr) {
  std::mt19937 rng(7);
  Tally tally;
  std::string loaded_spec;
  std::optional<Grammar> grammar;
  std::optional<Recognizer> memo;
  auto finish_grammar = [&] {
    if (memo && clears != nullptr) *clears += memo->memo_stats().clears;
  };
  for (size_t d = 0; d < docs.size(); ++d) {
    if (docs[d].grammar != loaded_spec) {
      finish_grammar();
      absl::StatusOr<Grammar> g = Grammar::Load(docs[d].grammar, testing::DataPath(""), load);
      if (!g.ok()) continue;  // a schema this build refuses: nothing to compare
      loaded_spec = docs[d].grammar;
      grammar.emplace(*std::move(g));
      memo.emplace(*grammar, MemoOptions(budget));
    }
    if (!grammar || loaded_spec != docs[d].grammar) continue;
    const std::vector<std::string> variants =
        mutate ? Variants(docs[d].text, rng) : std::vector<std::string>{docs[d].text};
    // Twice: the second pass reads what the first recorded.
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t v = 0; v < variants.size(); ++v) {
        ExpectSameRun(*grammar, *memo, variants[v],
                      docs[d].grammar + " doc " + std::to_string(d) + " variant " + std::to_string(v),
                      &tally);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
  finish_grammar();
  std::printf("%zu runs, %zu bytes, %zu rejected\n", tally.documents, tally.bytes, tally.rejected);
  EXPECT_GT(tally.documents, 0u);
  EXPECT_GT(tally.rejected, 0u);
}

TEST(TransitionMemo, JsonDocsAgreeWithPlainRecognizer) {
  const std::vector<Doc> docs =
      ReadDocs("traces/llama3/json-docs.jsonl", testing::Scaled<size_t>(60, 12), 5);
  CheckTrace(docs, {}, size_t{64} << 20, /*mutate=*/true);
}

TEST(TransitionMemo, MaskBenchDocsAgreeWithPlainRecognizer) {
  // Sorted by grammar in the trace: each schema's records are adjacent.
  const std::vector<Doc> docs =
      ReadDocs("traces/llama3/maskbench.jsonl", testing::Scaled<size_t>(300, 60), 37);
  LoadOptions load;
  load.schema.lenient = true;
  load.schema.purpose = SchemaPurpose::kValidation;
  CheckTrace(docs, load, size_t{64} << 20, /*mutate=*/true);
}

TEST(TransitionMemo, LexedGrammarsAgreeWithPlainRecognizer) {
  for (const char* trace : {"traces/llama3/java.jsonl", "traces/llama3/go.jsonl", "traces/llama3/sql.jsonl"}) {
    SCOPED_TRACE(trace);
    const std::vector<Doc> docs = ReadDocs(trace, testing::Scaled<size_t>(6, 2), 17);
    CheckTrace(docs, {}, size_t{64} << 20, /*mutate=*/true);
  }
}

TEST(TransitionMemo, TinyBudgetsClearAndStayExact) {
  const std::vector<Doc> docs =
      ReadDocs("traces/llama3/json-docs.jsonl", testing::Scaled<size_t>(20, 6), 13);
  uint64_t clears = 0;
  CheckTrace(docs, {}, 64 << 10, /*mutate=*/true, &clears);
  EXPECT_GT(clears, 10u);  // the budget ran out, often within a document
}

TEST(TransitionMemo, RepeatedDocumentsAreServedFromTheMemo) {
  absl::StatusOr<Grammar> grammar = Grammar::Load("builtin:json");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  Recognizer memo(*grammar, MemoOptions(size_t{16} << 20));
  const std::string doc = R"({"a": [1, 2.5, {"b": "text", "c": null}], "d": true})";
  for (int pass = 0; pass < 10; ++pass) {
    memo.Reset();
    ASSERT_EQ(memo.FeedBytes(doc), doc.size());
    EXPECT_TRUE(memo.IsAccepting());
  }
  const RecognizerMemoStats stats = memo.memo_stats();
  // The first pass steps every byte; the other nine read them all.
  EXPECT_LE(stats.misses, doc.size());
  EXPECT_GE(stats.hits, 9 * doc.size());
  EXPECT_EQ(stats.clears, 0u);
  EXPECT_GT(stats.states, 1u);
  // Without the option there is no memo.
  Recognizer plain(*grammar, {});
  EXPECT_EQ(plain.memo_stats().states, 0u);
}

TEST(TransitionMemo, DeepStatesAreSteppedPlainlyAndRejoin) {
  // 3,000 levels: the states past kMaxItems live items are not kept (their
  // spelling is O(depth)); the memo takes them up again on the way out.
  absl::StatusOr<Grammar> grammar = Grammar::Load("builtin:json");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  Recognizer memo(*grammar, MemoOptions(size_t{16} << 20));
  const std::string deep = std::string(3000, '[') + "1" + std::string(3000, ']');
  Tally tally;
  for (const std::string& text : {deep, deep.substr(0, 4000), deep.substr(0, 3001) + "]]}", deep}) {
    ExpectSameRun(*grammar, memo, text, "deep", &tally);
  }
  const RecognizerMemoStats stats = memo.memo_stats();
  EXPECT_GT(stats.detached, 0u);
  EXPECT_LT(stats.states, 1000u);  // not one per level
}

TEST(TransitionMemo, BudgetErrorsAreNotMemoized) {
  // A nesting budget: both recognizers stop at the same byte with an error,
  // and the memo one recovers after Reset as the plain one does.
  absl::StatusOr<Grammar> grammar = Grammar::Load("builtin:json");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  RecognizerOptions plain_options = MemoOptions(0);
  plain_options.limits.max_sets = 12;
  RecognizerOptions memo_options = MemoOptions(size_t{1} << 20);
  memo_options.limits.max_sets = 12;
  const std::string deep = std::string(40, '[') + std::string(40, ']');
  Recognizer memo(*grammar, memo_options);
  for (int pass = 0; pass < 2; ++pass) {
    Recognizer plain(*grammar, plain_options);
    memo.Reset();
    const size_t a = plain.FeedBytes(deep), b = memo.FeedBytes(deep);
    EXPECT_EQ(a, b);
    EXPECT_LT(a, deep.size());
    EXPECT_FALSE(plain.status().ok());
    EXPECT_EQ(plain.status().code(), memo.status().code());
    memo.Reset();
    EXPECT_TRUE(memo.status().ok());
    EXPECT_EQ(memo.FeedBytes("[1]"), 3u);
    EXPECT_TRUE(memo.IsAccepting());
  }
}

}  // namespace
}  // namespace zapgram
