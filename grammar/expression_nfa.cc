// ExpressionNfaBuilder (see expression_nfa.h).
//
// Fragments follow the regex compiler's rule (regex_compiler.cc): a
// fragment is entered at a state it was given and ends at a state it
// returns, and no construction adds an edge into the state it was entered
// at, so fragments chain through shared states. The loops (a star) and the
// alternatives (a choice) enter their bodies at fresh states for that
// reason; StampDfa enters a leaf's DFA through a fresh state too.
#include "grammar/expression_nfa.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "grammar/dfa_minimization.h"
#include "grammar/dfa_set_ops.h"

namespace zapgram::grammar {

ExpressionNfaBuilder::ExpressionNfaBuilder(const Grammar& g,
                                           std::function<ExprId(RuleId)> rule_body,
                                           RegexDfaCache* regex_cache, const RegexLimits& limits)
    : g_(g), rule_body_(std::move(rule_body)), regex_cache_(regex_cache), limits_(limits) {}

const absl::StatusOr<ClassDfa>& ExpressionNfaBuilder::LeafDfa(const Expr& e) {
  auto [it, fresh] =
      leaves_.try_emplace(absl::StrCat(e.flags, "/", e.literal), absl::UnknownError("unset"));
  if (fresh) {
    const absl::StatusOr<ClassDfa>& dfa = regex_cache_->Determinized(e.literal, e.flags, limits_);
    it->second = dfa.ok() ? absl::StatusOr<ClassDfa>(MinimizeDfaToClasses(*dfa)) : dfa.status();
  }
  return it->second;
}

absl::StatusOr<uint32_t> ExpressionNfaBuilder::Append(ByteNfa& nfa, uint32_t from,
                                                      absl::Span<const ExprId> parts) {
  // One frame per expression being emitted. `i` counts the children (or
  // copies) entered so far; `cur` is where the next one starts; `end` is a
  // choice's join state, a star's loop state or an optional tail's exit.
  struct Frame {
    ExprId id;
    uint32_t from;
    uint32_t cur;
    uint32_t end;
    uint32_t i;
  };
  uint32_t cur = from;
  std::vector<Frame> stack;
  for (ExprId part : parts) {
    stack.push_back({part, cur, cur, 0, 0});
    uint32_t ret = cur;  // the end state of the frame that returned last
    while (!stack.empty()) {
      if (nfa.num_states() > limits_.max_nfa_states) {
        return absl::ResourceExhaustedError(
            absl::StrCat("expression NFA exceeds max_nfa_states = ", limits_.max_nfa_states));
      }
      const size_t top = stack.size() - 1;
      const Expr& e = g_.exprs[stack[top].id];
      const auto enter = [&](ExprId child, uint32_t at) { stack.push_back({child, at, at, 0, 0}); };
      switch (e.kind) {
        case ExprKind::kEmpty:
          ret = stack[top].from;
          stack.pop_back();
          break;
        case ExprKind::kLiteral:
          ret = nfa.AddLiteral(stack[top].from, e.literal);
          stack.pop_back();
          break;
        case ExprKind::kCharClass:
          ret = nfa.AddCodepoints(stack[top].from, e.ranges);
          stack.pop_back();
          break;
        case ExprKind::kRegex: {
          const absl::StatusOr<ClassDfa>& dfa = LeafDfa(e);
          if (!dfa.ok()) return dfa.status();
          ret = StampDfa(nfa, stack[top].from, *dfa);
          stack.pop_back();
          break;
        }
        case ExprKind::kToken:
        case ExprKind::kTokenIds:
          return absl::InvalidArgumentError("a token has no byte automaton");
        case ExprKind::kRuleRef:
          if (stack[top].i++ == 0) {
            enter(rule_body_(e.rule), stack[top].from);
          } else {
            stack.pop_back();  // `ret` is the body's end
          }
          break;
        case ExprKind::kSequence: {
          Frame& f = stack[top];
          if (f.i > 0) f.cur = ret;
          if (f.i < e.children.size()) {
            const ExprId child = e.children[f.i++];
            enter(child, f.cur);
          } else {
            ret = f.cur;
            stack.pop_back();
          }
          break;
        }
        case ExprKind::kChoice: {
          Frame& f = stack[top];
          if (f.i == 0) {
            f.end = nfa.AddState();
          } else {
            nfa.AddEpsilon(ret, f.end);
          }
          if (f.i < e.children.size()) {
            const ExprId child = e.children[f.i++];
            const uint32_t entry = nfa.AddState();
            nfa.AddEpsilon(f.from, entry);
            enter(child, entry);
          } else {
            ret = f.end;
            stack.pop_back();
          }
          break;
        }
        case ExprKind::kRepeat: {
          Frame& f = stack[top];
          const bool unbounded = e.max == kUnbounded;
          if (unbounded && f.i == e.min + 1) {  // the star's body returned
            nfa.AddEpsilon(ret, f.end);
            ret = f.end;
            stack.pop_back();
            break;
          }
          if (f.i > 0) f.cur = ret;
          const ExprId child = e.children[0];
          if (f.i < e.min) {
            ++f.i;
            enter(child, f.cur);
          } else if (unbounded) {
            f.end = nfa.AddState();
            nfa.AddEpsilon(f.cur, f.end);
            const uint32_t entry = nfa.AddState();
            nfa.AddEpsilon(f.end, entry);
            ++f.i;
            enter(child, entry);
          } else if (f.i < e.max) {
            if (f.i == e.min) f.end = nfa.AddState();
            nfa.AddEpsilon(f.cur, f.end);
            ++f.i;
            enter(child, f.cur);
          } else {
            if (e.max > e.min) nfa.AddEpsilon(f.cur, f.end);
            ret = e.max > e.min ? f.end : f.cur;
            stack.pop_back();
          }
          break;
        }
      }
    }
    cur = ret;
  }
  return cur;
}

absl::StatusOr<ClassDfa> ExpressionNfaBuilder::Determinize(absl::Span<const ExprId> parts) {
  ByteNfa nfa;
  absl::StatusOr<uint32_t> end = Append(nfa, 0, parts);
  if (!end.ok()) return end.status();
  nfa.SetAccepting(*end);
  return DeterminizeToClasses(nfa, limits_.max_dfa_states);
}

}  // namespace zapgram::grammar
