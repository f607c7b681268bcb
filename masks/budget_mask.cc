// Budget-aware masks (see budget_mask.h for the method, its cost and where
// it is exact).
#include "masks/budget_mask.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <bit>
#include <functional>
#include <queue>
#include <string>
#include <utility>
#include <vector>


namespace zapgram::masks {
namespace {

inline bool TestBit(const uint32_t* words, int32_t id) { return (words[id >> 5] >> (id & 31)) & 1u; }
inline void ClearBit(uint32_t* words, int32_t id) { words[id >> 5] &= ~(1u << (id & 31)); }

// The allowed ids of a mask other than EOS, in increasing order.
void AllowedNonEos(const uint32_t* words, size_t n_words, const Vocabulary& vocab,
                   std::vector<int32_t>* out) {
  out->clear();
  for (size_t w = 0; w < n_words; ++w) {
    for (uint32_t bits = words[w]; bits != 0; bits &= bits - 1) {
      const int32_t id = static_cast<int32_t>(w * 32 + std::countr_zero(bits));
      if (!vocab.is_eos(id)) out->push_back(id);
    }
  }
}

uint32_t CeilDiv(size_t a, size_t b) { return static_cast<uint32_t>((a + b - 1) / b); }

// One byte per class of parser::InputByteClasses: the other bytes of a
// class reach the same states, so the byte searches need only one of them.
parser::ByteSet RepresentativeBytes(const parser::FlatGrammar& g) {
  const std::array<uint32_t, 256> byte_class = parser::InputByteClasses(g);
  parser::ByteSet out;
  std::vector<uint8_t> seen(256, 0);
  for (int b = 0; b < 256; ++b) {
    if (!seen[byte_class[b]]) {
      seen[byte_class[b]] = 1;
      out.set(b);
    }
  }
  return out;
}

// `ids` (allowed at the matcher's state) with one id per effect label kept:
// the ones a search over the state's children needs (an id labelled like an
// earlier one leads to an equal state). Without grouping: `ids` unchanged.
void OnePerEffect(Matcher& matcher, bool group, std::vector<int32_t>* ids) {
  if (!group) return;
  std::vector<uint32_t> labels;
  matcher.TokenEffects(*ids, &labels);
  absl::flat_hash_set<uint32_t> seen;
  size_t kept = 0;
  for (size_t i = 0; i < ids->size(); ++i) {
    if (labels[i] == Matcher::kNoEffect || seen.insert(labels[i]).second) (*ids)[kept++] = (*ids)[i];
  }
  ids->resize(kept);
}

}  // namespace

bool BudgetMasker::Push(Matcher& matcher, int32_t id) {
  const size_t len = std::max<size_t>(1, matcher.grammar().vocabulary().token_bytes(id).size());
  if (speculative_bytes_ + len > matcher.MaxRollback()) {
    ran_out_ = true;  // past the rollback budget: undecided, hence masked
    return false;
  }
  if (!matcher.AcceptToken(id)) return false;
  speculative_bytes_ += len;
  pushed_.push_back(len);
  return true;
}

bool BudgetMasker::PushBytes(Matcher& matcher, std::string_view bytes) {
  if (speculative_bytes_ + bytes.size() > matcher.MaxRollback()) {
    ran_out_ = true;
    return false;
  }
  if (!matcher.AcceptBytes(bytes)) return false;
  speculative_bytes_ += bytes.size();
  pushed_.push_back(bytes.size());
  return true;
}

void BudgetMasker::Pop(Matcher& matcher) {
  // Within the rollback budget by construction (Push checked it): a
  // failure is a broken invariant.
  if (!matcher.Rollback(1)) std::abort();
  speculative_bytes_ -= pushed_.back();
  pushed_.pop_back();
}

BudgetMasker::Bounds* BudgetMasker::Lookup(Matcher& matcher, bool witness) {
  if (!matcher.ExactStateKey(&key_)) return nullptr;
  auto it = memo_.find(key_);
  if (it != memo_.end() && (it->second.witnessed || !witness)) return &it->second;
  if (it != memo_.end()) {
    // Learned by a search; add the witness's bounds.
    const Bounds found = ComputeBounds(matcher);
    Bounds& slot = memo_[key_];  // ComputeBounds may have rehashed the memo
    slot.lb = std::max(slot.lb, found.lb);
    slot.ub = std::min(slot.ub, found.ub);
    slot.witnessed = true;
    return &slot;
  }
  if (!witness) {
    // Inside a token search: no byte search per visited state (it would
    // dominate), only what is free; the entry is remembered only if the
    // search learns something.
    light_ = Bounds{.lb = matcher.IsAccepting() ? 1u : 2u, .ub = matcher.IsAccepting() ? 1u : kUnknown};
    return &light_;
  }
  if (memo_.size() >= options_.max_memo_entries) memo_.clear();
  if (completions_.size() >= options_.max_memo_entries) completions_.clear();
  std::vector<uint32_t> key = key_;  // ComputeBounds reuses key_
  Bounds bounds = ComputeBounds(matcher);
  bounds.witnessed = true;
  auto [slot, inserted] = memo_.try_emplace(std::move(key), bounds);
  if (!inserted) {  // the witness replay passed through this very state
    slot->second.lb = std::max(slot->second.lb, bounds.lb);
    slot->second.ub = std::min(slot->second.ub, bounds.ub);
  }
  stats_.memo_entries = memo_.size();
  return &slot->second;
}

BudgetMasker::Bounds BudgetMasker::StateBounds(Matcher& matcher) {
  if (Bounds* b = Lookup(matcher)) return *b;
  return Bounds{.lb = matcher.IsAccepting() ? 1u : 2u, .ub = matcher.IsAccepting() ? 1u : kUnknown};
}

BudgetMasker::Bounds BudgetMasker::ComputeBounds(Matcher& matcher) {
  Bounds b;
  if (matcher.IsAccepting()) {
    b.lb = b.ub = 1;
    return b;
  }
  b.lb = 2;
  std::string witness;
  uint32_t explored = 0;
  const bool complete = ShortestCompletion(matcher, &witness, &explored);
  // Out of budget before the shortest completion, or stopped at a known
  // one: any completion is still a witness (an upper bound); the lower
  // bound then comes from the depth the breadth-first search finished.
  if (!complete && witness.empty()) GuidedCompletion(matcher, &witness);
  if (!witness.empty()) {
    b.ub = WitnessTokens(matcher, witness);
    if (b.ub != kUnknown) {
      b.ub += 1;  // EOS
      RememberCompletion(matcher, witness);
    }
  }
  const size_t longest = std::max<size_t>(1, matcher.grammar().trie().max_depth());
  if (complete) {
    // No completion is shorter than the witness (or, with no witness found
    // and the search finished, none exists: the state is dead).
    b.lb = witness.empty() ? kUnknown : std::max<uint32_t>(2, 1 + CeilDiv(witness.size(), longest));
  } else {
    // No completion of `explored` bytes or fewer.
    b.lb = std::max<uint32_t>(2, 1 + CeilDiv(explored + 1, longest));
  }
  if (b.ub != kUnknown && b.lb > b.ub) b.lb = b.ub;  // a witness is a fact
  return b;
}

BudgetMasker::SearchStep BudgetMasker::ExpandByOneByte(
    Matcher& matcher, const std::string& path, uint64_t* budget, SeenStates* seen,
    std::string* witness, absl::FunctionRef<void(std::string next_path)> discovered) {
  const parser::FlatGrammar* flat = &matcher.grammar().grammar();
  if (flat != representatives_of_) {
    representatives_ = RepresentativeBytes(*flat);
    representatives_of_ = flat;
  }
  const parser::ByteSet bytes = matcher.NextBytes() & representatives_;
  std::vector<uint32_t> key;
  for (int c = 0; c < 256; ++c) {
    if (!bytes.test(c)) continue;
    if (*budget == 0) return SearchStep::kOutOfBudget;
    --*budget;
    ++stats_.byte_nodes;
    const char byte = static_cast<char>(c);
    if (!PushBytes(matcher, std::string_view(&byte, 1))) return SearchStep::kOutOfBudget;
    if (matcher.IsAccepting()) {
      *witness = path + byte;
      Pop(matcher);
      return SearchStep::kFound;
    }
    if (matcher.ExactStateKey(&key)) {
      if (auto known = completions_.find(key); known != completions_.end()) {
        *witness = path + byte + known->second;
        Pop(matcher);
        return SearchStep::kFoundKnown;
      }
      if (seen->emplace(key, true).second) discovered(path + byte);
    }
    Pop(matcher);
  }
  return SearchStep::kExpanded;
}

bool BudgetMasker::ShortestCompletion(Matcher& matcher, std::string* witness, uint32_t* explored) {
  // Breadth first over byte strings; a frontier entry is the bytes from the
  // start state. States are deduplicated by their exact key.
  witness->clear();
  SeenStates seen;
  std::vector<uint32_t> key;
  if (matcher.ExactStateKey(&key)) seen.emplace(key, true);
  std::vector<std::string> frontier{std::string()}, next;
  uint64_t budget = options_.max_witness_nodes;
  *explored = 0;
  for (uint32_t depth = 0; depth < options_.max_witness_bytes && !frontier.empty(); ++depth) {
    *explored = depth;  // no completion of `depth` bytes or fewer... after this level
    next.clear();
    for (const std::string& path : frontier) {
      if (!path.empty() && !PushBytes(matcher, path)) return false;  // only the rollback budget
      const SearchStep step = ExpandByOneByte(matcher, path, &budget, &seen, witness,
                                              [&](std::string p) { next.push_back(std::move(p)); });
      if (!path.empty()) Pop(matcher);
      if (step == SearchStep::kFound) return true;
      if (step != SearchStep::kExpanded) return false;  // a known completion (not shortest), or out of budget
    }
    frontier.swap(next);
    *explored = depth + 1;
  }
  // Frontier empty: no completion at all (a dead state); else too deep.
  return frontier.empty();
}

bool BudgetMasker::GuidedCompletion(Matcher& matcher, std::string* witness) {
  // Best first: the state with the fewest live Earley sets, then items (the
  // open structures a completion must close), then the shortest path;
  // states deduplicated by key. Finds *a* completion, not the shortest.
  witness->clear();
  struct Entry {
    size_t sets, items;
    std::string path;
    bool operator>(const Entry& o) const {
      if (sets != o.sets) return sets > o.sets;
      if (items != o.items) return items > o.items;
      return path.size() > o.path.size();
    }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  SeenStates seen;
  std::vector<uint32_t> key;
  if (matcher.ExactStateKey(&key)) seen.emplace(key, true);
  queue.push({matcher.retained_sets(), matcher.retained_items(), std::string()});
  uint64_t budget = options_.max_witness_nodes;
  while (!queue.empty()) {
    const Entry top = queue.top();
    queue.pop();
    if (top.path.size() >= options_.max_witness_bytes) continue;
    if (!top.path.empty() && !PushBytes(matcher, top.path)) return false;
    const SearchStep step =
        ExpandByOneByte(matcher, top.path, &budget, &seen, witness, [&](std::string p) {
          queue.push({matcher.retained_sets(), matcher.retained_items(), std::move(p)});
        });
    if (!top.path.empty()) Pop(matcher);
    if (step == SearchStep::kFound || step == SearchStep::kFoundKnown) return true;
    if (step == SearchStep::kOutOfBudget) return false;
  }
  return false;
}

uint32_t BudgetMasker::WitnessTokens(Matcher& matcher, const std::string& bytes) {
  // Fewest tokens spelling `bytes`: best[i] = tokens for bytes[i..], from
  // the end; edges are the normal tokens that are prefixes of bytes[i..].
  const TokenTrie& trie = matcher.grammar().trie();
  const Vocabulary& vocab = matcher.grammar().vocabulary();
  const size_t n = bytes.size();
  std::vector<uint32_t> best(n + 1, kUnknown);
  std::vector<TokenId> choice(n + 1, -1);
  best[n] = 0;
  for (size_t i = n; i-- > 0;) {
    for (TokenId id : trie.TokensPrefixOf(std::string_view(bytes).substr(i))) {
      const size_t len = vocab.token_bytes(id).size();
      if (len == 0 || best[i + len] == kUnknown) continue;
      if (best[i + len] + 1 < best[i]) {
        best[i] = best[i + len] + 1;
        choice[i] = id;
      }
    }
  }
  if (best[0] == kUnknown) return kUnknown;
  // Replay: only a path the matcher takes counts as a witness.
  size_t accepted = 0;
  bool ok = true;
  std::vector<std::vector<uint32_t>> path_keys;
  for (size_t i = 0; i < n; i += vocab.token_bytes(choice[i]).size()) {
    if (!Push(matcher, choice[i])) {
      ok = false;
      break;
    }
    ++accepted;
    path_keys.emplace_back();
    matcher.ExactStateKey(&path_keys.back());
  }
  ok = ok && matcher.IsAccepting();
  for (; accepted > 0; --accepted) Pop(matcher);
  if (ok) {
    // The states along the witness finish with the rest of it: remember
    // that, so later steps on this path find their bound without a search.
    for (size_t k = 0; k < path_keys.size(); ++k) {
      const uint32_t rest = static_cast<uint32_t>(path_keys.size() - k - 1) + 1;  // tokens + EOS
      auto [it, inserted] = memo_.try_emplace(path_keys[k], Bounds{.lb = rest == 1 ? 1u : 2u, .ub = rest});
      if (!inserted) it->second.ub = std::min(it->second.ub, rest);
    }
  }
  return ok ? best[0] : kUnknown;
}

void BudgetMasker::RememberCompletion(Matcher& matcher, const std::string& bytes) {
  std::vector<uint32_t> key;
  size_t pushed = 0;
  for (size_t j = 0; j + 1 < bytes.size(); ++j) {
    if (!PushBytes(matcher, std::string_view(bytes).substr(j, 1))) break;
    ++pushed;
    if (!matcher.ExactStateKey(&key)) break;
    std::string_view rest = std::string_view(bytes).substr(j + 1);
    auto [it, inserted] = completions_.try_emplace(key, rest);
    if (!inserted && rest.size() < it->second.size()) it->second = std::string(rest);
  }
  for (; pushed > 0; --pushed) Pop(matcher);
}

bool BudgetMasker::FinishesWithin(Matcher& matcher, uint32_t r) {
  if (Bounds* b = Lookup(matcher)) {
    if (b->ub <= r) return true;
    if (b->lb > r) return false;
  } else {
    return matcher.IsAccepting() && r >= 1;  // no keys: only the obvious
  }
  // Depth first over token paths of at most r - 1 tokens before EOS; a
  // frame per state on the path, with its allowed tokens and the budget r
  // it must meet (explicit stack: depth is the caller's n). In byte-level
  // grammars one token per effect label (equal labels lead to equal
  // states); lexed grammars label a state's tokens by a walk over the
  // trie's paths (tens of ms for a large mask), more than the few children
  // a frame usually visits cost.
  struct Frame {
    std::vector<uint32_t> key;
    uint32_t r;
    std::vector<int32_t> children;
    size_t next = 0;
    bool cut = false;  // some child was left undecided (budget)
    // The next child, or -1.
    int32_t Next() { return next < children.size() ? children[next++] : -1; }
  };
  const CompiledGrammar& g = matcher.grammar();
  const Vocabulary& vocab = g.vocabulary();
  const size_t n_words = g.mask_words();
  std::vector<Frame> stack;
  std::vector<uint32_t> words(n_words);
  auto open = [&](uint32_t budget) {
    Frame f;
    matcher.ExactStateKey(&f.key);
    f.r = budget;
    matcher.ComputeMask(words.data());
    AllowedNonEos(words.data(), n_words, vocab, &f.children);
    OnePerEffect(matcher, options_.group_equal_effects && !g.grammar().lexed(), &f.children);
    stack.push_back(std::move(f));
  };
  if (nodes_left_ == 0) {  // nothing to search with
    ran_out_ = true;
    return false;
  }
  open(r);
  bool success = false;
  while (!stack.empty() && !success) {
    Frame& top = stack.back();
    const int32_t id = nodes_left_ == 0 ? -1 : top.Next();
    if (nodes_left_ == 0) {
      // Out of budget: the remaining children are undecided.
      top.cut = true;
      ran_out_ = true;
    }
    if (id < 0) {
      // Every child failed: d > r here, unless a budget cut the search.
      const bool cut = top.cut;
      if (!cut) {
        auto [it, inserted] = memo_.try_emplace(top.key, Bounds{.lb = 2, .ub = kUnknown});
        it->second.lb = std::max(it->second.lb, top.r + 1);
      }
      stack.pop_back();
      if (!stack.empty()) {
        stack.back().cut |= cut;
        Pop(matcher);
      }
      continue;
    }
    const uint32_t child_r = top.r - 1;
    --nodes_left_;
    ++stats_.search_nodes;
    if (!Push(matcher, id)) {
      top.cut |= ran_out_;
      continue;
    }
    const Bounds* cb = Lookup(matcher, /*witness=*/false);
    if (cb == nullptr || cb->lb > child_r) {
      Pop(matcher);
      continue;
    }
    if (cb->ub <= child_r) {
      Pop(matcher);
      success = true;
      break;
    }
    if (child_r <= 1) {  // only EOS fits, and the state is not accepting
      Pop(matcher);
      continue;
    }
    open(child_r);
  }
  if (success) {
    // Every state on the path finishes within its own budget.
    while (!stack.empty()) {
      auto [it, inserted] = memo_.try_emplace(stack.back().key, Bounds{.lb = 2, .ub = kUnknown});
      it->second.ub = std::min(it->second.ub, stack.back().r);
      stack.pop_back();
      if (!stack.empty()) Pop(matcher);
    }
  }
  return success;
}

const BudgetMasker::Profile& BudgetMasker::BuildProfile(Matcher& matcher, const std::vector<int32_t>& ids) {
  const size_t n_words = matcher.grammar().mask_words();
  std::vector<uint32_t> root_key = key_;
  Profile profile;
  auto bucket = [n_words](std::vector<std::pair<uint32_t, std::vector<uint32_t>>>* family, uint32_t v,
                          int32_t id) {
    auto it = std::find_if(family->begin(), family->end(), [v](const auto& e) { return e.first == v; });
    if (it == family->end()) {
      family->push_back({v, std::vector<uint32_t>(n_words, 0u)});
      it = family->end() - 1;
    }
    it->second[id >> 5] |= 1u << (id & 31);
  };
  // Tokens of equal effect (Matcher::TokenEffects) are visited once.
  std::vector<uint32_t> labels(ids.size(), Matcher::kNoEffect);
  if (options_.group_equal_effects) matcher.TokenEffects(ids, &labels);
  absl::flat_hash_map<uint32_t, Bounds> by_effect;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    const bool keyed = labels[i] != Matcher::kNoEffect;
    if (keyed) {
      if (auto it = by_effect.find(labels[i]); it != by_effect.end()) {
        ++stats_.tokens_grouped;
        bucket(&profile.by_ub, it->second.ub, id);
        bucket(&profile.by_lb, it->second.lb, id);
        continue;
      }
    }
    ++stats_.tokens_checked;
    ran_out_ = false;
    Bounds b{.lb = 2, .ub = kUnknown};  // past the rollback budget: never proven
    if (Push(matcher, id)) {
      b = StateBounds(matcher);
      Pop(matcher);
      if (keyed) by_effect.emplace(labels[i], b);
    }
    bucket(&profile.by_ub, b.ub, id);
    bucket(&profile.by_lb, b.lb, id);
  }
  profile.bytes = (profile.by_ub.size() + profile.by_lb.size()) * n_words * sizeof(uint32_t) +
                  root_key.size() * sizeof(uint32_t) + sizeof(Profile);
  if (profile_bytes_ + profile.bytes > options_.max_profile_bytes) {
    profiles_.clear();
    profile_bytes_ = 0;
  }
  profile_bytes_ += profile.bytes;
  auto [it, inserted] = profiles_.insert_or_assign(std::move(root_key), std::move(profile));
  stats_.profile_bytes = profile_bytes_;
  return it->second;
}

size_t BudgetMasker::Compute(Matcher& matcher, int64_t tokens_left, uint32_t* words) {
  // The searches accept and roll back on `matcher`: no captures (captures.h).
  struct Paused {
    Matcher& m;
    explicit Paused(Matcher& matcher) : m(matcher) { m.PauseCaptures(true); }
    ~Paused() { m.PauseCaptures(false); }
  } paused(matcher);
  const CompiledGrammar& g = matcher.grammar();
  const Vocabulary& vocab = g.vocabulary();
  const size_t n_words = g.mask_words();
  size_t allowed = matcher.ComputeMask(words);
  if (tokens_left <= 0) {
    std::fill(words, words + n_words, 0u);
    return 0;
  }
  std::vector<int32_t> ids;
  AllowedNonEos(words, n_words, vocab, &ids);
  if (ids.empty()) return allowed;
  if (tokens_left == 1) {
    for (int32_t id : ids) ClearBit(words, id);
    return allowed - ids.size();
  }
  const uint32_t r = static_cast<uint32_t>(std::min<int64_t>(tokens_left - 1, kUnknown - 1));
  ++stats_.calls;
  if (!matcher.ExactStateKey(&key_)) {
    // No keys (pruning off): only EOS is proven.
    for (int32_t id : ids) ClearBit(words, id);
    stats_.inexact += ids.size();
    return allowed - ids.size();
  }
  // The children's bounds, once per state: bucketed masks by ub and lb.
  auto found = profiles_.find(key_);
  const Profile& profile = found != profiles_.end() ? found->second : BuildProfile(matcher, ids);
  // Proven: ub <= r. Refuted: lb > r. Undecided: searched one by one.
  std::vector<uint32_t> proven(n_words, 0u), refuted(n_words, 0u);
  for (const auto& [v, mask] : profile.by_ub) {
    if (v <= r) for (size_t w = 0; w < n_words; ++w) proven[w] |= mask[w];
  }
  for (const auto& [v, mask] : profile.by_lb) {
    if (v > r) for (size_t w = 0; w < n_words; ++w) refuted[w] |= mask[w];
  }
  std::vector<int32_t> undecided;
  for (int32_t id : ids) {
    if (TestBit(proven.data(), id)) continue;
    ClearBit(words, id);
    --allowed;
    if (!TestBit(refuted.data(), id)) undecided.push_back(id);
  }
  if (undecided.empty()) {
    ++stats_.skipped;
    return allowed;
  }
  // One search per effect label: its verdict holds for the label's ids.
  std::vector<uint32_t> labels;
  if (options_.group_equal_effects) matcher.TokenEffects(undecided, &labels);
  enum class Verdict { kRefuted, kAllowed, kInexact };
  absl::flat_hash_map<uint32_t, Verdict> verdict_of_label;
  nodes_left_ = options_.max_search_nodes;
  for (size_t k = 0; k < undecided.size(); ++k) {
    const int32_t id = undecided[k];
    const uint32_t label = labels.empty() ? Matcher::kNoEffect : labels[k];
    if (label != Matcher::kNoEffect) {
      if (auto it = verdict_of_label.find(label); it != verdict_of_label.end()) {
        if (it->second == Verdict::kAllowed) {
          words[id >> 5] |= 1u << (id & 31);
          ++allowed;
        } else if (it->second == Verdict::kInexact) {
          ++stats_.inexact;
        }
        continue;
      }
    }
    ran_out_ = false;
    if (!Push(matcher, id)) {  // only past the rollback budget
      ++stats_.inexact;
      continue;
    }
    // The token's share of the call's search budget.
    const uint64_t call_left = nodes_left_;
    const uint64_t share = std::min<uint64_t>(call_left, options_.max_search_nodes_per_token);
    nodes_left_ = share;
    const bool ok = FinishesWithin(matcher, r);
    nodes_left_ = call_left - (share - nodes_left_);
    Pop(matcher);
    if (label != Matcher::kNoEffect) {
      verdict_of_label.emplace(label, ok ? Verdict::kAllowed : ran_out_ ? Verdict::kInexact : Verdict::kRefuted);
    }
    if (ok) {
      words[id >> 5] |= 1u << (id & 31);
      ++allowed;
    } else if (ran_out_) {
      ++stats_.inexact;
    }
  }
  // Leave the matcher's last-mask records as those of this state.
  scratch_words_.resize(n_words);
  matcher.ComputeMask(scratch_words_.data());
  return allowed;
}

}  // namespace zapgram::masks
