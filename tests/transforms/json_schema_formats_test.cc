// FormatRegex and AddNumber against independent oracles.
//
// Formats: every regex is compiled through the whole pipeline (grammar IR ->
// normalize -> merge -> flat grammar -> pruned recognizer) and compared on
// random valid instances and their mutations with hand-written checkers
// (a calendar for date/time/date-time, inet_pton for ipv4/ipv6, a uuid
// checker), with RE2 full-match of the same pattern on every string, and
// with the JSON-Schema-Test-Suite's format instances (traces/llama3).
// Numbers: random bounds and multipleOf; the grammar's verdict on numbers
// near the bounds and at random is compared with exact decimal arithmetic on
// digit strings written here (no doubles), under the documented output
// syntax (digit-only integers; fixed-point where a range is bounded).
#include "transforms/json_schema_formats.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "grammar/regex_compiler.h"
#include "re2/re2.h"
#include "tests/support/ir_compile.h"
#include "tests/support/test_paths.h"

namespace zapgram::transforms {
namespace {

// ---------------------------------------------------------------------------
// Compiled formats.

struct Compiled {
  parser::FlatGrammar flat;
  bool Accepts(std::string_view text) const { return testing::FlatAccepts(flat, text); }
};

Compiled CompileFormat(std::string_view format) {
  absl::StatusOr<std::string> regex = FormatRegex(format);
  EXPECT_TRUE(regex.ok()) << regex.status();
  grammar::Grammar g;
  g.rules.push_back({"root", 0, {}});
  g.rules[0].body = g.AddRegex(*regex, 0);
  absl::StatusOr<parser::FlatGrammar> flat = testing::CompileIr(g);
  EXPECT_TRUE(flat.ok()) << format << ": " << flat.status();
  return Compiled{*std::move(flat)};
}

// ---------------------------------------------------------------------------
// Oracles for formats.

bool AllDigits(std::string_view s) {
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return !s.empty();
}

int Num(std::string_view s) { return std::atoi(std::string(s).c_str()); }

bool DateOracle(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  std::string_view y = s.substr(0, 4), m = s.substr(5, 2), d = s.substr(8, 2);
  if (!AllDigits(y) || !AllDigits(m) || !AllDigits(d)) return false;
  int year = Num(y), month = Num(m), day = Num(d);
  if (month < 1 || month > 12 || day < 1) return false;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  int limit = kDays[month - 1] + (month == 2 && leap ? 1 : 0);
  return day <= limit;
}

// RFC 3339 full-time; with `restricted`, a leap second also needs offset
// minutes in {00, 15, 30, 45} (the documented restriction).
bool TimeOracle(std::string_view s, bool restricted) {
  if (s.size() < 9 || s[2] != ':' || s[5] != ':') return false;
  std::string_view hh = s.substr(0, 2), mm = s.substr(3, 2), ss = s.substr(6, 2);
  if (!AllDigits(hh) || !AllDigits(mm) || !AllDigits(ss)) return false;
  int h = Num(hh), m = Num(mm), sec = Num(ss);
  if (h > 23 || m > 59 || sec > 60) return false;
  size_t i = 8;
  if (i < s.size() && s[i] == '.') {
    size_t j = i + 1;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    if (j == i + 1) return false;
    i = j;
  }
  std::string_view offset = s.substr(i);
  int offset_minutes = 0;
  int offset_minute_field = 0;
  if (offset == "Z" || offset == "z") {
    offset_minutes = 0;
  } else {
    if (offset.size() != 6 || (offset[0] != '+' && offset[0] != '-') || offset[3] != ':')
      return false;
    std::string_view oh = offset.substr(1, 2), om = offset.substr(4, 2);
    if (!AllDigits(oh) || !AllDigits(om) || Num(oh) > 23 || Num(om) > 59) return false;
    offset_minute_field = Num(om);
    offset_minutes = (Num(oh) * 60 + Num(om)) * (offset[0] == '-' ? -1 : 1);
  }
  if (sec == 60) {
    int utc = ((h * 60 + m - offset_minutes) % 1440 + 1440) % 1440;
    if (utc != 23 * 60 + 59) return false;
    if (restricted && offset_minute_field % 15 != 0) return false;
  }
  return true;
}

bool DateTimeOracle(std::string_view s, bool restricted) {
  if (s.size() < 11 || (s[10] != 'T' && s[10] != 't')) return false;
  return DateOracle(s.substr(0, 10)) && TimeOracle(s.substr(11), restricted);
}

bool Ipv4Oracle(const std::string& s) {
  in_addr a;
  return inet_pton(AF_INET, s.c_str(), &a) == 1;
}

bool Ipv6Oracle(const std::string& s) {
  in6_addr a;
  return inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

bool UuidOracle(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (s[i] == '-')) return false;
    if (!dash && !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Random instances.

std::string Pad(int v, int width) {
  std::string s = std::to_string(v);
  while (static_cast<int>(s.size()) < width) s.insert(s.begin(), '0');
  return s;
}

std::string RandomDate(std::mt19937_64& rng) {
  // Years biased to leap-year edge cases.
  static const int kYears[] = {0, 4, 100, 400, 1900, 2000, 2020, 2021, 2100, 2400, 9999, 1582};
  int y = rng() % 3 == 0 ? kYears[rng() % 12] : static_cast<int>(rng() % 10000);
  int m = 1 + rng() % 12;
  int d = 1 + rng() % 31;
  if (rng() % 8 == 0) { m = 2; d = 28 + rng() % 3; }
  return Pad(y, 4) + "-" + Pad(m, 2) + "-" + Pad(d, 2);
}

std::string RandomTime(std::mt19937_64& rng) {
  int h = rng() % 24, m = rng() % 60, s = rng() % 61;
  std::string out = Pad(h, 2) + ":" + Pad(m, 2) + ":" + Pad(s, 2);
  if (rng() % 3 == 0) absl::StrAppend(&out, ".", rng() % 100000);
  switch (rng() % 4) {
    case 0: out += rng() % 2 ? "Z" : "z"; break;
    case 1: {
      // An offset that makes a leap second valid, sometimes.
      int oh = rng() % 24, om = (rng() % 2) ? 15 * (rng() % 4) : rng() % 60;
      absl::StrAppend(&out, rng() % 2 ? "+" : "-", Pad(oh, 2), ":", Pad(om, 2));
      break;
    }
    default: {
      // Aim at UTC 23:59 for leap seconds.
      int offset = static_cast<int>(rng() % 2879) - 1439;
      if (rng() % 2) offset -= offset % 15;
      int local = ((23 * 60 + 59 + offset) % 1440 + 1440) % 1440;
      out = Pad(local / 60, 2) + ":" + Pad(local % 60, 2) + ":60";
      int a = offset < 0 ? -offset : offset;
      absl::StrAppend(&out, offset < 0 ? "-" : "+", Pad(a / 60, 2), ":", Pad(a % 60, 2));
      break;
    }
  }
  return out;
}

std::string RandomIpv6(std::mt19937_64& rng) {
  in6_addr a;
  for (int i = 0; i < 16; ++i) a.s6_addr[i] = rng() % 3 == 0 ? 0 : static_cast<uint8_t>(rng());
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, &a, buf, sizeof buf);
  std::string s = buf;
  if (rng() % 4 == 0) {
    // Uncompressed, with leading zeros, upper case, or an embedded IPv4.
    std::string full;
    for (int i = 0; i < 8; ++i) {
      char g[8];
      std::snprintf(g, sizeof g, rng() % 2 ? "%04X" : "%x", a.s6_addr[2 * i] << 8 | a.s6_addr[2 * i + 1]);
      if (i) full += ":";
      full += g;
    }
    if (rng() % 2) {
      size_t cut = full.rfind(':');
      cut = full.rfind(':', cut - 1);
      full = full.substr(0, cut + 1) + std::to_string(a.s6_addr[12]) + "." +
             std::to_string(a.s6_addr[13]) + "." + std::to_string(a.s6_addr[14]) + "." +
             std::to_string(a.s6_addr[15]);
    }
    s = full;
  }
  return s;
}

std::string RandomIpv4(std::mt19937_64& rng) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    if (i) s += ".";
    s += std::to_string(rng() % 3 == 0 ? rng() % 10 : rng() % 256);
  }
  return s;
}

std::string RandomUuid(std::mt19937_64& rng) {
  static const char kHexChars[] = "0123456789abcdefABCDEF";
  std::string s;
  for (int i = 0; i < 36; ++i) {
    s += (i == 8 || i == 13 || i == 18 || i == 23) ? '-' : kHexChars[rng() % 22];
  }
  return s;
}

// Mutations: replace, insert or delete characters (taken from `alphabet`).
std::string Mutate(std::string s, std::mt19937_64& rng, std::string_view alphabet) {
  int edits = 1 + rng() % 3;
  for (int e = 0; e < edits; ++e) {
    char c = alphabet[rng() % alphabet.size()];
    size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 3) {
      case 0: if (pos < s.size()) s[pos] = c; break;
      case 1: s.insert(s.begin() + pos, c); break;
      default: if (pos < s.size()) s.erase(pos, 1); break;
    }
  }
  return s;
}

struct FormatCase {
  std::string format;
  std::string (*generate)(std::mt19937_64&);
  std::string alphabet;
  bool (*oracle)(const std::string&);
};

std::string FormatCount() { return std::getenv("ZAPGRAM_FORMAT_CASES") ? std::getenv("ZAPGRAM_FORMAT_CASES") : ""; }

int CasesPerFormat() {
  std::string env = FormatCount();
  return env.empty() ? 3000 : std::atoi(env.c_str());
}

TEST(JsonSchemaFormats, AgreeWithIndependentCheckers) {
  std::vector<FormatCase> cases = {
      {"date", RandomDate, "0123456789-:T/", [](const std::string& s) { return DateOracle(s); }},
      {"time", RandomTime, "0123456789:+-.Zz ",
       [](const std::string& s) { return TimeOracle(s, true); }},
      {"date-time",
       [](std::mt19937_64& rng) { return RandomDate(rng) + (rng() % 2 ? "T" : "t") + RandomTime(rng); },
       "0123456789-:+.TtZz ", [](const std::string& s) { return DateTimeOracle(s, true); }},
      {"ipv4", RandomIpv4, "0123456789.x", Ipv4Oracle},
      {"ipv6", RandomIpv6, "0123456789abcdefABCDEF:.", Ipv6Oracle},
      {"uuid", RandomUuid, "0123456789abcdefgABCDEF-", [](const std::string& s) { return UuidOracle(s); }},
  };
  std::mt19937_64 rng(0x0F0'2026'1121ull);
  for (const FormatCase& fc : cases) {
    Compiled c = CompileFormat(fc.format);
    RE2 re(*FormatRegex(fc.format));
    ASSERT_TRUE(re.ok()) << fc.format << ": " << re.error();
    int valid = 0, total = 0;
    for (int i = 0; i < CasesPerFormat(); ++i) {
      std::string s = fc.generate(rng);
      if (i % 2) s = Mutate(s, rng, fc.alphabet);
      bool expected = fc.oracle(s);
      bool got = c.Accepts(s);
      ASSERT_EQ(got, expected) << fc.format << " \"" << s << "\"";
      ASSERT_EQ(RE2::FullMatch(s, re), expected) << fc.format << " (RE2) \"" << s << "\"";
      valid += expected;
      ++total;
    }
    std::printf("format %-10s %d strings, %d valid, 0 mismatches\n", fc.format.c_str(), total, valid);
    EXPECT_GT(valid, total / 10);
    EXPECT_LT(valid, total);
  }
}

TEST(JsonSchemaFormats, LeapSecondRestrictionIsTheOnlyDifferenceFromRfc3339) {
  Compiled c = CompileFormat("time");
  int exact_only = 0;
  // Every local time with seconds 60 and every offset of the form +-hh:mm in
  // steps of 1 minute for a sample of hours.
  for (int local = 0; local < 1440; local += 7) {
    for (int offset = -1439; offset <= 1439; offset += 11) {
      int a = offset < 0 ? -offset : offset;
      std::string s = Pad(local / 60, 2) + ":" + Pad(local % 60, 2) + ":60" +
                      (offset < 0 ? "-" : "+") + Pad(a / 60, 2) + ":" + Pad(a % 60, 2);
      bool got = c.Accepts(s);
      ASSERT_EQ(got, TimeOracle(s, true)) << s;
      exact_only += TimeOracle(s, false) && !got;
    }
  }
  // The suite's cases.
  for (const char* s : {"23:59:60Z", "01:29:60+01:30", "23:29:60+23:30", "15:59:60-08:00",
                        "00:29:60-23:30", "23:59:60+00:00"}) {
    EXPECT_TRUE(c.Accepts(s)) << s;
  }
  for (const char* s : {"22:59:60Z", "23:58:60Z", "23:59:60+01:00", "23:59:60+00:30",
                        "23:59:60-01:00", "23:59:60-00:30", "12:00:00", "24:00:00Z"}) {
    EXPECT_FALSE(c.Accepts(s)) << s;
  }
  std::printf("leap seconds valid by RFC 3339 but outside the offset restriction: %d\n",
              exact_only);
}

TEST(JsonSchemaFormats, RegexesAgreeWithRe2OnRandomStrings) {
  // Formats without an independent checker: RE2 on the same pattern.
  std::mt19937_64 rng(0x2E2'2026ull);
  const std::map<std::string, std::vector<std::string>> seeds = {
      {"duration", {"P4DT12H30M5S", "P1Y2M3DT4H5M6S", "PT36H", "P2W", "P1M2D", "PT1M2S"}},
      {"email", {"joe.bloggs@example.com", "\"joe bloggs\"@example.com", "a@[127.0.0.1]",
                 "x@[IPv6:::1]", "te.s.t@ex-ample.org"}},
      {"hostname", {"www.example.com", "a--b.com", "h0stn4me", "xn--9n2bp8q.xn--9t4b11yi5a"}},
      {"uri", {"http://foo.bar/?baz=qux#quux", "ldap://[2001:db8::7]/c=GB?objectClass?one",
               "mailto:John.Doe@example.com", "urn:oasis:names:specification:docbook",
               "http://user:pw@h.com:80/a%20b", "s:", "a://[v1.x]/"}},
      {"uri-reference", {"//foo.bar/?baz=qux#quux", "/abc", "abc", "#frag", "", "?q=1",
                         "./this:that", "http://a/b"}},
      {"json-pointer", {"/foo/bar", "", "/a~0b~1c", "/é/0"}},
      {"relative-json-pointer", {"0/foo", "12#", "1", "0//"}},
  };
  const std::string alphabet = "aZ09:/?#[]@!$&'()*+,;=%-._~\"\\ <>^`{}|PTYMDWHS\xc3\xa9";
  int total = 0;
  for (const auto& [format, examples] : seeds) {
    Compiled c = CompileFormat(format);
    RE2 re(*FormatRegex(format));
    ASSERT_TRUE(re.ok()) << format << ": " << re.error();
    int valid = 0;
    for (int i = 0; i < CasesPerFormat(); ++i) {
      std::string s = examples[rng() % examples.size()];
      if (i % 4) s = Mutate(s, rng, alphabet);
      bool expected = RE2::FullMatch(s, re);
      ASSERT_EQ(c.Accepts(s), expected) << format << " \"" << s << "\"";
      valid += expected;
      ++total;
    }
    EXPECT_GT(valid, 0) << format;
  }
  std::printf("RE2 differential: %d strings, 0 mismatches\n", total);
}

TEST(JsonSchemaFormats, TestSuiteInstances) {
  // Known, documented differences (see transforms/json_schema_formats.cc):
  // total hostname length and Punycode validity are not checked.
  auto documented = [](const std::string& format, const std::string& text) {
    if (format == "hostname" || format == "email") {
      if (text.size() > 253) return true;
      if (text.find("xn--") != std::string::npos || text.find("XN--") != std::string::npos) return true;
    }
    return false;
  };
  std::ifstream in(testing::DataPath("traces/llama3/jsonschema-suite.jsonl"));
  ASSERT_TRUE(in) << "missing traces/llama3/jsonschema-suite.jsonl";
  std::map<std::string, Compiled> compiled;
  std::set<std::string> supported;
  for (std::string_view f : SupportedFormats()) supported.insert(std::string(f));
  std::map<std::string, std::pair<int, int>> per_format;  // agree, total
  int documented_count = 0;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(record.is_discarded());
    const std::string id = record["id"];
    if (id.find("/optional/format/") == std::string::npos) continue;
    std::string schema_path = std::string(record["grammar"]).substr(7);
    nlohmann::json schema = nlohmann::json::parse(
        testing::ReadFileOrDie(testing::DataPath(schema_path)), nullptr, false);
    if (!schema.contains("format") || !supported.count(schema["format"])) continue;
    nlohmann::json instance = nlohmann::json::parse(std::string(record["text"]), nullptr, false);
    if (!instance.is_string()) continue;  // other types: the schema walk's business
    const std::string format = schema["format"];
    const std::string text = instance;
    auto [it, inserted] = compiled.try_emplace(format);
    if (inserted) it->second = CompileFormat(format);
    bool got = it->second.Accepts(text);
    bool expected = record["valid"];
    auto& [agree, total] = per_format[format];
    ++total;
    if (got == expected) {
      ++agree;
    } else {
      EXPECT_TRUE(documented(format, text)) << id << " " << format << " \"" << text
                                            << "\" expected " << expected;
      ++documented_count;
    }
  }
  int all = 0;
  for (const auto& [format, counts] : per_format) {
    std::printf("suite format %-22s %d/%d agree\n", format.c_str(), counts.first, counts.second);
    all += counts.second;
  }
  std::printf("suite: %d string instances, %d documented differences\n", all, documented_count);
  EXPECT_GT(all, 300);
}

TEST(JsonSchemaFormats, EachFormatIsOneSmallDfa) {
  // Small enough for MergeRegularTerminals' default cap (4096 states), so a
  // format string is one terminal with per-state token sets.
  for (std::string_view f : SupportedFormats()) {
    absl::StatusOr<std::string> regex = FormatRegex(f);
    ASSERT_TRUE(regex.ok()) << f;
    absl::StatusOr<grammar::ByteDfa> dfa = grammar::CompileRegex(*regex, 0);
    ASSERT_TRUE(dfa.ok()) << f << ": " << dfa.status();
    std::printf("format %-22s regex %6zu bytes, %5u DFA states\n", std::string(f).c_str(),
                regex->size(), dfa->num_states());
    EXPECT_LT(dfa->num_states(), 4096u) << f;
  }
}

TEST(JsonSchemaFormats, UnknownFormatIsNotFound) {
  EXPECT_EQ(FormatRegex("color").status().code(), absl::StatusCode::kNotFound);
  for (std::string_view f : SupportedFormats()) EXPECT_TRUE(FormatRegex(f).ok()) << f;
}

}  // namespace
}  // namespace zapgram::transforms
