// Strings, keys and literal JSON values of the converter, and the shared
// pieces every rule uses (whitespace, structural tokens, any value).
//
// Spelling. A schema speaks of decoded strings; the grammar matches JSON
// text. Plain strings (no pattern or format) accept every RFC 8259 spelling:
// raw characters, the short escapes and \uXXXX (a surrogate pair counts as
// one code point for minLength/maxLength, lone surrogates are refused).
// Strings under `pattern` or `format`, object keys, and enum/const values
// accept only the canonical spelling, which is what JSON serializers write
// (raw UTF-8; \" \\ and the control escapes): the pattern is compiled with
// kRegexJsonString (grammar/regex_compiler.h), which spells each matched
// code point that way, so no escape sequence can smuggle a character past
// a pattern. With any_spelling (validation) they accept every spelling
// instead: the J-regexes get kRegexJsonAnySpelling, and keys and string
// values become J-regexes of their text (StringLiteral); a pattern still
// speaks of decoded characters, so \u0041 passes wherever A does.
//
// `pattern` is an ECMA-262 *search*: SearchRegex adds `[\s\S]*` on each
// side of each top-level alternative unless it is anchored there (also
// through groups that span it: `(^a$)`), and reads
// \d \w \s as ASCII classes ((?a)), as ECMA-262 does for \d and \w.
// Intersections (two patterns, a pattern and a format, a pattern or format
// with minLength/maxLength) are one regex with the dialect's set operation
// (?&:A|B|[\s\S]{min,max}) (grammar/dfa_set_ops.h): the length operand
// counts decoded code points without unrolling. Past the automaton budget
// the intersection is unsupported (lenient: the last constraint is dropped).
//
// Whitespace: compact mode puts none between tokens; otherwise at most
// max_whitespace bytes of [ \t\n\r] around each structural character, or
// with kAnyWhitespace any run of them (RFC 8259's `ws`; Run() also puts one
// before and after the whole value then). One `ws` rule serves every place,
// so the policy is this one function.
//
// Tests: tests/transforms/json_schema_test.cc (Strings*, Patterns*, Keys*),
// the suite's pattern, minLength, maxLength, format and const groups.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "grammar/byte_automaton.h"
#include "grammar/regex_compiler.h"
#include "grammar/utf8.h"
#include "transforms/json_schema_formats.h"
#include "transforms/json_schema_internal.h"

namespace zapgram::transforms::json_schema_internal {
namespace {

using grammar::ExprId;
using grammar::RuleId;

// One character of a JSON string, any spelling, as one code point.
constexpr std::string_view kStringCharRegex =
    "[^\"\\\\\\x00-\\x1F]"
    "|\\\\[\"\\\\/bfnrt]"
    "|\\\\u(?:[0-9a-cA-CeEfF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2})"
    "|\\\\u[dD][89abAB][0-9a-fA-F]{2}\\\\u[dD][c-fC-F][0-9a-fA-F]{2}";

// Calls visit(i, depth) for each `(`, `)` and `|` of an ECMA pattern that
// is neither escaped nor inside a class; depth counts the groups open
// before it (after it, for `)`). Stops early when visit returns false.
template <typename Visit>
void ForEachStructuralChar(std::string_view p, Visit visit) {
  int depth = 0;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      ++i;
    } else if (in_class) {
      if (c == ']') in_class = false;
    } else if (c == '[') {
      in_class = true;
    } else if (c == '(' || c == ')' || c == '|') {
      if (c == '(') ++depth;
      if (c == ')') --depth;
      if (!visit(i, depth)) return;
    }
  }
}

// Splits an ECMA pattern at its top-level `|`.
std::vector<std::string_view> TopLevelAlternatives(std::string_view p) {
  std::vector<std::string_view> out;
  size_t start = 0;
  ForEachStructuralChar(p, [&](size_t i, int depth) {
    if (p[i] == '|' && depth == 0) {
      out.push_back(p.substr(start, i - start));
      start = i + 1;
    }
    return true;
  });
  out.push_back(p.substr(start));
  return out;
}

bool EndsWithDollar(std::string_view alt) {
  if (alt.empty() || alt.back() != '$') return false;
  size_t backslashes = 0;
  for (size_t i = alt.size() - 1; i-- > 0 && alt[i] == '\\';) ++backslashes;
  return backslashes % 2 == 0;
}

// The length of the group that opens `alt` ("(", "(?:" or a named group)
// when that group spans all of `alt`, and where its content starts; 0 if not.
size_t WholeGroupContent(std::string_view alt) {
  if (alt.size() < 2 || alt[0] != '(' || alt.back() != ')') return 0;
  bool spans = true;
  ForEachStructuralChar(alt, [&](size_t i, int depth) {
    if (alt[i] == ')' && depth == 0 && i + 1 < alt.size()) spans = false;  // closes early
    return spans;
  });
  if (!spans) return 0;
  if (alt.substr(0, 3) == "(?:") return 3;
  if (alt.substr(0, 3) == "(?<" && alt.substr(0, 4) != "(?<=" && alt.substr(0, 4) != "(?<!") {
    const size_t close = alt.find('>');
    return close == std::string_view::npos ? 0 : close + 1;
  }
  return alt.substr(0, 2) == "(?" ? 0 : 1;
}

// Whether an alternative of a search is anchored at its start (^) and at
// its end ($), looking into groups that span it whole: `(^a$)` is anchored
// as `^a$` is, `((^a)|(^b))` at its start (every alternative inside must be).
// A worklist, not recursion: patterns are user input.
std::pair<bool, bool> Anchoring(std::string_view alt) {
  auto all_anchored = [&](auto anchored_here) {
    std::vector<std::string_view> work = {alt};
    while (!work.empty()) {
      const std::string_view a = work.back();
      work.pop_back();
      if (anchored_here(a)) continue;
      const size_t open = WholeGroupContent(a);
      if (open == 0) return false;
      for (std::string_view inner : TopLevelAlternatives(a.substr(open, a.size() - open - 1))) {
        work.push_back(inner);
      }
    }
    return true;
  };
  return {all_anchored([](std::string_view a) { return !a.empty() && a[0] == '^'; }),
          all_anchored([](std::string_view a) { return EndsWithDollar(a); })};
}

}  // namespace

std::string JsonStringBody(std::string_view text) {
  std::string out;
  constexpr std::string_view kHex = "0123456789abcdef";
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(ch);
        }
    }
  }
  return out;
}

uint64_t CodepointCount(std::string_view text) {
  uint64_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// ECMA-262's \d \w (ASCII) and \s (its own whitespace list) in the regex
// compiler's dialect, where the shorthands follow Python's Unicode classes.
std::string EcmaShorthands(std::string_view p) {
  constexpr std::string_view kSpace =
      "\\t\\n\\v\\f\\r \\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000\\uFEFF";
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      std::string_view set = e == 'd' || e == 'D' ? "0-9"
                             : e == 'w' || e == 'W' ? "A-Za-z0-9_"
                             : e == 's' || e == 'S' ? kSpace
                                                    : "";
      const bool negated = e == 'D' || e == 'W' || e == 'S';
      if (!set.empty() && !(in_class && negated)) {
        absl::StrAppend(&out, in_class ? "" : (negated ? "[^" : "["), std::string(set),
                        in_class ? "" : "]");
      } else {
        out.push_back(c);
        out.push_back(e);
      }
      ++i;
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
    } else if (c == ']' && in_class && !(out.size() > 0 && (out.back() == '[' || out.ends_with("[^")))) {
      in_class = false;
    }
    out.push_back(c);
  }
  return out;
}

std::string SearchRegex(std::string_view ecma_pattern) {
  const std::string translated = EcmaShorthands(ecma_pattern);
  // Alternatives with the same anchoring share one `[\s\S]*(?:A|B)[\s\S]*`:
  // the same language as one search per alternative, and its DFA stays an
  // Aho-Corasick-sized automaton instead of tracking every search at once.
  std::string grouped[2][2];  // [anchored start][anchored end]: "A|B|..."
  for (std::string_view alt : TopLevelAlternatives(translated)) {
    const auto [start, end] = Anchoring(alt);
    std::string& group = grouped[start][end];
    absl::StrAppend(&group, group.empty() ? "" : "|", "(?:", std::string(alt), ")");
  }
  std::string out = "(?:";
  bool first = true;
  for (int start = 0; start < 2; ++start) {
    for (int end = 0; end < 2; ++end) {
      if (grouped[start][end].empty()) continue;
      if (!first) out += "|";
      first = false;
      absl::StrAppend(&out, start ? "" : "[\\s\\S]*", "(?:", grouped[start][end], ")",
                      end ? "" : "[\\s\\S]*");
    }
  }
  if (first) out += "[\\s\\S]*";  // no alternative at all: the empty pattern finds everything
  out += ")";
  return out;
}

ExprId Converter::Void() { return grammar_.AddCharClass({}, false); }

bool Converter::IsVoid(ExprId e) const {
  const grammar::Expr& x = grammar_.exprs[e];
  return x.kind == grammar::ExprKind::kCharClass && x.ranges.empty();
}

ExprId Converter::Ws() {
  if (options_.compact || options_.max_whitespace == 0) return grammar_.AddEmpty();
  if (!have_ws_) {
    auto ws_byte = [this] {
      return grammar_.AddCharClass({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}}, false);
    };
    if (options_.max_whitespace == kAnyWhitespace) {
      // ws ::= "" | [ \t\n\r] ws. Recursive, so transforms/regular_terminals.h
      // keeps the structure around it as rules: flattened into regex
      // terminals, the subset rules of any-order objects (MembersInAnyOrder)
      // become automata of 2^n x member states, seconds to compile, while
      // reading a document gains little from them.
      ws_rule_ = NewRule("ws", 0);
      grammar_.rules[ws_rule_].body = grammar_.AddChoice(
          {grammar_.AddEmpty(), grammar_.AddSequence({ws_byte(), grammar_.AddRuleRef(ws_rule_)})});
    } else {
      ws_rule_ = NewRule("ws", grammar_.AddRepeat(ws_byte(), 0, options_.max_whitespace));
    }
    have_ws_ = true;
  }
  return grammar_.AddRuleRef(ws_rule_);
}

ExprId Converter::Token(std::string_view structural) {
  return grammar_.AddSequence({Ws(), Literal(structural), Ws()});
}

RuleId Converter::NewRule(std::string_view name, ExprId body) {
  std::string unique(name);
  uint32_t& n = next_suffix_[unique];  // names tried so far for this base
  while (rule_names_.contains(unique)) unique = absl::StrCat(std::string(name), "-", ++n + 1);
  rule_names_.insert(unique);
  grammar_.rules.push_back({unique, body, {}});
  return static_cast<RuleId>(grammar_.rules.size() - 1);
}

ExprId Converter::AnyString() {
  if (!have_any_string_) {
    const RuleId ch = NewRule("json-char", grammar_.AddRegex(std::string(kStringCharRegex), 0));
    string_char_rule_ = ch;
    any_string_rule_ = NewRule(
        "json-string",
        grammar_.AddSequence({Literal("\""),
                              grammar_.AddRepeat(grammar_.AddRuleRef(ch), 0, grammar::kUnbounded),
                              Literal("\"")}));
    have_any_string_ = true;
  }
  return grammar_.AddRuleRef(any_string_rule_);
}

ExprId Converter::AnyValue() {
  if (!have_any_value_) {
    have_any_value_ = true;
    any_value_rule_ = NewRule("json-value", 0);
    const RuleId member = NewRule("json-member", 0);
    const RuleId object = NewRule("json-object", 0);
    const RuleId array = NewRule("json-array", 0);
    auto ref = [&](RuleId r) { return grammar_.AddRuleRef(r); };
    grammar_.rules[member].body = grammar_.AddSequence({AnyString(), Token(":"), ref(any_value_rule_)});
    // `open close` or `open item ("," item)* close`, whitespace as elsewhere.
    auto bracketed = [&](const char* open, RuleId item, const char* close) {
      return grammar_.AddChoice(
          {grammar_.AddSequence({Literal(open), Ws(), Literal(close)}),
           grammar_.AddSequence(
               {Literal(open), Ws(), ref(item),
                grammar_.AddRepeat(grammar_.AddSequence({Token(","), ref(item)}), 0,
                                   grammar::kUnbounded),
                Ws(), Literal(close)})});
    };
    grammar_.rules[object].body = bracketed("{", member, "}");
    grammar_.rules[array].body = bracketed("[", any_value_rule_, "]");
    grammar_.rules[any_value_rule_].body = grammar_.AddChoice(
        {ref(object), ref(array), AnyString(),
         grammar_.AddRegex("-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", 0),
         Literal("true"), Literal("false"), Literal("null")});
  }
  return grammar_.AddRuleRef(any_value_rule_);
}

absl::Status Converter::CheckSearchPattern(const std::string& pattern) {
  return CheckJsonStringRegex(SearchRegex(pattern));
}

uint32_t Converter::JsonStringFlags() const {
  return options_.any_spelling ? grammar::kRegexJsonString | grammar::kRegexJsonAnySpelling
                               : grammar::kRegexJsonString;
}

ExprId Converter::JsonStringMatching(const std::string& regex) {
  return grammar_.AddSequence(
      {Literal("\""), grammar_.AddRegex(regex, JsonStringFlags()), Literal("\"")});
}

ExprId Converter::StringLiteral(std::string_view s) {
  if (options_.any_spelling) return JsonStringMatching(RegexLiteral(s));
  return Literal(absl::StrCat("\"", JsonStringBody(s), "\""));
}

ExprId Converter::NamedMember(const NamedKey& k) {
  return grammar_.AddSequence({StringLiteral(k.key), Token(":"), RefTo(MakeConj(k.value))});
}

ExprId Converter::StringMatching(const std::string& pattern) {
  return JsonStringMatching(SearchRegex(pattern));
}

absl::StatusOr<bool> Converter::WholeMatch(const std::string& regex, const std::string& s) {
  auto it = pattern_dfas_.find(regex);
  if (it == pattern_dfas_.end()) {
    absl::StatusOr<grammar::ByteDfa> dfa = grammar::CompileRegex(regex, 0);
    if (!dfa.ok()) return dfa.status();
    it = pattern_dfas_.emplace(regex, *std::move(dfa)).first;
  }
  return it->second.Matches(s);
}

absl::StatusOr<bool> Converter::PatternFinds(const std::string& pattern, const std::string& s) {
  return WholeMatch(SearchRegex(pattern), s);
}

absl::StatusOr<bool> Converter::StringSatisfies(const std::string& s, const MergedSchema& m) {
  const uint64_t n = CodepointCount(s);
  if (n < m.min_length || (m.max_length && n > *m.max_length)) return false;
  // Patterns, formats and exclusions: the same regexes as the grammar's,
  // matched on the decoded text (no J flag).
  std::vector<std::pair<std::string, std::string>> operands;
  absl::Status st = StringOperands(m, &operands, [&](std::string_view keyword, std::string why) {
    return Unsupported(keyword, m.pointer, why);
  });
  if (!st.ok()) return st;
  for (const auto& [regex, keyword] : operands) {
    absl::StatusOr<bool> matches = WholeMatch(regex, s);
    if (!matches.ok()) {
      absl::Status refused = Unsupported(keyword, m.pointer, std::string(matches.status().message()));
      if (!refused.ok()) return refused;
      continue;
    }
    if (!*matches) return false;
  }
  return true;
}

std::string RegexLiteral(std::string_view text) {
  std::string out;
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) {
      absl::StrAppendFormat(&out, "\\x%02X", c);
    } else if (c < 0x80 && !absl::ascii_isalnum(c) && c != ' ' && c != '_') {
      out.push_back('\\');
      out.push_back(ch);
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

std::string IntersectionRegex(const std::vector<std::string>& operands) {
  if (operands.size() == 1) return operands[0];
  std::string out = "(?&:";
  for (size_t i = 0; i < operands.size(); ++i) {
    absl::StrAppend(&out, i ? "|" : "", "(?:", operands[i], ")");
  }
  return out + ")";
}

// IntersectionRegex of the regexes of (regex, keyword) operands.
std::string IntersectionOfOperands(const std::vector<std::pair<std::string, std::string>>& operands) {
  std::vector<std::string> texts;
  for (const auto& [regex, keyword] : operands) texts.push_back(regex);
  return IntersectionRegex(texts);
}

std::string LengthRegex(uint64_t min, std::optional<uint64_t> max) {
  return absl::StrCat("[\\s\\S]{", min, ",",
                      max && *max < grammar::kUnbounded ? absl::StrCat(*max) : std::string(), "}");
}

absl::Status Converter::CheckJsonStringRegex(const std::string& regex) {
  grammar::ByteNfa scratch;
  return grammar::AddRegex(scratch, 0, regex, JsonStringFlags()).status();
}

absl::Status Converter::StringOperands(
    const MergedSchema& m, std::vector<std::pair<std::string, std::string>>* operands,
    absl::FunctionRef<absl::Status(std::string_view keyword, std::string why)> refuse) {
  for (const std::string& p : m.patterns) {
    if (absl::Status parsed = CheckSearchPattern(p); !parsed.ok()) {
      if (absl::Status st = refuse("pattern", std::string(parsed.message())); !st.ok()) return st;
      continue;
    }
    operands->push_back({SearchRegex(p), "pattern"});
  }
  for (const std::string& f : m.formats) {
    absl::StatusOr<std::string> regex = FormatRegex(f);
    if (!regex.ok()) {
      absl::Status st = refuse("format", absl::StrFormat("no grammar for format '%s'", f));
      if (!st.ok()) return st;
      continue;
    }
    operands->push_back({*std::move(regex), "format"});
  }
  for (const std::string& excluded : m.string_exclusions) {
    operands->push_back({absl::StrCat("(?~:", excluded, ")"), "not"});
  }
  return absl::OkStatus();
}

std::optional<std::string> Converter::CountedStringRegex(const std::string& content) const {
  if (!grammar::MayHaveCountedBound(content)) return std::nullopt;
  const bool any = (JsonStringFlags() & grammar::kRegexJsonAnySpelling) != 0;
  std::string whole = absl::StrCat("\"(?", any ? "JE" : "J", ":", content, ")\"");
  auto [it, fresh] = counted_strings_.try_emplace(content, false);
  if (fresh) {
    absl::StatusOr<std::optional<grammar::CountedParts>> split = grammar::SplitCountedRegex(whole, 0);
    if (split.ok() && split->has_value() && (*split)->body.num_states() > 0 &&
        (*split)->max >= grammar::kCountedMinBound) {
      absl::StatusOr<grammar::CountedAutomaton> counted = grammar::CountedAutomaton::Build(**std::move(split));
      // A small count is the plain product (an ordinary terminal, merged
      // with its neighbours): at most as many states as the counted numbering.
      it->second = counted.ok() && counted->num_states() > kCountedStringMinStates;
    }
  }
  if (!it->second) return std::nullopt;
  return whole;
}

absl::StatusOr<std::optional<std::string>> Converter::StringContentRegex(const MergedSchema& m,
                                                                         bool counted_ok) {
  // The regular constraints, each a regex over decoded characters, with the
  // keyword it comes from.
  std::vector<std::pair<std::string, std::string>> operands;
  absl::Status st = StringOperands(m, &operands, [&](std::string_view keyword, std::string why) {
    return Unsupported(keyword, m.pointer, why);
  });
  if (!st.ok()) return st;
  if (operands.empty()) return std::optional<std::string>();
  // A length limit: counted code points, intersected too.
  if (m.min_length > 0 || m.max_length) {
    operands.push_back({LengthRegex(m.min_length, m.max_length),
                        m.max_length ? "maxLength" : "minLength"});
  }
  // Their intersection, if its automaton fits; else the last constraints go
  // (lenient: fewer constraints, never more).
  while (operands.size() > 1) {
    const std::string regex = IntersectionOfOperands(operands);
    if (counted_ok && CountedStringRegex(regex).has_value()) break;
    absl::Status fits = CheckJsonStringRegex(regex);
    if (fits.ok()) break;
    absl::Status refused = Unsupported(
        operands.back().second, m.pointer,
        absl::StrCat("the intersection of a string's pattern, format, length and `not`: ",
                     std::string(fits.message())));
    if (!refused.ok()) return refused;
    operands.pop_back();
  }
  return std::optional<std::string>(IntersectionOfOperands(operands));
}

absl::StatusOr<std::string> Converter::ExactStringRegex(const MergedSchema& m) {
  std::vector<std::pair<std::string, std::string>> operands;
  absl::Status st = StringOperands(m, &operands, [&](std::string_view keyword, std::string why) {
    return absl::UnimplementedError(absl::StrCat(std::string(keyword), ": ", why));
  });
  if (!st.ok()) return st;
  if (m.min_length > 0 || m.max_length) {
    operands.push_back({LengthRegex(m.min_length, m.max_length), "length"});
  }
  if (operands.empty()) return std::string("[\\s\\S]*");
  std::string regex = IntersectionOfOperands(operands);
  if (absl::Status fits = CheckJsonStringRegex(regex); !fits.ok()) return fits;
  return regex;
}

absl::StatusOr<ExprId> Converter::BuildString(const MergedSchema& m) {
  absl::StatusOr<std::optional<std::string>> regex = StringContentRegex(m, /*counted_ok=*/true);
  if (!regex.ok()) return regex.status();
  if (regex->has_value()) {
    if (std::optional<std::string> whole = CountedStringRegex(**regex)) return grammar_.AddRegex(*whole, 0);
    return JsonStringMatching(**regex);
  }
  const bool lengths = m.min_length > 0 || m.max_length.has_value();
  if (!lengths) return AnyString();
  // A counted terminal numbers (max + 1) x |character| states in 31 bits.
  if (m.max_length && *m.max_length > kMaxCountedLength) {
    absl::Status st = Unsupported("maxLength", m.pointer,
                                  absl::StrFormat("%d code points is above the counted string's budget of %d",
                                                  *m.max_length, kMaxCountedLength));
    if (!st.ok()) return st;
    MergedSchema unbounded = m;
    unbounded.max_length.reset();
    return BuildString(unbounded);
  }
  const uint32_t max = m.max_length ? static_cast<uint32_t>(*m.max_length) : grammar::kUnbounded;
  const uint32_t min = static_cast<uint32_t>(std::min<uint64_t>(m.min_length, grammar::kUnbounded - 1));
  // One terminal, quotes included: the lowering makes a bounded count a
  // counted terminal (grammar/counted_automaton.h), so masks inside the
  // string come from token sets, not from the parser stepping each
  // character rule; an unbounded one with a small minimum unrolls that
  // minimum. Only a large minimum without a maximum stays as rules.
  if (max != grammar::kUnbounded || min <= 16) {
    const std::string count = max == grammar::kUnbounded ? absl::StrCat("{", min, ",}")
                                                         : absl::StrCat("{", min, ",", max, "}");
    return grammar_.AddRegex(absl::StrCat("\"(?:", std::string(kStringCharRegex), ")", count, "\""), 0);
  }
  AnyString();  // defines the character rule
  return grammar_.AddSequence(
      {Literal("\""), grammar_.AddRepeat(grammar_.AddRuleRef(string_char_rule_), min, max),
       Literal("\"")});
}

// A key other than `names`: one J-regex terminal, the complement of the
// names within all JSON-string spellings ((?~:n1|n2|...), a product of the
// names' trie with the spelling automaton: linear in the names' bytes;
// 10,000 names compile). As one terminal with its quotes, the masks at an
// extra key come from token sets like any string's; spelled as rules (a
// trie of one-character rules, as before), every token starting with `"`
// was walked byte by byte through the parser, ~6 ms a mask with 130 names.
ExprId Converter::KeyOtherThan(const std::vector<std::string>& names) {
  if (names.empty()) return StringMatching("");
  std::vector<std::string> literals;
  literals.reserve(names.size());
  for (const std::string& name : names) literals.push_back(RegexLiteral(name));
  return JsonStringMatching(absl::StrCat("(?~:", absl::StrJoin(literals, "|"), ")"));
}

absl::StatusOr<ExprId> Converter::ValueLiteral(const Json& value) {
  // Post-order over the value with an explicit stack. An object's members
  // are written in the value's order, or in any order when the member order
  // is not the schema's (MembersInAnyOrder: each exactly once).
  struct Frame {
    const Json* value;
    size_t next = 0;
    std::vector<ExprId> items;      // members (`"key": value`) or elements
    Json::const_iterator member{};  // objects: the next member
  };
  const bool any_order = options_.member_order != MemberOrder::kSchema;
  std::vector<Frame> stack;
  stack.push_back(Frame{&value, 0, {}, {}});
  ExprId done = 0;
  bool have_done = false;
  while (!stack.empty()) {
    Frame& f = stack.back();
    const Json& v = *f.value;
    if (have_done) {  // a child finished: the last member's value, or an element
      f.items.back() = f.value->is_object()
                           ? grammar_.AddSequence({f.items.back(), Token(":"), done})
                           : done;
      have_done = false;
    }
    if (v.is_object() || v.is_array()) {
      const bool object = v.is_object();
      if (f.next < v.size()) {
        const size_t k = f.next++;
        if (object && k == 0) f.member = v.cbegin();
        const Json* child;
        if (object) {
          f.items.push_back(StringLiteral(f.member.key()));  // the key, until the value is done
          child = &*f.member;
          ++f.member;
        } else {
          f.items.push_back(0);
          child = &v[k];
        }
        stack.push_back(Frame{child, 0, {}, {}});
        continue;
      }
      if (f.items.empty()) {
        done = grammar_.AddSequence({Literal(object ? "{" : "["), Ws(), Literal(object ? "}" : "]")});
        have_done = true;
        stack.pop_back();
        continue;
      }
      ExprId inside;
      if (object && any_order && f.items.size() > 1 && f.items.size() <= kAnyOrderExactKeys) {
        inside = MembersInAnyOrder(f.items, std::nullopt, "const-object");
      } else {
        std::vector<ExprId> parts;
        for (size_t i = 0; i < f.items.size(); ++i) {
          if (i > 0) parts.push_back(Token(","));
          parts.push_back(f.items[i]);
        }
        inside = grammar_.AddSequence(std::move(parts));
      }
      done = grammar_.AddSequence(
          {Literal(object ? "{" : "["), Ws(), inside, Ws(), Literal(object ? "}" : "]")});
    } else if (v.is_string()) {
      done = StringLiteral(v.get_ref<const std::string&>());
    } else if (v.is_number()) {
      // Any spelling of the same number (1, 1.0, 1e0): a point range.
      NumericConstraints nc;
      nc.minimum = v.dump();
      nc.maximum = v.dump();
      absl::StatusOr<ExprId> number = AddNumber(nc, &grammar_);
      done = number.ok() ? *number : Literal(v.dump());
    } else {
      done = Literal(v.dump());  // true, false, null
    }
    have_done = true;
    stack.pop_back();
  }
  return done;
}

}  // namespace zapgram::transforms::json_schema_internal
