// Misplaced anchors of rendered expressions (see rendered_anchors.h).
#include "grammar/rendered_anchors.h"

#include <optional>
#include <string_view>
#include <utility>

#include "grammar/regex_compiler.h"

namespace zapgram::grammar {

namespace {

// Whether `pattern` may hold an anchor at all: a ^ or $ (also inside a
// class, which is no anchor: then the pattern is parsed to know), or a
// backslash before A, Z or z (\\A is an escaped backslash and an A: parsed
// too). A pattern without any of these parses to a tree with no anchor.
bool MayHoldAnchor(std::string_view pattern) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '^' || c == '$') return true;
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[i + 1];
      if (next == 'A' || next == 'Z' || next == 'z') return true;
    }
  }
  return false;
}

}  // namespace

RenderedAnchors::RenderedAnchors(const Grammar& g, std::function<ExprId(RuleId)> rule_body)
    : g_(g), rule_body_(std::move(rule_body)) {}

bool RenderedAnchors::Refused(const std::vector<ExprId>& parts) {
  if (parts.empty()) return false;
  if (summary_.size() < g_.exprs.size()) summary_.resize(g_.exprs.size(), 0);  // grown since
  if (parts.size() == 1) return (Summary(parts[0]) & kRefused) != 0;
  std::vector<uint8_t> summaries;
  summaries.reserve(parts.size());
  for (ExprId part : parts) summaries.push_back(Summary(part));
  return (Concatenation(summaries.data(), summaries.size()) & kRefused) != 0;
}

const std::vector<ExprId>& RenderedAnchors::ChildrenOf(ExprId id,
                                                       std::vector<ExprId>* scratch) const {
  const Expr& e = g_.exprs[id];
  if (e.kind != ExprKind::kRuleRef) return e.children;
  scratch->assign(1, rule_body_(e.rule));
  return *scratch;
}

uint8_t RenderedAnchors::LeafSummary(const Expr& e) const {
  switch (e.kind) {
    case ExprKind::kLiteral:
      // (?:escaped text): one class, or a concatenation; (?:) when empty.
      return e.literal.empty() ? kKnown : kKnown | kNeverBlank;
    case ExprKind::kCharClass:
      return kKnown | kNeverBlank;
    case ExprKind::kRegex: {
      if (!MayHoldAnchor(e.literal)) return kKnown;
      const std::optional<RegexAnchorUse> use = AnchorUseOf(e.literal, e.flags);
      if (!use.has_value()) return kKnown;
      return kKnown | (use->refused ? kRefused : 0) | (use->has_start ? kHasStart : 0) |
             (use->has_end ? kHasEnd : 0) | (use->never_blank ? kNeverBlank : 0);
    }
    default:  // kEmpty: (?:); tokens have no regex (never asked for)
      return kKnown;
  }
}

uint8_t RenderedAnchors::Concatenation(const uint8_t* parts, size_t n) {
  uint8_t out = kKnown | kNeverBlank;
  bool solid_before = false;  // a never-blank part precedes this one
  for (size_t i = 0; i < n; ++i) {
    out |= parts[i] & (kRefused | kHasStart | kHasEnd);
    if ((parts[i] & kHasStart) && solid_before) out |= kRefused;
    solid_before = solid_before || (parts[i] & kNeverBlank);
  }
  bool solid_after = false;
  for (size_t i = n; i-- > 0;) {
    if ((parts[i] & kHasEnd) && solid_after) out |= kRefused;
    solid_after = solid_after || (parts[i] & kNeverBlank);
  }
  return out;
}

uint8_t RenderedAnchors::Summary(ExprId root) {
  if (summary_[root] & kKnown) return summary_[root];
  std::vector<ExprId> scratch;
  std::vector<std::pair<ExprId, bool>> stack = {{root, false}};
  std::vector<uint8_t> parts;
  while (!stack.empty()) {
    auto [id, expanded] = stack.back();
    stack.pop_back();
    if (summary_[id] & kKnown) continue;
    if (!expanded) {
      stack.push_back({id, true});
      for (ExprId c : ChildrenOf(id, &scratch)) {
        if (!(summary_[c] & kKnown)) stack.push_back({c, false});
      }
      continue;
    }
    const Expr& e = g_.exprs[id];
    const std::vector<ExprId>& children = ChildrenOf(id, &scratch);
    uint8_t out = kKnown;
    switch (e.kind) {
      case ExprKind::kRuleRef:  // written as its rule body's text
        out = summary_[children[0]];
        break;
      case ExprKind::kSequence:
      case ExprKind::kChoice:
        if (children.size() == 1) {  // (?:T): the group is T's own tree
          out = summary_[children[0]];
        } else if (children.size() >= 2 && e.kind == ExprKind::kChoice) {
          // An alternation: each branch keeps the bits of the whole.
          out = kKnown | kNeverBlank;
          for (ExprId c : children) out |= summary_[c] & (kRefused | kHasStart | kHasEnd);
        } else if (children.size() >= 2) {
          parts.clear();
          for (ExprId c : children) parts.push_back(summary_[c]);
          out = Concatenation(parts.data(), parts.size());
        }  // none: (?:), empty
        break;
      case ExprKind::kRepeat: {
        const uint8_t child = summary_[children[0]];
        out = kKnown | kNeverBlank | (child & (kRefused | kHasStart | kHasEnd));
        // More than one copy: something can precede and follow every anchor.
        if (e.max > 1 && (child & (kHasStart | kHasEnd))) out |= kRefused;
        break;
      }
      default:
        out = LeafSummary(e);
        break;
    }
    summary_[id] = out;
  }
  return summary_[root];
}

}  // namespace zapgram::grammar
