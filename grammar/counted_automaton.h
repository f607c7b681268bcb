// Counted terminals: P U{min,max} S, or P (B & U{0,max}) S, as one
// automaton whose count lives in the state number, never unrolled.
//
// A JSON string with maxLength 8192 is `"` CHAR{0,8192} `"`; its DFA has
// (max + 1) x |CHAR| states (about 120k here), too many to build ahead of
// time, and as grammar rules every byte of it went through the parser (the
// bulk of MaskBench mask time). A string with a pattern and a maxLength is
// the pattern's automaton times the count: a word-count pattern
// `^(?:\S+\s+){0,29}\S+$` under maxLength 300 passes any state budget, and
// building that product up to the budget, only to drop maxLength, was the
// slowest compile of MaskBench (300 ms). Here the automaton is described by
// its parts: the literal prefix P and suffix S (byte strings), the DFA of
// one unit U (prefix-free: a unit ends exactly when U accepts), optionally a
// body B (the language the units must also spell together: the pattern),
// and the bounds.
//
// The walk W is the product of B (or of nothing) with U*: its states are
// pairs (body state, state inside the current unit), numbered breadth first
// from the start (k = 1); a transition *ticks* when it completes a unit. A
// state is a position in P, a pair (units read c, walk state k), or a
// position in S; Step computes the successor arithmetically, so the
// terminal costs the sizes of its parts whatever the bounds.
//
// Local numbering (the terminal table adds its base):
//   P positions i          -> i                       (0 <= i < |P|)
//   body (c, k), k >= 1    -> |P| + c * |W| + (k - 1)
//   S positions j >= 1     -> |P| + (max + 1) * |W| + (j - 1)
// The start is position 0 of P (or body (0, 1) when P is empty); the only
// accepting state is the end of S. S may start at a unit boundary whose
// body accepts, once c >= min; S[0] must not be a live byte there (checked),
// so the choice between going on and the suffix is made by one byte.
//
// Every state Step can reach is live. need(k), the fewest ticks from walk
// state k to an accepting boundary, makes that exact: (c, k) is reached only
// while c + need(k) <= max. (Below min, with a body, that would not be
// enough, so a body carries the minimum itself: Build refuses min > 0 with
// a body; SplitCountedRegex folds it into B.) U's start state is never
// re-entered inside a unit: Build gives U a fresh start when it is, so a
// walk state with u = start is a unit boundary (a unit such as (?:ab)*c
// loops back to its start after "ab", which once let S follow "ab").
//
// Masks (masks/matcher.cc) need classes of states that no token can tell
// apart: within `depth` bytes at most `depth` units end, so body (c, k)
// behaves like its unbounded twin P W S (an ordinary eager terminal the
// lowering adds beside it, TwinDfa) once c >= min and
// max - c >= depth + max need.
//
// Tests: tests/grammar/counted_automaton_test.cc (against the unrolled
// regex or the full product on random strings), tests/masks/matcher_test.cc
// (masks inside counted strings against the brute force).
#ifndef ZAPGRAM_GRAMMAR_COUNTED_AUTOMATON_H_
#define ZAPGRAM_GRAMMAR_COUNTED_AUTOMATON_H_

#include <array>
#include <bitset>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
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
  // Optional (no states: none): the language the units' concatenation must
  // also belong to, trimmed; with a body, min is 0 (the body counts it).
  ByteDfa body;
  uint32_t min = 0;
  uint32_t max = 0;  // finite
  std::string suffix;  // at least one byte
};

class CountedAutomaton {
 public:
  static constexpr uint32_t kDead = 0xFFFFFFFFu;

  // Checks the parts (U prefix-free and not matching the empty string, S
  // not empty and S[0] not live where S may start, min <= max, min 0 with
  // a body, some string within the bound, the walk within kMaxWalkStates,
  // the state count below 2^31).
  static constexpr uint32_t kMaxWalkStates = 1u << 16;
  static absl::StatusOr<CountedAutomaton> Build(CountedParts parts);

  uint32_t num_states() const { return num_states_; }
  const CountedParts& parts() const { return parts_; }
  // Units read in body state `local` (a state between P and S).
  uint32_t UnitsRead(uint32_t local) const {
    return (local - static_cast<uint32_t>(parts_.prefix.size())) / walk_states_;
  }
  bool has_body() const { return parts_.body.num_states() > 0; }
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
  // P W S, numbered so that MaskClass's twin states are its states.
  ByteDfa TwinDfa() const;
  uint32_t twin_states() const {
    return 1 + static_cast<uint32_t>(parts_.prefix.size()) + walk_states_ +
           static_cast<uint32_t>(parts_.suffix.size());
  }

  // Walk helpers (masks/token_sets.cc, masks/matcher.cc). A unit start:
  // body (c, 1) without a body automaton (the profile of U and S serves it).
  bool IsUnitStart(uint32_t local) const;
  // The bytes that take body (c, k) to (c + 1, k), and how many such steps
  // in a row stay live (max - c - need(k)); 0 outside the body.
  const std::array<uint64_t, 4>& TickLoops(uint32_t local) const;
  uint32_t TickLoopsLeft(uint32_t local) const;
  // Heap bytes held.
  size_t memory_bytes() const {
    return HeapBytes(parts_.prefix) + HeapBytes(parts_.suffix) + HeapBytes(parts_.unit.next) +
           HeapBytes(parts_.unit.accepting) + HeapBytes(parts_.body.next) +
           HeapBytes(parts_.body.accepting) + HeapBytes(walk_) + HeapBytes(boundary_accepts_) +
           HeapBytes(need_) + HeapBytes(tick_loops_) + HeapBytes(live_) + HeapBytes(live_from_) +
           HeapBytes(prefix_live_) + HeapBytes(suffix_live_);
  }

 private:
  static constexpr uint32_t kTick = 0x80000000u;  // in walk_ entries
  uint32_t Body(uint32_t c, uint32_t k) const {
    return static_cast<uint32_t>(parts_.prefix.size()) + c * walk_states_ + (k - 1);
  }
  uint32_t SuffixBase() const { return Body(parts_.max + 1, 1); }
  absl::Status BuildWalk();
  void BuildLiveSets();

  CountedParts parts_;
  uint32_t walk_states_ = 0;  // |W| (the dead state is not numbered)
  uint32_t num_states_ = 0;
  uint32_t max_need_ = 0;
  // Per walk state k (index k; 0 unused): its row (target | kTick), whether
  // S may start there, need(k), its tick loops.
  std::vector<std::array<uint32_t, 256>> walk_;
  std::vector<uint8_t> boundary_accepts_;
  std::vector<uint32_t> need_;
  std::vector<std::array<uint64_t, 4>> tick_loops_;
  // live_bytes of body (c, k): the bytes whose step needs at most
  // max - c more ticks, plus S[0] once c >= min where S may start. Per k,
  // live_[live_from_[k] ...] holds one set per distinct need among k's
  // steps, ascending, each with and without S[0]: (need, without, with).
  struct LiveSet {
    uint32_t need;
    std::bitset<256> without_suffix, with_suffix;
  };
  std::vector<LiveSet> live_;
  std::vector<uint32_t> live_from_;  // k -> first index in live_; k + 1 ends it
  std::vector<std::bitset<256>> prefix_live_, suffix_live_;
  std::bitset<256> none_, suffix_only_;
  std::array<uint64_t, 4> no_loops_{};
};

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_COUNTED_AUTOMATON_H_
