// The Earley step: scan, then close the new set (complete and predict).
//
// Textbook Earley (Earley 1970) over bytes, with three well-known refinements:
//  - Aycock–Horspool (2002): when an item's dot stands before a nullable
//    nonterminal, the item advanced over it is added at once. Completions
//    whose origin is the current set are then redundant and skipped, so no
//    fixpoint over empty rules ever runs.
//  - Leo (1991): a set whose only item waiting on A ends right after A makes
//    completing A deterministic; the set's group for A stores the topmost
//    item of the chain and completion jumps there (see chart.h). Right
//    recursion costs O(1) per step instead of O(depth).
//  - Prediction from precomputed closures (flat_grammar.h): predicting a
//    nonterminal adds its whole closure at once, deduplicated per dot.
//
// Item identity: items whose origin is the current set come only from
// prediction and are deduplicated by dot (a per-dot stamp); completed items
// by their parent alone (completing A from one origin has one effect,
// whichever rule of A ended); every other item by (dot, parent[, state]) in
// chains per parent group, reset per step by stamps. A chain then holds
// items of one nonterminal's rules, bounded by the grammar: keyed by dot,
// `s: s s | "a"` had one node per origin in the chain of `s -> s . s`, and
// deduplication cost O(n^3) over n bytes.
// Items store their parent group rather than their origin (chart.h); while a
// set is being built, the parents of its own predicted items are not known
// yet and are written as kPendingParent | lhs, resolved when the set is done.
//
// Glossary, textbook -> here: "state" (Earley item) -> Item / WaitingItem;
// "state set S_i" -> EarleySet (ranges of the chart's arrays); "scanner" ->
// the scan loop of BuildNextSet; "completer" and "predictor" -> CloseSet.
//
// Tests: tests/parser/recognizer_test.cc, differential_test.cc (against a
// textbook oracle), hard_cases_test.cc (AmbiguousDoublingOnLongInput pins the
// deduplication cost).
#include "parser/recognizer.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <utility>

#include "absl/strings/str_cat.h"

namespace zapgram::parser {

namespace {

// Inside brackets the Indenter drops the newline token: a lane's view
// counts it among the tokens its open token may become, as an ignored one
// (so masks keep the tokens inside it and walk where it ends).
void AddDroppedNewline(const LexerTable& lexer, absl::Span<const uint32_t> indent, uint32_t state,
                       TokenBits* tokens) {
  if (indent.empty() || indent[kIndentDepth] == 0) return;
  if (lexer.CanContinue(state, lexer.indenter.nl)) AddToken(tokens, lexer.indenter.nl);
}

}  // namespace

Recognizer::Recognizer(const FlatGrammar* grammar, const RecognizerOptions& options,
                       std::unique_ptr<ChartCompactor> compactor)
    : grammar_(grammar), options_(options), compactor_(std::move(compactor)) {
  // Group indices must stay below kPendingParent.
  options_.limits.max_total_items = std::min<uint64_t>(options_.limits.max_total_items, 1u << 30);
  predicted_stamp_.assign(grammar_->num_nonterminals(), 0);
  group_of_nt_.assign(grammar_->num_nonterminals(), kNoParent);
  dot_stamp_.assign(grammar_->rhs.size(), 0);
  pending_stamp_.assign(grammar_->rhs.size(), 0);
  if (grammar_->lexed()) {
    indenting_ = grammar_->lexer->indenter.on();
    // Lane 0: a token boundary (with the Indenter's initial state).
    InternLane(/*lexer_state=*/1, {}, indenting_ ? InitialIndentState() : std::vector<uint32_t>{});
    // The lane of the Indenter's interior sets (one per indent or dedent
    // token before the last of a newline's run): lexer state 0 (dead), so
    // no byte steps it.
    if (indenting_) interior_lane_ = InternLane(/*lexer_state=*/0, {}, {});
  }
  in_place_steps_ = options_.in_place_terminal_steps && compactor_ != nullptr &&
                    options_.max_rollback == 0 && !grammar_->lexed();
  Reset();
}

void Recognizer::Reset() {
  status_ = absl::OkStatus();
  BuildInitialSet(chart_);
  checkpoints_.clear();
  replay_.clear();
  rollback_limit_ = 0;
  if (compactor_ != nullptr) {
    compactor_->Reset(*grammar_, chart_);
    if (options_.max_rollback > 0) TakeCheckpoint();
  }
}

void Recognizer::TakeCheckpoint() {
  Checkpoint cp;
  cp.position = Position();
  compactor_->CopyLive(*grammar_, chart_, &cp.chart);
  // The dense copy also replaces the working chart, dropping its tombstones:
  // the next checkpoint then costs O(live + bytes since), not O(everything).
  chart_ = cp.chart;
  compactor_->Reset(*grammar_, chart_);
  checkpoints_.push_back(std::move(cp));
  // Keep the newest checkpoint at or before the rollback window's start.
  const uint64_t window_start =
      Position() > options_.max_rollback ? Position() - options_.max_rollback : 0;
  while (checkpoints_.size() > 1 && checkpoints_[1].position <= window_start) {
    replay_.erase(replay_.begin(),
                  replay_.begin() + static_cast<std::ptrdiff_t>(checkpoints_[1].position -
                                                                checkpoints_[0].position));
    checkpoints_.pop_front();
  }
}

void Recognizer::NextSerial() {
  if (++serial_ == 0) {
    std::fill(predicted_stamp_.begin(), predicted_stamp_.end(), 0);
    std::fill(dot_stamp_.begin(), dot_stamp_.end(), 0);
    std::fill(pending_stamp_.begin(), pending_stamp_.end(), 0);
    std::fill(seen_stamp_.begin(), seen_stamp_.end(), 0);
    std::fill(completed_stamp_.begin(), completed_stamp_.end(), 0);
    serial_ = 1;
  }
}

void Recognizer::BeginSet() {
  // Per-group stamps cover every group an item of the new set can name.
  const size_t groups = current().groups.size() + 1;
  if (seen_stamp_.size() < groups) {
    const size_t size = std::max(groups, 2 * seen_stamp_.size());
    seen_stamp_.resize(size, 0);
    seen_head_.resize(size, kNoNode);
    completed_stamp_.resize(size, 0);
  }
  NextSerial();
  worklist_.clear();
  new_scan_.clear();
  new_waiting_.clear();
  seen_nodes_.clear();
  new_accepting_ = false;
  items_this_set_ = 0;
  work_this_set_ = 0;
  budget_hit_ = false;
}

void Recognizer::BuildInitialSet(Chart& chart) {
  chart.Clear();
  BeginSet();
  set_index_ = 0;
  closing_position_ = 0;
  AddItem(grammar_->start_dot, kNoParent);
  CloseSet();
  FinishSet(chart, /*position=*/0);
}

void Recognizer::CountItem() {
  if (++items_this_set_ > options_.limits.max_items_per_set) budget_hit_ = true;
}

void Recognizer::CountWork(uint64_t n) {
  work_this_set_ += n;
  peak_work_ = std::max(peak_work_, work_this_set_);
  if (work_this_set_ > options_.limits.max_work_per_set) budget_hit_ = true;
}

absl::Status Recognizer::SetBudgetError(uint64_t position) const {
  if (work_this_set_ > options_.limits.max_work_per_set) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "Earley set at byte ", position, " exceeds max_work_per_set = ",
        options_.limits.max_work_per_set, " item attempts (an ambiguous grammar?)"));
  }
  return absl::ResourceExhaustedError(absl::StrCat("Earley set at byte ", position,
                                                   " exceeds max_items_per_set = ",
                                                   options_.limits.max_items_per_set));
}

bool Recognizer::MarkSeen(uint32_t dot, uint32_t parent, uint32_t state) {
  // Keyed by parent: the items of one parent group in one set are items of
  // the rules of one nonterminal, so a chain is bounded by the grammar (dots
  // times terminal states), never by the input. (Keyed by dot, the chain of
  // `s -> s . s` in `s: s s | "a"` held one node per origin: quadratic.)
  const uint32_t slot = parent == kNoParent ? 0 : parent + 1;
  if (seen_stamp_[slot] != serial_) {
    seen_stamp_[slot] = serial_;
    seen_head_[slot] = static_cast<uint32_t>(seen_nodes_.size());
    seen_nodes_.push_back({dot, state, kNoNode});
    return true;
  }
  uint32_t* link = &seen_head_[slot];
  while (*link != kNoNode) {
    ++dedup_probes_;
    const SeenNode& node = seen_nodes_[*link];
    if (node.dot == dot && node.state == state) return false;
    link = &seen_nodes_[*link].next;
  }
  *link = static_cast<uint32_t>(seen_nodes_.size());
  seen_nodes_.push_back({dot, state, kNoNode});
  return true;
}

void Recognizer::AddScanItem(uint32_t dot, uint32_t parent, uint32_t state) {
  CountWork(1);
  if (IsPending(parent)) {
    if (dot_stamp_[dot] == serial_) return;
    dot_stamp_[dot] = serial_;
  } else if (!MarkSeen(dot, parent, state)) {
    return;
  }
  CountItem();
  new_scan_.push_back({dot, parent, state});
}

void Recognizer::AddItem(uint32_t dot, uint32_t parent) {
  CountWork(1);
  Symbol s = grammar_->rhs[dot];
  if (IsTerminal(s)) {
    AddScanItem(dot, parent, ScanState(s));
    return;
  }
  if (IsPending(parent)) {
    // Items predicted in this set: the dot implies the parent.
    if (pending_stamp_[dot] == serial_) return;
    pending_stamp_[dot] = serial_;
  } else if (IsEnd(s) && parent != kNoParent) {
    // A completion's effect depends on its parent group only (CloseSet), so
    // completions of different rules of one nonterminal from one origin are
    // one: each origin group is consulted once per set.
    if (completed_stamp_[parent] == serial_) return;
    completed_stamp_[parent] = serial_;
  } else if (!MarkSeen(dot, parent, 0)) {
    return;
  }
  CountItem();
  worklist_.push_back({dot, parent});
}

void Recognizer::Predict(uint32_t nt) {
  if (predicted_stamp_[nt] == serial_) return;
  predicted_stamp_[nt] = serial_;
  const FlatGrammar& g = *grammar_;
  CountWork(g.predict_waiting_begin[nt + 1] - g.predict_waiting_begin[nt]);
  for (uint32_t i = g.predict_waiting_begin[nt]; i < g.predict_waiting_begin[nt + 1]; ++i) {
    uint32_t dot = g.predict_waiting[i];
    if (dot_stamp_[dot] == serial_) continue;
    dot_stamp_[dot] = serial_;
    CountItem();
    new_waiting_.push_back({g.rhs[dot], dot, kPendingParent | g.dot_lhs[dot]});
  }
  for (uint32_t i = g.predict_scan_begin[nt]; i < g.predict_scan_begin[nt + 1]; ++i) {
    uint32_t dot = g.predict_scan[i];
    AddScanItem(dot, kPendingParent | g.dot_lhs[dot], ScanState(g.rhs[dot]));
  }
}

void Recognizer::CloseSet() {
  const FlatGrammar& g = *grammar_;
  const Chart& chart = current();
  while (!worklist_.empty() && !budget_hit_) {
    PendingItem item = worklist_.back();
    worklist_.pop_back();
    Symbol s = g.rhs[item.dot];
    if (IsEnd(s)) {
      if (item.parent == kNoParent) {  // the start symbol completed from set 0
        new_accepting_ = true;
        continue;
      }
      // Aycock–Horspool: empty completions were applied at prediction time.
      if (IsPending(item.parent)) continue;
      if (completion_log_ != nullptr) LogCompletion(chart, item.dot, item.parent);
      lowest_consulted_ = std::min(lowest_consulted_, item.parent);
      const WaitingGroup& group = chart.groups[item.parent];
      if (group.leo_dot != kNoLeo) {
        AddItem(group.leo_dot, group.leo_parent);
        continue;
      }
      const WaitingItem* w = chart.waiting.data() + group.first;
      for (uint32_t k = 0; k < group.count; ++k) AddItem(w[k].dot + 1, w[k].parent);
      continue;
    }
    // The dot stands before a nonterminal (terminals never enter the worklist).
    new_waiting_.push_back({s, item.dot, item.parent});
    Predict(s);
    if (g.nullable[s]) AddItem(item.dot + 1, item.parent);
  }
}

void Recognizer::LogCompletion(const Chart& chart, uint32_t dot, uint32_t parent) {
  const uint32_t nt = grammar_->dot_lhs[dot];
  if (grammar_->CaptureOf(nt) == 0) return;
  completion_log_->push_back({nt, chart.sets[chart.SetOfGroup(parent)].position, closing_position_});
}

void Recognizer::FinishSet(Chart& chart, uint64_t position, uint32_t lane,
                           bool accept_if_ignored) {
  const FlatGrammar& g = *grammar_;
  EarleySet set;
  set.position = position;
  set.lane = lane;
  set.waiting_begin = static_cast<uint32_t>(chart.waiting.size());
  set.group_begin = static_cast<uint32_t>(chart.groups.size());
  set.scan_begin = static_cast<uint32_t>(chart.scan.size());
  set.accepting = (new_accepting_ ? kAccepting : 0) | (accept_if_ignored ? kAcceptingIfIgnored : 0);
  std::sort(new_waiting_.begin(), new_waiting_.end(),
            [](const PendingWaiting& a, const PendingWaiting& b) { return a.nt < b.nt; });
  // Groups first (their indices resolve the pending parents), then items.
  for (size_t i = 0; i < new_waiting_.size();) {
    size_t j = i;
    while (j < new_waiting_.size() && new_waiting_[j].nt == new_waiting_[i].nt) ++j;
    group_of_nt_[new_waiting_[i].nt] = static_cast<uint32_t>(chart.groups.size());
    chart.groups.push_back({new_waiting_[i].nt, static_cast<uint32_t>(chart.waiting.size() + i),
                            static_cast<uint32_t>(j - i), kNoLeo, 0});
    i = j;
  }
  auto resolve = [&](uint32_t parent) {
    if (!IsPending(parent)) return parent;
    uint32_t group = group_of_nt_[parent & ~kPendingParent];
    // Whatever predicted an item waits on its lhs in this very set.
    assert(group >= set.group_begin && group < chart.groups.size());
    return group;
  };
  for (const PendingWaiting& w : new_waiting_) chart.waiting.push_back({w.dot, resolve(w.parent)});
  set.group_end = static_cast<uint32_t>(chart.groups.size());
  // Leo: a group with one item that ends right after the nonterminal and
  // whose parent lies in an earlier set (chains through this set are left to
  // ordinary completion). The entry jumps over the completion of the item's
  // own rule only when that rule is not observed (captured, or with a
  // temperature: FlatGrammar::observed), so that such a rule's completions
  // are all seen and a chain through it can be walked (active_rules.h).
  for (uint32_t gi = set.group_begin; gi < set.group_end; ++gi) {
    WaitingGroup& group = chart.groups[gi];
    if (group.count != 1) continue;
    const WaitingItem& w = chart.waiting[group.first];
    if (!IsEnd(g.rhs[w.dot + 1])) continue;
    if (w.parent != kNoParent && w.parent >= set.group_begin) continue;
    if (w.parent != kNoParent) lowest_consulted_ = std::min(lowest_consulted_, w.parent);
    if (w.parent != kNoParent && chart.groups[w.parent].leo_dot != kNoLeo && !g.observed(g.dot_lhs[w.dot])) {
      group.leo_dot = chart.groups[w.parent].leo_dot;
      group.leo_parent = chart.groups[w.parent].leo_parent;
    } else {
      group.leo_dot = w.dot + 1;
      group.leo_parent = w.parent;
    }
    ++chart.leo_entries;
  }
  for (const Item& item : new_scan_) {
    chart.scan.push_back({item.dot, resolve(item.parent), item.state});
  }
  set.scan_end = static_cast<uint32_t>(chart.scan.size());
  chart.sets.push_back(set);
}

bool Recognizer::BuildNextSet(Chart& chart, uint8_t byte, TokenMark mark) {
  const FlatGrammar& g = *grammar_;
  const TerminalTable& t = g.terminals;
  const EarleySet& last = chart.sets.back();
  const uint64_t position = last.position + 1;
  closing_position_ = position;
  BeginSet();
  set_index_ = static_cast<uint32_t>(chart.sets.size());
  // Token states leave on no byte, so plain bytes need no test for them.
  const bool token_step = mark.has(TokenMark::kActive);
  // Scan: every item on a terminal steps its automaton.
  for (uint32_t i = last.scan_begin; i < last.scan_end; ++i) {
    const Item item = chart.scan[i];
    if (token_step) {
      // Token path: an item on a matching token terminal takes the token at
      // its first position and holds until its last (FeedToken).
      if (item.state >= g.token_state_begin && item.state < g.token_state_end) {
        const bool takes = item.state == g.token_hold_state()
                               ? !mark.has(TokenMark::kFirst)
                               : mark.has(TokenMark::kFirst) &&
                                     g.TokenTerminalOf(item.state)
                                         .Matches(mark.id, mark.has(TokenMark::kNormal));
        if (!takes) continue;
        if (mark.has(TokenMark::kLast)) {
          AddItem(item.dot + 1, item.parent);
        } else {
          AddScanItem(item.dot, item.parent, g.token_hold_state());
        }
        continue;
      }
      if (mark.has(TokenMark::kNoByte)) continue;  // no text path
    }
    uint32_t next = t.Step(item.state, byte);
    if (next == 0) continue;
    if (next == TerminalTable::kOverflow) [[unlikely]] {
      status_ = absl::ResourceExhaustedError(absl::StrCat(
          "byte ", position, ": the lazily built terminal automata reached their state limit (",
          t.lazy->max_states(), " states; CompileLimits::max_dfa_states)"));
      return false;
    }
    if (t.has_next(next)) AddScanItem(item.dot, item.parent, next);
    if (t.accepting(next)) AddItem(item.dot + 1, item.parent);
  }
  if (worklist_.empty() && new_scan_.empty()) return false;
  CloseSet();
  if (budget_hit_) {
    status_ = SetBudgetError(position);
    return false;
  }
  if (new_scan_.empty() && !new_accepting_) return false;
  FinishSet(chart, position);
  return true;
}

uint32_t Recognizer::InternLane(uint32_t lexer_state, const std::vector<uint32_t>& guards,
                                const std::vector<uint32_t>& indent) {
  // Most lanes have no guards (and no indentation state): those are found
  // by lexer state, no hashing.
  const bool plain = guards.empty() && indent.empty();
  if (plain && lexer_state < plain_lane_.size() && plain_lane_[lexer_state] != kNoLane) {
    return plain_lane_[lexer_state];
  }
  lane_key_.assign({lexer_state, static_cast<uint32_t>(guards.size())});
  lane_key_.insert(lane_key_.end(), guards.begin(), guards.end());
  lane_key_.insert(lane_key_.end(), indent.begin(), indent.end());
  uint32_t id;
  if (auto it = lane_ids_.find(lane_key_); it != lane_ids_.end()) {
    id = it->second;
  } else {
    id = static_cast<uint32_t>(lanes_.size());
    lane_ids_.emplace(lane_key_, id);
    lanes_.push_back(lane_key_);
  }
  if (plain) {
    if (plain_lane_.size() <= lexer_state) plain_lane_.resize(2 * lexer_state + 2, kNoLane);
    plain_lane_[lexer_state] = id;
  }
  return id;
}

bool Recognizer::AdvanceChain(uint32_t source, absl::Span<const uint32_t> chain, uint64_t position,
                              std::vector<PendingItem>* out) {
  // The items of `source` on chain[0], advanced; then for each further token
  // an interior set: those items closed, and its items on the next token
  // advanced. The interior sets keep their groups (the advanced items' parents
  // may lie there) but no items on tokens: their lane is never stepped.
  Chart& chart = current();
  const FlatGrammar& g = *grammar_;
  chain_items_.clear();
  {
    const Symbol symbol = kTerminalTag | chain[0];
    for (uint32_t i = chart.sets[source].scan_begin; i < chart.sets[source].scan_end; ++i) {
      const Item& item = chart.scan[i];
      if (g.rhs[item.dot] == symbol) chain_items_.push_back({item.dot + 1, item.parent});
    }
  }
  size_t interior = 0;
  for (size_t k = 1; k < chain.size() && !chain_items_.empty(); ++k) {
    BeginSet();
    set_index_ = static_cast<uint32_t>(chart.sets.size());
    for (const PendingItem& item : chain_items_) AddItem(item.dot, item.parent);
    CloseSet();
    if (budget_hit_) {
      for (; interior > 0; --interior) chart.PopSet();
      status_ = SetBudgetError(position);
      return false;
    }
    FinishSet(chart, position, interior_lane_);
    ++interior;
    EarleySet& set = chart.sets.back();
    set.accepting = 0;  // tokens are still to come
    const Symbol symbol = kTerminalTag | chain[k];
    chain_items_.clear();
    for (uint32_t i = set.scan_begin; i < set.scan_end; ++i) {
      const Item& item = chart.scan[i];
      if (g.rhs[item.dot] == symbol) chain_items_.push_back({item.dot + 1, item.parent});
    }
    chart.scan.resize(set.scan_begin);
    set.scan_end = set.scan_begin;
  }
  if (chain_items_.empty()) {
    for (; interior > 0; --interior) chart.PopSet();  // the run dies: nothing refers to them
    return true;
  }
  out->insert(out->end(), chain_items_.begin(), chain_items_.end());
  return true;
}

bool Recognizer::DedentsAccept(uint32_t set, uint32_t dedents) {
  // At the end of the input the Indenter emits one dedent per level: the
  // set accepts when the start symbol completes after them. Speculative
  // closures on top of the chart, popped again.
  const uint32_t dedent = grammar_->lexer->indenter.dedent;
  if (dedent == kNoIndentToken) return false;
  uint32_t pushed = 0;
  uint32_t source = set;
  bool accepting = false;
  for (uint32_t k = 0; k < dedents; ++k) {
    if (!PushTokenEnd(source, dedent)) break;
    ++pushed;
    source = NumSets() - 1;
    accepting = k + 1 == dedents && (chart_.sets.back().accepting & kAccepting) != 0;
  }
  for (; pushed > 0; --pushed) Pop();
  return accepting;
}

bool Recognizer::BuildNextLexedSets(Chart& chart, uint8_t byte) {
  const FlatGrammar& g = *grammar_;
  const LexerTable& lexer = *g.lexer;
  const uint32_t first = chart.NewestFirst();
  const uint32_t end = static_cast<uint32_t>(chart.sets.size());
  const uint64_t position = chart.sets.back().position + 1;
  closing_position_ = position;
  // Targets are reused across steps (their vectors keep their capacity) and
  // found by lane through a per-lane stamp.
  num_targets_ = 0;
  if (++target_serial_ == 0) {
    std::fill(target_stamp_.begin(), target_stamp_.end(), 0);
    target_serial_ = 1;
  }
  auto target = [&](uint32_t lane) -> LaneTarget& {
    if (lane >= target_stamp_.size()) {
      target_stamp_.resize(2 * lane + 2, 0);
      target_index_.resize(2 * lane + 2, 0);
    }
    if (target_stamp_[lane] != target_serial_) {
      target_stamp_[lane] = target_serial_;
      target_index_[lane] = num_targets_;
      if (num_targets_ == targets_.size()) targets_.emplace_back();
      LaneTarget& t = targets_[num_targets_++];
      t.lane = lane;
      t.accept = t.accept_if_ignored = false;
      t.scan_sources = 0;
      t.scan.clear();
      t.advance.clear();
    }
    return targets_[target_index_[lane]];
  };
  // Step each lane; route its items to the lane going on (token still open)
  // and, where the lexer emits a token, to the boundary lane after it.
  const IndenterTable& indenter = lexer.indenter;
  eof_checks_.clear();
  for (uint32_t si = first; si < end; ++si) {
    // Copied: the Indenter's interior sets may be pushed below (chart.sets
    // grows) and lanes interned (lanes_ grows).
    const EarleySet set = chart.sets[si];
    const std::vector<uint32_t>& lane = lanes_[set.lane];
    const uint32_t state = lexer.Step(lane[0], byte);
    if (state == 0) continue;
    guard_scratch_.clear();
    if (!StepGuards(lexer, lane.data() + 2, lane[1], byte, &guard_scratch_)) continue;
    const bool accept_before = set.accepting != 0;
    // The Indenter: the open token's count, and whether a newline is
    // dropped here (inside brackets), i.e. acts as an ignored token.
    uint32_t count = kNoCount;
    bool nl_dropped = false;
    if (indenting_) {
      indent_before_.assign(lane.begin() + 2 + lane[1], lane.end());
      count = StepIndentCount(indenter, indent_before_[kIndentCount], byte);
      nl_dropped = indent_before_[kIndentDepth] > 0;
    }
    const bool ignored_open = lexer.ignored_can_continue[state] != 0 ||
                              (nl_dropped && lexer.CanContinue(state, indenter.nl));
    // The token goes on.
    {
      if (indenting_) {
        OpenIndentState(indent_before_, count, lexer.CanContinue(state, indenter.nl), &indent_after_);
      }
      const uint32_t open_lane = InternLane(state, guard_scratch_, indent_after_);
      LaneTarget& t = target(open_lane);
      t.accept_if_ignored |= accept_before && ignored_open;
      ++t.scan_sources;
      for (uint32_t i = set.scan_begin; i < set.scan_end; ++i) {
        const Item& item = chart.scan[i];
        if (ignored_open || lexer.CanContinue(state, Payload(g.rhs[item.dot]))) {
          t.scan.push_back({item.dot, item.parent});
        }
      }
    }
    // The token ends here.
    const uint32_t token = lexer.emit[state];
    if (token == kNoToken) continue;
    AddEmitGuard(lexer, state, &guard_scratch_);
    IndentEffect effect;
    if (indenting_) {
      effect = IndentAfterToken(indenter, indent_before_, token, count, options_.limits.max_indent_levels,
                                &indent_after_);
      if (effect.kind == IndentEffect::kDead) continue;
      if (effect.kind == IndentEffect::kOverBudget) {
        while (chart.sets.size() > end) chart.PopSet();
        status_ = absl::ResourceExhaustedError(absl::StrCat(
            "byte ", position, ": the indentation stack exceeds max_indent_levels = ",
            options_.limits.max_indent_levels));
        return false;
      }
    }
    if (lexer.ignored[token] || effect.kind == IndentEffect::kDropped) {
      LaneTarget& t = target(InternLane(/*lexer_state=*/1, guard_scratch_, indent_after_));
      t.accept |= accept_before;
      ++t.scan_sources;
      for (uint32_t i = set.scan_begin; i < set.scan_end; ++i) {
        t.scan.push_back({chart.scan[i].dot, chart.scan[i].parent});
      }
      continue;
    }
    const uint32_t boundary = InternLane(/*lexer_state=*/1, guard_scratch_, indent_after_);
    if (effect.indents + effect.dedents > 0) {
      // A newline followed by indent or dedent tokens: interior sets, then
      // the items after the last token go into the boundary lane.
      chain_.assign(1, token);
      chain_.insert(chain_.end(), effect.indents, indenter.indent);
      chain_.insert(chain_.end(), effect.dedents, indenter.dedent);
      chain_advance_.clear();
      if (!AdvanceChain(si, chain_, position, &chain_advance_)) {
        while (chart.sets.size() > end) chart.PopSet();
        return false;
      }
      LaneTarget& t = target(boundary);
      t.advance.insert(t.advance.end(), chain_advance_.begin(), chain_advance_.end());
      continue;
    }
    LaneTarget& t = target(boundary);
    const Symbol symbol = kTerminalTag | token;
    for (uint32_t i = set.scan_begin; i < set.scan_end; ++i) {
      const Item& item = chart.scan[i];
      if (g.rhs[item.dot] == symbol) t.advance.push_back({item.dot + 1, item.parent});
    }
  }
  if (lanes_.size() > options_.limits.max_lanes) {
    status_ = absl::ResourceExhaustedError(absl::StrCat(
        "lexer lanes after byte ", position, " exceed max_lanes = ", options_.limits.max_lanes));
    return false;
  }
  // Build one set per target lane.
  bool pushed = false;
  for (uint32_t ti = 0; ti < num_targets_; ++ti) {
    const LaneTarget& t = targets_[ti];
    BeginSet();
    set_index_ = static_cast<uint32_t>(chart.sets.size());
    if (t.scan_sources == 1 && t.advance.empty()) {
      // One set's items, distinct there, go on with their token: nothing to
      // deduplicate, complete or predict (the copy the issue calls "copied
      // lane items" is then all a step costs).
      for (const PendingItem& item : t.scan) {
        CountItem();
        new_scan_.push_back({item.dot, item.parent, 0});
      }
    } else {
      for (const PendingItem& item : t.scan) AddScanItem(item.dot, item.parent, 0);
      for (const PendingItem& item : t.advance) AddItem(item.dot, item.parent);
      CloseSet();
    }
    if (budget_hit_) {
      while (chart.sets.size() > end) chart.PopSet();
      status_ = SetBudgetError(position);
      return false;
    }
    // With levels left on the Indenter's stack, the start symbol completed
    // here does not accept: the end of the input emits dedents first
    // (DedentsAccept below decides).
    const uint32_t levels = indenting_ ? IndentLevels(LaneIndent(t.lane)) : 0;
    if (levels > 0) new_accepting_ = false;
    const bool check_eof = levels > 0 && !t.advance.empty();
    new_accepting_ |= t.accept;
    if (new_scan_.empty() && !new_accepting_ && !t.accept_if_ignored) continue;
    FinishSet(chart, position, t.lane, t.accept_if_ignored);
    if (check_eof) eof_checks_.push_back({static_cast<uint32_t>(chart.sets.size() - 1), levels});
    pushed = true;
  }
  if (!pushed) {
    while (chart.sets.size() > end) chart.PopSet();  // interior sets of runs that led nowhere
    return false;
  }
  for (const auto& [set, levels] : eof_checks_) {
    if (DedentsAccept(set, levels)) chart.sets[set].accepting |= kAccepting;
    if (!status_.ok()) {
      while (chart.sets.size() > end) chart.PopSet();
      return false;
    }
  }
  return pushed;
}

bool Recognizer::Push(uint8_t byte) { return PushStep(byte, {}); }

bool Recognizer::PushStep(uint8_t byte, TokenMark mark) {
  if (!status_.ok()) return false;
  if (grammar_->lexed()) return BuildNextLexedSets(current(), byte);
  return BuildNextSet(current(), byte, mark);
}

void Recognizer::Pop() { current().PopPosition(); }

TokenMark Recognizer::MarkOf(uint32_t id, bool normal, size_t position, size_t positions,
                             bool no_byte) {
  TokenMark mark;
  mark.id = id;
  mark.flags = TokenMark::kActive | (normal ? TokenMark::kNormal : 0) |
               (position == 0 ? TokenMark::kFirst : 0) |
               (position + 1 == positions ? TokenMark::kLast : 0) | (no_byte ? TokenMark::kNoByte : 0);
  return mark;
}

size_t Recognizer::PushToken(uint32_t id, bool normal, std::string_view bytes) {
  const size_t positions = std::max<size_t>(1, bytes.size());
  for (size_t k = 0; k < positions; ++k) {
    const uint8_t byte = bytes.empty() ? 0 : static_cast<uint8_t>(bytes[k]);
    if (!PushStep(byte, MarkOf(id, normal, k, positions, bytes.empty()))) {
      for (size_t j = 0; j < k; ++j) Pop();
      return 0;
    }
  }
  return positions;
}

bool Recognizer::FeedToken(uint32_t id, bool normal, std::string_view bytes) {
  status_ = absl::OkStatus();
  // Checked first without touching the committed state (all or nothing).
  const size_t positions = PushToken(id, normal, bytes);
  if (positions == 0) return false;
  for (size_t k = 0; k < positions; ++k) Pop();
  for (size_t k = 0; k < positions; ++k) {
    const uint8_t byte = bytes.empty() ? 0 : static_cast<uint8_t>(bytes[k]);
    if (!FeedStep(byte, MarkOf(id, normal, k, positions, bytes.empty()))) return false;  // a budget
  }
  return true;
}

bool Recognizer::Feed(uint8_t byte) { return FeedStep(byte, {}); }

bool Recognizer::StepInsideTerminals(uint8_t byte) {
  Chart& chart = chart_;
  EarleySet& last = chart.sets.back();
  const uint32_t count = last.scan_end - last.scan_begin;
  // Sets of one position beside it (lanes) or too many items to compare:
  // the full step.
  if (count == 0 || count > 8 || chart.sets.size() < 2 ||
      chart.sets[chart.sets.size() - 2].position == last.position) {
    return false;
  }
  const TerminalTable& t = grammar_->terminals;
  uint32_t next[8];
  for (uint32_t k = 0; k < count; ++k) {
    const Item& item = chart.scan[last.scan_begin + k];
    const uint32_t s = t.Step(item.state, byte);
    // A terminal that dies, may end here (its completion is a full step)
    // or ran out of lazy states goes the usual way.
    if (s == 0 || s == TerminalTable::kOverflow || t.accepting(s) || !t.has_next(s)) return false;
    next[k] = s;
    for (uint32_t j = 0; j < k; ++j) {
      const Item& other = chart.scan[last.scan_begin + j];
      if (other.dot == item.dot && other.parent == item.parent) return false;  // could merge
    }
  }
  for (uint32_t k = 0; k < count; ++k) chart.scan[last.scan_begin + k].state = next[k];
  ++last.position;
  last.accepting = 0;  // no terminal ended, so neither did the start symbol
  ++in_place_count_;
  return true;
}

bool Recognizer::FeedStep(uint8_t byte, TokenMark mark) {
  status_ = absl::OkStatus();
  if (in_place_steps_ && !mark.has(TokenMark::kActive) && StepInsideTerminals(byte)) return true;
  if (!PushStep(byte, mark)) return false;
  if (compactor_ != nullptr) compactor_->AfterPush(*grammar_, chart_);
  const ParserLimits& limits = options_.limits;
  const size_t sets = RetainedSets();
  if (sets > limits.max_sets || RetainedItems() > limits.max_total_items) {
    status_ = absl::ResourceExhaustedError(absl::StrCat(
        "chart after byte ", chart_.sets.back().position, " exceeds ",
        sets > limits.max_sets
            ? absl::StrCat("max_sets = ", limits.max_sets,
                           compactor_ ? " (input nested too deeply)" : " (input too long)")
            : absl::StrCat("max_total_items = ", limits.max_total_items)));
    if (compactor_ != nullptr) compactor_->Undo();
    chart_.PopPosition();
    return false;
  }
  if (compactor_ == nullptr) return true;
  compactor_->Commit(*grammar_, &chart_);
  if (options_.max_rollback > 0) {
    rollback_limit_ = std::min<size_t>(rollback_limit_ + 1, options_.max_rollback);
    replay_.push_back({byte, mark});
    // A checkpoint copies the live chart, so it is taken once per
    // max(kCheckpointInterval, live items / 4) bytes: amortized O(1) per
    // byte even when deep nesting keeps a large chart alive (rollback then
    // replays more bytes).
    const uint64_t interval = std::max<uint64_t>(kCheckpointInterval, RetainedItems() / 4);
    if (Position() - checkpoints_.back().position >= interval) TakeCheckpoint();
  }
  return true;
}

size_t Recognizer::FeedBytes(std::string_view bytes) {
  size_t n = 0;
  for (char c : bytes) {
    if (!Feed(static_cast<uint8_t>(c))) break;
    ++n;
  }
  return n;
}

bool Recognizer::Rollback(size_t n) {
  if (n == 0) return true;
  if (n > Position()) return false;
  if (compactor_ == nullptr) {
    for (size_t i = 0; i < n; ++i) chart_.PopPosition();
    status_ = absl::OkStatus();
    return true;
  }
  if (n > rollback_limit_) return false;
  const uint64_t target = Position() - n;
  const size_t limit_after = rollback_limit_ - n;
  // Checkpoints keep the front at or before Position() - rollback_limit_.
  assert(!checkpoints_.empty() && checkpoints_.front().position <= target);
  size_t k = checkpoints_.size();
  while (checkpoints_[k - 1].position > target) --k;
  const Checkpoint& cp = checkpoints_[k - 1];
  chart_ = cp.chart;
  compactor_->Reset(*grammar_, chart_);
  const uint64_t offset = cp.position - checkpoints_.front().position;
  const std::vector<ReplayStep> steps(
      replay_.begin() + static_cast<std::ptrdiff_t>(offset),
      replay_.begin() + static_cast<std::ptrdiff_t>(offset + (target - cp.position)));
  replay_.resize(offset);
  checkpoints_.resize(k);
  status_ = absl::OkStatus();
  // Replayed steps were logged when first taken.
  std::vector<Completion>* const log = std::exchange(completion_log_, nullptr);
  for (const ReplayStep& step : steps) {
    bool ok = FeedStep(step.byte, step.mark);
    assert(ok);  // these bytes were accepted before
    (void)ok;
  }
  completion_log_ = log;
  rollback_limit_ = limit_after;
  return true;
}

uint64_t Recognizer::EarliestOpenOrigin(absl::FunctionRef<bool(uint32_t)> wanted) const {
  if (compactor_ == nullptr) return 0;
  // Rollback returns at most to the oldest checkpoint: a state it can reach
  // holds that checkpoint's items or items made after its position.
  const Chart& base = checkpoints_.empty() ? chart_ : checkpoints_.front().chart;
  uint64_t earliest = checkpoints_.empty() ? Position() : checkpoints_.front().position;
  const auto note = [&](uint32_t dot, uint32_t parent) {
    if (!wanted(grammar_->dot_lhs[dot])) return;
    earliest = std::min(earliest, base.sets[base.SetOfGroup(parent)].position);
  };
  for (const WaitingGroup& group : base.groups) {
    if (group.leo_dot != kNoLeo) note(group.leo_dot, group.leo_parent);
    for (uint32_t k = 0; k < group.count; ++k) {
      const WaitingItem& w = base.waiting[group.first + k];
      note(w.dot, w.parent);
    }
  }
  for (const Item& item : base.scan) note(item.dot, item.parent);
  return earliest;
}

size_t Recognizer::RollbackLimit() const {
  return compactor_ != nullptr ? rollback_limit_ : Position();
}

bool Recognizer::IsAccepting() const {
  const Chart& chart = current();
  for (uint32_t s = chart.NewestFirst(); s < chart.sets.size(); ++s) {
    if (chart.sets[s].accepting & kAccepting) return true;
  }
  return false;
}

bool Recognizer::CanContinue() const {
  // Items on a token state (or the hold state) wait for a token step, and
  // no byte leaves those states: with token terminals, ask the bytes.
  if (grammar_->lexed() || grammar_->has_token_terminals()) return NextBytes().any();
  const EarleySet& last = current().sets.back();
  return last.scan_end > last.scan_begin;
}

ByteSet Recognizer::NextBytes() const {
  ByteSet out;
  if (grammar_->lexed()) {
    // Whether a byte survives depends on the lexer and on closures; trying
    // each byte with Push/Pop is exact, and leaves the state as it was.
    Recognizer& self = const_cast<Recognizer&>(*this);
    const absl::Status saved = status_;
    for (uint32_t b = 0; b < 256; ++b) {
      if (self.Push(static_cast<uint8_t>(b))) {
        out.set(b);
        self.Pop();
      }
      self.status_ = saved;
    }
    return out;
  }
  const Chart& chart = current();
  const EarleySet& last = chart.sets.back();
  for (uint32_t i = last.scan_begin; i < last.scan_end; ++i) {
    out |= grammar_->terminals.live_bytes(chart.scan[i].state);
  }
  return out;
}

void Recognizer::CollectScanStates(std::vector<uint32_t>* out) const {
  out->clear();
  if (grammar_->lexed()) return;
  const Chart& chart = current();
  for (uint32_t s = chart.NewestFirst(); s < chart.sets.size(); ++s) {
    for (uint32_t i = chart.sets[s].scan_begin; i < chart.sets[s].scan_end; ++i) {
      out->push_back(chart.scan[i].state);
    }
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
}

void Recognizer::CollectLanes(std::vector<LaneView>* out) const {
  if (!grammar_->lexed()) {
    out->clear();
    return;
  }
  // The views of the last call are reused (their vectors keep their capacity).
  const Chart& chart = current();
  size_t n = 0;
  for (uint32_t s = chart.NewestFirst(); s < chart.sets.size(); ++s) {
    const EarleySet& set = chart.sets[s];
    const std::vector<uint32_t>& lane = lanes_[set.lane];
    if (lane[0] == 0) continue;  // an Indenter's interior set: never stepped
    if (out->size() == n) out->emplace_back();
    LaneView& view = (*out)[n++];
    view.lexer_state = lane[0];
    view.guards.assign(lane.begin() + 2, lane.begin() + 2 + lane[1]);
    view.indent.assign(lane.begin() + 2 + lane[1], lane.end());
    view.accepting = set.accepting != 0;
    view.source = s;
    AwaitedTokens(chart, set, &view.tokens);
    if (indenting_) AddDroppedNewline(*grammar_->lexer, view.indent, view.lexer_state, &view.tokens);
  }
  out->resize(n);
}

void Recognizer::StepLaneViews(const LexerTable& lexer, absl::Span<const LaneView> in, uint8_t byte,
                               AdvanceFn advance, std::vector<LaneView>* out, uint32_t max_indent_levels) {
  // BuildNextLexedSets on views: the same rules, lane by lane. The views of
  // the last call are reused (their vectors keep their capacity).
  size_t n = 0;
  auto next_view = [&]() -> LaneView& {
    if (out->size() == n) out->emplace_back();
    LaneView& view = (*out)[n++];
    view.guards.clear();
    return view;
  };
  const uint32_t words = lexer.words_per_state;
  const IndenterTable& indenter = lexer.indenter;
  const bool indenting = indenter.on();
  thread_local std::vector<uint32_t> stepped, indent_after;
  thread_local LaneView scratch;
  for (const LaneView& lane : in) {
    const uint32_t state = lexer.Step(lane.lexer_state, byte);
    if (state == 0) continue;
    stepped.clear();
    if (!StepGuards(lexer, lane.guards.data(), lane.guards.size(), byte, &stepped)) continue;
    uint32_t count = kNoCount;
    bool nl_dropped = false;
    if (indenting) {
      count = StepIndentCount(indenter, lane.indent[kIndentCount], byte);
      nl_dropped = lane.indent[kIndentDepth] > 0;
    }
    const bool ignored_open = lexer.ignored_can_continue[state] != 0 ||
                              (nl_dropped && lexer.CanContinue(state, indenter.nl));
    {
      // The token goes on: items whose token can still end later (all of
      // them while an ignored token is open).
      LaneView& open = next_view();
      open.guards = stepped;
      open.lexer_state = state;
      open.source = lane.source;
      open.accepting = lane.accepting && ignored_open;
      if (indenting) OpenIndentState(lane.indent, count, lexer.CanContinue(state, indenter.nl), &open.indent);
      bool any = true;
      if (ignored_open || (state == lane.lexer_state && state != 1)) {
        // Nothing to filter: a lane whose token is open (lexer state past
        // the start) holds only tokens that can still end from its state,
        // here as in the chart (BuildNextLexedSets filters alike), so a
        // byte that loops on the state (inside a name, a number, a run of
        // spaces) keeps them all.
        open.tokens = lane.tokens;
        any = AnyToken(open.tokens);
      } else {
        // LexerTable::CanContinue, a word at a time.
        const uint64_t* row = &lexer.continue_bits[static_cast<size_t>(state) * words];
        open.tokens.resize(words);
        uint64_t seen = 0;
        for (uint32_t w = 0; w < words; ++w) seen |= open.tokens[w] = lane.tokens[w] & row[w];
        any = seen != 0;
      }
      if (!any && !open.accepting) --n;
    }
    // The token ends here: a boundary lane with the guard of the choice.
    const uint32_t token = lexer.emit[state];
    if (token == kNoToken) continue;
    IndentEffect effect;
    if (indenting) {
      effect = IndentAfterToken(indenter, lane.indent, token, count, max_indent_levels, &indent_after);
      // Over the budget: the recognizer stops with an error, so no token
      // gets through here either.
      if (effect.kind == IndentEffect::kDead || effect.kind == IndentEffect::kOverBudget) continue;
    }
    const bool ignored = lexer.ignored[token] != 0 || effect.kind == IndentEffect::kDropped;
    if (ignored ? !lane.accepting && !AnyToken(lane.tokens) : !HasToken(lane.tokens, token)) {
      continue;  // nothing goes into it
    }
    LaneView& boundary = next_view();
    boundary.guards = stepped;
    if (ignored) {
      // An ignored token: the items move unchanged into the boundary lane.
      boundary.tokens = lane.tokens;
      boundary.accepting = lane.accepting;
      boundary.source = lane.source;
    } else if (!advance(lane.source, token, &boundary)) {
      --n;
      continue;
    } else if (indenting) {
      // The Indenter's tokens after a newline, each closed in turn.
      bool alive = true;
      for (uint32_t k = 0; k < effect.indents + effect.dedents && alive; ++k) {
        const uint32_t next = k < effect.indents ? indenter.indent : indenter.dedent;
        alive = next != kNoIndentToken && HasToken(boundary.tokens, next) &&
                advance(boundary.source, next, &boundary);
      }
      if (!alive) {
        --n;
        continue;
      }
      // The end of the input emits a dedent per level left: accepting then.
      const uint32_t levels = IndentLevels(indent_after);
      if (levels > 0) {
        bool accepting = indenter.dedent != kNoIndentToken;
        scratch.tokens = boundary.tokens;
        scratch.source = boundary.source;
        for (uint32_t k = 0; k < levels && accepting; ++k) {
          accepting = HasToken(scratch.tokens, indenter.dedent) && advance(scratch.source, indenter.dedent, &scratch);
        }
        boundary.accepting = accepting && scratch.accepting;
      }
    }
    boundary.lexer_state = 1;
    if (indenting) {
      boundary.indent = ignored ? lane.indent : indent_after;
      boundary.indent[kIndentCount] = kNoCount;
      AddDroppedNewline(lexer, boundary.indent, 1, &boundary.tokens);
    }
    AddEmitGuard(lexer, state, &boundary.guards);
  }
  out->resize(n);
}

bool Recognizer::PushTokenEnd(uint32_t source, uint32_t token) {
  if (!status_.ok()) return false;
  Chart& chart = current();
  const uint32_t begin = chart.sets[source].scan_begin, end = chart.sets[source].scan_end;
  const uint64_t position = chart.sets.back().position + 1;
  closing_position_ = position;
  const Symbol symbol = kTerminalTag | token;
  BeginSet();
  set_index_ = static_cast<uint32_t>(chart.sets.size());
  for (uint32_t i = begin; i < end; ++i) {
    const Item& item = chart.scan[i];
    if (grammar_->rhs[item.dot] == symbol) AddItem(item.dot + 1, item.parent);
  }
  CloseSet();
  if (budget_hit_) {
    status_ = SetBudgetError(position);
    return false;
  }
  if (new_scan_.empty() && !new_accepting_) return false;
  FinishSet(chart, position, /*lane=*/0);
  return true;
}

void Recognizer::AwaitedTokens(const Chart& chart, const EarleySet& set, TokenBits* tokens) const {
  tokens->assign(grammar_->lexer->words_per_state, 0);
  for (uint32_t i = set.scan_begin; i < set.scan_end; ++i) AddToken(tokens, Payload(grammar_->rhs[chart.scan[i].dot]));
}

bool Recognizer::NewestSetTokens(TokenBits* tokens) const {
  AwaitedTokens(chart_, chart_.sets.back(), tokens);
  return chart_.sets.back().accepting != 0;
}

void Recognizer::SpellClosureSet(uint32_t set, std::vector<uint32_t>* out) const {
  const Chart& chart = chart_;
  const EarleySet& s = chart.sets[set];
  // Five words per record: kind (0 waiting item, 1 item on a token, 2 Leo
  // entry), dot (Leo: the group's nonterminal), 0 (Leo: its dot), then the
  // parent as (0, own group's nonterminal), (1, 0) for none, or (2, outer
  // group number), the outer groups numbered by first appearance in the
  // sorted records. Sorted as 128-bit keys: kind, dot, Leo dot, parent kind,
  // own nonterminal (outer groups: 0, they do not order records, ties keep
  // the chart's order), place.
  thread_local std::vector<unsigned __int128> keys;
  thread_local std::vector<uint32_t> outer_of;  // per place: the outer group, if any
  keys.clear();
  outer_of.clear();
  const auto add = [&](uint32_t kind, uint32_t a, uint32_t b, uint32_t parent) {
    uint64_t cls = 1, value = 0;
    if (parent != kNoParent && parent >= s.group_begin && parent < s.group_end) {
      cls = 0;
      value = chart.groups[parent].nt;
    } else if (parent != kNoParent) {
      cls = 2;
    }
    const uint64_t place = outer_of.size();
    outer_of.push_back(parent);
    const uint64_t hi = (uint64_t{kind} << 62) | (uint64_t{a} << 31) | b;
    const uint64_t lo = (cls << 62) | (value << 30) | place;
    keys.push_back((static_cast<unsigned __int128>(hi) << 64) | lo);
  };
  // Dots, nonterminals and places fit their fields (rule tables and sets
  // are far below 2^31 / 2^30 entries).
  for (uint32_t g = s.group_begin; g < s.group_end; ++g) {
    const WaitingGroup& group = chart.groups[g];
    for (uint32_t k = 0; k < group.count; ++k) {
      const WaitingItem& w = chart.waiting[group.first + k];
      add(0, w.dot, 0, w.parent);
    }
    if (group.leo_dot != kNoLeo) add(2, group.nt, group.leo_dot, group.leo_parent);
  }
  for (uint32_t i = s.scan_begin; i < s.scan_end; ++i) add(1, chart.scan[i].dot, 0, chart.scan[i].parent);
  std::sort(keys.begin(), keys.end());
  thread_local std::vector<uint32_t> outer;  // outer group of each number
  outer.clear();
  const size_t at = out->size();
  out->resize(at + 5 * keys.size());
  uint32_t* record = out->data() + at;
  for (const unsigned __int128 key : keys) {
    const uint64_t hi = static_cast<uint64_t>(key >> 64), lo = static_cast<uint64_t>(key);
    const uint32_t cls = static_cast<uint32_t>(lo >> 62);
    uint32_t value = static_cast<uint32_t>((lo >> 30) & 0xFFFFFFFFu);
    if (cls == 2) {
      const uint32_t group = outer_of[lo & ((uint64_t{1} << 30) - 1)];
      const auto it = std::find(outer.begin(), outer.end(), group);
      value = static_cast<uint32_t>(it - outer.begin());
      if (it == outer.end()) outer.push_back(group);
    }
    record[0] = static_cast<uint32_t>(hi >> 62);
    record[1] = static_cast<uint32_t>((hi >> 31) & 0x7FFFFFFFu);
    record[2] = static_cast<uint32_t>(hi & 0x7FFFFFFFu);
    record[3] = cls;
    record[4] = value;
    record += 5;
  }
}

bool Recognizer::CanonicalState(std::vector<uint32_t>* out, const StateClasses& state_class,
                                KeyReach reach, KeyCut* cut) const {
  out->clear();
  if (compactor_ == nullptr) return false;
  const KeyCut spelled = compactor_->CanonicalKey(chart_, [&](const EarleySet& set) {
    out->push_back(set.accepting);
    if (grammar_->lexed()) {
      const std::vector<uint32_t>& lane = lanes_[set.lane];
      out->push_back(static_cast<uint32_t>(lane.size()));
      out->insert(out->end(), lane.begin(), lane.end());
    }
  }, state_class, reach, out);
  if (cut != nullptr) *cut = spelled;
  return true;
}

void Recognizer::LiveChart(Chart* out) const {
  assert(compactor_ != nullptr);
  compactor_->CopyLive(*grammar_, chart_, out);
}

void Recognizer::RestoreLiveChart(const Chart& chart) {
  assert(compactor_ != nullptr);
  chart_ = chart;
  compactor_->Reset(*grammar_, chart_);
  status_ = absl::OkStatus();
  checkpoints_.clear();
  replay_.clear();
  rollback_limit_ = 0;
  if (options_.max_rollback > 0) TakeCheckpoint();
}

size_t Recognizer::Position() const { return current().sets.back().position; }
size_t Recognizer::RetainedItems() const {
  return compactor_ ? compactor_->LiveItems() : chart_.ItemCount();
}
size_t Recognizer::RetainedSets() const {
  return compactor_ ? compactor_->LiveSets() : chart_.sets.size();
}

size_t Recognizer::HeldEntries() const {
  auto entries = [](const Chart& c) {
    return c.sets.size() + c.waiting.size() + c.groups.size() + c.scan.size();
  };
  size_t n = entries(chart_) + replay_.size();
  for (const Checkpoint& cp : checkpoints_) n += entries(cp.chart);
  return n;
}

std::string Recognizer::DumpChart() const {
  Chart live;
  if (compactor_ != nullptr) compactor_->CopyLive(*grammar_, chart_, &live);
  const Chart& chart = compactor_ != nullptr ? live : chart_;
  const FlatGrammar& g = *grammar_;
  std::string out;
  for (uint32_t i = 0; i < chart.sets.size(); ++i) {
    const EarleySet& s = chart.sets[i];
    absl::StrAppend(&out, "set ", i, " @", s.position,
                    (s.accepting & kAccepting) ? " accepting" : "",
                    (s.accepting & kAcceptingIfIgnored) ? " accepting-if-ignored" : "");
    if (g.lexed()) {
      const std::vector<uint32_t>& lane = lanes_[s.lane];
      absl::StrAppend(&out, " lane ", s.lane, " (lexer state ", lane[0]);
      for (size_t k = 2; k + 1 < 2 + lane[1]; k += 2) {
        absl::StrAppend(&out, ", guard ", lane[k], "/rank ", lane[k + 1]);
      }
      if (lane.size() > 2 + lane[1]) absl::StrAppend(&out, ", ", DumpIndentState(LaneIndent(s.lane)));
      out += ")";
    }
    out += "\n";
    for (uint32_t gi = s.group_begin; gi < s.group_end; ++gi) {
      const WaitingGroup& group = chart.groups[gi];
      if (group.leo_dot != kNoLeo) {
        absl::StrAppend(&out, "  leo ", g.nt_names[group.nt], " => ",
                        DumpDottedProduction(g, group.leo_dot), " (",
                        chart.SetOfGroup(group.leo_parent), ")\n");
      }
      for (uint32_t k = 0; k < group.count; ++k) {
        const WaitingItem& w = chart.waiting[group.first + k];
        absl::StrAppend(&out, "  ", DumpDottedProduction(g, w.dot), " (",
                        chart.SetOfGroup(w.parent), ")\n");
      }
    }
    for (uint32_t k = s.scan_begin; k < s.scan_end; ++k) {
      const Item& item = chart.scan[k];
      absl::StrAppend(&out, "  ", DumpDottedProduction(g, item.dot), " (",
                      chart.SetOfGroup(item.parent), ")");
      if (!g.lexed()) absl::StrAppend(&out, " state ", item.state);
      out += "\n";
    }
  }
  return out;
}

}  // namespace zapgram::parser
