// XGrammar's rule attributes; what each means is in rule_attributes.h.
#include "grammar/rule_attributes.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "grammar/regex_render.h"

namespace zapgram::grammar {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool IsIdentifierChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

enum class ValueKind { kNone, kInteger, kNumber, kString, kOptionalString };

struct KnownAttribute {
  std::string_view name;
  ValueKind value;
  // Empty when zapgram reads it; else why it is refused.
  std::string_view refusal;
};

constexpr std::string_view kBudgetRefusal =
    "is not supported: a budget per occurrence of a rule, which XGrammar relaxes when the rule "
    "cannot end where it runs out, is not a language zapgram can mask exactly";
constexpr std::string_view kHiddenCaptureRefusal =
    "is not supported (it belongs to XGrammar's budgeted hidden captures)";

constexpr std::string_view kMarkerRefusal =
    "is not supported (XGrammar's lazy rules that end at a marker)";

constexpr KnownAttribute kAttributes[] = {
    {"suffix", ValueKind::kString, kMarkerRefusal},
    {"stop", ValueKind::kString, kMarkerRefusal},
    {"lazy", ValueKind::kNone, ""},
    {"capture", ValueKind::kOptionalString, ""},
    {"temperature", ValueKind::kNumber, ""},
    {"max_tokens", ValueKind::kInteger, kBudgetRefusal},
    {"max_chars", ValueKind::kInteger, kBudgetRefusal},
    {"stop_capture", ValueKind::kString, kHiddenCaptureRefusal},
    {"capture_hidden_suffix_bytes", ValueKind::kInteger, kHiddenCaptureRefusal},
    {"capture_hidden_stop_bytes", ValueKind::kInteger, kHiddenCaptureRefusal},
    {"capture_hidden_body_rule_id", ValueKind::kInteger, kHiddenCaptureRefusal},
    {"capture_hidden_marker_rule_id", ValueKind::kInteger, kHiddenCaptureRefusal},
};

}  // namespace

bool ParseRuleAttributes(std::string_view text, RuleAttributes* out, size_t* error_offset,
                         std::string* error) {
  size_t pos = 0;
  const auto skip_blanks = [&] {
    while (pos < text.size() && IsBlank(text[pos])) ++pos;
  };
  const auto fail = [&](size_t at, std::string message) {
    *error_offset = at;
    *error = std::move(message);
    return false;
  };
  std::set<std::string_view> seen;
  *out = RuleAttributes();
  while (true) {
    skip_blanks();
    const size_t name_begin = pos;
    while (pos < text.size() && IsIdentifierChar(text[pos])) ++pos;
    const std::string_view name = text.substr(name_begin, pos - name_begin);
    if (name.empty()) return fail(name_begin, "expected a rule attribute name");
    const KnownAttribute* known = nullptr;
    for (const KnownAttribute& a : kAttributes) {
      if (a.name == name) known = &a;
    }
    if (known == nullptr) {
      return fail(name_begin, absl::StrCat("unknown rule attribute '", std::string(name), "'"));
    }
    if (!seen.insert(name).second) {
      return fail(name_begin, absl::StrCat("rule attribute '", std::string(name), "' given twice"));
    }
    if (!known->refusal.empty()) {
      return fail(name_begin, absl::StrCat("rule attribute '", std::string(name), "' ",
                                           std::string(known->refusal)));
    }
    skip_blanks();
    const bool has_value = pos < text.size() && text[pos] == '=';
    if (has_value && known->value == ValueKind::kNone) {
      return fail(pos, absl::StrCat("rule attribute '", std::string(name), "' takes no value"));
    }
    if (!has_value && known->value != ValueKind::kNone && known->value != ValueKind::kOptionalString) {
      return fail(pos, absl::StrCat("rule attribute '", std::string(name), "' needs a value ('=...')"));
    }
    if (has_value) {
      ++pos;
      skip_blanks();
      const size_t value_begin = pos;
      if (known->value == ValueKind::kString || known->value == ValueKind::kOptionalString) {
        if (pos >= text.size() || text[pos] != '"') {
          return fail(pos, absl::StrCat("rule attribute '", std::string(name), "' needs a string"));
        }
        ++pos;
        while (pos < text.size() && text[pos] != '"') pos += text[pos] == '\\' ? 2 : 1;
        if (pos >= text.size()) return fail(value_begin, "unterminated string");
        if (pos == value_begin + 1) {
          return fail(value_begin, absl::StrCat("rule attribute '", std::string(name),
                                                "' needs a non-empty string"));
        }
        const std::string_view value = text.substr(value_begin + 1, pos - value_begin - 1);
        ++pos;
        if (name == "capture") {
          for (char c : value) {
            if (!IsIdentifierChar(c) && c != '-' && c != '.') {
              return fail(value_begin, "a capture name has only letters, digits, '_', '-' and '.'");
            }
          }
          out->capture_name = std::string(value);
        }
      } else {
        while (pos < text.size() && (IsIdentifierChar(text[pos]) || text[pos] == '.' ||
                                     text[pos] == '+' || text[pos] == '-')) {
          ++pos;
        }
        const std::string number(text.substr(value_begin, pos - value_begin));
        char* end = nullptr;
        if (number.empty()) return fail(value_begin, "expected a number");
        if (known->value == ValueKind::kInteger) {
          std::strtoll(number.c_str(), &end, 10);
        } else {
          std::strtod(number.c_str(), &end);
        }
        if (end != number.c_str() + number.size()) {
          return fail(value_begin, absl::StrCat("'", number, "' is not a number"));
        }
        if (name == "temperature") {
          const double t = std::strtod(number.c_str(), nullptr);
          if (!std::isfinite(t) || t < 0 || t > std::numeric_limits<float>::max()) {
            return fail(value_begin, "a temperature is a finite number >= 0");
          }
          out->temperature = static_cast<float>(t);
        }
      }
    }
    if (name == "lazy") out->lazy = true;
    if (name == "capture") out->capture = true;
    skip_blanks();
    if (pos == text.size()) return true;
    if (text[pos] != ',') return fail(pos, "expected ',' or ']' after a rule attribute");
    ++pos;
  }
}

void ApplyRuleAttributes(const RuleAttributes& attributes, Rule& rule) {
  if (attributes.capture) {
    rule.capture = attributes.capture_name.empty() ? rule.name : attributes.capture_name;
  }
  rule.temperature = attributes.temperature;
}

absl::Status MakeRuleLazy(Grammar& g, RuleId rule) {
  const ExprId body = g.rules[rule].body;
  if (const int64_t recursive = RecursiveRuleReachedFrom(g, body); recursive >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lazy rule '", g.rules[rule].name, "' reaches the recursive rule '",
        g.rules[recursive].name, "'; zapgram makes only regular rules lazy"));
  }
  constexpr size_t kMaxRegexBytes = size_t{1} << 20;
  absl::StatusOr<std::string> regex =
      RenderRegex(g, body, [&](RuleId r) { return g.rules[r].body; }, kMaxRegexBytes);
  if (!regex.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("lazy rule '", g.rules[rule].name,
                                                   "' is not regular: ", regex.status().message()));
  }
  // The body's strings without those that extend a shorter one of them.
  const std::string pattern = absl::StrCat("(?&:(?:", *regex, ")|(?~:(?:", *regex, ")[\\s\\S]+))");
  g.rules[rule].body = g.AddRegex(pattern, 0, g.exprs[body].loc);
  return absl::OkStatus();
}

}  // namespace zapgram::grammar
