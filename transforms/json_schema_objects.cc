// Objects and arrays of the converter.
//
// Objects. The named keys are those of `properties` (schema order, over
// every object node of the conjunction) followed by `required` keys not
// among them. A named key's value must satisfy, for each object node S, the
// same thing JSON Schema asks: S.properties[key], plus every
// S.patternProperties whose pattern finds the key, or S.additionalProperties
// when neither applies; a key some node forbids (false) is left out, and a
// forbidden required key makes the object impossible. `propertyNames`
// filters the named keys the same way.
//
// Members are written in schema order (JsonSchemaOptions::any_order lifts
// it), each at most once, required ones always, then the additional members
// (ExtraMembers: keys outside the named set). Without patternProperties
// those are KeyOtherThan, valued by additionalProperties. With them the keys
// fall into regions, one per set of patterns that find exactly those keys,
// each a key regex spelled with the regex set operations (intersection of
// its patterns, complement of the other patterns and of the named keys its
// patterns find) and valued by its patterns' schemas, or by every
// additionalProperties for the region no pattern finds.
//
// dependentRequired: the object is a choice of one such grammar per set of
// trigger keys present (triggers required with the keys they need, absent
// triggers forbidden), so the cases are disjoint. With R(i, c) = "the members from the i-th named key on, after c
// members were written" the grammar is
//     R(i, c) -> "," member_i R(i+1, c+1)        (member i present)
//              | R(i+1, c)                        (member i absent, optional only)
//     R(n, c) -> ("," extra){lo-c, hi-c}          (additional members)
//     F(i)    -> member_i R(i+1, 1) | F(i+1)     (no member written yet)
//     object  -> "{" ws F(0) ws "}" | "{" ws "}"
// where c is clipped to what minProperties/maxProperties (lo, hi) can tell
// apart: without them c stays 0, so an object with n named keys costs 2n
// small rules (linear; tested with 10,000 properties).
//
// Any order: all permutations of a set of keys are not a small grammar, so
// MemberOrder::kAny lets each member be any named or additional key, in any
// order, and keeps `required` only when there are at most kAnyOrderExactKeys
// required keys (one rule per subset of the required keys written so far);
// minProperties and maxProperties are kept by counting the members too (one
// rule per subset and count, MembersInAnyOrder), within kMaxAnyOrderRules.
// Beyond these budgets any order is unsupported (lenient: the counts are
// dropped); kAnyWhereExact builds those objects in schema order instead.
// The subset rules stay rules (Rule::keep_as_rule): merged into regex
// terminals they were one DFA per subset over every order of the rest. An optional
// named key may repeat in any order (a validator reading the object keeps
// one of the values; RFC 8259 only says names SHOULD be unique).
//
// Arrays. Position i < P (the longest prefixItems / tuple `items`) is
// valued by every array node's prefix schema there, or its rest schema
// (`items` after prefixItems, draft-07 `additionalItems`); later positions
// by every node's rest. minItems/maxItems bound the count:
//     A(i) -> ("," item_i A(i+1))   optional once i >= minItems, absent at maxItems
//     A(P) -> ("," rest){max(0, lo-P), hi-P}
//
// Tests: tests/transforms/json_schema_test.cc (Objects*, Arrays*, Scale*),
// the suite's properties, required, additionalProperties, patternProperties,
// propertyNames, min/maxProperties, items, prefixItems, additionalItems and
// min/maxItems groups.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "grammar/regex_compiler.h"
#include "transforms/json_schema_internal.h"

namespace zapgram::transforms::json_schema_internal {
namespace {

using grammar::ExprId;
using grammar::RuleId;

// Budget of key regions (sets of patternProperties patterns that find the
// same keys) per object.
constexpr size_t kMaxKeyRegions = 64;
// dependentRequired: one object grammar per subset of trigger keys present.
constexpr size_t kMaxDependencyTriggers = 5;
// Budget of R(i, c) rules for count constraints on objects.
constexpr uint64_t kMaxCountedRules = 1u << 18;

const Json* Find(const Json& node, std::string_view key) {
  auto it = node.find(std::string(key));
  return it == node.end() ? nullptr : &*it;
}

bool IsFalse(const Json* s) { return s != nullptr && s->is_boolean() && !s->get<bool>(); }

}  // namespace

absl::StatusOr<std::vector<ExprId>> Converter::ExtraMembers(
    const MergedSchema& m, const std::vector<std::string>& names,
    const std::vector<MergedSchema>& name_schemas) {
  auto& g = grammar_;
  const MergedSchema* pn = name_schemas.empty() ? nullptr : &name_schemas[0];
  if (name_schemas.size() > 1) {
    absl::Status st = Unsupported("propertyNames", pn->pointer, "several propertyNames schemas");
    if (!st.ok()) return st;
  }
  // The patterns of every object node, and what each node says of the keys
  // none of its patterns finds.
  struct KeyPattern {
    std::string ecma;   // as written
    std::string regex;  // SearchRegex(ecma)
    const Json* schema;
    size_t node;  // index into m.object_nodes
  };
  std::vector<KeyPattern> patterns;
  std::vector<const Json*> extra_of(m.object_nodes.size(), nullptr);
  std::vector<ExprId> members;
  for (size_t ni = 0; ni < m.object_nodes.size(); ++ni) {
    const Json& node = *m.object_nodes[ni];
    extra_of[ni] = Find(node, "additionalProperties");
    const Json* listed = Find(node, "patternProperties");
    if (listed == nullptr) continue;
    for (auto it = listed->begin(); it != listed->end(); ++it) {
      if (absl::Status parsed = CheckSearchPattern(it.key()); !parsed.ok()) {
        // Lenient: any key may carry this value (more than the schema, never less).
        absl::Status st = Unsupported("patternProperties", PointerOf(listed),
                                      std::string(parsed.message()));
        if (!st.ok()) return st;
        if (!IsFalse(&*it)) {
          members.push_back(g.AddSequence({AnyString(), Token(":"), RefTo(MakeConj({{&*it, 0}}))}));
        }
        continue;
      }
      patterns.push_back({it.key(), SearchRegex(it.key()), &*it, ni});
    }
  }
  // The value of a key outside the named ones that exactly the patterns in
  // `found` find: their schemas, and the additionalProperties of each node
  // none of whose patterns is among them; nullopt when one of them is false.
  auto value_for = [&](const std::vector<size_t>& found) -> std::optional<Conj> {
    std::vector<ConjItem> items;
    std::vector<uint8_t> node_found(m.object_nodes.size(), 0);
    for (size_t i : found) {
      items.push_back({patterns[i].schema, 0});
      node_found[patterns[i].node] = 1;
    }
    for (size_t ni = 0; ni < m.object_nodes.size(); ++ni) {
      if (!node_found[ni] && extra_of[ni] != nullptr) items.push_back({extra_of[ni], 0});
    }
    for (const ConjItem& item : items) {
      if (IsFalse(item.node)) return std::nullopt;
    }
    return MakeConj(std::move(items));
  };
  auto member_with = [&](ExprId key, const Conj& value) {
    return g.AddSequence({key, Token(":"), RefTo(value)});
  };

  // propertyNames listing the keys: each listed key is a literal member.
  if (pn != nullptr && pn->enum_values) {
    absl::flat_hash_set<std::string> named(names.begin(), names.end());
    for (const Json* v : *pn->enum_values) {
      if (!v->is_string() || named.contains(v->get<std::string>())) continue;
      const std::string& key = v->get_ref<const std::string&>();
      absl::StatusOr<bool> ok = StringSatisfies(key, *pn);
      if (!ok.ok()) return ok.status();
      if (!*ok) continue;
      std::vector<size_t> found;
      for (size_t i = 0; i < patterns.size(); ++i) {
        absl::StatusOr<bool> finds = PatternFinds(patterns[i].ecma, key);
        if (!finds.ok()) return finds.status();
        if (*finds) found.push_back(i);
      }
      if (std::optional<Conj> value = value_for(found)) {
        members.push_back(member_with(StringLiteral(key), *value));
      }
    }
    return members;
  }
  // What propertyNames asks of a key, as J-regex operands.
  std::vector<std::string> key_operands;
  if (pn != nullptr) {
    absl::StatusOr<std::optional<std::string>> content = StringContentRegex(*pn);
    if (!content.ok()) return content.status();
    if (content->has_value()) {
      key_operands.push_back(**content);
    } else if (pn->min_length > 0 || pn->max_length) {
      key_operands.push_back(LengthRegex(pn->min_length, pn->max_length));
    }
  }

  if (patterns.empty()) {
    // Keys outside the named set, valued by every additionalProperties.
    std::optional<Conj> value = value_for({});
    if (!value) return members;
    ExprId key = key_operands.empty() ? KeyOtherThan(names)
                                      : JsonStringMatching(IntersectionRegex(key_operands));
    // (With propertyNames the key regex may spell a named key too, which
    // only lets that key repeat; KeyOtherThan keeps large name sets cheap.)
    members.push_back(member_with(key, *value));
    return members;
  }

  // With patterns: one member per region of the keys, a region being the
  // exact set of patterns that find the key (keys no pattern finds form one
  // more region). Only sets of patterns whose intersection is not empty are
  // regions, found depth first by adding patterns in order.
  const std::string where = PointerOf(m.object_nodes[patterns[0].node]);
  absl::flat_hash_map<std::string, bool> nonempty_cache;
  auto nonempty = [&](const std::string& regex) -> absl::StatusOr<bool> {
    auto it = nonempty_cache.find(regex);
    if (it != nonempty_cache.end()) return it->second;
    absl::StatusOr<grammar::ByteDfa> dfa = grammar::DeterminizeRegex(regex, grammar::kRegexJsonString);
    if (!dfa.ok()) return dfa.status();
    return nonempty_cache[regex] = !dfa->empty();
  };
  std::vector<std::vector<size_t>> regions = {{}};
  std::vector<std::vector<size_t>> stack;
  for (size_t i = patterns.size(); i-- > 0;) stack.push_back({i});
  absl::Status trouble;
  while (!stack.empty() && trouble.ok()) {
    std::vector<size_t> set = std::move(stack.back());
    stack.pop_back();
    std::vector<std::string> operands;
    for (size_t i : set) operands.push_back(patterns[i].regex);
    absl::StatusOr<bool> some = nonempty(IntersectionRegex(operands));
    if (!some.ok()) {
      trouble = some.status();
      break;
    }
    if (!*some) continue;
    if (regions.size() >= kMaxKeyRegions) {
      trouble = absl::ResourceExhaustedError(absl::StrFormat(
          "the patterns overlap in more than %d ways", kMaxKeyRegions));
      break;
    }
    regions.push_back(set);
    for (size_t j = patterns.size(); j-- > set.back() + 1;) {
      std::vector<size_t> bigger = set;
      bigger.push_back(j);
      stack.push_back(std::move(bigger));
    }
  }
  // name_found[k][i]: pattern i finds the k-th named key.
  std::vector<std::vector<uint8_t>> name_found(names.size(), std::vector<uint8_t>(patterns.size(), 0));
  for (size_t k = 0; k < names.size(); ++k) {
    for (size_t i = 0; i < patterns.size(); ++i) {
      absl::StatusOr<bool> finds = PatternFinds(patterns[i].ecma, names[k]);
      if (!finds.ok()) return finds.status();
      name_found[k][i] = *finds;
    }
  }
  std::vector<ExprId> region_members;
  for (size_t r = 0; r < regions.size() && trouble.ok(); ++r) {
    const std::vector<size_t>& found = regions[r];
    std::optional<Conj> value = value_for(found);
    if (!value) continue;
    std::vector<std::string> operands;
    std::vector<uint8_t> in(patterns.size(), 0);
    for (size_t i : found) {
      operands.push_back(patterns[i].regex);
      in[i] = 1;
    }
    // Not one of the patterns outside the region, nor a named key.
    std::vector<std::string> outside;
    for (size_t j = 0; j < patterns.size(); ++j) {
      if (!in[j]) outside.push_back(absl::StrCat("(?:", patterns[j].regex, ")"));
    }
    // A named key can only fall in this region if its patterns find it:
    // only those need excluding (all of them for the region no pattern
    // finds, which is skipped when additionalProperties is false).
    for (size_t k = 0; k < names.size(); ++k) {
      bool found_by_all = true;
      for (size_t i : found) found_by_all = found_by_all && name_found[k][i];
      if (found_by_all) outside.push_back(RegexLiteral(names[k]));
    }
    if (!outside.empty()) operands.push_back(absl::StrCat("(?~:", absl::StrJoin(outside, "|"), ")"));
    operands.insert(operands.end(), key_operands.begin(), key_operands.end());
    const std::string key = IntersectionRegex(operands);
    absl::StatusOr<bool> some = nonempty(key);
    if (!some.ok()) {
      trouble = some.status();
      break;
    }
    if (!*some) continue;
    region_members.push_back(member_with(JsonStringMatching(key), *value));
  }
  if (trouble.ok()) {
    members.insert(members.end(), region_members.begin(), region_members.end());
    return members;
  }
  absl::Status st = Unsupported("patternProperties", where,
                                absl::StrCat("the keys each pattern set finds: ",
                                             std::string(trouble.message())));
  if (!st.ok()) return st;
  // Lenient: each pattern's keys with its own schema, the other keys with
  // every additionalProperties (a named key may take either; more than the
  // schema, never less).
  for (const KeyPattern& p : patterns) {
    if (!IsFalse(p.schema)) members.push_back(member_with(StringMatching(p.ecma), MakeConj({{p.schema, 0}})));
  }
  if (std::optional<Conj> rest = value_for({})) members.push_back(member_with(AnyString(), *rest));
  return members;
}

absl::StatusOr<ExprId> Converter::BuildObject(const MergedSchema& m) {
  std::string key;
  for (const Json* node : m.object_nodes) absl::StrAppend(&key, reinterpret_cast<uintptr_t>(node), ",");
  key.push_back('|');
  for (const std::string& r : m.required) absl::StrAppend(&key, r.size(), ":", r);
  key.push_back('|');
  for (const auto& [trigger, needed] : m.dependent_required) {
    absl::StrAppend(&key, trigger.size(), ":", trigger, "(");
    for (const std::string& k : needed) absl::StrAppend(&key, k.size(), ":", k);
    key.push_back(')');
  }
  key.push_back('|');
  for (const Json* p : m.property_names) absl::StrAppend(&key, reinterpret_cast<uintptr_t>(p), ",");
  absl::StrAppend(&key, "|", m.min_properties, "|",
                  m.max_properties ? absl::StrCat(*m.max_properties) : std::string("-"));
  if (auto it = object_memo_.find(key); it != object_memo_.end()) return it->second;
  absl::StatusOr<ExprId> built = BuildObjectUncached(m);
  if (built.ok()) object_memo_.emplace(std::move(key), *built);
  return built;
}

absl::StatusOr<ExprId> Converter::BuildObjectUncached(const MergedSchema& m) {
  auto& g = grammar_;
  // 1. Named keys.
  std::vector<NamedKey> named;
  absl::flat_hash_map<std::string, size_t> index;
  auto name = [&](const std::string& key) -> NamedKey& {
    auto [it, inserted] = index.emplace(key, named.size());
    if (inserted) named.push_back({key, {}, false, false});
    return named[it->second];
  };
  for (const Json* node : m.object_nodes) {
    if (const Json* props = Find(*node, "properties")) {
      for (auto it = props->begin(); it != props->end(); ++it) name(it.key());
    }
  }
  for (const std::string& r : m.required) name(r).required = true;
  // Keys of dependentRequired are named too (each case below decides
  // whether they are present): outside `properties`, the keys a trigger
  // needs come before the trigger.
  for (const auto& [trigger, needed] : m.dependent_required) {
    for (const std::string& k : needed) name(k);
    name(trigger);
  }
  // Property names as a merged string schema.
  std::vector<MergedSchema> name_schemas;
  for (const Json* p : m.property_names) {
    absl::StatusOr<MergedSchema> pm = Merge(Conj{{p, 0}});
    if (!pm.ok()) return pm.status();
    if (absl::Status st = ApplyNegations(*pm); !st.ok()) return st;
    if (!(pm->types & kString)) pm->is_false = true;  // no key is a string it admits
    name_schemas.push_back(*std::move(pm));
  }
  // Per object node, its properties by name: the schema's ordered map finds
  // a key by a linear scan (5,000 properties made this quadratic).
  std::vector<absl::flat_hash_map<std::string_view, const Json*>> properties_of(m.object_nodes.size());
  for (size_t n = 0; n < m.object_nodes.size(); ++n) {
    if (const Json* props = Find(*m.object_nodes[n], "properties")) {
      properties_of[n].reserve(props->size());
      for (auto it = props->begin(); it != props->end(); ++it) properties_of[n].emplace(it.key(), &*it);
    }
  }
  for (NamedKey& k : named) {
    for (size_t n = 0; n < m.object_nodes.size(); ++n) {
      const Json* node = m.object_nodes[n];
      bool covered = false;
      if (auto it = properties_of[n].find(k.key); it != properties_of[n].end()) {
        k.value.push_back({it->second, 0});
        covered = true;
      }
      if (const Json* patterns = Find(*node, "patternProperties")) {
        for (auto it = patterns->begin(); it != patterns->end(); ++it) {
          absl::StatusOr<bool> found = PatternFinds(it.key(), k.key);
          if (!found.ok()) {
            absl::Status st = Unsupported("patternProperties", PointerOf(patterns),
                                          std::string(found.status().message()));
            if (!st.ok()) return st;
            continue;
          }
          if (*found) {
            k.value.push_back({&*it, 0});
            covered = true;
          }
        }
      }
      if (!covered) {
        if (const Json* extra = Find(*node, "additionalProperties")) k.value.push_back({extra, 0});
      }
    }
    for (const ConjItem& item : k.value) k.forbidden = k.forbidden || IsFalse(item.node);
    for (const MergedSchema& pn : name_schemas) {
      if (pn.is_false || !(pn.types & kString)) {
        k.forbidden = true;
        continue;
      }
      if (pn.enum_values) {
        bool listed = false;
        for (const Json* v : *pn.enum_values) listed = listed || (v->is_string() && *v == k.key);
        if (!listed) k.forbidden = true;
      }
      absl::StatusOr<bool> ok = StringSatisfies(k.key, pn);
      if (!ok.ok()) return ok.status();
      if (!*ok) k.forbidden = true;
    }
  }

  // 2. Additional members: a rule `extra` (or none).
  std::vector<std::string> all_names;
  for (const NamedKey& k : named) all_names.push_back(k.key);
  bool extra_allowed = true;
  for (const Json* node : m.object_nodes) {
    const Json* patterns = Find(*node, "patternProperties");
    const Json* extra = Find(*node, "additionalProperties");
    if (IsFalse(extra) && (patterns == nullptr || patterns->empty())) extra_allowed = false;
  }
  for (const MergedSchema& pn : name_schemas) extra_allowed = extra_allowed && !pn.is_false;
  std::optional<RuleId> extra_rule;
  if (extra_allowed) {
    absl::StatusOr<std::vector<ExprId>> members = ExtraMembers(m, all_names, name_schemas);
    if (!members.ok()) return members.status();
    if (!members->empty()) {
      extra_rule = NewRule(absl::StrCat(RuleNameFor(m.pointer), "-extra"),
                           g.AddChoice(*std::move(members)));
    }
  }

  // 3. Members in order: one object grammar, or with dependentRequired one
  // per set of trigger keys present (the cases are disjoint).
  if (m.dependent_required.empty()) return BuildObjectMembers(m, named, extra_rule);
  std::vector<std::string> triggers;
  absl::flat_hash_map<std::string, std::vector<std::string>> needs;
  for (const auto& [trigger, needed] : m.dependent_required) {
    if (!needs.contains(trigger)) triggers.push_back(trigger);
    std::vector<std::string>& all = needs[trigger];
    all.insert(all.end(), needed.begin(), needed.end());
  }
  if (triggers.size() > kMaxDependencyTriggers) {
    absl::Status st = Unsupported(
        "dependentRequired", m.pointer,
        absl::StrFormat("%d trigger keys (one object grammar per subset; at most %d)",
                        triggers.size(), kMaxDependencyTriggers));
    if (!st.ok()) return st;
    return BuildObjectMembers(m, named, extra_rule);  // lenient: dropped
  }
  std::vector<ExprId> cases;
  for (uint32_t present = 0; present < (1u << triggers.size()); ++present) {
    std::vector<NamedKey> keys = named;
    for (size_t t = 0; t < triggers.size(); ++t) {
      const bool on = (present >> t) & 1;
      for (NamedKey& k : keys) {
        if (k.key != triggers[t]) continue;
        if (on) {
          k.required = true;
        } else {
          k.forbidden = true;
        }
      }
      if (!on) continue;
      for (const std::string& needed : needs[triggers[t]]) {
        for (NamedKey& k : keys) k.required = k.required || k.key == needed;
      }
    }
    absl::StatusOr<ExprId> shape = BuildObjectMembers(m, keys, extra_rule);
    if (!shape.ok()) return shape.status();
    if (!IsVoid(*shape)) cases.push_back(*shape);
  }
  if (cases.empty()) return Void();
  return g.AddChoice(std::move(cases));
}

absl::StatusOr<ExprId> Converter::BuildObjectMembers(const MergedSchema& m,
                                                     const std::vector<NamedKey>& named,
                                                     std::optional<RuleId> extra_rule) {
  auto& g = grammar_;
  for (const NamedKey& k : named) {
    if (k.forbidden && k.required) return Void();
  }
  uint64_t lo = m.min_properties;
  bool bounded = m.max_properties.has_value();
  uint64_t hi = m.max_properties.value_or(0);
  std::vector<size_t> present;  // named keys that may appear
  for (size_t i = 0; i < named.size(); ++i) {
    if (!named[i].forbidden) present.push_back(i);
  }
  auto member = [&](size_t i) { return NamedMember(named[i]); };
  const std::string base = RuleNameFor(m.pointer);
  if (options_.member_order == MemberOrder::kAny ||
      (options_.member_order == MemberOrder::kAnyWhereExact && AnyOrderIsExact(m, named, present))) {
    return BuildObjectAnyOrder(m, named, present, extra_rule);
  }

  const uint64_t n = present.size();
  uint64_t required_count = 0;
  for (size_t i : present) required_count += named[i].required;
  if (!bounded && lo <= std::max<uint64_t>(required_count, 1)) {
    return ObjectTree(named, present, extra_rule, lo);
  }
  const uint64_t span = SaturatingAdd(bounded ? SaturatingAdd(hi, 1) : lo, 1);
  if (span > kMaxCountedRules || (n + 1) * span > kMaxCountedRules) {
    absl::Status st = Unsupported(bounded ? "maxProperties" : "minProperties", m.pointer,
                                  absl::StrFormat("%d keys with this count exceed the rule budget", n));
    if (!st.ok()) return st;
    lo = 0;
    bounded = false;
  }
  const uint64_t cap = bounded ? hi + 1 : lo;  // counts c >= cap are alike (c > hi is void)
  auto clip = [&](uint64_t c) { return bounded ? c : std::min(c, lo); };
  // rest[c] = R(i, c) for the current i, as a rule (nullopt = void).
  const uint64_t counts = cap + 1;
  std::vector<std::optional<RuleId>> rest(counts);
  for (uint64_t c = 0; c < counts; ++c) {
    if (bounded && c > hi) continue;
    const uint64_t need = lo > c ? lo - c : 0;
    if (extra_rule) {
      const uint32_t max_more = bounded ? static_cast<uint32_t>(std::min<uint64_t>(hi - c, grammar::kUnbounded - 1))
                                   : grammar::kUnbounded;
      const uint32_t min_more = static_cast<uint32_t>(std::min<uint64_t>(need, grammar::kUnbounded - 1));
      if (min_more > max_more) continue;
      ExprId body = max_more == 0 ? g.AddEmpty()
                                  : g.AddRepeat(g.AddSequence({Token(","), g.AddRuleRef(*extra_rule)}),
                                                min_more, max_more);
      rest[c] = NewRule(absl::StrCat(base, "-tail"), body);
    } else if (need == 0) {
      rest[c] = NewRule(absl::StrCat(base, "-end"), g.AddEmpty());
    }
  }
  // first = F(i) for the current i.
  RuleId first = 0;
  bool has_first = false;
  if (extra_rule && (!bounded || hi >= 1) && rest[clip(1)]) {
    has_first = true;
    first = NewRule(absl::StrCat(base, "-first"),
                    g.AddSequence({g.AddRuleRef(*extra_rule), g.AddRuleRef(*rest[clip(1)])}));
  }
  for (uint64_t j = n; j-- > 0;) {
    const size_t i = present[j];
    const bool required = named[i].required;
    std::vector<std::optional<RuleId>> prev(counts);
    for (uint64_t c = 0; c < counts; ++c) {
      if (bounded && c > hi) continue;
      std::vector<ExprId> alternatives;
      const uint64_t next = clip(c + 1);
      if ((!bounded || c + 1 <= hi) && next < counts && rest[next]) {
        alternatives.push_back(g.AddSequence({Token(","), member(i), g.AddRuleRef(*rest[next])}));
      }
      if (!required && rest[c]) alternatives.push_back(g.AddRuleRef(*rest[c]));
      if (alternatives.empty()) continue;
      prev[c] = NewRule(absl::StrCat(base, "-r"), g.AddChoice(std::move(alternatives)));
    }
    std::vector<ExprId> alternatives;
    if ((!bounded || hi >= 1) && clip(1) < counts && rest[clip(1)]) {
      alternatives.push_back(g.AddSequence({member(i), g.AddRuleRef(*rest[clip(1)])}));
    }
    if (!required && has_first) alternatives.push_back(g.AddRuleRef(first));
    has_first = false;
    if (!alternatives.empty()) {
      has_first = true;
      first = NewRule(absl::StrCat(base, "-f"), g.AddChoice(std::move(alternatives)));
    }
    rest = std::move(prev);
  }
  std::vector<ExprId> shapes;
  if (has_first) {
    shapes.push_back(g.AddSequence({Literal("{"), Ws(), g.AddRuleRef(first), Ws(), Literal("}")}));
  }
  bool all_optional = lo == 0;
  for (size_t i : present) all_optional = all_optional && !named[i].required;
  if (all_optional) shapes.push_back(g.AddSequence({Literal("{"), Ws(), Literal("}")}));
  if (shapes.empty()) return Void();
  return g.AddChoice(std::move(shapes));
}

// Without maxProperties (and with a minProperties that the required keys or
// "at least one member" already give) the members form a balanced tree over
// the named keys (the additional members as the last leaf). Per range:
//   some(range)  at least one member, the first without its comma
//   rest(range)  any members the range allows, each after a comma
//   some(L+R) -> some(L) rest(R) | some(R)  (the second only if L has no required key)
//   rest(L+R) -> rest(L) rest(R)
// A chain F(i) -> F(i+1) would give the parser's prediction closure n^2
// entries for n keys; the tree gives n log n.
ExprId Converter::ObjectTree(const std::vector<NamedKey>& named, const std::vector<size_t>& present,
                             std::optional<RuleId> extra_rule, uint64_t min_members) {
  auto& g = grammar_;
  struct Range {
    ExprId some = 0;    // used once: by the parent range
    RuleId rest = 0;    // referenced twice by the parent: a rule
    bool has_required = false;
    bool some_ok = false;
  };
  auto member = [&](size_t i) { return NamedMember(named[i]); };
  // Every member required and nothing else allowed: the one shape is the
  // members in order, written flat. (The tree below would give the same
  // language through three rules per member, half its member copies dead.)
  const bool all_required = std::all_of(present.begin(), present.end(),
                                        [&](size_t i) { return named[i].required; });
  if (all_required && !extra_rule && !present.empty()) {
    std::vector<ExprId> parts = {Literal("{"), Ws()};
    for (size_t i : present) {
      if (parts.size() > 2) parts.push_back(Token(","));
      parts.push_back(member(i));
    }
    parts.push_back(Ws());
    parts.push_back(Literal("}"));
    return g.AddSequence(std::move(parts));
  }
  // Leaves.
  std::vector<Range> level;
  for (size_t i : present) {
    Range r;
    r.has_required = named[i].required;
    r.some = member(i);
    r.some_ok = true;
    ExprId with_comma = g.AddSequence({Token(","), member(i)});
    r.rest = NewRule("member-opt", r.has_required ? with_comma : g.AddRepeat(with_comma, 0, 1));
    level.push_back(r);
  }
  if (extra_rule) {
    Range r;
    r.some = g.AddSequence({g.AddRuleRef(*extra_rule),
                            g.AddRepeat(g.AddSequence({Token(","), g.AddRuleRef(*extra_rule)}), 0,
                                        grammar::kUnbounded)});
    r.some_ok = true;
    r.rest = NewRule("extra-members",
                     g.AddRepeat(g.AddSequence({Token(","), g.AddRuleRef(*extra_rule)}), 0,
                                 grammar::kUnbounded));
    level.push_back(r);
  }
  if (level.empty()) return g.AddSequence({Literal("{"), Ws(), Literal("}")});
  // Pair up ranges level by level; each combined range's parts become rules.
  while (level.size() > 1) {
    std::vector<Range> next;
    for (size_t k = 0; k + 1 < level.size(); k += 2) {
      const Range& a = level[k];
      const Range& b = level[k + 1];
      Range r;
      r.has_required = a.has_required || b.has_required;
      std::vector<ExprId> some;
      if (a.some_ok) some.push_back(g.AddSequence({a.some, g.AddRuleRef(b.rest)}));
      if (!a.has_required && b.some_ok) some.push_back(b.some);
      r.some_ok = !some.empty();
      if (r.some_ok) r.some = g.AddRuleRef(NewRule("members", g.AddChoice(std::move(some))));
      r.rest = NewRule("more-members", g.AddSequence({g.AddRuleRef(a.rest), g.AddRuleRef(b.rest)}));
      next.push_back(r);
    }
    if (level.size() % 2 == 1) next.push_back(level.back());
    level = std::move(next);
  }
  std::vector<ExprId> shapes;
  if (level[0].some_ok) {
    shapes.push_back(g.AddSequence({Literal("{"), Ws(), level[0].some, Ws(), Literal("}")}));
  }
  if (!level[0].has_required && min_members == 0) {
    shapes.push_back(g.AddSequence({Literal("{"), Ws(), Literal("}")}));
  }
  if (shapes.empty()) return Void();
  return g.AddChoice(std::move(shapes));
}

namespace {

size_t RequiredCount(const std::vector<NamedKey>& named, const std::vector<size_t>& present) {
  size_t count = 0;
  for (size_t i : present) count += named[i].required;
  return count;
}

}  // namespace

bool Converter::AnyOrderIsExact(const MergedSchema& m, const std::vector<NamedKey>& named,
                                const std::vector<size_t>& present) const {
  const size_t required = RequiredCount(named, present);
  return required <= kAnyOrderExactKeys &&
         AnyOrderRules(required, m.min_properties, m.max_properties) <= kMaxAnyOrderRules;
}

absl::StatusOr<ExprId> Converter::BuildObjectAnyOrder(const MergedSchema& m,
                                                      const std::vector<NamedKey>& named,
                                                      const std::vector<size_t>& present,
                                                      std::optional<RuleId> extra_rule) {
  auto& g = grammar_;
  std::vector<size_t> required;
  for (size_t i : present) {
    if (named[i].required) required.push_back(i);
  }
  if (required.size() > kAnyOrderExactKeys) {
    return absl::UnimplementedError(absl::StrFormat(
        "unsupported: required at %s (any_order keeps `required` for at most %d keys, not %d)",
        m.pointer, kAnyOrderExactKeys, required.size()));
  }
  uint64_t lo = m.min_properties;
  std::optional<uint64_t> hi = m.max_properties;
  if (AnyOrderRules(required.size(), lo, hi) > kMaxAnyOrderRules) {
    absl::Status st = Unsupported(
        "minProperties/maxProperties", m.pointer,
        absl::StrFormat("any order with %d required keys and these counts needs more than %d rules",
                        required.size(), kMaxAnyOrderRules));
    if (!st.ok()) return st;
    lo = 0;
    hi.reset();
  }
  // Any member: optional named keys and additional members (repeatable);
  // required keys are tracked by the subset of them still missing.
  std::vector<ExprId> free_members;
  for (size_t i : present) {
    if (!named[i].required) free_members.push_back(NamedMember(named[i]));
  }
  if (extra_rule) free_members.push_back(g.AddRuleRef(*extra_rule));
  const std::string base = RuleNameFor(m.pointer);
  std::optional<RuleId> free_rule;
  if (!free_members.empty()) free_rule = NewRule(absl::StrCat(base, "-any"), g.AddChoice(std::move(free_members)));
  std::vector<ExprId> required_members;
  for (size_t i : required) required_members.push_back(NamedMember(named[i]));
  std::vector<ExprId> shapes;
  const ExprId members = MembersInAnyOrder(required_members, free_rule, base, lo, hi);
  if (!IsVoid(members)) shapes.push_back(g.AddSequence({Literal("{"), Ws(), members, Ws(), Literal("}")}));
  if (required.empty() && lo == 0) shapes.push_back(g.AddSequence({Literal("{"), Ws(), Literal("}")}));
  if (shapes.empty()) return Void();
  return g.AddChoice(std::move(shapes));
}

// after(mask, c) = the members after the first c, `mask` = the `once`
// members among them; the object may end once all are written and c is
// within [min_members, max_members]. Without max_members, counts from
// max(min_members, 1) on are alike (one rule each); with it, a count past it
// is void.
ExprId Converter::MembersInAnyOrder(const std::vector<ExprId>& once, std::optional<RuleId> any_times,
                                    std::string_view name, uint64_t min_members,
                                    std::optional<uint64_t> max_members) {
  auto& g = grammar_;
  if (max_members && (*max_members == 0 || min_members > *max_members)) return Void();
  // Each member as a rule: it is referenced from many alternatives (the
  // expression arena holds trees, not shared nodes).
  std::vector<RuleId> once_rules;
  for (ExprId member : once) once_rules.push_back(NewRule(absl::StrCat(std::string(name), "-m"), member));
  const uint32_t subsets = 1u << once.size();
  // Counts 1..top; `top` stands for every count >= top when unbounded.
  const uint64_t top = max_members ? *max_members : std::max<uint64_t>(min_members, 1);
  auto next_count = [&](uint64_t c) -> std::optional<uint64_t> {
    if (c < top) return c + 1;
    if (max_members) return std::nullopt;  // past maxProperties
    return top;
  };
  auto index = [&](uint32_t mask, uint64_t c) { return static_cast<size_t>(mask) * top + (c - 1); };
  std::vector<RuleId> after(static_cast<size_t>(subsets) * top);
  for (size_t i = 0; i < after.size(); ++i) {
    after[i] = NewRule(absl::StrCat(std::string(name), "-s"), 0);
    // Flattened into one regex terminal (generation's bounded whitespace
    // makes them regular) the subsets are a DFA over every order of the
    // members: a MaskBench schema with 6 required keys compiled in 2.3 s to
    // 107,153 automaton states, one with 10 in 19 s / 2.6 GB.
    g.rules[after[i]].keep_as_rule = true;
  }
  for (uint32_t mask = 0; mask < subsets; ++mask) {
    for (uint64_t c = 1; c <= top; ++c) {
      std::vector<ExprId> alternatives;
      if (mask == subsets - 1 && c >= min_members) alternatives.push_back(g.AddEmpty());
      if (std::optional<uint64_t> n = next_count(c)) {
        if (any_times) {
          alternatives.push_back(
              g.AddSequence({Token(","), g.AddRuleRef(*any_times), g.AddRuleRef(after[index(mask, *n)])}));
        }
        for (size_t r = 0; r < once.size(); ++r) {
          if (mask & (1u << r)) continue;
          alternatives.push_back(g.AddSequence(
              {Token(","), g.AddRuleRef(once_rules[r]), g.AddRuleRef(after[index(mask | (1u << r), *n)])}));
        }
      }
      g.rules[after[index(mask, c)]].body = alternatives.empty() ? Void() : g.AddChoice(std::move(alternatives));
    }
  }
  std::vector<ExprId> firsts;
  if (any_times) firsts.push_back(g.AddSequence({g.AddRuleRef(*any_times), g.AddRuleRef(after[index(0, 1)])}));
  for (size_t r = 0; r < once.size(); ++r) {
    firsts.push_back(g.AddSequence({g.AddRuleRef(once_rules[r]), g.AddRuleRef(after[index(1u << r, 1)])}));
  }
  if (firsts.empty()) return Void();
  return g.AddChoice(std::move(firsts));
}

absl::StatusOr<ExprId> Converter::BuildArray(const MergedSchema& m) {
  auto& g = grammar_;
  size_t prefix_len = 0;
  for (const MergedSchema::ArrayNode& a : m.array_nodes) prefix_len = std::max(prefix_len, a.prefix.size());
  auto value_at = [&](size_t i) {  // i == prefix_len: the rest
    std::vector<ConjItem> items;
    for (const MergedSchema::ArrayNode& a : m.array_nodes) {
      const Json* s = i < a.prefix.size() ? a.prefix[i] : a.rest;
      if (s != nullptr) items.push_back({s, 0});
    }
    return MakeConj(std::move(items));
  };
  uint64_t lo = m.min_items;
  std::optional<uint64_t> hi = m.max_items;
  // A position valued `false` ends the array before it.
  for (size_t i = 0; i <= prefix_len; ++i) {
    Conj c = value_at(i);
    bool impossible = false;
    for (const ConjItem& item : c) impossible = impossible || IsFalse(item.node);
    if (impossible) {
      hi = std::min<uint64_t>(hi.value_or(i), i);
      break;
    }
  }
  if (hi && lo > *hi) return Void();
  // Tail after the prefix: ("," rest){a, b}, for arrays longer than the prefix.
  auto tail = [&](uint64_t written) -> ExprId {
    const uint64_t need = lo > written ? lo - written : 0;
    const uint32_t a = static_cast<uint32_t>(std::min<uint64_t>(need, grammar::kUnbounded - 1));
    const uint32_t b = hi ? static_cast<uint32_t>(std::min<uint64_t>(*hi - written, grammar::kUnbounded - 1))
                          : grammar::kUnbounded;
    if (b == 0) return g.AddEmpty();
    return g.AddRepeat(g.AddSequence({Token(","), RefTo(value_at(prefix_len))}), a, b);
  };
  std::vector<ExprId> shapes;
  if (!hi || *hi >= 1) {
    // after = the list after i items (i >= 1), built from the end.
    uint64_t top = std::max<uint64_t>(prefix_len, 1);
    ExprId after;
    if (hi && *hi <= top) {
      top = *hi;
      after = g.AddEmpty();
    } else {
      after = tail(top);
    }
    for (uint64_t i = top; i-- > 1;) {
      ExprId take = g.AddSequence({Token(","), RefTo(value_at(i)), after});
      after = i >= lo ? g.AddRepeat(take, 0, 1) : take;
    }
    shapes.push_back(g.AddSequence({Literal("["), Ws(), RefTo(value_at(0)), after, Ws(), Literal("]")}));
  }
  if (lo == 0) shapes.push_back(g.AddSequence({Literal("["), Ws(), Literal("]")}));
  if (shapes.empty()) return Void();
  return g.AddChoice(std::move(shapes));
}

}  // namespace zapgram::transforms::json_schema_internal
