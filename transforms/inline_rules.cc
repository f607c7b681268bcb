// Inlining: replace references to small or single-use rules by their bodies.
//
// The classic "unfold" step of grammar and program transformation: a
// nonterminal B is replaced, at each use, by its right-hand side. In BNF that
// multiplies productions; on our expression trees it is exact and local: the
// reference node becomes B's body (a choice body simply nests as a choice).
// The language from the root does not change, since B derives exactly the
// strings of its body.
//
// Which rules. Inlining must stop: if B were inlined into its own body, or
// A into B and B into A, substitution would never end. Every cycle of the
// rule graph has a back edge in any depth-first search, and the target of a
// back edge lies on the cycle, so the rules that are targets of back edges of
// one DFS (from the root, then from the other rules) form a set that meets
// every cycle: those "loop heads" are never inlined, and the rules that are
// inlined form an acyclic subgraph. Among the others a rule B (never the
// root, never an observed rule: grammar::Rule::observed) is inlined when
//  - it is used exactly once (its body moves, the grammar does not grow), or
//  - it is trivial: its body, written out with the rules inlined into it,
//    has at most InlineOptions::max_trivial_size nodes, so each use grows by
//    a bounded amount (e.g. `ws ::= [ \t]*`).
// "Used" counts occurrences in the written-out bodies: a reference node
// shared by two parents (a DAG) is used twice. Edges into a rule that is
// not a loop head are tree, forward or cross edges, which the DFS finishes
// after their target, so deciding rules in DFS post-order sees every inlined
// callee's written-out size before its callers.
//
// Rebuilding walks each kept rule's body bottom-up (rewrite.h) with the body
// of an inlined rule standing as the only child of a reference to it, so
// each inlined body is rebuilt once and shared by all its uses. Every step is
// linear in the grammar: the rule graph, the DFS, the use counts (a
// multiplicity per node, pushed from parents to children in topological
// order), the sizes and the rebuild.
//
// Tests: tests/transforms/transforms_test.cc (InlineRules.*, LanguagePreservation.*).
#include "transforms/inline_rules.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "transforms/rewrite.h"

namespace zapgram::transforms {

namespace {

using grammar::Expr;
using grammar::ExprId;
using grammar::ExprKind;
using grammar::Grammar;
using grammar::RuleId;
using internal::kNoRule;

constexpr uint64_t kSaturated = ~uint64_t{0};
uint64_t SatAdd(uint64_t a, uint64_t b) { return a > kSaturated - b ? kSaturated : a + b; }

// DFS over the rule graph from the root, then from every unvisited rule.
// Returns the rules in post-order; marks the targets of back edges.
std::vector<RuleId> RulePostOrder(const Grammar& g, const std::vector<std::vector<RuleId>>& edges,
                                  std::vector<uint8_t>* loop_head) {
  const size_t n = g.rules.size();
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the DFS path, 2 finished
  loop_head->assign(n, 0);
  std::vector<RuleId> post;
  std::vector<std::pair<RuleId, size_t>> stack;  // (rule, next edge)
  auto run_from = [&](RuleId start) {
    color[start] = 1;
    stack.push_back({start, 0});
    while (!stack.empty()) {
      auto& [r, next] = stack.back();
      if (next < edges[r].size()) {
        RuleId t = edges[r][next++];
        if (color[t] == 1) {
          (*loop_head)[t] = 1;
        } else if (color[t] == 0) {
          color[t] = 1;
          stack.push_back({t, 0});
        }
        continue;
      }
      color[r] = 2;
      post.push_back(r);
      stack.pop_back();
    }
  };
  run_from(g.root);
  for (RuleId r = 0; r < n; ++r) {
    if (color[r] == 0) run_from(r);
  }
  return post;
}

// Occurrences of each rule in the written-out bodies of all rules.
std::vector<uint64_t> UseCounts(const Grammar& g) {
  const size_t n = g.exprs.size();
  // Post-order of the expression DAG below all bodies (children first).
  std::vector<ExprId> order;
  std::vector<uint8_t> state(n, 0);
  std::vector<ExprId> stack;
  for (const grammar::Rule& rule : g.rules) {
    if (state[rule.body]) continue;
    stack = {rule.body};
    while (!stack.empty()) {
      ExprId id = stack.back();
      if (state[id] == 2) {
        stack.pop_back();
        continue;
      }
      if (state[id] == 0) {
        state[id] = 1;
        for (ExprId c : g.exprs[id].children) {
          if (state[c] == 0) stack.push_back(c);
        }
        continue;
      }
      state[id] = 2;
      order.push_back(id);
      stack.pop_back();
    }
  }
  std::vector<uint64_t> mult(n, 0);
  for (const grammar::Rule& rule : g.rules) mult[rule.body] = SatAdd(mult[rule.body], 1);
  std::vector<uint64_t> uses(g.rules.size(), 0);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Expr& e = g.exprs[*it];
    for (ExprId c : e.children) mult[c] = SatAdd(mult[c], mult[*it]);
    if (e.kind == ExprKind::kRuleRef) uses[e.rule] = SatAdd(uses[e.rule], mult[*it]);
  }
  return uses;
}

}  // namespace

absl::StatusOr<Grammar> InlineRules(const Grammar& g, const InlineOptions& options,
                                    PassReport* report) {
  if (absl::Status st = g.Validate(); !st.ok()) return st;
  std::vector<std::vector<RuleId>> edges = internal::RuleEdges(g);
  std::vector<uint8_t> loop_head;
  std::vector<RuleId> post = RulePostOrder(g, edges, &loop_head);
  std::vector<uint64_t> uses = UseCounts(g);

  // Decide, callees first. Written-out sizes are computed with the same
  // post-order machinery (the "ExprId" results are sizes, capped).
  constexpr ExprId kSizeCap = 1u << 30;
  std::vector<uint8_t> inlined(g.rules.size(), 0);
  std::vector<ExprId> rule_size(g.rules.size(), 1);
  internal::PostOrderMemo sizes(g.exprs.size());
  for (RuleId r : post) {
    absl::StatusOr<ExprId> size = internal::BuildPostOrder(
        g, g.rules[r].body, sizes, internal::OwnChildren(g),
        [&](ExprId id, const std::vector<ExprId>& kids) -> ExprId {
          const Expr& e = g.exprs[id];
          if (e.kind == ExprKind::kRuleRef) return inlined[e.rule] ? rule_size[e.rule] : 1;
          uint64_t total = 1;
          for (ExprId k : kids) total += k;
          return static_cast<ExprId>(std::min<uint64_t>(total, kSizeCap));
        });
    if (!size.ok()) return size.status();
    rule_size[r] = *size;
    if (r == g.root || loop_head[r] || uses[r] == 0 || g.rules[r].observed()) continue;
    if ((options.single_use && uses[r] == 1) || rule_size[r] <= options.max_trivial_size) {
      inlined[r] = 1;
    }
  }

  std::vector<RuleId> kept;
  std::vector<RuleId> new_id(g.rules.size(), kNoRule);
  for (RuleId r = 0; r < g.rules.size(); ++r) {
    if (inlined[r]) {
      if (report != nullptr) report->AddRule("inlined", g.rules[r].name);
      continue;
    }
    new_id[r] = static_cast<RuleId>(kept.size());
    kept.push_back(r);
  }
  Grammar out;
  auto children = [&](ExprId id) {
    const Expr& e = g.exprs[id];
    if (e.kind == ExprKind::kRuleRef && inlined[e.rule]) {
      return absl::Span<const ExprId>(&g.rules[e.rule].body, 1);
    }
    return absl::Span<const ExprId>(e.children);
  };
  auto build = [&](ExprId id, const std::vector<ExprId>& kids) -> ExprId {
    const Expr& e = g.exprs[id];
    if (e.kind == ExprKind::kRuleRef) {
      if (inlined[e.rule]) return kids[0];
      return internal::CopyNode(e, kids, new_id[e.rule], out);
    }
    return internal::CopyNode(e, kids, 0, out);
  };
  if (absl::Status st = internal::RebuildKeptRules(g, kept, children, build, out); !st.ok()) return st;
  out.root = new_id[g.root];
  if (report != nullptr) {
    uint64_t count = 0;
    for (uint8_t x : inlined) count += x;
    report->Count("rules inlined", count);
  }
  return out;
}

}  // namespace zapgram::transforms
