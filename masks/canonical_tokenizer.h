// CanonicalTokenizer: a tokenizer.json's own encoding of text into ids, and
// the canonical fast-forward tokens of forced text.
//
// The one text -> ids encoder of zapgram. It serves two callers:
//   - the matcher's fast-forward tokens (below) and everything that must
//     reproduce Hugging Face's encode exactly (EncodeOptions{}, the default);
//   - documents: the n-gram model's training text (`zapgram ngram train`)
//     and `zapgram trace` files (kDocumentEncoding: special tokens written
//     in the text are plain text, any bytes are encodable, and a PieceCache
//     remembers the pieces already encoded).
//
// Encoding follows Hugging Face `tokenizers` for the two model families of
// the reference files (anything else is kUnimplemented at load):
//   1. Added tokens: the text is cut at every occurrence of an added token's
//      content (special or not; non-special only with
//      SpecialTokens::kAsText), leftmost-longest, before anything else;
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
//      of (rank, position) whose stale entries are skipped; O(n log n) per
//      piece, so a long run of spaces or a whole SentencePiece document
//      stays cheap). A pair listed twice in model.merges keeps its last
//      rank, as HF's map built from the list does. With `ignore_merges`
//      (Llama 3) a piece that is itself a vocabulary entry is that entry.
// Invalid UTF-8 (InvalidUtf8::kAsCharacters only; HF takes strings): each
// byte that does not start a valid character is a character of its own, of
// no Unicode class: punctuation to the pre-tokenizer, left alone by NFC
// (which normalizes the valid runs between such bytes), its `<0xNN>` token
// in SentencePiece style. Byte-level BPE then spells every byte string back
// exactly.
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
// Thread safety: immutable after loading; a PieceCache is one thread's.
// Tests: tests/masks/canonical_tokenizer_test.cc (the encoder against the
// traces' Hugging Face ids for Llama 3, Qwen 2.5 and Gemma 3, with and
// without kDocumentEncoding and a PieceCache; hand-made BPE vocabularies for
// the merge order and ignore_merges; special tokens as ids or as text;
// invalid UTF-8; fast-forward tokens a prefix of the remainder's encoding at
// every forced state of MaskBench and json-docs documents).
#ifndef ZAPGRAM_MASKS_CANONICAL_TOKENIZER_H_
#define ZAPGRAM_MASKS_CANONICAL_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "masks/pretokenize.h"
#include "masks/vocabulary.h"

namespace zapgram::masks {

// What Encode does with text that Hugging Face's encode would read
// differently or not take at all. The default is HF's encode.
struct EncodeOptions {
  // Special added tokens (`"special": true`, e.g. Llama 3's <|eot_id|>)
  // written in the text:
  //   kAsIds   each occurrence is the token's id (HF's encode; the
  //            fast-forward rule assumes it);
  //   kAsText  encoded like the characters around them: a document that
  //            mentions "<|eot_id|>" is text that spells it, not an end of
  //            turn (what an n-gram model trained on documents should see).
  // Non-special added tokens (Qwen's <tool_call>, Gemma's HTML tags) are
  // their ids either way.
  enum class SpecialTokens : uint8_t { kAsIds, kAsText };
  SpecialTokens special_tokens = SpecialTokens::kAsIds;
  // Text that is not valid UTF-8:
  //   kRefuse        kInvalidArgument;
  //   kAsCharacters  each invalid byte a character of its own (file
  //                  comment), so every file has an encoding.
  enum class InvalidUtf8 : uint8_t { kRefuse, kAsCharacters };
  InvalidUtf8 invalid_utf8 = InvalidUtf8::kRefuse;
};

// Documents (n-gram training text, `zapgram trace` files): special tokens
// as text, any bytes.
inline constexpr EncodeOptions kDocumentEncoding = {EncodeOptions::SpecialTokens::kAsText,
                                                    EncodeOptions::InvalidUtf8::kAsCharacters};

// Byte-level pieces already encoded, remembered across Encode calls: text
// repeats its words and punctuation runs, so once a few hundred KB have been
// seen most pieces are found here instead of merged again (zapgram ngram
// train, zapgram trace; the speed figures are in perf/encode_speed.cc).
// Holds at most `max_entries` pieces (a hash-map slot, the piece and its ids
// each); later new pieces are encoded but not kept. SentencePiece-style
// tokenizers encode a whole segment as one piece and do not use it. A cache belongs to the tokenizer
// it was last used with: handed to another, it forgets what it held.
// Not thread-safe: one per thread (the tokenizer itself is shared).
class PieceCache {
 public:
  static constexpr size_t kDefaultMaxEntries = size_t{1} << 20;
  explicit PieceCache(size_t max_entries = kDefaultMaxEntries) : max_entries_(max_entries) {}

  size_t size() const { return ids_.size(); }

 private:
  friend class CanonicalTokenizer;
  uint64_t tokenizer_serial_ = 0;  // CanonicalTokenizer::serial_ of the owner, 0 for none
  size_t max_entries_;
  absl::flat_hash_map<std::string, std::vector<TokenId>> ids_;
};

class CanonicalTokenizer {
 public:
  // Reads `path` / the file's text. kUnimplemented for a model, normalizer,
  // pre-tokenizer or added-token option outside the file comment's list;
  // kInvalidArgument for malformed merges or vocabulary entries.
  static absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> LoadFromFile(const std::string& path);
  static absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> LoadFromJson(std::string_view json_text,
                                                                                std::string_view source_name);

  // The tokenizer's ids for `text` (no special tokens added), read as
  // `options` say. kInvalidArgument when `text` is not valid UTF-8 and
  // options.invalid_utf8 is kRefuse (HF tokenizers take strings); no other
  // error. `cache`, when given, makes repeated pieces cheaper and never
  // changes the ids.
  absl::StatusOr<std::vector<TokenId>> Encode(std::string_view text, const EncodeOptions& options = {},
                                              PieceCache* cache = nullptr) const;

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
  // `special_as_text`: special tokens are not cut (SpecialTokens::kAsText).
  std::vector<Segment> SplitAddedTokens(std::string_view text, bool special_as_text) const;
  // Where an added content matching at `at` ends (longest), 0 when none;
  // with `special_as_text`, among the non-special contents only.
  size_t AddedMatchEnd(std::string_view text, size_t at, bool special_as_text = false) const;
  // BPE of one piece in model space (bytes / normalized text), appended;
  // through `cache` when given (byte-level only).
  void EncodePiece(std::string_view piece, std::vector<TokenId>* out, PieceCache* cache = nullptr) const;
  void MergePiece(std::string_view piece, std::vector<TokenId>* out) const;
  void EncodeNormalized(std::string_view segment, std::vector<TokenId>* out, PieceCache* cache = nullptr) const;
  // The normalizer's output; invalid UTF-8 bytes pass through NFC unchanged.
  std::string Normalize(std::string_view text) const;
  // A set of strings (vocabulary pieces, added contents) and what may span
  // a cut. Reach(text, at): the largest end of an entry matching `text` at
  // `at` (`at` when none); SIZE_MAX when an entry could run past the end
  // of `text` (it starts with text[at..] and is longer).
  struct Entries {
    absl::flat_hash_map<std::string, TokenId> ids;
    std::vector<std::string> sorted;
    size_t max_length = 0;
    std::vector<size_t> lengths;  // the entries' lengths, each once, longest first
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
  // Added tokens by content (raw text); the special ones' ids.
  Entries added_;
  absl::flat_hash_set<TokenId> special_ids_;
  bool added_first_byte_[256] = {};
  // Tells PieceCaches apart from another tokenizer's (unique per load, > 0).
  uint64_t serial_ = 0;
};

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_CANONICAL_TOKENIZER_H_
