// Tests of masks/token_trie.{h,cc}: the flat depth-first token trie.
//
// On the three real tokenizers (../shared/data/tokenizers):
//   - structure: node 0 is the root, nodes are in DFS pre-order with children
//     in increasing byte order, subtree_end delimits exactly the descendants,
//     depth grows by one per edge, first_token/token_count slice token_ids()
//     in order, and every normal id appears exactly once, at the node whose
//     path spells its bytes (special and unused ids never appear);
//   - TokensPrefixOf against a brute-force prefix test over all normal ids on
//     random byte strings (concatenated real tokens, cut and mutated, and
//     random bytes);
//   - a walker that refuses some (depth, byte) steps and skips refused
//     subtrees with subtree_end allows exactly the tokens a per-token check
//     allows (the O(1) skip is a true prefix test).
//   - the per-subtree summaries (parent, SubtreeTokens, SubtreeBytes,
//     max_depth) against their definitions, recomputed from the nodes.
// On a small hand-written vocabulary: a golden Dump.
#include "masks/token_trie.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "masks/vocabulary.h"
#include "tests/support/test_paths.h"

namespace zapgram::masks {
namespace {

struct TrieFixture {
  std::unique_ptr<Vocabulary> vocabulary;
  std::unique_ptr<TokenTrie> trie;
  double build_ms = 0;
};

// One vocabulary and trie per tokenizer for the whole test binary.
const TrieFixture& Fixture(const std::string& name) {
  static auto* cache = new std::map<std::string, TrieFixture>();
  auto it = cache->find(name);
  if (it != cache->end()) return it->second;
  absl::StatusOr<Vocabulary> vocabulary =
      Vocabulary::LoadFromFile(::zapgram::testing::DataPath("tokenizers/" + name + ".tokenizer.json"));
  if (!vocabulary.ok()) {
    std::fprintf(stderr, "%s\n", vocabulary.status().ToString().c_str());
    std::abort();
  }
  TrieFixture& fixture = (*cache)[name];
  fixture.vocabulary = std::make_unique<Vocabulary>(*std::move(vocabulary));
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<TokenTrie> trie = TokenTrie::Build(*fixture.vocabulary);
  fixture.build_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!trie.ok()) {
    std::fprintf(stderr, "%s\n", trie.status().ToString().c_str());
    std::abort();
  }
  fixture.trie = std::make_unique<TokenTrie>(*std::move(trie));
  return fixture;
}

std::vector<TokenId> NormalIds(const Vocabulary& vocabulary) {
  std::vector<TokenId> ids;
  for (TokenId id = 0; id < vocabulary.padded_size(); ++id) {
    if (vocabulary.kind(id) == TokenKind::kNormal) ids.push_back(id);
  }
  return ids;
}

class TokenTrieRealTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenTrieRealTest, StructureInvariants) {
  const TrieFixture& fixture = Fixture(GetParam());
  const Vocabulary& vocabulary = *fixture.vocabulary;
  const TokenTrie& trie = *fixture.trie;
  const absl::Span<const TokenTrieNode> nodes = trie.nodes();
  ASSERT_FALSE(nodes.empty());
  EXPECT_EQ(nodes[0].depth, 0);
  EXPECT_EQ(nodes[0].subtree_end, nodes.size());

  std::vector<int> seen(vocabulary.padded_size(), 0);
  std::string path;                 // bytes of the current node
  std::vector<uint32_t> ancestors;  // ancestors[d] = node of depth d on the path
  uint32_t expected_first_token = 0;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const TokenTrieNode& node = nodes[i];
    if (i > 0) {
      // Its parent is the deepest open ancestor whose subtree contains i.
      ASSERT_GE(node.depth, 1u) << i;
      ASSERT_LE(node.depth, ancestors.size()) << i;
      ancestors.resize(node.depth);
      const uint32_t parent = ancestors.back();
      ASSERT_LT(i, nodes[parent].subtree_end) << i;
      // The previous node is the parent (first child) or the previous
      // sibling's last descendant: then its byte is smaller.
      if (i != parent + 1) {
        uint32_t sibling = parent + 1;
        while (nodes[sibling].subtree_end != i) {
          sibling = nodes[sibling].subtree_end;
          ASSERT_LT(sibling, i) << i;
        }
        ASSERT_LT(nodes[sibling].byte, node.byte) << i;
      }
      path.resize(node.depth - 1);
      path.push_back(static_cast<char>(node.byte));
    }
    ASSERT_GT(node.subtree_end, i) << i;
    if (i > 0) {
      ASSERT_LE(node.subtree_end, nodes[ancestors.back()].subtree_end) << i;
    }
    for (uint32_t d = i + 1; d < node.subtree_end; ++d) ASSERT_GT(nodes[d].depth, node.depth) << i << " " << d;
    if (node.subtree_end < nodes.size()) {
      ASSERT_LE(nodes[node.subtree_end].depth, node.depth) << i;
    }
    // A leaf ends at least one token; tokens come in DFS order.
    if (node.subtree_end == i + 1) {
      ASSERT_GT(node.token_count, 0) << i;
    }
    ASSERT_EQ(node.first_token, expected_first_token) << i;
    expected_first_token += node.token_count;
    TokenId previous = -1;
    for (TokenId id : trie.TokensAt(i)) {
      ASSERT_EQ(vocabulary.kind(id), TokenKind::kNormal) << id;
      ASSERT_EQ(vocabulary.token_bytes(id), path) << "id " << id << " at node " << i;
      ASSERT_GT(id, previous);
      previous = id;
      ++seen[id];
    }
    ancestors.push_back(i);
  }
  EXPECT_EQ(expected_first_token, trie.token_ids().size());
  const std::vector<TokenId> normal = NormalIds(vocabulary);
  EXPECT_EQ(trie.token_ids().size(), normal.size());
  for (TokenId id = 0; id < vocabulary.padded_size(); ++id) {
    ASSERT_EQ(seen[id], vocabulary.kind(id) == TokenKind::kNormal ? 1 : 0) << id;
  }
  // FindNode lands on each token's node.
  for (size_t k = 0; k < normal.size(); k += 97) {
    const std::optional<uint32_t> node = trie.FindNode(vocabulary.token_bytes(normal[k]));
    ASSERT_TRUE(node.has_value()) << normal[k];
    const absl::Span<const TokenId> here = trie.TokensAt(*node);
    EXPECT_NE(std::find(here.begin(), here.end(), normal[k]), here.end()) << normal[k];
  }
  std::printf("[ trie     ] %s: %zu nodes, %zu tokens, %.1f MB, built in %.1f ms\n", GetParam().c_str(),
              nodes.size(), trie.token_ids().size(), trie.memory_bytes() / 1e6, fixture.build_ms);
}

// Random byte strings that exercise long shared prefixes and near misses.
std::vector<std::string> RandomQueries(const Vocabulary& vocabulary, const std::vector<TokenId>& normal,
                                       uint32_t seed, int count) {
  std::mt19937 rng(seed);
  auto pick = [&] { return std::string(vocabulary.token_bytes(normal[rng() % normal.size()])); };
  std::vector<std::string> queries;
  for (int q = 0; q < count; ++q) {
    std::string s;
    switch (q % 4) {
      case 0:  // one to three real tokens
        for (int parts = 1 + static_cast<int>(rng() % 3); parts > 0; --parts) s += pick();
        break;
      case 1:  // a token cut short
        s = pick();
        s.resize(rng() % (s.size() + 1));
        break;
      case 2:  // a token with one byte changed, then more
        s = pick();
        if (!s.empty()) s[rng() % s.size()] = static_cast<char>(rng());
        s += pick();
        break;
      default:  // random bytes
        for (int n = static_cast<int>(rng() % 12); n > 0; --n) s.push_back(static_cast<char>(rng()));
        break;
    }
    queries.push_back(std::move(s));
  }
  return queries;
}

TEST_P(TokenTrieRealTest, PrefixQueriesMatchBruteForce) {
  const TrieFixture& fixture = Fixture(GetParam());
  const Vocabulary& vocabulary = *fixture.vocabulary;
  const std::vector<TokenId> normal = NormalIds(vocabulary);
  int64_t matches = 0;
  for (const std::string& query : RandomQueries(vocabulary, normal, 20261121, 200)) {
    std::vector<TokenId> expected;
    for (TokenId id : normal) {
      if (std::string_view(query).starts_with(vocabulary.token_bytes(id))) expected.push_back(id);
    }
    std::vector<TokenId> actual = fixture.trie->TokensPrefixOf(query);
    std::sort(actual.begin(), actual.end());
    ASSERT_EQ(actual, expected) << "query of " << query.size() << " bytes";
    matches += static_cast<int64_t>(expected.size());
  }
  EXPECT_GT(matches, 200);
}

// Whether the toy "parser" of the walk test takes `byte` as the path's byte
// number `depth` (1-based). Refuses about one step in five.
bool ToyAccepts(uint32_t depth, uint8_t byte) { return (byte * 31u + depth * 7u) % 5u != 0; }

TEST_P(TokenTrieRealTest, SubtreeSkippingWalkMatchesPerTokenCheck) {
  const TrieFixture& fixture = Fixture(GetParam());
  const Vocabulary& vocabulary = *fixture.vocabulary;
  const absl::Span<const TokenTrieNode> nodes = fixture.trie->nodes();
  std::vector<TokenId> walked(fixture.trie->TokensAt(TokenTrie::kRoot).begin(),
                              fixture.trie->TokensAt(TokenTrie::kRoot).end());
  uint64_t visited = 0;
  for (uint32_t i = 1; i < nodes.size();) {
    ++visited;
    if (!ToyAccepts(nodes[i].depth, nodes[i].byte)) {
      i = nodes[i].subtree_end;
      continue;
    }
    for (TokenId id : fixture.trie->TokensAt(i)) walked.push_back(id);
    ++i;
  }
  std::sort(walked.begin(), walked.end());
  std::vector<TokenId> expected;
  for (TokenId id : NormalIds(vocabulary)) {
    const std::string_view bytes = vocabulary.token_bytes(id);
    bool accepted = true;
    for (size_t k = 0; k < bytes.size() && accepted; ++k) {
      accepted = ToyAccepts(static_cast<uint32_t>(k + 1), static_cast<uint8_t>(bytes[k]));
    }
    if (accepted) expected.push_back(id);
  }
  EXPECT_EQ(walked, expected);
  EXPECT_LT(visited, nodes.size());
  std::printf("[ trie     ] %s: toy walk visited %llu of %zu nodes, allowed %zu tokens\n", GetParam().c_str(),
              static_cast<unsigned long long>(visited), nodes.size(), walked.size());
}

// The per-subtree summaries against their definitions, computed the slow
// way from the nodes: parent(i) is the deepest earlier node one level up
// whose subtree holds i; SubtreeTokens(i) lists the ids of every node of the
// subtree in DFS order; SubtreeBytes(i) is the set of their edge bytes.
// Whether `s` is a prefix of well-formed UTF-8 (RFC 3629), decoded
// character by character (the reference for Utf8CleanSubtree).
bool IsUtf8Prefix(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the second byte's range
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;
      if (c == 0xED) high = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;
      if (c == 0xF4) high = 0x8F;
    } else {
      return false;
    }
    for (size_t k = 1; k < length; ++k) {
      if (i + k >= s.size()) return true;  // cut inside a character: still a prefix
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (d < low || d > high) : (d < 0x80 || d > 0xBF)) return false;
    }
    i += length;
  }
  return true;
}

TEST_P(TokenTrieRealTest, SubtreeSummariesMatchTheirDefinitions) {
  const TokenTrie& trie = *Fixture(GetParam()).trie;
  const absl::Span<const TokenTrieNode> nodes = trie.nodes();
  uint32_t deepest = 0;
  size_t distinct_sets = 0, clean_nodes = 0;
  std::map<TrieByteSet, int> sets_seen;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    deepest = std::max<uint32_t>(deepest, nodes[i].depth);
    if (i == TokenTrie::kRoot) {
      ASSERT_EQ(trie.parent(i), TokenTrie::kRoot);
    } else {
      uint32_t parent = i - 1;
      while (nodes[parent].depth != nodes[i].depth - 1u) --parent;
      ASSERT_EQ(trie.parent(i), parent) << i;
      ASSERT_LT(i, nodes[parent].subtree_end) << i;
    }
    // Every 7th node in full (sum of subtree sizes would be large), plus all
    // nodes of depth <= 1 (the largest subtrees).
    if (i % 7 != 0 && nodes[i].depth > 1) continue;
    std::vector<TokenId> tokens;
    TrieByteSet bytes{};
    // The path below i's parent, by depth: whether each is a UTF-8 prefix.
    std::string path(trie.max_depth() + 1u, '\0');
    bool utf8_clean = true;
    for (uint32_t k = i; k < nodes[i].subtree_end; ++k) {
      for (TokenId id : trie.TokensAt(k)) tokens.push_back(id);
      if (k == TokenTrie::kRoot) continue;
      bytes[nodes[k].byte / 64] |= uint64_t{1} << (nodes[k].byte % 64);
      path[nodes[k].depth] = static_cast<char>(nodes[k].byte);
      utf8_clean = utf8_clean && IsUtf8Prefix(std::string_view(path).substr(
                                     nodes[i].depth, nodes[k].depth - nodes[i].depth + 1u));
    }
    if (i != TokenTrie::kRoot) {
      ASSERT_EQ(trie.Utf8CleanSubtree(i), utf8_clean) << i;
      clean_nodes += utf8_clean;
    }
    const absl::Span<const TokenId> got = trie.SubtreeTokens(i);
    ASSERT_EQ(std::vector<TokenId>(got.begin(), got.end()), tokens) << i;
    ASSERT_EQ(trie.SubtreeBytes(i), bytes) << i;
    if (sets_seen[bytes]++ == 0) ++distinct_sets;
  }
  EXPECT_EQ(trie.max_depth(), deepest);
  EXPECT_EQ(trie.SubtreeTokens(TokenTrie::kRoot).size(), trie.token_ids().size());
  std::printf("[ trie     ] %s: %zu distinct subtree byte sets, %zu UTF-8-clean subtrees among the checked nodes\n",
              GetParam().c_str(), distinct_sets, clean_nodes);
  EXPECT_GT(clean_nodes, 0u);
}

INSTANTIATE_TEST_SUITE_P(TokenTrieOnRealTokenizers, TokenTrieRealTest,
                         ::testing::Values("llama3", "qwen2_5", "gemma3"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// Ids 5 (special) and 9 (padding) stay out of the trie; ids 1 and 6 share
// "ab"; "Ā" is byte 0x00 under the byte-level map.
constexpr std::string_view kSmallTokenizer = R"({
  "model": {"type": "BPE", "vocab": {"ab": 1, "b": 3, "abc": 2, "a": 0, "ba": 4, "Ā": 8}},
  "decoder": {"type": "ByteLevel"},
  "added_tokens": [{"id": 5, "content": "<s>", "special": true}, {"id": 6, "content": "ab", "special": false}]})";

TEST(TokenTrieSmallTest, GoldenDump) {
  VocabularyOptions options;
  options.padded_size = 10;
  absl::StatusOr<Vocabulary> vocabulary = Vocabulary::LoadFromJson(kSmallTokenizer, "small.json", options);
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status();
  absl::StatusOr<TokenTrie> trie = TokenTrie::Build(*vocabulary);
  ASSERT_TRUE(trie.ok()) << trie.status();
  EXPECT_EQ(trie->Dump(100),
            "0 depth=0 byte=root end=7\n"
            "1 depth=1 byte=\\x00 end=2 ids=8\n"
            "2 depth=1 byte=a end=5 ids=0\n"
            "3 depth=2 byte=b end=5 ids=1,6\n"
            "4 depth=3 byte=c end=5 ids=2\n"
            "5 depth=1 byte=b end=7 ids=3\n"
            "6 depth=2 byte=a end=7 ids=4\n");
  EXPECT_EQ(trie->TokensPrefixOf("abcd"), (std::vector<TokenId>{0, 1, 6, 2}));
  EXPECT_EQ(trie->TokensPrefixOf("bb"), (std::vector<TokenId>{3}));
  EXPECT_TRUE(trie->TokensPrefixOf("c").empty());
  EXPECT_EQ(trie->FindNode("ab"), std::optional<uint32_t>(3));
  EXPECT_EQ(trie->FindNode(""), std::optional<uint32_t>(0));
  EXPECT_FALSE(trie->FindNode("ac").has_value());
}

// An empty token is unused (Vocabulary: a mask never allows it, no bytes to
// accept), so it is not in the trie: the root holds no ids.
TEST(TokenTrieSmallTest, EmptyTokenIsNotInTheTrie) {
  absl::StatusOr<Vocabulary> vocabulary = Vocabulary::LoadFromJson(
      R"({"model": {"vocab": {"": 0, "x": 1}}, "decoder": {"type": "ByteLevel"}})", "empty.json");
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status();
  absl::StatusOr<TokenTrie> trie = TokenTrie::Build(*vocabulary);
  ASSERT_TRUE(trie.ok()) << trie.status();
  EXPECT_EQ(trie->Dump(100), "0 depth=0 byte=root end=2\n1 depth=1 byte=x end=2 ids=1\n");
  EXPECT_EQ(trie->TokensPrefixOf("xy"), (std::vector<TokenId>{1}));
}

// The trie depends on the tokens only: Vocabulary::SharedTrie builds it once
// and hands the same object to copies of the vocabulary and to concurrent
// callers (every grammar compiled against one tokenizer shares it).
TEST(TokenTrieSmallTest, SharedTrieIsBuiltOncePerVocabulary) {
  VocabularyOptions options;
  options.padded_size = 10;
  absl::StatusOr<Vocabulary> vocabulary = Vocabulary::LoadFromJson(kSmallTokenizer, "small.json", options);
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status();
  std::vector<std::shared_ptr<const TokenTrie>> seen(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<std::shared_ptr<const TokenTrie>> trie = vocabulary->SharedTrie();
      if (trie.ok()) seen[i] = *trie;
    });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& trie : seen) {
    ASSERT_NE(trie, nullptr);
    EXPECT_EQ(trie.get(), seen[0].get());
  }
  const Vocabulary copy = *vocabulary;
  absl::StatusOr<std::shared_ptr<const TokenTrie>> from_copy = copy.SharedTrie();
  ASSERT_TRUE(from_copy.ok());
  EXPECT_EQ(from_copy->get(), seen[0].get());
  absl::StatusOr<TokenTrie> fresh = TokenTrie::Build(*vocabulary);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(seen[0]->Dump(100), fresh->Dump(100));
  // Another vocabulary has its own trie.
  absl::StatusOr<Vocabulary> other = Vocabulary::LoadFromJson(kSmallTokenizer, "small.json", options);
  ASSERT_TRUE(other.ok());
  absl::StatusOr<std::shared_ptr<const TokenTrie>> other_trie = other->SharedTrie();
  ASSERT_TRUE(other_trie.ok());
  EXPECT_NE(other_trie->get(), seen[0].get());
}

}  // namespace
}  // namespace zapgram::masks
