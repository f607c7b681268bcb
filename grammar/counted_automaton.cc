// Counted terminals (see the header for the numbering, the walk and the
// classes).
#include "grammar/counted_automaton.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace zapgram::grammar {

namespace {

constexpr uint32_t kInfinite = 0xFFFFFFFFu;

// U with a start state that no transition enters: every transition into
// state 1 goes to a fresh copy of it instead, so that u = 1 means "between
// units" (the copy is an ordinary state inside a unit).
ByteDfa WithFreshStart(ByteDfa u) {
  bool reentered = false;
  for (const std::array<uint32_t, 256>& row : u.next) {
    reentered = reentered || std::find(row.begin(), row.end(), 1u) != row.end();
  }
  if (!reentered) return u;
  const uint32_t copy = u.num_states();
  u.next.push_back(u.next[1]);
  u.accepting.push_back(u.accepting[1]);
  for (std::array<uint32_t, 256>& row : u.next) {
    for (uint32_t& to : row) {
      if (to == 1) to = copy;
    }
  }
  return u;
}

}  // namespace

absl::StatusOr<CountedAutomaton> CountedAutomaton::Build(CountedParts parts) {
  const ByteDfa& u = parts.unit;
  if (u.empty()) return absl::InvalidArgumentError("counted terminal: the unit matches nothing");
  if (u.accepting[1]) return absl::InvalidArgumentError("counted terminal: the unit matches the empty string");
  if (parts.suffix.empty()) return absl::InvalidArgumentError("counted terminal: empty suffix");
  if (parts.min > parts.max) return absl::InvalidArgumentError("counted terminal: min > max");
  const bool body = parts.body.num_states() > 0;
  if (body && parts.body.empty()) return absl::InvalidArgumentError("counted terminal: the body matches nothing");
  if (body && parts.min > 0) {
    return absl::InvalidArgumentError("counted terminal: a minimum beside a body (the body must count it)");
  }
  for (uint32_t s = 1; s < u.num_states(); ++s) {
    if (!u.accepting[s]) continue;
    for (uint32_t b = 0; b < 256; ++b) {
      if (u.next[s][b] != 0) return absl::InvalidArgumentError("counted terminal: the unit is not prefix-free");
    }
  }
  CountedAutomaton a;
  a.parts_ = std::move(parts);
  a.parts_.unit = WithFreshStart(std::move(a.parts_.unit));
  if (absl::Status st = a.BuildWalk(); !st.ok()) return st;
  const uint64_t states = a.parts_.prefix.size() + (uint64_t{a.parts_.max} + 1) * a.walk_states_ +
                          a.parts_.suffix.size();
  if (states >= (uint64_t{1} << 31)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("counted terminal: ", states, " states (bound ", a.parts_.max, ")"));
  }
  a.num_states_ = static_cast<uint32_t>(states);
  a.BuildLiveSets();
  return a;
}

absl::Status CountedAutomaton::BuildWalk() {
  const ByteDfa& u = parts_.unit;
  const ByteDfa& b = parts_.body;
  const bool body = b.num_states() > 0;
  // Pairs (body state, unit state) breadth first; without a body the body
  // state is 0 throughout.
  absl::flat_hash_map<uint64_t, uint32_t> number;
  std::vector<std::pair<uint32_t, uint32_t>> pairs = {{0, 0}};  // index 0: dead
  auto id_of = [&](uint32_t q, uint32_t s) -> uint32_t {
    const uint64_t key = (uint64_t{q} << 32) | s;
    auto [it, fresh] = number.try_emplace(key, static_cast<uint32_t>(pairs.size()));
    if (fresh) pairs.push_back({q, s});
    return it->second;
  };
  id_of(body ? 1 : 0, 1);
  walk_.assign(1, {});
  for (uint32_t k = 1; k < pairs.size(); ++k) {
    if (pairs.size() > kMaxWalkStates + 1) {
      return absl::ResourceExhaustedError(
          absl::StrCat("counted terminal: its walk exceeds ", kMaxWalkStates, " states"));
    }
    const auto [q, s] = pairs[k];
    std::array<uint32_t, 256> row{};
    for (uint32_t byte = 0; byte < 256; ++byte) {
      uint32_t to_unit = u.next[s][byte];
      if (to_unit == 0) continue;
      const uint32_t to_body = body ? b.next[q][byte] : 0;
      if (body && to_body == 0) continue;
      const bool tick = u.accepting[to_unit] != 0;
      if (tick) to_unit = 1;
      row[byte] = id_of(to_body, to_unit) | (tick ? kTick : 0);
    }
    walk_.push_back(row);
  }
  walk_states_ = static_cast<uint32_t>(pairs.size() - 1);
  // Where S may start: a unit boundary the body accepts.
  boundary_accepts_.assign(pairs.size(), 0);
  for (uint32_t k = 1; k < pairs.size(); ++k) {
    boundary_accepts_[k] = pairs[k].second == 1 && (!body || b.accepting[pairs[k].first] != 0);
  }
  // need(k): a 0-1 breadth-first search backwards from those states, a
  // tick weighing 1.
  std::vector<std::vector<std::pair<uint32_t, uint8_t>>> into(pairs.size());
  for (uint32_t k = 1; k < pairs.size(); ++k) {
    for (uint32_t byte = 0; byte < 256; ++byte) {
      const uint32_t e = walk_[k][byte];
      if (e != 0 && (byte == 0 || e != walk_[k][byte - 1])) {
        into[e & ~kTick].push_back({k, (e & kTick) != 0 ? 1 : 0});
      }
    }
  }
  need_.assign(pairs.size(), kInfinite);
  std::deque<uint32_t> queue;
  for (uint32_t k = 1; k < pairs.size(); ++k) {
    if (boundary_accepts_[k]) {
      need_[k] = 0;
      queue.push_back(k);
    }
  }
  while (!queue.empty()) {
    const uint32_t k = queue.front();
    queue.pop_front();
    for (const auto [from, weight] : into[k]) {
      if (need_[k] + weight >= need_[from]) continue;
      need_[from] = need_[k] + weight;
      if (weight == 0) {
        queue.push_front(from);
      } else {
        queue.push_back(from);
      }
    }
  }
  if (need_[1] == kInfinite || need_[1] > parts_.max) {
    return absl::InvalidArgumentError("counted terminal: no string within the bound");
  }
  // States that can never end are not kept as targets (the walk stays trimmed).
  const uint8_t s0 = static_cast<uint8_t>(parts_.suffix[0]);
  max_need_ = 0;
  tick_loops_.assign(pairs.size(), {});
  for (uint32_t k = 1; k < pairs.size(); ++k) {
    if (need_[k] != kInfinite) max_need_ = std::max(max_need_, need_[k]);
    for (uint32_t byte = 0; byte < 256; ++byte) {
      uint32_t& e = walk_[k][byte];
      if (e != 0 && need_[e & ~kTick] == kInfinite) e = 0;
      if (e == (k | kTick)) tick_loops_[k][byte / 64] |= uint64_t{1} << (byte % 64);
    }
    if (boundary_accepts_[k] && walk_[k][s0] != 0) {
      return absl::InvalidArgumentError("counted terminal: the suffix's first byte goes on inside the units");
    }
  }
  return absl::OkStatus();
}

void CountedAutomaton::BuildLiveSets() {
  for (char c : parts_.prefix) {
    prefix_live_.emplace_back();
    prefix_live_.back().set(static_cast<uint8_t>(c));
  }
  const uint8_t s0 = static_cast<uint8_t>(parts_.suffix[0]);
  suffix_only_.set(s0);
  live_from_.assign(walk_states_ + 2, 0);
  for (uint32_t k = 1; k <= walk_states_; ++k) {
    live_from_[k] = static_cast<uint32_t>(live_.size());
    // Per byte, the ticks its step needs from here on: its own and need(target).
    std::vector<std::pair<uint32_t, uint32_t>> by_need;  // (need, byte)
    for (uint32_t byte = 0; byte < 256; ++byte) {
      const uint32_t e = walk_[k][byte];
      if (e == 0) continue;
      by_need.push_back({need_[e & ~kTick] + ((e & kTick) != 0 ? 1 : 0), byte});
    }
    std::sort(by_need.begin(), by_need.end());
    std::bitset<256> so_far;
    for (size_t i = 0; i < by_need.size(); ++i) {
      so_far.set(by_need[i].second);
      if (i + 1 < by_need.size() && by_need[i + 1].first == by_need[i].first) continue;
      LiveSet set{by_need[i].first, so_far, so_far};
      if (boundary_accepts_[k]) set.with_suffix.set(s0);
      live_.push_back(set);
    }
  }
  live_from_[walk_states_ + 1] = static_cast<uint32_t>(live_.size());
  for (size_t j = 1; j < parts_.suffix.size(); ++j) {
    suffix_live_.emplace_back();
    suffix_live_.back().set(static_cast<uint8_t>(parts_.suffix[j]));
  }
  suffix_live_.emplace_back();  // the end: nothing follows
}

uint32_t CountedAutomaton::Step(uint32_t local, uint8_t byte) const {
  const uint32_t p = static_cast<uint32_t>(parts_.prefix.size());
  if (local < p) {
    if (static_cast<uint8_t>(parts_.prefix[local]) != byte) return kDead;
    return local + 1 < p ? local + 1 : Body(0, 1);
  }
  const uint32_t suffix_base = SuffixBase();
  if (local >= suffix_base) {
    const uint32_t j = local - suffix_base + 1;  // suffix bytes read
    if (j >= parts_.suffix.size() || static_cast<uint8_t>(parts_.suffix[j]) != byte) return kDead;
    return local + 1;
  }
  const uint32_t c = (local - p) / walk_states_;
  const uint32_t k = (local - p) % walk_states_ + 1;
  if (boundary_accepts_[k] && c >= parts_.min && byte == static_cast<uint8_t>(parts_.suffix[0])) {
    return suffix_base;
  }
  const uint32_t e = walk_[k][byte];
  if (e == 0) return kDead;
  const uint32_t to = e & ~kTick;
  const uint32_t c2 = c + ((e & kTick) != 0 ? 1 : 0);
  if (uint64_t{c2} + need_[to] > parts_.max) return kDead;
  return Body(c2, to);
}

const std::bitset<256>& CountedAutomaton::live_bytes(uint32_t local) const {
  const uint32_t p = static_cast<uint32_t>(parts_.prefix.size());
  if (local < p) return prefix_live_[local];
  const uint32_t suffix_base = SuffixBase();
  if (local >= suffix_base) return suffix_live_[local - suffix_base];
  const uint32_t c = (local - p) / walk_states_;
  const uint32_t k = (local - p) % walk_states_ + 1;
  const bool suffix = boundary_accepts_[k] && c >= parts_.min;
  const uint32_t slack = parts_.max - c;
  // The last set whose need fits the slack (sets ascend by need).
  const LiveSet* found = nullptr;
  for (uint32_t i = live_from_[k]; i < live_from_[k + 1] && live_[i].need <= slack; ++i) found = &live_[i];
  if (found == nullptr) return suffix ? suffix_only_ : none_;
  return suffix ? found->with_suffix : found->without_suffix;
}

bool CountedAutomaton::IsUnitStart(uint32_t local) const {
  const uint32_t p = static_cast<uint32_t>(parts_.prefix.size());
  return !has_body() && local >= p && local < SuffixBase() && (local - p) % walk_states_ == 0;
}

const std::array<uint64_t, 4>& CountedAutomaton::TickLoops(uint32_t local) const {
  const uint32_t p = static_cast<uint32_t>(parts_.prefix.size());
  if (local < p || local >= SuffixBase()) return no_loops_;
  return tick_loops_[(local - p) % walk_states_ + 1];
}

uint32_t CountedAutomaton::TickLoopsLeft(uint32_t local) const {
  const uint32_t p = static_cast<uint32_t>(parts_.prefix.size());
  if (local < p || local >= SuffixBase()) return 0;
  const uint32_t c = (local - p) / walk_states_;
  const uint32_t k = (local - p) % walk_states_ + 1;
  return parts_.max - c - need_[k];  // reached states keep c + need(k) <= max
}

uint32_t CountedAutomaton::MaskClass(uint32_t local, uint32_t depth) const {
  const uint32_t p = static_cast<uint32_t>(parts_.prefix.size());
  if (local < p) return local | kLocalClass;
  const uint32_t suffix_base = SuffixBase();
  if (local >= suffix_base) return p + walk_states_ + (local - suffix_base + 1);
  const uint32_t c = (local - p) / walk_states_;
  const uint32_t k = (local - p) % walk_states_ + 1;
  // Within `depth` bytes at most `depth` units end; a state reached then
  // needs at most max_need_ more.
  const uint64_t left = parts_.max - c;
  if (left < uint64_t{depth} + max_need_) return local | kLocalClass;
  if (c >= parts_.min) return p + k;  // the twin's walk state k
  // Units still needed: more than `depth` means no string that short
  // reaches S, the same from count 0.
  if (parts_.min - c > depth) return Body(0, k) | kLocalClass;
  return local | kLocalClass;
}

ByteDfa CountedAutomaton::TwinDfa() const {
  // 0 dead; P positions 1..|P|; walk state k at |P| + k; S positions after.
  const uint32_t p = static_cast<uint32_t>(parts_.prefix.size());
  const uint32_t s = static_cast<uint32_t>(parts_.suffix.size());
  const uint32_t n = twin_states();
  ByteDfa d;
  d.next.assign(n, {});
  d.accepting.assign(n, 0);
  const uint32_t body1 = p + 1, suffix1 = p + walk_states_ + 1;
  for (uint32_t i = 0; i < p; ++i) {
    d.next[i + 1][static_cast<uint8_t>(parts_.prefix[i])] = i + 1 < p ? i + 2 : body1;
  }
  for (uint32_t k = 1; k <= walk_states_; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t e = walk_[k][b];
      if (e != 0) d.next[p + k][b] = p + (e & ~kTick);
    }
    if (boundary_accepts_[k]) d.next[p + k][static_cast<uint8_t>(parts_.suffix[0])] = suffix1;
  }
  for (uint32_t j = 1; j < s; ++j) {
    d.next[suffix1 + j - 1][static_cast<uint8_t>(parts_.suffix[j])] = suffix1 + j;
  }
  d.accepting[n - 1] = 1;
  return d;
}

}  // namespace zapgram::grammar
