// A memo of the recognizer's transitions between canonical states: the
// parser as a DFA, built lazily from the input it reads.
//
// Validating a dataset feeds thousands of documents of one grammar, byte by
// byte, and a full Earley step costs ~100 ns even where the parse has been
// in the same state thousands of times (inside the same kind of value, at
// the same nesting). With pruning on, the recognizer's future depends only
// on its live chart, and Recognizer::CanonicalState spells that chart
// without positions: equal spellings accept exactly the same continuations
// (the mask cache's key). So a step is a function of (spelling, byte), and
// this memo numbers the spellings it meets (states) and keeps, per state, a
// row of 256 entries: the state after each byte, kRejected, or unknown. A
// byte whose entry is known costs one load; an unknown one restores the
// state's chart into a scratch recognizer (skipped when the scratch is
// already there: after a miss it sits in the state it just reached), takes
// the full step, spells the result and numbers it.
//
// A state keeps its chart as the compactor's dense live copy (what a
// rollback checkpoint holds), its row, its spelling (the key that finds
// it) and what a reader asks of it without a step: whether it accepts and
// its live item count. NextBytes at a state restores it (errors only).
//
// Deep states are not kept: a state whose live chart holds more than
// kMaxItems items (deep nesting) costs O(items) to spell and to store, and
// is rarely met twice. A step into one returns kDetached: the scratch
// recognizer then holds the state and steps plainly (no spelling), until
// a step leaves it within kMaxItems, where it is spelled and numbered
// again. So a 100,000-deep document parses at the plain recognizer's speed
// instead of spelling 100,000 items per byte.
//
// What is not memoized: a step that runs out of a parser budget (status()
// says which; nothing is recorded, so a later step from the state tries
// again). Equal spellings give equal live charts, and the budgets that a
// step checks are functions of the live chart, so a step taken from the
// memo is one that would have stayed within them. An error's message names
// the byte position of the chart it was restored from, not the document's:
// callers name the place themselves (zapgram parse does).
//
// Budget: the bytes of rows, spellings and charts (`budget_bytes`). A new
// state that would pass it first forgets every state but the start (a new
// generation): no bookkeeping per entry, and a dataset's recurring states
// come back within a few documents. Step returns the new state's number in
// the new generation; numbers held from before a clear must not be used
// again (a caller only ever holds the number Step returned last, and Step
// clears only when it makes a state, never on a rejection).
//
// One memo per thread (not thread-safe); the grammar it reads is shared.
// Lexed grammars work the same way (lanes are spelled in the key); grammars
// with token terminals read text bytes only.
//
// Tests: tests/parser/transition_memo_test.cc (verdicts, rejection offsets,
// NextBytes and item counts equal a plain recognizer's on json-docs,
// MaskBench documents and their mutations, Lark documents; tiny budgets
// that clear on every document).
#ifndef ZAPGRAM_PARSER_TRANSITION_MEMO_H_
#define ZAPGRAM_PARSER_TRANSITION_MEMO_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "parser/chart.h"
#include "parser/recognizer.h"

namespace zapgram::parser {

struct TransitionMemoStats {
  uint64_t hits = 0;     // steps read from a row (rejections included)
  uint64_t misses = 0;   // full steps taken
  uint64_t states = 0;   // states held now
  uint64_t clears = 0;   // generations ended by the budget
  uint64_t detached = 0; // steps into states too deep to keep (kDetached)
  uint64_t bytes = 0;    // held now
};

class TransitionMemo {
 public:
  static constexpr uint32_t kRejected = 0xFFFFFFFFu;
  static constexpr uint32_t kError = 0xFFFFFFFEu;  // a budget ran out: status()
  static constexpr uint32_t kStart = 0;
  // A state too deep to keep (above): held by the scratch recognizer alone.
  static constexpr uint32_t kDetached = 0xFFFFFFFCu;
  static constexpr size_t kMaxItems = 256;

  // `start` is a recognizer at the empty input with a compactor (pruning)
  // and no rollback (max_rollback 0); the memo keeps it as its scratch.
  TransitionMemo(Recognizer start, size_t budget_bytes);

  // The state after `byte` from `state` (kStart, or what Step returned
  // last), kRejected (`state` stays valid) or kError (status() says why).
  uint32_t Step(uint32_t state, uint8_t byte) {
    if (state != kDetached) {
      const uint32_t next = rows_[static_cast<size_t>(state) * 256 + byte];
      if (next < kDetached || next == kRejected) {
        ++stats_.hits;
        return next;
      }
    }
    return Miss(state, byte);
  }

  bool accepting(uint32_t state) const {
    return state == kDetached ? scratch_.IsAccepting() : states_[state].accepting;
  }
  // Recognizer::RetainedItems() in that state.
  size_t retained_items(uint32_t state) const {
    return state == kDetached ? scratch_.RetainedItems() : states_[state].retained_items;
  }
  // Recognizer::NextBytes() in that state (restores its chart).
  ByteSet NextBytes(uint32_t state);
  // Recognizer::PeakWorkPerSet() of the full steps taken so far.
  uint64_t peak_work_per_set() const { return scratch_.peak_work_per_set(); }
  const absl::Status& status() const { return status_; }
  TransitionMemoStats stats() const { return stats_; }

 private:
  static constexpr uint32_t kUnknown = 0xFFFFFFFDu;
  static_assert(kDetached < kUnknown && kUnknown < kError && kError < kRejected);
  struct State {
    Chart chart;  // the live chart, dense
    bool accepting = false;
    uint32_t retained_items = 0;
  };
  uint32_t Miss(uint32_t state, uint8_t byte);
  // Spells the scratch recognizer's state into key_ and numbers it,
  // adding it if new (Add: the state spelled in key_).
  uint32_t Intern();
  uint32_t Add();
  // Forgets every state but the start.
  void Clear();
  void MoveScratchTo(uint32_t state);
  // What a state holds: its row, chart and the table's copy of its spelling.
  static size_t StateBytes(const Chart& chart, const std::vector<uint32_t>& key);

  Recognizer scratch_;
  uint32_t scratch_state_ = kStart;  // the state the scratch recognizer is in
  size_t budget_bytes_;
  std::vector<State> states_;
  std::vector<uint32_t> rows_;  // 256 per state
  absl::flat_hash_map<std::vector<uint32_t>, uint32_t> ids_;
  std::vector<uint32_t> key_;
  Chart live_;  // LiveChart buffer
  std::vector<uint32_t> start_key_;
  absl::Status status_;
  TransitionMemoStats stats_;
};

}  // namespace zapgram::parser

#endif  // ZAPGRAM_PARSER_TRANSITION_MEMO_H_
