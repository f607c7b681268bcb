// Deduplication by hash-consing.
//
// Hash-consing (Ershov 1958; Goto 1974) builds every value at most once: a
// node is looked up in a table keyed by its kind, payload and the *canonical
// ids* of its children before it is created. Since children are canonical
// first (bottom-up, rewrite.h, explicit stack), the key of a node has the
// size of the node itself, its hash costs O(node), and two nodes get the same
// id iff they are structurally identical (the table's equality check on the
// key makes this exact; the hash only finds the candidate). The whole
// grammar is canonicalized in expected linear time; nothing compares
// subtrees pairwise.
//
// Rules. A rule reference's key is the id of the *representative* of the rule
// referred to (a union-find over merged rules). Rules are processed by
// strongly connected components of the rule graph in reverse topological
// order (Tarjan's algorithm, iterative, emits callees first), so when a rule
// is canonicalized every rule it calls outside its own component is already
// merged and final; if its canonical body equals an earlier rule's (a second
// table: body id -> rule), the two rules are merged. That one pass finds
// every merge in the acyclic part of the rule graph (e.g. 20,000 copies of
// one rule family collapse to one). Inside a cycle a merge can enable
// another (bodies that referred to the two merged rules become equal), so a
// component is re-hashed while a round merges something, at most
// DedupOptions::max_rounds_per_cycle rounds: the cost stays linear, and
// equivalences that need coinduction (two isomorphic cycles, A ::= "x" A and
// B ::= "x" B) are left alone — a partition refinement (as in DFA
// minimization) would find those; not done here.
//
// Also, by idempotence of union, a choice keeps one copy of each distinct
// alternative (and one alternative left is the alternative itself).
//
// Terminals (literals, classes, regexes, tokens of a lexed grammar) are
// leaves keyed by their payload: two references to the same token are one
// node, two different tokens never are, and the lexicon is copied as is.
//
// An observed rule (grammar::Rule::observed: captured, or with a
// temperature) is never merged, with anything: the matcher reports its own
// completions and name, which a merge would blur.
//
// Soundness: merged rules satisfy body(A)[~] = body(B)[~] under the merge
// relation ~, so by induction over the Kleene iterates of the grammar's least
// fixpoint, A and B derive the same strings; the language is unchanged.
//
// Tests: tests/transforms/transforms_test.cc (DedupRules.*, LanguagePreservation.*).
#include "transforms/dedup_rules.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "transforms/rewrite.h"

namespace zapgram::transforms {

namespace {

using grammar::CodepointRange;
using grammar::Expr;
using grammar::ExprId;
using grammar::ExprKind;
using grammar::Grammar;
using grammar::RuleId;
using internal::kNoRule;

// A reference to "the rule being defined", in canonical self-recursive bodies.
constexpr RuleId kSelf = 0xFFFFFFFDu;

// Everything that makes a node what it is (not its source location).
struct NodeKey {
  ExprKind kind = ExprKind::kEmpty;
  uint32_t flags = 0;
  RuleId rule = 0;
  uint32_t min = 0;
  uint32_t max = 0;
  std::string literal;
  std::vector<CodepointRange> ranges;
  std::vector<ExprId> children;
  std::vector<std::string> names;  // kTokenIds

  friend bool operator==(const NodeKey&, const NodeKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const NodeKey& k) {
    h = H::combine(std::move(h), static_cast<uint8_t>(k.kind), k.flags, k.rule, k.min, k.max,
                   k.literal, k.children, k.names, k.ranges.size());
    for (const CodepointRange& r : k.ranges) h = H::combine(std::move(h), r.lo, r.hi);
    return h;
  }
};

// Strongly connected components, callees first (Tarjan, explicit stack).
std::vector<std::vector<RuleId>> Components(const std::vector<std::vector<RuleId>>& edges) {
  const size_t n = edges.size();
  constexpr uint32_t kUnset = 0xFFFFFFFFu;
  std::vector<uint32_t> index(n, kUnset), low(n, 0);
  std::vector<uint8_t> on_stack(n, 0);
  std::vector<RuleId> scc_stack;
  std::vector<std::pair<RuleId, size_t>> calls;
  std::vector<std::vector<RuleId>> out;
  uint32_t counter = 0;
  for (RuleId start = 0; start < n; ++start) {
    if (index[start] != kUnset) continue;
    auto enter = [&](RuleId v) {
      index[v] = low[v] = counter++;
      scc_stack.push_back(v);
      on_stack[v] = 1;
      calls.push_back({v, 0});
    };
    enter(start);
    while (!calls.empty()) {
      auto& [v, next] = calls.back();
      if (next < edges[v].size()) {
        RuleId w = edges[v][next++];
        if (index[w] == kUnset) {
          enter(w);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      RuleId done = v;
      calls.pop_back();
      if (low[done] == index[done]) {
        std::vector<RuleId> scc;
        RuleId w;
        do {
          w = scc_stack.back();
          scc_stack.pop_back();
          on_stack[w] = 0;
          scc.push_back(w);
        } while (w != done);
        std::sort(scc.begin(), scc.end());
        out.push_back(std::move(scc));
      }
      if (!calls.empty()) {
        RuleId parent = calls.back().first;
        low[parent] = std::min(low[parent], low[done]);
      }
    }
  }
  return out;
}

class Deduper {
 public:
  Deduper(const Grammar& g, const DedupOptions& options)
      : g_(g), options_(options), memo_(g.exprs.size()), parent_(g.rules.size()),
        body_(g.rules.size(), 0), self_body_(g.rules.size(), 0) {
    work_.source_name = g.source_name;
    for (RuleId r = 0; r < parent_.size(); ++r) parent_[r] = r;
  }

  absl::StatusOr<Grammar> Run(PassReport* report);

 private:
  RuleId Find(RuleId r) {
    while (parent_[r] != r) {
      parent_[r] = parent_[parent_[r]];
      r = parent_[r];
    }
    return r;
  }
  // Merges the groups of representatives a and b; the root's group keeps the root.
  RuleId Merge(RuleId a, RuleId b) {
    RuleId keep = b == g_.root ? b : a;
    RuleId gone = keep == a ? b : a;
    parent_[gone] = keep;
    return keep;
  }
  ExprId Intern(NodeKey key, grammar::SourceLocation loc) {
    auto it = table_.find(key);
    if (it != table_.end()) {
      ++nodes_shared_;
      return it->second;
    }
    Expr e;
    e.kind = key.kind;
    e.flags = key.flags;
    // A token's index travels in key.rule (the kind tells the two apart).
    if (key.kind == ExprKind::kToken) {
      e.token = key.rule;
    } else {
      e.rule = key.rule;
    }
    e.min = key.min;
    e.max = key.max;
    e.literal = key.literal;
    e.ranges = key.ranges;
    e.names = key.names;
    e.children = key.children;
    e.loc = loc;
    bool self = e.kind == ExprKind::kRuleRef && e.rule == kSelf;
    for (ExprId c : e.children) self = self || has_self_[c];
    work_.exprs.push_back(std::move(e));
    has_self_.push_back(self);
    ExprId id = static_cast<ExprId>(work_.exprs.size() - 1);
    table_.emplace(std::move(key), id);
    return id;
  }
  ExprId Build(ExprId id, const std::vector<ExprId>& kids) {
    if (tracking_) touched_.push_back(id);
    const Expr& e = g_.exprs[id];
    NodeKey key;
    key.kind = e.kind;
    switch (e.kind) {
      case ExprKind::kLiteral:
      case ExprKind::kRegex:
        key.literal = e.literal;
        key.flags = e.flags;
        break;
      case ExprKind::kCharClass:
        key.ranges = e.ranges;
        break;
      case ExprKind::kTokenIds:
        key.ranges = e.ranges;
        key.flags = e.flags;
        key.names = e.names;
        break;
      case ExprKind::kToken:
        key.rule = e.token;  // the kind tells a token from a rule
        break;
      case ExprKind::kRuleRef:
        key.rule = Find(e.rule);
        if (key.rule == self_rule_) key.rule = kSelf;
        break;
      case ExprKind::kRepeat:
        key.min = e.min;
        key.max = e.max;
        key.children = kids;
        break;
      case ExprKind::kChoice: {
        // One copy of each alternative, first occurrences in order.
        absl::flat_hash_set<ExprId> seen;
        for (ExprId k : kids) {
          if (seen.insert(k).second) key.children.push_back(k);
        }
        alternatives_dropped_ += kids.size() - key.children.size();
        if (key.children.size() == 1) return key.children[0];
        break;
      }
      default:
        key.children = kids;
        break;
    }
    return Intern(std::move(key), e.loc);
  }
  absl::StatusOr<ExprId> Canonical(RuleId r) {
    return internal::BuildPostOrder(
        g_, g_.rules[r].body, memo_, internal::OwnChildren(g_),
        [&](ExprId id, const std::vector<ExprId>& kids) { return Build(id, kids); });
  }
  // Looks `body` up among the finished rules; merges r into a match or records r.
  void Settle(RuleId r, ExprId body) {
    body_[r] = body;
    if (g_.rules[r].observed()) return;  // an observed rule is never merged (Rule::observed)
    auto [it, inserted] = bodies_.emplace(body, r);
    if (!inserted) it->second = Merge(Find(it->second), r);
  }
  absl::Status RunComponent(const std::vector<RuleId>& scc);
  // The final grammar: the representatives `kept`, references through new_id.
  Grammar Output(const std::vector<RuleId>& kept, const std::vector<RuleId>& new_id);

  const Grammar& g_;
  const DedupOptions& options_;
  Grammar work_;  // the canonical nodes; references name representatives at build time
  absl::flat_hash_map<NodeKey, ExprId> table_;
  absl::flat_hash_map<ExprId, RuleId> bodies_;  // canonical body -> a rule of its group
  internal::PostOrderMemo memo_;
  std::vector<RuleId> parent_;  // union-find over rules
  std::vector<ExprId> body_;    // per representative: its canonical body
  // While canonicalizing a rule that refers only to itself: that rule, whose
  // references become kSelf, so that two such rules with the same equation
  // X = F(X) get the same body (they have the same least fixpoint).
  RuleId self_rule_ = kNoRule;
  std::vector<uint8_t> has_self_;  // per work_ node: a kSelf reference below
  std::vector<uint8_t> self_body_;  // per rule: its canonical body uses kSelf
  bool tracking_ = false;
  std::vector<RuleId> leader_;  // per representative: the rule that names its group
  std::vector<ExprId> touched_;  // memo entries built during a tentative round
  uint64_t nodes_shared_ = 0;
  uint64_t alternatives_dropped_ = 0;
};

absl::Status Deduper::RunComponent(const std::vector<RuleId>& scc) {
  for (uint32_t round = 0;; ++round) {
    const bool last = round >= options_.max_rounds_per_cycle;
    tracking_ = !last;
    touched_.clear();
    const uint64_t shared_before = nodes_shared_;
    const uint64_t dropped_before = alternatives_dropped_;
    // Tentative: merges among this component's rules, or with finished rules.
    absl::flat_hash_map<ExprId, RuleId> local;
    std::vector<std::pair<RuleId, ExprId>> bodies;
    bool merged = false;
    for (RuleId r : scc) {
      if (Find(r) != r) continue;
      absl::StatusOr<ExprId> b = Canonical(r);
      if (!b.ok()) return b.status();
      bodies.push_back({r, *b});
      if (last || g_.rules[r].observed()) continue;
      auto global = bodies_.find(*b);
      if (global != bodies_.end()) {
        global->second = Merge(Find(global->second), r);
        merged = true;
        continue;
      }
      auto [it, inserted] = local.emplace(*b, r);
      if (!inserted) {
        it->second = Merge(Find(it->second), r);
        merged = true;
      }
    }
    if (!merged) {
      // Bodies computed with final representatives: record them, keep the memo.
      for (auto [r, b] : bodies) {
        if (Find(r) == r) {
          body_[r] = b;
          if (!g_.rules[r].observed()) bodies_.emplace(b, r);
        }
      }
      tracking_ = false;
      return absl::OkStatus();
    }
    // Merges happened: the bodies built this round name stale representatives.
    for (ExprId id : touched_) memo_.state[id] = 0;
    nodes_shared_ = shared_before;
    alternatives_dropped_ = dropped_before;
  }
}

absl::StatusOr<Grammar> Deduper::Run(PassReport* report) {
  std::vector<std::vector<RuleId>> edges = internal::RuleEdges(g_);
  for (const std::vector<RuleId>& scc : Components(edges)) {
    const RuleId r = scc[0];
    const bool cyclic = scc.size() > 1 ||
                        std::find(edges[r].begin(), edges[r].end(), r) != edges[r].end();
    if (cyclic && scc.size() == 1) {
      // Only self-references: canonical with kSelf. The memo entries that
      // mean "r" by kSelf are forgotten for other rules (a node shared with a
      // caller is rebuilt there); the others are valid everywhere.
      self_rule_ = r;
      tracking_ = true;
      touched_.clear();
      absl::StatusOr<ExprId> b = Canonical(r);
      if (!b.ok()) return b.status();
      for (ExprId id : touched_) {
        if (has_self_[memo_.result[id]]) memo_.state[id] = 0;
      }
      tracking_ = false;
      self_rule_ = kNoRule;
      self_body_[r] = has_self_[*b];
      Settle(r, *b);
      continue;
    }
    if (cyclic) {
      if (absl::Status st = RunComponent(scc); !st.ok()) return st;
      continue;
    }
    absl::StatusOr<ExprId> b = Canonical(r);
    if (!b.ok()) return b.status();
    Settle(r, *b);
  }

  // Each group is named and placed after its leader: the root if it is in
  // the group, else its first rule in grammar order (the representative is
  // whichever rule was settled first, an artefact of the traversal).
  std::vector<RuleId> leader(g_.rules.size(), kNoRule);
  for (RuleId r = 0; r < g_.rules.size(); ++r) {
    RuleId rep = Find(r);
    if (leader[rep] == kNoRule) leader[rep] = r;
  }
  leader[Find(g_.root)] = g_.root;
  std::vector<RuleId> kept;  // representatives, in their leaders' order
  std::vector<RuleId> slot(g_.rules.size(), kNoRule);
  for (RuleId r = 0; r < g_.rules.size(); ++r) {
    RuleId rep = Find(r);
    if (leader[rep] != r) continue;
    slot[rep] = static_cast<RuleId>(kept.size());
    kept.push_back(rep);
  }
  std::vector<RuleId> new_id(g_.rules.size());
  for (RuleId r = 0; r < g_.rules.size(); ++r) {
    new_id[r] = slot[Find(r)];
    if (report != nullptr && leader[Find(r)] != r) {
      report->AddRule("merged", g_.rules[r].name + "=" + g_.rules[leader[Find(r)]].name);
    }
  }
  leader_ = std::move(leader);
  if (report != nullptr) {
    report->Count("rules merged", g_.rules.size() - kept.size());
    report->Count("duplicate alternatives dropped", alternatives_dropped_);
    report->Count("nodes shared", nodes_shared_);
  }
  return Output(kept, new_id);
}

Grammar Deduper::Output(const std::vector<RuleId>& kept, const std::vector<RuleId>& new_id) {
  // The canonical nodes are copied once and shared, except that nodes
  // containing kSelf are copied per rule (kSelf -> that rule).
  Grammar out;
  out.source_name = g_.source_name;
  out.tokens = g_.tokens;
  out.root = new_id[g_.root];
  out.rules.resize(kept.size());
  internal::PostOrderMemo shared(work_.exprs.size());
  internal::PostOrderMemo scratch(work_.exprs.size());
  std::vector<ExprId> touched;
  // work_ is acyclic by construction (children are interned before parents),
  // so BuildPostOrder cannot fail here.
  auto copy_shared = [&](ExprId root) {
    return *internal::BuildPostOrder(
        work_, root, shared, internal::OwnChildren(work_),
        [&](ExprId id, const std::vector<ExprId>& kids) {
          const Expr& e = work_.exprs[id];
          return internal::CopyNode(e, kids, e.kind == ExprKind::kRuleRef ? new_id[e.rule] : 0,
                                    out);
        });
  };
  for (size_t i = 0; i < kept.size(); ++i) {
    const RuleId r = kept[i];
    ExprId body;
    if (!self_body_[r]) {
      body = copy_shared(body_[r]);
    } else {
      touched.clear();
      body = *internal::BuildPostOrder(
          work_, body_[r], scratch,
          [&](ExprId id) {
            return has_self_[id] ? absl::Span<const ExprId>(work_.exprs[id].children)
                                 : absl::Span<const ExprId>();
          },
          [&](ExprId id, const std::vector<ExprId>& kids) {
            touched.push_back(id);
            if (!has_self_[id]) return copy_shared(id);
            const Expr& e = work_.exprs[id];
            RuleId rule = 0;
            if (e.kind == ExprKind::kRuleRef) rule = e.rule == kSelf ? new_id[r] : new_id[e.rule];
            return internal::CopyNode(e, kids, rule, out);
          });
      for (ExprId id : touched) scratch.state[id] = 0;
    }
    out.rules[i] = g_.rules[leader_[r]];
    out.rules[i].body = body;
  }
  return out;
}

}  // namespace

absl::StatusOr<Grammar> DedupRules(const Grammar& g, const DedupOptions& options,
                                   PassReport* report) {
  if (absl::Status st = g.Validate(); !st.ok()) return st;
  Deduper deduper(g, options);
  return deduper.Run(report);
}

}  // namespace zapgram::transforms
