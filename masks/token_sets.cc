// See token_sets.h.
#include "masks/token_sets.h"

#include <array>
#include <atomic>
#include <bitset>
#include <deque>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "grammar/utf8.h"
#include "parser/recognizer.h"

namespace zapgram::masks {

namespace {

// The terminal table seen by the walk below. Eager states only step to
// eager states, so a walk started at one reads the dense table directly
// (through local copies of the pointers: stores into the walk's uint32_t
// arrays could otherwise alias the table's fields and force reloads). A lazy
// start steps its lazy DFA (LazyTable), which may build states. It gets
// the subtree shortcut too: a lazy state's self-loop bytes are found by
// stepping its live bytes only, once per byte class, and the states those
// steps build are the ones the walk itself would build at the trie's first
// level (every byte starts some token), so the state budget pays nothing
// extra (inside a JSON string value fused with what follows it: ~1 ms walk
// of every node without the shortcut, against a few thousand jumps).
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
// A lazy terminal's states (they step only to lazy states): the lazy DFA
// read directly, without TerminalTable::Step's tests for the kind of state,
// through the row of the state stepped last (a walk steps the siblings of
// a trie node from one state).
struct LazyTable {
  explicit LazyTable(const parser::TerminalTable& table)
      : t(table), lazy(*table.lazy), byte_class(table.byte_class.data()) {}
  uint32_t Step(uint32_t s, uint8_t byte) const {
    if (s != row_state) {
      row_state = s;
      row = lazy.Row(s);
    }
    const uint32_t entry = row[byte_class[byte]].load(std::memory_order_acquire);
    if (entry == grammar::LazyDfa::kUnknown) {
      last_to = lazy.Step(s, byte_class[byte]);
      last_accepting = last_to != 0 && last_to != grammar::LazyDfa::kOverflow && lazy.accepting(last_to);
    } else {
      last_to = grammar::LazyDfa::Target(entry);
      last_accepting = grammar::LazyDfa::TargetAccepts(entry);
    }
    return last_to;
  }
  // A walk asks about the state it just stepped to: known from the row.
  bool Accepting(uint32_t s) const { return s == last_to ? last_accepting : lazy.accepting(s); }
  static constexpr bool kHasLoops = true;
  static constexpr bool kCounted = false;
  // The live bytes on which `s` steps to itself, one step per byte class
  // (a class's bytes step alike; kOverflow is no loop).
  TrieByteSet LoopBytes(uint32_t s) const {
    TrieByteSet loop{};
    const parser::ByteSet& live = lazy.live_bytes(s);
    std::array<uint8_t, 256> verdict;  // per class: 0 unknown, 1 loop, 2 not
    verdict.fill(0);
    for (uint32_t b = 0; b < 256; ++b) {
      if (!live[b]) continue;
      uint8_t& v = verdict[byte_class[b]];
      if (v == 0) v = lazy.Step(s, byte_class[b]) == s ? 1 : 2;
      if (v == 1) loop[b / 64] |= uint64_t{1} << (b % 64);
    }
    return loop;
  }
  const parser::TerminalTable& t;
  const grammar::LazyDfa& lazy;
  const uint8_t* byte_class;
  mutable uint32_t row_state = 0;  // 0: none yet (the dead state is never lazy)
  mutable const std::atomic<uint32_t>* row = nullptr;
  mutable uint32_t last_to = 0;  // what Step returned last, and whether it accepts
  mutable bool last_accepting = false;
};
struct AnyTable {
  const parser::TerminalTable& t;
  uint32_t Step(uint32_t s, uint8_t byte) const { return t.Step(s, byte); }
  bool Accepting(uint32_t s) const { return t.accepting(s); }
  static constexpr bool kHasLoops = false;
  static constexpr bool kCounted = false;
  TrieByteSet LoopBytes(uint32_t) const { return {}; }
};

// Whether `s` is a state whose automaton can be read row by row here: an
// eager state or a lazy one (not dead, not a counted terminal's: those are
// read off their profiles, see token_sets.h).
bool RowState(const parser::TerminalTable& t, uint32_t s) {
  return s != 0 && s != parser::TerminalTable::kOverflow &&
         (s < t.eager_states() || (t.lazy != nullptr && !t.is_counted(s)));
}

// The rows of eager and lazy states by byte class. An eager row is read in
// place; a lazy one is stepped class by class into a buffer, which builds
// the states it reaches (an entry is kOverflow once the lazy DFA is full).
// A row stays valid until the next call. Eager states step only to eager
// states and lazy ones only to lazy ones, so a spelling or a core never
// mixes the two.
// Only a lazy state's live classes are stepped: the others are dead
// without asking (a step computes a subset under the DFA's lock).
class Rows {
 public:
  explicit Rows(const parser::TerminalTable& t)
      : t_(t), buffer_(t.num_classes), byte_of_class_(t.ClassRepresentatives()) {}
  const uint32_t* Row(uint32_t s) {
    if (s < t_.eager_states()) return &t_.next[static_cast<size_t>(s) * t_.num_classes];
    const parser::ByteSet& live = t_.lazy->live_bytes(s);
    for (uint32_t c = 0; c < t_.num_classes; ++c) buffer_[c] = live[byte_of_class_[c]] ? t_.lazy->Step(s, c) : 0;
    return buffer_.data();
  }

 private:
  const parser::TerminalTable& t_;
  std::vector<uint32_t> buffer_;
  std::vector<uint8_t> byte_of_class_;  // one byte of each class
};

// Runs `f` with the walk table of `state`'s terminal, eager or lazy.
template <typename F>
decltype(auto) WithTable(const parser::TerminalTable& t, uint32_t state, F&& f) {
  if (state < t.eager_states()) return f(EagerTable(t));
  return f(LazyTable(t));
}

// A counted terminal's states (grammar/counted_automaton.h): the count
// lives in the state number, so no state loops on itself, but from body
// (c, k) every byte that completes a unit and comes back to walk state k (a
// whole one-byte unit at a unit start; a word character inside a counted
// word pattern) moves to (c + 1, k), live while c + 1 + need(k) <= max. So a
// subtree whose bytes are all such and whose height is at most the steps
// left stays live throughout: accepted whole, no uncertain root (inside the
// body no state accepts; only the suffix ends the terminal).
struct CountedTable {
  CountedTable(const parser::TerminalTable& table, uint32_t state)
      : t(table), segment(table.SegmentOf(state)) {}
  uint32_t Step(uint32_t s, uint8_t byte) const { return t.Step(s, byte); }
  bool Accepting(uint32_t s) const { return t.accepting(s); }
  static constexpr bool kHasLoops = false;
  static constexpr bool kCounted = true;
  TrieByteSet LoopBytes(uint32_t) const { return {}; }
  // The bytes that step `s` to itself with one more unit, and how many such
  // steps in a row stay live.
  const TrieByteSet& TickLoops(uint32_t s) const { return segment.automaton->TickLoops(s - segment.base); }
  uint32_t TickLoopsLeft(uint32_t s) const { return segment.automaton->TickLoopsLeft(s - segment.base); }
  const parser::TerminalTable& t;
  const parser::TerminalTable::CountedSegment& segment;
};

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
//
// A walk may also stop where the DFA leaves a set of states (`Exits`, the
// core of a split build, see token_sets.h): the node is recorded with the
// state it left from and the walk jumps past its subtree, which a later
// Walk over [node, subtree end) from that state finishes. Such a walk has a
// second shortcut: from a wide core state (a string body), a subtree whose
// bytes keep the wide states among themselves (Exits::Settles: such bytes,
// or whole UTF-8 characters) and which is shallower than the fewest such
// steps that can lead out of the core (Exits::EscapeDepth) never leaves the
// core and never dies, so it is accepted whole (see CoreEscapes). It settles the
// subtrees that move between core states rather than loop on one: the
// counter of a key pattern such as [0-9a-f]{32} (hex letters fill English
// words; the core holds the whole run, SpellTerminalCore), a key that must
// contain some letter.
struct NoExits {
  static constexpr bool kActive = false;
  bool Leaves(uint32_t) const { return false; }
  void Record(uint32_t, uint32_t, bool) {}
};

template <typename Table, typename Exits = NoExits>
class TerminalWalk {
 public:
  TerminalWalk(const TokenTrie& trie, const Table& table, bool use_subtrees, AcceptedTokens* accepted,
               std::vector<uint32_t>* uncertain_roots, Exits exits = Exits())
      : trie_(trie), table_(table), use_subtrees_(use_subtrees), accepted_(accepted),
        uncertain_roots_(uncertain_roots), exits_(std::move(exits)), state_(trie.max_depth() + 1u),
        ended_before_(trie.max_depth() + 1u), loop_(trie.max_depth() + 1u, nullptr), loops_(table) {}

  // Nodes [begin, end): the root's children, or one node's subtree, whose
  // parent path left the DFA in `parent_state` (live), having passed an
  // accepting state below the root when `parent_ended`.
  void Walk(uint32_t begin, uint32_t end, uint32_t parent_state, bool parent_ended) {
    constexpr uint32_t kOverflow = parser::TerminalTable::kOverflow;
    const TokenTrieNode* nodes = trie_.nodes().data();
    const uint32_t top = nodes[begin].depth - 1u;
    state_[top] = parent_state;
    ended_before_[top] = parent_ended ? 1 : 0;
    loop_[top] = nullptr;
    for (uint32_t i = begin; i < end;) {
      const TokenTrieNode& node = nodes[i];
      const uint32_t depth = node.depth;
      const uint32_t parent = state_[depth - 1];
      if constexpr (Table::kCounted) {
        if (use_subtrees_ && node.subtree_end > i + 1 &&
            trie_.SubtreeHeight(i) <= table_.TickLoopsLeft(parent) &&
            IsSubset(trie_.SubtreeBytes(i), table_.TickLoops(parent))) {
          accepted_->Add(trie_.SubtreeTokens(i));
          i = node.subtree_end;
          continue;
        }
      }
      if constexpr (Exits::kActive) {
        // A subtree the core cannot be left in (Exits::SettlesFrom).
        if (use_subtrees_ && exits_.SettlesFrom(trie_, i, parent)) {
          accepted_->Add(trie_.SubtreeTokens(i));
          i = node.subtree_end;
          continue;
        }
      }
      const uint32_t next = table_.Step(parent, node.byte);
      if (next == 0 || next == kOverflow) {
        if (ended_before_[depth - 1] != 0 || next == kOverflow) uncertain_roots_->push_back(i);
        i = node.subtree_end;
        continue;
      }
      if constexpr (Exits::kActive) {
        if (next != parent && exits_.Leaves(next)) {
          exits_.Record(i, parent, ended_before_[depth - 1] != 0);
          i = node.subtree_end;
          continue;
        }
      }
      if constexpr (Table::kHasLoops) {
        if (next == parent && node.subtree_end > i + 1 && use_subtrees_) {
          if (loop_[depth - 1] == nullptr) loop_[depth - 1] = &loops_.Get(parent);
          if (IsSubset(trie_.SubtreeBytes(i), *loop_[depth - 1])) {
            accepted_->Add(trie_.SubtreeTokens(i));
            i = node.subtree_end;
            continue;
          }
        }
        loop_[depth] = next == parent ? loop_[depth - 1] : nullptr;
      }
      if (node.token_count != 0) accepted_->Add(trie_.TokensAt(i));
      state_[depth] = next;
      ended_before_[depth] = ended_before_[depth - 1] | static_cast<uint8_t>(table_.Accepting(next));
      ++i;
    }
  }

  void WalkAll(uint32_t start) {
    if (start == 0) return;  // dead: every token is rejected
    const uint32_t num_nodes = static_cast<uint32_t>(trie_.nodes().size());
    if (num_nodes > TokenTrie::kRoot + 1) Walk(TokenTrie::kRoot + 1, num_nodes, start, false);
  }

 private:
  const TokenTrie& trie_;
  const Table& table_;
  const bool use_subtrees_;
  AcceptedTokens* accepted_;
  std::vector<uint32_t>* uncertain_roots_;
  Exits exits_;
  std::vector<uint32_t> state_;
  std::vector<uint8_t> ended_before_;
  // Per depth: the self-loop bytes of state_[d] once looked up (else null).
  std::vector<const TrieByteSet*> loop_;
  LoopCache<Table> loops_;
};

template <typename Table>
void ClassifyTerminalTokens(const TokenTrie& trie, const Table& table, uint32_t start, bool use_subtrees,
                            AcceptedTokens* accepted, std::vector<uint32_t>* uncertain_roots) {
  TerminalWalk<Table>(trie, table, use_subtrees, accepted, uncertain_roots).WalkAll(start);
}

// The exits of a core walk: the DFA leaves the core (states numbered by
// `label`, a byte per eager state, kNotInCore outside: a counting state
// steps at almost every byte, so this is asked at almost every node),
// recorded as (node, label of the state left | ended flag).
constexpr uint8_t kNotInCore = 0xFF;
constexpr uint8_t kNeverEscapes = 0xFF;
// A wide state (a string's body rather than the middle of a character or a
// literal): more than this many live bytes.
constexpr size_t kWideLiveBytes = 64;
struct CoreExits {
  static constexpr bool kActive = true;
  const uint8_t* label = nullptr;
  uint32_t label_size = 0;  // states past it (lazy ones built during the walk) are not in the core
  std::vector<uint32_t>* out = nullptr;
  // See CoreEscapes.
  TrieByteSet stay{};
  TrieByteSet stay_with_utf8{};  // when `utf8`: stay and the bytes of multi-byte characters
  bool utf8 = false;
  const uint8_t* escape = nullptr;
  // The `stay` bytes that take some wide state out of the core or to the
  // dead state: the last byte of every way out (see SettlesFrom).
  TrieByteSet escaping{};
  bool Leaves(uint32_t next) const { return LabelOf(next) == kNotInCore; }
  uint8_t LabelOf(uint32_t s) const { return s < label_size ? label[s] : kNotInCore; }
  // Whether node i's subtree, entered from core state `parent`, never
  // leaves the core nor dies: it reads only bytes the wide states are
  // closed on (Settles), and either it is shallower than the escape depth
  // of `parent`, or `parent` is wide and the subtree holds no escaping
  // byte. The escape depth counts every `stay` byte as a step toward the
  // way out, so under a key that must not hold some word (its last letter
  // leads out of the core or to the dead state) only subtrees shallower
  // than the word settle by it; a subtree without the word's last letter
  // never leaves, however deep (multi-byte characters end in wide states).
  bool SettlesFrom(const TokenTrie& trie, uint32_t i, uint32_t parent) const {
    if (trie.SubtreeHeight(i) < EscapeDepth(parent)) return Settles(trie, i);
    const TrieByteSet& bytes = trie.SubtreeBytes(i);
    const bool no_escaping_byte = ((bytes[0] & escaping[0]) | (bytes[1] & escaping[1]) | (bytes[2] & escaping[2]) |
                                   (bytes[3] & escaping[3])) == 0;
    return no_escaping_byte && escape[label[parent]] != 0 && Settles(trie, i);
  }
  // Whether node i's subtree reads only bytes the wide states are closed on.
  bool Settles(const TokenTrie& trie, uint32_t i) const {
    const TrieByteSet& bytes = trie.SubtreeBytes(i);
    return IsSubset(bytes, stay) || (utf8 && IsSubset(bytes, stay_with_utf8) && trie.Utf8CleanSubtree(i));
  }
  uint32_t EscapeDepth(uint32_t core_state) const {
    const uint8_t depth = escape[label[core_state]];
    return depth == kNeverEscapes ? UINT32_MAX : depth;
  }
  void Record(uint32_t node, uint32_t from, bool ended) {
    out->push_back(node);
    out->push_back(label[from] | (ended ? kCoreExitEnded : 0u));
  }
};

// CoreExits::stay, ::stay_with_utf8, ::utf8 and ::escape of a core whose
// states carry `label`. The shortcut is meant for the core's wide states (a
// string body and its variants: more than 64 live bytes), W. `stay` holds
// the bytes that take every state of W into W, out of the core or to the
// dead state (a counter that must not reach its end dies there), and some
// state of W into W; a byte into a narrow core state (the middle
// of a UTF-8 character, an escape) is left out. When every well-formed
// multi-byte character read from a state of W passes through live core
// states only and ends in W (a string body: `utf8`), a subtree may also
// hold such characters, if each of its paths is well-formed UTF-8 so far
// (TokenTrie::Utf8CleanSubtree). Then from p in W, fewer characters than
// escape[p] keep the DFA in W: escape[p] is 1 where a `stay` byte leaves
// the core or dies from p, else 1 + the least escape of p's successors by a `stay`
// byte or a character (relaxed to a fixed point); a subtree shallower than
// escape[p] bytes has fewer characters than that. Narrow states get 0.
void CoreEscapes(const parser::TerminalTable& t, const TerminalCore& core, CoreExits* exits,
                 std::vector<uint8_t>* escape) {
  const AnyTable table{t};
  auto label = [&](uint32_t s) { return exits->LabelOf(s); };
  const size_t n = core.states.size();
  std::vector<uint8_t> wide(n);
  for (size_t k = 0; k < n; ++k) wide[k] = t.live_bytes(core.states[k]).count() > kWideLiveBytes;
  TrieByteSet& stay = exits->stay;
  stay = {};
  exits->escaping = {};
  for (uint32_t b = 0; b < 256; ++b) {
    bool closed = true, some_stays = false, some_escapes = false;
    for (size_t k = 0; k < n && closed; ++k) {
      if (!wide[k]) continue;
      const uint32_t next = table.Step(core.states[k], static_cast<uint8_t>(b));
      const uint8_t to = next == 0 || next == parser::TerminalTable::kOverflow ? kNotInCore : label(next);
      closed = to == kNotInCore || wide[to];  // dead is kNotInCore too
      some_stays |= to != kNotInCore;
      some_escapes |= to == kNotInCore;
    }
    if (closed && some_stays) {
      stay[b / 64] |= uint64_t{1} << (b % 64);
      if (some_escapes) exits->escaping[b / 64] |= uint64_t{1} << (b % 64);
    }
  }
  // Multi-byte characters from each wide state: the wide states they end
  // in, over (UTF-8 phase, core state) pairs.
  // Bytes of 0x80..0xFF that step the same from every state and phase are
  // tried once: per phase, one byte of each (byte class, next phase).
  absl::flat_hash_map<uint8_t, std::vector<std::pair<uint8_t, uint8_t>>> steps_of_phase;  // (byte, next phase)
  auto utf8_steps = [&](uint8_t phase) -> const std::vector<std::pair<uint8_t, uint8_t>>& {
    auto [it, fresh] = steps_of_phase.try_emplace(phase);
    if (fresh) {
      std::vector<std::pair<uint32_t, uint8_t>> seen_kinds;  // (class, next phase)
      for (uint32_t b = 0x80; b < (phase == 0 ? 256u : 0xC0u); ++b) {
        const uint8_t next_phase = grammar::Utf8Step(phase, static_cast<uint8_t>(b));
        if (next_phase == grammar::kUtf8Invalid) continue;
        const std::pair<uint32_t, uint8_t> kind = {t.byte_class[b], next_phase};
        if (std::find(seen_kinds.begin(), seen_kinds.end(), kind) != seen_kinds.end()) continue;
        seen_kinds.push_back(kind);
        it->second.push_back({static_cast<uint8_t>(b), next_phase});
      }
    }
    return it->second;
  };
  std::vector<std::vector<uint8_t>> after_char(n);
  exits->utf8 = true;
  for (size_t k = 0; k < n && exits->utf8; ++k) {
    if (!wide[k]) continue;
    std::vector<std::pair<uint8_t, uint32_t>> todo, seen;
    for (const auto& [b, phase] : utf8_steps(0)) todo.push_back({phase, table.Step(core.states[k], b)});
    while (!todo.empty() && exits->utf8) {
      const auto [phase, state] = todo.back();
      todo.pop_back();
      const uint8_t at = state == 0 || state == parser::TerminalTable::kOverflow ? kNotInCore : label(state);
      if (phase == 0) {  // a whole character read: it must end in W
        exits->utf8 = at != kNotInCore && wide[at];
        std::vector<uint8_t>& ends = after_char[k];
        if (exits->utf8 && std::find(ends.begin(), ends.end(), at) == ends.end()) ends.push_back(at);
        continue;
      }
      if (at == kNotInCore) {  // dead or out of the core inside a character
        exits->utf8 = false;
        continue;
      }
      if (std::find(seen.begin(), seen.end(), std::make_pair(phase, state)) != seen.end()) continue;
      seen.push_back({phase, state});
      for (const auto& [b, next_phase] : utf8_steps(phase)) todo.push_back({next_phase, table.Step(state, b)});
    }
  }
  exits->stay_with_utf8 = stay;
  if (exits->utf8) {
    for (uint32_t b = 0x80; b < 256; ++b) {
      if (b < 0xC0 || grammar::Utf8Step(0, static_cast<uint8_t>(b)) != grammar::kUtf8Invalid) {  // 80-BF continue
        exits->stay_with_utf8[b / 64] |= uint64_t{1} << (b % 64);
      }
    }
  }
  escape->assign(n, kNeverEscapes);
  for (size_t k = 0; k < n; ++k) {
    if (!wide[k]) (*escape)[k] = 0;
  }
  auto via = [&](uint8_t to) -> uint32_t {
    return to == kNotInCore ? 1u : (*escape)[to] == kNeverEscapes ? kNeverEscapes : (*escape)[to] + 1u;
  };
  // Per wide state: where its `stay` bytes and characters lead (labels,
  // kNotInCore for out or dead), each once.
  std::vector<std::vector<uint8_t>> leads_to(n);
  for (size_t k = 0; k < n; ++k) {
    if (!wide[k]) continue;
    std::vector<uint8_t>& to = leads_to[k];
    for (uint32_t b = 0; b < 256; ++b) {
      if (((stay[b / 64] >> (b % 64)) & 1) == 0) continue;
      const uint8_t q = label(table.Step(core.states[k], static_cast<uint8_t>(b)));
      if (std::find(to.begin(), to.end(), q) == to.end()) to.push_back(q);
    }
    if (exits->utf8) {
      for (uint8_t q : after_char[k]) {
        if (std::find(to.begin(), to.end(), q) == to.end()) to.push_back(q);
      }
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = 0; k < n; ++k) {
      if (!wide[k]) continue;
      uint32_t best = (*escape)[k];
      for (uint8_t q : leads_to[k]) best = std::min(best, via(q));
      if (best < (*escape)[k]) {
        (*escape)[k] = static_cast<uint8_t>(std::min<uint32_t>(best, kNeverEscapes - 1));
        changed = true;
      }
    }
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
    ClassifyTerminalTokens(trie, LazyTable(t), state, use_subtrees, &accepted, &out.uncertain_roots);
  }
  std::move(accepted).Store(&out);
  return out;
}

namespace {

// Spells breadth first the states of `order` (it grows while spelled):
// per state its accepting flag, its number of runs, then per run (last
// byte, number of the target). `number(target)` names a target, appending
// the states it meets for the first time to `order`; kNoSpelling from it
// gives up (empty spelling).
constexpr uint32_t kNoSpelling = UINT32_MAX;
template <typename Number>
std::vector<uint32_t> SpellBreadthFirst(const parser::TerminalTable& t, std::vector<uint32_t>* order,
                                        std::vector<uint32_t> spelling, Number number) {
  std::vector<uint32_t> class_target(t.num_classes);
  Rows rows(t);
  for (size_t k = 0; k < order->size(); ++k) {
    const uint32_t s = (*order)[k];
    const uint32_t* row = rows.Row(s);
    // Targets are numbered in byte order (classes are not ordered).
    std::fill(class_target.begin(), class_target.end(), kNoSpelling);
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t& target = class_target[t.byte_class[b]];
      if (target != kNoSpelling) continue;
      const uint32_t to = row[t.byte_class[b]];
      target = to == parser::TerminalTable::kOverflow ? kNoSpelling : number(to);
      if (target == kNoSpelling) return {};
    }
    spelling.push_back(t.accepting(s));
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

}  // namespace

std::vector<uint32_t> CanonicalSubautomaton(const parser::TerminalTable& t, uint32_t state, uint32_t max_states) {
  // States are numbered in the order found (the dead state is 0, the start 1).
  if (!RowState(t, state)) return {};
  absl::flat_hash_map<uint32_t, uint32_t> number = {{0u, 0u}, {state, 1u}};
  std::vector<uint32_t> order = {state};
  return SpellBreadthFirst(t, &order, {}, [&](uint32_t target) {
    auto [it, fresh] = number.try_emplace(target, static_cast<uint32_t>(order.size() + 1));
    if (fresh) {
      if (order.size() >= max_states) return kNoSpelling;
      order.push_back(target);
    }
    return it->second;
  });
}

namespace {

// Strongly connected components of a small graph (successor lists), by
// Tarjan's algorithm with an explicit stack: per node its component's
// number, and whether that component has a cycle (two nodes or more, or a
// self-loop).
struct Components {
  std::vector<uint32_t> of;
  std::vector<uint8_t> cyclic;
};
Components StronglyConnected(const std::vector<std::vector<uint32_t>>& successors) {
  const uint32_t n = static_cast<uint32_t>(successors.size());
  constexpr uint32_t kUnseen = UINT32_MAX;
  Components out{std::vector<uint32_t>(n, kUnseen), {}};
  std::vector<uint32_t> order(n, kUnseen), low(n, 0), component_stack;
  std::vector<uint8_t> on_stack(n, 0);
  std::vector<std::pair<uint32_t, uint32_t>> frames;  // (node, next successor)
  uint32_t counter = 0;
  for (uint32_t root = 0; root < n; ++root) {
    if (order[root] != kUnseen) continue;
    frames.push_back({root, 0});
    order[root] = low[root] = counter++;
    component_stack.push_back(root), on_stack[root] = 1;
    while (!frames.empty()) {
      auto& [v, k] = frames.back();
      if (k < successors[v].size()) {
        const uint32_t w = successors[v][k++];
        if (order[w] == kUnseen) {
          order[w] = low[w] = counter++;
          component_stack.push_back(w), on_stack[w] = 1;
          frames.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], order[w]);
        }
        continue;
      }
      const uint32_t done = v;
      frames.pop_back();
      if (!frames.empty()) low[frames.back().first] = std::min(low[frames.back().first], low[done]);
      if (low[done] != order[done]) continue;
      const uint32_t id = static_cast<uint32_t>(out.cyclic.size());
      uint32_t size = 0, w;
      do {
        w = component_stack.back();
        component_stack.pop_back(), on_stack[w] = 0;
        out.of[w] = id;
        ++size;
      } while (w != done);
      const std::vector<uint32_t>& own = successors[done];
      out.cyclic.push_back(size > 1 || std::find(own.begin(), own.end(), done) != own.end());
    }
  }
  return out;
}

}  // namespace

namespace {

// The core of `state` (see SpellTerminalCore) among the states reached in
// steps of which at most kCoreDepth are costly: every step, or with
// `free_wide_steps` every step but those between two wide states with the
// same live bytes. `cut_free` is set when a step of that kind was left out
// at the limit (a counter the limit cut short).
TerminalCore CoreAround(const parser::TerminalTable& t, uint32_t state, uint32_t max_states, bool free_wide_steps,
                        bool* cut_free) {
  constexpr uint32_t kCoreDepth = 4;
  TerminalCore core;
  // The states near `state`: reached in steps of which at most kCoreDepth
  // are costly. A core is any set of states holding `state` (the walk is
  // exact whatever the set); it pays when its walk is the same in many
  // grammars. So: `state`, and the near cycles it is on or steps into (a
  // string's body with its escapes and multi-byte characters, entered from
  // the start of a key that must not be one of the schema's names), found
  // among states close by, so that the way back through what follows the
  // string (a comma, the next key) does not tie the core to this grammar.
  // Found by a 0-1 breadth-first search (free steps go to the front of the
  // queue; with none, the plain one by levels).
  auto wide_step = [&](uint32_t from, uint32_t to) {
    const parser::ByteSet& live = t.live_bytes(from);
    return live.count() > kWideLiveBytes && live == t.live_bytes(to);
  };
  Rows rows(t);
  absl::flat_hash_map<uint32_t, uint32_t> index = {{state, 0u}};
  std::vector<uint32_t> reached = {state};
  std::vector<uint32_t> distance = {0};
  std::vector<uint8_t> done = {0};
  std::vector<std::vector<uint32_t>> successors(1);
  auto add_edge = [&](size_t from, uint32_t to) {
    std::vector<uint32_t>& out = successors[from];
    if (std::find(out.begin(), out.end(), to) == out.end()) out.push_back(to);
  };
  std::deque<uint32_t> todo = {0};
  while (!todo.empty()) {
    const uint32_t k = todo.front();
    todo.pop_front();
    if (done[k] != 0) continue;
    done[k] = 1;
    const uint32_t* row = rows.Row(reached[k]);
    for (uint32_t c = 0; c < t.num_classes; ++c) {
      if (row[c] == 0) continue;
      if (row[c] == parser::TerminalTable::kOverflow) return {};  // the lazy DFA is full
      const bool wide = wide_step(reached[k], row[c]);
      const bool free = free_wide_steps && wide;
      const uint32_t d = distance[k] + (free ? 0 : 1);
      auto it = index.find(row[c]);
      if (it == index.end()) {
        if (d > kCoreDepth) {
          *cut_free |= wide;
          continue;
        }
        if (reached.size() >= 4 * max_states) continue;
        it = index.try_emplace(row[c], static_cast<uint32_t>(reached.size())).first;
        reached.push_back(row[c]);
        distance.push_back(d);
        done.push_back(0);
        successors.emplace_back();
      } else if (d >= distance[it->second] || done[it->second] != 0) {
        add_edge(k, it->second);
        continue;
      } else {
        distance[it->second] = d;
      }
      add_edge(k, it->second);
      free ? todo.push_front(it->second) : todo.push_back(it->second);
    }
  }
  // With free steps, a state may be found after a state stepping to it was
  // done: the edges among the states found, again.
  for (size_t k = 0; free_wide_steps && k < reached.size(); ++k) {
    const uint32_t* row = rows.Row(reached[k]);
    for (uint32_t c = 0; c < t.num_classes; ++c) {
      auto it = row[c] == 0 ? index.end() : index.find(row[c]);
      if (it != index.end()) add_edge(k, it->second);
    }
  }
  const Components components = StronglyConnected(successors);
  std::vector<uint8_t> in_core(reached.size(), 0);
  std::vector<uint8_t> chosen(components.cyclic.size(), 0);
  chosen[components.of[0]] = 1;
  for (uint32_t w : successors[0]) chosen[components.of[w]] |= components.cyclic[components.of[w]];
  size_t core_states = 0;
  for (size_t k = 0; k < reached.size(); ++k) {
    in_core[k] = chosen[components.of[k]];
    core_states += in_core[k];
  }
  if (core_states == 1) return core;  // no cycle near: nothing to share
  // Spelled from `state`: dead 0, core states 1.., any step out one mark.
  constexpr uint32_t kOut = kNoSpelling - 1;
  absl::flat_hash_map<uint32_t, uint32_t> number = {{0u, 0u}, {state, 1u}};
  core.states = {state};
  core.spelling = SpellBreadthFirst(t, &core.states, {kOut}, [&](uint32_t target) {
    auto where = index.find(target);
    if (target != 0 && (where == index.end() || !in_core[where->second])) {
      core.leaves = true;
      return kOut;
    }
    auto [it, fresh] = number.try_emplace(target, static_cast<uint32_t>(core.states.size() + 1));
    if (fresh) {
      if (core.states.size() >= max_states) return kNoSpelling;
      core.states.push_back(target);
    }
    return it->second;
  });
  if (core.spelling.empty()) core.states.clear();
  return core;
}

// Whether a run of steps between wide states with the same live bytes (a
// counter's) goes `length` steps deep from `state`: breadth first over
// such steps only, stopping there.
bool LongWideRun(const parser::TerminalTable& t, uint32_t state, uint32_t length) {
  Rows rows(t);
  absl::flat_hash_map<uint32_t, uint32_t> depth = {{state, 0u}};
  std::vector<uint32_t> todo = {state};
  for (size_t k = 0; k < todo.size(); ++k) {
    const uint32_t from = todo[k];
    const parser::ByteSet& live = t.live_bytes(from);
    if (live.count() <= kWideLiveBytes) continue;
    const uint32_t* row = rows.Row(from);
    const uint32_t next_depth = depth[from] + 1;
    for (uint32_t c = 0; c < t.num_classes; ++c) {
      if (row[c] == 0 || row[c] == parser::TerminalTable::kOverflow || live != t.live_bytes(row[c]) ||
          !depth.try_emplace(row[c], next_depth).second) {
        continue;
      }
      if (next_depth >= length) return true;
      todo.push_back(row[c]);
    }
  }
  return false;
}

// The escape depth of a core's start (CoreEscapes), kNeverEscapes when no
// run of the wide states' bytes leads out of the core.
// The labels of a core's states (their index), kNotInCore for every other
// state built so far.
std::vector<uint8_t> CoreLabels(const parser::TerminalTable& t, const TerminalCore& core) {
  std::vector<uint8_t> label(t.num_states(), kNotInCore);
  for (uint32_t k = 0; k < core.states.size(); ++k) label[core.states[k]] = static_cast<uint8_t>(k);
  return label;
}

uint8_t StartEscape(const parser::TerminalTable& t, const TerminalCore& core) {
  const std::vector<uint8_t> label = CoreLabels(t, core);
  CoreExits exits{.label = label.data(), .label_size = static_cast<uint32_t>(label.size())};
  std::vector<uint8_t> escape;
  CoreEscapes(t, core, &exits, &escape);
  return escape[0];
}

}  // namespace

TerminalCore SpellTerminalCore(const parser::TerminalTable& t, uint32_t state, uint32_t max_states) {
  max_states = std::min<uint32_t>(max_states, 254);  // BuildCoreTokenSets labels them in a byte
  if (!RowState(t, state)) return {};
  // A step between two wide states with the same live bytes moves along a
  // string's body, as a counter does: a key that must hold (or must not
  // hold) a 32-digit hex run counts the run in 32 such states, any other
  // letter going back to the first. The near core holds only the first
  // few, so the core walk's escape depth (CoreEscapes) from the start is 5
  // and it settles only subtrees shallower than that (~80k of Llama 3's
  // ~275k nodes stepped, ~2 ms a core). When the limit cut such steps
  // short, the core is grown along them (they are free; the way back
  // through a comma and the next key passes narrow states, so it still
  // does not tie the core to the grammar) and taken when its start's escape
  // depth becomes long (kLongEscape, longer than most tokens: ~5k nodes
  // stepped). A short run (a key that must not hold a given word: its
  // letters lead out of the core in a few steps) keeps the near core, and
  // is told apart cheaply first (LongWideRun): the grown core would save
  // few steps and be spelled apart in each terminal, where the near ones
  // are shared.
  constexpr uint8_t kLongEscape = 16;
  bool cut_free = false;
  TerminalCore near = CoreAround(t, state, max_states, /*free_wide_steps=*/false, &cut_free);
  if (near.empty() || !cut_free || !LongWideRun(t, state, kLongEscape) || StartEscape(t, near) == kNeverEscapes) {
    return near;
  }
  TerminalCore grown = CoreAround(t, state, max_states, /*free_wide_steps=*/true, &cut_free);
  if (grown.empty() || grown.states.size() <= near.states.size() || StartEscape(t, grown) < kLongEscape) return near;
  return grown;
}

StateTokenSets BuildCoreTokenSets(const TokenTrie& trie, const parser::TerminalTable& t, const TerminalCore& core,
                                  size_t mask_words, bool use_subtrees) {
  StateTokenSets out;
  AcceptedTokens accepted(mask_words);
  const std::vector<uint8_t> label = CoreLabels(t, core);
  CoreExits exits{.label = label.data(), .label_size = static_cast<uint32_t>(label.size()), .out = &out.core_exits};
  std::vector<uint8_t> escape;
  CoreEscapes(t, core, &exits, &escape);
  exits.escape = escape.data();
  WithTable(t, core.states[0], [&](const auto& table) {
    TerminalWalk<std::decay_t<decltype(table)>, CoreExits>(trie, table, use_subtrees, &accepted,
                                                           &out.uncertain_roots, exits)
        .WalkAll(core.states[0]);
  });
  std::move(accepted).Store(&out);
  return out;
}

StateTokenSets FinishSplitTokenSets(const TokenTrie& trie, const parser::TerminalTable& t, const TerminalCore& core,
                                    std::shared_ptr<const StateTokenSets> core_sets, size_t mask_words) {
  StateTokenSets out;
  AcceptedTokens accepted(mask_words);
  WithTable(t, core.states[0], [&](const auto& table) {
    TerminalWalk<std::decay_t<decltype(table)>> walk(trie, table, /*use_subtrees=*/true, &accepted,
                                                     &out.uncertain_roots);
    const std::vector<uint32_t>& exits = core_sets->core_exits;
    for (size_t k = 0; k + 1 < exits.size(); k += 2) {
      const uint32_t node = exits[k];
      walk.Walk(node, trie.nodes()[node].subtree_end, core.states[exits[k + 1] & ~kCoreExitEnded],
                (exits[k + 1] & kCoreExitEnded) != 0);
    }
  });
  std::move(accepted).Store(&out);
  out.core = std::move(core_sets);
  return out;
}

namespace {

// StoreAcceptedWords for a bitset whose bits are not counted yet.
void StoreAcceptedWords(std::vector<uint32_t> words, size_t mask_words, StateTokenSets* out) {
  size_t count = 0;
  for (uint32_t w : words) count += static_cast<size_t>(std::popcount(w));
  StoreAcceptedWords(std::move(words), count, mask_words, out);
}

}  // namespace

uint32_t MajorityStep(const parser::TerminalTable& t, uint32_t state) {
  if (!RowState(t, state)) return 0;
  std::vector<uint32_t> bytes_of_class(t.num_classes, 0);
  for (uint32_t b = 0; b < 256; ++b) ++bytes_of_class[t.byte_class[b]];
  Rows rows(t);
  const uint32_t* row = rows.Row(state);
  absl::flat_hash_map<uint32_t, uint32_t> bytes_to;
  uint32_t best = 0, best_bytes = 0;
  for (uint32_t c = 0; c < t.num_classes; ++c) {
    if (row[c] == 0 || row[c] == parser::TerminalTable::kOverflow) continue;
    const uint32_t n = bytes_to[row[c]] += bytes_of_class[c];
    if (n > best_bytes) best = row[c], best_bytes = n;
  }
  return best;
}

StateTokenSets BorrowTokenSets(const TokenTrie& trie, const parser::TerminalTable& t,
                               absl::Span<const uint32_t> mask_class, uint32_t state, uint32_t base,
                               const StateTokenSets& base_sets, size_t mask_words) {
  const absl::Span<const TokenTrieNode> nodes = trie.nodes();
  const uint32_t num_nodes = static_cast<uint32_t>(nodes.size());
  // Root children in DFS order, and whether each is taken from `base`.
  std::vector<uint32_t> children;
  std::vector<uint8_t> borrowed;
  const parser::StateClasses class_of{mask_class};  // a state past the table is its own class
  for (uint32_t i = TokenTrie::kRoot + 1; i < num_nodes; i = nodes[i].subtree_end) {
    children.push_back(i);
    const uint32_t next = t.Step(state, nodes[i].byte), base_next = t.Step(base, nodes[i].byte);
    constexpr uint32_t kOverflow = parser::TerminalTable::kOverflow;
    borrowed.push_back(next != 0 && next != kOverflow && base_next != 0 && base_next != kOverflow &&
                       class_of(next) == class_of(base_next));
  }
  auto is_borrowed = [&](uint32_t node) {
    const size_t k = static_cast<size_t>(std::upper_bound(children.begin(), children.end(), node) - children.begin());
    return k > 0 && borrowed[k - 1] != 0;
  };
  StateTokenSets out;
  std::vector<uint32_t> words(mask_words, 0u);
  for (const StateTokenSets* part : {base_sets.core.get(), &base_sets}) {
    if (part == nullptr) continue;
    for (size_t w = 0; w < part->accepted_words.size(); ++w) words[w] |= part->accepted_words[w];
    for (TokenId id : part->accepted_ids) SetBit(words.data(), id);
    for (uint32_t root : part->uncertain_roots) {
      if (is_borrowed(root)) out.uncertain_roots.push_back(root);
    }
  }
  // The other subtrees: their ids are cleared, then walked from `state`.
  std::vector<uint32_t> own_roots;
  AcceptedTokens own(mask_words);
  WithTable(t, state, [&](const auto& table) {
    TerminalWalk<std::decay_t<decltype(table)>> walk(trie, table, /*use_subtrees=*/true, &own, &own_roots);
    for (size_t k = 0; k < children.size(); ++k) {
      if (borrowed[k]) continue;
      for (TokenId id : trie.SubtreeTokens(children[k])) {
        words[static_cast<uint32_t>(id) / 32] &= ~(1u << (static_cast<uint32_t>(id) % 32));
      }
      // A child the state dies on stays rejected (its ids were cleared);
      // one it overflows on is walked, which files it as uncertain.
      if (t.Step(state, nodes[children[k]].byte) != 0) {
        walk.Walk(children[k], nodes[children[k]].subtree_end, state, false);
      }
    }
  });
  StateTokenSets walked;
  std::move(own).Store(&walked);
  for (size_t w = 0; w < walked.accepted_words.size(); ++w) words[w] |= walked.accepted_words[w];
  for (TokenId id : walked.accepted_ids) SetBit(words.data(), id);
  out.uncertain_roots.insert(out.uncertain_roots.end(), own_roots.begin(), own_roots.end());
  std::sort(out.uncertain_roots.begin(), out.uncertain_roots.end());
  StoreAcceptedWords(std::move(words), mask_words, &out);
  return out;
}

std::vector<uint32_t> CountedProfileSpelling(const grammar::CountedAutomaton& a) {
  // A tag no other spelling starts with, the suffix, then the unit DFA.
  const grammar::CountedParts& parts = a.parts();
  std::vector<uint32_t> spelling = {0xC0C0C0C0u, static_cast<uint32_t>(parts.suffix.size())};
  for (char c : parts.suffix) spelling.push_back(static_cast<uint8_t>(c));
  const grammar::ByteDfa& unit = parts.unit;
  spelling.push_back(unit.num_states());
  for (uint32_t s = 1; s < unit.num_states(); ++s) {
    spelling.push_back(unit.accepting[s]);
    for (uint32_t b = 0; b < 256; ++b) {
      if (b > 0 && unit.next[s][b] == unit.next[s][b - 1]) continue;
      spelling.push_back(b);
      spelling.push_back(unit.next[s][b]);
    }
  }
  return spelling;
}

CountedProfile BuildCountedProfile(const TokenTrie& trie, const grammar::CountedAutomaton& a, size_t mask_words) {
  const grammar::CountedParts& parts = a.parts();
  const grammar::ByteDfa& unit = parts.unit;
  const std::string& suffix = parts.suffix;
  const absl::Span<const TokenTrieNode> nodes = trie.nodes();
  const uint32_t num_nodes = static_cast<uint32_t>(nodes.size());
  CountedProfile out;
  out.within.assign(CountedProfile::kCumulative + 1, std::vector<uint32_t>(mask_words, 0u));
  std::vector<std::pair<uint32_t, uint32_t>> crossing_order;  // (units, index) to sort by units
  std::vector<CountedProfile::Crossing> crossings;
  // Per depth: the unit state (1 = at a unit start) and the units completed.
  const size_t height = trie.max_depth() + 1u;
  std::vector<uint32_t> unit_state(height, 1), completed(height, 0);
  // Inside a crossing's subtree, per depth: the S bytes matched.
  std::vector<uint32_t> matched(height, 0);
  for (uint32_t i = TokenTrie::kRoot + 1; i < num_nodes;) {
    const TokenTrieNode& node = nodes[i];
    const uint32_t depth = node.depth;
    const uint32_t u = unit_state[depth - 1], k = completed[depth - 1];
    if (u == 1 && node.byte == static_cast<uint8_t>(suffix[0])) {
      // S starts here, after k units: its subtree is decided by S alone.
      CountedProfile::Crossing x{k, static_cast<uint32_t>(out.crossing_ids.size()), 0,
                                 static_cast<uint32_t>(out.crossing_roots.size()), 0};
      matched[depth] = 1;
      for (uint32_t j = i; j < node.subtree_end;) {
        const TokenTrieNode& n = nodes[j];
        if (j != i) {
          const uint32_t before = matched[n.depth - 1];
          if (before == suffix.size()) {  // the terminal ended: the parser decides
            out.crossing_roots.push_back(j);
            j = n.subtree_end;
            continue;
          }
          if (n.byte != static_cast<uint8_t>(suffix[before])) {
            j = n.subtree_end;
            continue;
          }
          matched[n.depth] = before + 1;
        }
        for (TokenId id : trie.TokensAt(j)) out.crossing_ids.push_back(id);
        ++j;
      }
      x.ids_end = static_cast<uint32_t>(out.crossing_ids.size());
      x.roots_end = static_cast<uint32_t>(out.crossing_roots.size());
      crossing_order.push_back({k, static_cast<uint32_t>(crossings.size())});
      crossings.push_back(x);
      i = node.subtree_end;
      continue;
    }
    const uint32_t to = unit.next[u][node.byte];
    if (to == 0) {  // no unit goes on: the subtree is rejected
      i = node.subtree_end;
      continue;
    }
    const uint32_t started = k + 1;
    if (node.token_count != 0) {
      for (TokenId id : trie.TokensAt(i)) {
        if (started <= CountedProfile::kCumulative) {
          SetBit(out.within[started].data(), id);  // made cumulative below
        } else {
          out.longer.push_back({started, id});
        }
      }
    }
    unit_state[depth] = unit.accepting[to] ? 1 : to;
    completed[depth] = unit.accepting[to] ? k + 1 : k;
    ++i;
  }
  for (uint32_t n = 1; n <= CountedProfile::kCumulative; ++n) {
    for (size_t w = 0; w < mask_words; ++w) out.within[n][w] |= out.within[n - 1][w];
  }
  std::sort(out.longer.begin(), out.longer.end());
  std::sort(crossing_order.begin(), crossing_order.end());
  for (const auto& [units, index] : crossing_order) out.crossings.push_back(crossings[index]);
  return out;
}

StateTokenSets CountedSetsFromProfile(const CountedProfile& profile, uint32_t units_left, uint32_t units_needed,
                                      size_t mask_words) {
  StateTokenSets out;
  std::vector<uint32_t> words = profile.within[std::min(units_left, CountedProfile::kCumulative)];
  for (const auto& [units, id] : profile.longer) {
    if (units > units_left) break;
    SetBit(words.data(), id);
  }
  for (const CountedProfile::Crossing& x : profile.crossings) {
    if (x.units > units_left) break;
    if (x.units < units_needed) continue;
    for (uint32_t k = x.ids_begin; k < x.ids_end; ++k) SetBit(words.data(), profile.crossing_ids[k]);
    out.uncertain_roots.insert(out.uncertain_roots.end(), profile.crossing_roots.begin() + x.roots_begin,
                               profile.crossing_roots.begin() + x.roots_end);
  }
  std::sort(out.uncertain_roots.begin(), out.uncertain_roots.end());
  StoreAcceptedWords(std::move(words), mask_words, &out);
  return out;
}

std::shared_ptr<const void> TokenSetStore::GetOrBuildErased(
    const std::vector<uint32_t>& spelling,
    absl::FunctionRef<std::pair<std::shared_ptr<const void>, size_t>()> build) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(spelling);
    if (it != map_.end()) {
      ++stats_.hits;
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.value;
    }
    ++stats_.misses;
  }
  auto [value, value_bytes] = build();
  const size_t bytes = value_bytes + 4 * spelling.size() + 128;
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes > budget_bytes_) return value;
  auto [it, fresh] = map_.try_emplace(spelling);
  if (!fresh) return it->second.value;  // another thread stored it first
  it->second = Entry{value, {}, bytes};
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
  return value;
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
