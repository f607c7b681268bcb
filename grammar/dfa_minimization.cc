#include "grammar/dfa_minimization.h"

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace zapgram::grammar {
namespace {

// A partition of the elements 0..size-1 into numbered sets, each a range of
// `elements_`. Refined by marking elements (a marked element moves to the
// front of its set's range) and splitting every set with marked and unmarked
// elements: the larger part keeps the set's number, the smaller gets the
// next new one (the marked part on a tie), so a loop over set numbers meets
// each smaller half once.
class RefinablePartition {
 public:
  // One set per non-empty group [group_begin[g], group_begin[g + 1]).
  explicit RefinablePartition(const std::vector<uint32_t>& group_begin)
      : elements_(std::make_unique_for_overwrite<uint32_t[]>(group_begin.back())),
        position_(std::make_unique_for_overwrite<uint32_t[]>(group_begin.back())),
        set_of_(std::make_unique_for_overwrite<uint32_t[]>(group_begin.back())) {
    // Every element lies in one group, so each array is written in full here.
    for (uint32_t e = 0; e < group_begin.back(); ++e) elements_[e] = position_[e] = e;
    for (size_t g = 0; g + 1 < group_begin.size(); ++g) {
      if (group_begin[g] == group_begin[g + 1]) continue;
      for (uint32_t e = group_begin[g]; e < group_begin[g + 1]; ++e) set_of_[e] = num_sets();
      first_.push_back(group_begin[g]);
      past_.push_back(group_begin[g + 1]);
      marked_.push_back(0);
    }
  }

  uint32_t num_sets() const { return static_cast<uint32_t>(first_.size()); }
  uint32_t set_of(uint32_t element) const { return set_of_[element]; }
  uint32_t first(uint32_t set) const { return first_[set]; }
  uint32_t past(uint32_t set) const { return past_[set]; }
  uint32_t element(uint32_t index) const { return elements_[index]; }

  void Mark(uint32_t e) {
    const uint32_t s = set_of_[e], at = position_[e], front = first_[s] + marked_[s];
    if (at < front) return;  // already marked
    const uint32_t other = elements_[front];
    elements_[at] = other;
    position_[other] = at;
    elements_[front] = e;
    position_[e] = front;
    if (marked_[s]++ == 0) touched_.push_back(s);
  }

  void Split() {
    while (!touched_.empty()) {
      const uint32_t s = touched_.back();
      touched_.pop_back();
      const uint32_t begin = first_[s], middle = begin + marked_[s], end = past_[s];
      marked_[s] = 0;
      if (middle == end) continue;  // every element marked: no split
      const uint32_t z = num_sets();
      if (middle - begin <= end - middle) {  // the marked part is the smaller
        first_.push_back(begin);
        past_.push_back(middle);
        first_[s] = middle;
      } else {
        first_.push_back(middle);
        past_.push_back(end);
        past_[s] = middle;
      }
      marked_.push_back(0);
      for (uint32_t i = first_[z]; i < past_[z]; ++i) set_of_[elements_[i]] = z;
    }
  }

 private:
  std::unique_ptr<uint32_t[]> elements_, position_, set_of_;
  std::vector<uint32_t> first_, past_, marked_;  // per set
  std::vector<uint32_t> touched_;                // sets with marked elements
};

}  // namespace

ByteDfa MinimizeDfa(const ByteDfa& dfa, uint64_t max_work) {
  if (dfa.num_states() <= 2) return dfa;
  return MinimizeDfa(ClassDfa::Narrow(dfa), max_work);
}

ByteDfa MinimizeDfa(const ClassDfa& dfa, uint64_t max_work) {
  if (dfa.num_states() <= 2) return dfa.Widen();
  return MinimizeDfaToClasses(dfa, max_work).Widen();
}

ClassDfa MinimizeDfaToClasses(const ClassDfa& dfa, uint64_t max_work) {
  const uint32_t n = dfa.num_states();
  if (n <= 2) return dfa;
  const uint32_t k = dfa.num_classes;

  // The live transitions (neither end the dead state), numbered by label
  // (a counting sort), with their tails and heads; then, per state, the
  // transitions entering it (CSR). The per-transition arrays are written in
  // full before they are read, so they are not zeroed first.
  std::vector<uint32_t> label_begin(k + 1, 0);
  for (uint32_t s = 1; s < n; ++s) {
    for (uint32_t c = 0; c < k; ++c) label_begin[c + 1] += dfa.step(s, c) != 0;
  }
  for (uint32_t c = 0; c < k; ++c) label_begin[c + 1] += label_begin[c];
  const uint32_t m = label_begin[k];
  std::unique_ptr<uint32_t[]> tail = std::make_unique_for_overwrite<uint32_t[]>(m);
  std::unique_ptr<uint32_t[]> head = std::make_unique_for_overwrite<uint32_t[]>(m);
  std::unique_ptr<uint32_t[]> in = std::make_unique_for_overwrite<uint32_t[]>(m);
  std::vector<uint32_t> in_begin(n + 1, 0);
  {
    std::vector<uint32_t> fill(label_begin.begin(), label_begin.end() - 1);
    for (uint32_t s = 1; s < n; ++s) {
      ForEachLiveColumn(&dfa.next[size_t{s} * k], k, [&](uint32_t c, uint32_t to) {
        const uint32_t t = fill[c]++;
        tail[t] = s;
        head[t] = to;
        ++in_begin[to + 1];
      });
    }
  }
  for (uint32_t s = 0; s < n; ++s) in_begin[s + 1] += in_begin[s];
  {
    std::vector<uint32_t> fill(in_begin.begin(), in_begin.end() - 1);
    for (uint32_t t = 0; t < m; ++t) in[fill[head[t]]++] = t;
  }

  // Blocks: all states, then {dead} split off (set 1), then the accepting
  // states from the rest (the smaller of the two parts becomes set 2). Sets
  // 0 and 1 are never splitters (see the header); the cords, one per label
  // at first, all are.
  RefinablePartition blocks({0, n});
  blocks.Mark(0);
  blocks.Split();
  for (uint32_t s = 1; s < n; ++s) {
    if (dfa.accepting[s]) blocks.Mark(s);
  }
  blocks.Split();
  RefinablePartition cords(label_begin);
  uint64_t steps = 0;
  uint32_t next_block = 2, next_cord = 0;
  while (next_cord < cords.num_sets()) {
    // The tails of a cord's transitions split the blocks.
    const uint32_t cord = next_cord++;
    for (uint32_t i = cords.first(cord); i < cords.past(cord); ++i) {
      blocks.Mark(tail[cords.element(i)]);
    }
    steps += cords.past(cord) - cords.first(cord) + 1;
    blocks.Split();
    // Each new block splits the cords by which transitions enter it.
    for (; next_block < blocks.num_sets(); ++next_block) {
      for (uint32_t i = blocks.first(next_block); i < blocks.past(next_block); ++i) {
        const uint32_t s = blocks.element(i);
        for (uint32_t j = in_begin[s]; j < in_begin[s + 1]; ++j) cords.Mark(in[j]);
        steps += in_begin[s + 1] - in_begin[s] + 1;
      }
      cords.Split();
    }
    if (steps > max_work) return dfa;  // not converged within budget: the unminimized DFA
  }

  // Renumber: the dead state's block is 0, the start's 1, the rest in state order.
  constexpr uint32_t kUnnumbered = 0xFFFFFFFFu;
  std::vector<uint32_t> id(blocks.num_sets(), kUnnumbered);
  std::vector<uint32_t> representative;
  for (uint32_t s = 0; s < n; ++s) {
    const uint32_t b = blocks.set_of(s);
    if (id[b] == kUnnumbered) {
      id[b] = static_cast<uint32_t>(representative.size());
      representative.push_back(s);
    }
  }
  ClassDfa out;
  out.class_of = dfa.class_of;
  out.num_classes = k;
  out.next.resize(representative.size() * size_t{k});
  out.accepting.resize(representative.size());
  for (uint32_t b = 0; b < representative.size(); ++b) {
    const uint32_t s = representative[b];
    out.accepting[b] = dfa.accepting[s];
    // The dead state is alone in block 0 (split off first), so dead
    // entries stay as resize left them.
    uint32_t* row = &out.next[size_t{b} * k];
    ForEachLiveColumn(&dfa.next[size_t{s} * k], k,
                      [&](uint32_t c, uint32_t to) { row[c] = id[blocks.set_of(to)]; });
  }
  return out;
}

}  // namespace zapgram::grammar
