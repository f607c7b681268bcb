// Masks of lexed (Lark) grammars: the token sets per lane and the walk of
// the uncertain subtrees (the rest of the Matcher is in matcher.cc).
//
// A lexed grammar's recognizer holds one Earley set per lexer lane
// (parser/recognizer.h). A vocabulary token that stays inside the lane's
// open token is decided by the lexer alone: the per (lexer state, awaited
// token) sets (LexedTokenSets, built from the whole trie by
// BuildLexedSubtreeSets) accept it while the open token can still become
// one the items wait for, minus what makes a guard fire (GuardFailures).
// Past a possible token end the parser decides: those trie nodes are the
// *uncertain roots*.
//
// The uncertain walk (WalkLexedRoots). The parser matters only where a
// token ends: there the items waiting for it advance and the set closes
// (completion, prediction); between token ends a byte only steps lexer
// states and drops items whose token can no longer end. So the walk never
// pushes bytes into the chart. It keeps, per depth of the trie path, the
// lanes as views (Recognizer::LaneView: lexer state, guards, awaited
// tokens, accepting) and steps them by the lexer (Recognizer::
// StepLaneViews, the byte rule of BuildNextLexedSets on views). Where a
// token that a view's items wait for ends, the boundary lane's view comes
// from a *history*: the newest set the view descends from and the tokens
// ended since, closed by the parser once per mask (Recognizer::
// PushTokenEnd, one position per token, all popped when the walk ends) and
// memoized, so `foo(`, `bar(` and `x(` share one closure after NAME and one
// after "(".
// Before, every root pushed its bytes through the recognizer (each byte
// inside a name closed the boundary lane again): ~2,500 roots per miss at
// ~1 us each on java/go/sql. Closures that read nothing older than their
// source set are kept across masks too (masks/closure_memo.h: per spelling
// of the source set and token, what the walk reads of the new set), so a
// later mask pushes only the closures no earlier mask kept. The roots are walked in trie order without
// a comparison sort: the token sets' roots are sorted and deduplicated by
// a bit per trie node (SortRoots), nested roots go through a min-heap.
//
// Below a root, the subtree is classified like the token sets, from the
// root's lanes (LexedSubtreeSets, cached per (node, lane)); the nested
// roots it reports (token ends inside) are walked the same way, the views
// of their path stepped on from the deepest node the walk shares with the
// previous root.
//
// Partial masks (masks/partial_masks.h). A history is deep when its
// closure, or an earlier one of its token sequence, consulted a group below
// the cut of the key the mask goes under (walk_cut_); per depth of the view
// path, view_deep_ says whether a step asked a deep history (a dead answer
// counts too: it removed lanes). A root at a deep depth is a deep root: its
// part of the mask goes to split_words_ while the walk runs, so that the
// rest (fixed by the cut key) can be kept with the deep roots, and a later
// walk from that partial walks the deep roots only.
//
// Exactness: views equal what CollectLanes gives after pushing the same
// bytes, except that lanes the recognizer merges (equal lexer state and
// guards) may stay apart; every use is a union over lanes (a token is
// allowed when some lane keeps it), so the split changes nothing, and the
// closure of a union of items is the union of their closures.
//
// Tests: tests/masks/matcher_test.cc (MatcherLexed.PartialMasksMatchBruteForce;
// MatcherTrace.* and
// MatcherRandomWalk.LexedGrammarsMatchBruteForce: masks against a
// per-token brute force on java/go/sql; MatcherLexed.* likewise with the
// cache off, ClosureMemoMatchesBruteForce with kept closures; LexedViews.*: stepped views equal
// the recognizer's lanes after a real push, byte by byte).
#include <algorithm>
#include <bit>
#include <functional>
#include <utility>

#include "masks/matcher.h"

namespace zapgram::masks {

StateTokenSets CompiledGrammar::BuildLexedTokenSets(uint32_t lexer_state, uint32_t token) const {
  // The whole trie is the subtree of its root; kIgnoredOnly waits for no
  // token (the lane's accepting flag rides through ignored tokens).
  parser::TokenBits tokens(grammar_->lexer->words_per_state, 0);
  if (token != kIgnoredOnly) parser::AddToken(&tokens, token);
  return BuildLexedSubtreeSets(TokenTrie::kRoot, lexer_state, {}, tokens);
}

std::vector<uint32_t> CompiledGrammar::BuildGuardFailures(uint32_t guard_state, uint32_t rank) const {
  // The guard fires when the lexer, run on from the earlier token's start,
  // accepts a terminal ranked `rank` or better; it is over when it dies or
  // no such terminal is reachable any more.
  const parser::LexerTable& lexer = *grammar_->lexer;
  absl::Span<const TokenTrieNode> nodes = trie_->nodes();
  std::vector<uint32_t> fire(mask_words(), 0u);
  std::vector<uint32_t> state = {guard_state};
  for (uint32_t i = TokenTrie::kRoot + 1; i < nodes.size();) {
    const TokenTrieNode& node = nodes[i];
    state.resize(node.depth);
    // The recognizer's order (BuildNextLexedSets): dead = holds, then fire,
    // then nothing good enough reachable = holds.
    const uint32_t g = lexer.Step(state.back(), node.byte);
    const bool fires = g != 0 && lexer.GuardFires(g, rank);
    if (fires) {
      for (uint32_t k = i; k < node.subtree_end; ++k) {
        for (TokenId id : trie_->TokensAt(k)) SetBit(fire.data(), id);
      }
    }
    if (fires || g == 0 || !lexer.GuardPending(g, rank)) {
      i = node.subtree_end;
      continue;
    }
    state.push_back(g);
    ++i;
  }
  return fire;
}

std::shared_ptr<const StateTokenSets> CompiledGrammar::LexedSubtreeSets(
    uint32_t root, uint32_t lexer_state, const std::vector<uint32_t>& guards,
    const parser::TokenBits& tokens) const {
  // Spelled into a per-thread buffer: a hit allocates nothing.
  thread_local std::vector<uint32_t> key;
  key.assign({root, lexer_state, static_cast<uint32_t>(guards.size())});
  key.insert(key.end(), guards.begin(), guards.end());
  for (uint64_t w : tokens) key.insert(key.end(), {static_cast<uint32_t>(w), static_cast<uint32_t>(w >> 32)});
  {
    std::lock_guard<std::mutex> lock(on_demand_mu_);
    auto it = subtree_sets_.find(absl::Span<const uint32_t>(key));
    if (it != subtree_sets_.end()) return it->second;
  }
  auto sets = std::make_shared<const StateTokenSets>(
      BuildLexedSubtreeSets(root, lexer_state, guards, tokens));
  std::lock_guard<std::mutex> lock(on_demand_mu_);
  auto it = subtree_sets_.find(absl::Span<const uint32_t>(key));
  if (it != subtree_sets_.end()) return it->second;  // built by another thread meanwhile
  const size_t bytes = sets->bytes() + 4 * key.size() + 96;
  // Full: a new generation (the sets handed out stay alive in their
  // callers' shared_ptrs). Larger than the budget: not kept.
  const bool kept = subtree_budget_.Reserve(bytes, [this] {
    subtree_sets_.clear();
    on_demand_bytes_.fetch_sub(subtree_budget_.bytes(), std::memory_order_relaxed);
  });
  if (!kept) return sets;
  on_demand_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  return subtree_sets_.try_emplace(key, std::move(sets)).first->second;
}

void CompiledGrammar::set_subtree_budget_bytes(size_t bytes) const { subtree_budget_.set_budget_bytes(bytes); }

uint64_t CompiledGrammar::subtree_evictions() const { return subtree_budget_.evictions(); }

StateTokenSets CompiledGrammar::BuildLexedSubtreeSets(uint32_t root, uint32_t lexer_state,
                                                      const std::vector<uint32_t>& guards,
                                                      const parser::TokenBits& tokens) const {
  StateTokenSets out;
  AcceptedTokens accepted(mask_words());
  WalkLexedSubtree(
      root, lexer_state, guards, tokens, [&](absl::Span<const TokenId> ids) { accepted.Add(ids); },
      [&](uint32_t node) { out.uncertain_roots.push_back(node); });
  std::move(accepted).Store(&out);
  return out;
}

void CompiledGrammar::WalkLexedSubtree(uint32_t root, uint32_t lexer_state, absl::Span<const uint32_t> guards,
                                       const parser::TokenBits& want,
                                       absl::FunctionRef<void(absl::Span<const TokenId>)> accept,
                                       absl::FunctionRef<void(uint32_t)> uncertain) const {
  // One lane below `root`, with the parser holding root's bytes: a node is
  // certain while the lane's open token can still become a token its items
  // wait for (or an ignored one); when it cannot, the node is uncertain if
  // the lexer could have emitted a token on the way (else rejected); a guard
  // that fires kills the lane below it (BuildGuardFailures' rule).
  const parser::LexerTable& lexer = *grammar_->lexer;
  absl::Span<const TokenTrieNode> nodes = trie_->nodes();
  // Per-thread scratch: small subtrees are walked per mask (no allocation).
  thread_local std::vector<uint32_t> states, guard_stack, guard_begin;
  thread_local std::vector<uint8_t> ended;
  auto inside = [&](uint32_t u) {
    if (u == 0) return false;
    if (lexer.ignored_can_continue[u]) return true;
    const uint64_t* bits = &lexer.continue_bits[static_cast<size_t>(u) * lexer.words_per_state];
    for (uint32_t w = 0; w < lexer.words_per_state; ++w) {
      if (bits[w] & want[w]) return true;
    }
    return false;
  };
  // Per level below the root: lexer state, whether the lexer could have
  // emitted a token on the path so far, and the guards still pending (pairs
  // guard state, rank) in guard_stack. (Rooting the uncertain subtree at the
  // emit itself rather than at the node where the lane dies was tried: it
  // shares parser steps after ignored whitespace, but its subtrees are so
  // much larger that Lark masks got 3-5x slower.)
  const uint32_t root_depth = nodes[root].depth;
  states.assign(1, lexer_state);
  ended.assign(1, 0);
  guard_stack.assign(guards.begin(), guards.end());
  guard_begin.assign({0, static_cast<uint32_t>(guard_stack.size())});
  for (uint32_t i = root + 1; i < nodes[root].subtree_end;) {
    const TokenTrieNode& node = nodes[i];
    const uint32_t level = node.depth - root_depth;  // 1 for the root's children
    states.resize(level);
    ended.resize(level);
    guard_begin.resize(level + 1);
    guard_stack.resize(guard_begin[level]);
    const uint32_t u = lexer.Step(states.back(), node.byte);
    const bool ended_here = ended.back() != 0 || (u != 0 && lexer.emit[u] != parser::kNoToken);
    bool killed = false;
    for (uint32_t k = guard_begin[level - 1]; k < guard_begin[level] && !killed; k += 2) {
      const uint32_t guard = lexer.Step(guard_stack[k], node.byte);
      const uint32_t rank = guard_stack[k + 1];
      if (guard == 0) continue;  // no longer match possible: the guard holds
      if (lexer.GuardFires(guard, rank)) {
        killed = true;
      } else if (lexer.GuardPending(guard, rank)) {
        guard_stack.push_back(guard);
        guard_stack.push_back(rank);
      }
    }
    if (killed || !inside(u)) {
      // A fired guard: the token whose end made this lane did not end there,
      // so the lane and every lane it would spawn below are dead. Else the
      // parser decides where a token may have ended on the way.
      if (!killed && ended_here) uncertain(i);
      i = node.subtree_end;
      continue;
    }
    if (u == states.back() && node.subtree_end > i + 1 && guard_stack.size() == guard_begin[level] &&
        IsSubset(trie_->SubtreeBytes(i), lexer_loops_[u])) {
      // Every byte below steps u to itself, inside, with no guard to fire:
      // the whole subtree is kept, and holds no uncertain root.
      accept(trie_->SubtreeTokens(i));
      i = node.subtree_end;
      continue;
    }
    accept(trie_->TokensAt(i));
    states.push_back(u);
    ended.push_back(ended_here);
    guard_begin.push_back(static_cast<uint32_t>(guard_stack.size()));
    ++i;
  }
}

const StateTokenSets& CompiledGrammar::LexedTokenSets(uint32_t lexer_state, uint32_t token) const {
  return OnDemandSets((uint64_t{lexer_state} << 32) | token,
                      [&] { return BuildLexedTokenSets(lexer_state, token); });
}

const std::vector<uint32_t>& CompiledGrammar::GuardFailures(uint32_t guard_state, uint32_t rank) const {
  const uint64_t key = (uint64_t{guard_state} << 32) | rank;
  {
    std::lock_guard<std::mutex> lock(on_demand_mu_);
    auto it = guard_failures_.find(key);
    if (it != guard_failures_.end()) return it->second;
  }
  std::vector<uint32_t> fire = BuildGuardFailures(guard_state, rank);
  std::lock_guard<std::mutex> lock(on_demand_mu_);
  auto [it, fresh] = guard_failures_.try_emplace(key, std::move(fire));
  if (fresh) on_demand_bytes_.fetch_add(4 * it->second.size() + 64, std::memory_order_relaxed);
  return it->second;
}

void Matcher::PushHistory(uint32_t source, uint32_t token, History* next) {
  // A closure stays in the chart until the walk ends (one position each,
  // on top of one another whatever history they close: a closure reads its
  // source set and the groups its items name, wherever they lie), so each
  // is pushed once per walk. The source's ancestors found in the closure
  // memo were not pushed: push them first, oldest first.
  chain_.clear();
  for (uint32_t h = source; histories_[h].set == kNotPushed; h = histories_[h].parent) chain_.push_back(h);
  bool ok = true;
  for (size_t i = chain_.size(); i-- > 0 && ok;) {
    History& h = histories_[chain_[i]];
    ok = recognizer_.PushTokenEnd(histories_[h.parent].set, h.token);  // false only on a budget
    if (ok) {
      h.set = recognizer_.NumSets() - 1;
      ++pushed_sets_;
    }
  }
  if (!ok) return;
  // The closure's own bound on what it consulted, then the walk's again.
  const uint32_t source_set = histories_[source].set;
  const uint32_t outer = recognizer_.LowestConsultedGroup();
  recognizer_.ResetConsulted();
  const bool pushed = recognizer_.PushTokenEnd(source_set, token);
  const uint32_t consulted = recognizer_.LowestConsultedGroup();
  recognizer_.NoteConsulted(outer);
  if (!recognizer_.status().ok()) return;  // a budget: nothing to keep
  next->deep = histories_[source].deep || (consulted != parser::kNoParent && consulted < walk_cut_);
  if (pushed) {
    next->set = recognizer_.NumSets() - 1;  // the closure's one set
    ++pushed_sets_;
    next->alive = true;
    next->accepting = recognizer_.NewestSetTokens(&next->tokens);
    // Spelled when a closure is asked from it (most closures are leaves).
    next->spelled = kNotSpelled;
  }
  const ClosureMemo::Id from = SpelledHistory(source);  // its set is in the chart now
  if (from < kNotSpelled && (consulted == parser::kNoParent || consulted >= recognizer_.SetGroupBegin(source_set))) {
    if (pushed) {
      spelling_.clear();
      recognizer_.SpellClosureSet(next->set, &spelling_);
      next->spelled = grammar_->closure_memo().Intern(spelling_);
    }
    grammar_->closure_memo().Record(from, token, {next->spelled, next->alive, next->accepting, next->tokens});
  }
}

ClosureMemo::Id Matcher::SpelledHistory(uint32_t h) {
  // Spelled once, and only while its set is in the chart: a set of the
  // newest position, or one of the pushed chain; never while the memo does
  // not pay for this grammar (ClosureMemo::Pays, asked once per walk).
  if (!use_closure_memo_) return ClosureMemo::kNone;
  History& history = histories_[h];
  if (history.spelled != kNotSpelled) return history.spelled;
  const uint32_t set = history.set;
  if (set == kNotPushed) return ClosureMemo::kNone;  // not spelled now; may be later
  spelling_.clear();
  recognizer_.SpellClosureSet(set, &spelling_);
  history.spelled = grammar_->closure_memo().Intern(spelling_);
  return history.spelled;
}

bool Matcher::AdvanceHistory(uint32_t source, uint32_t token, parser::Recognizer::LaneView* boundary) {
  const uint64_t key = (uint64_t{source} << 32) | token;
  auto [it, fresh] = history_after_.try_emplace(key, static_cast<uint32_t>(histories_.size()));
  if (fresh) {
    History next{source, token, kNotPushed, false, false, {}};
    ClosureMemo& memo = grammar_->closure_memo();
    const ClosureMemo::Id from = SpelledHistory(source);
    ClosureMemo::Step step;
    if (from < kNotSpelled && memo.Find(from, token, &step)) {
      // Closed by an earlier mask from a set spelled alike, reading nothing
      // older (closure_memo.h): nothing is pushed here; the chain is pushed
      // when a closure below it is not kept.
      next.alive = step.alive;
      next.accepting = step.accepting;
      next.tokens = std::move(step.tokens);
      next.spelled = step.next;
      next.deep = histories_[source].deep;  // it read its source set only
      if (histories_[source].parent == kNoHistory) {
        recognizer_.NoteConsulted(recognizer_.SetGroupBegin(histories_[source].set));
      }
    } else {
      PushHistory(source, token, &next);
    }
    histories_.push_back(std::move(next));
  }
  const History& h = histories_[it->second];
  step_deep_ |= h.deep;
  if (!h.alive) return false;
  boundary->tokens = h.tokens;
  boundary->accepting = h.accepting;
  boundary->source = it->second;
  return true;
}

namespace {

// Sorts `v`, trie node indices below `nodes`, and drops repeats: a bit per
// node set and read back in order (the roots of a miss come from many
// lanes and tokens, with repeats; merging their runs cost more than this
// scan of the words between the smallest and largest root).
void SortRoots(std::vector<uint32_t>* v, size_t nodes) {
  if (v->size() <= 32) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
    return;
  }
  thread_local std::vector<uint64_t> bits;  // all zero between calls
  if (bits.size() < (nodes + 63) / 64) bits.resize((nodes + 63) / 64, 0);
  uint32_t lo = 0xFFFFFFFFu, hi = 0;
  for (uint32_t x : *v) {
    bits[x / 64] |= uint64_t{1} << (x % 64);
    lo = std::min(lo, x / 64);
    hi = std::max(hi, x / 64);
  }
  v->clear();
  for (uint32_t w = lo; w <= hi; ++w) {
    for (uint64_t b = bits[w]; b != 0; b &= b - 1) v->push_back(64 * w + static_cast<uint32_t>(std::countr_zero(b)));
    bits[w] = 0;
  }
}

}  // namespace

void Matcher::WalkLexedRoots(uint32_t* words) {
  const TokenTrie& trie = grammar_->trie();
  SortRoots(&roots_, trie.nodes().size());
  BeginLexedViews();
  // Roots in trie order (so that paths share their views): the sorted
  // roots of the token sets, merged with a min-heap of the nested roots
  // found on the way (each inside the root that found it, so after it). A
  // nested root may be found again from an enclosing one: walked once.
  const size_t top = roots_.size();
  nested_.clear();
  // The deep roots' part goes to split_words_ (partial_masks.h), zeroed at
  // the first deep root: a walk without one splits nothing.
  const size_t n_words = grammar_->mask_words();
  deep_roots_.clear();
  uint32_t last = TokenTrie::kRoot;
  for (size_t next = 0; next < top || !nested_.empty();) {
    uint32_t root;
    if (!nested_.empty() && (next == top || nested_.front() <= roots_[next])) {
      std::pop_heap(nested_.begin(), nested_.end(), std::greater<uint32_t>());
      root = nested_.back();
      nested_.pop_back();
    } else {
      root = roots_[next++];
    }
    if (root == last) continue;
    last = root;
    const std::vector<parser::Recognizer::LaneView>& lanes = LexedViewsAt(root);
    const bool deep = view_deep_[trie.nodes()[root].depth] != 0;
    if (deep) {
      if (deep_roots_.empty()) split_words_.assign(n_words, 0u);
      deep_roots_.push_back(root);
    }
    if (lanes.empty()) continue;  // the whole subtree is rejected
    uint32_t* part = deep ? split_words_.data() : words;
    for (TokenId id : trie.TokensAt(root)) SetBit(part, id);
    ClassifyLexedSubtree(root, lanes, part);
    for (size_t i = top; i < roots_.size(); ++i) {
      nested_.push_back(roots_[i]);
      std::push_heap(nested_.begin(), nested_.end(), std::greater<uint32_t>());
    }
    roots_.resize(top);
  }
  roots_.clear();
  EndLexedViews();
  // The mask is both parts; split_words_ keeps the one without the deep
  // roots, for the partial. A walk with no deep root keeps none (only a
  // walk that read below its cut stores one, and such a walk asked a deep
  // history on some root's path).
  partial_taken_ = !deep_roots_.empty();
  if (!partial_taken_) return;
  for (size_t w = 0; w < n_words; ++w) {
    const uint32_t fixed = words[w];
    words[w] |= split_words_[w];
    split_words_[w] = fixed;
  }
}

void Matcher::BeginLexedViews() {
  // Depth 0: the newest lanes, each its own history.
  const TokenTrie& trie = grammar_->trie();
  if (view_stack_.size() < trie.max_depth() + 1u) view_stack_.resize(trie.max_depth() + 1u);
  histories_.clear();
  history_after_.clear();
  pushed_sets_ = 0;
  use_closure_memo_ = grammar_->closure_memo().Pays();
  recognizer_.CollectLanes(&view_stack_[0]);
  for (parser::Recognizer::LaneView& view : view_stack_[0]) {
    histories_.push_back({kNoHistory, 0, view.source, true, view.accepting, view.tokens, kNotSpelled});
    view.source = static_cast<uint32_t>(histories_.size() - 1);
  }
  view_path_.assign(1, TokenTrie::kRoot);
  view_deep_.assign(view_stack_.size(), 0);
}

const std::vector<parser::Recognizer::LaneView>& Matcher::LexedViewsAt(uint32_t node) {
  // Climb to the deepest node on the current path, then step the views
  // down from there.
  const TokenTrie& trie = grammar_->trie();
  absl::Span<const TokenTrieNode> nodes = trie.nodes();
  const parser::LexerTable& lexer = *grammar_->grammar().lexer;
  const auto advance = [this](uint32_t source, uint32_t token, parser::Recognizer::LaneView* boundary) {
    return AdvanceHistory(source, token, boundary);
  };
  size_t n = 0;
  uint32_t k = node;
  while (nodes[k].depth >= view_path_.size() || view_path_[nodes[k].depth] != k) {
    if (ancestors_.size() == n) ancestors_.push_back(0);
    ancestors_[n++] = k;
    k = trie.parent(k);
  }
  view_path_.resize(nodes[k].depth + 1u);
  while (n > 0) {
    const uint32_t step = ancestors_[--n];
    const uint32_t d = nodes[step].depth;
    step_deep_ = false;
    parser::Recognizer::StepLaneViews(lexer, view_stack_[d - 1], nodes[step].byte, advance, &view_stack_[d],
                                      recognizer_.options().limits.max_indent_levels);
    view_deep_[d] = view_deep_[d - 1] | static_cast<uint8_t>(step_deep_);
    view_path_.push_back(step);
  }
  return view_stack_[nodes[node].depth];
}

void Matcher::EndLexedViews() {
  PopBytes(pushed_sets_);
  pushed_sets_ = 0;
}

void Matcher::ClassifyLexedSubtree(uint32_t root, absl::Span<const parser::Recognizer::LaneView> lanes,
                                   uint32_t* words) {
  // A small subtree is walked here (cheaper than finding its sets, and
  // nothing to keep); a leaf has nothing below it.
  const TokenTrie& trie = grammar_->trie();
  const uint32_t below = trie.nodes()[root].subtree_end - root - 1;
  if (below == 0) return;
  for (const parser::Recognizer::LaneView& lane : lanes) {
    if (!lane.accepting && !parser::AnyToken(lane.tokens)) continue;
    if (below <= kWalkedSubtreeNodes) {
      grammar_->WalkLexedSubtree(
          root, lane.lexer_state, lane.guards, lane.tokens,
          [&](absl::Span<const TokenId> ids) {
            for (TokenId id : ids) SetBit(words, id);
          },
          [&](uint32_t node) { roots_.push_back(node); });
    } else {
      AddTokenSets(*grammar_->LexedSubtreeSets(root, lane.lexer_state, lane.guards, lane.tokens), words);
    }
  }
}

}  // namespace zapgram::masks
