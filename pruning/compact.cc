#include "pruning/compact.h"

namespace zapgram::pruning {

using parser::Chart;
using parser::EarleySet;
using parser::Item;
using parser::kNoLeo;
using parser::kNoParent;
using parser::WaitingGroup;
using parser::WaitingItem;

void ZapFormatCompactor::Compact(const parser::FlatGrammar&, const Chart& in, Chart* out) {
  const uint32_t num_sets = static_cast<uint32_t>(in.sets.size());
  const uint32_t last = num_sets - 1;
  const uint32_t num_groups = static_cast<uint32_t>(in.groups.size());
  group_marked_.assign(num_groups, 0);
  new_group_.resize(num_groups);
  stack_.clear();

  auto need = [&](uint32_t parent) {
    if (parent == kNoParent || group_marked_[parent]) return;
    group_marked_[parent] = 1;
    stack_.push_back(parent);
  };
  const EarleySet& newest = in.sets[last];
  for (uint32_t i = newest.scan_begin; i < newest.scan_end; ++i) need(in.scan[i].parent);
  while (!stack_.empty()) {
    const WaitingGroup& g = in.groups[stack_.back()];
    stack_.pop_back();
    if (g.leo_dot != kNoLeo) {
      need(g.leo_parent);
      continue;
    }
    for (uint32_t k = 0; k < g.count; ++k) need(in.waiting[g.first + k].parent);
  }

  // New indices of the kept groups (groups are stored in set order).
  uint32_t kept_groups = 0;
  for (uint32_t gi = 0; gi < num_groups; ++gi) {
    if (group_marked_[gi]) new_group_[gi] = kept_groups++;
  }
  auto remap = [&](uint32_t parent) { return parent == kNoParent ? kNoParent : new_group_[parent]; };

  out->Clear();
  out->groups.reserve(kept_groups);
  for (uint32_t s = 0; s < num_sets; ++s) {
    const EarleySet& old = in.sets[s];
    bool keep = s == 0 || s == last;
    for (uint32_t gi = old.group_begin; gi < old.group_end && !keep; ++gi) keep = group_marked_[gi];
    if (!keep) continue;
    EarleySet set;
    set.position = old.position;
    set.accepting = old.accepting;
    set.waiting_begin = static_cast<uint32_t>(out->waiting.size());
    set.group_begin = static_cast<uint32_t>(out->groups.size());
    for (uint32_t gi = old.group_begin; gi < old.group_end; ++gi) {
      if (!group_marked_[gi]) continue;
      const WaitingGroup& src = in.groups[gi];
      WaitingGroup g = src;
      g.first = static_cast<uint32_t>(out->waiting.size());
      if (src.leo_dot != kNoLeo) {
        // The chain behind a Leo entry is never consulted again.
        g.count = 0;
        g.leo_parent = remap(src.leo_parent);
        ++out->leo_entries;
      } else {
        for (uint32_t k = 0; k < src.count; ++k) {
          const WaitingItem& w = in.waiting[src.first + k];
          out->waiting.push_back({w.dot, remap(w.parent)});
        }
      }
      out->groups.push_back(g);
    }
    set.group_end = static_cast<uint32_t>(out->groups.size());
    set.scan_begin = static_cast<uint32_t>(out->scan.size());
    if (s == last) {
      for (uint32_t i = old.scan_begin; i < old.scan_end; ++i) {
        const Item& item = in.scan[i];
        out->scan.push_back({item.dot, remap(item.parent), item.state});
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
