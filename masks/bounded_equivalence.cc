// Bounded state equivalence by incremental Moore rounds (see
// bounded_equivalence.h).
#include "masks/bounded_equivalence.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "grammar/byte_automaton.h"

namespace zapgram::masks {

namespace {

constexpr uint32_t kNone = 0xFFFFFFFFu;

class Refinement {
 public:
  Refinement(const uint32_t* next, uint32_t states, uint32_t columns)
      : next_(next), n_(states), columns_(columns) {}

  // `initial`: round 0's class of each state, state 0 alone in its class.
  std::vector<uint32_t> Run(const std::vector<uint32_t>& initial, uint32_t depth);

 private:
  // A state's signature is its class and the classes of its successors.
  // Rows are kept sparse: the dead state 0 is a class of its own for good
  // (round 0 puts it alone and no live state ever joins it), so listing
  // the (column, target) pairs with a live target, in column order, spells
  // the signature exactly; a literal chain's state has one such pair.
  //
  // Rows are also kept grouped by target ("fans": a target and the set of
  // columns leading to it), since a JSON string body's state sends dozens
  // of columns to a handful of states and is re-examined round after
  // round. The hash is a sum over columns of weight(column) x
  // mix(class of its target), which a fan gives at once as
  // mix(class) x (sum of its columns' weights), whatever the grouping; and
  // two states whose fans have the same column sets in the same order
  // compare fan by fan. Other pairs compare column by column.
  static uint64_t Mix(uint64_t x) {
    x = (x + 1) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 29);
  }
  uint64_t SignatureHash(uint32_t s) const {
    uint64_t h = Mix(cls_[s]);
    for (uint32_t k = fan_begin_[s]; k < fan_begin_[s + 1]; ++k) {
      h += fan_weights_[k] * (Mix(cls_[fan_targets_[k]]) | 1);
    }
    return Mix(h);
  }
  bool SameSignature(uint32_t a, uint32_t b) const {
    if (cls_[a] != cls_[b]) return false;
    const uint32_t fans = fan_begin_[a + 1] - fan_begin_[a];
    bool same_fans = fans == fan_begin_[b + 1] - fan_begin_[b];
    for (uint32_t k = 0; same_fans && k < fans; ++k) {
      same_fans = fan_sets_[fan_begin_[a] + k] == fan_sets_[fan_begin_[b] + k];
    }
    if (same_fans) {
      for (uint32_t k = 0; k < fans; ++k) {
        if (cls_[fan_targets_[fan_begin_[a] + k]] != cls_[fan_targets_[fan_begin_[b] + k]]) {
          return false;
        }
      }
      return true;
    }
    const uint32_t length = row_begin_[a + 1] - row_begin_[a];
    if (length != row_begin_[b + 1] - row_begin_[b]) return false;
    for (uint32_t k = 0; k < length; ++k) {
      const uint32_t ka = row_begin_[a] + k, kb = row_begin_[b] + k;
      if (row_columns_[ka] != row_columns_[kb] ||
          cls_[row_targets_[ka]] != cls_[row_targets_[kb]]) {
        return false;
      }
    }
    return true;
  }
  // `states` reordered into `out` so that each class's states are adjacent.
  void GroupByClass(const std::vector<uint32_t>& states, std::vector<uint32_t>& out);
  void BuildRows();
  void BuildFans();
  void BuildPredecessors();
  void LinkInto(uint32_t s, uint32_t id);
  void Unlink(uint32_t s);

  const uint32_t* next_;  // [state * columns_ + column]
  const uint32_t n_;
  const uint32_t columns_;
  std::vector<uint32_t> cls_;
  // Live transitions of state s: row_columns_/row_targets_[row_begin_[s] .. row_begin_[s + 1]).
  std::vector<uint32_t> row_begin_, row_columns_, row_targets_;
  // Fans of state s, by smallest column: fan_targets_/fan_sets_/fan_weights_
  // [fan_begin_[s] .. fan_begin_[s + 1]); a fan's set is a number shared by
  // equal column sets of the whole table (a single column: the column; more:
  // columns_ and up), its weight the sum of its columns' Mix.
  std::vector<uint32_t> fan_begin_, fan_targets_, fan_sets_;
  std::vector<uint64_t> fan_weights_;
  // Distinct predecessors of state s: preds_[pred_begin_[s] .. pred_begin_[s + 1]).
  std::vector<uint32_t> pred_begin_, preds_;
  // Members of each class, as a doubly linked list; sizes per class.
  std::vector<uint32_t> head_, size_, next_member_, prev_member_;
  // GroupByClass's scratch: per class, its count then its next slot (zero
  // between calls), and the classes touched.
  std::vector<uint32_t> slot_, touched_;
};

void Refinement::GroupByClass(const std::vector<uint32_t>& states, std::vector<uint32_t>& out) {
  if (slot_.size() < head_.size()) slot_.resize(head_.size(), 0);
  touched_.clear();
  for (uint32_t s : states) {
    if (slot_[cls_[s]]++ == 0) touched_.push_back(cls_[s]);
  }
  uint32_t at = 0;
  for (uint32_t c : touched_) {
    const uint32_t count = slot_[c];
    slot_[c] = at;
    at += count;
  }
  out.resize(states.size());
  for (uint32_t s : states) out[slot_[cls_[s]]++] = s;
  for (uint32_t c : touched_) slot_[c] = 0;
}

void Refinement::BuildRows() {
  row_begin_.assign(n_ + 1, 0);
  for (uint32_t s = 0; s < n_; ++s) {
    grammar::ForEachLiveColumn(next_ + static_cast<size_t>(s) * columns_, columns_,
                               [&](uint32_t c, uint32_t to) {
                                 row_columns_.push_back(c);
                                 row_targets_.push_back(to);
                               });
    row_begin_[s + 1] = static_cast<uint32_t>(row_columns_.size());
  }
}

void Refinement::BuildFans() {
  fan_begin_.assign(n_ + 1, 0);
  absl::flat_hash_map<std::vector<uint32_t>, uint32_t> set_ids;
  std::vector<uint32_t> fan_of(n_, kNone);  // target -> its fan in the current row
  std::vector<uint32_t> targets;            // the current row's fans, by smallest column
  std::vector<std::vector<uint32_t>> columns;
  for (uint32_t s = 0; s < n_; ++s) {
    targets.clear();
    for (uint32_t k = row_begin_[s]; k < row_begin_[s + 1]; ++k) {
      const uint32_t to = row_targets_[k];
      if (fan_of[to] == kNone) {
        fan_of[to] = static_cast<uint32_t>(targets.size());
        targets.push_back(to);
        if (columns.size() < targets.size()) columns.emplace_back();
        columns[fan_of[to]].clear();
      }
      columns[fan_of[to]].push_back(row_columns_[k]);
    }
    for (uint32_t f = 0; f < targets.size(); ++f) {
      fan_of[targets[f]] = kNone;
      uint64_t weight = 0;
      for (uint32_t c : columns[f]) weight += Mix(c);
      // A single column (a literal chain's only fan) is its own number.
      uint32_t set = columns[f][0];
      if (columns[f].size() > 1) {
        set = columns_ + set_ids.try_emplace(columns[f], static_cast<uint32_t>(set_ids.size()))
                             .first->second;
      }
      fan_targets_.push_back(targets[f]);
      fan_sets_.push_back(set);
      fan_weights_.push_back(weight);
    }
    fan_begin_[s + 1] = static_cast<uint32_t>(fan_targets_.size());
  }
}

void Refinement::BuildPredecessors() {
  pred_begin_.assign(n_ + 1, 0);
  std::vector<uint32_t> last(n_, kNone);
  for (uint32_t s = 0; s < n_; ++s) {
    for (uint32_t k = row_begin_[s]; k < row_begin_[s + 1]; ++k) {
      const uint32_t to = row_targets_[k];
      if (last[to] != s) {
        last[to] = s;
        ++pred_begin_[to + 1];
      }
    }
  }
  for (uint32_t s = 0; s < n_; ++s) pred_begin_[s + 1] += pred_begin_[s];
  preds_.resize(pred_begin_[n_]);
  std::vector<uint32_t> fill(pred_begin_.begin(), pred_begin_.end() - 1);
  std::fill(last.begin(), last.end(), kNone);
  for (uint32_t s = 0; s < n_; ++s) {
    for (uint32_t k = row_begin_[s]; k < row_begin_[s + 1]; ++k) {
      const uint32_t to = row_targets_[k];
      if (last[to] != s) {
        last[to] = s;
        preds_[fill[to]++] = s;
      }
    }
  }
}

void Refinement::LinkInto(uint32_t s, uint32_t id) {
  if (id >= head_.size()) {
    head_.resize(id + 1, kNone);
    size_.resize(id + 1, 0);
  }
  cls_[s] = id;
  prev_member_[s] = kNone;
  next_member_[s] = head_[id];
  if (head_[id] != kNone) prev_member_[head_[id]] = s;
  head_[id] = s;
  ++size_[id];
}

void Refinement::Unlink(uint32_t s) {
  const uint32_t id = cls_[s];
  if (prev_member_[s] != kNone) {
    next_member_[prev_member_[s]] = next_member_[s];
  } else {
    head_[id] = next_member_[s];
  }
  if (next_member_[s] != kNone) prev_member_[next_member_[s]] = prev_member_[s];
  --size_[id];
}

std::vector<uint32_t> Refinement::Run(const std::vector<uint32_t>& initial, uint32_t depth) {
  cls_.assign(n_, 0);
  next_member_.assign(n_, kNone);
  prev_member_.assign(n_, kNone);
  uint32_t next_id = 0;
  for (uint32_t s = n_; s-- > 0;) {
    LinkInto(s, initial[s]);
    next_id = std::max(next_id, initial[s] + 1);
  }
  BuildRows();
  BuildFans();
  BuildPredecessors();

  // Round 1 looks at every state; later rounds at the predecessors of the
  // states whose class changed.
  std::vector<uint32_t> affected(n_);
  for (uint32_t s = 0; s < n_; ++s) affected[s] = s;
  std::vector<uint8_t> is_affected(n_, 0);
  std::vector<uint32_t> grouped;
  std::vector<std::pair<uint64_t, uint32_t>> keyed;  // (signature hash, state)
  std::vector<std::pair<uint32_t, uint32_t>> moves;  // (state, new class)
  std::vector<uint32_t> group_reps, group_ids;
  for (uint32_t round = 0; round < depth && !affected.empty(); ++round) {
    for (uint32_t s : affected) is_affected[s] = 1;
    // Affected states grouped by class (a counting sort over the classes
    // they touch; the order of classes and of states within one does not
    // matter: the round's partition is the same, and each class is named by
    // its smallest state at the end), then by signature hash below.
    GroupByClass(affected, grouped);
    affected.swap(grouped);
    moves.clear();
    for (size_t i = 0; i < affected.size();) {
      const uint32_t id = cls_[affected[i]];
      size_t j = i;
      while (j < affected.size() && cls_[affected[j]] == id) ++j;
      // The signature every unaffected member of the class shares, if any.
      uint32_t keeper = kNone;
      if (j - i < size_[id]) {
        for (uint32_t m = head_[id]; m != kNone; m = next_member_[m]) {
          if (!is_affected[m]) {
            keeper = m;
            break;
          }
        }
      }
      keyed.clear();
      for (size_t k = i; k < j; ++k) keyed.push_back({SignatureHash(affected[k]), affected[k]});
      std::sort(keyed.begin(), keyed.end());
      // Groups of equal signature: the keeper's group (or, with no keeper,
      // the first group) keeps the id; each other group gets a new one.
      bool id_taken = keeper != kNone;
      for (size_t a = 0; a < keyed.size();) {
        size_t b = a;
        while (b < keyed.size() && keyed[b].first == keyed[a].first) ++b;
        // Equal hashes: split exactly by comparing with each group's first state.
        group_reps.clear();
        group_ids.clear();
        for (size_t k = a; k < b; ++k) {
          const uint32_t s = keyed[k].second;
          uint32_t target = kNone;
          for (size_t g = 0; g < group_reps.size() && target == kNone; ++g) {
            if (SameSignature(s, group_reps[g])) target = group_ids[g];
          }
          if (target == kNone) {
            if (keeper != kNone && SameSignature(s, keeper)) {
              target = id;
            } else if (!id_taken) {
              target = id;
              id_taken = true;
            } else {
              target = next_id++;
            }
            group_reps.push_back(s);
            group_ids.push_back(target);
          }
          if (target != id) moves.push_back({s, target});
        }
        a = b;
      }
      i = j;
    }
    for (uint32_t s : affected) is_affected[s] = 0;
    // Apply the round's moves, then gather the next round's candidates.
    for (const auto& [s, id] : moves) {
      Unlink(s);
      LinkInto(s, id);
    }
    affected.clear();
    for (const auto& [s, id] : moves) {
      for (uint32_t k = pred_begin_[s]; k < pred_begin_[s + 1]; ++k) {
        const uint32_t p = preds_[k];
        // A class of one state cannot split: its state is left alone.
        if (!is_affected[p] && size_[cls_[p]] > 1) {
          is_affected[p] = 1;
          affected.push_back(p);
        }
      }
    }
    for (uint32_t s : affected) is_affected[s] = 0;
  }
  // Each class is named by its smallest state.
  std::vector<uint32_t> first(next_id, kNone), out(n_);
  for (uint32_t s = 0; s < n_; ++s) {
    if (first[cls_[s]] == kNone) first[cls_[s]] = s;
    out[s] = first[cls_[s]];
  }
  return out;
}

}  // namespace

std::vector<uint32_t> BoundedEquivalence(const parser::TerminalTable& t, uint32_t depth) {
  if (t.eager_states() == 0) return {};
  // Round 0: dead, accepting, other.
  std::vector<uint32_t> initial(t.eager_states());
  for (uint32_t s = 1; s < initial.size(); ++s) initial[s] = t.eager_accepting[s] ? 1 : 2;
  return Refinement(t.next.data(), t.eager_states(), t.num_classes).Run(initial, depth);
}

std::vector<uint32_t> BoundedEquivalence(const uint32_t* next, uint32_t columns,
                                         const std::vector<uint32_t>& initial, uint32_t depth) {
  if (initial.empty()) return {};
  return Refinement(next, static_cast<uint32_t>(initial.size()), columns).Run(initial, depth);
}

}  // namespace zapgram::masks
