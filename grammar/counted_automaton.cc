// Counted terminals (see the header for the numbering and the classes).
#include "grammar/counted_automaton.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace zapgram::grammar {

absl::StatusOr<CountedAutomaton> CountedAutomaton::Build(CountedParts parts) {
  const ByteDfa& u = parts.unit;
  if (u.empty()) return absl::InvalidArgumentError("counted terminal: the unit matches nothing");
  if (u.accepting[1]) return absl::InvalidArgumentError("counted terminal: the unit matches the empty string");
  if (parts.suffix.empty()) return absl::InvalidArgumentError("counted terminal: empty suffix");
  if (parts.min > parts.max) return absl::InvalidArgumentError("counted terminal: min > max");
  for (uint32_t s = 1; s < u.num_states(); ++s) {
    if (!u.accepting[s]) continue;
    for (uint32_t b = 0; b < 256; ++b) {
      if (u.next[s][b] != 0) return absl::InvalidArgumentError("counted terminal: the unit is not prefix-free");
    }
  }
  if (u.next[1][static_cast<uint8_t>(parts.suffix[0])] != 0) {
    return absl::InvalidArgumentError("counted terminal: the suffix's first byte starts a unit");
  }
  CountedAutomaton a;
  a.unit_states_ = u.num_states() - 1;
  const uint64_t states = parts.prefix.size() + (uint64_t{parts.max} + 1) * a.unit_states_ +
                          parts.suffix.size();
  if (states >= (uint64_t{1} << 31)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("counted terminal: ", states, " states (bound ", parts.max, ")"));
  }
  a.num_states_ = static_cast<uint32_t>(states);
  for (char c : parts.prefix) {
    a.prefix_live_.emplace_back();
    a.prefix_live_.back().set(static_cast<uint8_t>(c));
  }
  const uint8_t close = static_cast<uint8_t>(parts.suffix[0]);
  a.body_below_min_.resize(u.num_states());
  a.body_open_.resize(u.num_states());
  for (uint32_t s = 1; s < u.num_states(); ++s) {
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t to = u.next[s][b];
      if (to == 0) continue;
      a.body_below_min_[s].set(b);
      a.body_open_[s].set(b);
      if (s == 1 && u.accepting[to]) a.one_byte_units_.set(b);
    }
  }
  a.body_open_[1].set(close);
  a.at_max_.set(close);
  for (size_t j = 1; j < parts.suffix.size(); ++j) {
    a.suffix_live_.emplace_back();
    a.suffix_live_.back().set(static_cast<uint8_t>(parts.suffix[j]));
  }
  a.suffix_live_.emplace_back();  // the end: nothing follows
  a.parts_ = std::move(parts);
  return a;
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
  const uint32_t c = (local - p) / unit_states_;
  const uint32_t u = (local - p) % unit_states_ + 1;
  if (u == 1 && c >= parts_.min && byte == static_cast<uint8_t>(parts_.suffix[0])) return suffix_base;
  if (c == parts_.max) return kDead;  // no unit may start or go on
  const uint32_t to = parts_.unit.next[u][byte];
  if (to == 0) return kDead;
  return parts_.unit.accepting[to] ? Body(c + 1, 1) : Body(c, to);
}

const std::bitset<256>& CountedAutomaton::live_bytes(uint32_t local) const {
  const uint32_t p = static_cast<uint32_t>(parts_.prefix.size());
  if (local < p) return prefix_live_[local];
  const uint32_t suffix_base = SuffixBase();
  if (local >= suffix_base) return suffix_live_[local - suffix_base];
  const uint32_t c = (local - p) / unit_states_;
  const uint32_t u = (local - p) % unit_states_ + 1;
  if (c == parts_.max) return u == 1 ? at_max_ : none_;
  return c < parts_.min ? body_below_min_[u] : body_open_[u];
}

bool CountedAutomaton::IsUnitStart(uint32_t local) const {
  const uint32_t p = static_cast<uint32_t>(parts_.prefix.size());
  return local >= p && local < SuffixBase() && (local - p) % unit_states_ == 0;
}

uint32_t CountedAutomaton::UnitsLeft(uint32_t local) const {
  const uint32_t p = static_cast<uint32_t>(parts_.prefix.size());
  if (local < p || local >= SuffixBase()) return 0;
  return parts_.max - (local - p) / unit_states_;
}

uint32_t CountedAutomaton::MaskClass(uint32_t local, uint32_t depth) const {
  const uint32_t p = static_cast<uint32_t>(parts_.prefix.size());
  if (local < p) return local | kLocalClass;
  const uint32_t suffix_base = SuffixBase();
  if (local >= suffix_base) return p + unit_states_ + (local - suffix_base + 1);
  const uint32_t c = (local - p) / unit_states_;
  const uint32_t u = (local - p) % unit_states_ + 1;
  const uint64_t left = parts_.max - c;
  if (left <= depth) return local | kLocalClass;
  if (c >= parts_.min) return p + u;  // the twin's body state u
  // Units still needed: more than `depth` means no string that short
  // reaches S, the same from count 0.
  if (parts_.min - c > depth) return Body(0, u) | kLocalClass;
  return local | kLocalClass;
}

ByteDfa CountedAutomaton::TwinDfa() const {
  // 0 dead; P positions 1..|P|; body u at |P| + u; S positions after.
  const uint32_t p = static_cast<uint32_t>(parts_.prefix.size());
  const uint32_t s = static_cast<uint32_t>(parts_.suffix.size());
  const uint32_t n = 1 + p + unit_states_ + s;
  ByteDfa d;
  d.next.assign(n, {});
  d.accepting.assign(n, 0);
  const uint32_t body1 = p + 1, suffix1 = p + unit_states_ + 1;
  for (uint32_t i = 0; i < p; ++i) {
    d.next[i + 1][static_cast<uint8_t>(parts_.prefix[i])] = i + 1 < p ? i + 2 : body1;
  }
  for (uint32_t u = 1; u <= unit_states_; ++u) {
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t to = parts_.unit.next[u][b];
      if (to != 0) d.next[p + u][b] = parts_.unit.accepting[to] ? body1 : p + to;
    }
  }
  d.next[body1][static_cast<uint8_t>(parts_.suffix[0])] = suffix1;
  for (uint32_t j = 1; j < s; ++j) {
    d.next[suffix1 + j - 1][static_cast<uint8_t>(parts_.suffix[j])] = suffix1 + j;
  }
  d.accepting[n - 1] = 1;
  return d;
}

}  // namespace zapgram::grammar
