// PrefixTrie (sampling/prefix_trie.h): p_u bookkeeping against a brute-force
// mass, the sparse/dense switch, draws, byte accounting.
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
