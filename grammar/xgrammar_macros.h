// XGrammar's grammar-level macros, lowered to the grammar IR.
//
// XGrammar's EBNF has macro calls, `Name(arguments)`, whose arguments are
// double-quoted strings, integers, true/false, rule names and tuples
// `(a, b, ...)`, positional or `name=value`. The GBNF reader
// (grammar/gbnf_reader.cc) reads a call into a MacroCall; this stage checks
// the arguments and builds the IR that matches what XGrammar's macro matches:
//
//   Regex(pattern, flags="...", json_string=bool)
//       XGrammar's regex dialect (its RegexFSMBuilder) translated into ours
//       (grammar/regex_compiler.h), construct by construct:
//       \d \w \s are ASCII ([0-9], [0-9A-Za-z_], [\t-\r ]) and case folding is
//       ASCII (our inline (?a)); a leading (?i) folds case; without a flags
//       argument `.` matches every code point (our s flag), with one it does
//       not match \n unless the flags hold s; flags are i, s and u (a no-op);
//       \e \cX \0 and an escaped letter with no meaning (XGrammar: the letter)
//       are rewritten. json_string=true drops `"`, `\` and U+0000..U+001F
//       from every character the pattern matches: the pattern intersected
//       with [^"\\\x00-\x1F]* (our (?&:...)). A lookahead, which XGrammar
//       silently drops (loosening the pattern), is read exactly when the
//       match itself decides it: one (?=X) or (?!X) at the top level of a
//       pattern without a top-level |, A(?=X)B being A(B ∩ XΣ*) and
//       A(?!X)B being A(B \ XΣ*), provided no string of B is a prefix of a
//       string of X without starting with one (else what follows the Regex
//       in the grammar would decide it: refused). So a(?!b)c is "ac" and
//       a(?=b)c is empty where XGrammar matches "ac" for both. Refused with
//       an error naming the macro: lookbehind, lookarounds in groups or more
//       than one, \b \B \p \P \k and backreferences (refused by XGrammar
//       too), group modifiers other than ?: and named groups, an empty
//       class, and whatever our compiler refuses (anchors in the middle).
//   Substring(chunk, ...)
//       every concatenation of consecutive chunks c_i c_i+1 ... c_j, and the
//       empty string; chunks are atomic. Lowered to one regex terminal,
//       (c1(c2(c3)?)?|c2(c3)?|c3)? for three chunks.
//   TagDispatch((tag, rule), ..., loop_after_dispatch=true, excludes=(...))
//       free text until a tag occurs, then the tag's rule, then (looping)
//       free text again. Free text is any UTF-8 text in which no tag and no
//       excluded string occurs (a proper prefix of one at the very end is
//       fine); the dispatch happens at the first place where a tag ends (the
//       longest tag when several end there), and an excluded string ending
//       first kills the branch. Lowered (no helper rules) to
//          loop:    (F_1 rule_1 | F_2 rule_2 | ...)* F_end
//          no loop:  F_end | F_1 rule_1 | F_2 rule_2 | ...
//       where F_end and F_i are regex terminals built with our set operations:
//          F_end = (?~:ANY* (P) ANY*)                       no pattern occurs
//          F_i   = (?&: ANY* T_i | (?~:ANY* (P) ANY+) | (?~:ANY* L) ...)
//       (P = every tag and excluded string; L = each longer tag or excluded
//       string that ends with T_i). A TagDispatch may end in free text.
//       The arguments of XGrammar before March 2026 are read too:
//       stop_str=(s, ...) means excludes += s followed by one of the s (or,
//       with stop_eos=true, the default, by nothing as well); stop_eos=false
//       without stop strings is an error, as it was there.
//       Differences from XGrammar's Aho-Corasick trie, which lacks dictionary
//       links: it misses a tag that ends strictly inside a longer pattern's
//       path (tags "b" and "abc" on "abx": no dispatch there; here "b"
//       dispatches), and after a tag that is a proper prefix of another tag
//       it may also go on to the longer one (here the shorter one dispatches).
//       Neither case occurs in XGrammar's own test grammars.
//   Token(id, ...)
//       exactly one token of the model's vocabulary whose id is listed: a
//       kTokenIds node (grammar/grammar.h). It matches that id only, never
//       the same bytes spelled by other tokens; a special token (Llama 3's
//       <|python_tag|>) is reachable only this way. Ids are sorted and
//       deduplicated; at least one is needed. Our extension (XGrammar's
//       structural tags allow it, its EBNF does not): a string names a token
//       by its text, Token("<tool_call>"), resolved when compiled to the
//       first id with exactly those bytes ("unknown token" otherwise).
//   ExcludeToken(id, ...)
//       exactly one *normal* token (masks/vocabulary.h: not special, not
//       EOS, not unused) whose id is not listed. XGrammar's universe is its
//       "sorted vocabulary": every token but the stop tokens and the ones
//       that decode to nothing; ours is the normal tokens, because zapgram
//       never lets a special token through unless named. ExcludeToken()
//       with no id (any one normal token) is our extension (dumps use it).
//   TokenTagDispatch((id, rule), ..., loop_after_dispatch=true, excludes=(id, ...))
//       free *tokens* until a trigger token, then the trigger's rule, then
//       (looping) free tokens again; a trigger may not also be excluded.
//       Lowered as XGrammar builds its automaton (the free token excludes
//       the triggers and the excluded ids):
//          loop:    (ExcludeToken(T + E) | Token(t_1) rule_1 | ...)*
//          no loop: ExcludeToken(T + E)* (Token(t_1) rule_1 | ...)?
//   Ids are checked against the vocabulary when the grammar is compiled
//   for one (an id out of range, or Token naming an EOS id, is an error
//   placed at the macro); a grammar with token-level nodes cannot be used
//   without a vocabulary (`zapgram parse` refuses it; Matcher::AcceptBytes
//   feeds text, which never matches a token-level node). See
//   masks/matcher.h for how the mask and AcceptToken honour them.
// Every error is the reader's "SOURCE:LINE:COL: message", placed at the
// offending argument (or the macro name when the call as a whole is wrong).
//
// The tag-dispatch lowering is also what structural tags (zapgram/grammar.h,
// api/structural_tags.cc) are built from: AddTagDispatch.
//
// Tests: tests/grammar/xgrammar_macros_test.cc (languages against brute force,
// errors), tests/data/xgrammar_ebnf_test.cc (XGrammar's labelled strings),
// tests/masks/matcher_test.cc (MatcherTagDispatch: masks against per-token
// brute force), tests/masks/token_terminals_test.cc (token-level macros:
// XGrammar's own examples, masks against the brute force, errors).
#ifndef ZAPGRAM_GRAMMAR_XGRAMMAR_MACROS_H_
#define ZAPGRAM_GRAMMAR_XGRAMMAR_MACROS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grammar/grammar.h"

namespace zapgram::grammar {

// One argument value of a macro call, as read.
struct MacroValue {
  enum class Kind : uint8_t { kString, kInteger, kBoolean, kName, kTuple };
  Kind kind = Kind::kString;
  std::string text;                  // kString: the bytes; kName: the rule name
  int64_t integer = 0;               // kInteger
  bool boolean = false;              // kBoolean
  std::vector<MacroValue> elements;  // kTuple
  size_t offset = 0;                 // where the value starts in the grammar text
};

struct MacroArgument {
  std::string name;  // empty for a positional argument
  size_t name_offset = 0;
  MacroValue value;
};

struct MacroCall {
  std::string name;  // "Regex", "TagDispatch", ...
  size_t offset = 0;  // of the name
  std::vector<MacroArgument> arguments;
};

// True for the names XGrammar treats as macros when `(` follows directly.
bool IsXGrammarMacroName(std::string_view name);

// What the lowering needs from the reader.
class MacroBuilder {
 public:
  virtual ~MacroBuilder() = default;
  virtual Grammar& grammar() = 0;
  virtual SourceLocation LocationOf(size_t offset) const = 0;
  // A reference to the rule named `name`, bound once every rule is read (an
  // unknown name is then "undefined symbol" at `offset`).
  virtual ExprId ReferenceRule(std::string_view name, size_t offset) = 0;
  // "SOURCE:LINE:COL: message" at `offset`.
  virtual absl::Status ErrorAt(size_t offset, std::string_view message) const = 0;
};

// The IR expression of `call`, or an error placed at the offending argument.
absl::StatusOr<ExprId> LowerXGrammarMacro(const MacroCall& call, MacroBuilder& builder);

// ---- pieces, public for structural tags and for tests ----

// A pattern in our dialect (grammar/regex_compiler.h) with our RegexFlags.
struct TranslatedRegex {
  std::string pattern;
  uint32_t flags = 0;
};

// XGrammar's Regex(pattern[, flags=...][, json_string=...]) in our dialect.
// `flags` is nullopt when the call has no flags argument. Errors say what and
// where in the pattern ("... at pattern offset N"), without a source location.
absl::StatusOr<TranslatedRegex> TranslateXGrammarRegex(std::string_view pattern,
                                                       std::optional<std::string_view> flags,
                                                       bool json_string);

// `text` (UTF-8) as a regex of our dialect matching exactly it.
std::string RegexQuote(std::string_view text);

// The regex of Substring(chunks...); "" when only the empty string matches.
std::string SubstringPattern(const std::vector<std::string>& chunks);

// A tag dispatch: free text, then a tag and its body, as described above.
struct TagDispatchSpec {
  struct Tag {
    std::string trigger;  // non-empty UTF-8
    ExprId body = 0;      // what must follow the trigger
  };
  std::vector<Tag> tags;
  std::vector<std::string> excludes;  // non-empty UTF-8, none a prefix of a trigger
  bool loop_after_dispatch = true;
};

// Checks the spec (non-empty triggers and excludes, no exclude a prefix of a
// trigger); the message names the offending string.
absl::Status CheckTagDispatch(const TagDispatchSpec& spec);

// The free-text terminals of a spec: F_end, then F_i for each tag.
std::string TagDispatchFreeTextPattern(const TagDispatchSpec& spec);
std::string TagDispatchTriggerPattern(const TagDispatchSpec& spec, size_t tag);

// Adds the expression of a checked spec to `grammar` (see the essay).
ExprId AddTagDispatch(Grammar& grammar, const TagDispatchSpec& spec, SourceLocation loc = {});

// A token tag dispatch (TokenTagDispatch, structural tags with trigger
// tokens): free tokens until a trigger token, then its body.
struct TokenTagDispatchSpec {
  // A token by id or by its text (resolved when compiled for a vocabulary).
  struct TokenRef {
    std::vector<uint32_t> ids;
    std::vector<std::string> names;
    SourceLocation loc;
  };
  struct Tag {
    TokenRef trigger;  // one token
    ExprId body = 0;   // what must follow it
  };
  std::vector<Tag> tags;
  TokenRef excludes;  // never free tokens (the triggers never are either)
  bool loop_after_dispatch = true;
};

// Adds the expression of `spec` (see the essay: XGrammar's construction).
ExprId AddTokenTagDispatch(Grammar& grammar, const TokenTagDispatchSpec& spec,
                           SourceLocation loc = {});

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_XGRAMMAR_MACROS_H_
