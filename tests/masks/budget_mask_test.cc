// Budget-aware masks (masks/budget_mask.h, Matcher::ComputeMask with
// tokens_left).
//
// BudgetMaskExhaustive: on small grammars and vocabularies, every prefix
// reachable in at most N tokens (N = 1..max) is visited, and at each one the
// budget mask for the n = N - depth tokens left is compared with the exact
// set, computed independently: EOS iff the text is a sentence, a token t
// iff some string of at most n - 2 further tokens u makes text·t·u a
// sentence, with the textbook Earley recognizer (tests/support/
// reference_recognizer.h, shares no code with parser/) deciding membership.
// Unsound allows must be 0; over-masked tokens are counted and must be 0
// too on these setups (the searches finish within their budgets), and one
// setup exists where the shortest byte witness is not the shortest token
// path (the exact search has to find it).
//
// BudgetMaskWalks: Llama 3 on builtin:json, a MaskBench schema and a Lark
// grammar: random walks choosing uniformly among the budget-allowed tokens
// under budgets from tight to loose always end accepted (EOS allowed) within
// n tokens. Fewer walks under sanitizers (ZAPGRAM_SANITIZED).
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "api/grammar_data.h"
#include "grammar/gbnf_reader.h"
#include "gtest/gtest.h"
#include "tests/support/reference_recognizer.h"
#include "tests/support/test_paths.h"
#include "tests/support/test_scale.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram {
namespace {

bool Bit(const std::vector<uint32_t>& w, int32_t id) { return (w[id >> 5] >> (id & 31)) & 1u; }

struct ToyCase {
  std::string name;
  std::vector<std::string> tokens;  // the last one is EOS ("")
  std::string gbnf;
  int max_n;
};

std::vector<ToyCase> ToyCases() {
  return {
      {"letters", {"a", "b", "c", "ab", "bc", ""}, "root ::= \"a\" [bc]* \"c\"\n", 7},
      {"parens", {"(", ")", "x", "(x", "x)", "))", ""}, "root ::= \"(\" root \")\" | \"x\"\n", 8},
      // After "x", the shortest byte completion is "bbb" (3 tokens) while
      // "aaaa" is one token: the witness bound is loose, the search exact.
      {"witness", {"x", "a", "aa", "aaaa", "b", ""}, "root ::= \"x\" (\"aaaa\" | \"bbb\") \"y\"?\n", 6},
      // Tokens that stay inside the string terminal reach states named by
      // its automaton's state alone: visited once per such state.
      // (Underscores, not quotes: the oracle completes regexes over a fixed alphabet.)
      {"string", {"_", "a", "b", "ab", "ba", "abb", "_x", "x", "a_", ""}, "root ::= /_[ab]*_/ \"x\"\n", 6},
      // Nested lists with words; tokens that open and close several levels.
      {"lists",
       {"[", "]", ",", "w", "[[", "]]", "],", "w]", ""},
       "root ::= list\nlist ::= \"[\" (item (\",\" item)*)? \"]\"\nitem ::= \"w\" | list\n",
       7},
  };
}

class Oracle {
 public:
  Oracle(const grammar::Grammar& ir, const std::vector<std::string>& tokens)
      : ref_(ir), tokens_(tokens) {}
  // Some string of at most k normal tokens finishes `text`.
  bool Finishes(const std::string& text, int k) {
    auto key = std::make_pair(text, k);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    bool ok = ref_.Accepts(text);
    for (size_t t = 0; !ok && k > 0 && t + 1 < tokens_.size(); ++t) {
      const std::string next = text + tokens_[t];
      ok = ref_.IsViablePrefix(next) && Finishes(next, k - 1);
    }
    memo_[key] = ok;
    return ok;
  }
  bool Accepts(const std::string& text) const { return ref_.Accepts(text); }
  bool Viable(const std::string& text) const { return ref_.IsViablePrefix(text); }

 private:
  testing::ReferenceRecognizer ref_;
  std::vector<std::string> tokens_;
  std::map<std::pair<std::string, int>, bool> memo_;
};

TEST(BudgetMaskExhaustive, MatchesEnumerationOnSmallGrammars) {
  for (const ToyCase& setup : ToyCases()) {
    const int32_t eos = static_cast<int32_t>(setup.tokens.size()) - 1;
    absl::StatusOr<Vocabulary> vocab = Vocabulary::FromTokens(setup.tokens, {eos});
    ASSERT_TRUE(vocab.ok()) << vocab.status();
    absl::StatusOr<Grammar> grammar = Grammar::FromGbnf(setup.gbnf);
    ASSERT_TRUE(grammar.ok()) << grammar.status();
    absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*grammar, *vocab);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    absl::StatusOr<grammar::Grammar> ir = grammar::ReadGbnf(setup.gbnf, "<text>");
    ASSERT_TRUE(ir.ok()) << ir.status();
    Oracle oracle(*ir, setup.tokens);
    Matcher matcher(*compiled);
    std::vector<uint32_t> words(compiled->mask_words());
    int64_t checked = 0, unsound = 0, over_masked = 0, allowed_total = 0;
    for (int total = 1; total <= setup.max_n; ++total) {
      // Depth first over token paths the oracle calls viable.
      struct Frame {
        std::string text;
        int32_t next_token = 0;
      };
      std::vector<Frame> stack{{"", 0}};
      bool need_mask = true;
      while (!stack.empty()) {
        Frame& top = stack.back();
        const int depth = static_cast<int>(stack.size()) - 1;
        const int n = total - depth;
        if (need_mask) {
          need_mask = false;
          matcher.ComputeMask(words.data(), n);
          for (int32_t t = 0; t <= eos; ++t) {
            bool exact;
            if (t == eos) {
              exact = n >= 1 && oracle.Accepts(top.text);
            } else {
              const std::string next = top.text + setup.tokens[t];
              exact = n >= 2 && oracle.Viable(next) && oracle.Finishes(next, n - 2);
            }
            const bool got = Bit(words, t);
            ++checked;
            allowed_total += got;
            if (got && !exact) {
              ++unsound;
              ADD_FAILURE() << setup.name << ": unsound allow of '" << setup.tokens[t] << "' after '"
                            << top.text << "' with n = " << n;
            }
            if (!got && exact) {
              ++over_masked;
              ADD_FAILURE() << setup.name << ": over-masked '" << setup.tokens[t] << "' after '" << top.text
                            << "' with n = " << n;
            }
          }
        }
        if (n <= 1 || top.next_token == eos) {
          if (stack.size() > 1) {
            ASSERT_TRUE(matcher.Rollback(1));
          }
          stack.pop_back();
          continue;
        }
        const int32_t t = top.next_token++;
        const std::string next = top.text + setup.tokens[t];
        if (!oracle.Viable(next)) continue;
        ASSERT_TRUE(matcher.AcceptToken(t)) << setup.name << " '" << next << "'";
        stack.push_back({next, 0});
        need_mask = true;
      }
    }
    EXPECT_EQ(unsound, 0) << setup.name;
    EXPECT_EQ(over_masked, 0) << setup.name;
    EXPECT_GT(allowed_total, 0);
    EXPECT_EQ(matcher.BudgetMaskInexact(), 0u) << setup.name;
    std::printf("[budget] %s: %lld (prefix, n, token) checks, %lld allowed, %lld unsound, %lld over-masked\n",
                setup.name.c_str(), static_cast<long long>(checked), static_cast<long long>(allowed_total),
                static_cast<long long>(unsound), static_cast<long long>(over_masked));
  }
}

// A lexed (Lark) grammar on a small vocabulary, where tokens cross lexeme
// boundaries (" a", "a,", "b from") and ignored spaces: at every prefix
// reachable in at most N tokens, the budget mask for n = N - depth equals the
// exact set, enumerated by accepting token strings on a second matcher
// (plain acceptance only: its masks are tested against the brute force in
// matcher_test.cc), with and without the grouping of equal-effect tokens
// (BudgetMaskOptions::group_equal_effects).
TEST(BudgetMaskExhaustive, LexedToyMatchesTokenEnumeration) {
  const std::vector<std::string> tokens = {"select", " a", "a", " b", "b", ",", "a,", " from",
                                           "from", " ", "b from", "ab", ""};
  const int32_t eos = static_cast<int32_t>(tokens.size()) - 1;
  absl::StatusOr<Vocabulary> vocab = Vocabulary::FromTokens(tokens, {eos});
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  absl::StatusOr<Grammar> grammar = Grammar::FromText(
      GrammarFormat::kLark,
      "start: \"select\" NAME (\",\" NAME)* \"from\" NAME\nNAME: /[ab]+/\n%ignore \" \"\n");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*grammar, *vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  // Some string of at most k tokens before EOS finishes the oracle's state.
  Matcher oracle(*compiled);
  std::map<std::pair<std::vector<int32_t>, int>, bool> memo;
  std::vector<int32_t> path;
  std::function<bool(int)> finishes = [&](int k) {
    auto key = std::make_pair(path, k);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    bool ok = oracle.IsAccepting();
    for (int32_t t = 0; !ok && k > 0 && t < eos; ++t) {
      if (!oracle.AcceptToken(t)) continue;
      path.push_back(t);
      ok = finishes(k - 1);
      path.pop_back();
      EXPECT_TRUE(oracle.Rollback(1));
    }
    memo[key] = ok;
    return ok;
  };
  const int max_n = 7;
  for (bool group : {true, false}) {
    MatcherOptions options;
    options.budget.group_equal_effects = group;
    Matcher matcher(*compiled, options);
    std::vector<uint32_t> words(compiled->mask_words());
    int64_t checked = 0, allowed_total = 0, wrong = 0;
    // Depth first over every token path of at most max_n - 1 tokens that
    // the plain matcher takes; the budget mask at each for every n.
    std::vector<int32_t> next_token{0};
    while (!next_token.empty()) {
      const int depth = static_cast<int>(next_token.size()) - 1;
      if (next_token.back() == 0) {
        for (int n = 1; n + depth <= max_n; ++n) {
          matcher.ComputeMask(words.data(), n);
          for (int32_t t = 0; t <= eos; ++t) {
            bool exact;
            if (t == eos) {
              exact = oracle.IsAccepting();
            } else if (n >= 2 && oracle.AcceptToken(t)) {
              path.push_back(t);
              exact = finishes(n - 2);
              path.pop_back();
              EXPECT_TRUE(oracle.Rollback(1));
            } else {
              exact = false;
            }
            ++checked;
            allowed_total += Bit(words, t);
            if (Bit(words, t) != exact) {
              ++wrong;
              ADD_FAILURE() << (exact ? "over-masked '" : "unsound allow of '") << tokens[t]
                            << "' after " << depth << " tokens with n = " << n << " (grouping " << group << ")";
            }
          }
        }
      }
      int32_t& t = next_token.back();
      while (t < eos && (depth + 1 >= max_n || !matcher.AcceptToken(t))) ++t;
      if (t >= eos) {
        next_token.pop_back();
        if (!next_token.empty()) {
          ASSERT_TRUE(matcher.Rollback(1));
          ASSERT_TRUE(oracle.Rollback(1));
          path.pop_back();
        }
        continue;
      }
      ASSERT_TRUE(oracle.AcceptToken(t));
      path.push_back(t);
      ++t;
      next_token.push_back(0);
    }
    EXPECT_EQ(wrong, 0);
    EXPECT_GT(allowed_total, 0);
    EXPECT_EQ(matcher.BudgetMaskInexact(), 0u);
    std::printf("[budget] lexed toy, grouping %d: %lld (prefix, n, token) checks, %lld allowed, %lld wrong\n",
                group, static_cast<long long>(checked), static_cast<long long>(allowed_total),
                static_cast<long long>(wrong));
  }
}

// The witness bound alone would over-mask: with a search budget of 0, the
// setup where the fewest-token completion is not the shortest in bytes
// masks "x" at n = 3, and the matcher says the mask is inexact.
TEST(BudgetMaskExhaustive, SearchBudgetZeroIsConservative) {
  const std::vector<std::string> tokens = {"x", "a", "aa", "aaaa", "b", ""};
  absl::StatusOr<Vocabulary> vocab = Vocabulary::FromTokens(tokens, {5});
  ASSERT_TRUE(vocab.ok());
  absl::StatusOr<Grammar> grammar = Grammar::FromGbnf("root ::= \"x\" (\"aaaa\" | \"bbb\") \"y\"?\n");
  ASSERT_TRUE(grammar.ok());
  absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*grammar, *vocab);
  ASSERT_TRUE(compiled.ok());
  std::vector<uint32_t> words(compiled->mask_words());
  MatcherOptions tight;
  tight.budget.max_search_nodes = 0;
  Matcher conservative(*compiled, tight);
  conservative.ComputeMask(words.data(), 3);  // x, aaaa, EOS
  EXPECT_FALSE(Bit(words, 0));
  EXPECT_GT(conservative.BudgetMaskInexact(), 0u);
  Matcher exact(*compiled);
  exact.ComputeMask(words.data(), 3);
  EXPECT_TRUE(Bit(words, 0));
  exact.ComputeMask(words.data(), 2);  // x then EOS: not a sentence
  EXPECT_FALSE(Bit(words, 0));
  EXPECT_EQ(exact.BudgetMaskInexact(), 0u);
}

struct RealCase {
  std::string spec;
};

TEST(BudgetMaskWalks, RandomWalksEndAcceptedWithinBudget) {
  absl::StatusOr<Vocabulary> vocab = Vocabulary::Load(testing::DataPath("tokenizers/llama3.tokenizer.json"));
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  const std::vector<std::string> specs = {
      "builtin:json",
      "schema:" + testing::DataPath("jsonschema/maskbench/Github_easy---o90448.schema.json"),
      testing::DataPath("grammars/lark/syncode/json.lark"),
  };
  const std::vector<int> budgets =
      testing::kSanitized ? std::vector<int>{6, 12} : std::vector<int>{4, 8, 16, 32};
  const int walks = testing::Scaled(2, 1);
  std::mt19937_64 rng(14);
  for (const std::string& spec : specs) {
    absl::StatusOr<Grammar> grammar = Grammar::Load(spec);
    ASSERT_TRUE(grammar.ok()) << spec << ": " << grammar.status();
    absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*grammar, *vocab);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    std::vector<uint32_t> words(compiled->mask_words());
    Matcher matcher(*compiled);
    for (int budget : budgets) {
      for (int w = 0; w < walks; ++w) {
        matcher.Reset();
        std::vector<int32_t> path;
        bool finished = false;
        for (int n = budget; n >= 1 && !finished; --n) {
          const size_t allowed = matcher.ComputeMask(words.data(), n);
          ASSERT_TRUE(matcher.status().ok()) << matcher.status();
          std::vector<int32_t> ids;
          for (int32_t id = 0; id < static_cast<int32_t>(words.size() * 32); ++id) {
            if (Bit(words, id)) ids.push_back(id);
          }
          ASSERT_EQ(ids.size(), allowed);
          // A budget with no allowed token at the start is a grammar whose
          // shortest sentence does not fit: only allowed for tight budgets.
          if (ids.empty()) {
            ASSERT_EQ(n, budget) << spec << ": stuck after " << path.size() << " tokens with n = " << n;
            break;
          }
          const int32_t id = ids[std::uniform_int_distribution<size_t>(0, ids.size() - 1)(rng)];
          ASSERT_TRUE(matcher.AcceptToken(id));
          path.push_back(id);
          finished = matcher.IsFinished();
        }
        if (!path.empty()) {
          EXPECT_TRUE(finished) << spec << " budget " << budget << ": not finished after " << path.size();
          EXPECT_LE(static_cast<int>(path.size()), budget);
        }
      }
    }
    std::printf("[budget] %s: %d walks, inexact (masked, not refuted) tokens %llu\n", spec.c_str(),
                static_cast<int>(budgets.size()) * walks,
                static_cast<unsigned long long>(matcher.BudgetMaskInexact()));
  }
}

// A lexed grammar's first token: "select" finishes within a few tokens
// ("select 1" is no SQL here; "select a from b" is), so a budget of 12
// allows it. The byte searches for its witness step one byte per lexer byte
// class; with every byte stepped they ran out before the 9-byte completion
// and masked every token of the first step.
TEST(BudgetMaskLexed, FirstTokenOfSqlFitsAModestBudget) {
  absl::StatusOr<Vocabulary> vocab = Vocabulary::Load(testing::DataPath("tokenizers/llama3.tokenizer.json"));
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  absl::StatusOr<Grammar> grammar = Grammar::Load(testing::DataPath("grammars/lark/syncode/sql.lark"));
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*grammar, *vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  int32_t select = -1;
  for (int32_t id = 0; id < vocab->size(); ++id) {
    if (vocab->token_bytes(id) == "select") select = id;
  }
  ASSERT_GE(select, 0);
  Matcher matcher(*compiled);
  std::vector<uint32_t> plain(compiled->mask_words()), budget(compiled->mask_words());
  matcher.ComputeMask(plain.data());
  ASSERT_TRUE(Bit(plain, select));
  const size_t allowed = matcher.ComputeMask(budget.data(), 12);
  EXPECT_TRUE(Bit(budget, select)) << allowed << " allowed";
  // Sound: a budget-allowed token is plain-allowed; and with 2 tokens left
  // (one token, then EOS) no single token is a whole statement here.
  for (size_t w = 0; w < plain.size(); ++w) EXPECT_EQ(budget[w] & ~plain[w], 0u);
  EXPECT_EQ(matcher.ComputeMask(budget.data(), 2), 0u);
}

}  // namespace
}  // namespace zapgram
