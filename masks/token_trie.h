// TokenTrie: the normal tokens of a Vocabulary as a flat depth-first byte trie.
//
// The mask computation asks, for every token, "can the parser take these
// bytes?". Tokens share prefixes, so it walks a trie of their bytes, feeding
// the parser one byte per edge (push) and undoing it on the way back (pop).
// When the parser refuses a node's byte, every token below the node is
// refused too: the test is a true prefix test on the bytes, so the walk skips
// the node's whole subtree in O(1).
//
// Layout (llguidance's flat trie, our own encoding): nodes() is the trie in
// depth-first pre-order, children of a node sorted by byte. Node 0 is the root
// (the empty string, depth 0). Each node stores the index one past its
// subtree, so its subtree is [i, subtree_end) and its next sibling (if any)
// starts at subtree_end. The ids whose bytes end exactly at a node are the
// slice token_ids()[first_token, first_token + token_count); token_ids() is
// itself in DFS order, ids with equal bytes sorted by id. Only kNormal ids
// are included; special and unused ids never appear (a normal token with
// empty bytes would sit on the root).
//
// A walker, with the parser state S holding the bytes of the current path:
//   for (uint32_t i = 1; i < nodes.size();) {
//     const TokenTrieNode& node = nodes[i];
//     pop S back to node.depth - 1 bytes;
//     if (S accepts node.byte) { push it; allow TokensAt(i); ++i; }
//     else i = node.subtree_end;            // the whole subtree is refused
//   }
// (depth tells how many bytes to pop when the walk moves up.)
//
// Per-subtree summaries, for walkers that can settle a whole subtree at once
// (masks/matcher.cc: a terminal state that loops on every byte below a node
// accepts all of the subtree's tokens without stepping through it):
//   - SubtreeTokens(i): the ids of every node in [i, subtree_end), one
//     contiguous slice of token_ids() (token_ids() is in DFS order);
//   - SubtreeBytes(i): the set of bytes on the edges of i's subtree (i's own
//     byte and all below). Stored deduplicated: per node a 32-bit index into
//     a table of distinct 256-bit sets (Llama 3: ~275k nodes, ~43k sets).
//   - parent(i): the node one level up (the root's parent is itself);
//   - Utf8CleanSubtree(i): every path down i's subtree, read from a
//     character boundary, is well-formed UTF-8 so far (a bit per node), so
//     a walk whose DFA treats whole characters alike may settle it at once.
//
// Building sorts the normal ids by their bytes and emits nodes while scanning
// the sorted list, keeping an explicit stack of open nodes (no recursion).
//
// Thread safety: immutable after Build; share freely across threads.
// Tests: tests/masks/token_trie_test.cc.
#ifndef ZAPGRAM_MASKS_TOKEN_TRIE_H_
#define ZAPGRAM_MASKS_TOKEN_TRIE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "masks/vocabulary.h"

namespace zapgram::masks {

// A set of bytes as four 64-bit words: byte b is bit b % 64 of word b / 64.
using TrieByteSet = std::array<uint64_t, 4>;
inline bool IsSubset(const TrieByteSet& a, const TrieByteSet& b) {
  return ((a[0] & ~b[0]) | (a[1] & ~b[1]) | (a[2] & ~b[2]) | (a[3] & ~b[3])) == 0;
}

// 12 bytes, trivially copyable.
struct TokenTrieNode {
  uint32_t subtree_end;  // index one past the last node of this node's subtree
  uint32_t first_token;  // first index into TokenTrie::token_ids() of the ids ending here
  uint16_t depth;        // length of the node's byte string (root: 0); fits because
                         // Vocabulary refuses tokens longer than 65535 bytes
  uint8_t byte;          // the last byte of the node's string (root: 0)
  uint8_t token_count;   // ids whose bytes are exactly the node's string
};
static_assert(sizeof(TokenTrieNode) == 12);
static_assert(std::is_trivially_copyable_v<TokenTrieNode>);

class TokenTrie {
 public:
  static constexpr uint32_t kRoot = 0;

  // Errors (kResourceExhausted) only when more than 255 normal ids share one
  // byte string, which no real tokenizer does.
  static absl::StatusOr<TokenTrie> Build(const Vocabulary& vocabulary);

  absl::Span<const TokenTrieNode> nodes() const { return nodes_; }
  absl::Span<const TokenId> token_ids() const { return token_ids_; }
  // The greatest node depth (the longest token's byte length).
  uint32_t max_depth() const { return max_depth_; }
  // The ids of every node of `node`'s subtree, in DFS order.
  absl::Span<const TokenId> SubtreeTokens(uint32_t node) const {
    const uint32_t end = nodes_[node].subtree_end;
    const uint32_t last = end < nodes_.size() ? nodes_[end].first_token
                                              : static_cast<uint32_t>(token_ids_.size());
    return absl::Span<const TokenId>(token_ids_).subspan(nodes_[node].first_token,
                                                        last - nodes_[node].first_token);
  }
  // The bytes on the edges of `node`'s subtree (its own byte included; the
  // root's set is every byte of the trie).
  const TrieByteSet& SubtreeBytes(uint32_t node) const { return byte_sets_[subtree_byte_set_[node]]; }
  // How many levels `node`'s subtree spans, itself included (a leaf: 1).
  uint32_t SubtreeHeight(uint32_t node) const { return subtree_height_[node]; }
  uint32_t parent(uint32_t node) const { return parents_[node]; }
  absl::Span<const uint32_t> parents() const { return parents_; }
  // Whether every path down `node`'s subtree (its own byte first), read
  // from a character boundary, is a prefix of well-formed UTF-8.
  bool Utf8CleanSubtree(uint32_t node) const { return (utf8_clean_[node / 64] >> (node % 64)) & 1; }
  // The ids whose bytes are exactly node `node`'s string.
  absl::Span<const TokenId> TokensAt(uint32_t node) const {
    const TokenTrieNode& n = nodes_[node];
    return absl::Span<const TokenId>(token_ids_).subspan(n.first_token, n.token_count);
  }

  // The node whose string is `bytes`, if any. O(|bytes| * fan-out).
  std::optional<uint32_t> FindNode(std::string_view bytes) const;
  // The node holding id `id`, or kNoNode (not a normal token of the trie).
  static constexpr uint32_t kNoNode = 0xFFFFFFFFu;
  uint32_t NodeOf(TokenId id) const {
    return id >= 0 && static_cast<size_t>(id) < node_of_token_.size() ? node_of_token_[id] : kNoNode;
  }
  // Normal ids whose bytes are a prefix of `bytes` (the empty prefix and
  // `bytes` itself included), sorted by length then id.
  std::vector<TokenId> TokensPrefixOf(std::string_view bytes) const;

  // Heap bytes held.
  size_t memory_bytes() const;
  // The first `max_nodes` nodes, one per line: index, depth, byte (escaped),
  // subtree end, ids. For golden tests and debugging.
  std::string Dump(uint32_t max_nodes) const;

 private:
  TokenTrie() = default;
  // Fills parents_, subtree_byte_set_, byte_sets_, subtree_height_,
  // utf8_clean_ and node_of_token_ from nodes_ and token_ids_.
  void BuildSummaries();

  std::vector<TokenTrieNode> nodes_;
  std::vector<TokenId> token_ids_;
  uint32_t max_depth_ = 0;
  std::vector<uint32_t> parents_;           // per node
  std::vector<uint32_t> subtree_byte_set_;  // per node: index into byte_sets_
  std::vector<TrieByteSet> byte_sets_;      // distinct subtree byte sets
  std::vector<uint16_t> subtree_height_;    // per node
  std::vector<uint64_t> utf8_clean_;        // a bit per node: Utf8CleanSubtree
  std::vector<uint32_t> node_of_token_;     // per id: its node, or kNoNode
};

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_TOKEN_TRIE_H_
