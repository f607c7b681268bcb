// Token equivalence classes (see token_classes.h).
#include "masks/token_classes.h"

#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <bit>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "masks/bounded_equivalence.h"
#include "masks/matcher.h"

namespace zapgram::masks {

namespace {

// Interns uint32 strings: equal strings get equal ids, numbered from 0 in
// the order first seen. The empty string is id 0.
class Interner {
 public:
  Interner() { Intern({}); }
  uint32_t Intern(const std::vector<uint32_t>& s) {
    return ids_.try_emplace(s, static_cast<uint32_t>(ids_.size())).first->second;
  }
  size_t size() const { return ids_.size(); }

 private:
  absl::flat_hash_map<std::vector<uint32_t>, uint32_t> ids_;
};

// Numbers a per-id labelling densely in the order of each label's first id.
TokenClasses Renumber(const std::vector<uint64_t>& label, TokenClasses::Method method) {
  TokenClasses out;
  out.method = method;
  out.class_of.resize(label.size());
  absl::flat_hash_map<uint64_t, uint32_t> dense;
  for (size_t id = 0; id < label.size(); ++id) {
    auto [it, fresh] = dense.try_emplace(label[id], static_cast<uint32_t>(out.representative.size()));
    if (fresh) out.representative.push_back(static_cast<TokenId>(id));
    out.class_of[id] = it->second;
  }
  return out;
}

// Labels of the ids that are not plain normal tokens, over the labels
// `normal_labels` (< 2^32) the caller gave the normal ones: EOS ids share
// one, ids a token terminal names are singletons, other special and unused
// ids share one. Normal tokens a token terminal lists become singletons too
// (ExcludeToken's listed ids, Token's named ones).
constexpr uint64_t kEosLabel = uint64_t{1} << 40;
constexpr uint64_t kNeverLabel = (uint64_t{1} << 40) + 1;
constexpr uint64_t kSingletonLabel = uint64_t{1} << 41;  // + id
void LabelNonTextIds(const CompiledGrammar& g, std::vector<uint64_t>* label) {
  const Vocabulary& vocab = g.vocabulary();
  for (TokenId id = 0; id < vocab.padded_size(); ++id) {
    if (vocab.is_eos(id)) {
      (*label)[id] = kEosLabel;
    } else if (vocab.kind(id) != TokenKind::kNormal) {
      (*label)[id] = kNeverLabel;
    } else if (vocab.token_bytes(id).empty()) {
      (*label)[id] = kSingletonLabel + static_cast<uint64_t>(id);
    }
  }
  for (const parser::TokenTerminal& tt : g.grammar().token_terminals) {
    for (const grammar::CodepointRange& r : tt.ids) {
      for (uint64_t id = r.lo; id <= r.hi && id < static_cast<uint64_t>(vocab.padded_size()); ++id) {
        if (!vocab.is_eos(static_cast<TokenId>(id))) (*label)[id] = kSingletonLabel + id;
      }
    }
  }
}

// ---- Byte-class strings ------------------------------------------------

TokenClasses ByteClassStringClasses(const CompiledGrammar& g) {
  const Vocabulary& vocab = g.vocabulary();
  const std::array<uint32_t, 256> byte_class = parser::InputByteClasses(g.grammar());
  std::vector<uint64_t> label(vocab.padded_size(), 0);
  Interner strings;
  std::vector<uint32_t> spelled;
  for (TokenId id = 0; id < vocab.padded_size(); ++id) {
    if (vocab.kind(id) != TokenKind::kNormal) continue;
    spelled.clear();
    for (char c : vocab.token_bytes(id)) spelled.push_back(byte_class[static_cast<uint8_t>(c)]);
    label[id] = strings.Intern(spelled);
  }
  LabelNonTextIds(g, &label);
  return Renumber(label, TokenClasses::Method::kByteClassStrings);
}

// ---- Refinement and suffix signatures, shared by both behaviour forms ----

// The partition of the token ids being refined: each id's class, made the
// pair (old class, key) once per state, fresh classes numbered on. Ids
// never assigned in a round keep their class (the default key).
class Refiner {
 public:
  explicit Refiner(size_t ids) : class_of_(ids, 0) {}
  // Starts refining by a new state.
  void NextRound() {
    relabel_.clear();
    ++round_;
  }
  void Assign(TokenId id, uint32_t key) {
    uint32_t& c = class_of_[id];
    auto [it, fresh] = relabel_.try_emplace((uint64_t{c} << 32) | key, next_class_);
    if (fresh) ++next_class_;
    c = it->second;
  }
  void Assign(absl::Span<const TokenId> ids, uint32_t key) {
    for (TokenId id : ids) Assign(id, key);
  }
  // Assign(id, key) for one key that most of a round's ids get (a terminal
  // state's live tokens), through a flat table: per old class, its
  // successor, valid when stamped with this round.
  void AssignCommon(TokenId id) {
    uint32_t& c = class_of_[id];
    if (c >= common_round_.size()) {
      common_round_.resize(next_class_ + 1, 0);
      common_class_.resize(next_class_ + 1, 0);
    }
    if (common_round_[c] != round_) {
      common_round_[c] = round_;
      common_class_[c] = next_class_++;
    }
    c = common_class_[c];
  }
  const std::vector<uint32_t>& class_of() const { return class_of_; }

 private:
  std::vector<uint32_t> class_of_;
  uint32_t next_class_ = 1;
  absl::flat_hash_map<uint64_t, uint32_t> relabel_;  // (old class, key) -> new class, this round
  std::vector<uint32_t> common_round_, common_class_;
  uint32_t round_ = 0;
};

// Restart signatures of token suffixes, memoized by their bytes (views
// into the vocabulary). `compute(v)` may ask for the signatures of v's
// proper suffixes, which are always there: Get fills the suffixes of its
// argument shortest first.
template <typename Compute>
class SuffixSignatures {
 public:
  explicit SuffixSignatures(Compute compute) : compute_(std::move(compute)) {}
  uint32_t Get(std::string_view u) {
    if (auto it = memo_.find(u); it != memo_.end()) return it->second;
    for (size_t i = u.size(); i-- > 0;) {
      const std::string_view v = u.substr(i);
      if (memo_.contains(v)) continue;
      const uint32_t r = compute_(v);
      memo_.emplace(v, r);
    }
    return memo_.at(u);
  }
  // A proper suffix of something Get was asked for.
  uint32_t Known(std::string_view v) const { return memo_.at(v); }

 private:
  Compute compute_;
  absl::flat_hash_map<std::string_view, uint32_t> memo_;
};

// What both behaviour forms hold: the grammar, the partition being refined,
// and the memo of suffix signatures (`restart` computes one).
class BehaviourRefinement {
 protected:
  using Restart = std::function<uint32_t(std::string_view)>;
  BehaviourRefinement(const CompiledGrammar& g, Restart restart)
      : g_(g), vocab_(g.vocabulary()), trie_(g.trie()), refiner_(static_cast<size_t>(vocab_.padded_size())),
        restart_(std::move(restart)) {}
  // The refined partition, with the ids that are not text placed.
  TokenClasses Finish(TokenClasses::Method method) const {
    std::vector<uint64_t> label(refiner_.class_of().begin(), refiner_.class_of().end());
    LabelNonTextIds(g_, &label);
    return Renumber(label, method);
  }

  const CompiledGrammar& g_;
  const Vocabulary& vocab_;
  const TokenTrie& trie_;
  Refiner refiner_;
  SuffixSignatures<Restart> restart_;
};

// ---- Behaviour classes of byte-level grammars ----------------------------

class BehaviourClasses : BehaviourRefinement {
 public:
  explicit BehaviourClasses(const CompiledGrammar& g)
      : BehaviourRefinement(g, [this](std::string_view v) { return ComputeRestart(v); }),
        t_(g.grammar().terminals) {
    absl::flat_hash_set<uint32_t> seen;
    for (uint32_t start : t_.start) {
      const uint32_t s = g.MaskClass(start);
      if (s == 0 || !seen.insert(s).second) continue;
      for (uint32_t b = 0; b < 256; ++b) {
        if (t_.Step(s, static_cast<uint8_t>(b)) != 0) starts_by_byte_[b].push_back(static_cast<uint32_t>(starts_.size()));
      }
      starts_.push_back(s);
    }
  }

  TokenClasses Run();

 private:
  static constexpr uint32_t kAlive = 0xFFFFFFFFu;  // the DFA stays live through the bytes

  // R(u) of a nonempty suffix u (see the essay), interned.
  uint32_t ComputeRestart(std::string_view u);
  // Refines the classes by one state's keys.
  void RefineByState(uint32_t state);
  // The positions (1 <= i < depth of root) where the terminal may end on the
  // DFA's path from `state` to uncertain root `root`.
  void EndPositions(uint32_t state, uint32_t root, std::vector<uint32_t>* positions) const;
  // What a state's round reads: its sets (a split state's core by address)
  // and each uncertain root's end positions. Two states spelled alike give
  // every token the same key, so the second round would split nothing.
  void SpellRound(uint32_t state, std::vector<uint32_t>* out);
  bool SameRoundAsEarlier(uint32_t state);

  const parser::TerminalTable& t_;
  std::vector<uint32_t> starts_;                           // distinct live start states
  std::array<std::vector<uint32_t>, 256> starts_by_byte_;  // indices of starts live after the byte
  Interner restart_ids_, key_ids_;
  std::vector<uint32_t> scratch_ids_, positions_, spelled_, other_spelled_;
  absl::flat_hash_map<size_t, std::vector<uint32_t>> rounds_by_hash_;  // spelling hash -> states refined
};

uint32_t BehaviourClasses::ComputeRestart(std::string_view u) {
  // Per start live on u's first byte: (start index, kAlive) or (start
  // index, n, the n sorted restart ids of the suffixes after its ends).
  std::vector<uint32_t> sig;
  std::vector<uint32_t> ends;
  for (uint32_t k : starts_by_byte_[static_cast<uint8_t>(u[0])]) {
    uint32_t q = starts_[k];
    ends.clear();
    bool alive = true;
    for (size_t j = 0; j < u.size(); ++j) {
      q = t_.Step(q, static_cast<uint8_t>(u[j]));
      if (q == 0) {
        alive = false;
        break;
      }
      if (j + 1 < u.size() && t_.accepting(q)) ends.push_back(static_cast<uint32_t>(j + 1));
    }
    if (alive) {
      sig.push_back(k);
      sig.push_back(kAlive);
      continue;
    }
    if (ends.empty()) continue;
    const size_t at = sig.size();
    sig.push_back(k);
    sig.push_back(0);
    for (uint32_t e : ends) sig.push_back(restart_.Known(u.substr(e)));
    std::sort(sig.begin() + static_cast<std::ptrdiff_t>(at + 2), sig.end());
    sig.erase(std::unique(sig.begin() + static_cast<std::ptrdiff_t>(at + 2), sig.end()), sig.end());
    sig[at + 1] = static_cast<uint32_t>(sig.size() - at - 2);
  }
  return restart_ids_.Intern(sig);
}

void BehaviourClasses::EndPositions(uint32_t state, uint32_t root, std::vector<uint32_t>* positions) const {
  const std::string path = g_.NodeString(root);
  positions->clear();
  uint32_t q = state;
  for (size_t j = 0; j + 1 < path.size() && q != 0; ++j) {
    q = t_.Step(q, static_cast<uint8_t>(path[j]));
    if (q != 0 && t_.accepting(q)) positions->push_back(static_cast<uint32_t>(j + 1));
  }
}

void BehaviourClasses::SpellRound(uint32_t state, std::vector<uint32_t>* out) {
  const StateTokenSets& own = g_.TokenSets(state);
  const auto core = reinterpret_cast<uintptr_t>(own.core.get());
  out->assign({static_cast<uint32_t>(core), static_cast<uint32_t>(uint64_t{core} >> 32)});
  for (const StateTokenSets* sets : {own.core.get(), &own}) {
    if (sets == nullptr) continue;
    if (sets != own.core.get()) {  // a core's accepted tokens are spelled by its address
      out->push_back(static_cast<uint32_t>(sets->accepted_words.size()));
      out->insert(out->end(), sets->accepted_words.begin(), sets->accepted_words.end());
      out->push_back(static_cast<uint32_t>(sets->accepted_ids.size()));
      out->insert(out->end(), sets->accepted_ids.begin(), sets->accepted_ids.end());
    }
    for (uint32_t root : sets->uncertain_roots) {
      EndPositions(state, root, &positions_);
      out->push_back(root);
      out->push_back(static_cast<uint32_t>(positions_.size()));
      out->insert(out->end(), positions_.begin(), positions_.end());
    }
  }
}

bool BehaviourClasses::SameRoundAsEarlier(uint32_t state) {
  SpellRound(state, &spelled_);
  std::vector<uint32_t>& earlier = rounds_by_hash_[absl::HashOf(spelled_)];
  for (uint32_t other : earlier) {
    SpellRound(other, &other_spelled_);
    if (other_spelled_ == spelled_) return true;
  }
  earlier.push_back(state);
  return false;
}

void BehaviourClasses::RefineByState(uint32_t state) {
  const StateTokenSets& own = g_.TokenSets(state);
  refiner_.NextRound();
  for (const StateTokenSets* sets : {own.core.get(), &own}) {
    if (sets == nullptr) continue;
    // ALIVE: the common key of the round.
    for (size_t w = 0; w < sets->accepted_words.size(); ++w) {
      for (uint32_t bits = sets->accepted_words[w]; bits != 0; bits &= bits - 1) {
        refiner_.AssignCommon(static_cast<TokenId>(32 * w + static_cast<size_t>(std::countr_zero(bits))));
      }
    }
    for (TokenId id : sets->accepted_ids) refiner_.AssignCommon(id);
    for (uint32_t root : sets->uncertain_roots) {
      EndPositions(state, root, &positions_);
      for (TokenId id : trie_.SubtreeTokens(root)) {
        const std::string_view bytes = vocab_.token_bytes(id);
        scratch_ids_.clear();
        for (uint32_t p : positions_) scratch_ids_.push_back(restart_.Get(bytes.substr(p)));
        std::sort(scratch_ids_.begin(), scratch_ids_.end());
        scratch_ids_.erase(std::unique(scratch_ids_.begin(), scratch_ids_.end()), scratch_ids_.end());
        // Key 0 is the empty set: no end on the way (a lazy state's overflow
        // root); it still differs from REJECTED, the default.
        refiner_.Assign(id, key_ids_.Intern(scratch_ids_));
      }
    }
  }
}

TokenClasses BehaviourClasses::Run() {
  g_.EnsureMaskClasses();  // one refinement per class, not per state
  absl::Span<const uint32_t> mask_class = g_.mask_classes();
  const parser::FlatGrammar& flat = g_.grammar();
  for (uint32_t s = 1; s < t_.eager_states(); ++s) {
    if (mask_class[s] != s || t_.eager_has_next[s] == 0) continue;
    if (s >= flat.token_state_begin && s < flat.token_state_end) continue;  // no byte leaves
    if (SameRoundAsEarlier(s)) continue;
    RefineByState(s);
  }
  // Counted terminals' states: one per mask class (an eager twin's state,
  // refined above, or a counted state standing for the counts a token
  // cannot tell apart).
  absl::flat_hash_set<uint32_t> done;
  for (const parser::TerminalTable::CountedSegment& seg : t_.counted) {
    for (uint32_t local = 0; local < seg.automaton->num_states(); ++local) {
      const uint32_t s = g_.MaskClass(seg.base + local);
      if (s < t_.eager_states() || !t_.has_next(s) || !done.insert(s).second) continue;
      if (SameRoundAsEarlier(s)) continue;
      RefineByState(s);
    }
  }
  return Finish(TokenClasses::Method::kBehaviour);
}

// ---- Behaviour classes of lexed (Lark) grammars -------------------------

// The lexer's view of a token (see the essay): from lexer state s, the
// lexer's path through the token's bytes, the guard threshold, where a
// token may be emitted, and what the open lane may still become.
class LexedBehaviourClasses : BehaviourRefinement {
 public:
  explicit LexedBehaviourClasses(const CompiledGrammar& g)
      : BehaviourRefinement(g, [this](std::string_view v) { return Key(1, v); }), lexer_(*g.grammar().lexer) {
    const uint32_t n = lexer_.num_states();
    // What an open lane at a state may still become: the ignored flag, or
    // the tokens that can still end (the lane keeps its items either way
    // when an ignored token is open).
    Interner lanes;
    lane_.assign(n, 0);
    std::vector<uint32_t> spelled;
    for (uint32_t s = 1; s < n; ++s) {
      spelled.assign(1, lexer_.ignored_can_continue[s]);
      if (lexer_.ignored_can_continue[s] == 0) {
        const uint64_t* bits = &lexer_.continue_bits[static_cast<size_t>(s) * lexer_.words_per_state];
        for (uint32_t w = 0; w < lexer_.words_per_state; ++w) {
          spelled.push_back(static_cast<uint32_t>(bits[w]));
          spelled.push_back(static_cast<uint32_t>(bits[w] >> 32));
        }
      }
      lane_[s] = lanes.Intern(spelled);
    }
    // States alike in everything a key reads, up to the trie's depth, are
    // refined once (their smallest state stands for them).
    Interner observed;
    std::vector<uint32_t> initial(n, 0);
    for (uint32_t s = 1; s < n; ++s) {
      const bool guarded = lexer_.emit[s] != parser::kNoToken && lexer_.NeedsGuard(s);
      initial[s] = observed.Intern({lane_[s], lexer_.emit[s], guarded ? lexer_.emit_rank[s] : parser::kNoRank,
                                    lexer_.min_accepting_rank[s], lexer_.min_rank_later[s]});
    }
    representative_ = BoundedEquivalence(lexer_.next.data(), lexer_.num_classes, initial, trie_.max_depth());
    suffix_begin_.assign(static_cast<size_t>(vocab_.padded_size()) + 1, 0);
    for (TokenId id = 0; id < vocab_.padded_size(); ++id) {
      const size_t length = vocab_.kind(id) == TokenKind::kNormal ? vocab_.token_bytes(id).size() : 0;
      suffix_begin_[id + 1] = suffix_begin_[id] + static_cast<uint32_t>(length);
    }
    suffix_restart_.assign(suffix_begin_.back(), kUnknown);
    loops_.assign(n, TrieByteSet{});
    for (uint32_t s = 1; s < n; ++s) {
      for (uint32_t b = 0; b < 256; ++b) {
        if (lexer_.Step(s, static_cast<uint8_t>(b)) == s) loops_[s][b / 64] |= uint64_t{1} << (b % 64);
      }
    }
  }

  TokenClasses Run();
  // Goes on refining for about `budget` units of work (a trie node
  // visited, a token keyed), stopping anywhere in a state's walk; true
  // when every representative state is done (Finish then gives the classes).
  bool Step(uint64_t budget);
  TokenClasses Finish() const { return BehaviourRefinement::Finish(TokenClasses::Method::kLexedBehaviour); }

 private:
  static constexpr uint32_t kDead = 0xFFFFFFFFu;  // the lexer path dies inside the bytes
  static constexpr uint32_t kEnd = 0xFFFFFFFFu;   // a token emitted at the last byte

  // The key of bytes w (nonempty) read by a lane at lexer state s, interned:
  // [guard threshold, the lane state at the end or kDead, then per emit
  // that survives its own guard (lane state before it, token, R(rest) or
  // kEnd), sorted]. `id` >= 0: w is that token's bytes, and R of its
  // suffixes is kept by (id, offset) in suffix_restart_ (else looked up
  // by the suffix's bytes only).
  uint32_t Key(uint32_t s, std::string_view w, TokenId id = -1);
  uint32_t TokenSuffixRestart(TokenId id, std::string_view w, size_t offset);
  // Refines by one lexer state's keys, in pieces: BeginState, then
  // ContinueState until it says the state's walk is done (it spends
  // `budget`, and stops when it is 0).
  void BeginState(uint32_t state);
  bool ContinueState(uint64_t* budget);

  const parser::LexerTable& lexer_;
  std::vector<uint32_t> lane_, representative_;
  // R of token id's suffix at offset k: suffix_restart_[suffix_begin_[id] + k]
  // (kUnknown until asked): an index, where the bytes' map hashes strings.
  static constexpr uint32_t kUnknown = 0xFFFFFFFEu;
  std::vector<uint32_t> suffix_begin_, suffix_restart_;
  std::vector<TrieByteSet> loops_;
  Interner keys_;
  // Key's scratch, per level of nesting (Key asks restart_, which may ask
  // Key for a suffix: at most two levels).
  struct Scratch {
    std::vector<uint32_t> path, key, emits;
  };
  std::deque<Scratch> scratch_;  // grows at the end: references stay valid
  std::vector<uint32_t> direct_key_;
  size_t nesting_ = 0;
  uint32_t next_state_ = 1;  // Step's next lexer state to begin
  uint64_t key_work_ = 0;    // units spent in Key (ContinueState's budget)
  // The walk of the state being refined (ContinueState's place).
  struct Walk {
    bool active = false;
    uint32_t state = 0, node = 0;
    std::vector<uint32_t> states, threshold, reach, live, live_begin;
  };
  Walk walk_;
};

uint32_t LexedBehaviourClasses::TokenSuffixRestart(TokenId id, std::string_view w, size_t offset) {
  uint32_t& slot = suffix_restart_[suffix_begin_[id] + offset];  // the vector never grows here
  if (slot == kUnknown) slot = restart_.Get(w.substr(offset));
  return slot;
}

uint32_t LexedBehaviourClasses::Key(uint32_t s, std::string_view w, TokenId id) {
  if (scratch_.size() <= nesting_) scratch_.resize(nesting_ + 1);
  Scratch& scratch = scratch_[nesting_++];
  key_work_ += w.size() + 8;  // the bytes stepped, the key's sorting and interning
  std::vector<uint32_t>& path = scratch.path;
  std::vector<uint32_t>& key = scratch.key;
  std::vector<uint32_t>& emits = scratch.emits;
  const size_t n = w.size();
  // path[k]: the lexer state after k bytes, for k <= m (m: bytes read live).
  path.assign(1, s);
  for (size_t k = 0; k < n; ++k) {
    const uint32_t u = lexer_.Step(path.back(), static_cast<uint8_t>(w[k]));
    if (u == 0) break;
    path.push_back(u);
  }
  const size_t m = path.size() - 1;
  // A guard at s with rank r fires iff r >= threshold: some k has a
  // terminal ranked r or better accepting, and every state before it could
  // still reach one (parser/lexer.h, StepGuards).
  uint32_t threshold = parser::kNoRank, reach = 0;
  for (size_t k = 1; k <= m; ++k) {
    threshold = std::min(threshold, std::max(lexer_.min_accepting_rank[path[k]], reach));
    reach = std::max(reach, lexer_.min_rank_later[path[k]]);
  }
  key.assign({threshold, m == n ? lane_[path[n]] : kDead});
  emits.clear();
  for (size_t j = 1; j <= m; ++j) {
    const uint32_t u = path[j];
    const uint32_t token = lexer_.emit[u];
    if (token == parser::kNoToken) continue;
    if (lexer_.NeedsGuard(u)) {
      // The emit's own guard runs on along the same path.
      const uint32_t rank = lexer_.emit_rank[u];
      bool fired = false;
      for (size_t k = j + 1; k <= m && !fired; ++k) {
        if (lexer_.min_accepting_rank[path[k]] <= rank) fired = true;
        if (lexer_.min_rank_later[path[k]] > rank) break;
      }
      if (fired) continue;
    }
    emits.push_back(lane_[path[j - 1]]);
    emits.push_back(token);
    emits.push_back(j == n ? kEnd : id >= 0 ? TokenSuffixRestart(id, w, j) : restart_.Get(w.substr(j)));
  }
  // Sorted triples: the emits form a set.
  const size_t triples = emits.size() / 3;
  std::vector<std::array<uint32_t, 3>> sorted(triples);
  for (size_t t = 0; t < triples; ++t) sorted[t] = {emits[3 * t], emits[3 * t + 1], emits[3 * t + 2]};
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (const auto& t : sorted) key.insert(key.end(), t.begin(), t.end());
  --nesting_;
  return keys_.Intern(key);
}

void LexedBehaviourClasses::BeginState(uint32_t state) {
  refiner_.NextRound();
  const size_t height = trie_.max_depth() + 1u;
  Walk& w = walk_;
  w.state = state;
  w.node = TokenTrie::kRoot + 1;
  w.states.assign(height, 0);
  w.threshold.assign(height, parser::kNoRank);
  w.reach.assign(height, 0);
  w.live.clear();
  w.live_begin.assign(height + 1, 0);
  w.states[0] = state;
  w.active = true;
}

bool LexedBehaviourClasses::ContinueState(uint64_t* budget) {
  absl::Span<const TokenTrieNode> nodes = trie_.nodes();
  // Per depth d of the current path: the lexer state, the guard threshold
  // so far and the best rank reachable before (Key's running values), and
  // the emits still in the key, as the ranks of their pending guards
  // (kSettled: no guard, or one that can no longer fire) in
  // live[live_begin[d] .. live_begin[d + 1]). While none is live, a key
  // does not depend on the bytes after the path: a subtree where the path
  // dies, or loops on one state whose own emits are undone by their guards
  // at the next byte, has one key for all its tokens. Kept in walk_, so
  // that the walk can stop after any node and go on at the next call.
  constexpr uint32_t kSettled = 0xFFFFFFFFu;
  Walk& w = walk_;
  const uint32_t state = w.state;
  std::vector<uint32_t>& states = w.states;
  std::vector<uint32_t>& threshold = w.threshold;
  std::vector<uint32_t>& reach = w.reach;
  std::vector<uint32_t>& live = w.live;
  std::vector<uint32_t>& live_begin = w.live_begin;
  // A node visited costs one unit, a token keyed its length and a few
  // more (Key counts its own, its suffixes' included, in key_work_).
  const auto spend = [budget](uint64_t units) { *budget -= std::min(*budget, units); };
  uint64_t key_work_seen = key_work_;
  const auto assign_one_key = [&](uint32_t node) {
    absl::Span<const TokenId> ids = trie_.SubtreeTokens(node);
    if (!ids.empty()) refiner_.Assign(ids, Key(state, vocab_.token_bytes(ids[0]), ids[0]));
    spend(ids.size() / 4);  // a whole subtree's ids assigned
  };
  const auto assign_each = [&](absl::Span<const TokenId> ids) {
    for (TokenId id : ids) refiner_.Assign(id, Key(state, vocab_.token_bytes(id), id));
  };
  uint32_t& i = w.node;
  while (i < nodes.size() && *budget > 0) {
    spend(1 + (key_work_ - key_work_seen));
    key_work_seen = key_work_;
    const TokenTrieNode& node = nodes[i];
    const uint32_t d = node.depth;
    const uint32_t parent = states[d - 1];
    const uint32_t u = lexer_.Step(parent, node.byte);
    live.resize(live_begin[d]);
    const bool live_before = live_begin[d] > live_begin[d - 1];
    if (u == 0) {
      if (live_before) {
        for (uint32_t k = i; k < node.subtree_end; ++k) assign_each(trie_.TokensAt(k));
      } else if (threshold[d - 1] != parser::kNoRank) {
        assign_one_key(i);
      }  // else: the default key (nothing emitted, no guard can fire)
      i = node.subtree_end;
      continue;
    }
    // The emits' guards step on u (parser/lexer.h, StepGuards).
    for (uint32_t k = live_begin[d - 1]; k < live_begin[d]; ++k) {
      const uint32_t rank = live[k];
      if (rank == kSettled) {
        live.push_back(rank);
      } else if (lexer_.min_accepting_rank[u] > rank) {
        live.push_back(lexer_.min_rank_later[u] > rank ? kSettled : rank);
      }  // else it fires: that emit leaves the key
    }
    const bool inherited = live.size() > live_begin[d];
    const uint32_t emitted = lexer_.emit[u];
    const bool emit_undone_next =
        emitted == parser::kNoToken || (lexer_.NeedsGuard(u) && lexer_.min_accepting_rank[u] <= lexer_.emit_rank[u]);
    if (!inherited && emit_undone_next && u == parent && node.subtree_end > i + 1 &&
        IsSubset(trie_.SubtreeBytes(i), loops_[u])) {
      assign_one_key(i);
      i = node.subtree_end;
      continue;
    }
    threshold[d] = std::min(threshold[d - 1], std::max(lexer_.min_accepting_rank[u], reach[d - 1]));
    if (!inherited) {
      // No earlier emit is left: Key's value, spelled from the walk (the
      // emit at the last byte, if any, has no byte left to undo it).
      direct_key_.assign({threshold[d], lane_[u]});
      if (emitted != parser::kNoToken) direct_key_.insert(direct_key_.end(), {lane_[parent], emitted, kEnd});
      refiner_.Assign(trie_.TokensAt(i), keys_.Intern(direct_key_));
    } else {
      assign_each(trie_.TokensAt(i));
    }
    if (emitted != parser::kNoToken) live.push_back(lexer_.NeedsGuard(u) ? lexer_.emit_rank[u] : kSettled);
    states[d] = u;
    reach[d] = std::max(reach[d - 1], lexer_.min_rank_later[u]);
    live_begin[d + 1] = static_cast<uint32_t>(live.size());
    ++i;
  }
  w.active = i < nodes.size();
  return !w.active;
}

bool LexedBehaviourClasses::Step(uint64_t budget) {
  while (budget > 0) {
    if (!walk_.active) {
      while (next_state_ < lexer_.num_states() && representative_[next_state_] != next_state_) ++next_state_;
      if (next_state_ >= lexer_.num_states()) return true;
      BeginState(next_state_++);
    }
    ContinueState(&budget);
  }
  return !walk_.active && next_state_ >= lexer_.num_states();
}

TokenClasses LexedBehaviourClasses::Run() {
  Step(UINT64_MAX);  // every representative state, no stop
  return Finish();
}

}  // namespace

TokenClasses ComputeTokenClasses(const CompiledGrammar& g) {
  const parser::FlatGrammar& flat = g.grammar();
  const parser::TerminalTable& t = flat.terminals;
  // Lark's Indenter reads spaces, tabs and newlines that the lexer may step
  // alike (they count toward the indentation), and a lookahead killer fires
  // guards of one rank only (not a threshold): byte-class strings, whose
  // classes keep those bytes apart (parser/lexer.h), are exact there.
  if (flat.lexed() && (flat.lexer->indenter.on() || !flat.lexer->kill_rank.empty())) {
    return ByteClassStringClasses(g);
  }
  if (flat.lexed()) return LexedBehaviourClasses(g).Run();
  if (t.lazy != nullptr) return ByteClassStringClasses(g);
  return BehaviourClasses(g).Run();
}

struct TokenClassesInProgress::Lexed {
  explicit Lexed(const CompiledGrammar& g) : classes(g) {}
  LexedBehaviourClasses classes;
};

TokenClassesInProgress::TokenClassesInProgress(const CompiledGrammar& g) : g_(g) {
  if (g.grammar().lexed() && !g.grammar().lexer->indenter.on() && g.grammar().lexer->kill_rank.empty()) {
    lexed_ = std::make_unique<Lexed>(g);
  }
}

TokenClassesInProgress::~TokenClassesInProgress() = default;

bool TokenClassesInProgress::Step(uint64_t budget) {
  if (done_) return true;
  if (lexed_ != nullptr) {
    done_ = lexed_->classes.Step(budget);
  } else {
    result_ = ComputeTokenClasses(g_);
    done_ = true;
  }
  return done_;
}

TokenClasses TokenClassesInProgress::Finish() {
  while (!Step(UINT64_MAX)) {
  }
  return lexed_ != nullptr ? lexed_->classes.Finish() : std::move(result_);
}

}  // namespace zapgram::masks
