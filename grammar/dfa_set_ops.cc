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

// A product reads its operands one column at a time: a column stands for
// the bytes of one class (columns in order of their smallest bytes, which is
// what it reads them by), so pairs are discovered in the same order as by
// bytes. Plain DFAs are read by byte (256 columns); two class DFAs by their
// joint classes.
struct Columns {
  std::array<uint8_t, 256> class_of{};
  std::vector<uint8_t> first_byte;  // per column

  static Columns AllBytes() {
    Columns c;
    for (uint32_t b = 0; b < 256; ++b) {
      c.class_of[b] = static_cast<uint8_t>(b);
      c.first_byte.push_back(static_cast<uint8_t>(b));
    }
    return c;
  }
  // Bytes in one class of both `x` and `y`.
  static Columns Joint(const std::array<uint8_t, 256>& x, const std::array<uint8_t, 256>& y) {
    Columns c;
    absl::flat_hash_map<uint32_t, uint8_t> column_of;  // (x class, y class) -> column
    for (uint32_t b = 0; b < 256; ++b) {
      const auto [it, fresh] = column_of.try_emplace(
          (uint32_t{x[b]} << 8) | y[b], static_cast<uint8_t>(c.first_byte.size()));
      if (fresh) c.first_byte.push_back(static_cast<uint8_t>(b));
      c.class_of[b] = it->second;
    }
    return c;
  }
};

// A deterministic automaton read by byte over uint64 states in which 0 is
// dead and stays dead: a DFA in either form, or a counted one below.
class PlainOperand {
 public:
  explicit PlainOperand(const ByteDfa& dfa) : wide_(&dfa) {}
  explicit PlainOperand(const ClassDfa& dfa) : classes_(&dfa) {}
  bool Empty() const { return wide_ != nullptr ? wide_->empty() : classes_->empty(); }
  uint64_t Start() const { return Empty() ? 0 : 1; }
  uint64_t Next(uint64_t s, uint8_t byte) const {
    if (s == 0) return 0;
    return wide_ != nullptr ? wide_->next[static_cast<size_t>(s)][byte]
                            : classes_->step(static_cast<uint32_t>(s), classes_->class_of[byte]);
  }
  bool Accepting(uint64_t s) const {
    if (s == 0) return false;
    return (wide_ != nullptr ? wide_->accepting : classes_->accepting)[static_cast<size_t>(s)];
  }

 private:
  const ByteDfa* wide_ = nullptr;
  const ClassDfa* classes_ = nullptr;
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
ClassDfa Trim(const ClassDfa& dfa) {
  const uint32_t n = dfa.num_states(), k = dfa.num_classes;
  // Predecessors (one per run of live columns with one target; a pair met
  // again is listed again, which the walk ignores), compressed.
  std::vector<uint32_t> begin(n + 1, 0), preds;
  auto each_edge = [&](auto visit) {
    for (uint32_t s = 1; s < n; ++s) {
      uint32_t last = 0;
      ForEachLiveColumn(&dfa.next[size_t{s} * k], k, [&](uint32_t, uint32_t t) {
        if (t != last) visit(s, t);
        last = t;
      });
    }
  };
  each_edge([&](uint32_t, uint32_t t) { ++begin[t + 1]; });
  for (uint32_t s = 0; s < n; ++s) begin[s + 1] += begin[s];
  preds.resize(begin[n]);
  std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
  each_edge([&](uint32_t s, uint32_t t) { preds[fill[t]++] = s; });
  const std::vector<uint8_t> useful = StatesReachingAcceptance(dfa.accepting, begin, preds);
  ClassDfa out;
  out.class_of = dfa.class_of;
  out.num_classes = k;
  out.accepting.push_back(0);
  if (n < 2 || !useful[1]) {
    out.next.assign(k, 0);
    return out;
  }
  std::vector<uint32_t> renumber(n, 0);
  for (uint32_t s = 1; s < n; ++s) {
    if (!useful[s]) continue;
    renumber[s] = out.num_states();
    out.accepting.push_back(dfa.accepting[s]);
  }
  out.next.assign(size_t{out.num_states()} * k, 0);
  for (uint32_t s = 1; s < n; ++s) {
    if (!useful[s]) continue;
    uint32_t* row = &out.next[size_t{renumber[s]} * k];
    ForEachLiveColumn(&dfa.next[size_t{s} * k], k,
                      [&](uint32_t c, uint32_t t) { row[c] = renumber[t]; });
  }
  return out;
}

// The product of `a` and `b` over `columns`, trimmed, in those columns.
template <typename Operand>
absl::StatusOr<ClassDfa> Product(const PlainOperand& a, const Operand& b, const Columns& columns,
                                Combine combine, uint32_t max_states) {
  const uint32_t k = static_cast<uint32_t>(columns.first_byte.size());
  ClassDfa out;
  out.class_of = columns.class_of;
  out.num_classes = k;
  out.next.assign(k, 0);
  out.accepting.push_back(0);
  if (a.Empty()) return out;
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
      out.next.resize(out.next.size() + k, 0);
      const bool b_accepts = b.Accepting(p.second);
      out.accepting.push_back(a.Accepting(p.first) &&
                              (combine == Combine::kIntersect ? b_accepts : !b_accepts));
    }
    return it->second;
  };
  absl::StatusOr<uint32_t> start = intern({1, b.Start()});
  if (!start.ok()) return start.status();
  if (*start == 0) return out;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Pair at = pairs[i];
    const size_t row = (i + 1) * k;
    Pair last = {0, 0};
    uint32_t last_id = 0;
    for (uint32_t c = 0; c < k; ++c) {
      const uint8_t byte = columns.first_byte[c];
      const uint32_t a_next = static_cast<uint32_t>(a.Next(at.first, byte));
      if (a_next == 0) continue;
      const Pair to = {a_next, b.Next(at.second, byte)};
      if (to != last || last_id == 0) {
        absl::StatusOr<uint32_t> to_id = intern(to);
        if (!to_id.ok()) return to_id.status();
        last = to;
        last_id = *to_id;
      }
      out.next[row + c] = last_id;
    }
  }
  return Trim(out);
}

absl::StatusOr<ByteDfa> Widened(absl::StatusOr<ClassDfa> dfa) {
  if (!dfa.ok()) return dfa.status();
  return dfa->Widen();
}

}  // namespace

absl::StatusOr<ByteDfa> IntersectDfas(const ByteDfa& a, const ByteDfa& b, uint32_t max_states) {
  return Widened(Product(PlainOperand(a), PlainOperand(b), Columns::AllBytes(),
                         Combine::kIntersect, max_states));
}

absl::StatusOr<ByteDfa> SubtractDfa(const ByteDfa& universe, const ByteDfa& removed,
                                    uint32_t max_states) {
  return Widened(Product(PlainOperand(universe), PlainOperand(removed), Columns::AllBytes(),
                         Combine::kSubtract, max_states));
}

absl::StatusOr<ClassDfa> SubtractDfa(const ClassDfa& universe, const ClassDfa& removed,
                                     uint32_t max_states) {
  return Product(PlainOperand(universe), PlainOperand(removed),
                 Columns::Joint(universe.class_of, removed.class_of), Combine::kSubtract,
                 max_states);
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
  return Widened(Product(PlainOperand(a), CountedOperand(one_codepoint, min, max),
                         Columns::AllBytes(), Combine::kIntersect, max_states));
}

uint32_t StampDfa(ByteNfa& nfa, uint32_t from, const ClassDfa& dfa) {
  const uint32_t end_of_empty = nfa.AddState();
  if (dfa.empty()) return end_of_empty;  // nothing reaches it
  // The start gets a fresh state reached by an epsilon move, so that edges
  // back into the start never enter `from` (see regex_compiler.cc, Emit).
  std::vector<uint32_t> state_of(dfa.num_states(), 0);
  for (uint32_t s = 1; s < dfa.num_states(); ++s) state_of[s] = nfa.AddState();
  nfa.AddEpsilon(from, state_of[1]);
  const uint32_t end = end_of_empty;
  // The maximal byte runs inside one class, in byte order: a row's ranges
  // join consecutive runs with the same target, as a scan of its 256 bytes
  // would, in a few dozen steps.
  struct Run {
    uint8_t lo, hi, cls;
  };
  std::vector<Run> runs;
  for (uint32_t b = 0; b < 256; ++b) {
    if (b > 0 && dfa.class_of[b] == dfa.class_of[b - 1]) {
      runs.back().hi = static_cast<uint8_t>(b);
    } else {
      runs.push_back({static_cast<uint8_t>(b), static_cast<uint8_t>(b), dfa.class_of[b]});
    }
  }
  for (uint32_t s = 1; s < dfa.num_states(); ++s) {
    for (size_t i = 0; i < runs.size();) {
      const uint32_t to = dfa.step(s, runs[i].cls);
      size_t j = i + 1;
      while (j < runs.size() && dfa.step(s, runs[j].cls) == to) ++j;
      if (to != 0) nfa.AddRange(state_of[s], runs[i].lo, runs[j - 1].hi, state_of[to]);
      i = j;
    }
    if (dfa.accepting[s]) nfa.AddEpsilon(state_of[s], end);
  }
  return end;
}

}  // namespace zapgram::grammar
