// libFuzzer target for masks/vocabulary.cc: tokenizer.json text (Hugging
// Face byte-level BPE, SentencePiece with byte fallback, WordPiece, ...).
// Every text gives a vocabulary or a clear status. A vocabulary that loads
// must be self-consistent (ids in range, EOS ids special, normal tokens
// non-empty) and, when small, usable: compiled with builtin:json (the token
// trie and token sets are built from it) it gives a first mask whose count
// matches its bits and allows exactly the normal tokens that a recognizer
// takes as a JSON text's start, plus no EOS. Seeds: scripts/fuzz_seeds.py
// cuts the shared tokenizers down to a few hundred ids each.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "api/grammar_data.h"
#include "masks/matcher.h"
#include "masks/vocabulary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zapgram;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<masks::Vocabulary> loaded = masks::Vocabulary::LoadFromJson(text, "<fuzz>");
  if (!loaded.ok()) {
    ZAPGRAM_FUZZ_CHECK(!loaded.status().message().empty());
    return 0;
  }
  const masks::Vocabulary& v = *loaded;
  ZAPGRAM_FUZZ_CHECK(v.size() >= 0 && v.size() <= v.padded_size());
  for (masks::TokenId eos : v.eos_ids()) {
    ZAPGRAM_FUZZ_CHECK(eos >= 0 && eos < v.padded_size());
    ZAPGRAM_FUZZ_CHECK(v.kind(eos) != masks::TokenKind::kNormal);
  }
  if (v.padded_size() > 4096) return 0;
  std::vector<std::string> tokens(static_cast<size_t>(v.padded_size()));
  for (masks::TokenId id = 0; id < v.padded_size(); ++id) {
    if (v.kind(id) == masks::TokenKind::kNormal) {
      ZAPGRAM_FUZZ_CHECK(!v.token_bytes(id).empty());
      tokens[static_cast<size_t>(id)] = std::string(v.token_bytes(id));
    }
  }
  static const Grammar* json = [] {
    absl::StatusOr<Grammar> g = Grammar::Load("builtin:json");
    ZAPGRAM_FUZZ_CHECK(g.ok());
    return new Grammar(*std::move(g));
  }();
  std::shared_ptr<const parser::FlatGrammar> flat(json->shared_data(), &json->data().flat);
  absl::StatusOr<std::shared_ptr<const masks::CompiledGrammar>> compiled =
      masks::CompiledGrammar::Build(flat, std::make_shared<const masks::Vocabulary>(*std::move(loaded)));
  ZAPGRAM_FUZZ_CHECK(compiled.ok());
  masks::Matcher matcher(*compiled);
  std::vector<uint32_t> words((*compiled)->mask_words());
  const size_t allowed = matcher.ComputeMask(words.data());
  size_t bits = 0;
  for (uint32_t w : words) bits += static_cast<size_t>(__builtin_popcount(w));
  ZAPGRAM_FUZZ_CHECK(bits == allowed);
  for (size_t id = 0; id < tokens.size(); ++id) {
    const bool in_mask = (words[id / 32] >> (id % 32)) & 1u;
    bool expected = false;
    if (!tokens[id].empty()) {
      Recognizer r(*json);
      expected = r.FeedBytes(tokens[id]) == tokens[id].size();
    }
    ZAPGRAM_FUZZ_CHECK(in_mask == expected);
  }
  return 0;
}
