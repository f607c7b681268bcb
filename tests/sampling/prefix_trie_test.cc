// PrefixTrie (sampling/prefix_trie.h): p_u bookkeeping against a brute-force
// mass, with and without a byte budget that forces evictions and strips; the
// sparse/dense switch, strip/restore round trips, draws, byte accounting.
#include "sampling/prefix_trie.h"

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace zapgram::sampling {
namespace {

using Prefix = std::vector<int32_t>;

// A fixed random next-token distribution per prefix (log-probabilities),
// from a hash of the prefix: a table the brute force can evaluate too.
std::vector<float> LogProbsAt(const Prefix& prefix, int32_t vocab_size) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t t : prefix) h = (h ^ static_cast<uint64_t>(t + 1)) * 1099511628211ull;
  std::mt19937_64 rng(h);
  std::vector<double> w(vocab_size);
  double total = 0;
  for (double& x : w) {
    x = 0.1 + static_cast<double>(rng() % 1000) / 1000.0;
    total += x;
  }
  std::vector<float> out(vocab_size);
  for (int32_t i = 0; i < vocab_size; ++i) out[i] = static_cast<float>(std::log(w[i] / total));
  return out;
}

double PrefixProbability(const Prefix& prefix, int32_t vocab_size, size_t from) {
  double p = 1.0;
  for (size_t i = from; i < prefix.size(); ++i) {
    Prefix head(prefix.begin(), prefix.begin() + i);
    p *= std::exp(static_cast<double>(LogProbsAt(head, vocab_size)[prefix[i]]));
  }
  return p;
}

bool StartsWith(const Prefix& s, const Prefix& head) {
  return s.size() >= head.size() && std::equal(head.begin(), head.end(), s.begin());
}

// p_u by brute force: 1 - sum over minimal recorded prefixes w extending u of P(w | u).
double BruteForceMass(const Prefix& u, const std::vector<Prefix>& recorded, int32_t vocab_size) {
  double removed = 0.0;
  for (const Prefix& w : recorded) {
    if (!StartsWith(w, u) || w.size() == u.size()) continue;
    bool minimal = true;
    for (const Prefix& v : recorded) {
      if (v.size() < w.size() && StartsWith(w, v)) minimal = false;
    }
    if (minimal) removed += PrefixProbability(w, vocab_size, u.size());
  }
  return 1.0 - removed;
}

TEST(PrefixTrieTest, MassesMatchBruteForceAfterRandomRecords) {
  constexpr int32_t kVocab = 4;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    std::mt19937_64 rng(seed);
    PrefixTrie trie(kVocab);
    std::map<Prefix, uint32_t> node_of;
    node_of[{}] = *trie.AddNode(PrefixTrie::kNoNode, 0, LogProbsAt({}, kVocab), {});
    std::vector<Prefix> recorded;
    for (int round = 0; round < 40; ++round) {
      Prefix w;
      const size_t length = 1 + rng() % 4;
      for (size_t i = 0; i < length; ++i) w.push_back(static_cast<int32_t>(rng() % kVocab));
      bool dead = false;  // a prefix of w (or w) is recorded already: nothing to add
      for (const Prefix& v : recorded) dead = dead || StartsWith(w, v);
      if (dead) continue;
      Prefix u;
      for (size_t i = 0; i + 1 < w.size(); ++i) {
        Prefix next = u;
        next.push_back(w[i]);
        if (!node_of.count(next)) {
          absl::StatusOr<uint32_t> added = trie.AddNode(node_of[u], w[i], LogProbsAt(next, kVocab), {});
          ASSERT_TRUE(added.ok()) << added.status();
          node_of[next] = *added;
        }
        u = next;
      }
      trie.RecordInvalid(node_of[u], {w.back()});
      recorded.push_back(w);
      for (const auto& [prefix, node] : node_of) {
        bool prefix_dead = false;
        for (const Prefix& v : recorded) prefix_dead = prefix_dead || StartsWith(prefix, v);
        if (prefix_dead) continue;
        EXPECT_NEAR(trie.mass(node), BruteForceMass(prefix, recorded, kVocab), 1e-6)
            << "seed " << seed << " round " << round << " node depth " << prefix.size();
        EXPECT_EQ(trie.depth(node), prefix.size());
      }
    }
  }
}

// Walks `prefix` from the root of `trie`, adding missing nodes (restoring a
// stripped parent first, as a sampler does), and returns its node.
uint32_t WalkOrAdd(PrefixTrie& trie, const Prefix& prefix, int32_t vocab_size) {
  uint32_t node = trie.root();
  Prefix head;
  for (int32_t token : prefix) {
    Prefix next = head;
    next.push_back(token);
    uint32_t child = trie.Child(node, token);
    if (child == PrefixTrie::kNoNode) {
      if (!trie.has_distribution(node)) {
        EXPECT_TRUE(trie.Restore(node, LogProbsAt(head, vocab_size)).ok());
      }
      absl::StatusOr<uint32_t> added = trie.AddNode(node, token, LogProbsAt(next, vocab_size), {});
      EXPECT_TRUE(added.ok()) << added.status();
      child = *added;
    }
    node = child;
    head = next;
  }
  return node;
}

// The node of `prefix`, or kNoNode when the trie does not hold it.
uint32_t Find(const PrefixTrie& trie, const Prefix& prefix) {
  uint32_t node = trie.root();
  for (int32_t token : prefix) {
    if (node == PrefixTrie::kNoNode) break;
    node = trie.Child(node, token);
  }
  return node;
}

// A budget of one byte evicts every pristine node and strips every other one
// off the current path at each step; the masses must stay those of a trie
// without a budget, which the brute force checks too, and every prefix the
// small trie forgot must have p = 1 exactly.
TEST(PrefixTrieTest, TinyBudgetKeepsTheMassesOfNoBudget) {
  constexpr int32_t kVocab = 64;  // dense payload 256 bytes, zero bitset 8: strips pay off
  int64_t evictions = 0, strips = 0, refetches = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed);
    PrefixTrie full(kVocab), small(kVocab);
    small.set_byte_budget(1);
    ASSERT_TRUE(full.AddNode(PrefixTrie::kNoNode, 0, LogProbsAt({}, kVocab), {}).ok());
    ASSERT_TRUE(small.AddNode(PrefixTrie::kNoNode, 0, LogProbsAt({}, kVocab), {}).ok());
    std::vector<Prefix> recorded, visited;
    for (int round = 0; round < 60; ++round) {
      Prefix w;
      const size_t length = 1 + rng() % 4;
      // Few distinct tokens, so that paths are shared and revisited.
      for (size_t i = 0; i < length; ++i) w.push_back(static_cast<int32_t>(rng() % 3));
      bool dead = false;
      for (const Prefix& v : recorded) dead = dead || StartsWith(w, v);
      if (dead) continue;
      const Prefix u(w.begin(), w.end() - 1);
      const uint32_t in_full = WalkOrAdd(full, u, kVocab);
      const uint32_t in_small = WalkOrAdd(small, u, kVocab);
      visited.push_back(u);
      if (rng() % 3 != 0) {  // a visit without a record: pristine paths pile up
        if (!small.has_distribution(in_small)) {
          ASSERT_TRUE(small.Restore(in_small, LogProbsAt(u, kVocab)).ok());
        }
        continue;
      }
      // Records need the node's distribution; its ancestors may stay stripped.
      if (!small.has_distribution(in_small)) {
        ASSERT_TRUE(small.Restore(in_small, LogProbsAt(u, kVocab)).ok());
      }
      full.RecordInvalid(in_full, {w.back()});
      small.RecordInvalid(in_small, {w.back()});
      recorded.push_back(w);
      small.Shrink(1, PrefixTrie::kNoNode);  // strip the path too, root included
      for (const Prefix& prefix : visited) {
        bool prefix_dead = false;
        for (const Prefix& v : recorded) prefix_dead = prefix_dead || StartsWith(prefix, v);
        if (prefix_dead) continue;
        const double brute = BruteForceMass(prefix, recorded, kVocab);
        const uint32_t a = Find(full, prefix), b = Find(small, prefix);
        ASSERT_NE(a, PrefixTrie::kNoNode);
        EXPECT_NEAR(full.mass(a), brute, 1e-6);
        if (b == PrefixTrie::kNoNode) {
          EXPECT_EQ(brute, 1.0) << "an evicted prefix held a record, seed " << seed << " round " << round;
          continue;
        }
        EXPECT_NEAR(small.mass(b), full.mass(a), 1e-12) << "seed " << seed << " round " << round;
        EXPECT_EQ(small.pristine(b), brute == 1.0);
      }
    }
    // Restored distributions are bit for bit those of the full trie.
    for (const Prefix& prefix : visited) {
      const uint32_t a = Find(full, prefix), b = Find(small, prefix);
      if (a == PrefixTrie::kNoNode || b == PrefixTrie::kNoNode) continue;
      if (!small.has_distribution(b)) {
        ASSERT_TRUE(small.Restore(b, LogProbsAt(prefix, kVocab)).ok());
      }
      for (int32_t t = 0; t < kVocab; ++t) EXPECT_EQ(small.weight(b, t), full.weight(a, t));
    }
    EXPECT_LT(small.nodes(), full.nodes());
    EXPECT_LT(small.bytes(), full.bytes());
    evictions += small.evictions();
    strips += small.strips();
    refetches += small.refetches();
    EXPECT_EQ(full.evictions() + full.strips() + full.refetches(), 0);
  }
  EXPECT_GT(evictions, 0);
  EXPECT_GT(strips, 0);
  EXPECT_GT(refetches, 0);
}

// Recording below a stripped node updates its weights from what it listed
// or from the child's edge probability, and a restore gives back the same
// weights as a trie that never stripped.
TEST(PrefixTrieTest, StrippedNodesKeepTheirRecords) {
  constexpr int32_t kVocab = 256;
  PrefixTrie trie(kVocab), reference(kVocab);
  for (PrefixTrie* t : {&trie, &reference}) {
    const uint32_t root = *t->AddNode(PrefixTrie::kNoNode, 0, LogProbsAt({}, kVocab), {5, 6});
    const uint32_t child = *t->AddNode(root, 7, LogProbsAt({7}, kVocab), {1});
    ASSERT_TRUE(t->AddNode(root, 8, LogProbsAt({8}, kVocab), {}).ok());  // pristine siblings
    ASSERT_TRUE(t->AddNode(root, 12, LogProbsAt({12}, kVocab), {}).ok());
    EXPECT_FALSE(t->pristine(root));
    EXPECT_FALSE(t->pristine(child));
    EXPECT_TRUE(t->pristine(t->Child(root, 8)));
  }
  // The root is the least recently used node: a small shrink strips only it.
  EXPECT_TRUE(trie.Shrink(trie.bytes() - 600, PrefixTrie::kNoNode));
  EXPECT_FALSE(trie.has_distribution(trie.root()));
  EXPECT_EQ(trie.strips(), 1);
  EXPECT_EQ(trie.stripped_nodes(), 1u);
  // Its records: zero ids 5 and 6 and the weight of the non-pristine child 7.
  EXPECT_EQ(trie.stripped_bytes(), 2 * sizeof(uint32_t) + sizeof(int32_t) + sizeof(float));
  EXPECT_EQ(trie.weight(trie.root(), 5), 0.0);
  EXPECT_TRUE(std::isnan(trie.weight(trie.root(), 9)));  // the model's, unknown while stripped
  // A record below the stripped root, under the child it did not list (it
  // was pristine) and under the one it listed.
  for (PrefixTrie* t : {&trie, &reference}) {
    t->RecordInvalid(t->Child(t->root(), 8), {2, 3});
    t->RecordInvalid(t->Child(t->root(), 7), {4});
  }
  EXPECT_EQ(trie.mass(trie.root()), reference.mass(reference.root()));
  EXPECT_LT(trie.mass(trie.root()), 1.0);
  // A direct record at the stripped root is skipped (its old weight is unknown).
  trie.RecordInvalid(trie.root(), {9});
  EXPECT_EQ(trie.mass(trie.root()), reference.mass(reference.root()));
  ASSERT_TRUE(trie.Restore(trie.root(), LogProbsAt({}, kVocab)).ok());
  EXPECT_FALSE(trie.Restore(trie.root(), LogProbsAt({}, kVocab)).ok());  // not stripped
  EXPECT_EQ(trie.stripped_nodes(), 0u);
  EXPECT_EQ(trie.stripped_bytes(), 0u);
  for (int32_t a = 0; a < kVocab; ++a) EXPECT_EQ(trie.weight(trie.root(), a), reference.weight(reference.root(), a));
  // Shrinking to nothing evicts the pristine sibling only; the records stay.
  EXPECT_FALSE(trie.Shrink(1, PrefixTrie::kNoNode));
  EXPECT_EQ(trie.evictions(), 1);
  EXPECT_EQ(trie.Child(trie.root(), 12), PrefixTrie::kNoNode);
  EXPECT_NE(trie.Child(trie.root(), 8), PrefixTrie::kNoNode);
  EXPECT_EQ(trie.nodes(), 3u);
  // Re-adding the evicted pristine prefix counts a refetch and changes nothing.
  const double before = trie.mass(trie.root());
  ASSERT_TRUE(trie.Restore(trie.root(), LogProbsAt({}, kVocab)).ok());
  ASSERT_TRUE(trie.AddNode(trie.root(), 12, LogProbsAt({12}, kVocab), {}).ok());
  EXPECT_EQ(trie.mass(trie.root()), before);
  EXPECT_EQ(trie.refetches(), 3);  // two restores and the re-add
}

TEST(PrefixTrieTest, AddNodeWithInvalidSetPropagatesAndGoesSparse) {
  constexpr int32_t kVocab = 8;
  PrefixTrie trie(kVocab);
  const uint32_t root = *trie.AddNode(PrefixTrie::kNoNode, 0, LogProbsAt({}, kVocab), {});
  EXPECT_FALSE(trie.is_sparse(root));
  EXPECT_NEAR(trie.mass(root), 1.0, 1e-6);
  // The child keeps 3 of 8 tokens: sparse, and the root loses P(2) * (1 - kept mass).
  const std::vector<float> child_lp = LogProbsAt({2}, kVocab);
  const uint32_t child = *trie.AddNode(root, 2, child_lp, {0, 1, 3, 5, 7});
  EXPECT_TRUE(trie.is_sparse(child));
  EXPECT_EQ(trie.nonzero(child), 3u);
  const double kept = std::exp(child_lp[2]) + std::exp(child_lp[4]) + std::exp(child_lp[6]);
  EXPECT_NEAR(trie.mass(child), kept, 1e-6);
  const double p2 = std::exp(LogProbsAt({}, kVocab)[2]);
  EXPECT_NEAR(trie.mass(root), 1.0 - p2 * (1.0 - kept), 1e-6);
  EXPECT_EQ(trie.Child(root, 2), child);
  EXPECT_EQ(trie.Child(root, 3), PrefixTrie::kNoNode);
  // Recording the rest empties the child exactly, and the root loses all of P(2).
  trie.RecordInvalid(child, {2, 4, 6});
  EXPECT_EQ(trie.mass(child), 0.0);
  EXPECT_EQ(trie.weight(root, 2), 0.0);
  EXPECT_NEAR(trie.mass(root), 1.0 - p2, 1e-6);
  // The root goes sparse once more than half of its tokens are recorded.
  trie.RecordInvalid(root, {0, 1, 3});
  EXPECT_TRUE(trie.is_sparse(root));
  EXPECT_EQ(trie.nonzero(root), 4u);
}

TEST(PrefixTrieTest, DrawFollowsTheAdjustedWeights) {
  constexpr int32_t kVocab = 6;
  for (bool sparse : {false, true}) {
    PrefixTrie trie(kVocab);
    const std::vector<int32_t> invalid = sparse ? std::vector<int32_t>{0, 2, 4, 5} : std::vector<int32_t>{3};
    const uint32_t root = *trie.AddNode(PrefixTrie::kNoNode, 0, LogProbsAt({}, kVocab), invalid);
    EXPECT_EQ(trie.is_sparse(root), sparse);
    constexpr int kGrid = 100000;
    std::vector<int> counts(kVocab);
    for (int i = 0; i < kGrid; ++i) ++counts[trie.Draw(root, (i + 0.5) / kGrid)];
    for (int32_t a = 0; a < kVocab; ++a) {
      EXPECT_NEAR(counts[a] / static_cast<double>(kGrid), trie.weight(root, a) / trie.mass(root), 2.0 / kGrid)
          << "token " << a;
    }
    for (int32_t a : invalid) EXPECT_EQ(counts[a], 0);
  }
}

TEST(PrefixTrieTest, BytesAccountForDenseAndSparseNodes) {
  constexpr int32_t kVocab = 1000;
  const std::vector<float> uniform(kVocab, static_cast<float>(-std::log(1000.0)));
  std::vector<int32_t> all_but_ten;
  for (int32_t a = 10; a < kVocab; ++a) all_but_ten.push_back(a);
  PrefixTrie dense(kVocab), sparse(kVocab);
  const size_t empty = dense.bytes();
  ASSERT_TRUE(dense.AddNode(PrefixTrie::kNoNode, 0, uniform, {}).ok());
  ASSERT_TRUE(sparse.AddNode(PrefixTrie::kNoNode, 0, uniform, all_but_ten).ok());
  EXPECT_TRUE(sparse.is_sparse(0));
  EXPECT_GE(dense.bytes() - empty, kVocab * sizeof(float));
  // Same node records; the payloads differ by V floats against 10 (id, weight) pairs.
  EXPECT_EQ(dense.bytes() - sparse.bytes(), kVocab * sizeof(float) - 10 * (sizeof(float) + sizeof(int32_t)));
  // A child adds its payload and a child-map entry.
  const size_t before = sparse.bytes();
  ASSERT_TRUE(sparse.AddNode(0, 3, uniform, all_but_ten).ok());
  EXPECT_GE(sparse.bytes() - before, 10 * (sizeof(float) + sizeof(int32_t)));
  EXPECT_EQ(sparse.nodes(), 2u);
}

TEST(PrefixTrieTest, BrokenDistributionsAreErrors) {
  PrefixTrie trie(3);
  EXPECT_FALSE(trie.AddNode(PrefixTrie::kNoNode, 0, {0.0f, 0.0f}, {}).ok());  // wrong size
  EXPECT_FALSE(trie.AddNode(PrefixTrie::kNoNode, 0, {NAN, 0.0f, 0.0f}, {}).ok());
  EXPECT_FALSE(trie.AddNode(PrefixTrie::kNoNode, 0, {-INFINITY, -INFINITY, -INFINITY}, {}).ok());
  ASSERT_TRUE(trie.AddNode(PrefixTrie::kNoNode, 0, {-1.0f, -1.0f, -1.0f}, {}).ok());  // normalized here
  EXPECT_NEAR(trie.mass(0), 1.0, 1e-6);
  EXPECT_FALSE(trie.AddNode(PrefixTrie::kNoNode, 0, {-1.0f, -1.0f, -1.0f}, {}).ok());  // root twice
}

}  // namespace
}  // namespace zapgram::sampling
