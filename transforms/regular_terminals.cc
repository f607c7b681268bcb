// Merging regular parts into regex terminals (see regular_terminals.h).
//
// Steps, each linear in the grammar (plus one determinization per tried
// distinct pattern text, of the NFA grammar/expression_nfa.h builds from
// the expressions; texts are memoized per node in one RegexRenderMemo,
// compile verdicts per node, with a rule reference standing for its rule's
// body, and per pattern text):
//  1. Regular rules, by Kahn's algorithm on the rule reference graph: a rule
//     is settled once every rule it refers to is; rules on or behind a cycle
//     are never settled, hence not regular.
//  2. Regular expression nodes, bottom-up (explicit stack).
//  3. A rebuild of every rule body, top-down: a regular composite node
//     (sequence, choice, repetition, reference) whose automaton fits within
//     the limits becomes one kRegex; otherwise its children are rebuilt, and
//     in a sequence each run of two or more adjacent regular children is
//     tried as one regex.
#include "transforms/regular_terminals.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "grammar/expression_nfa.h"
#include "grammar/regex_compiler.h"
#include "grammar/regex_render.h"
#include "grammar/rendered_anchors.h"

namespace zapgram::transforms {

namespace {

using grammar::Expr;
using grammar::ExprId;
using grammar::ExprKind;
using grammar::Grammar;
using grammar::RuleId;

constexpr ExprId kUnbuilt = 0xFFFFFFFFu;

class Merger {
 public:
  Merger(const Grammar& g, RegularTerminalStats* stats, const RegularTerminalOptions& options)
      : g_(g), stats_(stats), options_(options) {}

  absl::StatusOr<Grammar> Run();

 private:
  void FindRegularRules();
  void FindRegularNodes();
  // The regex of the concatenation of `parts` if its automaton fits within the limits.
  std::optional<std::string> TryRegex(const std::vector<ExprId>& parts);
  // A rule reference's regex is its rule body's (following chains of
  // references), so both share one compile verdict.
  ExprId CompileKey(ExprId id) const;
  ExprId Rebuild(ExprId root);
  // A sequence's plan: each piece is a run merged into one regex, or one
  // child rebuilt on its own.
  struct Piece {
    ExprId child = kUnbuilt;  // kUnbuilt: `regex` holds a merged run
    std::string regex;
  };
  std::vector<Piece> PlanSequence(ExprId id);
  // A regex the lowering matches as a counted terminal (a string with a
  // maxLength of 32 or more): merged with its neighbours it would be
  // unrolled into (max + 1) x |unit| eager states with no loop, which made
  // every mask inside the string a walk of the whole token trie. It stays a
  // terminal of its own, and counts as not regular for its parents.
  static bool IsCountedRegex(const Expr& e) {
    if (e.kind != ExprKind::kRegex || !grammar::MayHaveCountedBound(e.literal)) return false;
    absl::StatusOr<std::optional<grammar::CountedParts>> split = grammar::SplitCountedRegex(e.literal, e.flags);
    return split.ok() && split->has_value() && (*split)->max >= grammar::kCountedMinBound;
  }
  bool Mergeable(ExprId id) const {
    const ExprKind k = g_.exprs[id].kind;
    return regular_node_[id] && (k == ExprKind::kSequence || k == ExprKind::kChoice ||
                                 k == ExprKind::kRepeat || k == ExprKind::kRuleRef);
  }

  const Grammar& g_;
  RegularTerminalStats* stats_;
  const RegularTerminalOptions& options_;
  Grammar out_;
  std::vector<uint8_t> regular_rule_;
  std::vector<uint8_t> regular_node_;
  std::vector<ExprId> memo_;
  absl::flat_hash_map<ExprId, std::vector<Piece>> plans_;
  grammar::RegexRenderMemo render_memo_;
  // Per CompileKey of a single-expression try: unknown, compiled, failed
  // while rendering (text too long), failed while compiling (too many DFA
  // states, an empty language, an error).
  enum : uint8_t { kUntried = 0, kCompiled = 1, kTooLong = 2, kFailed = 3 };
  std::vector<uint8_t> verdict_;
  // Compiled candidates by pattern text: separate nodes often render alike
  // (the same member of many objects, a run tried again inside a longer one).
  grammar::RegexDfaCache own_dfa_cache_;
  grammar::RegexDfaCache& dfa_cache_ =
      options_.dfa_cache != nullptr ? *options_.dfa_cache : own_dfa_cache_;
  // Candidates refused for a misplaced anchor, known without parsing them.
  grammar::RenderedAnchors anchors_{g_, [this](RuleId r) { return g_.rules[r].body; }};
  // Each candidate's automaton, from its expressions; regex leaves compiled
  // once each through dfa_cache_.
  grammar::RegexLimits limits_ = [this] {
    grammar::RegexLimits limits;
    limits.max_dfa_states = options_.max_dfa_states;
    return limits;
  }();
  grammar::ExpressionNfaBuilder nfa_builder_{
      g_, [this](RuleId r) { return g_.rules[r].body; }, &dfa_cache_, limits_};
};

void Merger::FindRegularRules() {
  const size_t n = g_.rules.size();
  std::vector<std::vector<RuleId>> users(n);
  std::vector<uint32_t> pending(n, 0);
  // Rules holding a token (lexed, or a vocabulary id) or a counted regex are not regular.
  std::vector<uint8_t> opaque(n, 0);
  std::vector<uint32_t> seen(g_.exprs.size(), 0xFFFFFFFFu);
  for (RuleId r = 0; r < n; ++r) {
    std::vector<ExprId> stack = {g_.rules[r].body};
    std::vector<RuleId> deps;
    while (!stack.empty()) {
      const ExprId id = stack.back();
      stack.pop_back();
      if (seen[id] == r) continue;
      seen[id] = r;
      const Expr& e = g_.exprs[id];
      if (e.kind == ExprKind::kRuleRef) deps.push_back(e.rule);
      if (e.kind == ExprKind::kToken || e.kind == ExprKind::kTokenIds || IsCountedRegex(e)) {
        opaque[r] = 1;
      }
      for (ExprId c : e.children) stack.push_back(c);
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    pending[r] = static_cast<uint32_t>(deps.size());
    for (RuleId d : deps) users[d].push_back(r);
  }
  regular_rule_.assign(n, 0);
  std::vector<uint8_t> spoiled = opaque;
  std::vector<RuleId> ready;
  for (RuleId r = 0; r < n; ++r) {
    if (pending[r] == 0) ready.push_back(r);
  }
  while (!ready.empty()) {
    const RuleId r = ready.back();
    ready.pop_back();
    regular_rule_[r] = !spoiled[r] && !g_.rules[r].keep_as_rule && !g_.rules[r].observed();
    for (RuleId u : users[r]) {
      if (!regular_rule_[r]) spoiled[u] = 1;
      if (--pending[u] == 0) ready.push_back(u);
    }
  }
}

void Merger::FindRegularNodes() {
  const size_t n = g_.exprs.size();
  regular_node_.assign(n, 0);
  std::vector<uint8_t> state(n, 0);
  for (ExprId root = 0; root < n; ++root) {
    if (state[root]) continue;
    std::vector<ExprId> stack = {root};
    while (!stack.empty()) {
      const ExprId id = stack.back();
      const Expr& e = g_.exprs[id];
      if (state[id] == 0) {
        state[id] = 1;
        for (ExprId c : e.children) {
          if (state[c] == 0) stack.push_back(c);
        }
        continue;
      }
      stack.pop_back();
      if (state[id] == 2) continue;
      state[id] = 2;
      bool regular =
          e.kind != ExprKind::kToken && e.kind != ExprKind::kTokenIds && !IsCountedRegex(e);
      if (e.kind == ExprKind::kRuleRef) regular = regular_rule_[e.rule] != 0;
      for (ExprId c : e.children) regular = regular && regular_node_[c];
      regular_node_[id] = regular;
    }
  }
}

ExprId Merger::CompileKey(ExprId id) const {
  // Regular rules are not recursive, so the chain ends.
  while (g_.exprs[id].kind == ExprKind::kRuleRef) id = g_.rules[g_.exprs[id].rule].body;
  return id;
}

std::optional<std::string> Merger::TryRegex(const std::vector<ExprId>& parts) {
  const ExprId key = parts.size() == 1 ? CompileKey(parts[0]) : kUnbuilt;
  auto fail = [&](uint8_t verdict) -> std::optional<std::string> {
    if (key != kUnbuilt) verdict_[key] = verdict;
    if (stats_ != nullptr) ++stats_->too_large;
    return std::nullopt;
  };
  if (key != kUnbuilt && (verdict_[key] == kFailed || verdict_[key] == kTooLong)) {
    return fail(verdict_[key]);
  }
  std::string pattern;
  for (ExprId part : parts) {
    const uint64_t rendered_before = render_memo_.nodes_rendered;
    absl::StatusOr<std::string> piece = grammar::RenderRegex(
        g_, part, [&](RuleId r) { return g_.rules[r].body; }, options_.max_regex_bytes,
        &render_memo_);
    if (stats_ != nullptr) stats_->nodes_rendered += render_memo_.nodes_rendered - rendered_before;
    if (!piece.ok() || pattern.size() + piece->size() > options_.max_regex_bytes) {
      return fail(kTooLong);
    }
    pattern += *piece;
  }
  // Rendered first all the same: a text too long is a different verdict
  // (PlanSequence retries the run of a sequence's children then).
  if (anchors_.Refused(parts)) return fail(kFailed);
  if (options_.lazy_nfas != nullptr && (key == kUnbuilt || verdict_[key] == kUntried) &&
      !options_.lazy_nfas->by_pattern.contains(pattern)) {
    grammar::ByteNfa nfa;
    absl::StatusOr<uint32_t> end = nfa_builder_.Append(nfa, 0, parts);
    if (!end.ok()) return fail(kFailed);
    if (nfa.num_states() > options_.lazy_above_nfa_states) {
      nfa.SetAccepting(*end);
      options_.lazy_nfas->by_pattern.emplace(pattern, std::move(nfa));
      if (stats_ != nullptr) ++stats_->lazy;
    }
  }
  if (options_.lazy_nfas != nullptr && options_.lazy_nfas->by_pattern.contains(pattern)) {
    if (key != kUnbuilt) verdict_[key] = kCompiled;
  } else if (key == kUnbuilt || verdict_[key] == kUntried) {
    const uint64_t hits_before = dfa_cache_.hits();
    // Built from the expressions, not from the text (grammar/expression_nfa.h).
    const absl::StatusOr<grammar::ClassDfa>& dfa = dfa_cache_.Determinized(
        pattern, 0, limits_, [&] { return nfa_builder_.Determinize(parts); });
    if (stats_ != nullptr && dfa_cache_.hits() == hits_before) ++stats_->compiles;
    if (!dfa.ok() || dfa->empty()) return fail(kFailed);
    if (key != kUnbuilt) verdict_[key] = kCompiled;
  }
  if (stats_ != nullptr) ++stats_->merged;
  return pattern;
}

std::vector<Merger::Piece> Merger::PlanSequence(ExprId id) {
  std::vector<Piece> plan;
  const std::vector<ExprId>& children = g_.exprs[id].children;
  // A run of all the children is the sequence itself: its regex is the
  // sequence's without the outer (?:...), the same syntax tree, hence the
  // same NFA and the same verdict. Once the sequence failed to compile
  // (rather than to render: the run's text is 4 bytes shorter), trying the
  // run would determinize the same doomed automaton up to the cap again.
  const bool whole_run_failed = verdict_[id] == kFailed;
  for (size_t i = 0; i < children.size();) {
    size_t j = i;
    while (j < children.size() && regular_node_[children[j]]) ++j;
    if (j - i >= 2 && j - i == children.size() && whole_run_failed) {
      if (stats_ != nullptr) ++stats_->too_large;
    } else if (j - i >= 2) {
      std::vector<ExprId> run(children.begin() + i, children.begin() + j);
      if (std::optional<std::string> pattern = TryRegex(run)) {
        plan.push_back({kUnbuilt, *std::move(pattern)});
        i = j;
        continue;
      }
    }
    const size_t end = std::max(j, i + 1);
    for (; i < end; ++i) plan.push_back({children[i], {}});
  }
  return plan;
}

ExprId Merger::Rebuild(ExprId root) {
  std::vector<std::pair<ExprId, bool>> stack = {{root, false}};
  while (!stack.empty()) {
    auto [id, expanded] = stack.back();
    stack.pop_back();
    if (memo_[id] != kUnbuilt) continue;
    const Expr& e = g_.exprs[id];
    if (!expanded) {
      if (Mergeable(id)) {
        if (std::optional<std::string> pattern = TryRegex({id})) {
          memo_[id] = out_.AddRegex(*std::move(pattern), 0, e.loc);
          continue;
        }
      }
      stack.push_back({id, true});
      if (e.kind == ExprKind::kSequence) {
        plans_[id] = PlanSequence(id);
        for (const Piece& piece : plans_[id]) {
          if (piece.child != kUnbuilt && memo_[piece.child] == kUnbuilt) {
            stack.push_back({piece.child, false});
          }
        }
        continue;
      }
      for (ExprId c : e.children) {
        if (memo_[c] == kUnbuilt) stack.push_back({c, false});
      }
      continue;
    }
    std::vector<ExprId> kids;
    if (e.kind != ExprKind::kSequence) {
      for (ExprId c : e.children) kids.push_back(memo_[c]);
    }
    switch (e.kind) {
      case ExprKind::kSequence:
        for (Piece& piece : plans_[id]) {
          kids.push_back(piece.child != kUnbuilt ? memo_[piece.child]
                                                 : out_.AddRegex(std::move(piece.regex), 0, e.loc));
        }
        plans_.erase(id);
        memo_[id] = out_.AddSequence(std::move(kids), e.loc);
        break;
      case ExprKind::kChoice:
        memo_[id] = out_.AddChoice(std::move(kids), e.loc);
        break;
      case ExprKind::kRepeat:
        memo_[id] = out_.AddRepeat(kids[0], e.min, e.max, e.loc);
        break;
      default: {
        Expr copy = e;
        out_.exprs.push_back(std::move(copy));
        memo_[id] = static_cast<ExprId>(out_.exprs.size() - 1);
        break;
      }
    }
  }
  return memo_[root];
}

absl::StatusOr<Grammar> Merger::Run() {
  absl::Status st = g_.Validate();
  if (!st.ok()) return st;
  if (g_.lexed()) return g_;
  FindRegularRules();
  FindRegularNodes();
  out_.source_name = g_.source_name;
  out_.root = g_.root;
  out_.rules = g_.rules;
  memo_.assign(g_.exprs.size(), kUnbuilt);
  verdict_.assign(g_.exprs.size(), kUntried);
  for (RuleId r = 0; r < g_.rules.size(); ++r) out_.rules[r].body = Rebuild(g_.rules[r].body);
  if (!(st = out_.Validate()).ok()) return st;
  return std::move(out_);
}

}  // namespace

absl::StatusOr<grammar::Grammar> MergeRegularTerminals(const grammar::Grammar& g,
                                                       RegularTerminalStats* stats,
                                                       const RegularTerminalOptions& options) {
  Merger merger(g, stats, options);
  return merger.Run();
}

}  // namespace zapgram::transforms
