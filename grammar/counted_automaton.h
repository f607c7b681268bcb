// Counted terminals: P U{min,max} S as one automaton whose count lives in
// the state number, never unrolled.
//
// A JSON string with maxLength 8192 is `"` CHAR{0,8192} `"`; its DFA has
// (max + 1) x |CHAR| states (about 120k here), too many to build ahead of
// time, and as grammar rules every byte of it went through the parser (the
// bulk of MaskBench mask time). Here the automaton is described by its
// parts: the literal prefix P and suffix S (byte strings), the DFA of one
// unit U (prefix-free: a unit ends exactly when U accepts, and no accepting
// state has a live byte), and the bounds. A state is a position in P, a
// pair (units read c, state u of the current unit), or a position in S;
// Step computes the successor arithmetically, so the terminal costs the
// sizes of its parts whatever the bounds.
//
// Local numbering (the terminal table adds its base):
//   P positions i          -> i                       (0 <= i < |P|)
//   body (c, u), u >= 1    -> |P| + c * (|U| - 1) + (u - 1)
//   S positions j >= 1     -> |P| + (max + 1) * (|U| - 1) + (j - 1)
// The start is position 0 of P (or body (0, 1) when P is empty); the only
// accepting state is the end of S. Every state Step can reach is live: a
// unit may start only while c < max, and S only at a unit boundary with
// c >= min. S[0] must not start a unit (checked), so the choice between
// one more unit and the suffix is made by one byte.
//
// Masks (masks/matcher.cc) need classes of states that no token can tell
// apart: within `depth` bytes at most `depth` units end, so body (c, u)
// behaves like its unbounded twin P U* S (an ordinary eager terminal the
// lowering adds beside it, TwinDfa) once c >= min and max - c > depth.
//
// Tests: tests/grammar/counted_automaton_test.cc (against the unrolled
// regex on random strings), tests/masks/matcher_test.cc (masks inside
// counted strings against the brute force).
#ifndef ZAPGRAM_GRAMMAR_COUNTED_AUTOMATON_H_
#define ZAPGRAM_GRAMMAR_COUNTED_AUTOMATON_H_

#include <bitset>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grammar/byte_automaton.h"
#include "grammar/heap_bytes.h"

namespace zapgram::grammar {

// The parts of P U{min,max} S (grammar/regex_compiler.h SplitCountedRegex).
// Counted repetitions with a smaller bound are unrolled into ordinary DFAs
// (parser/flat_grammar.cc); from this bound on a P U{m,n} S regex is a
// counted terminal, and transforms/regular_terminals.cc keeps it one.
inline constexpr uint32_t kCountedMinBound = 32;

struct CountedParts {
  std::string prefix;
  ByteDfa unit;  // trimmed: state 0 dead, 1 start
  uint32_t min = 0;
  uint32_t max = 0;  // finite
  std::string suffix;  // at least one byte
};

class CountedAutomaton {
 public:
  static constexpr uint32_t kDead = 0xFFFFFFFFu;

  // Checks the parts (U prefix-free and not matching the empty string, S
  // not empty and S[0] not a first byte of U, min <= max, the state count
  // below 2^31).
  static absl::StatusOr<CountedAutomaton> Build(CountedParts parts);

  uint32_t num_states() const { return num_states_; }
  const CountedParts& parts() const { return parts_; }
  // Units read in body state `local` (a state between P and S).
  uint32_t UnitsRead(uint32_t local) const {
    return (local - static_cast<uint32_t>(parts_.prefix.size())) / unit_states_;
  }
  uint32_t start() const { return parts_.prefix.empty() ? Body(0, 1) : 0; }
  uint32_t Step(uint32_t local, uint8_t byte) const;
  bool accepting(uint32_t local) const { return local == num_states_ - 1; }
  const std::bitset<256>& live_bytes(uint32_t local) const;

  // The representative of `local` among the states that every string of at
  // most `depth` bytes treats alike: a state of the twin (as its twin-local
  // DFA state, >= 1) when the count no longer matters, else a local state
  // (tagged by kLocalClass).
  static constexpr uint32_t kLocalClass = 0x80000000u;
  uint32_t MaskClass(uint32_t local, uint32_t depth) const;
  // P U* S, numbered so that MaskClass's twin states are its states.
  ByteDfa TwinDfa() const;

  // Walk helpers (masks/matcher.cc): in body (c, u), the bytes that end a
  // one-byte unit and return to u = 1 (the count goes up by one), and how
  // many more units may still be read.
  bool IsUnitStart(uint32_t local) const;
  const std::bitset<256>& one_byte_units() const { return one_byte_units_; }
  uint32_t UnitsLeft(uint32_t local) const;
  uint32_t units_step() const { return unit_states_; }  // body (c, u) -> (c + 1, u)
  // Heap bytes held (the parts and the per-position live-byte sets).
  size_t memory_bytes() const {
    return HeapBytes(parts_.prefix) + HeapBytes(parts_.suffix) + HeapBytes(parts_.unit.next) +
           HeapBytes(parts_.unit.accepting) + HeapBytes(prefix_live_) + HeapBytes(body_below_min_) +
           HeapBytes(body_open_) + HeapBytes(suffix_live_);
  }

 private:
  uint32_t Body(uint32_t c, uint32_t u) const {
    return static_cast<uint32_t>(parts_.prefix.size()) + c * unit_states_ + (u - 1);
  }
  uint32_t SuffixBase() const { return Body(parts_.max + 1, 1); }

  CountedParts parts_;
  uint32_t unit_states_ = 0;  // |U| - 1 (the dead state is not numbered)
  uint32_t num_states_ = 0;
  // live_bytes: per P position; per unit state u, while c < min / while
  // min <= c < max; at c == max (unit start only); per S position.
  std::vector<std::bitset<256>> prefix_live_, body_below_min_, body_open_, suffix_live_;
  std::bitset<256> at_max_, none_;
  std::bitset<256> one_byte_units_;
};

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_COUNTED_AUTOMATON_H_
