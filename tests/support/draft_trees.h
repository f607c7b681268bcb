// Draft trees for the draft-tree mask tests and benchmarks
// (masks/draft_tree.h): random trees drafted from a real state, and the
// naive walk they are checked against.
//
// DraftFrom grows a tree level by level from a matcher's state, the way an
// EAGLE drafter does: at each level a few nodes of the frontier (the one on
// the document's true path first) get 2-8 children each. A child's token is
// the document's true next token (first child of a node on the true path),
// or a random token the node's mask allows; with the shape's rates, an EOS
// id where the mask allows one, or a random id of the whole vocabulary
// (almost always refused). Nodes that are refused or terminated can get
// children too (rates again), to test the rows below them. Node indices
// are the creation order (breadth first, as SGLang numbers them) or, with
// `shuffle`, a random permutation (the root stays 0).
//
// NaiveRows is the oracle: for each node, a fresh fork of the start state
// is fed the node's path token by token (a token the matcher refuses, or one
// after which it has terminated, leaves the node's row zero) and fills the
// node's row; nodes below a refused or terminated node are zero.
#ifndef ZAPGRAM_TESTS_SUPPORT_DRAFT_TREES_H_
#define ZAPGRAM_TESTS_SUPPORT_DRAFT_TREES_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/types/span.h"
#include "zapgram/matcher.h"

namespace zapgram::testing {

struct DraftShape {
  size_t nodes = 16;
  int min_width = 2, max_width = 8;
  int max_beam = 3;               // frontier nodes expanded per level: 1..max_beam
  double foreign_rate = 0;        // a child's token: a random id of the vocabulary
  double eos_rate = 0;            // a child's token: EOS, where allowed
  double dead_expand_rate = 0;    // a refused / terminated node gets children
  bool shuffle = false;           // random node indices
};

struct DraftedTree {
  std::vector<int64_t> first_child, next_sibling, tokens;
  std::vector<int64_t> parent;  // -1 for the root
  size_t size() const { return tokens.size(); }
  DraftTree view() const { return {first_child, next_sibling, tokens}; }
  // The tokens from the root's child down to `node` (empty for the root).
  std::vector<int32_t> Path(int64_t node) const;
};

// A tree drafted from `start`'s state; `truth` is the document's true
// continuation from there (may be empty).
DraftedTree DraftFrom(const Matcher& start, absl::Span<const int32_t> truth, const DraftShape& shape,
                      std::mt19937_64& rng);

// The naive walk (see above): rows of tree.size() * mask_words words. With
// `terminate_when_accepting`, a sentence terminates as EOS does.
std::vector<uint32_t> NaiveRows(const Matcher& start, const DraftedTree& tree, bool terminate_when_accepting = false);

}  // namespace zapgram::testing

#endif  // ZAPGRAM_TESTS_SUPPORT_DRAFT_TREES_H_
