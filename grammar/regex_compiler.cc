// Regular expression -> syntax tree -> Thompson NFA on a ByteNfa -> DFA.
//
// The dialect and its refusals are listed in the header. Stages:
//
//  1. Parse (grammar/regex_parser.cc): one left-to-right scan with an
//     explicit stack of open groups; classes, escapes, `.` and literal
//     characters become one kind of leaf, a code-point class.
//  2. Check anchors (Parser::CheckAnchors, same file): ^ \A and $ \Z \z
//     only where nothing can precede / follow them (no-ops there).
//  3. Emit (grammar/regex_emitter.cc): Thompson's construction, counted
//     repetition unrolled; set operations built first as minimal DFAs.
//  4. Determinize (grammar/byte_automaton.h) with the DFA state cap, kept in
//     byte classes, then minimize (grammar/dfa_minimization.h: partition
//     refinement over the live transitions). Minimizing matters: every
//     UTF-8 range sequence of a big class gets its own NFA states, so the
//     subset construction of \w+ yields ~830 states where ~40 suffice, and
//     every DFA state costs a 1 KiB row here and token sets in masks/.
//
// This file holds the entry points of grammar/regex_compiler.h (AddRegex,
// DeterminizeRegex*, CompileRegex, SplitCountedRegex, AnchorUseOf,
// RegexDisplayName) and the RegexDfaCache; each stage's file opens with its
// own account.
//
// Tests: tests/grammar/regex_compiler_test.cc.
#include "grammar/regex_compiler.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grammar/regex_emitter.h"
#include "grammar/regex_parser.h"
#include "grammar/shared_regex_dfas.h"
#include "grammar/utf8.h"

namespace zapgram::grammar {

using regex_internal::BuildSetOperations;
using regex_internal::Emit;
using regex_internal::EmitContext;
using regex_internal::JsonSpelling;
using regex_internal::kNoNode;
using regex_internal::Node;
using regex_internal::NodeKind;
using regex_internal::Parser;

absl::StatusOr<uint32_t> AddRegex(ByteNfa& nfa, uint32_t from, std::string_view pattern,
                                  uint32_t flags, const RegexLimits& limits, RegexPieces* pieces) {
  Parser parser(pattern, flags, limits, pieces);
  absl::StatusOr<uint32_t> root = parser.Parse();
  if (!root.ok()) return root.status();
  absl::Status st = parser.CheckAnchors(*root);
  if (!st.ok()) return st;
  return Emit(parser, *root, nfa, from, limits, pieces);
}

absl::StatusOr<uint32_t> AddRegex(ByteNfa& nfa, uint32_t from, std::string_view pattern,
                                  uint32_t flags, const RegexLimits& limits) {
  return AddRegex(nfa, from, pattern, flags, limits, nullptr);
}

absl::StatusOr<ClassDfa> DeterminizeRegexToClasses(std::string_view pattern, uint32_t flags,
                                                   const RegexLimits& limits) {
  return DeterminizeRegexToClasses(pattern, flags, limits, nullptr);
}

absl::StatusOr<ClassDfa> DeterminizeRegexToClasses(std::string_view pattern, uint32_t flags,
                                                   const RegexLimits& limits, RegexPieces* pieces) {
  ByteNfa nfa;
  absl::StatusOr<uint32_t> end = AddRegex(nfa, 0, pattern, flags, limits, pieces);
  if (!end.ok()) return end.status();
  nfa.SetAccepting(*end);
  absl::StatusOr<ClassDfa> dfa = DeterminizeToClasses(nfa, limits.max_dfa_states);
  if (!dfa.ok()) {
    return absl::Status(dfa.status().code(),
                        absl::StrFormat("regex /%s/: %s at offset 0", std::string(pattern),
                                        std::string(dfa.status().message())));
  }
  return dfa;
}

absl::StatusOr<ByteDfa> DeterminizeRegex(std::string_view pattern, uint32_t flags,
                                         const RegexLimits& limits) {
  absl::StatusOr<ClassDfa> dfa = DeterminizeRegexToClasses(pattern, flags, limits);
  if (!dfa.ok()) return dfa.status();
  return dfa->Widen();
}

absl::StatusOr<ByteDfa> CompileRegex(std::string_view pattern, uint32_t flags,
                                     const RegexLimits& limits) {
  absl::StatusOr<ClassDfa> dfa = DeterminizeRegexToClasses(pattern, flags, limits);
  if (!dfa.ok()) return dfa.status();
  return MinimizeDfa(*dfa);
}

bool MayHaveCountedBound(std::string_view pattern) {
  // A bound's digits follow '{' or ',' directly (Parser::ParseBraces).
  uint32_t value = 0;  // of the digit run ending here, clipped at the bound
  bool counts = false;  // that run could be a bound
  char before = 0;
  for (char c : pattern) {
    if (c >= '0' && c <= '9') {
      if (before < '0' || before > '9') counts = before == '{' || before == ',';
      value = std::min<uint32_t>(value * 10 + static_cast<uint32_t>(c - '0'), kCountedMinBound);
      if (counts && value >= kCountedMinBound) return true;
    } else {
      value = 0;
    }
    before = c;
  }
  return false;
}

absl::StatusOr<std::optional<CountedParts>> SplitCountedRegex(std::string_view pattern,
                                                              uint32_t flags,
                                                              const RegexLimits& limits) {
  // The counted group's bound is not unrolled, so max_repeat does not apply
  // to it; the other counts are held to it below.
  RegexLimits outer = limits;
  outer.max_repeat = kUnbounded - 1;
  Parser parser(pattern, flags, outer);
  absl::StatusOr<uint32_t> root = parser.Parse();
  if (!root.ok()) return root.status();
  const std::vector<Node>& nodes = parser.nodes();
  const Node& top = nodes[*root];
  if (top.kind != NodeKind::kConcat) {
    if (absl::Status st = parser.CheckAnchors(*root); !st.ok()) return st;
    return std::nullopt;
  }
  CountedParts parts;
  // The middle: a counted group (its operand the unit), or an intersection
  // with a counted class among its operands (the body).
  uint32_t middle = kNoNode, counted = kNoNode;
  for (uint32_t child : top.children) {
    const Node& n = nodes[child];
    if (n.kind == NodeKind::kClass && n.ranges.size() == 1 && n.ranges[0].lo == n.ranges[0].hi &&
        n.spelling == JsonSpelling::kNone) {
      AppendUtf8(n.ranges[0].lo, middle != kNoNode ? &parts.suffix : &parts.prefix);
    } else if (middle == kNoNode && n.kind == NodeKind::kRepeat && n.max != kUnbounded) {
      middle = counted = child;
    } else if (middle == kNoNode && n.kind == NodeKind::kAnd) {
      // The counted operand with the largest finite bound: the others stay
      // in the body.
      for (uint32_t operand : n.children) {
        const Node& o = nodes[operand];
        if (o.counted && o.max != kUnbounded && (counted == kNoNode || o.max > nodes[counted].max)) {
          counted = operand;
        }
      }
      if (counted == kNoNode) return std::nullopt;
      middle = child;
    } else {
      return std::nullopt;
    }
  }
  // Anchors: a counted group's against the whole pattern; an intersection's
  // against its own text, the string's content between P and S (the JSON
  // Schema converter writes the content's `^` and `$` there).
  if (absl::Status st = parser.CheckAnchors(middle == counted || middle == kNoNode ? *root : middle); !st.ok()) {
    return st;
  }
  if (middle == kNoNode || parts.suffix.empty()) return std::nullopt;
  const Node& repeat = nodes[counted];
  for (uint32_t id = 0; id < nodes.size(); ++id) {
    const Node& n = nodes[id];
    if (id != counted && n.kind == NodeKind::kRepeat &&
        (n.min > limits.max_repeat || (n.max != kUnbounded && n.max > limits.max_repeat))) {
      return parser.Error(n.offset, absl::StrFormat("repetition count above max_repeat = %d",
                                                    limits.max_repeat));
    }
  }
  parts.max = repeat.max;
  // A body is the costly part (the pattern's automaton): kept in the
  // process's store, which the converter, the merge and the lowering, each
  // splitting the same text, and later grammars then share.
  std::string body_key = absl::StrCat("counted-body/", flags, "/", limits.max_nesting, "/",
                                      limits.max_repeat, "/", limits.max_nfa_states, "/");
  body_key.append(pattern);
  absl::StatusOr<ClassDfa> stored = absl::UnknownError("unset");
  SharedRegexDfas& shared = SharedRegexDfas::Process();
  const bool have_body = middle != counted && shared.Find(body_key, limits.max_dfa_states, &stored);
  EmitContext ctx(nullptr);
  if (!have_body) {
    if (absl::Status st = BuildSetOperations(parser, limits, ctx, middle); !st.ok()) return st;
  }
  if (middle == counted) {
    parts.min = repeat.min;
    absl::StatusOr<ByteDfa> dfa = regex_internal::SequenceDfa(parser, {repeat.children[0]}, limits, ctx);
    if (!dfa.ok()) return dfa.status();
    parts.unit = *std::move(dfa);
    return parts;
  }
  // One code point of the class is the unit; the body is the intersection
  // with this operand's count from its minimum up, unbounded.
  const Node& cls = nodes[repeat.children[0]];
  absl::StatusOr<ByteDfa> unit = regex_internal::OneCodepointDfa(cls.ranges, cls.spelling);
  if (!unit.ok()) return unit.status();
  if (!have_body) {
    absl::StatusOr<ByteDfa> body = regex_internal::IntersectionDfa(parser, middle, limits, ctx, counted);
    stored = body.ok() ? absl::StatusOr<ClassDfa>(ClassDfa::Narrow(*body)) : body.status();
    shared.Add(body_key, limits.max_dfa_states, stored);
  }
  if (!stored.ok()) return stored.status();
  parts.unit = *std::move(unit);
  parts.body = stored->Widen();
  return parts;
}

RegexDfaCache::RegexDfaCache() : pieces_(std::make_unique<RegexPieces>()) {}
RegexDfaCache::~RegexDfaCache() = default;
RegexDfaCache::RegexDfaCache(RegexDfaCache&&) noexcept = default;
RegexDfaCache& RegexDfaCache::operator=(RegexDfaCache&&) noexcept = default;

std::string RegexDfaCache::KeyOf(std::string_view pattern, uint32_t flags,
                                 const RegexLimits& limits) {
  // The state limit is not part of the key: a DFA built within a limit is
  // the same under any larger one, and a pattern that overflowed a limit
  // overflows every smaller one. Only a result that says nothing about the
  // asked limit is built again (and replaces the entry).
  std::string key = absl::StrCat(flags, "/", limits.max_nesting, "/", limits.max_repeat, "/",
                                 limits.max_nfa_states, "/");
  key.append(pattern);
  return key;
}

bool RegexDfaCache::Answers(const absl::StatusOr<ClassDfa>& built, uint32_t built_under, uint32_t asked) {
  if (!built.ok() && built.status().code() == absl::StatusCode::kResourceExhausted) return asked <= built_under;
  return !built.ok() || asked >= built_under;
}

RegexDfaCache::Entry& RegexDfaCache::Find(std::string_view pattern, uint32_t flags,
                                          const RegexLimits& limits,
                                          absl::FunctionRef<absl::StatusOr<ClassDfa>()>* build) {
  auto [it, inserted] = entries_.try_emplace(KeyOf(pattern, flags, limits));
  Entry& entry = it->second;
  if (!inserted && Answers(entry.determinized, entry.max_dfa_states, limits.max_dfa_states)) {
    ++hits_;
    return entry;
  }
  // An earlier grammar of the process may have built it (shared_regex_dfas.h).
  // `build` may ask this cache for other patterns: entries are nodes (they
  // stay put), iterators are not kept across it.
  const std::string& key = it->first;
  SharedRegexDfas& shared = SharedRegexDfas::Process();
  if (!shared.Find(key, limits.max_dfa_states, &entry.determinized)) {
    entry.determinized = build != nullptr ? (*build)()
                                          : DeterminizeRegexToClasses(pattern, flags, limits,
                                                                      pieces_.get());
    shared.Add(key, limits.max_dfa_states, entry.determinized);
  }
  entry.max_dfa_states = limits.max_dfa_states;
  entry.minimal.reset();
  return entry;
}

const absl::StatusOr<ClassDfa>& RegexDfaCache::Determinized(std::string_view pattern,
                                                            uint32_t flags,
                                                            const RegexLimits& limits) {
  return Find(pattern, flags, limits).determinized;
}

const absl::StatusOr<ClassDfa>& RegexDfaCache::Determinized(
    std::string_view pattern, uint32_t flags, const RegexLimits& limits,
    absl::FunctionRef<absl::StatusOr<ClassDfa>()> build) {
  return Find(pattern, flags, limits, &build).determinized;
}

const absl::StatusOr<ByteDfa>& RegexDfaCache::Compile(std::string_view pattern, uint32_t flags,
                                                      const RegexLimits& limits) {
  Entry& entry = Find(pattern, flags, limits);
  if (!entry.minimal.has_value()) {
    if (entry.determinized.ok()) {
      entry.minimal = MinimizeDfa(*entry.determinized);
    } else {
      entry.minimal = entry.determinized.status();
    }
  }
  return *entry.minimal;
}

absl::StatusOr<ByteDfa> RegexDfaCache::Take(std::string_view pattern, uint32_t flags,
                                            const RegexLimits& limits,
                                            std::array<uint8_t, 256>* class_of) {
  Compile(pattern, flags, limits);
  auto it = entries_.find(KeyOf(pattern, flags, limits));
  if (class_of != nullptr && it->second.determinized.ok()) {
    *class_of = it->second.determinized->class_of;
  }
  absl::StatusOr<ByteDfa> dfa = *std::move(it->second.minimal);
  entries_.erase(it);
  return dfa;
}

absl::StatusOr<ClassDfa> RegexDfaCache::TakeDeterminized(std::string_view pattern, uint32_t flags,
                                                        const RegexLimits& limits) {
  Entry& entry = Find(pattern, flags, limits);
  absl::StatusOr<ClassDfa> dfa = absl::UnknownError("unset");
  if (entry.minimal.has_value()) {  // Compile minimized (and widened) it already
    dfa = entry.minimal->ok() ? absl::StatusOr<ClassDfa>(ClassDfa::Narrow(**entry.minimal))
                              : absl::StatusOr<ClassDfa>(entry.minimal->status());
  } else {
    dfa = std::move(entry.determinized);
  }
  entries_.erase(KeyOf(pattern, flags, limits));
  return dfa;
}

std::optional<RegexAnchorUse> AnchorUseOf(std::string_view pattern, uint32_t flags) {
  if (pattern.find('#') != std::string_view::npos) return std::nullopt;
  const RegexLimits limits;
  Parser parser(pattern, flags, limits);
  absl::StatusOr<uint32_t> root = parser.Parse();
  if (!root.ok()) return std::nullopt;
  const std::vector<Node>& nodes = parser.nodes();
  RegexAnchorUse use;
  std::vector<uint32_t> stack = {*root};
  while (!stack.empty()) {
    const Node& n = nodes[stack.back()];
    stack.pop_back();
    use.has_start = use.has_start || n.kind == NodeKind::kStart;
    use.has_end = use.has_end || n.kind == NodeKind::kEnd;
    stack.insert(stack.end(), n.children.begin(), n.children.end());
  }
  use.refused = (use.has_start || use.has_end) && !parser.CheckAnchors(*root).ok();
  const NodeKind top = nodes[*root].kind;
  use.never_blank = top != NodeKind::kEmpty && top != NodeKind::kStart && top != NodeKind::kEnd;
  return use;
}

std::string RegexDisplayName(std::string_view pattern, uint32_t flags) {
  std::string out;
  out.reserve(pattern.size() + 8);
  out += '/';
  // Copied in runs between slashes; a slash gets a backslash (\/ is / in
  // the dialect) unless an odd run of backslashes already escapes it.
  size_t from = 0;
  for (size_t slash = pattern.find('/'); slash != std::string_view::npos;
       slash = pattern.find('/', slash + 1)) {
    size_t backslashes = 0;
    while (backslashes < slash && pattern[slash - 1 - backslashes] == '\\') ++backslashes;
    out.append(pattern.data() + from, slash - from);
    if (backslashes % 2 == 0) out += '\\';
    out += '/';
    from = slash + 1;
  }
  out.append(pattern.data() + from, pattern.size() - from);
  out += "/";
  for (const RegexFlagLetter& l : kRegexFlagLetters) {
    if (flags & l.flag) out += l.letter;
  }
  return out;
}

}  // namespace zapgram::grammar
