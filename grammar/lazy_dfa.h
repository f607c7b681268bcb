// A DFA determinized on demand: the subset construction run one transition
// at a time, as the input asks for it.
//
// Most terminals have small DFAs and are determinized (and minimized) ahead
// of time (grammar/byte_automaton.h). Some regexes have small NFAs but
// exponentially large DFAs: `(a|b)*a(a|b){20}` needs about 2^21 states,
// while any one input only ever visits as many states as it has bytes. Such
// terminals are kept as an NFA and determinized lazily, the way RE2's DFA
// and llguidance's derivative lexer work: a state is an epsilon-closed set
// of NFA states, created the first time some transition reaches it; each
// transition is computed once and then read from a table.
//
// Layout. States are numbered from `first_id` on (so they extend an eager
// table's numbering). Their rows live in chunks that never move once
// allocated, each twice the size of the one before (64 states, then 128,
// ...: a terminal that meets few states allocates little, which matters
// when a compile leaves its large terminals lazy): a transition entry is an atomic uint32
// holding the target (with kAcceptingBit when it accepts), 0 (dead) or
// kUnknown (not computed yet). Readers load
// entries without a lock; a miss takes the mutex, computes the subset,
// interns it and publishes the entry with release order, so every field of a
// new state is visible to a thread that reads its id. The whole object is
// logically const: compiled grammars that hold one stay safe to share.
//
// Budget: at most `max_states` states. A transition that would create one
// more returns kOverflow; callers report it as kResourceExhausted (never as
// a dead end, which would be a silent wrong answer). Cost per state:
// num_classes * 4 bytes of row, 33 bytes of flags, and its NFA subset.
//
// The NFA is trimmed at construction (states that cannot reach an accepting
// state are dropped), so a non-empty subset always is a live prefix: a
// state's live bytes are the union of its NFA states' byte ranges.
//
// Tests: tests/grammar/lazy_dfa_test.cc (against the eager DFA and RE2, the
// state cap, concurrent readers); tests/parser/recognizer_test.cc (lazy
// terminals inside grammars).
#ifndef ZAPGRAM_GRAMMAR_LAZY_DFA_H_
#define ZAPGRAM_GRAMMAR_LAZY_DFA_H_

#include <array>
#include <atomic>
#include <bit>
#include <bitset>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "grammar/byte_automaton.h"

namespace zapgram::grammar {

class LazyDfa {
 public:
  static constexpr uint32_t kUnknown = 0xFFFFFFFFu;   // row entry not computed yet
  static constexpr uint32_t kOverflow = 0xFFFFFFFEu;  // Step past the state cap
  // A row entry is kUnknown, 0 (dead) or a target state with this bit set
  // when the target accepts: a walk of the token trie asks whether each
  // state it steps to accepts, and reads it here with the step instead of
  // from the target's flags (a load that misses the cache on large
  // terminals). State ids stay below it.
  static constexpr uint32_t kAcceptingBit = 0x80000000u;
  static uint32_t Target(uint32_t entry) { return entry & ~kAcceptingBit; }
  // The most states an automaton numbered from `first_id` may make.
  static uint32_t RoomFrom(uint32_t first_id) {
    return first_id < kAcceptingBit ? kAcceptingBit - 1 - first_id : 0;
  }
  static bool TargetAccepts(uint32_t entry) { return (entry & kAcceptingBit) != 0; }

  // `nfa` holds one automaton per entry of `starts` (its start NFA state);
  // `representatives` gives one byte of each column of the caller's byte
  // classes, and every NFA range must be a union of whole columns
  // (ByteClassPartition::RefineByRanges ensures it). The
  // start states are created here, in order, as ids first_id, first_id+1, ...
  // (0 when an automaton's language is empty). Precondition:
  // max_states >= starts.size() and first_id + max_states < kAcceptingBit.
  LazyDfa(const ByteNfa& nfa, const std::vector<uint32_t>& starts,
          std::vector<uint8_t> representatives, uint32_t first_id, uint32_t max_states);
  LazyDfa(const LazyDfa&) = delete;
  LazyDfa& operator=(const LazyDfa&) = delete;
  ~LazyDfa();

  // The state of automaton k before any byte (0 when its language is empty).
  uint32_t start(size_t k) const { return starts_[k]; }

  // Target of `state` (first_id <= state < first_id + num_states()) on a byte
  // of column `cls`: a state, 0 (dead) or kOverflow. Thread-safe.
  uint32_t Step(uint32_t state, uint32_t cls) const {
    const Place at = PlaceOf(state - first_id_);
    const Chunk* chunk = chunks_[at.chunk].load(std::memory_order_acquire);
    const uint32_t entry = chunk->next[static_cast<size_t>(at.offset) * num_classes_ + cls].load(std::memory_order_acquire);
    return entry != kUnknown ? Target(entry) : Fill(state, cls);
  }
  // The row of `state` (num_classes entries, each kUnknown, 0 or a target
  // with kAcceptingBit), for a caller stepping one state many times: an
  // entry that reads kUnknown is computed by Step(state, cls).
  const std::atomic<uint32_t>* Row(uint32_t state) const {
    const Place at = PlaceOf(state - first_id_);
    return &chunks_[at.chunk].load(std::memory_order_acquire)->next[static_cast<size_t>(at.offset) * num_classes_];
  }
  bool accepting(uint32_t state) const { return Flags(state).accepting; }
  const std::bitset<256>& live_bytes(uint32_t state) const { return Flags(state).live_bytes; }

  uint32_t first_id() const { return first_id_; }
  // What it was built from, for its serialized form (api/grammar_serializer.cc):
  // the NFA as trimmed (trimming keeps state numbers and is idempotent, so a
  // LazyDfa built from it and the same starts numbers its states alike),
  // the NFA start of each automaton, the representatives.
  const ByteNfa& nfa() const { return nfa_; }
  const std::vector<uint32_t>& nfa_starts() const { return nfa_starts_; }
  const std::vector<uint8_t>& representatives() const { return representatives_; }
  uint32_t num_states() const { return count_.load(std::memory_order_acquire); }
  uint32_t max_states() const { return max_states_; }
  // Heap bytes held (rows, flags, subsets, NFA); grows with num_states().
  size_t memory_bytes() const;

 private:
  static constexpr uint32_t kFirstChunkBits = 6;  // the first chunk holds 64 states
  struct StateFlags {
    std::bitset<256> live_bytes;
    bool accepting = false;
  };
  struct Chunk {
    std::unique_ptr<std::atomic<uint32_t>[]> next;  // ChunkStates(k) * num_classes
    std::unique_ptr<StateFlags[]> flags;            // ChunkStates(k)
  };
  // Chunk k holds ChunkStates(k) = 64 << k states, from local id 64 * (2^k - 1) on.
  struct Place {
    uint32_t chunk;
    uint32_t offset;
  };
  static uint32_t ChunkStates(uint32_t k) { return uint32_t{1} << (kFirstChunkBits + k); }
  static Place PlaceOf(uint32_t local) {
    const uint32_t k = static_cast<uint32_t>(std::bit_width((local >> kFirstChunkBits) + 1u)) - 1u;
    return {k, local - (((uint32_t{1} << k) - 1u) << kFirstChunkBits)};
  }

  const StateFlags& Flags(uint32_t state) const {
    const Place at = PlaceOf(state - first_id_);
    return chunks_[at.chunk].load(std::memory_order_acquire)->flags[at.offset];
  }
  uint32_t Fill(uint32_t state, uint32_t cls) const;
  // Requires mu_. Returns the id of `subset` (epsilon-closed, sorted,
  // non-empty), creating it if new; kOverflow past the cap.
  uint32_t Intern(std::vector<uint32_t> subset) const;

  ByteNfa nfa_;  // trimmed
  std::vector<uint8_t> representatives_;
  uint32_t num_classes_;
  uint32_t first_id_;
  uint32_t max_states_;
  std::vector<uint32_t> starts_;
  std::vector<uint32_t> nfa_starts_;  // the constructor's `starts`
  // Chunk pointers, sized for max_states at construction (never resized).
  std::unique_ptr<std::atomic<Chunk*>[]> chunks_;
  mutable std::atomic<uint32_t> count_{0};
  mutable std::mutex mu_;  // guards everything below and chunk creation
  mutable std::vector<std::unique_ptr<Chunk>> owned_chunks_;
  mutable std::vector<std::vector<uint32_t>> subsets_;  // per local id
  mutable absl::flat_hash_map<std::vector<uint32_t>, uint32_t> ids_;
  mutable std::vector<uint8_t> mark_;  // EpsilonClosure scratch
  mutable size_t subset_bytes_ = 0;
};

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_LAZY_DFA_H_
