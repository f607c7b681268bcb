// Token terminals (XGrammar's Token, ExcludeToken and TokenTagDispatch;
// parser/flat_grammar.h, masks/matcher.h).
//
//  - XGrammarExamples: the token paths of XGrammar's own tests
//    (tests/python/test_token_edge.py: toy vocabularies, masks after each
//    accepted token, rejections, rollback), as expectations on our matcher.
//  - BruteForce: masks on Llama 3 and Qwen 2.5 against a brute force that
//    replays the accepted tokens into a fresh recognizer and offers it every
//    id of the vocabulary (Recognizer::PushToken: the token's text through
//    the byte terminals and its id through the token terminals), with no
//    trie, token sets or cache; teacher-forced token sequences that reach
//    every construct, then random walks; also the twenty XGrammar grammars
//    of the data folder that use token-level macros.
//  - Errors: ids out of range, unused ids, EOS ids, a TokenTagDispatch
//    trigger that is also excluded, and `zapgram parse`'s refusal.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "api/grammar_data.h"
#include "masks/matcher.h"
#include "pruning/compact.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"
#include "tests/support/test_scale.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram {
namespace {

using masks::TokenId;

// Sanitized builds run ~10x slower: one cache setting and shorter walks
// there (ZAPGRAM_SANITIZED).
using testing::kSanitized;

bool Allowed(const std::vector<uint32_t>& words, int32_t id) { return (words[id / 32] >> (id % 32)) & 1; }

std::set<int32_t> AllowedSet(const std::vector<uint32_t>& words, int32_t size) {
  std::set<int32_t> out;
  for (int32_t id = 0; id < size; ++id) {
    if (Allowed(words, id)) out.insert(id);
  }
  return out;
}

absl::StatusOr<CompiledGrammar> CompileText(const std::string& text, const Vocabulary& vocab) {
  absl::StatusOr<Grammar> grammar = Grammar::FromGbnf(text, "t.ebnf");
  if (!grammar.ok()) return grammar.status();
  return CompiledGrammar::Compile(*grammar, vocab);
}

// ------------------------------------------------------------ XGrammar's examples

// A toy vocabulary as XGrammar's tests build it: id 1 ("</s>") is the stop
// token, every other string is a normal token ("<s>" included).
Vocabulary Toy(const std::vector<std::string>& tokens) {
  absl::StatusOr<Vocabulary> v = Vocabulary::FromTokens(tokens, {1});
  EXPECT_TRUE(v.ok()) << v.status();
  return *std::move(v);
}

// One step of a path: accept `token` (or nothing for -1), then expect
// `mask` (the allowed ids); `reject` means the token must be refused.
struct Step {
  int32_t token;
  std::set<int32_t> mask;
  bool reject = false;
};

void RunPath(const CompiledGrammar& g, const std::vector<Step>& steps, const std::string& label) {
  Matcher m(g);
  std::vector<uint32_t> words(g.mask_words());
  const int32_t size = g.vocabulary().padded_size();
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& s = steps[k];
    const std::string where = label + " step " + std::to_string(k);
    if (s.reject) {
      EXPECT_FALSE(m.AcceptToken(s.token)) << where;
      continue;
    }
    if (s.token >= 0) {
      ASSERT_TRUE(m.AcceptToken(s.token)) << where;
    }
    if (m.IsFinished()) continue;
    m.ComputeMask(words.data());
    EXPECT_EQ(AllowedSet(words, size), s.mask) << where;
  }
}

std::set<int32_t> Range(int32_t n, std::set<int32_t> minus = {}) {
  std::set<int32_t> out;
  for (int32_t i = 0; i < n; ++i) {
    if (!minus.count(i)) out.insert(i);
  }
  return out;
}

TEST(TokenTerminalsXGrammarExamples, TokenAndText) {
  const Vocabulary v = Toy({"<s>", "</s>", "aa", "bb", "cc", "dd"});
  auto one = CompileText("root ::= Token(2, 4)\n", v);
  ASSERT_TRUE(one.ok()) << one.status();
  RunPath(*one, {{-1, {2, 4}}, {3, {}, true}, {5, {}, true}, {4, {1}}, {1, {}}}, "Token(2, 4)");
  // Token(2) | "bb": the id 2 or the text "bb".
  auto alt = CompileText("root ::= Token(2) | \"bb\"\n", v);
  ASSERT_TRUE(alt.ok()) << alt.status();
  RunPath(*alt, {{-1, {2, 3}}, {3, {1}}}, "alternation, text path");
  RunPath(*alt, {{2, {1}}}, "alternation, id path");
  auto seq = CompileText("root ::= Token(2) \"bb\"\n", v);
  ASSERT_TRUE(seq.ok()) << seq.status();
  RunPath(*seq, {{-1, {2}}, {2, {3}}, {3, {1}}}, "Token(2) \"bb\"");
  // A token terminal starts at a token boundary: "ab" cannot be "a" then Token(4).
  const Vocabulary v2 = Toy({"<s>", "</s>", "ab", "a", "X"});
  auto boundary = CompileText("rule_a ::= \"a\"\nroot ::= rule_a Token(4)\n", v2);
  ASSERT_TRUE(boundary.ok()) << boundary.status();
  RunPath(*boundary, {{-1, {3}}, {3, {4}}, {4, {1}}}, "boundary");
}

TEST(TokenTerminalsXGrammarExamples, TokenTagDispatch) {
  const Vocabulary v = Toy({"<s>", "</s>", "hello", "trigger", "content", "blocked"});
  auto excl = CompileText("root ::= TokenTagDispatch(excludes=(4, 5))\n", v);
  ASSERT_TRUE(excl.ok()) << excl.status();
  RunPath(*excl, {{-1, {0, 1, 2, 3}}, {2, {0, 1, 2, 3}}, {4, {}, true}, {2, {0, 1, 2, 3}}},
          "excludes only");
  auto trig = CompileText("body ::= Token(4)\nroot ::= TokenTagDispatch((3, body))\n", v);
  ASSERT_TRUE(trig.ok()) << trig.status();
  RunPath(*trig, {{-1, Range(6)}, {3, {4}}, {4, Range(6)}, {3, {4}}}, "trigger loop");
  auto once = CompileText(
      "body ::= Token(4)\nroot ::= TokenTagDispatch((3, body), loop_after_dispatch=false)\n", v);
  ASSERT_TRUE(once.ok()) << once.status();
  RunPath(*once, {{2, Range(6)}, {3, {4}}, {4, {1}}}, "no loop");
}

TEST(TokenTerminalsXGrammarExamples, EndToEndPaths) {
  // test_e2e_complex: a token trigger into a text grammar, another into a
  // grammar with a Token inside.
  const Vocabulary v = Toy({"<s>", "</s>", "<tool>", "<code>", "<blocked>", "hello", "he", "name",
                            "val", "x", "y", "{", "}", ":", ",", "[", "]", ";", "42", "a:", "{a",
                            "a}", "a;", "fn(", ")"});
  const std::string grammar = R"g(
value ::= [a-z]+ | [0-9]+
entry ::= [a-z]+ ":" value
inner ::= entry (";" entry)*
body ::= "{" inner "}" | "[" inner "]"
tool_body ::= body ("," body)*
arg ::= [a-z]+
call ::= "fn(" Token(9, 10) "," arg ")"
code_body ::= call (";" call)*
root ::= TokenTagDispatch((2, tool_body), (3, code_body), excludes=(4,))
)g";
  auto g = CompileText(grammar, v);
  ASSERT_TRUE(g.ok()) << g.status();
  const std::set<int32_t> all = Range(25, {4});
  const std::set<int32_t> az = {5, 6, 7, 8, 9, 10};
  auto with = [](std::set<int32_t> a, std::set<int32_t> b) {
    a.insert(b.begin(), b.end());
    return a;
  };
  RunPath(*g,
          {{-1, all},
           {2, {11, 15, 20}},
           {20, with(az, {13, 19})},
           {19, with(az, {18, 21, 22})},
           {18, {12, 17, 18}},
           {17, with(az, {19})},
           {7, with(az, {13, 19})},
           {13, with(az, {18, 21, 22})},
           {8, with(az, {12, 17, 21, 22})},
           {12, all},
           {1, {}}},
          "tool path");
  RunPath(*g, {{-1, all}, {3, {23}}, {23, {9, 10}}, {9, {14}}, {14, az}, {7, with(az, {24})}, {24, all}},
          "code path");

  // test_e2e_nested_dispatch: the outer free tokens exclude 4, the inner 5.
  const Vocabulary n = Toy({"<s>", "</s>", "<outer>", "<inner>", "<o_block>", "<i_block>", "hello",
                            "world", "fn(", ")", "x", "y"});
  auto nested = CompileText(R"g(
leaf ::= Token(10, 11)
inner ::= TokenTagDispatch((3, leaf), excludes=(5,))
tool_fn ::= "fn(" inner ")"
root ::= TokenTagDispatch((2, tool_fn), excludes=(4,))
)g",
                            n);
  ASSERT_TRUE(nested.ok()) << nested.status();
  const std::set<int32_t> outer = Range(12, {4}), inner = Range(12, {1, 5});
  RunPath(*nested, {{-1, outer}, {2, {8}}, {8, inner}, {6, inner}, {3, {10, 11}}, {10, inner},
                    {9, Range(12)}, {1, {}}},
          "nested A");
  RunPath(*nested, {{-1, outer}, {6, outer}, {5, outer}, {4, {}, true}, {1, {}}}, "nested B");
  RunPath(*nested, {{2, {8}}, {8, inner}, {4, inner}, {9, Range(12)}}, "nested C2");

  // test_e2e_nested_exclude_loop: "<s>" is an ordinary token of this toy vocabulary.
  const Vocabulary l = Toy({"<s>", "</s>", "hello", "world", "###", "<END>", "foo", "done"});
  auto loop = CompileText(
      "loop ::= TokenTagDispatch(excludes=(4, 5))\nroot ::= [a-z]+ loop Token(5) [a-z]+\n", l);
  ASSERT_TRUE(loop.ok()) << loop.status();
  const std::set<int32_t> lz = {2, 3, 6, 7}, lp = {0, 2, 3, 5, 6, 7};
  RunPath(*loop, {{-1, lz}, {4, {}, true}, {2, lp}, {0, lp}, {3, lp}, {5, lz}, {7, with(lz, {1})}, {1, {}}},
          "exclude loop");

  // test_e2e_mixed_tag_and_token_dispatch: text dispatch around token
  // dispatch around text dispatch; "<bad>" (6) is excluded text outside,
  // a free token in the middle layer. One difference: after "<mid>" "x"
  // the middle layer's body `Token(9, 10) inner` is complete (inner, a
  // TagDispatch, may be empty), so the middle loop takes "<bad>" again as a
  // free token. XGrammar's test expects it refused there: its AcceptToken
  // merges the states of the id path into the text path's last row without
  // renumbering the start positions of the rules predicted after the token
  // (they point at a row inside the token's bytes), so `inner` can no
  // longer complete into `mid_body`. By its documented meaning (and ours)
  // "hello<call><mid>x<bad>" is in the language.
  const Vocabulary x = Toy({"<s>", "</s>", "<call>", "<mid>", "<skip>", "<end>", "<bad>", "hello",
                            "world", "x", "y", "done"});
  auto mixed = CompileText(R"g(
leaf ::= [a-z]+
inner ::= TagDispatch(("<end>", leaf), excludes=("<bad>"))
mid_body ::= Token(9, 10) inner
mid ::= TokenTagDispatch((3, mid_body), excludes=(4,))
root ::= TagDispatch(("<call>", mid), excludes=("<bad>"))
)g",
                           x);
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  const std::set<int32_t> everything = Range(12), out = Range(12, {6});
  RunPath(*mixed, {{-1, out}, {7, out}, {2, everything}, {3, out}, {9, everything}, {8, everything},
                   {5, everything}, {11, everything}, {1, {}}},
          "mixed A");
  RunPath(*mixed, {{-1, out}, {7, out}, {8, out}, {6, {}, true}, {1, {}}}, "mixed B");
  RunPath(*mixed, {{2, everything}, {6, everything}}, "mixed C2");
  RunPath(*mixed, {{2, everything}, {3, out}, {9, everything}, {6, everything}}, "mixed C3");
  RunPath(*mixed, {{2, everything}, {3, out}, {9, everything}, {4, everything}}, "mixed D2");
}

TEST(TokenTerminalsXGrammarExamples, RollbackRestoresTokenPaths) {
  const Vocabulary v = Toy({"<s>", "</s>", "<tool>", "<code>", "hello", "world", "fn(", ")", "x", "y"});
  auto g = CompileText(R"g(
arg ::= [a-z]+
call ::= "fn(" Token(8, 9) "," arg ")"
root ::= TokenTagDispatch((2, call), excludes=(3,))
)g",
                       v);
  ASSERT_TRUE(g.ok()) << g.status();
  Matcher m(*g);
  std::vector<uint32_t> words(g->mask_words());
  auto mask = [&] {
    m.ComputeMask(words.data());
    return AllowedSet(words, 10);
  };
  const auto m0 = mask();
  ASSERT_TRUE(m.AcceptToken(2));
  const auto m1 = mask();
  ASSERT_TRUE(m.AcceptToken(6));
  const auto m2 = mask();
  ASSERT_TRUE(m.AcceptToken(8));
  const auto m3 = mask();
  EXPECT_EQ(m3, std::set<int32_t>{});  // "," is not a token here
  ASSERT_TRUE(m.Rollback(3));
  EXPECT_EQ(mask(), m0);
  ASSERT_TRUE(m.AcceptToken(2));
  EXPECT_EQ(mask(), m1);
  ASSERT_TRUE(m.AcceptToken(6));
  EXPECT_EQ(mask(), m2);
  ASSERT_TRUE(m.Rollback(1));
  EXPECT_EQ(mask(), m1);
  ASSERT_TRUE(m.AcceptToken(6));
  ASSERT_TRUE(m.AcceptToken(9));
  EXPECT_EQ(mask(), m3);
}

// ------------------------------------------------------------ brute force

std::shared_ptr<const Vocabulary> Load(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const Vocabulary>> cache;
  auto& v = cache[name];
  if (v == nullptr) {
    absl::StatusOr<Vocabulary> loaded = Vocabulary::Load(testing::DataPath("tokenizers/" + name + ".tokenizer.json"));
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    v = std::make_shared<const Vocabulary>(*std::move(loaded));
  }
  return v;
}

int32_t IdOf(const masks::Vocabulary& v, std::string_view content) {
  for (TokenId id = 0; id < v.size(); ++id) {
    if (v.token_bytes(id) == content) return id;
  }
  ADD_FAILURE() << "no token " << content;
  return 0;
}

// The brute-force mask after `history`: a fresh recognizer takes the
// history, then every id is pushed and popped.
std::vector<uint32_t> ReferenceMask(const masks::CompiledGrammar& g, const std::vector<TokenId>& history) {
  RecognizerOptions options;
  options.max_rollback = 0;
  parser::Recognizer r = pruning::MakeRecognizer(&g.grammar(), options);
  const masks::Vocabulary& vocab = g.vocabulary();
  auto text_of = [&](TokenId id) {
    return vocab.kind(id) == masks::TokenKind::kNormal ? vocab.token_bytes(id) : std::string_view();
  };
  for (TokenId id : history) {
    EXPECT_TRUE(r.FeedToken(static_cast<uint32_t>(id), vocab.kind(id) == masks::TokenKind::kNormal, text_of(id)));
  }
  std::vector<uint32_t> words(g.mask_words(), 0);
  for (TokenId id = 0; id < vocab.padded_size(); ++id) {
    bool allowed = false;
    if (vocab.is_eos(id)) {
      allowed = r.IsAccepting();
    } else if (vocab.kind(id) != masks::TokenKind::kUnused) {
      const size_t pushed =
          r.PushToken(static_cast<uint32_t>(id), vocab.kind(id) == masks::TokenKind::kNormal, text_of(id));
      allowed = pushed > 0;
      for (size_t k = 0; k < pushed; ++k) r.Pop();
    }
    if (allowed) words[id / 32] |= 1u << (id % 32);
  }
  return words;
}

struct Counts {
  int masks = 0, mismatches = 0;
};

void CheckMask(const masks::CompiledGrammar& g, masks::Matcher& m, const std::vector<TokenId>& history,
               const std::string& where, Counts* counts) {
  std::vector<uint32_t> words(g.mask_words());
  m.ComputeMask(words.data());
  const std::vector<uint32_t> want = ReferenceMask(g, history);
  ++counts->masks;
  int bad = 0;
  for (TokenId id = 0; id < g.vocabulary().padded_size(); ++id) {
    if (Allowed(words, id) != Allowed(want, id) && ++bad <= 3) {
      ADD_FAILURE() << where << ": token " << id << " \"" << g.vocabulary().token_bytes(id)
                    << "\" mask " << Allowed(words, id) << " reference " << Allowed(want, id);
    }
  }
  counts->mismatches += bad;
}

// Teacher-forced through `tokens` (each must be allowed), then a random walk.
void CheckSequence(const CompiledGrammar& compiled, const std::vector<int32_t>& tokens, uint32_t seed,
                   int walk, const std::string& label, Counts* counts) {
  const masks::CompiledGrammar& g = *compiled.impl();
  const masks::Vocabulary& vocab = g.vocabulary();
  for (const bool cache : {true, false}) {
    if (kSanitized && !cache) break;
    masks::MatcherOptions options;
    options.use_cache = cache;
    masks::Matcher m(compiled.impl(), options);
    std::vector<TokenId> history;
    std::vector<uint32_t> words(g.mask_words());
    for (int32_t id : tokens) {
      CheckMask(g, m, history, label + " after " + std::to_string(history.size()) + " tokens", counts);
      m.ComputeMask(words.data());
      ASSERT_TRUE(Allowed(words, id)) << label << ": token " << id << " after " << history.size();
      ASSERT_TRUE(m.AcceptToken(id)) << label;
      history.push_back(id);
    }
    std::mt19937 rng(seed);
    for (int step = 0; step < walk; ++step) {
      CheckMask(g, m, history, label + " walk step " + std::to_string(step), counts);
      m.ComputeMask(words.data());
      std::vector<TokenId> allowed;
      for (TokenId id = 0; id < vocab.padded_size(); ++id) {
        if (Allowed(words, id) && !vocab.is_eos(id)) allowed.push_back(id);
      }
      if (allowed.empty()) break;
      // Half the steps take a token that is not plain text when one is allowed.
      std::vector<TokenId> special;
      for (TokenId id : allowed) {
        if (vocab.kind(id) != masks::TokenKind::kNormal) special.push_back(id);
      }
      const TokenId t = !special.empty() && rng() % 2 ? special[rng() % special.size()]
                                                      : allowed[rng() % allowed.size()];
      ASSERT_TRUE(m.AcceptToken(t)) << label;
      history.push_back(t);
    }
    // Rollback across token steps (the recognizer replays their marks).
    for (const size_t back : {size_t{1}, size_t{3}}) {
      if (history.size() < back) break;
      ASSERT_TRUE(m.Rollback(back)) << label;
      history.resize(history.size() - back);
      CheckMask(g, m, history, label + " after rollback " + std::to_string(back), counts);
    }
  }
}

// Grammars using each token-level macro, with the ids of the tokenizer.
struct Case {
  std::string grammar;
  std::vector<int32_t> tokens;  // a sentence (or prefix) to teacher-force
};

std::vector<Case> CasesFor(const Vocabulary& vocab, const std::string& tokenizer) {
  const masks::Vocabulary& v = *vocab.impl();
  std::vector<Case> cases;
  // Special tokens (header markers of Llama 3; Qwen's <|im_start|>) and,
  // for Qwen, <tool_call>, a normal added token whose text other tokens spell too.
  const bool llama = tokenizer == "llama3";
  const int32_t open = llama ? IdOf(v, "<|start_header_id|>") : IdOf(v, "<|im_start|>");
  const int32_t close = llama ? IdOf(v, "<|end_header_id|>") : IdOf(v, "<|object_ref_end|>");
  const int32_t call = llama ? IdOf(v, "<|reserved_special_token_5|>") : IdOf(v, "<tool_call>");
  const std::string o = std::to_string(open), c = std::to_string(close), k = std::to_string(call);
  auto encode = [&](const std::string& text) {
    // Greedy longest-match over normal tokens: some valid spelling of the text.
    std::vector<int32_t> ids;
    size_t at = 0;
    while (at < text.size()) {
      int32_t best = -1;
      size_t best_len = 0;
      for (TokenId id = 0; id < v.size(); ++id) {
        if (v.kind(id) != masks::TokenKind::kNormal) continue;
        std::string_view b = v.token_bytes(id);
        if (b.size() > best_len && text.compare(at, b.size(), b) == 0) {
          best = id;
          best_len = b.size();
        }
      }
      EXPECT_GE(best, 0);
      if (best < 0) break;
      ids.push_back(best);
      at += best_len;
    }
    return ids;
  };
  auto cat = [](std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  // Token: a header between special tokens, or the same word as text.
  cases.push_back({"root ::= Token(" + o + ") role Token(" + c + ") \"\\n\\n\" [a-z .]+ | \"user\" [a-z]*\n"
                   "role ::= \"user\" | \"assistant\"\n",
                   cat(cat(cat({open}, encode("assistant")), {close}), encode("\n\nhi there."))});
  // Token of a normal token whose text other tokens also spell.
  cases.push_back({"root ::= \"x\" Token(" + k + ") \"{\" [a-z]* \"}\" | \"x\" \"<\" [a-z_<>]*\n",
                   cat(cat(encode("x"), {call}), encode("{ab}"))});
  // ExcludeToken: any token but the specials and two words, between fixed text.
  cases.push_back({"root ::= \"Q:\" ExcludeToken(" + o + ", " + k + ", " + std::to_string(encode(" no")[0]) +
                       ") ExcludeToken(" + c + ") \".\"\n",
                   cat(cat(encode("Q:"), encode(" yes")), cat(encode(" sir"), encode(".")))});
  // TokenTagDispatch: free tokens, a special trigger into a JSON-ish body, a stop token excluded.
  cases.push_back({"body ::= \"{\\\"name\\\": \\\"\" [a-z_]+ \"\\\"}\" \nroot ::= TokenTagDispatch((" + k +
                       ", body), (" + o + ", role), excludes=(" + c + "))\nrole ::= \"user\" | \"assistant\"\n",
                   cat(cat(cat(encode("Let me check."), {call}), encode("{\"name\": \"get_weather\"}")),
                       cat(encode(" ok"), cat({open}, encode("user"))))});
  // Tokens named by their text (zapgram's extension of XGrammar's EBNF).
  {
    const std::string open_text(v.token_bytes(open)), call_text(v.token_bytes(call));
    cases.push_back({"root ::= Token(\"" + open_text + "\") [a-z]+ TokenTagDispatch((\"" + call_text +
                         "\", body), excludes=(\"" + open_text + "\"))\nbody ::= [0-9]+ \";\"\n",
                     cat(cat(cat({open}, encode("abc")), cat(encode(" hi"), {call})), encode("12;"))});
  }
  // TokenTagDispatch without loop, inside text.
  cases.push_back({"root ::= \"A:\" TokenTagDispatch((" + k + ", body), loop_after_dispatch=false) \n"
                   "body ::= [0-9]+ Token(" + c + ")\n",
                   cat(cat(encode("A: x"), {call}), cat(encode("42"), {close}))});
  return cases;
}

// Rollback far enough back to restore a checkpoint of the recognizer and
// replay the token steps after it (each position with its token mark).
TEST(TokenTerminalsBruteForce, RollbackReplaysTokenSteps) {
  const std::shared_ptr<const Vocabulary> vocab = Load("qwen2_5");
  const masks::Vocabulary& v = *vocab->impl();
  const int32_t call = IdOf(v, "<tool_call>"), close = IdOf(v, "</tool_call>");
  auto g = CompileText("root ::= TokenTagDispatch((" + std::to_string(call) +
                           ", body))\nbody ::= [a-z ]+ Token(" + std::to_string(close) + ")\n",
                       *vocab);
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<TokenId> words_ids;
  for (TokenId id = 0; id < v.size() && words_ids.size() < 12; ++id) {
    const std::string_view b = v.token_bytes(id);
    if (v.kind(id) == masks::TokenKind::kNormal && b.size() >= 5 &&
        b.find_first_not_of(" abcdefghijklmnopqrstuvwxyz") == std::string_view::npos) {
      words_ids.push_back(id);
    }
  }
  std::vector<TokenId> sequence;
  for (int round = 0; round < 3; ++round) {
    for (TokenId id : words_ids) sequence.push_back(id);  // free tokens
    sequence.push_back(call);
    for (TokenId id : words_ids) sequence.push_back(id);  // the body's text
    sequence.push_back(close);
  }
  Counts counts;
  masks::MatcherOptions options;
  options.recognizer.max_rollback = 4096;
  masks::Matcher m(g->impl(), options);
  std::vector<TokenId> history;
  for (TokenId id : sequence) {
    ASSERT_TRUE(m.AcceptToken(id));
    history.push_back(id);
  }
  for (const size_t back : {size_t{1}, size_t{5}, size_t{13}, size_t{20}}) {
    ASSERT_TRUE(m.Rollback(back));
    history.resize(history.size() - back);
    CheckMask(*g->impl(), m, history, "rollback " + std::to_string(back), &counts);
    for (size_t k = 0; k < 3 && history.size() < sequence.size(); ++k) {  // forward again
      ASSERT_TRUE(m.AcceptToken(sequence[history.size()])) << "back " << back << " k " << k << " at " << history.size() << " status " << m.status();
      history.push_back(sequence[history.size()]);
    }
    CheckMask(*g->impl(), m, history, "forward after rollback " + std::to_string(back), &counts);
  }
  EXPECT_EQ(counts.mismatches, 0);
}

TEST(TokenTerminalsBruteForce, MasksMatchOnLlama3AndQwen) {
  Counts counts;
  for (const std::string tokenizer : {"llama3", "qwen2_5"}) {
    const std::shared_ptr<const Vocabulary> vocab = Load(tokenizer);
    int n = 0;
    for (const Case& c : CasesFor(*vocab, tokenizer)) {
      auto g = CompileText(c.grammar, *vocab);
      ASSERT_TRUE(g.ok()) << g.status() << "\n" << c.grammar;
      ASSERT_NO_FATAL_FAILURE(CheckSequence(*g, c.tokens, 11 + n, kSanitized ? 2 : 6,
                                            tokenizer + " case " + std::to_string(n), &counts));
      ++n;
    }
  }
  std::printf("token terminals: %d masks checked against the brute force, %d mismatches\n", counts.masks,
              counts.mismatches);
  EXPECT_EQ(counts.mismatches, 0);
}

// Structural tags whose triggers, begins and ends are tokens (by id or by
// text): Qwen's <tool_call> ... </tool_call> as single ids, Llama 3 header
// markers around a JSON Schema body.
TEST(TokenTerminalsBruteForce, StructuralTagsWithTokens) {
  Counts counts;
  struct StructuralCase {
    std::string tokenizer, spec, before, body, after;
    std::vector<std::string> open, close;  // token texts
  };
  const StructuralCase cases[] = {
      {"qwen2_5",
       R"j({"tags": [{"begin": {"token": "<tool_call>"},
                      "grammar": "root ::= \"\\n{\\\"name\\\": \\\"\" [a-z_]+ \"\\\"}\\n\"",
                      "end": {"token": "</tool_call>"}}],
            "triggers": [{"token": "<tool_call>"}]})j",
       "Let me check the weather.", "\n{\"name\": \"get_weather\"}\n", " Done.", {"<tool_call>"},
       {"</tool_call>"}},
      {"llama3",
       R"j({"tags": [{"begin": [{"token": "<|start_header_id|>"}, "tool"], "end": [{"token": "<|end_header_id|>"}, "\n"],
                      "schema": {"type": "object", "properties": {"city": {"type": "string"}},
                                 "required": ["city"], "additionalProperties": false}}],
            "triggers": [{"token": "<|start_header_id|>"}]})j",
       "Sure.", "tool{\"city\": \"Oslo\"}", "\nok", {"<|start_header_id|>"}, {"<|end_header_id|>"}},
  };
  for (const StructuralCase& c : cases) {
    const std::shared_ptr<const Vocabulary> vocab = Load(c.tokenizer);
    absl::StatusOr<Grammar> grammar = Grammar::FromText(GrammarFormat::kStructuralTags, c.spec, {}, "tags.json");
    ASSERT_TRUE(grammar.ok()) << grammar.status();
    absl::StatusOr<CompiledGrammar> g = CompiledGrammar::Compile(*grammar, *vocab);
    ASSERT_TRUE(g.ok()) << g.status();
    const masks::Vocabulary& v = *vocab->impl();
    std::vector<int32_t> tokens;
    auto text = [&](const std::string& t) {
      // Greedy longest match over normal tokens, as in CasesFor.
      size_t at = 0;
      while (at < t.size()) {
        int32_t best = -1;
        size_t len = 0;
        for (TokenId id = 0; id < v.size(); ++id) {
          std::string_view b = v.token_bytes(id);
          if (v.kind(id) == masks::TokenKind::kNormal && b.size() > len && b.size() < 6 &&
              t.compare(at, b.size(), b) == 0) {
            best = id;
            len = b.size();
          }
        }
        ASSERT_GE(best, 0);
        tokens.push_back(best);
        at += len;
      }
    };
    text(c.before);
    for (const std::string& o : c.open) tokens.push_back(IdOf(v, o));
    text(c.body);
    for (const std::string& e : c.close) tokens.push_back(IdOf(v, e));
    text(c.after);
    ASSERT_NO_FATAL_FAILURE(
        CheckSequence(*g, tokens, 5, kSanitized ? 1 : 4, c.tokenizer + " structural", &counts));
    Matcher m(*g);
    for (int32_t id : tokens) ASSERT_TRUE(m.AcceptToken(id));
    EXPECT_TRUE(m.IsAccepting());
    // The trigger's text spelled by other tokens is free text, never a tag;
    // the trigger token itself opens one.
    tokens.clear();
    text(c.before + c.open[0]);
    Matcher spelled(*g), single(*g);
    for (int32_t id : tokens) ASSERT_TRUE(spelled.AcceptToken(id));
    EXPECT_TRUE(spelled.IsAccepting()) << c.tokenizer;
    ASSERT_TRUE(single.AcceptToken(IdOf(v, c.open[0])));
    EXPECT_FALSE(single.IsAccepting()) << c.tokenizer;
  }
  std::printf("structural tags with tokens: %d masks checked, %d mismatches\n", counts.masks,
              counts.mismatches);
  EXPECT_EQ(counts.mismatches, 0);
}

TEST(TokenTerminalsErrors, StructuralTagTokens) {
  const std::shared_ptr<const Vocabulary> vocab = Load("qwen2_5");
  auto error_of = [&](const std::string& spec) -> std::string {
    absl::StatusOr<Grammar> grammar = Grammar::FromText(GrammarFormat::kStructuralTags, spec, {}, "tags.json");
    if (!grammar.ok()) return std::string(grammar.status().message());
    absl::StatusOr<CompiledGrammar> g = CompiledGrammar::Compile(*grammar, *vocab);
    return g.ok() ? "OK" : std::string(g.status().message());
  };
  EXPECT_EQ(error_of(R"j({"tags": [{"begin": {"token": "<tool_cal>"}, "grammar": "root ::= \"x\"", "end": ""}],
                          "triggers": [{"token": "<tool_cal>"}]})j"),
            "tags.json: Token(\"<tool_cal>\"): unknown token \"<tool_cal>\": no token of the vocabulary " +
                testing::DataPath("tokenizers/qwen2_5.tokenizer.json") + " has this text");
  EXPECT_EQ(error_of(R"j({"tags": [{"begin": "<a>", "grammar": "root ::= \"x\"", "end": ""}],
                          "triggers": ["<a>", {"token": 5}]})j"),
            "tags.json: /triggers/1: triggers must be all strings or all tokens");
  EXPECT_EQ(error_of(R"j({"tags": [{"begin": {"token": 7}, "grammar": "root ::= \"x\"", "end": ""}],
                          "triggers": [{"token": 5}]})j"),
            "tags.json: /tags/0/begin: does not begin with one of the trigger tokens (named the same "
            "way: by the same id or the same text), so it never occurs");
  EXPECT_EQ(error_of(R"j({"tags": [{"begin": {"token": 5}, "grammar": "root ::= \"x\"", "end": {"token": 999999}}],
                          "triggers": [{"token": 5}]})j"),
            "tags.json: Token(999999): token id 999999 is out of range: the vocabulary " +
                testing::DataPath("tokenizers/qwen2_5.tokenizer.json") + " has ids 0..151664");
  EXPECT_EQ(error_of(R"j({"tags": [{"begin": {"token": -3}, "grammar": "root ::= \"x\"", "end": ""}],
                          "triggers": [{"token": 5}]})j"),
            "tags.json: /tags/0/begin/token: a token id must be in 0..16777215");
  EXPECT_EQ(error_of(R"j({"tags": [{"begin": {"tok": 5}, "grammar": "root ::= \"x\"", "end": ""}],
                          "triggers": [{"token": 5}]})j"),
            "tags.json: /tags/0/begin: expected {\"token\": ID or \"TEXT\"}");
}

// The XGrammar grammars of the data folder that use token-level macros,
// on real vocabularies (their small ids are ordinary tokens there): random walks.
TEST(TokenTerminalsBruteForce, XGrammarDataGrammars) {
  Counts counts;
  int grammars = 0;
  const std::string dir = testing::DataPath("grammars/ebnf/xgrammar/test_token_edge");
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const std::string tokenizer : {"qwen2_5", "llama3"}) {
    if (kSanitized && tokenizer == "llama3") break;
    const std::shared_ptr<const Vocabulary> vocab = Load(tokenizer);
    for (const std::string& file : files) {
      absl::StatusOr<Grammar> grammar = Grammar::Load(file);
      if (file.find("trigger_and_exclude_no_overlap") != std::string::npos) {
        EXPECT_FALSE(grammar.ok()) << file;
        continue;
      }
      ASSERT_TRUE(grammar.ok()) << grammar.status();
      absl::StatusOr<CompiledGrammar> g = CompiledGrammar::Compile(*grammar, *vocab);
      ASSERT_TRUE(g.ok()) << g.status();
      ++grammars;
      ASSERT_NO_FATAL_FAILURE(
          CheckSequence(*g, {}, static_cast<uint32_t>(grammars), kSanitized ? 2 : 4, file, &counts));
    }
  }
  std::printf("xgrammar token grammars: %d compiled, %d masks checked, %d mismatches\n", grammars,
              counts.masks, counts.mismatches);
  EXPECT_EQ(grammars, kSanitized ? 20 : 40);
  EXPECT_EQ(counts.mismatches, 0);
}

// ------------------------------------------------------------ errors

TEST(TokenTerminalsErrors, IdsAreCheckedAgainstTheVocabulary) {
  const Vocabulary v = Toy({"<s>", "</s>", "aa", "", "cc"});
  auto expect_error = [&](const std::string& text, const std::string& message) {
    absl::StatusOr<CompiledGrammar> g = CompileText(text, v);
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_EQ(g.status().message(), message) << text;
  };
  expect_error("root ::= \"a\" Token(2, 7)\n",
               "t.ebnf:1:14: Token(2, 7): token id 7 is out of range: the vocabulary <tokens> has ids 0..4");
  expect_error("root ::= Token(3)\n",
               "t.ebnf:1:10: Token(3): token id 3 is unused in the vocabulary <tokens> (no token has it)");
  expect_error("root ::= Token(1)\n",
               "t.ebnf:1:10: Token(1): token id 1 () is an end-of-sequence id: it ends the text, so no "
               "grammar symbol matches it");
  expect_error("root ::=\n  ExcludeToken(9)\n",
               "t.ebnf:2:3: ExcludeToken(9): token id 9 is out of range: the vocabulary <tokens> has ids 0..4");
  expect_error("root ::= ExcludeToken(0, 2, 4)\n",
               "t.ebnf:1:10: ExcludeToken(0, 2, 4): no token of the vocabulary <tokens> is left to match");
  expect_error("r ::= \"x\"\nroot ::= TokenTagDispatch((2, r), (12, r))\n",
               "t.ebnf:2:36: Token(12): token id 12 is out of range: the vocabulary <tokens> has ids 0..4");
}

TEST(TokenTerminalsErrors, MacroArgumentsArePlaced) {
  auto expect_error = [&](const std::string& text, const std::string& message) {
    absl::StatusOr<Grammar> g = Grammar::FromGbnf(text, "t.ebnf");
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_EQ(g.status().message(), message) << text;
  };
  expect_error("root ::= Token()\n", "t.ebnf:1:10: Token(...) needs at least one token id");
  expect_error("root ::= Token(-1)\n", "t.ebnf:1:16: Token(...): a token id must not be negative");
  expect_error("root ::= Token(true)\n",
               "t.ebnf:1:16: Token(...): a token must be an id or its text (a string), not true or false");
  expect_error("root ::= Token(99999999)\n",
               "t.ebnf:1:16: Token(...): token id 99999999 is too large (at most 16777215)");
  expect_error("r ::= \"x\"\nroot ::= TokenTagDispatch((3, r), excludes=(4, 3))\n",
               "t.ebnf:2:48: TokenTagDispatch(...): token id 3 is both a trigger and excluded");
  expect_error("root ::= TokenTagDispatch((3, nothing))\n", "t.ebnf:1:31: undefined symbol 'nothing'");
}

// Byte-level entry points: text never matches a token terminal.
TEST(TokenTerminalsErrors, TextNeverMatchesATokenTerminal) {
  const Vocabulary v = Toy({"<s>", "</s>", "aa", "bb", "x"});
  auto g = CompileText("root ::= \"x\" Token(2) | \"xbb\"\n", v);
  ASSERT_TRUE(g.ok()) << g.status();
  Matcher m(*g);
  EXPECT_FALSE(m.AcceptBytes("xaa"));  // "aa" as text is not the token 2
  EXPECT_TRUE(m.AcceptBytes("x"));
  EXPECT_TRUE(m.AcceptToken(2));
  EXPECT_TRUE(m.IsAccepting());
  Matcher draft(*g);
  EXPECT_EQ(draft.ValidateTokens(std::vector<int32_t>{4, 2, 1}), 3u);  // "x", Token(2), EOS
  EXPECT_EQ(draft.ValidateTokens(std::vector<int32_t>{4, 3, 3}), 2u);  // "xbb", then no more
  Matcher forced(*g);
  EXPECT_EQ(forced.ForcedBytes(), "x");
  ASSERT_TRUE(forced.AcceptBytes("x"));
  EXPECT_EQ(forced.ForcedBytes(), "");  // Token(2) could come instead of "bb"
}

TEST(TokenTerminalsErrors, ParseRefusesTokenGrammars) {
  const std::string dir = ::testing::TempDir();
  const std::string grammar = dir + "/tok.ebnf", text = dir + "/tok.txt";
  std::ofstream(grammar) << "root ::= \"a\" Token(5)\n";
  std::ofstream(text) << "a";
  testing::CliResult r = testing::RunCliAt(ZAPGRAM_CLI_PATH, {"parse", grammar, text});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(grammar + ":1:14: Token(5) matches a vocabulary token by id"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace zapgram
