// See token_sets.h.
#include "masks/token_sets.h"

#include <array>
#include <bitset>

#include "absl/container/flat_hash_map.h"
#include <utility>

namespace zapgram::masks {

namespace {

// The terminal table seen by the walk below. Eager states only step to
// eager states, so a walk started at one reads the dense table directly
// (through local copies of the pointers: stores into the walk's uint32_t
// arrays could otherwise alias the table's fields and force reloads). A lazy
// start goes through TerminalTable::Step, which may build states, and gets
// no subtree shortcut (finding a state's self-loop bytes would step every
// byte class and could spend the lazy DFA's state budget).
struct EagerTable {
  explicit EagerTable(const parser::TerminalTable& t)
      : next(t.next.data()), byte_class(t.byte_class.data()), classes(t.num_classes),
        accepting(t.eager_accepting.data()) {}
  uint32_t Step(uint32_t s, uint8_t byte) const {
    return next[static_cast<size_t>(s) * classes + byte_class[byte]];
  }
  bool Accepting(uint32_t s) const { return accepting[s] != 0; }
  static constexpr bool kHasLoops = true;
  static constexpr bool kCounted = false;
  // The bytes on which `s` steps to itself.
  TrieByteSet LoopBytes(uint32_t s) const {
    TrieByteSet loop{};
    const uint32_t* row = next + static_cast<size_t>(s) * classes;
    for (uint32_t b = 0; b < 256; ++b) {
      if (row[byte_class[b]] == s) loop[b / 64] |= uint64_t{1} << (b % 64);
    }
    return loop;
  }
  const uint32_t* next;
  const uint8_t* byte_class;
  uint32_t classes;
  const uint8_t* accepting;
};
struct AnyTable {
  const parser::TerminalTable& t;
  uint32_t Step(uint32_t s, uint8_t byte) const { return t.Step(s, byte); }
  bool Accepting(uint32_t s) const { return t.accepting(s); }
  static constexpr bool kHasLoops = false;
  static constexpr bool kCounted = false;
  TrieByteSet LoopBytes(uint32_t) const { return {}; }
};

// A counted terminal's states (grammar/counted_automaton.h): the count
// lives in the state number, so no state loops on itself, but at a unit
// start (c, 1) every byte that is a whole unit by itself moves to (c + 1, 1)
// and stays live while c + 1 <= max. So a subtree whose bytes are all
// one-byte units and whose height is at most the units left stays live
// throughout: accepted whole, no uncertain root (inside the body no state
// accepts; only the suffix ends the terminal).
struct CountedTable {
  CountedTable(const parser::TerminalTable& table, uint32_t state)
      : t(table), segment(table.SegmentOf(state)) {
    const std::bitset<256>& units = segment.automaton->one_byte_units();
    for (uint32_t b = 0; b < 256; ++b) {
      if (units[b]) one_byte_units[b / 64] |= uint64_t{1} << (b % 64);
    }
  }
  uint32_t Step(uint32_t s, uint8_t byte) const { return t.Step(s, byte); }
  bool Accepting(uint32_t s) const { return t.accepting(s); }
  static constexpr bool kHasLoops = false;
  static constexpr bool kCounted = true;
  TrieByteSet LoopBytes(uint32_t) const { return {}; }
  // Units that may still be read from unit start `s`; 0 when `s` is not one.
  uint32_t UnitsLeftAtUnitStart(uint32_t s) const {
    const uint32_t local = s - segment.base;
    return segment.automaton->IsUnitStart(local) ? segment.automaton->UnitsLeft(local) : 0;
  }
  const parser::TerminalTable& t;
  const parser::TerminalTable::CountedSegment& segment;
  TrieByteSet one_byte_units{};
};

bool IsSubset(const TrieByteSet& a, const TrieByteSet& b) {
  return ((a[0] & ~b[0]) | (a[1] & ~b[1]) | (a[2] & ~b[2]) | (a[3] & ~b[3])) == 0;
}

// Self-loop byte sets of the states a walk meets, computed once each: a
// small direct-mapped cache (a miss recomputes; collisions only cost time).
template <typename Table>
class LoopCache {
 public:
  explicit LoopCache(const Table& table) : table_(table) { keys_.fill(kEmpty); }
  const TrieByteSet& Get(uint32_t s) {
    const size_t slot = (s * 0x9E3779B1u) >> (32 - kBits);
    if (keys_[slot] != s) {
      keys_[slot] = s;
      sets_[slot] = table_.LoopBytes(s);
    }
    return sets_[slot];
  }

 private:
  static constexpr int kBits = 6;
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;
  const Table& table_;
  std::array<uint32_t, 1u << kBits> keys_;
  std::array<TrieByteSet, 1u << kBits> sets_;
};

// Depth-first over the trie with the terminal's DFA started at `start` (a
// live state). A node is certain while the DFA stays alive (not dead, not
// kOverflow); the terminal could have ended on the way to a node when an
// accepting state came strictly before its last byte (depth 0 excluded:
// there the item has completed already, through other items of the set), or
// the lazy DFA ran out of states. A node where the DFA leaves the live
// states is an uncertain root if it could have ended (the parser decides its
// subtree), else its subtree is rejected.
//
// Per depth d of the current path: state[d] is the DFA state after the
// path's first d bytes and ended_before[d] says whether an accepting state
// came at depth 1..d (so a child at depth d+1 could end the terminal before
// its own byte). Fixed arrays of the trie's height: no per-node allocation.
// Accepted ids go to `accepted`.
//
// Subtree shortcut (eager tables): when the parent state p steps to itself
// on every byte of node i's subtree (TokenTrie::SubtreeBytes), every node
// below stays in p, which is live: the whole subtree is accepted and holds
// no uncertain root, so its tokens (one slice, TokenTrie::SubtreeTokens) are
// added at once and the walk jumps past it. Inside a JSON string this
// settles ~210k of Llama 3's ~275k nodes in ~15k jumps. Counted terminals
// have their own form of it (CountedTable above): near the bound of a
// string with maxLength 150 a set was a 10-15 ms walk of every node.
// `use_subtrees` false walks every node (the differential tests' reference).
template <typename Table>
void ClassifyTerminalTokens(const TokenTrie& trie, const Table& table, uint32_t start,
                            bool use_subtrees, AcceptedTokens* accepted,
                            std::vector<uint32_t>* uncertain_roots) {
  constexpr uint32_t kOverflow = parser::TerminalTable::kOverflow;
  if (start == 0) return;  // dead: every token is rejected
  const TokenTrieNode* nodes = trie.nodes().data();
  const uint32_t num_nodes = static_cast<uint32_t>(trie.nodes().size());
  const size_t height = trie.max_depth() + 1u;
  std::vector<uint32_t> state(height);
  std::vector<uint8_t> ended_before(height);
  // Per depth: the self-loop bytes of state[d] once looked up (else null).
  std::vector<const TrieByteSet*> loop(height, nullptr);
  LoopCache<Table> loops(table);
  state[0] = start;
  ended_before[0] = 0;
  for (uint32_t i = TokenTrie::kRoot + 1; i < num_nodes;) {
    const TokenTrieNode& node = nodes[i];
    const uint32_t depth = node.depth;
    const uint32_t parent = state[depth - 1];
    if constexpr (Table::kCounted) {
      if (use_subtrees && node.subtree_end > i + 1 && trie.SubtreeHeight(i) <= table.UnitsLeftAtUnitStart(parent) &&
          IsSubset(trie.SubtreeBytes(i), table.one_byte_units)) {
        accepted->Add(trie.SubtreeTokens(i));
        i = node.subtree_end;
        continue;
      }
    }
    const uint32_t next = table.Step(parent, node.byte);
    if (next == 0 || next == kOverflow) {
      if (ended_before[depth - 1] != 0 || next == kOverflow) uncertain_roots->push_back(i);
      i = node.subtree_end;
      continue;
    }
    if constexpr (Table::kHasLoops) {
      if (next == parent && node.subtree_end > i + 1 && use_subtrees) {
        if (loop[depth - 1] == nullptr) loop[depth - 1] = &loops.Get(parent);
        if (IsSubset(trie.SubtreeBytes(i), *loop[depth - 1])) {
          accepted->Add(trie.SubtreeTokens(i));
          i = node.subtree_end;
          continue;
        }
      }
      loop[depth] = next == parent ? loop[depth - 1] : nullptr;
    }
    if (node.token_count != 0) accepted->Add(trie.TokensAt(i));
    state[depth] = next;
    ended_before[depth] = ended_before[depth - 1] | static_cast<uint8_t>(table.Accepting(next));
    ++i;
  }
}

}  // namespace

StateTokenSets BuildTerminalTokenSets(const TokenTrie& trie, const parser::TerminalTable& t, uint32_t state,
                                      size_t mask_words, bool use_subtrees) {
  StateTokenSets out;
  AcceptedTokens accepted(mask_words);
  if (state < t.eager_states()) {
    ClassifyTerminalTokens(trie, EagerTable(t), state, use_subtrees, &accepted, &out.uncertain_roots);
  } else if (t.is_counted(state)) {
    ClassifyTerminalTokens(trie, CountedTable(t, state), state, use_subtrees, &accepted, &out.uncertain_roots);
  } else {
    ClassifyTerminalTokens(trie, AnyTable{t}, state, use_subtrees, &accepted, &out.uncertain_roots);
  }
  std::move(accepted).Store(&out);
  return out;
}

std::vector<uint32_t> BoundedEquivalence(const parser::TerminalTable& t, uint32_t depth) {
  // Moore's refinement, stopped after `depth` rounds: after k rounds two
  // states share a class iff every string of at most k bytes leads both to
  // the dead state or both to live states, accepting alike. A mask looks at
  // most `depth` bytes (the longest token) past a terminal state, so such
  // states have equal token sets and equal masks in equal contexts:
  // counting states (a string of at most 1000 letters) collapse to about
  // `depth` classes instead of one per count.
  const uint32_t n = t.eager_states();
  const uint32_t columns = t.num_classes;
  std::vector<uint32_t> cls(n), next_cls(n);
  for (uint32_t s = 0; s < n; ++s) cls[s] = s == 0 ? 0 : (t.eager_accepting[s] ? 1 : 2);
  uint32_t num_classes = 0;
  absl::flat_hash_map<std::vector<uint32_t>, uint32_t> ids;
  std::vector<uint32_t> signature(columns + 1);
  for (uint32_t round = 0; round < depth; ++round) {
    ids.clear();
    for (uint32_t s = 0; s < n; ++s) {
      signature[0] = cls[s];
      for (uint32_t c = 0; c < columns; ++c) {
        signature[c + 1] = cls[t.next[static_cast<size_t>(s) * columns + c]];
      }
      next_cls[s] = ids.try_emplace(signature, static_cast<uint32_t>(ids.size())).first->second;
    }
    cls.swap(next_cls);
    if (ids.size() == num_classes) break;  // stable: refining further changes nothing
    num_classes = static_cast<uint32_t>(ids.size());
  }
  // Each class is named by its smallest state.
  std::vector<uint32_t> first(n, 0xFFFFFFFFu), out(n);
  for (uint32_t s = 0; s < n; ++s) {
    if (first[cls[s]] == 0xFFFFFFFFu) first[cls[s]] = s;
    out[s] = first[cls[s]];
  }
  return out;
}

std::vector<uint32_t> CanonicalSubautomaton(const parser::TerminalTable& t, uint32_t state, uint32_t max_states) {
  // Breadth first from `state`; states are numbered in the order found
  // (the dead state is 0, the start 1). Each state's entry: its accepting
  // flag, its number of runs, then per run (last byte, target number).
  std::vector<uint32_t> spelling;
  if (state == 0 || state >= t.eager_states()) return spelling;
  absl::flat_hash_map<uint32_t, uint32_t> number = {{0u, 0u}, {state, 1u}};
  std::vector<uint32_t> order = {state};
  std::vector<uint32_t> class_target(t.num_classes);
  for (size_t k = 0; k < order.size(); ++k) {
    const uint32_t s = order[k];
    const uint32_t* row = &t.next[static_cast<size_t>(s) * t.num_classes];
    // Targets are numbered in byte order (classes are not ordered).
    std::fill(class_target.begin(), class_target.end(), UINT32_MAX);
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t& target = class_target[t.byte_class[b]];
      if (target != UINT32_MAX) continue;
      auto [it, fresh] = number.try_emplace(row[t.byte_class[b]], static_cast<uint32_t>(order.size() + 1));
      if (fresh) {
        if (order.size() >= max_states) return {};
        order.push_back(row[t.byte_class[b]]);
      }
      target = it->second;
    }
    spelling.push_back(t.eager_accepting[s]);
    const size_t runs_at = spelling.size();
    spelling.push_back(0);
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t target = class_target[t.byte_class[b]];
      if (b > 0 && target == spelling.back()) {
        spelling[spelling.size() - 2] = b;  // the run goes on
        continue;
      }
      spelling.push_back(b);
      spelling.push_back(target);
      ++spelling[runs_at];
    }
  }
  return spelling;
}

std::shared_ptr<const StateTokenSets> TokenSetStore::GetOrBuild(const std::vector<uint32_t>& spelling,
                                                                absl::FunctionRef<StateTokenSets()> build) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(spelling);
    if (it != map_.end()) {
      ++stats_.hits;
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.sets;
    }
    ++stats_.misses;
  }
  auto sets = std::make_shared<const StateTokenSets>(build());
  const size_t bytes = sets->bytes() + 4 * spelling.size() + 128;
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes > budget_bytes_) return sets;
  auto [it, fresh] = map_.try_emplace(spelling);
  if (!fresh) return it->second.sets;  // another thread stored it first
  it->second = Entry{sets, {}, bytes};
  lru_.push_front(&it->first);
  it->second.lru = lru_.begin();
  stats_.bytes += bytes;
  while (stats_.bytes > budget_bytes_) {
    auto victim = map_.find(*lru_.back());
    lru_.pop_back();
    stats_.bytes -= victim->second.bytes;
    ++stats_.evictions;
    map_.erase(victim);
  }
  return sets;
}

TokenSetStoreStats TokenSetStore::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  TokenSetStoreStats s = stats_;
  s.entries = map_.size();
  return s;
}

std::shared_ptr<TokenSetStore> Vocabulary::SharedTokenSets() const {
  std::lock_guard<std::mutex> lock(trie_slot_->mu);
  if (trie_slot_->token_sets == nullptr) {
    trie_slot_->token_sets = std::make_shared<TokenSetStore>(trie_slot_->token_set_cache_bytes);
  }
  return trie_slot_->token_sets;
}

}  // namespace zapgram::masks
