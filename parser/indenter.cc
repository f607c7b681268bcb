// The Indenter's rules on one token end (see indenter.h and Lark's
// lark/indenter.py, whose semantics these follow; the code is our own).
#include "parser/indenter.h"

#include "absl/strings/str_cat.h"

namespace zapgram::parser {

IndentEffect IndentAfterToken(const IndenterTable& t, absl::Span<const uint32_t> before,
                              uint32_t token, uint32_t count, uint32_t max_levels,
                              std::vector<uint32_t>* after) {
  IndentEffect effect;
  after->assign(before.begin(), before.end());
  (*after)[kIndentCount] = kNoCount;
  uint32_t& depth = (*after)[kIndentDepth];
  if (token == t.nl) {
    if (depth > 0) {
      effect.kind = IndentEffect::kDropped;
      return effect;
    }
    if (count == kNoCount) {  // no '\n' in the token: Lark's rsplit fails
      effect.kind = IndentEffect::kDead;
      return effect;
    }
    const uint32_t top = after->size() > kIndentLevels ? after->back() : 0;
    if (count > top) {
      if (IndentLevels(*after) >= max_levels) {
        effect.kind = IndentEffect::kOverBudget;
        return effect;
      }
      after->push_back(count);
      effect.indents = 1;
      return effect;
    }
    while (after->size() > kIndentLevels && count < after->back()) {
      after->pop_back();
      ++effect.dedents;
    }
    const uint32_t landed = after->size() > kIndentLevels ? after->back() : 0;
    if (count != landed) effect.kind = IndentEffect::kDead;  // between two levels
    return effect;
  }
  const int8_t bracket = token < t.bracket.size() ? t.bracket[token] : 0;
  if (bracket > 0) {
    ++depth;
  } else if (bracket < 0) {
    if (depth == 0) {
      effect.kind = IndentEffect::kDead;  // Lark asserts paren_level >= 0
      return effect;
    }
    --depth;
  }
  return effect;
}

void OpenIndentState(absl::Span<const uint32_t> before, uint32_t count, bool nl_can_end_later,
                     std::vector<uint32_t>* out) {
  out->assign(before.begin(), before.end());
  if (out->empty()) return;
  (*out)[kIndentCount] = nl_can_end_later && (*out)[kIndentDepth] == 0 ? count : kNoCount;
}

std::string DumpIndentState(absl::Span<const uint32_t> state) {
  if (state.empty()) return "";
  std::string out = absl::StrCat(
      "indent count ", state[kIndentCount] == kNoCount ? std::string("-") : absl::StrCat(state[kIndentCount]),
      " depth ", state[kIndentDepth], " levels [");
  for (size_t i = kIndentLevels; i < state.size(); ++i) {
    absl::StrAppend(&out, i > kIndentLevels ? " " : "", state[i]);
  }
  return out + "]";
}

}  // namespace zapgram::parser
