// The Earley chart: a stack of sets stored as ranges of four flat arrays.
//
// Textbook Earley keeps every item of every set. We keep only what later
// steps can use:
//  - waiting items (the dot before a nonterminal): later completions look
//    them up by (origin set, nonterminal), so each set stores them grouped by
//    that nonterminal, sorted, for binary search;
//  - Leo entries (Leo 1991): when a set has exactly one item waiting on A and
//    that item ends right after A, completing A there is deterministic; the
//    group for A then records the topmost item of the deterministic chain, and
//    completion jumps to it in one step. This makes right recursion linear,
//    and lets pruning forget the chain;
//  - items sitting on a terminal (with their automaton state): only the
//    newest set's are used (by the next scan); older sets' are dropped by
//    pruning and ignored otherwise.
// Completed items are transient: they are processed while the set is closed
// and never stored.
//
// Sets are appended and popped at the end (Push/Pop of the recognizer);
// compaction (pruning/compact.h) builds a new, smaller chart from an old one.
#ifndef ZAPGRAM_PARSER_CHART_H_
#define ZAPGRAM_PARSER_CHART_H_

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/hash/hash.h"

namespace zapgram::parser {

inline constexpr uint32_t kNoLeo = 0xFFFFFFFFu;
// The parent of the start item (nothing waits on the start symbol).
inline constexpr uint32_t kNoParent = 0xFFFFFFFFu;

// Items do not store their origin set but their *parent*: the index (into
// Chart::groups) of the group of the origin set that waits on the item's
// left-hand side — exactly what the item's completion will consult. So
// completion and pruning follow one index instead of searching the origin
// set, and the origin set is implied (the set holding the parent group).

// An item sitting on a terminal. `dot` indexes FlatGrammar::rhs, `parent`
// Chart::groups, `state` the terminal table (never 0, the dead state).
struct Item {
  uint32_t dot;
  uint32_t parent;
  uint32_t state;
  friend bool operator==(const Item&, const Item&) = default;
};
static_assert(sizeof(Item) == 12 && std::is_trivially_copyable_v<Item>);

struct ItemHash {
  size_t operator()(const Item& i) const {
    return absl::HashOf(i.dot, i.parent, i.state);
  }
};

// An item whose dot stands before a nonterminal (the nonterminal is rhs[dot]).
struct WaitingItem {
  uint32_t dot;
  uint32_t parent;
};
static_assert(sizeof(WaitingItem) == 8 && std::is_trivially_copyable_v<WaitingItem>);

// The waiting items of one set that wait on one nonterminal.
struct WaitingGroup {
  uint32_t nt;
  uint32_t first;       // into Chart::waiting
  uint32_t count;
  uint32_t leo_dot;     // kNoLeo, or the dot of the topmost completed item (at an end marker)
  uint32_t leo_parent;  // its parent
};
static_assert(sizeof(WaitingGroup) == 20 && std::is_trivially_copyable_v<WaitingGroup>);

// Bits of EarleySet::accepting.
inline constexpr uint32_t kAccepting = 1;       // the start symbol completed here from set 0
inline constexpr uint32_t kAcceptingIfIgnored = 2;  // lexed: accepting if the open token is ignored

// A lexed grammar's recognizer keeps one set per *lane* at each position: a
// lane is the state of the lexer (the token in progress and the guards of
// tokens that ended tentatively, parser/recognizer.h), and items of different
// lanes have different futures, so they never mix. A byte-level grammar has
// one set per position, all in lane 0.
struct EarleySet {
  uint64_t position;      // bytes consumed before this set
  uint32_t waiting_begin;
  uint32_t group_begin;   // groups [group_begin, group_end), sorted by nt
  uint32_t group_end;
  uint32_t scan_begin;    // items on terminals [scan_begin, scan_end)
  uint32_t scan_end;
  uint32_t accepting;     // kAccepting | kAcceptingIfIgnored bits
  uint32_t lane;          // lexed grammars: the recognizer's lane id; else 0
};
static_assert(sizeof(EarleySet) == 40 && std::is_trivially_copyable_v<EarleySet>);

struct Chart {
  std::vector<EarleySet> sets;
  std::vector<WaitingItem> waiting;
  std::vector<WaitingGroup> groups;
  std::vector<Item> scan;
  uint64_t leo_entries = 0;  // groups with a Leo entry

  void Clear() {
    leo_entries = 0;
    sets.clear();
    waiting.clear();
    groups.clear();
    scan.clear();
  }
  // Drops the newest set.
  void PopSet() {
    const EarleySet& s = sets.back();
    for (uint32_t g = s.group_begin; g < s.group_end; ++g) leo_entries -= groups[g].leo_dot != kNoLeo;
    waiting.resize(s.waiting_begin);
    groups.resize(s.group_begin);
    scan.resize(s.scan_begin);
    sets.pop_back();
  }
  // Drops every set at the newest position.
  void PopPosition() {
    const uint64_t position = sets.back().position;
    while (!sets.empty() && sets.back().position == position) PopSet();
  }
  // The first set at the same position as `set` (sets of one position are adjacent).
  uint32_t FirstSetAtPositionOf(uint32_t set) const {
    while (set > 0 && sets[set - 1].position == sets[set].position) --set;
    return set;
  }
  // The first set at the newest position.
  uint32_t NewestFirst() const {
    return FirstSetAtPositionOf(static_cast<uint32_t>(sets.size() - 1));
  }
  // The group of `set` waiting on `nt`, or nullptr.
  const WaitingGroup* FindGroup(uint32_t set, uint32_t nt) const;
  // The set holding group `group` (0 for kNoParent): an item's origin.
  uint32_t SetOfGroup(uint32_t group) const;
  // Items held now: waiting items, items on terminals, Leo entries.
  size_t ItemCount() const { return waiting.size() + scan.size() + leo_entries; }
};

}  // namespace zapgram::parser

#endif  // ZAPGRAM_PARSER_CHART_H_
