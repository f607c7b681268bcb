// The incremental byte-level Earley recognizer.
//
// Feed bytes one at a time; after each, ask whether the input so far is a
// sentence (IsAccepting), whether it can still be extended (CanContinue) and
// by which bytes (NextBytes); undo bytes with Rollback. Correct on every
// context-free grammar: left and right recursion (Leo items), empty rules
// (Aycock–Horspool prediction), ambiguity and cycles.
//
// Each step: scan (every item sitting on a terminal moves its automaton state
// by the byte), then close the new set (completion through the origin sets'
// waiting items, or in one jump through a Leo entry; prediction from the
// grammar's precomputed closures). With pruning on, pruning/compact.h then
// drops whatever the newest set can no longer reach (ZapFormat), so the chart
// stays proportional to nesting depth rather than input length.
//
// Compaction is injected (ChartCompactor, below) so that parser/ does not
// depend on pruning/; pruning::MakeRecognizer wires ZapFormat in when
// RecognizerOptions::pruning is set. Without a compactor nothing is dropped.
//
// Push/Pop are the speculative form of Feed used by mask computation: they
// append or drop one position's sets without compaction; Feed = Push +
// compaction.
//
// Token steps (FeedToken / PushToken) serve grammars with token terminals
// (flat_grammar.h): a whole vocabulary token goes through the byte terminals
// as text and through the token terminals as an id at once, one position
// per byte (one for a token without text); each position carries a token
// mark, which rollback replays with the byte.
//
// Lexed grammars (Lark, parser/lexer.h): the items' terminals are tokens, and
// the lexer decides where tokens end. Each position holds one set per *lane*
// (chart.h), a lane being (lexer state of the token in progress, guards). A
// byte steps every lane's lexer state; where the lexer may emit a token, the
// items waiting for it advance into a boundary lane (lexer state = start),
// while the same items' lane also goes on in case the token is longer. An
// emitted token whose choice is not final (a terminal ranked as well could
// still match longer) leaves a *guard*: the lexer state run on from the
// token's start, with its rank; the lane dies when the guard's state accepts
// such a terminal, and the guard is dropped once none can accept any more. An
// ignored token's end moves the items unchanged into the boundary lane.
// Accepting = some boundary set where the start symbol completed (or was
// complete before trailing ignored tokens).
//
// Thread safety: a Recognizer is used by one thread at a time; the FlatGrammar
// it points to is immutable and may be shared by any number of recognizers.
#ifndef ZAPGRAM_PARSER_RECOGNIZER_H_
#define ZAPGRAM_PARSER_RECOGNIZER_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "parser/chart.h"
#include "parser/flat_grammar.h"
#include "parser/indenter.h"
#include "zapgram/limits.h"

namespace zapgram::parser {

// Decides which parts of the chart later steps can still use, and drops the
// rest. One compactor per recognizer (it keeps per-group bookkeeping).
// "Live" below means: reachable from the newest set's items on terminals.
// How canonical keys spell terminal states: a state below table.size() as
// table[s]; past it, as beyond(s) (masks/: counted terminals' classes,
// grammar/counted_automaton.h; lazy states are themselves).
inline uint32_t SameState(uint32_t s) { return s; }
struct StateClasses {
  absl::Span<const uint32_t> table;
  absl::FunctionRef<uint32_t(uint32_t)> beyond = &SameState;
  uint32_t operator()(uint32_t s) const { return s < table.size() ? table[s] : beyond(s); }
};

// How far down a canonical key spells the live chart: at most `max_sets`
// kept sets older than the newest position, and none past the set holding
// group `down_to_group` (kNoParent: no such stop).
struct KeyReach {
  uint32_t max_sets = UINT32_MAX;
  uint32_t down_to_group = kNoParent;
};
// Where a canonical key stopped: the lowest group index it spelled (0: the
// whole chart, nothing cut) and how many kept sets older than the newest
// position it spelled (a KeyReach{older_sets} spells the same key again).
struct KeyCut {
  uint32_t cut = 0;
  uint32_t older_sets = 0;
};

class ChartCompactor {
 public:
  virtual ~ChartCompactor() = default;
  // Derives the bookkeeping of `chart` from scratch (after a restore).
  virtual void Reset(const FlatGrammar& grammar, const Chart& chart) = 0;
  // A compactor in the same state, for a copy of the recognizer (a forked
  // matcher: masks/matcher.h).
  virtual std::unique_ptr<ChartCompactor> Clone() const = 0;
  // A new newest set was pushed onto `chart` (whose older sets the compactor
  // has seen). Updates liveness (LiveItems, LiveSets). Then exactly one of:
  // Commit (may rewrite `chart` to drop dead entries) or Undo (back to the
  // state before AfterPush; the caller then pops the set).
  virtual void AfterPush(const FlatGrammar& grammar, const Chart& chart) = 0;
  virtual void Commit(const FlatGrammar& grammar, Chart* chart) = 0;
  virtual void Undo() = 0;
  // Copies the live part of `in` into `out`, renumbered densely.
  virtual void CopyLive(const FlatGrammar& grammar, const Chart& in, Chart* out) = 0;
  // Appends to `out` a canonical spelling of the live part of `in` (what
  // CopyLive keeps; groups renumbered densely, items sorted): a word saying
  // whether the spelling was cut (below), then for each kept set, newest
  // first, `set_header(set)` appends the set's own fields, then its live
  // groups and, for the newest sets, its terminal items. Equal spellings
  // mean equal live charts up to renumbering.
  // A terminal state s is spelled state_class(s) (states the caller knows
  // to be interchangeable share a spelling).
  // The spelling goes down as far as `reach` says (KeyReach); references
  // to live groups below the kept sets it spells are spelled by rank only.
  // Returns the cut (KeyCut): the chart's groups from that index on are all
  // spelled (0 when nothing was cut). Equal cut spellings mean live charts
  // equal up to renumbering from their cuts on, whatever lies below.
  virtual KeyCut CanonicalKey(const Chart& in, absl::FunctionRef<void(const EarleySet&)> set_header,
                              const StateClasses& state_class, KeyReach reach,
                              std::vector<uint32_t>* out) = 0;
  virtual size_t LiveItems() const = 0;
  virtual size_t LiveSets() const = 0;
};

// One position of a token step (Recognizer::FeedToken): the token's id,
// whether it is normal (text), and whether this position is its first, its
// last, and has no byte (a token without text). Inactive for plain bytes.
struct TokenMark {
  static constexpr uint8_t kActive = 1, kFirst = 2, kLast = 4, kNoByte = 8, kNormal = 16;
  uint32_t id = 0;
  uint8_t flags = 0;
  bool has(uint8_t f) const { return (flags & f) != 0; }
};

class Recognizer {
 public:
  // `grammar` must outlive the recognizer. With `compactor` null the chart is
  // never compacted (options.pruning is not consulted here).
  Recognizer(const FlatGrammar* grammar, const RecognizerOptions& options,
             std::unique_ptr<ChartCompactor> compactor);

  // Consumes one byte. Returns true when the byte was accepted. Returns false,
  // leaving the state unchanged, when the byte cannot follow the input so far,
  // or when a budget would run out (then status() says which; the recognizer
  // stays usable at its previous state, and the next successful step or a
  // Rollback/Reset clears status()).
  bool Feed(uint8_t byte);
  // Feeds bytes until one is rejected; returns how many were accepted.
  size_t FeedBytes(std::string_view bytes);

  // Token steps (grammars with token terminals, flat_grammar.h): one whole
  // vocabulary token, `id`, whose text is `bytes` (empty for a token that
  // is not text: a special token). Two paths are taken at once, as in
  // XGrammar: the text path feeds the bytes through the byte terminals, and
  // the token path moves the items sitting on a token terminal that
  // matches (id, normal) over it. An item taking the token waits in the
  // hold state while the remaining bytes go by and advances at the last
  // one, so the set after the token holds the survivors of both paths.
  // Takes max(1, bytes.size()) positions (one for a token without text).
  // All or nothing: false, state unchanged, when neither path survives
  // (or a budget ran out: status() says so).
  bool FeedToken(uint32_t id, bool normal, std::string_view bytes);
  // The speculative form: pushes the token's positions without compaction;
  // returns how many (0: rejected, nothing pushed). Pop() each to undo.
  size_t PushToken(uint32_t id, bool normal, std::string_view bytes);

  // Undoes the last n accepted bytes. Returns false (and does nothing) when n
  // exceeds RollbackLimit(). With a compactor, rollback restores the newest
  // checkpoint at or before the target (see checkpoints_) and replays the
  // bytes after it.
  bool Rollback(size_t n);
  // How many bytes Rollback can undo now. Without a compactor: Position().
  // With one (as in XGrammar): each accepted byte adds one, up to
  // options.max_rollback, and each rolled-back byte takes one away, so
  // rolling back repeatedly never reaches further than max_rollback bytes
  // behind the furthest position since — memory stays bounded.
  size_t RollbackLimit() const;
  // Back to the empty input; clears status().
  void Reset();

  bool IsAccepting() const;   // the input so far is a sentence
  bool CanContinue() const;   // some byte can follow
  ByteSet NextBytes() const;  // exactly the bytes b for which Feed(b) would succeed

  // The distinct terminal-table states of the items on terminals at the
  // newest position, sorted (byte-level grammars; empty for lexed ones).
  void CollectScanStates(std::vector<uint32_t>* out) const;
  // Lexed grammars: the lanes of the newest position, each with its lexer
  // state, guards ((lexer state, rank) pairs), whether it is accepting (or
  // accepting if its open token is ignored), and the tokens its items wait
  // for (TokenBits: the lexer's continue rows filter them a word at a time).
  struct LaneView {
    uint32_t lexer_state = 0;
    std::vector<uint32_t> guards;
    // Lark's Indenter (parser/indenter.h): the lane's indentation state
    // words; empty without one. Where a newline is dropped (inside
    // brackets), `tokens` also holds the newline token, as an ignored one.
    std::vector<uint32_t> indent;
    bool accepting = false;
    TokenBits tokens;
    // StepLaneViews: the caller's tag of the lane's items (CollectLanes: the
    // index of the lane's set in the chart).
    uint32_t source = 0;
  };
  void CollectLanes(std::vector<LaneView>* out) const;
  // The lanes that Push(byte) would leave, computed from the lanes before
  // it (`in`) without touching the chart: each lane's lexer state and
  // guards step, its tokens are those that can still end, an ignored
  // token's end carries the lane's tokens into a boundary lane. Where a
  // token that a lane's items wait for ends, `advance(source, token,
  // &boundary)` supplies the boundary lane's tokens, accepting flag and
  // source (the items advanced over the token and closed, e.g. by
  // PushTokenEnd), or returns false when nothing survives. Lanes that Push
  // would merge (equal lexer state and guards) may come out apart, with the
  // union of the tokens between them. Empty `out`: Push(byte) would fail.
  // Budgets are not consulted. Tests: tests/masks/lexed_masks_test.cc.
  // With Lark's Indenter, a newline followed by indent or dedent tokens
  // calls `advance` for each in turn (each boundary's source the next
  // call's), and a boundary with levels left on the stack is accepting when
  // as many dedents would make it so (advance again); a run over
  // `max_indent_levels` is dropped (the recognizer stops there with an error).
  using AdvanceFn = absl::FunctionRef<bool(uint32_t source, uint32_t token, LaneView* boundary)>;
  static void StepLaneViews(const LexerTable& lexer, absl::Span<const LaneView> in, uint8_t byte,
                            AdvanceFn advance, std::vector<LaneView>* out,
                            uint32_t max_indent_levels = ParserLimits{}.max_indent_levels);
  // Lexed grammars, speculative: pushes a position holding one boundary set
  // (lexer state start, no guards): the items of set `source` (of the
  // newest position) that wait for `token`, advanced over it and closed, as
  // where the lexer emits `token` (BuildNextLexedSets). No byte is read.
  // Pop() undoes it. False, nothing pushed, when the set would be empty or a
  // budget ran out (status() says so).
  bool PushTokenEnd(uint32_t source, uint32_t token);
  // The newest set (after PushTokenEnd: the closure) as CollectLanes would
  // give it, without the lane: the tokens its items wait for into `tokens`,
  // and whether it is accepting.
  bool NewestSetTokens(TokenBits* tokens) const;
  uint32_t NumSets() const { return static_cast<uint32_t>(chart_.sets.size()); }
  // The first group of set `set`: a step that consulted no group below it
  // (LowestConsultedGroup) read nothing older than the set.
  uint32_t SetGroupBegin(uint32_t set) const { return chart_.sets[set].group_begin; }
  // Appends to `out` a spelling of set `set` for masks/closure_memo.h: its
  // waiting items, items on tokens and Leo entries, with each parent spelled
  // as the nonterminal of the set's own group, as none, or as an outer group
  // numbered by first appearance (records sorted first). Two sets spelled
  // alike hold the same items and Leo entries up to a renaming of the
  // groups outside them, so a step that consults none of those groups
  // (LowestConsultedGroup >= SetGroupBegin) does the same from either.
  void SpellClosureSet(uint32_t set, std::vector<uint32_t>* out) const;
  // A canonical form of the live state: the live chart, renumbered densely,
  // without positions, lanes spelled out. Two recognizers of one grammar with
  // equal canonical states accept exactly the same continuations (the key of
  // the mask cache). Needs a compactor (pruning); false without one.
  // `state_class` (optional) maps terminal states to a representative of
  // states with the same future as far as the caller looks (masks/: as far
  // as the longest token reaches), so such states share keys.
  // `reach` may stop the spelling above the oldest kept sets
  // (ChartCompactor::CanonicalKey); `cut` (optional) receives where it
  // stopped (KeyCut::cut 0: the whole state). A cut key stands for the
  // state only as far as the steps taken on it consult no group below the
  // cut (LowestConsultedGroup).
  bool CanonicalState(std::vector<uint32_t>* out, const StateClasses& state_class = {},
                      KeyReach reach = {}, KeyCut* cut = nullptr) const;
  // The lowest index of a group of the chart that a step (Push or Feed)
  // consulted since ResetConsulted (completion through it, or its Leo
  // entry), or kNoParent when none did: what the steps' outcome may depend
  // on below the newest sets.
  uint32_t LowestConsultedGroup() const { return lowest_consulted_; }
  void ResetConsulted() { lowest_consulted_ = kNoParent; }
  // As if a step had consulted `group` (restores an outer step's bound).
  void NoteConsulted(uint32_t group) { lowest_consulted_ = std::min(lowest_consulted_, group); }

  // The live chart renumbered densely (the compactor's CopyLive), and back:
  // RestoreLiveChart puts the recognizer in the state in which it took a
  // LiveChart copy (this recognizer's: a lexed set names its lanes by this
  // recognizer's ids), with status() ok and nothing to roll back. Both need
  // a compactor. Positions are those of the copy. Used by
  // parser/transition_memo.h, which keeps one copy per canonical state.
  void LiveChart(Chart* out) const;
  void RestoreLiveChart(const Chart& chart);

  // Speculative steps on top of the current state (no compaction, no snapshot).
  bool Push(uint8_t byte);
  void Pop();

  // Captures (FlatGrammar::nt_capture): while a log is set, every set built
  // appends to it the completions of captured nonterminals, in completion
  // order: (nonterminal, start position, end position = the set's). Within
  // one set a nonterminal completes once per origin group (so a lexed
  // grammar's lanes may repeat one), and empty completions are never seen
  // (Aycock–Horspool applies them at prediction). The caller sets the log
  // around the steps it means (masks/captures.h: committed feeds only, not
  // Push, rollback's replays or mask walks) and clears it after (null).
  struct Completion {
    uint32_t nt;
    uint64_t start;
    uint64_t end;
  };
  void set_completion_log(std::vector<Completion>* log) { completion_log_ = log; }
  // The earliest position any state Rollback can return to holds an open
  // item of a nonterminal for which `wanted(nt)` is true (its origin), or
  // where such a state's text may still be extended from: bytes before it
  // can take part in no completion of those nonterminals from now on, after
  // any rollback. Scans the oldest rollback checkpoint's chart (its items,
  // and the items made after it begin later); 0 without a compactor.
  uint64_t EarliestOpenOrigin(absl::FunctionRef<bool(uint32_t)> wanted) const;
  // The chart now (with a compactor it may hold dead entries).
  const Chart& chart() const { return chart_; }

  size_t Position() const;        // bytes consumed
  size_t RetainedItems() const;   // live items (all items without a compactor)
  size_t RetainedSets() const;
  // Entries the chart's arrays hold, live or dead (sets, waiting items,
  // groups, terminal items), with those of the rollback checkpoints: what
  // the recognizer's memory is proportional to. With a compactor it stays
  // within a constant factor of the live items and sets, whatever the input
  // length (dead entries are rewritten away once they dominate).
  size_t HeldEntries() const;
  // Chain nodes compared while deduplicating items, since construction: the
  // cost of MarkSeen, for tests that pin it to the items created.
  uint64_t dedup_probes_for_testing() const { return dedup_probes_; }
  // Bytes taken in place (RecognizerOptions::in_place_terminal_steps).
  uint64_t in_place_steps_for_testing() const { return in_place_count_; }
  // The most item attempts (ParserLimits::max_work_per_set's unit) one Earley
  // set took since construction: what a budget must leave room for.
  uint64_t peak_work_per_set() const { return peak_work_; }
  const absl::Status& status() const { return status_; }
  const RecognizerOptions& options() const { return options_; }
  bool compacting() const { return compactor_ != nullptr; }
  const FlatGrammar& grammar() const { return *grammar_; }

  // The chart as text: one block per set with its live items in dotted form.
  std::string DumpChart() const;
  // The physical chart (with a compactor it may hold dead entries).
  const Chart& chart_for_testing() const { return chart_; }

 private:
  // Lexed grammars: the tokens the items on terminals of `set` wait for.
  void AwaitedTokens(const Chart& chart, const EarleySet& set, TokenBits* tokens) const;
  // The marks of the positions of a token step.
  static TokenMark MarkOf(uint32_t id, bool normal, size_t position, size_t positions, bool no_byte);
  // Builds the set after `byte` on top of `chart`; false (nothing pushed) when
  // the byte is rejected or a budget ran out.
  bool BuildNextSet(Chart& chart, uint8_t byte, TokenMark mark = {});
  bool PushStep(uint8_t byte, TokenMark mark);
  bool FeedStep(uint8_t byte, TokenMark mark);
  void BuildInitialSet(Chart& chart);
  void NextSerial();
  void BeginSet();
  void CountItem();
  void CountWork(uint64_t n);
  // The status of a set that ran over max_items_per_set or max_work_per_set.
  absl::Status SetBudgetError(uint64_t position) const;
  void AddItem(uint32_t dot, uint32_t parent);
  // Records (dot, parent, state) for this set; false if already there.
  bool MarkSeen(uint32_t dot, uint32_t parent, uint32_t state);
  void AddScanItem(uint32_t dot, uint32_t parent, uint32_t state);
  void Predict(uint32_t nt);
  void CloseSet();
  void FinishSet(Chart& chart, uint64_t position, uint32_t lane = 0, bool accept_if_ignored = false);
  // Appends the completion of the rule of `dot` from group `parent` to
  // completion_log_ when that rule is captured.
  void LogCompletion(const Chart& chart, uint32_t dot, uint32_t parent);
  // Lexed grammars: builds the sets of the next position (one per lane).
  bool BuildNextLexedSets(Chart& chart, uint8_t byte);
  uint32_t InternLane(uint32_t lexer_state, const std::vector<uint32_t>& guards,
                      const std::vector<uint32_t>& indent);
  // A lane's Indenter state words (empty without an Indenter).
  absl::Span<const uint32_t> LaneIndent(uint32_t lane) const {
    const std::vector<uint32_t>& l = lanes_[lane];
    return absl::MakeConstSpan(l).subspan(2 + l[1]);
  }
  // Whether set `set` accepts once `dedents` dedent tokens end the input.
  bool DedentsAccept(uint32_t set, uint32_t dedents);
  uint32_t ScanState(Symbol terminal) const {
    return grammar_->lexed() ? 0 : grammar_->terminals.start[Payload(terminal)];
  }
  // RecognizerOptions::in_place_terminal_steps: `byte` moves every item of
  // the newest set along its terminal, in place, when none dies or ends;
  // false (nothing changed) otherwise.
  bool StepInsideTerminals(uint8_t byte);
  Chart& current() { return chart_; }
  const Chart& current() const { return chart_; }
  void TakeCheckpoint();

  const FlatGrammar* grammar_;
  RecognizerOptions options_;
  // options_.in_place_terminal_steps where it applies (pruning, no rollback,
  // a byte-level grammar).
  bool in_place_steps_ = false;
  uint64_t in_place_count_ = 0;
  absl::Status status_;
  Chart chart_;
  // Owned; a copy of the recognizer clones it (so recognizers copy).
  class OwnedCompactor {
   public:
    explicit OwnedCompactor(std::unique_ptr<ChartCompactor> c) : c_(std::move(c)) {}
    OwnedCompactor(const OwnedCompactor& o) : c_(o.c_ ? o.c_->Clone() : nullptr) {}
    OwnedCompactor& operator=(const OwnedCompactor& o) {
      if (this != &o) c_ = o.c_ ? o.c_->Clone() : nullptr;
      return *this;
    }
    OwnedCompactor(OwnedCompactor&&) noexcept = default;
    OwnedCompactor& operator=(OwnedCompactor&&) noexcept = default;
    ChartCompactor* operator->() const { return c_.get(); }
    bool operator==(std::nullptr_t) const { return c_ == nullptr; }
    explicit operator bool() const { return c_ != nullptr; }

   private:
    std::unique_ptr<ChartCompactor> c_;
  };
  OwnedCompactor compactor_;
  // Rollback with a compactor: compacted copies of the chart taken every
  // kCheckpointInterval bytes (more when the chart is large), oldest first,
  // and the bytes fed since the oldest.
  static constexpr uint64_t kCheckpointInterval = 32;
  struct Checkpoint {
    uint64_t position;
    Chart chart;
  };
  std::deque<Checkpoint> checkpoints_;
  // Positions fed since checkpoints_.front(): the byte and its token mark.
  struct ReplayStep {
    uint8_t byte;
    TokenMark mark;
  };
  std::vector<ReplayStep> replay_;
  size_t rollback_limit_ = 0;

  // Scratch of the set under construction.
  // Parent of an item predicted in the set being built: the group of that
  // set waiting on the item's lhs, known once the set is finished.
  static constexpr uint32_t kPendingParent = 0x80000000u;
  static bool IsPending(uint32_t parent) {
    return parent != kNoParent && (parent & kPendingParent) != 0;
  }
  struct PendingItem {
    uint32_t dot, parent;
  };
  struct PendingWaiting {
    uint32_t nt, dot, parent;
  };
  // Lark's Indenter: the items of set `source` advanced over chain[0], then
  // through an interior set per further token (closed, its items on the
  // next token advanced), appended to `out` after the last token. False
  // (nothing left pushed) when a budget ran out.
  bool AdvanceChain(uint32_t source, absl::Span<const uint32_t> chain, uint64_t position,
                    std::vector<PendingItem>* out);
  std::vector<uint32_t> group_of_nt_;  // per nonterminal: its group in the set being finished
  uint32_t set_index_ = 0;
  uint64_t closing_position_ = 0;  // the position of the set being built
  std::vector<Completion>* completion_log_ = nullptr;  // see set_completion_log
  std::vector<PendingItem> worklist_;   // items to complete or predict from
  std::vector<Item> new_scan_;
  std::vector<PendingWaiting> new_waiting_;
  // Items whose parent lies in an earlier set, deduplicated by (dot, parent,
  // state): per parent group (slot 0: kNoParent; group g: g + 1) a stamp and
  // the head of a chain of seen_nodes_. Completed items by parent alone
  // (completed_stamp_, per group); items with a pending parent by dot
  // (pending_stamp_; their scan items by dot_stamp_).
  static constexpr uint32_t kNoNode = 0xFFFFFFFFu;
  struct SeenNode {
    uint32_t dot, state, next;
  };
  std::vector<uint32_t> seen_stamp_;
  std::vector<uint32_t> seen_head_;
  std::vector<SeenNode> seen_nodes_;
  std::vector<uint32_t> completed_stamp_;
  std::vector<uint32_t> pending_stamp_;
  std::vector<uint32_t> predicted_stamp_;  // per nonterminal: serial of the set that predicted it
  std::vector<uint32_t> dot_stamp_;        // per dot: serial of the set holding (dot, this set)
  uint32_t serial_ = 0;
  bool new_accepting_ = false;
  uint64_t items_this_set_ = 0;
  // Item attempts in this set, duplicates included (ParserLimits::max_work_per_set).
  uint64_t work_this_set_ = 0;
  uint64_t peak_work_ = 0;  // the most work_this_set_ reached, since construction
  bool budget_hit_ = false;
  uint32_t lowest_consulted_ = kNoParent;  // see LowestConsultedGroup
  uint64_t dedup_probes_ = 0;

  // Lexed grammars. A lane: the lexer state of the token in progress, the
  // number of guard words, its guards as (lexer state, rank) pairs, sorted,
  // then Lark's Indenter state words (parser/indenter.h; none without one).
  // Lane 0 is (start, no guards, initial indentation). Lanes are interned
  // for the recognizer's lifetime.
  std::vector<std::vector<uint32_t>> lanes_;
  absl::flat_hash_map<std::vector<uint32_t>, uint32_t> lane_ids_;
  struct LaneTarget {
    uint32_t lane = 0;
    bool accept = false;             // kAccepting carried through an ignored token
    bool accept_if_ignored = false;  // kAcceptingIfIgnored
    uint32_t scan_sources = 0;       // sets whose items went into `scan`
    std::vector<PendingItem> scan;     // items kept on their token (dot unchanged)
    std::vector<PendingItem> advance;  // items after a token (dot + 1)
  };
  std::vector<LaneTarget> targets_;  // the first num_targets_ are this step's
  uint32_t num_targets_ = 0;
  std::vector<uint32_t> target_stamp_;  // per lane: target_serial_ when it has a target
  std::vector<uint32_t> target_index_;  // per lane: its target then
  uint32_t target_serial_ = 0;
  static constexpr uint32_t kNoLane = 0xFFFFFFFFu;
  std::vector<uint32_t> plain_lane_;  // per lexer state: its lane without guards, or kNoLane
  std::vector<uint32_t> lane_key_;    // InternLane scratch
  std::vector<uint32_t> guard_scratch_;
  // Lark's Indenter (parser/indenter.h).
  bool indenting_ = false;
  uint32_t interior_lane_ = 0;  // the lane of interior sets (lexer state 0)
  std::vector<uint32_t> indent_before_, indent_after_;  // scratch of BuildNextLexedSets
  std::vector<uint32_t> chain_;                         // a newline and its indent/dedent tokens
  std::vector<PendingItem> chain_advance_, chain_items_;
  struct EofCheck {
    uint32_t set, levels;
  };
  std::vector<EofCheck> eof_checks_;  // boundary sets with levels left (DedentsAccept)
};

}  // namespace zapgram::parser

#endif  // ZAPGRAM_PARSER_RECOGNIZER_H_
