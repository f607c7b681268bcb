// String `format`s of JSON Schema as regexes over the decoded characters.
//
// Each supported format is written from its defining ABNF (RFC 3339 for
// date, time, date-time and, in its Appendix A, duration; RFC 3986 for uri,
// uri-reference and the IPv6 text forms; RFC 1123 for hostname; RFC 5321 for
// email; RFC 4122 for uuid; RFC 6901 for json-pointer and the relative JSON
// pointer draft) in the dialect of grammar/regex_compiler.h. Digits are
// always written [0-9]: in that dialect \d means every Unicode digit, and the
// JSON Schema suite rejects Bengali or fullwidth digits in every format.
//
// Exact, by construction:
//   date       days per month, and Feb 29 only in leap years (divisible by 4
//              and not by 100, or by 400), years 0000-9999.
//   time       hh:mm:ss with an optional fraction and a required offset
//              (Z, z or +hh:mm / -hh:mm). Second 60 (a leap second) only when
//              the time converted to UTC is 23:59, as the suite expects.
//   date-time  date, T or t, time.
//   duration   RFC 3339 Appendix A (no fractions, weeks alone).
//   ipv4       four 0-255 octets without leading zeros.
//   ipv6       every RFC 4291 text form (one "::" at most), with an optional
//              trailing dotted IPv4.
//   uri, uri-reference  RFC 3986 (absolute URI with scheme; URI or relative
//              reference); ASCII only, percent-encodings complete.
//   uuid       8-4-4-4-12 hex digits, any case, any version.
//   json-pointer, relative-json-pointer.
// Restrictions (documented output subsets or supersets):
//   time       a leap second is accepted only with an offset whose minutes
//              are 00, 15, 30 or 45 (every offset in use); "12:06:60+12:07"
//              is rejected although RFC 3339 allows it. Exactness there would
//              cost a DFA remembering all 1440 local times.
//   hostname   labels of 1-63 letters, digits and hyphens, not starting or
//              ending with a hyphen; the 253-byte total is NOT enforced (the
//              product with a length counter needs ~16k DFA states), and
//              A-labels ("xn--...") are not checked as Punycode.
//   email      local part: dot-atom or quoted string (RFC 5321); domain: a
//              hostname as above, [IPv4] or [IPv6:...]. The 64/254 length
//              limits are not enforced.
//
// Tests: tests/transforms/json_schema_formats_test.cc (calendar checker,
// inet_pton, uuid checker, RE2 differential on random and mutated strings,
// the JSON-Schema-Test-Suite's format instances).
#include "transforms/json_schema_formats.h"

#include <array>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace zapgram::transforms {
namespace {

constexpr char kDigit[] = "[0-9]";
constexpr char kHex[] = "[0-9A-Fa-f]";

std::string TwoDigits(int n) { return absl::StrFormat("%02d", n); }

// YYYY-MM-DD with the right number of days in each month.
std::string DateRegex() {
  const std::string year = "[0-9]{4}";
  // Leap years: YY in 04..96 step 4 (not 00), or YY = 00 with a century
  // divisible by 4.
  const std::string leap_year =
      "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)";
  return absl::StrCat("(?:", year, "-(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|", year,
                      "-(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|", year,
                      "-02-(?:0[1-9]|1[0-9]|2[0-8])|", leap_year, "-02-29)");
}

// RFC 3339 full-time. A leap second is valid when local time minus offset is
// 23:59 UTC; see the file comment for the offsets covered.
std::string TimeRegex() {
  const std::string hour = "(?:[01][0-9]|2[0-3])";
  const std::string minute = "[0-5][0-9]";
  const std::string fraction = "(?:\\.[0-9]+)?";
  const std::string offset = absl::StrCat("(?:[Zz]|[+-]", hour, ":", minute, ")");
  std::string ordinary = absl::StrCat(hour, ":", minute, ":", minute, fraction, offset);
  // Leap seconds: for each local hour h, the local minutes 59, 14, 29, 44
  // pair with offsets of minutes 00, 15, 30, 45:
  //   h:59 with +(h+1):00 or -(23-h):00 (h = 23: also Z)
  //   h:14 with +h:15 or -(23-h):45;  h:29 with +h:30 or -(23-h):30;
  //   h:44 with +h:45 or -(23-h):15.
  std::string leap;
  for (int h = 0; h < 24; ++h) {
    const std::string hh = TwoDigits(h);
    const std::string back = TwoDigits(23 - h);
    std::string zulu = h == 23 ? "[Zz]|" : "";
    absl::StrAppend(&leap, h == 0 ? "" : "|", hh, ":(?:59:60", fraction, "(?:", zulu, "\\+",
                    TwoDigits((h + 1) % 24), ":00|-", back, ":00)|14:60", fraction, "(?:\\+", hh,
                    ":15|-", back, ":45)|29:60", fraction, "(?:\\+", hh, ":30|-", back,
                    ":30)|44:60", fraction, "(?:\\+", hh, ":45|-", back, ":15))");
  }
  return absl::StrCat("(?:", ordinary, "|", leap, ")");
}

std::string DurationRegex() {
  const std::string n = "[0-9]+";
  const std::string second = n + "S";
  const std::string minute = absl::StrCat(n, "M(?:", second, ")?");
  const std::string hour = absl::StrCat(n, "H(?:", minute, ")?");
  const std::string time = absl::StrCat("T(?:", hour, "|", minute, "|", second, ")");
  const std::string day = n + "D";
  const std::string month = absl::StrCat(n, "M(?:", day, ")?");
  const std::string year = absl::StrCat(n, "Y(?:", month, ")?");
  const std::string date = absl::StrCat("(?:", day, "|", month, "|", year, ")(?:", time, ")?");
  return absl::StrCat("P(?:", date, "|", time, "|", n, "W)");
}

std::string Ipv4Regex() {
  const std::string octet = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
  return absl::StrCat(octet, "\\.", octet, "\\.", octet, "\\.", octet);
}

// RFC 3986 section 3.2.2 IPv6address: nine forms by where "::" stands.
std::string Ipv6Regex() {
  const std::string h16 = absl::StrCat(kHex, "{1,4}");
  const std::string h16c = absl::StrCat("(?:", h16, ":)");
  const std::string ls32 = absl::StrCat("(?:", h16, ":", h16, "|", Ipv4Regex(), ")");
  // [ *n( h16 ":" ) h16 ]
  auto head = [&](int n) {
    return n < 0 ? std::string() : absl::StrCat("(?:", h16c, "{0,", n, "}", h16, ")?");
  };
  std::array<std::string, 9> forms = {
      absl::StrCat(h16c, "{6}", ls32),
      absl::StrCat("::", h16c, "{5}", ls32),
      absl::StrCat("(?:", h16, ")?::", h16c, "{4}", ls32),
      absl::StrCat(head(1), "::", h16c, "{3}", ls32),
      absl::StrCat(head(2), "::", h16c, "{2}", ls32),
      absl::StrCat(head(3), "::", h16c, ls32),
      absl::StrCat(head(4), "::", ls32),
      absl::StrCat(head(5), "::", h16),
      absl::StrCat(head(6), "::"),
  };
  std::string out = "(?:";
  for (size_t i = 0; i < forms.size(); ++i) absl::StrAppend(&out, i ? "|" : "", forms[i]);
  return out + ")";
}

std::string HostnameRegex() {
  const std::string label = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
  return absl::StrCat(label, "(?:\\.", label, ")*");
}

std::string EmailRegex() {
  const std::string atom = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
  const std::string dot_string = absl::StrCat(atom, "(?:\\.", atom, ")*");
  // qtextSMTP (printable ASCII but " and \) or a quoted pair.
  const std::string quoted = "\"(?:[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\[\\x20-\\x7e])*\"";
  const std::string domain = absl::StrCat("(?:", HostnameRegex(), "|\\[", Ipv4Regex(),
                                          "\\]|\\[IPv6:", Ipv6Regex(), "\\])");
  return absl::StrCat("(?:", dot_string, "|", quoted, ")@", domain);
}

// RFC 3986 pieces.
struct UriParts {
  std::string pchar, authority, path_abempty, path_absolute, path_rootless, path_noscheme,
      query_fragment_tail;
};

UriParts MakeUriParts() {
  const std::string unreserved = "A-Za-z0-9\\-._~";
  const std::string sub_delims = "!$&'()*+,;=";
  const std::string pct = absl::StrCat("%", kHex, "{2}");
  UriParts p;
  p.pchar = absl::StrCat("(?:[", unreserved, sub_delims, ":@]|", pct, ")");
  const std::string segment = p.pchar + "*";
  const std::string segment_nz = p.pchar + "+";
  const std::string segment_nz_nc = absl::StrCat("(?:[", unreserved, sub_delims, "@]|", pct, ")+");
  const std::string userinfo = absl::StrCat("(?:[", unreserved, sub_delims, ":]|", pct, ")*");
  const std::string ipvfuture = absl::StrCat("v", kHex, "+\\.[", unreserved, sub_delims, ":]+");
  const std::string reg_name = absl::StrCat("(?:[", unreserved, sub_delims, "]|", pct, ")*");
  const std::string host = absl::StrCat("(?:\\[(?:", Ipv6Regex(), "|", ipvfuture, ")\\]|",
                                        Ipv4Regex(), "|", reg_name, ")");
  p.authority = absl::StrCat("(?:", userinfo, "@)?", host, "(?::[0-9]*)?");
  p.path_abempty = absl::StrCat("(?:/", segment, ")*");
  p.path_absolute = absl::StrCat("/(?:", segment_nz, "(?:/", segment, ")*)?");
  p.path_rootless = absl::StrCat(segment_nz, "(?:/", segment, ")*");
  p.path_noscheme = absl::StrCat(segment_nz_nc, "(?:/", segment, ")*");
  const std::string qf = absl::StrCat("(?:", p.pchar, "|[/?])*");
  p.query_fragment_tail = absl::StrCat("(?:\\?", qf, ")?(?:#", qf, ")?");
  return p;
}

std::string UriRegex() {
  UriParts p = MakeUriParts();
  return absl::StrCat("[A-Za-z][A-Za-z0-9+.-]*:(?://", p.authority, p.path_abempty, "|",
                      p.path_absolute, "|", p.path_rootless, ")?", p.query_fragment_tail);
}

std::string UriReferenceRegex() {
  UriParts p = MakeUriParts();
  std::string relative = absl::StrCat("(?://", p.authority, p.path_abempty, "|", p.path_absolute,
                                      "|", p.path_noscheme, ")?", p.query_fragment_tail);
  return absl::StrCat("(?:", UriRegex(), "|", relative, ")");
}

std::string JsonPointerRegex() { return "(?:/(?:[^/~]|~[01])*)*"; }

std::string RelativeJsonPointerRegex() {
  return absl::StrCat("(?:0|[1-9][0-9]*)(?:#|", JsonPointerRegex(), ")");
}

std::string UuidRegex() {
  return absl::StrCat(kHex, "{8}-", kHex, "{4}-", kHex, "{4}-", kHex, "{4}-", kHex, "{12}");
}

struct FormatEntry {
  std::string_view name;
  std::string (*make)();
};

constexpr FormatEntry kFormats[] = {
    {"date", DateRegex},
    {"time", TimeRegex},
    {"date-time", [] { return absl::StrCat(DateRegex(), "[Tt]", TimeRegex()); }},
    {"duration", DurationRegex},
    {"email", EmailRegex},
    {"hostname", HostnameRegex},
    {"ipv4", Ipv4Regex},
    {"ipv6", Ipv6Regex},
    {"uri", UriRegex},
    {"uri-reference", UriReferenceRegex},
    {"uuid", UuidRegex},
    {"json-pointer", JsonPointerRegex},
    {"relative-json-pointer", RelativeJsonPointerRegex},
    // draft-03 names of the same formats
    {"host-name", HostnameRegex},
    {"ip-address", Ipv4Regex},
};

}  // namespace

std::vector<std::string_view> SupportedFormats() {
  std::vector<std::string_view> names;
  for (const FormatEntry& f : kFormats) names.push_back(f.name);
  return names;
}

bool IsStandardFormat(std::string_view format) {
  static constexpr std::string_view kStandard[] = {
      "date-time", "date", "time", "duration", "email", "idn-email", "hostname",
      "idn-hostname", "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uuid",
      "uri-template", "json-pointer", "relative-json-pointer", "regex",
      // draft-03 names
      "host-name", "ip-address", "utc-millisec", "color", "style", "phone"};
  for (std::string_view name : kStandard) {
    if (name == format) return true;
  }
  return false;
}

absl::StatusOr<std::string> FormatRegex(std::string_view format) {
  for (const FormatEntry& f : kFormats) {
    if (f.name == format) return f.make();
  }
  return absl::NotFoundError(absl::StrFormat("no grammar for format \"%s\"", format));
}

}  // namespace zapgram::transforms
