// Useless rules: the textbook "reduce the grammar" step, on expression trees.
//
// A symbol is *productive* when it derives some terminal string and
// *reachable* when some sentential form from the start symbol contains it; a
// grammar is reduced when every symbol is both (Hopcroft & Ullman, "useless
// symbols"; the order matters: productivity first, because dropping what is
// unproductive can make more rules unreachable, never the reverse).
//
// Productivity is computed per expression node and per rule at once, by one
// worklist in linear time (the counting algorithm the lowering also uses,
// parser/flat_grammar.cc): a literal, regex or empty node is productive, a
// class when it has a range, a rule reference when its rule is, a rule when
// its body is, a choice when one child is, a repetition when min = 0 or its
// child is, a sequence when its count of unproductive children reaches zero.
// (grammar::ComputeProductivity, shared with `zapgram check`.)
//
// The bodies of productive rules are then rebuilt without what can never
// match: an unproductive alternative of a choice is dropped (a choice left
// with one alternative becomes it), a repetition of an unproductive child
// (then min = 0) becomes empty; a productive sequence has only productive
// parts, so nothing else changes. Reachability is a walk from the root over
// the bodies as they will be rebuilt (productive nodes only), and only the
// kept rules are rebuilt, into a fresh grammar with new ids. Nothing is
// mutated in place (expressions may be shared).
//
// The language is unchanged: every dropped part matched nothing. A root
// that derives no string (the empty language) is not an error: the result
// is that root alone with a body that matches nothing (EmptyLanguage), so
// such a grammar compiles, accepts no text and allows no token.
// Tests: tests/transforms/transforms_test.cc (UselessRules.*, LanguagePreservation.*).
#include "transforms/useless_rules.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "transforms/rewrite.h"

namespace zapgram::transforms {

using internal::kNever;
using internal::kNoRule;
using grammar::Expr;
using grammar::ExprId;
using grammar::ExprKind;
using grammar::Grammar;
using grammar::RuleId;

namespace {

// The rules reachable from g's root once unproductive parts are dropped: the
// walk enters only productive nodes (a productive sequence has only
// productive parts; a choice's unproductive alternatives and a repetition's
// unproductive child are what the rebuild drops).
std::vector<uint8_t> ReachedRules(const Grammar& g, const grammar::Productivity& prod) {
  std::vector<uint8_t> reached(g.rules.size(), 0);
  std::vector<uint8_t> seen(g.exprs.size(), 0);
  std::vector<RuleId> rule_work = {g.root};
  reached[g.root] = 1;
  std::vector<ExprId> stack;
  while (!rule_work.empty()) {
    RuleId r = rule_work.back();
    rule_work.pop_back();
    stack = {g.rules[r].body};
    while (!stack.empty()) {
      ExprId id = stack.back();
      stack.pop_back();
      if (seen[id] || !prod.expr[id]) continue;
      seen[id] = 1;
      const Expr& e = g.exprs[id];
      if (e.kind == ExprKind::kRuleRef && !reached[e.rule]) {
        reached[e.rule] = 1;
        rule_work.push_back(e.rule);
      }
      for (ExprId c : e.children) stack.push_back(c);
    }
  }
  return reached;
}

// The grammar of the empty language for `g`, whose root derives no string:
// its root rule alone, with a body that matches nothing (a class of no code
// point; the lowering gives it no production, so no Earley item ever
// completes the root and no byte or token is ever allowed). A lexed
// grammar's lexicon goes too: no token can take part in a sentence.
Grammar EmptyLanguage(const Grammar& g, PassReport* report) {
  const grammar::Rule& root = g.rules[g.root];
  for (RuleId r = 0; r < g.rules.size(); ++r) {
    if (r != g.root && report != nullptr) report->AddRule("removed unproductive", g.rules[r].name);
  }
  if (report != nullptr) report->Count("empty language", 1);
  Grammar out;
  out.source_name = g.source_name;
  const ExprId nothing = out.AddCharClass({}, false, root.loc);
  out.rules.push_back({root.name, nothing, root.loc});
  out.root = 0;
  return out;
}

}  // namespace

absl::StatusOr<Grammar> RemoveUselessRules(const Grammar& g, PassReport* report) {
  if (absl::Status st = g.Validate(); !st.ok()) return st;
  grammar::Productivity prod = grammar::ComputeProductivity(g);
  if (!prod.rule[g.root]) return EmptyLanguage(g, report);

  const std::vector<uint8_t> reached = ReachedRules(g, prod);
  std::vector<RuleId> kept;
  std::vector<RuleId> new_id(g.rules.size(), kNoRule);
  for (RuleId r = 0; r < g.rules.size(); ++r) {
    if (!prod.rule[r]) {
      if (report != nullptr) report->AddRule("removed unproductive", g.rules[r].name);
      continue;
    }
    if (!reached[r]) {
      if (report != nullptr) report->AddRule("removed unreachable", g.rules[r].name);
      continue;
    }
    new_id[r] = static_cast<RuleId>(kept.size());
    kept.push_back(r);
  }

  // The kept rules' bodies, rebuilt straight into the result with new rule
  // ids (one copy of the grammar, not a pruned copy and then a renumbered
  // one: a schema's IR can run to tens of MB).
  Grammar out;
  uint64_t alternatives_dropped = 0;
  uint64_t repeats_emptied = 0;
  auto children = [&](ExprId id) {
    // Nothing below an unproductive node is needed.
    return prod.expr[id] ? absl::Span<const ExprId>(g.exprs[id].children)
                         : absl::Span<const ExprId>();
  };
  auto build = [&](ExprId id, const std::vector<ExprId>& kids) -> ExprId {
    const Expr& e = g.exprs[id];
    if (!prod.expr[id]) return kNever;
    switch (e.kind) {
      case ExprKind::kChoice: {
        std::vector<ExprId> alternatives;
        for (ExprId k : kids) {
          if (k != kNever) alternatives.push_back(k);
        }
        alternatives_dropped += kids.size() - alternatives.size();
        if (alternatives.size() == 1) return alternatives[0];
        return internal::CopyNode(e, alternatives, 0, out);
      }
      case ExprKind::kRepeat:
        if (kids[0] == kNever) {
          ++repeats_emptied;
          return out.AddEmpty(e.loc);
        }
        return internal::CopyNode(e, kids, 0, out);
      case ExprKind::kRuleRef:
        return internal::CopyNode(e, kids, new_id[e.rule], out);  // productive: a kept rule
      default:
        return internal::CopyNode(e, kids, e.rule, out);
    }
  };
  // A kept rule is productive: its body is never kNever.
  if (absl::Status st = internal::RebuildKeptRules(g, kept, children, build, out); !st.ok()) return st;
  out.root = new_id[g.root];
  if (report != nullptr) {
    report->Count("alternatives dropped", alternatives_dropped);
    report->Count("repeats emptied", repeats_emptied);
  }
  return out;
}

}  // namespace zapgram::transforms
