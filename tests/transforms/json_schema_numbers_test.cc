// AddNumber against exact decimal arithmetic.
//
// Random bounds (small, large, negative, decimal, with exponents, exclusive
// and inclusive, integer or number type, with or without multipleOf); for
// each, numbers near the bounds (the bound itself, one unit of its last
// digit either way, finer and coarser steps, other spellings of the same
// value), near multiples, and at random, plus malformed texts. The grammar's
// verdict (compiled through the whole pipeline) must equal the verdict of the
// oracle below: a digit-string decimal comparison written here, under the
// output syntax AddNumber documents (digit-only integers; the full syntax
// only for a sign whose magnitudes are unconstrained, else fixed-point).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "re2/re2.h"
#include "tests/support/ir_compile.h"
#include "transforms/json_schema_formats.h"

namespace zapgram::transforms {
namespace {

// ---------------------------------------------------------------------------
// The oracle: a decimal as sign, digit string and exponent.

struct Dec {
  bool neg = false;
  std::string digits;  // leading zeros stripped; "" = zero
  long exp = 0;
};

const RE2& JsonNumber() {
  static const RE2 re("(-?)(0|[1-9][0-9]*)(?:\\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?");
  return re;
}

std::optional<Dec> ParseNumber(const std::string& text) {
  std::string sign, int_part, frac, exp;
  if (!RE2::FullMatch(text, JsonNumber(), &sign, &int_part, &frac, &exp)) return std::nullopt;
  Dec d;
  d.digits = int_part + frac;
  d.exp = (exp.empty() ? 0 : std::stol(exp)) - static_cast<long>(frac.size());
  size_t first = d.digits.find_first_not_of('0');
  d.digits = first == std::string::npos ? "" : d.digits.substr(first);
  d.neg = sign == "-" && !d.digits.empty();
  return d;
}

// Magnitudes compared by writing both with the smaller exponent.
int CompareAbs(const Dec& a, const Dec& b) {
  long e = std::min(a.exp, b.exp);
  std::string x = a.digits + std::string(a.digits.empty() ? 0 : a.exp - e, '0');
  std::string y = b.digits + std::string(b.digits.empty() ? 0 : b.exp - e, '0');
  if (x.size() != y.size()) return x.size() < y.size() ? -1 : 1;
  return x.compare(y) < 0 ? -1 : (x == y ? 0 : 1);
}

int Cmp(const Dec& a, const Dec& b) {
  int sa = a.digits.empty() ? 0 : (a.neg ? -1 : 1);
  int sb = b.digits.empty() ? 0 : (b.neg ? -1 : 1);
  if (sa != sb) return sa < sb ? -1 : 1;
  int c = CompareAbs(a, b);
  return sa < 0 ? -c : c;
}

bool IsIntegerValue(const Dec& d) {
  if (d.exp >= 0 || d.digits.empty()) return true;
  size_t k = static_cast<size_t>(-d.exp);
  if (k > d.digits.size()) return false;  // digits nonzero
  return d.digits.find_first_not_of('0', d.digits.size() - k) == std::string::npos;
}

// x / m is an integer (m > 0 with a digit string below 2^63).
bool IsMultiple(const Dec& x, const Dec& m) {
  if (x.digits.empty()) return true;
  uint64_t mm = std::stoull(m.digits);
  auto mod = [&](const std::string& digits, long zeros) {
    uint64_t r = 0;
    for (char c : digits) r = (r * 10 + static_cast<uint64_t>(c - '0')) % mm;
    for (long i = 0; i < zeros; ++i) r = r * 10 % mm;
    return r;
  };
  if (x.exp >= m.exp) return mod(x.digits, x.exp - m.exp) == 0;
  // x = X * 10^ex, m = M * 10^em with em > ex: X must end in t zeros and
  // X / 10^t must be a multiple of M.
  size_t t = static_cast<size_t>(m.exp - x.exp);
  if (t > x.digits.size()) return false;
  if (x.digits.find_first_not_of('0', x.digits.size() - t) != std::string::npos) return false;
  return mod(x.digits.substr(0, x.digits.size() - t), 0) == 0;
}

struct Constraints {
  bool integer = false;
  std::optional<std::string> min, max, xmin, xmax, mult;
};

std::string Describe(const Constraints& c) {
  std::string s = c.integer ? "integer" : "number";
  auto add = [&](const char* k, const std::optional<std::string>& v) {
    if (v) s += std::string(" ") + k + "=" + *v;
  };
  add("minimum", c.min);
  add("maximum", c.max);
  add("exclusiveMinimum", c.xmin);
  add("exclusiveMaximum", c.xmax);
  add("multipleOf", c.mult);
  return s;
}

struct Verdict {
  bool semantic = false;  // JSON Schema says valid
  bool expected = false;  // ... and the documented output syntax allows it
};

Verdict Oracle(const Constraints& c, const std::string& text) {
  Verdict v;
  std::optional<Dec> x = ParseNumber(text);
  if (!x) return v;
  auto bound = [](const std::optional<std::string>& s) { return s ? ParseNumber(*s) : std::nullopt; };
  std::optional<Dec> mn = bound(c.min), mx = bound(c.max), xmn = bound(c.xmin), xmx = bound(c.xmax);
  bool ok = true;
  if (mn && Cmp(*x, *mn) < 0) ok = false;
  if (mx && Cmp(*x, *mx) > 0) ok = false;
  if (xmn && Cmp(*x, *xmn) <= 0) ok = false;
  if (xmx && Cmp(*x, *xmx) >= 0) ok = false;
  if (c.integer && !IsIntegerValue(*x)) ok = false;
  if (c.mult && !IsMultiple(*x, *ParseNumber(*c.mult))) ok = false;
  v.semantic = ok;
  // Output syntax.
  bool has_exponent = text.find_first_of("eE") != std::string::npos;
  bool has_point = text.find('.') != std::string::npos;
  bool syntax = true;
  if (c.integer) {
    syntax = !has_exponent && !has_point;
  } else if (has_exponent) {
    // Allowed only without multipleOf, for a sign whose magnitudes are all
    // of [0, inf), all of (0, inf), or exactly {0}.
    const bool negative = text[0] == '-';
    // Magnitude lower side comes from the bound on the same side of zero.
    auto sign_bound = [&](bool lower_of_magnitude) -> std::pair<std::optional<Dec>, bool> {
      // For positive texts: lower = min/xmin, upper = max/xmax; negative: swapped and negated.
      bool use_lower_value_bound = negative ? !lower_of_magnitude : lower_of_magnitude;
      std::optional<Dec> inclusive = use_lower_value_bound ? mn : mx;
      std::optional<Dec> exclusive = use_lower_value_bound ? xmn : xmx;
      // The tighter bound on the value side.
      std::optional<Dec> best;
      bool strict = false;
      auto consider = [&](const std::optional<Dec>& b, bool s) {
        if (!b) return;
        int cmp = best ? Cmp(*b, *best) : 0;
        bool tighter = !best || (use_lower_value_bound ? cmp > 0 : cmp < 0);
        if (tighter) {
          best = b;
          strict = s;
        } else if (cmp == 0 && s) {
          strict = true;
        }
      };
      consider(inclusive, false);
      consider(exclusive, true);
      if (best && negative) best->neg = !best->neg && !best->digits.empty();
      return {best, strict};
    };
    auto [lo, lo_strict] = sign_bound(true);
    auto [hi, hi_strict] = sign_bound(false);
    bool lo_nonneg_free = !lo || lo->neg || (lo->digits.empty() && !lo_strict);
    bool lo_positive = lo && lo->digits.empty() && lo_strict;
    bool full = false;
    if (!hi) full = lo_nonneg_free || lo_positive;
    if (hi && hi->digits.empty() && !hi_strict && lo_nonneg_free) full = true;
    // The two shapes kept in bounded ranges (see json_schema_numbers.cc).
    std::string magnitude = negative ? text.substr(1) : text;
    static const RE2 small_shape("[0-9](?:\\.[0-9]+)?[eE]-0*[1-9][0-9]*");
    static const RE2 large_shape("[1-9](?:\\.[0-9]+)?[eE]\\+?([0-9]+)");
    Dec one;
    one.digits = "1";
    bool small = (lo_nonneg_free || lo_positive) && hi && Cmp(*hi, one) >= 0 &&
                 RE2::FullMatch(magnitude, small_shape);
    std::string exponent;
    bool large = false;
    if (!hi && lo && !lo->neg && !lo->digits.empty() &&
        RE2::FullMatch(magnitude, large_shape, &exponent)) {
      long int_digits = std::max(0L, static_cast<long>(lo->digits.size()) + lo->exp);
      size_t first = exponent.find_first_not_of('0');
      std::string k = first == std::string::npos ? "0" : exponent.substr(first);
      std::string n = std::to_string(int_digits);
      large = k.size() > n.size() || (k.size() == n.size() && k >= n);
    }
    syntax = (full || small || large) && !c.mult;
  }
  v.expected = v.semantic && syntax;
  return v;
}

// ---------------------------------------------------------------------------
// Candidates.

std::string Render(bool neg, const std::string& digits_in, long exp, int style, std::mt19937_64& rng) {
  std::string digits = digits_in.empty() ? "0" : digits_in;
  std::string sign = neg ? "-" : "";
  if (style == 1) {
    // Scientific: d.ddd e E.
    long e = exp + static_cast<long>(digits.size()) - 1;
    std::string m = digits.substr(0, 1);
    if (digits.size() > 1) m += "." + digits.substr(1);
    return sign + m + (rng() % 2 ? "e" : "E") + (rng() % 3 == 0 ? "+" : "") + std::to_string(e);
  }
  if (style == 2) return sign + digits + "e" + std::to_string(exp);
  // Fixed point, sometimes with extra trailing zeros.
  std::string s;
  if (exp >= 0) {
    s = digits + std::string(static_cast<size_t>(exp), '0');
    if (rng() % 4 == 0) s += ".0";
  } else {
    size_t k = static_cast<size_t>(-exp);
    if (digits.size() <= k) digits = std::string(k - digits.size() + 1, '0') + digits;
    s = digits.substr(0, digits.size() - k) + "." + digits.substr(digits.size() - k);
    if (rng() % 4 == 0) s += "00";
  }
  return sign + s;
}

// digits (no sign) plus or minus one unit of the last place.
std::string AddOne(std::string d, int delta) {
  if (d.empty()) d = "0";
  if (delta > 0) {
    size_t i = d.size();
    while (i > 0 && d[i - 1] == '9') d[--i] = '0';
    if (i == 0) return "1" + d;
    ++d[i - 1];
    return d;
  }
  if (d.find_first_not_of('0') == std::string::npos) return "";  // 0 - 1: skip
  size_t i = d.size();
  while (d[i - 1] == '0') d[--i] = '9';
  --d[i - 1];
  size_t first = d.find_first_not_of('0');
  return first == std::string::npos ? "" : d.substr(first);
}

std::vector<std::string> Candidates(const Constraints& c, std::mt19937_64& rng) {
  std::vector<std::string> out = {"0",  "-0", "0.0", "-0.0", "0e5", "-0E-2", "1",   "-1",
                                  "01", "-",  "1.",  ".5",   "+1",  "1e",    "--1", "",
                                  "00", "-01", "1e+", "1.5.5", "0x10", "1E400", "-1e-400"};
  auto near = [&](const Dec& b) {
    for (int i = 0; i < 14; ++i) {
      std::string digits = b.digits;
      long exp = b.exp;
      bool neg = rng() % 5 == 0 ? !b.neg : b.neg;
      switch (rng() % 6) {
        case 0: break;
        case 1: digits = AddOne(digits, +1); break;
        case 2: digits = AddOne(digits, -1); break;
        case 3: digits = (digits.empty() ? "0" : digits) + std::to_string(rng() % 10); --exp; break;
        case 4: digits = AddOne(digits + "0", rng() % 2 ? 1 : -1); --exp; break;
        default: exp += static_cast<long>(rng() % 3) - 1; break;
      }
      out.push_back(Render(neg, digits, exp, static_cast<int>(rng() % 4), rng));
    }
  };
  for (const auto* b : {&c.min, &c.max, &c.xmin, &c.xmax}) {
    if (*b) near(*ParseNumber(**b));
  }
  if (c.mult) {
    Dec m = *ParseNumber(*c.mult);
    uint64_t mm = std::stoull(m.digits);
    for (int i = 0; i < 30; ++i) {
      uint64_t k = rng() % 3 == 0 ? rng() % 10 : rng() % 100000;
      std::string digits = std::to_string(k * mm);
      if (rng() % 4 == 0) digits = AddOne(digits, rng() % 2 ? 1 : -1);
      out.push_back(Render(rng() % 2, digits, m.exp, static_cast<int>(rng() % 4), rng));
    }
    // Near the bounds, multiples too.
  }
  for (int i = 0; i < 60; ++i) {
    std::string digits = std::to_string(rng() % (rng() % 2 ? 100 : 10000000));
    long exp = -static_cast<long>(rng() % 5) + (rng() % 4 == 0 ? 3 : 0);
    out.push_back(Render(rng() % 2, digits, exp, static_cast<int>(rng() % 4), rng));
  }
  return out;
}

std::string RandomBound(std::mt19937_64& rng) {
  static const char* kPool[] = {
      "0",     "-0",      "1",       "-1",   "5",      "-5",   "10",    "-10",   "100",
      "2.5",   "-2.5",    "0.5",     "-0.5", "0.001",  "-0.001", "1e3", "-1e3", "1E-2",
      "2.50",  "1.0",     "-1.0",    "12345.6789", "-99.99", "1e20", "-1e20", "0.1e1",
      "123e-2", "7",      "-7",      "3.14159", "1e-5", "9.99", "99",  "999",   "1000",
      "-1000", "0.0",     "1.7976931348623157e308", "-1.7976931348623157E+308", "2e-1",
      "19.5",  "-0.05",   "4.2e1",   "255",  "65535", "9223372036854775807",
      "-9223372036854775808", "9223372036854776000", "18446744073709551615",
      "99999999999.99", "-99999999999.99", "3.6893488147419103e19", "9007199254740991"};
  if (rng() % 3) return kPool[rng() % (sizeof kPool / sizeof kPool[0])];
  // Random: sign, 1-6 digits, a point somewhere, sometimes an exponent.
  std::string digits = std::to_string(1 + rng() % 999999).substr(0, 1 + rng() % 6);
  std::string s = rng() % 2 ? "-" : "";
  size_t point = rng() % (digits.size() + 1);
  if (point == 0 || point == digits.size()) {
    s += digits;
  } else {
    s += digits.substr(0, point) + "." + digits.substr(point);
  }
  if (rng() % 5 == 0) s += "e" + std::to_string(static_cast<int>(rng() % 7) - 3);
  return s;
}

Constraints RandomConstraints(std::mt19937_64& rng) {
  Constraints c;
  c.integer = rng() % 2;
  auto maybe = [&](std::optional<std::string>& slot, int one_in) {
    if (rng() % one_in == 0) slot = RandomBound(rng);
  };
  maybe(c.min, 2);
  maybe(c.max, 2);
  maybe(c.xmin, 4);
  maybe(c.xmax, 4);
  // Mostly satisfiable: order crossed bounds three times in four.
  auto order = [&](std::optional<std::string>& lo, std::optional<std::string>& hi) {
    if (lo && hi && Cmp(*ParseNumber(*lo), *ParseNumber(*hi)) > 0 && rng() % 4) std::swap(lo, hi);
  };
  order(c.min, c.max);
  order(c.xmin, c.xmax);
  order(c.min, c.xmax);
  order(c.xmin, c.max);
  if (rng() % 3 == 0) {
    static const char* kMultiples[] = {"1", "2", "3", "7", "10", "25", "0.5", "0.25", "0.1",
                                       "0.01", "0.3", "1.5", "2e1", "1e-3", "12", "0.125"};
    c.mult = kMultiples[rng() % (sizeof kMultiples / sizeof kMultiples[0])];
  }
  return c;
}


absl::StatusOr<parser::FlatGrammar> Build(const Constraints& c) {
  NumericConstraints nc;
  nc.integer = c.integer;
  nc.minimum = c.min;
  nc.maximum = c.max;
  nc.exclusive_minimum = c.xmin;
  nc.exclusive_maximum = c.xmax;
  nc.multiple_of = c.mult;
  grammar::Grammar g;
  g.rules.push_back({"root", 0, {}});
  absl::StatusOr<grammar::ExprId> e = AddNumber(nc, &g);
  if (!e.ok()) return e.status();
  g.rules[0].body = *e;
  return testing::CompileIr(g);
}

int ConstraintSets() {
  const char* env = std::getenv("ZAPGRAM_NUMBER_CASES");
  return env ? std::atoi(env) : 500;
}

TEST(JsonSchemaNumbers, AgreeWithExactDecimalArithmetic) {
  std::mt19937_64 rng(0x4E0'2026'1121ull);
  uint64_t checks = 0, accepted = 0, semantic_only = 0, empty_sets = 0, sets = 0, refused = 0;
  for (int i = 0; i < ConstraintSets(); ++i) {
    Constraints c = RandomConstraints(rng);
    absl::StatusOr<parser::FlatGrammar> flat = Build(c);
    if (!flat.ok() && flat.status().code() == absl::StatusCode::kUnimplemented) {
      // Refused past a budget (huge bounds with multipleOf): must say so.
      ASSERT_NE(flat.status().message().find("unsupported: "), std::string::npos) << flat.status();
      ++refused;
      continue;
    }
    if (!flat.ok()) {
      // An unsatisfiable range compiles to a grammar without sentences,
      // which the lowering refuses at the root; nothing else may fail.
      bool any = false;
      for (const std::string& t : Candidates(c, rng)) any |= Oracle(c, t).expected;
      ASSERT_FALSE(any) << Describe(c) << ": " << flat.status();
      ++empty_sets;
      continue;
    }
    ++sets;
    for (const std::string& t : Candidates(c, rng)) {
      Verdict v = Oracle(c, t);
      bool got = testing::FlatAccepts(*flat, t);
      ASSERT_EQ(got, v.expected) << Describe(c) << " text \"" << t << "\" semantic " << v.semantic;
      ++checks;
      accepted += got;
      semantic_only += v.semantic && !v.expected;
    }
  }
  std::printf("numbers: %llu constraint sets (+%llu unsatisfiable, %llu refused), %llu texts, "
              "%llu accepted, %llu valid but outside the output syntax, 0 mismatches\n",
              static_cast<unsigned long long>(sets), static_cast<unsigned long long>(empty_sets),
              static_cast<unsigned long long>(refused),
              static_cast<unsigned long long>(checks), static_cast<unsigned long long>(accepted),
              static_cast<unsigned long long>(semantic_only));
  EXPECT_GT(accepted, checks / 10);
  EXPECT_LT(refused, sets / 20);
}

// Opt-in: ZAPGRAM_NUMBER_PROBE=FILE, lines "integer(0/1) TAB minimum TAB
// maximum TAB exclusiveMinimum TAB exclusiveMaximum TAB multipleOf" (empty =
// absent), e.g. extracted from the MaskBench schemas; prints compile times.
TEST(JsonSchemaNumbers, ProbeCompileTimes) {
  const char* path = std::getenv("ZAPGRAM_NUMBER_PROBE");
  if (!path) GTEST_SKIP() << "set ZAPGRAM_NUMBER_PROBE";
  std::ifstream in(path);
  std::string line;
  std::vector<std::pair<double, std::string>> times;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    size_t start = 0;
    for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1) {
      f.push_back(line.substr(start, tab - start));
    }
    f.push_back(line.substr(start));
    if (f.size() != 6) continue;
    Constraints c;
    c.integer = f[0] == "1";
    auto set = [](std::optional<std::string>& slot, const std::string& v) {
      if (!v.empty()) slot = v;
    };
    set(c.min, f[1]);
    set(c.max, f[2]);
    set(c.xmin, f[3]);
    set(c.xmax, f[4]);
    set(c.mult, f[5]);
    auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<parser::FlatGrammar> flat = Build(c);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    times.push_back({ms, Describe(c) + (flat.ok() ? "" : " -> " + flat.status().ToString())});
  }
  std::sort(times.begin(), times.end());
  ASSERT_FALSE(times.empty());
  std::printf("probe: %zu constraint sets, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", times.size(),
              times[times.size() / 2].first, times[times.size() * 99 / 100].first, times.back().first);
  for (size_t i = times.size() >= 5 ? times.size() - 5 : 0; i < times.size(); ++i) {
    std::printf("  %.2f ms %s\n", times[i].first, times[i].second.c_str());
  }
}

TEST(JsonSchemaNumbers, Errors) {
  auto status = [](Constraints c) { return Build(c).status(); };
  Constraints bad;
  bad.min = "1.";
  EXPECT_EQ(status(bad).code(), absl::StatusCode::kInvalidArgument);
  Constraints zero_multiple;
  zero_multiple.mult = "0";
  EXPECT_EQ(status(zero_multiple).code(), absl::StatusCode::kInvalidArgument);
  Constraints huge_multiple;
  huge_multiple.integer = true;
  huge_multiple.mult = "1234567";
  absl::Status s = status(huge_multiple);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("multipleOf"), std::string::npos) << s;
  Constraints huge_bound;
  huge_bound.max = "1e5000";
  EXPECT_EQ(status(huge_bound).code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace zapgram::transforms
