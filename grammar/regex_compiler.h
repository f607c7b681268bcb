// Regular expressions to byte automata.
//
// The dialect is the part shared by Lark, Python `re` (str patterns) and
// ECMA-262, with Python's meaning wherever they differ (see
// grammar/unicode_classes.h for \d \w \s). A pattern is always matched whole
// (a terminal), over UTF-8 code points.
//
// Accepted: literals; escapes \a \f \n \r \t \v \0 (and Python octal \0oo,
// \ooo), \xNN, \x{N..}, \uNNNN, \U00NNNNNN, \u{N..}, \N{NAME}, \\ and any escaped
// non-alphanumeric character; classes [..] with ranges, negation, \d \w \s
// \D \W \S and \p{..} \P{..} \pL inside and outside them; `.` (any code point
// but \n; any at all under s); groups ( ), (?: ), (?P<name> ), (?<name> ),
// comments (?# ); inline flags (?aimsux-imsx) for the rest of the enclosing
// group and scoped (?i-s: ); alternation; quantifiers * + ? {m} {m,} {m,n}
// {,n} and their lazy forms (same language); a `{` that does not start a
// valid quantifier is a literal (Python). ^ and \A where nothing can precede
// them (the start of the pattern or of a top-level alternative, possibly
// inside unquantified groups), $ \Z \z where nothing can follow them: there
// they are no-ops, since a terminal is matched whole.
//
// Refused, with "regex /PATTERN/: <what> at offset N": lookarounds, atomic
// groups, conditionals, backreferences (\1, (?P=name), \k<name>), possessive
// quantifiers, \b \B \G, anchors anywhere else, unknown escapes and property
// names, malformed syntax, and the limits below. Of a pattern refused for
// its lookarounds and anchors alone, NeverMatchingAssertion (below) may
// prove that it matches no text at all (Lark compiles /a(?=b)c/ so).
//
// Flags: i folds case with Unicode simple case folding (literals, ranges and
// \p{..}; not the shorthands \d \w \s, as in Python); s lets `.` match \n;
// x ignores whitespace and #-comments outside classes; m only widens where
// ^ and $ may appear (they are no-ops at the ends either way); a makes
// \d \w \s and case folding ASCII-only. J (zapgram's own flag,
// kRegexJsonString; inline (?J) or (?J:...)) matches every code point in its
// JSON-string spelling: raw UTF-8, except `"` and `\` (written \" and \\)
// and U+0000..U+001F (\b \f \n \r \t, the others \u00XX with either hex
// case); other escapes of ordinary characters (\/, \u0041) do not match. The
// pattern still speaks of decoded characters: (?J)a"b matches the bytes a\"b.
// E (kRegexJsonAnySpelling, with J: (?JE)) matches every RFC 8259 spelling
// instead: also \/ and \uXXXX of any code point in either hex case, a
// surrogate pair above U+FFFF (what a validator reading JSON accepts).
//
// Set operations (zapgram's own; grammar/dfa_set_ops.h): (?&:A|B|...)
// matches what every alternative matches (an intersection, not a choice);
// (?~:A) matches every string that A does not, within all text spelled as the
// flags in force say (any UTF-8 text, or every JSON-string spelling under J).
// An operand of (?&:...) that repeats one class, [\s\S]{m,n}, counts code
// points without being unrolled, so its bounds may pass max_repeat. Each set
// operation is determinized on the spot (max_dfa_states bounds each product)
// and enters the NFA as its minimal DFA. The JSON Schema converter spells
// pattern-and-length intersections and the keys no pattern finds this way.
//
// Pipeline: Parse (pattern -> syntax tree, explicit stack of open groups,
// classes resolved to code-point ranges on the spot) then Emit (tree ->
// Thompson NFA fragment on a ByteNfa, explicit stack of frames; counted
// repetition is unrolled, bounded by max_repeat and max_nfa_states), then
// grammar::Determinize with the DFA state cap, then MinimizeDfa. Grammars
// determinize a regex past CompileLimits::max_eager_regex_states lazily from
// AddRegex's NFA instead (grammar/lazy_dfa.h, parser/flat_grammar.cc).
//
// Tests: tests/grammar/regex_compiler_test.cc (units, RE2 differential).
#ifndef ZAPGRAM_GRAMMAR_REGEX_COMPILER_H_
#define ZAPGRAM_GRAMMAR_REGEX_COMPILER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/node_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include <optional>

#include "grammar/byte_automaton.h"
#include "grammar/counted_automaton.h"
#include "grammar/dfa_minimization.h"

namespace zapgram::grammar {

struct RegexLimits {
  // Open groups at any point of the pattern (parse stack depth).
  uint32_t max_nesting = 256;
  // Largest m or n of a counted repetition {m,n} (RE2 uses 1000 too).
  uint32_t max_repeat = 1000;
  // NFA states after unrolling; each costs a few dozen bytes.
  uint32_t max_nfa_states = 1u << 18;
  // DFA states of one regex; each costs 1 KiB (256 transitions).
  uint32_t max_dfa_states = 1u << 14;
};

// Appends the NFA of `pattern` starting at state `from`; returns its end
// state (the caller decides whether it accepts). `flags` are RegexFlags. On
// error `nfa` may hold unreachable garbage states.
absl::StatusOr<uint32_t> AddRegex(ByteNfa& nfa, uint32_t from, std::string_view pattern,
                                  uint32_t flags, const RegexLimits& limits = {});

// What the regexes of one compilation share below the level of a whole
// pattern: the NFA fragment of each code-point class, by its ranges and
// spelling (every literal character of a pattern is such a class), and the
// minimal DFA of each set operation, by its text, the flags it opens under
// and the limits (the JSON Schema converter writes the same key complement
// into every candidate the regular-terminal merge tries for an object), and
// the universe a complement is taken within, by flags and limits.
// Defined in grammar/regex_parser.h; a RegexDfaCache owns one. Pieces are
// stamped exactly as freshly built ones, so the automata are the same with
// or without it.
struct RegexPieces;

// AddRegex and DeterminizeRegexToClasses taking their class fragments from
// `pieces` (adding the missing ones; null = private ones).
absl::StatusOr<uint32_t> AddRegex(ByteNfa& nfa, uint32_t from, std::string_view pattern,
                                  uint32_t flags, const RegexLimits& limits, RegexPieces* pieces);

// The trimmed DFA of `pattern`, not minimized (empty() when its language is
// empty); errors name the pattern.
absl::StatusOr<ByteDfa> DeterminizeRegex(std::string_view pattern, uint32_t flags,
                                         const RegexLimits& limits = {});
// The same automaton in classes (ClassDfa).
absl::StatusOr<ClassDfa> DeterminizeRegexToClasses(std::string_view pattern, uint32_t flags,
                                                   const RegexLimits& limits = {});
absl::StatusOr<ClassDfa> DeterminizeRegexToClasses(std::string_view pattern, uint32_t flags,
                                                   const RegexLimits& limits, RegexPieces* pieces);

// The trimmed, minimal DFA of `pattern` (empty() when its language is empty).
absl::StatusOr<ByteDfa> CompileRegex(std::string_view pattern, uint32_t flags,
                                     const RegexLimits& limits = {});

// CompileRegex results by (pattern, flags, limits), for the stages of one
// grammar compilation: the regular-terminal merge compiles each candidate
// regex to check its size, and the lowering needs the same DFAs again. A
// result is reused under another state limit when it answers for it too (a
// DFA built within a limit is the same under a larger one; an overflow of a
// limit overflows any smaller one); otherwise it is built again.
// Entries never move (references stay valid). Not thread-safe: one cache
// per compilation.
class RegexDfaCache {
 public:
  RegexDfaCache();
  ~RegexDfaCache();
  RegexDfaCache(RegexDfaCache&&) noexcept;
  RegexDfaCache& operator=(RegexDfaCache&&) noexcept;

  // CompileRegex(pattern, flags, limits): minimal.
  const absl::StatusOr<ByteDfa>& Compile(std::string_view pattern, uint32_t flags,
                                         const RegexLimits& limits);
  // The same DFA before minimization (trimmed, so empty() iff the language
  // is): enough to know whether a pattern fits the state limit, which is
  // checked during determinization. Minimized later only if Compile asks.
  const absl::StatusOr<ClassDfa>& Determinized(std::string_view pattern, uint32_t flags,
                                               const RegexLimits& limits);
  // The same, but built by `build` when neither this cache nor the
  // process's (shared_regex_dfas.h) holds it: `build` must return a trimmed
  // DFA of the pattern's language within limits.max_dfa_states, or the
  // error compiling the pattern would give (the regular-terminal merge
  // builds its candidates from the expression tree, not from their text).
  const absl::StatusOr<ClassDfa>& Determinized(
      std::string_view pattern, uint32_t flags, const RegexLimits& limits,
      absl::FunctionRef<absl::StatusOr<ClassDfa>()> build);
  // Compile's result moved out, for a caller that keeps the minimal DFA:
  // the entry is dropped, so asking for the pattern again builds it again.
  // `class_of` (if not null) receives the byte classes the DFA was
  // determinized in: its columns are equal within each (coarser classes may
  // exist), which spares a caller grouping 256 columns state by state.
  absl::StatusOr<ByteDfa> Take(std::string_view pattern, uint32_t flags, const RegexLimits& limits,
                               std::array<uint8_t, 256>* class_of = nullptr);
  // The pattern's trimmed DFA in the byte classes it was determinized in,
  // moved out as Take's is, not minimized (the minimal one if Compile made
  // it already). For the lowering: a terminal's DFA need not be minimal
  // (its token sets are built per state reached, and states no token can
  // tell apart share their sets through bounded equivalence), and
  // minimizing every kept terminal was ~11% of compile instructions on
  // MaskBench for +0.3% of mask instructions without it (93 schemas,
  // Llama 3).
  absl::StatusOr<ClassDfa> TakeDeterminized(std::string_view pattern, uint32_t flags,
                                            const RegexLimits& limits);
  size_t size() const { return entries_.size(); }
  uint64_t hits() const { return hits_; }
  // Whether a determinization made under state limit `built_under` answers
  // one under `asked`: a DFA (or an error other than the limit) answers any
  // larger limit, since it fit within a smaller one; an overflow answers any
  // smaller limit.
  static bool Answers(const absl::StatusOr<ClassDfa>& built, uint32_t built_under, uint32_t asked);

 private:
  struct Entry {
    absl::StatusOr<ClassDfa> determinized;
    uint32_t max_dfa_states = 0;  // the limit `determinized` was built under
    // Its minimal DFA once Compile asked (or its error); unset before.
    std::optional<absl::StatusOr<ByteDfa>> minimal;
  };
  static std::string KeyOf(std::string_view pattern, uint32_t flags, const RegexLimits& limits);
  Entry& Find(std::string_view pattern, uint32_t flags, const RegexLimits& limits,
              absl::FunctionRef<absl::StatusOr<ClassDfa>()>* build = nullptr);
  absl::node_hash_map<std::string, Entry> entries_;
  uint64_t hits_ = 0;
  std::unique_ptr<RegexPieces> pieces_;  // shared by every pattern built here
};


// The parts of a pattern of the form P(?:U){m,n}S, or P(?&:A|...|C{m,n})S
// where C{m,n} is a class counted in code points (a JSON Schema string's
// pattern and maxLength: `"(?J:(?&:(?:PATTERN)|(?:[\s\S]{0,300})))"`), with
// P and S literal characters outside any JSON spelling (S not empty) and
// the count finite: what grammar/counted_automaton.h needs to match it
// without unrolling. In the second form the unit is one code point of C and
// the body the intersection counted from m up, unbounded (so the pattern's
// automaton is built, never its product with the bound). nullopt for any
// other form (the caller compiles it as usual); an error for a pattern the
// dialect refuses.
absl::StatusOr<std::optional<CountedParts>> SplitCountedRegex(std::string_view pattern,
                                                              uint32_t flags,
                                                              const RegexLimits& limits = {});

// False when no counted group of `pattern` can have a finite bound of
// kCountedMinBound or more: no run of decimal digits right after a '{' or a
// ',' reaches it (a bound is always written so). A scan of the text, to
// skip parsing the pattern again for SplitCountedRegex in the usual case.
bool MayHaveCountedBound(std::string_view pattern);

// What the anchors of a pattern say about the patterns written around it
// (the regular-terminal merge writes (?flags:PATTERN) into larger ones).
// The anchor check (Parser::CheckAnchors) only ever narrows where an anchor
// may stand as the text around it grows, so each field is a refusal that
// carries over to every enclosing pattern.
struct RegexAnchorUse {
  bool refused = false;    // an anchor is misplaced already in the pattern alone
  bool has_start = false;  // holds ^ or \A: refused once anything can precede it
  bool has_end = false;    // holds $ \Z \z: refused once anything can follow it
  // Its tree's root is neither empty nor an anchor, so it is never "blank"
  // for an anchor next to it: a ^ after it (or a $ before it) is refused.
  bool never_blank = false;
};

// The anchor use of `pattern` under `flags` (RegexFlags), or nullopt when
// no claim can be made: the pattern does not parse alone, or it holds a '#'
// (under the x flag a comment would run past the end of the group that
// encloses it, so it would not read the same there).
std::optional<RegexAnchorUse> AnchorUseOf(std::string_view pattern, uint32_t flags);

// For a pattern refused for its assertions alone (lookarounds, or anchors
// where something can precede ^ \A or follow $ \Z \z): a description of
// the assertion ("(?=b) at offset 1 can never hold where it stands") that
// keeps it from matching any text, whatever text surrounds the match; Lark
// compiles such a terminal, which its lexer never produces. nullopt when
// the pattern is not refused, is refused for something else, or may match
// as far as the proof sees (assertions at the top level of the pattern;
// the method and its limits: grammar/regex_assertions.cc). Costs a few DFA
// products within `limits`.
std::optional<std::string> NeverMatchingAssertion(std::string_view pattern, uint32_t flags,
                                                  const RegexLimits& limits = {});

// "/pattern/flags" as Lark writes it (flags in the order imsxJ; a `/` of
// the pattern is written \/, which means / in the dialect). The GBNF reader
// reads it back (grammar/gbnf_reader.h).
std::string RegexDisplayName(std::string_view pattern, uint32_t flags);

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_REGEX_COMPILER_H_
