// Draft trees as the Python package receives them:
// GrammarMatcher.traverse_draft_tree (one tree, XGrammar's signature) and
// BatchGrammarMatcher.batch_traverse_draft_tree (one tree per matcher).
//
// The tree arrays (retrieve_next_token, retrieve_next_sibling,
// draft_tokens; zapgram/matcher.h DraftTree): one tree is three 1-D int64
// (or int32) tensors or numpy arrays, as XGrammar takes them, or lists of
// ints; a batch of B trees is three 2-D arrays of B rows (SGLang's layout),
// or lists of B such 1-D arrays / lists (trees of different sizes). Read
// once into vectors (a tree has hundreds of nodes at most; the walk costs
// microseconds per node).
//
// Outputs: token_bitmask holds one int32 row of mask_words words per node,
// the trees' rows one after the other (tree k's node i at row
// offset_k + i, offset_k the nodes of the trees before it: k * N for trees
// of N nodes), exactly as many rows as nodes (XGrammar's check), rows
// contiguous and apart. temperatures, when given, is float32 with one
// entry per node in the same order: 1-D, or 2-D (B, N) for a batch of
// equal trees; each tree's entries contiguous.
//
// Errors name the argument: TypeError for a wrong type or dtype,
// ValueError for shapes, lengths and layouts (the tree's own checks - links,
// cycles, a root with a sibling - come from the engine as ValueError).
//
// Tests: tests/python/test_draft_tree.py.
#ifndef ZAPGRAM_PYTHON_SRC_DRAFT_TREES_H_
#define ZAPGRAM_PYTHON_SRC_DRAFT_TREES_H_

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "zapgram/matcher.h"

namespace zapgram::python {

struct DraftTreeArgs {
  // One entry per tree.
  std::vector<std::vector<int64_t>> next_token, next_sibling, tokens;
  size_t trees() const { return tokens.size(); }
  DraftTree tree(size_t k) const { return {next_token[k], next_sibling[k], tokens[k]}; }
};

// One tree (batch empty) or `*batch` trees.
DraftTreeArgs ReadDraftTrees(pybind11::handle retrieve_next_token, pybind11::handle retrieve_next_sibling,
                             pybind11::handle draft_tokens, std::optional<size_t> batch);

struct DraftTreeOutputs {
  std::vector<uint32_t*> masks;             // per tree: its first row
  size_t row_stride = 0;                    // words between rows (0: one row in all)
  std::vector<absl::Span<float>> temperatures;  // per tree, or empty when not given
};

// The outputs for `trees` (see above); `temperatures` may be None.
DraftTreeOutputs ReadDraftTreeOutputs(pybind11::handle token_bitmask, pybind11::handle temperatures,
                                      const DraftTreeArgs& trees, size_t mask_words);

}  // namespace zapgram::python

#endif  // ZAPGRAM_PYTHON_SRC_DRAFT_TREES_H_
