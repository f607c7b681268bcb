// Set operations on byte DFAs (see dfa_set_ops.h).
#include "grammar/dfa_set_ops.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace zapgram::grammar {
namespace {

// The right operand of a product, as a deterministic automaton over uint64
// states in which 0 is dead and stays dead.
class PlainOperand {
 public:
  explicit PlainOperand(const ByteDfa& dfa) : dfa_(dfa) {}
  uint64_t Start() const { return dfa_.empty() ? 0 : 1; }
  uint64_t Next(uint64_t s, uint8_t byte) const {
    return s == 0 ? 0 : dfa_.next[static_cast<size_t>(s)][byte];
  }
  bool Accepting(uint64_t s) const { return s != 0 && dfa_.accepting[static_cast<size_t>(s)]; }

 private:
  const ByteDfa& dfa_;
};

// (code points read so far, state inside the current code point's spelling),
// packed as count * |one| + state; a state of `one` equal to 0 is dead.
class CountedOperand {
 public:
  CountedOperand(const ByteDfa& one, uint32_t min, uint32_t max)
      : one_(one), width_(one.num_states()), min_(min), max_(max) {}
  uint64_t Start() const { return one_.empty() ? 0 : 1; }
  uint64_t Next(uint64_t s, uint8_t byte) const {
    if (s == 0) return 0;
    uint64_t count = s / width_;
    const uint32_t inside = one_.next[static_cast<size_t>(s % width_)][byte];
    if (inside == 0) return 0;
    if (!one_.accepting[inside]) return count * width_ + inside;
    ++count;  // one code point complete; the spelling starts over
    if (max_ == kUnbounded) {
      count = std::min<uint64_t>(count, min_);
    } else if (count > max_) {
      return 0;
    }
    return count * width_ + 1;
  }
  bool Accepting(uint64_t s) const { return s != 0 && s % width_ == 1 && s / width_ >= min_; }

 private:
  const ByteDfa& one_;
  const uint64_t width_;
  const uint32_t min_, max_;
};

enum class Combine { kIntersect, kSubtract };

// Keeps the states that reach acceptance, renumbered in order (0 dead, 1
// start); an empty language leaves only the dead state.
ByteDfa Trim(ByteDfa dfa) {
  const uint32_t n = dfa.num_states();
  // Predecessors (one per distinct edge source and target), compressed.
  std::vector<uint32_t> begin(n + 1, 0), preds;
  auto each_edge = [&](auto visit) {
    for (uint32_t s = 1; s < n; ++s) {
      uint32_t last = 0;
      for (uint32_t b = 0; b < 256; ++b) {
        const uint32_t t = dfa.next[s][b];
        if (t != 0 && t != last) visit(s, t);
        last = t;
      }
    }
  };
  each_edge([&](uint32_t, uint32_t t) { ++begin[t + 1]; });
  for (uint32_t s = 0; s < n; ++s) begin[s + 1] += begin[s];
  preds.resize(begin[n]);
  std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
  each_edge([&](uint32_t s, uint32_t t) { preds[fill[t]++] = s; });
  const std::vector<uint8_t> useful = StatesReachingAcceptance(dfa.accepting, begin, preds);
  ByteDfa out;
  out.next.push_back({});
  out.accepting.push_back(0);
  if (n < 2 || !useful[1]) return out;
  std::vector<uint32_t> renumber(n, 0);
  for (uint32_t s = 1; s < n; ++s) {
    if (!useful[s]) continue;
    renumber[s] = out.num_states();
    out.next.push_back({});
    out.accepting.push_back(dfa.accepting[s]);
  }
  for (uint32_t s = 1; s < n; ++s) {
    if (!useful[s]) continue;
    std::array<uint32_t, 256>& row = out.next[renumber[s]];
    for (uint32_t b = 0; b < 256; ++b) row[b] = renumber[dfa.next[s][b]];
  }
  return out;
}

template <typename Operand>
absl::StatusOr<ByteDfa> Product(const ByteDfa& a, const Operand& b, Combine combine,
                                uint32_t max_states) {
  ByteDfa out;
  out.next.push_back({});
  out.accepting.push_back(0);
  if (a.empty()) return out;
  using Pair = std::pair<uint32_t, uint64_t>;
  absl::flat_hash_map<Pair, uint32_t> ids;
  std::vector<Pair> pairs;
  auto intern = [&](Pair p) -> absl::StatusOr<uint32_t> {
    if (p.first == 0 || (combine == Combine::kIntersect && p.second == 0)) return 0;
    auto [it, inserted] = ids.try_emplace(p, out.num_states());
    if (inserted) {
      if (out.num_states() + 1 > max_states) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "automaton product exceeds the state limit (max_dfa_states = ", max_states, ")"));
      }
      pairs.push_back(p);
      out.next.push_back({});
      const bool b_accepts = b.Accepting(p.second);
      out.accepting.push_back(a.accepting[p.first] &&
                              (combine == Combine::kIntersect ? b_accepts : !b_accepts));
    }
    return it->second;
  };
  absl::StatusOr<uint32_t> start = intern({1, b.Start()});
  if (!start.ok()) return start.status();
  if (*start == 0) return out;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Pair at = pairs[i];
    const uint32_t id = static_cast<uint32_t>(i + 1);
    Pair last = {0, 0};
    uint32_t last_id = 0;
    for (uint32_t byte = 0; byte < 256; ++byte) {
      const uint32_t a_next = a.next[at.first][byte];
      if (a_next == 0) continue;
      const Pair to = {a_next, b.Next(at.second, static_cast<uint8_t>(byte))};
      if (to != last || last_id == 0) {
        absl::StatusOr<uint32_t> to_id = intern(to);
        if (!to_id.ok()) return to_id.status();
        last = to;
        last_id = *to_id;
      }
      out.next[id][byte] = last_id;
    }
  }
  return Trim(std::move(out));
}

}  // namespace

absl::StatusOr<ByteDfa> IntersectDfas(const ByteDfa& a, const ByteDfa& b, uint32_t max_states) {
  return Product(a, PlainOperand(b), Combine::kIntersect, max_states);
}

absl::StatusOr<ByteDfa> SubtractDfa(const ByteDfa& universe, const ByteDfa& removed,
                                    uint32_t max_states) {
  return Product(universe, PlainOperand(removed), Combine::kSubtract, max_states);
}

absl::StatusOr<ByteDfa> IntersectCounted(const ByteDfa& a, const ByteDfa& one_codepoint,
                                         uint32_t min, uint32_t max, uint32_t max_states) {
  for (uint32_t s = 1; s < one_codepoint.num_states(); ++s) {
    if (!one_codepoint.accepting[s]) continue;
    for (uint32_t t : one_codepoint.next[s]) {
      if (t != 0) {
        return absl::InvalidArgumentError(
            "a counted code point's spelling is not prefix-free (an accepting state continues)");
      }
    }
  }
  if (max != kUnbounded && min > max) return ByteDfa{{{}}, {0}};
  return Product(a, CountedOperand(one_codepoint, min, max), Combine::kIntersect, max_states);
}

uint32_t StampDfa(ByteNfa& nfa, uint32_t from, const ByteDfa& dfa) {
  const uint32_t end_of_empty = nfa.AddState();
  if (dfa.empty()) return end_of_empty;  // nothing reaches it
  // The start gets a fresh state reached by an epsilon move, so that edges
  // back into the start never enter `from` (see regex_compiler.cc, Emit).
  std::vector<uint32_t> state_of(dfa.num_states(), 0);
  for (uint32_t s = 1; s < dfa.num_states(); ++s) state_of[s] = nfa.AddState();
  nfa.AddEpsilon(from, state_of[1]);
  const uint32_t end = end_of_empty;
  for (uint32_t s = 1; s < dfa.num_states(); ++s) {
    const std::array<uint32_t, 256>& row = dfa.next[s];
    for (uint32_t lo = 0; lo < 256;) {
      uint32_t hi = lo;
      while (hi + 1 < 256 && row[hi + 1] == row[lo]) ++hi;
      if (row[lo] != 0) {
        nfa.AddRange(state_of[s], static_cast<uint8_t>(lo), static_cast<uint8_t>(hi),
                     state_of[row[lo]]);
      }
      lo = hi + 1;
    }
    if (dfa.accepting[s]) nfa.AddEpsilon(state_of[s], end);
  }
  return end;
}

}  // namespace zapgram::grammar
