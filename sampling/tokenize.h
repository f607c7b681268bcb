// TextEncoder: text -> token ids, the direction zapgram's Vocabulary lacks.
//
// The n-gram model (sampling/ngram_model.h) learns from text, so it needs the
// tokenizer's encoder. This is a BPE encoder read from a Hugging Face
// `tokenizer.json` (model.vocab + model.merges), in one of two front ends:
//   - byte-level BPE (Llama 3, Qwen 2.5): the text is cut into pieces by the
//     pre-tokenizer regex, each piece's bytes start as one symbol per byte
//     (GPT-2's byte<->unicode table spells them), and merges apply by rank.
//     With `ignore_merges` (Llama 3) a piece that is itself a vocabulary entry
//     is emitted whole. Qwen's NFC normalizer runs first (ICU).
//   - SentencePiece-style BPE (Gemma 3): spaces become `▁`, the whole text is
//     one piece, symbols start as characters (a character missing from the
//     vocabulary falls back to its `<0xNN>` byte tokens), merges by rank.
// Anything else (other pre-tokenizers, WordPiece, Unigram) is refused with
// kUnimplemented rather than approximated.
//
// The pre-tokenizer regex is not run through a regex engine (its `(?!\S)`
// lookahead is outside RE2): the two patterns in use are recognised by their
// exact text and executed by a hand-written splitter (tokenize.cc explains
// each alternative). \p{L}, \p{N} and \s come from ICU (general categories and
// the White_Space property), as in the Rust regex engines HF uses.
//
// Added tokens: as in HF, the non-special `added_tokens` (Gemma's HTML tags
// and tab runs, Qwen's <tool_call>) are cut out of the raw text first
// (leftmost, longest) and emitted as their ids; the text between them is
// encoded as above. Special tokens written literally in the text are encoded
// as plain text (HF would emit the special id; for training an LM on
// documents, plain text is what we want). All added tokens in use have
// normalized/lstrip/rstrip/single_word false; other flags are refused.
//
// Measured difference: the U+0085 (NEL) is not \s for HF's regex engine (it
// splits "\x85@" as punctuation), although it has the White_Space property;
// we follow HF. Bytes that are not valid UTF-8 are treated as one "other"
// character each (HF takes only valid strings).
//
// Thread safety: immutable after Load except the piece cache, so one encoder
// per thread. Tests: tests/sampling/language_model_test.cc (hand-made BPE
// vocabularies; exact match against the llama3 traces).
#ifndef ZAPGRAM_SAMPLING_TOKENIZE_H_
#define ZAPGRAM_SAMPLING_TOKENIZE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace zapgram::sampling {

class TextEncoder {
 public:
  // Reads `tokenizer.json` at `path`. Errors name the path and the field.
  static absl::StatusOr<TextEncoder> Load(const std::string& path);
  // The same from the file's content (`origin` names it in errors).
  static absl::StatusOr<TextEncoder> FromJson(std::string_view json_text, std::string_view origin);

  // The token ids of `text` (no special tokens added).
  std::vector<int32_t> Encode(std::string_view text);

  // The pieces the pre-tokenizer cuts `text` into (byte-level front end;
  // the whole text for SentencePiece style). Exposed for tests.
  std::vector<std::string_view> PreTokenize(std::string_view text) const;

 private:
  enum class Style : uint8_t { kByteLevel, kSentencePiece };
  struct Merge {
    int32_t rank;
    int32_t merged_id;
  };
  TextEncoder() = default;
  void EncodeSegment(std::string_view text, std::vector<int32_t>* out);
  void EncodePiece(std::string_view piece, std::vector<int32_t>* out);
  void MergeSymbols(std::vector<int32_t>* symbols) const;
  static uint64_t PairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }

  Style style_ = Style::kByteLevel;
  bool ignore_merges_ = false;
  bool nfc_ = false;
  int max_digit_run_ = 3;  // \p{N}{1,3} (Llama 3) or \p{N} (Qwen 2.5)
  // Vocabulary entries by their bytes (byte level) or UTF-8 text (SentencePiece).
  absl::flat_hash_map<std::string, int32_t> ids_;
  int32_t byte_ids_[256] = {};  // byte level: id of each single byte; SP: of <0xNN> (-1 if none)
  absl::flat_hash_map<uint64_t, Merge> merges_;
  absl::flat_hash_map<std::string, std::vector<int32_t>> piece_cache_;
  // Non-special added tokens: content -> id, their lengths (longest first),
  // and which bytes start one.
  absl::flat_hash_map<std::string, int32_t> added_ids_;
  std::vector<size_t> added_lengths_;
  bool added_first_byte_[256] = {};
};

}  // namespace zapgram::sampling

#endif  // ZAPGRAM_SAMPLING_TOKENIZE_H_
