// What a grammar transform did: sizes before and after, and the changes.
//
// Every pass of transforms/ takes an optional PassReport* and fills in what it
// changed (the names of rules it removed, inlined or merged, and counters such
// as "literals fused"). The pipeline (pipeline.h) also measures the grammar
// before and after each pass (GrammarSize) and prints the whole report.
//
// Sizes, all computed in time linear in the arena:
//  - rules: rules of the grammar;
//  - expressions: distinct expression nodes reachable from the rule bodies (a
//    node shared by several parents — a DAG, after dedup — counts once);
//  - symbols: terminal (literal, class, regex) and rule-reference occurrences
//    in the rule bodies written out as trees, as grammar::Dump prints them (a
//    shared node counts once per occurrence; saturates at UINT64_MAX). This
//    is the BNF notion of "symbols on right-hand sides".
//
// Tests: tests/transforms/transforms_test.cc.
#ifndef ZAPGRAM_TRANSFORMS_REPORT_H_
#define ZAPGRAM_TRANSFORMS_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "grammar/grammar.h"

namespace zapgram::transforms {

struct GrammarSize {
  size_t rules = 0;
  size_t expressions = 0;
  uint64_t symbols = 0;
  friend bool operator==(const GrammarSize&, const GrammarSize&) = default;
};

// Measures `grammar` (see above). `grammar` must pass Validate().
GrammarSize MeasureGrammar(const grammar::Grammar& grammar);

// "7 rules, 41 expressions, 30 symbols".
std::string FormatSize(const GrammarSize& size);

struct PassReport {
  std::string pass;  // "useless_rules", "inline_rules", ...
  GrammarSize before;
  GrammarSize after;
  // Named lists of rules, in grammar order: e.g. {"removed unreachable", {"unused"}},
  // {"inlined", {"value", "ws"}}, {"merged", {"b=a"}}. Empty lists are omitted.
  std::vector<std::pair<std::string, std::vector<std::string>>> rules;
  // Named counters: e.g. {"literals fused", 12}. Zero counters are omitted.
  std::vector<std::pair<std::string, uint64_t>> counts;

  // Appends `name` to the list called `list` (creating it).
  void AddRule(const std::string& list, const std::string& name);
  // Adds `n` to the counter called `counter` (creating it); n == 0 does nothing.
  void Count(const std::string& counter, uint64_t n);
  bool changed() const { return !rules.empty() || !counts.empty() || before != after; }
};

struct TransformReport {
  std::vector<PassReport> passes;
};

// One line per pass:
//   "useless_rules: 7 rules, 41 expressions, 30 symbols -> 6 rules, 38
//    expressions, 28 symbols; removed unreachable: unused; alternatives dropped: 1"
// Rule lists longer than `max_names` end with "... (N more)".
std::string FormatPassReport(const PassReport& pass, size_t max_names = 8);
std::string FormatReport(const TransformReport& report, size_t max_names = 8);

}  // namespace zapgram::transforms

#endif  // ZAPGRAM_TRANSFORMS_REPORT_H_
