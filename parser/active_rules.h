// The temperature in effect where the input stands (XGrammar's rule
// attribute `temperature=x`, grammar/rule_attributes.h).
//
// XGrammar's meaning: each item that can take the next input (an item
// sitting on a terminal) is inside a stack of rules, the rule of the item
// and, above it, the rules that predicted it; its temperature is that of
// the innermost of them with a temperature attribute, or none. The
// temperature in effect is the largest over those items, ignoring the
// items with none; none at all when no item has one (the caller's default
// then applies). Items of different parses may give different values
// (ambiguity, or an open choice between two rules): `conflict` says so and
// the largest wins, as in XGrammar.
//
// In the Earley chart an item does not hold its stack: its parent group
// (chart.h) holds every item that waits for the item's rule at its origin,
// each with its own parent, so the stacks of an item are the paths from it
// up through parent groups to the start item. The walk goes up those paths
// breadth first and stops each at the first rule with a temperature; a group
// is entered once (what lies above it is the same whichever item reached
// it), so the walk is linear in the chart's groups and items. A group with
// a Leo entry holds, instead of its one item, the topmost item of the
// chain above it, and the rules the chain jumps over have no temperature
// (parser/recognizer.cc never makes a Leo entry jump over an observed
// rule), so going on from the Leo item loses nothing.
//
// Tests: tests/masks/captures_test.cc (Temperature*).
#ifndef ZAPGRAM_PARSER_ACTIVE_RULES_H_
#define ZAPGRAM_PARSER_ACTIVE_RULES_H_

#include "parser/chart.h"
#include "parser/flat_grammar.h"

namespace zapgram::parser {

struct ActiveTemperature {
  float value = -1.0f;    // negative: no item is inside a rule with a temperature
  bool conflict = false;  // items gave different values (value is the largest)
};

// The temperature of the items on terminals of `chart`'s newest position.
// Costs nothing for a grammar without temperatures.
ActiveTemperature InnermostTemperature(const FlatGrammar& grammar, const Chart& chart);

}  // namespace zapgram::parser

#endif  // ZAPGRAM_PARSER_ACTIVE_RULES_H_
