// The regex compiler's syntax tree and its parser (the pipeline is in
// grammar/regex_compiler.cc; the dialect in grammar/regex_compiler.h).
//
// Parse (grammar/regex_parser.cc) turns a pattern into a tree of Nodes held
// in one vector, children before parents; Emit (grammar/regex_emitter.cc)
// turns the tree into a Thompson NFA. RegexPieces, what the patterns of one
// compilation share, is defined here: the parser keeps the classes it read
// in it and the emitter the fragments and set operations it built.
// Only the regex compiler's files include this header.
#ifndef ZAPGRAM_GRAMMAR_REGEX_PARSER_H_
#define ZAPGRAM_GRAMMAR_REGEX_PARSER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "grammar/byte_automaton.h"
#include "grammar/regex_compiler.h"
#include "grammar/unicode_classes.h"
#include "grammar/utf8.h"

namespace zapgram::grammar {

// What a compilation's regexes share (see RegexPieces in
// grammar/regex_compiler.h).
struct RegexPieces {
  // A class as parsed: its code points, normalized, before any spelling.
  // Key: the parser's flags, then the class text from '[' to ']'.
  absl::flat_hash_map<std::string, std::vector<CodepointRange>> classes;
  struct Fragment {
    ByteNfa nfa;
    uint32_t end = 0;
  };
  // The NFA fragment of one code point of a class, stamped at each use.
  // Key: the spelling byte, then each range's lo and hi (native bytes).
  absl::node_hash_map<std::string, Fragment> class_fragments;
  // The DFA of each set operation that was built without error, in its
  // byte classes (stamped from them).
  // Key: the limits and the flags it was opened under, then its text.
  absl::node_hash_map<std::string, ClassDfa> set_ops;
  // What set operations complement within and counted operands start from
  // (all text spelled as the flags say), by the flags and the limits: one
  // automaton for every set operation of a compilation.
  absl::node_hash_map<std::string, absl::StatusOr<ClassDfa>> universes;  // minimal
};

namespace regex_internal {

// Flag bits beyond RegexFlags, internal to the parser.
inline constexpr uint32_t kAsciiFlag = 1u << 16;  // (?a)
inline constexpr uint32_t kNone = 0xFFFFFFFFu;

// How a class's code points are spelled: as UTF-8 text, or inside a JSON
// string (J) in the canonical spelling or (J with E) in every spelling.
enum class JsonSpelling : uint8_t { kNone, kCanonical, kAny };

inline JsonSpelling SpellingOf(uint32_t flags) {
  if ((flags & kRegexJsonString) == 0) return JsonSpelling::kNone;
  return (flags & kRegexJsonAnySpelling) != 0 ? JsonSpelling::kAny : JsonSpelling::kCanonical;
}

inline uint32_t FlagsOf(JsonSpelling spelling) {
  switch (spelling) {
    case JsonSpelling::kNone:
      return 0;
    case JsonSpelling::kCanonical:
      return kRegexJsonString;
    case JsonSpelling::kAny:
      return kRegexJsonString | kRegexJsonAnySpelling;
  }
  return 0;
}

// kAnd and kNot are zapgram's set operations (?&:A|B) and (?~:A).
// kLookaround, (?=X) (?!X) (?<=X) (?<!X), is read only by a parser asked
// to (Parser::ReadLookarounds, for NeverMatchingAssertion); it emits as the
// empty string, as the anchors do.
enum class NodeKind : uint8_t {
  kEmpty, kClass, kConcat, kAlt, kRepeat, kStart, kEnd, kAnd, kNot, kLookaround
};

struct Node {
  NodeKind kind = NodeKind::kEmpty;
  std::vector<CodepointRange> ranges;  // kClass (normalized)
  std::vector<uint32_t> children;      // kConcat, kAlt (>= 2), kRepeat (1), kAnd (>= 1), kNot (1),
                                       // kLookaround (1: X)
  uint32_t min = 0, max = 0;           // kRepeat
  uint32_t offset = 0;                 // in the pattern, for messages
  // kClass under kRegexJsonString: JSON-string spelling; kNot: the universe
  // it complements within is spelled so.
  JsonSpelling spelling = JsonSpelling::kNone;
  bool over_limit = false;  // kRepeat: a count above max_repeat
  bool counted = false;     // kRepeat of a class that is an operand of kAnd (no unrolling)
  // kAnd, kNot, kLookaround: the group's text is pattern[offset, end), read
  // under open_flags (which, with the limits, decide its automaton).
  // kStart, kEnd: open_flags are the flags in force there (m or not).
  uint32_t end = 0;
  uint32_t open_flags = 0;
  bool behind = false;    // kLookaround: (?<=X) or (?<!X)
  bool negative = false;  // kLookaround: (?!X) or (?<!X)
  bool absolute = false;  // kStart, kEnd: \A, \Z or \z (not ^ or $)
};

class Parser {
 public:
  // `pieces` (may be null) lends and keeps parsed classes.
  Parser(std::string_view pattern, uint32_t flags, const RegexLimits& limits,
         RegexPieces* pieces = nullptr)
      : p_(pattern), flags_(flags), limits_(limits), pieces_(pieces) {}

  // Lookarounds become kLookaround nodes instead of errors (call before
  // Parse). Only NeverMatchingAssertion reads them: nothing emits their
  // meaning.
  void ReadLookarounds() { read_lookarounds_ = true; }
  // Parses the whole pattern; returns the root node.
  absl::StatusOr<uint32_t> Parse();
  absl::Status CheckAnchors(uint32_t root) const;
  const std::vector<Node>& nodes() const { return nodes_; }
  std::string_view pattern() const { return p_; }

  absl::Status Error(size_t offset, std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrFormat("regex /%s/: %s at offset %d",
                                                      std::string(p_), std::string(what),
                                                      offset));
  }

 private:
  struct Frame {
    std::vector<std::vector<uint32_t>> alts = {{}};
    uint32_t saved_flags = 0;
    size_t offset = 0;       // of the '('
    bool can_repeat = false;  // the last thing in the current alternative is an atom
    bool quantified = false;  // the last thing is a quantified atom
    NodeKind set_op = NodeKind::kEmpty;  // kAnd for (?&:, kNot for (?~:, or kLookaround
    bool behind = false, negative = false;  // kLookaround
  };
  // What an escape denotes.
  struct Escape {
    enum Kind { kChar, kClass, kStart, kEnd } kind = kChar;
    uint32_t cp = 0;
    std::vector<CodepointRange> ranges;  // kClass, final (folding already decided)
    bool foldable = false;               // kClass: \p (folded under i), not \d \w \s
  };

  uint32_t AddNode(Node n) {
    nodes_.push_back(std::move(n));
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  uint32_t AddClass(std::vector<CodepointRange> ranges, size_t offset) {
    Node n;
    n.kind = NodeKind::kClass;
    n.ranges = std::move(ranges);
    n.offset = static_cast<uint32_t>(offset);
    n.spelling = SpellingOf(flags_);
    return AddNode(std::move(n));
  }
  bool IgnoreCase() const { return (flags_ & kRegexIgnoreCase) != 0; }
  bool Ascii() const { return (flags_ & kAsciiFlag) != 0; }
  std::vector<CodepointRange> Fold(std::vector<CodepointRange> r) const {
    r = NormalizeRanges(std::move(r), false);
    return IgnoreCase() ? CaseClosure(r, Ascii()) : r;
  }
  ShorthandDialect Dialect() const {
    return Ascii() ? ShorthandDialect::kPythonAscii : ShorthandDialect::kPython;
  }

  void Atom(uint32_t node) {
    Frame& f = frames_.back();
    f.alts.back().push_back(node);
    f.can_repeat = true;
    f.quantified = false;
  }
  uint32_t CloseFrame(Frame& f, size_t offset);
  // The node of a (?&:...) or (?~:...) group; `flags` are those inside it.
  uint32_t CloseSetOp(Frame& f, uint32_t flags);
  void SkipVerbose();
  absl::StatusOr<uint32_t> ReadCodepoint();  // a literal (UTF-8) character at pos_
  absl::StatusOr<Escape> ParseEscape(bool in_class);
  absl::StatusOr<std::vector<CodepointRange>> ParseProperty(size_t offset, bool negated);
  absl::StatusOr<uint32_t> ParseClass();
  absl::StatusOr<std::vector<CodepointRange>> ReadClass();  // ParseClass without the pieces
  absl::Status ParseGroupOpen();
  // At a '{': parses {m}, {m,}, {m,n}, {,n}, {,}; false (pos_ unchanged) when it is a literal.
  absl::StatusOr<bool> ParseBraces(uint32_t* min, uint32_t* max);
  absl::Status ApplyQuantifier(size_t offset, uint32_t min, uint32_t max);

  std::string_view p_;
  size_t pos_ = 0;
  uint32_t flags_;
  const RegexLimits& limits_;
  RegexPieces* pieces_;
  bool read_lookarounds_ = false;
  // A lookbehind at `offset` that tests a character of the match itself and
  // holds: the offset past it (see regex_parser.cc), else nullopt.
  std::optional<size_t> VacuousLookbehind(size_t offset) const;
  std::vector<Node> nodes_;
  std::vector<Frame> frames_;
};

}  // namespace regex_internal
}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_REGEX_PARSER_H_
