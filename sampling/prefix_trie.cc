// The invalid-prefix trie (see prefix_trie.h for the data layout and the
// propagation rule). Tests: tests/sampling/prefix_trie_test.cc.
#include "sampling/prefix_trie.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

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

namespace {

uint64_t MixPrefixHash(uint64_t hash, int32_t token) {
  uint64_t x = hash ^ (static_cast<uint64_t>(static_cast<uint32_t>(token)) + 0x9E3779B97F4A7C15ull);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return (x ^ (x >> 31)) | 1;  // never 0, the empty slot of recent_evictions_
}

constexpr uint64_t kRootPrefixHash = 0x2545F4914F6CDD1Dull;

}  // namespace

PrefixTrie::ZeroSet PrefixTrie::ZeroSet::FromSortedIds(std::vector<uint32_t> ids, int32_t vocab_size) {
  ZeroSet set;
  if (ids.size() <= BitsetWords(vocab_size)) {
    ids.shrink_to_fit();
    set.words = std::move(ids);
    return set;
  }
  set.bitset = true;
  set.words.assign(BitsetWords(vocab_size), 0);
  for (uint32_t id : ids) set.words[id / 32] |= uint32_t{1} << (id % 32);
  return set;
}

bool PrefixTrie::ZeroSet::Contains(int32_t id) const {
  if (bitset) return (words[id / 32] >> (id % 32)) & 1;
  return std::binary_search(words.begin(), words.end(), static_cast<uint32_t>(id));
}

void PrefixTrie::ZeroSet::Add(int32_t id, int32_t vocab_size) {
  if (bitset) {
    words[id / 32] |= uint32_t{1} << (id % 32);
    return;
  }
  auto it = std::lower_bound(words.begin(), words.end(), static_cast<uint32_t>(id));
  if (it != words.end() && *it == static_cast<uint32_t>(id)) return;
  words.insert(it, static_cast<uint32_t>(id));
  if (words.size() > BitsetWords(vocab_size)) *this = FromSortedIds(std::move(words), vocab_size);
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

absl::Status PrefixTrie::CheckSize(absl::Span<const float> logprobs) const {
  if (static_cast<int64_t>(logprobs.size()) == vocab_size_) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("language model gave ", logprobs.size(),
                                                 " log-probabilities for a vocabulary of ", vocab_size_));
}

absl::StatusOr<uint32_t> PrefixTrie::AddNode(uint32_t parent, int32_t token,
                                             absl::Span<const float> logprobs,
                                             absl::Span<const int32_t> invalid_next) {
  if (auto status = CheckSize(logprobs); !status.ok()) return status;
  if (parent == kNoNode ? !nodes_.empty() : Child(parent, token) != kNoNode) {
    return absl::InternalError("prefix trie: node added twice");
  }
  if (parent != kNoNode && !has_distribution(parent)) {
    return absl::InternalError("prefix trie: node added below a stripped node");
  }
  Node node;
  node.parent = parent;
  node.token = parent == kNoNode ? -1 : token;
  node.edge_prob = parent == kNoNode ? 1.0f : static_cast<float>(weight(parent, token));
  node.prefix_hash = parent == kNoNode ? kRootPrefixHash : MixPrefixHash(nodes_[parent].prefix_hash, token);
  if (auto status = ProbabilitiesFromLogProbs(logprobs, &node.weights); !status.ok()) return status;
  bool recorded = false;
  for (int32_t a : invalid_next) {
    if (a >= 0 && a < vocab_size_ && node.weights[a] > 0.0f) {
      node.weights[a] = 0.0f;
      recorded = true;
    }
  }
  double sum = 0.0;
  for (float w : node.weights) {
    if (w > 0.0f) {
      sum += w;
      ++node.nonzero;
    }
  }
  // A pristine node's mass is exactly 1: evicting and re-adding it then
  // changes nothing, and its parent's weight stays P(token | parent).
  node.pristine = !recorded;
  node.mass = recorded ? (node.nonzero == 0 ? 0.0 : sum) : 1.0;
  uint32_t index;
  if (free_.empty()) {
    index = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back(std::move(node));
  } else {
    index = free_.back();
    free_.pop_back();
    nodes_[index] = std::move(node);
  }
  Account(nodes_[index], +1);
  ++live_nodes_;
  MaybeMakeSparse(index);
  if (parent != kNoNode) {
    children_.emplace(ChildKey(parent, token), index);
    ++nodes_[parent].children;
    if (!recent_evictions_.empty()) {
      uint64_t& slot = recent_evictions_[nodes_[index].prefix_hash & (recent_evictions_.size() - 1)];
      if (slot == nodes_[index].prefix_hash) {
        ++refetches_;
        slot = 0;
      }
    }
    if (recorded) {
      MarkNotPristine(index);
      PropagateUp(index);
    }
  }
  Touch(index);
  Enforce(index);
  return index;
}

void PrefixTrie::MaybeMakeSparse(uint32_t index) {
  Node& node = nodes_[index];
  if (node.form == Form::kStripped) return;
  const bool sparse = node.form == Form::kSparse;
  if (sparse) {
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
    ids.push_back(sparse ? node.ids[i] : static_cast<int32_t>(i));
    weights.push_back(node.weights[i]);
  }
  Account(node, -1);
  node.ids = std::move(ids);
  node.weights = std::move(weights);
  node.form = Form::kSparse;
  Account(node, +1);
}

int64_t PrefixTrie::SlotOf(const Node& node, int32_t token) const {
  if (token < 0 || token >= vocab_size_) return -1;
  if (node.form == Form::kDense) return token;
  auto it = std::lower_bound(node.ids.begin(), node.ids.end(), token);
  if (it == node.ids.end() || *it != token) return -1;
  return it - node.ids.begin();
}

double PrefixTrie::weight(uint32_t index, int32_t token) const {
  const Node& node = nodes_[index];
  const int64_t slot = SlotOf(node, token);
  if (slot >= 0) return node.weights[slot];
  if (node.form != Form::kStripped || token < 0 || token >= vocab_size_) return 0.0;
  return node.zeros.Contains(token) ? 0.0 : std::numeric_limits<double>::quiet_NaN();
}

bool PrefixTrie::LowerWeight(uint32_t index, int32_t token, float value, float unlisted_old) {
  Node& node = nodes_[index];
  if (token < 0 || token >= vocab_size_) return false;
  const int64_t slot = SlotOf(node, token);
  const bool stripped = node.form == Form::kStripped;
  float old;
  if (slot >= 0) {
    old = node.weights[slot];
  } else if (!stripped || node.zeros.Contains(token) || !(unlisted_old > 0.0f)) {
    return false;  // absent (zero), or the model's weight, unknown here
  } else {
    old = unlisted_old;
  }
  if (!(value < old)) return false;
  if (value <= 0.0f) {
    value = 0.0f;
    --node.nonzero;
  }
  node.mass += static_cast<double>(value) - static_cast<double>(old);
  if (node.nonzero == 0 || node.mass < 0.0) node.mass = 0.0;
  if (!stripped) {
    node.weights[slot] = value;
    return true;
  }
  Account(node, -1);
  const size_t pos = std::lower_bound(node.ids.begin(), node.ids.end(), token) - node.ids.begin();
  if (value > 0.0f) {
    if (slot >= 0) {
      node.weights[pos] = value;
    } else {
      node.ids.insert(node.ids.begin() + pos, token);
      node.weights.insert(node.weights.begin() + pos, value);
    }
  } else {
    node.zeros.Add(token, vocab_size_);
    if (slot >= 0) {
      node.ids.erase(node.ids.begin() + pos);
      node.weights.erase(node.weights.begin() + pos);
    }
  }
  Account(node, +1);
  return true;
}

void PrefixTrie::MarkNotPristine(uint32_t index) {
  while (index != kNoNode && nodes_[index].pristine) {
    nodes_[index].pristine = false;
    index = nodes_[index].parent;
  }
}

void PrefixTrie::RecordInvalid(uint32_t index, absl::Span<const int32_t> tokens) {
  bool changed = false;
  for (int32_t a : tokens) {
    if (!LowerWeight(index, a, 0.0f, std::numeric_limits<float>::quiet_NaN())) continue;
    changed = true;
    const uint32_t child = Child(index, a);
    if (child != kNoNode) nodes_[child].mass = 0.0;  // its subtree no longer counts
  }
  if (!changed) return;
  MarkNotPristine(index);
  MaybeMakeSparse(index);
  PropagateUp(index);
}

void PrefixTrie::PropagateUp(uint32_t index) {
  while (nodes_[index].parent != kNoNode) {
    const Node& node = nodes_[index];
    const uint32_t parent = node.parent;
    const float value = static_cast<float>(static_cast<double>(node.edge_prob) * node.mass);
    // At a stripped parent an unlisted weight for this child is still the
    // model's, which the child kept as its edge probability.
    if (!LowerWeight(parent, node.token, value, node.edge_prob)) return;
    MaybeMakeSparse(parent);
    index = parent;
  }
}

int32_t PrefixTrie::Draw(uint32_t index, double uniform) const {
  const Node& node = nodes_[index];
  const int32_t i = DrawIndex(node.weights, node.mass, uniform);
  return node.form == Form::kSparse ? node.ids[i] : i;
}

absl::Status PrefixTrie::Restore(uint32_t index, absl::Span<const float> logprobs) {
  if (nodes_[index].form != Form::kStripped) {
    return absl::FailedPreconditionError("prefix trie: restoring a node that holds its distribution");
  }
  if (auto status = CheckSize(logprobs); !status.ok()) return status;
  std::vector<float> weights;
  if (auto status = ProbabilitiesFromLogProbs(logprobs, &weights); !status.ok()) return status;
  Node& node = nodes_[index];
  if (node.zeros.bitset) {
    for (int32_t a = 0; a < vocab_size_; ++a) {
      if (node.zeros.Contains(a)) weights[a] = 0.0f;
    }
  } else {
    for (uint32_t a : node.zeros.words) weights[a] = 0.0f;
  }
  for (size_t i = 0; i < node.ids.size(); ++i) weights[node.ids[i]] = node.weights[i];
  node.nonzero = 0;
  for (float w : weights) node.nonzero += w > 0.0f ? 1 : 0;
  if (node.nonzero == 0) node.mass = 0.0;
  Account(node, -1);
  node.weights = std::move(weights);
  node.ids = {};
  node.zeros = {};
  node.form = Form::kDense;
  Account(node, +1);
  ++refetches_;
  MaybeMakeSparse(index);
  Touch(index);
  Enforce(index);
  return absl::OkStatus();
}

size_t PrefixTrie::StrippedBytesBound(const Node& node) const {
  const size_t zeros = node.pristine ? 0 : static_cast<size_t>(vocab_size_) - node.nonzero;
  return std::min(zeros, ZeroSet::BitsetWords(vocab_size_)) * sizeof(uint32_t) +
         static_cast<size_t>(node.children) * (sizeof(int32_t) + sizeof(float));
}

bool PrefixTrie::Strip(uint32_t index) {
  Node& node = nodes_[index];
  if (node.form == Form::kStripped) return false;
  if (StrippedBytesBound(node) >= PayloadBytes(node)) return false;
  // What the records changed: the zero weights (a pristine node has none
  // beyond the model's own) and the weights of non-pristine children.
  std::vector<uint32_t> zero_ids;
  std::vector<int32_t> ids;
  std::vector<float> weights;
  auto keep = [&](int32_t a, float w) {
    if (w <= 0.0f) {
      if (!node.pristine) zero_ids.push_back(static_cast<uint32_t>(a));
      return;
    }
    if (node.children == 0) return;
    const uint32_t child = Child(index, a);
    if (child != kNoNode && !nodes_[child].pristine) {
      ids.push_back(a);
      weights.push_back(w);
    }
  };
  if (node.form == Form::kDense) {
    for (int32_t a = 0; a < vocab_size_; ++a) keep(a, node.weights[a]);
  } else {
    size_t next = 0;  // the ids a sparse node does not store are zeros
    for (int32_t a = 0; a < vocab_size_; ++a) {
      const bool stored = next < node.ids.size() && node.ids[next] == a;
      keep(a, stored ? node.weights[next] : 0.0f);
      if (stored) ++next;
    }
  }
  ZeroSet zeros = ZeroSet::FromSortedIds(std::move(zero_ids), vocab_size_);
  const size_t stripped_bytes = zeros.bytes() + ids.size() * (sizeof(int32_t) + sizeof(float));
  if (stripped_bytes >= PayloadBytes(node)) return false;
  Account(node, -1);
  node.zeros = std::move(zeros);
  node.ids = std::move(ids);
  node.weights = std::move(weights);
  node.form = Form::kStripped;
  Account(node, +1);
  ++strips_;
  return true;
}

void PrefixTrie::Account(const Node& node, int sign) {
  const size_t payload = PayloadBytes(node);
  if (sign > 0) {
    payload_bytes_ += payload;
  } else {
    payload_bytes_ -= payload;
  }
  if (node.form != Form::kStripped) return;
  if (sign > 0) {
    stripped_bytes_ += payload;
    ++stripped_nodes_;
  } else {
    stripped_bytes_ -= payload;
    --stripped_nodes_;
  }
}

bool PrefixTrie::Evictable(uint32_t index) const {
  const Node& node = nodes_[index];
  if (!node.live || node.pinned || node.parent == kNoNode || node.children > 0) return false;
  if (node.pristine) return true;
  // A dead leaf: its parent's zero weight says all it knows.
  return node.mass == 0.0 && weight(node.parent, node.token) == 0.0;
}

void PrefixTrie::Evict(uint32_t index) {
  Node& node = nodes_[index];
  children_.erase(ChildKey(node.parent, node.token));
  --nodes_[node.parent].children;
  if (recent_evictions_.empty()) {
    // Bounded: about one entry per 512 budget bytes, 16 to 65536 entries.
    size_t entries = 16;
    while (entries < 65536 && entries * 512 < byte_budget_) entries *= 2;
    recent_evictions_.assign(entries, 0);
  }
  recent_evictions_[node.prefix_hash & (recent_evictions_.size() - 1)] = node.prefix_hash;
  Account(node, -1);
  node = Node();
  node.live = false;
  free_.push_back(index);
  --live_nodes_;
  ++evictions_;
}

bool PrefixTrie::Shrink(size_t target_bytes, uint32_t pinned) {
  if (bytes() <= target_bytes) return true;
  std::vector<uint32_t> path;
  for (uint32_t n = pinned; n != kNoNode; n = nodes_[n].parent) {
    nodes_[n].pinned = true;
    path.push_back(n);
  }
  std::vector<std::pair<uint64_t, uint32_t>> candidates;
  bool progress = true;
  while (progress && bytes() > target_bytes) {
    progress = false;
    candidates.clear();
    for (uint32_t i = 0; i < nodes_.size(); ++i) {
      const Node& node = nodes_[i];
      if (!node.live || node.pinned) continue;
      const bool strippable = node.form != Form::kStripped && StrippedBytesBound(node) < PayloadBytes(node);
      if (strippable || Evictable(i)) candidates.emplace_back(node.last_use, i);
    }
    std::sort(candidates.begin(), candidates.end());
    for (const auto& [last_use, i] : candidates) {
      if (bytes() <= target_bytes) break;
      if (!nodes_[i].live) continue;
      if (Evictable(i)) {
        // Evicting a leaf may leave its parent an evictable leaf: go up.
        for (uint32_t n = i; n != kNoNode && Evictable(n) && bytes() > target_bytes;) {
          const uint32_t parent = nodes_[n].parent;
          Evict(n);
          n = parent;
        }
        progress = true;
      } else if (Strip(i)) {
        progress = true;
      }
    }
  }
  for (uint32_t n : path) nodes_[n].pinned = false;
  if (bytes() > target_bytes) return false;
  stuck_at_bytes_ = 0;
  return true;
}

void PrefixTrie::Enforce(uint32_t grown) {
  if (byte_budget_ == 0) return;
  const size_t size = bytes();
  // After a shrink that could not reach the target, wait for more growth
  // before scanning again.
  if (size <= byte_budget_ || size <= stuck_at_bytes_ + byte_budget_ / 8) return;
  stuck_at_bytes_ = Shrink(byte_budget_ - byte_budget_ / 8, grown) ? 0 : bytes();
}

size_t PrefixTrie::bytes() const {
  size_t total = sizeof(*this) + nodes_.capacity() * sizeof(Node) + payload_bytes_ +
                 free_.capacity() * sizeof(uint32_t);
  // flat_hash_map: one slot and one control byte per bucket.
  total += children_.bucket_count() * (sizeof(std::pair<const uint64_t, uint32_t>) + 1);
  total += recent_evictions_.capacity() * sizeof(uint64_t);
  return total;
}

}  // namespace zapgram::sampling
