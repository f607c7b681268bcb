// Regex compiler, beside the pipeline: patterns that their assertions keep
// from ever matching (NeverMatchingAssertion, grammar/regex_compiler.h).
//
// The dialect refuses lookarounds, and anchors where something can precede
// ^ \A or follow $ \Z \z: a terminal is matched whole, so what they test
// lies in the text around the match, which the terminal does not know.
// Lark compiles such patterns all the same (Python's re), and its lexer
// simply never produces a terminal that no text matches: `/a(?=b)c/`,
// `/a^b$c/`. For those, what is needed is a proof that no text, whatever
// surrounds the match, lets the pattern match; then the terminal has the
// empty language.
//
// The proof is an over-approximation. The pattern's top level is read as a
// sequence c_1 ... c_n (groups without a quantifier opened into it). An
// assertion c_k is a condition on the part of the match before it,
// P = c_1 ... c_k-1, or on the rest, R = c_k+1 ... c_n, with ctx the text
// before or after the match:
//   (?=X)   R ctx starts with a string of X: R in X.* or R a prefix of one
//   (?!X)   R ctx starts with none: R not in X.*
//   (?<!X)  ctx P ends with none: P not in .*X
//   ^ \A    P is empty (^ under m: P is empty or ends with \n)
//   $       R is "" or "\n" (under m: R is empty or starts with \n)
//   \Z \z   R is empty
// ((?<=X) gives none: any P may end a string of X that ctx begins.) Every
// other assertion inside P or R is read as the empty string, which only
// adds matches, so each condition is necessary: when no string of the part
// it constrains meets it, the pattern matches nothing. Each condition costs
// a DFA of P or R and one of the condition (a product), under the caller's
// RegexLimits; a limit that runs out proves nothing.
//
// Tests: tests/grammar/regex_compiler_test.cc (RegexAssertions.*: chosen
// patterns, and random ones checked against std::regex's ECMAScript
// lookaheads and anchors on every short text and context).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "grammar/dfa_set_ops.h"
#include "grammar/regex_compiler.h"
#include "grammar/regex_emitter.h"
#include "grammar/regex_parser.h"

namespace zapgram::grammar {
namespace {

using regex_internal::EmitContext;
using regex_internal::Node;
using regex_internal::NodeKind;
using regex_internal::Parser;

// The top level of the tree at `root` as a sequence: concatenations (an
// unquantified group is one) opened into their children, explicitly
// stacked.
std::vector<uint32_t> TopLevelSequence(const std::vector<Node>& nodes, uint32_t root) {
  std::vector<uint32_t> sequence;
  std::vector<uint32_t> stack = {root};
  while (!stack.empty()) {
    const uint32_t id = stack.back();
    stack.pop_back();
    if (nodes[id].kind != NodeKind::kConcat) {
      sequence.push_back(id);
      continue;
    }
    for (size_t k = nodes[id].children.size(); k-- > 0;) stack.push_back(nodes[id].children[k]);
  }
  return sequence;
}

bool IsAssertion(const Node& n) {
  return n.kind == NodeKind::kStart || n.kind == NodeKind::kEnd || n.kind == NodeKind::kLookaround;
}

// Whether some string of `part` meets `condition` (a pattern read under
// `flags`), as far as the limits let us know (an error: assume it does).
bool Meets(const ByteDfa& part, std::string_view condition, uint32_t flags, const RegexLimits& limits,
           bool subtract) {
  absl::StatusOr<ByteDfa> c = CompileRegex(condition, flags, limits);
  if (!c.ok()) return true;
  absl::StatusOr<ByteDfa> both =
      subtract ? SubtractDfa(part, *c, limits.max_dfa_states) : IntersectDfas(part, *c, limits.max_dfa_states);
  return !both.ok() || !both->empty();
}

// Whether some string of `part` is a prefix of a string of X (the pattern
// `x` under `flags`): X's trimmed DFA with every live state accepting.
bool MeetsPrefixOf(const ByteDfa& part, std::string_view x, uint32_t flags, const RegexLimits& limits) {
  absl::StatusOr<ByteDfa> prefixes = CompileRegex(x, flags, limits);
  if (!prefixes.ok()) return true;
  for (uint32_t s = 1; s < prefixes->num_states(); ++s) prefixes->accepting[s] = 1;
  absl::StatusOr<ByteDfa> both = IntersectDfas(part, *prefixes, limits.max_dfa_states);
  return !both.ok() || !both->empty();
}

}  // namespace

std::optional<std::string> NeverMatchingAssertion(std::string_view pattern, uint32_t flags,
                                                  const RegexLimits& limits) {
  if ((flags & kRegexJsonString) != 0) return std::nullopt;  // no such dialect asks
  {
    // Not refused, or refused for something else than its assertions.
    Parser plain(pattern, flags, limits);
    absl::StatusOr<uint32_t> root = plain.Parse();
    if (root.ok() && plain.CheckAnchors(*root).ok()) return std::nullopt;
  }
  Parser parser(pattern, flags, limits);
  parser.ReadLookarounds();
  absl::StatusOr<uint32_t> root = parser.Parse();
  if (!root.ok()) return std::nullopt;
  const std::vector<Node>& nodes = parser.nodes();
  const std::vector<uint32_t> sequence = TopLevelSequence(nodes, *root);
  EmitContext ctx(nullptr);
  if (!regex_internal::BuildSetOperations(parser, limits, ctx).ok()) return std::nullopt;
  for (size_t k = 0; k < sequence.size(); ++k) {
    const Node& a = nodes[sequence[k]];
    if (!IsAssertion(a)) continue;
    const bool on_rest = a.kind == NodeKind::kEnd || (a.kind == NodeKind::kLookaround && !a.behind);
    const absl::Span<const uint32_t> part =
        on_rest ? absl::MakeConstSpan(sequence).subspan(k + 1) : absl::MakeConstSpan(sequence).first(k);
    absl::StatusOr<ByteDfa> dfa = regex_internal::SequenceDfa(parser, part, limits, ctx);
    if (!dfa.ok()) continue;
    const bool multiline = (a.open_flags & kRegexMultiline) != 0 && !a.absolute;
    const uint32_t text_flags = a.open_flags;
    bool met = true;
    std::string what;
    if (a.kind == NodeKind::kStart) {
      what = a.absolute ? "\\A" : "^";
      met = Meets(*dfa, multiline ? "(?:[\\s\\S]*\\n)?" : "", 0, limits, false);
    } else if (a.kind == NodeKind::kEnd) {
      what = a.absolute ? std::string(pattern.substr(a.offset, 2)) : "$";
      met = Meets(*dfa, a.absolute ? "" : multiline ? "(?:\\n[\\s\\S]*)?" : "\\n?", 0, limits, false);
    } else {
      what = std::string(pattern.substr(a.offset, a.end - a.offset));
      const size_t body = a.offset + (a.behind ? 4 : 3);
      // (Debian's abseil: StrCat takes no std::string_view.)
      const std::string x(pattern.substr(body, a.end - 1 - body));
      // Under x a comment in X would run past the group written around it.
      if ((text_flags & kRegexVerbose) != 0 && x.find('#') != std::string::npos) continue;
      if (a.behind && a.negative) {
        met = Meets(*dfa, absl::StrCat("[\\s\\S]*(?:", x, ")"), text_flags, limits, true);
      } else if (!a.behind) {
        const std::string x_then_any = absl::StrCat("(?:", x, ")[\\s\\S]*");
        met = a.negative ? Meets(*dfa, x_then_any, text_flags, limits, true)
                         : Meets(*dfa, x_then_any, text_flags, limits, false) ||
                               MeetsPrefixOf(*dfa, absl::StrCat("(?:", x, ")"), text_flags, limits);
      }
    }
    if (!met) {
      return absl::StrFormat("%s at offset %d can never hold where it stands", what, a.offset);
    }
  }
  return std::nullopt;
}

}  // namespace zapgram::grammar
