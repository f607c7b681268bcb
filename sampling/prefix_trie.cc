// The invalid-prefix trie (see prefix_trie.h for the data layout and the
// propagation rule). Tests: tests/sampling/prefix_trie_test.cc.
#include "sampling/prefix_trie.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace zapgram::sampling {

absl::Status ProbabilitiesFromLogProbs(absl::Span<const float> logprobs, std::vector<float>* probs) {
  probs->resize(logprobs.size());
  double total = 0.0;
  for (size_t i = 0; i < logprobs.size(); ++i) {
    const float value = logprobs[i];
    if (std::isnan(value) || value == INFINITY) {
      return absl::InvalidArgumentError(
          absl::StrFormat("language model: log-probability of token %d is %f", i, value));
    }
    const double p = std::exp(static_cast<double>(value));
    (*probs)[i] = static_cast<float>(p);
    total += p;
  }
  if (!(total > 0.0)) {
    return absl::InvalidArgumentError("language model: no token has a positive probability");
  }
  for (float& p : *probs) p = static_cast<float>(p / total);
  return absl::OkStatus();
}

int32_t DrawIndex(absl::Span<const float> weights, double total, double uniform) {
  const double target = uniform * total;
  double cumulative = 0.0;
  int32_t last_nonzero = -1;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0.0f) continue;
    cumulative += weights[i];
    last_nonzero = static_cast<int32_t>(i);
    if (cumulative > target) return last_nonzero;
  }
  return last_nonzero;  // rounding: the sum fell a hair short of `total`
}

uint32_t PrefixTrie::Child(uint32_t parent, int32_t token) const {
  auto it = children_.find(ChildKey(parent, token));
  return it == children_.end() ? kNoNode : it->second;
}

size_t PrefixTrie::depth(uint32_t node) const {
  size_t d = 0;
  while (nodes_[node].parent != kNoNode) {
    node = nodes_[node].parent;
    ++d;
  }
  return d;
}

absl::StatusOr<uint32_t> PrefixTrie::AddNode(uint32_t parent, int32_t token,
                                             absl::Span<const float> logprobs,
                                             absl::Span<const int32_t> invalid_next) {
  if (static_cast<int64_t>(logprobs.size()) != vocab_size_) {
    return absl::InvalidArgumentError(absl::StrCat("language model gave ", logprobs.size(),
                                                   " log-probabilities for a vocabulary of ", vocab_size_));
  }
  if (parent == kNoNode ? !nodes_.empty() : Child(parent, token) != kNoNode) {
    return absl::InternalError("prefix trie: node added twice");
  }
  Node node;
  node.parent = parent;
  node.token = parent == kNoNode ? -1 : token;
  node.edge_prob = parent == kNoNode ? 1.0f : static_cast<float>(weight(parent, token));
  node.sparse = false;
  if (auto status = ProbabilitiesFromLogProbs(logprobs, &node.weights); !status.ok()) return status;
  for (int32_t a : invalid_next) {
    if (a >= 0 && a < vocab_size_) node.weights[a] = 0.0f;
  }
  node.mass = 0.0;
  node.nonzero = 0;
  for (float w : node.weights) {
    if (w > 0.0f) {
      node.mass += w;
      ++node.nonzero;
    }
  }
  MaybeMakeSparse(node);
  const uint32_t index = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back(std::move(node));
  if (parent != kNoNode) {
    children_.emplace(ChildKey(parent, token), index);
    PropagateUp(index);
  }
  return index;
}

void PrefixTrie::MaybeMakeSparse(Node& node) {
  if (node.sparse) {
    // Drop zeroed entries once they are the majority of the stored ones.
    if (node.nonzero * 2 >= node.ids.size()) return;
  } else if (static_cast<size_t>(node.nonzero) * 2 > static_cast<size_t>(vocab_size_)) {
    return;
  }
  std::vector<int32_t> ids;
  std::vector<float> weights;
  ids.reserve(node.nonzero);
  weights.reserve(node.nonzero);
  for (size_t i = 0; i < node.weights.size(); ++i) {
    if (node.weights[i] <= 0.0f) continue;
    ids.push_back(node.sparse ? node.ids[i] : static_cast<int32_t>(i));
    weights.push_back(node.weights[i]);
  }
  node.ids = std::move(ids);
  node.weights = std::move(weights);
  node.sparse = true;
}

int64_t PrefixTrie::SlotOf(const Node& node, int32_t token) const {
  if (token < 0 || token >= vocab_size_) return -1;
  if (!node.sparse) return token;
  auto it = std::lower_bound(node.ids.begin(), node.ids.end(), token);
  if (it == node.ids.end() || *it != token) return -1;
  return it - node.ids.begin();
}

double PrefixTrie::weight(uint32_t index, int32_t token) const {
  const Node& node = nodes_[index];
  const int64_t slot = SlotOf(node, token);
  return slot < 0 ? 0.0 : node.weights[slot];
}

bool PrefixTrie::LowerWeight(uint32_t index, int32_t token, float value) {
  Node& node = nodes_[index];
  const int64_t slot = SlotOf(node, token);
  if (slot < 0) return false;
  float* w = &node.weights[slot];
  if (!(value < *w)) return false;
  if (value <= 0.0f) {
    value = 0.0f;
    --node.nonzero;
  }
  node.mass += static_cast<double>(value) - static_cast<double>(*w);
  *w = value;
  if (node.nonzero == 0 || node.mass < 0.0) node.mass = 0.0;
  return true;
}

void PrefixTrie::RecordInvalid(uint32_t index, absl::Span<const int32_t> tokens) {
  bool changed = false;
  for (int32_t a : tokens) {
    if (!LowerWeight(index, a, 0.0f)) continue;
    changed = true;
    const uint32_t child = Child(index, a);
    if (child != kNoNode) nodes_[child].mass = 0.0;  // its subtree no longer counts
  }
  if (!changed) return;
  MaybeMakeSparse(nodes_[index]);
  PropagateUp(index);
}

void PrefixTrie::PropagateUp(uint32_t index) {
  while (nodes_[index].parent != kNoNode) {
    const Node& node = nodes_[index];
    const uint32_t parent = node.parent;
    const float value = static_cast<float>(static_cast<double>(node.edge_prob) * node.mass);
    if (!LowerWeight(parent, node.token, value)) return;
    MaybeMakeSparse(nodes_[parent]);
    index = parent;
  }
}

int32_t PrefixTrie::Draw(uint32_t index, double uniform) const {
  const Node& node = nodes_[index];
  const int32_t i = DrawIndex(node.weights, node.mass, uniform);
  return node.sparse ? node.ids[i] : i;
}

size_t PrefixTrie::bytes() const {
  size_t total = sizeof(*this) + nodes_.capacity() * sizeof(Node);
  for (const Node& node : nodes_) {
    total += node.weights.capacity() * sizeof(float) + node.ids.capacity() * sizeof(int32_t);
  }
  // flat_hash_map: one slot and one control byte per bucket.
  total += children_.bucket_count() * (sizeof(std::pair<const uint64_t, uint32_t>) + 1);
  return total;
}

}  // namespace zapgram::sampling
