// Writing grammar expressions as regexes of zapgram's regex dialect
// (grammar/regex_compiler.h), so that a regular part of a grammar can be
// compiled into one byte DFA.
//
// Pieces: PythonEscape (a string as a regex matching exactly it, as Python's
// re.escape writes it), ClassRegexp (code-point ranges as a class with
// \x{..} escapes), RepeatSuffix (`*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}`), and
// RenderRegex, which writes a whole expression tree: literals, classes,
// regexes (grouped, flags scoped), sequences, choices (?:a|b), repetitions,
// and references to rules whose bodies `rule_body` supplies (they are
// inlined; the caller guarantees they are not recursive). Explicit stack,
// memoized per node, output bounded by `max_bytes`; the memo may be kept
// across calls (RegexRenderMemo), so a node is written at most once and a
// node known to be too long fails every expression containing it at once.
//
// Tests: tests/transforms/regular_terminals_test.cc (rendered regexes
// compile to the language of the expression, checked against the reference
// recognizer).
#ifndef ZAPGRAM_GRAMMAR_REGEX_RENDER_H_
#define ZAPGRAM_GRAMMAR_REGEX_RENDER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "grammar/grammar.h"

namespace zapgram::grammar {

std::string PythonEscape(std::string_view text);
std::string ClassRegexp(const std::vector<CodepointRange>& ranges);
std::string RepeatSuffix(uint32_t min, uint32_t max);
// `regexp` under `flags` (RegexFlags) as a scoped group, or grouped as is.
std::string ScopedRegexp(std::string_view regexp, uint32_t flags);

// What RenderRegex learned about the nodes of one grammar, for reuse across
// calls with the same grammar, `rule_body` and `max_bytes`: a node's text
// (kept until the memo dies: memory is the sum of the rendered texts), or
// that its text is longer than max_bytes (then so is every expression
// containing it, since a node's text contains its children's).
struct RegexRenderMemo {
  enum : uint8_t { kUnknown = 0, kRendered = 1, kTooLong = 2 };
  std::vector<uint8_t> state;     // per ExprId
  std::vector<std::string> text;  // per ExprId, when state is kRendered
  uint64_t nodes_rendered = 0;    // texts written (each node at most once)
};

// The regex of expression `root` of `g`. A kRuleRef is replaced by
// rule_body(rule) (an expression of `g`). Fails (kResourceExhausted) past
// `max_bytes`, or (kInvalidArgument) on a kToken. `memo` (optional) carries
// results between calls; it is sized on first use.
absl::StatusOr<std::string> RenderRegex(const Grammar& g, ExprId root,
                                        const std::function<ExprId(RuleId)>& rule_body,
                                        size_t max_bytes, RegexRenderMemo* memo = nullptr);

// A rule that the expression `root` of `g` reaches through references and
// that reaches itself (so RenderRegex cannot inline it), or -1 when there
// is none: what a caller checks before rendering user-written rules.
int64_t RecursiveRuleReachedFrom(const Grammar& g, ExprId root);

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_REGEX_RENDER_H_
