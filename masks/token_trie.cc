// Building the flat depth-first token trie (layout and walking: token_trie.h).
//
// The construction is the classic "trie from a sorted list" scan. With the
// normal ids sorted by their bytes (then id), consecutive tokens share their
// longest common prefix, so the trie path of token k is the path of token k-1
// cut back to that prefix and extended by the rest of token k's bytes:
//   - close the open nodes deeper than the common prefix (their subtree ends
//     at the current node count),
//   - open one node per remaining byte (pre-order: a node is emitted before
//     its descendants, and siblings come in byte order because the list is
//     sorted),
//   - record the id on the last open node.
// Equal byte strings are neighbours in the sorted list, so the ids of a node
// form one contiguous run of token_ids(). `open` is the explicit stack of the
// current path; nothing recurses.
//
// Tests: tests/masks/token_trie_test.cc (invariants on the three real
// tokenizers, a brute-force prefix oracle on random strings, a golden dump).
#include "masks/token_trie.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "grammar/utf8.h"
#include "absl/strings/str_join.h"

namespace zapgram::masks {

absl::StatusOr<std::shared_ptr<const TokenTrie>> Vocabulary::SharedTrie() const {
  if (trie_slot_ == nullptr) {  // a moved-from vocabulary: build, do not keep
    absl::StatusOr<TokenTrie> trie = TokenTrie::Build(*this);
    if (!trie.ok()) return trie.status();
    return std::make_shared<const TokenTrie>(*std::move(trie));
  }
  std::lock_guard<std::mutex> lock(trie_slot_->mu);
  if (trie_slot_->trie == nullptr) {
    absl::StatusOr<TokenTrie> trie = TokenTrie::Build(*this);
    if (!trie.ok()) return trie.status();
    trie_slot_->trie = std::make_shared<const TokenTrie>(*std::move(trie));
  }
  return trie_slot_->trie;
}

absl::StatusOr<TokenTrie> TokenTrie::Build(const Vocabulary& vocabulary) {
  struct NormalToken {
    std::string_view bytes;
    TokenId id;
  };
  std::vector<NormalToken> sorted;
  sorted.reserve(vocabulary.padded_size());
  for (TokenId id = 0; id < vocabulary.padded_size(); ++id) {
    if (vocabulary.kind(id) == TokenKind::kNormal) sorted.push_back({vocabulary.token_bytes(id), id});
  }
  std::sort(sorted.begin(), sorted.end(), [](const NormalToken& a, const NormalToken& b) {
    const int order = a.bytes.compare(b.bytes);
    return order != 0 ? order < 0 : a.id < b.id;
  });

  TokenTrie trie;
  trie.token_ids_.reserve(sorted.size());
  for (const NormalToken& token : sorted) trie.token_ids_.push_back(token.id);
  trie.nodes_.push_back({0, 0, 0, 0, 0});
  std::vector<uint32_t> open = {kRoot};  // open[d] = node of depth d on the current path
  std::string_view previous;
  for (uint32_t position = 0; position < sorted.size(); ++position) {
    const std::string_view bytes = sorted[position].bytes;
    size_t common = 0;
    const size_t limit = std::min(bytes.size(), previous.size());
    while (common < limit && bytes[common] == previous[common]) ++common;
    common = std::min(common, open.size() - 1);
    while (open.size() > common + 1) {
      trie.nodes_[open.back()].subtree_end = static_cast<uint32_t>(trie.nodes_.size());
      open.pop_back();
    }
    for (size_t depth = common + 1; depth <= bytes.size(); ++depth) {
      open.push_back(static_cast<uint32_t>(trie.nodes_.size()));
      trie.nodes_.push_back({0, position, static_cast<uint16_t>(depth),
                             static_cast<uint8_t>(bytes[depth - 1]), 0});
    }
    TokenTrieNode& node = trie.nodes_[open.back()];
    if (node.token_count == 0) node.first_token = position;
    if (node.token_count == UINT8_MAX) {
      return absl::ResourceExhaustedError(absl::StrCat(
          vocabulary.source_name(), ": more than 255 tokens have the bytes '", absl::CHexEscape(absl::string_view(bytes.data(), bytes.size())), "'"));
    }
    ++node.token_count;
    previous = bytes;
  }
  const uint32_t end = static_cast<uint32_t>(trie.nodes_.size());
  for (uint32_t node : open) trie.nodes_[node].subtree_end = end;
  // A node without tokens points at where its descendants' ids start, which
  // keeps first_token non-decreasing along nodes().
  uint32_t next_token = 0;
  for (TokenTrieNode& node : trie.nodes_) {
    if (node.token_count == 0) node.first_token = next_token;
    next_token = node.first_token + node.token_count;
    trie.max_depth_ = std::max<uint32_t>(trie.max_depth_, node.depth);
  }
  trie.nodes_.shrink_to_fit();
  trie.BuildSummaries();
  return trie;
}

void TokenTrie::BuildSummaries() {
  // Parents from the pre-order: the nearest earlier node one level up.
  const uint32_t n = static_cast<uint32_t>(nodes_.size());
  parents_.assign(n, kRoot);
  std::vector<uint32_t> at_depth(max_depth_ + 1u, kRoot);
  for (uint32_t i = kRoot + 1; i < n; ++i) {
    parents_[i] = at_depth[nodes_[i].depth - 1u];
    at_depth[nodes_[i].depth] = i;
  }
  // Subtree byte sets bottom up: in reverse pre-order every child comes
  // before its parent, so one backward pass folds each set into its parent's.
  // The same pass finds, per node and phase of the UTF-8 reader, whether
  // every path down the subtree from that phase is well formed so far:
  // `clean` (a bit per phase) from the node's byte and `children_accept`,
  // the phases every child is clean from.
  std::vector<TrieByteSet> sets(n, TrieByteSet{});
  subtree_height_.assign(n, 1);
  std::vector<uint8_t> children_accept(n, 0xFF);
  utf8_clean_.assign((n + 63) / 64, 0);
  for (uint32_t i = n; i-- > kRoot + 1;) {
    sets[i][nodes_[i].byte / 64] |= uint64_t{1} << (nodes_[i].byte % 64);
    TrieByteSet& up = sets[parents_[i]];
    for (size_t w = 0; w < up.size(); ++w) up[w] |= sets[i][w];
    uint16_t& height = subtree_height_[parents_[i]];
    height = std::max<uint16_t>(height, static_cast<uint16_t>(subtree_height_[i] + 1));
    uint8_t clean = 0;
    for (uint8_t phase = 0; phase < 8; ++phase) {
      const uint8_t next = grammar::Utf8Step(phase, nodes_[i].byte);
      if (next != grammar::kUtf8Invalid && ((children_accept[i] >> next) & 1)) clean |= uint8_t(1u << phase);
    }
    children_accept[parents_[i]] &= clean;
    if (clean & 1) utf8_clean_[i / 64] |= uint64_t{1} << (i % 64);
  }
  absl::flat_hash_map<TrieByteSet, uint32_t> ids;
  subtree_byte_set_.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    auto [it, inserted] = ids.try_emplace(sets[i], static_cast<uint32_t>(byte_sets_.size()));
    if (inserted) byte_sets_.push_back(sets[i]);
    subtree_byte_set_[i] = it->second;
  }
  byte_sets_.shrink_to_fit();
  TokenId largest = -1;
  for (TokenId id : token_ids_) largest = std::max(largest, id);
  node_of_token_.assign(static_cast<size_t>(largest + 1), kNoNode);
  for (uint32_t i = 0; i < n; ++i) {
    for (TokenId id : TokensAt(i)) node_of_token_[id] = i;
  }
}

std::optional<uint32_t> TokenTrie::FindNode(std::string_view bytes) const {
  uint32_t node = kRoot;
  for (const char c : bytes) {
    const uint8_t byte = static_cast<uint8_t>(c);
    uint32_t child = node + 1;
    const uint32_t end = nodes_[node].subtree_end;
    while (child < end && nodes_[child].byte != byte) child = nodes_[child].subtree_end;
    if (child >= end) return std::nullopt;
    node = child;
  }
  return node;
}

std::vector<TokenId> TokenTrie::TokensPrefixOf(std::string_view bytes) const {
  std::vector<TokenId> ids;
  uint32_t node = kRoot;
  size_t matched = 0;
  while (true) {
    for (TokenId id : TokensAt(node)) ids.push_back(id);
    if (matched == bytes.size()) break;
    const uint8_t byte = static_cast<uint8_t>(bytes[matched]);
    uint32_t child = node + 1;
    const uint32_t end = nodes_[node].subtree_end;
    while (child < end && nodes_[child].byte != byte) child = nodes_[child].subtree_end;
    if (child >= end) break;
    node = child;
    ++matched;
  }
  return ids;
}

size_t TokenTrie::memory_bytes() const {
  return nodes_.capacity() * sizeof(TokenTrieNode) + token_ids_.capacity() * sizeof(TokenId) +
         (parents_.capacity() + subtree_byte_set_.capacity()) * sizeof(uint32_t) +
         subtree_height_.capacity() * sizeof(uint16_t) + node_of_token_.capacity() * sizeof(uint32_t) +
         utf8_clean_.capacity() * sizeof(uint64_t) +
         byte_sets_.capacity() * sizeof(TrieByteSet);
}

std::string TokenTrie::Dump(uint32_t max_nodes) const {
  std::string out;
  const uint32_t count = std::min<uint32_t>(max_nodes, static_cast<uint32_t>(nodes_.size()));
  for (uint32_t i = 0; i < count; ++i) {
    const TokenTrieNode& node = nodes_[i];
    const char byte = static_cast<char>(node.byte);
    absl::StrAppend(&out, i, " depth=", node.depth, " byte=",
                    i == kRoot ? std::string("root") : absl::CHexEscape(absl::string_view(&byte, 1)),
                    " end=", node.subtree_end);
    if (node.token_count > 0) absl::StrAppend(&out, " ids=", absl::StrJoin(TokensAt(i), ","));
    out.push_back('\n');
  }
  return out;
}

}  // namespace zapgram::masks
