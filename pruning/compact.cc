#include "pruning/compact.h"

#include <algorithm>
#include <functional>

namespace zapgram::pruning {

using parser::Chart;
using parser::EarleySet;
using parser::Item;
using parser::kNoLeo;
using parser::kNoParent;
using parser::WaitingGroup;
using parser::WaitingItem;

namespace {

// CanonicalKey's spelling of a group below the cut (tag | rank).
constexpr uint32_t kBelowCut = 0x80000000u;

// Calls f(parent) for every reference a group holds: its Leo target's parent,
// or its items' parents.
template <typename F>
void ForEachRef(const Chart& chart, const WaitingGroup& g, F f) {
  if (g.leo_dot != kNoLeo) {
    if (g.leo_parent != kNoParent) f(g.leo_parent);
    return;
  }
  const WaitingItem* w = chart.waiting.data() + g.first;
  for (uint32_t k = 0; k < g.count; ++k) {
    if (w[k].parent != kNoParent) f(w[k].parent);
  }
}

}  // namespace

void ZapFormatCompactor::Grow(const Chart& chart) {
  const uint32_t top = static_cast<uint32_t>(chart.sets.size() - 1);
  const uint32_t first = chart.NewestFirst();
  const size_t n = chart.groups.size();
  // Entries from the newest set on are fresh (a popped speculative set may
  // have left stale ones behind).
  // The per-group and per-set arrays only grow (geometrically); entries past
  // the chart's end are ignored.
  if (external_refs_.size() < n) {
    const size_t size = std::max(n, 2 * external_refs_.size());
    external_refs_.resize(size);
    live_.resize(size);
    set_of_.resize(size);
  }
  for (uint32_t s = first; s <= top; ++s) {
    for (uint32_t g = chart.sets[s].group_begin; g < chart.sets[s].group_end; ++g) {
      external_refs_[g] = 0;
      live_[g] = 0;
      set_of_[g] = s;
    }
  }
  if (set_live_groups_.size() <= top) {
    const size_t size = std::max<size_t>(top + 1, 2 * set_live_groups_.size());
    set_live_groups_.resize(size);
    dirty_.resize(size);
  }
  for (uint32_t s = first; s <= top; ++s) {
    if (set_live_groups_[s] > 0) --sets_with_live_groups_;
    set_live_groups_[s] = 0;
    dirty_[s] = 0;
  }
}

void ZapFormatCompactor::AddRef(uint32_t group) {
  journal_refs_.push_back({group, external_refs_[group]});
  ++external_refs_[group];
}

void ZapFormatCompactor::SetLive(uint32_t group, uint8_t live) {
  journal_live_.push_back(group);
  live_[group] = live;
}

void ZapFormatCompactor::ReleaseRef(uint32_t group) {
  journal_refs_.push_back({group, external_refs_[group]});
  if (--external_refs_[group] == 0) {
    uint32_t set = set_of_[group];
    if (!dirty_[set]) {
      dirty_[set] = 1;
      dirty_sets_.push_back(set);
      std::push_heap(dirty_sets_.begin(), dirty_sets_.end());
    }
  }
}

void ZapFormatCompactor::AddScanRoots(const Chart& chart, uint32_t set, int delta) {
  const EarleySet& s = chart.sets[set];
  for (uint32_t i = s.scan_begin; i < s.scan_end; ++i) {
    uint32_t p = chart.scan[i].parent;
    if (p == kNoParent || p >= s.group_begin) continue;  // none, or inside the set
    if (delta > 0) {
      AddRef(p);
    } else {
      ReleaseRef(p);
    }
  }
}

void ZapFormatCompactor::RecomputeSet(const Chart& chart, uint32_t set, bool as_newest) {
  const EarleySet& s = chart.sets[set];
  const uint32_t begin = s.group_begin;
  const uint32_t end = s.group_end;
  if (local_live_.size() < end - begin) local_live_.resize(end - begin);
  std::fill(local_live_.begin(), local_live_.begin() + (end - begin), 0);
  stack_.clear();
  auto reach = [&](uint32_t g) {
    if (g >= begin && g < end && !local_live_[g - begin]) {
      local_live_[g - begin] = 1;
      stack_.push_back(g);
    }
  };
  for (uint32_t g = begin; g < end; ++g) {
    if (external_refs_[g] > 0) reach(g);
  }
  if (as_newest) {
    for (uint32_t i = s.scan_begin; i < s.scan_end; ++i) {
      if (chart.scan[i].parent != kNoParent) reach(chart.scan[i].parent);
    }
  }
  while (!stack_.empty()) {
    uint32_t g = stack_.back();
    stack_.pop_back();
    ForEachRef(chart, chart.groups[g], reach);
  }
  const uint32_t old_live_groups = set_live_groups_[set];
  for (uint32_t g = begin; g < end; ++g) {
    const bool now = local_live_[g - begin] != 0;
    if (now == (live_[g] != 0)) continue;
    SetLive(g, now);
    const WaitingGroup& group = chart.groups[g];
    if (now) {
      live_group_items_ += GroupItems(group);
      ++set_live_groups_[set];
      ForEachRef(chart, group, [&](uint32_t r) {
        if (r < begin) AddRef(r);
      });
    } else {
      live_group_items_ -= GroupItems(group);
      --set_live_groups_[set];
      ForEachRef(chart, group, [&](uint32_t r) {
        if (r < begin) ReleaseRef(r);
      });
    }
  }
  if (set_live_groups_[set] != old_live_groups) {
    journal_set_groups_.push_back({set, old_live_groups});
  }
  const bool had_live = old_live_groups > 0;
  const bool has_live = set_live_groups_[set] > 0;
  if (has_live != had_live) {
    if (has_live) {
      ++sets_with_live_groups_;
    } else {
      --sets_with_live_groups_;
    }
  }
}

void ZapFormatCompactor::ProcessDirty(const Chart& chart) {
  const uint32_t first = chart.NewestFirst();
  while (!dirty_sets_.empty()) {
    std::pop_heap(dirty_sets_.begin(), dirty_sets_.end());
    uint32_t set = dirty_sets_.back();
    dirty_sets_.pop_back();
    dirty_[set] = 0;
    RecomputeSet(chart, set, set >= first);
  }
}

void ZapFormatCompactor::FinishStep(const Chart& chart) {
  const uint32_t top = static_cast<uint32_t>(chart.sets.size() - 1);
  const uint32_t first = chart.NewestFirst();
  newest_scan_items_ = 0;
  // Sets with live groups, plus set 0 and the newest ones, which always count.
  size_t always_counted = 0;
  if (set_live_groups_[0] == 0) ++always_counted;
  for (uint32_t s = std::max<uint32_t>(first, 1); s <= top; ++s) {
    if (set_live_groups_[s] == 0) ++always_counted;
  }
  for (uint32_t s = first; s <= top; ++s) {
    newest_scan_items_ += chart.sets[s].scan_end - chart.sets[s].scan_begin;
  }
  live_sets_ = sets_with_live_groups_ + always_counted;
}

void ZapFormatCompactor::Reset(const parser::FlatGrammar&, const Chart& chart) {
  const size_t n = chart.groups.size();
  external_refs_.assign(n, 0);
  live_.assign(n, 0);
  set_of_.resize(n);
  for (uint32_t s = 0; s < chart.sets.size(); ++s) {
    for (uint32_t g = chart.sets[s].group_begin; g < chart.sets[s].group_end; ++g) set_of_[g] = s;
  }
  set_live_groups_.assign(chart.sets.size(), 0);
  sets_with_live_groups_ = 0;
  dirty_.assign(chart.sets.size(), 0);
  dirty_sets_.clear();
  live_group_items_ = 0;
  const uint32_t top = static_cast<uint32_t>(chart.sets.size() - 1);
  const uint32_t first = chart.NewestFirst();
  for (uint32_t s = first; s <= top; ++s) AddScanRoots(chart, s, +1);
  // Top down: each set's external references are final before it is computed.
  for (uint32_t s = top + 1; s-- > 0;) RecomputeSet(chart, s, s >= first);
  dirty_sets_.clear();
  std::fill(dirty_.begin(), dirty_.end(), 0);
  FinishStep(chart);
}

void ZapFormatCompactor::AfterPush(const parser::FlatGrammar&, const Chart& chart) {
  journal_refs_.clear();
  journal_live_.clear();
  journal_set_groups_.clear();
  saved_counters_ = {live_group_items_, newest_scan_items_, live_sets_, sets_with_live_groups_};
  Grow(chart);
  const uint32_t top = static_cast<uint32_t>(chart.sets.size() - 1);
  const uint32_t first = chart.NewestFirst();
  for (uint32_t s = first; s <= top; ++s) AddScanRoots(chart, s, +1);
  for (uint32_t s = first; s <= top; ++s) RecomputeSet(chart, s, /*as_newest=*/true);
  // The previous position's sets stop being roots.
  if (first > 0) {
    const uint32_t previous = chart.FirstSetAtPositionOf(first - 1);
    for (uint32_t s = previous; s < first; ++s) AddScanRoots(chart, s, -1);
    for (uint32_t s = previous; s < first; ++s) RecomputeSet(chart, s, /*as_newest=*/false);
  }
  ProcessDirty(chart);
  FinishStep(chart);
}

void ZapFormatCompactor::Undo() {
  for (auto it = journal_refs_.rbegin(); it != journal_refs_.rend(); ++it) {
    external_refs_[it->first] = it->second;
  }
  for (uint32_t g : journal_live_) live_[g] ^= 1;
  for (auto it = journal_set_groups_.rbegin(); it != journal_set_groups_.rend(); ++it) {
    set_live_groups_[it->first] = it->second;
  }
  live_group_items_ = saved_counters_.live_group_items;
  newest_scan_items_ = saved_counters_.newest_scan_items;
  live_sets_ = saved_counters_.live_sets;
  sets_with_live_groups_ = saved_counters_.sets_with_live_groups;
}

void ZapFormatCompactor::Commit(const parser::FlatGrammar& grammar, Chart* chart) {
  // Rewrite densely once tombstones dominate (amortized O(1) per step).
  // Dead sets count as tombstones too: measured against every set, a flat
  // input (one set per byte, nearly all dead) never triggered the rewrite,
  // and `zapgram parse` kept ~135 bytes per input byte.
  const size_t physical =
      chart->waiting.size() + chart->scan.size() + chart->groups.size() + chart->sets.size();
  if (physical > 4 * (LiveItems() + LiveSets()) + 4096) {
    // The spare chart keeps the old buffers, so neither side reallocates.
    CopyLive(grammar, *chart, &spare_);
    std::swap(*chart, spare_);
    Reset(grammar, *chart);
  }
}

void ZapFormatCompactor::CopyLive(const parser::FlatGrammar&, const Chart& in, Chart* out) {
  // The naive mark, independent of the incremental bookkeeping: from the
  // newest set's terminal items, follow parents; then copy what is marked.
  const uint32_t num_sets = static_cast<uint32_t>(in.sets.size());
  const uint32_t first = in.NewestFirst();
  const uint32_t num_groups = static_cast<uint32_t>(in.groups.size());
  std::vector<uint8_t> marked(num_groups, 0);
  std::vector<uint32_t> stack;
  auto need = [&](uint32_t parent) {
    if (parent == kNoParent || marked[parent]) return;
    marked[parent] = 1;
    stack.push_back(parent);
  };
  for (uint32_t s = first; s < num_sets; ++s) {
    const EarleySet& newest = in.sets[s];
    for (uint32_t i = newest.scan_begin; i < newest.scan_end; ++i) need(in.scan[i].parent);
  }
  while (!stack.empty()) {
    uint32_t g = stack.back();
    stack.pop_back();
    ForEachRef(in, in.groups[g], need);
  }
  new_group_.resize(num_groups);
  uint32_t kept_groups = 0;
  for (uint32_t gi = 0; gi < num_groups; ++gi) {
    if (marked[gi]) new_group_[gi] = kept_groups++;
  }
  auto remap = [&](uint32_t parent) { return parent == kNoParent ? kNoParent : new_group_[parent]; };

  out->Clear();
  out->groups.reserve(kept_groups);
  for (uint32_t s = 0; s < num_sets; ++s) {
    const EarleySet& old = in.sets[s];
    bool keep = s == 0 || s >= first;
    for (uint32_t gi = old.group_begin; gi < old.group_end && !keep; ++gi) keep = marked[gi];
    if (!keep) continue;
    EarleySet set;
    set.position = old.position;
    set.accepting = old.accepting;
    set.lane = old.lane;
    set.waiting_begin = static_cast<uint32_t>(out->waiting.size());
    set.group_begin = static_cast<uint32_t>(out->groups.size());
    for (uint32_t gi = old.group_begin; gi < old.group_end; ++gi) {
      if (!marked[gi]) continue;
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
    if (s >= first) {
      for (uint32_t i = old.scan_begin; i < old.scan_end; ++i) {
        const Item& item = in.scan[i];
        out->scan.push_back({item.dot, remap(item.parent), item.state});
      }
    }
    set.scan_end = static_cast<uint32_t>(out->scan.size());
    out->sets.push_back(set);
  }
}

parser::KeyCut ZapFormatCompactor::CanonicalKey(const Chart& in,
                                                absl::FunctionRef<void(const parser::EarleySet&)> set_header,
                                                const parser::StateClasses& state_class,
                                                parser::KeyReach reach, std::vector<uint32_t>* out) {
  // The naive mark of CopyLive, touching only what it marks, newest groups
  // first: a max-heap of marked groups. Parents lie in older sets or in the
  // same set, so when the heap's top is below a set, every live group of
  // that set and above has been marked and expanded: the sets can be cut
  // there, after reach.max_sets sets older than the newest position or once
  // reach.down_to_group is at or above the floor.
  const uint32_t num_sets = static_cast<uint32_t>(in.sets.size());
  const uint32_t first = in.NewestFirst();
  if (key_stamp_.size() < in.groups.size()) {
    key_stamp_.resize(in.groups.size() * 2, 0);
    key_index_.resize(in.groups.size() * 2, 0);
  }
  if (++key_epoch_ == 0) {  // wrapped: forget every old stamp
    std::fill(key_stamp_.begin(), key_stamp_.end(), 0u);
    key_epoch_ = 1;
  }
  key_marked_.clear();
  stack_.clear();
  auto need = [&](uint32_t parent) {
    if (parent == kNoParent || key_stamp_[parent] == key_epoch_) return;
    key_stamp_[parent] = key_epoch_;
    stack_.push_back(parent);
    std::push_heap(stack_.begin(), stack_.end());
  };
  for (uint32_t s = first; s < num_sets; ++s) {
    const EarleySet& newest = in.sets[s];
    for (uint32_t i = newest.scan_begin; i < newest.scan_end; ++i) need(in.scan[i].parent);
  }
  // Kept sets, newest first: the newest position's, then those of marked groups.
  key_sets_.clear();
  for (uint32_t s = num_sets; s-- > first;) key_sets_.push_back(s);
  uint32_t floor = in.sets[first].group_begin;  // every marked group >= floor is expanded
  uint32_t older_sets = 0;
  bool cut = false;
  while (!stack_.empty()) {
    const uint32_t g = stack_.front();
    if (g < floor) {  // the top is in an older set: its set is kept next
      if (older_sets == reach.max_sets || (reach.down_to_group != kNoParent && reach.down_to_group >= floor)) {
        cut = true;
        break;
      }
      const uint32_t lowest = key_sets_.back();
      auto it = std::upper_bound(in.sets.begin(), in.sets.begin() + lowest, g,
                                 [](uint32_t group, const EarleySet& set) { return group < set.group_end; });
      const uint32_t s = static_cast<uint32_t>(it - in.sets.begin());
      key_sets_.push_back(s);
      ++older_sets;
      floor = in.sets[s].group_begin;
    }
    std::pop_heap(stack_.begin(), stack_.end());
    stack_.pop_back();
    key_index_[g] = static_cast<uint32_t>(key_marked_.size());
    key_marked_.push_back(g);
    ForEachRef(in, in.groups[g], need);
  }
  if (cut) {
    // Groups below the cut are spelled by their rank (newest first), tagged:
    // equal keys then name equal groups alike, whatever lies below.
    std::sort(stack_.begin(), stack_.end(), std::greater<uint32_t>());
    for (uint32_t i = 0; i < stack_.size(); ++i) key_index_[stack_[i]] = kBelowCut | i;
  } else {
    floor = 0;
    if (key_sets_.back() != 0) key_sets_.push_back(0);  // set 0 is always kept (CopyLive)
  }
  auto remap = [&](uint32_t parent) { return parent == kNoParent ? kNoParent : key_index_[parent]; };
  out->push_back(cut ? 1 : 0);
  size_t next_marked = 0;
  for (uint32_t s : key_sets_) {
    const EarleySet& set = in.sets[s];
    set_header(set);
    const size_t groups_at = out->size();
    out->push_back(0);
    while (next_marked < key_marked_.size() && key_marked_[next_marked] >= set.group_begin) {
      const WaitingGroup& group = in.groups[key_marked_[next_marked++]];
      ++(*out)[groups_at];
      if (group.leo_dot != kNoLeo) {
        // The chain behind a Leo entry is never consulted again.
        out->insert(out->end(), {group.nt, 0u, group.leo_dot, remap(group.leo_parent)});
        continue;
      }
      out->insert(out->end(), {group.nt, group.count, group.leo_dot, group.leo_parent});
      key_items_.clear();
      for (uint32_t k = 0; k < group.count; ++k) {
        const parser::WaitingItem& w = in.waiting[group.first + k];
        key_items_.push_back({w.dot, remap(w.parent), 0});
      }
      std::sort(key_items_.begin(), key_items_.end());
      for (const auto& item : key_items_) out->insert(out->end(), {item[0], item[1]});
    }
    if (s < first) {
      out->push_back(0);
      continue;
    }
    out->push_back(set.scan_end - set.scan_begin);
    key_items_.clear();
    for (uint32_t i = set.scan_begin; i < set.scan_end; ++i) {
      const uint32_t state = in.scan[i].state;
      key_items_.push_back({in.scan[i].dot, remap(in.scan[i].parent),
                            state_class(state)});
    }
    std::sort(key_items_.begin(), key_items_.end());
    for (const auto& item : key_items_) out->insert(out->end(), item.begin(), item.end());
  }
  return {floor, older_sets};
}

parser::Recognizer MakeRecognizer(const parser::FlatGrammar* grammar,
                                  const RecognizerOptions& options) {
  std::unique_ptr<parser::ChartCompactor> compactor;
  if (options.pruning) compactor = std::make_unique<ZapFormatCompactor>();
  return parser::Recognizer(grammar, options, std::move(compactor));
}

}  // namespace zapgram::pruning
