// A conjunction of schema nodes -> one MergedSchema: the keyword-wise
// intersection that the grammar builders read.
//
// The conjunction is flattened with an explicit worklist: `allOf` members
// and `$ref` targets join it (in draft-07 and earlier a `$ref` replaces its
// siblings; from 2019-09 on it is one more conjunct), each node once.
// Keywords then intersect as sets of instances do:
//   type                intersection of the type sets (integer within number)
//   enum, const         intersection of the value lists (JSON equality)
//   minLength, minimum, minItems, minProperties, ...   the tightest bound
//   pattern, format, multipleOf   collected (json_schema_strings.cc and
//                       transforms/json_schema_formats.h decide what a list
//                       of several means)
//   required            union
//   properties, patternProperties, additionalProperties, items, prefixItems,
//   additionalItems     the nodes are kept (json_schema_objects.cc combines
//                       them per key and per position, which is exact)
//   anyOf, oneOf        the first one not yet expanded is recorded; the
//                       builder turns it into alternatives (oneOf as a union)
//   not                 recorded for the builder
//   dependentRequired   (and `dependencies` arrays) collected for the object;
//   dependentSchemas    (and `dependencies` schemas) of the first node that
//                       has them recorded, for the builder to expand
//                       builder; conditional schemas are unsupported
//   if/then/else        the first one not yet expanded is recorded for the
//                       builder (like anyOf)
// Keywords a context-free grammar cannot enforce (uniqueItems, contains,
// dependentSchemas, unevaluated*, $dynamicRef) go to
// Converter::Unsupported: an error, or a warning in lenient mode.
// Annotations and unknown keywords are ignored, as JSON Schema says.
//
// Tests: tests/transforms/json_schema_test.cc (Merge*, AllOf*), the suite's
// allOf, ref and boolean_schema groups (tests/data/jsonschema_suite_test.cc).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "transforms/json_schema_formats.h"
#include "transforms/json_schema_internal.h"

namespace zapgram::transforms::json_schema_internal {
namespace {

absl::Status NotA(std::string_view what, const std::string& pointer, const Json& value) {
  return absl::InvalidArgumentError(absl::StrFormat("%s at %s must be %s, not %s",
                                                    pointer.substr(pointer.rfind('/') + 1),
                                                    pointer, what, value.type_name()));
}

absl::StatusOr<uint8_t> TypeBits(const Json& type, const std::string& pointer) {
  auto one = [&](const Json& name) -> absl::StatusOr<uint8_t> {
    if (!name.is_string()) return NotA("a type name", pointer, name);
    const std::string& s = name.get_ref<const std::string&>();
    if (s == "null") return kNull;
    if (s == "boolean") return kBoolean;
    if (s == "integer") return kInteger;
    if (s == "number") return static_cast<uint8_t>(kInteger | kFraction);
    if (s == "string") return kString;
    if (s == "array") return kArray;
    if (s == "object") return kObject;
    return absl::InvalidArgumentError(
        absl::StrFormat("type at %s: unknown type name '%s'", pointer, s));
  };
  if (!type.is_array()) return one(type);
  uint8_t bits = 0;
  for (const Json& t : type) {
    absl::StatusOr<uint8_t> b = one(t);
    if (!b.ok()) return b.status();
    bits |= *b;
  }
  return bits;
}

absl::StatusOr<uint64_t> Count(const Json& v, const std::string& pointer) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  if (v.is_number_float()) {
    // An integral double (5.0, 1e30): at 2^64 and above it saturates, as an
    // integer there means no bound (converting it would be undefined).
    const double d = v.get<double>();
    if (d >= 0 && d == std::floor(d)) {
      return d >= 18446744073709551616.0 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(d);
    }
  }
  return NotA("a non-negative integer", pointer, v);
}

absl::StatusOr<Bound> ToBound(const Json& v, const std::string& pointer) {
  if (!v.is_number()) return NotA("a number", pointer, v);
  return Bound{v.dump(), v.get<double>()};
}

// Keeps the tighter of two bounds: larger lower bound (`lower`) or smaller upper.
void Tighten(std::optional<Bound>* slot, Bound b, bool lower) {
  if (!slot->has_value() || (lower ? b.value > (*slot)->value : b.value < (*slot)->value)) {
    *slot = std::move(b);
  }
}

}  // namespace

absl::StatusOr<MergedSchema> Converter::Merge(const Conj& conj) {
  MergedSchema m;
  m.items = conj;
  m.pointer = conj.empty() ? "#" : PointerOf(conj[0].node);
  absl::flat_hash_map<const Json*, uint8_t> skip_of;
  for (const ConjItem& item : conj) skip_of[item.node] |= item.skip;
  std::vector<const Json*> work;
  for (auto it = conj.rbegin(); it != conj.rend(); ++it) work.push_back(it->node);
  absl::flat_hash_set<const Json*> seen;
  absl::flat_hash_set<const Json*> object_seen;
  absl::flat_hash_set<std::string> required_seen;  // m.required's names
  while (!work.empty()) {
    const Json* node = work.back();
    work.pop_back();
    if (!seen.insert(node).second) continue;
    const Json& s = *node;
    const std::string ptr = PointerOf(node);
    if (s.is_boolean()) {
      if (!s.get<bool>()) m.is_false = true;
      continue;
    }
    if (!s.is_object()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the schema at %s must be an object or a boolean, not %s", ptr, s.type_name()));
    }
    auto skip_it = skip_of.find(node);
    const uint8_t skip = skip_it == skip_of.end() ? 0 : skip_it->second;
    auto ref = s.find("$ref");
    if (ref != s.end()) {
      if (!ref->is_string()) return NotA("a string", ptr + "/$ref", *ref);
      absl::StatusOr<const Json*> target = ResolveRef(node, ref->get<std::string>());
      if (!target.ok()) return target.status();
      work.push_back(*target);
      if (legacy_ref()) continue;
    }
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& key = it.key();
      const Json& v = *it;
      const std::string at = absl::StrCat(ptr, "/", key);
      if (!KeywordExists(key)) continue;
      absl::Status st;
      if (key == "allOf") {
        if (!v.is_array() || v.empty()) return NotA("a non-empty array", at, v);
        for (auto c = v.rbegin(); c != v.rend(); ++c) work.push_back(&*c);
      } else if (key == "anyOf" || key == "oneOf") {
        if (!v.is_array() || v.empty()) return NotA("a non-empty array", at, v);
        const uint8_t bit = key == "anyOf" ? kSkipAnyOf : kSkipOneOf;
        if (!(skip & bit) && m.disjunction_node == nullptr) {
          m.disjunction_node = node;
          m.disjunction_bit = bit;
        }
      } else if (key == "not") {
        if (!(skip & kSkipNot)) m.negations.push_back({&v, at, node});
      } else if (key == "type") {
        absl::StatusOr<uint8_t> bits = TypeBits(v, at);
        if (!bits.ok()) return bits.status();
        m.types &= *bits;
      } else if (key == "enum" || key == "const") {
        std::vector<const Json*> values;
        if (key == "enum") {
          if (!v.is_array()) return NotA("an array", at, v);
          for (const Json& e : v) values.push_back(&e);
        } else {
          values.push_back(&v);
        }
        if (m.enum_values.has_value()) {
          std::vector<const Json*> kept;
          for (const Json* a : *m.enum_values) {
            for (const Json* b : values) {
              if (*a == *b) {
                kept.push_back(a);
                break;
              }
            }
          }
          values = std::move(kept);
        }
        m.enum_values = std::move(values);
      } else if (key == "minLength" || key == "maxLength") {
        absl::StatusOr<uint64_t> n = Count(v, at);
        if (!n.ok()) return n.status();
        if (key == "minLength") {
          m.min_length = std::max(m.min_length, *n);
        } else {
          m.max_length = std::min(m.max_length.value_or(*n), *n);
        }
      } else if (key == "pattern") {
        if (!v.is_string()) return NotA("a string", at, v);
        if (std::find(m.patterns.begin(), m.patterns.end(), v.get<std::string>()) == m.patterns.end()) {
          m.patterns.push_back(v.get<std::string>());
        }
      } else if (key == "format") {
        if (!v.is_string()) return NotA("a string", at, v);
        if (!IsStandardFormat(v.get_ref<const std::string&>())) {
          // JSON Schema: a format outside the specification is an
          // annotation, not a constraint (validators accept any string).
          // The specification's own formats are asserted, or unsupported
          // when there is no grammar for them (BuildString).
          Ignored("format", ptr,
                  absl::StrFormat("'%s' is not a format of the JSON Schema specification, so "
                                  "it is an annotation and constrains nothing",
                                  v.get_ref<const std::string&>()));
          continue;
        }
        if (std::find(m.formats.begin(), m.formats.end(), v.get<std::string>()) == m.formats.end()) {
          m.formats.push_back(v.get<std::string>());
        }
      } else if (key == "minimum" || key == "maximum" || key == "exclusiveMinimum" ||
                 key == "exclusiveMaximum") {
        if (v.is_boolean()) continue;  // draft-04 flag: read with minimum/maximum
        absl::StatusOr<Bound> b = ToBound(v, at);
        if (!b.ok()) return b.status();
        if (key == "minimum") {
          if (s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_boolean() &&
              s["exclusiveMinimum"].get<bool>()) {
            Tighten(&m.exclusive_minimum, *std::move(b), true);
          } else {
            Tighten(&m.minimum, *std::move(b), true);
          }
        } else if (key == "maximum") {
          if (s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_boolean() &&
              s["exclusiveMaximum"].get<bool>()) {
            Tighten(&m.exclusive_maximum, *std::move(b), false);
          } else {
            Tighten(&m.maximum, *std::move(b), false);
          }
        } else if (key == "exclusiveMinimum") {
          Tighten(&m.exclusive_minimum, *std::move(b), true);
        } else {
          Tighten(&m.exclusive_maximum, *std::move(b), false);
        }
      } else if (key == "multipleOf") {
        absl::StatusOr<Bound> b = ToBound(v, at);
        if (!b.ok()) return b.status();
        if (b->value <= 0) return NotA("a number > 0", at, v);
        bool dup = false;
        for (const Bound& x : m.multiple_of) dup = dup || x.value == b->value;
        if (!dup) m.multiple_of.push_back(*std::move(b));
      } else if (key == "properties" || key == "patternProperties" ||
                 key == "additionalProperties" || key == "required") {
        if ((key == "properties" || key == "patternProperties") && !v.is_object()) {
          return NotA("an object", at, v);
        }
        if (key == "required") {
          if (!v.is_array()) return NotA("an array", at, v);
          for (const Json& r : v) {
            if (!r.is_string()) return NotA("an array of strings", at, v);
            if (required_seen.insert(r.get<std::string>()).second) m.required.push_back(r.get<std::string>());
          }
        }
        if (object_seen.insert(node).second) m.object_nodes.push_back(node);
      } else if (key == "propertyNames") {
        m.property_names.push_back(&v);
      } else if (key == "minProperties" || key == "maxProperties" || key == "minItems" ||
                 key == "maxItems") {
        absl::StatusOr<uint64_t> n = Count(v, at);
        if (!n.ok()) return n.status();
        if (key == "minProperties") m.min_properties = std::max(m.min_properties, *n);
        if (key == "maxProperties") m.max_properties = std::min(m.max_properties.value_or(*n), *n);
        if (key == "minItems") m.min_items = std::max(m.min_items, *n);
        if (key == "maxItems") m.max_items = std::min(m.max_items.value_or(*n), *n);
      } else if (key == "items" || key == "prefixItems") {
        if (key == "items" && s.contains("prefixItems") && !v.is_array()) continue;  // with prefixItems
        MergedSchema::ArrayNode a;
        const Json* tuple = key == "prefixItems" ? &v : (v.is_array() ? &v : nullptr);
        if (tuple != nullptr) {
          if (!tuple->is_array()) return NotA("an array", at, v);
          for (const Json& e : *tuple) a.prefix.push_back(&e);
          auto rest = s.find(key == "prefixItems" ? "items" : "additionalItems");
          if (rest != s.end()) a.rest = &*rest;
        } else {
          a.rest = &v;
        }
        m.array_nodes.push_back(std::move(a));
      } else if (key == "uniqueItems") {
        if (v.is_boolean() && v.get<bool>()) {
          st = Unsupported(key, ptr, "a context-free grammar cannot compare array items");
        }
      } else if (key == "contains") {
        st = Unsupported(key, ptr, "a context-free grammar cannot count matching items");
      } else if (key == "if") {
        if (!(skip & kSkipIf)) {
          if (m.conditional_node == nullptr) m.conditional_node = node;
          ++m.pending_conditionals;
        }
      } else if (key == "dependentRequired" || key == "dependentSchemas" ||
                 key == "dependencies") {
        // Lists of keys (dependentRequired, `dependencies` arrays) have a
        // grammar (BuildObject: one case per set of triggers present); a
        // schema that constrains nothing (true, {}) is no condition at all;
        // other schemas are conditional schemas.
        if (!v.is_object()) return NotA("an object", at, v);
        for (auto it = v.begin(); it != v.end(); ++it) {
          const Json& dep = *it;
          const bool no_condition = (dep.is_boolean() && dep.get<bool>()) ||
                                    (dep.is_object() && dep.empty());
          if (no_condition && key != "dependentRequired") continue;
          if (dep.is_array() && key != "dependentSchemas") {
            std::vector<std::string> needed;
            for (const Json& k : dep) {
              if (!k.is_string()) return NotA("an array of strings", at, v);
              needed.push_back(k.get<std::string>());
            }
            m.dependent_required.push_back({it.key(), std::move(needed)});
            continue;
          }
          if (key == "dependentRequired") return NotA("an object of string arrays", at, v);
          // A schema that applies when the trigger is present: expanded by
          // the builder (BuildDependentSchemas), node by node.
          if (skip & kSkipDependentSchemas) continue;
          if (m.dependency_node == nullptr) m.dependency_node = node;
          if (m.dependency_node == node) m.dependent_schemas.push_back({it.key(), &dep});
        }
      } else if (key == "unevaluatedProperties" || key == "unevaluatedItems") {
        if (!(v.is_boolean() && v.get<bool>())) {
          st = Unsupported(key, ptr, "evaluation tracking across subschemas is not converted");
        }
      } else if (key == "$dynamicRef" || key == "$recursiveRef") {
        st = Unsupported(key, ptr, "dynamic scopes are not resolved");
      }
      // Everything else is an annotation ($id, title, description, default,
      // examples, $defs, definitions, contentMediaType, ...) or unknown, and
      // unknown keywords are ignored by JSON Schema.
      if (!st.ok()) return st;
    }
  }
  if (m.types == 0) m.is_false = true;
  if (m.enum_values.has_value() && m.enum_values->empty()) m.is_false = true;
  if (m.max_length.has_value() && m.min_length > *m.max_length) m.types &= ~kString;
  if (m.max_items.has_value() && m.min_items > *m.max_items) m.types &= ~kArray;
  if (m.max_properties.has_value() && m.min_properties > *m.max_properties) m.types &= ~kObject;
  if (m.types == 0) m.is_false = true;
  return m;
}

}  // namespace zapgram::transforms::json_schema_internal
