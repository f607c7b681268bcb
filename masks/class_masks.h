// Masks over token classes: the mask walk runs on a vocabulary of one token
// per class (masks/token_classes.h) and the class mask is expanded to ids.
//
// A class's members are allowed or rejected together in every state, so the
// verdict of its smallest member decides the class. The representatives
// form a vocabulary of their own (id k = class k: a normal class's smallest
// token's bytes, the EOS class an EOS id, the never-allowed class an unused
// id), compiled over the same lowered grammar; its trie has one token per
// class (Llama 3: ~5-7k tokens for a SynCode Lark grammar, ~500 for JSON,
// instead of 128k), so the uncertain walk and the token-set builds of the
// Matcher touch ~20x fewer nodes. The Matcher keeps one recognizer: with
// MatcherOptions::token_classes, a mask missing from the cache is
// computed with the representatives' grammar (its trie and token sets) on
// the same parser state and expanded here: per allowed class, its member
// ids (a CSR list), so the cost is that of the allowed ids (~50 us for
// half of Llama 3). A class with more members than a mask has 32-bit words
// / kDenseWordsPerMember (identifiers, words, numbers: a few dozen classes
// holding most of the vocabulary) is kept as a bitset too, over the words
// its members span, and OR-ed in word by word: the expansion fell from
// ~13 % of go.lark's mask instructions to ~4 % (callgrind, 4 docs). Masks are
// cached expanded, as without classes.
//
// Measured (zapgram bench --token-classes, Llama 3, load ~1.4 on 2 cores;
// mask us mean / p90 / p99 without -> with): SQL 275/824/1795 ->
// 88/293/397, Java 71/121/809 -> 46/81/640 (max 48 -> 2.7 ms), Go
// 158/623/785 -> 147/593/734, MaskBench (100 docs) 12.4/28/86 ->
// 12.2/16/145, json-docs 1.7/1.1/34 -> 2.4/1.4/89. The classes cost
// 0.2-0.35 s per Lark grammar and ~28 ms per schema (median) up front
// (compile ms 41 -> 248 for SQL, 0.8 -> 28 for MaskBench). So it is off by
// default: it pays for a Lark grammar that serves many masks, not for a
// fresh schema or for JSON (the ~50-90 us expansion outweighs their cheap
// walks).
//
// Not built for grammars with token terminals (their ids are singletons
// already, and the representatives' vocabulary could not name them).
// The representatives' vocabulary has the default cache budgets of its own
// (VocabularyOptions): class masks are ~20x smaller than masks.
//
// Tests: tests/masks/token_classes_test.cc (TokenClassMasks.*: the masks
// with classes equal the plain masks along traces).
#ifndef ZAPGRAM_MASKS_CLASS_MASKS_H_
#define ZAPGRAM_MASKS_CLASS_MASKS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "parser/flat_grammar.h"

namespace zapgram::masks {

class CompiledGrammar;

struct ClassMasks {
  // The grammar over the representatives' vocabulary.
  std::shared_ptr<const CompiledGrammar> representatives;
  // Per class k, its ids: members[member_begin[k] .. member_begin[k + 1]).
  std::vector<uint32_t> member_begin, members;
  // Dense classes: per class k, its index in `dense` or kNotDense; each
  // dense class's words [first_word, first_word + words.size()) of a mask.
  static constexpr uint32_t kNotDense = 0xFFFFFFFFu;
  static constexpr size_t kDenseWordsPerMember = 8;
  struct DenseClass {
    uint32_t first_word = 0;
    std::vector<uint32_t> words;
  };
  std::vector<uint32_t> dense_index;
  std::vector<DenseClass> dense;

  // Sets in `words` (mask_words words, cleared first) the members of the
  // classes set in `class_words`; returns how many ids that allows.
  size_t Expand(const uint32_t* class_words, uint32_t* words, size_t mask_words) const;
  size_t bytes() const {
    size_t b = 4 * (member_begin.capacity() + members.capacity() + dense_index.capacity());
    for (const DenseClass& d : dense) b += sizeof(DenseClass) + 4 * d.words.capacity();
    return b;
  }
};

// The class masks of `grammar` (its lowered grammar `flat`, shared).
absl::StatusOr<std::shared_ptr<const ClassMasks>> BuildClassMasks(
    const CompiledGrammar& grammar, std::shared_ptr<const parser::FlatGrammar> flat);

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_CLASS_MASKS_H_
