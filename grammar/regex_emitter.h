// The regex compiler's emitter: syntax tree -> Thompson NFA fragment
// (grammar/regex_emitter.cc; the pipeline is in grammar/regex_compiler.cc).
// Only the regex compiler's files include this header.
#ifndef ZAPGRAM_GRAMMAR_REGEX_EMITTER_H_
#define ZAPGRAM_GRAMMAR_REGEX_EMITTER_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "grammar/byte_automaton.h"
#include "grammar/regex_compiler.h"
#include "grammar/regex_parser.h"

namespace zapgram::grammar::regex_internal {

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
                              JsonSpelling spelling);

// Per emission: the fragment of each class node (owned by `pieces`, shared
// by every node of equal ranges and spelling) and the minimal DFA of each
// set operation node.
struct EmitContext {
  explicit EmitContext(RegexPieces* shared) : pieces(shared != nullptr ? shared : &own) {}
  EmitContext(const EmitContext&) = delete;
  EmitContext& operator=(const EmitContext&) = delete;
  const RegexPieces::Fragment& ClassFragment(const Node& n) {
    std::string key(1 + n.ranges.size() * sizeof(CodepointRange), '\0');
    key[0] = static_cast<char>(n.spelling);
    if (!n.ranges.empty()) std::memcpy(&key[1], n.ranges.data(), n.ranges.size() * sizeof(CodepointRange));
    auto [it, fresh] = pieces->class_fragments.try_emplace(std::move(key));
    if (fresh) it->second.end = AddSpelledCodepoints(it->second.nfa, 0, n.ranges, n.spelling);
    return it->second;
  }
  RegexPieces own;
  RegexPieces* pieces;
  absl::flat_hash_map<uint32_t, const RegexPieces::Fragment*> class_fragments;  // by node
  absl::flat_hash_map<uint32_t, const ClassDfa*> set_op_dfas;  // owned by `pieces`
};

// The DFA of every (?&:...) and (?~:...) node, innermost first: a node's
// operands have smaller ids than the node (the parser adds a node when it
// closes), so operands meet only set operations already built, and no call
// recurses.
// `skip`: a node left unbuilt (SplitCountedRegex builds its own form of it).
inline constexpr uint32_t kNoNode = 0xFFFFFFFFu;
absl::Status BuildSetOperations(const Parser& parser, const RegexLimits& limits, EmitContext& ctx,
                                uint32_t skip = kNoNode);

// The DFA of the (?&:...) node `id`, its operands' set operations built;
// operand `unbounded_operand` (a counted class) counts from its min with no
// maximum.
absl::StatusOr<ByteDfa> IntersectionDfa(const Parser& parser, uint32_t id, const RegexLimits& limits,
                                        EmitContext& ctx, uint32_t unbounded_operand = kNoNode);

// Exactly one code point of `ranges`, spelled raw or as in a JSON string
// (prefix-free: the unit of a counted terminal).
absl::StatusOr<ByteDfa> OneCodepointDfa(const std::vector<CodepointRange>& ranges, JsonSpelling spelling);

// The minimal DFA of the sub-patterns at `nodes`, one after the other
// (one node: a set operation's operand), matched whole, in bytes; the set
// operations must be built (BuildSetOperations).
absl::StatusOr<ByteDfa> SequenceDfa(const Parser& parser, absl::Span<const uint32_t> nodes,
                                    const RegexLimits& limits, EmitContext& ctx);

// The NFA fragment of the tree at `root`, entered at `from`; returns its end
// state. Builds the set operations first (with `pieces`, shared ones).
absl::StatusOr<uint32_t> Emit(const Parser& parser, uint32_t root, ByteNfa& nfa, uint32_t from,
                              const RegexLimits& limits, RegexPieces* pieces);

}  // namespace zapgram::grammar::regex_internal

#endif  // ZAPGRAM_GRAMMAR_REGEX_EMITTER_H_
