#include "grammar/byte_automaton.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "grammar/utf8.h"

namespace zapgram::grammar {

uint32_t ByteNfa::AddState() {
  ranges_.emplace_back();
  epsilons_.emplace_back();
  accepting_.push_back(0);
  return static_cast<uint32_t>(ranges_.size() - 1);
}

void ByteNfa::AddRange(uint32_t from, uint8_t lo, uint8_t hi, uint32_t to) {
  ranges_[from].push_back({lo, hi, to});
}

void ByteNfa::AddEpsilon(uint32_t from, uint32_t to) { epsilons_[from].push_back(to); }

uint32_t ByteNfa::AddLiteral(uint32_t from, std::string_view bytes) {
  uint32_t at = from;
  for (char c : bytes) {
    uint32_t to = AddState();
    uint8_t b = static_cast<uint8_t>(c);
    AddRange(at, b, b, to);
    at = to;
  }
  if (at == from) {
    uint32_t to = AddState();
    AddEpsilon(from, to);
    at = to;
  }
  return at;
}

uint32_t ByteNfa::AddCodepoints(uint32_t from, const std::vector<CodepointRange>& ranges) {
  uint32_t end = AddState();
  // Share the states of common leading byte ranges between sequences: a
  // small trie keyed by (state, lo, hi) keeps the NFA (and so the subset
  // construction) small for classes with many ranges.
  absl::flat_hash_map<std::tuple<uint32_t, uint8_t, uint8_t>, uint32_t> trie;
  for (const CodepointRange& r : ranges) {
    for (const std::vector<ByteRange>& seq : Utf8Sequences(r.lo, r.hi)) {
      uint32_t at = from;
      for (size_t i = 0; i < seq.size(); ++i) {
        if (i + 1 == seq.size()) {
          AddRange(at, seq[i].lo, seq[i].hi, end);
          break;
        }
        auto key = std::make_tuple(at, seq[i].lo, seq[i].hi);
        auto it = trie.find(key);
        if (it == trie.end()) {
          uint32_t to = AddState();
          AddRange(at, seq[i].lo, seq[i].hi, to);
          it = trie.emplace(key, to).first;
        }
        at = it->second;
      }
    }
  }
  return end;
}

uint32_t ByteNfa::Append(const ByteNfa& other) {
  const uint32_t offset = num_states();
  for (uint32_t s = 0; s < other.num_states(); ++s) {
    AddState();
    for (const Range& r : other.ranges(s)) AddRange(offset + s, r.lo, r.hi, offset + r.to);
    for (uint32_t t : other.epsilons(s)) AddEpsilon(offset + s, offset + t);
    if (other.accepting(s)) SetAccepting(offset + s);
  }
  return offset;
}

bool ByteDfa::Matches(std::string_view bytes) const {
  if (empty()) return false;
  uint32_t s = 1;
  for (char c : bytes) {
    s = next[s][static_cast<uint8_t>(c)];
    if (s == 0) return false;
  }
  return accepting[s] != 0;
}

void EpsilonClosure(const ByteNfa& nfa, std::vector<uint32_t>& states, std::vector<uint8_t>& mark) {
  std::vector<uint32_t> stack(states.begin(), states.end());
  for (uint32_t s : states) mark[s] = 1;
  while (!stack.empty()) {
    uint32_t s = stack.back();
    stack.pop_back();
    for (uint32_t t : nfa.epsilons(s)) {
      if (!mark[t]) {
        mark[t] = 1;
        states.push_back(t);
        stack.push_back(t);
      }
    }
  }
  for (uint32_t s : states) mark[s] = 0;
  std::sort(states.begin(), states.end());
}

namespace {

struct VectorHash {
  size_t operator()(const std::vector<uint32_t>& v) const {
    return absl::HashOf(absl::MakeConstSpan(v));
  }
};

}  // namespace

absl::StatusOr<ByteDfa> Determinize(const ByteNfa& nfa, uint32_t max_states) {
  ByteDfa dfa;
  dfa.next.push_back({});  // dead
  dfa.accepting.push_back(0);
  std::vector<uint8_t> mark(nfa.num_states(), 0);
  absl::flat_hash_map<std::vector<uint32_t>, uint32_t, VectorHash> ids;
  std::vector<std::vector<uint32_t>> subsets;

  std::vector<uint32_t> start = {0};
  EpsilonClosure(nfa, start, mark);
  ids.emplace(start, 1);
  subsets.push_back(start);
  dfa.next.push_back({});
  dfa.accepting.push_back(0);

  // Per byte, the NFA targets; rebuilt for each DFA state.
  std::array<std::vector<uint32_t>, 256> targets;
  for (size_t i = 0; i < subsets.size(); ++i) {
    uint32_t id = static_cast<uint32_t>(i + 1);
    for (auto& t : targets) t.clear();
    bool accepting = false;
    for (uint32_t s : subsets[i]) {
      accepting |= nfa.accepting(s);
      for (const ByteNfa::Range& r : nfa.ranges(s)) {
        for (uint32_t b = r.lo; b <= r.hi; ++b) targets[b].push_back(r.to);
      }
    }
    dfa.accepting[id] = accepting;
    for (uint32_t b = 0; b < 256; ++b) {
      std::vector<uint32_t>& t = targets[b];
      if (t.empty()) continue;
      std::sort(t.begin(), t.end());
      t.erase(std::unique(t.begin(), t.end()), t.end());
      EpsilonClosure(nfa, t, mark);
      auto [it, inserted] = ids.emplace(t, static_cast<uint32_t>(subsets.size() + 1));
      if (inserted) {
        if (subsets.size() + 2 > max_states) {
          return absl::ResourceExhaustedError(absl::StrCat(
              "terminal automaton exceeds the state limit (max_dfa_states = ", max_states, ")"));
        }
        subsets.push_back(t);
        dfa.next.push_back({});
        dfa.accepting.push_back(0);
      }
      dfa.next[id][b] = it->second;
    }
  }

  // Trim: keep states from which an accepting state is reachable.
  uint32_t n = dfa.num_states();
  std::vector<std::vector<uint32_t>> reverse(n);
  for (uint32_t s = 1; s < n; ++s) {
    for (uint32_t b = 0; b < 256; ++b) {
      if (dfa.next[s][b]) reverse[dfa.next[s][b]].push_back(s);
    }
  }
  std::vector<uint8_t> useful(n, 0);
  std::vector<uint32_t> stack;
  for (uint32_t s = 1; s < n; ++s) {
    if (dfa.accepting[s]) {
      useful[s] = 1;
      stack.push_back(s);
    }
  }
  while (!stack.empty()) {
    uint32_t s = stack.back();
    stack.pop_back();
    for (uint32_t p : reverse[s]) {
      if (!useful[p]) {
        useful[p] = 1;
        stack.push_back(p);
      }
    }
  }
  if (!useful[1]) {
    ByteDfa empty;
    empty.next.push_back({});
    empty.accepting.push_back(0);
    return empty;
  }
  std::vector<uint32_t> renumber(n, 0);
  ByteDfa trimmed;
  trimmed.next.push_back({});
  trimmed.accepting.push_back(0);
  for (uint32_t s = 1; s < n; ++s) {
    if (useful[s]) {
      renumber[s] = trimmed.num_states();
      trimmed.next.push_back({});
      trimmed.accepting.push_back(dfa.accepting[s]);
    }
  }
  for (uint32_t s = 1; s < n; ++s) {
    if (!useful[s]) continue;
    for (uint32_t b = 0; b < 256; ++b) {
      trimmed.next[renumber[s]][b] = renumber[dfa.next[s][b]];
    }
  }
  return trimmed;
}

absl::StatusOr<ByteDfa> LiteralDfa(std::string_view bytes) {
  ByteNfa nfa;
  nfa.SetAccepting(nfa.AddLiteral(0, bytes));
  return Determinize(nfa, static_cast<uint32_t>(bytes.size() + 8));
}

absl::StatusOr<ByteDfa> CodepointClassDfa(const std::vector<CodepointRange>& ranges) {
  ByteNfa nfa;
  nfa.SetAccepting(nfa.AddCodepoints(0, ranges));
  return Determinize(nfa, 1u << 16);
}

void ByteClassPartition::Refine(const std::array<uint32_t, 256>& row) {
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> refined;
  for (uint32_t b = 0; b < 256; ++b) {
    auto [it, inserted] =
        refined.emplace(std::make_pair(class_[b], row[b]), static_cast<uint32_t>(refined.size()));
    class_[b] = it->second;
  }
  num_classes_ = static_cast<uint32_t>(refined.size());
}

void ByteClassPartition::RefineByRanges(const ByteNfa& nfa) {
  // Bytes between two consecutive range boundaries behave alike everywhere.
  std::array<uint8_t, 257> boundary{};
  for (uint32_t s = 0; s < nfa.num_states(); ++s) {
    for (const ByteNfa::Range& r : nfa.ranges(s)) {
      boundary[r.lo] = 1;
      boundary[r.hi + 1u] = 1;
    }
  }
  std::array<uint32_t, 256> interval{};
  uint32_t index = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    index += boundary[b];
    interval[b] = index;
  }
  Refine(interval);
}

std::vector<uint8_t> ByteClassPartition::Representatives() const {
  std::vector<uint8_t> out;
  for (uint32_t b = 0; b < 256; ++b) {
    if (class_[b] == out.size()) out.push_back(static_cast<uint8_t>(b));
  }
  return out;
}

}  // namespace zapgram::grammar
