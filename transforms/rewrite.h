// Shared machinery of the transforms: bottom-up rebuilding of expression DAGs
// into a fresh grammar, without recursion, and copying a subset of rules.
//
// Every pass builds a new Grammar rather than editing its input: expressions
// may be shared (a DAG, after dedup_rules), so editing a node in place would
// silently change every other place that uses it. Rebuilding is a post-order
// walk with an explicit stack and a memo (old ExprId -> new ExprId), so a
// node shared by several parents is rebuilt once and stays shared.
//
// Internal to transforms/; tests reach it only through the passes.
#ifndef ZAPGRAM_TRANSFORMS_REWRITE_H_
#define ZAPGRAM_TRANSFORMS_REWRITE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "grammar/grammar.h"

namespace zapgram::transforms::internal {

using grammar::Expr;
using grammar::ExprId;
using grammar::ExprKind;
using grammar::Grammar;
using grammar::RuleId;

// memo value of a node not rebuilt yet.
inline constexpr ExprId kUnbuilt = 0xFFFFFFFFu;
// A build result meaning "this expression matches nothing" (for passes that drop it).
inline constexpr ExprId kNever = 0xFFFFFFFEu;
// A rule id meaning "dropped".
inline constexpr RuleId kNoRule = 0xFFFFFFFFu;

// State of one post-order walk shared by several roots (e.g. every rule body),
// so that nodes shared between roots are built once.
struct PostOrderMemo {
  explicit PostOrderMemo(size_t num_exprs) : result(num_exprs, kUnbuilt), state(num_exprs, 0) {}
  std::vector<ExprId> result;  // per source node: what build() returned
  std::vector<uint8_t> state;  // 0 unvisited, 1 children pushed, 2 built
};

// Builds `root` of `src` bottom-up. children(id) -> absl::Span<const ExprId>
// names the nodes to build before `id` (normally src.exprs[id].children; a
// pass may substitute others, e.g. a rule's body for a reference to it);
// build(id, kids) receives the results for those children, in order, and
// returns the result for `id` (any ExprId, or kNever). A cycle through
// children() is an Internal error (the IR is acyclic; substitutions must keep
// it so).
template <typename ChildrenFn, typename BuildFn>
absl::StatusOr<ExprId> BuildPostOrder(const Grammar& src, ExprId root, PostOrderMemo& memo,
                                      ChildrenFn children, BuildFn build) {
  if (memo.state[root] == 2) return memo.result[root];
  std::vector<ExprId> stack = {root};
  std::vector<ExprId> kids;
  while (!stack.empty()) {
    ExprId id = stack.back();
    if (memo.state[id] == 2) {
      stack.pop_back();
      continue;
    }
    absl::Span<const ExprId> cs = children(id);
    if (memo.state[id] == 0) {
      memo.state[id] = 1;
      for (auto it = cs.rbegin(); it != cs.rend(); ++it) {
        if (memo.state[*it] == 1) {
          return absl::InternalError(absl::StrFormat(
              "%s: expression %d is its own descendant (a cycle in the expression graph)",
              src.source_name, *it));
        }
        if (memo.state[*it] == 0) stack.push_back(*it);
      }
      continue;
    }
    stack.pop_back();
    kids.clear();
    for (ExprId c : cs) kids.push_back(memo.result[c]);
    memo.result[id] = build(id, kids);
    memo.state[id] = 2;
  }
  return memo.result[root];
}

// The usual children: the node's own.
inline auto OwnChildren(const Grammar& src) {
  return [&src](ExprId id) { return absl::Span<const ExprId>(src.exprs[id].children); };
}

// Appends a copy of `e` to `dst` with `kids` as its children and, for a rule
// reference, `rule` as its rule.
inline ExprId CopyNode(const Expr& e, const std::vector<ExprId>& kids, RuleId rule, Grammar& dst) {
  Expr copy;
  copy.kind = e.kind;
  copy.literal = e.literal;
  copy.flags = e.flags;
  copy.ranges = e.ranges;
  copy.names = e.names;
  copy.rule = rule;
  copy.token = e.token;
  copy.children = kids;
  copy.min = e.min;
  copy.max = e.max;
  copy.loc = e.loc;
  dst.exprs.push_back(std::move(copy));
  return static_cast<ExprId>(dst.exprs.size() - 1);
}

// Makes `dst` the grammar of the rules `kept` of `src` (old ids, in their
// new order): src's name and tokens, rule i = src.rules[kept[i]] (name,
// place, keep_as_rule, attributes) with its body rebuilt by BuildPostOrder(children,
// build), one memo for all bodies (sharing preserved). `build` appends its
// nodes to `dst`. The root is the caller's to set. What the passes that
// drop or renumber rules (useless rules, inlining, CopyRules) share.
template <typename ChildrenFn, typename BuildFn>
absl::Status RebuildKeptRules(const Grammar& src, const std::vector<RuleId>& kept,
                              ChildrenFn children, BuildFn build, Grammar& dst) {
  dst.source_name = src.source_name;
  dst.tokens = src.tokens;
  dst.rules.resize(kept.size());
  PostOrderMemo memo(src.exprs.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    const grammar::Rule& old = src.rules[kept[i]];
    absl::StatusOr<ExprId> body = BuildPostOrder(src, old.body, memo, children, build);
    if (!body.ok()) return body.status();
    dst.rules[i] = old;
    dst.rules[i].body = *body;
  }
  return absl::OkStatus();
}

// A fresh grammar with the rules `kept` of `src` (old ids, in their new
// order), bodies copied with sharing preserved and every rule reference r
// rewritten to new_id[r]. Only expressions reachable from kept bodies are
// copied. `new_root` is the new root id; `names` (optional, indexed like
// `kept`) renames rules. Precondition: new_id[r] != kNoRule for every rule a
// kept body refers to.
inline absl::StatusOr<Grammar> CopyRules(const Grammar& src, const std::vector<RuleId>& kept,
                                         const std::vector<RuleId>& new_id, RuleId new_root,
                                         const std::vector<std::string>* names = nullptr) {
  Grammar dst;
  absl::Status built = RebuildKeptRules(
      src, kept, OwnChildren(src),
      [&](ExprId id, const std::vector<ExprId>& kids) {
        const Expr& e = src.exprs[id];
        RuleId rule = e.kind == ExprKind::kRuleRef ? new_id[e.rule] : 0;
        return CopyNode(e, kids, rule, dst);
      },
      dst);
  if (!built.ok()) return built;
  dst.root = new_root;
  if (names != nullptr) {
    for (size_t i = 0; i < kept.size(); ++i) dst.rules[i].name = (*names)[i];
  }
  return dst;
}

// The rules each rule's body refers to, with repetitions (one entry per
// distinct reference node reached; a node shared inside one body counts
// once). Cost: the distinct nodes of each body, summed over the rules.
inline std::vector<std::vector<RuleId>> RuleEdges(const Grammar& g) {
  std::vector<std::vector<RuleId>> edges(g.rules.size());
  std::vector<uint32_t> seen(g.exprs.size(), 0);  // stamp: rule index + 1
  std::vector<ExprId> stack;
  for (RuleId r = 0; r < g.rules.size(); ++r) {
    stack = {g.rules[r].body};
    seen[g.rules[r].body] = r + 1;
    while (!stack.empty()) {
      ExprId id = stack.back();
      stack.pop_back();
      const Expr& e = g.exprs[id];
      if (e.kind == ExprKind::kRuleRef) edges[r].push_back(e.rule);
      for (ExprId c : e.children) {
        if (seen[c] != r + 1) {
          seen[c] = r + 1;
          stack.push_back(c);
        }
      }
    }
  }
  return edges;
}

}  // namespace zapgram::transforms::internal

#endif  // ZAPGRAM_TRANSFORMS_REWRITE_H_
