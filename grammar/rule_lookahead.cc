// Proving rule lookahead assertions; the method is described in rule_lookahead.h.
#include "grammar/rule_lookahead.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "grammar/byte_automaton.h"
#include "grammar/regex_compiler.h"
#include "grammar/regex_render.h"

namespace zapgram::grammar {
namespace {

// A set of what strings can lead to: pending states (bits 0..60) and outcomes.
constexpr uint64_t kDone = uint64_t{1} << 61;     // a prefix matched the assertion
constexpr uint64_t kRefused = uint64_t{1} << 62;  // the assertion's DFA died first
constexpr uint64_t kOpaque = uint64_t{1} << 63;   // a token-level element: bytes unknown
constexpr uint64_t kOutcomes = kDone | kRefused | kOpaque;
constexpr uint64_t kFailures = kRefused | kOpaque;
constexpr uint32_t kMaxPending = 61;

uint64_t Bit(uint32_t pending) { return uint64_t{1} << pending; }

// T(X): row p = what the strings of X can lead to from pending state p.
using Relation = std::vector<uint64_t>;

// The assertion's minimal DFA over its pending states.
struct Assertion {
  static constexpr uint8_t kStepDone = 0xFE;
  static constexpr uint8_t kStepRefused = 0xFF;
  bool always_holds = false;  // the empty string matches: nothing to check
  uint32_t start = 0;
  // step[p][byte]: the next pending state, kStepDone or kStepRefused.
  std::vector<std::array<uint8_t, 256>> step;
  uint32_t num_pending() const { return static_cast<uint32_t>(step.size()); }
};

// What the bytes lead to from pending state p.
uint64_t WalkBytes(const Assertion& assertion, uint32_t p, std::string_view bytes) {
  for (const char c : bytes) {
    const uint8_t next = assertion.step[p][static_cast<uint8_t>(c)];
    if (next == Assertion::kStepDone) return kDone;
    if (next == Assertion::kStepRefused) return kRefused;
    p = next;
  }
  return Bit(p);
}

// What `set` leads to through the strings of `relation`'s expression. An
// expression without strings ends every path, outcomes included (its rows
// are all empty: a string leads somewhere from every state).
uint64_t Apply(const Relation& relation, uint64_t set) {
  if (relation[0] == 0) return 0;
  uint64_t out = set & kOutcomes;
  for (uint64_t pending = set & ~kOutcomes; pending != 0; pending &= pending - 1) {
    out |= relation[static_cast<uint32_t>(__builtin_ctzll(pending))];
  }
  return out;
}

Relation Identity(uint32_t num_pending) {
  Relation identity(num_pending);
  for (uint32_t p = 0; p < num_pending; ++p) identity[p] = Bit(p);
  return identity;
}

// `first`'s strings followed by `second`'s.
Relation Then(const Relation& first, const Relation& second) {
  Relation out(first.size());
  for (size_t p = 0; p < first.size(); ++p) out[p] = Apply(second, first[p]);
  return out;
}

Relation Union(Relation a, const Relation& b) {
  for (size_t p = 0; p < a.size(); ++p) a[p] |= b[p];
  return a;
}

// Zero or more repetitions, at most `max_count` (kUnbounded: any number).
Relation AtMost(const Relation& relation, uint32_t max_count) {
  const Relation identity = Identity(static_cast<uint32_t>(relation.size()));
  Relation result = identity;
  for (uint32_t count = 0; count < max_count; ++count) {
    Relation next = Union(identity, Then(relation, result));
    if (next == result) break;
    result = std::move(next);
  }
  return result;
}

Relation Power(Relation base, uint32_t exponent) {
  Relation result = Identity(static_cast<uint32_t>(base.size()));
  while (exponent != 0) {
    if (exponent & 1) result = Then(result, base);
    exponent >>= 1;
    if (exponent != 0) base = Then(base, base);
  }
  return result;
}

class LookaheadProver {
 public:
  LookaheadProver(const Grammar& g, const RuleLookaheadLimits& limits) : g_(g), limits_(limits) {}

  absl::Status Prove(const RuleLookahead& lookahead);

 private:
  void IndexLiveBodies();
  absl::Status Fail(const RuleLookahead& lookahead, std::string_view why) const;
  absl::StatusOr<Assertion> BuildAssertion(const RuleLookahead& lookahead) const;
  absl::StatusOr<Relation> TerminalRelation(ExprId id, const Assertion& assertion);
  // T of every expression of every body, rules at their least fixpoint.
  absl::Status ComputeRelations(const Assertion& assertion);
  absl::StatusOr<Relation> Evaluate(ExprId id, const Assertion& assertion,
                                    std::vector<Relation>& memo);

  const Grammar& g_;
  const RuleLookaheadLimits& limits_;
  // Per assertion. Over the live places of the bodies (IndexLiveBodies):
  // their parents (with the child's index), the rules whose body they are,
  // each rule's uses, and the rules used live.
  std::vector<uint8_t> live_rule_;
  std::vector<std::vector<std::pair<ExprId, uint32_t>>> parents_;
  std::vector<std::vector<RuleId>> body_of_;
  std::vector<std::vector<ExprId>> uses_;
  absl::flat_hash_map<ExprId, Relation> terminal_relations_;
  std::vector<Relation> rule_relations_;
  std::vector<Relation> expr_relations_;
  uint64_t walk_left_ = 0;
};

// Walks the bodies top-down from the root, keeping only live places: a
// node is live when some sentence of the grammar derives through it (its
// own strings exist, every sibling in its sequences has strings, its repeat
// allows one iteration, and its rule is used live or is the root).
// T(X) has a non-empty row exactly when X derives some string.
void LookaheadProver::IndexLiveBodies() {
  const auto productive = [&](ExprId id) { return expr_relations_[id][0] != 0; };
  live_rule_.assign(g_.rules.size(), 0);
  parents_.assign(g_.exprs.size(), {});
  body_of_.assign(g_.exprs.size(), {});
  uses_.assign(g_.rules.size(), {});
  std::vector<uint8_t> expanded(g_.exprs.size(), 0);
  std::vector<RuleId> rules;
  if (productive(g_.rules[g_.root].body)) {
    live_rule_[g_.root] = 1;
    rules.push_back(g_.root);
  }
  while (!rules.empty()) {
    const RuleId rule = rules.back();
    rules.pop_back();
    body_of_[g_.rules[rule].body].push_back(rule);
    std::vector<ExprId> stack = {g_.rules[rule].body};
    while (!stack.empty()) {
      const ExprId id = stack.back();
      stack.pop_back();
      if (expanded[id]) continue;
      expanded[id] = 1;
      const Expr& expr = g_.exprs[id];
      if (expr.kind == ExprKind::kRuleRef) {
        uses_[expr.rule].push_back(id);
        if (!live_rule_[expr.rule]) {
          live_rule_[expr.rule] = 1;
          rules.push_back(expr.rule);
        }
        continue;
      }
      if (expr.kind == ExprKind::kRepeat && expr.max == 0) continue;
      if (expr.kind == ExprKind::kSequence) {
        bool all_productive = true;
        for (const ExprId child : expr.children) all_productive &= productive(child);
        if (!all_productive) continue;
      }
      for (uint32_t k = 0; k < expr.children.size(); ++k) {
        const ExprId child = expr.children[k];
        if (!productive(child)) continue;
        parents_[child].push_back({id, k});
        stack.push_back(child);
      }
    }
  }
}

absl::Status LookaheadProver::Fail(const RuleLookahead& lookahead, std::string_view why) const {
  return absl::InvalidArgumentError(absl::StrCat(
      g_.source_name, ":", lookahead.loc.line, ":", lookahead.loc.col,
      ": lookahead assertion of rule '", g_.rules[lookahead.rule].name, "' ", std::string(why)));
}

absl::StatusOr<Assertion> LookaheadProver::BuildAssertion(const RuleLookahead& lookahead) const {
  // The assertion's rules must not be recursive (they are inlined), and it
  // must be made of bytes.
  if (const int64_t recursive = RecursiveRuleReachedFrom(g_, lookahead.assertion); recursive >= 0) {
    return Fail(lookahead, absl::StrCat("refers to the recursive rule '", g_.rules[recursive].name,
                                        "'; zapgram checks regular lookaheads only"));
  }
  for (std::vector<ExprId> stack = {lookahead.assertion}; !stack.empty();) {
    const Expr& expr = g_.exprs[stack.back()];
    stack.pop_back();
    if (expr.kind == ExprKind::kToken || expr.kind == ExprKind::kTokenIds) {
      return Fail(lookahead, "holds a token-level element; zapgram checks lookaheads over bytes");
    }
    stack.insert(stack.end(), expr.children.begin(), expr.children.end());
    if (expr.kind == ExprKind::kRuleRef) stack.push_back(g_.rules[expr.rule].body);
  }

  absl::StatusOr<std::string> regex = RenderRegex(
      g_, lookahead.assertion, [&](RuleId rule) { return g_.rules[rule].body; },
      limits_.max_assertion_bytes);
  if (!regex.ok()) return Fail(lookahead, absl::StrCat("cannot be read: ", regex.status().message()));
  absl::StatusOr<ByteDfa> dfa = CompileRegex(*regex, 0);
  if (!dfa.ok()) return Fail(lookahead, absl::StrCat("cannot be read: ", dfa.status().message()));

  Assertion assertion;
  if (dfa->empty()) {  // matches nothing: every byte after the rule is refused
    std::array<uint8_t, 256> row;
    row.fill(Assertion::kStepRefused);
    assertion.step.push_back(row);
    return assertion;
  }
  if (dfa->accepting[1]) {
    assertion.always_holds = true;
    return assertion;
  }
  std::vector<uint32_t> pending_index(dfa->num_states(), 0);
  uint32_t num_pending = 0;
  for (uint32_t s = 1; s < dfa->num_states(); ++s) {
    if (!dfa->accepting[s]) pending_index[s] = num_pending++;
  }
  if (num_pending > std::min(limits_.max_assertion_states, kMaxPending)) {
    return Fail(lookahead, absl::StrCat("needs ", num_pending, " automaton states, more than ",
                                        std::min(limits_.max_assertion_states, kMaxPending)));
  }
  assertion.step.resize(num_pending);
  for (uint32_t s = 1; s < dfa->num_states(); ++s) {
    if (dfa->accepting[s]) continue;
    for (int byte = 0; byte < 256; ++byte) {
      const uint32_t next = dfa->next[s][byte];
      assertion.step[pending_index[s]][byte] =
          next == 0                 ? Assertion::kStepRefused
          : dfa->accepting[next]    ? Assertion::kStepDone
                                    : static_cast<uint8_t>(pending_index[next]);
    }
  }
  assertion.start = pending_index[1];
  return assertion;
}

absl::StatusOr<Relation> LookaheadProver::TerminalRelation(ExprId id, const Assertion& assertion) {
  if (auto it = terminal_relations_.find(id); it != terminal_relations_.end()) return it->second;
  const Expr& expr = g_.exprs[id];
  const uint32_t num_pending = assertion.num_pending();
  Relation relation(num_pending, 0);
  if (expr.kind == ExprKind::kLiteral) {
    for (uint32_t p = 0; p < num_pending; ++p) relation[p] = WalkBytes(assertion, p, expr.literal);
  } else if (expr.kind == ExprKind::kToken || expr.kind == ExprKind::kTokenIds) {
    for (uint64_t& row : relation) row = kOpaque;
  } else {
    absl::StatusOr<ByteDfa> dfa = expr.kind == ExprKind::kCharClass
                                      ? CodepointClassDfa(expr.ranges)
                                      : CompileRegex(expr.literal, expr.flags);
    if (!dfa.ok()) return dfa.status();
    // Pairs (terminal state, pending state) reachable from (start, p); a
    // pair at an accepting terminal state ends the terminal there.
    if (!dfa->empty()) {
      std::vector<uint8_t> seen;
      std::vector<std::pair<uint32_t, uint32_t>> stack;
      for (uint32_t p = 0; p < num_pending; ++p) {
        seen.assign(static_cast<size_t>(dfa->num_states()) * num_pending, 0);
        stack = {{1, p}};
        seen[num_pending + p] = 1;
        while (!stack.empty()) {
          const auto [state, pending] = stack.back();
          stack.pop_back();
          if (walk_left_ == 0) {
            return absl::ResourceExhaustedError(
                absl::StrCat("walking the terminals against it takes more than max_walk = ",
                             limits_.max_walk, " steps"));
          }
          --walk_left_;
          if (dfa->accepting[state]) relation[p] |= Bit(pending);
          for (int byte = 0; byte < 256; ++byte) {
            const uint32_t next = dfa->next[state][byte];
            if (next == 0) continue;
            const uint8_t step = assertion.step[pending][byte];
            if (step == Assertion::kStepDone) {
              relation[p] |= kDone;
            } else if (step == Assertion::kStepRefused) {
              relation[p] |= kRefused;
            } else if (!seen[static_cast<size_t>(next) * num_pending + step]) {
              seen[static_cast<size_t>(next) * num_pending + step] = 1;
              stack.push_back({next, step});
            }
          }
        }
      }
    }
  }
  terminal_relations_.emplace(id, relation);
  return relation;
}

absl::StatusOr<Relation> LookaheadProver::Evaluate(ExprId root, const Assertion& assertion,
                                                   std::vector<Relation>& memo) {
  const uint32_t num_pending = assertion.num_pending();
  std::vector<std::pair<ExprId, bool>> stack = {{root, false}};
  while (!stack.empty()) {
    const auto [id, children_done] = stack.back();
    stack.pop_back();
    if (!memo[id].empty()) continue;
    const Expr& expr = g_.exprs[id];
    if (!children_done && !expr.children.empty()) {
      stack.push_back({id, true});
      for (const ExprId child : expr.children) {
        if (memo[child].empty()) stack.push_back({child, false});
      }
      continue;
    }
    Relation relation;
    switch (expr.kind) {
      case ExprKind::kEmpty:
        relation = Identity(num_pending);
        break;
      case ExprKind::kRuleRef:
        relation = rule_relations_[expr.rule];
        break;
      case ExprKind::kSequence:
        relation = Identity(num_pending);
        for (const ExprId child : expr.children) relation = Then(relation, memo[child]);
        break;
      case ExprKind::kChoice:
        relation.assign(num_pending, 0);
        for (const ExprId child : expr.children) relation = Union(std::move(relation), memo[child]);
        break;
      case ExprKind::kRepeat: {
        const Relation& body = memo[expr.children[0]];
        relation = Then(Power(body, expr.min),
                        AtMost(body, expr.max == kUnbounded ? kUnbounded : expr.max - expr.min));
        break;
      }
      default: {
        absl::StatusOr<Relation> terminal = TerminalRelation(id, assertion);
        if (!terminal.ok()) return terminal.status();
        relation = *std::move(terminal);
        break;
      }
    }
    memo[id] = std::move(relation);
  }
  return memo[root];
}

absl::Status LookaheadProver::ComputeRelations(const Assertion& assertion) {
  const uint32_t num_pending = assertion.num_pending();
  terminal_relations_.clear();
  rule_relations_.assign(g_.rules.size(), Relation(num_pending, 0));
  while (true) {  // least fixpoint: relations only grow, over a finite lattice
    std::vector<Relation> memo(g_.exprs.size());
    bool changed = false;
    for (RuleId rule = 0; rule < g_.rules.size(); ++rule) {
      absl::StatusOr<Relation> relation = Evaluate(g_.rules[rule].body, assertion, memo);
      if (!relation.ok()) return relation.status();
      if (*relation != rule_relations_[rule]) {
        rule_relations_[rule] = *std::move(relation);
        changed = true;
      }
    }
    if (!changed) {
      expr_relations_ = std::move(memo);
      return absl::OkStatus();
    }
  }
}

absl::Status LookaheadProver::Prove(const RuleLookahead& lookahead) {
  absl::StatusOr<Assertion> assertion = BuildAssertion(lookahead);
  if (!assertion.ok()) return assertion.status();
  if (assertion->always_holds) return absl::OkStatus();
  walk_left_ = limits_.max_walk;
  if (absl::Status status = ComputeRelations(*assertion); !status.ok()) {
    return Fail(lookahead, absl::StrCat("cannot be checked: ", status.message()));
  }
  IndexLiveBodies();
  if (!live_rule_[lookahead.rule]) return absl::OkStatus();

  // Pending sets at the end of each rule's body, grown by a worklist.
  std::vector<uint64_t> at_end(g_.rules.size(), 0);
  std::vector<RuleId> grown;
  absl::flat_hash_map<ExprId, Relation> repeat_stars;
  // Follows the set `start` from the use `use` up to the ends of the bodies
  // holding it; fails at the first refused or opaque continuation.
  const auto flow = [&](ExprId use, uint64_t start) -> absl::Status {
    std::vector<std::pair<ExprId, uint64_t>> work = {{use, start}};
    while (!work.empty()) {
      const auto [id, set] = work.back();
      work.pop_back();
      for (const RuleId rule : body_of_[id]) {
        const uint64_t pending = set & ~kOutcomes;
        if ((at_end[rule] | pending) != at_end[rule]) {
          at_end[rule] |= pending;
          grown.push_back(rule);
        }
      }
      for (const auto& [parent_id, index] : parents_[id]) {
        const Expr& parent = g_.exprs[parent_id];
        uint64_t next = set;
        if (parent.kind == ExprKind::kSequence) {
          for (size_t k = index + 1; k < parent.children.size(); ++k) {
            next = Apply(expr_relations_[parent.children[k]], next);
          }
        } else if (parent.kind == ExprKind::kRepeat && parent.max > 1) {
          auto [star, inserted] = repeat_stars.try_emplace(parent_id);
          if (inserted) star->second = AtMost(expr_relations_[parent.children[0]], kUnbounded);
          next = Apply(star->second, next);
        }
        if (next & kFailures) {
          const Expr& used = g_.exprs[use];
          const std::string& used_name = g_.rules[used.rule].name;
          const std::string where =
              used.rule == lookahead.rule
                  ? absl::StrCat("where '", used_name, "' is used at ", used.loc.line, ":",
                                 used.loc.col, ", the text after it")
                  : absl::StrCat("where '", used_name, "' is used at ", used.loc.line, ":",
                                 used.loc.col, ", the text after '",
                                 g_.rules[lookahead.rule].name, "' (which can end it)");
          if (next & kRefused) {
            return Fail(lookahead,
                        absl::StrCat("does not follow from the grammar: ", where,
                                     " can begin with bytes the assertion refuses; zapgram "
                                     "accepts a rule lookahead only where the grammar implies "
                                     "it (XGrammar takes it as an unchecked hint)"));
          }
          return Fail(lookahead,
                      absl::StrCat("cannot be checked: ", where,
                                   " can begin with a token-level element, whose bytes depend "
                                   "on the vocabulary"));
        }
        if (next & ~kOutcomes) work.push_back({parent_id, next & ~kDone});
      }
    }
    return absl::OkStatus();
  };
  for (const ExprId use : uses_[lookahead.rule]) {
    if (absl::Status status = flow(use, Bit(assertion->start)); !status.ok()) return status;
  }
  while (!grown.empty()) {
    const RuleId rule = grown.back();
    grown.pop_back();
    for (const ExprId use : uses_[rule]) {
      if (absl::Status status = flow(use, at_end[rule]); !status.ok()) return status;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckRuleLookaheadsImplied(const Grammar& g,
                                        const std::vector<RuleLookahead>& lookaheads,
                                        const RuleLookaheadLimits& limits) {
  if (lookaheads.empty()) return absl::OkStatus();
  LookaheadProver prover(g, limits);
  for (const RuleLookahead& lookahead : lookaheads) {
    if (absl::Status status = prover.Prove(lookahead); !status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace zapgram::grammar
