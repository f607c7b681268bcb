#include "parser/chart.h"

#include <algorithm>

namespace zapgram::parser {

const WaitingGroup* Chart::FindGroup(uint32_t set, uint32_t nt) const {
  const EarleySet& s = sets[set];
  const WaitingGroup* begin = groups.data() + s.group_begin;
  const WaitingGroup* end = groups.data() + s.group_end;
  const WaitingGroup* it = std::lower_bound(
      begin, end, nt, [](const WaitingGroup& g, uint32_t key) { return g.nt < key; });
  return (it != end && it->nt == nt) ? it : nullptr;
}

uint32_t Chart::SetOfGroup(uint32_t group) const {
  if (group == kNoParent) return 0;
  auto it = std::upper_bound(sets.begin(), sets.end(), group,
                             [](uint32_t g, const EarleySet& s) { return g < s.group_end; });
  return static_cast<uint32_t>(it - sets.begin());
}

}  // namespace zapgram::parser
