// PrefixTrie: the invalid-prefix trie of the exact samplers (issue 6, after
// Constrained Adaptive Rejection Sampling, Parys et al.).
//
// Each node is a token prefix u the sampler visited. It keeps ONE vector:
// the adjusted weights w_a = P(a|u) * p_ua for every next token a, where
// P(a|u) is the language model's distribution (normalized when the node is
// added) and p_ua the probability that an extension of ua avoids every
// recorded invalid prefix (1 for prefixes the trie does not know, 0 for
// recorded ones). The node's own mass is p_u = sum_a w_a, and a sampler
// draws the next token with probability w_a / p_u. The LM distribution and
// the p_ua adjustments are thus stored together, once: there is no second
// vocabulary-sized vector. Recording the invalid prefix ua sets w_a = 0;
// the decrease of p_u then moves up: the parent's weight for u becomes
// edge_prob(u) * p_u, where edge_prob(u) = P(last token of u | parent) is
// kept in the node (a path walk, no recursion).
//
// Storage: a node is dense (one float per vocabulary id) unless at most half
// of its weights are non-zero, in which case it stores the sorted ids of the
// non-zero weights and their values (8 bytes per entry). Zero weights are
// exact zeros (the LM's -inf, or recorded prefixes), so the sparse form is
// exact. CARS records every rejected token at each node it adds, so under a
// grammar that allows few tokens most of its nodes are small and sparse.
// Children are one flat hash map (parent, token) -> node for the trie.
//
// Memory budget (set_byte_budget). At a 128k vocabulary a dense node costs
// 512 KB, and RS/ARS/RSFT keep one for every prefix they visit. Most of that
// is a cache of the model: a node is PRISTINE when no weight in its subtree
// was ever lowered (nothing recorded below it, p_u = 1 exactly), and then it
// holds nothing the model cannot say again, because a prefix the trie does
// not know has p = 1 too. Even a non-pristine node only needs what the
// records changed: which weights are 0 and the weights of its non-pristine
// children; every other weight is the model's P(a|u). So when the trie grows
// past its budget it frees, least recently used first:
//   evict   a pristine leaf (or a leaf of mass 0, which its parent's zero
//           weight already describes): the node is gone; its parent's weight
//           for it stays P(a|u) (or 0). A later draw through the prefix asks
//           the model again and adds the node anew.
//   strip   a node whose payload is larger than its records: it keeps its
//           zero weights (sorted ids while few, else a bitset of V/8 bytes,
//           16 KB at 128k; none for a pristine node, whose zeros are the
//           model's) and the (id, weight) pairs of its non-pristine
//           children, and drops the rest; p_u, the flags and the children stay. Restore() rebuilds
//           the exact weights from the model's distribution before a draw
//           samples there (the model must answer the same prefix the same
//           way, which every model here does).
// Nodes on the path of the draw in progress (the `pinned` node and its
// ancestors) are never freed, so a draw's handles stay valid; the budget can
// thus be exceeded by one path (after a shrink that fell short for that
// reason, the next one waits for 1/8 of the budget of growth). A node never on a path to a recorded prefix
// is never needed for exactness, and a path to one is never evicted, only
// stripped, so the p_u bookkeeping stays exact under any budget. Removed
// slots are reused; refetches (restores, and nodes re-added after an
// eviction, recognized through a bounded table of recent evictions) are
// counted. A pristine node is added with p_u = 1 exactly and
// does not touch its parent, so evicting and re-adding it changes no bit.
// Records at a stripped node lower weights whose old value is known (listed,
// or a child's edge probability); a record whose old weight is the unknown
// model value is skipped, which only makes the trie learn less.
//
// Masses are doubles, weights floats; a node's mass is updated by the exact
// difference of the float weights it changes, and is set to exactly 0 when
// no weight is left, so that p_u = 0 is detected without rounding noise.
//
// Tests: tests/sampling/prefix_trie_test.cc (p_u bookkeeping against a
// brute-force mass, with and without a budget that forces evictions and
// strips; sparse/dense switching, strip/restore round trips, byte
// accounting) and the tight-budget exactness runs of samplers_test.cc.
#ifndef ZAPGRAM_SAMPLING_PREFIX_TRIE_H_
#define ZAPGRAM_SAMPLING_PREFIX_TRIE_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace zapgram::sampling {

// Converts natural-log probabilities to probabilities that sum to 1 (the
// model's own rounding is normalized away). Errors: NaN or +inf entries, or
// no entry with positive probability.
absl::Status ProbabilitiesFromLogProbs(absl::Span<const float> logprobs, std::vector<float>* probs);

// Index of the entry where the cumulative sum of `weights` first exceeds
// `uniform * total` (skipping zero weights); `total` is their sum and must be
// > 0; `uniform` in [0, 1). Rounding never returns a zero-weight entry.
int32_t DrawIndex(absl::Span<const float> weights, double total, double uniform);

class PrefixTrie {
 public:
  static constexpr uint32_t kNoNode = std::numeric_limits<uint32_t>::max();

  explicit PrefixTrie(int32_t vocab_size) : vocab_size_(vocab_size) {}

  int32_t vocab_size() const { return vocab_size_; }
  // The node of the empty prefix (never evicted), kNoNode before the first AddNode.
  uint32_t root() const { return nodes_.empty() ? kNoNode : 0; }
  // The node of prefix parent·token, or kNoNode.
  uint32_t Child(uint32_t parent, int32_t token) const;

  // Adds the node of prefix parent·token (parent = kNoNode adds the root)
  // with the model's log-probabilities at that prefix, and records parent·
  // token·a invalid for every a in `invalid_next`. Preconditions: the node is
  // not there yet, the parent is, holds its distribution, and parent·token is
  // not recorded invalid. Over the budget, frees nodes off the new node's
  // path. Errors: a broken distribution (see ProbabilitiesFromLogProbs),
  // wrong size, a stripped parent.
  absl::StatusOr<uint32_t> AddNode(uint32_t parent, int32_t token, absl::Span<const float> logprobs,
                                   absl::Span<const int32_t> invalid_next);

  // Records the prefixes node·a invalid (p = 0) for each a in `tokens` and
  // propagates the decrease to the root. Already recorded tokens are no-ops;
  // at a stripped node, tokens whose weight is still the model's are skipped.
  void RecordInvalid(uint32_t node, absl::Span<const int32_t> tokens);

  double mass(uint32_t node) const { return nodes_[node].mass; }  // p_u
  // w_a = P(a|u) * p_ua; NaN at a stripped node for a token whose weight is
  // the model's.
  double weight(uint32_t node, int32_t token) const;
  // Draws the next token after `node` with probability w_a / p_u, using
  // `uniform` in [0, 1). Preconditions: mass(node) > 0, has_distribution(node).
  int32_t Draw(uint32_t node, double uniform) const;
  // Tokens with a non-zero weight at `node`.
  uint32_t nonzero(uint32_t node) const { return nodes_[node].nonzero; }
  bool is_sparse(uint32_t node) const { return nodes_[node].form == Form::kSparse; }
  size_t depth(uint32_t node) const;
  // No weight below the node was ever lowered: p_u = 1 and the node is a model cache.
  bool pristine(uint32_t node) const { return nodes_[node].pristine; }

  // False when the node was stripped: Restore it before Draw.
  bool has_distribution(uint32_t node) const { return nodes_[node].form != Form::kStripped; }
  // Rebuilds a stripped node's weights from the model's log-probabilities at
  // its prefix (counted as a refetch). Over the budget, frees nodes off the
  // node's path. Errors: a broken distribution, wrong size, not stripped.
  absl::Status Restore(uint32_t node, absl::Span<const float> logprobs);

  // Marks the node used now (least recently used nodes are freed first).
  void Touch(uint32_t node) { nodes_[node].last_use = ++clock_; }

  // 0: no budget. Otherwise AddNode and Restore free nodes (see above) down
  // to 7/8 of the budget whenever bytes() exceeds it.
  void set_byte_budget(size_t bytes) { byte_budget_ = bytes; }
  // Evicts and strips least recently used nodes off the path of `pinned`
  // (kNoNode: no path) until bytes() <= target_bytes or nothing is left to
  // free; returns whether bytes() <= target_bytes.
  bool Shrink(size_t target_bytes, uint32_t pinned);

  bool expanded(uint32_t node) const { return nodes_[node].expanded; }
  void set_expanded(uint32_t node) { nodes_[node].expanded = true; }

  size_t nodes() const { return live_nodes_; }
  size_t stripped_nodes() const { return stripped_nodes_; }
  // Payload bytes of the stripped nodes: what the records alone cost.
  size_t stripped_bytes() const { return stripped_bytes_; }
  int64_t evictions() const { return evictions_; }  // nodes evicted
  int64_t strips() const { return strips_; }        // distributions dropped
  // Restores, plus re-adds of evicted prefixes still in a bounded table of
  // recent evictions (so a lower bound on the model calls eviction cost).
  int64_t refetches() const { return refetches_; }
  // Heap and inline bytes of the trie: node records (the array's capacity),
  // weight, id and bitset arrays (capacities), the child map's slots and
  // control bytes, the free list and the table of recent evictions.
  size_t bytes() const;

 private:
  enum class Form : uint8_t { kDense, kSparse, kStripped };
  // The zero weights of a stripped node: sorted ids while they are few, a
  // bitset over the vocabulary once the list would be larger.
  struct ZeroSet {
    bool bitset = false;
    std::vector<uint32_t> words;  // sorted ids, or bitset words

    static ZeroSet FromSortedIds(std::vector<uint32_t> ids, int32_t vocab_size);
    bool Contains(int32_t id) const;
    void Add(int32_t id, int32_t vocab_size);
    size_t bytes() const { return words.capacity() * sizeof(uint32_t); }
    static size_t BitsetWords(int32_t vocab_size) { return (static_cast<size_t>(vocab_size) + 31) / 32; }
  };
  struct Node {
    uint32_t parent = kNoNode;  // kNoNode for the root
    int32_t token = -1;         // last token of the prefix (unused for the root)
    float edge_prob = 1.0f;     // P(token | parent prefix), as the parent stored it
    uint32_t nonzero = 0;       // weights > 0
    uint32_t children = 0;
    uint64_t last_use = 0;
    uint64_t prefix_hash = 0;   // identifies evicted prefixes for the refetch count
    double mass = 0.0;          // p_u = sum of the weights
    Form form = Form::kDense;
    bool expanded = false;
    bool pristine = true;
    bool live = true;
    bool pinned = false;        // on the protected path during Shrink
    // dense: by token id; sparse: parallel to `ids`; stripped: the weights
    // of the non-pristine children, parallel to `ids`.
    std::vector<float> weights;
    std::vector<int32_t> ids;     // sparse and stripped: sorted token ids
    ZeroSet zeros;                // stripped only: the ids with w = 0
  };

  static uint64_t ChildKey(uint32_t parent, int32_t token) {
    return (static_cast<uint64_t>(parent) << 32) | static_cast<uint32_t>(token);
  }
  static size_t PayloadBytes(const Node& node) {
    return node.weights.capacity() * sizeof(float) + node.ids.capacity() * sizeof(int32_t) +
           node.zeros.bytes();
  }
  absl::Status CheckSize(absl::Span<const float> logprobs) const;
  // Index of `token` in node.weights, or -1 (a sparse node without it).
  // Dense and sparse nodes only.
  int64_t SlotOf(const Node& node, int32_t token) const;
  // Sets the weight of `token` at `node` to min(value, current); keeps the
  // mass and non-zero count and marks the path not pristine. At a stripped
  // node an unlisted, non-zero weight is `unlisted_old` (NaN: unknown, skip).
  // Returns true when it changed.
  bool LowerWeight(uint32_t node, int32_t token, float value, float unlisted_old);
  // Moves each node's new mass into its parent's weight, up to the root.
  void PropagateUp(uint32_t node);
  void MarkNotPristine(uint32_t node);
  // Adds (sign +1) or removes (-1) the node's payload in the byte counts;
  // called around every change of a node's arrays or form.
  void Account(const Node& node, int sign);
  void MaybeMakeSparse(uint32_t node);
  // Frees over-budget nodes after `grown` grew (see set_byte_budget).
  void Enforce(uint32_t grown);
  bool Evictable(uint32_t node) const;
  void Evict(uint32_t node);
  // An upper bound on the payload of the node once stripped.
  size_t StrippedBytesBound(const Node& node) const;
  // Strips the node when its records are smaller than its payload; returns
  // whether it did.
  bool Strip(uint32_t node);

  int32_t vocab_size_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> free_;  // evicted slots, reused by AddNode
  size_t live_nodes_ = 0;
  size_t payload_bytes_ = 0;    // sum of PayloadBytes over the nodes
  size_t stripped_bytes_ = 0;   // the same over the stripped nodes
  size_t stripped_nodes_ = 0;
  absl::flat_hash_map<uint64_t, uint32_t> children_;
  // Prefix hashes of recently evicted nodes, direct-mapped (a later one
  // overwrites an earlier one in its slot): re-adds found here are refetches.
  std::vector<uint64_t> recent_evictions_;
  uint64_t clock_ = 0;
  size_t byte_budget_ = 0;
  size_t stuck_at_bytes_ = 0;  // bytes() after a Shrink that fell short, else 0
  int64_t evictions_ = 0;
  int64_t strips_ = 0;
  int64_t refetches_ = 0;
};

}  // namespace zapgram::sampling

#endif  // ZAPGRAM_SAMPLING_PREFIX_TRIE_H_
