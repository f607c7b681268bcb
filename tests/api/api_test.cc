// The public API pieces a server embeds (what the Python package binds):
// grammars from in-memory text (Grammar::FromText) and the persistent mask
// pool (BatchMasker, api/batch_masker.cc).
//
// FromText is checked against the file-based Load of the same grammar (equal
// masks after equal prefixes) and for its error messages; BatchMasker
// against one matcher at a time, across reused calls and concurrent callers.
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/support/test_paths.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram {
namespace {

// A small vocabulary: single bytes of JSON and some multi-byte tokens.
Vocabulary SmallVocabulary() {
  std::vector<std::string> tokens = {"<eos>", "{", "}", "[", "]", "\"", ":", ",", " ", "a", "b",
                                     "1", "2", "true", "null", "\"a\"", "{\"", "\": ", ", \"",
                                     "ab", "12", "-", ".", "e", "x", "y", "\\", "\"b\""};
  absl::StatusOr<Vocabulary> v = Vocabulary::FromTokens(tokens, {0});
  EXPECT_TRUE(v.ok()) << v.status();
  return *std::move(v);
}

std::vector<uint32_t> MaskAfter(const CompiledGrammar& g, std::string_view prefix) {
  Matcher m(g);
  EXPECT_TRUE(m.AcceptBytes(prefix)) << prefix;
  std::vector<uint32_t> words(g.mask_words());
  m.ComputeMask(words.data());
  return words;
}

void ExpectSameMasks(const Grammar& a, const Grammar& b, const std::vector<std::string>& prefixes) {
  const Vocabulary vocab = SmallVocabulary();
  absl::StatusOr<CompiledGrammar> ca = CompiledGrammar::Compile(a, vocab);
  absl::StatusOr<CompiledGrammar> cb = CompiledGrammar::Compile(b, vocab);
  ASSERT_TRUE(ca.ok() && cb.ok());
  for (const std::string& p : prefixes) EXPECT_EQ(MaskAfter(*ca, p), MaskAfter(*cb, p)) << p;
}

TEST(GrammarFromText, JsonSchemaTextEqualsSchemaFile) {
  const std::string path = testing::DataPath("jsonschema/maskbench/Github_easy---o90448.schema.json");
  absl::StatusOr<Grammar> from_file = Grammar::Load("schema:" + path);
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  absl::StatusOr<Grammar> from_text =
      Grammar::FromText(GrammarFormat::kJsonSchema, testing::ReadFileOrDie(path));
  ASSERT_TRUE(from_text.ok()) << from_text.status();
  ExpectSameMasks(*from_file, *from_text, {"", "{", "{\"", "{\"a\": ", "{\"a\": [1, "});
}

// The validation grammar of an object of 10 required keys (any order: 1024
// subset rules) stays small once compiled: its recursive `ws` keeps the
// subset rules out of the regular-terminal merge, which flattened them into
// ~430,000 terminal automaton states (14 s, 1.9 GB) on this MaskBench schema.
TEST(GrammarFromText, ValidationGrammarOfManyRequiredKeysStaysSmall) {
  const std::string path = testing::DataPath("jsonschema/maskbench/Github_medium---o76764.schema.json");
  LoadOptions validation;
  validation.schema.purpose = SchemaPurpose::kValidation;
  absl::StatusOr<Grammar> g = Grammar::FromText(GrammarFormat::kJsonSchema, testing::ReadFileOrDie(path),
                                                validation);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_LT(g->stats().terminal_states, 20000u);
  Recognizer r(*g);
  const std::string reordered =
      "{\"images\": [], \"text\": \"t\", \"reply\": 0, \"favorite\": 0, \"retweet\": 0,\n"
      " \"isRetweet\": false, \"type\": \"image\", \"time\": 1136091600, \"username\": \"u\", \"id\": \"1\"}";
  EXPECT_EQ(r.FeedBytes(reordered), reordered.size());
  EXPECT_TRUE(r.IsAccepting());
}

TEST(GrammarFromText, SchemaOptionsApply) {
  LoadOptions compact;
  compact.schema.compact = true;
  const Vocabulary vocab = SmallVocabulary();
  for (bool is_compact : {false, true}) {
    absl::StatusOr<Grammar> g = Grammar::FromText(GrammarFormat::kJsonSchema, R"({"type": "array"})",
                                                  is_compact ? compact : LoadOptions{});
    ASSERT_TRUE(g.ok()) << g.status();
    absl::StatusOr<CompiledGrammar> c = CompiledGrammar::Compile(*g, vocab);
    ASSERT_TRUE(c.ok());
    const std::vector<uint32_t> words = MaskAfter(*c, "[");
    const bool space = (words[8 / 32] >> (8 % 32)) & 1;  // id 8 is " "
    EXPECT_EQ(space, !is_compact);
  }
  LoadOptions strict;
  absl::StatusOr<Grammar> refused =
      Grammar::FromText(GrammarFormat::kJsonSchema, R"({"type": "array", "uniqueItems": true})", strict);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "uniqueItems")) << refused.status();
  LoadOptions lenient;
  lenient.schema.lenient = true;
  absl::StatusOr<Grammar> dropped =
      Grammar::FromText(GrammarFormat::kJsonSchema, R"({"type": "array", "uniqueItems": true})", lenient);
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  ASSERT_EQ(dropped->warnings().size(), 1u);
  EXPECT_TRUE(absl::StrContains(dropped->warnings()[0], "uniqueItems"));
}

TEST(GrammarFromText, LarkRegexAndGbnfEqualTheirSpecs) {
  absl::StatusOr<Grammar> lark = Grammar::FromText(GrammarFormat::kLark,
                                                   "start: \"[\" item (\",\" item)* \"]\"\n"
                                                   "item: WORD | NUMBER\n"
                                                   "%import common.WORD\n%import common.NUMBER\n"
                                                   "%ignore \" \"\n");
  ASSERT_TRUE(lark.ok()) << lark.status();
  absl::StatusOr<Grammar> gbnf = Grammar::FromText(
      GrammarFormat::kGbnf,
      "root ::= \" \"* \"[\" \" \"* item (\" \"* \",\" \" \"* item)* \" \"* \"]\" \" \"*\n"
      "item ::= [a-zA-Z]+ | [0-9]+ | [0-9]+ exp | ([0-9]+ \".\" [0-9]* | \".\" [0-9]+) exp?\n"
      "exp ::= [eE] [+-]? [0-9]+\n");
  ASSERT_TRUE(gbnf.ok()) << gbnf.status();
  ExpectSameMasks(*lark, *gbnf, {"", "[", "[ab", "[ab, ", "[1", "[1.2e"});

  absl::StatusOr<Grammar> regex_text = Grammar::FromText(GrammarFormat::kRegex, "(ab|x)+y?");
  absl::StatusOr<Grammar> regex_spec = Grammar::Load("regex:(ab|x)+y?");
  ASSERT_TRUE(regex_text.ok() && regex_spec.ok());
  ExpectSameMasks(*regex_text, *regex_spec, {"", "a", "ab", "abx", "xy"});
}

// No plain grammar refused (issue 33): the language {""} and the empty
// language load in every format. Masks equal a brute force (each id fed to
// a fresh matcher, EOS allowed iff the state accepts): only EOS for {""},
// nothing for the empty language; IsAccepting says which it is; no byte or
// token is accepted, and EOS finishes only {""}.
TEST(GrammarFromText, EmptyStringAndEmptyLanguageLoad) {
  struct Case {
    GrammarFormat format;
    std::string text;
    bool only_empty_string;  // {""}; else the empty language
  };
  const std::vector<Case> cases = {
      {GrammarFormat::kGbnf, "root ::= \"\"\n", true},
      {GrammarFormat::kGbnf, "root ::= a\na ::= \"\" | \"\" \"\"\n", true},
      {GrammarFormat::kGbnf, "root ::= \"x\" root\n", false},
      {GrammarFormat::kGbnf, "root ::= root\n", false},
      {GrammarFormat::kLark, "start:\n", true},
      {GrammarFormat::kLark, "start: a?\na:\n", true},
      {GrammarFormat::kLark, "start: start\n", false},
      {GrammarFormat::kLark, "start: a\na: \"x\" a\n", false},
      {GrammarFormat::kRegex, "", true},
      {GrammarFormat::kRegex, "[^\\s\\S]", false},
      {GrammarFormat::kJsonSchema, "false", false},
  };
  const Vocabulary vocab = SmallVocabulary();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<Grammar> g = Grammar::FromText(c.format, c.text);
    ASSERT_TRUE(g.ok()) << g.status();
    absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*g, vocab);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    Matcher m(*compiled);
    EXPECT_EQ(m.IsAccepting(), c.only_empty_string);
    std::vector<uint32_t> words(compiled->mask_words());
    const size_t allowed = m.ComputeMask(words.data());
    EXPECT_EQ(allowed, c.only_empty_string ? 1u : 0u);
    for (int32_t id = 0; id < static_cast<int32_t>(vocab.size()); ++id) {
      Matcher fresh(*compiled);
      const bool bit = (words[id / 32] >> (id % 32)) & 1u;
      EXPECT_EQ(bit, fresh.AcceptToken(id)) << "token " << id;
      EXPECT_EQ(bit, id == 0 && c.only_empty_string) << "token " << id;
    }
    EXPECT_FALSE(m.AcceptBytes("a"));
    EXPECT_EQ(m.AcceptToken(0), c.only_empty_string);  // EOS
    EXPECT_EQ(m.IsFinished(), c.only_empty_string);
  }
}

TEST(GrammarFromText, ErrorsNameTheSourceAndPlace) {
  struct Case {
    GrammarFormat format;
    std::string text, expected;
  };
  const std::vector<Case> cases = {
      {GrammarFormat::kGbnf, "root ::= \"a\" (", "request:1:"},
      {GrammarFormat::kLark, "start: \"a\"\nfoo: bar (\n", "the '(' at 2:10"},
      {GrammarFormat::kRegex, "(ab", "request"},
      {GrammarFormat::kJsonSchema, "{\"type\": ", "request"},
      {GrammarFormat::kJsonSchema, "{\"type\": \"strin\"}", "strin"},
  };
  for (const Case& c : cases) {
    LoadOptions options;
    absl::StatusOr<Grammar> g = Grammar::FromText(c.format, c.text, options, "request");
    ASSERT_FALSE(g.ok()) << c.text;
    EXPECT_TRUE(absl::StrContains(g.status().message(), c.expected)) << g.status();
  }
}

// Empty tokens of a token list are padding: never allowed, never accepted,
// and any number of them (the trie holds at most 255 ids per byte string).
TEST(VocabularyFromTokens, EmptyTokensAreUnusedPadding) {
  std::vector<std::string> tokens = {"<eos>", "a", "", "b"};
  tokens.resize(400);
  absl::StatusOr<Vocabulary> vocab = Vocabulary::FromTokens(tokens, {0});
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  EXPECT_FALSE(vocab->is_normal(2));
  EXPECT_FALSE(vocab->is_normal(399));
  absl::StatusOr<Grammar> grammar = Grammar::Load("regex:[ab]*");
  ASSERT_TRUE(grammar.ok());
  absl::StatusOr<CompiledGrammar> g = CompiledGrammar::Compile(*grammar, *vocab);
  ASSERT_TRUE(g.ok()) << g.status();
  Matcher m(*g);
  std::vector<uint32_t> words(g->mask_words());
  EXPECT_EQ(m.ComputeMask(words.data()), 3u);  // a, b, EOS
  EXPECT_EQ(words[0], 0b1011u);
  EXPECT_FALSE(m.AcceptToken(2));
  EXPECT_FALSE(m.AcceptToken(399));
  EXPECT_TRUE(m.AcceptToken(1));
}

// Matchers on a shared JSON grammar after different prefixes.
struct Batch {
  explicit Batch(const CompiledGrammar& g, const std::vector<std::string>& prefixes) {
    for (const std::string& p : prefixes) {
      matchers.emplace_back(g);
      EXPECT_TRUE(matchers.back().AcceptBytes(p)) << p;
    }
    for (Matcher& m : matchers) pointers.push_back(&m);
  }
  std::vector<Matcher> matchers;
  std::vector<Matcher*> pointers;
};

absl::StatusOr<CompiledGrammar> SmallJson() {
  absl::StatusOr<Grammar> grammar = Grammar::Load("builtin:json");
  if (!grammar.ok()) return grammar.status();
  return CompiledGrammar::Compile(*grammar, SmallVocabulary());
}

TEST(BatchMasker, EqualsOneByOneAcrossReusedCalls) {
  absl::StatusOr<CompiledGrammar> g = SmallJson();
  ASSERT_TRUE(g.ok()) << g.status();
  const std::vector<std::string> prefixes = {"", "{\"a\": ", "[1, 2", "{\"k\": \"v", "[tr", "[1.5e", "  ", "{"};
  Batch batch(*g, prefixes);
  const size_t words = g->mask_words();
  BatchMasker masker(3);
  EXPECT_EQ(masker.threads(), 3);
  for (int round = 0; round < 4; ++round) {
    // Rows in reverse order with a gap, as a server's indices may place them.
    std::vector<uint32_t> out(words * (prefixes.size() + 1), 0xFFFFFFFFu);
    std::vector<uint32_t*> rows;
    for (size_t k = 0; k < prefixes.size(); ++k) rows.push_back(out.data() + (prefixes.size() - k) * words);
    std::vector<size_t> allowed(prefixes.size());
    masker.Compute(batch.pointers, rows, absl::MakeSpan(allowed));
    for (size_t k = 0; k < prefixes.size(); ++k) {
      Matcher single(*g);
      ASSERT_TRUE(single.AcceptBytes(prefixes[k]));
      std::vector<uint32_t> expected(words);
      EXPECT_EQ(allowed[k], single.ComputeMask(expected.data())) << prefixes[k];
      EXPECT_EQ(expected, std::vector<uint32_t>(rows[k], rows[k] + words)) << prefixes[k] << " round " << round;
    }
    EXPECT_EQ(out[0], 0xFFFFFFFFu);  // the unused row is untouched
  }
}

// Budgets per row: the budget-aware mask where one is given, the plain one
// where not; each equal to the matcher's own ComputeMask.
TEST(BatchMasker, BudgetsPerRowEqualOneByOne) {
  absl::StatusOr<CompiledGrammar> g = SmallJson();
  ASSERT_TRUE(g.ok()) << g.status();
  const std::vector<std::string> prefixes = {"[1, 2", "{\"a\": ", "[tr", "{", "[1.5e", "[[["};
  const std::vector<std::optional<int64_t>> budgets = {2, 3, std::nullopt, 4, 1, 6};
  Batch batch(*g, prefixes);
  const size_t words = g->mask_words();
  BatchMasker masker(2);
  std::vector<uint32_t> out(words * prefixes.size());
  std::vector<uint32_t*> rows;
  for (size_t k = 0; k < prefixes.size(); ++k) rows.push_back(out.data() + k * words);
  std::vector<size_t> allowed(prefixes.size());
  masker.ComputeWithBudgets(batch.pointers, rows, budgets, absl::MakeSpan(allowed));
  size_t differs_from_plain = 0;
  for (size_t k = 0; k < prefixes.size(); ++k) {
    Matcher single(*g);
    ASSERT_TRUE(single.AcceptBytes(prefixes[k]));
    std::vector<uint32_t> expected(words), plain(words);
    single.ComputeMask(plain.data());
    const size_t count = budgets[k] ? single.ComputeMask(expected.data(), *budgets[k])
                                    : single.ComputeMask(expected.data());
    EXPECT_EQ(allowed[k], count) << prefixes[k];
    EXPECT_EQ(expected, std::vector<uint32_t>(rows[k], rows[k] + words)) << prefixes[k];
    differs_from_plain += expected != plain;
  }
  EXPECT_GE(differs_from_plain, 3u);  // the budgets bite: not plain masks in disguise
}

TEST(BatchMasker, ConcurrentCallersAndEmptyBatches) {
  absl::StatusOr<CompiledGrammar> g = SmallJson();
  ASSERT_TRUE(g.ok()) << g.status();
  const size_t words = g->mask_words();
  BatchMasker masker(0);
  EXPECT_GE(masker.threads(), 1);
  masker.Compute({}, {});
  const std::vector<std::string> prefixes = {"[", "{\"", "[1", "[\"a"};
  std::vector<std::vector<uint32_t>> expected;
  for (const std::string& p : prefixes) expected.push_back(MaskAfter(*g, p));
  std::vector<std::thread> callers;
  std::vector<int> failures(3, 0);
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&, t] {
      Batch batch(*g, prefixes);
      std::vector<uint32_t> out(words * prefixes.size());
      std::vector<uint32_t*> rows;
      for (size_t k = 0; k < prefixes.size(); ++k) rows.push_back(out.data() + k * words);
      for (int round = 0; round < 20; ++round) {
        masker.Compute(batch.pointers, rows);
        for (size_t k = 0; k < prefixes.size(); ++k) {
          failures[t] += std::vector<uint32_t>(rows[k], rows[k] + words) != expected[k];
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures, std::vector<int>(3, 0));
}

}  // namespace
}  // namespace zapgram
