// Captures and temperatures (masks/captures.h, parser/active_rules.h,
// grammar/rule_attributes.h) through the public Matcher.
//
// The documented meaning (XGrammar's EBNF and Lark docs, get_captures):
// each completion of a captured rule while text is accepted is recorded in
// completion order; masks record nothing; rollback removes what the undone
// steps recorded; deduplicate keeps the longest completion of each
// occurrence. Checked on hand-made grammars and, on random grammars with
// random captured rules, against an oracle built from the textbook
// reference recognizer: (rule R, start s, end e) completes exactly when
// text[s, e) is a non-empty sentence of R and the text before s can be
// followed by R (the grammar with every reference to R also allowing a
// marker byte no sentence holds accepts text[0, s) + marker as a prefix).
// Masks of grammars with attributes equal those of the same grammars
// without them. The temperature is the innermost rule's around each item
// that can take the next byte, the largest on ambiguity.
#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "grammar/gbnf_reader.h"
#include "grammar/grammar.h"
#include "gtest/gtest.h"
#include "masks/matcher.h"
#include "tests/support/random_grammar.h"
#include "tests/support/reference_recognizer.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram {
namespace {

using Captures = std::vector<std::pair<std::string, std::string>>;

// Single bytes of the test alphabets, a few longer tokens, EOS last.
std::vector<std::string> ToyTokens() {
  std::vector<std::string> tokens;
  for (char c = ' '; c <= '~'; ++c) tokens.emplace_back(1, c);
  for (const char* t : {"\xC3", "\xA9", "\xC3\xA9", "ab", "abc", "ba", "cc", "22", "(a", ",2", "42", "aa"}) {
    tokens.emplace_back(t);
  }
  tokens.emplace_back("");  // EOS
  return tokens;
}

const Vocabulary& Toy() {
  static const Vocabulary* v = [] {
    const std::vector<std::string> tokens = ToyTokens();
    absl::StatusOr<Vocabulary> vocab = Vocabulary::FromTokens(tokens, {static_cast<int32_t>(tokens.size() - 1)});
    if (!vocab.ok()) std::abort();
    return new Vocabulary(*std::move(vocab));
  }();
  return *v;
}

int32_t IdOf(const std::string& text) {
  const std::vector<std::string> tokens = ToyTokens();
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (tokens[i] == text) return static_cast<int32_t>(i);
  }
  ADD_FAILURE() << "no token " << text;
  return -1;
}

CompiledGrammar Compile(std::string_view text, GrammarFormat format = GrammarFormat::kGbnf) {
  absl::StatusOr<Grammar> g = Grammar::FromText(format, text);
  EXPECT_TRUE(g.ok()) << g.status();
  absl::StatusOr<CompiledGrammar> c = CompiledGrammar::Compile(*g, Toy());
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

void AcceptAll(Matcher& m, const std::vector<std::string>& tokens) {
  for (const std::string& t : tokens) ASSERT_TRUE(m.AcceptToken(IdOf(t))) << t;
}

TEST(Captures, DocumentedExample) {
  // XGrammar's documentation: "1,22,333" gives one capture per item.
  const CompiledGrammar g = Compile("root ::= item (\",\" item)*\nitem[capture=\"number\"] ::= [0-9]+\n");
  Matcher m(g);
  ASSERT_TRUE(m.AcceptBytes("1,22,333"));
  EXPECT_EQ(m.GetCaptures(), (Captures{{"number", "1"}, {"number", "22"}, {"number", "333"}}));
  // Every completion: each growing end of an occurrence.
  EXPECT_EQ(m.GetCaptures(false), (Captures{{"number", "1"},
                                            {"number", "2"},
                                            {"number", "22"},
                                            {"number", "3"},
                                            {"number", "33"},
                                            {"number", "333"}}));
  // `capture` alone names the capture after the rule.
  const CompiledGrammar bare = Compile("root ::= item (\",\" item)*\nitem[capture] ::= [0-9]+\n");
  Matcher b(bare);
  ASSERT_TRUE(b.AcceptBytes("7,8"));
  EXPECT_EQ(b.GetCaptures(), (Captures{{"item", "7"}, {"item", "8"}}));
}

TEST(Captures, MasksAndSpeculativeWalksRecordNothing) {
  const CompiledGrammar g = Compile("root ::= \"<\" word \">\" word\nword[capture] ::= [a-c]+\n");
  Matcher m(g);
  std::vector<uint32_t> mask(g.mask_words());
  m.ComputeMask(mask.data());
  EXPECT_TRUE(m.GetCaptures().empty());
  ASSERT_TRUE(m.AcceptToken(IdOf("<")));
  m.ComputeMask(mask.data());
  m.ComputeMask(mask.data(), /*tokens_left=*/4);
  EXPECT_EQ(m.ValidateTokens({IdOf("a"), IdOf("b"), IdOf(">")}), 3u);
  EXPECT_EQ(m.ForcedBytes(), "");
  const std::vector<int64_t> next = {1, -1, -1}, sibling = {-1, 2, -1};
  const std::vector<int64_t> draft = {0, IdOf("ab"), IdOf("c")};
  std::vector<uint32_t> rows(3 * g.mask_words());
  ASSERT_TRUE(m.TraverseDraftTree({next, sibling, draft}, rows.data()).ok());
  EXPECT_TRUE(m.GetCaptures(false).empty());
  AcceptAll(m, {"ab", "c", ">"});
  m.ComputeMask(mask.data());
  EXPECT_EQ(m.GetCaptures(), (Captures{{"word", "abc"}}));
  // A token's bytes are steps of their own: "ab" completes after "a" too.
  EXPECT_EQ(m.GetCaptures(false), (Captures{{"word", "a"}, {"word", "ab"}, {"word", "abc"}}));
}

TEST(Captures, RollbackRemovesWhatTheUndoneTokensRecorded) {
  const CompiledGrammar g = Compile("root ::= item (\",\" item)*\nitem[capture] ::= [0-9]+\n");
  Matcher m(g);
  AcceptAll(m, {"1", ",2", "2", ",", "3"});
  EXPECT_EQ(m.GetCaptures(), (Captures{{"item", "1"}, {"item", "22"}, {"item", "3"}}));
  ASSERT_TRUE(m.Rollback(2));  // "," and "3"
  EXPECT_EQ(m.GetCaptures(), (Captures{{"item", "1"}, {"item", "22"}}));
  ASSERT_TRUE(m.Rollback(1));  // the second "2": the occurrence is back to "2"
  EXPECT_EQ(m.GetCaptures(), (Captures{{"item", "1"}, {"item", "2"}}));
  EXPECT_EQ(m.GetCaptures(false), (Captures{{"item", "1"}, {"item", "2"}}));
  AcceptAll(m, {"42"});
  EXPECT_EQ(m.GetCaptures(), (Captures{{"item", "1"}, {"item", "242"}}));
  ASSERT_TRUE(m.Rollback(3));
  EXPECT_TRUE(m.GetCaptures(false).empty());
  // A refused token records nothing; Reset clears.
  AcceptAll(m, {"1"});
  EXPECT_FALSE(m.AcceptToken(IdOf("a")));
  EXPECT_EQ(m.GetCaptures(false), (Captures{{"item", "1"}}));
  m.Reset();
  EXPECT_TRUE(m.GetCaptures(false).empty());
}

TEST(Captures, NestedRepeatedAndReferencedFromSeveralPlaces) {
  const CompiledGrammar g = Compile(
      "root ::= outer \" \" pair (\";\" pair)*\n"
      "outer[capture] ::= \"(\" inner \")\"\n"
      "inner[capture=\"in\"] ::= [a-z]+\n"
      "pair ::= key \"=\" key\n"
      "key[capture=\"k\"] ::= [a-z] [a-z]?\n");
  Matcher m(g);
  ASSERT_TRUE(m.AcceptBytes("(ab) x=yz;c=d"));
  EXPECT_EQ(m.GetCaptures(), (Captures{{"in", "ab"},
                                       {"outer", "(ab)"},
                                       {"k", "x"},
                                       {"k", "yz"},
                                       {"k", "c"},
                                       {"k", "d"}}));
}

TEST(Captures, RightRecursionKeepsEveryLevel) {
  // Leo items would skip the inner levels' completions; captured rules
  // are never jumped over.
  const CompiledGrammar g = Compile("root ::= list \"!\"\nlist[capture] ::= \"a\" list | \"a\"\n");
  Matcher m(g);
  ASSERT_TRUE(m.AcceptBytes("aaaa!"));
  EXPECT_EQ(m.GetCaptures(), (Captures{{"list", "a"}, {"list", "aa"}, {"list", "aaa"}, {"list", "aaaa"}}));
}

TEST(Captures, ForkCopiesAndSerializeKeeps) {
  const CompiledGrammar g = Compile("root ::= w (\" \" w)*\nw[capture] ::= [a-z]+\n");
  Matcher m(g);
  ASSERT_TRUE(m.AcceptBytes("ab c"));
  Matcher f = m.Fork();
  ASSERT_TRUE(f.AcceptBytes("d"));
  EXPECT_EQ(m.GetCaptures(), (Captures{{"w", "ab"}, {"w", "c"}}));
  EXPECT_EQ(f.GetCaptures(), (Captures{{"w", "ab"}, {"w", "cd"}}));
  absl::StatusOr<CompiledGrammar> loaded = CompiledGrammar::Deserialize(g.Serialize(), Toy());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  Matcher l(*loaded);
  ASSERT_TRUE(l.AcceptBytes("ab c"));
  EXPECT_EQ(l.GetCaptures(), m.GetCaptures());
}

TEST(Captures, LarkRules) {
  const CompiledGrammar g = Compile(
      "start: \"<\" num \">\" tag\nnum[capture]: NUMBER\ntag[capture=\"t\"]: WORD\n"
      "NUMBER: /[0-9]+/\nWORD: /[a-z]+/\n",
      GrammarFormat::kLark);
  Matcher m(g);
  ASSERT_TRUE(m.AcceptBytes("<42>ab"));
  EXPECT_EQ(m.GetCaptures(), (Captures{{"num", "42"}, {"t", "ab"}}));
}

TEST(Captures, ThroughTokenTerminals) {
  // Token(id) takes the token by id (AcceptToken's token path); its text is
  // in the capture as any other.
  const CompiledGrammar g = Compile("root ::= wrap \"!\"\nwrap[capture] ::= \"<\" Token(" +
                                    std::to_string(IdOf("ab")) + ") \">\"\n");
  Matcher m(g);
  AcceptAll(m, {"<", "ab", ">", "!"});
  EXPECT_EQ(m.GetCaptures(), (Captures{{"wrap", "<ab>"}}));
  ASSERT_TRUE(m.Rollback(2));
  EXPECT_TRUE(m.GetCaptures().empty());
}

TEST(Captures, TextKeptIsBounded) {
  // 20,000 bytes of short captured items: the text kept stays within the
  // rollback window and the open items, whatever the input length.
  const CompiledGrammar g = Compile("root ::= (\"<\" item \">\")*\nitem[capture] ::= [a-z]+\n");
  Matcher m(g);
  std::string expect_last;
  for (int i = 0; i < 2000; ++i) {
    const std::string word = std::string(1 + i % 5, static_cast<char>('a' + i % 26));
    ASSERT_TRUE(m.AcceptBytes("<" + word + ">"));
    expect_last = word;
  }
  EXPECT_LT(m.impl().capture_log().text_bytes(), 1200u);
  const Captures got = m.GetCaptures();
  ASSERT_EQ(got.size(), 2000u);
  EXPECT_EQ(got.front().second, "a");
  EXPECT_EQ(got.back().second, expect_last);
  // Rolled back within the window, the captures are still right.
  ASSERT_TRUE(m.Rollback(3));
  EXPECT_EQ(m.GetCaptures().size(), 1997u);
}

TEST(Captures, GrammarsWithoutCapturesKeepNoText) {
  const CompiledGrammar g = Compile("root ::= [a-z]+\n");
  Matcher m(g);
  ASSERT_TRUE(m.AcceptBytes("abcdef"));
  EXPECT_EQ(m.impl().capture_log().text_bytes(), 0u);
  EXPECT_TRUE(m.GetCaptures().empty());
}

// ---------------------------------------------------------------------------
// Random grammars against the reference recognizer.

struct OracleEvent {
  size_t end;
  std::string name;
  size_t start;
  bool operator<(const OracleEvent& o) const {
    return std::tie(end, name, start) < std::tie(o.end, o.name, o.start);
  }
};

// Every (rule, start, end) completion of the captured rules on `text`.
std::vector<OracleEvent> OracleEvents(const grammar::Grammar& g, const std::string& text) {
  std::vector<OracleEvent> out;
  for (grammar::RuleId r = 0; r < g.rules.size(); ++r) {
    if (g.rules[r].capture.empty()) continue;
    grammar::Grammar language = g;
    language.root = r;
    const testing::ReferenceRecognizer of_rule(language);
    // Every reference to r may also be the byte 0xFF, which no sentence
    // holds (classes match UTF-8 only).
    grammar::Grammar context = g;
    const grammar::RuleId marked = static_cast<grammar::RuleId>(context.rules.size());
    for (grammar::Expr& e : context.exprs) {
      if (e.kind == grammar::ExprKind::kRuleRef && e.rule == r) e.rule = marked;
    }
    const grammar::ExprId to_r = context.AddRuleRef(r);
    const grammar::ExprId marker = context.AddLiteral("\xFF");
    context.rules.push_back({"marked", context.AddChoice({to_r, marker}), {}});
    const testing::ReferenceRecognizer in_context(context);
    for (size_t s = 0; s < text.size(); ++s) {
      const bool opens = (r == g.root && s == 0) || in_context.IsViablePrefix(text.substr(0, s) + "\xFF");
      if (!opens) continue;
      for (size_t e = s + 1; e <= text.size(); ++e) {
        if (of_rule.Accepts(text.substr(s, e - s))) out.push_back({e, g.rules[r].capture, s});
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A random grammar without the stray-byte literal "\xC3", which
// grammar::Dump spells as the escape GBNF reads as U+00C3 (the tests pass
// grammars through their dump).
grammar::Grammar RandomDumpableGrammar(std::mt19937_64& rng) {
  testing::RandomGrammarOptions options;
  options.multibyte = false;
  return testing::RandomGrammar(rng, options);
}

TEST(CapturesRandom, CompletionsMatchTheReferenceRecognizer) {
  std::mt19937_64 rng(31);
  int checked = 0;
  for (int round = 0; round < 150; ++round) {
    grammar::Grammar g = RandomDumpableGrammar(rng);
    bool any = false;
    for (grammar::Rule& rule : g.rules) {
      if (testing::Uniform(rng, 2) == 0) {
        rule.capture = rule.name;
        any = true;
      }
    }
    if (!any) continue;
    const testing::ReferenceRecognizer whole(g);
    absl::StatusOr<Grammar> read = Grammar::FromGbnf(grammar::Dump(g));
    ASSERT_TRUE(read.ok()) << read.status() << "\n" << grammar::Dump(g);
    absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*read, Toy());
    if (!compiled.ok()) continue;  // a budget or an empty language
    for (int k = 0; k < 4; ++k) {
      std::string text = testing::RandomString(rng, 7);
      text.resize(whole.LongestViablePrefix(text));
      const std::vector<OracleEvent> want = OracleEvents(g, text);
      Matcher m(*compiled);
      // Byte by byte: the events each byte adds are those ending there.
      size_t seen = 0;
      for (size_t p = 1; p <= text.size(); ++p) {
        ASSERT_TRUE(m.AcceptBytes(text.substr(p - 1, 1))) << grammar::Dump(g) << "text " << text;
        const Captures got = m.GetCaptures(false);
        std::vector<std::pair<std::string, std::string>> added(got.begin() + static_cast<std::ptrdiff_t>(seen),
                                                               got.end());
        seen = got.size();
        std::vector<std::pair<std::string, std::string>> expected;
        for (const OracleEvent& e : want) {
          if (e.end == p) expected.emplace_back(e.name, text.substr(e.start, e.end - e.start));
        }
        std::sort(added.begin(), added.end());
        std::sort(expected.begin(), expected.end());
        ASSERT_EQ(added, expected) << grammar::Dump(g) << "text '" << text << "' at " << p;
      }
      // Deduplicated: the longest end of each (rule, start).
      std::map<std::pair<std::string, size_t>, size_t> longest;
      for (const OracleEvent& e : want) longest[{e.name, e.start}] = std::max(longest[{e.name, e.start}], e.end);
      Captures expected;
      for (const auto& [key, end] : longest) expected.emplace_back(key.first, text.substr(key.second, end - key.second));
      Captures got = m.GetCaptures(true);
      std::sort(got.begin(), got.end());
      std::sort(expected.begin(), expected.end());
      ASSERT_EQ(got, expected) << grammar::Dump(g) << "text '" << text << "'";
      ++checked;
    }
  }
  EXPECT_GT(checked, 200);
}

// Masks with attributes equal masks without, along random texts.
TEST(CapturesRandom, AttributesLeaveMasksAlone) {
  std::mt19937_64 rng(33);
  int compared = 0;
  for (int round = 0; round < 150; ++round) {
    grammar::Grammar plain = RandomDumpableGrammar(rng);
    grammar::Grammar marked = plain;
    for (grammar::Rule& rule : marked.rules) {
      const uint64_t pick = testing::Uniform(rng, 4);
      if (pick == 0) rule.capture = rule.name;
      if (pick == 1) rule.temperature = 0.5f;
    }
    const testing::ReferenceRecognizer whole(plain);
    absl::StatusOr<Grammar> a = Grammar::FromGbnf(grammar::Dump(plain));
    absl::StatusOr<Grammar> b = Grammar::FromGbnf(grammar::Dump(marked));
    ASSERT_TRUE(a.ok() && b.ok());
    absl::StatusOr<CompiledGrammar> ca = CompiledGrammar::Compile(*a, Toy());
    absl::StatusOr<CompiledGrammar> cb = CompiledGrammar::Compile(*b, Toy());
    ASSERT_EQ(ca.ok(), cb.ok());
    if (!ca.ok()) continue;
    std::string text = testing::RandomString(rng, 8);
    text.resize(whole.LongestViablePrefix(text));
    Matcher ma(*ca), mb(*cb);
    std::vector<uint32_t> wa(ca->mask_words()), wb(cb->mask_words());
    for (size_t p = 0; p <= text.size(); ++p) {
      ma.ComputeMask(wa.data());
      mb.ComputeMask(wb.data());
      ASSERT_EQ(wa, wb) << grammar::Dump(marked) << "text '" << text << "' at " << p;
      ++compared;
      if (p < text.size()) {
        ASSERT_TRUE(ma.AcceptBytes(text.substr(p, 1)));
        ASSERT_TRUE(mb.AcceptBytes(text.substr(p, 1)));
      }
    }
  }
  EXPECT_GT(compared, 200);
}

// ---------------------------------------------------------------------------
// Temperatures.

TEST(Temperature, DocumentedExampleAndDefault) {
  const CompiledGrammar g = Compile("root ::= \"answer:\" value\nvalue[temperature=0.7] ::= [a-z]+\n");
  Matcher m(g);
  EXPECT_EQ(m.GetTemperature(), std::nullopt);
  ASSERT_TRUE(m.AcceptBytes("answer:"));
  EXPECT_EQ(m.GetTemperature(), 0.7f);
  ASSERT_TRUE(m.AcceptBytes("ab"));
  EXPECT_EQ(m.GetTemperature(), 0.7f);
  MatcherOptions options;
  options.default_temperature = 0.2f;
  Matcher d(g, options);
  EXPECT_EQ(d.GetTemperature(), 0.2f);
  ASSERT_TRUE(d.AcceptBytes("answer:x"));
  EXPECT_EQ(d.GetTemperature(), 0.7f);
  EXPECT_EQ(d.Fork().GetTemperature(), 0.7f);
  absl::StatusOr<CompiledGrammar> loaded = CompiledGrammar::Deserialize(g.Serialize(), Toy());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  Matcher l(*loaded);
  ASSERT_TRUE(l.AcceptBytes("answer:"));
  EXPECT_EQ(l.GetTemperature(), 0.7f);
}

TEST(Temperature, InnermostWinsAndIsInherited) {
  const CompiledGrammar g = Compile(
      "root ::= outer \"!\"\n"
      "outer[temperature=0.5] ::= \"x\" inner \"y\" plain\n"
      "inner[temperature=0.9] ::= [a-z]\n"
      "plain ::= [0-9]+\n");
  Matcher m(g);
  ASSERT_TRUE(m.AcceptBytes("x"));
  EXPECT_EQ(m.GetTemperature(), 0.9f);  // inside inner
  ASSERT_TRUE(m.AcceptBytes("a"));
  EXPECT_EQ(m.GetTemperature(), 0.5f);  // back in outer
  ASSERT_TRUE(m.AcceptBytes("y"));
  EXPECT_EQ(m.GetTemperature(), 0.5f);  // plain inherits outer's
  ASSERT_TRUE(m.AcceptBytes("1"));
  EXPECT_EQ(m.GetTemperature(), 0.5f);  // plain goes on, or "!" (outside): the one that has one
  ASSERT_TRUE(m.AcceptBytes("!"));
  EXPECT_EQ(m.GetTemperature(), std::nullopt);
}

TEST(Temperature, AmbiguityTakesTheLargest) {
  const CompiledGrammar g = Compile(
      "root ::= a | b\na[temperature=0.3] ::= \"q\" [0-9]\nb[temperature=0.8] ::= \"q\" [a-z]\n");
  Matcher m(g);
  EXPECT_EQ(m.GetTemperature(), 0.8f);
  ASSERT_TRUE(m.AcceptBytes("q"));
  EXPECT_EQ(m.GetTemperature(), 0.8f);
}

TEST(Temperature, ThroughLeoChains) {
  // `l` is right recursive and has no temperature: its Leo entries jump to
  // the top item, of `t`, whose temperature holds.
  const CompiledGrammar g = Compile("root ::= t\nt[temperature=0.6] ::= \"(\" l\nl ::= \"a\" l | \")\"\n");
  Matcher m(g);
  ASSERT_TRUE(m.AcceptBytes("(aaaaaa"));
  EXPECT_EQ(m.GetTemperature(), 0.6f);
}

TEST(Temperature, DraftTreeNodesGetTheirPathsTemperature) {
  const CompiledGrammar g = Compile("root ::= \"<\" value \">\"\nvalue[temperature=0.7] ::= [a-z]+\n");
  Matcher m(g);
  // root -> "<" -> "a" -> ">" ; root -> "x" (refused)
  const std::vector<int64_t> next = {1, 3, -1, 4, -1};
  const std::vector<int64_t> sibling = {-1, 2, -1, -1, -1};
  const std::vector<int64_t> draft = {0, IdOf("<"), IdOf("x"), IdOf("a"), IdOf(">")};
  std::vector<uint32_t> rows(5 * g.mask_words());
  std::vector<float> temperatures(5, 9.0f);
  ASSERT_TRUE(m.TraverseDraftTree({next, sibling, draft}, rows.data(), absl::MakeSpan(temperatures)).ok());
  EXPECT_EQ(temperatures, (std::vector<float>{-1.0f, 0.7f, -1.0f, 0.7f, -1.0f}));
}

TEST(Temperature, LarkRule) {
  const CompiledGrammar g =
      Compile("start: \"=\" value\nvalue[temperature=0.7]: WORD\nWORD: /[a-z]+/\n", GrammarFormat::kLark);
  Matcher m(g);
  EXPECT_EQ(m.GetTemperature(), std::nullopt);
  ASSERT_TRUE(m.AcceptBytes("="));
  EXPECT_EQ(m.GetTemperature(), 0.7f);
}

}  // namespace
}  // namespace zapgram
