// TextEncoder (see tokenize.h): loading the BPE tables, the pre-tokenizer
// splitter, and the merge loop.
//
// Merge loop. BPE encodes a piece by starting from its smallest symbols and
// repeatedly merging the adjacent pair whose merge has the lowest rank (its
// index in `model.merges`), the leftmost such pair first, until no adjacent
// pair has a merge. We keep the symbols in a doubly linked list over an array
// and the candidate pairs in a min-heap keyed by (rank, left position); a
// popped candidate is stale when either symbol has changed since it was
// pushed, which we detect by looking the pair up again. O(n log n) per piece,
// so a long run of spaces or a whole SentencePiece document stays cheap.
//
// Pre-tokenizer. Llama 3's Split regex is
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
//   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// (Qwen 2.5: \p{N} instead of \p{N}{1,3}), applied leftmost-first with
// "Isolated" behaviour: every match is a piece. SplitAt below tries the
// alternatives in order at a position and returns the end of the first that
// matches, resolving each alternative's backtracking by hand (the comments
// there give the reasoning). Every character is matched by some alternative
// (\s+, [^\s\p{L}\p{N}]+, \p{L}+ or \p{N} cover all), so there are no gaps.
#include "sampling/tokenize.h"

#include <algorithm>
#include <cstdio>
#include <queue>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "sampling/language_model.h"
#include "unicode/normalizer2.h"
#include "unicode/uchar.h"
#include "unicode/unistr.h"
#include "unicode/utf8.h"

namespace zapgram::sampling {
namespace {

using nlohmann::json;

constexpr std::string_view kLlama3Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwenPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// GPT-2's byte <-> unicode table: printable bytes stand for themselves, the
// other 68 bytes map, in byte order, to U+0100, U+0101, ...
struct ByteLevelTable {
  static constexpr int kChars = 256 + 68;  // code points the table uses
  char32_t byte_to_char[256];
  int16_t char_to_byte[kChars];
  ByteLevelTable() {
    std::fill(std::begin(char_to_byte), std::end(char_to_byte), static_cast<int16_t>(-1));
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
      byte_to_char[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
      char_to_byte[byte_to_char[b]] = static_cast<int16_t>(b);
    }
  }
  // The byte a code point stands for, or -1.
  int ByteOf(char32_t c) const { return c < kChars ? char_to_byte[c] : -1; }
};

const ByteLevelTable& Table() {
  static const ByteLevelTable* table = new ByteLevelTable();
  return *table;
}

// Calls visit(begin, end, c) for each UTF-8 character of `text` (byte range
// [begin, end); c < 0 for a byte that does not start a valid character).
template <typename Visit>
void ForEachChar(std::string_view text, Visit visit) {
  int32_t i = 0;
  const int32_t length = static_cast<int32_t>(text.size());
  while (i < length) {
    const int32_t begin = i;
    UChar32 c;
    U8_NEXT(text.data(), i, length, c);
    visit(begin, i, c);
  }
}

// A byte-level token string (UTF-8 of table characters) as raw bytes; false
// when a character is outside the table.
bool ByteLevelToBytes(std::string_view spelled, std::string* bytes) {
  bytes->clear();
  bool ok = true;
  ForEachChar(spelled, [&](int32_t, int32_t, UChar32 c) {
    const int b = c < 0 ? -1 : Table().ByteOf(static_cast<char32_t>(c));
    if (b < 0) ok = false;
    bytes->push_back(static_cast<char>(b));
  });
  return ok;
}

// Character classes of the pre-tokenizer regex.
struct CharInfo {
  uint32_t begin;  // byte offset
  char32_t c;      // code point; 0xFFFD for an invalid byte
  bool letter, number, space, newline;
  bool other() const { return !letter && !number && !space; }  // [^\s\p{L}\p{N}]
};

std::vector<CharInfo> Classify(std::string_view text) {
  std::vector<CharInfo> chars;
  chars.reserve(text.size());
  ForEachChar(text, [&](int32_t begin, int32_t, UChar32 c) {
    CharInfo info{static_cast<uint32_t>(begin), 0xFFFD, false, false, false, false};
    if (c >= 0) {
      info.c = static_cast<char32_t>(c);
      const int8_t category = u_charType(c);
      info.letter = category == U_UPPERCASE_LETTER || category == U_LOWERCASE_LETTER ||
                    category == U_TITLECASE_LETTER || category == U_MODIFIER_LETTER ||
                    category == U_OTHER_LETTER;
      info.number = category == U_DECIMAL_DIGIT_NUMBER || category == U_LETTER_NUMBER ||
                    category == U_OTHER_NUMBER;
      info.space = u_isUWhiteSpace(c) && c != 0x85;  // see tokenize.h: HF's \s lacks NEL
      info.newline = c == '\r' || c == '\n';
    }
    chars.push_back(info);
  });
  return chars;
}

// Case-insensitive letter for the contraction alternative: ASCII, and the
// long s (U+017F), which case-folds to `s`.
char32_t FoldContraction(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c - 'A' + 'a';
  if (c == 0x17F) return 's';
  return c;
}

// The end (exclusive, in characters) of the regex match starting at `i`.
size_t SplitAt(const std::vector<CharInfo>& s, size_t i, int max_digit_run) {
  const size_t n = s.size();
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
  if (s[i].c == '\'' && i + 1 < n) {
    const char32_t a = FoldContraction(s[i + 1].c);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if (i + 2 < n) {
      const char32_t b = FoldContraction(s[i + 2].c);
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    }
  }
  // [^\r\n\p{L}\p{N}]?\p{L}+ : the optional character is taken only when a
  // letter follows it; without it the match must start on a letter.
  {
    size_t j = i;
    if (!s[j].letter && !s[j].newline && !s[j].number && j + 1 < n && s[j + 1].letter) ++j;
    if (s[j].letter) {
      while (j < n && s[j].letter) ++j;
      return j;
    }
  }
  // \p{N}{1,3}
  if (s[i].number) {
    size_t j = i;
    while (j < n && s[j].number && static_cast<int>(j - i) < max_digit_run) ++j;
    return j;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]* : the optional space counts only before an "other".
  {
    size_t j = i;
    if (s[j].c == ' ' && j + 1 < n && s[j + 1].other()) ++j;
    if (s[j].other()) {
      while (j < n && s[j].other()) ++j;
      while (j < n && s[j].newline) ++j;
      return j;
    }
  }
  if (s[i].space) {
    size_t run_end = i;
    while (run_end < n && s[run_end].space) ++run_end;
    // \s*[\r\n]+ : \s* backs off to the last newline of the run; [\r\n]+ then
    // takes that newline only (what follows it in the run is not a newline).
    for (size_t k = run_end; k > i; --k) {
      if (s[k - 1].newline) return k;
    }
    // \s+(?!\S) : the whole run at the end of text, else the run minus its
    // last space (which is then followed by a space), if that is non-empty.
    if (run_end == n) return run_end;
    if (run_end - 1 > i) return run_end - 1;
    // \s+
    return run_end;
  }
  return i + 1;  // unreachable: every character is a letter, number, space or other
}

absl::Status FieldError(std::string_view origin, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(origin), ": ", std::string(what)));
}

}  // namespace

absl::StatusOr<TextEncoder> TextEncoder::Load(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path, "tokenizer file");
  if (!text.ok()) return text.status();
  return FromJson(*text, path);
}

absl::StatusOr<TextEncoder> TextEncoder::FromJson(std::string_view json_text, std::string_view origin) {
  const json root = json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (root.is_discarded() || !root.is_object()) return FieldError(origin, "not a JSON object");
  const auto model_it = root.find("model");
  if (model_it == root.end() || !model_it->is_object()) return FieldError(origin, "no \"model\" object");
  const json& model = *model_it;
  if (!model.contains("type") || model["type"] != "BPE") {
    return absl::UnimplementedError(
        absl::StrCat(std::string(origin), ": model.type is not BPE (only BPE encoders are implemented)"));
  }
  TextEncoder encoder;
  // Front end: byte level when the pre-tokenizer has a ByteLevel step.
  const json* pre = root.contains("pre_tokenizer") ? &root["pre_tokenizer"] : nullptr;
  std::vector<const json*> pre_steps;
  if (pre != nullptr && pre->is_object()) {
    if (pre->value("type", "") == "Sequence" && pre->contains("pretokenizers") &&
        (*pre)["pretokenizers"].is_array()) {
      for (const json& step : (*pre)["pretokenizers"]) pre_steps.push_back(&step);
    } else {
      pre_steps.push_back(pre);
    }
  }
  bool byte_level = false;
  std::string split_pattern;
  for (const json* step : pre_steps) {
    if (!step->is_object()) return FieldError(origin, "pre_tokenizer step is not an object");
    const std::string type = step->value("type", "");
    if (type == "ByteLevel") {
      if (step->value("use_regex", false) || step->value("add_prefix_space", false)) {
        return absl::UnimplementedError(absl::StrCat(
            std::string(origin), ": ByteLevel pre-tokenizer with use_regex/add_prefix_space"));
      }
      byte_level = true;
    } else if (type == "Split") {
      const json& pattern = (*step)["pattern"];
      if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
        split_pattern = pattern["Regex"].get<std::string>();
        if (step->value("behavior", "") != "Isolated" || step->value("invert", false)) {
          return absl::UnimplementedError(
              absl::StrCat(std::string(origin), ": Split pre-tokenizer behaviour other than Isolated"));
        }
      } else if (!(pattern.is_object() && pattern.value("String", "") == " ")) {
        return absl::UnimplementedError(
            absl::StrCat(std::string(origin), ": Split pre-tokenizer pattern not supported"));
      }
    } else {
      return absl::UnimplementedError(
          absl::StrCat(std::string(origin), ": pre-tokenizer '", type, "' not supported"));
    }
  }
  const json normalizer = root.contains("normalizer") ? root["normalizer"] : json();
  if (byte_level) {
    encoder.style_ = Style::kByteLevel;
    if (split_pattern == kLlama3Pattern) {
      encoder.max_digit_run_ = 3;
    } else if (split_pattern == kQwenPattern) {
      encoder.max_digit_run_ = 1;
    } else {
      return absl::UnimplementedError(absl::StrCat(
          std::string(origin), ": byte-level pre-tokenizer regex not recognised (Llama 3 and Qwen 2.5 patterns are implemented)"));
    }
    if (normalizer.is_object() && normalizer.value("type", "") == "NFC") {
      encoder.nfc_ = true;
    } else if (!normalizer.is_null()) {
      return absl::UnimplementedError(absl::StrCat(std::string(origin), ": normalizer not supported"));
    }
  } else {
    // SentencePiece style: Replace(" " -> "▁") and byte fallback.
    const bool replaces_space = normalizer.is_object() && normalizer.value("type", "") == "Replace" &&
                                normalizer.contains("pattern") && normalizer["pattern"].is_object() &&
                                normalizer["pattern"].value("String", "") == " " &&
                                normalizer.value("content", "") == "\xE2\x96\x81";
    if (!replaces_space || !model.value("byte_fallback", false)) {
      return absl::UnimplementedError(absl::StrCat(
          std::string(origin), ": neither byte-level BPE nor SentencePiece-style BPE (Replace ' '->'▁' with byte_fallback)"));
    }
    encoder.style_ = Style::kSentencePiece;
  }
  encoder.ignore_merges_ = model.value("ignore_merges", false);

  // Vocabulary: spelled form -> id, and the encoder's key (bytes or text).
  const auto vocab_it = model.find("vocab");
  if (vocab_it == model.end() || !vocab_it->is_object()) return FieldError(origin, "no model.vocab object");
  absl::flat_hash_map<std::string, int32_t> spelled_ids;
  spelled_ids.reserve(vocab_it->size());
  encoder.ids_.reserve(vocab_it->size());
  std::fill(std::begin(encoder.byte_ids_), std::end(encoder.byte_ids_), -1);
  std::string bytes;
  for (auto it = vocab_it->begin(); it != vocab_it->end(); ++it) {
    if (!it.value().is_number_integer()) {
      return FieldError(origin, absl::StrCat("model.vocab['", it.key(), "'] is not an integer id"));
    }
    const int64_t id64 = it.value().get<int64_t>();
    if (id64 < 0 || id64 > INT32_MAX) {
      return FieldError(origin, absl::StrCat("model.vocab['", it.key(), "'] id out of range"));
    }
    const int32_t id = static_cast<int32_t>(id64);
    spelled_ids.emplace(it.key(), id);
    if (encoder.style_ == Style::kByteLevel) {
      if (!ByteLevelToBytes(it.key(), &bytes)) continue;  // not a byte-level entry: never produced
      encoder.ids_.emplace(bytes, id);
      if (bytes.size() == 1) encoder.byte_ids_[static_cast<uint8_t>(bytes[0])] = id;
    } else {
      encoder.ids_.emplace(it.key(), id);
      unsigned byte_value = 0;
      char tail = 0;
      if (it.key().size() == 6 && std::sscanf(it.key().c_str(), "<0x%2X>%c", &byte_value, &tail) == 1) {
        encoder.byte_ids_[byte_value & 0xFF] = id;
      }
    }
  }
  if (encoder.style_ == Style::kByteLevel) {
    for (int b = 0; b < 256; ++b) {
      if (encoder.byte_ids_[b] < 0) {
        return FieldError(origin, absl::StrCat("byte-level vocabulary has no token for byte ", b));
      }
    }
  }
  // Merges: "left right" strings or [left, right] pairs, in rank order.
  const auto merges_it = model.find("merges");
  if (merges_it == model.end() || !merges_it->is_array()) return FieldError(origin, "no model.merges array");
  encoder.merges_.reserve(merges_it->size());
  int32_t rank = 0;
  for (const json& merge : *merges_it) {
    std::string left, right;
    if (merge.is_string()) {
      const std::string& text = merge.get_ref<const std::string&>();
      const size_t space = text.find(' ');
      if (space == std::string::npos) {
        return FieldError(origin, absl::StrCat("model.merges[", rank, "] has no space"));
      }
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      return FieldError(origin, absl::StrCat("model.merges[", rank, "] is neither \"a b\" nor [a, b]"));
    }
    const auto l = spelled_ids.find(left);
    const auto r = spelled_ids.find(right);
    const auto m = spelled_ids.find(absl::StrCat(left, right));
    if (l == spelled_ids.end() || r == spelled_ids.end() || m == spelled_ids.end()) {
      return FieldError(origin, absl::StrCat("model.merges[", rank, "] names a token missing from model.vocab"));
    }
    // The first (lowest-rank) merge of a pair wins, as in HF.
    encoder.merges_.try_emplace(PairKey(l->second, r->second), Merge{rank, m->second});
    ++rank;
  }
  // Non-special added tokens, cut out of the text before encoding.
  if (root.contains("added_tokens")) {
    const json& added = root["added_tokens"];
    if (!added.is_array()) return FieldError(origin, "added_tokens is not an array");
    for (const json& token : added) {
      if (!token.is_object() || !token.contains("content") || !token["content"].is_string() ||
          !token.contains("id") || !token["id"].is_number_integer()) {
        return FieldError(origin, "added_tokens entry without string content and integer id");
      }
      if (token.value("special", false)) continue;
      const std::string content = token["content"].get<std::string>();
      if (token.value("normalized", false) || token.value("lstrip", false) || token.value("rstrip", false) ||
          token.value("single_word", false) || content.empty()) {
        return absl::UnimplementedError(absl::StrCat(std::string(origin), ": added token '", content,
                                                     "' uses normalized/lstrip/rstrip/single_word"));
      }
      const int64_t id = token["id"].get<int64_t>();
      if (id < 0 || id > INT32_MAX) return FieldError(origin, "added_tokens id out of range");
      encoder.added_ids_.emplace(content, static_cast<int32_t>(id));
      encoder.added_first_byte_[static_cast<uint8_t>(content[0])] = true;
      encoder.added_lengths_.push_back(content.size());
    }
    std::sort(encoder.added_lengths_.begin(), encoder.added_lengths_.end(), std::greater<size_t>());
    encoder.added_lengths_.erase(std::unique(encoder.added_lengths_.begin(), encoder.added_lengths_.end()),
                                 encoder.added_lengths_.end());
  }
  return encoder;
}

std::vector<std::string_view> TextEncoder::PreTokenize(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  if (style_ == Style::kSentencePiece) {
    pieces.push_back(text);
    return pieces;
  }
  const std::vector<CharInfo> chars = Classify(text);
  size_t i = 0;
  while (i < chars.size()) {
    const size_t end = SplitAt(chars, i, max_digit_run_);
    const size_t begin_byte = chars[i].begin;
    const size_t end_byte = end < chars.size() ? chars[end].begin : text.size();
    pieces.push_back(text.substr(begin_byte, end_byte - begin_byte));
    i = end;
  }
  return pieces;
}

void TextEncoder::MergeSymbols(std::vector<int32_t>* symbols) const {
  const size_t n = symbols->size();
  if (n < 2) return;
  std::vector<int32_t>& id = *symbols;
  std::vector<int32_t> prev(n), next(n);
  for (size_t k = 0; k < n; ++k) {
    prev[k] = static_cast<int32_t>(k) - 1;
    next[k] = k + 1 < n ? static_cast<int32_t>(k + 1) : -1;
  }
  std::vector<bool> alive(n, true);
  using Candidate = std::pair<int32_t, int32_t>;  // (rank, left position)
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto push_pair = [&](int32_t left) {
    if (left < 0 || next[left] < 0) return;
    const auto it = merges_.find(PairKey(id[left], id[next[left]]));
    if (it != merges_.end()) heap.emplace(it->second.rank, left);
  };
  for (size_t k = 0; k + 1 < n; ++k) push_pair(static_cast<int32_t>(k));
  while (!heap.empty()) {
    const auto [rank, left] = heap.top();
    heap.pop();
    if (!alive[left] || next[left] < 0) continue;
    const int32_t right = next[left];
    const auto it = merges_.find(PairKey(id[left], id[right]));
    if (it == merges_.end() || it->second.rank != rank) continue;  // stale candidate
    id[left] = it->second.merged_id;
    alive[right] = false;
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    push_pair(prev[left]);
    push_pair(left);
  }
  size_t out = 0;
  for (int32_t k = 0; k >= 0; k = next[k]) id[out++] = id[k];
  id.resize(out);
}

void TextEncoder::EncodePiece(std::string_view piece, std::vector<int32_t>* out) {
  if (piece.empty()) return;
  std::vector<int32_t> symbols;
  if (style_ == Style::kByteLevel) {
    const std::string key(piece);
    const auto cached = piece_cache_.find(key);
    if (cached != piece_cache_.end()) {
      out->insert(out->end(), cached->second.begin(), cached->second.end());
      return;
    }
    const auto whole = ignore_merges_ ? ids_.find(key) : ids_.end();
    if (whole != ids_.end()) {
      symbols.push_back(whole->second);
    } else {
      symbols.reserve(piece.size());
      for (char byte : piece) symbols.push_back(byte_ids_[static_cast<uint8_t>(byte)]);
      MergeSymbols(&symbols);
    }
    if (piece_cache_.size() < (1u << 20)) piece_cache_.emplace(key, symbols);
  } else {
    ForEachChar(piece, [&](int32_t begin, int32_t end, UChar32 c) {
      const auto it = c >= 0 ? ids_.find(std::string(piece.substr(begin, end - begin))) : ids_.end();
      if (it != ids_.end()) {
        symbols.push_back(it->second);
        return;
      }
      for (int32_t k = begin; k < end; ++k) {
        const int32_t byte_id = byte_ids_[static_cast<uint8_t>(piece[k])];
        if (byte_id >= 0) symbols.push_back(byte_id);  // no <0xNN> token: the byte is dropped
      }
    });
    MergeSymbols(&symbols);
  }
  out->insert(out->end(), symbols.begin(), symbols.end());
}

std::vector<int32_t> TextEncoder::Encode(std::string_view text) {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  size_t segment_begin = 0;
  for (size_t i = 0; i < text.size() && !added_ids_.empty(); ++i) {
    if (!added_first_byte_[static_cast<uint8_t>(text[i])]) continue;
    for (size_t length : added_lengths_) {
      if (length > text.size() - i) continue;
      const auto it = added_ids_.find(std::string(text.substr(i, length)));
      if (it == added_ids_.end()) continue;
      EncodeSegment(text.substr(segment_begin, i - segment_begin), &ids);
      ids.push_back(it->second);
      i += length - 1;
      segment_begin = i + 1;
      break;
    }
  }
  EncodeSegment(text.substr(segment_begin), &ids);
  return ids;
}

void TextEncoder::EncodeSegment(std::string_view text, std::vector<int32_t>* ids) {
  if (text.empty()) return;
  std::string normalized;
  if (style_ == Style::kSentencePiece) {
    normalized.reserve(text.size());
    for (char c : text) {
      if (c == ' ') {
        normalized.append("\xE2\x96\x81");
      } else {
        normalized.push_back(c);
      }
    }
    text = normalized;
  } else if (nfc_) {
    UErrorCode error = U_ZERO_ERROR;
    const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(error);
    if (U_SUCCESS(error)) {
      const icu::UnicodeString unicode =
          icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
      if (!nfc->isNormalized(unicode, error) && U_SUCCESS(error)) {
        const icu::UnicodeString result = nfc->normalize(unicode, error);
        if (U_SUCCESS(error)) {
          result.toUTF8String(normalized);
          text = normalized;
        }
      }
    }
  }
  for (std::string_view piece : PreTokenize(text)) EncodePiece(piece, ids);
}

}  // namespace zapgram::sampling
