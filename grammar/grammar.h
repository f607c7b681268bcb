// The grammar IR: what every reader produces and every transform consumes.
//
// A Grammar is a list of named rules; each rule's body is an expression tree
// stored in one arena (`exprs`), addressed by ExprId. Expressions are the
// operators the surface syntaxes share: literal byte strings, code-point
// classes, references to rules, sequences, choices and counted repetition
// (`*` = {0,inf}, `+` = {1,inf}, `?` = {0,1}, `{m,n}`).
//
// Text is UTF-8 throughout. A literal holds the exact bytes it matches (escapes
// such as \u00e9 are already encoded as UTF-8). A character class holds a
// sorted, merged list of *positive* code-point ranges: readers resolve
// negation (`[^...]`) and `.` against the full Unicode range, so the class
// `[^"]` is stored as {[0,0x21],[0x23,0x10FFFF]}. Surrogates (U+D800..DFFF)
// have no UTF-8 encoding and never match, whatever a class says.
//
// Nothing here knows about parsing: the parser lowers this tree to its own
// flat form (parser/flat_grammar.h). Every walk over an expression tree uses
// an explicit stack (user grammars may nest deeply).
//
// Tests: tests/grammar/grammar_test.cc (dump golden), tests/grammar/gbnf_reader_test.cc.
#ifndef ZAPGRAM_GRAMMAR_GRAMMAR_H_
#define ZAPGRAM_GRAMMAR_GRAMMAR_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace zapgram::grammar {

using ExprId = uint32_t;
using RuleId = uint32_t;
inline constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();
inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// 1-based line and column (column counts bytes) in the source text.
struct SourceLocation {
  uint32_t line = 0;
  uint32_t col = 0;
};

struct CodepointRange {
  uint32_t lo = 0;  // inclusive
  uint32_t hi = 0;  // inclusive
  friend bool operator==(const CodepointRange&, const CodepointRange&) = default;
};

enum class ExprKind : uint8_t {
  kEmpty,      // matches the empty string
  kLiteral,    // `literal` bytes; never empty (readers turn "" into kEmpty)
  kCharClass,  // one code point out of `ranges` (UTF-8 encoded in the input)
  kRuleRef,    // `rule`
  kSequence,   // `children` in order; at least two
  kChoice,     // one of `children`; at least two
  kRepeat,     // `children[0]` repeated min..max times (max may be kUnbounded)
  kRegex,      // a regular expression terminal: `literal` holds the pattern, `flags` RegexFlags
  kToken,      // a token of the grammar's lexicon: `token` indexes Grammar::tokens
  // One whole token of the model's vocabulary, by id (XGrammar's Token(...) /
  // ExcludeToken(...)): `ranges` holds token-id intervals (not code points),
  // sorted and merged, and `names` tokens named by their text (sorted,
  // distinct; resolved to ids against the vocabulary when compiled); flags
  // kTokenIdsExclude = any normal token *not* listed. Such a grammar needs a
  // vocabulary: only a Matcher's AcceptToken takes it.
  kTokenIds,
};

// Flags of a kTokenIds node.
enum TokenIdsFlags : uint32_t {
  kTokenIdsExclude = 1u << 0,  // every normal token except the listed ids
  // The id ranges are clipped to the vocabulary when compiled (llguidance's
  // `<[0-MAX]>`, `<[^5]>`): ids it lacks, unused ids and EOS ids in them
  // match nothing, where a plain Token(...) reports them as errors.
  kTokenIdsClip = 1u << 1,
};

// Flags of a kRegex terminal (Lark's /.../imsx, Python re, ECMA-262).
enum RegexFlags : uint32_t {
  kRegexIgnoreCase = 1u << 0,  // i
  kRegexDotAll = 1u << 1,      // s: `.` also matches \n
  kRegexMultiline = 1u << 2,   // m: ^ and $ at line breaks
  kRegexVerbose = 1u << 3,     // x: whitespace and # comments in the pattern are ignored
  // J (zapgram's own, inline (?J:...)): the pattern describes the *decoded*
  // characters of a JSON string, and every code point it matches is matched
  // in its JSON-string spelling (raw UTF-8; \" \\ and the control escapes;
  // see grammar/regex_compiler.h). Used by the JSON Schema `pattern`/`format`.
  kRegexJsonString = 1u << 4,
  // E (with J; inline (?JE:...)): every RFC 8259 spelling of each matched
  // code point, not only the canonical one: also \/ and \uXXXX in either hex
  // case (a surrogate pair above U+FFFF). JSON Schema validation grammars.
  kRegexJsonAnySpelling = 1u << 5,
};

// The letter of each RegexFlags bit, as a regex is written (/.../imsxJE,
// inline (?imsxJE:...)), in the order rendering writes them.
struct RegexFlagLetter {
  char letter;
  uint32_t flag;
};
inline constexpr RegexFlagLetter kRegexFlagLetters[] = {
    {'i', kRegexIgnoreCase}, {'m', kRegexMultiline},  {'s', kRegexDotAll},
    {'x', kRegexVerbose},    {'J', kRegexJsonString}, {'E', kRegexJsonAnySpelling}};
// The flag `letter` stands for; 0 when it stands for none.
inline uint32_t RegexFlagForLetter(char letter) {
  for (const RegexFlagLetter& l : kRegexFlagLetters) {
    if (l.letter == letter) return l.flag;
  }
  return 0;
}

struct Expr {
  ExprKind kind = ExprKind::kEmpty;
  std::string literal;                 // kLiteral bytes; kRegex pattern text
  uint32_t flags = 0;                  // kRegex: RegexFlags
  std::vector<CodepointRange> ranges;  // kCharClass: sorted, disjoint, non-adjacent
  RuleId rule = 0;                     // kRuleRef
  uint32_t token = 0;                  // kToken
  std::vector<ExprId> children;        // kSequence, kChoice, kRepeat (one child)
  std::vector<std::string> names;      // kTokenIds: tokens named by text
  uint32_t min = 0;                    // kRepeat
  uint32_t max = 0;                    // kRepeat
  SourceLocation loc;                  // where the reader saw it (0:0 when synthesized)
};

struct Rule {
  std::string name;
  ExprId body = 0;
  SourceLocation loc;  // of the rule name at its definition
  // Transforms never fold this rule into a regex terminal
  // (transforms/regular_terminals.h takes it as not regular). Set on rules
  // whose regular language has no small automaton though the rules are
  // small: an any-order object's subset rules (2^n rules of n alternatives
  // each, whose flattened DFA holds every permutation).
  bool keep_as_rule = false;
  // XGrammar's observed rule attributes (grammar/rule_attributes.h): the
  // capture name of the text each occurrence matches (empty: none) and the
  // sampling temperature while inside the rule (negative: none). Neither
  // changes the language; an observed rule stays a rule through every
  // transform (never inlined, merged with another or folded into a regex
  // terminal), so the parser sees it begin and end.
  std::string capture{};
  float temperature = -1.0f;
  bool observed() const { return !capture.empty() || temperature >= 0.0f; }
};

// A token of a lexed grammar (Lark): the input is first cut into tokens by a
// lexer (parser/lexer.h), and rules see whole tokens, never the bytes
// inside them. The definition is self-contained (a regex in this IR's regex
// dialect), so transforms copy the lexicon untouched.
struct Token {
  std::string name;         // "NAME", or Lark's name of an anonymous token
  std::string pattern;      // a regex (grammar/regex_compiler.h) matching exactly the token
  uint32_t flags = 0;       // RegexFlags of `pattern`
  bool is_string = false;   // written as a string ("return", "x"i): `text` holds it
  std::string text;         // the string of a string token (before case folding)
  int32_t priority = 0;     // Lark's terminal priority
  bool ignored = false;     // %ignore: lexed, then dropped before the rules see it
  bool in_rules = false;    // some rule refers to it (else it is only ignored)
  SourceLocation loc;
  // Lark's Indenter post-lexer (parser/indenter.h), when the grammar runs
  // one: the token's part in it. kIndent and kDedent tokens are %declare'd
  // (no pattern, never lexed): only the indenter produces them. Carried with
  // the lexicon through every transform.
  enum class IndentRole : uint8_t { kNone, kNewline, kIndent, kDedent, kOpenBracket, kCloseBracket };
  IndentRole indent_role = IndentRole::kNone;
  uint32_t tab_len = 0;  // kNewline: the columns a tab counts for (Lark's tab_len)
  // A *lookahead killer* (grammar/lark_patterns.h): not a terminal of its
  // own but the text that makes a lookahead of tokens[lookahead_of] fail
  // past its match; it is lexed beside it and only ever kills that token's
  // tentative ends (parser/lexer.h). -1 for every other token.
  int32_t lookahead_of = -1;
  // Code points of the pattern as Lark renders it (to_regexp), for Lark's
  // try order (parser/lexer.h), when `pattern` was rewritten from it
  // (grammar/lark_patterns.h); 0: `pattern` itself.
  uint32_t lark_length = 0;
};

// A grammar as read. Invariants (checked by Validate()): every ExprId and
// RuleId in range, root in range, classes normalized, every rule defined once.
class Grammar {
 public:
  std::string source_name;  // file path or "<builtin:json>", for messages
  std::vector<Rule> rules;
  std::vector<Expr> exprs;
  RuleId root = 0;
  // The lexicon. Empty for grammars whose terminals are matched in context,
  // byte by byte (GBNF, EBNF, regex). When not empty the grammar is *lexed*:
  // its rules' only terminals are kToken (Validate checks it).
  std::vector<Token> tokens;
  bool lexed() const { return !tokens.empty(); }
  // What the reader compiled other than as written, one line each
  // ("SOURCE:LINE:COL: ..."): a Lark terminal that can never match. Read by
  // Grammar::warnings() and `zapgram check`; transforms do not carry it.
  std::vector<std::string> warnings;

  // Builders. Each returns the id of the new expression.
  ExprId AddEmpty(SourceLocation loc = {});
  ExprId AddLiteral(std::string bytes, SourceLocation loc = {});  // "" -> kEmpty
  // `ranges` in any order, possibly overlapping; normalized here.
  ExprId AddCharClass(std::vector<CodepointRange> ranges, bool negated,
                      SourceLocation loc = {});
  ExprId AddRuleRef(RuleId rule, SourceLocation loc = {});
  // A regular-expression terminal (pattern text as written, RegexFlags).
  ExprId AddRegex(std::string pattern, uint32_t flags, SourceLocation loc = {});
  // A reference to tokens[token].
  ExprId AddToken(uint32_t token, SourceLocation loc = {});
  // One vocabulary token whose id is in `ids` or whose text is one of
  // `names` (or, with `exclude`, a normal token that is neither); any order,
  // duplicates allowed.
  ExprId AddTokenIds(std::vector<uint32_t> ids, bool exclude, SourceLocation loc = {},
                     std::vector<std::string> names = {});
  // True when some expression is kTokenIds: the grammar matches token ids
  // as well as bytes, so it is only meaningful against a vocabulary.
  bool HasTokenIds() const;
  // One child is returned as is; zero children give kEmpty.
  ExprId AddSequence(std::vector<ExprId> children, SourceLocation loc = {});
  ExprId AddChoice(std::vector<ExprId> children, SourceLocation loc = {});
  ExprId AddRepeat(ExprId child, uint32_t min, uint32_t max, SourceLocation loc = {});

  // Returns the rule with this name, or -1.
  int64_t FindRule(std::string_view name) const;

  // Checks the invariants above; the message names the offending rule.
  absl::Status Validate() const;
  // Heap bytes held (rules, expression nodes and their strings, the lexicon).
  size_t memory_bytes() const;
};

// Copies every rule and expression of `from` (not lexed) into `into`, each
// rule renamed `prefix` + its name; returns the id `from`'s root has in `into`.
// Used to put whole grammars (JSON Schema bodies) under structural tags.
absl::StatusOr<RuleId> AppendGrammar(Grammar& into, const Grammar& from, std::string_view prefix);

// The ids of a kTokenIds node, in increasing order.
std::vector<uint32_t> TokenIdsOf(const Expr& e);

// Sorts, merges and (when `negated`) complements ranges within [0, kMaxCodepoint].
std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges, bool negated);
// Sorts and merges ranges of any integers (token ids too) clipped to
// [0, max]; with `negated`, their complement within [0, max].
std::vector<CodepointRange> MergeRanges(std::vector<CodepointRange> ranges, bool negated, uint32_t max);

// GBNF text of the grammar, one rule per line, `root` first. Literals and
// classes are printed with escapes for non-printable bytes, so the dump of a
// grammar re-reads to an equal grammar. Used by golden tests and `zapgram check --dump`.
std::string Dump(const Grammar& grammar);

// Text of one expression in the same syntax.
std::string DumpExpr(const Grammar& grammar, ExprId id);

// Rules reachable from the root, and rules that derive at least one string
// (productive). Both run in linear time without recursion.
std::vector<bool> ReachableRules(const Grammar& grammar);
std::vector<bool> ProductiveRules(const Grammar& grammar);

// Productivity of every expression node and every rule (1 = derives some
// string). A kRegex node counts as productive: an empty regex language is
// reported by the lowering.
struct Productivity {
  std::vector<uint8_t> expr;  // per expression node
  std::vector<uint8_t> rule;  // per rule
};
Productivity ComputeProductivity(const Grammar& grammar);

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_GRAMMAR_H_
