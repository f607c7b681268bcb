#include "pruning/compact.h"

namespace zapgram::pruning {

using parser::Chart;
using parser::EarleySet;
using parser::Item;
using parser::kNoLeo;
using parser::WaitingGroup;
using parser::WaitingItem;

void ZapFormatCompactor::Compact(const parser::FlatGrammar& grammar, const Chart& in,
                                 Chart* out) {
  const uint32_t num_sets = static_cast<uint32_t>(in.sets.size());
  const uint32_t last = num_sets - 1;
  group_marked_.assign(in.groups.size(), 0);
  set_kept_.assign(num_sets, 0);
  new_index_.resize(num_sets);
  stack_.clear();
  set_kept_[0] = 1;
  set_kept_[last] = 1;

  auto need = [&](uint32_t set, uint32_t nt) {
    set_kept_[set] = 1;
    const WaitingGroup* g = in.FindGroup(set, nt);
    if (g == nullptr) return;
    uint32_t index = static_cast<uint32_t>(g - in.groups.data());
    if (group_marked_[index]) return;
    group_marked_[index] = 1;
    stack_.push_back(index);
  };

  const EarleySet& newest = in.sets[last];
  for (uint32_t i = newest.scan_begin; i < newest.scan_end; ++i) {
    const Item& item = in.scan[i];
    need(item.origin, grammar.dot_lhs[item.dot]);
  }
  while (!stack_.empty()) {
    const WaitingGroup& g = in.groups[stack_.back()];
    stack_.pop_back();
    if (g.leo_dot != kNoLeo) {
      need(g.leo_origin, grammar.dot_lhs[g.leo_dot]);
      continue;
    }
    for (uint32_t k = 0; k < g.count; ++k) {
      const WaitingItem& w = in.waiting[g.first + k];
      need(w.origin, grammar.dot_lhs[w.dot]);
    }
  }

  uint32_t kept = 0;
  for (uint32_t s = 0; s < num_sets; ++s) {
    if (set_kept_[s]) new_index_[s] = kept++;
  }
  out->Clear();
  out->sets.reserve(kept);
  for (uint32_t s = 0; s < num_sets; ++s) {
    if (!set_kept_[s]) continue;
    const EarleySet& old = in.sets[s];
    EarleySet set;
    set.position = old.position;
    set.accepting = old.accepting;
    set.waiting_begin = static_cast<uint32_t>(out->waiting.size());
    set.group_begin = static_cast<uint32_t>(out->groups.size());
    for (uint32_t gi = old.group_begin; gi < old.group_end; ++gi) {
      if (!group_marked_[gi]) continue;
      WaitingGroup g = in.groups[gi];
      g.first = static_cast<uint32_t>(out->waiting.size());
      if (g.leo_dot != kNoLeo) {
        g.count = 0;
        g.leo_origin = new_index_[g.leo_origin];
        ++out->leo_entries;
      } else {
        const WaitingGroup& src = in.groups[gi];
        for (uint32_t k = 0; k < src.count; ++k) {
          WaitingItem w = in.waiting[src.first + k];
          w.origin = new_index_[w.origin];
          out->waiting.push_back(w);
        }
      }
      out->groups.push_back(g);
    }
    set.group_end = static_cast<uint32_t>(out->groups.size());
    set.scan_begin = static_cast<uint32_t>(out->scan.size());
    if (s == last) {
      for (uint32_t i = old.scan_begin; i < old.scan_end; ++i) {
        Item item = in.scan[i];
        item.origin = new_index_[item.origin];
        out->scan.push_back(item);
      }
    }
    set.scan_end = static_cast<uint32_t>(out->scan.size());
    out->sets.push_back(set);
  }
}

parser::Recognizer MakeRecognizer(const parser::FlatGrammar* grammar,
                                  const RecognizerOptions& options) {
  std::unique_ptr<parser::ChartCompactor> compactor;
  if (options.pruning) compactor = std::make_unique<ZapFormatCompactor>();
  return parser::Recognizer(grammar, options, std::move(compactor));
}

}  // namespace zapgram::pruning
