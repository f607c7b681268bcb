// Regex compiler, stage 2: syntax tree -> Thompson NFA on a ByteNfa.
//
// Emit. Thompson's construction with an explicit stack of frames. A
//     fragment is entered at a given state and returns its end state, which
//     is always a fresh state with no outgoing edges; no construction ever
//     adds an edge into a fragment's entry, which is what makes it safe to
//     chain fragments through shared states. x{m,n} is unrolled into m copies
//     and n-m nested optional copies; x{m,} into m copies and a star.
//     Lazy quantifiers have the same language as greedy ones. Set
//     operations are built first, innermost first (BuildSetOperations: each
//     operand emitted alone, determinized, minimized, then combined by
//     grammar/dfa_set_ops.h), and stamped like classes wherever they occur.
//     With a RegexPieces (a RegexDfaCache holds one), the classes read,
//     the class fragments and the set operations are shared by every
//     pattern of a compilation, keyed by what decides them (a class's text
//     and flags; its ranges and spelling; a set operation's text, opening
//     flags and limits): the regular-terminal merge parses the same member
//     texts inside many candidates.
//
// The NFA is built under RegexLimits::max_nfa_states; each set operation
// under max_dfa_states. A class under the J flag is spelled as inside a
// JSON string (AddSpelledCodepoints).
//
// Tests: tests/grammar/regex_compiler_test.cc (AddRegexAppendsAFragment,
// Limits, RegexSetOperations, RegexJsonSpelling, RegexDifferential,
// RegexDfaCacheTest.SharedPiecesGiveTheSameAutomataAsFreshOnes).
#include "grammar/regex_emitter.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "grammar/dfa_minimization.h"
#include "grammar/dfa_set_ops.h"
#include "grammar/shared_regex_dfas.h"

namespace zapgram::grammar::regex_internal {
namespace {

// Hex digits of the values lo..hi, `digits` of them, either case for a-f,
// from `from` to `end`. The values split on their leading digit: a value
// range inside one leading digit goes on with one digit fewer; leading
// digits whose whole tail is in range share one step per remaining digit.
// The work list holds at most 16 entries per digit level (4 levels).
void AddHexRange(ByteNfa& nfa, uint32_t from, uint32_t lo, uint32_t hi, int digits, uint32_t end) {
  auto add_digits = [&nfa](uint32_t at, uint32_t d_lo, uint32_t d_hi, uint32_t to) {
    if (d_lo <= 9) nfa.AddRange(at, static_cast<uint8_t>('0' + d_lo),
                                static_cast<uint8_t>('0' + std::min<uint32_t>(d_hi, 9)), to);
    if (d_hi >= 10) {
      const uint32_t a = std::max<uint32_t>(d_lo, 10) - 10, b = d_hi - 10;
      nfa.AddRange(at, static_cast<uint8_t>('a' + a), static_cast<uint8_t>('a' + b), to);
      nfa.AddRange(at, static_cast<uint8_t>('A' + a), static_cast<uint8_t>('A' + b), to);
    }
  };
  struct Task {
    uint32_t from, lo, hi;
    int digits;
  };
  std::vector<Task> work = {{from, lo, hi, digits}};
  while (!work.empty()) {
    const Task t = work.back();
    work.pop_back();
    if (t.digits == 0) {
      nfa.AddEpsilon(t.from, end);
      continue;
    }
    const int shift = 4 * (t.digits - 1);
    const uint32_t tail = (1u << shift) - 1;  // values of the remaining digits
    const uint32_t first = t.lo >> shift, last = t.hi >> shift;
    // Leading digits whose tails are complete: one class, then any digits.
    const int64_t full_lo = (t.lo & tail) == 0 ? first : int64_t{first} + 1;
    const int64_t full_hi = (t.hi & tail) == tail ? last : int64_t{last} - 1;
    if (full_lo <= full_hi) {
      uint32_t at = nfa.AddState();
      add_digits(t.from, static_cast<uint32_t>(full_lo), static_cast<uint32_t>(full_hi), at);
      for (int k = 1; k < t.digits; ++k) {
        const uint32_t next = nfa.AddState();
        add_digits(at, 0, 15, next);
        at = next;
      }
      nfa.AddEpsilon(at, end);
    }
    for (const uint32_t d : first == last ? std::vector<uint32_t>{first} : std::vector<uint32_t>{first, last}) {
      if (d >= full_lo && d <= full_hi) continue;  // done above
      const uint32_t at = nfa.AddState();
      add_digits(t.from, d, d, at);
      const uint32_t sub_lo = std::max(t.lo, d << shift) & tail;
      const uint32_t sub_hi = std::min(t.hi, (d << shift) | tail) & tail;
      work.push_back({at, sub_lo, sub_hi, t.digits - 1});
    }
  }
}

// Thompson construction, explicit stack (see the file comment). Set
// operation nodes must already be in ctx.set_op_dfas.
absl::StatusOr<uint32_t> EmitInto(const Parser& parser, uint32_t root, ByteNfa& nfa,
                                  uint32_t from, const RegexLimits& limits, EmitContext& ctx) {
  const std::vector<Node>& nodes = parser.nodes();
  struct Frame {
    uint32_t node, from, step, cur, end;
  };
  std::vector<Frame> stack = {{root, from, 0, from, kNone}};
  uint32_t ret = kNone;
  auto& class_fragments = ctx.class_fragments;
  auto push = [&](uint32_t node, uint32_t at) { stack.push_back({node, at, 0, at, kNone}); };
  while (!stack.empty()) {
    if (nfa.num_states() > limits.max_nfa_states) {
      return parser.Error(nodes[stack.back().node].offset,
                          absl::StrFormat("automaton exceeds max_nfa_states = %d",
                                          limits.max_nfa_states));
    }
    Frame& f = stack.back();
    const Node& n = nodes[f.node];
    switch (n.kind) {
      case NodeKind::kEmpty:
      case NodeKind::kStart:
      case NodeKind::kEnd:
      case NodeKind::kLookaround:  // only NeverMatchingAssertion emits one: as ""
        ret = nfa.AddState();
        nfa.AddEpsilon(f.from, ret);
        stack.pop_back();
        break;
      case NodeKind::kClass: {
        // Built once per distinct class as a fragment, then stamped at each use.
        auto [fragment, fresh] = class_fragments.try_emplace(f.node, nullptr);
        if (fresh) fragment->second = &ctx.ClassFragment(n);
        ret = nfa.Stamp(f.from, fragment->second->nfa, fragment->second->end);
        stack.pop_back();
        break;
      }
      case NodeKind::kAnd:
      case NodeKind::kNot:
        ret = StampDfa(nfa, f.from, *ctx.set_op_dfas.at(f.node));
        stack.pop_back();
        break;
      case NodeKind::kConcat: {
        if (f.step > 0) f.cur = ret;
        if (f.step == n.children.size()) {
          ret = f.cur;
          stack.pop_back();
          break;
        }
        uint32_t child = n.children[f.step++], at = f.cur;
        push(child, at);
        break;
      }
      case NodeKind::kAlt: {
        if (f.step == 0) f.end = nfa.AddState();
        if (f.step > 0) nfa.AddEpsilon(ret, f.end);
        if (f.step == n.children.size()) {
          ret = f.end;
          stack.pop_back();
          break;
        }
        uint32_t entry = nfa.AddState();
        nfa.AddEpsilon(f.from, entry);
        uint32_t child = n.children[f.step++];
        push(child, entry);
        break;
      }
      case NodeKind::kRepeat: {
        const uint32_t child = n.children[0];
        if (f.step > 0) f.cur = ret;
        if (f.step < n.min) {
          ++f.step;
          uint32_t at = f.cur;
          push(child, at);
          break;
        }
        if (n.max == kUnbounded) {
          if (f.step == n.min) {  // the loop: cur -> L, L -> body -> L, L -> out
            uint32_t loop = nfa.AddState();
            nfa.AddEpsilon(f.cur, loop);
            f.end = loop;
            ++f.step;
            push(child, loop);
            break;
          }
          nfa.AddEpsilon(f.cur, f.end);
          ret = nfa.AddState();
          nfa.AddEpsilon(f.end, ret);
          stack.pop_back();
          break;
        }
        if (f.end == kNone) f.end = nfa.AddState();
        nfa.AddEpsilon(f.cur, f.end);  // stop after this many copies
        if (f.step < n.max) {
          ++f.step;
          uint32_t at = f.cur;
          push(child, at);
          break;
        }
        ret = f.end;
        stack.pop_back();
        break;
      }
    }
  }
  if (nfa.num_states() > limits.max_nfa_states) {
    return parser.Error(0, absl::StrFormat("automaton exceeds max_nfa_states = %d",
                                           limits.max_nfa_states));
  }
  return ret;
}

// The minimal DFA of the sub-patterns at `nodes`, one after the other,
// matched whole, in the classes it was determinized in.
absl::StatusOr<ClassDfa> SequenceClassDfa(const Parser& parser, absl::Span<const uint32_t> nodes,
                                          const RegexLimits& limits, EmitContext& ctx) {
  ByteNfa nfa;
  uint32_t end = 0;
  for (uint32_t node : nodes) {
    absl::StatusOr<uint32_t> next = EmitInto(parser, node, nfa, end, limits, ctx);
    if (!next.ok()) return next.status();
    end = *next;
  }
  nfa.SetAccepting(end);
  absl::StatusOr<ClassDfa> dfa = DeterminizeToClasses(nfa, limits.max_dfa_states);
  if (!dfa.ok()) return dfa.status();
  return MinimizeDfaToClasses(*dfa);
}

}  // namespace

// Exactly one code point of `ranges`, spelled raw or as in a JSON string.
absl::StatusOr<ByteDfa> OneCodepointDfa(const std::vector<CodepointRange>& ranges,
                                        JsonSpelling spelling) {
  ByteNfa nfa;
  nfa.SetAccepting(AddSpelledCodepoints(nfa, 0, ranges, spelling));
  absl::StatusOr<ClassDfa> dfa = DeterminizeToClasses(nfa, 1u << 16);
  if (!dfa.ok()) return dfa.status();
  return MinimizeDfa(*dfa);
}

// One code point of `ranges` as it is spelled inside a JSON string literal.
// Canonical (kRegexJsonString): raw UTF-8, except `"` and `\` (\" and \\)
// and the controls U+0000..U+001F (\b \f \n \r \t, the others \u00XX in
// either hex case). This is the one spelling JSON serializers emit (Python
// json.dumps with ensure_ascii=False, JSON.stringify); other spellings of
// ordinary characters (\/, \u0041) are not matched. Any (with
// kRegexJsonAnySpelling): those plus \/ and \uXXXX for every code point
// (either hex case; a surrogate pair \uD8xx\uDCxx above U+FFFF), i.e. every
// spelling RFC 8259 section 7 allows. kNone: plain UTF-8.
uint32_t AddSpelledCodepoints(ByteNfa& nfa, uint32_t from, const std::vector<CodepointRange>& ranges,
                              JsonSpelling spelling) {
  if (spelling == JsonSpelling::kNone) return nfa.AddCodepoints(from, ranges);
  const bool any = spelling == JsonSpelling::kAny;
  std::vector<CodepointRange> raw;
  std::vector<uint32_t> escaped;  // code points that take an escape
  for (const CodepointRange& r : ranges) {
    uint32_t lo = r.lo;
    for (; lo <= r.hi && lo < 0x20; ++lo) escaped.push_back(lo);
    for (uint32_t special : {0x22u, 0x2Fu, 0x5Cu}) {
      if (special < lo || special > r.hi) continue;
      if (special == 0x2F && !any) continue;  // `/` is raw; \/ only in any spelling
      if (special != 0x2F) {
        if (lo < special) raw.push_back({lo, special - 1});
        lo = special + 1;
      }
      escaped.push_back(special);
    }
    if (lo <= r.hi) raw.push_back({lo, r.hi});
  }
  const uint32_t end = nfa.AddState();
  if (!raw.empty()) nfa.AddEpsilon(nfa.AddCodepoints(from, raw), end);
  constexpr std::string_view kHex = "0123456789abcdef";
  for (uint32_t c : escaped) {
    std::string_view short_form = c == 0x22   ? "\\\""
                                  : c == 0x5C ? "\\\\"
                                  : c == 0x2F ? "\\/"
                                  : c == 0x08 ? "\\b"
                                  : c == 0x0C ? "\\f"
                                  : c == 0x0A ? "\\n"
                                  : c == 0x0D ? "\\r"
                                  : c == 0x09 ? "\\t"
                                              : "";
    if (!short_form.empty()) {
      nfa.AddEpsilon(nfa.AddLiteral(from, short_form), end);
      if (!any) continue;
    }
    if (any) continue;  // \uXXXX of every code point below
    std::string prefix = "\\u00";
    prefix.push_back(kHex[c >> 4]);
    const uint32_t at = nfa.AddLiteral(from, prefix);
    const char digit = kHex[c & 0xF];
    nfa.AddRange(at, static_cast<uint8_t>(digit), static_cast<uint8_t>(digit), end);
    if (digit >= 'a') {
      const uint8_t upper = static_cast<uint8_t>(digit - 'a' + 'A');
      nfa.AddRange(at, upper, upper, end);
    }
  }
  if (!any) return end;
  // \uXXXX: the BMP code points outside the surrogates; \uHHHH\uLLLL: the rest.
  for (const CodepointRange& r : ranges) {
    for (const CodepointRange bmp : {CodepointRange{0, 0xD7FF}, CodepointRange{0xE000, 0xFFFF}}) {
      const uint32_t lo = std::max(r.lo, bmp.lo), hi = std::min(r.hi, bmp.hi);
      if (lo <= hi) AddHexRange(nfa, nfa.AddLiteral(from, "\\u"), lo, hi, 4, end);
    }
    if (r.hi < 0x10000) continue;
    // Offsets v = c - 0x10000 split into high (v >> 10) and low (v & 0x3FF)
    // halves: a partial first high, the complete highs between, a partial last.
    const uint32_t v_lo = std::max<uint32_t>(r.lo, 0x10000) - 0x10000, v_hi = r.hi - 0x10000;
    const uint32_t h_first = v_lo >> 10, h_last = v_hi >> 10;
    auto pair = [&](uint32_t h_lo, uint32_t h_hi, uint32_t l_lo, uint32_t l_hi) {
      const uint32_t mid = nfa.AddState();
      AddHexRange(nfa, nfa.AddLiteral(from, "\\u"), 0xD800 + h_lo, 0xD800 + h_hi, 4, mid);
      AddHexRange(nfa, nfa.AddLiteral(mid, "\\u"), 0xDC00 + l_lo, 0xDC00 + l_hi, 4, end);
    };
    if (h_first == h_last) {
      pair(h_first, h_first, v_lo & 0x3FF, v_hi & 0x3FF);
      continue;
    }
    pair(h_first, h_first, v_lo & 0x3FF, 0x3FF);
    if (h_first + 1 <= h_last - 1) pair(h_first + 1, h_last - 1, 0, 0x3FF);
    pair(h_last, h_last, 0, v_hi & 0x3FF);
  }
  return end;
}

// The same widened to bytes.
absl::StatusOr<ByteDfa> SequenceDfa(const Parser& parser, absl::Span<const uint32_t> nodes,
                                    const RegexLimits& limits, EmitContext& ctx) {
  absl::StatusOr<ClassDfa> dfa = SequenceClassDfa(parser, nodes, limits, ctx);
  if (!dfa.ok()) return dfa.status();
  return dfa->Widen();
}

// All text in `spelling`: what (?~:) complements within, and what counted
// operands start from when no plain operand comes first.
namespace {
const absl::StatusOr<ClassDfa>& Universe(JsonSpelling spelling, const RegexLimits& limits, EmitContext& ctx) {
  const uint32_t flags = FlagsOf(spelling);
  auto [it, fresh] = ctx.pieces->universes.try_emplace(
      absl::StrFormat("%d/%d/%d/%d/%d", flags, limits.max_nesting, limits.max_repeat,
                      limits.max_nfa_states, limits.max_dfa_states),
      absl::UnknownError("unset"));
  if (fresh) {
    it->second = DeterminizeRegexToClasses("[\\s\\S]*", flags, limits);
    if (it->second.ok()) it->second = MinimizeDfaToClasses(*it->second);
  }
  return it->second;
}
}  // namespace

absl::StatusOr<ByteDfa> IntersectionDfa(const Parser& parser, uint32_t id, const RegexLimits& limits,
                                        EmitContext& ctx, uint32_t unbounded_operand) {
  const std::vector<Node>& nodes = parser.nodes();
  const Node& n = nodes[id];
  // Plain operands first (their product is usually small), counted
  // classes last.
  std::vector<uint32_t> order;
  for (uint32_t c : n.children) {
    if (!nodes[c].counted) order.push_back(c);
  }
  for (uint32_t c : n.children) {
    if (nodes[c].counted) order.push_back(c);
  }
  absl::StatusOr<ByteDfa> result = ByteDfa{};  // the first plain operand replaces it
  if (nodes[order[0]].counted) {
    const absl::StatusOr<ClassDfa>& all = Universe(n.spelling, limits, ctx);
    result = all.ok() ? absl::StatusOr<ByteDfa>(all->Widen()) : all.status();
  }
  for (size_t k = 0; k < order.size() && result.ok(); ++k) {
    const Node& operand = nodes[order[k]];
    if (operand.counted) {
      const Node& cls = nodes[operand.children[0]];
      absl::StatusOr<ByteDfa> one = OneCodepointDfa(cls.ranges, cls.spelling);
      if (!one.ok()) return one.status();
      const uint32_t max = order[k] == unbounded_operand ? kUnbounded : operand.max;
      result = IntersectCounted(*result, *one, operand.min, max, limits.max_dfa_states);
    } else {
      absl::StatusOr<ByteDfa> dfa = SequenceDfa(parser, {order[k]}, limits, ctx);
      if (!dfa.ok()) return dfa.status();
      result = k == 0 ? *std::move(dfa) : IntersectDfas(*result, *dfa, limits.max_dfa_states);
    }
    if (result.ok()) result = MinimizeDfa(*result);
  }
  return result;
}

// The DFA of every (?&:...) and (?~:...) node, innermost first: a node's
// operands have smaller ids than the node (the parser adds a node when it
// closes), so operands meet only set operations already built, and no call
// recurses.
absl::Status BuildSetOperations(const Parser& parser, const RegexLimits& limits,
                                EmitContext& ctx, uint32_t skip) {
  const std::vector<Node>& nodes = parser.nodes();
  for (uint32_t id = 0; id < nodes.size(); ++id) {
    const Node& n = nodes[id];
    if (n.kind != NodeKind::kAnd && n.kind != NodeKind::kNot) continue;
    if (id == skip) continue;
    // The same group text under the same flags and limits is the same
    // automaton (nested set operations included): built once per RegexPieces.
    std::string key = absl::StrCat(n.open_flags, "/", limits.max_nesting, "/", limits.max_repeat,
                                   "/", limits.max_nfa_states, "/", limits.max_dfa_states, "/");
    key.append(parser.pattern().substr(n.offset, n.end - n.offset));
    if (auto it = ctx.pieces->set_ops.find(key); it != ctx.pieces->set_ops.end()) {
      ctx.set_op_dfas.emplace(id, &it->second);
      continue;
    }
    auto fail = [&](const absl::Status& st) {
      return absl::Status(st.code(), parser.Error(n.offset, std::string(st.message())).message());
    };
    // Across loads and stages too (the JSON Schema converter checks a
    // string's intersection, the lowering builds it again; schemas share
    // formats and lengths): the process's store, failures included.
    const std::string shared_key = "set-op/" + key;
    SharedRegexDfas& shared = SharedRegexDfas::Process();
    absl::StatusOr<ClassDfa> built = absl::UnknownError("unset");
    if (!shared.Find(shared_key, limits.max_dfa_states, &built)) {
      if (n.kind == NodeKind::kNot) {
        absl::StatusOr<ClassDfa> removed = SequenceClassDfa(parser, {n.children[0]}, limits, ctx);
        const absl::StatusOr<ClassDfa>& all = Universe(n.spelling, limits, ctx);
        if (!removed.ok()) {
          built = removed.status();
        } else if (!all.ok()) {
          built = all.status();
        } else {
          built = SubtractDfa(*all, *removed, limits.max_dfa_states);
        }
      } else {
        absl::StatusOr<ByteDfa> result = IntersectionDfa(parser, id, limits, ctx);
        built = result.ok() ? absl::StatusOr<ClassDfa>(ClassDfa::Narrow(*result)) : result.status();
      }
      shared.Add(shared_key, limits.max_dfa_states, built);
    }
    if (!built.ok()) return fail(built.status());
    auto [it, inserted] = ctx.pieces->set_ops.emplace(std::move(key), *std::move(built));
    ctx.set_op_dfas.emplace(id, &it->second);
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> Emit(const Parser& parser, uint32_t root, ByteNfa& nfa, uint32_t from,
                              const RegexLimits& limits, RegexPieces* pieces) {
  EmitContext ctx(pieces);
  absl::Status st = BuildSetOperations(parser, limits, ctx);
  if (!st.ok()) return st;
  return EmitInto(parser, root, nfa, from, limits, ctx);
}

}  // namespace zapgram::grammar::regex_internal
