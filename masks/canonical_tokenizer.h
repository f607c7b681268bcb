// CanonicalTokenizer: a tokenizer.json's own encoding of text into ids, and
// the canonical fast-forward tokens of forced text.
//
// Encoding follows Hugging Face `tokenizers` for the two model families of
// the reference files (anything else is kUnimplemented at load):
//   1. Added tokens: the text is cut at every occurrence of an added token's
//      content (special or not), leftmost-longest, before anything else;
//      each occurrence is its id. (lstrip/rstrip/single_word and normalized
//      added tokens are refused.)
//   2. Normalizer: none, NFC (Qwen 2.5, with ICU), or Replace(" " -> "▁")
//      (Gemma 3).
//   3. Pre-tokenizer: byte-level BPE splits with its regex
//      (masks/pretokenize.h; the ByteLevel step only renames bytes); Gemma's
//      Split(" ") runs after the normalizer has removed every space, so the
//      whole segment is one piece.
//   4. BPE on each piece: start from single bytes (byte-level) or single
//      characters (SentencePiece style; a character outside the vocabulary
//      becomes its `<0xNN>` byte tokens), then repeatedly apply the merge of
//      lowest rank, the leftmost among equals (HF's Word::merge_all, a heap
//      of (rank, position) whose stale entries are skipped). With
//      `ignore_merges` (Llama 3) a piece that is itself a vocabulary entry
//      is that entry.
// The merges are read only here: a Vocabulary never loads them, and the
// matcher builds this on the first fast-forward call
// (Vocabulary::SharedCanonicalTokenizer), ~0.5-2 s for the reference files.
//
// Fast-forward tokens. The grammar forces bytes F; the text that follows is
// F + S for a continuation S we do not know. We look for the largest cut p
// such that for EVERY S, encode(F + S) = encode(F[0, p)) ++ encode(rest):
// then encode(F[0, p)) are tokens any canonical continuation starts with.
// (llguidance's docs/fast_forward.md states the problem: forcing `order`
// when `orderId` is one token distorts the model; llguidance drops up to
// four final tokens when a token spans the end. Here the cut is proven.)
// A cut p, within the longest valid-UTF-8 prefix H of F, is safe when:
//   - added tokens: no added content can occur across p (starting before p
//     and matching H past p, or all of H past its start and going on), and
//     no added content occurs in H before p (H is cut at the first one);
//   - NFC: H[0, p) is NFC and normalization cannot join it to what
//     follows (ICU's quick check and normalization boundaries);
//   - byte-level BPE: p ends a *stable* piece of H (pretokenize.h): pieces
//     are encoded alone, and stable pieces are the same whatever follows;
//   - SentencePiece BPE (one piece): no vocabulary entry can span p (start
//     before p, match the normalized H past p, or all of it and go on).
//     Every merge yields a vocabulary entry, so no merge ever joins the two
//     sides; each side's merges then run in the same order as alone (the
//     heap's order restricted to one side does not see the other), so the
//     left side's tokens are those of F[0, p) alone.
// Conservative by construction: every S is assumed possible, not only those
// the grammar allows.
//
// Thread safety: immutable after loading. Tests:
// tests/masks/canonical_tokenizer_test.cc (the encoder against the traces'
// Hugging Face ids for Llama 3, Qwen 2.5 and Gemma 3; fast-forward tokens a
// prefix of the remainder's encoding at every forced state of MaskBench and
// json-docs documents).
#ifndef ZAPGRAM_MASKS_CANONICAL_TOKENIZER_H_
#define ZAPGRAM_MASKS_CANONICAL_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "masks/pretokenize.h"
#include "masks/vocabulary.h"

namespace zapgram::masks {

class CanonicalTokenizer {
 public:
  // Reads `path` / the file's text. kUnimplemented for a model, normalizer,
  // pre-tokenizer or added-token option outside the file comment's list;
  // kInvalidArgument for malformed merges or vocabulary entries.
  static absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> LoadFromFile(const std::string& path);
  static absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> LoadFromJson(std::string_view json_text,
                                                                                std::string_view source_name);

  // The tokenizer's ids for `text` (no special tokens added). kInvalidArgument
  // when `text` is not valid UTF-8 (HF tokenizers take strings).
  absl::StatusOr<std::vector<TokenId>> Encode(std::string_view text) const;

  // The ids every canonical encoding of `forced` + anything starts with (the
  // file comment's rule); their bytes are a prefix of `forced`.
  std::vector<TokenId> FastForwardTokens(std::string_view forced) const;

  // The bytes of an id as the text spells them ("" for ids it lacks).
  std::string_view token_bytes(TokenId id) const;

 private:
  friend class CanonicalTokenizerLoader;
  CanonicalTokenizer() = default;

  enum class Model : uint8_t { kByteLevelBpe, kSentencePieceBpe };
  struct Merge {
    uint32_t rank;
    TokenId merged;
  };
  static uint64_t PairKey(TokenId left, TokenId right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }

  // Text cut at added-token occurrences: [begin, end) spans, `id` >= 0 for
  // an added token, -1 for text to encode.
  struct Segment {
    size_t begin, end;
    TokenId id;
  };
  std::vector<Segment> SplitAddedTokens(std::string_view text) const;
  // Where an added content matching at `at` ends (longest), 0 when none.
  size_t AddedMatchEnd(std::string_view text, size_t at) const;
  // BPE of one piece in model space (bytes / normalized text), appended.
  void EncodePiece(std::string_view piece, std::vector<TokenId>* out) const;
  void EncodeNormalized(std::string_view segment, std::vector<TokenId>* out) const;
  std::string Normalize(std::string_view text) const;
  // A set of strings (vocabulary pieces, added contents) and what may span
  // a cut. Reach(text, at): the largest end of an entry matching `text` at
  // `at` (`at` when none); SIZE_MAX when an entry could run past the end
  // of `text` (it starts with text[at..] and is longer).
  struct Entries {
    absl::flat_hash_map<std::string, TokenId> ids;
    std::vector<std::string> sorted;
    size_t max_length = 0;
    void Finish();
    size_t Reach(std::string_view text, size_t at) const;
  };
  // The largest cut of h (a byte offset at a character boundary) that the
  // SentencePiece rule allows in normalized(h) and `added_safe` allows.
  size_t LargestSentencePieceCut(std::string_view h, const std::vector<bool>& added_safe) const;

  Model model_ = Model::kByteLevelBpe;
  SplitRegex split_;
  bool nfc_ = false;
  bool ignore_merges_ = false;
  std::string source_;
  // Model space: a piece's raw bytes (byte-level) or its normalized text
  // (SentencePiece, with "▁" for spaces); byte-fallback entries excluded.
  Entries pieces_;
  std::vector<std::string> id_bytes_;  // decoded bytes of each id
  absl::flat_hash_map<uint64_t, Merge> merges_;
  TokenId byte_ids_[256];  // byte-level: each byte's id; SentencePiece: <0xNN>
  TokenId unk_id_ = -1;
  // Added tokens by content (raw text).
  Entries added_;
  bool added_first_byte_[256] = {};
};

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_CANONICAL_TOKENIZER_H_
