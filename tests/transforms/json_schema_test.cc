// Units of the JSON Schema converter (transforms/json_schema*.cc): each
// keyword's language on hand-picked instances, the strict/lenient errors,
// whitespace and key-order options, a golden dump, the JSON-string regex
// flag against RE2, and scale (10,000 properties, 1,000-deep $ref chains,
// recursive trees) checked by grammar sizes, not by time.
//
// Verdicts go through the compile path of Grammar::Load
// (tests/support/ir_compile.h: normalize, merge regular terminals, lower,
// pruned recognizer).
#include "transforms/json_schema.h"

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "grammar/gbnf_reader.h"
#include "grammar/regex_compiler.h"
#include "parser/flat_grammar.h"
#include "re2/re2.h"
#include "transforms/json_schema_internal.h"
#include "tests/support/ir_compile.h"

namespace zapgram::transforms {
namespace {

struct Compiled {
  grammar::Grammar ir;
  parser::FlatGrammar flat;
  std::vector<JsonSchemaWarning> warnings;
};

absl::StatusOr<Compiled> Compile(std::string_view schema, const JsonSchemaOptions& options = {}) {
  absl::StatusOr<JsonSchemaGrammar> converted = JsonSchemaToGrammar(schema, "<test>", options);
  if (!converted.ok()) return converted.status();
  absl::StatusOr<parser::FlatGrammar> flat = testing::CompileIr(converted->grammar);
  if (!flat.ok()) return flat.status();
  return Compiled{std::move(converted->grammar), *std::move(flat), std::move(converted->warnings)};
}

bool Accepts(const Compiled& c, std::string_view text) { return testing::FlatAccepts(c.flat, text); }

// Expects every `good` text accepted and every `bad` one rejected.
void ExpectLanguage(std::string_view schema, const std::vector<std::string>& good,
                    const std::vector<std::string>& bad, const JsonSchemaOptions& options = {}) {
  absl::StatusOr<Compiled> c = Compile(schema, options);
  ASSERT_TRUE(c.ok()) << schema << ": " << c.status();
  for (const std::string& t : good) EXPECT_TRUE(Accepts(*c, t)) << schema << " should accept " << t;
  for (const std::string& t : bad) EXPECT_FALSE(Accepts(*c, t)) << schema << " should reject " << t;
}

TEST(JsonSchema, TypesConstEnum) {
  ExpectLanguage(R"({"type": ["integer", "null"]})", {"0", "-12", "null"},
                 {"1.5", "\"a\"", "true", "01", "1.0"});
  ExpectLanguage(R"({"type": "number"})", {"0", "-1.5e3", "2E-1"}, {"+1", ".5", "1.", "NaN"});
  ExpectLanguage(R"({"const": {"a": [1, "x"]}})", {R"({"a": [1, "x"]})", R"({"a":[1,"x"]})", R"({"a": [1.0, "x"]})"},
                 {R"({"a": [2, "x"]})", R"({"a": [1, "x"], "b": 1})"});
  ExpectLanguage(R"({"enum": ["a\"b", 3, null], "type": "string"})", {R"("a\"b")"},
                 {"3", "null", R"("a\u0022b")"});
  ExpectLanguage(R"({"type": "string", "enum": ["abc", "abcdef"], "maxLength": 4})", {"\"abc\""},
                 {"\"abcdef\""});
  ExpectLanguage("true", {"1", "{\"a\": [null, {}]}", "\"x\""}, {"{", "tru"});
  // Empty containers in a const take one whitespace run (max_whitespace 2).
  ExpectLanguage(R"({"enum": [[], {}]})", {"[  ]", "{}"}, {"[   ]", "{    }"});
  // Object values in any order when members are (validation: also spelled any way).
  ExpectLanguage(R"({"const": {"a": 1, "b": [2]}})", {R"({"b": [2], "a": 1})"},
                 {R"({"b": [2]})", R"({"a": 1, "b": [2], "a": 1})"}, ValidationSchemaOptions(false));
  ExpectLanguage(R"({"const": {"a": 1, "b": [2]}})", {R"({"a": 1, "b": [2]})"}, {R"({"b": [2], "a": 1})"});
}

// Counts written as doubles: an integral one is its integer (5.0), one at
// 2^64 or above saturates (1e30: converting it to an integer was undefined
// behaviour, found by the fuzzer); a fraction or a negative is an error
// naming the keyword. Counts beyond what a grammar can count (maxLength past
// kMaxCountedLength, maxProperties past the rule budget; a UINT64_MAX
// maxProperties overflowed the budget check and crashed the compile) are
// unsupported: an error naming the keyword, dropped in lenient mode.
TEST(JsonSchema, CountsWrittenAsDoubles) {
  ExpectLanguage(R"({"type": "string", "maxLength": 2.0})", {"\"ab\""}, {"\"abc\""});
  ExpectLanguage(R"({"type": "array", "maxItems": 1e300})", {"[1, 2, 3]"}, {"{}"});
  ExpectLanguage(R"({"type": "array", "minItems": 3.0})", {"[1, 2, 3]"}, {"[1, 2]"});
  for (const char* bad : {R"({"maxLength": 2.5})", R"({"minItems": -1.0})", R"({"maxLength": -1e30})"}) {
    absl::StatusOr<Compiled> c = Compile(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(c.status().message().find("non-negative integer"), std::string::npos) << c.status();
  }
  JsonSchemaOptions lenient;
  lenient.lenient = true;
  for (const char* huge : {R"({"type": "string", "maxLength": 1e30})", R"({"type": "string", "maxLength": 4000000000})",
                           R"({"type": "object", "maxProperties": 1.8446744073709552e19})",
                           R"({"type": "object", "maxProperties": 18446744073709551615})",
                           R"({"type": "object", "minProperties": 18446744073709551615})"}) {
    absl::StatusOr<Compiled> strict = Compile(huge);
    ASSERT_FALSE(strict.ok()) << huge;
    EXPECT_NE(strict.status().message().find("unsupported"), std::string::npos) << strict.status();
    absl::StatusOr<Compiled> dropped = Compile(huge, lenient);
    ASSERT_TRUE(dropped.ok()) << huge << ": " << dropped.status();
    EXPECT_EQ(dropped->warnings.size(), 1u) << huge;
  }
  ExpectLanguage(R"({"type": "string", "maxLength": 1e30})", {"\"abcdef\"", "\"\""}, {"1"}, lenient);
  ExpectLanguage(R"({"type": "object", "maxProperties": 1e30})", {R"({"a": 1})"}, {"[]"}, lenient);
}

TEST(JsonSchema, ObjectsInSchemaOrder) {
  const std::string schema = R"({"type": "object", "properties": {"a": {"type": "integer"},
      "b": {"type": "string"}, "c": {"type": "boolean"}}, "required": ["b"]})";
  ExpectLanguage(schema,
                 {R"({"b": "x"})", R"({"a": 1, "b": "x", "c": true})", R"({"b": "x", "zz": [1]})",
                  R"({"a": 1, "b": "x", "other": null})"},
                 {"{}", R"({"a": 1})", R"({"b": "x", "a": 1})", R"({"a": "1", "b": "x"})",
                  R"({"b": "x", "b": "y"})", R"({"b": "x", "c": 1})"});
  ExpectLanguage(R"({"properties": {"a": {}}, "additionalProperties": false})",
                 {"{}", R"({"a": 1})", "3", "[1]"}, {R"({"b": 1})", R"({"a": 1, "b": 1})"});
  ExpectLanguage(R"({"type": "object", "additionalProperties": {"type": "integer"},
                     "properties": {"ab": {"type": "string"}}})",
                 {R"({"ab": "x", "a": 1, "abc": 2})", R"({"": 0})"},
                 {R"({"ab": 1})", R"({"a": "x"})", R"({"ab": "x", "ab": 3})"});
  ExpectLanguage(R"({"type": "object", "minProperties": 1, "maxProperties": 2,
                     "properties": {"a": {}, "b": {}, "c": {}}})",
                 {R"({"a": 1})", R"({"a": 1, "c": 2})", R"({"x": 1, "y": 2})"},
                 {"{}", R"({"a": 1, "b": 2, "c": 3})", R"({"a": 1, "x": 2, "y": 3})"});
  ExpectLanguage(R"({"type": "object", "patternProperties": {"^x-": {"type": "integer"}},
                     "additionalProperties": false, "properties": {"id": {"type": "string"}}})",
                 {R"({"id": "a", "x-a": 1, "x-b": 2})", "{}"},
                 {R"({"x-a": "s"})", R"({"y": 1})"});
  ExpectLanguage(R"({"type": "object", "propertyNames": {"maxLength": 2}})",
                 {R"({"ab": 1})", "{}"}, {R"({"abc": 1})"});
}

// The members of an allOf of objects come in the order of the first branch
// in the document that names them. That order must not depend on where the
// parsed schema happens to sit in memory (it once did: conjunctions were
// sorted by node address, and a MaskBench schema was accepted or rejected
// depending on the process). Each round shifts the heap with blocks of
// assorted sizes kept alive, then converts again: the dump must not change
// and the instance in the first branch's order must be accepted.
TEST(JsonSchema, MergedMemberOrderIsDocumentOrderWhateverTheHeap) {
  const std::string schema = R"({
    "allOf": [
      {"properties": {"procedure": {"enum": ["a", "b"]}, "ingredients": {"type": "array"},
                      "options": {"type": "object"}},
       "required": ["procedure", "ingredients"], "additionalProperties": false},
      {"anyOf": [{"$ref": "#/definitions/a"}, {"$ref": "#/definitions/b"}]}],
    "definitions": {
      "a": {"properties": {"options": {"type": "object"}, "procedure": {"const": "a"}},
            "required": ["options"]},
      "b": {"properties": {"ingredients": {}, "procedure": {"const": "b"}}}}})";
  const std::string in_first_branch_order = R"({"procedure": "a", "ingredients": [], "options": {}})";
  std::vector<std::vector<char>> ballast;
  std::string first_dump;
  for (int round = 0; round < 24; ++round) {
    for (int i = 0; i < round * 7; ++i) ballast.emplace_back(16 + (i * 37 + round * 11) % 400);
    absl::StatusOr<JsonSchemaGrammar> converted = JsonSchemaToGrammar(schema, "<test>", {});
    ASSERT_TRUE(converted.ok()) << converted.status();
    const std::string dump = grammar::Dump(converted->grammar);
    if (round == 0) first_dump = dump;
    EXPECT_EQ(dump, first_dump) << "round " << round;
    absl::StatusOr<parser::FlatGrammar> flat = testing::CompileIr(converted->grammar);
    ASSERT_TRUE(flat.ok()) << flat.status();
    EXPECT_TRUE(testing::FlatAccepts(*flat, in_first_branch_order)) << "round " << round;
    EXPECT_FALSE(testing::FlatAccepts(*flat, R"({"procedure": "a", "options": {}, "ingredients": []})"))
        << "round " << round;
  }
}

TEST(JsonSchema, AnyOrder) {
  JsonSchemaOptions options;
  options.member_order = MemberOrder::kAny;
  ExpectLanguage(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {}},
                     "required": ["a", "b"], "additionalProperties": false})",
                 {R"({"a": 1, "b": 2})", R"({"b": 2, "a": 1})"},
                 {R"({"a": 1})", R"({"b": 1, "a": "x"})", R"({"a": 1, "b": 2, "c": 3})"}, options);
}

// Validation options (ValidationSchemaOptions): RFC 8259 whitespace,
// members in any order where exact, every string spelling.
TEST(JsonSchemaValidation, AnyWhitespaceEverywhereRfc8259AllowsIt) {
  const std::string schema = R"({"type": "object", "properties": {"a": {"type": "array",
      "items": {"enum": [1, {"x": null}]}}, "b": {}}, "required": ["a"]})";
  const std::string ws = " \t\n\r\n\n        ";
  const std::string spread = absl::StrCat(ws, "{", ws, "\"a\"", ws, ":", ws, "[", ws, "1", ws, ",", ws, "{",
                                          ws, "\"x\"", ws, ":", ws, "null", ws, "}", ws, "]", ws, ",", ws,
                                          "\"b\"", ws, ":", ws, "[", ws, "]", ws, "}", ws);
  ExpectLanguage(schema, {spread, R"({"a":[]})", "{\"a\": [ ]}"},
                 {absl::StrCat("{\"a\"\f: []}"), "{\"a\": [1 0]}", "{\"a\": [1]}x"},
                 ValidationSchemaOptions(false));
  // Generation keeps its bound (and nothing before the value).
  ExpectLanguage(schema, {R"({"a": [1]})"}, {spread, R"( {"a": [1]})"});
}

TEST(JsonSchemaValidation, AnyOrderWhereExactElseSchemaOrder) {
  // Any order, min/maxProperties kept by the required keys: exact.
  ExpectLanguage(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {}, "c": {}},
                     "required": ["a", "b"], "minProperties": 2, "additionalProperties": false})",
                 {R"({"b": 2, "a": 1})", R"({"c": 0, "b": 2, "a": 1})"},
                 {R"({"b": 2})", R"({"b": 2, "a": "1"})", R"({"b": 2, "a": 1, "d": 0})"},
                 ValidationSchemaOptions(false));
  ExpectLanguage(R"({"type": "object", "minProperties": 1, "properties": {"a": {}, "b": {}}})",
                 {R"({"b": 2, "a": 1})", R"({"z": 0})"}, {"{}"}, ValidationSchemaOptions(false));
  // maxProperties: counted in any order.
  ExpectLanguage(R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "maxProperties": 2})",
                 {R"({"a": 1, "c": 2})", R"({"c": 1, "a": 2})"}, {R"({"a": 1, "b": 2, "c": 3})"},
                 ValidationSchemaOptions(false));
  // 11 required keys: beyond the any-order budget, so schema order (strict
  // kAny refuses it).
  std::string props, required, in_order, reversed;
  for (int i = 0; i < 11; ++i) {
    absl::StrAppend(&props, i ? ", " : "", "\"k", i, "\": {\"type\": \"integer\"}");
    absl::StrAppend(&required, i ? ", " : "", "\"k", i, "\"");
    absl::StrAppend(&in_order, i ? ", " : "", "\"k", i, "\": ", i);
    absl::StrAppend(&reversed, i ? ", " : "", "\"k", 10 - i, "\": ", i);
  }
  const std::string many = absl::StrCat(R"({"type": "object", "properties": {)", props,
                                        R"(}, "required": [)", required, "]}");
  ExpectLanguage(many, {absl::StrCat("{", in_order, "}")}, {absl::StrCat("{", reversed, "}")},
                 ValidationSchemaOptions(false));
  JsonSchemaOptions any;
  any.member_order = MemberOrder::kAny;
  EXPECT_FALSE(Compile(many, any).ok());
}

// Any order against a direct check: every object over keys a, b, c (named,
// integer-valued) and x (additional), each at most once, in every order, with
// an integer or a string value, for schemas mixing required, minProperties,
// maxProperties and additionalProperties. The oracle counts keys and checks
// each rule of JSON Schema on its own; the grammar tracks subsets and counts.
TEST(JsonSchemaValidation, AnyOrderCountsAgainstDirectCheck) {
  struct Case {
    std::vector<std::string> required;
    uint64_t lo;
    std::optional<uint64_t> hi;
    int additional;  // 0: false, 1: true, 2: {"type": "string"}
  };
  const std::vector<Case> cases = {
      {{"a", "b"}, 0, std::nullopt, 0}, {{"a"}, 3, std::nullopt, 1}, {{}, 2, 3, 1},
      {{"a", "c"}, 0, 2, 2},          {{"b"}, 2, 2, 2},             {{}, 0, 0, 1},
      {{"a", "b", "c"}, 4, std::nullopt, 1}, {{}, 1, 1, 0},
  };
  const std::vector<std::string> keys = {"a", "b", "c", "x"};
  for (const Case& c : cases) {
    std::string schema = R"({"type": "object", "properties": {"a": {"type": "integer"},
        "b": {"type": "integer"}, "c": {"type": "integer"}}, "required": [)";
    for (size_t i = 0; i < c.required.size(); ++i) absl::StrAppend(&schema, i ? ", " : "", "\"", c.required[i], "\"");
    absl::StrAppend(&schema, "], \"minProperties\": ", c.lo);
    if (c.hi) absl::StrAppend(&schema, ", \"maxProperties\": ", *c.hi);
    absl::StrAppend(&schema, ", \"additionalProperties\": ",
                    c.additional == 0 ? "false" : c.additional == 1 ? "true" : R"({"type": "string"})", "}");
    absl::StatusOr<Compiled> validation = Compile(schema, ValidationSchemaOptions(false));
    JsonSchemaOptions any;
    any.member_order = MemberOrder::kAny;
    absl::StatusOr<Compiled> generation = Compile(schema, any);
    ASSERT_TRUE(validation.ok()) << validation.status();
    ASSERT_TRUE(generation.ok()) << generation.status();
    int checked = 0;
    // Every sequence of distinct keys (orders included), every value choice.
    for (uint32_t code = 0; code < 1u << 12; ++code) {
      std::vector<int> seq;
      uint32_t used = 0;
      bool ok_seq = true;
      for (int i = 0; i < 4 && ok_seq; ++i) {
        const int k = static_cast<int>((code >> (3 * i)) & 7);
        if (k == 0) {
          ok_seq = (code >> (3 * i)) == 0;  // one spelling per sequence
          break;
        }
        if (k > 4 || (used & (1u << (k - 1)))) ok_seq = false;
        used |= 1u << (k - 1);
        seq.push_back(k - 1);
      }
      if (!ok_seq) continue;
      for (uint32_t values = 0; values < (1u << seq.size()); ++values) {
        std::string text = "{";
        bool valid = seq.size() >= c.lo && (!c.hi || seq.size() <= *c.hi);
        for (size_t i = 0; i < seq.size(); ++i) {
          const bool is_string = (values >> i) & 1;
          absl::StrAppend(&text, i ? ", " : "", "\"", keys[seq[i]], "\": ", is_string ? "\"s\"" : "1");
          if (keys[seq[i]] == "x") {
            valid = valid && c.additional != 0 && (c.additional == 1 || is_string);
          } else {
            valid = valid && !is_string;
          }
        }
        text += "}";
        for (const std::string& r : c.required) {
          bool present = false;
          for (int k : seq) present = present || keys[k] == r;
          valid = valid && present;
        }
        EXPECT_EQ(Accepts(*validation, text), valid) << schema << "\n" << text;
        EXPECT_EQ(Accepts(*generation, text), valid) << schema << "\n" << text;
        ++checked;
      }
    }
    EXPECT_EQ(checked, 1 + 4 * 2 + 12 * 4 + 24 * 8 + 24 * 16);
  }
}

TEST(JsonSchemaValidation, EverySpellingOfKeysValuesAndPatterns) {
  const std::string schema = R"({"type": "object", "properties": {
      "caf\u00e9": {"type": "string", "pattern": "^[a-z/]+$"},
      "e": {"enum": ["\ud83d\ude00", "x\"y"]},
      "f": {"type": "string", "format": "date"}}, "additionalProperties": false})";
  ExpectLanguage(schema,
                 {"{\"caf\xC3\xA9\": \"a/b\"}", R"({"caf\u00e9": "a\/b"})", R"({"caf\u00E9": "\u0061"})",
                  R"({"\u0063af\u00e9": "ab"})", "{\"e\": \"\xF0\x9F\x98\x80\"}", R"({"e": "\ud83d\ude00"})",
                  R"({"e": "\uD83D\uDE00"})", R"({"e": "x\u0022y"})", R"({"f": "2024-01-0\u0031"})"},
                 {R"({"caf\u00e9": "\u0041"})", R"({"cafe": "a"})", R"({"e": "\ud83d"})",
                  R"({"e": "\ud83d\ude01"})", R"({"f": "2024-01-0\u0041"})", R"({"caf\u00e9": "a\x"})"},
                 ValidationSchemaOptions(false));
  // Integers: 1.0 and 1e3 are integers from draft 6 on (validation reads
  // every spelling a finite automaton can tell), not in draft 4.
  ExpectLanguage(R"({"type": "integer"})", {"1", "-1.00", "1e3", "1E+3"}, {"1.5", "1e-3", "1.0e"},
                 ValidationSchemaOptions(false));
  ExpectLanguage(R"({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"})", {"1"},
                 {"1.0", "1e3"}, ValidationSchemaOptions(false));
  // Generation: the canonical spelling only.
  ExpectLanguage(schema, {"{\"caf\xC3\xA9\": \"a/b\"}"}, {R"({"caf\u00e9": "a"})", R"({"e": "x\u0022y"})"});
}

TEST(JsonSchema, Arrays) {
  ExpectLanguage(R"({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                     "items": {"type": "boolean"}, "minItems": 1, "maxItems": 3})",
                 {"[1]", R"([1, "a"])", R"([1, "a", true])"},
                 {"[]", R"(["a"])", R"([1, "a", true, false])", R"([1, 2])"});
  ExpectLanguage(R"({"items": [{"type": "integer"}], "additionalItems": false})",
                 {"[]", "[1]"}, {"[1, 2]", "[\"a\"]"}, {.draft = JsonSchemaDraft::kDraft7});
  ExpectLanguage(R"({"type": "array", "items": {"type": "null"}, "minItems": 2})",
                 {"[null, null]", "[null,null,null]"}, {"[null]", "[]"});
}

TEST(JsonSchema, CombinatorsAndRefs) {
  ExpectLanguage(R"({"allOf": [{"properties": {"a": {"minimum": 0}}, "required": ["a"]},
                               {"properties": {"a": {"type": "integer"}}}]})",
                 {R"({"a": 3})"}, {R"({"a": 3.5})", R"({"a": -1})", "{}"});
  ExpectLanguage(R"({"type": "object", "properties": {"k": {"type": "integer"}},
                     "anyOf": [{"required": ["k"]}, {"maxProperties": 0}]})",
                 {R"({"k": 1})", "{}"}, {R"({"k": "1"})", R"({"j": 1})"});
  ExpectLanguage(R"({"oneOf": [{"type": "string"}, {"type": "integer"}]})", {"\"a\"", "3"},
                 {"null"});
  ExpectLanguage(R"({"not": {"type": ["string", "null"]}})", {"1", "{}"}, {"\"a\"", "null"});
  // oneOf of `required` lists is exclusive (MaskBench calculate_area,
  // o90391): exactly one branch's keys all present; a non-object satisfies
  // both branches, so fails.
  const std::string one_of_keys = R"({"type": ["object", "integer"], "properties": {"length": {},
      "width": {}, "radius": {}}, "oneOf": [{"required": ["length", "width"]}, {"required": ["radius"]}]})";
  for (const JsonSchemaOptions& options : {JsonSchemaOptions{}, ValidationSchemaOptions(false)}) {
    ExpectLanguage(one_of_keys, {R"({"length": 1, "width": 2})", R"({"radius": 3})", R"({"width": 2, "radius": 3})"},
                   {R"({"length": 1, "width": 2, "radius": 3})", R"({"length": 1})", "{}", "7"}, options);
  }
  // Equal key sets: never exactly one.
  ExpectLanguage(R"({"properties": {"p": {"oneOf": [{"required": ["a"]},
                     {"required": ["a"], "title": "again"}]}}})",
                 {"{}", R"({"q": 1})"}, {R"({"p": {"a": 1}})", R"({"p": {}})", R"({"p": 1})"});
  ExpectLanguage(R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                     "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                     "additionalProperties": false}}, "$ref": "#/$defs/node"})",
                 {R"({"v": 1, "kids": [{"v": 2}, {"kids": [{"v": 3, "kids": []}]}]})"},
                 {R"({"v": 1, "kids": [{"v": "x"}]})"});
  ExpectLanguage(R"({"$id": "http://example.com/root.json", "$defs": {"a": {"$id": "a.json",
                     "$anchor": "A", "type": "integer"}}, "properties": {"x": {"$ref": "a.json"},
                     "y": {"$ref": "a.json#A"}, "z": {"$ref": "http://example.com/a.json#A"}}})",
                 {R"({"x": 1, "y": 2, "z": 3})"}, {R"({"x": "s"})", R"({"z": "s"})"});
  // draft-07: $ref replaces its siblings.
  ExpectLanguage(R"({"$defs": {"i": {"type": "integer"}}, "$ref": "#/$defs/i", "maximum": 2})",
                 {"5"}, {"\"a\""}, {.draft = JsonSchemaDraft::kDraft7});
  ExpectLanguage(R"({"$defs": {"i": {"type": "integer"}}, "$ref": "#/$defs/i", "maximum": 2})",
                 {"2"}, {"5"});
}

TEST(JsonSchema, Strings) {
  // minLength/maxLength count code points; a surrogate pair escape is one.
  ExpectLanguage(R"({"type": "string", "minLength": 2, "maxLength": 3})",
                 {R"("ab")", R"("\n\t")", "\"\xC3\xA9\xC3\xA9\xC3\xA9\"", R"("a\ud83d\ude00")"},
                 {R"("a")", R"("abcd")", R"("\ud83d")", "\"\xC3\xA9\""});
  // pattern is a search; anchors per alternative.
  ExpectLanguage(R"({"type": "string", "pattern": "b+c"})", {R"("abbcd")", R"("bc")"},
                 {R"("ac")", "3"});
  ExpectLanguage(R"({"pattern": "^a|z$"})", {R"("ax")", R"("xz")", "12"}, {R"("xa")", R"("zx")"});
  // Patterns speak of decoded characters; the text is the canonical spelling.
  ExpectLanguage(R"({"type": "string", "pattern": "^a\"\\\\\n$"})", {R"("a\"\\\n")"},
                 {R"("a\u0022\\\n")", "\"a\\\"\\\\\n\""});
  ExpectLanguage(R"({"type": "string", "pattern": "^\\d{2}$"})", {R"("12")"},
                 {"\"\xD9\xA1\xD9\xA2\""});  // Arabic-Indic digits: \d is ASCII (ECMA-262)
  ExpectLanguage(R"({"type": "string", "format": "date"})", {R"("2024-02-29")"},
                 {R"("2024-13-01")", R"("x")"});
}

TEST(JsonSchema, Whitespace) {
  const std::string schema = R"({"type": "array", "items": {"type": "integer"}})";
  ExpectLanguage(schema, {"[1,2]", "[ 1 , 2 ]", "[\n 1]"}, {"[   1]", " [1]", "[1] "});
  JsonSchemaOptions compact;
  compact.compact = true;
  ExpectLanguage(schema, {"[1,2]", "[]"}, {"[ 1]", "[1, 2]"}, compact);
  JsonSchemaOptions wide;
  wide.max_whitespace = 4;
  ExpectLanguage(schema, {"[    1]"}, {"[     1]"}, wide);
}

TEST(JsonSchema, UnsupportedIsAnErrorOrAWarning) {
  const std::string schema =
      R"({"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": true,
          "items": {"type": "string"}}}})";
  absl::StatusOr<JsonSchemaGrammar> strict = JsonSchemaToGrammar(schema, "s.json");
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(strict.status().message().find("unsupported: uniqueItems at #/properties/tags"),
            std::string::npos)
      << strict.status();
  JsonSchemaOptions lenient;
  lenient.lenient = true;
  absl::StatusOr<Compiled> c = Compile(schema, lenient);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_EQ(c->warnings[0].keyword, "uniqueItems");
  EXPECT_EQ(c->warnings[0].pointer, "#/properties/tags");
  EXPECT_TRUE(Accepts(*c, R"({"tags": ["a", "a"]})"));
  EXPECT_FALSE(Accepts(*c, R"({"tags": [1]})"));

  for (const char* s : {R"({"if": {"type": "string"}, "then": {"minLength": 1}})",  // not one property
                        R"({"contains": {"type": "string"}})",
                        R"({"dependentSchemas": {"a": {"required": ["b"]}, "b": false, "c": {},
                              "d": {"minProperties": 2}, "e": {"required": ["a"]}, "f": false}})",
                        R"({"not": {"minimum": 3}})",
                        R"({"unevaluatedProperties": false})"}) {
    absl::StatusOr<JsonSchemaGrammar> g = JsonSchemaToGrammar(s, "s.json");
    ASSERT_FALSE(g.ok()) << s;
    EXPECT_NE(g.status().message().find("unsupported: "), std::string::npos) << g.status();
    EXPECT_TRUE(JsonSchemaToGrammar(s, "s.json", lenient).ok()) << s;
  }
  absl::StatusOr<JsonSchemaGrammar> remote =
      JsonSchemaToGrammar(R"({"$ref": "http://localhost:1234/integer.json"})", "s.json", lenient);
  ASSERT_FALSE(remote.ok());
  EXPECT_NE(remote.status().message().find("remote references are refused"), std::string::npos);
  EXPECT_FALSE(JsonSchemaToGrammar("{\"type\": ", "s.json").ok());
  EXPECT_FALSE(JsonSchemaToGrammar(R"({"type": "strin"})", "s.json").ok());
  EXPECT_FALSE(JsonSchemaToGrammar(R"({"$ref": "#/nowhere"})", "s.json").ok());
}

// A format outside the specification is an annotation under JSON Schema:
// strict mode compiles it, the grammar does not constrain the string, and
// one warning (not a drop: nothing the schema asks is lost) names it. Known
// formats next to it still hold; a specification format without a grammar
// (idn-hostname) stays unsupported.
TEST(JsonSchema, UnknownFormatIsAnAnnotationWithAWarning) {
  const std::string schema = R"({"type": "object", "properties": {
      "id": {"type": "string", "format": "int32"},
      "at": {"type": "string", "format": "date"}}, "required": ["id", "at"]})";
  absl::StatusOr<Compiled> c = Compile(schema);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_EQ(c->warnings[0].keyword, "format");
  EXPECT_EQ(c->warnings[0].pointer, "#/properties/id");
  EXPECT_FALSE(c->warnings[0].dropped);
  EXPECT_NE(c->warnings[0].message.find("'int32'"), std::string::npos);
  EXPECT_TRUE(Accepts(*c, R"({"id": "not a number", "at": "2024-02-29"})"));
  EXPECT_FALSE(Accepts(*c, R"({"id": "7", "at": "2023-02-29"})"));
  EXPECT_FALSE(Accepts(*c, R"({"id": 7, "at": "2024-02-29"})"));
  // draft-03 names of formats that have a grammar.
  ExpectLanguage(R"({"type": "string", "format": "ip-address"})", {R"("1.2.3.4")"}, {R"("1.2.3")"});
  ExpectLanguage(R"({"type": "string", "format": "host-name"})", {R"("a.example")"}, {R"("a..b")"});
  absl::StatusOr<JsonSchemaGrammar> idn =
      JsonSchemaToGrammar(R"({"type": "string", "format": "idn-hostname"})", "s.json");
  ASSERT_FALSE(idn.ok());
  EXPECT_NE(idn.status().message().find("unsupported: format"), std::string::npos) << idn.status();
}

// Found on MaskBench: draft-04 plain-name fragments are spelled `id`; a
// pattern the regex compiler cannot take (lookahead) in patternProperties is
// unsupported, and lenient mode lets any key carry that value; a pattern of
// many words searched at once stays one small automaton.
TEST(JsonSchema, MaskBenchShapes) {
  ExpectLanguage(R"({"$schema": "http://json-schema.org/draft-04/schema#",
                     "properties": {"p": {"$ref": "#param"}},
                     "definitions": {"x": {"id": "#param", "type": "integer"}}})",
                 {R"({"p": 3})"}, {R"({"p": "3"})"});
  const std::string lookahead = R"({"type": "object", "patternProperties":
      {"^(?!@@)[a-z]+$": {"type": "string"}}, "additionalProperties": false})";
  absl::StatusOr<JsonSchemaGrammar> strict = JsonSchemaToGrammar(lookahead, "s.json");
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("unsupported: patternProperties at #"),
            std::string::npos)
      << strict.status();
  JsonSchemaOptions lenient;
  lenient.lenient = true;
  ExpectLanguage(lookahead, {R"({"ab": "x"})", R"({"@@": "x"})", "{}"}, {R"({"ab": 1})"}, lenient);
  std::string words;
  for (const char* w : {"Normal", "Fighting", "Flying", "Poison", "Ground", "Rock", "Bug", "Ghost",
                        "Steel", "Fire", "Water", "Grass", "Electric", "Psychic", "Ice", "Dragon",
                        "Dark", "Fairy"}) {
    absl::StrAppend(&words, words.empty() ? "" : "|", w);
  }
  // Anchors inside a group that spans the alternative anchor it.
  ExpectLanguage(R"js({"type": "string", "pattern": "(^(a|b)+$)"})js", {R"("ab")", R"("b")"},
                 {R"("xab")", R"("abx")", R"("")"});
  ExpectLanguage(R"js({"type": "string", "pattern": "(?:^a)|(b$)"})js", {R"("ax")", R"("xb")"},
                 {R"("xa")", R"("bx")"});
  ExpectLanguage(R"js({"type": "string", "pattern": "((^a)|(^b))"})js", {R"("ax")", R"("bx")"},
                 {R"("xa")"});
  ExpectLanguage(absl::StrCat(R"({"type": "string", "pattern": ")", words, R"("})"),
                 {R"("Ice")", R"("a Dark horse")", R"("FireWater")"}, {R"("ice")", R"("")"});
}

// Intersections are one regex with the dialect's set operations: patterns,
// formats and lengths of one string (lengths count decoded code points, and
// may pass the dialect's max_repeat), and the keys of patternProperties next
// to named keys, other patterns and additionalProperties: a key found by
// several patterns takes all their schemas, additionalProperties only the
// keys no pattern finds, and named keys only their own member.
TEST(JsonSchema, IntersectionsOfStringsAndKeys) {
  ExpectLanguage(R"({"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 4})",
                 {R"("ab")", R"("abcd")"}, {R"("a")", R"("abcde")", R"("aB")"});
  ExpectLanguage(R"({"type": "string", "pattern": "\"", "maxLength": 2})",
                 {R"("a\"")", R"("\"")"}, {R"("ab\"")", R"("ab")"});
  ExpectLanguage(R"({"type": "string", "allOf": [{"pattern": "a"}, {"pattern": "b"}]})",
                 {R"("ab")", R"("xbya")"}, {R"("aa")", R"("")"});
  ExpectLanguage(R"({"type": "string", "format": "date", "pattern": "^2024"})",
                 {R"("2024-02-29")"}, {R"("2023-01-01")", R"("2024-02-30")"});
  ExpectLanguage(R"({"type": "string", "pattern": "^[a-z]*$", "maxLength": 3000})",
                 {absl::StrCat("\"", std::string(3000, 'q'), "\"")},
                 {absl::StrCat("\"", std::string(3001, 'q'), "\"")});

  const std::string overlapping = R"({"type": "object", "properties": {"id": {"type": "integer"}},
      "patternProperties": {"^x-": {"type": "string"}, "n$": {"minLength": 2}},
      "additionalProperties": {"type": "boolean"}})";
  ExpectLanguage(overlapping,
                 {R"({"id": 1, "x-a": "s", "y": true})", R"({"x-n": "ab"})", R"({"an": 5})",
                  R"({"an": true})", "{}"},
                 {R"({"x-n": "a"})", R"({"y": 1})", R"({"id": "s"})", R"({"id": true})",
                  R"({"x-a": 1})", R"({"id": 1, "id": 2})"});
  ExpectLanguage(R"({"patternProperties": {"^a*$": {"type": "integer"}}})",
                 {R"({"": 1})", R"({"b": "s"})", R"({"aa": 2})"}, {R"({"": "s"})", R"({"a": null})"});
  ExpectLanguage(R"({"propertyNames": {"pattern": "^[a-z-]+$"},
                     "patternProperties": {"^x-": {"type": "integer"}},
                     "additionalProperties": {"type": "string"}})",
                 {R"({"x-a": 1, "b": "s"})"}, {R"({"x-a": "s"})", R"({"B": "s"})", R"({"b": 1})"});

  // A format or pattern with a length whose product passes the automaton
  // budget: a counted terminal with the format as its body, exact.
  const std::string email = R"({"type": "string", "format": "email", "maxLength": 254})";
  ExpectLanguage(email,
                 {R"("a@b.org")", absl::StrCat("\"", std::string(246, 'a'), "@b.org\"")},
                 {R"("a@")", absl::StrCat("\"", std::string(249, 'a'), "@b.org\"")});
  ExpectLanguage(R"({"type": "string", "pattern": "^(?:\\S+\\s+){0,29}\\S+$", "maxLength": 300})",
                 {R"("two words")", absl::StrCat("\"", std::string(300, 'w'), "\""),
                  absl::StrCat("\"", std::string(140, 'w'), " ", std::string(159, 'w'), "\"")},
                 {R"("")", R"("trailing ")", absl::StrCat("\"", std::string(301, 'w'), "\""),
                  absl::StrCat("\"", std::string(30, 'w'), std::string(30, ' '), "\"")});
  // Past the counted terminal's numbering too: unsupported, naming the
  // limit; lenient drops the length and keeps the format.
  const std::string huge = R"({"type": "string", "format": "email", "maxLength": 20000000})";
  absl::StatusOr<JsonSchemaGrammar> strict = JsonSchemaToGrammar(huge, "s.json");
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("unsupported: maxLength at #"), std::string::npos)
      << strict.status();
  EXPECT_NE(strict.status().message().find("max_dfa_states"), std::string::npos) << strict.status();
  JsonSchemaOptions lenient;
  lenient.lenient = true;
  ExpectLanguage(huge, {R"("a@b.org")"}, {R"("a@")"}, lenient);
}

// A `not` of string keywords or of a list of strings is the complement of
// those strings: the other types follow JSON Schema (string keywords do not
// apply to them, so the negated schema holds there and `not` fails).
TEST(JsonSchema, NegatedStringKeywords) {
  ExpectLanguage(R"({"not": {"pattern": "^a"}})", {R"("b")", R"("ba")", R"("")"},
                 {R"("a")", R"("ab")", "1", "null"});
  ExpectLanguage(R"({"not": {"type": "string", "maxLength": 2}})", {R"("abc")", "1", "null", "[]"},
                 {R"("ab")", R"("")"});
  ExpectLanguage(R"({"type": "string", "not": {"enum": ["x", "y\""]}})", {R"("z")", R"("xy")", R"("y")"},
                 {R"("x")", R"("y\"")"});
  ExpectLanguage(R"({"not": {"const": "x"}})", {R"("z")", "1", "{}"}, {R"("x")"});
  ExpectLanguage(R"({"type": "string", "enum": ["a", "b", "c"], "not": {"pattern": "b"}})",
                 {R"("a")", R"("c")"}, {R"("b")"});
  ExpectLanguage(R"({"propertyNames": {"not": {"pattern": "^x"}}})", {R"({"a": 1})", "{}"},
                 {R"({"xa": 1})"});
  ExpectLanguage(R"({"not": {"enum": [true, null]}})", {"false", "1", R"("true")"}, {"true", "null"});
  // not(required): an object missing one of the keys (non-objects satisfy
  // `required`, so `not` refuses them unless the schema is about objects).
  ExpectLanguage(R"({"not": {"required": ["a"]}})", {"{}", R"({"b": 1})"}, {R"({"a": 1})", "1"});
  ExpectLanguage(R"({"properties": {"a": {}, "b": {}}, "not": {"required": ["a", "b"]}})",
                 {R"({"a": 1})", R"({"b": 1})", "{}"}, {R"({"a": 1, "b": 2})", "[]"});
  ExpectLanguage(R"({"not": {"type": "object", "required": ["a"]}})", {"1", "{}", R"("a")"},
                 {R"({"a": 1})"});
  // Numbers in the list: unsupported; lenient drops the `not`.
  absl::StatusOr<JsonSchemaGrammar> strict =
      JsonSchemaToGrammar(R"({"not": {"enum": ["a", 1]}})", "s.json");
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("unsupported: not at #/not"), std::string::npos)
      << strict.status();
}

// dependentRequired (and draft-07 `dependencies` with arrays): one object
// grammar per set of trigger keys present; `dependencies` schemas that
// constrain nothing are no condition; other schemas stay unsupported.
TEST(JsonSchema, DependentRequired) {
  ExpectLanguage(R"({"properties": {"a": {}, "b": {}, "c": {}}, "dependentRequired": {"a": ["b"]}})",
                 {R"({"a": 1, "b": 2})", R"({"b": 1})", "{}", R"({"c": 1})", R"({"a": 1, "b": 1, "c": 1})", "3"},
                 {R"({"a": 1})", R"({"a": 1, "c": 1})"});
  ExpectLanguage(R"({"$schema": "http://json-schema.org/draft-07/schema#",
                     "properties": {"a": {}, "b": {}}, "dependencies": {"a": ["b"], "b": {}}})",
                 {R"({"a": 1, "b": 2})", R"({"b": 1})"}, {R"({"a": 1})"});
  // Mutual dependencies: both or neither.
  ExpectLanguage(R"({"properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"], "b": ["a"]}})",
                 {R"({"a": 1, "b": 1})", "{}"}, {R"({"a": 1})", R"({"b": 1})"});
  // Keys outside `properties` are named keys after the properties, the keys
  // a trigger needs first.
  ExpectLanguage(R"({"dependentRequired": {"x": ["y"]}})", {R"({"y": 2, "x": 1})", R"({"y": 1, "z": 2})"},
                 {R"({"x": 1})", R"({"x": 1, "y": 2})"});
  // Schema-valued dependencies (draft-07) and dependentSchemas: the schema
  // applies when its trigger is present (one case per subset of triggers);
  // a non-object satisfies them all.
  ExpectLanguage(R"({"properties": {"a": {}, "b": {}, "c": {"type": "integer"}},
                     "dependencies": {"a": {"required": ["b"]}, "c": {"properties": {"b": {"type": "string"}}}}})",
                 {"{}", R"({"a": 1, "b": 2})", R"({"b": 2})", R"({"b": "x", "c": 1})", R"({"a": 1, "b": "x", "c": 2})",
                  "3", "[1]"},
                 {R"({"a": 1})", R"({"b": 2, "c": 1})", R"({"a": 1, "b": 2, "c": 3})"});
  ExpectLanguage(R"({"dependentSchemas": {"x": false}})", {R"({"y": 1})", "null"}, {R"({"x": 1})"});
  std::string many = R"({"dependentRequired": {)";
  for (int i = 0; i < 6; ++i) absl::StrAppend(&many, i ? ", " : "", "\"k", i, "\": [\"z\"]");
  many += "}}";
  absl::StatusOr<JsonSchemaGrammar> too_many = JsonSchemaToGrammar(many, "s.json");
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("unsupported: dependentRequired at #"), std::string::npos)
      << too_many.status();
}

// A recursive schema whose objects are met under several conjunctions (a
// dependency case each, anyOf branches that add a type): each set of object
// keywords is one object grammar, written once, with the same language.
TEST(JsonSchema, ObjectGrammarWrittenOncePerObjectKeywords) {
  const std::string schema = R"({"$schema": "http://json-schema.org/draft-07/schema#",
      "properties": {"a": {"$ref": "#"}, "b": {"anyOf": [{"type": "array"}, {"$ref": "#"}]},
                     "c": {"anyOf": [{"type": "string"}, {"$ref": "#"}]}, "n": {"type": "integer"}},
      "dependencies": {"p": ["q"], "r": ["s"]}})";
  ExpectLanguage(schema,
                 {"{}", R"({"a": {"n": 1}})", R"({"b": [1]})", R"({"b": {"a": {}}})", R"({"c": "x"})",
                  R"({"c": {"q": 2, "p": 1}})", R"({"q": 2, "p": 1})", R"({"a": {"b": {"s": 2, "r": 1}}})", "7"},
                 {R"({"a": {"p": 1}})", R"({"n": "x"})", R"({"b": {"n": "x"}})", R"({"a": {"b": {"r": 1}}})",
                  R"({"c": {"c": {"p": 0}}})", R"({"r": 1})"});
  // The validation grammar (members in any order where exact) shares them too.
  ExpectLanguage(schema, {R"({"p": 1, "q": 2})", R"({"b": {"r": 1, "s": 2}})"},
                 {R"({"b": {"r": 1}})", R"({"a": {"a": {"n": 1.5}}})"}, ValidationSchemaOptions(false));
  absl::StatusOr<Compiled> c = Compile(schema);
  ASSERT_TRUE(c.ok()) << c.status();
  // Rules as written (before any transform): one object grammar with its
  // four dependency cases, not one per conjunction it is met under.
  EXPECT_LT(c->ir.rules.size(), 150u) << c->ir.rules.size();
}

// if/then/else whose `if` tests one property: (if and then) or (not-if and
// else), with not-if written by the converter. Non-objects satisfy such an
// `if` (properties and required constrain objects only).
TEST(JsonSchema, IfThenElse) {
  const std::string discriminated = R"({"properties": {"type": {"enum": ["a", "b"]}, "x": {}},
      "if": {"properties": {"type": {"const": "a"}}},
      "then": {"required": ["x"]}, "else": {"properties": {"x": {"type": "integer"}}}})";
  ExpectLanguage(discriminated,
                 {R"({"type": "a", "x": "s"})", R"({"type": "b", "x": 1})", R"({"x": "s"})", "3"},
                 {R"({"type": "a"})", R"({"type": "b", "x": "s"})"});
  ExpectLanguage(R"({"if": {"properties": {"m": {"const": true}}, "required": ["m"]},
                     "then": {"required": ["n"]}})",
                 {R"({"m": true, "n": 1})", R"({"m": false})", "{}", "1"}, {R"({"m": true})"});
  ExpectLanguage(R"({"if": false, "then": {"type": "string"}, "else": {"type": "integer"}})", {"1"},
                 {R"("s")"});
  // Another `if`: unsupported; lenient drops the whole condition.
  const std::string two = R"({"if": {"properties": {"a": {"const": 1}, "b": {"const": 2}}},
                              "then": {"required": ["c"]}})";
  absl::StatusOr<JsonSchemaGrammar> strict = JsonSchemaToGrammar(two, "s.json");
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("unsupported: if/then/else at #/if"), std::string::npos)
      << strict.status();
  JsonSchemaOptions lenient;
  lenient.lenient = true;
  ExpectLanguage(two, {R"({"a": 1, "b": 2})", "{}"}, {}, lenient);
  // Before draft-07 `if` is an unknown word (ignored), and before draft-06
  // so are const, contains and propertyNames.
  ExpectLanguage(R"({"$schema": "http://json-schema.org/draft-06/schema#",
                     "if": {"properties": {"a": {"const": 1}}}, "then": {"required": ["b"]},
                     "properties": {"a": {"const": 1}}})",
                 {R"({"a": 1})"}, {R"({"a": 2})"});
  ExpectLanguage(R"({"$schema": "http://json-schema.org/draft-04/schema#",
                     "properties": {"a": {"const": 1}}, "propertyNames": {"maxLength": 1}})",
                 {R"({"a": 2, "bb": 0})"}, {});
  // Each condition doubles the cases: more than 4 in one schema are refused.
  std::string chain = R"({"allOf": [)";
  for (int i = 0; i < 5; ++i) {
    absl::StrAppend(&chain, i ? ", " : "", R"({"if": {"properties": {"t": {"const": ")", i,
                    R"("}}}, "then": {"required": ["x)", i, R"("]}})");
  }
  chain += "]}";
  absl::StatusOr<JsonSchemaGrammar> five = JsonSchemaToGrammar(chain, "s.json");
  ASSERT_FALSE(five.ok());
  EXPECT_NE(five.status().message().find("5 if/then/else in one schema"), std::string::npos)
      << five.status();
  chain.replace(chain.rfind(", {\"if\""), std::string::npos, "]}");
  ExpectLanguage(chain, {R"({"t": "1", "x1": 0})", R"({"t": "7"})"}, {R"({"t": "1"})"});
}

// schema2gbnf's text is a grammar: read back, it takes the same instances
// (regex terminals with slashes and set operations included).
TEST(JsonSchema, DumpReadsBackAsTheSameGrammar) {
  const std::string schema = R"({"type": "object", "properties": {
      "path": {"type": "string", "pattern": "^/[a-z/]+$", "maxLength": 8},
      "n": {"type": "integer", "minimum": -3}},
      "patternProperties": {"^x-": {"type": "boolean"}}, "additionalProperties": {"type": "null"}})";
  absl::StatusOr<JsonSchemaGrammar> g = JsonSchemaToGrammar(schema, "<dump>");
  ASSERT_TRUE(g.ok()) << g.status();
  const std::string dump = grammar::Dump(g->grammar);
  absl::StatusOr<grammar::Grammar> again = grammar::ReadGbnf(dump, "<dump>");
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << dump;
  EXPECT_EQ(grammar::Dump(*again), dump);
  absl::StatusOr<parser::FlatGrammar> original = testing::CompileIr(g->grammar);
  absl::StatusOr<parser::FlatGrammar> reread = testing::CompileIr(*again);
  ASSERT_TRUE(original.ok() && reread.ok());
  for (const char* text : {R"({"path": "/a/b", "n": -3})", R"({"path": "/a/bcdefgh"})",
                           R"({"path": "a/b"})", R"({"n": -4})", R"({"x-a": true, "y": null})",
                           R"({"x-a": null})", R"({"y": true})"}) {
    EXPECT_EQ(testing::FlatAccepts(*reread, text), testing::FlatAccepts(*original, text)) << text;
  }
  EXPECT_TRUE(testing::FlatAccepts(*reread, R"({"path": "/a/b", "x-q": false, "z": null})"));
}

TEST(JsonSchema, GoldenDump) {
  absl::StatusOr<JsonSchemaGrammar> g = JsonSchemaToGrammar(
      R"({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"enum": ["x", "y"]}},
          "required": ["n"], "additionalProperties": false})",
      "<golden>", {.compact = true});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(grammar::Dump(g->grammar),
            "root ::= schema\n"
            "schema ::= \"{\" \"\" members \"\" \"}\"\n"
            "properties-n ::= /-?(?:0|[1-9][0-9]*)/\n"
            "properties-s ::= \"\\\"x\\\"\" | \"\\\"y\\\"\"\n"
            "member-opt-2 ::= (\"\" \",\" \"\" \"\\\"s\\\"\" \"\" \":\" \"\" properties-s)?\n"
            "members ::= \"\\\"n\\\"\" \"\" \":\" \"\" properties-n member-opt-2\n");
}

// kRegexJsonString: the DFA of (?J)P on the canonical spelling of s agrees
// with RE2's full match of P on s, for random strings over an alphabet with
// the characters that take escapes.
TEST(JsonSchema, JsonStringRegexFlagAgreesWithRe2) {
  // The raw spelling of an escaped character never matches; other escapes
  // of ordinary characters neither.
  absl::StatusOr<grammar::ByteDfa> quote = grammar::CompileRegex("\"a", grammar::kRegexJsonString);
  ASSERT_TRUE(quote.ok());
  EXPECT_TRUE(quote->Matches("\\\"a"));
  EXPECT_FALSE(quote->Matches("\"a"));
  EXPECT_FALSE(quote->Matches("\\u0022a"));
  EXPECT_FALSE(quote->Matches("\\\"\\u0061"));
  const std::vector<std::string> patterns = {"a\"*b", "[^a]+", ".*\\\\.*", "[\\x00-\\x1f]x?",
                                             "(?:\"|\\n|\xC3\xA9)+", "[^ b]*"};
  const std::vector<std::string> alphabet = {"a", "b", "x", "\"", "\\", "\n", "\t",
                                             std::string(1, '\x01'), "\x1f", "\xC3\xA9", " "};
  std::mt19937 rng(7);
  for (const std::string& p : patterns) {
    absl::StatusOr<grammar::ByteDfa> dfa = grammar::CompileRegex(p, grammar::kRegexJsonString | grammar::kRegexDotAll);
    ASSERT_TRUE(dfa.ok()) << p << dfa.status();
    RE2 re(absl::StrCat("(?s)", p));
    ASSERT_TRUE(re.ok()) << p;
    for (int trial = 0; trial < 400; ++trial) {
      std::string s;
      const int len = static_cast<int>(rng() % 5);
      for (int i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
      const bool expected = RE2::FullMatch(s, re);
      EXPECT_EQ(dfa->Matches(json_schema_internal::JsonStringBody(s)), expected)
          << "pattern " << p << " on " << absl::CEscape(s);
    }
  }
}

// Scale: sizes must grow linearly; a quadratic blow-up fails the ratios.
TEST(JsonSchema, ScaleTenThousandProperties) {
  auto make = [](int n) {
    std::string s = R"({"type": "object", "properties": {)";
    for (int i = 0; i < n; ++i) {
      absl::StrAppend(&s, i ? ", " : "", "\"p", i, "\": {\"type\": \"integer\"}");
    }
    s += "}, \"required\": [\"p0\"]}";
    return s;
  };
  absl::StatusOr<Compiled> small = Compile(make(1000));
  absl::StatusOr<Compiled> big = Compile(make(10000));
  ASSERT_TRUE(small.ok()) << small.status();
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_LE(big->ir.rules.size(), 12 * small->ir.rules.size());
  EXPECT_LE(big->ir.exprs.size(), 12 * small->ir.exprs.size());
  EXPECT_LE(big->flat.num_productions(), 12 * small->flat.num_productions());
  EXPECT_LE(big->ir.rules.size(), 5u * 10000);
  EXPECT_TRUE(Accepts(*big, R"({"p0": 1, "p5000": 2, "p9999": 3, "other": 4})"));
  EXPECT_FALSE(Accepts(*big, R"({"p0": 1, "p9999": 3, "p5000": 2})"));
  // With patternProperties: a pattern region excludes only the named keys
  // its patterns find, so 10,000 names cost no 10,000-word complement.
  std::string patterned = make(10000);
  patterned.insert(patterned.size() - 1,
                   R"(, "patternProperties": {"^p1": {"type": "string"}, "^x-": {}},
                      "additionalProperties": false)");
  absl::StatusOr<Compiled> with_patterns = Compile(patterned);
  ASSERT_TRUE(with_patterns.ok()) << with_patterns.status();
  EXPECT_TRUE(Accepts(*with_patterns, R"({"p0": 1, "p1x": "s", "x-y": null})"));
  EXPECT_FALSE(Accepts(*with_patterns, R"({"p0": 1, "p1": 2})"));  // p1 must be a string too
  EXPECT_FALSE(Accepts(*with_patterns, R"({"p0": 1, "p1x": 2})"));
  EXPECT_FALSE(Accepts(*with_patterns, R"({"p0": 1, "p1": "s"})"));  // and an integer
  EXPECT_FALSE(Accepts(*with_patterns, R"({"p0": 1, "q": 1})"));
}

TEST(JsonSchema, ScaleDeepRefChainAndRecursion) {
  auto chain = [](int n) {
    std::string s = R"({"$ref": "#/$defs/d0", "$defs": {)";
    for (int i = 0; i < n; ++i) {
      absl::StrAppend(&s, i ? ", " : "", "\"d", i, "\": {\"type\": \"object\", \"properties\": {\"x\": ",
                      i + 1 < n ? absl::StrCat("{\"$ref\": \"#/$defs/d", i + 1, "\"}") : "{\"type\": \"null\"}",
                      "}, \"additionalProperties\": false}");
    }
    return s + "}}";
  };
  // Conversion of a 1,000-deep chain: rules linear in the depth.
  absl::StatusOr<JsonSchemaGrammar> small = JsonSchemaToGrammar(chain(100), "<chain>");
  absl::StatusOr<JsonSchemaGrammar> big = JsonSchemaToGrammar(chain(1000), "<chain>");
  ASSERT_TRUE(small.ok()) << small.status();
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_LE(big->grammar.rules.size(), 12 * small->grammar.rules.size());
  EXPECT_LE(big->grammar.exprs.size(), 12 * small->grammar.exprs.size());
  // Compiled end to end (a 1,000-deep non-recursive chain spends seconds in
  // the regular-terminal merge, outside the converter: 150 levels here).
  absl::StatusOr<Compiled> compiled = Compile(chain(150));
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  std::string deep;
  for (int i = 0; i < 150; ++i) deep += "{\"x\": ";
  deep += "null";
  for (int i = 0; i < 150; ++i) deep += "}";
  EXPECT_TRUE(Accepts(*compiled, deep));
  EXPECT_FALSE(Accepts(*compiled, deep.substr(0, deep.size() - 1)));

  // A recursive tree: one schema, arbitrarily deep instances.
  absl::StatusOr<Compiled> tree = Compile(
      R"({"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}},
          "additionalProperties": false})");
  ASSERT_TRUE(tree.ok()) << tree.status();
  std::string nested;
  for (int i = 0; i < 500; ++i) nested += "{\"children\": [";
  for (int i = 0; i < 500; ++i) nested += "]}";
  EXPECT_TRUE(Accepts(*tree, nested));
  EXPECT_FALSE(Accepts(*tree, "{\"children\": [1]}"));
  // A schema nested 5,000 levels deep converts without recursion.
  std::string nested_schema;
  for (int i = 0; i < 5000; ++i) nested_schema += "{\"items\": ";
  nested_schema += "{}";
  for (int i = 0; i < 5000; ++i) nested_schema += "}";
  JsonSchemaOptions deep_budget;
  deep_budget.max_depth = 5001;
  EXPECT_TRUE(JsonSchemaToGrammar(nested_schema, "<deep>", deep_budget).ok());
  // The default depth budget (1,000) refuses it, by name, before building.
  absl::StatusOr<JsonSchemaGrammar> refused = JsonSchemaToGrammar(nested_schema, "<deep>");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("max_depth = 1000"), std::string_view::npos) << refused.status();
}

}  // namespace
}  // namespace zapgram::transforms
