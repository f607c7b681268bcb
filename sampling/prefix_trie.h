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
// Masses are doubles, weights floats; a node's mass is updated by the exact
// difference of the float weights it changes, and is set to exactly 0 when
// no weight is left, so that p_u = 0 is detected without rounding noise.
//
// Tests: tests/sampling/prefix_trie_test.cc (p_u bookkeeping against a
// brute-force mass, sparse/dense switching, byte accounting).
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
  // The node of the empty prefix, kNoNode before the first AddNode.
  uint32_t root() const { return nodes_.empty() ? kNoNode : 0; }
  // The node of prefix parent·token, or kNoNode.
  uint32_t Child(uint32_t parent, int32_t token) const;

  // Adds the node of prefix parent·token (parent = kNoNode adds the root)
  // with the model's log-probabilities at that prefix, and records parent·
  // token·a invalid for every a in `invalid_next`. Preconditions: the node is
  // not there yet, the parent is, and parent·token is not recorded invalid.
  // Errors: a broken distribution (see ProbabilitiesFromLogProbs), wrong size.
  absl::StatusOr<uint32_t> AddNode(uint32_t parent, int32_t token, absl::Span<const float> logprobs,
                                   absl::Span<const int32_t> invalid_next);

  // Records the prefixes node·a invalid (p = 0) for each a in `tokens` and
  // propagates the decrease to the root. Already recorded tokens are no-ops.
  void RecordInvalid(uint32_t node, absl::Span<const int32_t> tokens);

  double mass(uint32_t node) const { return nodes_[node].mass; }  // p_u
  // w_a = P(a|u) * p_ua.
  double weight(uint32_t node, int32_t token) const;
  // Draws the next token after `node` with probability w_a / p_u, using
  // `uniform` in [0, 1). Precondition: mass(node) > 0.
  int32_t Draw(uint32_t node, double uniform) const;
  // Tokens with a non-zero weight at `node`.
  uint32_t nonzero(uint32_t node) const { return nodes_[node].nonzero; }
  bool is_sparse(uint32_t node) const { return nodes_[node].sparse; }
  size_t depth(uint32_t node) const;

  // A flag for samplers: the node's whole rejected set is recorded (CARS),
  // so a token drawn there is valid without asking the grammar.
  bool expanded(uint32_t node) const { return nodes_[node].expanded; }
  void set_expanded(uint32_t node) { nodes_[node].expanded = true; }

  size_t nodes() const { return nodes_.size(); }
  // Heap and inline bytes of the trie: node records, weight and id arrays
  // (capacities), the child map's slots and control bytes.
  size_t bytes() const;

 private:
  struct Node {
    uint32_t parent;    // kNoNode for the root
    int32_t token;      // last token of the prefix (unused for the root)
    float edge_prob;    // P(token | parent prefix), as the parent stored it
    uint32_t nonzero;   // weights > 0
    double mass;        // p_u = sum of the weights
    bool sparse;
    bool expanded = false;
    std::vector<float> weights;  // dense: by token id; sparse: parallel to `ids`
    std::vector<int32_t> ids;    // sparse only: sorted token ids
  };

  static uint64_t ChildKey(uint32_t parent, int32_t token) {
    return (static_cast<uint64_t>(parent) << 32) | static_cast<uint32_t>(token);
  }
  // Index of `token` in node.weights, or -1 (a sparse node without it).
  int64_t SlotOf(const Node& node, int32_t token) const;
  // Sets the weight of `token` at `node` to min(value, current); keeps the
  // mass and non-zero count. Returns true when it changed.
  bool LowerWeight(uint32_t node, int32_t token, float value);
  // Moves each node's new mass into its parent's weight, up to the root.
  void PropagateUp(uint32_t node);
  void MaybeMakeSparse(Node& node);

  int32_t vocab_size_;
  std::vector<Node> nodes_;
  absl::flat_hash_map<uint64_t, uint32_t> children_;
};

}  // namespace zapgram::sampling

#endif  // ZAPGRAM_SAMPLING_PREFIX_TRIE_H_
