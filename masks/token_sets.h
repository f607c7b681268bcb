// Token sets of terminal states: which tokens a terminal's automaton keeps
// alive from a state, whatever the context (see masks/matcher.h for how a
// mask uses them), and the store that shares them across grammars.
//
// The sets of an eager state s depend only on the automaton reachable from
// s: a token is accepted when every prefix keeps it alive, and its trie
// node is an uncertain root when the automaton dies after having passed an
// accepting state (the terminal may end there and the parser must decide).
// So two states, of two terminals or of two grammars, whose reachable
// automata are equal (as automata with a start, up to renaming) have equal
// sets. CanonicalSubautomaton spells that automaton in a canonical order
// (breadth first from s, bytes in increasing order, each state's row as runs
// of bytes with the same target), and TokenSetStore keeps sets under that
// spelling once per vocabulary: the states inside a JSON string, a number or
// the whitespace between tokens are the same in every schema, so a new
// grammar finds those sets built (a cold JSON string state costs ~0.5 ms to
// build, its spelling a few microseconds). Only automata of up to 64 states
// are spelled: the shareable ones are small, and a large one (the names of
// an object's properties) belongs to one grammar.
//
// A state whose automaton is too large to spell (a string value fused with
// the commas and names that may follow it: one per property of a schema) is
// split. Its core, the state with the near cycles it is on or steps into
// (a string's body, its escapes and multi-byte characters), is spelled with
// every step out of it as one mark, and the walk from the state that stops
// where the DFA leaves the core depends on that spelling only: the tokens
// it settles and the trie nodes where it left, with the core state it left
// from, are shared through the store. The grammar then walks only those
// subtrees from its own states (Llama 3, a JSON string value: ~190 exits,
// ~30 us, instead of a ~900 us walk of the trie per property).
//
// A state that most bytes take to one state b looping on itself (the
// start of a key that must not be one of the schema's names: any other
// first byte enters the plain string body) borrows: a token whose first
// byte leads it and b to equivalent states has the same fate from both, so
// those subtrees of the trie are read off b's sets and only the others (the
// names' first letters) are walked (~65 us instead of ~1 ms).
//
// The store is bounded in bytes (VocabularyOptions::token_set_cache_bytes)
// with least-recently-used eviction; a grammar holds the sets it uses, so
// eviction only forgets them for grammars compiled later.
//
// Tests: tests/masks/matcher_test.cc: TokenSets.* (each state's sets,
// eager, lazy, counted, split and borrowed, against a node-by-node oracle; equal spellings
// give equal sets across random grammars; two schemas share one object
// through the store) and TokenSetStore.* (budget, LRU order).
#ifndef ZAPGRAM_MASKS_TOKEN_SETS_H_
#define ZAPGRAM_MASKS_TOKEN_SETS_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "masks/token_trie.h"
#include "masks/vocabulary.h"
#include "parser/flat_grammar.h"

namespace zapgram::masks {

// The tokens of one terminal state (see above). A split state's sets are
// the union of its shared `core` part and its own fields.
struct StateTokenSets {
  std::vector<uint32_t> accepted_words;  // bitset, when smaller than the list
  std::vector<TokenId> accepted_ids;     // else sorted ids
  std::vector<uint32_t> uncertain_roots; // trie nodes, in DFS order
  // A core's sets only: where walks leave the core, as pairs (trie node,
  // label of the core state left | kCoreExitEnded when an accepting state
  // came before the node), in DFS order.
  std::vector<uint32_t> core_exits;
  // A split state's sets only: the core's sets, shared through the store.
  std::shared_ptr<const StateTokenSets> core;
  // Own bytes (the core is counted where it is stored).
  size_t bytes() const {
    return 4 * (accepted_words.size() + accepted_ids.size() + uncertain_roots.size() + core_exits.size());
  }
};
inline constexpr uint32_t kCoreExitEnded = 0x80000000u;

inline void SetBit(uint32_t* words, TokenId id) {
  words[static_cast<uint32_t>(id) / 32] |= 1u << (static_cast<uint32_t>(id) % 32);
}


// Accepted ids gathered in a bitset with `count` bits set, stored the way
// a walk stores them: the bitset when a list would not be smaller, else the
// ids in increasing order read straight off it (a dense state never sorts).
inline void StoreAcceptedWords(std::vector<uint32_t> words, size_t count, size_t mask_words,
                               StateTokenSets* out) {
  if (count >= mask_words) {
    out->accepted_words = std::move(words);
    return;
  }
  out->accepted_ids.reserve(count);
  for (size_t w = 0; w < words.size(); ++w) {
    for (uint32_t bits = words[w]; bits != 0; bits &= bits - 1) {
      out->accepted_ids.push_back(static_cast<TokenId>(32 * w + static_cast<size_t>(std::countr_zero(bits))));
    }
  }
}

// The accepted ids of a walk, stored adaptively: a sorted list, or a bitset
// when the list would not be smaller. Gathered in a short list first (a
// sparse state pays nothing for the vocabulary's size), then in a bitset,
// from which a list is read off in order (a dense state never sorts). Each
// id is added at most once (an id sits on one trie node).
class AcceptedTokens {
 public:
  explicit AcceptedTokens(size_t mask_words)
      : mask_words_(mask_words), list_limit_(std::min<size_t>(mask_words, kListLimit)) {}

  void Add(absl::Span<const TokenId> ids) {
    count_ += ids.size();
    if (words_.empty()) {
      if (count_ < list_limit_) {
        list_.insert(list_.end(), ids.begin(), ids.end());
        return;
      }
      words_.assign(mask_words_, 0u);
      for (TokenId id : list_) SetBit(words_.data(), id);
      list_.clear();
    }
    for (TokenId id : ids) SetBit(words_.data(), id);
  }

  void Store(StateTokenSets* out) && {
    if (words_.empty()) {  // fewer than list_limit_ <= mask_words_ ids
      std::sort(list_.begin(), list_.end());
      out->accepted_ids = std::move(list_);
    } else {
      StoreAcceptedWords(std::move(words_), count_, mask_words_, out);
    }
  }

 private:
  // Up to this many ids a list is cheaper to gather and sort than a bitset
  // of the whole vocabulary is to clear and scan.
  static constexpr size_t kListLimit = 512;
  size_t mask_words_;
  size_t list_limit_;
  size_t count_ = 0;
  std::vector<TokenId> list_;
  std::vector<uint32_t> words_;  // empty while the list is used
};

// The sets of terminal-table state `state` over `trie`, masks of
// `mask_words` words. `use_subtrees` false turns off the whole-subtree
// shortcut and steps every trie node (the differential tests' reference).
StateTokenSets BuildTerminalTokenSets(const TokenTrie& trie, const parser::TerminalTable& table,
                                      uint32_t state, size_t mask_words, bool use_subtrees = true);

// The canonical spelling of the eager automaton reachable from `state` (see
// above); empty when it has more than `max_states` states (not shared).
std::vector<uint32_t> CanonicalSubautomaton(const parser::TerminalTable& t, uint32_t state,
                                            uint32_t max_states = 64);

// A state's core (see the essay): the states of its strongly connected
// component, spelled like CanonicalSubautomaton except that every step out
// of the core is one mark, whatever state it reaches. `states` lists the
// core's states in spelling order (a core state's label is its index).
// Empty when the state is on no cycle or the core has more than
// `max_states` states. The core is looked for among the states a few
// costly steps away; a counter's run of string-body states (a key that
// must hold a 32-digit hex run) is followed to its end when the few steps
// cut it short and the whole run makes the core walk's escape depth long
// (token_sets.cc).
struct TerminalCore {
  std::vector<uint32_t> spelling;
  std::vector<uint32_t> states;
  bool leaves = false;  // some step goes out of the core (else splitting saves nothing)
  bool empty() const { return spelling.empty(); }
};
TerminalCore SpellTerminalCore(const parser::TerminalTable& t, uint32_t state, uint32_t max_states = 64);

// The core's sets: the tokens decided inside the core, and where the walk
// leaves it (StateTokenSets::core_exits). Depends only on the spelling.
// `use_subtrees` false steps every node (the tests' reference).
StateTokenSets BuildCoreTokenSets(const TokenTrie& trie, const parser::TerminalTable& t, const TerminalCore& core,
                                  size_t mask_words, bool use_subtrees = true);

// A split state's sets over `core_sets`: the walks past the core's exits
// from this table's own states, with `core` pointing at the shared part.
StateTokenSets FinishSplitTokenSets(const TokenTrie& trie, const parser::TerminalTable& t, const TerminalCore& core,
                                    std::shared_ptr<const StateTokenSets> core_sets, size_t mask_words);

// The live state most bytes step to from `state` (0 when every byte dies).
uint32_t MajorityStep(const parser::TerminalTable& t, uint32_t state);

// The sets of `state` read off those of `base` (its sets `base_sets`, a
// split one's core included): a token whose first byte b leads both
// states to equivalent states (equal `mask_class`, BoundedEquivalence up to
// the trie's depth) has the same fate from both, so the subtrees of those
// root children are taken from `base_sets` and only the others are walked
// from `state`.
StateTokenSets BorrowTokenSets(const TokenTrie& trie, const parser::TerminalTable& t,
                               absl::Span<const uint32_t> mask_class, uint32_t state, uint32_t base,
                               const StateTokenSets& base_sets, size_t mask_words);

// A counted terminal's tokens, once per vocabulary for its unit and suffix
// (grammar/counted_automaton.h: P U{min,max} S; a JSON string with a
// maxLength). From a unit start with c units read, a token is decided by
// two numbers: the units it starts (it stays in the body while they number
// at most max - c) and, when it reaches S, the units before S (S may start
// only once the count is at least min); what happens inside S does not
// depend on c. So one walk of the trie from an unbounded unit start files
// the tokens by those numbers, and the sets of every unit start are read
// off the files (~10 us) instead of walked (~1.5 ms each; near the bound of
// a string every count is a state of its own).
struct CountedProfile {
  static constexpr uint32_t kCumulative = 16;
  // within[n], n <= kCumulative: bitset of the tokens that stay in the body
  // and start at most n units.
  std::vector<std::vector<uint32_t>> within;
  std::vector<std::pair<uint32_t, TokenId>> longer;  // (units, id), units > kCumulative, sorted
  // Trie nodes where S starts, by the units before it (sorted), each with
  // the tokens accepted and the uncertain roots in its subtree.
  struct Crossing {
    uint32_t units;
    uint32_t ids_begin, ids_end, roots_begin, roots_end;
  };
  std::vector<Crossing> crossings;
  std::vector<TokenId> crossing_ids;
  std::vector<uint32_t> crossing_roots;
  size_t bytes() const {
    size_t n = 8 * longer.size() + sizeof(Crossing) * crossings.size() + 4 * crossing_ids.size() +
               4 * crossing_roots.size();
    for (const std::vector<uint32_t>& w : within) n += 4 * w.size();
    return n;
  }
};
// The spelling a profile is stored under (unit DFA and suffix).
std::vector<uint32_t> CountedProfileSpelling(const grammar::CountedAutomaton& a);
CountedProfile BuildCountedProfile(const TokenTrie& trie, const grammar::CountedAutomaton& a, size_t mask_words);
// The sets of a unit start with `units_left` = max - c units still allowed
// and `units_needed` = min - c (or 0) before S may start.
StateTokenSets CountedSetsFromProfile(const CountedProfile& profile, uint32_t units_left, uint32_t units_needed,
                                      size_t mask_words);

// Terminal states that go on with fewer bytes than this build their token
// sets themselves rather than through the store: their builds are cheaper
// than a spelling and a lookup (the trie walk stops after a byte or two).
inline constexpr size_t kSharedSetsMinLiveBytes = 32;

struct TokenSetStoreStats {
  uint64_t hits = 0, misses = 0, entries = 0, bytes = 0, evictions = 0;
};

class TokenSetStore {
 public:
  explicit TokenSetStore(size_t budget_bytes) : budget_bytes_(budget_bytes) {}
  // The sets stored under `spelling`, else built by `build` (outside the
  // lock; two threads may both build, the first stored wins) and stored.
  std::shared_ptr<const StateTokenSets> GetOrBuild(const std::vector<uint32_t>& spelling,
                                                   absl::FunctionRef<StateTokenSets()> build) {
    return GetOrBuildAs<StateTokenSets>(spelling, build);
  }
  // The same for any value with a bytes() (a CountedProfile); each kind of
  // value has spellings of its own (a distinct first element).
  template <typename T>
  std::shared_ptr<const T> GetOrBuildAs(const std::vector<uint32_t>& spelling, absl::FunctionRef<T()> build) {
    return std::static_pointer_cast<const T>(GetOrBuildErased(spelling, [&] {
      auto value = std::make_shared<const T>(build());
      const size_t bytes = value->bytes();
      return std::make_pair(std::shared_ptr<const void>(std::move(value)), bytes);
    }));
  }
  TokenSetStoreStats stats() const;
  size_t budget_bytes() const { return budget_bytes_; }

 private:
  std::shared_ptr<const void> GetOrBuildErased(
      const std::vector<uint32_t>& spelling,
      absl::FunctionRef<std::pair<std::shared_ptr<const void>, size_t>()> build);
  struct Entry {
    std::shared_ptr<const void> value;
    std::list<const std::vector<uint32_t>*>::iterator lru;
    size_t bytes;
  };
  const size_t budget_bytes_;
  mutable std::mutex mu_;
  // Node map: the LRU list points at its keys, which must not move.
  absl::node_hash_map<std::vector<uint32_t>, Entry> map_;
  std::list<const std::vector<uint32_t>*> lru_;  // front = newest
  TokenSetStoreStats stats_;
};

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_TOKEN_SETS_H_
