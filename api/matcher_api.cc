// The public Vocabulary, CompiledGrammar and Matcher: thin wrappers over
// masks/vocabulary.h and masks/matcher.h.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <utility>
#include <vector>

#include "api/grammar_data.h"
#include "absl/strings/str_cat.h"
#include "masks/budget_mask.h"
#include "masks/canonical_tokenizer.h"
#include "masks/draft_tree.h"
#include "masks/matcher.h"
#include "masks/vocabulary.h"
#include "zapgram/matcher.h"

namespace zapgram {

absl::StatusOr<Vocabulary> Vocabulary::Load(const std::string& path,
                                           const VocabularyOptions& options) {
  masks::VocabularyOptions internal_options;
  internal_options.padded_size = options.padded_size;
  internal_options.mask_cache_bytes = options.mask_cache_bytes;
  internal_options.token_set_cache_bytes = options.token_set_cache_bytes;
  if (options.eos_ids.has_value()) {
    internal_options.eos_ids = std::vector<masks::TokenId>(options.eos_ids->begin(),
                                                           options.eos_ids->end());
  }
  absl::StatusOr<masks::Vocabulary> v = masks::Vocabulary::LoadFromFile(path, internal_options);
  if (!v.ok()) return v.status();
  return WithTrie(std::make_shared<const masks::Vocabulary>(*std::move(v)));
}

absl::StatusOr<Vocabulary> Vocabulary::FromTokens(const std::vector<std::string>& tokens,
                                                 const std::vector<int32_t>& eos_ids) {
  absl::StatusOr<masks::Vocabulary> v = masks::Vocabulary::FromTokenBytes(
      tokens, std::vector<masks::TokenId>(eos_ids.begin(), eos_ids.end()));
  if (!v.ok()) return v.status();
  return WithTrie(std::make_shared<const masks::Vocabulary>(*std::move(v)));
}

absl::StatusOr<Vocabulary> Vocabulary::WithTrie(std::shared_ptr<const masks::Vocabulary> impl) {
  // The token trie depends on the tokens only: built here, with the
  // vocabulary (as a tokenizer is loaded once per server), so that no
  // grammar's compile, and no request's first mask, waits for it.
  absl::StatusOr<std::shared_ptr<const masks::TokenTrie>> trie = impl->SharedTrie();
  if (!trie.ok()) return trie.status();
  return Vocabulary(std::move(impl));
}

int32_t Vocabulary::size() const { return impl_->size(); }
int32_t Vocabulary::padded_size() const { return impl_->padded_size(); }
std::vector<int32_t> Vocabulary::eos_ids() const {
  return std::vector<int32_t>(impl_->eos_ids().begin(), impl_->eos_ids().end());
}
std::string_view Vocabulary::token_bytes(int32_t id) const {
  if (id < 0 || id >= impl_->padded_size() || impl_->kind(id) != masks::TokenKind::kNormal) return {};
  return impl_->token_bytes(id);
}
uint64_t Vocabulary::fingerprint() const { return impl_->Fingerprint(); }
bool Vocabulary::is_normal(int32_t id) const {
  return id >= 0 && id < impl_->padded_size() && impl_->kind(id) == masks::TokenKind::kNormal;
}

absl::StatusOr<CompiledGrammar> CompiledGrammar::Compile(const Grammar& grammar,
                                                         const Vocabulary& vocabulary) {
  // The flat grammar lives inside the grammar's shared data; share it, do not copy.
  std::shared_ptr<const parser::FlatGrammar> flat(grammar.shared_data(), &grammar.data().flat);
  absl::StatusOr<std::shared_ptr<const masks::CompiledGrammar>> compiled =
      masks::CompiledGrammar::Build(std::move(flat), vocabulary.impl());
  if (!compiled.ok()) return compiled.status();
  return CompiledGrammar(grammar, vocabulary, *std::move(compiled));
}

size_t CompiledGrammar::mask_words() const { return impl_->mask_words(); }

absl::Span<const uint32_t> CompiledGrammar::token_classes() const { return impl_->token_classes().class_of; }

size_t CompiledGrammar::memory_bytes() const {
  return impl_->memory().own();
}

CompiledGrammar::CacheStats CompiledGrammar::cache_stats() const {
  const masks::MaskCacheStats s = impl_->cache_stats();
  return {s.hits, s.misses, s.entries, s.bytes};
}

Matcher::Matcher(const CompiledGrammar& grammar, const MatcherOptions& options)
    : grammar_(grammar) {
  masks::MatcherOptions internal_options;
  internal_options.recognizer.pruning = options.pruning;
  internal_options.use_cache = options.use_cache;
  internal_options.use_token_sets = options.use_token_sets;
  using Classes = masks::MatcherOptions::TokenClasses;
  internal_options.token_classes =
      options.token_classes == TokenClassUse::kAlways ? Classes::kNow
      // Lark grammars, but those with an Indenter: their classes are
      // byte-class strings (masks/token_classes.h), nearly one per token,
      // which only add the expansion (python: masks 1.6x slower with them).
      : options.token_classes == TokenClassUse::kAuto && grammar.impl()->grammar().lexed() &&
              !grammar.impl()->grammar().lexer->indenter.on()
          ? Classes::kOnceRecurring
          : Classes::kOff;
  internal_options.recognizer.max_rollback = options.max_rollback_bytes;
  internal_options.recognizer.limits = options.limits;
  impl_ = std::make_unique<masks::Matcher>(grammar.impl(), internal_options);
  budget_options_ = options.budget;
  if (std::isfinite(options.default_temperature) && options.default_temperature >= 0.0f) {
    default_temperature_ = options.default_temperature;
  }
}
Matcher::Matcher(const Matcher& other)
    : grammar_(other.grammar_),
      impl_(std::make_unique<masks::Matcher>(*other.impl_)),
      budget_options_(other.budget_options_),
      default_temperature_(other.default_temperature_) {}
Matcher Matcher::Fork() const { return Matcher(*this); }
Matcher::~Matcher() = default;
Matcher::Matcher(Matcher&&) noexcept = default;
Matcher& Matcher::operator=(Matcher&&) noexcept = default;

size_t Matcher::ComputeMask(uint32_t* words) { return impl_->ComputeMask(words); }
size_t Matcher::ComputeMask(uint32_t* words, int64_t tokens_left) {
  if (budget_ == nullptr) budget_ = std::make_shared<masks::BudgetMasker>(budget_options_);
  return budget_->Compute(*impl_, tokens_left, words);
}
void Matcher::ShareBudgetSearch(Matcher& other) {
  if (other.budget_ == nullptr) other.budget_ = std::make_shared<masks::BudgetMasker>(other.budget_options_);
  budget_ = other.budget_;
}
uint64_t Matcher::BudgetMaskInexact() const { return budget_ == nullptr ? 0 : budget_->stats().inexact; }
std::vector<std::pair<std::string, std::string>> Matcher::GetCaptures(bool deduplicate) const {
  return impl_->GetCaptures(deduplicate);
}
std::optional<float> Matcher::GetTemperature() const {
  const float t = impl_->Temperature().value;
  if (t >= 0.0f) return t;
  if (default_temperature_ >= 0.0f) return default_temperature_;
  return std::nullopt;
}
bool Matcher::AcceptToken(int32_t id) { return impl_->AcceptToken(id); }
bool Matcher::AcceptBytes(std::string_view bytes) { return impl_->AcceptBytes(bytes); }
bool Matcher::Rollback(size_t n) { return impl_->Rollback(n); }
void Matcher::Reset() { impl_->Reset(); }
bool Matcher::IsAccepting() const { return impl_->IsAccepting(); }
bool Matcher::IsFinished() const { return impl_->IsFinished(); }
std::string Matcher::ForcedBytes() { return impl_->ForcedBytes(); }

absl::StatusOr<std::vector<int32_t>> Matcher::ComputeFastForwardTokens() {
  absl::StatusOr<std::shared_ptr<const masks::CanonicalTokenizer>> tokenizer =
      grammar_.vocabulary().impl()->SharedCanonicalTokenizer();
  if (!tokenizer.ok()) return tokenizer.status();
  if (impl_->IsFinished()) return std::vector<int32_t>();
  return (*tokenizer)->FastForwardTokens(impl_->ForcedBytes());
}
size_t Matcher::ValidateTokens(absl::Span<const int32_t> draft) { return impl_->ValidateTokens(draft); }
std::vector<std::string> Matcher::LastRejectedPrefixes() const { return impl_->LastRejectedPrefixes(); }
std::vector<int32_t> Matcher::LastRejectedTokens() const { return impl_->LastRejectedTokens(); }
absl::Status Matcher::status() const { return impl_->status(); }

absl::StatusOr<bool> Matcher::TraverseDraftTree(const DraftTree& tree, uint32_t* masks,
                                                absl::Span<float> temperatures,
                                                const DraftTreeOptions& options) const {
  const Deadline deadline = DraftDeadline(std::chrono::steady_clock::now(), options);
  if (absl::Status valid = CheckDraftTree(tree, temperatures, options); !valid.ok()) return valid;
  return WalkDraftTree(tree, masks, temperatures, options, deadline);
}

absl::Status Matcher::CheckDraftTree(const DraftTree& tree, absl::Span<float> temperatures,
                                     const DraftTreeOptions& options) const {
  const size_t n = tree.draft_tokens.size();
  if (absl::Status valid =
          masks::CheckDraftTree({tree.retrieve_next_token, tree.retrieve_next_sibling, tree.draft_tokens});
      !valid.ok()) {
    return valid;
  }
  if (!temperatures.empty() && temperatures.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("temperatures has ", temperatures.size(), " entries for a draft tree of ", n, " nodes"));
  }
  if (options.row_stride != 0 && options.row_stride < grammar_.mask_words() && n > 1) {
    return absl::InvalidArgumentError(absl::StrCat("the mask rows overlap: row_stride ", options.row_stride,
                                                   " words, a mask has ", grammar_.mask_words()));
  }
  return absl::OkStatus();
}

Matcher::Deadline Matcher::DraftDeadline(std::chrono::steady_clock::time_point start,
                                         const DraftTreeOptions& options) {
  if (!(options.time_threshold > 0)) return std::nullopt;
  return start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(std::min(options.time_threshold, 1e9)));
}

absl::StatusOr<bool> Matcher::WalkDraftTree(const DraftTree& tree, uint32_t* masks, absl::Span<float> temperatures,
                                            const DraftTreeOptions& options, Deadline deadline) const {
  // Nodes not visited keep XGrammar's "none"; the walk writes the others'.
  std::fill(temperatures.begin(), temperatures.end(), masks::kNoTemperature);
  masks::DraftWalkOptions walk;
  walk.temperatures = temperatures;
  walk.default_temperature = default_temperature_;
  walk.deadline = deadline;
  walk.terminate_when_accepting = options.terminate_when_accepting;
  const size_t stride = options.row_stride == 0 ? grammar_.mask_words() : options.row_stride;
  const masks::DraftWalkResult result = masks::WalkDraftTree(
      *impl_, {tree.retrieve_next_token, tree.retrieve_next_sibling, tree.draft_tokens}, masks, stride, walk);
  if (!result.status.ok()) return result.status;
  return result.completed;
}

void ComputeMasks(absl::Span<Matcher* const> matchers, uint32_t* words, size_t mask_words,
                  int threads) {
  std::vector<uint32_t*> rows(matchers.size());
  for (size_t k = 0; k < rows.size(); ++k) rows[k] = words + k * mask_words;
  const int workers = static_cast<int>(std::min<size_t>(threads > 0 ? threads : 1, rows.size()));
  BatchMasker(std::max(workers, 1)).Compute(matchers, rows);
}

}  // namespace zapgram
