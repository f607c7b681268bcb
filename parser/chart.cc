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

}  // namespace zapgram::parser
