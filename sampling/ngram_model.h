// NgramModel: a token n-gram language model with interpolated Kneser-Ney
// smoothing, trained on token sequences (text through the tokenizer's
// encoder as documents: masks/canonical_tokenizer.h, kDocumentEncoding),
// saved to and loaded from a versioned binary file.
//
// Model. Order N: the next token depends on the last N-1 tokens. Every
// document is read as [S, t1, ..., tn, EOS], where S is a start marker (id V,
// outside the vocabulary; it only ever appears in contexts) and EOS is the
// tokenizer's end-of-text id, so the model learns where documents end. For a
// context h (the last k-1 tokens, oldest first) and a token w:
//   P_k(w | h) = max(a(h w) - D_k, 0) / T(h) + D_k * types(h) / T(h) * P_{k-1}(w | h')
// where h' drops h's oldest token, T(h) = sum_w a(h w), types(h) = number of
// w with a(h w) > 0, and the recursion ends in
//   P_0(w) = 1 / V          (uniform: every id keeps a non-zero probability).
// When h never occurred in training, P_k(w | h) = P_{k-1}(w | h').
// The counts a() are Kneser-Ney's: the raw count for n-grams of the highest
// order and for n-grams that start at S (nothing can precede them), else the
// number of distinct tokens (S included) seen right before the n-gram. The
// discount D_k per order is n1 / (n1 + 2 n2) over that order's counts a()
// (Ney, Essen & Kneser 1994), clamped to [0.05, 0.95], unless fixed by the
// training options. The start of a document uses the contexts that fit:
// before t1 only [S], before t2 only [S, t1] (if N >= 3), and so on.
//
// Storage (sparse). Contexts form a trie keyed by the most recent token first
// (so one walk from the root finds the contexts of every order): a hash map
// (parent context, token) -> context id, and per context its count total and
// a token-sorted run of (token, a) entries in one flat array. NextLogProbs
// fills the dense vector in O(V + the entries of the N contexts used): the
// interpolation unrolls into (product of the back-off weights) / V plus, per
// order, each entry's discounted count times the back-off weights above it;
// the V-sized part is one fill with a single logarithm, and only tokens with
// entries take a logarithm of their own (50-90 us per call at V = 128k on
// the study models).
//
// File format (version 1, little-endian):
//   "ZGNGRAM\0"  u32 version  u32 order  i32 vocab_size  i32 eos_id
//   u64 contexts  u64 entries  f64 discount[order]
//   per context: u32 parent (0xFFFFFFFF for the root, context 0), i32 token,
//                u32 entry count
//   per entry:   i32 token, u32 count
//   u64 FNV-1a-64 checksum of all preceding bytes
// Loading checks every field (sizes against the file length, parents before
// children, depths below the order, sorted entries, ids in range, the
// checksum) and returns kDataLoss / kInvalidArgument naming the offset or the
// field; it never reads out of bounds.
//
// Not thread-safe (NextLogProbs reuses a scratch buffer): one model per
// sampling thread. Tests: tests/sampling/language_model_test.cc (hand-computed
// probabilities, normalisation on random prefixes, file round trip, corrupt
// files), tests/cli/ngram_cli_test.cc (`zapgram ngram train`).
#ifndef ZAPGRAM_SAMPLING_NGRAM_MODEL_H_
#define ZAPGRAM_SAMPLING_NGRAM_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampling/language_model.h"

namespace zapgram::sampling {

struct NgramOptions {
  int order = 3;  // N >= 1; contexts of up to N-1 tokens
  int32_t vocab_size = 0;  // V: ids of the output layer (Vocabulary::padded_size())
  int32_t eos_id = -1;     // appended to every document; in [0, V)
  // When set, this discount for every order instead of the n1/(n1+2 n2) estimate.
  std::optional<double> discount;
};

inline constexpr int kMaxNgramOrder = 16;

// How a training file is cut into documents (each gets its own S ... EOS):
//   kWhole         the file is one document (none if empty);
//   kPerLine       each non-empty line, without its newline (and without a
//                  trailing \r);
//   kPerParagraph  each block of non-empty lines between empty lines, from
//                  its first byte through the newline of its last line.
enum class DocumentSplit { kWhole, kPerLine, kPerParagraph };
std::vector<std::string_view> SplitDocuments(std::string_view text, DocumentSplit split);

class NgramModel;

// Accumulates the n-gram counts of documents; Build() turns them into a model.
class NgramCounter {
 public:
  // Checks the options (order in [1, 16], V >= 1, EOS in [0, V), discount in (0, 1]).
  static absl::StatusOr<NgramCounter> Create(const NgramOptions& options);
  // One document (EOS is appended here; do not include it). Ids in [0, V).
  absl::Status AddDocument(absl::Span<const int32_t> tokens);
  int64_t documents() const { return documents_; }
  int64_t tokens() const { return tokens_; }  // EOS included
  absl::StatusOr<std::unique_ptr<NgramModel>> Build() const;

 private:
  explicit NgramCounter(const NgramOptions& options) : options_(options) {}
  NgramOptions options_;
  // The context trie: (parent, token) -> context; context 0 is the empty one.
  absl::flat_hash_map<uint64_t, uint32_t> children_;
  std::vector<uint32_t> parent_;
  std::vector<int32_t> token_;
  // Raw counts of (context, next token).
  absl::flat_hash_map<uint64_t, uint64_t> counts_;
  int64_t documents_ = 0;
  int64_t tokens_ = 0;
};

class NgramModel final : public LanguageModel {
 public:
  // Reads a model file (format above). Errors name the path.
  static absl::StatusOr<std::unique_ptr<NgramModel>> Load(const std::string& path);
  // The same from the file's bytes; `origin` names them in errors.
  static absl::StatusOr<std::unique_ptr<NgramModel>> Parse(std::string_view bytes, std::string_view origin);
  std::string Serialize() const;
  absl::Status Save(const std::string& path) const;

  int32_t vocab_size() const override { return vocab_size_; }
  // Prefix ids must lie in [0, V). O(V + entries of the contexts used).
  absl::Status NextLogProbs(absl::Span<const int32_t> prefix, std::vector<float>* logprobs) override;
  // P(token | prefix) in double precision, computed per token by the
  // recursion (for tests); 0 when an id is outside [0, V).
  double Probability(absl::Span<const int32_t> prefix, int32_t token) const;

  int order() const { return order_; }
  int32_t eos_id() const { return eos_id_; }
  double discount(int k) const { return discounts_[k - 1]; }  // k in [1, order]
  size_t num_contexts() const { return parent_.size(); }
  size_t num_entries() const { return entry_token_.size(); }
  size_t MemoryBytes() const;  // the arrays and the context hash map

 private:
  friend class NgramCounter;
  NgramModel() = default;
  static uint64_t ChildKey(uint32_t parent, int32_t token) {
    return (static_cast<uint64_t>(parent) << 32) | static_cast<uint32_t>(token);
  }
  // Contexts of orders 1, 2, ... for `prefix` (context 0 first), as far as trained.
  void ContextChain(absl::Span<const int32_t> prefix, std::vector<uint32_t>* chain) const;
  absl::Status CheckPrefix(absl::Span<const int32_t> prefix) const;
  void BuildIndex();  // children_ and totals_ from the arrays

  int order_ = 1;
  int32_t vocab_size_ = 0;
  int32_t eos_id_ = -1;
  std::vector<double> discounts_;  // per order 1..N
  // Contexts: parent, the token it adds (the oldest of the context), and its
  // entries [first_entry_[c], first_entry_[c + 1]).
  std::vector<uint32_t> parent_;
  std::vector<int32_t> token_;
  std::vector<uint32_t> first_entry_;
  std::vector<uint64_t> totals_;
  std::vector<int32_t> entry_token_;
  std::vector<uint32_t> entry_count_;
  absl::flat_hash_map<uint64_t, uint32_t> children_;
  std::vector<double> scratch_;
  std::vector<uint32_t> chain_scratch_;
};

}  // namespace zapgram::sampling

#endif  // ZAPGRAM_SAMPLING_NGRAM_MODEL_H_
