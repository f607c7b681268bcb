// Byte automata for terminals: an NFA builder and its determinization.
//
// Every terminal zapgram scans (a literal, a code-point class, and later a
// regular expression) is first built as an NFA over bytes with byte-range
// transitions and epsilon moves, then determinized by subset construction
// into a dense DFA (256 columns; state 0 is dead). The DFA is trimmed: states
// from which no accepting state can be reached become dead, so "a live state"
// always means "the bytes so far are a prefix of some match". A state cap
// bounds the construction (error past it, never a silent truncation).
//
// Tests: tests/grammar/byte_automaton_test.cc.
#ifndef ZAPGRAM_GRAMMAR_BYTE_AUTOMATON_H_
#define ZAPGRAM_GRAMMAR_BYTE_AUTOMATON_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "grammar/grammar.h"

namespace zapgram::grammar {

class ByteNfa {
 public:
  ByteNfa() { AddState(); }  // state 0 is the start state

  uint32_t AddState();
  void AddRange(uint32_t from, uint8_t lo, uint8_t hi, uint32_t to);
  void AddEpsilon(uint32_t from, uint32_t to);
  void SetAccepting(uint32_t state) { accepting_[state] = 1; }

  // Fragments from `from` to a fresh state, which is returned.
  uint32_t AddLiteral(uint32_t from, std::string_view bytes);
  uint32_t AddCodepoints(uint32_t from, const std::vector<CodepointRange>& ranges);

  // Copies every state of `other` into this NFA (its state s becomes
  // s + the returned offset); accepting marks are copied too.
  uint32_t Append(const ByteNfa& other);
  // Copies the fragment `other` (entered at its state 0, accepting marks
  // ignored) so that it starts at `from`: state 0 becomes `from`, the others
  // fresh states. Returns the copy of `other_end`. Building a fragment once
  // and stamping it is much cheaper than rebuilding it for every copy (a
  // code point class under a counted repetition).
  uint32_t Stamp(uint32_t from, const ByteNfa& other, uint32_t other_end);

  struct Range {
    uint8_t lo, hi;
    uint32_t to;
  };
  uint32_t num_states() const { return static_cast<uint32_t>(ranges_.size()); }
  // Valid until the next change to this NFA.
  absl::Span<const Range> ranges(uint32_t s) const { return ranges_[s]; }
  absl::Span<const uint32_t> epsilons(uint32_t s) const { return epsilons_[s]; }
  bool accepting(uint32_t s) const { return accepting_[s] != 0; }

 private:
  // Most states have one or two ranges and at most a few epsilon moves
  // (Thompson fragments, UTF-8 trie nodes): kept inline, in the 24 bytes a
  // std::vector takes anyway, a state costs no allocation of its own
  // (a JSON Schema's regexes build about 200,000 NFA states).
  std::vector<absl::InlinedVector<Range, 2>> ranges_;
  std::vector<absl::InlinedVector<uint32_t, 4>> epsilons_;
  static_assert(sizeof(absl::InlinedVector<Range, 2>) == sizeof(std::vector<Range>));
  static_assert(sizeof(absl::InlinedVector<uint32_t, 4>) == sizeof(std::vector<uint32_t>));
  std::vector<uint8_t> accepting_;
};

// A partition of the 256 byte values into classes that no transition row
// tells apart (the columns of a table over byte classes). Starts with one
// class; each Refine splits the classes by where a row sends their bytes.
// Classes are numbered densely in the order of their smallest byte.
class ByteClassPartition {
 public:
  void Refine(const std::array<uint32_t, 256>& row);
  // Refines so that every byte range of `nfa` is a union of whole classes.
  void RefineByRanges(const ByteNfa& nfa);
  uint32_t num_classes() const { return num_classes_; }
  bool all_distinct() const { return num_classes_ == 256; }
  uint8_t class_of(uint8_t byte) const { return static_cast<uint8_t>(class_[byte]); }
  // The smallest byte of each class, in class order.
  std::vector<uint8_t> Representatives() const;

 private:
  std::array<uint32_t, 256> class_{};
  std::array<uint8_t, 256> smallest_in_class_{};  // per byte: its class's smallest byte
  uint32_t num_classes_ = 1;
};

// A trimmed DFA. State 0 is dead, state 1 the start. A DFA whose language is
// empty has only the dead state and `empty()` is true.
struct ByteDfa {
  std::vector<std::array<uint32_t, 256>> next;
  std::vector<uint8_t> accepting;

  uint32_t num_states() const { return static_cast<uint32_t>(next.size()); }
  bool empty() const { return next.size() <= 1; }
  // Whole-string match, for tests.
  bool Matches(std::string_view bytes) const;
};

// The same automaton as a trimmed ByteDfa, with each transition stored once
// per byte class instead of once per byte: bytes of one class go to the same
// state from every state. Determinization works in classes (the NFA's ranges
// define them); keeping its result in this form until minimization is done
// saves widening every state of the unminimized DFA to 256 columns and
// rediscovering the classes from the widened rows. Widen() gives the
// ByteDfa, with the same state numbers.
struct ClassDfa {
  std::array<uint8_t, 256> class_of{};  // byte -> class, classes in order of their smallest byte
  uint32_t num_classes = 1;
  std::vector<uint32_t> next;           // next[state * num_classes + class]
  std::vector<uint8_t> accepting;       // per state; state 0 dead, 1 the start

  uint32_t num_states() const { return static_cast<uint32_t>(accepting.size()); }
  bool empty() const { return accepting.size() <= 1; }
  uint32_t step(uint32_t state, uint32_t cls) const {
    return next[size_t{state} * num_classes + cls];
  }
  ByteDfa Widen() const;
  // A ByteDfa's columns grouped into the classes its rows never tell apart.
  static ClassDfa Narrow(const ByteDfa& dfa);
};

// Calls f(column, row[column]) for each column < k whose entry is not 0
// (not the dead state), in column order. Rows of class tables are mostly
// dead (a literal chain's state has one live column), so eight columns,
// then four, are tested at once and a dead group costs one test.
template <class F>
inline void ForEachLiveColumn(const uint32_t* row, uint32_t k, F&& f) {
  uint32_t c = 0;
  for (; c + 8 <= k; c += 8) {
    uint64_t group[4];
    std::memcpy(group, row + c, sizeof(group));
    if ((group[0] | group[1] | group[2] | group[3]) == 0) continue;
    for (uint32_t i = c; i < c + 8; ++i) {
      if (row[i] != 0) f(i, row[i]);
    }
  }
  for (; c + 4 <= k; c += 4) {
    uint64_t group[2];
    std::memcpy(group, row + c, sizeof(group));
    if ((group[0] | group[1]) == 0) continue;
    for (uint32_t i = c; i < c + 4; ++i) {
      if (row[i] != 0) f(i, row[i]);
    }
  }
  for (; c < k; ++c) {
    if (row[c] != 0) f(c, row[c]);
  }
}

// Subset construction, trimmed. Both forms hold the same automaton.
absl::StatusOr<ClassDfa> DeterminizeToClasses(const ByteNfa& nfa, uint32_t max_states);
absl::StatusOr<ByteDfa> Determinize(const ByteNfa& nfa, uint32_t max_states);

// The states (>= 1) from which an accepting one is reachable; the
// predecessors of state s are preds[begin[s] .. begin[s + 1]).
std::vector<uint8_t> StatesReachingAcceptance(const std::vector<uint8_t>& accepting,
                                              const std::vector<uint32_t>& begin,
                                              const std::vector<uint32_t>& preds);

// The epsilon closure of `states`, in place (sorted, unique on return).
// `mark` is scratch of nfa.num_states() zeros, left all zero.
void EpsilonClosure(const ByteNfa& nfa, std::vector<uint32_t>& states, std::vector<uint8_t>& mark);

// The DFA of L(dfa) minus the empty string, for a trimmed `dfa`: a fresh,
// non-accepting start state with the old start's row, then the states it
// reaches, numbered in order of discovery (states in order, bytes in
// order); loops back to the old start keep it. The same automaton, state
// for state, as the subset construction of that NFA (tested), without
// building it. Error past max_states, as Determinize.
absl::StatusOr<ByteDfa> WithoutEmptyString(const ByteDfa& dfa, uint32_t max_states);
// The same in `dfa`'s classes: classes are numbered in order of their
// smallest byte and every byte of a class has the class's target, so
// visiting classes in order discovers states in the same order as bytes.
absl::StatusOr<ClassDfa> WithoutEmptyString(const ClassDfa& dfa, uint32_t max_states);

// Convenience builders.
absl::StatusOr<ByteDfa> LiteralDfa(std::string_view bytes);
// ClassDfa::Narrow(*LiteralDfa(bytes)), written down directly: the chain of
// bytes.size() + 1 live states, each byte of `bytes` a class of its own and
// every other byte one more class (a schema of 5,000 keys spent a quarter of
// its compile determinizing, widening and re-narrowing its key literals).
ClassDfa LiteralClassDfa(std::string_view bytes);
absl::StatusOr<ByteDfa> CodepointClassDfa(const std::vector<CodepointRange>& ranges);

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_BYTE_AUTOMATON_H_
