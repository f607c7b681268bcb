// Internals of the JSON Schema converter, shared by its stage files:
//
//   json_schema.cc          entry point, the document index ($id, $anchor,
//                           JSON pointers), $ref resolution, the rule worklist
//   json_schema_merge.cc    a conjunction of schema nodes -> one MergedSchema
//                           (allOf, $ref siblings, keyword-wise intersection)
//   json_schema_build.cc    MergedSchema -> grammar (type dispatch, enum/const,
//                           not, anyOf/oneOf expansion, numbers)
//   json_schema_objects.cc  objects and arrays
//   json_schema_strings.cc  strings, keys, patterns, JSON values as literals
//
// The unit of conversion is a *conjunction*: a set of schema nodes that an
// instance must all satisfy, each with a mask of the combinators already
// expanded on it. Each conjunction becomes one grammar rule, created on
// first use and built later from a worklist, so recursive schemas become
// recursive rules and no walk ever recurses over the schema.
#ifndef ZAPGRAM_TRANSFORMS_JSON_SCHEMA_INTERNAL_H_
#define ZAPGRAM_TRANSFORMS_JSON_SCHEMA_INTERNAL_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grammar/byte_automaton.h"
#include "grammar/grammar.h"
#include "nlohmann/json.hpp"
#include "transforms/json_schema.h"

namespace zapgram::transforms::json_schema_internal {

// Ordered: properties keep the schema's order (the default key order).
using Json = nlohmann::ordered_json;

// Combinators of a node already expanded into alternatives (mask bits).
inline constexpr uint8_t kSkipAnyOf = 1;
inline constexpr uint8_t kSkipOneOf = 2;
inline constexpr uint8_t kSkipIf = 4;   // if/then/else
inline constexpr uint8_t kSkipNot = 8;  // a `not` rewritten as a schema node (NegatedRequired)
inline constexpr uint8_t kSkipDependentSchemas = 16;  // dependentSchemas / schema-valued dependencies

struct ConjItem {
  const Json* node = nullptr;
  uint8_t skip = 0;  // kSkip* bits
  friend bool operator==(const ConjItem&, const ConjItem&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const ConjItem& c) {
    return H::combine(std::move(h), c.node, c.skip);
  }
};
// Unique, sorted by the nodes' document order (Converter::MakeConj), never
// by address: the order decides which branch's `properties` order a merged
// object keeps, and must not change from one process to the next. Empty =
// the schema `true`.
using Conj = std::vector<ConjItem>;

// Type bits. `number` is kInteger | kFraction (integers are numbers).
inline constexpr uint8_t kNull = 1, kBoolean = 2, kInteger = 4, kFraction = 8, kString = 16,
                         kArray = 32, kObject = 64, kAllTypes = 127;

// A numeric bound as written in the schema, with its value for comparisons.
struct Bound {
  std::string text;
  double value = 0;
};

// The keyword-wise intersection of a conjunction (json_schema_merge.cc).
struct MergedSchema {
  std::string pointer;  // of the first node, for messages
  bool is_false = false;
  uint8_t types = kAllTypes;
  std::optional<std::vector<const Json*>> enum_values;  // enum/const intersected
  // strings
  uint64_t min_length = 0;
  std::optional<uint64_t> max_length;
  std::vector<std::string> patterns;
  std::vector<std::string> formats;
  // Whole-text regexes (of decoded text) a string must not match: what a
  // `not` of string keywords excludes (json_schema_build.cc).
  std::vector<std::string> string_exclusions;
  // numbers
  std::optional<Bound> minimum, maximum, exclusive_minimum, exclusive_maximum;
  std::vector<Bound> multiple_of;
  // objects: the nodes with properties / patternProperties /
  // additionalProperties / required, in order (json_schema_objects.cc reads them)
  std::vector<const Json*> object_nodes;
  std::vector<std::string> required;
  // dependentRequired (and draft-07 `dependencies` with arrays): if the first
  // key is present, so must the others be.
  std::vector<std::pair<std::string, std::vector<std::string>>> dependent_required;
  std::vector<const Json*> property_names;  // propertyNames schemas
  uint64_t min_properties = 0;
  std::optional<uint64_t> max_properties;
  // arrays: per node, (prefix schemas, rest schema or null = any)
  struct ArrayNode {
    std::vector<const Json*> prefix;
    const Json* rest = nullptr;
  };
  std::vector<ArrayNode> array_nodes;
  uint64_t min_items = 0;
  std::optional<uint64_t> max_items;
  // combinators
  const Json* disjunction_node = nullptr;  // first anyOf/oneOf not yet expanded
  uint8_t disjunction_bit = 0;              // kSkipAnyOf or kSkipOneOf
  const Json* conditional_node = nullptr;   // first node whose if/then/else is not yet expanded
  // First node whose schema-valued dependencies (dependentSchemas, draft-07
  // `dependencies` objects) are not yet expanded: (trigger key, schema).
  const Json* dependency_node = nullptr;
  std::vector<std::pair<std::string, const Json*>> dependent_schemas;
  uint32_t pending_conditionals = 0;        // how many such nodes
  // Booleans a `not` excludes (null is removed from `types`).
  bool no_true = false, no_false = false;
  struct Negation {
    const Json* schema;  // the value of `not`
    std::string pointer;
    const Json* holder;  // the node whose `not` it is
  };
  std::vector<Negation> negations;
  Conj items;  // the conjunction itself (for re-expansion)
  bool constrains_objects() const { return !object_nodes.empty() || !property_names.empty() ||
                                           min_properties > 0 || max_properties.has_value() ||
                                           !dependent_required.empty(); }
  bool constrains_arrays() const { return !array_nodes.empty() || min_items > 0 ||
                                          max_items.has_value(); }
};

// Most members MembersInAnyOrder tracks (2^n rules): required keys of an
// any-order object, members of an object const/enum value. (The subset rules
// are Rule::keep_as_rule: flattened into regex terminals they were DFAs of
// every order, 15-50 s to compile at n = 10 on MaskBench schemas with
// generation's bounded whitespace; kept as rules, 0.1-0.3 s.)
inline constexpr uint32_t kAnyOrderExactKeys = 10;
// Most rules MembersInAnyOrder makes for one object: subsets of the required
// keys times the member counts minProperties/maxProperties tell apart.
inline constexpr uint64_t kMaxAnyOrderRules = 1u << 14;
// The rules MembersInAnyOrder makes for `once` exactly-once members and
// counts in [lo, hi].
// The longest maxLength a string without pattern or format keeps (its
// counted terminal, grammar/counted_automaton.h, numbers (max + 1) states
// per state of one character's spelling within 31 bits); above it the
// keyword is unsupported (lenient: dropped).
inline constexpr uint64_t kMaxCountedLength = uint64_t{1} << 24;
// A string whose pattern and length limits number more states than this as
// a counted terminal is written as one (Converter::CountedStringRegex); the
// plain product of a smaller one fits the regex budget (16,384 states).
inline constexpr uint32_t kCountedStringMinStates = 1u << 14;
// a + b, or UINT64_MAX past it (counts read from a schema go up to UINT64_MAX).
inline uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
inline uint64_t AnyOrderRules(size_t once, uint64_t lo, std::optional<uint64_t> hi) {
  if (once >= 63) return UINT64_MAX;
  const uint64_t counts = hi ? SaturatingAdd(*hi, 1) : SaturatingAdd(std::max<uint64_t>(lo, 1), 1);
  const uint64_t subsets = uint64_t{1} << once;
  return counts > UINT64_MAX / subsets ? UINT64_MAX : subsets * counts;
}

// A named key of an object and the schemas its value must satisfy.
struct NamedKey {
  std::string key;
  std::vector<ConjItem> value;
  bool required = false;
  bool forbidden = false;
};

class Converter {
 public:
  Converter(const Json& document, std::string_view source_name, const JsonSchemaOptions& options);

  absl::StatusOr<JsonSchemaGrammar> Run();

  // ---- shared by the stages ----
  const JsonSchemaOptions& options() const { return options_; }
  grammar::Grammar& g() { return grammar_; }
  // "#/json/pointer" of a node of the document ("#" for the root).
  std::string PointerOf(const Json* node) const;
  // The node a $ref names, resolved against the base URI of `from`.
  absl::StatusOr<const Json*> ResolveRef(const Json* from, const std::string& ref) const;
  bool legacy_ref() const { return legacy_ref_; }  // draft <= 7: $ref siblings ignored
  // Draft 6 on: a number with a zero fraction (1.0) is an integer; draft 4
  // and earlier: an integer has no fraction or exponent part.
  bool zero_fraction_is_integer() const { return draft_ >= 6; }
  // False for keywords the document's draft did not have (draft-04 has no
  // const, contains, propertyNames; draft-06 no if/then/else).
  bool KeywordExists(std::string_view key) const;

  // A rule deriving the instances of the conjunction; built later.
  grammar::RuleId RuleFor(const Conj& conj);
  grammar::ExprId RefTo(const Conj& conj) { return grammar_.AddRuleRef(RuleFor(conj)); }
  grammar::ExprId RefTo(const Json* node) { return RefTo(Conj{{node, 0}}); }
  // `items` as a Conj: duplicates removed, in document order.
  Conj MakeConj(std::vector<ConjItem> items);

  // A keyword the grammar cannot enforce: an error in strict mode; in
  // lenient mode a warning (once per keyword and place) and OK.
  absl::Status Unsupported(std::string_view keyword, std::string_view pointer,
                           std::string_view why);
  // A keyword that constrains nothing under JSON Schema (an unknown format):
  // ignored in both modes, with a warning (once per keyword and place).
  void Ignored(std::string_view keyword, std::string_view pointer, std::string_view why);

  // Expressions shared by every rule (json_schema_strings.cc builds them).
  grammar::ExprId Void();         // matches nothing
  grammar::ExprId Ws();           // bounded optional whitespace (kEmpty when compact)
  grammar::ExprId Literal(std::string_view bytes) { return grammar_.AddLiteral(std::string(bytes)); }
  grammar::ExprId Token(std::string_view structural);  // ws? "," ws? and friends
  grammar::ExprId AnyValue();     // any JSON value
  grammar::ExprId AnyString();    // any JSON string (every escape)
  bool IsVoid(grammar::ExprId e) const;
  // A new rule named after `name` (made unique).
  grammar::RuleId NewRule(std::string_view name, grammar::ExprId body);

  // ---- stages ----
  // json_schema_merge.cc
  absl::StatusOr<MergedSchema> Merge(const Conj& conj);
  // json_schema_build.cc
  absl::StatusOr<grammar::ExprId> Build(const Conj& conj);
  // Takes ownership of a schema node the converter wrote (its address stays
  // valid) and names it `pointer` in messages.
  const Json* AddSynthetic(Json node, std::string pointer);
  // A oneOf whose branches only list `required` keys, made exact: the
  // alternatives of branch i forbid, for every other branch j, one of j's
  // keys that i does not require (and ask for an object: under two or more
  // such branches a non-object satisfies all of them, so oneOf fails).
  // nullopt when the oneOf has another shape or needs more than
  // kMaxOneOfChoices alternatives (then it is read as anyOf).
  std::optional<std::vector<grammar::ExprId>> OneOfOfRequired(const Json& holder,
                                                              const std::vector<ConjItem>& base);
  // if/then/else of m.conditional_node as (if and then) or (not-if and
  // else), for an `if` whose negation has a grammar (NegatedIf).
  absl::StatusOr<grammar::ExprId> BuildConditional(const Conj& conj, const MergedSchema& m);
  // dependentSchemas of m.dependency_node: a non-object, or an object with
  // exactly the triggers of one subset present, under their schemas (one
  // alternative per subset, at most 2^kMaxDependentSchemas).
  grammar::ExprId BuildDependentSchemas(const Conj& conj, const MergedSchema& m);
  // A schema node (owned here) for the negation of `if_node`: an `if` that
  // tests one property ({properties: {k: S}}, maybe required [k]) is negated
  // as an object whose k is there and fails S (or, if `if` required k, is
  // absent). Unimplemented for other shapes.
  absl::StatusOr<const Json*> NegatedIf(const Json* if_node);
  // A schema node (owned here) for not(n) when n only requires keys (maybe
  // of objects only): an object missing one of them (or, when n is about
  // objects only, anything else too). nullptr for other shapes.
  const Json* NegatedRequired(const MergedSchema& n, const std::string& pointer);
  // Folds m.negations into m.types and m.string_exclusions (Unsupported
  // for the rest) and clears them.
  absl::Status ApplyNegations(MergedSchema& m);
  // What not(n) leaves of the strings, when n has only types, string
  // keywords or a list of strings, booleans and null: the whole-text regex
  // of the strings it excludes (nullopt: none), and in `m` the listed
  // booleans and null; Unimplemented otherwise.
  absl::StatusOr<std::optional<std::string>> NegatedStrings(const MergedSchema& n, MergedSchema& m);
  // json_schema_objects.cc
  // The object alternative of `m`, built once per set of object keywords
  // (object_memo_).
  absl::StatusOr<grammar::ExprId> BuildObject(const MergedSchema& m);
  absl::StatusOr<grammar::ExprId> BuildObjectUncached(const MergedSchema& m);
  absl::StatusOr<grammar::ExprId> BuildArray(const MergedSchema& m);
  grammar::ExprId ObjectTree(const std::vector<NamedKey>& named, const std::vector<size_t>& present,
                             std::optional<grammar::RuleId> extra_rule, uint64_t min_members);
  // The alternatives of an object member whose key is none of `names`:
  // patternProperties, additionalProperties and propertyNames of `m`.
  absl::StatusOr<std::vector<grammar::ExprId>> ExtraMembers(
      const MergedSchema& m, const std::vector<std::string>& names,
      const std::vector<MergedSchema>& name_schemas);
  // The members of an object whose named keys are `named` (required and
  // forbidden flags final), in schema order or any order.
  absl::StatusOr<grammar::ExprId> BuildObjectMembers(const MergedSchema& m,
                                                     const std::vector<NamedKey>& named,
                                                     std::optional<grammar::RuleId> extra_rule);
  // Object members in any order, without the braces: each of `once`
  // exactly once (one rule per subset of them written, so at most
  // kAnyOrderExactKeys of them), and `any_times` (a member rule) any number
  // of times in between; the members separated by Token(","); between
  // `min_members` and `max_members` members in all (one rule per subset and
  // count told apart: AnyOrderRules of them). Void when nothing can be
  // written at all.
  grammar::ExprId MembersInAnyOrder(const std::vector<grammar::ExprId>& once,
                                    std::optional<grammar::RuleId> any_times, std::string_view name,
                                    uint64_t min_members = 0,
                                    std::optional<uint64_t> max_members = std::nullopt);
  // Can BuildObjectAnyOrder keep every constraint of this object (counts,
  // required keys within budget)?
  bool AnyOrderIsExact(const MergedSchema& m, const std::vector<NamedKey>& named,
                       const std::vector<size_t>& present) const;
  absl::StatusOr<grammar::ExprId> BuildObjectAnyOrder(const MergedSchema& m,
                                                      const std::vector<NamedKey>& named,
                                                      const std::vector<size_t>& present,
                                                      std::optional<grammar::RuleId> extra_rule);
  // json_schema_strings.cc
  absl::StatusOr<grammar::ExprId> BuildString(const MergedSchema& m);
  // The JSON text of a value (for const/enum), with this converter's whitespace.
  absl::StatusOr<grammar::ExprId> ValueLiteral(const Json& value);
  // Does a decoded string satisfy the string keywords of `m` (length, patterns,
  // formats)? Used to filter enum values and object keys.
  absl::StatusOr<bool> StringSatisfies(const std::string& s, const MergedSchema& m);
  // Is the decoded text `s` matched whole by `regex` (DFA cached)?
  absl::StatusOr<bool> WholeMatch(const std::string& regex, const std::string& s);
  // Is `s` matched by the ECMA-262 search `pattern`?
  absl::StatusOr<bool> PatternFinds(const std::string& pattern, const std::string& s);
  // The JSON string (quotes included) of the decoded text `s`: its canonical
  // spelling, or with options().any_spelling every spelling of it.
  grammar::ExprId StringLiteral(std::string_view s);
  // `"key": value` of a named key.
  grammar::ExprId NamedMember(const NamedKey& k);
  // The flags of J-regexes (string contents): J, and E with any_spelling.
  uint32_t JsonStringFlags() const;
  // A JSON string (quotes included) whose decoded text is not one of `names`.
  grammar::ExprId KeyOtherThan(const std::vector<std::string>& names);
  // A JSON string (quotes included) whose decoded text the J-flag `regex`
  // matches whole.
  grammar::ExprId JsonStringMatching(const std::string& regex);
  // A JSON string whose decoded text the search `pattern` finds (J flag regex).
  grammar::ExprId StringMatching(const std::string& pattern);
  // Does the regex compiler take the search `pattern` (syntax, anchors)? Its
  // automaton is not built here (the lowering may build it lazily).
  absl::Status CheckSearchPattern(const std::string& pattern);
  // Does the J-flag `regex` compile within the budgets (set operations are
  // determinized when its NFA is built)?
  absl::Status CheckJsonStringRegex(const std::string& regex);
  // The J-flag regex of a string's decoded text under the patterns, formats
  // and (with either) the length limits of `m`; nullopt when there is no
  // pattern or format. What has no grammar is Unsupported. `counted_ok`:
  // the caller writes it through CountedStringRegex when that takes it, so
  // it need only fit as a counted terminal.
  absl::StatusOr<std::optional<std::string>> StringContentRegex(const MergedSchema& m,
                                                                bool counted_ok = false);
  // The whole string terminal, quotes included, as one regex when it is a
  // counted terminal with a body (grammar/counted_automaton.h: the content's
  // pattern automaton, its length counted in the state number, never the
  // product of the two); nullopt when it is not one.
  std::optional<std::string> CountedStringRegex(const std::string& content) const;
  // The same constraints (lengths included) as one regex with nothing
  // dropped: an error when any part has no grammar or the automaton does not
  // fit. For negating them.
  absl::StatusOr<std::string> ExactStringRegex(const MergedSchema& m);
  // The patterns, formats and exclusions of `m` as (regex, keyword); a part
  // without a grammar goes to `refuse` (its error stops the walk).
  absl::Status StringOperands(
      const MergedSchema& m, std::vector<std::pair<std::string, std::string>>* operands,
      absl::FunctionRef<absl::Status(std::string_view keyword, std::string why)> refuse);

 private:
  void IndexDocument();
  void DropUnreachableRules();

  const Json& document_;
  const JsonSchemaOptions& options_;
  grammar::Grammar grammar_;
  std::vector<JsonSchemaWarning> warnings_;
  absl::flat_hash_set<std::string> warned_;
  bool legacy_ref_ = false;
  int draft_ = 2020;  // 3, 4, 6, 7 from $schema (or the options), else 2020 (2019-09 alike)
  const char* id_keyword_ = "$id";  // "id" in draft-04 and earlier

  absl::flat_hash_map<const Json*, std::string> pointer_of_;
  // Schema nodes the converter writes itself (negated `if`s); never move.
  std::deque<Json> synthetic_;
  absl::flat_hash_map<const Json*, const Json*> negated_if_;  // `if` node -> its negation
  // OneOfOfRequired: "<oneOf holder pointer>#<branch>#<choice>" -> the
  // synthetic node forbidding one key of every other branch (made once, so
  // a recursive schema meets the same conjunctions again).
  absl::flat_hash_map<std::string, const Json*> oneof_exclusions_;
  // BuildDependentSchemas: "<node pointer>#<subset>" -> the synthetic node
  // requiring the subset's triggers and forbidding the others.
  absl::flat_hash_map<std::string, const Json*> dependency_cases_;
  // Document order of the nodes (IndexDocument numbers the subschemas in the
  // order they are found; a node reached otherwise gets the next number when
  // first sorted): MakeConj's sort key.
  absl::flat_hash_map<const Json*, uint32_t> order_of_;
  absl::flat_hash_map<const Json*, std::string> base_uri_of_;  // resource base URIs
  absl::flat_hash_map<std::string, const Json*> resources_;    // absolute URI -> node
  absl::flat_hash_map<std::string, const Json*> anchors_;      // URI#anchor -> node

  absl::flat_hash_map<Conj, grammar::RuleId> rule_of_;
  // BuildObject's results by the object keywords they were built from (the
  // nodes holding properties and the rest, required, dependentRequired,
  // propertyNames, min/maxProperties): conjunctions that differ only
  // elsewhere (a dependency case, an anyOf branch adding a type, a
  // recursive schema met under several merges) share one object grammar
  // instead of each writing its member rules again (a 1.7 KB meta-schema
  // wrote 10,000 member rules that the dedup pass merged back to 30).
  absl::flat_hash_map<std::string, grammar::ExprId> object_memo_;
  absl::flat_hash_set<std::string> rule_names_;
  absl::flat_hash_map<std::string, uint32_t> next_suffix_;  // NewRule's counters
  std::vector<std::pair<Conj, grammar::RuleId>> pending_;

  grammar::RuleId ws_rule_ = 0, string_char_rule_ = 0, any_string_rule_ = 0, any_value_rule_ = 0;
  bool have_ws_ = false, have_any_value_ = false, have_any_string_ = false;
  // Compiled whole-text regexes (searches, formats, exclusions) by text, for
  // checking enum values and keys.
  absl::flat_hash_map<std::string, grammar::ByteDfa> pattern_dfas_;
  // CountedStringRegex's verdicts by content regex.
  mutable absl::flat_hash_map<std::string, bool> counted_strings_;
};

// `text` as the body of a JSON string literal (no quotes): the canonical
// spelling (kRegexJsonString's), UTF-8 kept raw.
std::string JsonStringBody(std::string_view text);
// A rule name (letters, digits, '-') after a JSON pointer.
std::string RuleNameFor(std::string_view pointer);
// Number of code points of valid UTF-8 text.
uint64_t CodepointCount(std::string_view text);
// The regex (grammar/regex_compiler.h dialect) of an ECMA-262 search: the
// pattern may match anywhere unless anchored with ^ / $ (per top-level
// alternative); \d \w \s take ECMA-262's meaning.
std::string SearchRegex(std::string_view ecma_pattern);
// `text` matched literally by the regex dialect (punctuation escaped).
std::string RegexLiteral(std::string_view text);
// (?&:(?:A)|(?:B)|...): the strings every operand matches; one operand as is.
std::string IntersectionRegex(const std::vector<std::string>& operands);
// [\s\S]{min,max} (max absent: unbounded): the decoded text's length as an
// operand of IntersectionRegex (counted, not unrolled).
std::string LengthRegex(uint64_t min, std::optional<uint64_t> max);

}  // namespace zapgram::transforms::json_schema_internal

#endif  // ZAPGRAM_TRANSFORMS_JSON_SCHEMA_INTERNAL_H_
