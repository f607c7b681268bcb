// CompiledGrammar and Matcher (see matcher.h).
#include "masks/matcher.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "masks/bounded_equivalence.h"
#include "masks/class_masks.h"
#include "pruning/compact.h"

namespace zapgram::masks {

namespace {

// history_ entry of an accepted EOS (it has no bytes).
constexpr uint32_t kEosEntry = 0xFFFFFFFFu;

// Set bits of a mask. The x86-64 baseline has no POPCNT instruction and
// std::popcount becomes a libgcc call per word (~15% of a JSON mask miss);
// CPUs that have it (all since ~2008) get the one-instruction loop.
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("popcnt"))) size_t CountBitsPopcnt(const uint32_t* words, size_t n) {
  size_t count = 0;
  for (size_t w = 0; w < n; ++w) count += static_cast<size_t>(__builtin_popcount(words[w]));
  return count;
}
#endif

size_t CountBits(const uint32_t* words, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has_popcnt = __builtin_cpu_supports("popcnt");
  if (has_popcnt) return CountBitsPopcnt(words, n);
#endif
  size_t count = 0;
  for (size_t w = 0; w < n; ++w) count += static_cast<size_t>(std::popcount(words[w]));
  return count;
}

}  // namespace

CompiledGrammar::CompiledGrammar(std::shared_ptr<const parser::FlatGrammar> grammar,
                                 std::shared_ptr<const Vocabulary> vocabulary,
                                 std::shared_ptr<const TokenTrie> trie)
    : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)), trie_(std::move(trie)),
      set_store_(vocabulary_->SharedTokenSets()), cache_(vocabulary_->SharedMaskCache()) {
  // Eager terminal states get a slot each; lazy ones (created while parsing)
  // share the on-demand map with the lexed grammars' sets.
  const size_t states = grammar_->lexed() ? 0 : grammar_->terminals.eager_states();
  sets_once_ = std::make_unique<std::once_flag[]>(states);
  sets_.resize(states);
  if (grammar_->lexed()) {
    // Per lexer state, the bytes it steps to itself on (WalkLexedSubtree's
    // whole-subtree shortcut): one row scan per state.
    const parser::LexerTable& lexer = *grammar_->lexer;
    lexer_loops_.assign(lexer.num_states(), TrieByteSet{});
    for (uint32_t s = 1; s < lexer.num_states(); ++s) {
      for (uint32_t b = 0; b < 256; ++b) {
        if (lexer.Step(s, static_cast<uint8_t>(b)) == s) lexer_loops_[s][b / 64] |= uint64_t{1} << (b % 64);
      }
    }
  }
}

std::string CompiledGrammar::NodeString(uint32_t node) const {
  // Raw pointers: the char stores below may alias anything, so members
  // read through in the loop would be reloaded at every level.
  const TokenTrieNode* nodes = trie_->nodes().data();
  const uint32_t* parents = trie_->parents().data();
  std::string bytes(nodes[node].depth, '\0');
  char* out = bytes.data();
  for (uint32_t i = node; i != TokenTrie::kRoot; i = parents[i]) {
    out[nodes[i].depth - 1] = static_cast<char>(nodes[i].byte);
  }
  return bytes;
}

void CompiledGrammar::EnsureMaskClasses() const {
  if (grammar_->lexed()) return;
  std::call_once(mask_class_once_, [&] {
    mask_class_storage_ = BoundedEquivalence(grammar_->terminals, trie_->max_depth());
    mask_class_.store(&mask_class_storage_, std::memory_order_release);
  });
}

uint32_t CompiledGrammar::MaskClass(uint32_t state) const {
  const parser::TerminalTable& t = grammar_->terminals;
  if (t.is_counted(state)) {
    // A counted terminal's class: a state of its unbounded twin once the
    // count cannot matter within a token, else a canonical counted state.
    const parser::TerminalTable::CountedSegment& seg = t.SegmentOf(state);
    const uint32_t cls = seg.automaton->MaskClass(state - seg.base, trie_->max_depth());
    if ((cls & grammar::CountedAutomaton::kLocalClass) != 0) {
      return seg.base + (cls & ~grammar::CountedAutomaton::kLocalClass);
    }
    state = seg.twin_offset + cls;
  }
  return parser::StateClasses{mask_classes()}(state);
}

const StateTokenSets& CompiledGrammar::TokenSets(uint32_t state) const {
  state = MaskClass(state);
  if (state >= sets_.size()) {
    const parser::TerminalTable& t = grammar_->terminals;
    if (t.is_counted(state) || t.lazy == nullptr) {
      return OnDemandSets(state, [&] { return BuildOnDemandSets(state); });
    }
    // A lazy state: built as an eager one is, kept beside the eager sets.
    {
      std::lock_guard<std::mutex> lock(on_demand_mu_);
      auto it = lazy_sets_.find(state);
      if (it != lazy_sets_.end()) return *it->second;
    }
    bool built = false;
    std::shared_ptr<const StateTokenSets> sets = SharedTokenSets(state, &built);
    std::lock_guard<std::mutex> lock(on_demand_mu_);
    auto [it, fresh] = lazy_sets_.try_emplace(state, std::move(sets));
    if (fresh) {
      (built ? sets_built_bytes_ : sets_found_bytes_).fetch_add(it->second->bytes(), std::memory_order_relaxed);
    }
    return *it->second;
  }
  std::call_once(sets_once_[state], [&] {
    bool built = false;
    sets_[state] = SharedTokenSets(state, &built);
    (built ? sets_built_bytes_ : sets_found_bytes_).fetch_add(sets_[state]->bytes(), std::memory_order_relaxed);
  });
  return *sets_[state];
}

std::shared_ptr<const StateTokenSets> CompiledGrammar::SharedTokenSets(uint32_t state, bool* built) const {
  auto build = [&] {
    *built = true;
    return BuildTokenSets(state);
  };
  // Shared through the store: states whose sets are costly to build,
  // those that go on with many bytes (inside a string: the whole trie is
  // walked); the others are built faster than spelled and looked up.
  const parser::TerminalTable& t = grammar_->terminals;
  if (set_store_->budget_bytes() == 0 || t.live_bytes(state).count() < kSharedSetsMinLiveBytes) {
    return std::make_shared<const StateTokenSets>(build());
  }
  // A state new to the store is built in the cheapest exact way:
  //  - one that most bytes take to a state looping on itself (the start
  //    of a key that must not be one of the schema's names) reads its
  //    sets off that state's (`base` loops on itself, so its own build
  //    never borrows: no recursion past one level);
  //  - one that steps out of its core (a string value fused with the
  //    names that may follow it) is split: the core's sets come from the
  //    store, the walks past the core's exits are this grammar's;
  //  - any other is walked whole.
  auto build_split = [&] {
    const uint32_t step = MajorityStep(t, state);
    const uint32_t base = step == 0 ? 0 : MaskClass(step);
    if (base != 0 && base != state && MajorityStep(t, base) == base) {
      const StateTokenSets& base_sets = TokenSets(base);
      *built = true;
      return BorrowTokenSets(*trie_, t, mask_classes(), state, base, base_sets, mask_words());
    }
    const TerminalCore core = SpellTerminalCore(t, state);
    if (core.empty() || !core.leaves) return build();
    bool core_built = false;
    std::shared_ptr<const StateTokenSets> core_sets = set_store_->GetOrBuild(core.spelling, [&] {
      core_built = true;
      return BuildCoreTokenSets(*trie_, t, core, mask_words());
    });
    (core_built ? sets_built_bytes_ : sets_found_bytes_).fetch_add(core_sets->bytes(), std::memory_order_relaxed);
    *built = true;
    return FinishSplitTokenSets(*trie_, t, core, std::move(core_sets), mask_words());
  };
  // A lazy state belongs to a large terminal (the merge leaves only those
  // lazy), whose automaton from most states is too large to spell whole:
  // the try would build its states only to give up. (Near the end of such
  // a terminal it is small, but on MaskBench the tries cost more than the
  // sets they found: 0.95 G instructions against 0.46 G saved, 40 schemas.)
  const std::vector<uint32_t> spelling =
      state < t.eager_states() ? CanonicalSubautomaton(t, state) : std::vector<uint32_t>();
  return spelling.empty() ? std::make_shared<const StateTokenSets>(build_split())
                          : set_store_->GetOrBuild(spelling, build_split);
}

const StateTokenSets& CompiledGrammar::OnDemandSets(uint64_t key,
                                                    absl::FunctionRef<StateTokenSets()> build) const {
  {
    std::lock_guard<std::mutex> lock(on_demand_mu_);
    auto it = on_demand_sets_.find(key);
    if (it != on_demand_sets_.end()) return it->second;
  }
  StateTokenSets sets = build();
  std::lock_guard<std::mutex> lock(on_demand_mu_);
  auto [it, fresh] = on_demand_sets_.try_emplace(key, std::move(sets));
  if (fresh) on_demand_bytes_.fetch_add(it->second.bytes() + 64, std::memory_order_relaxed);
  return it->second;
}

const TokenClasses& CompiledGrammar::token_classes() const {
  std::call_once(classes_once_, [&] {
    classes_ = std::make_unique<const TokenClasses>(ComputeTokenClasses(*this));
    classes_bytes_.store(classes_->bytes(), std::memory_order_relaxed);
  });
  return *classes_;
}

std::shared_ptr<const ClassMasks> CompiledGrammar::class_masks() const {
  std::call_once(class_masks_once_, [&] {
    if (grammar_->has_token_terminals()) return;
    absl::StatusOr<std::shared_ptr<const ClassMasks>> built = BuildClassMasks(*this, grammar_);
    if (built.ok()) {
      class_masks_ = *std::move(built);
      class_masks_built_.store(class_masks_.get(), std::memory_order_release);
    }
  });
  return class_masks_;
}

std::shared_ptr<const ClassMasks> CompiledGrammar::AdvanceClassMasks(uint64_t work) const {
  if (std::shared_ptr<const ClassMasks> built = class_masks_if_built()) return built;
  std::unique_lock<std::mutex> lock(classes_progress_mu_, std::try_to_lock);
  if (!lock.owns_lock() || classes_progress_done_) return nullptr;
  if (classes_progress_ == nullptr) classes_progress_ = std::make_unique<TokenClassesInProgress>(*this);
  if (!classes_progress_->Step(work)) return nullptr;
  std::call_once(classes_once_, [&] {
    classes_ = std::make_unique<const TokenClasses>(classes_progress_->Finish());
    classes_bytes_.store(classes_->bytes(), std::memory_order_relaxed);
  });
  classes_progress_.reset();
  classes_progress_done_ = true;
  return class_masks();  // null for grammars with token terminals
}

CompiledGrammar::Memory CompiledGrammar::memory() const {
  Memory m;
  m.grammar = grammar_->memory_bytes() + 4 * mask_classes().size() + sizeof(TrieByteSet) * lexer_loops_.capacity() +
              sets_.capacity() * (sizeof(sets_[0]) + sizeof(std::once_flag));
  for (const std::vector<uint32_t>& words : token_terminal_words_) m.grammar += 4 * words.capacity();
  m.grammar += classes_bytes_.load(std::memory_order_relaxed);
  // The class masks' grammar over the representatives is this grammar's
  // alone (its vocabulary is private): all it holds counts.
  if (const ClassMasks* c = class_masks_built_.load(std::memory_order_acquire)) {
    m.grammar += c->bytes() + c->representatives->memory().own();
  }
  m.token_sets_built = sets_built_bytes_.load(std::memory_order_relaxed);
  m.token_sets_found = sets_found_bytes_.load(std::memory_order_relaxed);
  m.lexed_sets = on_demand_bytes_.load(std::memory_order_relaxed) + closure_memo_.bytes() + partial_masks_.bytes();
  m.mask_cache = account_->stats().bytes;
  return m;
}

StateTokenSets CompiledGrammar::BuildOnDemandSets(uint32_t state) const {
  // A counted terminal's unit start reads its sets off the vocabulary's
  // profile of the terminal's unit and suffix (token_sets.h).
  const parser::TerminalTable& t = grammar_->terminals;
  if (set_store_->budget_bytes() != 0 && t.is_counted(state)) {
    const parser::TerminalTable::CountedSegment& segment = t.SegmentOf(state);
    const grammar::CountedAutomaton& automaton = *segment.automaton;
    const uint32_t local = state - segment.base;
    if (automaton.IsUnitStart(local)) {
      std::shared_ptr<const CountedProfile> profile = set_store_->GetOrBuildAs<CountedProfile>(
          CountedProfileSpelling(automaton), [&] { return BuildCountedProfile(*trie_, automaton, mask_words()); });
      const uint32_t read = automaton.UnitsRead(local);
      const grammar::CountedParts& parts = automaton.parts();
      return CountedSetsFromProfile(*profile, parts.max - read, parts.min > read ? parts.min - read : 0,
                                    mask_words());
    }
  }
  return BuildTokenSets(state);
}

StateTokenSets CompiledGrammar::BuildTokenSets(uint32_t state, bool use_subtrees) const {
  return BuildTerminalTokenSets(*trie_, grammar_->terminals, state, mask_words(), use_subtrees);
}


absl::StatusOr<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::Build(
    std::shared_ptr<const parser::FlatGrammar> grammar,
    std::shared_ptr<const Vocabulary> vocabulary) {
  absl::StatusOr<std::shared_ptr<const TokenTrie>> trie = vocabulary->SharedTrie();
  if (!trie.ok()) return trie.status();
  if (grammar->has_token_names()) {
    // Tokens named by text become ids of this vocabulary, in a copy.
    absl::StatusOr<std::shared_ptr<const parser::FlatGrammar>> resolved =
        ResolveTokenNames(*grammar, *vocabulary);
    if (!resolved.ok()) return resolved.status();
    grammar = *std::move(resolved);
  }
  std::shared_ptr<CompiledGrammar> compiled(
      new CompiledGrammar(std::move(grammar), std::move(vocabulary), *std::move(trie)));
  if (absl::Status s = compiled->BuildTokenTerminalWords(); !s.ok()) return s;
  return std::shared_ptr<const CompiledGrammar>(std::move(compiled));
}

absl::StatusOr<std::shared_ptr<const parser::FlatGrammar>> CompiledGrammar::ResolveTokenNames(
    const parser::FlatGrammar& grammar, const Vocabulary& vocab) {
  // As XGrammar's structural tags resolve a token string: the first id
  // whose text is exactly the name. One pass over the vocabulary, testing
  // only the tokens whose length some name has.
  absl::flat_hash_map<std::string_view, TokenId> by_text;
  std::vector<uint8_t> name_length(size_t{1} << 16, 0);
  for (const parser::TokenTerminal& tt : grammar.token_terminals) {
    for (const std::string& name : tt.names) {
      if (name.size() < name_length.size()) name_length[name.size()] = 1;
      by_text.try_emplace(name, -1);
    }
  }
  for (TokenId id = 0; id < vocab.size(); ++id) {
    const std::string_view bytes = vocab.token_bytes(id);
    if (!name_length[bytes.size()] || vocab.kind(id) == TokenKind::kUnused) continue;
    auto it = by_text.find(bytes);
    if (it != by_text.end() && it->second < 0) it->second = id;
  }
  auto copy = std::make_shared<parser::FlatGrammar>(grammar);
  // Clipped ranges (llguidance's <[a-b]>, <[^...]>, <[*]>): the ids this
  // vocabulary has, EOS and unused ids left out.
  for (parser::TokenTerminal& tt : copy->token_terminals) {
    if (!tt.clip) continue;
    std::vector<grammar::CodepointRange> kept;
    for (const grammar::CodepointRange& r : tt.ids) {
      const uint64_t hi = std::min<uint64_t>(r.hi, static_cast<uint64_t>(vocab.size()) - 1);
      for (uint64_t id = r.lo; id <= hi && vocab.size() > 0; ++id) {
        const TokenId tid = static_cast<TokenId>(id);
        if (vocab.kind(tid) == TokenKind::kUnused || vocab.is_eos(tid)) continue;
        if (!kept.empty() && kept.back().hi + 1 == id) {
          kept.back().hi = static_cast<uint32_t>(id);
        } else {
          kept.push_back({static_cast<uint32_t>(id), static_cast<uint32_t>(id)});
        }
      }
    }
    if (kept.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(tt.where, ": ", tt.name, ": no token of the vocabulary ",
                                                     vocab.source_name(), " has an id in these ranges"));
    }
    tt.ids = std::move(kept);
    tt.clip = false;
  }
  // Token(...) first, as in BuildTokenTerminalWords.
  for (const bool exclude_pass : {false, true}) {
  for (parser::TokenTerminal& tt : copy->token_terminals) {
    if (tt.names.empty() || tt.exclude != exclude_pass) continue;
    std::vector<uint32_t> ids;
    for (const grammar::CodepointRange& r : tt.ids) {
      for (uint64_t id = r.lo; id <= r.hi; ++id) ids.push_back(static_cast<uint32_t>(id));
    }
    for (const std::string& name : tt.names) {
      const auto it = by_text.find(name);
      if (it == by_text.end() || it->second < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            tt.where, ": ", tt.name, ": unknown token \"", name, "\": no token of the vocabulary ",
            vocab.source_name(), " has this text"));
      }
      ids.push_back(static_cast<uint32_t>(it->second));
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    tt.ids.clear();
    for (uint32_t id : ids) {
      if (!tt.ids.empty() && tt.ids.back().hi + 1 == id) {
        tt.ids.back().hi = id;
      } else {
        tt.ids.push_back({id, id});
      }
    }
    tt.names.clear();
  }
  }
  return std::shared_ptr<const parser::FlatGrammar>(std::move(copy));
}

absl::Status CompiledGrammar::BuildTokenTerminalWords() {
  const Vocabulary& vocab = *vocabulary_;
  const TokenId padded = vocab.padded_size();
  const std::vector<parser::TokenTerminal>& terminals = grammar_->token_terminals;
  token_terminal_words_.assign(terminals.size(), {});
  // Token(...) first: a TokenTagDispatch's free token excludes its triggers,
  // and a bad trigger is best reported at the trigger.
  for (const bool exclude_pass : {false, true}) {
  for (size_t k = 0; k < terminals.size(); ++k) {
    const parser::TokenTerminal& tt = terminals[k];
    if (tt.exclude != exclude_pass) continue;
    auto error = [&](std::string_view message) {
      return absl::InvalidArgumentError(absl::StrCat(tt.where, ": ", tt.name, ": ", std::string(message)));
    };
    std::vector<uint32_t> words(mask_words(), 0u);
    for (const grammar::CodepointRange& r : tt.ids) {
      for (uint64_t id = r.lo; id <= r.hi; ++id) {
        if (id >= static_cast<uint64_t>(padded)) {
          return error(absl::StrCat("token id ", id, " is out of range: the vocabulary ",
                                    vocab.source_name(), " has ids 0..", padded - 1));
        }
        const TokenId tid = static_cast<TokenId>(id);
        if (tt.exclude) continue;
        if (vocab.kind(tid) == TokenKind::kUnused) {
          return error(absl::StrCat("token id ", id, " is unused in the vocabulary ",
                                    vocab.source_name(), " (no token has it)"));
        }
        if (vocab.is_eos(tid)) {
          return error(absl::StrCat("token id ", id, " (", std::string(vocab.token_bytes(tid)),
                                    ") is an end-of-sequence id: it ends the text, so no "
                                    "grammar symbol matches it"));
        }
        SetBit(words.data(), tid);
      }
    }
    if (tt.exclude) {
      // Every normal token, then the listed ones cleared.
      absl::Span<const TokenRecord> records = vocab.records();
      for (TokenId id = 0; id < padded; ++id) {
        if (records[id].kind == TokenKind::kNormal) SetBit(words.data(), id);
      }
      for (const grammar::CodepointRange& r : tt.ids) {
        for (uint64_t id = r.lo; id <= r.hi; ++id) words[id / 32] &= ~(1u << (id % 32));
      }
      if (CountBits(words.data(), words.size()) == 0) {
        return error(absl::StrCat("no token of the vocabulary ", vocab.source_name(),
                                  " is left to match"));
      }
    }
    token_terminal_words_[k] = std::move(words);
  }
  }
  return absl::OkStatus();
}

Matcher::Matcher(std::shared_ptr<const CompiledGrammar> grammar, const MatcherOptions& options)
    : grammar_(std::move(grammar)),
      recognizer_(pruning::MakeRecognizer(&grammar_->grammar(), options.recognizer)),
      options_(options) {
  if (options.token_classes == MatcherOptions::TokenClasses::kNow) {
    class_masks_ = grammar_->class_masks();
    if (class_masks_ != nullptr) class_grammar_ = class_masks_->representatives;
  }
}

void Matcher::NoteMiss(double walk_us) {
  const CompiledGrammar& g = *grammar_;
  g.NoteCacheMiss();
  if (options_.token_classes != MatcherOptions::TokenClasses::kOnceRecurring) return;
  g.AddMissTime(walk_us);
  if (g.TokenClassesDue()) {
    g.AdvanceClassMasks(CompiledGrammar::kClassWorkPerStep);  // taken up by the next mask
  }
}

void Matcher::MaybeAdoptTokenClasses() {
  class_masks_ = grammar_->class_masks_if_built();
  if (class_masks_ != nullptr) {
    class_grammar_ = class_masks_->representatives;
    options_.token_classes = MatcherOptions::TokenClasses::kNow;
  }
}

size_t Matcher::PushBytes(std::string_view bytes) {
  size_t n = 0;
  for (char c : bytes) {
    if (!recognizer_.Push(static_cast<uint8_t>(c))) break;
    ++n;
  }
  return n;
}

void Matcher::PopBytes(size_t n) {
  for (size_t i = 0; i < n; ++i) recognizer_.Pop();
}

size_t Matcher::ComputeMask(uint32_t* words) {
  const CompiledGrammar& g = *grammar_;
  // Adopted between masks only: one mask walks one grammar throughout.
  if (options_.token_classes == MatcherOptions::TokenClasses::kOnceRecurring) MaybeAdoptTokenClasses();
  rejected_nodes_.clear();
  rejected_nodes_known_ = false;
  if (finished_ || !recognizer_.status().ok()) {
    std::fill(words, words + g.mask_words(), 0u);
    rejected_nodes_known_ = true;
    return 0;
  }
  // The key spells the newest options_.key_sets kept sets (deep nesting
  // costs no more). Its entry may point to a longer key, where a state whose
  // walk read below the cut stored its mask; the walk's own mask goes under
  // the last key looked up, or under a longer one if its walk read deeper.
  const auto counted_class = [&g](uint32_t s) { return g.MaskClass(s); };
  const parser::StateClasses classes{g.mask_classes(), counted_class};  // refers to counted_class
  parser::KeyCut spelled;
  const bool cached = options_.use_cache &&
                      recognizer_.CanonicalState(&key_, classes, {.max_sets = options_.key_sets}, &spelled);
  bool pointed = false;  // partial_key_ holds the last key that pointed deeper
  uint32_t pointing_cut = 0;  // and this is where it was cut
  while (cached) {
    const MaskCache::Found found = g.CacheLookup(key_, words);
    if (found.allowed >= 0) return static_cast<size_t>(found.allowed);
    // A pointer always leads to a longer key; the test guards against a
    // cycle all the same.
    if (found.deeper_sets <= spelled.older_sets || spelled.cut == 0) break;
    std::swap(partial_key_, key_);  // kept, not copied: key_ is spelled afresh
    pointed = true;
    pointing_cut = spelled.cut;
    recognizer_.CanonicalState(&key_, classes, {.max_sets = found.deeper_sets}, &spelled);
  }
  // A state whose longer key missed walks from the partial mask of the key
  // that pointed there, when one is kept (partial_masks.h).
  std::shared_ptr<const PartialMasks::Partial> partial;
  if (pointed) partial = WalkedGrammar().partial_masks().Find(partial_key_);
  // When none is kept (a budget cleared it, or it was kept by the grammar
  // walked before the token classes were taken up: partials belong to the
  // walked grammar), this walk takes it again, split at the pointing key's
  // cut, and keeps it under that key; else every later state under the
  // pointer would walk the whole trie.
  const bool retake = pointed && partial == nullptr && g.grammar().lexed();
  recognizer_.ResetConsulted();
  walk_cut_ = !cached ? 0 : retake ? pointing_cut : spelled.cut;
  partial_taken_ = false;
  const auto walk_start = std::chrono::steady_clock::now();
  const size_t allowed = ComputeUncached(words, partial.get());
  const double walk_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - walk_start).count();
  // A mask cut short by a budget is not cached.
  if (cached && recognizer_.status().ok()) {
    const uint32_t lowest = recognizer_.LowestConsultedGroup();
    if (spelled.cut == 0 || lowest == parser::kNoParent || lowest >= spelled.cut) {
      g.CacheStore(key_, words, allowed);
    } else {
      parser::KeyCut deeper;
      recognizer_.CanonicalState(&deeper_key_, classes, {.down_to_group = lowest}, &deeper);
      g.CacheStoreDeeper(key_, deeper.older_sets);
      g.CacheStore(deeper_key_, words, allowed);
      if (partial_taken_ && !retake) WalkedGrammar().partial_masks().Store(key_, split_words_, deep_roots_);
    }
    if (retake && partial_taken_) WalkedGrammar().partial_masks().Store(partial_key_, split_words_, deep_roots_);
    NoteMiss(walk_us);
  }
  return allowed;
}

size_t Matcher::ComputeUncached(uint32_t* words, const PartialMasks::Partial* partial) {
  if (class_grammar_ == nullptr) {
    return options_.use_token_sets ? MaskFromTokenSets(words, partial) : WalkTrie(words);
  }
  // The representatives' grammar shares the lowered grammar, so the
  // recognizer's state is its state too: its mask over classes, expanded.
  // Masks are cached expanded, in this grammar's cache, as without classes.
  std::swap(grammar_, class_grammar_);
  class_words_.resize(grammar_->mask_words());
  if (options_.use_token_sets) {
    MaskFromTokenSets(class_words_.data(), partial);
  } else {
    WalkTrie(class_words_.data());
  }
  std::swap(grammar_, class_grammar_);
  rejected_nodes_.clear();  // the walk's nodes were the representatives' trie's
  rejected_nodes_known_ = false;
  return class_masks_->Expand(class_words_.data(), words, grammar_->mask_words());
}

void Matcher::AddTokenSets(const StateTokenSets& sets, uint32_t* words) {
  if (sets.core != nullptr) AddTokenSets(*sets.core, words);
  for (size_t w = 0; w < sets.accepted_words.size(); ++w) words[w] |= sets.accepted_words[w];
  for (TokenId id : sets.accepted_ids) SetBit(words, id);
  roots_.insert(roots_.end(), sets.uncertain_roots.begin(), sets.uncertain_roots.end());
}

size_t Matcher::MaskFromTokenSets(uint32_t* words, const PartialMasks::Partial* partial) {
  const CompiledGrammar& g = *grammar_;
  const size_t n_words = g.mask_words();
  roots_.clear();
  if (partial != nullptr) {
    // The part the cut key fixes, then the deep roots (lexed grammars only
    // keep partials).
    std::copy(partial->words->begin(), partial->words->end(), words);
    roots_.assign(partial->roots.begin(), partial->roots.end());
    WalkLexedRoots(words);
    return CountAndAddEos(words);
  }
  std::fill(words, words + n_words, 0u);
  if (!g.grammar().lexed()) {
    recognizer_.CollectScanStates(&states_);
    const parser::FlatGrammar& flat = g.grammar();
    for (uint32_t state : states_) {
      // Token terminals take no bytes: CountAndAddEos adds their ids.
      if (state >= flat.token_state_begin && state < flat.token_state_end) continue;
      AddTokenSets(g.TokenSets(state), words);
    }
  } else {
    // Per lane: the union of its items' sets, minus the tokens that make one
    // of its guards fire (the lane dies on them whatever the parser does).
    recognizer_.CollectLanes(&lanes_);
    const parser::LexerTable& lexer = *g.grammar().lexer;
    for (const parser::Recognizer::LaneView& lane : lanes_) {
      lane_words_.assign(n_words, 0u);
      if (lexer.ignored_can_continue[lane.lexer_state]) {
        // Inside an ignored token that may go on (a comment, a docstring):
        // every awaited token's walk would cover the whole trie below the
        // open token; one walk for all of them is the same union (the
        // tokens a lane may still become only shrink along a path), cached
        // per (state, awaited tokens).
        AddTokenSets(*g.LexedSubtreeSets(TokenTrie::kRoot, lane.lexer_state, {}, lane.tokens),
                     lane_words_.data());
      } else {
        parser::ForEachToken(lane.tokens, [&](uint32_t token) {
          AddTokenSets(g.LexedTokenSets(lane.lexer_state, token), lane_words_.data());
        });
      }
      if (lane.accepting) {
        AddTokenSets(g.LexedTokenSets(lane.lexer_state, CompiledGrammar::kIgnoredOnly),
                     lane_words_.data());
      }
      for (size_t k = 0; k + 1 < lane.guards.size(); k += 2) {
        const std::vector<uint32_t>& fire = g.GuardFailures(lane.guards[k], lane.guards[k + 1]);
        for (size_t w = 0; w < n_words; ++w) lane_words_[w] &= ~fire[w];
      }
      for (size_t w = 0; w < n_words; ++w) words[w] |= lane_words_[w];
    }
  }
  WalkUncertainRoots(words);
  return CountAndAddEos(words);
}

void Matcher::WalkUncertainRoots(uint32_t* words) {
  // Each uncertain subtree is walked by the parser (lexed grammars:
  // WalkLexedRoots, lexed_masks.cc).
  if (grammar_->grammar().lexed()) return WalkLexedRoots(words);
  absl::Span<const TokenTrieNode> nodes = grammar_->trie().nodes();
  std::sort(roots_.begin(), roots_.end(), std::greater<uint32_t>());
  roots_.erase(std::unique(roots_.begin(), roots_.end()), roots_.end());
  // `pushed_` holds the bytes pushed so far, shared with the previous
  // root's path where they agree. roots_ is a stack: smallest node on top,
  // so that paths are visited in trie order.
  pushed_.clear();
  while (!roots_.empty()) {
    const uint32_t root = roots_.back();
    roots_.pop_back();
    const uint32_t depth = nodes[root].depth;
    const std::string path = grammar_->NodeString(grammar_->trie_parent(root));
    size_t common = 0;
    while (common < pushed_.size() && common < path.size() && pushed_[common] == path[common]) ++common;
    PopBytes(pushed_.size() - common);
    pushed_.resize(common);
    bool alive = true;
    while (pushed_.size() < path.size()) {
      if (!recognizer_.Push(static_cast<uint8_t>(path[pushed_.size()]))) {
        alive = false;
        break;
      }
      pushed_.push_back(path[pushed_.size()]);
    }
    if (!alive) continue;  // the whole subtree is rejected
    WalkNodes(root, nodes[root].subtree_end, depth - 1, words, /*rejected=*/nullptr);
  }
  PopBytes(pushed_.size());
  pushed_.clear();
}

void Matcher::AddTokenTerminals(uint32_t* words) {
  const CompiledGrammar& g = *grammar_;
  const parser::FlatGrammar& flat = g.grammar();
  recognizer_.CollectScanStates(&states_);
  for (uint32_t state : states_) {
    if (!flat.IsTokenState(state)) continue;
    const std::vector<uint32_t>& ids = g.TokenTerminalWords(state - flat.token_state_begin);
    for (size_t w = 0; w < ids.size(); ++w) words[w] |= ids[w];
  }
}

bool Matcher::HasTokenItems() {
  if (!grammar_->grammar().has_token_terminals()) return false;
  recognizer_.CollectScanStates(&states_);
  const parser::FlatGrammar& flat = grammar_->grammar();
  return std::any_of(states_.begin(), states_.end(),
                     [&](uint32_t s) { return flat.IsTokenState(s); });
}

size_t Matcher::CountAndAddEos(uint32_t* words) {
  const CompiledGrammar& g = *grammar_;
  if (g.grammar().has_token_terminals()) AddTokenTerminals(words);
  size_t allowed = CountBits(words, g.mask_words());
  if (recognizer_.IsAccepting()) {
    for (TokenId id : g.vocabulary().eos_ids()) {
      if (!((words[id / 32] >> (id % 32)) & 1)) ++allowed;
      SetBit(words, id);
    }
  }
  return allowed;
}

void Matcher::WalkNodes(uint32_t begin, uint32_t end, uint32_t base_depth, uint32_t* words,
                        std::vector<uint32_t>* rejected) {
  const TokenTrie& trie = grammar_->trie();
  absl::Span<const TokenTrieNode> nodes = trie.nodes();
  uint32_t depth = base_depth;  // the depth of the node on top of the pushed bytes
  for (uint32_t i = begin; i < end;) {
    const TokenTrieNode& node = nodes[i];
    for (; depth >= node.depth; --depth) recognizer_.Pop();
    if (!recognizer_.Push(node.byte)) {
      if (rejected != nullptr) rejected->push_back(i);
      i = node.subtree_end;
      continue;
    }
    ++depth;
    for (TokenId id : trie.TokensAt(i)) SetBit(words, id);
    ++i;
  }
  PopBytes(depth - base_depth);
}

size_t Matcher::WalkTrie(uint32_t* words) {
  const CompiledGrammar& g = *grammar_;
  std::fill(words, words + g.mask_words(), 0u);
  rejected_nodes_.clear();
  rejected_nodes_known_ = true;
  WalkNodes(TokenTrie::kRoot + 1, static_cast<uint32_t>(g.trie().nodes().size()), 0, words,
            &rejected_nodes_);
  return CountAndAddEos(words);
}

void Matcher::BeginCommit() {
  if (recording()) recognizer_.set_completion_log(&completions_);
}

void Matcher::EndCommit(std::string_view text, const std::vector<uint64_t>& no_byte) {
  if (!recording()) return;
  recognizer_.set_completion_log(nullptr);
  const parser::FlatGrammar& g = grammar_->grammar();
  const uint64_t keep_from = recognizer_.EarliestOpenOrigin([&](uint32_t nt) { return g.CaptureOf(nt) != 0; });
  captures_.Record(completions_, text, no_byte, keep_from);
  completions_.clear();
}

bool Matcher::AcceptToken(TokenId id) {
  const Vocabulary& vocab = grammar_->vocabulary();
  if (finished_ || id < 0 || id >= vocab.padded_size()) return false;
  if (vocab.is_eos(id)) {
    if (!recognizer_.IsAccepting()) return false;
    finished_ = true;
    history_.push_back(kEosEntry);
    return true;
  }
  if (grammar_->grammar().has_token_terminals()) {
    // Both paths at once: the text (normal tokens) and the id (see matcher.h).
    if (vocab.kind(id) == TokenKind::kUnused) return false;
    const bool normal = vocab.kind(id) == TokenKind::kNormal;
    const std::string_view bytes = normal ? vocab.token_bytes(id) : std::string_view();
    BeginCommit();
    if (!recognizer_.FeedToken(static_cast<uint32_t>(id), normal, bytes)) {
      completions_.clear();  // all or nothing: nothing was fed
      EndCommit({});
      return false;
    }
    if (bytes.empty()) {
      static const std::vector<uint64_t> kWithoutByte = {0};  // its one position has no byte
      EndCommit(std::string_view("\0", 1), kWithoutByte);
    } else {
      EndCommit(bytes);
    }
    history_.push_back(static_cast<uint32_t>(std::max<size_t>(1, bytes.size())));
    return true;
  }
  if (vocab.kind(id) != TokenKind::kNormal) return false;
  if (!AcceptBytes(vocab.token_bytes(id))) return false;
  return true;
}

bool Matcher::AcceptAllowedToken(TokenId id) {
  const Vocabulary& vocab = grammar_->vocabulary();
  if (finished_ || id < 0 || id >= vocab.padded_size() || vocab.kind(id) != TokenKind::kNormal ||
      grammar_->grammar().has_token_terminals()) {
    return AcceptToken(id);
  }
  const std::string_view bytes = vocab.token_bytes(id);
  if (bytes.size() > options_.recognizer.max_rollback) return AcceptToken(id);
  size_t fed = 0;
  BeginCommit();
  for (char c : bytes) {
    if (!recognizer_.Feed(static_cast<uint8_t>(c))) break;
    ++fed;
  }
  if (fed == bytes.size()) {
    EndCommit(bytes);
    history_.push_back(static_cast<uint32_t>(bytes.size()));
    return true;
  }
  completions_.clear();  // of bytes rolled back now
  EndCommit({});
  // Fed bytes fit the window (each widened it by one, up to max_rollback).
  if (fed > 0 && !recognizer_.Rollback(fed)) std::abort();
  return AcceptToken(id);
}

bool Matcher::AcceptBytes(std::string_view bytes) {
  if (finished_) return false;
  // Check first without touching the committed state, then feed for real.
  const size_t taken = PushBytes(bytes);
  PopBytes(taken);
  if (taken != bytes.size()) return false;
  BeginCommit();
  size_t fed = 0;
  for (char c : bytes) {
    if (!recognizer_.Feed(static_cast<uint8_t>(c))) {  // a budget ran out
      EndCommit(bytes.substr(0, fed));
      return false;
    }
    ++fed;
  }
  EndCommit(bytes);
  history_.push_back(static_cast<uint32_t>(bytes.size()));
  return true;
}

bool Matcher::Rollback(size_t n) {
  if (n > history_.size()) return false;
  size_t bytes = 0;
  for (size_t i = history_.size() - n; i < history_.size(); ++i) {
    if (history_[i] != kEosEntry) bytes += history_[i];
  }
  if (!recognizer_.Rollback(bytes)) return false;
  captures_.Truncate(recognizer_.Position());
  for (size_t i = history_.size() - n; i < history_.size(); ++i) {
    if (history_[i] == kEosEntry) finished_ = false;
  }
  history_.resize(history_.size() - n);
  return true;
}

void Matcher::Reset() {
  recognizer_.Reset();
  captures_.Clear();
  history_.clear();
  finished_ = false;
  rejected_nodes_.clear();
}

bool Matcher::IsAccepting() const { return recognizer_.IsAccepting(); }

std::string Matcher::ForcedBytes() {
  std::string forced;
  // A token terminal could take the next token instead of the bytes.
  while (forced.size() < kMaxForcedBytes && !recognizer_.IsAccepting() && !HasTokenItems()) {
    const parser::ByteSet next = recognizer_.NextBytes();
    if (next.count() != 1) break;
    uint8_t byte = 0;
    while (!next.test(byte)) ++byte;
    if (!recognizer_.Push(byte)) break;
    forced.push_back(static_cast<char>(byte));
  }
  PopBytes(forced.size());
  return forced;
}

size_t Matcher::ValidateTokens(absl::Span<const TokenId> draft) {
  const Vocabulary& vocab = grammar_->vocabulary();
  size_t pushed = 0, valid = 0;
  for (TokenId id : draft) {
    if (finished_ || id < 0 || id >= vocab.padded_size()) break;
    if (vocab.is_eos(id)) {
      if (recognizer_.IsAccepting()) ++valid;
      break;  // nothing follows EOS
    }
    if (grammar_->grammar().has_token_terminals()) {
      if (vocab.kind(id) == TokenKind::kUnused) break;
      const bool normal = vocab.kind(id) == TokenKind::kNormal;
      const size_t taken = recognizer_.PushToken(
          static_cast<uint32_t>(id), normal, normal ? vocab.token_bytes(id) : std::string_view());
      if (taken == 0) break;
      pushed += taken;
      ++valid;
      continue;
    }
    if (vocab.kind(id) != TokenKind::kNormal) break;
    const std::string_view bytes = vocab.token_bytes(id);
    const size_t taken = PushBytes(bytes);
    pushed += taken;
    if (taken != bytes.size()) break;
    ++valid;
  }
  PopBytes(pushed);
  return valid;
}

const std::vector<uint32_t>& Matcher::LastRejectedNodes() {
  if (!rejected_nodes_known_) {
    std::vector<uint32_t> scratch(grammar_->mask_words());
    if (!finished_ && recognizer_.status().ok()) WalkTrie(scratch.data());
    rejected_nodes_known_ = true;
  }
  return rejected_nodes_;
}

std::vector<std::string> Matcher::LastRejectedPrefixes() {
  std::vector<std::string> out;
  for (uint32_t node : LastRejectedNodes()) {
    out.push_back(grammar_->NodeString(node));
  }
  return out;
}

std::vector<TokenId> Matcher::LastRejectedTokens() {
  const TokenTrie& trie = grammar_->trie();
  std::vector<TokenId> out;
  for (uint32_t node : LastRejectedNodes()) {
    for (uint32_t i = node; i < trie.nodes()[node].subtree_end; ++i) {
      for (TokenId id : trie.TokensAt(i)) out.push_back(id);
    }
  }
  std::sort(out.begin(), out.end());
  if (grammar_->grammar().has_token_terminals() && !finished_) {
    // A token under a rejected prefix may still be allowed by its id.
    std::vector<uint32_t> by_id(grammar_->mask_words(), 0u);
    AddTokenTerminals(by_id.data());
    std::erase_if(out, [&](TokenId id) { return ((by_id[id / 32] >> (id % 32)) & 1) != 0; });
  }
  return out;
}

}  // namespace zapgram::masks
