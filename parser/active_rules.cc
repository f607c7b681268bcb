// The temperature in effect where the input stands; see active_rules.h.
//
// Where XGrammar and this differ only in reporting: on a conflict (items
// with different temperatures) XGrammar logs a warning once per matcher;
// zapgram has no log, and the conflict flag stays internal (the public
// GetTemperature gives the largest value, as XGrammar returns).
#include "parser/active_rules.h"

#include <cstdint>
#include <vector>

namespace zapgram::parser {

ActiveTemperature InnermostTemperature(const FlatGrammar& grammar, const Chart& chart) {
  ActiveTemperature out;
  if (!grammar.has_temperatures() || chart.sets.empty()) return out;
  std::vector<uint8_t> entered(chart.groups.size(), 0);
  std::vector<uint32_t> work;
  bool found = false;
  // An item of the rule of `dot` whose origin group is `parent`: its
  // innermost temperature is its rule's, or else that of a stack above.
  const auto visit = [&](uint32_t dot, uint32_t parent) {
    const float t = grammar.TemperatureOf(grammar.dot_lhs[dot]);
    if (t >= 0.0f) {
      if (found && t != out.value) out.conflict = true;
      if (!found || t > out.value) out.value = t;
      found = true;
      return;
    }
    if (parent == kNoParent || entered[parent]) return;
    entered[parent] = 1;
    work.push_back(parent);
  };
  for (uint32_t s = chart.NewestFirst(); s < chart.sets.size(); ++s) {
    const EarleySet& set = chart.sets[s];
    for (uint32_t i = set.scan_begin; i < set.scan_end; ++i) visit(chart.scan[i].dot, chart.scan[i].parent);
  }
  while (!work.empty()) {
    const WaitingGroup& group = chart.groups[work.back()];
    work.pop_back();
    if (group.leo_dot != kNoLeo) {
      visit(group.leo_dot, group.leo_parent);
      continue;
    }
    for (uint32_t k = 0; k < group.count; ++k) {
      const WaitingItem& w = chart.waiting[group.first + k];
      visit(w.dot, w.parent);
    }
  }
  return out;
}

}  // namespace zapgram::parser
