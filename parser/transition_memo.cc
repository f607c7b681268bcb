// See transition_memo.h.
#include "parser/transition_memo.h"

#include <cassert>
#include <utility>

#include "grammar/heap_bytes.h"

namespace zapgram::parser {

namespace {

// A state's bytes besides its chart and spelling: its row, the State
// itself, and the hash table's slot for its spelling.
constexpr size_t kStateOverhead = 256 * sizeof(uint32_t) + 128;

}  // namespace

TransitionMemo::TransitionMemo(Recognizer start, size_t budget_bytes)
    : scratch_(std::move(start)), budget_bytes_(budget_bytes) {
  [[maybe_unused]] const bool spelled = scratch_.CanonicalState(&key_);
  assert(spelled && scratch_.options().max_rollback == 0);
  start_key_ = key_;
  Add();
}

size_t TransitionMemo::StateBytes(const Chart& chart, const std::vector<uint32_t>& key) {
  return kStateOverhead + grammar::HeapBytes(chart.sets) + grammar::HeapBytes(chart.waiting) +
         grammar::HeapBytes(chart.groups) + grammar::HeapBytes(chart.scan) +
         key.size() * sizeof(uint32_t);  // the table's copy (key_ is scratch)
}

void TransitionMemo::MoveScratchTo(uint32_t state) {
  if (scratch_state_ == state) return;
  assert(state != kDetached);  // a detached state lives only in the scratch
  scratch_.RestoreLiveChart(states_[state].chart);
  scratch_state_ = state;
}

uint32_t TransitionMemo::Miss(uint32_t state, uint8_t byte) {
  ++stats_.misses;
  MoveScratchTo(state);
  if (!scratch_.Feed(byte)) {
    if (!scratch_.status().ok()) {
      status_ = scratch_.status();  // the scratch stays in `state`
      return kError;
    }
    if (state != kDetached) rows_[static_cast<size_t>(state) * 256 + byte] = kRejected;
    return kRejected;
  }
  status_ = absl::OkStatus();
  if (scratch_.RetainedItems() > kMaxItems) {
    ++stats_.detached;
    scratch_state_ = kDetached;
    return kDetached;
  }
  const uint64_t clears = stats_.clears;
  const uint32_t next = Intern();
  // A clear forgot `state` (its number may now name the new state).
  if (state != kDetached && stats_.clears == clears) rows_[static_cast<size_t>(state) * 256 + byte] = next;
  scratch_state_ = next;
  return next;
}

uint32_t TransitionMemo::Intern() {
  scratch_.CanonicalState(&key_);
  if (auto it = ids_.find(key_); it != ids_.end()) return it->second;
  return Add();
}

uint32_t TransitionMemo::Add() {
  // Copied out of the reused buffer: the copy's arrays are exactly as long
  // as the live chart.
  scratch_.LiveChart(&live_);
  State s{live_, scratch_.IsAccepting(), static_cast<uint32_t>(scratch_.RetainedItems())};
  const size_t cost = StateBytes(s.chart, key_);
  if (!states_.empty() && stats_.bytes + cost > budget_bytes_) Clear();
  const uint32_t id = static_cast<uint32_t>(states_.size());
  states_.push_back(std::move(s));
  rows_.resize(rows_.size() + 256, kUnknown);
  ids_.emplace(key_, id);
  stats_.bytes += cost;
  stats_.states = states_.size();
  return id;
}

void TransitionMemo::Clear() {
  ++stats_.clears;
  states_.resize(1);
  rows_.assign(256, kUnknown);
  ids_.clear();
  ids_.emplace(start_key_, kStart);
  stats_.bytes = StateBytes(states_[0].chart, start_key_);
  stats_.states = 1;
  // The scratch recognizer holds the state being added, not a numbered one.
  scratch_state_ = kUnknown;
}

ByteSet TransitionMemo::NextBytes(uint32_t state) {
  MoveScratchTo(state);
  return scratch_.NextBytes();
}

}  // namespace zapgram::parser
