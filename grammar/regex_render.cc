// Expressions -> regex text (see regex_render.h).
#include "grammar/regex_render.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace zapgram::grammar {

std::string PythonEscape(std::string_view text) {
  static constexpr std::string_view kSpecial = "()[]{}?*+-|^$\\.&~# \t\n\r\v\f";
  std::string out;
  for (char c : text) {
    if (kSpecial.find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string ClassRegexp(const std::vector<CodepointRange>& ranges) {
  std::string out = "[";
  for (const CodepointRange& r : ranges) {
    absl::StrAppend(&out, absl::StrFormat("\\x{%X}", r.lo));
    if (r.hi != r.lo) absl::StrAppend(&out, absl::StrFormat("-\\x{%X}", r.hi));
  }
  out += "]";
  return out;
}

std::string RepeatSuffix(uint32_t min, uint32_t max) {
  if (min == 0 && max == kUnbounded) return "*";
  if (min == 1 && max == kUnbounded) return "+";
  if (min == 0 && max == 1) return "?";
  if (max == kUnbounded) return absl::StrFormat("{%d,}", min);
  if (min == max) return absl::StrFormat("{%d}", min);
  return absl::StrFormat("{%d,%d}", min, max);
}

std::string ScopedRegexp(std::string_view regexp, uint32_t flags) {
  std::string letters;
  if (flags & kRegexIgnoreCase) letters.push_back('i');
  if (flags & kRegexMultiline) letters.push_back('m');
  if (flags & kRegexDotAll) letters.push_back('s');
  if (flags & kRegexVerbose) letters.push_back('x');
  if (flags & kRegexJsonString) letters.push_back('J');
  if (flags & kRegexJsonAnySpelling) letters.push_back('E');
  return absl::StrFormat("(?%s:%s)", letters, regexp);
}

absl::StatusOr<std::string> RenderRegex(const Grammar& g, ExprId root,
                                        const std::function<ExprId(RuleId)>& rule_body,
                                        size_t max_bytes, RegexRenderMemo* memo) {
  RegexRenderMemo local;
  if (memo == nullptr) memo = &local;
  if (memo->state.size() != g.exprs.size()) {
    memo->state.assign(g.exprs.size(), RegexRenderMemo::kUnknown);
    memo->text.assign(g.exprs.size(), std::string());
  }
  std::vector<uint8_t>& state = memo->state;
  std::vector<std::string>& text = memo->text;
  // Nodes entered but not finished: the path from `root` to the current node.
  std::vector<ExprId> open_nodes;
  std::vector<uint8_t> open(g.exprs.size(), 0);
  auto children = [&](ExprId id) -> std::vector<ExprId> {
    const Expr& e = g.exprs[id];
    if (e.kind == ExprKind::kRuleRef) return {rule_body(e.rule)};
    return e.children;
  };
  auto too_long = [&]() -> absl::Status {
    for (ExprId a : open_nodes) state[a] = RegexRenderMemo::kTooLong;
    return absl::ResourceExhaustedError(absl::StrCat("regex longer than ", max_bytes, " bytes"));
  };
  auto recursive = []() { return absl::InvalidArgumentError("recursive rules have no regex"); };
  std::vector<std::pair<ExprId, bool>> stack = {{root, false}};
  while (!stack.empty()) {
    auto [id, expanded] = stack.back();
    stack.pop_back();
    if (state[id] == RegexRenderMemo::kRendered) continue;
    if (!expanded) {
      if (state[id] == RegexRenderMemo::kTooLong) return too_long();
      if (open[id]) return recursive();
      open[id] = 1;
      open_nodes.push_back(id);
      stack.push_back({id, true});
      for (ExprId c : children(id)) {
        if (state[c] == RegexRenderMemo::kRendered) continue;
        if (state[c] == RegexRenderMemo::kTooLong) return too_long();
        if (open[c]) return recursive();
        stack.push_back({c, false});
      }
      continue;
    }
    const Expr& e = g.exprs[id];
    std::string out;
    switch (e.kind) {
      case ExprKind::kEmpty:
        out = "(?:)";
        break;
      case ExprKind::kLiteral:
        out = absl::StrCat("(?:", PythonEscape(e.literal), ")");
        break;
      case ExprKind::kCharClass:
        out = e.ranges.empty() ? "[^\\x{0}-\\x{10FFFF}]" : ClassRegexp(e.ranges);
        break;
      case ExprKind::kRegex:
        out = ScopedRegexp(e.literal, e.flags);
        break;
      case ExprKind::kRuleRef:
        out = text[rule_body(e.rule)];
        break;
      case ExprKind::kSequence:
        out = "(?:";
        for (ExprId c : e.children) out += text[c];
        out += ")";
        break;
      case ExprKind::kChoice:
        out = "(?:";
        for (size_t i = 0; i < e.children.size(); ++i) {
          if (i > 0) out += "|";
          out += text[e.children[i]];
        }
        out += ")";
        break;
      case ExprKind::kRepeat:
        out = absl::StrCat("(?:", text[e.children[0]], ")", RepeatSuffix(e.min, e.max));
        break;
      case ExprKind::kToken:
        return absl::InvalidArgumentError("a token has no regex of its own here");
      case ExprKind::kTokenIds:
        return absl::InvalidArgumentError("a vocabulary token id is not text: it has no regex");
    }
    if (out.size() > max_bytes) return too_long();
    ++memo->nodes_rendered;
    text[id] = std::move(out);
    state[id] = RegexRenderMemo::kRendered;
    open[id] = 0;
    open_nodes.pop_back();
  }
  return text[root];
}

int64_t RecursiveRuleReachedFrom(const Grammar& g, ExprId root) {
  // Depth first over rules with an explicit stack; a rule met again while
  // it is still open is on a cycle.
  enum : uint8_t { kNew = 0, kOpen = 1, kDone = 2 };
  std::vector<uint8_t> color(g.rules.size(), kNew);
  const auto referenced = [&](ExprId from) {
    std::vector<RuleId> rules;
    std::vector<ExprId> stack = {from};
    while (!stack.empty()) {
      const Expr& expr = g.exprs[stack.back()];
      stack.pop_back();
      if (expr.kind == ExprKind::kRuleRef) rules.push_back(expr.rule);
      stack.insert(stack.end(), expr.children.begin(), expr.children.end());
    }
    return rules;
  };
  // Frames: a rule (or -1 for `root`) and the references still to visit.
  std::vector<std::pair<int64_t, std::vector<RuleId>>> frames;
  frames.push_back({-1, referenced(root)});
  while (!frames.empty()) {
    if (frames.back().second.empty()) {
      if (frames.back().first >= 0) color[frames.back().first] = kDone;
      frames.pop_back();
      continue;
    }
    const RuleId rule = frames.back().second.back();
    frames.back().second.pop_back();
    if (color[rule] == kOpen) return rule;
    if (color[rule] == kDone) continue;
    color[rule] = kOpen;
    frames.push_back({rule, referenced(g.rules[rule].body)});
  }
  return -1;
}

}  // namespace zapgram::grammar
