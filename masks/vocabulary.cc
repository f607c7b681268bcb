// Loading a Hugging Face tokenizer.json into a Vocabulary (see vocabulary.h
// for what the bytes of a token are and which ids are special, unused, EOS).
//
// The stage runs in three steps:
//   1. Read: one pass of nlohmann's SAX parser (iterative, so deep nesting
//      cannot overflow the stack; depth is also capped by max_json_depth).
//      TokenizerJsonReader streams `model.vocab` into a flat arena of raw
//      token strings, drops `model.merges` unseen, and keeps every other part
//      of the file (decoder, pre_tokenizer, added_tokens, model fields) as a
//      small nlohmann DOM. Building a DOM of the whole file instead takes
//      about three times as long on Gemma 3's 33 MB file (~0.8 s vs ~0.28 s).
//   2. Plan: PlanDecoder flattens the decoder (or, without one, the
//      pre_tokenizer) into a list of per-token steps: Replace(from, to),
//      ByteFallback, ByteLevel. Sequences are flattened with an explicit stack.
//   3. Assemble: ids are checked (no duplicates within model.vocab or within
//      added_tokens, none negative or past max_vocab_size), an added token
//      overrides a vocab entry with its id, each token string runs through the
//      steps into the shared byte buffer, and the EOS ids are chosen.
//
// The GPT-2 byte<->unicode table: bytes that are printable and not space in
// Latin-1 (0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF) stand for themselves; the other 68
// bytes, in increasing order, stand for U+0100, U+0101, ... U+0143.
//
// Tests: tests/masks/vocabulary_test.cc.
#include "masks/vocabulary.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "grammar/checksum.h"
#include "grammar/utf8.h"
#include "masks/canonical_tokenizer.h"
#include "nlohmann/json.hpp"

namespace zapgram::masks {
namespace {

using Json = nlohmann::json;

constexpr uint32_t kNoEntry = UINT32_MAX;
constexpr uint32_t kByteLevelCodepoints = 0x144;  // U+0000 .. U+0143

// unicode code point -> byte under GPT-2's map, -1 where no byte maps there.
constexpr std::array<int16_t, kByteLevelCodepoints> MakeByteLevelDecodeTable() {
  std::array<int16_t, kByteLevelCodepoints> table{};
  for (int16_t& entry : table) entry = -1;
  uint32_t next_shifted = 0x100;
  for (uint32_t byte = 0; byte < 256; ++byte) {
    const bool stands_for_itself =
        (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
    table[stands_for_itself ? byte : next_shifted++] = static_cast<int16_t>(byte);
  }
  return table;
}
constexpr std::array<int16_t, kByteLevelCodepoints> kByteLevelDecode = MakeByteLevelDecodeTable();

std::string Quoted(std::string_view text) {
  return absl::StrCat("'", absl::CHexEscape(absl::string_view(text.data(), text.size())), "'");
}

// ---------------------------------------------------------------------------
// Step 1: the SAX reader.

struct RawVocabEntry {
  uint32_t piece_offset;  // into TokenizerJsonReader::piece_arena
  uint32_t piece_length;
  uint32_t id;
};

class TokenizerJsonReader : public nlohmann::json_sax<Json> {
 public:
  TokenizerJsonReader(const std::string& source, const VocabularyOptions& options)
      : source_(source), options_(options) {}

  Json root;
  std::string piece_arena;
  std::vector<RawVocabEntry> vocab;
  bool vocab_seen = false;
  bool vocab_is_list = false;  // Unigram: [[piece, score], ...]
  absl::Status status;

  bool null() override { return Scalar(Json(nullptr)); }
  bool boolean(bool value) override { return Scalar(Json(value)); }
  bool number_integer(number_integer_t value) override {
    if (InVocab()) return VocabNumber(value < 0 ? -1 : static_cast<int64_t>(value), false);
    return Scalar(Json(value));
  }
  bool number_unsigned(number_unsigned_t value) override {
    if (InVocab()) {
      return VocabNumber(value > INT64_MAX ? INT64_MAX : static_cast<int64_t>(value), false);
    }
    return Scalar(Json(value));
  }
  bool number_float(number_float_t value, const string_t&) override {
    if (InVocab()) return VocabNumber(0, true);
    return Scalar(Json(value));
  }
  bool string(string_t& value) override {
    if (InVocab()) {
      Frame& frame = frames_.back();
      if (frame.kind == FrameKind::kVocabListEntry && frame.elements_seen++ == 0) {
        StorePiece(value);
        frame.has_piece = true;
        return true;
      }
      return Fail(absl::StrCat("model.vocab entry ", Quoted(pending_piece_view()),
                               " has a string where an id was expected"));
    }
    return Scalar(Json(std::move(value)));
  }
  bool binary(binary_t&) override { return Fail("binary values are not JSON"); }

  bool key(string_t& value) override {
    Frame& frame = frames_.back();
    if (frame.kind == FrameKind::kVocabObject) {
      StorePiece(value);
      return true;
    }
    if (frame.kind == FrameKind::kDom) pending_key_ = std::move(value);
    return true;
  }

  bool start_object(std::size_t) override { return StartContainer(/*is_object=*/true); }
  bool start_array(std::size_t) override { return StartContainer(/*is_object=*/false); }
  bool end_object() override { return EndContainer(); }
  bool end_array() override { return EndContainer(); }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) override {
    status = absl::InvalidArgumentError(absl::StrCat(source_, ": not valid JSON: ", error.what()));
    return false;
  }

 private:
  enum class FrameKind : uint8_t {
    kDom,             // kept: `container` points at its DOM value
    kSkip,            // model.merges and everything inside it
    kVocabObject,     // model.vocab as {piece: id}
    kVocabList,       // model.vocab as [[piece, score], ...]
    kVocabListEntry,  // one [piece, score]
  };
  struct Frame {
    FrameKind kind;
    bool is_model = false;  // the DOM object at root.model
    bool has_piece = false;
    uint32_t elements_seen = 0;
    Json* container = nullptr;
  };

  bool InVocab() const {
    return !frames_.empty() && (frames_.back().kind == FrameKind::kVocabObject ||
                                frames_.back().kind == FrameKind::kVocabListEntry);
  }
  std::string_view pending_piece_view() const {
    return std::string_view(piece_arena).substr(pending_piece_offset_, pending_piece_length_);
  }

  bool Fail(const std::string& message) {
    status = absl::InvalidArgumentError(absl::StrCat(source_, ": ", message));
    return false;
  }

  void StorePiece(std::string_view piece) {
    pending_piece_offset_ = static_cast<uint32_t>(piece_arena.size());
    pending_piece_length_ = static_cast<uint32_t>(piece.size());
    piece_arena.append(piece);
  }

  // A number inside model.vocab: the id of the pending piece (object form) or
  // the score of a [piece, score] entry (list form; ignored).
  bool VocabNumber(int64_t value, bool is_float) {
    Frame& frame = frames_.back();
    if (frame.kind == FrameKind::kVocabListEntry) {
      if (frame.elements_seen++ == 0) return Fail("model.vocab entry does not start with its token string");
      return true;
    }
    if (is_float || value < 0) {
      return Fail(absl::StrCat("model.vocab gives ", Quoted(pending_piece_view()),
                               " an id that is not a non-negative integer"));
    }
    if (value >= static_cast<int64_t>(options_.max_vocab_size)) {
      return Fail(absl::StrCat("model.vocab id ", value, " of ", Quoted(pending_piece_view()),
                               " is out of range (max_vocab_size ", options_.max_vocab_size, ")"));
    }
    vocab.push_back({pending_piece_offset_, pending_piece_length_, static_cast<uint32_t>(value)});
    return true;
  }

  bool Scalar(Json value) {
    if (frames_.empty()) return Fail("the top level is not an object");
    Frame& frame = frames_.back();
    switch (frame.kind) {
      case FrameKind::kSkip:
        return true;
      case FrameKind::kVocabList:
        return Fail("model.vocab list entries must be [token, score] arrays");
      case FrameKind::kDom:
        if (frame.container->is_object()) {
          (*frame.container)[pending_key_] = std::move(value);
        } else {
          frame.container->push_back(std::move(value));
        }
        return true;
      case FrameKind::kVocabObject:
        return Fail(absl::StrCat("model.vocab gives ", Quoted(pending_piece_view()),
                                 " a value that is not an id"));
      case FrameKind::kVocabListEntry:
        if (frame.elements_seen++ == 0) return Fail("model.vocab entry does not start with its token string");
        return true;
    }
    return true;
  }

  bool StartContainer(bool is_object) {
    if (frames_.size() >= options_.max_json_depth) {
      status = absl::ResourceExhaustedError(absl::StrCat(
          source_, ": JSON nesting deeper than max_json_depth (", options_.max_json_depth, ")"));
      return false;
    }
    if (frames_.empty()) {
      if (!is_object) return Fail("the top level is not an object");
      root = Json::object();
      frames_.push_back({FrameKind::kDom, false, false, 0, &root});
      return true;
    }
    Frame& parent = frames_.back();
    switch (parent.kind) {
      case FrameKind::kSkip:
        frames_.push_back({FrameKind::kSkip});
        return true;
      case FrameKind::kVocabObject:
        return Fail(absl::StrCat("model.vocab gives ", Quoted(pending_piece_view()),
                                 " a container where an id was expected"));
      case FrameKind::kVocabListEntry:
        return Fail("model.vocab list entries must be [token, score] arrays");
      case FrameKind::kVocabList:
        if (is_object) return Fail("model.vocab list entries must be [token, score] arrays");
        frames_.push_back({FrameKind::kVocabListEntry});
        return true;
      case FrameKind::kDom:
        break;
    }
    if (parent.is_model && (pending_key_ == "vocab" || pending_key_ == "merges")) {
      if (pending_key_ == "merges") {
        frames_.push_back({FrameKind::kSkip});
        return true;
      }
      if (vocab_seen) return Fail("model.vocab appears twice");
      vocab_seen = true;
      vocab_is_list = !is_object;
      frames_.push_back({is_object ? FrameKind::kVocabObject : FrameKind::kVocabList});
      return true;
    }
    const bool is_model = is_object && frames_.size() == 1 && pending_key_ == "model";
    Json* child;
    if (parent.container->is_object()) {
      child = &((*parent.container)[pending_key_] = is_object ? Json::object() : Json::array());
    } else {
      parent.container->push_back(is_object ? Json::object() : Json::array());
      child = &parent.container->back();
    }
    frames_.push_back({FrameKind::kDom, is_model, false, 0, child});
    return true;
  }

  bool EndContainer() {
    const Frame frame = frames_.back();
    frames_.pop_back();
    if (frame.kind == FrameKind::kVocabListEntry) {
      if (!frame.has_piece) return Fail("model.vocab entry does not start with its token string");
      const uint64_t id = vocab.size();
      if (id >= options_.max_vocab_size) {
        return Fail(absl::StrCat("model.vocab has more than max_vocab_size (", options_.max_vocab_size,
                                 ") entries"));
      }
      vocab.push_back({pending_piece_offset_, pending_piece_length_, static_cast<uint32_t>(id)});
    }
    return true;
  }

  const std::string& source_;
  const VocabularyOptions& options_;
  std::vector<Frame> frames_;
  std::string pending_key_;
  uint32_t pending_piece_offset_ = 0;
  uint32_t pending_piece_length_ = 0;
};

// ---------------------------------------------------------------------------
// Step 2: the decoder plan.

struct DecodeStep {
  enum class Op : uint8_t { kReplace, kByteFallback, kByteLevel };
  Op op;
  std::string from;  // kReplace only
  std::string to;
};

struct DecoderPlan {
  std::vector<DecodeStep> steps;
  DecoderKind kind = DecoderKind::kText;
};

const Json* Member(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string StringMember(const Json& object, std::string_view key) {
  const Json* member = Member(object, key);
  return member != nullptr && member->is_string() ? member->get<std::string>() : std::string();
}

// The components of a decoder or pre_tokenizer in order, Sequences flattened
// (`list_key` is "decoders" or "pretokenizers"). Iterative.
absl::StatusOr<std::vector<const Json*>> FlattenSequence(const Json& node, const char* list_key,
                                                         const char* what, const std::string& source) {
  std::vector<const Json*> flat;
  std::vector<std::pair<const Json*, size_t>> open;  // (array, next index)
  const Json* next = &node;
  while (true) {
    if (next != nullptr) {
      if (!next->is_object()) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": ", what, " is not an object"));
      }
      if (StringMember(*next, "type") == "Sequence") {
        const Json* list = Member(*next, list_key);
        if (list == nullptr || !list->is_array()) {
          return absl::InvalidArgumentError(
              absl::StrCat(source, ": ", what, " of type Sequence has no '", list_key, "' array"));
        }
        open.push_back({list, 0});
      } else {
        flat.push_back(next);
      }
      next = nullptr;
    }
    if (open.empty()) break;
    auto& [list, index] = open.back();
    if (index == list->size()) {
      open.pop_back();
      continue;
    }
    next = &(*list)[index++];
  }
  return flat;
}

absl::StatusOr<DecoderPlan> PlanDecoder(const Json& root, bool model_byte_fallback,
                                        const std::string& source) {
  DecoderPlan plan;
  const Json* decoder = Member(root, "decoder");
  if (decoder != nullptr && !decoder->is_null()) {
    absl::StatusOr<std::vector<const Json*>> parts = FlattenSequence(*decoder, "decoders", "decoder", source);
    if (!parts.ok()) return parts.status();
    bool fused = false;
    for (const Json* part : *parts) {
      const std::string type = StringMember(*part, "type");
      if (type == "ByteLevel") {
        plan.steps.push_back({DecodeStep::Op::kByteLevel, "", ""});
      } else if (type == "ByteFallback") {
        plan.steps.push_back({DecodeStep::Op::kByteFallback, "", ""});
      } else if (type == "Metaspace") {
        const Json* replacement = Member(*part, "replacement");
        std::string from = replacement != nullptr && replacement->is_string()
                               ? replacement->get<std::string>()
                               : std::string("\xE2\x96\x81");
        if (from.empty()) {
          return absl::InvalidArgumentError(absl::StrCat(source, ": decoder Metaspace has an empty replacement"));
        }
        plan.steps.push_back({DecodeStep::Op::kReplace, std::move(from), " "});
      } else if (type == "Replace") {
        const Json* pattern = Member(*part, "pattern");
        const Json* content = Member(*part, "content");
        if (pattern != nullptr && Member(*pattern, "Regex") != nullptr) {
          return absl::UnimplementedError(absl::StrCat(source, ": decoder Replace with a Regex pattern is not supported"));
        }
        const Json* from = pattern == nullptr ? nullptr : Member(*pattern, "String");
        if (from == nullptr || !from->is_string() || from->get_ref<const std::string&>().empty() ||
            content == nullptr || !content->is_string()) {
          return absl::InvalidArgumentError(absl::StrCat(
              source, ": decoder Replace needs a non-empty pattern.String and a string content"));
        }
        plan.steps.push_back({DecodeStep::Op::kReplace, from->get<std::string>(), content->get<std::string>()});
      } else if (type == "Fuse") {
        fused = true;
      } else if (type == "Strip") {
        if (!fused) {
          return absl::UnimplementedError(absl::StrCat(
              source, ": decoder Strip before Fuse strips every token; not supported"));
        }
        // After Fuse it trims the whole decoded text, not a token: ignored.
      } else if (type.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": a decoder has no 'type'"));
      } else {
        return absl::UnimplementedError(absl::StrCat(source, ": decoder type '", type,
                                                     "' is not supported (token bytes would not "
                                                     "concatenate to the decoded text)"));
      }
    }
  } else {
    const Json* pre_tokenizer = Member(root, "pre_tokenizer");
    if (pre_tokenizer != nullptr && !pre_tokenizer->is_null()) {
      absl::StatusOr<std::vector<const Json*>> parts =
          FlattenSequence(*pre_tokenizer, "pretokenizers", "pre_tokenizer", source);
      if (!parts.ok()) return parts.status();
      for (const Json* part : *parts) {
        const std::string type = StringMember(*part, "type");
        if (type == "ByteLevel") {
          plan.steps = {{DecodeStep::Op::kByteLevel, "", ""}};
          break;
        }
        if (type == "Metaspace") {
          std::string from = StringMember(*part, "replacement");
          if (from.empty()) from = "\xE2\x96\x81";
          plan.steps = {{DecodeStep::Op::kReplace, std::move(from), " "}};
          if (model_byte_fallback) plan.steps.push_back({DecodeStep::Op::kByteFallback, "", ""});
          break;
        }
      }
    }
    if (plan.steps.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": no decoder, and no ByteLevel or Metaspace pre_tokenizer: cannot tell how "
                  "token strings map to bytes"));
    }
  }
  bool sentencepiece = false;
  for (const DecodeStep& step : plan.steps) {
    if (step.op == DecodeStep::Op::kByteLevel) {
      plan.kind = DecoderKind::kByteLevel;
      return plan;
    }
    if (step.op == DecodeStep::Op::kByteFallback ||
        (step.op == DecodeStep::Op::kReplace && step.from == "\xE2\x96\x81")) {
      sentencepiece = true;
    }
  }
  plan.kind = sentencepiece ? DecoderKind::kSentencePiece : DecoderKind::kText;
  return plan;
}

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// HF's ByteLevel decoder on one token: every character through the table, or
// the token's own bytes when some character has no byte.
void ByteLevelDecode(std::string_view text, std::string* out) {
  const size_t start = out->size();
  size_t pos = 0;
  while (pos < text.size()) {
    const grammar::DecodedCodepoint decoded = grammar::DecodeUtf8(text.substr(pos));
    if (decoded.length == 0 || decoded.codepoint >= kByteLevelCodepoints ||
        kByteLevelDecode[decoded.codepoint] < 0) {
      out->resize(start);
      out->append(text);
      return;
    }
    out->push_back(static_cast<char>(kByteLevelDecode[decoded.codepoint]));
    pos += decoded.length;
  }
}

// Runs `steps` on one token string; the result replaces *text.
void ApplySteps(const std::vector<DecodeStep>& steps, std::string* text, std::string* scratch) {
  for (const DecodeStep& step : steps) {
    switch (step.op) {
      case DecodeStep::Op::kReplace:
        if (text->find(step.from) != std::string::npos) {
          *text = absl::StrReplaceAll(*text, {{step.from, step.to}});
        }
        break;
      case DecodeStep::Op::kByteFallback:
        if (text->size() == 6 && text->compare(0, 3, "<0x") == 0 && (*text)[5] == '>') {
          const int high = HexDigitValue((*text)[3]);
          const int low = HexDigitValue((*text)[4]);
          if (high >= 0 && low >= 0) text->assign(1, static_cast<char>(high * 16 + low));
        }
        break;
      case DecodeStep::Op::kByteLevel:
        scratch->clear();
        ByteLevelDecode(*text, scratch);
        std::swap(*text, *scratch);
        break;
    }
  }
}

}  // namespace

std::string ByteLevelTokenBytes(std::string_view token) {
  std::string out;
  ByteLevelDecode(token, &out);
  return out;
}

// ---------------------------------------------------------------------------
// Step 3: assembly.

class VocabularyLoader {
 public:
  static absl::StatusOr<Vocabulary> Load(std::string_view json_text, const std::string& source,
                                         const VocabularyOptions& options);
};

namespace {

struct AddedToken {
  uint32_t id;
  std::string content;
  bool special;
};

absl::StatusOr<std::vector<AddedToken>> ReadAddedTokens(const Json& root, const VocabularyOptions& options,
                                                        const std::string& source) {
  std::vector<AddedToken> added;
  const Json* list = Member(root, "added_tokens");
  if (list == nullptr || list->is_null()) return added;
  if (!list->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": added_tokens is not an array"));
  }
  added.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& entry = (*list)[i];
    const Json* id = Member(entry, "id");
    const Json* content = Member(entry, "content");
    const Json* special = Member(entry, "special");
    if (id == nullptr || !id->is_number_integer() || content == nullptr || !content->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": added_tokens[", i, "] needs an integer 'id' and a string 'content'"));
    }
    const bool in_range = id->is_number_unsigned() && id->get<uint64_t>() < options.max_vocab_size;
    if (!in_range) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": added_tokens[", i, "] id ", id->dump(), " is out of range (0 to max_vocab_size ",
          options.max_vocab_size, ")"));
    }
    if (special != nullptr && !special->is_boolean()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": added_tokens[", i, "].special is not a boolean"));
    }
    added.push_back({static_cast<uint32_t>(id->get<uint64_t>()), content->get<std::string>(),
                     special != nullptr && special->get<bool>()});
  }
  return added;
}

}  // namespace

absl::StatusOr<Vocabulary> VocabularyLoader::Load(std::string_view json_text, const std::string& source,
                                                  const VocabularyOptions& options) {
  if (json_text.size() > options.max_file_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(source, ": ", json_text.size(),
                                                     " bytes exceed max_file_bytes (",
                                                     options.max_file_bytes, ")"));
  }
  TokenizerJsonReader reader(source, options);
  const bool parsed = Json::sax_parse(json_text.begin(), json_text.end(), &reader);
  if (!reader.status.ok()) return reader.status;
  if (!parsed) return absl::InvalidArgumentError(absl::StrCat(source, ": not valid JSON"));

  const Json* model = Member(reader.root, "model");
  if (model == nullptr || !model->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": missing the 'model' object"));
  }
  if (!reader.vocab_seen) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": missing model.vocab"));
  }
  const Json* model_type = Member(*model, "type");
  if (model_type != nullptr && !model_type->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": model.type is not a string"));
  }
  const std::string type = model_type == nullptr ? "" : model_type->get<std::string>();
  if (type == "WordPiece") {
    return absl::UnimplementedError(absl::StrCat(source, ": model.type WordPiece is not supported"));
  }
  if (type != "" && type != "BPE" && type != "Unigram" && type != "WordLevel") {
    return absl::UnimplementedError(absl::StrCat(source, ": unknown model.type '", type, "'"));
  }
  if ((type == "Unigram") != reader.vocab_is_list && type != "") {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": model.vocab of a ", type, " model must be ",
        type == "Unigram" ? "a list of [token, score]" : "an object of token: id"));
  }
  const Json* byte_fallback = Member(*model, "byte_fallback");
  const bool model_byte_fallback = byte_fallback != nullptr && byte_fallback->is_boolean() &&
                                   byte_fallback->get<bool>();
  absl::StatusOr<DecoderPlan> plan = PlanDecoder(reader.root, model_byte_fallback, source);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<std::vector<AddedToken>> added = ReadAddedTokens(reader.root, options, source);
  if (!added.ok()) return added.status();

  // Which entry defines each id: vocab entry index, or kAddedBit | added index.
  constexpr uint32_t kAddedBit = 0x80000000u;
  uint64_t size = 0;
  for (const RawVocabEntry& entry : reader.vocab) size = std::max<uint64_t>(size, uint64_t{entry.id} + 1);
  for (const AddedToken& token : *added) size = std::max<uint64_t>(size, uint64_t{token.id} + 1);
  if (size == 0) return absl::InvalidArgumentError(absl::StrCat(source, ": the tokenizer defines no tokens"));
  const uint64_t padded = options.padded_size == 0 ? size : options.padded_size;
  if (padded < size) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": padded_size ", padded,
                                                   " is smaller than the tokenizer's ", size, " ids"));
  }
  if (padded > options.max_vocab_size) {
    return absl::ResourceExhaustedError(absl::StrCat(source, ": padded_size ", padded,
                                                     " exceeds max_vocab_size (", options.max_vocab_size, ")"));
  }
  auto piece_of = [&](const RawVocabEntry& entry) {
    return std::string_view(reader.piece_arena).substr(entry.piece_offset, entry.piece_length);
  };
  std::vector<uint32_t> defined_by(size, kNoEntry);
  for (uint32_t i = 0; i < reader.vocab.size(); ++i) {
    const RawVocabEntry& entry = reader.vocab[i];
    if (defined_by[entry.id] != kNoEntry) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": duplicate id ", entry.id, " in model.vocab (", Quoted(piece_of(reader.vocab[defined_by[entry.id]])),
          " and ", Quoted(piece_of(entry)), ")"));
    }
    defined_by[entry.id] = i;
  }
  std::vector<bool> added_seen(size, false);
  for (uint32_t i = 0; i < added->size(); ++i) {
    const AddedToken& token = (*added)[i];
    if (added_seen[token.id]) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": duplicate id ", token.id, " in added_tokens (",
                                                     Quoted(token.content), ")"));
    }
    added_seen[token.id] = true;
    defined_by[token.id] = kAddedBit | i;
  }

  Vocabulary vocabulary;
  vocabulary.source_name_ = source;
  vocabulary.size_ = static_cast<TokenId>(size);
  vocabulary.decoder_kind_ = plan->kind;
  vocabulary.records_.assign(padded, TokenRecord{0, 0, TokenKind::kUnused, 0});
  vocabulary.bytes_.reserve(reader.piece_arena.size());
  std::string text;
  std::string scratch;
  for (uint32_t id = 0; id < size; ++id) {
    const uint32_t definition = defined_by[id];
    if (definition == kNoEntry) continue;
    const bool from_added = (definition & kAddedBit) != 0;
    const AddedToken* added_token = from_added ? &(*added)[definition & ~kAddedBit] : nullptr;
    if (from_added) {
      text = added_token->content;
    } else {
      text.assign(piece_of(reader.vocab[definition]));
    }
    ApplySteps(plan->steps, &text, &scratch);
    if (text.size() > UINT16_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": token ", id, " is ", text.size(),
                                                     " bytes long (at most 65535 are supported)"));
    }
    if (vocabulary.bytes_.size() + text.size() > UINT32_MAX) {
      return absl::ResourceExhaustedError(absl::StrCat(source, ": token bytes exceed 4 GiB"));
    }
    TokenRecord& record = vocabulary.records_[id];
    record.offset = static_cast<uint32_t>(vocabulary.bytes_.size());
    record.length = static_cast<uint16_t>(text.size());
    record.kind = added_token != nullptr && added_token->special ? TokenKind::kSpecial : TokenKind::kNormal;
    // A normal token without bytes (`"": 3` in model.vocab) would be allowed
    // in every mask and accepted without progress (a model could emit it
    // forever): unused, as FromTokenBytes reads an empty token. Found by
    // fuzz/vocabulary_fuzzer.cc.
    if (record.kind == TokenKind::kNormal && text.empty()) record.kind = TokenKind::kUnused;
    vocabulary.bytes_.append(text);
  }

  if (options.eos_ids.has_value()) {
    for (TokenId id : *options.eos_ids) {
      if (id < 0 || static_cast<uint64_t>(id) >= size) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": EOS id ", id, " from the options is outside [0, ",
                                                       size, ")"));
      }
      vocabulary.eos_ids_.push_back(id);
    }
  } else {
    for (const AddedToken& token : *added) {
      if (!token.special) continue;
      if (std::find(options.eos_token_contents.begin(), options.eos_token_contents.end(), token.content) !=
          options.eos_token_contents.end()) {
        vocabulary.eos_ids_.push_back(static_cast<TokenId>(token.id));
      }
    }
  }
  vocabulary.trie_slot_->mask_cache_bytes = options.mask_cache_bytes;
  vocabulary.trie_slot_->token_set_cache_bytes = options.token_set_cache_bytes;
  vocabulary.bytes_.shrink_to_fit();
  std::sort(vocabulary.eos_ids_.begin(), vocabulary.eos_ids_.end());
  vocabulary.eos_ids_.erase(std::unique(vocabulary.eos_ids_.begin(), vocabulary.eos_ids_.end()),
                            vocabulary.eos_ids_.end());
  for (TokenId id : vocabulary.eos_ids_) vocabulary.records_[id].flags |= TokenRecord::kEosFlag;
  return vocabulary;
}

absl::StatusOr<Vocabulary> Vocabulary::FromTokenBytes(const std::vector<std::string>& tokens,
                                                      const std::vector<TokenId>& eos_ids,
                                                      std::string_view source_name) {
  Vocabulary vocabulary;
  vocabulary.source_name_ = std::string(source_name);
  vocabulary.decoder_kind_ = DecoderKind::kText;
  vocabulary.size_ = static_cast<TokenId>(tokens.size());
  vocabulary.records_.assign(tokens.size(), TokenRecord{0, 0, TokenKind::kNormal, 0});
  for (TokenId id : eos_ids) {
    if (id < 0 || static_cast<size_t>(id) >= tokens.size()) {
      return absl::InvalidArgumentError(absl::StrCat(vocabulary.source_name_, ": EOS id ", id, " is outside [0, ",
                                                     tokens.size(), ")"));
    }
    vocabulary.records_[id].kind = TokenKind::kSpecial;
    vocabulary.eos_ids_.push_back(id);
  }
  for (size_t id = 0; id < tokens.size(); ++id) {
    TokenRecord& record = vocabulary.records_[id];
    if (record.kind == TokenKind::kSpecial) continue;
    if (tokens[id].empty()) {  // padding or a token without text: never produced
      record.kind = TokenKind::kUnused;
      continue;
    }
    if (tokens[id].size() > UINT16_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(vocabulary.source_name_, ": token ", id, " is ", tokens[id].size(),
                                                     " bytes long (at most 65535 are supported)"));
    }
    record.offset = static_cast<uint32_t>(vocabulary.bytes_.size());
    record.length = static_cast<uint16_t>(tokens[id].size());
    vocabulary.bytes_.append(tokens[id]);
  }
  std::sort(vocabulary.eos_ids_.begin(), vocabulary.eos_ids_.end());
  vocabulary.eos_ids_.erase(std::unique(vocabulary.eos_ids_.begin(), vocabulary.eos_ids_.end()),
                            vocabulary.eos_ids_.end());
  for (TokenId id : vocabulary.eos_ids_) vocabulary.records_[id].flags |= TokenRecord::kEosFlag;
  return vocabulary;
}

// ---------------------------------------------------------------------------

std::string_view DecoderKindName(DecoderKind kind) {
  switch (kind) {
    case DecoderKind::kByteLevel:
      return "byte-level";
    case DecoderKind::kSentencePiece:
      return "sentencepiece";
    case DecoderKind::kText:
      return "text";
  }
  return "?";
}

std::vector<std::string> DefaultEosTokenContents() {
  return {"</s>",        "<eos>",     "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
          "<|eot_id|>", "<|eom_id|>", "<|im_end|>",    "<|end|>"};
}

absl::StatusOr<Vocabulary> Vocabulary::LoadFromJson(std::string_view json_text, std::string_view source_name,
                                                    const VocabularyOptions& options) {
  return VocabularyLoader::Load(json_text, std::string(source_name), options);
}

absl::StatusOr<Vocabulary> Vocabulary::LoadFromFile(const std::string& path, const VocabularyOptions& options) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  const std::streamoff length = file.tellg();
  if (length < 0) return absl::NotFoundError(absl::StrCat(path, ": cannot read"));
  if (static_cast<uint64_t>(length) > options.max_file_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(path, ": ", length, " bytes exceed max_file_bytes (",
                                                     options.max_file_bytes, ")"));
  }
  std::string text(static_cast<size_t>(length), '\0');
  file.seekg(0);
  if (!file.read(text.data(), length)) return absl::NotFoundError(absl::StrCat(path, ": cannot read"));
  absl::StatusOr<Vocabulary> vocabulary = LoadFromJson(text, path, options);
  if (vocabulary.ok()) vocabulary->trie_slot_->tokenizer_path = path;
  return vocabulary;
}

absl::StatusOr<std::shared_ptr<const CanonicalTokenizer>> Vocabulary::SharedCanonicalTokenizer() const {
  std::lock_guard<std::mutex> lock(trie_slot_->canonical_mu);
  if (!trie_slot_->canonical_loaded) {
    if (trie_slot_->tokenizer_path.empty()) {
      trie_slot_->canonical = absl::FailedPreconditionError(absl::StrCat(
          source_name_, ": canonical tokenization needs a vocabulary loaded from a tokenizer.json file"));
    } else {
      trie_slot_->canonical = CanonicalTokenizer::LoadFromFile(trie_slot_->tokenizer_path);
    }
    trie_slot_->canonical_loaded = true;
  }
  return trie_slot_->canonical;
}

std::string_view Vocabulary::token_bytes(TokenId id) const {
  const TokenRecord& record = records_[Checked(id)];
  return std::string_view(bytes_).substr(record.offset, record.length);
}

uint64_t Vocabulary::Fingerprint() const {
  std::call_once(trie_slot_->fingerprint_once, [this] {
    // One stream: per id a 4-byte record (kind, EOS flag, length) and the
    // bytes, then the two sizes; offsets into bytes_ are not hashed (they
    // depend on how the vocabulary was laid out, not on what it is).
    grammar::XxHash64Stream hash;
    for (TokenId id = 0; id < padded_size(); ++id) {
      const TokenRecord& r = records_[static_cast<size_t>(id)];
      const char head[4] = {static_cast<char>(r.kind), static_cast<char>(r.flags),
                            static_cast<char>(r.length & 0xFF), static_cast<char>(r.length >> 8)};
      hash.Update(std::string_view(head, sizeof head));
      hash.Update(token_bytes(id));
    }
    const uint32_t sizes[2] = {static_cast<uint32_t>(size_), static_cast<uint32_t>(padded_size())};
    hash.Update(std::string_view(reinterpret_cast<const char*>(sizes), sizeof sizes));
    trie_slot_->fingerprint = hash.Digest();
  });
  return trie_slot_->fingerprint;
}

int32_t Vocabulary::count(TokenKind kind) const {
  int32_t total = 0;
  for (const TokenRecord& record : records_) total += record.kind == kind ? 1 : 0;
  return total;
}

absl::StatusOr<std::string> Vocabulary::DecodeTokens(absl::Span<const TokenId> ids) const {
  std::string out;
  for (TokenId id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= records_.size()) {
      return absl::OutOfRangeError(absl::StrCat(source_name_, ": token id ", id, " is outside [0, ",
                                                records_.size(), ")"));
    }
    out.append(token_bytes(id));
  }
  return out;
}

size_t Vocabulary::memory_bytes() const {
  return bytes_.capacity() + records_.capacity() * sizeof(TokenRecord) + eos_ids_.capacity() * sizeof(TokenId);
}

}  // namespace zapgram::masks
