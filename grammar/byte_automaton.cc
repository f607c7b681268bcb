#include "grammar/byte_automaton.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
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

uint32_t ByteNfa::Stamp(uint32_t from, const ByteNfa& other, uint32_t other_end) {
  const uint32_t offset = num_states() - 1;  // other's state s >= 1 becomes s + offset
  for (uint32_t s = 1; s < other.num_states(); ++s) AddState();
  auto map = [&](uint32_t s) { return s == 0 ? from : s + offset; };
  for (uint32_t s = 0; s < other.num_states(); ++s) {
    for (const Range& r : other.ranges(s)) AddRange(map(s), r.lo, r.hi, map(r.to));
    for (uint32_t t : other.epsilons(s)) AddEpsilon(map(s), map(t));
  }
  return map(other_end);
}

uint32_t ByteNfa::Append(const ByteNfa& other) {
  // A stamp entered at a fresh state: other's state s lands at offset + s.
  const uint32_t offset = AddState();
  Stamp(offset, other, 0);
  for (uint32_t s = 0; s < other.num_states(); ++s) {
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

namespace {

// Appends to `states` (distinct, all marked in `mark`) every state their
// epsilon moves reach, marking it; the marks are left set. `stack` is
// scratch.
void GrowByEpsilons(const ByteNfa& nfa, std::vector<uint32_t>& states, std::vector<uint8_t>& mark,
                    std::vector<uint32_t>& stack) {
  stack.assign(states.begin(), states.end());
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
}

}  // namespace

void EpsilonClosure(const ByteNfa& nfa, std::vector<uint32_t>& states, std::vector<uint8_t>& mark) {
  std::vector<uint32_t> stack;
  for (uint32_t s : states) mark[s] = 1;
  GrowByEpsilons(nfa, states, mark, stack);
  for (uint32_t s : states) mark[s] = 0;
  std::sort(states.begin(), states.end());
}

namespace {

// The subsets of a subset construction, back to back in one pool (subset
// k is pool[begin[k] .. begin[k + 1])), and a hash set of their indices that
// hashes and compares the subsets themselves: a subset is stored once, with
// no allocation of its own (a map keyed by vectors stored each twice).
// Hashes are not kept (a word per subset raised the peak RSS of schemas
// with large automata by megabytes): the hash is a multiply-xorshift of a
// few instructions per state, cheap to recompute when the table grows.
class SubsetPool {
 public:
  SubsetPool() : index_(0, Hash{this}, Eq{this}) {}
  SubsetPool(const SubsetPool&) = delete;
  SubsetPool& operator=(const SubsetPool&) = delete;
  size_t size() const { return begin_.size() - 1; }
  // Room for `subsets` subsets before the index grows.
  void Reserve(size_t subsets) { index_.reserve(subsets); }
  absl::Span<const uint32_t> operator[](size_t k) const {
    return absl::MakeConstSpan(pool_.data() + begin_[k], begin_[k + 1] - begin_[k]);
  }
  // The index of `subset` (sorted), and whether it is new (then added).
  std::pair<uint32_t, bool> Insert(const std::vector<uint32_t>& subset) {
    const uint32_t k = static_cast<uint32_t>(size());
    pool_.insert(pool_.end(), subset.begin(), subset.end());
    begin_.push_back(static_cast<uint32_t>(pool_.size()));
    auto [it, inserted] = index_.insert(k);
    if (!inserted) {
      begin_.pop_back();
      pool_.resize(begin_.back());
    }
    return {*it, inserted};
  }

 private:
  // Multiply-xorshift over the states, then a final mix (the table takes
  // its slot from the high bits and a tag from the low 7).
  static size_t HashOf(absl::Span<const uint32_t> subset) {
    uint64_t h = subset.size();
    for (uint32_t x : subset) {
      h = (h ^ x) * 0x9E3779B97F4A7C15ull;
      h ^= h >> 29;
    }
    h *= 0xBF58476D1CE4E5B9ull;
    return static_cast<size_t>(h ^ (h >> 32));
  }
  struct Hash {
    const SubsetPool* pool;
    size_t operator()(uint32_t k) const { return HashOf((*pool)[k]); }
  };
  struct Eq {
    const SubsetPool* pool;
    bool operator()(uint32_t a, uint32_t b) const { return (*pool)[a] == (*pool)[b]; }
  };
  std::vector<uint32_t> pool_;
  std::vector<uint32_t> begin_ = {0};
  absl::flat_hash_set<uint32_t, Hash, Eq> index_;
};

}  // namespace

std::vector<uint8_t> StatesReachingAcceptance(const std::vector<uint8_t>& accepting,
                                              const std::vector<uint32_t>& begin,
                                              const std::vector<uint32_t>& preds) {
  const uint32_t n = static_cast<uint32_t>(accepting.size());
  std::vector<uint8_t> useful(n, 0);
  std::vector<uint32_t> stack;
  for (uint32_t s = 1; s < n; ++s) {
    if (accepting[s]) {
      useful[s] = 1;
      stack.push_back(s);
    }
  }
  while (!stack.empty()) {
    const uint32_t s = stack.back();
    stack.pop_back();
    for (uint32_t k = begin[s]; k < begin[s + 1]; ++k) {
      const uint32_t p = preds[k];
      if (!useful[p]) {
        useful[p] = 1;
        stack.push_back(p);
      }
    }
  }
  return useful;
}

absl::StatusOr<ClassDfa> DeterminizeToClasses(const ByteNfa& nfa, uint32_t max_states) {
  // Bytes that no range of the NFA tells apart share one class; classes of
  // a fresh partition refined by ranges are intervals numbered in byte
  // order, so a range covers the classes class_of(lo)..class_of(hi). The
  // subset construction and the trim run per class (JSON-like terminals
  // have a dozen or two); the result stays in classes (ClassDfa).
  ByteClassPartition classes;
  classes.RefineByRanges(nfa);
  const uint32_t num_classes = classes.num_classes();

  // Subsets hold only the NFA states that matter to a DFA state: those with
  // a byte range or accepting (Thompson's joins and splits are pure epsilon
  // and never change what a subset does). A range target's closure,
  // restricted to those states, is computed once and kept (up to a budget
  // of entries; past it, computed each time), where the plain subset
  // construction recomputed it for every subset and class that reached it.
  const uint32_t nfa_states = nfa.num_states();
  std::vector<uint8_t> mark(nfa_states, 0);
  constexpr uint32_t kNotKept = 0xFFFFFFFFu;
  constexpr size_t kMaxKeptEntries = size_t{1} << 24;
  std::vector<uint32_t> kept_begin(nfa_states, kNotKept), kept_size(nfa_states, 0), kept;
  std::vector<uint32_t> closure, stack;
  auto important = [&](uint32_t s) { return nfa.accepting(s) || !nfa.ranges(s).empty(); };
  // Appends the important states of `s`'s closure to `out`, sorted and
  // distinct: one closure is a subset as it stands, while callers that
  // gather several normalize what they gathered.
  auto append_closure = [&](uint32_t s, std::vector<uint32_t>& out) {
    if (kept_begin[s] != kNotKept) {
      out.insert(out.end(), kept.begin() + kept_begin[s], kept.begin() + kept_begin[s] + kept_size[s]);
      return;
    }
    closure.assign(1, s);
    mark[s] = 1;
    GrowByEpsilons(nfa, closure, mark, stack);
    const size_t before = out.size();
    for (uint32_t x : closure) {
      mark[x] = 0;
      if (important(x)) out.push_back(x);
    }
    std::sort(out.begin() + before, out.end());
    if (kept.size() + (out.size() - before) <= kMaxKeptEntries) {
      kept_begin[s] = static_cast<uint32_t>(kept.size());
      kept_size[s] = static_cast<uint32_t>(out.size() - before);
      kept.insert(kept.end(), out.begin() + before, out.end());
    }
  };
  // Sorted and without repeats, in place (`mark` is left all zero).
  auto normalize = [&](std::vector<uint32_t>& set) {
    size_t k = 0;
    for (uint32_t x : set) {
      if (!mark[x]) {
        mark[x] = 1;
        set[k++] = x;
      }
    }
    set.resize(k);
    for (uint32_t x : set) mark[x] = 0;
    std::sort(set.begin(), set.end());
  };

  // State 0 is dead, 1 the start; `next` holds num_classes entries per state.
  std::vector<uint32_t> next(2 * num_classes, 0);
  // Room for as many DFA states as the NFA has (within the cap, and at
  // most 16 MiB), which regex DFAs seldom exceed: the table is not copied
  // as it grows (a table left much smaller than its room is copied once,
  // at the end).
  constexpr size_t kMaxReservedEntries = size_t{1} << 22;
  next.reserve(std::min(size_t{std::min(nfa_states, max_states) + 1} * num_classes, kMaxReservedEntries));
  std::vector<uint8_t> accepting(2, 0);
  SubsetPool subsets;  // subset k is DFA state k + 1
  subsets.Reserve(std::min(nfa_states, max_states) / 2);
  std::vector<uint32_t> start;
  append_closure(0, start);
  normalize(start);
  subsets.Insert(start);

  // One state's ranges as spans of classes. Between two consecutive span
  // ends the same spans cover every class ("a segment"), so the classes of
  // a segment share their raw targets and their DFA target, which is
  // computed once, at the segment's first class; segments are met in class
  // order, as new states are numbered by first discovery.
  struct Span {
    uint32_t first, last, to;  // classes first..last go to NFA state `to`
  };
  std::vector<Span> spans;
  std::vector<uint32_t> active;  // indices of the spans covering the segment
  std::vector<uint32_t> raw, t;
  // The distinct raw targets of this state's segments so far and where they
  // led (up to kSeen of them): segments often move alike (the bytes of a
  // string body between its escapes), and equal targets give the same state
  // without a closure or a lookup.
  constexpr size_t kSeen = 8;
  std::vector<std::vector<uint32_t>> seen_raw(kSeen);
  std::array<uint32_t, kSeen> seen_to{};
  size_t seen = 0;
  // Live transitions (target, source), for the trim's reverse edges, each
  // pair once: segments that repeat a target seen from this state add no
  // edge.
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  for (size_t i = 0; i < subsets.size(); ++i) {
    const uint32_t id = static_cast<uint32_t>(i + 1);
    spans.clear();
    seen = 0;
    bool is_accepting = false;
    for (uint32_t s : subsets[i]) {
      is_accepting |= nfa.accepting(s);
      for (const ByteNfa::Range& r : nfa.ranges(s)) {
        spans.push_back({classes.class_of(r.lo), classes.class_of(r.hi), r.to});
      }
    }
    accepting[id] = is_accepting;
    std::sort(spans.begin(), spans.end(), [](const Span& x, const Span& y) { return x.first < y.first; });
    active.clear();
    size_t next_span = 0;
    uint32_t c = spans.empty() ? num_classes : spans[0].first;
    while (c < num_classes) {
      while (next_span < spans.size() && spans[next_span].first == c) active.push_back(next_span++);
      // The segment [c, end): up to the next span's start or an active span's end.
      uint32_t end = next_span < spans.size() ? spans[next_span].first : num_classes;
      raw.clear();
      for (uint32_t a : active) {
        end = std::min(end, spans[a].last + 1);
        raw.push_back(spans[a].to);
      }
      if (!raw.empty()) {
        normalize(raw);
        size_t same = 0;
        while (same < seen && seen_raw[same] != raw) ++same;
        uint32_t to = 0;
        if (same < seen) {
          to = seen_to[same];
        } else {
          t.clear();
          for (uint32_t x : raw) append_closure(x, t);
          const bool one_closure = raw.size() == 1;  // then `t` is sorted and distinct
          // Remembered in the next free slot (past kSeen, in the last one).
          const size_t slot = std::min(seen, kSeen - 1);
          seen = std::min(seen + 1, kSeen);
          seen_raw[slot].swap(raw);
          seen_to[slot] = 0;
          if (!t.empty()) {  // else nothing matters past here: dead
            if (!one_closure) normalize(t);
            const auto [k, inserted] = subsets.Insert(t);
            if (inserted) {
              if (subsets.size() + 1 > max_states) {  // the new subset and the dead state
                return absl::ResourceExhaustedError(absl::StrCat(
                    "terminal automaton exceeds the state limit (max_dfa_states = ", max_states,
                    ")"));
              }
              next.resize(next.size() + num_classes, 0);
              accepting.push_back(0);
            }
            to = k + 1;
            seen_to[slot] = to;
            edges.push_back({to, id});
          }
        }
        if (to != 0) std::fill_n(&next[size_t{id} * num_classes + c], end - c, to);
      }
      c = end;
      // Drop the spans that ended; jump over classes no span covers.
      size_t kept = 0;
      for (uint32_t a : active) {
        if (spans[a].last >= c) active[kept++] = a;
      }
      active.resize(kept);
      if (active.empty() && next_span < spans.size()) c = std::max(c, spans[next_span].first);
      if (active.empty() && next_span == spans.size()) break;
    }
  }

  // Trim: keep states from which an accepting state is reachable.
  // Reverse edges from the live transitions recorded above (transitions
  // into the dead state are left out: nothing walks back from it; an edge
  // met again under a class past the remembered targets is listed again,
  // which the walk ignores).
  const uint32_t n = static_cast<uint32_t>(accepting.size());
  std::vector<uint32_t> reverse_begin(n + 1, 0), reverse(edges.size());
  for (const auto& [to, from] : edges) ++reverse_begin[to + 1];
  for (uint32_t s = 0; s < n; ++s) reverse_begin[s + 1] += reverse_begin[s];
  {
    std::vector<uint32_t> fill(reverse_begin.begin(), reverse_begin.end() - 1);
    for (const auto& [to, from] : edges) reverse[fill[to]++] = from;
  }
  const std::vector<uint8_t> useful = StatesReachingAcceptance(accepting, reverse_begin, reverse);
  ClassDfa trimmed;
  for (uint32_t b = 0; b < 256; ++b) trimmed.class_of[b] = classes.class_of(static_cast<uint8_t>(b));
  trimmed.num_classes = num_classes;
  trimmed.accepting.push_back(0);
  if (!useful[1]) {
    trimmed.next.assign(num_classes, 0);
    return trimmed;
  }
  if (std::all_of(useful.begin() + 1, useful.end(), [](uint8_t u) { return u != 0; })) {
    // Nothing to trim (the usual case): the table as built, numbers kept.
    if (next.capacity() > 2 * next.size()) next.shrink_to_fit();
    trimmed.next = std::move(next);
    trimmed.accepting = std::move(accepting);
    return trimmed;
  }
  std::vector<uint32_t> renumber(n, 0);
  for (uint32_t s = 1; s < n; ++s) {
    if (useful[s]) {
      renumber[s] = static_cast<uint32_t>(trimmed.accepting.size());
      trimmed.accepting.push_back(accepting[s]);
    }
  }
  trimmed.next.assign(size_t{trimmed.num_states()} * num_classes, 0);
  for (uint32_t s = 1; s < n; ++s) {
    if (!useful[s]) continue;
    uint32_t* row = &trimmed.next[size_t{renumber[s]} * num_classes];
    for (uint32_t c = 0; c < num_classes; ++c) row[c] = renumber[next[size_t{s} * num_classes + c]];
  }
  return trimmed;
}

absl::StatusOr<ByteDfa> Determinize(const ByteNfa& nfa, uint32_t max_states) {
  absl::StatusOr<ClassDfa> dfa = DeterminizeToClasses(nfa, max_states);
  if (!dfa.ok()) return dfa.status();
  return dfa->Widen();
}

absl::StatusOr<ByteDfa> WithoutEmptyString(const ByteDfa& dfa, uint32_t max_states) {
  absl::StatusOr<ClassDfa> out = WithoutEmptyString(ClassDfa::Narrow(dfa), max_states);
  if (!out.ok()) return out.status();
  return out->Widen();
}

absl::StatusOr<ClassDfa> WithoutEmptyString(const ClassDfa& dfa, uint32_t max_states) {
  // The subset construction of "a new start with the old start's ranges,
  // then the DFA" meets only singletons (the NFA is deterministic) and
  // numbers them by first discovery, subsets in order and byte classes in
  // byte order (the classes of an NFA made of DFA rows are intervals, each
  // mapped to one target by every row): the walk below, one step per class
  // of `dfa` (its classes in order of their smallest bytes, so targets are
  // met first in the same order as by bytes). In a trimmed DFA every
  // reached state can still accept, so nothing is trimmed; a start with no
  // live byte leaves the empty language.
  const uint32_t k = dfa.num_classes;
  ClassDfa out;
  out.class_of = dfa.class_of;
  out.num_classes = k;
  out.next.assign(k, 0);
  out.accepting.push_back(0);
  if (dfa.empty()) return out;
  const uint32_t* start_row = &dfa.next[size_t{k}];
  if (std::all_of(start_row, start_row + k, [](uint32_t to) { return to == 0; })) return out;
  std::vector<uint32_t> id(dfa.num_states(), 0);  // old state -> new number (0: not reached)
  std::vector<uint32_t> old_of = {0, 1};          // new number -> old state (1: the new start's row)
  // Rows are mostly dead: only live columns are visited (in order, so
  // states are still met in class order), and dead entries stay as
  // resize left them.
  bool over_limit = false;
  for (uint32_t i = 1; i < old_of.size() && !over_limit; ++i) {
    ForEachLiveColumn(&dfa.next[size_t{old_of[i]} * k], k, [&](uint32_t, uint32_t to) {
      if (id[to] != 0 || over_limit) return;
      if (old_of.size() + 1 > max_states) {
        over_limit = true;
        return;
      }
      id[to] = static_cast<uint32_t>(old_of.size());
      old_of.push_back(to);
    });
  }
  if (over_limit) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "terminal automaton exceeds the state limit (max_dfa_states = ", max_states, ")"));
  }
  out.next.resize(old_of.size() * size_t{k});
  out.accepting.resize(old_of.size(), 0);
  for (uint32_t i = 1; i < old_of.size(); ++i) {
    uint32_t* row = &out.next[size_t{i} * k];
    ForEachLiveColumn(&dfa.next[size_t{old_of[i]} * k], k,
                      [&](uint32_t c, uint32_t to) { row[c] = id[to]; });
    out.accepting[i] = i == 1 ? 0 : dfa.accepting[old_of[i]];
  }
  return out;
}

ByteDfa ClassDfa::Widen() const {
  ByteDfa out;
  out.accepting = accepting;
  out.next.resize(accepting.size());
  for (uint32_t s = 0; s < num_states(); ++s) {
    const uint32_t* row = &next[size_t{s} * num_classes];
    std::array<uint32_t, 256>& wide = out.next[s];
    for (uint32_t b = 0; b < 256; ++b) wide[b] = row[class_of[b]];
  }
  return out;
}

ClassDfa ClassDfa::Narrow(const ByteDfa& dfa) {
  ByteClassPartition columns;
  for (uint32_t s = 1; s < dfa.num_states() && !columns.all_distinct(); ++s) {
    columns.Refine(dfa.next[s]);
  }
  const std::vector<uint8_t> representative = columns.Representatives();
  ClassDfa out;
  for (uint32_t b = 0; b < 256; ++b) out.class_of[b] = columns.class_of(static_cast<uint8_t>(b));
  out.num_classes = static_cast<uint32_t>(representative.size());
  out.accepting = dfa.accepting;
  out.next.resize(size_t{dfa.num_states()} * out.num_classes);
  for (uint32_t s = 0; s < dfa.num_states(); ++s) {
    for (uint32_t c = 0; c < out.num_classes; ++c) {
      out.next[size_t{s} * out.num_classes + c] = dfa.next[s][representative[c]];
    }
  }
  return out;
}

absl::StatusOr<ByteDfa> LiteralDfa(std::string_view bytes) {
  ByteNfa nfa;
  nfa.SetAccepting(nfa.AddLiteral(0, bytes));
  return Determinize(nfa, static_cast<uint32_t>(bytes.size() + 8));
}

ClassDfa LiteralClassDfa(std::string_view bytes) {
  std::array<bool, 256> in_literal{};
  for (const char c : bytes) in_literal[static_cast<uint8_t>(c)] = true;
  ClassDfa out;
  out.num_classes = 0;
  int other_class = -1;  // the class of the bytes absent from `bytes`
  for (uint32_t b = 0; b < 256; ++b) {
    if (in_literal[b]) {
      out.class_of[b] = static_cast<uint8_t>(out.num_classes++);
    } else {
      if (other_class < 0) other_class = static_cast<int>(out.num_classes++);
      out.class_of[b] = static_cast<uint8_t>(other_class);
    }
  }
  const uint32_t num_states = static_cast<uint32_t>(bytes.size()) + 2;
  out.next.assign(size_t{num_states} * out.num_classes, 0);
  out.accepting.assign(num_states, 0);
  for (uint32_t i = 0; i < bytes.size(); ++i) {
    const uint32_t state = i + 1;
    out.next[size_t{state} * out.num_classes + out.class_of[static_cast<uint8_t>(bytes[i])]] =
        state + 1;
  }
  out.accepting[num_states - 1] = 1;
  return out;
}

absl::StatusOr<ByteDfa> CodepointClassDfa(const std::vector<CodepointRange>& ranges) {
  ByteNfa nfa;
  nfa.SetAccepting(nfa.AddCodepoints(0, ranges));
  return Determinize(nfa, 1u << 16);
}

void ByteClassPartition::Refine(const std::array<uint32_t, 256>& row) {
  // A class splits only where one of its bytes sees another value than the
  // class's smallest byte. Most rows of a table split nothing once a few
  // rows have been seen: for them this is one compare per byte.
  bool splits = false;
  for (uint32_t b = 0; b < 256; ++b) splits |= row[b] != row[smallest_in_class_[b]];
  if (!splits) return;
  // New classes are numbered by first appearance in byte order (so by
  // smallest byte); each old class chains its (value, new class) entries,
  // and an entry's index is its new class.
  std::array<int16_t, 256> head;
  head.fill(-1);
  std::array<int16_t, 256> chain;
  std::array<uint32_t, 256> value;
  std::array<uint8_t, 256> smallest;
  int16_t count = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    const uint32_t c = class_[b];
    int16_t e = head[c];
    while (e >= 0 && value[e] != row[b]) e = chain[e];
    if (e < 0) {
      e = count++;
      value[e] = row[b];
      chain[e] = head[c];
      head[c] = e;
      smallest[e] = static_cast<uint8_t>(b);
    }
    class_[b] = static_cast<uint32_t>(e);
    smallest_in_class_[b] = smallest[e];
  }
  num_classes_ = static_cast<uint32_t>(count);
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
  if (num_classes_ > 1) return Refine(interval);
  // One class so far (a fresh partition, as determinization's): the
  // intervals are the classes, numbered in byte order as Refine would
  // number them, without its per-byte search of the new classes.
  const uint32_t first = interval[0];
  uint8_t smallest = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    if (b > 0 && interval[b] != interval[b - 1]) smallest = static_cast<uint8_t>(b);
    class_[b] = interval[b] - first;
    smallest_in_class_[b] = smallest;
  }
  num_classes_ = interval[255] - first + 1;
}

std::vector<uint8_t> ByteClassPartition::Representatives() const {
  std::vector<uint8_t> out;
  for (uint32_t b = 0; b < 256; ++b) {
    if (class_[b] == out.size()) out.push_back(static_cast<uint8_t>(b));
  }
  return out;
}

}  // namespace zapgram::grammar
