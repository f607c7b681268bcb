// JSONSchemaBench / MaskBench schemas through `schema:PATH`: the trace set
// ZAPGRAM_DATA_DIR/traces/llama3/maskbench.jsonl (one valid and, for most
// schemas, one invalid instance each, labelled by a full validator).
//
// Every schema either compiles or fails with a clear error: in strict mode
// the only failures allowed are "unsupported: <keyword> at <pointer>"; each
// is retried in lenient mode, which must then compile (the harness is
// tests/support/schema_harness.h). For compiled schemas:
//   - valid instances rejected by a grammar that dropped nothing (strict)
//     are counted (they were checked to be canonical-form restrictions of
//     docs/json-schema.md: member order);
//   - invalid instances are counted: rejected, accepted by a lenient grammar
//     (the dropped keywords may explain it), accepted by a strict grammar
//     when the validator's only complaint is oneOf exclusivity (the grammar
//     reads oneOf as a union; jsonschema/maskbench.meta.jsonl has the
//     messages), accepted by a strict grammar otherwise (a bug).
// The counts are pinned (exact) on the default sample, every 16th schema, so
// that a regression in either direction fails; ZAPGRAM_MASKBENCH_ALL=1 runs
// every schema and prints the same table (then only the invariants are
// asserted). The table also gives compile ms p50/p99 and the refused
// keywords with counts.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/schema_harness.h"
#include "tests/support/test_paths.h"
#include "tests/support/test_scale.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram {
namespace {

using testing::SchemaGroup;
using testing::SchemaVerdicts;

// ZAPGRAM_MASKBENCH_ONLY=TEXT: only the schemas whose spec contains TEXT
// (for a look at one schema; the pinned counts are then not checked).
std::string OnlyFilter() {
  const char* only = std::getenv("ZAPGRAM_MASKBENCH_ONLY");
  return only == nullptr ? "" : only;
}

bool RunAll() {
  const char* all = std::getenv("ZAPGRAM_MASKBENCH_ALL");
  return all != nullptr && std::string(all) == "1";
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

struct Totals {
  int schemas = 0, strict_ok = 0, lenient_ok = 0, other_errors = 0;
  int valid = 0, valid_accepted = 0, valid_rejected_strict = 0, valid_rejected_lenient = 0;
  int invalid = 0, invalid_rejected = 0, invalid_accepted_lenient = 0, invalid_accepted_strict = 0;
  int invalid_accepted_oneof = 0;  // strict grammars; only oneOf exclusivity violated
  int valid_not_compiled = 0, invalid_not_compiled = 0, recognizer_errors = 0;
  // Instances of schemas whose strict grammar compiled (what `zapgram parse`
  // decides without --lenient) and the verdicts that were right.
  int strict_valid = 0, strict_valid_accepted = 0, strict_invalid = 0, strict_invalid_rejected = 0;
  std::map<std::string, int> refused;   // strict mode: first unsupported keyword -> schemas
  std::map<std::string, int> dropped;   // lenient: keyword -> schemas that dropped it
  std::vector<double> compile_ms;
  std::vector<std::string> rejected_valid_ids;
  std::vector<std::string> rejected_valid_lenient_ids;
  std::vector<std::string> accepted_invalid_ids;  // by strict grammars
  std::vector<std::string> accepted_invalid_other_ids;  // oneOf exclusivity, lenient grammars
  std::vector<std::string> errors;
};

// Validator messages of the invalid instances (jsonschema/maskbench.meta.jsonl):
// id -> error text.
std::map<std::string, std::string> ReadValidatorErrors() {
  std::map<std::string, std::string> out;
  std::ifstream in(testing::DataPath("jsonschema/maskbench.meta.jsonl"));
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.is_object()) continue;
    if (record.contains("error") && record["error"].is_string()) {
      out[record.value("id", "")] = record["error"].get<std::string>();
    }
  }
  return out;
}

// The validator rejected the instance only because it matches several
// oneOf branches: a grammar reads oneOf as a union (docs/json-schema.md), so
// this violation has no grammar.
bool OnlyOneOfExclusivity(const std::string& validator_error) {
  constexpr std::string_view kPhrase = " is valid under each of";
  if (validator_error.find(kPhrase) != std::string::npos) return true;
  // The metadata cuts long messages: a message ending in the start of the
  // phrase ("... is valid und") says the same.
  for (size_t n = kPhrase.size() - 1; n >= 8; --n) {
    if (validator_error.size() >= n &&
        std::string_view(validator_error).substr(validator_error.size() - n) == kPhrase.substr(0, n)) {
      return true;
    }
  }
  return false;
}

// Sanitizer builds run 5-10x slower and some schemas take seconds to
// compile: they check a sparser sample, without the pinned counts.
constexpr size_t kStride = testing::Scaled<size_t>(16, 128);

// The verdicts of every kStride-th schema's instances (all with
// ZAPGRAM_MASKBENCH_ALL=1) under grammars made with `schema`, printed.
Totals Tally(const std::vector<SchemaGroup>& groups, const SchemaOptions& schema, const char* what) {
  const bool all = RunAll();
  const std::string only = OnlyFilter();
  const size_t stride = kStride;
  Totals t;
  std::map<std::string, std::string> validator_errors = ReadValidatorErrors();
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    if (!only.empty()) {
      if (groups[gi].spec.find(only) == std::string::npos) continue;
    } else if (!all && gi % stride != 0) {
      continue;
    }
    const SchemaGroup& group = groups[gi];
    SchemaVerdicts v = testing::RunSchemaGroup(group, testing::DataPath(""), schema);
    ++t.schemas;
    t.recognizer_errors += static_cast<int>(v.recognizer_errors.size());
    for (const std::string& e : v.recognizer_errors) t.errors.push_back("recognizer: " + e);
    t.compile_ms.push_back(v.strict_compile_ms);
    if (v.strict.ok()) {
      ++t.strict_ok;
    } else {
      const std::string keyword = testing::UnsupportedKeyword(v.strict);
      if (keyword.empty()) {
        ++t.other_errors;
        t.errors.push_back(group.spec + ": " + std::string(v.strict.message()));
      } else {
        ++t.refused[keyword];
      }
    }
    if (!v.strict.ok() && v.lenient.ok()) ++t.lenient_ok;
    if (!v.strict.ok() && !v.lenient.ok() && !testing::UnsupportedKeyword(v.strict).empty()) {
      t.errors.push_back(group.spec + " (lenient): " + std::string(v.lenient.message()));
    }
    std::map<std::string, bool> seen;
    for (const std::string& w : v.warnings) {
      const std::string k = testing::WarningKeyword(w);
      if (k.empty()) continue;  // "ignored ..." (an annotation), not a drop
      if (!seen[k]) ++t.dropped[k];
      seen[k] = true;
    }
    for (size_t i = 0; i < group.instances.size(); ++i) {
      const bool valid = group.instances[i].valid;
      (valid ? t.valid : t.invalid)++;
      if (!v.compiled()) {
        (valid ? t.valid_not_compiled : t.invalid_not_compiled)++;
        continue;
      }
      const bool accepted = v.strict.ok() ? v.strict_accepts[i] : v.lenient_accepts[i];
      if (v.strict.ok()) {
        (valid ? t.strict_valid : t.strict_invalid)++;
        if (valid == accepted) (valid ? t.strict_valid_accepted : t.strict_invalid_rejected)++;
      }
      if (valid) {
        if (accepted) {
          ++t.valid_accepted;
        } else if (v.strict.ok()) {
          ++t.valid_rejected_strict;
          t.rejected_valid_ids.push_back(group.instances[i].id);
        } else {
          ++t.valid_rejected_lenient;
          t.rejected_valid_lenient_ids.push_back(group.instances[i].id);
        }
      } else if (!accepted) {
        ++t.invalid_rejected;
      } else if (v.strict.ok() && OnlyOneOfExclusivity(validator_errors[group.instances[i].id])) {
        ++t.invalid_accepted_oneof;
        t.accepted_invalid_other_ids.push_back(group.instances[i].id + " (oneOf exclusivity)");
      } else if (v.strict.ok()) {
        ++t.invalid_accepted_strict;
        t.accepted_invalid_ids.push_back(group.instances[i].id);
      } else {
        ++t.invalid_accepted_lenient;
        t.accepted_invalid_other_ids.push_back(group.instances[i].id + " (lenient grammar)");
      }
    }
  }
  std::printf("maskbench %s (%s): %d schemas; strict compiled %d (%.1f%%); lenient compiled %d more "
              "(total %.1f%%); other errors %d\n",
              what, all ? "all" : "every 16th", t.schemas, t.strict_ok, 100.0 * t.strict_ok / t.schemas,
              t.lenient_ok, 100.0 * (t.strict_ok + t.lenient_ok) / t.schemas, t.other_errors);
  std::printf("valid: %d; accepted %d; rejected by strict grammars %d, by lenient %d; schema not "
              "compiled %d\n",
              t.valid, t.valid_accepted, t.valid_rejected_strict, t.valid_rejected_lenient,
              t.valid_not_compiled);
  std::printf("invalid: %d; rejected %d; accepted by lenient grammars (dropped keywords) %d; "
              "accepted by strict grammars: only oneOf exclusivity violated %d, other %d; schema "
              "not compiled %d\n",
              t.invalid, t.invalid_rejected, t.invalid_accepted_lenient, t.invalid_accepted_oneof,
              t.invalid_accepted_strict, t.invalid_not_compiled);
  std::printf("compile ms (strict attempt): p50 %.2f p90 %.2f p99 %.2f max %.2f\n",
              Percentile(t.compile_ms, 0.5), Percentile(t.compile_ms, 0.9),
              Percentile(t.compile_ms, 0.99), Percentile(t.compile_ms, 1.0));
  std::printf("refused in strict mode (first unsupported keyword: schemas):");
  for (const auto& [k, n] : t.refused) std::printf(" %s:%d", k.c_str(), n);
  std::printf("\ndropped in lenient mode (keyword: schemas):");
  for (const auto& [k, n] : t.dropped) std::printf(" %s:%d", k.c_str(), n);
  std::printf("\n");
  for (size_t i = 0; i < std::min<size_t>(t.errors.size(), 30); ++i) {
    std::printf("  error: %s\n", t.errors[i].c_str());
  }
  for (size_t i = 0; i < std::min<size_t>(t.rejected_valid_ids.size(), 60); ++i) {
    std::printf("  valid rejected: %s\n", t.rejected_valid_ids[i].c_str());
  }
  for (size_t i = 0; i < std::min<size_t>(t.accepted_invalid_ids.size(), 60); ++i) {
    std::printf("  invalid accepted (strict grammar): %s\n", t.accepted_invalid_ids[i].c_str());
  }
  for (size_t i = 0; i < std::min<size_t>(t.accepted_invalid_other_ids.size(), 60); ++i) {
    std::printf("  invalid accepted: %s\n", t.accepted_invalid_other_ids[i].c_str());
  }
  for (size_t i = 0; i < std::min<size_t>(t.rejected_valid_lenient_ids.size(), 60); ++i) {
    std::printf("  valid rejected (lenient grammar): %s\n", t.rejected_valid_lenient_ids[i].c_str());
  }
  return t;
}

TEST(MaskBench, SchemasCompileAndInstancesAgree) {
  std::vector<SchemaGroup> groups =
      testing::ReadSchemaGroups(testing::DataPath("traces/llama3/maskbench.jsonl"));
  ASSERT_GT(groups.size(), 5000u);
  ASSERT_GT(ReadValidatorErrors().size(), 1000u);
  const bool all = RunAll();
  const std::string only = OnlyFilter();
  const size_t stride = kStride;
  Totals t = Tally(groups, SchemaOptions{}, "generation");
  EXPECT_EQ(t.other_errors, 0);
  EXPECT_EQ(t.recognizer_errors, 0);
  if (all || !only.empty() || stride != 16) return;
  // Pinned on the default sample (every 16th schema of the trace). The valid
  // instances rejected by strict grammars were checked by hand: members in
  // another order than the schema's `properties` (docs/json-schema.md,
  // canonical form; each of the 8 is accepted under any_order; wp_100 joined
  // them when schema-valued `dependencies` compiled); lenient grammars add
  // keyword drops on top.
  // 401 strict: a pattern or format under a maxLength whose product passed the regex
  // budget is a counted terminal with a body now (no longer dropped).
  EXPECT_EQ(t.schemas, 409);
  EXPECT_EQ(t.strict_ok, 401);
  EXPECT_EQ(t.lenient_ok, 7);
  EXPECT_EQ(t.valid_accepted, 398);
  EXPECT_EQ(t.valid_rejected_strict, 8);
  EXPECT_EQ(t.valid_rejected_lenient, 2);
  // 322 and no oneOf: a oneOf of `required` lists is exclusive
  // (OneOfOfRequired: calculate_area_ef245c1f#1), schema-valued
  // `dependencies` compile (o72203#2).
  EXPECT_EQ(t.invalid_rejected, 322);
  EXPECT_EQ(t.invalid_accepted_lenient, 1);
  EXPECT_EQ(t.invalid_accepted_oneof, 0);
  EXPECT_EQ(t.invalid_accepted_strict, 0);
  EXPECT_EQ(t.valid_not_compiled + t.invalid_not_compiled, 2);
}

// The validation grammar (`zapgram parse`, SchemaPurpose::kValidation: any
// whitespace, members in any order, every escape spelling) on the same
// instances: the figures issue 16 asks for. valid accepted counts every valid
// instance (one whose schema did not compile is not accepted); invalid
// rejected counts the invalid instances of compiled schemas (strict, else
// lenient), an accepted one being a miss whatever the reason (oneOf
// exclusivity, a dropped keyword).
TEST(MaskBench, ValidationAcceptsValidRejectsInvalid) {
  std::vector<SchemaGroup> groups =
      testing::ReadSchemaGroups(testing::DataPath("traces/llama3/maskbench.jsonl"));
  ASSERT_GT(groups.size(), 5000u);
  SchemaOptions schema;
  schema.purpose = SchemaPurpose::kValidation;
  Totals t = Tally(groups, schema, "validation");
  EXPECT_EQ(t.other_errors, 0);
  EXPECT_EQ(t.recognizer_errors, 0);
  // Two readings. Strict: the schemas `zapgram parse` compiles as they are
  // (the others it refuses, naming the keyword). With lenient fallback: every
  // schema, a refused one read with its keywords dropped (--lenient), so an
  // invalid instance that only a dropped keyword rules out counts as a miss,
  // and a valid instance of a schema that compiles neither way too.
  const int invalid_compiled = t.invalid - t.invalid_not_compiled;
  const double valid_accepted = 100.0 * t.valid_accepted / std::max(t.valid, 1);
  const double invalid_rejected = 100.0 * t.invalid_rejected / std::max(invalid_compiled, 1);
  const double strict_valid = 100.0 * t.strict_valid_accepted / std::max(t.strict_valid, 1);
  const double strict_invalid = 100.0 * t.strict_invalid_rejected / std::max(t.strict_invalid, 1);
  std::printf("validation, strict schemas: valid accepted %d/%d (%.2f%%); invalid rejected %d/%d (%.2f%%)\n",
              t.strict_valid_accepted, t.strict_valid, strict_valid, t.strict_invalid_rejected,
              t.strict_invalid, strict_invalid);
  std::printf("validation, lenient fallback: valid accepted %d/%d (%.2f%%); invalid rejected %d/%d (%.2f%%)\n",
              t.valid_accepted, t.valid, valid_accepted, t.invalid_rejected, invalid_compiled,
              invalid_rejected);
  if (!OnlyFilter().empty() || kStride != 16) return;
  // The bars, on the sample and on the whole set
  // (ZAPGRAM_MASKBENCH_ALL=1: 99.95 % / 99.84 % strict, 99.94 % / 99.37 %
  // with lenient fallback).
  EXPECT_GE(strict_valid, 99.5);
  EXPECT_GE(strict_invalid, 99.0);
  EXPECT_GE(valid_accepted, 99.5);
  EXPECT_GE(invalid_rejected, 99.0);
  if (RunAll()) return;
  // Pinned on the sample: every miss is a lenient grammar's (a dropped `not`
  // of patternProperties, a lookahead `pattern`).
  EXPECT_EQ(t.strict_valid_accepted, t.strict_valid);
  EXPECT_EQ(t.strict_invalid_rejected, t.strict_invalid);
  EXPECT_EQ(t.invalid_rejected, 321);
  EXPECT_GE(invalid_rejected, 99.0);
  EXPECT_EQ(t.invalid_accepted_strict, 0);
}

// What any-order objects cost: compile and mask times of schemas with many
// required keys (o76764: 10, all required; sp_13: 6 + nested objects) under
// the schema-order generation grammar, the any-order generation grammar and
// the validation grammar, walking each schema's valid instance with Llama 3
// masks. Printed, not asserted (machine load); the any-order grammars must
// compile and accept the instance. (Before the subset rules were kept as
// rules, any-order generation took 19 s / 2.6 GB on o76764.)
TEST(MaskBench, AnyOrderObjectCost) {
  if (!OnlyFilter().empty()) return;
  absl::StatusOr<Vocabulary> vocabulary = Vocabulary::Load(testing::DataPath("tokenizers/llama3.tokenizer.json"));
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status();
  std::vector<SchemaGroup> groups =
      testing::ReadSchemaGroups(testing::DataPath("traces/llama3/maskbench.jsonl"));
  for (const char* name : {"Github_medium---o76764", "Snowplow---sp_13_Normalized"}) {
    const SchemaGroup* group = nullptr;
    for (const SchemaGroup& g : groups) {
      if (g.spec.find(name) != std::string::npos) group = &g;
    }
    ASSERT_NE(group, nullptr) << name;
    std::string text;
    for (const testing::SchemaInstance& i : group->instances) {
      if (i.valid) text = i.text;
    }
    struct Mode {
      const char* what;
      SchemaOptions schema;
    };
    std::vector<Mode> modes(3);
    modes[0].what = "schema order";
    modes[1].what = "any order";
    modes[1].schema.any_order = true;
    modes[2].what = "validation";
    modes[2].schema.purpose = SchemaPurpose::kValidation;
    for (const Mode& mode : modes) {
      LoadOptions options;
      options.schema = mode.schema;
      const auto start = std::chrono::steady_clock::now();
      absl::StatusOr<Grammar> grammar = Grammar::Load(group->spec, testing::DataPath(""), options);
      ASSERT_TRUE(grammar.ok()) << grammar.status();
      absl::StatusOr<CompiledGrammar> compiled = CompiledGrammar::Compile(*grammar, *vocabulary);
      ASSERT_TRUE(compiled.ok()) << compiled.status();
      const double compile_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      // The instance's bytes one at a time through the matcher, a mask
      // before each (cold caches: the first walk of this grammar).
      Matcher matcher(*compiled);
      std::vector<uint32_t> words(compiled->mask_words());
      std::vector<double> mask_us;
      bool accepted = true;
      for (size_t i = 0; i < text.size() && accepted; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        matcher.ComputeMask(words.data());
        mask_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        accepted = matcher.AcceptBytes(text.substr(i, 1));
      }
      const bool schema_order = mode.schema.purpose == SchemaPurpose::kGeneration && !mode.schema.any_order;
      if (!schema_order) {
        EXPECT_TRUE(accepted && matcher.IsAccepting()) << name << " " << mode.what;
      }
      double sum = 0;
      for (double us : mask_us) sum += us;
      std::printf("any-order cost %-28s %-13s compile+trie %8.1f ms, grammar %7zu KB; %zu masks: mean %.0f us, "
                  "p99 %.0f us; instance %s\n",
                  name, mode.what, compile_ms, compiled->memory_bytes() >> 10, mask_us.size(),
                  sum / std::max<size_t>(mask_us.size(), 1), Percentile(mask_us, 0.99),
                  accepted && matcher.IsAccepting() ? "accepted" : "rejected");
    }
  }
}

}  // namespace
}  // namespace zapgram
