// CompiledGrammar and Matcher (see matcher.h).
#include "masks/matcher.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pruning/compact.h"

namespace zapgram::masks {

namespace {

// history_ entry of an accepted EOS (it has no bytes).
constexpr uint32_t kEosEntry = 0xFFFFFFFFu;

void SetBit(uint32_t* words, TokenId id) {
  words[static_cast<uint32_t>(id) / 32] |= 1u << (static_cast<uint32_t>(id) % 32);
}

}  // namespace

absl::StatusOr<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::Build(
    std::shared_ptr<const parser::FlatGrammar> grammar,
    std::shared_ptr<const Vocabulary> vocabulary) {
  absl::StatusOr<TokenTrie> trie = TokenTrie::Build(*vocabulary);
  if (!trie.ok()) return trie.status();
  return std::shared_ptr<const CompiledGrammar>(
      new CompiledGrammar(std::move(grammar), std::move(vocabulary), *std::move(trie)));
}

Matcher::Matcher(std::shared_ptr<const CompiledGrammar> grammar, const MatcherOptions& options)
    : grammar_(std::move(grammar)),
      recognizer_(pruning::MakeRecognizer(&grammar_->grammar(), options.recognizer)) {}

size_t Matcher::PushBytes(std::string_view bytes) {
  size_t n = 0;
  for (char c : bytes) {
    if (!recognizer_.Push(static_cast<uint8_t>(c))) break;
    ++n;
  }
  return n;
}

void Matcher::PopBytes(size_t n) {
  for (size_t i = 0; i < n; ++i) recognizer_.Pop();
}

size_t Matcher::ComputeMask(uint32_t* words) {
  const CompiledGrammar& g = *grammar_;
  std::fill(words, words + g.mask_words(), 0u);
  rejected_nodes_.clear();
  if (finished_ || !recognizer_.status().ok()) return 0;
  const TokenTrie& trie = g.trie();
  absl::Span<const TokenTrieNode> nodes = trie.nodes();
  size_t allowed = 0;
  uint32_t depth = 0;  // bytes pushed: the depth of the node on top
  for (uint32_t i = TokenTrie::kRoot + 1; i < nodes.size();) {
    const TokenTrieNode& node = nodes[i];
    for (; depth >= node.depth; --depth) recognizer_.Pop();
    if (!recognizer_.Push(node.byte)) {
      rejected_nodes_.push_back(i);
      i = node.subtree_end;
      continue;
    }
    ++depth;
    for (TokenId id : trie.TokensAt(i)) {
      SetBit(words, id);
      ++allowed;
    }
    ++i;
  }
  PopBytes(depth);
  if (recognizer_.IsAccepting()) {
    for (TokenId id : g.vocabulary().eos_ids()) {
      SetBit(words, id);
      ++allowed;
    }
  }
  return allowed;
}

bool Matcher::AcceptToken(TokenId id) {
  const Vocabulary& vocab = grammar_->vocabulary();
  if (finished_ || id < 0 || id >= vocab.padded_size()) return false;
  if (vocab.is_eos(id)) {
    if (!recognizer_.IsAccepting()) return false;
    finished_ = true;
    history_.push_back(kEosEntry);
    return true;
  }
  if (vocab.kind(id) != TokenKind::kNormal) return false;
  if (!AcceptBytes(vocab.token_bytes(id))) return false;
  return true;
}

bool Matcher::AcceptBytes(std::string_view bytes) {
  if (finished_) return false;
  // Check first without touching the committed state, then feed for real.
  const size_t taken = PushBytes(bytes);
  PopBytes(taken);
  if (taken != bytes.size()) return false;
  for (char c : bytes) {
    if (!recognizer_.Feed(static_cast<uint8_t>(c))) return false;  // a budget ran out
  }
  history_.push_back(static_cast<uint32_t>(bytes.size()));
  return true;
}

bool Matcher::Rollback(size_t n) {
  if (n > history_.size()) return false;
  size_t bytes = 0;
  for (size_t i = history_.size() - n; i < history_.size(); ++i) {
    if (history_[i] != kEosEntry) bytes += history_[i];
  }
  if (!recognizer_.Rollback(bytes)) return false;
  for (size_t i = history_.size() - n; i < history_.size(); ++i) {
    if (history_[i] == kEosEntry) finished_ = false;
  }
  history_.resize(history_.size() - n);
  return true;
}

void Matcher::Reset() {
  recognizer_.Reset();
  history_.clear();
  finished_ = false;
  rejected_nodes_.clear();
}

bool Matcher::IsAccepting() const { return recognizer_.IsAccepting(); }

std::string Matcher::ForcedBytes() {
  std::string forced;
  while (!recognizer_.IsAccepting()) {
    const parser::ByteSet next = recognizer_.NextBytes();
    if (next.count() != 1) break;
    uint8_t byte = 0;
    while (!next.test(byte)) ++byte;
    if (!recognizer_.Push(byte)) break;
    forced.push_back(static_cast<char>(byte));
  }
  PopBytes(forced.size());
  return forced;
}

size_t Matcher::ValidateTokens(absl::Span<const TokenId> draft) {
  const Vocabulary& vocab = grammar_->vocabulary();
  size_t pushed = 0, valid = 0;
  for (TokenId id : draft) {
    if (finished_ || id < 0 || id >= vocab.padded_size()) break;
    if (vocab.is_eos(id)) {
      if (recognizer_.IsAccepting()) ++valid;
      break;  // nothing follows EOS
    }
    if (vocab.kind(id) != TokenKind::kNormal) break;
    const std::string_view bytes = vocab.token_bytes(id);
    const size_t taken = PushBytes(bytes);
    pushed += taken;
    if (taken != bytes.size()) break;
    ++valid;
  }
  PopBytes(pushed);
  return valid;
}

std::vector<std::string> Matcher::LastRejectedPrefixes() const {
  absl::Span<const TokenTrieNode> nodes = grammar_->trie().nodes();
  std::vector<std::string> out;
  for (uint32_t node : rejected_nodes_) {
    // The node's string: walk back to the root through the nearest
    // shallower nodes before it (DFS order).
    std::string prefix(nodes[node].depth, '\0');
    uint32_t depth = nodes[node].depth;
    for (uint32_t i = node + 1; i-- > 0 && depth > 0;) {
      if (nodes[i].depth == depth) {
        prefix[depth - 1] = static_cast<char>(nodes[i].byte);
        --depth;
      }
    }
    out.push_back(std::move(prefix));
  }
  return out;
}

std::vector<TokenId> Matcher::LastRejectedTokens() const {
  const TokenTrie& trie = grammar_->trie();
  std::vector<TokenId> out;
  for (uint32_t node : rejected_nodes_) {
    for (uint32_t i = node; i < trie.nodes()[node].subtree_end; ++i) {
      for (TokenId id : trie.TokensAt(i)) out.push_back(id);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace zapgram::masks
