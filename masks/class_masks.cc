// Masks over token classes (see class_masks.h).
#include "masks/class_masks.h"

#include <algorithm>
#include <bit>
#include <string>
#include <utility>

#include "masks/matcher.h"

namespace zapgram::masks {

size_t ClassMasks::Expand(const uint32_t* class_words, uint32_t* words, size_t mask_words) const {
  std::fill(words, words + mask_words, 0u);
  size_t allowed = 0;
  const size_t classes = member_begin.size() - 1;
  for (size_t w = 0; w * 32 < classes; ++w) {
    for (uint32_t bits = class_words[w]; bits != 0; bits &= bits - 1) {
      const size_t k = 32 * w + static_cast<size_t>(std::countr_zero(bits));
      allowed += member_begin[k + 1] - member_begin[k];
      if (dense_index[k] != kNotDense) {
        const DenseClass& d = dense[dense_index[k]];
        uint32_t* out = words + d.first_word;
        for (size_t i = 0; i < d.words.size(); ++i) out[i] |= d.words[i];
        continue;
      }
      for (uint32_t m = member_begin[k]; m < member_begin[k + 1]; ++m) SetBit(words, static_cast<TokenId>(members[m]));
    }
  }
  return allowed;
}

absl::StatusOr<std::shared_ptr<const ClassMasks>> BuildClassMasks(
    const CompiledGrammar& grammar, std::shared_ptr<const parser::FlatGrammar> flat) {
  const TokenClasses& classes = grammar.token_classes();
  const Vocabulary& vocab = grammar.vocabulary();
  auto out = std::make_shared<ClassMasks>();
  const uint32_t n = classes.num_classes();
  out->member_begin.assign(n + 1, 0);
  for (uint32_t c : classes.class_of) ++out->member_begin[c + 1];
  for (uint32_t k = 0; k < n; ++k) out->member_begin[k + 1] += out->member_begin[k];
  out->members.resize(classes.class_of.size());
  std::vector<uint32_t> fill(out->member_begin.begin(), out->member_begin.end() - 1);
  for (size_t id = 0; id < classes.class_of.size(); ++id) out->members[fill[classes.class_of[id]]++] = static_cast<uint32_t>(id);
  // Classes whose members outnumber the mask's words / kDenseWordsPerMember
  // also get their bitset (members are ascending: first and last give the
  // span).
  const size_t mask_words = grammar.mask_words();
  out->dense_index.assign(n, ClassMasks::kNotDense);
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t begin = out->member_begin[k], end = out->member_begin[k + 1];
    if (static_cast<size_t>(end - begin) * ClassMasks::kDenseWordsPerMember < mask_words) continue;
    ClassMasks::DenseClass d;
    d.first_word = out->members[begin] / 32;
    d.words.assign(out->members[end - 1] / 32 + 1 - d.first_word, 0u);
    for (uint32_t m = begin; m < end; ++m) {
      const uint32_t id = out->members[m];
      d.words[id / 32 - d.first_word] |= 1u << (id % 32);
    }
    out->dense_index[k] = static_cast<uint32_t>(out->dense.size());
    out->dense.push_back(std::move(d));
  }
  // One token per class: the representative's bytes; EOS classes are EOS
  // ids, other non-text classes unused ids (empty).
  std::vector<std::string> tokens(n);
  std::vector<TokenId> eos;
  for (uint32_t k = 0; k < n; ++k) {
    const TokenId rep = classes.representative[k];
    if (vocab.is_eos(rep)) {
      eos.push_back(static_cast<TokenId>(k));
    } else if (vocab.kind(rep) == TokenKind::kNormal) {
      tokens[k] = std::string(vocab.token_bytes(rep));
    }
  }
  absl::StatusOr<Vocabulary> reps = Vocabulary::FromTokenBytes(tokens, eos, "<token class representatives>");
  if (!reps.ok()) return reps.status();
  absl::StatusOr<std::shared_ptr<const CompiledGrammar>> compiled =
      CompiledGrammar::Build(std::move(flat), std::make_shared<const Vocabulary>(*std::move(reps)));
  if (!compiled.ok()) return compiled.status();
  out->representatives = *std::move(compiled);
  return std::shared_ptr<const ClassMasks>(std::move(out));
}

}  // namespace zapgram::masks
