// Tests of the lowering of counted repetition `X{m,n}` (parser/flat_grammar.cc,
// Lowering::DefineRepeat): small counts unroll, large ones use the binary
// (logarithmic) forms.
//
// 1. Size: `x{0,100000}`, `x{100000}`, `x{m,}` with large m... lower to a few
//    hundred productions at most, and doubling n adds a constant.
// 2. Language against the textbook recognizer (tests/support/
//    reference_recognizer.h, which expands x{m,n} to one production per
//    count): bodies that are a literal, a class, a choice that is not
//    prefix-free ("a" | "ab"), a nullable body and a recursive rule, for
//    (m, n) around 0, 1, 2^k - 1, 2^k, 2^k + 1 and unbounded; the engine and
//    the oracle agree at every prefix of guided and random strings on Feed,
//    IsAccepting and NextBytes.
// 3. Language for large counts, against arithmetic oracles: ("ab"){m,n},
//    [a-c]{m,n} and the ambiguous ("a" | "aa"){m,n}, on strings whose
//    lengths sit at the boundaries m - 1, m, m + 1, n - 1, n, n + 1 (and with
//    one corrupted byte), checked at every prefix.
// 4. Cost: items per Earley set (the recognizer's max_items_per_set budget,
//    probed by bisection), items retained by the pruned chart, productions
//    and rhs symbols, printed for the cases quoted in the lowering's essay;
//    the per-set items must stay logarithmic.
// Sizes shrink under sanitizers (ZAPGRAM_SANITIZED).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grammar/gbnf_reader.h"
#include "grammar/grammar.h"
#include "gtest/gtest.h"
#include "parser/flat_grammar.h"
#include "parser/recognizer.h"
#include "pruning/compact.h"
#include "tests/support/random_grammar.h"
#include "tests/support/reference_recognizer.h"
#include "tests/support/test_scale.h"

namespace zapgram::parser {
namespace {

constexpr uint32_t kScale = testing::Scaled(4u, 1u);

using grammar::Grammar;
using grammar::kUnbounded;

std::string Bounds(uint32_t m, uint32_t n) {
  if (n == kUnbounded) return absl::StrCat("{", m, ",}");
  return absl::StrCat("{", m, ",", n, "}");
}

Grammar ReadOrDie(const std::string& text) {
  absl::StatusOr<Grammar> g = grammar::ReadGbnf(text, "<test>");
  EXPECT_TRUE(g.ok()) << g.status() << "\n" << text;
  return g.ok() ? *std::move(g) : Grammar();
}

FlatGrammar LowerOrDie(const Grammar& g) {
  absl::StatusOr<FlatGrammar> flat = BuildFlatGrammar(g);
  EXPECT_TRUE(flat.ok()) << flat.status();
  return flat.ok() ? *std::move(flat) : FlatGrammar();
}

// root ::= x{m,n} built with the IR builders (bounds past the GBNF reader's cap).
Grammar CountedLiteral(std::string x, uint32_t m, uint32_t n) {
  Grammar g;
  g.source_name = "<counted>";
  g.rules.push_back({"root", 0, {}});
  g.rules[0].body = g.AddRepeat(g.AddLiteral(std::move(x)), m, n);
  return g;
}

// ------------------------------------------------------------------------ size

TEST(RepetitionSize, LargeBoundsLowerToLogarithmicGrammars) {
  struct Case {
    uint32_t m, n;
  };
  const Case cases[] = {{0, 100000},   {100000, 100000}, {3, 100000},       {99999, 100000},
                        {100000, kUnbounded}, {0, 1000000000}, {999999999, 1000000000},
                        {0, 4294967294u}, {4294967294u, 4294967294u}};
  for (const Case& c : cases) {
    FlatGrammar flat = LowerOrDie(CountedLiteral("x", c.m, c.n));
    std::printf("[size] x%-26s %4u productions, %5zu rhs entries\n", Bounds(c.m, c.n).c_str(),
                flat.num_productions(), flat.rhs.size());
    EXPECT_LE(flat.num_productions(), 300u) << Bounds(c.m, c.n);
    EXPECT_LE(flat.rhs.size(), 1000u) << Bounds(c.m, c.n);
  }
  // Doubling n adds a bounded number of productions (one more binary digit).
  for (uint32_t n = 1024; n < (1u << 30); n *= 2) {
    FlatGrammar a = LowerOrDie(CountedLiteral("x", 0, n - 1));
    FlatGrammar b = LowerOrDie(CountedLiteral("x", 0, 2 * n - 1));
    EXPECT_LE(b.num_productions(), a.num_productions() + 4) << n;
  }
}

TEST(RepetitionSize, SmallBoundsStillUnroll) {
  // x{2,5}: two copies, then the chain of three optionals (goldens elsewhere rely on it).
  FlatGrammar flat = LowerOrDie(CountedLiteral("x", 2, 5));
  EXPECT_EQ(DumpFlatGrammar(flat),
            "root -> \"x\" \"x\" root#opt3\n"
            "root#opt1 -> \"x\"    (nullable)\n"
            "root#opt1 ->    (nullable)\n"
            "root#opt2 -> \"x\" root#opt1    (nullable)\n"
            "root#opt2 ->    (nullable)\n"
            "root#opt3 -> \"x\" root#opt2    (nullable)\n"
            "root#opt3 ->    (nullable)\n"
            "<start> -> root\n"
            "terminals: 1, states: 3, byte classes: 2\n");
}

TEST(RepetitionSize, BinaryFormGolden) {
  // x{0,20}: 20 = 10100b. E_k = x{2^k}; F_i = x{0,2^i-1}; the top splits on bit 4.
  FlatGrammar flat = LowerOrDie(CountedLiteral("x", 0, 20));
  EXPECT_EQ(DumpFlatGrammar(flat),
            "root -> root#{16} root#{0,4}    (nullable)\n"
            "root -> root#{0,15}    (nullable)\n"
            "root#{2} -> \"x\" \"x\"\n"
            "root#{4} -> root#{2} root#{2}\n"
            "root#{0,1} -> \"x\"    (nullable)\n"
            "root#{0,1} ->    (nullable)\n"
            "root#{0,3} -> root#{2} root#{0,1}    (nullable)\n"
            "root#{0,3} -> root#{0,1}    (nullable)\n"
            "root#{0,4} -> root#{4}    (nullable)\n"
            "root#{0,4} -> root#{0,3}    (nullable)\n"
            "root#{8} -> root#{4} root#{4}\n"
            "root#{16} -> root#{8} root#{8}\n"
            "root#{0,7} -> root#{4} root#{0,3}    (nullable)\n"
            "root#{0,7} -> root#{0,3}    (nullable)\n"
            "root#{0,15} -> root#{8} root#{0,7}    (nullable)\n"
            "root#{0,15} -> root#{0,7}    (nullable)\n"
            "<start> -> root    (nullable)\n"
            "terminals: 1, states: 3, byte classes: 2\n");
}

// ------------------------------------------------- language: reference oracle

using testing::ReferenceRecognizer;

// The engine on `flat` and the oracle along `input`: "" or what differs.
std::string CompareWithReference(const FlatGrammar& flat, const ReferenceRecognizer& ref,
                                 const std::string& input) {
  const std::vector<uint8_t>& alphabet = testing::AlphabetBytes();
  Recognizer rec = pruning::MakeRecognizer(&flat);
  ReferenceRecognizer::Session session(&ref);
  for (size_t i = 0;; ++i) {
    std::string where =
        absl::StrCat("input \"", testing::EscapeBytes(input), "\" after ", i, " bytes: ");
    if (rec.IsAccepting() != session.IsAccepting()) {
      return where + absl::StrCat("IsAccepting: engine ", rec.IsAccepting(), ", oracle ",
                                  session.IsAccepting());
    }
    std::vector<bool> viable = session.ViableAfter(alphabet);
    ByteSet next = rec.NextBytes();
    for (size_t k = 0; k < alphabet.size(); ++k) {
      if (next.test(alphabet[k]) != viable[k]) {
        return where + absl::StrCat("NextBytes differ on byte ", static_cast<int>(alphabet[k]));
      }
    }
    if (i == input.size()) return "";
    const uint8_t byte = static_cast<uint8_t>(input[i]);
    const bool fed = rec.Feed(byte);
    if (!rec.status().ok()) return where + rec.status().ToString();
    session.Push(byte);
    if (fed != session.IsViable()) return where + absl::StrCat("Feed = ", fed);
    if (!fed) return "";
  }
}

TEST(RepetitionLanguage, AgreesWithTheReferenceAroundPowersOfTwo) {
  // Bodies, written as GBNF with `X` standing for the repeated item.
  const std::vector<std::string> bodies = {
      "root ::= \"ab\"X\n",
      "root ::= [a-b]X\n",
      "root ::= (\"a\" | \"ab\")X\n",          // not prefix-free: counts are ambiguous
      "root ::= (\"a\" \"b\"? | \"c\")X\n",
      "root ::= (\"a\"?)X\n",                  // nullable body
      "root ::= pair X\npair ::= \"a\" pair? \"b\" | \"c\"\n",  // a recursive rule
      "root ::= \"c\" (\"a\" | [b-c])X \"b\"\n",
  };
  std::vector<std::pair<uint32_t, uint32_t>> bounds;
  const uint32_t counts[] = {0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33};
  for (uint32_t m : counts) {
    for (uint32_t n : {m, m + 1, 16u, 17u, 31u, 32u, 33u, 63u, 64u, 65u, kUnbounded}) {
      if (n >= m && (n <= 17 + m || n == kUnbounded || m <= 3 || (m >= 15 && n <= 2 * m + 3))) {
        bounds.push_back({m, n});
      }
    }
  }
  bounds.push_back({40, 47});
  bounds.push_back({17, 100});
  std::mt19937_64 rng(0x7A4F'0003'0005ull);
  uint64_t grammars = 0, strings = 0, sentences = 0;
  for (const std::string& body : bodies) {
    for (auto [m, n] : bounds) {
      std::string text = body;
      text.replace(text.find('X'), 1, Bounds(m, n));
      Grammar g = ReadOrDie(text);
      absl::StatusOr<FlatGrammar> flat = BuildFlatGrammar(g);
      ASSERT_TRUE(flat.ok()) << text << flat.status();
      ReferenceRecognizer ref(g);
      ++grammars;
      const size_t max_length = std::min<size_t>(n == kUnbounded ? 2 * m + 12 : 2 * n + 6, 140);
      const int samples = static_cast<int>(2 * kScale);
      for (int s = 0; s < samples; ++s) {
        std::string input = s % 4 == 3 ? testing::RandomString(rng, max_length)
                                       : testing::GuidedString(ref, rng, max_length);
        ++strings;
        sentences += ref.Accepts(input);
        std::string diff = CompareWithReference(*flat, ref, input);
        ASSERT_EQ(diff, "") << text;
      }
    }
  }
  std::printf("[reference] %llu grammars, %llu strings (%llu sentences): engine = oracle at every "
              "prefix\n",
              static_cast<unsigned long long>(grammars), static_cast<unsigned long long>(strings),
              static_cast<unsigned long long>(sentences));
}

// ------------------------------------------------ language: arithmetic oracles

// A language X{m,n} decided by counting; `viable` and `accepting` judge a prefix.
struct CountedLanguage {
  std::string name;
  std::string body;  // GBNF of X
  std::function<bool(std::string_view)> viable;
  std::function<bool(std::string_view)> accepting;
  std::function<std::string(uint64_t)> sentence;  // a string of X^count
};

std::vector<CountedLanguage> Languages(uint32_t m, uint32_t n) {
  const uint64_t max = n == kUnbounded ? ~uint64_t{0} : n;
  std::vector<CountedLanguage> out;
  // ("ab"){m,n}: a prefix of (ab)^n.
  out.push_back({"(\"ab\")", "(\"ab\")",
                 [=](std::string_view s) {
                   for (size_t i = 0; i < s.size(); ++i) {
                     if (s[i] != (i % 2 ? 'b' : 'a')) return false;
                   }
                   return (s.size() + 1) / 2 <= max;
                 },
                 [=](std::string_view s) {
                   for (size_t i = 0; i < s.size(); ++i) {
                     if (s[i] != (i % 2 ? 'b' : 'a')) return false;
                   }
                   return s.size() % 2 == 0 && s.size() / 2 >= m && s.size() / 2 <= max;
                 },
                 [](uint64_t c) {
                   std::string s;
                   for (uint64_t i = 0; i < c; ++i) s += "ab";
                   return s;
                 }});
  // [a-c]{m,n}: any letter of the class, up to n of them.
  auto all_in_class = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char ch) { return ch >= 'a' && ch <= 'c'; });
  };
  out.push_back({"[a-c]", "[a-c]",
                 [=](std::string_view s) { return all_in_class(s) && s.size() <= max; },
                 [=](std::string_view s) {
                   return all_in_class(s) && s.size() >= m && s.size() <= max;
                 },
                 [](uint64_t c) {
                   std::string s;
                   for (uint64_t i = 0; i < c; ++i) s += static_cast<char>('a' + i * 7 % 3);
                   return s;
                 }});
  // ("a" | "aa"){m,n}: a^L is X^c exactly for ceil(L/2) <= c <= L.
  auto all_a = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char ch) { return ch == 'a'; });
  };
  out.push_back({"(\"a\"|\"aa\")", "(\"a\" | \"aa\")",
                 [=](std::string_view s) { return all_a(s) && (s.size() + 1) / 2 <= max; },
                 [=](std::string_view s) {
                   return all_a(s) && (s.size() + 1) / 2 <= max && s.size() >= m;
                 },
                 [](uint64_t c) { return std::string(c, 'a'); }});
  return out;
}

// Feeds `input`, checking every prefix; "" or what differs.
std::string CompareWithCounting(const FlatGrammar& flat, const CountedLanguage& lang,
                                const std::string& input) {
  Recognizer rec = pruning::MakeRecognizer(&flat);
  const std::string probe = "abcd";
  for (size_t i = 0;; ++i) {
    std::string_view prefix(input.data(), i);
    auto where = [&] { return absl::StrCat(lang.name, " after ", i, " bytes: "); };
    if (rec.IsAccepting() != lang.accepting(prefix)) {
      return where() + absl::StrCat("IsAccepting: engine ", rec.IsAccepting());
    }
    ByteSet next = rec.NextBytes();
    for (char b : probe) {
      std::string extended = std::string(prefix) + b;
      if (next.test(static_cast<uint8_t>(b)) != lang.viable(extended)) {
        return where() + absl::StrCat("NextBytes differ on '", std::string(1, b), "'");
      }
    }
    if (i == input.size()) return "";
    const bool fed = rec.Feed(static_cast<uint8_t>(input[i]));
    if (!rec.status().ok()) return where() + rec.status().ToString();
    if (fed != lang.viable(std::string_view(input.data(), i + 1))) {
      return where() + absl::StrCat("Feed = ", fed);
    }
    if (!fed) return "";
  }
}

TEST(RepetitionLanguage, LargeCountsAgreeWithCounting) {
  struct Case {
    uint32_t m, n;
  };
  const std::vector<Case> cases = {
      {0, 17},    {0, 31},     {0, 32},    {0, 33},      {1, 100},   {17, 17},   {33, 33},
      {64, 64},   {100, 1000}, {0, 1023},  {0, 1024},    {0, 1025},  {1000, 1000},
      {1000, kUnbounded},      {17, kUnbounded},         {5, 4999},  {4097, 4097},
      {20, 36},   {3, 700},    {1000 * kScale, 1000 * kScale + 20}, {0, 5000 * kScale},
  };
  std::mt19937_64 rng(0x7A4F'0003'0006ull);
  uint64_t strings = 0, bytes = 0;
  for (const Case& c : cases) {
    for (const CountedLanguage& lang : Languages(c.m, c.n)) {
      // ("a" | "aa"): about c live counts after 2c bytes, so items per set grow
      // with the input whatever the lowering (ItemsPerSetStayLogarithmic).
      const uint64_t top = c.n == kUnbounded ? uint64_t{c.m} + 40 : c.n;
      if (lang.name == "(\"a\"|\"aa\")" && top > 300) continue;
      Grammar g = ReadOrDie(absl::StrCat("root ::= ", lang.body, Bounds(c.m, c.n), "\n"));
      FlatGrammar flat = LowerOrDie(g);
      std::vector<uint64_t> counts = {0, 1, 2, top + 1, top, top - 1, c.m, c.m + 1};
      if (c.m > 0) counts.push_back(c.m - 1);
      counts.push_back(c.m + testing::Uniform(rng, top - c.m + 2));
      for (uint64_t count : counts) {
        std::string input = lang.sentence(count);
        for (int corrupt = 0; corrupt < 2; ++corrupt) {
          if (corrupt == 1) {
            if (input.empty()) break;
            input[testing::Uniform(rng, input.size())] = "bcd"[testing::Uniform(rng, 3)];
          }
          ++strings;
          bytes += input.size();
          std::string diff = CompareWithCounting(flat, lang, input);
          ASSERT_EQ(diff, "") << "root ::= " << lang.body << Bounds(c.m, c.n) << ", count "
                              << count << (corrupt ? " (corrupted)" : "");
        }
      }
    }
  }
  std::printf("[counting] %zu bounds x 3 bodies, %llu strings, %llu bytes: engine = counting "
              "oracle at every prefix\n",
              cases.size(), static_cast<unsigned long long>(strings),
              static_cast<unsigned long long>(bytes));
}

// ------------------------------------------------------------------------ cost

struct Cost {
  uint32_t productions = 0;
  size_t rhs = 0;
  uint32_t max_items_per_set = 0;  // smallest budget that accepts the whole input
  size_t max_retained = 0;         // pruned chart, largest over the input
  double ns_per_byte = 0;
  bool accepted = false;
};

bool FeedsWithBudget(const FlatGrammar& flat, const std::string& input, uint32_t budget) {
  RecognizerOptions options;
  options.limits.max_items_per_set = budget;
  Recognizer rec = pruning::MakeRecognizer(&flat, options);
  return rec.status().ok() && rec.FeedBytes(input) == input.size() && rec.status().ok();
}

Cost Measure(const Grammar& g, const std::string& input) {
  Cost cost;
  FlatGrammar flat = LowerOrDie(g);
  cost.productions = flat.num_productions();
  cost.rhs = flat.rhs.size();
  Recognizer rec = pruning::MakeRecognizer(&flat);
  auto start = std::chrono::steady_clock::now();
  for (char ch : input) {
    if (!rec.Feed(static_cast<uint8_t>(ch))) break;
    cost.max_retained = std::max(cost.max_retained, rec.RetainedItems());
  }
  auto end = std::chrono::steady_clock::now();
  cost.accepted = rec.Position() == input.size() && rec.IsAccepting();
  cost.ns_per_byte = std::chrono::duration<double, std::nano>(end - start).count() /
                     static_cast<double>(std::max<size_t>(input.size(), 1));
  uint32_t lo = 1, hi = 1u << 20;  // lo fails or is untested; hi succeeds
  if (!FeedsWithBudget(flat, input, hi)) return cost;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (FeedsWithBudget(flat, input, mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  cost.max_items_per_set = hi;
  return cost;
}

TEST(RepetitionCost, ItemsPerSetStayLogarithmic) {
  struct Case {
    std::string grammar;
    std::string input;
    uint32_t max_items;  // bound asserted on items per set
  };
  auto repeat = [](std::string_view s, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out += s;
    return out;
  };
  std::string letters;
  for (size_t i = 0; i < 1000; ++i) letters += static_cast<char>('a' + i * 7 % 26);
  const std::vector<Case> cases = {
      {"root ::= [a-z]{0,1000}\n", letters, 60},
      {"root ::= [a-z]{0,1000}\n", letters.substr(0, 517), 60},
      {"root ::= (\"ab\"){3,700}\n", repeat("ab", 700), 60},
      {"root ::= (\"ab\"){3,700}\n", repeat("ab", 333), 60},
      {"root ::= [a-z]{1000}\n", letters, 60},
      {"root ::= [a-z]{1000,}\n", letters + letters, 60},
      {"root ::= (\"a\" | \"aa\"){0,300}\n", std::string(300, 'a'), 4000},
      {"root ::= [a-z]{0,100000}\n", repeat(letters, 100), 100},
  };
  for (const Case& c : cases) {
    Grammar g = ReadOrDie(c.grammar);
    Cost cost = Measure(g, c.input);
    std::string name = c.grammar.substr(8, c.grammar.size() - 9);
    std::printf("[cost] %-26s on %6zu bytes: %4u productions, %5zu rhs, max %4u items/set, "
                "max %4zu retained, %7.0f ns/byte\n",
                name.c_str(), c.input.size(), cost.productions, cost.rhs, cost.max_items_per_set,
                cost.max_retained, cost.ns_per_byte);
    EXPECT_TRUE(cost.accepted) << name;
    EXPECT_LE(cost.max_items_per_set, c.max_items) << name;
  }
}

}  // namespace
}  // namespace zapgram::parser
