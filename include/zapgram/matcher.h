// zapgram public API: token masks for constrained decoding.
//
//   Vocabulary       a tokenizer's ids -> bytes (Hugging Face tokenizer.json:
//                    byte-level BPE as Llama 3 / Qwen 2.5, SentencePiece with
//                    byte fallback as Gemma 3), special tokens, EOS ids.
//   CompiledGrammar  a Grammar (zapgram/grammar.h) joined with a Vocabulary:
//                    immutable, cheap to copy, safe to share across threads.
//   Matcher          one per sequence being decoded.
//
// Mask layout (shared with XGrammar and vLLM): uint32 words,
// ceil(padded_size / 32) of them; token i is allowed iff bit i % 32 of word
// i / 32 is set. EOS is allowed exactly when the text so far is a sentence;
// special tokens and ids past the tokenizer never are.
#ifndef ZAPGRAM_MATCHER_H_
#define ZAPGRAM_MATCHER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "zapgram/grammar.h"
#include "zapgram/export.h"
#include "zapgram/limits.h"

namespace zapgram {

namespace masks {
class Vocabulary;
class CompiledGrammar;
class Matcher;
class BudgetMasker;
}  // namespace masks

struct VocabularyOptions {
  // Ids of the model's output layer (>= the tokenizer's); 0 = the tokenizer's.
  uint32_t padded_size = 0;
  // When set, exactly these ids are EOS; else the tokenizer's end-of-text
  // special tokens (<|end_of_text|>, <|eot_id|>, <|endoftext|>, <|im_end|>,
  // <eos>, <end_of_turn>, ...).
  std::optional<std::vector<int32_t>> eos_ids;
  // Byte budgets of what every grammar compiled on this vocabulary shares
  // (least recently used goes first): the mask cache, and the token sets of
  // terminal states kept for grammars compiled later. 0 turns one off.
  size_t mask_cache_bytes = size_t{128} << 20;
  size_t token_set_cache_bytes = size_t{64} << 20;
};

// Loading builds the vocabulary's token trie (~50-100 ms for a 128k-token
// vocabulary), shared by every grammar compiled against it and its copies.
class ZAPGRAM_EXPORT Vocabulary {
 public:
  static absl::StatusOr<Vocabulary> Load(const std::string& tokenizer_json_path,
                                         const VocabularyOptions& options = {});
  // A vocabulary given directly: id i has bytes `tokens[i]`; the ids in
  // `eos_ids` are special EOS tokens; empty tokens are unused ids (padding,
  // never allowed). For tests, toy models and token lists from Python.
  static absl::StatusOr<Vocabulary> FromTokens(const std::vector<std::string>& tokens,
                                               const std::vector<int32_t>& eos_ids);
  int32_t size() const;         // ids the tokenizer defines
  int32_t padded_size() const;  // ids of a mask
  std::vector<int32_t> eos_ids() const;
  std::string_view token_bytes(int32_t id) const;  // empty for special/unused ids
  bool is_normal(int32_t id) const;                // not special, not unused
  // A 64-bit hash of what masks depend on: every id's kind, EOS flag and
  // bytes, size() and padded_size(). Equal for the same tokenizer however
  // it was loaded; a serialized CompiledGrammar names it. Computed on the
  // first call (~1 ms per 128k ids), then kept. Thread-safe.
  uint64_t fingerprint() const;
  const std::shared_ptr<const masks::Vocabulary>& impl() const { return impl_; }

 private:
  explicit Vocabulary(std::shared_ptr<const masks::Vocabulary> impl) : impl_(std::move(impl)) {}
  static absl::StatusOr<Vocabulary> WithTrie(std::shared_ptr<const masks::Vocabulary> impl);
  std::shared_ptr<const masks::Vocabulary> impl_;
};

class ZAPGRAM_EXPORT CompiledGrammar {
 public:
  static absl::StatusOr<CompiledGrammar> Compile(const Grammar& grammar, const Vocabulary& vocabulary);

  // Persistent compiled grammars (format: api/grammar_serializer.cc). The
  // bytes hold the grammar's tables (not the text it was read from, not
  // the token sets or masks built so far) and the vocabulary's
  // fingerprint, under a versioned header and a checksum. Deserialize on
  // the same vocabulary gives a grammar whose masks equal this one's, for
  // a fraction of the compile (MaskBench's schemas, Llama 3: 0.07x at p50,
  // 0.13x at p99; perf/serialize_roundtrip.cc).
  // Its Grammar's compile_times() are zero.
  static constexpr uint32_t kSerialFormatVersion = 2;  // 2: counted bodies
  std::string Serialize() const;
  // Errors, never a crash: kInvalidArgument (not a compiled grammar, or
  // another format version: compile again), kFailedPrecondition (compiled
  // for another vocabulary), kDataLoss (truncated or corrupt; the message
  // names the byte offset), kResourceExhausted (over a budget of `limits`,
  // which bound what loading may build as they bound a compile). Every
  // count is checked against the bytes given before allocating, and every
  // index against what it indexes.
  static absl::StatusOr<CompiledGrammar> Deserialize(std::string_view bytes, const Vocabulary& vocabulary,
                                                     const CompileLimits& limits = {});
  size_t mask_words() const;
  const Vocabulary& vocabulary() const { return vocabulary_; }
  const Grammar& grammar() const { return grammar_; }
  // The mask cache shared by this grammar's matchers.
  struct CacheStats {
    uint64_t hits = 0, misses = 0, entries = 0, bytes = 0;
  };
  CacheStats cache_stats() const;
  // Heap bytes this grammar adds to the process: its tables (the grammar as
  // read is not kept), the token sets it built, and its entries in the shared mask
  // cache (sets it found built by an earlier grammar are not counted).
  size_t memory_bytes() const;
  // Token equivalence classes: per id in [0, padded_size()), its class,
  // numbered 0.. by smallest member. Ids of one class are allowed or
  // rejected together in every state of this grammar, so a mask over
  // classes expands to ids by a gather. Computed on the first call (up to
  // about a second for a large Lark grammar), then kept; thread-safe.
  absl::Span<const uint32_t> token_classes() const;
  const std::shared_ptr<const masks::CompiledGrammar>& impl() const { return impl_; }

 private:
  CompiledGrammar(Grammar grammar, Vocabulary vocabulary,
                  std::shared_ptr<const masks::CompiledGrammar> impl)
      : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)), impl_(std::move(impl)) {}
  Grammar grammar_;
  Vocabulary vocabulary_;
  std::shared_ptr<const masks::CompiledGrammar> impl_;
};

// Whether a Matcher computes masks over token classes
// (CompiledGrammar::token_classes) and expands them to ids: the same masks,
// found faster or slower. Measured (masks/class_masks.h): Lark masks' mean
// 1.1-3x and worst case 7-17x lower, for ~0.2-0.35 s of classes per Lark
// grammar up front; no gain on JSON or fresh JSON Schemas, whose cheap
// walks cost less than the expansion (and ~28 ms of classes per schema).
enum class TokenClassUse : uint8_t {
  // Lexed (Lark) grammars, once they pay: no mask waits for them. The
  // grammar's masks are computed without classes until the time they took
  // reaches what the classes are expected to cost (~2.5 us per vocabulary
  // id); from then on each mask computed afresh also takes a bounded step
  // (~15 ms) of the classes, and every matcher takes them up once complete.
  // A Lark grammar's first mask: ~5-20 ms instead of ~0.3-0.6 s.
  kAuto,
  kAlways,  // any grammar, built when its first Matcher is made
  kNever,
};

struct MatcherOptions {
  bool pruning = true;
  bool use_cache = true;       // masks shared by equal parser states (ablation: off)
  bool use_token_sets = true;  // context-independent per-terminal-state sets (ablation: off)
  // Masks over token classes (TokenClassUse above); the classes are built
  // once per compiled grammar (CompiledGrammar::token_classes() builds them
  // on request, e.g. on a server's own worker).
  TokenClassUse token_classes = TokenClassUse::kAuto;
  // Bytes that Rollback may undo (the tokens rolled back must fit).
  uint32_t max_rollback_bytes = 512;
  ParserLimits limits;
  // Budgets of the budget-aware masks (ComputeMask with tokens_left). Their
  // searches accept and roll back tokens, so they also stay within
  // max_rollback_bytes (a continuation that would not fit is undecided).
  BudgetMaskOptions budget;
  // The temperature GetTemperature gives where no rule's `temperature`
  // attribute is in effect (XGrammar's default_temperature); negative or
  // not finite: none.
  float default_temperature = -1.0f;
};

// A speculative-decoding draft tree (EAGLE-style) in first-child /
// next-sibling form, as XGrammar's traverse_draft_tree and SGLang's EAGLE
// worker lay it out; one entry per node in each span.
//   retrieve_next_token[i]    node i's first child, or -1
//   retrieve_next_sibling[i]  node i's next sibling, or -1
//   draft_tokens[i]           the token node i appends to its parent's path
// Node 0 is the root: it stands for the matcher's current state (its token,
// the target model's last sample, is already accepted and is not read) and
// has no sibling.
struct DraftTree {
  absl::Span<const int64_t> retrieve_next_token;
  absl::Span<const int64_t> retrieve_next_sibling;
  absl::Span<const int64_t> draft_tokens;
};

struct DraftTreeOptions {
  // Seconds; > 0: no node past the root is entered once this much time has
  // passed since the call began (the batch form: since the batch call
  // began), and the call returns false. <= 0: no limit.
  double time_threshold = -1.0;
  // Words from one row of the masks to the next; 0: mask_words().
  size_t row_stride = 0;
  // A text that is a sentence terminates the matcher as EOS does
  // (XGrammar's terminate_without_stop_token).
  bool terminate_when_accepting = false;
};

class ZAPGRAM_EXPORT Matcher {
 public:
  explicit Matcher(const CompiledGrammar& grammar, const MatcherOptions& options = {});
  ~Matcher();
  Matcher(Matcher&&) noexcept;
  Matcher& operator=(Matcher&&) noexcept;

  // Fills mask_words() words; returns the number of allowed ids.
  size_t ComputeMask(uint32_t* words);
  // Budget-aware mask: with `tokens_left` = n tokens still allowed (EOS
  // counted, as the model emits it), allows a token only if, after it, the
  // grammar can be finished with at most n - 1 more tokens of this
  // vocabulary (EOS allowed iff accepting and n >= 1; nothing when n <= 0).
  // Sound: every allowed token has a real completion in budget. Exact unless
  // a search budget (MatcherOptions::budget) ran out; then tokens not proven
  // are masked (BudgetMaskInexact counts them). Method and cost:
  // masks/budget_mask.h. The state is unchanged; the plain path is not
  // touched. Needs pruning (else only EOS can be proven).
  size_t ComputeMask(uint32_t* words, int64_t tokens_left);
  // Tokens masked by budget-aware masks only because a search budget ran
  // out, since construction (or since shared, see below).
  uint64_t BudgetMaskInexact() const;
  // Makes this matcher's budget-aware masks use `other`'s search memo (the
  // bounds it learned per parser state of the same CompiledGrammar), e.g.
  // the particles of an SMC sampler. Matchers sharing it must be used from
  // one thread at a time.
  void ShareBudgetSearch(Matcher& other);
  bool AcceptToken(int32_t id);               // false: not allowed, state unchanged
  // All or nothing. The bytes are text: they never match a token-level
  // construct (XGrammar's Token / ExcludeToken / TokenTagDispatch), which
  // only AcceptToken passes.
  bool AcceptBytes(std::string_view bytes);
  bool Rollback(size_t n_tokens);             // false: beyond the rollback budget
  // An independent matcher in this one's state: the text so far, its
  // rollback window, finished or not, its options, the same compiled grammar
  // (shared, not copied). The two then accept, roll back and mask
  // separately, and may be used from different threads. The budget-aware
  // masks' search memo is not shared (ShareBudgetSearch does that on
  // purpose) and BudgetMaskInexact() starts at 0. Cost: a copy of the pruned
  // chart and the rollback checkpoints (perf/mask_bench.cc, BM_Fork).
  Matcher Fork() const;
  void Reset();
  bool IsAccepting() const;                   // the text so far is a sentence
  bool IsFinished() const;                    // EOS accepted
  std::string ForcedBytes();                  // bytes the grammar forces next (at most 64 KiB)
  // Canonical fast-forward tokens: the ids that every continuation the
  // grammar allows begins with in the tokenizer's own encoding (its BPE
  // merges, pre-tokenizer, normalizer and added tokens), stopping before
  // any token whose spelling the text after the forced bytes could change
  // (a longer token across the end, a pre-tokenizer piece still open).
  // Their bytes are a prefix of ForcedBytes(); the state is unchanged
  // (AcceptToken each to fast-forward). Empty when nothing is forced or the
  // matcher has finished. The rule and why it is exact:
  // masks/canonical_tokenizer.h. The first call on a vocabulary reads the
  // tokenizer.json again for its merges (~1-3 s; later calls and copies
  // share it). FailedPrecondition for a vocabulary not loaded from a file
  // (Vocabulary::FromTokens), Unimplemented for a tokenizer pipeline not
  // supported (byte-level BPE with the Llama 3 / Qwen 2.5 split, or
  // SentencePiece-style BPE with byte fallback as Gemma 3).
  absl::StatusOr<std::vector<int32_t>> ComputeFastForwardTokens();
  size_t ValidateTokens(absl::Span<const int32_t> draft);  // acceptable prefix length
  // The masks of a draft tree's nodes, XGrammar's traverse_draft_tree (the
  // method, its cost and what it shares: masks/draft_tree.h). Row i of
  // `masks` (row i * row_stride words in) gets the mask after the path to
  // node i when node i is visited: the root unless this matcher has
  // terminated, any other node whose token its parent's row allows, that
  // is accepted, and after which the matcher has not terminated (EOS, or a
  // sentence with terminate_when_accepting). Every other row is zero: a
  // refused or terminated node's, and those of the nodes below it or not
  // reached. `temperatures`, when not empty (one entry per node), gets each
  // visited node's GetTemperature() after its path, -1 (XGrammar's "none")
  // for a node without one and for every node not visited. The matcher is not changed (the walk
  // runs on copies). Returns true when complete, false when the time
  // threshold stopped it (the rows not reached are zero); InvalidArgument
  // for a malformed tree (lengths, links, cycles, a root with a sibling)
  // or a temperatures span of the wrong size, ResourceExhausted when a
  // parser budget ran out on the way. A const call: not to be made while
  // another thread changes this matcher.
  absl::StatusOr<bool> TraverseDraftTree(const DraftTree& tree, uint32_t* masks,
                                         absl::Span<float> temperatures = {},
                                         const DraftTreeOptions& options = {}) const;
  // Captures (XGrammar's get_captures; the rule attributes `name[capture]`
  // and `name[capture="x"]`): (capture name, bytes) for each completion of
  // an occurrence of a captured rule by the text accepted so far
  // (AcceptToken, AcceptBytes), in completion order. Masks, draft trees,
  // ValidateTokens, ForcedBytes, fast-forward and budget-aware masks record
  // none; Rollback removes those of the tokens it undoes; Fork copies
  // them; Reset clears them. One occurrence (a rule at a start) may
  // complete at several ends, as its parse goes on (`n[capture] ::=
  // [0-9]+` after each digit): `deduplicate` keeps its last, longest one
  // only, which is the occurrence's text whenever what follows it cannot
  // continue it (a delimiter); false gives every completion, including
  // those of parses that died later. Empty matches record nothing. Memory
  // and method: masks/captures.h.
  std::vector<std::pair<std::string, std::string>> GetCaptures(bool deduplicate = true) const;
  // The sampling temperature in effect (XGrammar's GrammarMatcher.temperature;
  // the rule attribute `temperature=x`): for each item that can take the
  // next input, the temperature of the innermost rule around it that has
  // one; the largest of those when the items differ (an ambiguous position);
  // MatcherOptions::default_temperature when no item is inside such a rule;
  // nullopt when there is no default either. parser/active_rules.h.
  std::optional<float> GetTemperature() const;
  // Of the last ComputeMask: minimal rejected byte prefixes, rejected ids.
  std::vector<std::string> LastRejectedPrefixes() const;
  std::vector<int32_t> LastRejectedTokens() const;
  absl::Status status() const;  // not ok when a budget ran out
  masks::Matcher& impl() { return *impl_; }

 private:
  Matcher(const Matcher& other);  // Fork
  friend class BatchMasker;
  // TraverseDraftTree's pieces, shared with the batch form: the argument
  // checks, the time limit as an instant (a batch's is shared by its
  // trees), and the walk of arguments already checked.
  using Deadline = std::optional<std::chrono::steady_clock::time_point>;
  absl::Status CheckDraftTree(const DraftTree& tree, absl::Span<float> temperatures,
                              const DraftTreeOptions& options) const;
  static Deadline DraftDeadline(std::chrono::steady_clock::time_point start, const DraftTreeOptions& options);
  absl::StatusOr<bool> WalkDraftTree(const DraftTree& tree, uint32_t* masks, absl::Span<float> temperatures,
                                     const DraftTreeOptions& options, Deadline deadline) const;
  CompiledGrammar grammar_;
  std::unique_ptr<masks::Matcher> impl_;
  BudgetMaskOptions budget_options_;
  float default_temperature_ = -1.0f;  // negative: none
  std::shared_ptr<masks::BudgetMasker> budget_;  // built on the first budget mask
};

// Fills the masks of many matchers (matcher k's mask at words + k * mask_words)
// on up to `threads` threads. Matchers must be distinct objects. Starts its
// threads per call; a server's decode loop wants a BatchMasker.
ZAPGRAM_EXPORT void ComputeMasks(absl::Span<Matcher* const> matchers, uint32_t* words, size_t mask_words,
                  int threads);

// A persistent pool of threads for the masks of a batch (api/batch_masker.cc):
// the calling thread and threads() - 1 workers take matchers one at a time
// from a shared counter, so one slow mask (a cache miss) does not hold up a
// fixed share of the batch. Workers sleep between calls.
//
// Thread safety: Compute may be called from several threads; calls run one
// after another. The matchers of one call must be distinct and not used
// elsewhere during the call.
class ZAPGRAM_EXPORT BatchMasker {
 public:
  // threads <= 0: half the hardware threads, at least 1.
  explicit BatchMasker(int threads);
  ~BatchMasker();
  BatchMasker(const BatchMasker&) = delete;
  BatchMasker& operator=(const BatchMasker&) = delete;

  int threads() const;
  // matchers[k]->ComputeMask(rows[k]); its return value into allowed[k] when
  // `allowed` is not empty (then of the same size).
  void Compute(absl::Span<Matcher* const> matchers, absl::Span<uint32_t* const> rows,
               absl::Span<size_t> allowed = {});
  // The same with a token budget per row: matchers[k]->ComputeMask(rows[k],
  // *tokens_left[k]) (the budget-aware mask) where tokens_left[k] holds a
  // value, the plain mask where it is empty. tokens_left has one entry per
  // matcher.
  void ComputeWithBudgets(absl::Span<Matcher* const> matchers, absl::Span<uint32_t* const> rows,
                          absl::Span<const std::optional<int64_t>> tokens_left,
                          absl::Span<size_t> allowed = {});
  // Draft trees of a batch (speculative decoding): matchers[k]->
  // TraverseDraftTree(trees[k], masks[k], temperatures[k], options) for every
  // k, a tree per item on the pool; completed[k] gets its result. The time
  // threshold counts from the start of this call, for every tree.
  // `temperatures` is empty or has one span per matcher (each empty or one
  // entry per node); `completed` has one entry per matcher. Every tree is
  // checked before any is walked: a malformed one fails the call (the
  // error names its index) with no row written. A budget that ran out in
  // a walk is returned after the batch (the first such error; the other
  // trees are complete). `completed` is plain bools (one per matcher,
  // written by the pool's threads), not a std::vector<bool>.
  absl::Status TraverseDraftTrees(absl::Span<Matcher* const> matchers, absl::Span<const DraftTree> trees,
                                  absl::Span<uint32_t* const> masks,
                                  absl::Span<const absl::Span<float>> temperatures,
                                  const DraftTreeOptions& options, absl::Span<bool> completed);

 private:
  struct Pool;
  std::unique_ptr<Pool> pool_;
  // Runs task(k) for k in [0, n) on the pool (the calling thread takes part).
  void Run(size_t n, absl::FunctionRef<void(size_t)> task);
};

}  // namespace zapgram

#endif  // ZAPGRAM_MATCHER_H_
