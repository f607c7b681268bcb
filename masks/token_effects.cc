// Token effects (Matcher::TokenEffects): labels on the tokens a state
// allows such that equal labels lead to equal states, so that a search over
// a state's children (budget-aware masks, masks/budget_mask.h) visits one
// token per label instead of every allowed token (tens of thousands on a
// real vocabulary, each accepted, keyed and rolled back).
//
// Byte-level grammars (no token terminals: those tell ids apart by number).
// The items of state S on terminals sit in terminal-table states s_1..s_k
// (Matcher::ScanStates). If no s_i passes an accepting table state strictly
// inside token t (no terminal can end inside it, so no completion or
// prediction happens before its last byte) and none reaches a lazily built
// state, then S·t is S with each item's table state replaced by where t
// takes it (dead items dropped), closed at the end. The label is that
// vector of end states: tokens with equal vectors reach equal states.
// Inside a long terminal (a string body, a number) this is most of the
// vocabulary: "hello" and "hi" in a string are one label. Other tokens get
// no label (visited alone). A token whose vector is s_1..s_k itself (each
// terminal state loops on its bytes) leaves S as it is: the `unchanged`
// label (draft-tree walks copy the parent's row for it, draft_tree.h).
//
// Lexed grammars. A token's effect is read off the lanes it leaves, stepped
// as views exactly like the uncertain walk of the masks (lexed_masks.cc:
// Recognizer::StepLaneViews byte by byte, and where a token the items wait
// for ends, the parser closes the items over it once per distinct history,
// memoized), in trie order so that tokens share the views of their common
// prefix. The label spells those lanes, sorted: lexer state, guards,
// accepting flag, indentation state (Lark's Indenter), awaited tokens, and
// the *history* of each (the set of S
// it descends from and the tokens that ended since). The chart after t
// holds, per lane, exactly the items of its history's set that wait for a
// token the lane can still end, over the same older sets, whatever bytes
// spelled those tokens: equal labels give equal states. After `select`,
// the 48k tokens SQL allows have ~400 labels.
//
// Tests: tests/masks/token_effects_test.cc (tokens with equal labels reach
// equal exact keys, on JSON, a schema and the Lark sets, along traces).
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "masks/matcher.h"

namespace zapgram::masks {

namespace {

// Where token `bytes` takes the table states `starts` (the label), or
// false when a terminal may end strictly inside it or a lazily built state
// is reached.
bool ByteLevelEffect(const parser::TerminalTable& table, absl::Span<const uint32_t> starts,
                     std::string_view bytes, std::vector<uint32_t>* effect) {
  effect->clear();
  for (uint32_t state : starts) {
    for (size_t j = 0; j < bytes.size() && state != 0; ++j) {
      state = table.Step(state, static_cast<uint8_t>(bytes[j]));
      if (state == parser::TerminalTable::kOverflow) return false;
      if (state != 0 && j + 1 < bytes.size() && table.accepting(state)) return false;
    }
    effect->push_back(state);
  }
  return true;
}

}  // namespace

void Matcher::TokenEffects(absl::Span<const TokenId> ids, std::vector<uint32_t>* labels, uint32_t* unchanged) {
  const parser::FlatGrammar& flat = grammar_->grammar();
  if (unchanged != nullptr) *unchanged = kNoEffect;
  if (flat.lexed()) {
    LexedTokenEffects(ids, labels);
    return;
  }
  labels->assign(ids.size(), kNoEffect);
  if (!flat.token_terminals.empty()) return;
  recognizer_.CollectScanStates(&states_);
  if (states_.empty()) return;
  const Vocabulary& vocab = grammar_->vocabulary();
  absl::flat_hash_map<std::vector<uint32_t>, uint32_t> interned;
  // The empty token's effect: every item where it is. A token with that
  // label leaves the chart's items, their terminal states and origins as
  // they are, closed the same way at its end: the same state (the labels'
  // argument above with S itself as the other state).
  if (unchanged != nullptr) *unchanged = interned.try_emplace(states_, 0u).first->second;
  std::vector<uint32_t> effect;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ByteLevelEffect(flat.terminals, states_, vocab.token_bytes(ids[i]), &effect)) {
      (*labels)[i] = interned.try_emplace(effect, static_cast<uint32_t>(interned.size())).first->second;
    }
  }
}

void Matcher::LexedTokenEffects(absl::Span<const TokenId> ids, std::vector<uint32_t>* labels) {
  const TokenTrie& trie = grammar_->trie();
  labels->assign(ids.size(), kNoEffect);
  std::vector<std::pair<uint32_t, uint32_t>> order;  // (trie node, index in ids)
  for (size_t i = 0; i < ids.size(); ++i) {
    const uint32_t node = trie.NodeOf(ids[i]);
    if (node != TokenTrie::kNoNode) order.emplace_back(node, static_cast<uint32_t>(i));
  }
  std::sort(order.begin(), order.end());
  absl::flat_hash_map<std::vector<uint32_t>, uint32_t> interned;
  std::vector<std::vector<uint32_t>> spelled_lanes;
  std::vector<uint32_t> label;
  BeginLexedViews();
  for (const auto& [node, i] : order) {
    const std::vector<parser::Recognizer::LaneView>& lanes = LexedViewsAt(node);
    if (lanes.empty()) continue;  // rejected: no label
    spelled_lanes.resize(lanes.size());
    for (size_t l = 0; l < lanes.size(); ++l) {
      const parser::Recognizer::LaneView& lane = lanes[l];
      std::vector<uint32_t>& out = spelled_lanes[l];
      out.assign({lane.lexer_state, lane.source, lane.accepting ? 1u : 0u,
                  static_cast<uint32_t>(lane.guards.size())});
      out.insert(out.end(), lane.guards.begin(), lane.guards.end());
      // Lark's Indenter: the indentation state (count, depth, levels).
      out.push_back(static_cast<uint32_t>(lane.indent.size()));
      out.insert(out.end(), lane.indent.begin(), lane.indent.end());
      parser::ForEachToken(lane.tokens, [&](uint32_t token) { out.push_back(token); });
    }
    std::sort(spelled_lanes.begin(), spelled_lanes.end());
    label.clear();
    for (const std::vector<uint32_t>& lane : spelled_lanes) {
      label.push_back(static_cast<uint32_t>(lane.size()));
      label.insert(label.end(), lane.begin(), lane.end());
    }
    (*labels)[i] = interned.try_emplace(label, static_cast<uint32_t>(interned.size())).first->second;
  }
  EndLexedViews();
}

}  // namespace zapgram::masks
