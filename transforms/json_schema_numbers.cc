// Numeric bounds and multipleOf of JSON Schema as exact grammars of number texts.
//
// A number text is a sign and a magnitude, and "-M" has the value -M, so
// value constraints split into two magnitude ranges: texts without "-" need
// M in [L, U] ∩ [0, inf), texts with "-" need M in [-U, -L] ∩ [0, inf)
// ("-0" is a zero like "0"). Each magnitude range becomes a regex:
//
//   integer  digit-only texts (0|[1-9][0-9]*): JSON Schema also counts "1.0"
//            and "1e2" as integers, but the grammar emits only the canonical
//            digit form (an output restriction). Bounds may be any number
//            text ("1.5", "1e3"): the range becomes [ceil lo, floor hi].
//   number   an unconstrained magnitude range ([0, inf), (0, inf) or {0})
//            keeps the full RFC 8259 syntax with fraction and exponent; any
//            other range is written in fixed-point syntax, which restricts
//            the output: whether "12e-1" lies in [1, 2] depends on comparing
//            an exponent with a count of digits, which is not regular. Two
//            exponent forms decided by their shape alone are kept: a
//            one-digit mantissa with a negative exponent (below 1) when the
//            range is [0, hi] or (0, hi] with hi >= 1 ("1e-05"), and a
//            mantissa [1-9](.d+)? with an exponent of at least the number of
//            integer digits of lo when there is no upper bound ("1.5e+20").
//            With multipleOf, fixed-point only.
//
// A range over canonical digit strings is the textbook digit-range regex:
// longer strings than the lower bound and shorter than the upper are free,
// strings of the bound's length are compared digit by digit (IntRangeRegex).
// Fractions compare as digit strings padded with zeros; FractionRegex walks
// both bounds' digits at once with a small state per side (below, exactly,
// above, must-be-zero, must-be-nonzero).
//
// multipleOf m = P·10^-k (P a positive integer) is exact for the texts the
// regex allows (which then have no exponent): x is a multiple iff x·10^k is an
// integer divisible by P, which a finite automaton checks while reading the
// digits (remainder mod P; the k first fraction digits, then only zeros).
// For integers, m = P/10^k is reduced to P/gcd(P, 10^k). The range regex is
// compiled to a DFA, its product with that automaton is trimmed and written
// as right-linear rules (one rule per product state). Past
// kMaxMultipleOfStates product states: kUnimplemented("unsupported:
// multipleOf ..."). Bounds with more than kMaxBoundDigits digits before the
// point (counted repetition stays under 1000), or more than
// kMaxSignificantDigits significant digits or digits after the point (the
// fraction regexes nest two groups per digit; max_nesting is 256), are
// refused the same way.
//
// Tests: tests/transforms/json_schema_formats_test.cc compares every grammar
// with exact decimal arithmetic written independently in the test.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grammar/regex_compiler.h"
#include "transforms/json_schema_formats.h"

namespace zapgram::transforms {
namespace {

constexpr size_t kMaxBoundDigits = 900;
constexpr size_t kMaxSignificantDigits = 100;
constexpr uint64_t kMaxMultipleOfStates = 1u << 15;

// value = (negative ? -1 : 1) * digits * 10^exponent; digits has no leading
// or trailing zeros ("" for zero, which is never negative).
struct Decimal {
  bool negative = false;
  std::string digits;
  int64_t exponent = 0;
  bool zero() const { return digits.empty(); }
};

absl::StatusOr<Decimal> ParseDecimal(std::string_view text, std::string_view keyword) {
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: \"%s\" is not a JSON number", keyword, text));
  };
  size_t i = 0;
  Decimal d;
  if (i < text.size() && text[i] == '-') {
    d.negative = true;
    ++i;
  }
  auto is_digit = [&](size_t j) { return j < text.size() && text[j] >= '0' && text[j] <= '9'; };
  if (!is_digit(i)) return bad();
  std::string mantissa;
  if (text[i] == '0') {
    ++i;
  } else {
    while (is_digit(i)) mantissa.push_back(text[i++]);
  }
  int64_t exponent = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (!is_digit(i)) return bad();
    while (is_digit(i)) {
      mantissa.push_back(text[i++]);
      --exponent;
    }
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) exp_negative = text[i++] == '-';
    if (!is_digit(i)) return bad();
    int64_t e = 0;
    while (is_digit(i)) {
      // Past a million the bound is refused anyway; keep the value saturated.
      e = std::min<int64_t>(e * 10 + (text[i++] - '0'), int64_t{1} << 40);
    }
    exponent += exp_negative ? -e : e;
  }
  if (i != text.size()) return bad();
  size_t first = mantissa.find_first_not_of('0');
  if (first == std::string::npos) return Decimal{};  // zero, "-0" included
  size_t last = mantissa.find_last_not_of('0');
  exponent += static_cast<int64_t>(mantissa.size() - 1 - last);
  d.digits = mantissa.substr(first, last - first + 1);
  d.exponent = exponent;
  return d;
}

// -1, 0, 1 as |a| compares to |b|.
int CompareMagnitude(const Decimal& a, const Decimal& b) {
  if (a.zero() || b.zero()) return a.zero() == b.zero() ? 0 : (a.zero() ? -1 : 1);
  int64_t ta = static_cast<int64_t>(a.digits.size()) + a.exponent;  // position of the top digit
  int64_t tb = static_cast<int64_t>(b.digits.size()) + b.exponent;
  if (ta != tb) return ta < tb ? -1 : 1;
  size_t n = std::max(a.digits.size(), b.digits.size());
  for (size_t i = 0; i < n; ++i) {
    char ca = i < a.digits.size() ? a.digits[i] : '0';
    char cb = i < b.digits.size() ? b.digits[i] : '0';
    if (ca != cb) return ca < cb ? -1 : 1;
  }
  return 0;
}

int Compare(const Decimal& a, const Decimal& b) {
  int sa = a.zero() ? 0 : (a.negative ? -1 : 1);
  int sb = b.zero() ? 0 : (b.negative ? -1 : 1);
  if (sa != sb) return sa < sb ? -1 : 1;
  int m = CompareMagnitude(a, b);
  return sa < 0 ? -m : m;
}

// A non-negative decimal as an integer part (canonical: "0" or no leading
// zero) and a fraction part (no trailing zero; "" for none).
struct FixedPoint {
  std::string integer = "0";
  std::string fraction;
};

absl::StatusOr<FixedPoint> ToFixedPoint(const Decimal& d, std::string_view keyword) {
  FixedPoint f;
  if (d.zero()) return f;
  int64_t n = static_cast<int64_t>(d.digits.size());
  int64_t int_digits = n + d.exponent;  // digits before the point
  int64_t frac_digits = -d.exponent;    // digits after the point
  if (int_digits > static_cast<int64_t>(kMaxBoundDigits) ||
      frac_digits > static_cast<int64_t>(kMaxSignificantDigits) ||
      d.digits.size() > kMaxSignificantDigits) {
    return absl::UnimplementedError(absl::StrFormat(
        "unsupported: %s with more than %d digits before the point, or more than %d "
        "significant digits or digits after the point",
        keyword, kMaxBoundDigits, kMaxSignificantDigits));
  }
  if (d.exponent >= 0) {
    f.integer = d.digits + std::string(static_cast<size_t>(d.exponent), '0');
  } else if (int_digits > 0) {
    f.integer = d.digits.substr(0, static_cast<size_t>(int_digits));
    f.fraction = d.digits.substr(static_cast<size_t>(int_digits));
  } else {
    f.fraction = std::string(static_cast<size_t>(-int_digits), '0') + d.digits;
  }
  return f;
}

// Canonical digit-string arithmetic (n >= 0).
std::string Increment(std::string n) {
  size_t i = n.size();
  while (i > 0 && n[i - 1] == '9') n[--i] = '0';
  if (i == 0) return "1" + n;
  ++n[i - 1];
  return n;
}

// n + 1 as a lower bound of a digit-range regex, whose size grows with the
// square of the digits up to the last nonzero one: "1e300" + 1 is refused.
absl::StatusOr<std::string> IncrementLowerBound(const std::string& n, std::string_view keyword) {
  std::string next = Increment(n);
  if (next.find_last_not_of('0') + 1 > kMaxSignificantDigits + 20) {
    return absl::UnimplementedError(absl::StrFormat(
        "unsupported: %s %s (a strict bound with too many trailing zeros)", keyword, n));
  }
  return next;
}

// n >= 1.
std::string Decrement(std::string n) {
  size_t i = n.size();
  while (n[i - 1] == '0') n[--i] = '9';
  --n[i - 1];
  size_t first = n.find_first_not_of('0');
  return first == std::string::npos ? "0" : n.substr(first);
}

int CompareCanonical(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a < b ? -1 : (a == b ? 0 : 1);
}

std::string DigitClass(char lo, char hi) {
  if (lo == hi) return std::string(1, lo);
  if (lo == '0' && hi == '9') return "[0-9]";
  return absl::StrCat("[", std::string(1, lo), "-", std::string(1, hi), "]");
}

std::string AnyDigits(size_t n) {
  if (n == 0) return "";
  if (n == 1) return "[0-9]";
  return absl::StrFormat("[0-9]{%d}", n);
}

// A literal digit string with runs of 4 or more equal digits as d{m}.
std::string DigitRun(std::string_view digits) {
  std::string out;
  for (size_t i = 0; i < digits.size();) {
    size_t j = i;
    while (j < digits.size() && digits[j] == digits[i]) ++j;
    if (j - i >= 4) {
      absl::StrAppend(&out, std::string(1, digits[i]), "{", j - i, "}");
    } else {
      out.append(digits.substr(i, j - i));
    }
    i = j;
  }
  return out;
}

std::string Alternatives(const std::vector<std::string>& parts) {
  if (parts.size() == 1) return parts[0];
  std::string out = "(?:";
  for (size_t i = 0; i < parts.size(); ++i) absl::StrAppend(&out, i ? "|" : "", parts[i]);
  return out + ")";
}

// Digit strings s of length lo.size() == hi.size() with lo <= s <= hi,
// built from the last position backward (no recursion). At each position the
// remaining suffix is either bounded below by lo's suffix, above by hi's, by
// both (while lo and hi agree), or free.
std::string SameLengthRangeRegex(const std::string& lo, const std::string& hi) {
  const size_t n = lo.size();
  size_t common = 0;
  while (common < n && lo[common] == hi[common]) ++common;
  if (common == n) return DigitRun(lo);
  // suffix_ge[i]: strings of length n-i that are >= lo[i..]; suffix_le for hi.
  // Strings of length n-from that are >= bound[from..] (lower) or <= it, as
  // a flat union (no nesting): equal up to position i, then a digit strictly
  // beyond bound[i], then anything. Past the last digit that is not 0
  // (lower) or 9 (upper) the suffix is free.
  // Strings of length n-from that are >= bound[from..] (lower) or <= it, as
  // a flat union: equal up to position i, then a digit strictly beyond
  // bound[i], then anything. Past the last digit that is not 0 (lower) or 9
  // (upper) the suffix is free and written once after the union, so the
  // subset construction meets one shared counter, not one per alternative.
  auto one_sided = [n](const std::string& bound, bool lower, size_t from) {
    const char free_digit = lower ? '0' : '9';
    size_t end = n;
    while (end > from && bound[end - 1] == free_digit) --end;
    std::vector<std::string> parts;
    for (size_t i = from; i < end; ++i) {
      char d = bound[i];
      if (lower && d < '9') {
        parts.push_back(DigitRun(bound.substr(from, i - from)) + DigitClass(d + 1, '9') +
                        AnyDigits(end - i - 1));
      }
      if (!lower && d > '0') {
        parts.push_back(DigitRun(bound.substr(from, i - from)) + DigitClass('0', d - 1) +
                        AnyDigits(end - i - 1));
      }
    }
    parts.push_back(DigitRun(bound.substr(from, end - from)));
    if (parts.size() == 1 && parts[0].empty()) return AnyDigits(n - end);
    return Alternatives(parts) + AnyDigits(n - end);
  };
  std::vector<std::string> parts;
  parts.push_back(absl::StrCat(std::string(1, lo[common]), one_sided(lo, true, common + 1)));
  if (hi[common] - lo[common] >= 2) {
    parts.push_back(DigitClass(lo[common] + 1, hi[common] - 1) + AnyDigits(n - common - 1));
  }
  parts.push_back(absl::StrCat(std::string(1, hi[common]), one_sided(hi, false, common + 1)));
  return DigitRun(std::string_view(lo).substr(0, common)) + Alternatives(parts);
}

// Canonical integers (0 or no leading zero) in [lo, hi]; hi = nullopt for no
// upper bound. Precondition: lo <= hi.
std::string IntRangeRegex(const std::string& lo, const std::optional<std::string>& hi) {
  const size_t la = lo.size();
  std::vector<std::string> parts;
  auto smallest_of_length = [](size_t n) {
    std::string s(n, '0');
    if (n > 1) s[0] = '1';
    return s;
  };
  if (hi && hi->size() == la) return SameLengthRangeRegex(lo, *hi);
  parts.push_back(SameLengthRangeRegex(lo, std::string(la, '9')));
  if (!hi) {
    parts.push_back(absl::StrFormat("[1-9][0-9]{%d,}", la));
  } else {
    const size_t lb = hi->size();
    if (lb - la >= 2) parts.push_back(absl::StrFormat("[1-9][0-9]{%d,%d}", la, lb - 2));
    parts.push_back(SameLengthRangeRegex(smallest_of_length(lb), *hi));
  }
  return Alternatives(parts);
}

// One side of a fraction comparison while reading fraction digits.
enum class Side : uint8_t {
  kFree,     // already strictly inside
  kAt,       // equal so far to the bound's digits[pos..]
  kZero,     // upper bound reached exactly: only zeros may follow
  kNonzero,  // strict lower bound reached exactly: a nonzero digit must follow
  kDead,     // strict upper bound reached exactly: nothing more is inside
};

struct FractionBound {
  std::string digits;  // no trailing zero
  bool strict = false;
};

// Regex for "(\.F)?" or "\.F" (F = fraction digits) over fractions f with
// lower <= 0.f <= upper (strictness per bound); nullopt for none.
std::optional<std::string> FractionRegex(const std::optional<FractionBound>& lower,
                                         const std::optional<FractionBound>& upper) {
  struct State {
    Side lo, hi;
    size_t pos;  // digits consumed
  };
  auto normalize_lo = [&](Side s, size_t pos) {
    if (s != Side::kAt || pos < lower->digits.size()) return s;
    return lower->strict ? Side::kNonzero : Side::kFree;
  };
  auto normalize_hi = [&](Side s, size_t pos) {
    if (s != Side::kAt || pos < upper->digits.size()) return s;
    return upper->strict ? Side::kDead : Side::kZero;
  };
  State start{lower ? Side::kAt : Side::kFree, upper ? Side::kAt : Side::kFree, 0};
  start.lo = lower ? normalize_lo(start.lo, 0) : Side::kFree;
  start.hi = upper ? normalize_hi(start.hi, 0) : Side::kFree;

  // The language of f for a state: whether the empty f belongs, and a regex
  // of the nonempty ones (nullopt for none). Terminal states have fixed
  // answers; the others branch on the next digit. A chain of states is walked
  // forward, recording each step, then the regexes are assembled backward.
  struct Lang {
    bool empty_ok = false;
    std::optional<std::string> nonempty;
  };
  auto terminal = [](const State& s) -> std::optional<Lang> {
    if (s.lo == Side::kDead || s.hi == Side::kDead) return Lang{false, std::nullopt};
    bool lo_open = s.lo == Side::kFree || s.lo == Side::kNonzero;
    bool hi_open = s.hi == Side::kFree || s.hi == Side::kZero;
    if (!lo_open || !hi_open) return std::nullopt;
    if (s.lo == Side::kFree && s.hi == Side::kFree) return Lang{true, std::string("[0-9]+")};
    if (s.lo == Side::kFree && s.hi == Side::kZero) return Lang{true, std::string("0+")};
    if (s.lo == Side::kNonzero && s.hi == Side::kFree) return Lang{false, std::string("0*[1-9][0-9]*")};
    return Lang{false, std::nullopt};  // nonzero and zero at once
  };
  auto concat = [](char lo_digit, char hi_digit, const Lang& rest) -> std::optional<std::string> {
    std::string head = DigitClass(lo_digit, hi_digit);
    if (rest.nonempty) {
      return rest.empty_ok ? absl::StrCat(head, "(?:", *rest.nonempty, ")?")
                           : absl::StrCat(head, *rest.nonempty);
    }
    if (rest.empty_ok) return head;
    return std::nullopt;
  };
  // Each non-terminal state has digit groups; at most two groups lead to
  // non-terminal states (the digits equal to each bound), so the states form
  // a tree of two chains at most. Evaluate it with an explicit stack.
  struct Frame {
    State state;
    std::vector<std::pair<std::pair<char, char>, State>> groups;
    size_t next = 0;
    std::vector<std::string> parts;
    bool empty_ok = false;
  };
  auto step_lo = [&](const State& s, char d) {
    switch (s.lo) {
      case Side::kFree: return Side::kFree;
      case Side::kNonzero: return d > '0' ? Side::kFree : Side::kNonzero;
      case Side::kAt: {
        char b = lower->digits[s.pos];
        if (d > b) return Side::kFree;
        if (d < b) return Side::kDead;
        return normalize_lo(Side::kAt, s.pos + 1);
      }
      default: return Side::kDead;
    }
  };
  auto step_hi = [&](const State& s, char d) {
    switch (s.hi) {
      case Side::kFree: return Side::kFree;
      case Side::kZero: return d == '0' ? Side::kZero : Side::kDead;
      case Side::kAt: {
        char b = upper->digits[s.pos];
        if (d < b) return Side::kFree;
        if (d > b) return Side::kDead;
        return normalize_hi(Side::kAt, s.pos + 1);
      }
      default: return Side::kDead;
    }
  };
  auto make_frame = [&](const State& s) {
    Frame f;
    f.state = s;
    // Empty f: value 0 — inside iff the lower side accepts 0 and the upper does.
    f.empty_ok = (s.lo == Side::kFree) && (s.hi != Side::kDead);
    for (char d = '0'; d <= '9'; ++d) {
      State t{step_lo(s, d), step_hi(s, d), s.pos + 1};
      if (t.lo == Side::kDead || t.hi == Side::kDead) continue;
      if (!f.groups.empty() && f.groups.back().first.second == d - 1 &&
          f.groups.back().second.lo == t.lo && f.groups.back().second.hi == t.hi &&
          t.lo != Side::kAt && t.hi != Side::kAt) {
        f.groups.back().first.second = d;
      } else {
        f.groups.push_back({{d, d}, t});
      }
    }
    return f;
  };
  Lang result;
  if (std::optional<Lang> t = terminal(start)) {
    result = *t;
  } else {
    std::vector<Frame> stack;
    stack.push_back(make_frame(start));
    std::optional<Lang> returned;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (returned) {
        auto [range, child] = f.groups[f.next - 1];
        if (auto piece = concat(range.first, range.second, *returned)) f.parts.push_back(*piece);
        returned.reset();
      }
      if (f.next < f.groups.size()) {
        auto [range, child] = f.groups[f.next++];
        if (std::optional<Lang> t = terminal(child)) {
          if (auto piece = concat(range.first, range.second, *t)) f.parts.push_back(*piece);
        } else {
          stack.push_back(make_frame(child));
        }
        continue;
      }
      Lang lang;
      lang.empty_ok = f.empty_ok;
      if (!f.parts.empty()) lang.nonempty = Alternatives(f.parts);
      stack.pop_back();
      if (stack.empty()) {
        result = lang;
      } else {
        returned = lang;
      }
    }
  }
  if (!result.nonempty) {
    if (result.empty_ok) return std::string();
    return std::nullopt;
  }
  if (result.empty_ok) return absl::StrCat("(?:\\.", *result.nonempty, ")?");
  return absl::StrCat("\\.", *result.nonempty);
}

// A range of magnitudes: lo (strict or not) up to hi (nullopt: unbounded).
struct MagnitudeRange {
  Decimal lo;  // >= 0
  bool lo_strict = false;
  std::optional<Decimal> hi;  // >= 0
  bool hi_strict = false;

  bool empty() const {
    if (!hi) return false;
    int c = Compare(lo, *hi);
    return c > 0 || (c == 0 && (lo_strict || hi_strict));
  }
};

std::string FullNumberSyntax(const std::string& mantissa) {
  return absl::StrCat(mantissa, "(?:[eE][+-]?[0-9]+)?");
}

// Canonical integer texts with magnitude in `r`; nullopt when none.
absl::StatusOr<std::optional<std::string>> IntegerMagnitudeRegex(const MagnitudeRange& r) {
  absl::StatusOr<FixedPoint> lo = ToFixedPoint(r.lo, "minimum");
  if (!lo.ok()) return lo.status();
  // Smallest integer inside: floor(lo)+1 when strict or lo has a fraction, else lo.
  std::string first = lo->integer;
  if (r.lo_strict || !lo->fraction.empty()) {
    absl::StatusOr<std::string> next = IncrementLowerBound(lo->integer, "exclusiveMinimum");
    if (!next.ok()) return next.status();
    first = *next;
  }
  std::optional<std::string> last;
  if (r.hi) {
    absl::StatusOr<FixedPoint> hi = ToFixedPoint(*r.hi, "maximum");
    if (!hi.ok()) return hi.status();
    // Largest integer inside: floor(hi), or hi-1 when hi is an integer and strict.
    if (r.hi_strict && hi->fraction.empty()) {
      if (hi->integer == "0") return std::optional<std::string>();
      last = Decrement(hi->integer);
    } else {
      last = hi->integer;
    }
    if (CompareCanonical(first, *last) > 0) return std::optional<std::string>();
  }
  return std::optional<std::string>(IntRangeRegex(first, last));
}

// Number texts with magnitude in `r`: full syntax when `r` does not constrain
// the magnitude beyond its sign, else fixed-point (see the file comment).
absl::StatusOr<std::optional<std::string>> NumberMagnitudeRegex(const MagnitudeRange& r,
                                                                bool fixed_point_only) {
  const std::string any_fraction = "(?:\\.[0-9]+)?";
  if (!fixed_point_only && !r.hi && r.lo.zero()) {
    return std::optional<std::string>(FullNumberSyntax(
        r.lo_strict ? "(?:0\\.0*[1-9][0-9]*|[1-9][0-9]*(?:\\.[0-9]+)?)"
                    : absl::StrCat("(?:0|[1-9][0-9]*)", any_fraction)));
  }
  if (!fixed_point_only && r.hi && r.hi->zero() && r.lo.zero()) {
    return std::optional<std::string>(FullNumberSyntax("0(?:\\.0+)?"));
  }
  absl::StatusOr<FixedPoint> lo = ToFixedPoint(r.lo, "minimum");
  if (!lo.ok()) return lo.status();
  FractionBound lo_frac{lo->fraction, r.lo_strict};
  // With an inclusive integer lower bound, I >= lo with any fraction is one
  // range; else I == lo with a bounded fraction, and I > lo.
  const bool whole_lower = lo->fraction.empty() && !r.lo_strict;
  std::string above_lo = lo->integer;
  if (!whole_lower) {
    absl::StatusOr<std::string> next = IncrementLowerBound(lo->integer, "exclusiveMinimum");
    if (!next.ok()) return next.status();
    above_lo = *next;
  }
  std::vector<std::string> parts;
  auto add = [&](const std::string& integer, const std::optional<std::string>& fraction) {
    if (fraction) parts.push_back(DigitRun(integer) + *fraction);
  };
  if (!r.hi) {
    if (!whole_lower) add(lo->integer, FractionRegex(lo_frac, std::nullopt));
    parts.push_back(IntRangeRegex(above_lo, std::nullopt) + any_fraction);
  } else {
    absl::StatusOr<FixedPoint> hi = ToFixedPoint(*r.hi, "maximum");
    if (!hi.ok()) return hi.status();
    FractionBound hi_frac{hi->fraction, r.hi_strict};
    if (lo->integer == hi->integer) {
      add(lo->integer, FractionRegex(lo_frac, hi_frac));
    } else {
      if (!whole_lower) add(lo->integer, FractionRegex(lo_frac, std::nullopt));
      // hi's integer part is >= 1 here (it exceeds lo's).
      if (CompareCanonical(above_lo, hi->integer) < 0) {
        parts.push_back(IntRangeRegex(above_lo, Decrement(hi->integer)) + any_fraction);
      }
      add(hi->integer, FractionRegex(std::nullopt, hi_frac));
    }
  }
  if (!fixed_point_only) {
    // Two exponent forms whose verdict needs no digit comparison (Python
    // writes 1e-05 and 1e+20): a one-digit mantissa with a negative exponent
    // is below 1, so inside when lo is 0 and hi >= 1; a mantissa [1-9](.d+)?
    // with exponent K >= (digits of lo's integer part) is at least 10^K > lo,
    // so inside when there is no upper bound.
    Decimal one;
    one.digits = "1";
    if (r.lo.zero() && r.hi && Compare(*r.hi, one) >= 0) {
      parts.push_back(absl::StrCat(
          r.lo_strict ? "(?:[1-9](?:\\.[0-9]+)?|0\\.0*[1-9][0-9]*)" : "[0-9](?:\\.[0-9]+)?",
          "[eE]-0*[1-9][0-9]*"));
    }
    if (!r.hi) {
      const std::string min_exponent =
          lo->integer == "0" ? "0" : absl::StrCat(lo->integer.size());
      parts.push_back(absl::StrCat("[1-9](?:\\.[0-9]+)?[eE]\\+?0*",
                                   IntRangeRegex(min_exponent, std::nullopt)));
    }
  }
  if (parts.empty()) return std::optional<std::string>();
  return std::optional<std::string>(Alternatives(parts));
}

struct Bound {
  Decimal value;
  bool strict = false;
};

// The tighter of two lower (or upper) bounds.
std::optional<Bound> Tighter(std::optional<Bound> a, std::optional<Bound> b, bool lower) {
  if (!a) return b;
  if (!b) return a;
  int c = Compare(a->value, b->value);
  if (c == 0) return a->strict ? a : b;
  return (c > 0) == lower ? a : b;
}

absl::StatusOr<std::optional<Bound>> ReadBound(const std::optional<std::string>& text,
                                               bool strict, std::string_view keyword) {
  if (!text) return std::optional<Bound>();
  absl::StatusOr<Decimal> d = ParseDecimal(*text, keyword);
  if (!d.ok()) return d.status();
  return std::optional<Bound>(Bound{*d, strict});
}

Decimal Negate(Decimal d) {
  if (!d.zero()) d.negative = !d.negative;
  return d;
}

// The magnitudes M with sign*M inside [lower, upper]; nullopt when empty.
std::optional<MagnitudeRange> MagnitudesFor(bool negative_texts, const std::optional<Bound>& lower,
                                            const std::optional<Bound>& upper) {
  // For "-M" the value range [L, U] becomes M in [-U, -L].
  std::optional<Bound> lo = negative_texts ? upper : lower;
  std::optional<Bound> hi = negative_texts ? lower : upper;
  if (negative_texts) {
    if (lo) lo->value = Negate(lo->value);
    if (hi) hi->value = Negate(hi->value);
  }
  MagnitudeRange r;
  if (lo && !lo->value.negative) {
    r.lo = lo->value;
    r.lo_strict = lo->strict;
  }
  if (hi) {
    if (hi->value.negative) return std::nullopt;
    r.hi = hi->value;
    r.hi_strict = hi->strict;
  }
  if (r.empty()) return std::nullopt;
  return r;
}

// multipleOf = p * 10^-k with p a positive integer that fits the budget.
struct Multiple {
  uint64_t p = 1;
  uint32_t k = 0;
};

absl::StatusOr<Multiple> ReadMultiple(std::string_view text, bool integer) {
  absl::StatusOr<Decimal> d = ParseDecimal(text, "multipleOf");
  if (!d.ok()) return d.status();
  if (d->zero() || d->negative) {
    return absl::InvalidArgumentError(
        absl::StrFormat("multipleOf: %s is not strictly positive", text));
  }
  auto refuse = [&] {
    return absl::UnimplementedError(absl::StrFormat(
        "unsupported: multipleOf %s (its automaton would exceed %d states)", text,
        kMaxMultipleOfStates));
  };
  if (d->digits.size() > 18 || d->exponent > 18 || d->exponent < -static_cast<int64_t>(kMaxBoundDigits)) {
    return refuse();
  }
  Multiple m;
  m.p = std::stoull(d->digits);
  for (int64_t e = 0; e < d->exponent; ++e) {
    if (m.p > kMaxMultipleOfStates) return refuse();
    m.p *= 10;
  }
  if (d->exponent < 0) m.k = static_cast<uint32_t>(-d->exponent);
  if (integer) {
    // x integer: x multiple of p/10^k iff p/gcd(p, 10^k) divides x.
    for (uint32_t i = 0; i < m.k; ++i) {
      if (m.p % 2 == 0) m.p /= 2;
      if (m.p % 5 == 0) m.p /= 5;
    }
    m.k = 0;
  }
  if (m.p > kMaxMultipleOfStates) return refuse();
  return m;
}

// A state of the product of the number DFA and the divisibility automaton.
struct ProductState {
  uint32_t dfa;
  uint32_t frac;  // fraction digits read, or UINT32_MAX before the point
  uint64_t r;     // remainder mod p of the digits read so far
  bool operator==(const ProductState&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const ProductState& s) {
    return H::combine(std::move(h), s.dfa, s.frac, s.r);
  }
};

// The DFA of `regex` intersected with "a multiple of m", as right-linear rules.
absl::StatusOr<grammar::ExprId> AddMultipleOfRules(const std::string& regex, const Multiple& m,
                                                   std::string_view multiple_text,
                                                   grammar::Grammar* g) {
  absl::StatusOr<grammar::ByteDfa> dfa = grammar::CompileRegex(regex, 0);
  if (!dfa.ok()) return dfa.status();
  auto refuse = [&] {
    return absl::UnimplementedError(absl::StrFormat(
        "unsupported: multipleOf %s (its automaton would exceed %d states)", multiple_text,
        kMaxMultipleOfStates));
  };
  // Divisibility state: remainder r of the digits read so far (integer digits
  // then the first k fraction digits) and `frac` = fraction digits read, or
  // kIntPhase before the point. With frac == k only zeros may follow.
  constexpr uint32_t kIntPhase = UINT32_MAX;
  using Key = ProductState;
  std::vector<Key> states;
  absl::flat_hash_map<Key, uint32_t> index;
  std::vector<std::vector<std::pair<uint8_t, uint32_t>>> edges;
  auto intern = [&](Key key) -> std::optional<uint32_t> {
    auto [it, inserted] = index.try_emplace(key, static_cast<uint32_t>(states.size()));
    if (inserted) {
      if (states.size() >= kMaxMultipleOfStates) return std::nullopt;
      states.push_back(key);
      edges.emplace_back();
    }
    return it->second;
  };
  // 10^i mod p for the end-of-text check.
  auto scaled_zero = [&](uint64_t r, uint32_t extra_zeros) {
    for (uint32_t i = 0; i < extra_zeros && r != 0; ++i) r = r * 10 % m.p;
    return r == 0;
  };
  std::optional<uint32_t> start = intern({1, kIntPhase, 0});
  if (!start) return refuse();
  for (size_t i = 0; i < states.size(); ++i) {
    Key s = states[i];
    for (int byte = 0; byte < 256; ++byte) {
      uint32_t next_dfa = dfa->next[s.dfa][byte];
      if (next_dfa == 0) continue;
      Key t{next_dfa, s.frac, s.r};
      if (byte >= '0' && byte <= '9') {
        uint64_t digit = static_cast<uint64_t>(byte - '0');
        if (s.frac == kIntPhase || s.frac < m.k) {
          t.r = (s.r * 10 + digit) % m.p;
          if (s.frac != kIntPhase) t.frac = s.frac + 1;
        } else if (digit != 0) {
          continue;  // a nonzero digit past 10^-k
        }
      } else if (byte == '.') {
        t.frac = 0;
      } else if (byte != '-') {
        return absl::InternalError(absl::StrFormat(
            "multipleOf: unexpected byte 0x%02x in a number regex", byte));
      }
      std::optional<uint32_t> id = intern(t);
      if (!id) return refuse();
      edges[i].push_back({static_cast<uint8_t>(byte), *id});
    }
  }
  const size_t n = states.size();
  std::vector<uint8_t> accepting(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Key& s = states[i];
    if (!dfa->accepting[s.dfa]) continue;
    uint32_t missing = s.frac == kIntPhase ? m.k : m.k - std::min(m.k, s.frac);
    accepting[i] = scaled_zero(s.r, missing);
  }
  // Trim: keep the states from which an accepting state is reachable.
  std::vector<std::vector<uint32_t>> reverse(n);
  for (size_t i = 0; i < n; ++i) {
    for (auto [byte, t] : edges[i]) reverse[t].push_back(static_cast<uint32_t>(i));
  }
  std::vector<uint8_t> live(n, 0);
  std::vector<uint32_t> work;
  for (size_t i = 0; i < n; ++i) {
    if (accepting[i]) {
      live[i] = 1;
      work.push_back(static_cast<uint32_t>(i));
    }
  }
  while (!work.empty()) {
    uint32_t s = work.back();
    work.pop_back();
    for (uint32_t p : reverse[s]) {
      if (!live[p]) {
        live[p] = 1;
        work.push_back(p);
      }
    }
  }
  if (!live[*start]) return g->AddCharClass({}, false);
  // One rule per live state: its outgoing edges grouped by target, plus the
  // empty string when accepting.
  std::vector<grammar::RuleId> rule_of(n, 0);
  const std::string prefix = absl::StrCat("number-multiple-", g->rules.size(), "-");
  for (size_t i = 0; i < n; ++i) {
    if (!live[i]) continue;
    rule_of[i] = static_cast<grammar::RuleId>(g->rules.size());
    g->rules.push_back({absl::StrCat(prefix, i), 0, {}});
  }
  for (size_t i = 0; i < n; ++i) {
    if (!live[i]) continue;
    std::vector<grammar::ExprId> choices;
    if (accepting[i]) choices.push_back(g->AddEmpty());
    std::vector<std::pair<uint32_t, std::vector<grammar::CodepointRange>>> by_target;
    for (auto [byte, t] : edges[i]) {
      if (!live[t]) continue;
      auto it = std::find_if(by_target.begin(), by_target.end(),
                             [t = t](const auto& e) { return e.first == t; });
      if (it == by_target.end()) {
        by_target.push_back({t, {}});
        it = by_target.end() - 1;
      }
      it->second.push_back({byte, byte});
    }
    for (auto& [t, ranges] : by_target) {
      choices.push_back(g->AddSequence(
          {g->AddCharClass(std::move(ranges), false), g->AddRuleRef(rule_of[t])}));
    }
    g->rules[rule_of[i]].body = g->AddChoice(std::move(choices));
  }
  return g->AddRuleRef(rule_of[*start]);
}

}  // namespace

absl::StatusOr<grammar::ExprId> AddNumber(const NumericConstraints& c, grammar::Grammar* g) {
  absl::StatusOr<std::optional<Bound>> min = ReadBound(c.minimum, false, "minimum");
  if (!min.ok()) return min.status();
  absl::StatusOr<std::optional<Bound>> xmin = ReadBound(c.exclusive_minimum, true, "exclusiveMinimum");
  if (!xmin.ok()) return xmin.status();
  absl::StatusOr<std::optional<Bound>> max = ReadBound(c.maximum, false, "maximum");
  if (!max.ok()) return max.status();
  absl::StatusOr<std::optional<Bound>> xmax = ReadBound(c.exclusive_maximum, true, "exclusiveMaximum");
  if (!xmax.ok()) return xmax.status();
  std::optional<Bound> lower = Tighter(*min, *xmin, true);
  std::optional<Bound> upper = Tighter(*max, *xmax, false);

  std::optional<Multiple> multiple;
  if (c.multiple_of) {
    absl::StatusOr<Multiple> m = ReadMultiple(*c.multiple_of, c.integer);
    if (!m.ok()) return m.status();
    // Every integer is a multiple of p/10^k when p reduces to 1.
    if (!(c.integer && m->p == 1)) multiple = *m;
  }

  std::vector<std::string> parts;
  for (bool negative : {false, true}) {
    std::optional<MagnitudeRange> range = MagnitudesFor(negative, lower, upper);
    if (!range) continue;
    absl::StatusOr<std::optional<std::string>> regex =
        c.integer ? IntegerMagnitudeRegex(*range)
                  : NumberMagnitudeRegex(*range, /*fixed_point_only=*/multiple.has_value());
    if (!regex.ok()) return regex.status();
    if (*regex) parts.push_back(negative ? "-" + **regex : **regex);
  }
  if (parts.empty()) return g->AddCharClass({}, false);  // no number satisfies the bounds
  std::string regex = Alternatives(parts);
  if (multiple) return AddMultipleOfRules(regex, *multiple, *c.multiple_of, g);
  return g->AddRegex(std::move(regex), 0);
}

}  // namespace zapgram::transforms
