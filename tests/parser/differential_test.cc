// Differential tests: the Earley engine against a textbook oracle.
//
// The oracle (tests/support/reference_recognizer.h) is a naive Earley
// recognizer over bytes that shares no code with parser/; it is itself
// checked first (DifferentialReference.*) against a UTF-8 encoder and against
// the bounded languages of random grammars, enumerated straight from the IR.
//
// Then, for thousands of random grammars (tests/support/random_grammar.h) and
// strings over their alphabet, every prefix is compared, with ZapFormat
// pruning on and off:
//  - Feed(b) succeeds iff the oracle says prefix + b is a viable prefix;
//  - IsAccepting() iff the oracle accepts the prefix;
//  - NextBytes() on the alphabet bytes (on all 256 bytes for some strings)
//    iff prefix + b is viable;
//  - Rollback(k) after a string gives the state of a fresh recognizer fed the
//    shorter prefix, and feeding the undone bytes again gives the old answers;
//    long random walks of appends and rollbacks stay in step with the oracle
//    and with the documented rollback limit;
//  - a grammar whose language is empty compiles, and nothing is viable in it.
// Half of the strings are random; the other half are walks that the oracle
// keeps mostly viable, so that deep prefixes are compared too.
//
// Finally real grammars (builtin:json and llama.cpp's json, arithmetic, chess
// and list grammars) on real or handwritten documents, each mutated 50 times
// (one byte deleted, inserted or replaced): the engine and the oracle must
// agree on the rejection offset and on final acceptance.
//
// A mismatch prints the grammar (grammar::Dump), the oracle's BNF and the
// input, enough to rebuild the case by hand. Sizes shrink tenfold under
// sanitizers (ZAPGRAM_SANITIZED).
#include <algorithm>
#include <bitset>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "grammar/builtin.h"
#include "grammar/gbnf_reader.h"
#include "grammar/grammar.h"
#include "gtest/gtest.h"
#include "parser/flat_grammar.h"
#include "parser/recognizer.h"
#include "pruning/compact.h"
#include "tests/support/random_grammar.h"
#include "tests/support/reference_recognizer.h"
#include "tests/support/test_paths.h"
#include "tests/support/test_scale.h"

namespace zapgram {
namespace {

constexpr int kScale = testing::Scaled(10, 1);

// ---------------------------------------------------------------------------
// The oracle checked against even simpler oracles (no engine involved).

// UTF-8 encoding, written independently of the decoder under test.
std::string EncodeUtf8(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return out;
}

bool IsScalarValue(uint32_t cp) { return cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF); }

TEST(DifferentialReference, DecodeMatchesEncodeOnEveryShortString) {
  // Every string of 1..3 bytes, and 4-byte strings over a sample of
  // interesting bytes: decoding succeeds exactly on encodings of scalar values.
  uint32_t cp = 0;
  for (uint32_t v = 0; v <= 0x10FFFF; ++v) {
    if (!IsScalarValue(v)) continue;
    std::string enc = EncodeUtf8(v);
    ASSERT_TRUE(testing::DecodeOneCodepoint(enc, &cp)) << v;
    ASSERT_EQ(cp, v);
  }
  for (uint32_t len = 1; len <= 3; ++len) {
    for (uint32_t bits = 0; bits < (1u << (8 * len)); ++bits) {
      std::string s;
      for (uint32_t k = 0; k < len; ++k)
        s.push_back(static_cast<char>(bits >> (8 * (len - 1 - k))));
      bool ok = testing::DecodeOneCodepoint(s, &cp);
      // Sound here; complete by the loop above (every encoding decodes).
      ASSERT_EQ(ok, ok && IsScalarValue(cp) && EncodeUtf8(cp) == s) << testing::EscapeBytes(s);
    }
  }
  const uint8_t kSample[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0,
                             0xC2, 0xE0, 0xED, 0xEF, 0xF0, 0xF3, 0xF4, 0xF5, 0xF8, 0xFF};
  for (uint8_t a : kSample) {
    for (uint8_t b : kSample) {
      for (uint8_t c : kSample) {
        for (uint8_t d : kSample) {
          std::string s = {static_cast<char>(a), static_cast<char>(b), static_cast<char>(c),
                           static_cast<char>(d)};
          bool ok = testing::DecodeOneCodepoint(s, &cp);
          ASSERT_EQ(ok, ok && IsScalarValue(cp) && EncodeUtf8(cp) == s) << testing::EscapeBytes(s);
          ASSERT_EQ(ok, a >= 0xF0 && a <= 0xF4 && (b & 0xC0) == 0x80 && (c & 0xC0) == 0x80 &&
                            (d & 0xC0) == 0x80 && !(a == 0xF0 && b < 0x90) &&
                            !(a == 0xF4 && b >= 0x90))
              << testing::EscapeBytes(s);
        }
      }
    }
  }
}

TEST(DifferentialReference, ClassPrefixMatchesEnumeration) {
  using grammar::CodepointRange;
  const std::vector<std::vector<CodepointRange>> kClasses = {
      {},
      {{'a', 'a'}},
      {{0xE9, 0xE9}},
      {{0x80, 0x80}},
      {{0x7FF, 0x800}},
      {{0xD000, 0xFFFF}},
      {{0x10000, 0x10000}},
      {{0x10FFFF, 0x10FFFF}},
      grammar::NormalizeRanges({{'a', 'a'}}, /*negated=*/true),
      grammar::NormalizeRanges({{0x20, 0x7E}, {0x3000, 0x30FF}}, /*negated=*/true),
  };
  const uint8_t kSample[] = {0x00, 0x61, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xA9, 0xBF, 0xC0, 0xC1,
                             0xC2, 0xC3, 0xDF, 0xE0, 0xE3, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF};
  for (const auto& ranges : kClasses) {
    std::set<std::string> prefixes;  // proper prefixes of encodings of members
    for (const CodepointRange& r : ranges) {
      for (uint32_t v = r.lo; v <= r.hi; ++v) {
        if (!IsScalarValue(v)) continue;
        std::string enc = EncodeUtf8(v);
        for (size_t k = 0; k < enc.size(); ++k) prefixes.insert(enc.substr(0, k));
      }
    }
    std::vector<std::string> probes = {""};
    for (int len = 1; len <= 3; ++len) {
      std::vector<std::string> next;
      for (const std::string& p : probes) {
        if (p.size() + 1 != static_cast<size_t>(len)) continue;
        for (uint8_t b : kSample) next.push_back(p + static_cast<char>(b));
      }
      probes.insert(probes.end(), next.begin(), next.end());
    }
    for (const std::string& p : prefixes) probes.push_back(p);
    for (const std::string& p : probes) {
      ASSERT_EQ(testing::IsProperPrefixOfClass(p, ranges), prefixes.count(p) == 1)
          << testing::EscapeBytes(p) << " class #" << (&ranges - kClasses.data());
    }
  }
}

// The language of every rule restricted to strings of at most `n` bytes over
// the code points a b c d é, computed straight from the IR by a fixpoint over
// sets of strings: a second oracle for the first.
class BoundedLanguages {
 public:
  BoundedLanguages(const grammar::Grammar& g, size_t n) : g_(g), n_(n), rules_(g.rules.size()) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (size_t r = 0; r < g.rules.size(); ++r) {
        Lang l = Eval(g.rules[r].body);
        if (l != rules_[r]) {
          rules_[r] = std::move(l);
          changed = true;
        }
      }
    }
  }
  const std::set<std::string>& Of(grammar::RuleId r) const { return rules_[r]; }

 private:
  using Lang = std::set<std::string>;

  Lang Concat(const Lang& a, const Lang& b) const {
    std::vector<const std::string*> by_length;
    for (const std::string& y : b) by_length.push_back(&y);
    std::stable_sort(
        by_length.begin(), by_length.end(),
        [](const std::string* p, const std::string* q) { return p->size() < q->size(); });
    Lang out;
    for (const std::string& x : a) {
      for (const std::string* y : by_length) {
        if (x.size() + y->size() > n_) break;
        out.insert(out.end(), x + *y);
      }
    }
    return out;
  }

  // Post-order with an explicit stack, using the current rule languages.
  Lang Eval(grammar::ExprId root) const {
    std::map<grammar::ExprId, Lang> memo;
    std::vector<std::pair<grammar::ExprId, bool>> stack = {{root, false}};
    while (!stack.empty()) {
      auto [id, expanded] = stack.back();
      const grammar::Expr& e = g_.exprs[id];
      if (memo.count(id)) {
        stack.pop_back();
        continue;
      }
      if (!expanded && !e.children.empty()) {
        stack.back().second = true;
        for (grammar::ExprId c : e.children) stack.push_back({c, false});
        continue;
      }
      stack.pop_back();
      Lang l;
      switch (e.kind) {
        case grammar::ExprKind::kEmpty:
          l.insert("");
          break;
        case grammar::ExprKind::kLiteral:
          if (e.literal.size() <= n_) l.insert(e.literal);
          break;
        case grammar::ExprKind::kCharClass:
          for (uint32_t v : {0x61u, 0x62u, 0x63u, 0x64u, 0xE9u}) {
            for (const grammar::CodepointRange& r : e.ranges) {
              if (v >= r.lo && v <= r.hi && EncodeUtf8(v).size() <= n_) l.insert(EncodeUtf8(v));
            }
          }
          break;
        case grammar::ExprKind::kRuleRef:
          l = rules_[e.rule];
          break;
        case grammar::ExprKind::kRegex:  // RandomGrammar makes none; not enumerated here
          ADD_FAILURE() << "bounded enumeration: unexpected regex terminal /" << e.literal << "/";
          break;
        case grammar::ExprKind::kToken:  // nor tokens
        case grammar::ExprKind::kTokenIds:
          ADD_FAILURE() << "bounded enumeration: unexpected token " << e.token;
          break;
        case grammar::ExprKind::kSequence:
          l.insert("");
          for (grammar::ExprId c : e.children) l = Concat(l, memo[c]);
          break;
        case grammar::ExprKind::kChoice:
          for (grammar::ExprId c : e.children) l.insert(memo[c].begin(), memo[c].end());
          break;
        case grammar::ExprKind::kRepeat: {
          const Lang& x = memo[e.children[0]];
          Lang power = {""};  // x^k
          for (uint32_t k = 0; k < e.min; ++k) power = Concat(power, x);
          l = power;
          // Add x^(k+1) for k < max until one adds nothing new: if x^(k+1)
          // is in the union of x^min..x^k, so is x^(k+2) = x^(k+1) x.
          for (uint32_t k = e.min; k < e.max; ++k) {
            power = Concat(power, x);
            size_t before = l.size();
            l.insert(power.begin(), power.end());
            if (l.size() == before) break;  // then no higher power adds anything either
          }
          break;
        }
      }
      memo[id] = std::move(l);
    }
    return memo[root];
  }

  const grammar::Grammar& g_;
  size_t n_;
  std::vector<Lang> rules_;
};

TEST(DifferentialReference, AgreesWithBoundedLanguageEnumeration) {
  // Random grammars; every string of <= 4 bytes over the alphabet is checked:
  // acceptance exactly, viability at least for prefixes of known sentences of
  // <= 6 bytes (a longer completion, or one through a code point outside the
  // alphabet, may make more prefixes viable: those are only counted).
  std::mt19937_64 rng(20240611);
  const int kGrammars = kScale * 20;
  size_t strings = 0, viable_confirmed = 0, viable_unconfirmed = 0;
  for (int gi = 0; gi < kGrammars; ++gi) {
    grammar::Grammar g = testing::RandomGrammar(rng);
    ASSERT_TRUE(g.Validate().ok());
    testing::ReferenceRecognizer ref(g);
    BoundedLanguages lang(g, 6);
    const std::set<std::string>& sentences = lang.Of(g.root);
    ASSERT_EQ(ref.LanguageIsEmpty(), !grammar::ProductiveRules(g)[g.root]) << grammar::Dump(g);
    if (ref.LanguageIsEmpty()) {
      ASSERT_TRUE(sentences.empty()) << grammar::Dump(g);
    }
    std::set<std::string> prefixes;
    for (const std::string& s : sentences) {
      for (size_t k = 0; k <= s.size(); ++k) prefixes.insert(s.substr(0, k));
    }
    // Depth-first over all strings of <= 4 alphabet bytes, with one session.
    testing::ReferenceRecognizer::Session session(&ref);
    std::vector<size_t> next_child = {0};
    while (!next_child.empty()) {
      const std::string& s = session.input();
      if (next_child.back() == 0) {
        ++strings;
        ASSERT_EQ(session.IsAccepting(), sentences.count(s) == 1)
            << grammar::Dump(g) << "string: \"" << testing::EscapeBytes(s) << "\"\n"
            << ref.DumpBnf();
        ASSERT_EQ(session.IsAccepting(), ref.Accepts(s));
        ASSERT_EQ(session.IsViable(), ref.IsViablePrefix(s));
        if (prefixes.count(s)) {
          ASSERT_TRUE(session.IsViable())
              << grammar::Dump(g) << "prefix: \"" << testing::EscapeBytes(s) << "\"\n"
              << ref.DumpBnf();
          ++viable_confirmed;
        } else if (session.IsViable()) {
          ++viable_unconfirmed;
        }
      }
      const auto& alphabet = testing::AlphabetBytes();
      if (s.size() < 4 && next_child.back() < alphabet.size()) {
        session.Push(alphabet[next_child.back()++]);
        next_child.push_back(0);
      } else {
        next_child.pop_back();
        if (!next_child.empty()) session.Pop();
      }
    }
  }
  std::printf(
      "[reference vs enumeration] %d grammars, %zu strings, viable prefixes: %zu "
      "confirmed, %zu beyond the enumeration bound\n",
      kGrammars, strings, viable_confirmed, viable_unconfirmed);
}

TEST(DifferentialReference, HandwrittenGrammars) {
  // root ::= root root | "aé" | c | "" ;  c ::= [^a]   (a literal and a class
  // ending inside a multi-byte code point, invalid and out-of-range UTF-8).
  grammar::Grammar g;
  g.rules.push_back({"root", 0, {}});
  g.rules.push_back({"c", 0, {}});
  grammar::ExprId s1 = g.AddRuleRef(0);
  grammar::ExprId s2 = g.AddRuleRef(0);
  g.rules[0].body = g.AddChoice(
      {g.AddSequence({s1, s2}), g.AddLiteral("a\xC3\xA9"), g.AddRuleRef(1), g.AddEmpty()});
  g.rules[1].body = g.AddCharClass({{'a', 'a'}}, /*negated=*/true);
  testing::ReferenceRecognizer ref(g);
  EXPECT_TRUE(ref.Accepts(""));
  EXPECT_TRUE(ref.Accepts("a\xC3\xA9"));
  EXPECT_FALSE(ref.Accepts("a"));
  EXPECT_TRUE(ref.IsViablePrefix("a"));
  EXPECT_TRUE(ref.IsViablePrefix("a\xC3"));
  EXPECT_FALSE(ref.IsViablePrefix("a\xC3\xA8"));
  EXPECT_TRUE(
      ref.Accepts("b\xE2\x82\xAC"
                  "a\xC3\xA9"
                  "b"));  // b € aé b
  EXPECT_TRUE(ref.IsViablePrefix("\xF0\x9F"));
  EXPECT_FALSE(ref.IsViablePrefix("\xED\xA0"));  // a surrogate's lead bytes
  EXPECT_FALSE(ref.IsViablePrefix("\xC0"));      // overlong lead
  EXPECT_FALSE(ref.IsViablePrefix("\xE0\x80"));  // overlong 3-byte
  EXPECT_FALSE(ref.IsViablePrefix("\xF4\x90"));  // above U+10FFFF
  EXPECT_TRUE(ref.IsViablePrefix("\xF4\x8F\xBF"));
  EXPECT_EQ(ref.LongestViablePrefix("aa"), 1u);  // an "a" must start "aé"
  EXPECT_EQ(ref.LongestViablePrefix("b\xC3\xA9"
                                    "a\xC3\xA9"
                                    "a\xC3\xA8"),
            8u);

  // Unproductive: root ::= "x" u | "yy" ;  u ::= u "z".
  grammar::Grammar h;
  h.rules.push_back({"root", 0, {}});
  h.rules.push_back({"u", 0, {}});
  h.rules[0].body =
      h.AddChoice({h.AddSequence({h.AddLiteral("x"), h.AddRuleRef(1)}), h.AddLiteral("yy")});
  h.rules[1].body = h.AddSequence({h.AddRuleRef(1), h.AddLiteral("z")});
  testing::ReferenceRecognizer ref_h(h);
  EXPECT_FALSE(ref_h.IsViablePrefix("x"));
  EXPECT_TRUE(ref_h.IsViablePrefix("y"));
  EXPECT_TRUE(ref_h.Accepts("yy"));
  EXPECT_FALSE(ref_h.LanguageIsEmpty());
  h.root = 1;
  testing::ReferenceRecognizer ref_u(h);
  EXPECT_TRUE(ref_u.LanguageIsEmpty());
  EXPECT_FALSE(ref_u.IsViablePrefix(""));
}

// ---------------------------------------------------------------------------
// The engine against the oracle: shared helpers.

using parser::ByteSet;
using testing::ReferenceRecognizer;

std::string BytesToString(const ByteSet& set) {
  std::string out = "{";
  for (int b = 0; b < 256; ++b) {
    if (!set.test(b)) continue;
    if (out.size() > 1) out += ' ';
    out += testing::EscapeBytes(std::string(1, static_cast<char>(b)));
  }
  return out + "}";
}

// Counts mismatches and prints the first few in full.
class MismatchLog {
 public:
  // `context` is printed once per mismatch (up to kPrinted of them).
  void Report(const std::string& context, const std::string& what) {
    ++count_;
    if (count_ <= kPrinted) {
      std::printf("=== MISMATCH %d: %s\n%s\n", count_, what.c_str(), context.c_str());
    }
  }
  int count() const { return count_; }

 private:
  static constexpr int kPrinted = 5;
  int count_ = 0;
};

std::string GrammarContext(const grammar::Grammar& g, const ReferenceRecognizer& ref,
                           const parser::FlatGrammar* flat) {
  std::string out = absl::StrCat("grammar:\n", grammar::Dump(g), "oracle BNF:\n", ref.DumpBnf());
  if (flat != nullptr)
    absl::StrAppend(&out, "engine flat grammar:\n", parser::DumpFlatGrammar(*flat));
  return out;
}

// What the oracle says at one prefix.
struct Truth {
  bool accepting = false;
  ByteSet viable_next;  // b (among the probed bytes) such that prefix + b is viable
};

// The oracle's answers along one input: at[i] for the prefix of length i, for
// every i up to `viable`, the length of the longest viable prefix.
struct Trace {
  std::string input;
  size_t viable = 0;
  std::vector<Truth> at;
};

Trace TraceOf(const ReferenceRecognizer& ref, const std::string& input,
              const std::vector<uint8_t>& probes) {
  Trace t;
  t.input = input;
  ReferenceRecognizer::Session session(&ref);
  auto truth = [&] {
    Truth tr;
    tr.accepting = session.IsAccepting();
    std::vector<bool> viable = session.ViableAfter(probes);
    for (size_t k = 0; k < probes.size(); ++k) {
      if (viable[k]) tr.viable_next.set(probes[k]);
    }
    return tr;
  };
  t.at.push_back(truth());
  for (char c : input) {
    session.Push(static_cast<uint8_t>(c));
    if (!session.IsViable()) break;
    t.at.push_back(truth());
    ++t.viable;
  }
  return t;
}

struct DiffStats {
  uint64_t grammars = 0;
  uint64_t empty = 0;  // grammars whose language is empty (compared like the others)
  uint64_t strings = 0;
  uint64_t prefixes = 0;  // prefixes compared, both pruning modes counted
  uint64_t probes = 0;    // next-byte answers compared
  uint64_t rollbacks = 0;
  uint64_t fully_viable = 0;  // strings viable to their end
  uint64_t accepted = 0;      // strings that are sentences
};

// Feeds `t.input` to a fresh engine and compares it with the oracle's trace at
// every prefix; then rolls back `rollback` bytes and replays them. Returns
// false at the first mismatch (reported to `log`).
bool CompareWithTrace(const parser::FlatGrammar& flat, const Trace& t, bool pruning,
                      const ByteSet& probe_mask, size_t rollback, const std::string& context,
                      DiffStats& stats, MismatchLog& log) {
  RecognizerOptions options;
  options.pruning = pruning;
  parser::Recognizer rec = pruning::MakeRecognizer(&flat, options);
  auto where = [&](size_t i) {
    return std::string("input \"") + testing::EscapeBytes(t.input) + "\", pruning " +
           (pruning ? "on" : "off") + ", after " + std::to_string(i) + " bytes \"" +
           testing::EscapeBytes(t.input.substr(0, i)) + "\": ";
  };
  auto check_at = [&](const parser::Recognizer& r, size_t i) {
    ++stats.prefixes;
    stats.probes += probe_mask.count();
    if (r.IsAccepting() != t.at[i].accepting) {
      log.Report(context, where(i) + "IsAccepting() = " + (r.IsAccepting() ? "true" : "false") +
                              ", oracle says " + (t.at[i].accepting ? "true" : "false"));
      return false;
    }
    ByteSet got = r.NextBytes() & probe_mask;
    if (got != t.at[i].viable_next) {
      log.Report(context, where(i) + "NextBytes() on the probed bytes: engine only " +
                              BytesToString(got & ~t.at[i].viable_next) + ", oracle only " +
                              BytesToString(t.at[i].viable_next & ~got));
      return false;
    }
    return true;
  };
  if (!check_at(rec, 0)) return false;
  for (size_t i = 0; i < t.input.size(); ++i) {
    bool fed = rec.Feed(static_cast<uint8_t>(t.input[i]));
    if (!rec.status().ok()) {
      log.Report(context, where(i) + "status " + rec.status().ToString());
      return false;
    }
    bool expected = i < t.viable;
    if (fed != expected) {
      log.Report(context, where(i) + "Feed(" + testing::EscapeBytes(t.input.substr(i, 1)) +
                              ") = " + (fed ? "true" : "false") + ", oracle says " +
                              (expected ? "viable" : "not viable"));
      return false;
    }
    if (!fed) break;
    if (!check_at(rec, i + 1)) return false;
  }
  if (rec.Position() != t.viable) {
    log.Report(context, where(t.viable) + "Position() = " + std::to_string(rec.Position()));
    return false;
  }
  if (rollback == 0) return true;

  // Rollback: compare with the oracle, with a fresh engine, and replay.
  const size_t m = t.viable;
  const size_t back = m - rollback;
  ++stats.rollbacks;
  if (!rec.Rollback(rollback) || rec.Position() != back) {
    log.Report(context, where(m) + "Rollback(" + std::to_string(rollback) + ") failed");
    return false;
  }
  if (!check_at(rec, back)) return false;
  parser::Recognizer fresh = pruning::MakeRecognizer(&flat, options);
  if (fresh.FeedBytes(std::string_view(t.input).substr(0, back)) != back ||
      fresh.IsAccepting() != rec.IsAccepting() || fresh.NextBytes() != rec.NextBytes() ||
      fresh.CanContinue() != rec.CanContinue()) {
    log.Report(context, where(back) + "after Rollback(" + std::to_string(rollback) +
                            ") the state differs from a fresh recognizer's: next bytes " +
                            BytesToString(rec.NextBytes()) + " vs " +
                            BytesToString(fresh.NextBytes()));
    return false;
  }
  for (size_t i = back; i < m; ++i) {
    if (!rec.Feed(static_cast<uint8_t>(t.input[i]))) {
      log.Report(context, where(i) + "replay after Rollback(" + std::to_string(rollback) +
                              ") rejects a byte accepted before");
      return false;
    }
    if (!check_at(rec, i + 1)) return false;
  }
  return true;
}

TEST(Differential, RandomGrammarsAgreeWithReference) {
  std::mt19937_64 rng(0x2A9F'0001'D1FFull);
  const int kGrammars = 300 * kScale;
  const int kStrings = 20;
  const size_t kMaxLength = 10;
  ByteSet alphabet_mask;
  for (uint8_t b : testing::AlphabetBytes()) alphabet_mask.set(b);
  std::vector<uint8_t> all_bytes(256);
  for (int b = 0; b < 256; ++b) all_bytes[b] = static_cast<uint8_t>(b);
  ByteSet all_mask;
  all_mask.set();

  DiffStats stats;
  MismatchLog log;
  for (int gi = 0; gi < kGrammars; ++gi) {
    grammar::Grammar g = testing::RandomGrammar(rng);
    ASSERT_TRUE(g.Validate().ok()) << grammar::Dump(g);
    ++stats.grammars;
    ReferenceRecognizer ref(g);
    absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(g);
    if (!flat.ok()) {
      log.Report(GrammarContext(g, ref, nullptr),
                 "BuildFlatGrammar refused the grammar (" + flat.status().ToString() + ")");
      continue;
    }
    // An empty language compiles too; its traces below say that nothing is
    // viable, and the engine must agree.
    stats.empty += ref.LanguageIsEmpty();
    const std::string context = GrammarContext(g, ref, &*flat);
    for (int si = 0; si < kStrings; ++si) {
      std::string input =
          si % 2 == 0 ? testing::RandomString(rng, kMaxLength)
                      : testing::GuidedString(ref, rng, kMaxLength);
      // Two strings per grammar probe all 256 bytes, the others the alphabet.
      bool all = si < 2;
      Trace t = TraceOf(ref, input, all ? all_bytes : testing::AlphabetBytes());
      size_t rollback = t.viable == 0 ? 0 : 1 + testing::Uniform(rng, t.viable);
      ++stats.strings;
      stats.fully_viable += t.viable == input.size();
      stats.accepted += t.viable == input.size() && t.at.back().accepting;
      for (bool pruning : {true, false}) {
        CompareWithTrace(*flat, t, pruning, all ? all_mask : alphabet_mask, rollback, context,
                         stats, log);
      }
    }
  }
  std::printf(
      "[differential] %llu random grammars (%llu with the empty language) x %d "
      "strings of 0..%zu bytes: %llu strings (%llu viable to the end, %llu sentences), %llu "
      "prefixes and %llu next-byte answers compared with pruning on and off, %llu rollbacks; "
      "%d mismatches\n",
      static_cast<unsigned long long>(stats.grammars),
      static_cast<unsigned long long>(stats.empty), kStrings, kMaxLength,
      static_cast<unsigned long long>(stats.strings),
      static_cast<unsigned long long>(stats.fully_viable),
      static_cast<unsigned long long>(stats.accepted),
      static_cast<unsigned long long>(stats.prefixes),
      static_cast<unsigned long long>(stats.probes),
      static_cast<unsigned long long>(stats.rollbacks), log.count());
  EXPECT_EQ(log.count(), 0);
}

TEST(Differential, RandomWalksWithRollback) {
  // Long edit sessions: one engine and one oracle session take the same random
  // walk of appends (mostly viable bytes, sometimes any alphabet byte) and
  // rollbacks, far past the engine's checkpoint interval, and are compared
  // after every step. With pruning, Rollback(k) must succeed exactly when k is
  // within the documented limit (RollbackLimit(): +1 per accepted byte up to
  // max_rollback, -1 per rolled-back byte), modelled here independently;
  // without pruning it always succeeds. A refused rollback changes nothing.
  std::mt19937_64 rng(0x2A9F'0003'0A1Cull);
  const int kGrammars = 20 * kScale;
  const int kSteps = 400;
  const size_t kMaxDepth = 80;  // longer inputs only slow the oracle down
  const std::vector<uint8_t>& alphabet = testing::AlphabetBytes();
  std::vector<uint8_t> all_bytes(256);
  for (int b = 0; b < 256; ++b) all_bytes[b] = static_cast<uint8_t>(b);
  MismatchLog log;
  uint64_t steps = 0, rollbacks = 0, refused_rollbacks = 0;
  size_t deepest = 0;
  for (int gi = 0; gi < kGrammars; ++gi) {
    grammar::Grammar g = testing::RandomGrammar(rng);
    ReferenceRecognizer ref(g);
    absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(g);
    if (!flat.ok()) {
      log.Report(GrammarContext(g, ref, nullptr), "BuildFlatGrammar refused the grammar");
      continue;
    }
    if (ref.LanguageIsEmpty()) continue;  // no walk: nothing is viable (RandomGrammars checks it)
    const std::string context = GrammarContext(g, ref, &*flat);
    const uint64_t seed = rng();
    // Limits smaller than the default reach past several checkpoints at
    // depths the oracle handles quickly.
    const uint32_t max_rollback = std::vector<uint32_t>{64, 20, 8, 1, 0}[testing::Uniform(rng, 5)];
    for (bool pruning : {true, false}) {
      std::mt19937_64 walk(seed);  // the same walk for both modes
      RecognizerOptions options;
      options.pruning = pruning;
      options.max_rollback = max_rollback;
      parser::Recognizer rec = pruning::MakeRecognizer(&*flat, options);
      ReferenceRecognizer::Session session(&ref);
      size_t limit = 0;  // the rollback limit as documented, pruning on
      std::string ops;   // the walk so far, for the failure message
      for (int step = 0; step < kSteps; ++step) {
        ++steps;
        const size_t pos = session.size();
        if (pos >= kMaxDepth || (pos > 0 && testing::Uniform(walk, 6) == 0)) {
          // Half short rollbacks, half up to a little past max_rollback.
          size_t span = testing::Uniform(walk, 2) == 0 ? options.max_rollback + 8 : 3;
          size_t k = 1 + testing::Uniform(walk, std::min<size_t>(pos, span));
          bool ok = rec.Rollback(k);
          bool expected = !pruning || k <= limit;
          absl::StrAppend(&ops, " -", k);
          if (ok != expected) {
            log.Report(context, "walk" + ops + ", pruning " + (pruning ? "on" : "off") +
                                    ", max_rollback " + std::to_string(max_rollback) +
                                    ": Rollback(" + std::to_string(k) + ") at position " +
                                    std::to_string(pos) + " returned " + (ok ? "true" : "false"));
            break;
          }
          if (ok) {
            ++rollbacks;
            if (pruning) limit -= k;
            for (size_t i = 0; i < k; ++i) session.Pop();
          } else {
            ++refused_rollbacks;
          }
        } else {
          std::vector<bool> viable = session.ViableAfter(alphabet);
          std::vector<uint8_t> allowed;
          for (size_t k = 0; k < alphabet.size(); ++k) {
            if (viable[k]) allowed.push_back(alphabet[k]);
          }
          uint8_t b = allowed.empty() || testing::Uniform(walk, 8) == 0
                          ? alphabet[testing::Uniform(walk, alphabet.size())]
                          : allowed[testing::Uniform(walk, allowed.size())];
          session.Push(b);
          bool expected = session.IsViable();
          if (!expected) session.Pop();
          bool fed = rec.Feed(b);
          if (fed) limit = std::min<size_t>(limit + 1, options.max_rollback);
          absl::StrAppend(&ops, " ", testing::EscapeBytes(std::string(1, static_cast<char>(b))));
          if (fed != expected) {
            log.Report(context, "walk" + ops + ", pruning " + (pruning ? "on" : "off") +
                                    ": Feed = " + (fed ? "true" : "false"));
            break;
          }
        }
        deepest = std::max(deepest, session.size());
        // Compare the states: position, acceptance, next bytes (all 256 now and then).
        const std::vector<uint8_t>& probes = step % 32 == 0 ? all_bytes : alphabet;
        std::vector<bool> viable = session.ViableAfter(probes);
        ByteSet expected_next, mask;
        for (size_t k = 0; k < probes.size(); ++k) {
          mask.set(probes[k]);
          if (viable[k]) expected_next.set(probes[k]);
        }
        ByteSet got = rec.NextBytes() & mask;
        const size_t expected_limit = pruning ? limit : session.size();
        if (rec.RollbackLimit() != expected_limit) {
          log.Report(context, "walk" + ops + ", pruning " + (pruning ? "on" : "off") +
                                  ", max_rollback " + std::to_string(max_rollback) +
                                  ": RollbackLimit() = " + std::to_string(rec.RollbackLimit()) +
                                  ", expected " + std::to_string(expected_limit));
          break;
        }
        if (rec.Position() != session.size() || rec.IsAccepting() != session.IsAccepting() ||
            got != expected_next || !rec.status().ok()) {
          log.Report(context, "walk" + ops + ", pruning " + (pruning ? "on" : "off") + ": at \"" +
                                  testing::EscapeBytes(session.input()) + "\" engine position " +
                                  std::to_string(rec.Position()) + ", accepting " +
                                  (rec.IsAccepting() ? "yes" : "no") + " (oracle " +
                                  (session.IsAccepting() ? "yes" : "no") +
                                  "), next bytes engine only " +
                                  BytesToString(got & ~expected_next) + ", oracle only " +
                                  BytesToString(expected_next & ~got) + ", status " +
                                  rec.status().ToString());
          break;
        }
      }
    }
  }
  std::printf(
      "[differential] random walks: %d grammars x %d steps, pruning on and off: %llu "
      "steps, %llu rollbacks, %llu refused beyond the limit, deepest input %zu bytes; "
      "%d mismatches\n",
      kGrammars, kSteps, static_cast<unsigned long long>(steps),
      static_cast<unsigned long long>(rollbacks),
      static_cast<unsigned long long>(refused_rollbacks), deepest, log.count());
  EXPECT_EQ(log.count(), 0);
}

// ---------------------------------------------------------------------------
// Real grammars on mutated documents.

struct RealCase {
  std::string name;  // "builtin:json" or a path under the data folder
  std::vector<std::string> docs;
  std::vector<std::string> doc_names;
  std::string new_bytes;  // bytes mutations insert (besides the document's own)
  bool originals_valid;   // the oracle must accept every unmutated document
};

absl::StatusOr<grammar::Grammar> LoadRealGrammar(const std::string& name) {
  if (name == "builtin:json") {
    return grammar::ReadGbnf(grammar::BuiltinGrammarText("json"), "<builtin:json>");
  }
  std::string path = testing::DataPath(name);
  return grammar::ReadGbnf(testing::ReadFileOrDie(path), path);
}

// JSON documents under 2 KB from the shared data, spread evenly over the sorted list.
void AddJsonDocs(RealCase& c, size_t want) {
  std::vector<std::string> small;
  for (const std::string& path : testing::ListFiles(testing::DataPath("docs/json"), ".json")) {
    std::string text = testing::ReadFileOrDie(path);
    if (text.size() < 2048) small.push_back(path);
  }
  ASSERT_GE(small.size(), want);
  for (size_t k = 0; k < want; ++k) {
    const std::string& path = small[k * small.size() / want];
    c.docs.push_back(testing::ReadFileOrDie(path));
    c.doc_names.push_back(path);
  }
  const char* kHandwritten[] = {
      "{}", "{\"a\": [1, -2.5e+3, true, false, null], \"b\": {\"c\": \"\\u00e9\\n\"}}",
      "{\"k\":\"caf\xC3\xA9\",\"n\":[[],[{}]]}", "[0, 1e5, \"x\"]"};
  for (const char* doc : kHandwritten) {
    c.docs.push_back(doc);
    c.doc_names.push_back("<handwritten>");
  }
}

TEST(Differential, RealGrammarsOnMutatedDocuments) {
  const size_t kJsonDocs = static_cast<size_t>(2 * kScale);
  const int kMutations = 50;
  const std::string json_bytes = "{}[],:\" \n\t\\0123456789.-+eEtrufalsn\xC3\xA9";
  std::vector<RealCase> cases;
  {
    RealCase c{"builtin:json", {}, {}, json_bytes, true};
    AddJsonDocs(c, kJsonDocs);
    cases.push_back(std::move(c));
  }
  {
    RealCase c{"grammars/gbnf/llama.cpp/json.gbnf", {}, {}, json_bytes, false};
    AddJsonDocs(c, kJsonDocs / 2);
    cases.push_back(std::move(c));
  }
  cases.push_back({"grammars/gbnf/llama.cpp/arithmetic.gbnf",
                   {"x = 1\n", "(a+b)*c= 42\n", "foo_1 +2 *(bar -3)=baz\n1+1=2\n", "((1))=( 2 )\n"},
                   {"<handwritten>", "<handwritten>", "<handwritten>", "<handwritten>"},
                   "()+-*/= \t\n0123456789abcxyz_",
                   true});
  cases.push_back({"grammars/gbnf/llama.cpp/chess.gbnf",
                   {"1. e4 e5\n2. Nf3 Nc6\n3. Bb5 a6\n",
                    "1. d4 d5\n2. c4 dxc4\n3. O-O-O Qxd8+\n4. e8=Q# Kxf7\n"},
                   {"<handwritten>", "<handwritten>"},
                   "12345678. \nabcdefghNBKQRxO-=+#",
                   true});
  cases.push_back({"grammars/gbnf/llama.cpp/list.gbnf",
                   {"- milk\n- eggs\n- bread \xC3\xA9t\xC3\xA9\n", "- one\n"},
                   {"<handwritten>", "<handwritten>"},
                   "- \n\r\x0b\xC2\x85\xE2\x80\xA8\xC3\xA9"
                   "ab",
                   true});

  std::mt19937_64 rng(0x2A9F'0002'D0C5ull);
  MismatchLog log;
  uint64_t compared = 0, rejected = 0, bytes = 0;
  for (const RealCase& c : cases) {
    absl::StatusOr<grammar::Grammar> g = LoadRealGrammar(c.name);
    ASSERT_TRUE(g.ok()) << c.name << ": " << g.status();
    ReferenceRecognizer ref(*g);
    absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(*g);
    ASSERT_TRUE(flat.ok()) << c.name << ": " << flat.status();
    for (size_t d = 0; d < c.docs.size(); ++d) {
      for (int m = 0; m <= kMutations; ++m) {
        testing::Mutation mutation;
        std::string doc = c.docs[d];
        if (m > 0) {
          doc = testing::MutateDocument(c.docs[d], rng, testing::Uniform(rng, 2) ? c.new_bytes : "",
                                        &mutation);
        }
        // The oracle: longest viable prefix, and acceptance when all is viable.
        ReferenceRecognizer::Session session(&ref);
        size_t viable = 0;
        while (viable < doc.size()) {
          session.Push(static_cast<uint8_t>(doc[viable]));
          if (!session.IsViable()) break;
          ++viable;
        }
        bool accepted = viable == doc.size() && session.IsAccepting();
        if (m == 0 && c.originals_valid) {
          EXPECT_TRUE(accepted) << c.name << " rejects " << c.doc_names[d] << " at byte " << viable
                                << " (oracle)";
        }
        ++compared;
        bytes += doc.size();
        rejected += !accepted;
        for (bool pruning : {true, false}) {
          RecognizerOptions options;
          options.pruning = pruning;
          parser::Recognizer rec = pruning::MakeRecognizer(&*flat, options);
          size_t fed = rec.FeedBytes(doc);
          bool engine_accepted = fed == doc.size() && rec.IsAccepting();
          if (fed != viable || engine_accepted != accepted || !rec.status().ok()) {
            log.Report(std::string("grammar ") + c.name + ", document " + c.doc_names[d] +
                           (m > 0 ? ", mutation " + mutation.Describe() : ", unmutated") +
                           "\ninput: \"" + testing::EscapeBytes(doc) + "\"",
                       std::string("pruning ") + (pruning ? "on" : "off") + ": engine fed " +
                           std::to_string(fed) + " bytes, accepted " +
                           (engine_accepted ? "yes" : "no") + ", status " +
                           rec.status().ToString() + "; oracle: viable prefix " +
                           std::to_string(viable) + ", accepted " + (accepted ? "yes" : "no"));
          }
        }
      }
    }
  }
  std::printf(
      "[differential] real grammars: %zu grammars, %llu documents (originals + %d "
      "mutations each, %llu bytes, %llu rejected) compared with pruning on and off; %d "
      "mismatches\n",
      cases.size(), static_cast<unsigned long long>(compared), kMutations,
      static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(rejected),
      log.count());
  EXPECT_EQ(log.count(), 0);
}

}  // namespace
}  // namespace zapgram
