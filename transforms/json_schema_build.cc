// MergedSchema -> grammar expression: the type dispatch of the converter.
//
// Build(conj) merges the conjunction (json_schema_merge.cc) and then:
//   1. `false`, or an empty type set  -> Void (matches nothing);
//   2. a pending anyOf/oneOf          -> a choice with one alternative per
//      branch, each the conjunction plus that branch with the combinator
//      marked as expanded (so siblings of anyOf constrain every branch).
//      oneOf is read as anyOf: the grammar accepts an instance matching
//      several branches (exclusivity is not context-free in general),
//      except a oneOf whose branches only list `required` keys, a common
//      "one of these key sets" (OneOfOfRequired: each branch forbids one key
//      of every other branch; exact);
//   2b. if/then/else  -> (if and then) | (not-if and else), for an `if`
//      testing one property, whose negation is a schema node written here
//      (NegatedIf: the key there and failing the test, or absent when `if`
//      required it); other `if`s are unsupported;
//   2c. dependentSchemas (and draft-07 schema-valued `dependencies`) ->
//      a non-object | for each subset P of the triggers, an object with
//      exactly P's triggers present and every schema of P; at most
//      kMaxDependentSchemas triggers per node;
//   3. `not`: a negated schema that only restricts types removes those
//      types (`not: {}` is false); one of string keywords (pattern, format,
//      lengths) or of a list of strings leaves the strings it does not
//      admit (MergedSchema::string_exclusions, the regex complement
//      (?~:...)); any other `not` is unsupported;
//   4. enum/const -> the listed values that satisfy the other keywords
//      (checked here on the values), each as its JSON text;
//   5. otherwise one alternative per remaining type: null, boolean, number
//      or integer (RFC 8259 syntax; bounds and multipleOf through
//      transforms/json_schema_formats.h AddNumber), string
//      (json_schema_strings.cc), array and object (json_schema_objects.cc).
//
// Tests: tests/transforms/json_schema_test.cc, the suite's type, enum,
// const, anyOf, oneOf, not and numeric groups.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "transforms/json_schema_formats.h"
#include "transforms/json_schema_internal.h"

namespace zapgram::transforms::json_schema_internal {
namespace {

using grammar::ExprId;

constexpr std::string_view kIntegerRegex = "-?(?:0|[1-9][0-9]*)";
// Every spelling of an integer that a finite automaton can tell: zero
// fraction digits and a non-negative exponent ("1.0", "1e308"; JSON Schema
// counts them as integers). "1.5e1" is an integer too, but telling that
// needs comparing a digit count with the exponent's value (not regular).
constexpr std::string_view kIntegerAnySpellingRegex =
    "-?(?:0|[1-9][0-9]*)(?:\\.0+)?(?:[eE]\\+?[0-9]+)?";
// if/then/else of one conjunction expanded at most (2^n cases).
constexpr uint32_t kMaxConditionals = 4;
// dependentSchemas: most schema-valued triggers of one node (2^n cases).
constexpr size_t kMaxDependentSchemas = 4;
// OneOfOfRequired: most alternatives an exact oneOf of `required` lists makes.
constexpr size_t kMaxOneOfChoices = 64;
constexpr std::string_view kNumberRegex = "-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?";

bool HasNumericKeywords(const MergedSchema& m) {
  return m.minimum || m.maximum || m.exclusive_minimum || m.exclusive_maximum ||
         !m.multiple_of.empty();
}

// Only `type` (or nothing at all) constrains the instances.
bool OnlyTypes(const MergedSchema& m) {
  return m.disjunction_node == nullptr && m.negations.empty() && !m.enum_values &&
         m.min_length == 0 && !m.max_length && m.patterns.empty() && m.formats.empty() &&
         m.string_exclusions.empty() && !m.no_true && !m.no_false &&
         !HasNumericKeywords(m) && !m.constrains_objects() && !m.constrains_arrays() &&
         m.required.empty();
}

uint8_t TypeOf(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return kNull;
    case Json::value_t::boolean:
      return kBoolean;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return kInteger;
    case Json::value_t::number_float: {
      const double d = v.get<double>();
      return std::isfinite(d) && d == std::floor(d) ? kInteger : kFraction;
    }
    case Json::value_t::string:
      return kString;
    case Json::value_t::array:
      return kArray;
    default:
      return kObject;
  }
}

bool NumberSatisfies(double x, const MergedSchema& m) {
  if (m.minimum && x < m.minimum->value) return false;
  if (m.maximum && x > m.maximum->value) return false;
  if (m.exclusive_minimum && x <= m.exclusive_minimum->value) return false;
  if (m.exclusive_maximum && x >= m.exclusive_maximum->value) return false;
  for (const Bound& d : m.multiple_of) {
    const double q = x / d.value;
    if (!std::isfinite(q) || std::fabs(q - std::round(q)) > 1e-9 * std::max(1.0, std::fabs(q))) {
      return false;
    }
  }
  return true;
}

// `conj` with `node`'s combinator `bit` marked as expanded (the node is
// added if it came in through a $ref or an allOf).
std::vector<ConjItem> Expanded(const Conj& conj, const Json* node, uint8_t bit) {
  std::vector<ConjItem> items = conj;
  items.push_back({node, bit});
  for (ConjItem& item : items) {
    if (item.node == node) item.skip |= bit;
  }
  return items;
}

}  // namespace

const Json* Converter::AddSynthetic(Json node, std::string pointer) {
  synthetic_.push_back(std::move(node));
  const Json* added = &synthetic_.back();
  pointer_of_[added] = std::move(pointer);
  return added;
}

absl::StatusOr<std::optional<std::string>> Converter::NegatedStrings(const MergedSchema& n,
                                                                       MergedSchema& m) {
  if (n.disjunction_node != nullptr || !n.negations.empty() || HasNumericKeywords(n) ||
      n.constrains_objects() || n.constrains_arrays() || !n.required.empty()) {
    return absl::UnimplementedError(
        "only a `not` of types, string keywords or a list of strings has a grammar");
  }
  if (n.enum_values) {
    // not(n) excludes exactly the listed values n admits: strings only here.
    std::vector<std::string> listed;
    for (const Json* v : *n.enum_values) {
      if (!(n.types & TypeOf(*v))) continue;
      if (v->is_null() || v->is_boolean()) continue;  // below, once the list is checked
      if (!v->is_string()) {
        return absl::UnimplementedError("a `not` listing numbers, objects or arrays");
      }
      absl::StatusOr<bool> ok = StringSatisfies(v->get<std::string>(), n);
      if (!ok.ok()) return ok.status();
      if (*ok) listed.push_back(RegexLiteral(v->get<std::string>()));
    }
    for (const Json* v : *n.enum_values) {
      if (!(n.types & TypeOf(*v))) continue;
      if (v->is_null()) m.types &= static_cast<uint8_t>(~kNull);
      if (v->is_boolean()) (v->get<bool>() ? m.no_true : m.no_false) = true;
    }
    if (listed.empty()) return std::optional<std::string>();
    return std::optional<std::string>(absl::StrJoin(listed, "|"));
  }
  if (!(n.types & kString)) return std::optional<std::string>();
  absl::StatusOr<std::string> regex = ExactStringRegex(n);
  if (!regex.ok()) return regex.status();
  return std::optional<std::string>(*std::move(regex));
}

absl::Status Converter::ApplyNegations(MergedSchema& m) {
  for (const auto& [negated, pointer, holder] : m.negations) {
    absl::StatusOr<MergedSchema> n = Merge(Conj{{negated, 0}});
    if (!n.ok()) return n.status();
    if (n->is_false) continue;  // not false = true
    if (OnlyTypes(*n)) {
      m.types &= static_cast<uint8_t>(~n->types);
      continue;
    }
    absl::StatusOr<std::optional<std::string>> excluded = NegatedStrings(*n, m);
    if (!excluded.ok()) {
      absl::Status st = Unsupported("not", pointer, std::string(excluded.status().message()));
      if (!st.ok()) return st;
      continue;  // lenient: the whole `not` goes (more than the schema, never less)
    }
    if (!n->enum_values) {
      // n holds on every value of its other types (string keywords do not
      // apply to them), so not(n) keeps none of them.
      m.types &= static_cast<uint8_t>(~(n->types & ~kString));
    }
    if (excluded->has_value()) m.string_exclusions.push_back(**excluded);
  }
  m.negations.clear();
  return absl::OkStatus();
}

absl::StatusOr<ExprId> Converter::BuildConditional(const Conj& conj, const MergedSchema& m) {
  const Json& holder = *m.conditional_node;
  const Json* if_node = &holder["if"];
  auto branch = [&](const char* key) -> const Json* {
    auto it = holder.find(key);
    return it == holder.end() ? nullptr : &*it;
  };
  // The conjunction with this if/then/else expanded.
  const std::vector<ConjItem> base = Expanded(conj, &holder, kSkipIf);
  auto with = [&](std::initializer_list<const Json*> nodes) {
    std::vector<ConjItem> items = base;
    for (const Json* n : nodes) {
      if (n != nullptr) items.push_back({n, 0});
    }
    return RefTo(MakeConj(std::move(items)));
  };
  if (if_node->is_boolean()) return with({if_node->get<bool>() ? branch("then") : branch("else")});
  if (branch("then") == nullptr && branch("else") == nullptr) return with({});
  // Each condition doubles the cases of the conjunction: a budget.
  absl::StatusOr<const Json*> not_if =
      m.pending_conditionals > kMaxConditionals
          ? absl::ResourceExhaustedError(absl::StrFormat(
                "%d if/then/else in one schema (one case per combination; at most %d)",
                m.pending_conditionals, kMaxConditionals))
          : NegatedIf(if_node);
  if (!not_if.ok()) {
    absl::Status st = Unsupported("if/then/else", PointerOf(if_node), std::string(not_if.status().message()));
    if (!st.ok()) return st;
    return with({});  // lenient: dropped (more than the schema, never less)
  }
  return g().AddChoice({with({if_node, branch("then")}), with({*not_if, branch("else")})});
}

const Json* Converter::NegatedRequired(const MergedSchema& n, const std::string& pointer) {
  if (n.required.empty() || n.disjunction_node != nullptr || !n.negations.empty() ||
      n.conditional_node != nullptr || n.enum_values || !n.property_names.empty() || n.min_properties > 0 || n.max_properties ||
      !n.dependent_required.empty() || !(n.types & kObject)) {
    return nullptr;
  }
  for (const Json* node : n.object_nodes) {  // there for `required` only
    for (const char* key : {"properties", "patternProperties", "additionalProperties"}) {
      if (node->contains(key)) return nullptr;
    }
  }
  // Keywords of other types only matter when n admits those types.
  const bool objects_only = n.types == kObject;
  if (!objects_only && (n.types != kAllTypes || n.min_length > 0 || n.max_length ||
                        !n.patterns.empty() || !n.formats.empty() || HasNumericKeywords(n) ||
                        n.constrains_arrays())) {
    return nullptr;
  }
  Json missing = Json::array();
  for (const std::string& key : n.required) {
    Json one = Json::object();
    one["properties"][key] = false;
    missing.push_back(std::move(one));
  }
  Json negated = Json::object();
  if (objects_only) {
    Json other_types = Json::object();
    other_types["not"]["type"] = "object";
    missing.push_back(std::move(other_types));
  } else {
    negated["type"] = "object";
  }
  negated["anyOf"] = std::move(missing);
  return AddSynthetic(std::move(negated), absl::StrCat(pointer, " (negated)"));
}

absl::StatusOr<const Json*> Converter::NegatedIf(const Json* if_node) {
  if (auto done = negated_if_.find(if_node); done != negated_if_.end()) return done->second;
  const absl::Status other_shape = absl::UnimplementedError(
      "only an `if` that tests one property ({properties: {k: ...}}, maybe required [k]) is "
      "negated");
  if (!if_node->is_object()) return other_shape;
  const Json* properties = nullptr;
  const Json* required = nullptr;
  for (auto it = if_node->begin(); it != if_node->end(); ++it) {
    if (it.key() == "properties") {
      properties = &*it;
    } else if (it.key() == "required") {
      required = &*it;
    } else if (it.key() != "title" && it.key() != "description" && it.key() != "$comment") {
      return other_shape;
    }
  }
  if (properties == nullptr || !properties->is_object() || properties->size() != 1) return other_shape;
  const std::string key = properties->begin().key();
  const Json& tested = properties->begin().value();
  bool requires_key = false;
  if (required != nullptr) {
    if (!required->is_array() || required->size() > 1) return other_shape;
    if (required->size() == 1) {
      if (!(*required)[0].is_string() || (*required)[0].get<std::string>() != key) return other_shape;
      requires_key = true;
    }
  }
  // The tested schema is copied: it must not refer elsewhere.
  std::vector<const Json*> scan = {&tested};
  while (!scan.empty()) {
    const Json* n = scan.back();
    scan.pop_back();
    if (n->is_object() && n->contains("$ref")) return other_shape;
    if (n->is_structured()) {
      for (const Json& child : *n) scan.push_back(&child);
    }
  }
  // not(if): an object (`properties` holds on anything else) whose key is
  // there and fails the test, or is absent when `if` required it.
  Json negated = Json::object();
  negated["type"] = "object";
  negated["properties"][key]["not"] = tested;
  if (!requires_key) negated["required"] = Json::array({key});
  const std::string at = PointerOf(if_node);
  const Json* node = AddSynthetic(std::move(negated), absl::StrCat(at, " (negated)"));
  pointer_of_[&(*node)["properties"][key]] = absl::StrCat(at, " (negated)/properties/", key);
  negated_if_[if_node] = node;
  return node;
}

std::optional<std::vector<ExprId>> Converter::OneOfOfRequired(const Json& holder,
                                                              const std::vector<ConjItem>& base) {
  const Json& branches = holder["oneOf"];
  if (branches.size() < 2) return std::nullopt;
  std::vector<std::vector<std::string>> required;
  for (const Json& b : branches) {
    if (!b.is_object()) return std::nullopt;
    std::vector<std::string> keys;
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (it.key() == "required" && it->is_array()) {
        for (const Json& k : *it) {
          if (!k.is_string()) return std::nullopt;
          keys.push_back(k.get<std::string>());
        }
      } else if (it.key() != "description" && it.key() != "title" && it.key() != "$comment") {
        return std::nullopt;
      }
    }
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    required.push_back(std::move(keys));
  }
  // Per branch i, per other branch j: the keys of j that i does not require.
  std::vector<std::vector<std::vector<std::string>>> outside(required.size());
  size_t total = 0;
  for (size_t i = 0; i < required.size(); ++i) {
    size_t choices = 1;
    for (size_t j = 0; j < required.size() && choices > 0; ++j) {
      if (j == i) continue;
      std::vector<std::string> d;
      std::set_difference(required[j].begin(), required[j].end(), required[i].begin(), required[i].end(),
                          std::back_inserter(d));
      choices *= d.size();  // empty: j holds whenever i does, so i never holds alone
      outside[i].push_back(std::move(d));
    }
    if (choices > kMaxOneOfChoices) return std::nullopt;
    if (choices == 0) outside[i].clear();
    total += choices;
  }
  if (total > kMaxOneOfChoices) return std::nullopt;
  const std::string at = PointerOf(&holder);
  std::vector<ExprId> alternatives;
  for (size_t i = 0; i < required.size(); ++i) {
    if (outside[i].empty()) continue;
    // Every choice of one key per other branch (mixed radix).
    std::vector<size_t> pick(outside[i].size(), 0);
    for (size_t choice = 0;; ++choice) {
      const std::string key = absl::StrCat(at, "#", i, "#", choice);
      const Json*& node = oneof_exclusions_[key];
      if (node == nullptr) {
        Json forbid = Json::object();
        forbid["type"] = "object";
        Json& properties = forbid["properties"] = Json::object();
        for (size_t j = 0; j < pick.size(); ++j) properties[outside[i][j][pick[j]]] = false;
        node = AddSynthetic(std::move(forbid), absl::StrCat(at, "/oneOf/", i, " (exclusive)"));
        for (auto it = (*node)["properties"].begin(); it != (*node)["properties"].end(); ++it) {
          pointer_of_[&*it] = absl::StrCat(at, "/oneOf/", i, " (exclusive)/properties/", it.key());
        }
      }
      std::vector<ConjItem> items = base;
      items.push_back({&branches[i], 0});
      items.push_back({node, 0});
      alternatives.push_back(RefTo(MakeConj(std::move(items))));
      size_t d = 0;
      while (d < pick.size() && ++pick[d] == outside[i][d].size()) pick[d++] = 0;
      if (d == pick.size()) break;
    }
  }
  return alternatives;
}

ExprId Converter::BuildDependentSchemas(const Conj& conj, const MergedSchema& m) {
  const std::vector<ConjItem> base = Expanded(conj, m.dependency_node, kSkipDependentSchemas);
  const std::string at = PointerOf(m.dependency_node);
  std::vector<ExprId> alternatives;
  // Not an object: no dependency applies.
  const std::string other_key = absl::StrCat(at, "#other");
  const Json*& other = dependency_cases_[other_key];
  if (other == nullptr) {
    other = AddSynthetic(Json::parse(R"({"type": ["null", "boolean", "number", "string", "array"]})"),
                         absl::StrCat(at, " (dependentSchemas: not an object)"));
  }
  std::vector<ConjItem> items = base;
  items.push_back({other, 0});
  alternatives.push_back(RefTo(MakeConj(std::move(items))));
  const size_t n = m.dependent_schemas.size();
  for (uint32_t subset = 0; subset < (1u << n); ++subset) {
    const std::string key = absl::StrCat(at, "#", subset);
    const Json*& present = dependency_cases_[key];
    if (present == nullptr) {
      Json node = Json::object();
      node["type"] = "object";
      node["required"] = Json::array();
      node["properties"] = Json::object();
      for (size_t t = 0; t < n; ++t) {
        const std::string& trigger = m.dependent_schemas[t].first;
        if (subset & (1u << t)) {
          node["required"].push_back(trigger);
        } else {
          node["properties"][trigger] = false;
        }
      }
      present = AddSynthetic(std::move(node), absl::StrCat(at, " (dependentSchemas case ", subset, ")"));
      for (auto it = (*present)["properties"].begin(); it != (*present)["properties"].end(); ++it) {
        pointer_of_[&*it] = absl::StrCat(at, " (dependentSchemas case ", subset, ")/properties/", it.key());
      }
    }
    std::vector<ConjItem> case_items = base;
    case_items.push_back({present, 0});
    for (size_t t = 0; t < n; ++t) {
      if (subset & (1u << t)) case_items.push_back({m.dependent_schemas[t].second, 0});
    }
    alternatives.push_back(RefTo(MakeConj(std::move(case_items))));
  }
  return g().AddChoice(std::move(alternatives));
}

absl::StatusOr<ExprId> Converter::Build(const Conj& conj) {
  if (conj.empty()) return AnyValue();
  absl::StatusOr<MergedSchema> merged = Merge(conj);
  if (!merged.ok()) return merged.status();
  MergedSchema& m = *merged;
  if (m.is_false) return Void();

  // 2. anyOf / oneOf.
  if (m.disjunction_node != nullptr) {
    const char* key = m.disjunction_bit == kSkipAnyOf ? "anyOf" : "oneOf";
    const std::vector<ConjItem> base = Expanded(conj, m.disjunction_node, m.disjunction_bit);
    if (m.disjunction_bit == kSkipOneOf) {
      if (std::optional<std::vector<ExprId>> exact = OneOfOfRequired(*m.disjunction_node, base)) {
        if (exact->empty()) return Void();
        return g().AddChoice(*std::move(exact));
      }
    }
    std::vector<ExprId> alternatives;
    for (const Json& branch : (*m.disjunction_node)[key]) {
      std::vector<ConjItem> items = base;
      items.push_back({&branch, 0});
      alternatives.push_back(RefTo(MakeConj(std::move(items))));
    }
    return g().AddChoice(std::move(alternatives));
  }

  // 2b. if/then/else.
  if (m.conditional_node != nullptr) return BuildConditional(conj, m);

  // 2c. dependentSchemas.
  if (m.dependency_node != nullptr) {
    if (m.dependent_schemas.size() > kMaxDependentSchemas) {
      absl::Status st = Unsupported(
          "dependentSchemas", PointerOf(m.dependency_node),
          absl::StrFormat("%d conditional schemas (one grammar per subset of triggers; at most %d)",
                          m.dependent_schemas.size(), kMaxDependentSchemas));
      if (!st.ok()) return st;
      return RefTo(MakeConj(Expanded(conj, m.dependency_node, kSkipDependentSchemas)));
    }
    return BuildDependentSchemas(conj, m);
  }

  // 3. not. One of required keys is rewritten as a schema node first.
  for (const MergedSchema::Negation& negation : m.negations) {
    absl::StatusOr<MergedSchema> n = Merge(Conj{{negation.schema, 0}});
    if (!n.ok()) return n.status();
    const Json* rewritten = NegatedRequired(*n, negation.pointer);
    if (rewritten == nullptr) continue;
    std::vector<ConjItem> items = Expanded(conj, negation.holder, kSkipNot);
    items.push_back({rewritten, 0});
    return RefTo(MakeConj(std::move(items)));
  }
  if (absl::Status st = ApplyNegations(m); !st.ok()) return st;
  if (m.types == 0) return Void();

  // 4. enum / const.
  if (m.enum_values.has_value()) {
    std::vector<ExprId> alternatives;
    for (const Json* value : *m.enum_values) {
      const uint8_t type = TypeOf(*value);
      if (!(m.types & type)) continue;
      if (value->is_boolean() && (value->get<bool>() ? m.no_true : m.no_false)) continue;
      if (type == kString) {
        absl::StatusOr<bool> ok = StringSatisfies(value->get<std::string>(), m);
        if (!ok.ok()) return ok.status();
        if (!*ok) continue;
      } else if (type == kInteger || type == kFraction) {
        if (!NumberSatisfies(value->get<double>(), m)) continue;
      } else if ((type == kObject && m.constrains_objects()) ||
                 (type == kArray && m.constrains_arrays())) {
        absl::Status st = Unsupported(
            "enum", m.pointer, "enum/const objects or arrays next to object or array keywords");
        if (!st.ok()) return st;
      }
      absl::StatusOr<ExprId> literal = ValueLiteral(*value);
      if (!literal.ok()) return literal.status();
      alternatives.push_back(*literal);
    }
    if (alternatives.empty()) return Void();
    return g().AddChoice(std::move(alternatives));
  }

  if (m.types == kAllTypes && OnlyTypes(m)) return AnyValue();

  // 5. one alternative per type.
  std::vector<ExprId> alternatives;
  if (m.types & kNull) alternatives.push_back(Literal("null"));
  if (m.types & kBoolean) {
    if (!m.no_true) alternatives.push_back(Literal("true"));
    if (!m.no_false) alternatives.push_back(Literal("false"));
  }
  if (m.types & (kInteger | kFraction)) {
    const bool integer = !(m.types & kFraction);
    if (!(m.types & kInteger)) {
      absl::Status st = Unsupported("not", m.pointer, "numbers that are not integers");
      if (!st.ok()) return st;
    }
    if (HasNumericKeywords(m)) {
      NumericConstraints nc;
      nc.integer = integer;
      if (m.minimum) nc.minimum = m.minimum->text;
      if (m.maximum) nc.maximum = m.maximum->text;
      if (m.exclusive_minimum) nc.exclusive_minimum = m.exclusive_minimum->text;
      if (m.exclusive_maximum) nc.exclusive_maximum = m.exclusive_maximum->text;
      if (m.multiple_of.size() > 1) {
        absl::Status st = Unsupported("multipleOf", m.pointer, "several different multipleOf");
        if (!st.ok()) return st;
      }
      if (!m.multiple_of.empty()) nc.multiple_of = m.multiple_of[0].text;
      absl::StatusOr<ExprId> number = AddNumber(nc, &g());
      if (!number.ok()) {
        if (number.status().code() != absl::StatusCode::kUnimplemented) {
          return absl::Status(number.status().code(),
                              absl::StrCat("at ", m.pointer, ": ", number.status().message()));
        }
        const char* keyword = m.multiple_of.empty() ? "minimum/maximum" : "multipleOf";
        absl::Status st = Unsupported(keyword, m.pointer, std::string(number.status().message()));
        if (!st.ok()) return st;
        number = g().AddRegex(std::string(integer ? kIntegerRegex : kNumberRegex), 0);
      }
      alternatives.push_back(*number);
    } else if (integer && options().any_spelling && zero_fraction_is_integer()) {
      alternatives.push_back(g().AddRegex(std::string(kIntegerAnySpellingRegex), 0));
    } else {
      alternatives.push_back(g().AddRegex(std::string(integer ? kIntegerRegex : kNumberRegex), 0));
    }
  }
  if (m.types & kString) {
    absl::StatusOr<ExprId> s = BuildString(m);
    if (!s.ok()) return s.status();
    if (!IsVoid(*s)) alternatives.push_back(*s);
  }
  if (m.types & kArray) {
    absl::StatusOr<ExprId> a = BuildArray(m);
    if (!a.ok()) return a.status();
    if (!IsVoid(*a)) alternatives.push_back(*a);
  }
  if (m.types & kObject) {
    absl::StatusOr<ExprId> o = BuildObject(m);
    if (!o.ok()) return o.status();
    if (!IsVoid(*o)) alternatives.push_back(*o);
  }
  if (alternatives.empty()) return Void();
  return g().AddChoice(std::move(alternatives));
}

}  // namespace zapgram::transforms::json_schema_internal
