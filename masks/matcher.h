// Token masks: which tokens of a vocabulary keep the text inside the grammar.
//
// A CompiledGrammar joins a lowered grammar (parser/flat_grammar.h) with a
// vocabulary (masks/vocabulary.h) and its token trie (masks/token_trie.h).
// It is immutable and may be shared by any number of threads; each sequence
// being decoded has its own Matcher.
//
// Mask computation walks the token trie depth first with the recognizer's
// speculative Push/Pop: a node whose byte the recognizer refuses is a
// minimal rejected prefix, and its whole subtree (every token starting with
// those bytes) is rejected in one step — a true prefix test, no token is
// ever checked twice. Tokens ending at an accepted node are allowed. EOS is
// allowed exactly when the text so far is a sentence; special and unused ids
// never are. The rejected nodes of the last mask are kept for samplers
// (sampling/: CARS records them as invalid prefixes).
//
// Accepting a token feeds its bytes (with pruning, parser/recognizer.h);
// Rollback undoes whole tokens within the recognizer's rollback budget.
//
// Tests: tests/masks/matcher_test.cc (against a per-token brute force).
#ifndef ZAPGRAM_MASKS_MATCHER_H_
#define ZAPGRAM_MASKS_MATCHER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "masks/token_trie.h"
#include "masks/vocabulary.h"
#include "parser/flat_grammar.h"
#include "parser/recognizer.h"
#include "zapgram/limits.h"

namespace zapgram::masks {

class CompiledGrammar {
 public:
  // `grammar` and `vocabulary` are shared, not copied.
  static absl::StatusOr<std::shared_ptr<const CompiledGrammar>> Build(
      std::shared_ptr<const parser::FlatGrammar> grammar,
      std::shared_ptr<const Vocabulary> vocabulary);

  const parser::FlatGrammar& grammar() const { return *grammar_; }
  const Vocabulary& vocabulary() const { return *vocabulary_; }
  const TokenTrie& trie() const { return trie_; }
  // uint32 words of a mask: ceil(padded_size / 32).
  size_t mask_words() const { return (static_cast<size_t>(vocabulary_->padded_size()) + 31) / 32; }

 private:
  CompiledGrammar(std::shared_ptr<const parser::FlatGrammar> grammar,
                  std::shared_ptr<const Vocabulary> vocabulary, TokenTrie trie)
      : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)), trie_(std::move(trie)) {}
  std::shared_ptr<const parser::FlatGrammar> grammar_;
  std::shared_ptr<const Vocabulary> vocabulary_;
  TokenTrie trie_;
};

struct MatcherOptions {
  // Pruning, budgets; max_rollback counts *bytes* here (the recognizer's
  // unit): Rollback(n tokens) works while their bytes fit.
  RecognizerOptions recognizer{.pruning = true, .max_rollback = 512, .limits = {}};
};

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const CompiledGrammar> grammar, const MatcherOptions& options = {});

  // Fills `words` (mask_words() of them) and returns how many ids are allowed.
  // On a budget error the mask is incomplete: status() says so.
  size_t ComputeMask(uint32_t* words);
  // Feeds the token's bytes; false (state unchanged) when it is not allowed.
  // EOS is accepted when IsAccepting(), and finishes the matcher.
  bool AcceptToken(TokenId id);
  // Feeds bytes; all or nothing.
  bool AcceptBytes(std::string_view bytes);
  // Undoes the last n accepted tokens (and byte runs given to AcceptBytes,
  // each counting as one); false (nothing undone) beyond the rollback budget.
  bool Rollback(size_t n);
  void Reset();

  bool IsAccepting() const;  // the text so far is a sentence
  bool IsFinished() const { return finished_; }  // EOS accepted
  // Bytes the grammar forces next (the longest run with one possible byte
  // each, stopping where the text is a sentence), for jump-forward decoding.
  std::string ForcedBytes();
  // How many leading tokens of `draft` would be accepted in sequence; the
  // state does not change.
  size_t ValidateTokens(absl::Span<const TokenId> draft);

  // Of the last ComputeMask: trie nodes rejected (minimal rejected prefixes).
  const std::vector<uint32_t>& last_rejected_nodes() const { return rejected_nodes_; }
  std::vector<std::string> LastRejectedPrefixes() const;
  // Normal ids rejected by the last mask (every token under a rejected node).
  std::vector<TokenId> LastRejectedTokens() const;

  const absl::Status& status() const { return recognizer_.status(); }
  const CompiledGrammar& grammar() const { return *grammar_; }
  size_t position() const { return recognizer_.Position(); }
  size_t retained_items() const { return recognizer_.RetainedItems(); }

 private:
  // Pushes `bytes` speculatively; returns how many were taken (all pushed
  // sets stay: the caller pops them).
  size_t PushBytes(std::string_view bytes);
  void PopBytes(size_t n);

  std::shared_ptr<const CompiledGrammar> grammar_;
  parser::Recognizer recognizer_;
  std::vector<uint32_t> history_;  // bytes of each accepted token or byte run
  bool finished_ = false;
  std::vector<uint32_t> rejected_nodes_;
};

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_MATCHER_H_
