// Unicode sets from ICU (see the header for the conventions).
//
// ICU does the lookups: uset_applyPropertyAlias resolves a \p{..} name with
// ICU's loose matching (General_Category, then Script, then binary property,
// plus Any / ASCII / Assigned and the PROP=VALUE form), and u_foldCase gives
// simple case folding. This file converts USets to CodepointRange lists and
// keeps three caches: properties by name, the shorthand classes per dialect,
// and the case-fold orbits (built once by one pass over all code points).
#include "grammar/unicode_classes.h"

#include <unicode/uchar.h>
#include <unicode/uset.h>
#include <unicode/ustring.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace zapgram::grammar {

namespace {

std::vector<CodepointRange> RangesOf(const USet* set) {
  std::vector<CodepointRange> out;
  int32_t n = uset_getRangeCount(set);
  for (int32_t i = 0; i < n; ++i) {
    UChar32 lo = 0, hi = 0;
    UErrorCode ec = U_ZERO_ERROR;
    // Items below the range count are ranges; a null string buffer is fine for them.
    uset_getItem(set, i, &lo, &hi, nullptr, 0, &ec);
    if (U_FAILURE(ec)) continue;
    out.push_back({static_cast<uint32_t>(lo), static_cast<uint32_t>(hi)});
  }
  return NormalizeRanges(std::move(out), false);
}

std::vector<UChar> Widen(std::string_view s) {
  std::vector<UChar> out;
  for (char c : s) out.push_back(static_cast<UChar>(static_cast<unsigned char>(c)));
  return out;
}

// Python's str.isspace() (Unicode), as of CPython 3.12.
std::vector<CodepointRange> PythonSpace() {
  return NormalizeRanges({{0x09, 0x0D}, {0x1C, 0x20}, {0x85, 0x85}, {0xA0, 0xA0},
                          {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029},
                          {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}},
                         false);
}

std::vector<CodepointRange> EcmaSpace() {
  return NormalizeRanges({{0x09, 0x0D}, {0x20, 0x20}, {0xA0, 0xA0}, {0x1680, 0x1680},
                          {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F},
                          {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}},
                         false);
}

std::vector<CodepointRange> PythonWord() {
  UErrorCode ec = U_ZERO_ERROR;
  USet* word = uset_openEmpty();
  USet* part = uset_openEmpty();
  uset_applyIntPropertyValue(part, UCHAR_GENERAL_CATEGORY_MASK, U_GC_L_MASK, &ec);
  uset_addAll(word, part);
  for (int32_t nt : {U_NT_DECIMAL, U_NT_DIGIT, U_NT_NUMERIC}) {
    uset_applyIntPropertyValue(part, UCHAR_NUMERIC_TYPE, nt, &ec);
    uset_addAll(word, part);
  }
  uset_add(word, '_');
  std::vector<CodepointRange> out = RangesOf(word);
  uset_close(part);
  uset_close(word);
  return out;
}

std::vector<CodepointRange> PythonDigit() {
  UErrorCode ec = U_ZERO_ERROR;
  USet* set = uset_openEmpty();
  uset_applyIntPropertyValue(set, UCHAR_GENERAL_CATEGORY_MASK, U_GC_ND_MASK, &ec);
  std::vector<CodepointRange> out = RangesOf(set);
  uset_close(set);
  return out;
}

// Case-fold orbits: for every code point whose orbit has more than one member,
// the orbit's index; orbits as member lists. Built once.
struct FoldOrbits {
  std::vector<std::pair<uint32_t, uint32_t>> member_orbit;  // sorted by code point
  std::vector<std::vector<uint32_t>> orbits;
};

const FoldOrbits& Orbits() {
  static const FoldOrbits* orbits = [] {
    std::map<uint32_t, std::vector<uint32_t>> by_fold;
    for (UChar32 c = 0; c <= static_cast<UChar32>(kMaxCodepoint); ++c) {
      UChar32 f = u_foldCase(c, U_FOLD_CASE_DEFAULT);
      if (f != c) by_fold[static_cast<uint32_t>(f)].push_back(static_cast<uint32_t>(c));
    }
    auto* out = new FoldOrbits;
    for (auto& [fold, members] : by_fold) {
      members.push_back(fold);
      std::sort(members.begin(), members.end());
      members.erase(std::unique(members.begin(), members.end()), members.end());
      uint32_t id = static_cast<uint32_t>(out->orbits.size());
      for (uint32_t m : members) out->member_orbit.push_back({m, id});
      out->orbits.push_back(members);
    }
    std::sort(out->member_orbit.begin(), out->member_orbit.end());
    return out;
  }();
  return *orbits;
}

bool IsAsciiLetter(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

absl::StatusOr<std::vector<CodepointRange>> UnicodePropertyRanges(std::string_view name) {
  static std::mutex mu;
  static auto* cache = new std::map<std::string, std::vector<CodepointRange>, std::less<>>;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache->find(name);
    if (it != cache->end()) return it->second;
  }
  bool plausible = !name.empty() && name.size() <= 64;
  for (char c : name) {
    plausible &= (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-' || c == ' ' || c == '=' || c == '.';
  }
  if (!plausible) {
    return absl::InvalidArgumentError(
        absl::StrFormat("unknown Unicode property '%s'", std::string(name)));
  }
  std::string_view prop = name, value;
  if (size_t eq = name.find('='); eq != std::string_view::npos) {
    prop = name.substr(0, eq);
    value = name.substr(eq + 1);
  }
  std::vector<UChar> wprop = Widen(prop), wvalue = Widen(value);
  UErrorCode ec = U_ZERO_ERROR;
  USet* set = uset_openEmpty();
  uset_applyPropertyAlias(set, wprop.data(), static_cast<int32_t>(wprop.size()),
                          wvalue.empty() ? nullptr : wvalue.data(),
                          static_cast<int32_t>(wvalue.size()), &ec);
  if (U_FAILURE(ec)) {
    uset_close(set);
    return absl::InvalidArgumentError(
        absl::StrFormat("unknown Unicode property '%s'", std::string(name)));
  }
  std::vector<CodepointRange> ranges = RangesOf(set);
  uset_close(set);
  std::lock_guard<std::mutex> lock(mu);
  cache->emplace(std::string(name), ranges);
  return ranges;
}

const std::vector<CodepointRange>& ShorthandRanges(ShorthandClass c, ShorthandDialect dialect) {
  // Index: dialect * 3 + class. Built once, all together.
  static const std::vector<std::vector<CodepointRange>>* table = [] {
    auto* t = new std::vector<std::vector<CodepointRange>>(9);
    std::vector<CodepointRange> ascii_digit = {{'0', '9'}};
    std::vector<CodepointRange> ascii_word = NormalizeRanges(
        {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}, false);
    (*t)[0] = PythonDigit();
    (*t)[1] = PythonWord();
    (*t)[2] = PythonSpace();
    (*t)[3] = ascii_digit;
    (*t)[4] = ascii_word;
    (*t)[5] = NormalizeRanges({{0x09, 0x0D}, {0x20, 0x20}}, false);
    (*t)[6] = ascii_digit;
    (*t)[7] = ascii_word;
    (*t)[8] = EcmaSpace();
    return t;
  }();
  return (*table)[static_cast<int>(dialect) * 3 + static_cast<int>(c)];
}

std::vector<CodepointRange> CaseClosure(const std::vector<CodepointRange>& ranges,
                                        bool ascii_only) {
  std::vector<CodepointRange> out = ranges;
  if (ascii_only) {
    for (const CodepointRange& r : ranges) {
      for (uint32_t c = r.lo; c <= std::min<uint32_t>(r.hi, 0x7F); ++c) {
        if (IsAsciiLetter(c)) out.push_back({c ^ 0x20u, c ^ 0x20u});
      }
    }
    return NormalizeRanges(std::move(out), false);
  }
  const FoldOrbits& orbits = Orbits();
  // Merge walk: members in ascending order against the sorted ranges.
  size_t r = 0;
  for (const auto& [cp, orbit] : orbits.member_orbit) {
    while (r < ranges.size() && ranges[r].hi < cp) ++r;
    if (r == ranges.size()) break;
    if (cp < ranges[r].lo) continue;
    for (uint32_t m : orbits.orbits[orbit]) out.push_back({m, m});
  }
  return NormalizeRanges(std::move(out), false);
}

}  // namespace zapgram::grammar
