// BoundedEquivalence (masks/bounded_equivalence.h) against the textbook:
// Moore's rounds recomputing every state's signature, stopped after `depth`
// rounds. Tables come from random grammars (plain and merged lowering) and
// from real JSON Schema grammars, whose merged members are the long literal
// chains that keep splitting round after round.
#include "masks/bounded_equivalence.h"

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/grammar_data.h"
#include "gtest/gtest.h"
#include "parser/flat_grammar.h"
#include "tests/support/ir_compile.h"
#include "tests/support/random_grammar.h"
#include "tests/support/test_paths.h"
#include "zapgram/grammar.h"

namespace zapgram::masks {
namespace {

// Every state's signature in every round, at most `depth` rounds; each class
// named by its smallest state.
std::vector<uint32_t> TextbookMoore(const parser::TerminalTable& t, uint32_t depth) {
  const uint32_t n = t.eager_states();
  std::vector<uint32_t> cls(n);
  for (uint32_t s = 0; s < n; ++s) cls[s] = s == 0 ? 0 : (t.eager_accepting[s] ? 1 : 2);
  size_t num_classes = 0;
  for (uint32_t round = 0; round < depth; ++round) {
    std::map<std::vector<uint32_t>, uint32_t> ids;
    std::vector<uint32_t> next_cls(n);
    for (uint32_t s = 0; s < n; ++s) {
      std::vector<uint32_t> signature = {cls[s]};
      for (uint32_t c = 0; c < t.num_classes; ++c) {
        signature.push_back(cls[t.next[static_cast<size_t>(s) * t.num_classes + c]]);
      }
      next_cls[s] = ids.try_emplace(signature, static_cast<uint32_t>(ids.size())).first->second;
    }
    cls.swap(next_cls);
    if (ids.size() == num_classes) break;
    num_classes = ids.size();
  }
  std::vector<uint32_t> first(n, UINT32_MAX), out(n);
  for (uint32_t s = 0; s < n; ++s) {
    if (first[cls[s]] == UINT32_MAX) first[cls[s]] = s;
    out[s] = first[cls[s]];
  }
  return out;
}

// Compares both at several depths; returns the number of states that some
// depth short of the fixpoint merges (so the bound was exercised).
int ExpectSameClasses(const parser::TerminalTable& t, const std::string& what) {
  int bounded_merges = 0;
  const std::vector<uint32_t> full = TextbookMoore(t, UINT32_MAX);
  for (uint32_t depth : {0u, 1u, 2u, 3u, 5u, 8u, 16u, 64u, 1000u}) {
    const std::vector<uint32_t> expected = TextbookMoore(t, depth);
    const std::vector<uint32_t> got = BoundedEquivalence(t, depth);
    EXPECT_EQ(got, expected) << what << " depth " << depth;
    if (got != expected) return bounded_merges;
    for (uint32_t s = 0; s < expected.size(); ++s) bounded_merges += expected[s] != full[s];
  }
  return bounded_merges;
}

TEST(BoundedEquivalence, MatchesTextbookMooreOnRandomGrammars) {
  std::mt19937_64 rng(0xB0DE'0E0Full);
  int tables = 0, states = 0, bounded_merges = 0;
  for (int round = 0; round < 300; ++round) {
    const grammar::Grammar ir = zapgram::testing::RandomGrammar(rng);
    absl::StatusOr<parser::FlatGrammar> flat =
        round % 2 == 0 ? parser::BuildFlatGrammar(ir) : zapgram::testing::CompileIr(ir);
    ASSERT_TRUE(flat.ok()) << flat.status();  // an empty language compiles too
    ++tables;
    states += static_cast<int>(flat->terminals.eager_states());
    bounded_merges += ExpectSameClasses(flat->terminals, "round " + std::to_string(round));
    if (::testing::Test::HasFailure()) return;
  }
  std::printf("bounded equivalence: %d random tables, %d states, %d merged short of the fixpoint\n",
              tables, states, bounded_merges);
  EXPECT_GT(tables, 150);
  EXPECT_GT(bounded_merges, 100);  // shallow depths really merge states deeper ones split
}

TEST(BoundedEquivalence, MatchesTextbookMooreOnSchemaGrammars) {
  const std::string specs[] = {
      "schema:" + zapgram::testing::DataPath(
                      "jsonschema/maskbench/Glaiveai2K---generate_invoice_3d3004fd.schema.json"),
      "schema:" + zapgram::testing::DataPath("jsonschema/maskbench/JsonSchemaStore---foxx-manifest.schema.json"),
      "schema:" + zapgram::testing::DataPath("jsonschema/maskbench/Github_hard---o5351.schema.json"),
      "builtin:json",
  };
  for (const std::string& spec : specs) {
    absl::StatusOr<Grammar> g = Grammar::Load(spec);
    ASSERT_TRUE(g.ok()) << spec << ": " << g.status();
    const parser::TerminalTable& t = g->data().flat.terminals;
    EXPECT_GT(t.eager_states(), 20u) << spec;
    ExpectSameClasses(t, spec);
  }
}

}  // namespace
}  // namespace zapgram::masks
