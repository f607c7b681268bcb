// Random draft trees and the naive walk (see draft_trees.h).
#include "tests/support/draft_trees.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include "masks/matcher.h"

namespace zapgram::testing {

namespace {

bool Terminated(const Matcher& m, bool when_accepting) {
  return m.IsFinished() || (when_accepting && m.IsAccepting());
}

struct Node {
  int64_t parent;
  int32_t token;
  size_t depth;
  bool on_truth;
  std::unique_ptr<Matcher> matcher;  // null: refused or terminated (never visited)
  std::vector<int64_t> children;
};

}  // namespace

std::vector<int32_t> DraftedTree::Path(int64_t node) const {
  std::vector<int32_t> path;
  for (int64_t at = node; at > 0; at = parent[at]) path.push_back(static_cast<int32_t>(tokens[at]));
  std::reverse(path.begin(), path.end());
  return path;
}

DraftedTree DraftFrom(const Matcher& start, absl::Span<const int32_t> truth, const DraftShape& shape,
                      std::mt19937_64& rng) {
  Matcher probe = start.Fork();
  const masks::CompiledGrammar& grammar = probe.impl().grammar();
  const size_t words = grammar.mask_words();
  const int32_t vocab_size = grammar.vocabulary().padded_size();
  const std::vector<masks::TokenId> eos(grammar.vocabulary().eos_ids().begin(), grammar.vocabulary().eos_ids().end());
  const auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };

  std::vector<Node> nodes;
  nodes.push_back({-1, 0, 0, true, start.IsFinished() ? nullptr : std::make_unique<Matcher>(start.Fork()), {}});
  std::vector<int64_t> frontier = {0};
  std::vector<uint32_t> mask(words);
  std::vector<int32_t> allowed, allowed_eos;
  while (nodes.size() < shape.nodes) {
    if (frontier.empty()) {
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (nodes[i].children.empty()) frontier.push_back(static_cast<int64_t>(i));
      }
    }
    std::shuffle(frontier.begin(), frontier.end(), rng);
    std::stable_partition(frontier.begin(), frontier.end(), [&](int64_t n) { return nodes[n].on_truth; });
    const int beam = pick(1, shape.max_beam);
    int expanded = 0;
    bool any_alive = false;
    std::vector<int64_t> next;
    for (const int64_t p : frontier) {
      if (nodes.size() >= shape.nodes || expanded >= beam) break;
      const bool alive = nodes[p].matcher != nullptr;
      any_alive = any_alive || alive;
      if (!alive && !chance(shape.dead_expand_rate)) continue;
      ++expanded;
      allowed.clear();
      allowed_eos.clear();
      if (alive) {
        nodes[p].matcher->ComputeMask(mask.data());
        for (int32_t id = 0; id < vocab_size; ++id) {
          if (!((mask[id / 32] >> (id % 32)) & 1)) continue;
          (std::find(eos.begin(), eos.end(), id) != eos.end() ? allowed_eos : allowed).push_back(id);
        }
      }
      const int width = std::min<int>(pick(shape.min_width, shape.max_width),
                                      static_cast<int>(shape.nodes - nodes.size()));
      const size_t depth = nodes[p].depth;
      for (int c = 0; c < width; ++c) {
        int32_t token;
        const bool truth_next = alive && c == 0 && nodes[p].on_truth;
        if (truth_next && depth < truth.size()) {
          token = truth[depth];
        } else if (truth_next && !allowed_eos.empty()) {
          token = allowed_eos.front();  // the document ends here
        } else if (!alive || chance(shape.foreign_rate) || (allowed.empty() && allowed_eos.empty())) {
          token = pick(0, vocab_size - 1);
        } else if (!allowed_eos.empty() && (allowed.empty() || chance(shape.eos_rate))) {
          token = allowed_eos[static_cast<size_t>(pick(0, static_cast<int>(allowed_eos.size()) - 1))];
        } else {
          token = allowed[static_cast<size_t>(pick(0, static_cast<int>(allowed.size()) - 1))];
        }
        std::unique_ptr<Matcher> child;
        if (alive) {
          child = std::make_unique<Matcher>(nodes[p].matcher->Fork());
          if (!child->AcceptToken(token) || child->IsFinished()) child.reset();
        }
        const bool on_truth = truth_next && depth < truth.size() && child != nullptr;
        const int64_t index = static_cast<int64_t>(nodes.size());
        nodes[p].children.push_back(index);
        nodes.push_back({p, token, depth + 1, on_truth, std::move(child), {}});
        next.push_back(index);
      }
    }
    if (expanded == 0 && !any_alive && next.empty()) {
      // Only refused or terminated leaves, none picked: stop unless they
      // may still be expanded.
      if (shape.dead_expand_rate <= 0) break;
    }
    frontier = std::move(next);
  }

  // Node indices: creation order, or a permutation keeping the root at 0.
  const size_t n = nodes.size();
  std::vector<int64_t> index(n);
  std::iota(index.begin(), index.end(), 0);
  if (shape.shuffle && n > 2) std::shuffle(index.begin() + 1, index.end(), rng);
  DraftedTree tree;
  tree.first_child.assign(n, -1);
  tree.next_sibling.assign(n, -1);
  tree.tokens.assign(n, 0);
  tree.parent.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = nodes[i];
    const int64_t at = index[i];
    tree.tokens[at] = node.token;
    tree.parent[at] = node.parent < 0 ? -1 : index[node.parent];
    if (!node.children.empty()) tree.first_child[at] = index[node.children.front()];
    for (size_t c = 0; c + 1 < node.children.size(); ++c) {
      tree.next_sibling[index[node.children[c]]] = index[node.children[c + 1]];
    }
  }
  return tree;
}

std::vector<uint32_t> NaiveRows(const Matcher& start, const DraftedTree& tree, bool terminate_when_accepting) {
  Matcher probe = start.Fork();
  const size_t words = probe.impl().grammar().mask_words();
  std::vector<uint32_t> rows(tree.size() * words, 0u);
  for (size_t i = 0; i < tree.size(); ++i) {
    Matcher m = start.Fork();
    bool visited = !Terminated(m, terminate_when_accepting);
    for (const int32_t token : tree.Path(static_cast<int64_t>(i))) {
      if (!visited) break;
      visited = m.AcceptToken(token) && !Terminated(m, terminate_when_accepting);
    }
    if (visited) m.ComputeMask(rows.data() + i * words);
  }
  return rows;
}

}  // namespace zapgram::testing
