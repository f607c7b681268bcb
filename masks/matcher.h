// Token masks: which tokens of a vocabulary keep the text inside the grammar.
//
// A CompiledGrammar joins a lowered grammar (parser/flat_grammar.h) with a
// vocabulary (masks/vocabulary.h) and its token trie (masks/token_trie.h).
// It is immutable and may be shared by any number of threads; each sequence
// being decoded has its own Matcher.
//
// Mask computation walks the token trie depth first with the recognizer's
// speculative Push/Pop: a node whose byte the recognizer refuses is a
// minimal rejected prefix, and its whole subtree (every token starting with
// those bytes) is rejected in one step — a true prefix test, no token is
// ever checked twice. Tokens ending at an accepted node are allowed. EOS is
// allowed exactly when the text so far is a sentence; special and unused ids
// never are. The rejected nodes of the last mask are kept for samplers
// (sampling/: CARS records them as invalid prefixes).
//
// Two shortcuts make masks cheap:
//  - context-independent token sets. An item sitting on terminal T in DFA
//    state s accepts every token whose bytes keep T's DFA alive from s,
//    whatever surrounds it: those tokens are one precomputed set per state
//    (a bitset, or an id list when smaller). A token the parser accepts
//    otherwise must end T on the way and go on past it: the DFA walk from s
//    passes an accepting state and then dies. The trie nodes where it dies
//    after such a point are the state's *uncertain roots*; only their
//    subtrees are walked with the parser. Every other token is rejected.
//    Built on first use per state (thread-safe, std::call_once), or found
//    built by another grammar of the same vocabulary: sets are shared per
//    canonical reachable automaton (masks/token_sets.h). One depth-first
//    walk of the trie steps the terminal's DFA (token_sets.cc,
//    ClassifyTerminalTokens): accepted ids go straight into a bitset, and a
//    subtree whose every byte the state loops on is accepted whole, its ids
//    one slice of the trie (TokenTrie::SubtreeBytes / SubtreeTokens), so a
//    state inside a JSON string settles most of Llama 3's 275k nodes in
//    ~15k jumps (cold build ~16 ms before, ~0.5 ms now).
//    Lexed grammars (Lark) get the same per (lane lexer state, awaited
//    token): certain while the lane's open token can still become that token
//    (or an ignored one), uncertain past a possible token end; a lane's
//    guards remove the tokens that make them fire (the lane dies on them).
//    There, an uncertain subtree is not walked byte by byte with the parser
//    (each byte would copy every item of the lane): the lanes after the
//    root's bytes are stepped as views by the lexer, the parser closing
//    each distinct sequence of ended tokens once per mask, and the subtree
//    below is classified the same way from those lanes, running only the
//    lexer (LexedSubtreeSets, cached per (node, lane), or walked when small);
//    the parser returns for the nested roots only, where a token may end
//    (masks/lexed_masks.cc). Lark masks got ~20x faster, then ~2x more.
//  - the state cache: masks keyed by the recognizer's canonical pruned state
//    (Recognizer::CanonicalState, spelled in place from the live chart by
//    the compactor: no copy, no allocation), in the vocabulary's mask cache
//    (masks/mask_cache.h: one byte budget and LRU eviction across every
//    grammar), with hit/miss counters per grammar.
//    The key is cut below MatcherOptions::key_sets kept sets, so deep
//    nesting neither slows keys nor multiplies entries. A mask whose walk
//    read below the cut (a token such as `}]}` closes three levels) is
//    stored under a longer key, spelled down to the deepest group the walk
//    read, and the cut key points there; a lookup follows the pointer. So a
//    mask is shared by every state alike as far down as its walk read,
//    whatever lies below (MatcherCutKeys tests). Lexed walks also keep,
//    under the cut key, the part of the mask that the cut key fixes and the
//    trie roots whose part may depend on the chart below it: a later state
//    with that cut key and a new longer key walks those roots only
//    (masks/partial_masks.h).
//
// Accepting a token feeds its bytes (with pruning, parser/recognizer.h);
// Rollback undoes whole tokens within the recognizer's rollback budget.
//
// Token terminals (XGrammar's Token / ExcludeToken / TokenTagDispatch,
// parser/flat_grammar.h) match one whole token by id. Build checks their ids
// against the vocabulary (an id past padded_size(), a Token naming an
// unused or an EOS id, an ExcludeToken matching nothing: errors at the
// macro's place) and turns each into a mask of the ids it matches. The mask
// ORs in the masks of the token terminals that items of the newest set sit
// on: such an item accepts those ids whatever follows, because the item's
// continuation is productive (the token is consumed whole, nothing of it is
// left to the rest of the grammar). The byte walk never moves these items
// (their state leaves on no byte), so a token is allowed by its text path,
// its id path, or both. Tokens named by text in the grammar are resolved to
// this vocabulary's ids first, in a copy of the lowered grammar (an unknown
// text is an error). AcceptToken then runs both paths at once
// (Recognizer::FeedToken): the text through the byte terminals (normal
// tokens only) and the id through the token terminals; a special token
// is allowed only where a token terminal names it. AcceptBytes feeds text:
// it never passes a token terminal. The cache key spells the items on token
// terminals like any item, so cached masks stay exact. ForcedBytes stops
// where a token terminal could take the next token instead.
//
// Tests: tests/masks/matcher_test.cc (masks against a per-token brute force;
// TokenSets.*: each state's sets against a node-by-node oracle and the
// shortcut against the plain walk, on random and JSON grammars).
#ifndef ZAPGRAM_MASKS_MATCHER_H_
#define ZAPGRAM_MASKS_MATCHER_H_

#include <cstdint>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/functional/function_ref.h"
#include "absl/hash/hash.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "masks/captures.h"
#include "masks/closure_memo.h"
#include "masks/generation_budget.h"
#include "masks/partial_masks.h"
#include "masks/mask_cache.h"
#include "masks/token_classes.h"
#include "masks/token_sets.h"
#include "masks/token_trie.h"
#include "masks/vocabulary.h"
#include "parser/active_rules.h"
#include "parser/flat_grammar.h"
#include "parser/recognizer.h"
#include "zapgram/limits.h"

namespace zapgram::masks {

struct ClassMasks;  // masks/class_masks.h

class CompiledGrammar {
 public:
  // `grammar` and `vocabulary` are shared, not copied.
  static absl::StatusOr<std::shared_ptr<const CompiledGrammar>> Build(
      std::shared_ptr<const parser::FlatGrammar> grammar,
      std::shared_ptr<const Vocabulary> vocabulary);

  const parser::FlatGrammar& grammar() const { return *grammar_; }
  const Vocabulary& vocabulary() const { return *vocabulary_; }
  const TokenTrie& trie() const { return *trie_; }
  // Per trie node: its parent (the root's is itself).
  uint32_t trie_parent(uint32_t node) const { return trie_->parent(node); }
  // The bytes from the trie root to `node` (its token string).
  std::string NodeString(uint32_t node) const;
  // uint32 words of a mask: ceil(padded_size / 32).
  size_t mask_words() const { return (static_cast<size_t>(vocabulary_->padded_size()) + 31) / 32; }

  // The token sets of terminal-table state `state` (byte-level grammars).
  const StateTokenSets& TokenSets(uint32_t state) const;
  // The sets of `state` built afresh, not cached (TokenSets builds through
  // it). `use_subtrees` false turns off the whole-subtree shortcut and steps
  // every trie node: the same sets, slower (the differential tests'
  // reference). Thread-safe.
  StateTokenSets BuildTokenSets(uint32_t state, bool use_subtrees = true) const;
  // The sets of a state past the eager ones (counted, lazy), as TokenSets
  // builds them: a counted unit start from the vocabulary's CountedProfile,
  // any other by BuildTokenSets.
  StateTokenSets BuildOnDemandSets(uint32_t state) const;
  // The sets of an eager or lazy state (a mask class), through the
  // vocabulary's store where that pays; `*built` is set when this grammar
  // built some part of them rather than finding it.
  std::shared_ptr<const StateTokenSets> SharedTokenSets(uint32_t state, bool* built) const;
  // Per eager terminal state, the representative of the states that no
  // token can tell apart (BoundedEquivalence); keys the cache and the sets.
  // Empty until computed: every state is then its own class. Computed once
  // the grammar recurs (NoteCacheMiss) or on request (EnsureMaskClasses),
  // not at Build: a fresh grammar's first masks do not wait for it.
  //
  // Keys spelled before and after may mix in the cache: a class is keyed by
  // its smallest member, a state itself, whose mask every member shares;
  // so a key names the same masks whichever way it was spelled.
  absl::Span<const uint32_t> mask_classes() const {
    const std::vector<uint32_t>* classes = mask_class_.load(std::memory_order_acquire);
    return classes == nullptr ? absl::Span<const uint32_t>() : absl::Span<const uint32_t>(*classes);
  }
  // Computes the classes now (once; thread-safe). Readers meanwhile go on
  // with the identity.
  void EnsureMaskClasses() const;
  // A Matcher of this grammar missed the mask cache: after
  // kMaskMissesBeforeClasses of them the classes are computed (by the
  // caller, once), when the grammar has shown it recurs.
  void NoteCacheMiss() const {
    if (mask_misses_.fetch_add(1, std::memory_order_relaxed) + 1 == kMaskMissesBeforeClasses) {
      EnsureMaskClasses();
    }
  }
  static constexpr uint64_t kMaskMissesBeforeClasses = 256;
  // Mask-cache misses so far (the masks its matchers computed and stored).
  uint64_t mask_misses() const { return mask_misses_.load(std::memory_order_relaxed); }
  // Time its matchers spent computing masks afresh without token classes.
  void AddMissTime(double us) const {
    miss_ns_.fetch_add(static_cast<uint64_t>(us * 1000), std::memory_order_relaxed);
  }
  // Whether the token classes are due (MatcherOptions::TokenClasses::
  // kOnceRecurring): once the masks computed without them have cost what
  // they are expected to cost (the rule of renting skis until the rent
  // reaches the price: never more than twice the better choice's time).
  // Expected: ~2.5 us per id of the vocabulary (a SynCode Lark grammar on
  // Llama 3's 128k ids: 0.2-0.45 s).
  bool TokenClassesDue() const {
    return miss_ns_.load(std::memory_order_relaxed) >= kClassNsPerId * static_cast<uint64_t>(vocabulary_->padded_size());
  }
  static constexpr uint64_t kClassNsPerId = 2500;
  // class_masks() if built already, else null (never builds).
  std::shared_ptr<const ClassMasks> class_masks_if_built() const {
    if (class_masks_built_.load(std::memory_order_acquire) == nullptr) return nullptr;
    return class_masks();
  }
  // One step of `work` units of this grammar's token classes
  // (TokenClassesInProgress::Step), unless another thread is taking one or
  // they are complete; the step that completes them builds the class
  // masks. Returns class_masks_if_built().
  std::shared_ptr<const ClassMasks> AdvanceClassMasks(uint64_t work) const;
  // A matcher's step after a miss (~25 units a microsecond with Llama 3 on
  // a SynCode grammar: ~15 ms; a SynCode grammar's classes take ~20 steps).
  static constexpr uint64_t kClassWorkPerStep = 393216;
  // The class of any terminal state (eager ones through mask_classes(),
  // counted ones through grammar/counted_automaton.h, lazy ones themselves).
  uint32_t MaskClass(uint32_t state) const;
  // Lexed grammars: the token sets of items waiting for `token` in a lane
  // whose lexer state is `lexer_state` (token = kIgnoredOnly: the lane's
  // accepting flag carried through ignored tokens), and the tokens whose
  // bytes make guard (lexer state, rank) fire. Built on first use.
  static constexpr uint32_t kIgnoredOnly = 0xFFFFFFFEu;
  const StateTokenSets& LexedTokenSets(uint32_t lexer_state, uint32_t token) const;
  const std::vector<uint32_t>& GuardFailures(uint32_t guard_state, uint32_t rank) const;
  // Lexed grammars: the sets of trie subtree `root` for a lane (lexer state,
  // guards, tokens its items wait for) that the parser holds after root's
  // bytes; uncertain roots are the nested nodes where a token may end.
  // Cached within a byte budget (64 MiB): an addition that would pass it
  // first drops every kept set (a new generation; callers hold theirs by
  // shared_ptr), so the sets that recur are kept again and no per-entry
  // bookkeeping runs on a hit.
  std::shared_ptr<const StateTokenSets> LexedSubtreeSets(uint32_t root, uint32_t lexer_state,
                                                         const std::vector<uint32_t>& guards,
                                                         const parser::TokenBits& tokens) const;

  // The mask cache (shared with every grammar of this vocabulary, see
  // masks/mask_cache.h). Lookup copies a mask found into `words`.
  MaskCache::Found CacheLookup(absl::Span<const uint32_t> key, uint32_t* words) const {
    return cache_->Lookup(*account_, key, words);
  }
  void CacheStore(absl::Span<const uint32_t> key, const uint32_t* words, size_t allowed) const {
    cache_->Store(account_, key, words, allowed);
  }
  void CacheStoreDeeper(absl::Span<const uint32_t> key, uint32_t deeper_sets) const {
    cache_->StoreDeeper(account_, key, deeper_sets);
  }
  // This grammar's share of the cache.
  MaskCacheStats cache_stats() const { return account_->stats(); }

  // The tokens token terminal k (FlatGrammar::token_terminals) matches, as
  // a mask (mask_words() words): Token's listed ids, or ExcludeToken's
  // normal tokens not listed. Checked against the vocabulary by Build.
  const std::vector<uint32_t>& TokenTerminalWords(size_t k) const { return token_terminal_words_[k]; }

  // The vocabulary's token equivalence classes under this grammar
  // (masks/token_classes.h): computed on first use, then kept. Thread-safe.
  const TokenClasses& token_classes() const;
  // The grammar over one token per class and the class -> ids lists
  // (masks/class_masks.h), built on first use; null for grammars with token
  // terminals, or when it could not be built. Thread-safe.
  std::shared_ptr<const ClassMasks> class_masks() const;

  // Heap bytes this grammar holds, by kind.
  struct Memory {
    size_t grammar = 0;           // lowered grammar, tables, classes, class masks, slots
    size_t token_sets_built = 0;  // terminal-state sets it built (also offered to the store)
    size_t token_sets_found = 0;  // sets found built by an earlier grammar (shared, not its own)
    size_t lexed_sets = 0;        // lexed and lazy-state sets, guard failures, subtree sets, closure memo, partial masks
    size_t mask_cache = 0;        // its entries in the vocabulary's mask cache
    // What this grammar adds to the process (found sets excluded).
    size_t own() const { return grammar + token_sets_built + lexed_sets + mask_cache; }
  };
  Memory memory() const;
  MaskCache& mask_cache() const { return *cache_; }
  // Lexed grammars: closures of the mask walk kept across masks (32 MiB).
  ClosureMemo& closure_memo() const { return closure_memo_; }
  // Lexed grammars: partial masks kept per cut key (32 MiB).
  PartialMasks& partial_masks() const { return partial_masks_; }
  // The subtree sets' budget (takes effect at the next addition; tests use
  // a tiny one), and how many times they were dropped to stay within it.
  void set_subtree_budget_bytes(size_t bytes) const;
  uint64_t subtree_evictions() const;

 private:
  CompiledGrammar(std::shared_ptr<const parser::FlatGrammar> grammar,
                  std::shared_ptr<const Vocabulary> vocabulary, std::shared_ptr<const TokenTrie> trie);
  StateTokenSets BuildLexedTokenSets(uint32_t lexer_state, uint32_t token) const;
  std::vector<uint32_t> BuildGuardFailures(uint32_t guard_state, uint32_t rank) const;
  StateTokenSets BuildLexedSubtreeSets(uint32_t root, uint32_t lexer_state,
                                       const std::vector<uint32_t>& guards,
                                       const parser::TokenBits& tokens) const;

 public:
  // The walk that builds LexedSubtreeSets, with sinks: `accept(node)` for
  // each node below `root` whose tokens the lane keeps, `uncertain(node)`
  // for each uncertain root, in trie order. Thread-safe (per-thread scratch).
  // `accept` gets ids (a node's, or a whole subtree's when the lane's lexer
  // state loops on every byte below a node and no guard is pending: every
  // node there stays inside, as the byte-level sets' shortcut).
  void WalkLexedSubtree(uint32_t root, uint32_t lexer_state, absl::Span<const uint32_t> guards,
                        const parser::TokenBits& tokens, absl::FunctionRef<void(absl::Span<const TokenId>)> accept,
                        absl::FunctionRef<void(uint32_t)> uncertain) const;

 private:
  // Sets without a slot of their own, built on first use: lexed grammars',
  // keyed by (state, token), and counted terminal states', keyed by state;
  // and guard failures keyed by (guard state, rank). Lazy terminal states'
  // sets are built as eager ones' (SharedTokenSets) into lazy_sets_.
  const StateTokenSets& OnDemandSets(uint64_t key, absl::FunctionRef<StateTokenSets()> build) const;
  mutable std::mutex on_demand_mu_;
  mutable absl::node_hash_map<uint64_t, StateTokenSets> on_demand_sets_;
  mutable absl::flat_hash_map<uint32_t, std::shared_ptr<const StateTokenSets>> lazy_sets_;  // by lazy state
  // Looked up by span (SpanHash, SpanEq: masks/closure_memo.h).
  mutable absl::flat_hash_map<std::vector<uint32_t>, std::shared_ptr<const StateTokenSets>, SpanHash, SpanEq>
      subtree_sets_;
  mutable GenerationBudget subtree_budget_{size_t{64} << 20};  // reserved under on_demand_mu_
  std::vector<TrieByteSet> lexer_loops_;  // lexed grammars: per lexer state, the bytes looping on it
  mutable absl::node_hash_map<uint64_t, std::vector<uint32_t>> guard_failures_;

  std::shared_ptr<const parser::FlatGrammar> grammar_;
  std::shared_ptr<const Vocabulary> vocabulary_;
  std::shared_ptr<const TokenTrie> trie_;  // shared through Vocabulary::SharedTrie
  // mask_classes(): computed into mask_class_storage_ under the once flag,
  // then published through mask_class_.
  mutable std::once_flag mask_class_once_;
  mutable std::vector<uint32_t> mask_class_storage_;
  mutable std::atomic<const std::vector<uint32_t>*> mask_class_{nullptr};
  mutable std::atomic<uint64_t> mask_misses_{0};
  mutable std::atomic<uint64_t> miss_ns_{0};
  // Per eager terminal state, found in the vocabulary's TokenSetStore or
  // built, once, on first use.
  std::shared_ptr<TokenSetStore> set_store_;
  std::unique_ptr<std::once_flag[]> sets_once_;
  mutable std::vector<std::shared_ptr<const StateTokenSets>> sets_;
  mutable std::atomic<size_t> sets_built_bytes_{0}, sets_found_bytes_{0}, on_demand_bytes_{0};
  std::shared_ptr<MaskCache> cache_;  // the vocabulary's
  std::vector<std::vector<uint32_t>> token_terminal_words_;
  absl::Status BuildTokenTerminalWords();
  static absl::StatusOr<std::shared_ptr<const parser::FlatGrammar>> ResolveTokenNames(
      const parser::FlatGrammar& grammar, const Vocabulary& vocab);
  std::shared_ptr<GrammarAccount> account_ = std::make_shared<GrammarAccount>();
  mutable std::once_flag classes_once_;
  mutable std::unique_ptr<const TokenClasses> classes_;
  // AdvanceClassMasks' computation in progress, under its mutex.
  mutable std::mutex classes_progress_mu_;
  mutable std::unique_ptr<TokenClassesInProgress> classes_progress_;
  mutable bool classes_progress_done_ = false;
  mutable std::atomic<size_t> classes_bytes_{0};
  mutable std::once_flag class_masks_once_;
  mutable std::shared_ptr<const ClassMasks> class_masks_;
  // class_masks_ once built (memory() may run while another thread builds it).
  mutable std::atomic<const ClassMasks*> class_masks_built_{nullptr};
  // Lexed grammars: the mask walk's closures kept across masks.
  mutable ClosureMemo closure_memo_{size_t{32} << 20};
  mutable PartialMasks partial_masks_{size_t{32} << 20};
};

struct MatcherOptions {
  bool use_cache = true;          // the shared state cache (ablation: off)
  bool use_token_sets = true;     // context-independent token sets (ablation: off)
  // The cache key spells the live chart down to this many kept sets below
  // the newest position (cost ~ key_sets, not nesting depth); a mask whose
  // walk consulted groups below that is cached under a key spelled as far
  // down as the walk read, which the cut key's entry points to.
  uint32_t key_sets = 2;
  // Masks computed over token classes (masks/class_masks.h): a cache miss
  // walks the representatives' trie and expands the mask to ids. Same
  // masks; misses faster on lexed grammars, but the classes cost up to
  // ~0.4 s per grammar (figures in class_masks.h), built once per grammar.
  enum class TokenClasses : uint8_t {
    kOff,
    kNow,             // built (or found built) by the Matcher's construction
    kOnceRecurring,   // adopted once built: once they are due
                      // (CompiledGrammar::TokenClassesDue: the grammar's
                      // masks have cost what the classes would), each miss
                      // of its matchers also takes one bounded step of the
                      // computation (AdvanceClassMasks), so no mask waits
                      // for the whole of it, nor the first ones for any
  };
  TokenClasses token_classes = TokenClasses::kOff;
  // Pruning, budgets; max_rollback counts *bytes* here (the recognizer's
  // unit): Rollback(n tokens) works while their bytes fit.
  RecognizerOptions recognizer{.pruning = true, .max_rollback = 512, .limits = {}};
};

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const CompiledGrammar> grammar, const MatcherOptions& options = {});

  // Fills `words` (mask_words() of them) and returns how many ids are allowed.
  // On a budget error the mask is incomplete: status() says so.
  size_t ComputeMask(uint32_t* words);
  // Feeds the token's bytes; false (state unchanged) when it is not allowed.
  // EOS is accepted when IsAccepting(), and finishes the matcher.
  bool AcceptToken(TokenId id);
  // AcceptToken for a token that a mask of this very state allows (the
  // draft-tree walk, masks/draft_tree.h): a normal token's bytes are fed
  // straight away, without AcceptBytes' speculative pass over them first
  // (which only decides what the mask already has). Same outcome: should a
  // byte be refused all the same (a budget ran out), the bytes fed are
  // rolled back (which may narrow a full rollback window by as many) and
  // AcceptToken decides, setting status(). Tokens longer than
  // MaxRollback(), EOS and grammars with token terminals take AcceptToken's
  // path.
  bool AcceptAllowedToken(TokenId id);
  // Feeds bytes; all or nothing.
  bool AcceptBytes(std::string_view bytes);
  // Undoes the last n accepted tokens (and byte runs given to AcceptBytes,
  // each counting as one); false (nothing undone) beyond the rollback budget.
  bool Rollback(size_t n);
  void Reset();

  bool IsAccepting() const;  // the text so far is a sentence
  bool IsFinished() const { return finished_; }  // EOS accepted
  // Bytes the grammar forces next (the longest run with one possible byte
  // each, stopping where the text is a sentence), for jump-forward decoding.
  // At most kMaxForcedBytes: a compiled grammar's run always ends (every
  // item has a completion), but a loaded one that was forged
  // (api/grammar_serializer.cc cannot prove every lexer table productive)
  // could force bytes forever.
  static constexpr size_t kMaxForcedBytes = size_t{1} << 16;
  std::string ForcedBytes();
  // How many leading tokens of `draft` would be accepted in sequence; the
  // state does not change.
  size_t ValidateTokens(absl::Span<const TokenId> draft);

  // Of the last ComputeMask: trie nodes rejected (minimal rejected
  // prefixes: the parser refuses their last byte). Computed by a full walk
  // on demand when the mask came from the cache or the token sets.
  const std::vector<uint32_t>& LastRejectedNodes();
  std::vector<std::string> LastRejectedPrefixes();
  // Normal ids rejected by the last mask (every token under a rejected node).
  std::vector<TokenId> LastRejectedTokens();

  // Captures recorded by the text accepted so far (masks/captures.h).
  std::vector<std::pair<std::string, std::string>> GetCaptures(bool deduplicate) const {
    return captures_.Get(grammar_->grammar(), deduplicate);
  }
  const CaptureLog& capture_log() const { return captures_; }
  // Stops recording captures and drops those recorded (a speculative copy:
  // the draft-tree walk's levels).
  void StopCaptures() {
    record_captures_ = false;
    captures_.Clear();
  }
  // Pauses recording while it is false (the budget-aware masks' searches,
  // which accept and roll back on this very matcher).
  void PauseCaptures(bool paused) { captures_paused_ = paused; }
  // The temperature in effect (parser/active_rules.h), negative for none.
  parser::ActiveTemperature Temperature() const {
    return parser::InnermostTemperature(grammar_->grammar(), recognizer_.chart());
  }

  const absl::Status& status() const { return recognizer_.status(); }
  const CompiledGrammar& grammar() const { return *grammar_; }
  // For searches over continuations (masks/budget_mask.h): the bytes the
  // parser takes next, the exact canonical state (whole live chart, no cut,
  // no state classes: equal keys have equal futures at any distance; false
  // without pruning), and how many bytes Rollback can undo now.
  parser::ByteSet NextBytes() const { return recognizer_.NextBytes(); }
  bool ExactStateKey(std::vector<uint32_t>* out) const { return recognizer_.CanonicalState(out); }
  // The distinct terminal-table states of the items on terminals now
  // (byte-level grammars; empty for lexed ones).
  void ScanStates(std::vector<uint32_t>* out) const { recognizer_.CollectScanStates(out); }
  size_t RollbackLimit() const { return recognizer_.RollbackLimit(); }
  size_t MaxRollback() const { return options_.recognizer.max_rollback; }
  size_t position() const { return recognizer_.Position(); }
  size_t retained_items() const { return recognizer_.RetainedItems(); }
  size_t retained_sets() const { return recognizer_.RetainedSets(); }
  // Labels each of `ids` (allowed now) so that ids with equal labels would
  // leave states with equal futures (equal exact keys), without accepting
  // them; kNoEffect where no label is known (token_effects.cc: byte-level
  // tokens that a terminal may end inside; rejected ids). The state does
  // not change. With `unchanged` not null, *unchanged gets the label of a
  // token that leaves the state as it is (its state has the same exact key
  // as this one: byte-level grammars, where the token takes each terminal
  // state of the items back to itself), or kNoEffect when no label says so
  // (lexed grammars, token terminals, no items on terminals).
  static constexpr uint32_t kNoEffect = 0xFFFFFFFFu;
  void TokenEffects(absl::Span<const TokenId> ids, std::vector<uint32_t>* labels,
                    uint32_t* unchanged = nullptr);

 private:
  size_t WalkTrie(uint32_t* words);            // every node, the parser decides
  // Pushes the trie nodes [begin, end) depth first on top of bytes that end
  // at depth `base_depth`, setting the bits of the tokens that survive and
  // recording refused nodes in `rejected` (may be null); pops back after.
  void WalkNodes(uint32_t begin, uint32_t end, uint32_t base_depth, uint32_t* words,
                 std::vector<uint32_t>* rejected);
  size_t MaskFromTokenSets(uint32_t* words, const PartialMasks::Partial* partial);  // token sets + uncertain subtrees
  // A mask not found in the cache: MaskFromTokenSets or WalkTrie, over the
  // token classes' representatives once adopted (token_classes); from `partial`
  // when not null (lexed grammars: its words, then its deep roots walked).
  size_t ComputeUncached(uint32_t* words, const PartialMasks::Partial* partial);
  // The grammar whose trie a miss walks (the class grammar with token
  // classes): its PartialMasks hold words and roots of that trie.
  const CompiledGrammar& WalkedGrammar() const { return class_grammar_ ? *class_grammar_ : *grammar_; }
  // TokenClasses::kOnceRecurring: takes up the grammar's token classes
  // once they are built.
  void MaybeAdoptTokenClasses();
  // After a mask computed afresh in `walk_us`: counts it for the grammar,
  // and with kOnceRecurring takes a step of the grammar's token classes.
  void NoteMiss(double walk_us);
  // Pushes `bytes` speculatively; returns how many were taken (all pushed
  // sets stay: the caller pops them).
  size_t PushBytes(std::string_view bytes);
  void PopBytes(size_t n);

  // Committed feeds (AcceptToken, AcceptAllowedToken, AcceptBytes) are
  // bracketed by these: the recognizer logs captured completions between
  // them, and EndCommit records them with the text fed (one char per
  // position; `no_byte`: positions in it without a byte). No-ops for a
  // grammar without captures.
  void BeginCommit();
  void EndCommit(std::string_view text, const std::vector<uint64_t>& no_byte = {});
  bool recording() const { return record_captures_ && !captures_paused_ && grammar_->grammar().has_captures(); }

  std::shared_ptr<const CompiledGrammar> grammar_;
  parser::Recognizer recognizer_;
  CaptureLog captures_;
  std::vector<parser::Recognizer::Completion> completions_;  // of the step being committed
  bool record_captures_ = true;
  bool captures_paused_ = false;
  std::vector<uint32_t> history_;  // bytes of each accepted token or byte run
  bool finished_ = false;
  std::vector<uint32_t> rejected_nodes_;
  bool rejected_nodes_known_ = false;  // the last mask came from a full walk
  MatcherOptions options_;
  // Token classes adopted: the class masks and their grammar (swapped into
  // grammar_ while a class mask is computed), the class mask.
  std::shared_ptr<const ClassMasks> class_masks_;
  std::shared_ptr<const CompiledGrammar> class_grammar_;
  std::vector<uint32_t> class_words_;
  std::vector<uint32_t> key_;
  std::vector<uint32_t> deeper_key_;  // spelled as far down as a walk read
  std::vector<uint32_t> partial_key_;  // the last key found pointing deeper (swapped out of key_)
  std::vector<uint32_t> states_;
  std::vector<uint32_t> roots_;
  std::string pushed_;
  std::vector<parser::Recognizer::LaneView> lanes_;
  // Lexed walks (lexed_masks.cc). Per depth of the trie path being walked:
  // its node and the lanes after its bytes (depth 0: the newest lanes).
  // Subtrees up to this many nodes below an uncertain root are walked per
  // mask rather than looked up (WalkLexedSubtree vs LexedSubtreeSets).
  static constexpr uint32_t kWalkedSubtreeNodes = 32;
  std::vector<uint32_t> view_path_;
  std::vector<uint32_t> nested_;  // min-heap of nested roots
  std::vector<uint32_t> ancestors_;
  std::vector<std::vector<parser::Recognizer::LaneView>> view_stack_;
  // A lane view's source tag names a history: a set of the newest position
  // and the tokens that ended since (each advancing the items and closing),
  // and the view of the boundary set they leave. Memoized per mask, so the
  // parser closes each distinct token sequence once, however many trie
  // nodes end it.
  struct History {
    uint32_t parent;  // kNoHistory: a set of the newest position
    uint32_t token;   // the token ended last
    uint32_t set;     // the chart set holding the closure, kNotPushed until pushed
    bool alive;       // the closure left a set
    bool accepting;
    parser::TokenBits tokens;
    // The set's id in the grammar's ClosureMemo; kNotSpelled: not asked yet.
    ClosureMemo::Id spelled = ClosureMemo::kNone;
    // What it reads may depend on the chart below the walk's cut: its
    // closure, or an earlier one of its sequence, consulted a group below
    // walk_cut_ (partial_masks.h).
    bool deep = false;
  };
  static constexpr ClosureMemo::Id kNotSpelled = ClosureMemo::kNone - 1;
  static constexpr uint32_t kNoHistory = 0xFFFFFFFFu;
  static constexpr uint32_t kNotPushed = 0xFFFFFFFFu;
  std::vector<History> histories_;
  absl::flat_hash_map<uint64_t, uint32_t> history_after_;  // (history, token) -> history
  std::vector<uint32_t> chain_;         // PushHistory scratch
  uint32_t pushed_sets_ = 0;            // closures the walk pushed (EndLexedViews pops them)
  // Partial masks (partial_masks.h). The cut of the key the walk's mask
  // goes under (0: none, nothing is deep); per depth of the view path,
  // whether a view there descends from a deep history's answer (dead ones
  // too); split_words_: during a walk the deep roots' part of the mask, kept
  // apart, after it the mask without that part (the partial words); the
  // deep roots walked, and whether the last walk took a partial (it had a
  // deep root).
  uint32_t walk_cut_ = 0;
  std::vector<uint8_t> view_deep_;
  bool step_deep_ = false;  // LexedViewsAt: a step asked a deep history
  std::vector<uint32_t> split_words_;
  std::vector<uint32_t> deep_roots_;
  bool partial_taken_ = false;
  std::vector<uint32_t> spelling_;  // Recognizer::SpellClosureSet scratch
  bool use_closure_memo_ = false;   // ClosureMemo::Pays when the walk began
  // History h's id in the grammar's ClosureMemo, spelled now if its set is
  // in the chart; kNone when it cannot be (or the memo is full).
  ClosureMemo::Id SpelledHistory(uint32_t h);
  // Closes `token` after history `source` in the chart (its chain pushed
  // first) into *next, and keeps the step in the grammar's ClosureMemo
  // when it consulted nothing older than its source set.
  void PushHistory(uint32_t source, uint32_t token, History* next);
  // Fills `boundary` with the view after `token` ends in history `source`.
  bool AdvanceHistory(uint32_t source, uint32_t token, parser::Recognizer::LaneView* boundary);
  void WalkLexedRoots(uint32_t* words);
  // The views of a trie walk: BeginLexedViews takes the newest lanes (each
  // its own history), LexedViewsAt(node) the lanes after node's bytes
  // (stepped on from the deepest node shared with the previous call),
  // EndLexedViews pops the closures the histories pushed.
  void BeginLexedViews();
  const std::vector<parser::Recognizer::LaneView>& LexedViewsAt(uint32_t node);
  void EndLexedViews();
  void LexedTokenEffects(absl::Span<const TokenId> ids, std::vector<uint32_t>* labels);
  std::vector<uint32_t> lane_words_;
  // Sets the bits of the tokens that the token terminals of the newest
  // set match (grammars with token terminals).
  void AddTokenTerminals(uint32_t* words);
  bool HasTokenItems();
  // Sets the bits of `sets`' accepted tokens in `words`; appends its roots.
  void AddTokenSets(const StateTokenSets& sets, uint32_t* words);
  // Walks the uncertain subtrees in roots_ with the parser (sorted first).
  void WalkUncertainRoots(uint32_t* words);
  // Lexed grammars, with `lanes` the lanes after `root`'s bytes: sets the
  // bits of the subtree's tokens that some lane keeps for sure, pushes the
  // nested uncertain roots onto roots_.
  void ClassifyLexedSubtree(uint32_t root, absl::Span<const parser::Recognizer::LaneView> lanes,
                            uint32_t* words);
  size_t CountAndAddEos(uint32_t* words);
};

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_MATCHER_H_
