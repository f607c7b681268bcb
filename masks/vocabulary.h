// Vocabulary: what every token id of a Hugging Face tokenizer means as bytes.
//
// A grammar is written over bytes, a model emits token ids; the vocabulary is
// the bridge. It is loaded once from a `tokenizer.json` and never changes.
//
// How a token string becomes bytes is what the tokenizer's *decoder* does to
// one token; we read that from the file (never from its name):
//   - byte-level BPE (GPT-2 style; Llama 3, Qwen 2.5): `decoder` is ByteLevel
//     (alone or inside a Sequence), or, without a decoder, `pre_tokenizer`
//     contains ByteLevel. Every character of a token stands for one byte
//     through GPT-2's byte<->unicode table (`Ġ` = 0x20, `Ċ` = 0x0A, printable
//     ASCII and most of Latin-1 stand for themselves). As in HF's decoder, a
//     token with a character outside the table keeps its own UTF-8 bytes.
//   - SentencePiece style (Gemma 3, Llama 2): `decoder` is Metaspace, or a
//     Sequence of Replace(`▁` -> " "), ByteFallback, Fuse, Strip. Replace
//     steps run in file order; ByteFallback turns a token spelled exactly
//     `<0xNN>` into the single byte NN (possibly half of a UTF-8 character:
//     the bytes are kept raw, never replaced by U+FFFD). Metaspace's removal of
//     the first token's leading space and a Strip after Fuse act on a whole
//     decoded text, not on a token, so they are not applied here.
//   - plain text: a decoder of Replace/Fuse steps only; the token's UTF-8.
//   Anything else (WordPiece's `##`, CTC, BPEDecoder suffixes, regex Replace,
//   a Strip before Fuse) is refused with kUnimplemented: it would not make the
//   concatenation of token bytes equal the decoded text.
// Added tokens (`added_tokens`) go through the same decoder (as in HF, where
// decoding looks up the added token's content and then runs the decoder); an
// added token's content wins over a `model.vocab` entry with the same id.
//
// Ids: size() = 1 + the largest id in `model.vocab` and `added_tokens`.
// Ids past size() up to padded_size() (the model's embedding rows, often
// rounded up) exist but are "unused": no bytes, never allowed by a mask. An id
// below size() that no entry names is unused too.
//
// Kinds: an id listed in `added_tokens` with `"special": true` is kSpecial
// (never produced by a grammar; EOS only when the grammar accepts); any other
// id with an entry is kNormal (its bytes are text the grammar may produce,
// including non-special added tokens such as Qwen's `<tool_call>`); the rest
// is kUnused.
//
// EOS rule: unless VocabularyOptions::eos_ids is set, the EOS ids are the
// special tokens whose content is one of VocabularyOptions::eos_token_contents
// (default: the end-of-text / end-of-turn markers of common chat models:
// `</s>`, `<eos>`, `<end_of_turn>`, `<|endoftext|>`, `<|end_of_text|>`,
// `<|eot_id|>`, `<|eom_id|>`, `<|im_end|>`, `<|end|>`), sorted by id. The
// list may be empty when the tokenizer has none of them.
//
// Layout: all token bytes live in one buffer; each id has an 8-byte record
// {offset, length, kind, flags} (see TokenRecord), so a 262k vocabulary
// costs 2 MB of records plus its bytes.
//
// Loading streams the JSON through nlohmann's SAX interface: `model.vocab` is
// read straight into a flat arena and `model.merges` is skipped, so no DOM of
// the (up to 500k-entry) vocabulary and merge lists is ever built.
//
// Thread safety: immutable after loading; share freely across threads.
// Tests: tests/masks/vocabulary_test.cc.
#ifndef ZAPGRAM_MASKS_VOCABULARY_H_
#define ZAPGRAM_MASKS_VOCABULARY_H_

#include <cassert>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace zapgram::masks {

using TokenId = int32_t;

enum class TokenKind : uint8_t {
  kNormal = 0,   // bytes the grammar may produce
  kSpecial = 1,  // `added_tokens` entry with "special": true
  kUnused = 2,   // no token at this id (a gap, or padding past size())
};

// How the file's decoder turns a token string into bytes (see the file comment).
enum class DecoderKind : uint8_t {
  kByteLevel,      // GPT-2 byte<->unicode map
  kSentencePiece,  // `▁` -> space, `<0xNN>` byte fallback
  kText,           // the token's UTF-8 (after Replace steps)
};

std::string_view DecoderKindName(DecoderKind kind);

// The default for VocabularyOptions::eos_token_contents.
std::vector<std::string> DefaultEosTokenContents();

struct VocabularyOptions {
  // Larger files are refused before being read. The three reference files are
  // 7–33 MB; the whole file is held in memory while loading.
  uint64_t max_file_bytes = uint64_t{512} << 20;
  // Largest accepted id + 1 (and largest padded_size). 8 bytes of record per id.
  uint32_t max_vocab_size = uint32_t{1} << 24;
  // Nesting depth of JSON arrays/objects accepted anywhere in the file.
  uint32_t max_json_depth = 256;
  // Total ids including padding; 0 = size(). Must be >= size().
  uint32_t padded_size = 0;
  // When set, exactly these ids are EOS (each must be < size()); the rule is off.
  std::optional<std::vector<TokenId>> eos_ids;
  // Contents of the special tokens that count as EOS when eos_ids is unset.
  std::vector<std::string> eos_token_contents = DefaultEosTokenContents();
  // Byte budget of the mask cache shared by every grammar compiled on this
  // vocabulary (masks/mask_cache.h); least recently used masks go first.
  size_t mask_cache_bytes = size_t{128} << 20;
  // Byte budget of the terminal-state token sets kept for grammars compiled
  // later on this vocabulary (masks/token_sets.h); a live grammar keeps the
  // sets it uses whatever this says.
  size_t token_set_cache_bytes = size_t{64} << 20;
};

// One id's entry. 8 bytes, trivially copyable; one per id up to padded_size().
struct TokenRecord {
  uint32_t offset;  // start of the token's bytes in the shared buffer
  uint16_t length;  // byte count (tokens longer than 65535 bytes are refused)
  TokenKind kind;
  uint8_t flags;  // kEosFlag
  static constexpr uint8_t kEosFlag = 1;
};
static_assert(sizeof(TokenRecord) == 8);
static_assert(std::is_trivially_copyable_v<TokenRecord>);

class TokenTrie;
class MaskCache;
class TokenSetStore;
class CanonicalTokenizer;

// HF's ByteLevel decoder on one token string: each character through GPT-2's
// byte<->unicode table, or the string's own UTF-8 when a character has no byte.
std::string ByteLevelTokenBytes(std::string_view token);

class Vocabulary {
 public:
  // Reads and loads `path`. Errors name the path: kNotFound (cannot open),
  // kResourceExhausted (a budget of `options`), kInvalidArgument (bad JSON,
  // missing or mistyped fields, duplicate or out-of-range ids),
  // kUnimplemented (a decoder or model type this loader does not support).
  static absl::StatusOr<Vocabulary> LoadFromFile(const std::string& path,
                                                 const VocabularyOptions& options = {});
  // Same, from the file's text; `source_name` prefixes every error message.
  static absl::StatusOr<Vocabulary> LoadFromJson(std::string_view json_text,
                                                 std::string_view source_name,
                                                 const VocabularyOptions& options = {});

  // A vocabulary given directly (tests, toy models): id i has bytes
  // `tokens[i]`; the ids in `eos_ids` are special EOS tokens (their bytes
  // are ignored); an empty token is kUnused (padding: never allowed). Errors: kInvalidArgument for an out-of-range EOS id or a
  // token longer than 65535 bytes.
  static absl::StatusOr<Vocabulary> FromTokenBytes(const std::vector<std::string>& tokens,
                                                   const std::vector<TokenId>& eos_ids,
                                                   std::string_view source_name = "<tokens>");

  // Ids the tokenizer defines: 1 + its largest id.
  TokenId size() const { return size_; }
  // Ids of the model's output layer, >= size(); ids in [size(), padded_size())
  // are kUnused.
  TokenId padded_size() const { return static_cast<TokenId>(records_.size()); }

  // Precondition for the accessors below: 0 <= id < padded_size() (asserted in
  // debug builds).
  // The token's bytes (empty for kUnused ids). Valid as long as *this lives.
  std::string_view token_bytes(TokenId id) const;
  TokenKind kind(TokenId id) const { return records_[Checked(id)].kind; }
  bool is_eos(TokenId id) const { return (records_[Checked(id)].flags & TokenRecord::kEosFlag) != 0; }
  absl::Span<const TokenRecord> records() const { return records_; }

  // Sorted, no duplicates.
  absl::Span<const TokenId> eos_ids() const { return eos_ids_; }
  DecoderKind decoder_kind() const { return decoder_kind_; }
  // The path or source name the vocabulary was loaded from.
  const std::string& source_name() const { return source_name_; }
  // Number of ids of each kind (over padded_size()).
  int32_t count(TokenKind kind) const;

  // Concatenated bytes of `ids` (any kind). kOutOfRange names the first id
  // outside [0, padded_size()).
  absl::StatusOr<std::string> DecodeTokens(absl::Span<const TokenId> ids) const;

  // Heap bytes held (records + token bytes + EOS list).
  size_t memory_bytes() const;

  // The token trie of this vocabulary (masks/token_trie.h), built on first
  // use and then shared by every copy of this vocabulary and every grammar
  // compiled against it (it depends on the tokens only). Thread-safe.
  absl::StatusOr<std::shared_ptr<const TokenTrie>> SharedTrie() const;
  // The mask cache of every grammar compiled against this vocabulary (and
  // its copies), created on first use with the budget of
  // VocabularyOptions::mask_cache_bytes. Thread-safe.
  std::shared_ptr<MaskCache> SharedMaskCache() const;
  // The terminal-state token sets shared by every grammar compiled against
  // this vocabulary (masks/token_sets.h), with the budget of
  // VocabularyOptions::token_set_cache_bytes. Thread-safe.
  std::shared_ptr<TokenSetStore> SharedTokenSets() const;
  // The tokenizer's own encoder (masks/canonical_tokenizer.h), read again
  // from the tokenizer.json this vocabulary was loaded from on the first
  // call (its merges are not loaded with the vocabulary: ~0.5-2 s), then
  // shared by every copy. kFailedPrecondition for a vocabulary not loaded
  // from a file (LoadFromJson, FromTokenBytes); the load's error otherwise
  // (kept: later calls return it again). Thread-safe.
  absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> SharedCanonicalTokenizer() const;

  // What a mask depends on, as a 64-bit XXH64 (grammar/checksum.h): per id
  // in [0, padded_size()) its kind, EOS flag and bytes, then size() and
  // padded_size(). Equal vocabularies (the same tokenizer.json with the same
  // options, or the same token list) have equal fingerprints however they
  // were loaded; a persistent compiled grammar (api/grammar_serializer.cc)
  // names the fingerprint it was compiled for. Computed on the first call
  // (~1 ms per 128k ids), then shared by every copy. Thread-safe.
  uint64_t Fingerprint() const;

 private:
  Vocabulary() = default;
  size_t Checked(TokenId id) const {
    assert(id >= 0 && static_cast<size_t>(id) < records_.size());
    return static_cast<size_t>(id);
  }

  std::string source_name_;
  std::string bytes_;                 // every token's bytes, back to back
  std::vector<TokenRecord> records_;  // indexed by id, padded_size() entries
  std::vector<TokenId> eos_ids_;
  TokenId size_ = 0;
  DecoderKind decoder_kind_ = DecoderKind::kText;
  // What every copy of this vocabulary shares, built on first use.
  struct TrieSlot {
    std::mutex mu;
    std::shared_ptr<const TokenTrie> trie;
    std::shared_ptr<MaskCache> mask_cache;
    size_t mask_cache_bytes = VocabularyOptions().mask_cache_bytes;
    std::shared_ptr<TokenSetStore> token_sets;
    size_t token_set_cache_bytes = VocabularyOptions().token_set_cache_bytes;
    std::string tokenizer_path;  // LoadFromFile's path, for the canonical tokenizer
    std::mutex canonical_mu;     // its own lock: loading takes seconds
    bool canonical_loaded = false;
    absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> canonical;
    std::once_flag fingerprint_once;
    uint64_t fingerprint = 0;
  };
  std::shared_ptr<TrieSlot> trie_slot_ = std::make_shared<TrieSlot>();

  friend class VocabularyLoader;
};

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_VOCABULARY_H_
