// The tokenizer's own encoder and the canonical fast-forward rule (see
// canonical_tokenizer.h for what is encoded how and why a cut is safe).
#include "masks/canonical_tokenizer.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <functional>
#include <queue>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "grammar/utf8.h"
#include "nlohmann/json.hpp"
#include "unicode/normalizer2.h"
#include "unicode/unistr.h"

namespace zapgram::masks {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // ▁

// This absl's string_view is its own type.
absl::string_view Av(std::string_view text) { return absl::string_view(text.data(), text.size()); }

const Json* Member(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(std::string(key));
  return it == object.end() ? nullptr : &*it;
}

std::string TypeOf(const Json* node) {
  if (node == nullptr || !node->is_object()) return "";
  const Json* type = Member(*node, "type");
  return type != nullptr && type->is_string() ? type->get<std::string>() : "";
}

bool IsTrue(const Json& object, std::string_view key) {
  const Json* value = Member(object, key);
  return value != nullptr && value->is_boolean() && value->get<bool>();
}

// A string member that is absent, null or empty.
bool IsUnset(const Json& object, std::string_view key) {
  const Json* value = Member(object, key);
  return value == nullptr || value->is_null() || (value->is_string() && value->get<std::string>().empty());
}

// `<0xNN>` -> NN, else -1.
int ByteFallbackValue(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  int value = 0;
  for (char c : piece.substr(3, 2)) {
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

// Length of the longest valid UTF-8 prefix of `text`.
size_t ValidUtf8Length(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const grammar::DecodedCodepoint decoded = grammar::DecodeUtf8(text.substr(pos));
    if (decoded.length == 0) break;
    pos += decoded.length;
  }
  return pos;
}

const icu::Normalizer2& Nfc() {
  UErrorCode error = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(error);
  if (U_FAILURE(error) || nfc == nullptr) std::abort();  // ICU's data is part of libicuuc
  return *nfc;
}

// Appends NFC(text), `text` valid UTF-8.
void AppendNfc(std::string_view text, std::string* out) {
  const icu::Normalizer2& nfc = Nfc();
  UErrorCode error = U_ZERO_ERROR;
  const icu::StringPiece input(text.data(), text.size());
  if (nfc.isNormalizedUTF8(input, error) && U_SUCCESS(error)) {
    out->append(text);
    return;
  }
  const size_t start = out->size();
  error = U_ZERO_ERROR;
  icu::StringByteSink<std::string> sink(out);
  nfc.normalizeUTF8(0, input, sink, nullptr, error);
  if (U_FAILURE(error)) {
    out->resize(start);
    out->append(text);
  }
}

// The longest prefix of `text` (valid UTF-8) that is NFC and that no text
// after it can change under NFC: its byte length.
size_t NfcStableLength(std::string_view text) {
  const icu::Normalizer2& nfc = Nfc();
  UErrorCode error = U_ZERO_ERROR;
  const icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), text.size()));
  int32_t end = nfc.spanQuickCheckYes(u, error);
  if (U_FAILURE(error)) return 0;
  while (end > 0) {
    const bool boundary = end == u.length() ? nfc.hasBoundaryAfter(u.char32At(u.moveIndex32(end, -1)))
                                            : nfc.hasBoundaryBefore(u.char32At(end));
    if (boundary) break;
    end = u.moveIndex32(end, -1);
  }
  std::string prefix;
  u.tempSubString(0, end).toUTF8String(prefix);
  return prefix.size();
}

}  // namespace

// ---------------------------------------------------------------------------
// Loading.

class CanonicalTokenizerLoader {
 public:
  static absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> Load(std::string_view json_text,
                                                                        const std::string& source);

 private:
  using Tokenizer = CanonicalTokenizer;
  static absl::Status Unsupported(const std::string& source, std::string_view what) {
    return absl::UnimplementedError(absl::StrCat(source, ": canonical tokenization does not support ", Av(what)));
  }
  static absl::Status ReadPipeline(const Json& root, const std::string& source, Tokenizer* t);
  static absl::Status ReadVocab(const Json& model, const std::string& source, Tokenizer* t,
                                absl::flat_hash_map<std::string, TokenId>* raw_ids);
  static absl::Status ReadMerges(const Json& model, const std::string& source,
                                 const absl::flat_hash_map<std::string, TokenId>& raw_ids, Tokenizer* t);
  static absl::Status ReadAddedTokens(const Json& root, const std::string& source, Tokenizer* t);
};

absl::Status CanonicalTokenizerLoader::ReadPipeline(const Json& root, const std::string& source, Tokenizer* t) {
  const Json* model = Member(root, "model");
  if (model == nullptr || !model->is_object()) return absl::InvalidArgumentError(source + ": no model");
  if (TypeOf(model) != "BPE" || Member(*model, "merges") == nullptr) return Unsupported(source, "a non-BPE model");
  const Json* dropout = Member(*model, "dropout");
  if ((dropout != nullptr && !dropout->is_null()) || !IsUnset(*model, "continuing_subword_prefix") ||
      !IsUnset(*model, "end_of_word_suffix")) {
    return Unsupported(source, "BPE dropout or subword affixes");
  }
  t->ignore_merges_ = IsTrue(*model, "ignore_merges");
  const Json* normalizer = Member(root, "normalizer");
  const Json* pre = Member(root, "pre_tokenizer");
  const std::string normalizer_type = TypeOf(normalizer);
  if (normalizer_type == "Replace") {
    // SentencePiece style: spaces become ▁, and the text is one piece.
    const Json* pattern = Member(*normalizer, "pattern");
    const Json* content = Member(*normalizer, "content");
    const bool space_to_metaspace = pattern != nullptr && Member(*pattern, "String") != nullptr &&
                                    (*pattern)["String"] == " " && content != nullptr && *content == kMetaspace;
    if (!space_to_metaspace) return Unsupported(source, "a Replace normalizer other than ' ' -> '▁'");
    const bool split_on_space = TypeOf(pre) == "Split" && Member(*pre, "pattern") != nullptr &&
                                Member((*pre)["pattern"], "String") != nullptr && (*pre)["pattern"]["String"] == " ";
    if (pre != nullptr && !pre->is_null() && !split_on_space) {
      return Unsupported(source, "a pre-tokenizer beside the ▁ normalizer");
    }
    if (!IsTrue(*model, "byte_fallback")) return Unsupported(source, "SentencePiece BPE without byte fallback");
    t->model_ = Tokenizer::Model::kSentencePieceBpe;
    return absl::OkStatus();
  }
  if (normalizer_type == "NFC") {
    t->nfc_ = true;
  } else if (normalizer != nullptr && !normalizer->is_null()) {
    return Unsupported(source, absl::StrCat("the normalizer ", normalizer->dump()));
  }
  // Byte-level: Sequence [Split(Regex, Isolated), ByteLevel(no prefix space, no regex)].
  const Json* steps = TypeOf(pre) == "Sequence" ? Member(*pre, "pretokenizers") : nullptr;
  if (steps == nullptr || !steps->is_array() || steps->size() != 2 || TypeOf(&(*steps)[0]) != "Split" ||
      TypeOf(&(*steps)[1]) != "ByteLevel") {
    return Unsupported(source, "this pre-tokenizer (expected Sequence[Split, ByteLevel])");
  }
  const Json& split = (*steps)[0];
  const Json& byte_level = (*steps)[1];
  const Json* pattern = Member(split, "pattern");
  if (pattern == nullptr || Member(*pattern, "Regex") == nullptr || !(*pattern)["Regex"].is_string() ||
      Member(split, "behavior") == nullptr || split["behavior"] != "Isolated" || IsTrue(split, "invert") ||
      IsTrue(byte_level, "add_prefix_space") || IsTrue(byte_level, "use_regex")) {
    return Unsupported(source, "this Split / ByteLevel configuration");
  }
  absl::StatusOr<SplitRegex> regex = RecognizeSplitRegex((*pattern)["Regex"].get<std::string>());
  if (!regex.ok()) return absl::UnimplementedError(absl::StrCat(source, ": ", regex.status().message()));
  t->split_ = *regex;
  t->model_ = Tokenizer::Model::kByteLevelBpe;
  return absl::OkStatus();
}

absl::Status CanonicalTokenizerLoader::ReadVocab(const Json& model, const std::string& source, Tokenizer* t,
                                                 absl::flat_hash_map<std::string, TokenId>* raw_ids) {
  const Json* vocab = Member(model, "vocab");
  if (vocab == nullptr || !vocab->is_object()) return absl::InvalidArgumentError(source + ": model.vocab is not an object");
  std::fill(std::begin(t->byte_ids_), std::end(t->byte_ids_), -1);
  raw_ids->reserve(vocab->size());
  for (const auto& [piece, id_json] : vocab->items()) {
    if (!id_json.is_number_unsigned() || id_json.get<uint64_t>() >= (uint64_t{1} << 24)) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": model.vocab id of '", piece, "' is out of range"));
    }
    const TokenId id = static_cast<TokenId>(id_json.get<uint64_t>());
    raw_ids->emplace(piece, id);
    if (static_cast<size_t>(id) >= t->id_bytes_.size()) t->id_bytes_.resize(id + 1);
    std::string bytes;
    if (t->model_ == Tokenizer::Model::kByteLevelBpe) {
      bytes = ByteLevelTokenBytes(piece);
      if (bytes.size() == 1) t->byte_ids_[static_cast<uint8_t>(bytes[0])] = id;
      t->pieces_.ids.emplace(bytes, id);
    } else if (const int byte = ByteFallbackValue(piece); byte >= 0) {
      t->byte_ids_[byte] = id;
      bytes.assign(1, static_cast<char>(byte));
    } else {
      t->pieces_.ids.emplace(piece, id);
      bytes = absl::StrReplaceAll(piece, {{Av(kMetaspace), " "}});
    }
    t->id_bytes_[id] = std::move(bytes);
  }
  if (t->model_ == Tokenizer::Model::kByteLevelBpe &&
      std::find(std::begin(t->byte_ids_), std::end(t->byte_ids_), -1) != std::end(t->byte_ids_)) {
    return Unsupported(source, "a byte-level vocabulary missing single bytes");
  }
  const Json* unk = Member(model, "unk_token");
  if (unk != nullptr && unk->is_string()) {
    const auto it = raw_ids->find(unk->get<std::string>());
    if (it != raw_ids->end()) t->unk_id_ = it->second;
  }
  t->pieces_.Finish();
  return absl::OkStatus();
}

absl::Status CanonicalTokenizerLoader::ReadMerges(const Json& model, const std::string& source,
                                                  const absl::flat_hash_map<std::string, TokenId>& raw_ids,
                                                  Tokenizer* t) {
  const Json& merges = model["merges"];
  if (!merges.is_array()) return absl::InvalidArgumentError(source + ": model.merges is not an array");
  t->merges_.reserve(merges.size());
  std::string left, right;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const Json& entry = merges[rank];
    if (entry.is_string()) {  // "left right"
      const std::string& text = entry.get_ref<const std::string&>();
      const size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": model.merges[", rank, "] is not two pieces"));
      }
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_string()) {
      left = entry[0].get<std::string>();
      right = entry[1].get<std::string>();
    } else {
      return absl::InvalidArgumentError(absl::StrCat(source, ": model.merges[", rank, "] is not two pieces"));
    }
    const auto l = raw_ids.find(left);
    const auto r = raw_ids.find(right);
    const auto m = raw_ids.find(left + right);
    if (l == raw_ids.end() || r == raw_ids.end() || m == raw_ids.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": model.merges[", rank, "] names a piece outside model.vocab"));
    }
    // As HF's map built from the list: a repeated pair keeps its last rank.
    t->merges_.insert_or_assign(Tokenizer::PairKey(l->second, r->second),
                                Tokenizer::Merge{static_cast<uint32_t>(rank), m->second});
  }
  return absl::OkStatus();
}

absl::Status CanonicalTokenizerLoader::ReadAddedTokens(const Json& root, const std::string& source, Tokenizer* t) {
  const Json* list = Member(root, "added_tokens");
  if (list == nullptr || list->is_null()) return absl::OkStatus();
  if (!list->is_array()) return absl::InvalidArgumentError(source + ": added_tokens is not an array");
  for (const Json& entry : *list) {
    const Json* id = Member(entry, "id");
    const Json* content = Member(entry, "content");
    if (id == nullptr || !id->is_number_unsigned() || id->get<uint64_t>() >= (uint64_t{1} << 24) ||
        content == nullptr || !content->is_string() || content->get<std::string>().empty()) {
      return absl::InvalidArgumentError(source + ": an added token needs an id and a content");
    }
    if (IsTrue(entry, "lstrip") || IsTrue(entry, "rstrip") || IsTrue(entry, "single_word") ||
        IsTrue(entry, "normalized")) {
      return Unsupported(source, "added tokens with lstrip, rstrip, single_word or normalized");
    }
    const std::string text = content->get<std::string>();
    const TokenId token = static_cast<TokenId>(id->get<uint64_t>());
    t->added_.ids.insert_or_assign(text, token);
    if (IsTrue(entry, "special")) t->special_ids_.insert(token);
    t->added_first_byte_[static_cast<uint8_t>(text[0])] = true;
    if (static_cast<size_t>(token) >= t->id_bytes_.size()) t->id_bytes_.resize(token + 1);
    // Spelled as the decoder spells it (as the Vocabulary does): a Gemma
    // added token "▁▁" matches those characters in the text but decodes to
    // two spaces.
    t->id_bytes_[token] = t->model_ == Tokenizer::Model::kByteLevelBpe
                              ? ByteLevelTokenBytes(text)
                              : absl::StrReplaceAll(text, {{Av(kMetaspace), " "}});
  }
  t->added_.Finish();
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> CanonicalTokenizerLoader::Load(std::string_view json_text,
                                                                                         const std::string& source) {
  Json root = Json::parse(json_text, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return absl::InvalidArgumentError(source + ": not a JSON object");
  std::shared_ptr<CanonicalTokenizer> t(new CanonicalTokenizer());
  t->source_ = source;
  static std::atomic<uint64_t> loads{0};
  t->serial_ = ++loads;
  if (absl::Status s = ReadPipeline(root, source, t.get()); !s.ok()) return s;
  absl::flat_hash_map<std::string, TokenId> raw_ids;
  if (absl::Status s = ReadVocab(root["model"], source, t.get(), &raw_ids); !s.ok()) return s;
  if (absl::Status s = ReadMerges(root["model"], source, raw_ids, t.get()); !s.ok()) return s;
  if (absl::Status s = ReadAddedTokens(root, source, t.get()); !s.ok()) return s;
  return std::shared_ptr<const CanonicalTokenizer>(std::move(t));
}

absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> CanonicalTokenizer::LoadFromJson(
    std::string_view json_text, std::string_view source_name) {
  return CanonicalTokenizerLoader::Load(json_text, std::string(source_name));
}

absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> CanonicalTokenizer::LoadFromFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return LoadFromJson(text, path);
}

// ---------------------------------------------------------------------------
// Entries.

void CanonicalTokenizer::Entries::Finish() {
  sorted.clear();
  sorted.reserve(ids.size());
  max_length = 0;
  lengths.clear();
  for (const auto& [text, id] : ids) {
    sorted.push_back(text);
    max_length = std::max(max_length, text.size());
    lengths.push_back(text.size());
  }
  std::sort(sorted.begin(), sorted.end());
  std::sort(lengths.begin(), lengths.end(), std::greater<size_t>());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
}

size_t CanonicalTokenizer::Entries::Reach(std::string_view text, size_t at) const {
  size_t reach = at;
  const size_t rest = text.size() - at;
  for (size_t length = 1; length <= std::min(max_length, rest); ++length) {
    if (ids.contains(Av(text.substr(at, length)))) reach = at + length;
  }
  if (rest < max_length) {
    const std::string_view tail = text.substr(at);
    auto it = std::lower_bound(sorted.begin(), sorted.end(), tail,
                               [](const std::string& entry, std::string_view key) { return entry < key; });
    if (it != sorted.end() && *it == tail) ++it;
    if (it != sorted.end() && std::string_view(*it).substr(0, tail.size()) == tail) return SIZE_MAX;
  }
  return reach;
}

// ---------------------------------------------------------------------------
// Encoding.

std::string_view CanonicalTokenizer::token_bytes(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_bytes_.size()) return {};
  return id_bytes_[id];
}

size_t CanonicalTokenizer::AddedMatchEnd(std::string_view text, size_t at, bool special_as_text) const {
  if (!added_first_byte_[static_cast<uint8_t>(text[at])]) return 0;
  for (size_t length : added_.lengths) {
    if (length > text.size() - at) continue;
    const auto it = added_.ids.find(Av(text.substr(at, length)));
    if (it != added_.ids.end() && !(special_as_text && special_ids_.contains(it->second))) return at + length;
  }
  return 0;
}

std::vector<CanonicalTokenizer::Segment> CanonicalTokenizer::SplitAddedTokens(std::string_view text,
                                                                              bool special_as_text) const {
  std::vector<Segment> segments;
  size_t start = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t end = AddedMatchEnd(text, at, special_as_text);
    if (end == 0) {
      ++at;
      continue;
    }
    if (start < at) segments.push_back({start, at, -1});
    segments.push_back({at, end, added_.ids.find(Av(text.substr(at, end - at)))->second});
    start = at = end;
  }
  if (start < text.size()) segments.push_back({start, text.size(), -1});
  return segments;
}

std::string CanonicalTokenizer::Normalize(std::string_view text) const {
  if (model_ == Model::kSentencePieceBpe) return absl::StrReplaceAll(Av(text), {{" ", Av(kMetaspace)}});
  if (!nfc_) return std::string(text);
  std::string out;
  for (size_t begin = 0; begin < text.size();) {
    const size_t valid = ValidUtf8Length(text.substr(begin));
    AppendNfc(text.substr(begin, valid), &out);
    begin += valid;
    if (begin < text.size()) out.push_back(text[begin++]);  // an invalid byte, as it is
  }
  return out;
}

void CanonicalTokenizer::EncodePiece(std::string_view piece, std::vector<TokenId>* out, PieceCache* cache) const {
  if (piece.empty()) return;
  if (cache == nullptr || model_ != Model::kByteLevelBpe) {
    MergePiece(piece, out);
    return;
  }
  if (const auto known = cache->ids_.find(Av(piece)); known != cache->ids_.end()) {
    out->insert(out->end(), known->second.begin(), known->second.end());
    return;
  }
  const size_t start = out->size();
  MergePiece(piece, out);
  if (cache->ids_.size() < cache->max_entries_) {
    cache->ids_.emplace(piece, std::vector<TokenId>(out->begin() + start, out->end()));
  }
}

void CanonicalTokenizer::MergePiece(std::string_view piece, std::vector<TokenId>* out) const {
  if (ignore_merges_) {
    const auto whole = pieces_.ids.find(Av(piece));
    if (whole != pieces_.ids.end()) {
      out->push_back(whole->second);
      return;
    }
  }
  // Symbols as a linked list over the initial units; a merged symbol keeps
  // its left unit's slot. Most pieces are short: their lists stay on the
  // stack.
  constexpr size_t kInline = 32;
  absl::InlinedVector<TokenId, kInline> ids;
  if (model_ == Model::kByteLevelBpe) {
    for (char c : piece) ids.push_back(byte_ids_[static_cast<uint8_t>(c)]);
  } else {
    for (size_t pos = 0; pos < piece.size();) {
      const grammar::DecodedCodepoint decoded = grammar::DecodeUtf8(piece.substr(pos));
      const size_t length = decoded.length == 0 ? 1 : decoded.length;
      const auto known = pieces_.ids.find(Av(piece.substr(pos, length)));
      if (known != pieces_.ids.end()) {
        ids.push_back(known->second);
      } else {
        for (size_t k = pos; k < pos + length; ++k) {
          const TokenId byte = byte_ids_[static_cast<uint8_t>(piece[k])];
          ids.push_back(byte >= 0 ? byte : unk_id_);
        }
      }
      pos += length;
    }
  }
  const int n = static_cast<int>(ids.size());
  absl::InlinedVector<int, kInline> prev(n), next(n);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    uint32_t rank;
    int pos;
    TokenId merged;
    bool operator>(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : pos > other.pos;
    }
  };
  std::priority_queue<Candidate, absl::InlinedVector<Candidate, kInline>, std::greater<Candidate>> queue;
  auto push_pair = [&](int left) {
    if (left < 0 || next[left] < 0) return;
    const auto merge = merges_.find(PairKey(ids[left], ids[next[left]]));
    if (merge != merges_.end()) queue.push({merge->second.rank, left, merge->second.merged});
  };
  for (int i = 0; i + 1 < n; ++i) push_pair(i);
  absl::InlinedVector<bool, kInline> gone(n, false);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    if (gone[top.pos] || next[top.pos] < 0) continue;
    const int right = next[top.pos];
    const auto merge = merges_.find(PairKey(ids[top.pos], ids[right]));
    if (merge == merges_.end() || merge->second.merged != top.merged) continue;  // stale
    ids[top.pos] = top.merged;
    gone[right] = true;
    next[top.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = top.pos;
    push_pair(prev[top.pos]);
    push_pair(top.pos);
  }
  for (int i = 0; i < n; ++i) {
    if (!gone[i]) out->push_back(ids[i]);
  }
}

void CanonicalTokenizer::EncodeNormalized(std::string_view segment, std::vector<TokenId>* out,
                                          PieceCache* cache) const {
  const std::string text = Normalize(segment);
  if (model_ == Model::kSentencePieceBpe) {
    EncodePiece(text, out);
    return;
  }
  const PreTokenized pieces = PreTokenize(split_, text);
  size_t begin = 0;
  for (size_t end : pieces.ends) {
    EncodePiece(std::string_view(text).substr(begin, end - begin), out, cache);
    begin = end;
  }
}

absl::StatusOr<std::vector<TokenId>> CanonicalTokenizer::Encode(std::string_view text, const EncodeOptions& options,
                                                                PieceCache* cache) const {
  if (options.invalid_utf8 == EncodeOptions::InvalidUtf8::kRefuse && ValidUtf8Length(text) != text.size()) {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": text to encode is not valid UTF-8"));
  }
  if (cache != nullptr && cache->tokenizer_serial_ != serial_) {
    cache->ids_.clear();
    cache->tokenizer_serial_ = serial_;
  }
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 1);
  const bool special_as_text = options.special_tokens == EncodeOptions::SpecialTokens::kAsText;
  for (const Segment& segment : SplitAddedTokens(text, special_as_text)) {
    if (segment.id >= 0) {
      out.push_back(segment.id);
    } else {
      EncodeNormalized(text.substr(segment.begin, segment.end - segment.begin), &out, cache);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Fast-forward tokens.

size_t CanonicalTokenizer::LargestSentencePieceCut(std::string_view h, const std::vector<bool>& added_safe) const {
  // normalized(h) and, at each character boundary of h, the offset there.
  std::string normalized;
  std::vector<size_t> boundary_h, boundary_n;
  for (size_t pos = 0; pos <= h.size();) {
    boundary_h.push_back(pos);
    boundary_n.push_back(normalized.size());
    if (pos == h.size()) break;
    const size_t length = grammar::DecodeUtf8(h.substr(pos)).length;
    if (h[pos] == ' ') {
      normalized.append(kMetaspace);
    } else {
      normalized.append(h.substr(pos, length));
    }
    pos += length;
  }
  // reach[k]: the furthest a piece starting at or before boundary k goes.
  size_t best = 0, furthest = 0;
  for (size_t k = 0; k < boundary_n.size(); ++k) {
    if (furthest <= boundary_n[k] && added_safe[boundary_h[k]]) best = boundary_h[k];
    if (k + 1 < boundary_n.size()) furthest = std::max(furthest, pieces_.Reach(normalized, boundary_n[k]));
  }
  return best;
}

std::vector<TokenId> CanonicalTokenizer::FastForwardTokens(std::string_view forced) const {
  std::string_view h = forced.substr(0, ValidUtf8Length(forced));
  // Added tokens: cut before the first occurrence; then no content may span
  // a cut (added_safe[p]).
  for (size_t at = 0; at < h.size(); ++at) {
    if (AddedMatchEnd(h, at) != 0) {
      h = h.substr(0, at);
      break;
    }
  }
  if (nfc_) h = h.substr(0, NfcStableLength(h));
  std::vector<bool> added_safe(h.size() + 1, true);
  size_t furthest = 0;
  for (size_t p = 0; p <= h.size(); ++p) {
    added_safe[p] = furthest <= p;
    if (p < h.size() && added_first_byte_[static_cast<uint8_t>(h[p])]) {
      furthest = std::max(furthest, added_.Reach(h, p));
    }
  }
  std::vector<TokenId> out;
  if (model_ == Model::kSentencePieceBpe) {
    const size_t cut = LargestSentencePieceCut(h, added_safe);
    EncodeNormalized(h.substr(0, cut), &out);
    return out;
  }
  const PreTokenized pieces = PreTokenize(split_, h);
  size_t keep = pieces.stable;
  while (keep > 0 && !added_safe[pieces.ends[keep - 1]]) --keep;
  size_t begin = 0;
  for (size_t k = 0; k < keep; ++k) {
    EncodePiece(h.substr(begin, pieces.ends[k] - begin), &out);
    begin = pieces.ends[k];
  }
  return out;
}

}  // namespace zapgram::masks
