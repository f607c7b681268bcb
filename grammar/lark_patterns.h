// Two constructs of Python's regexes in Lark terminals that a terminal's
// DFA cannot take as written, rewritten for the lexer (parser/lexer.h).
//
// 1. Lazy quantifiers. The lexer takes a terminal's longest match, and for a
// pattern with a lazy quantifier its shortest (the DFA loses the moves out
// of accepting states): right for `/\/\*.*?\*\//`, wrong where the lazy part
// sits inside a greedy repetition. SynCode's python.lark folds docstrings
// into its newline token, `_NL: (/(\r?\n[\t ]*)+/ | COMMENT)+` with COMMENT
// holding LONG_STRING `"""(?<!\\).*?"""`: Python's match runs over every
// line break, comment and docstring in a row, the shortest match stops after
// the first line break. Python's `C*?S` (C one character class, S a literal
// string) with nothing after S but what may match the empty string (group
// closers, other alternatives of those groups, a `*`, `+` or `?` on them)
// takes the text up to the first S: it is rewritten to
// `(?&:C*S|(?~:[\s\S]*S[\s\S]+))` (zapgram's set operations: C*S with S only
// at its end), and the terminal is then greedy like any other. `C+?S` alike
// with C+. A pattern whose lazy quantifiers are not all of this form keeps
// the shortest-match reading.
//
// 2. Negative lookaheads of a literal that only look past the match.
// A terminal is matched whole (grammar/regex_compiler.h refuses
// lookarounds): what an assertion tests outside the match is not the
// terminal's to see. SynCode's python.lark writes strings as
// `"(?!"").*?"` so that `"""` starts no short string. There (?!"") looks at
// the two characters after the opening quote: inside the match for every
// string but `""`, whose second quote is its last character, so it reads
// one character past the match. The cases:
//  - the lookahead refuses some match on the match's own text: the pattern
//    stays refused, as before;
//  - it never does (the pattern with `(?!Y)R` read as R minus the strings
//    starting with Y has the same language as R, both cut to their
//    shortest matches where the lexer cuts them): the lookahead is dropped
//    from the terminal, and what it tested past the match becomes a
//    *killer* token K = P Y, P the pattern up to the lookahead on its
//    alternative (`[ubf]?r?("(?:""))` for STRING). The lexer runs K beside
//    the terminal; where K matches from the same start, the lookahead failed
//    for every match of the terminal from there, and its tentative ends die
//    (parser/lexer.h, guards). Exact when P has one match on any text (no
//    string of P is a prefix of another: checked on its DFA), and no other
//    lookahead stands on the way to it. The lexer refuses a grammar where
//    the terminal's tentative match would drop from its product a terminal
//    Lark tries after it (Lark tries that one once the lookahead fails):
//    python.lark tries LONG_STRING and _NL before STRING, so nothing is
//    dropped there.
//  - when K cannot be built that way, the lookahead is only dropped: a
//    match whose rest R is a proper prefix of Y is then taken even where
//    the text after it completes Y (Lark does not take it), with a warning
//    naming the terminal (`zapgram check`, Grammar::warnings()).
// Only `(?!Y)` with Y a literal string (characters and escaped
// punctuation), outside character classes, is considered; its R is the rest
// of its alternative inside the innermost group around it.
//
// Tests: tests/grammar/lark_patterns_test.cc.
#ifndef ZAPGRAM_GRAMMAR_LARK_PATTERNS_H_
#define ZAPGRAM_GRAMMAR_LARK_PATTERNS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "grammar/regex_compiler.h"

namespace zapgram::grammar {

struct DroppedLookaheads {
  std::string pattern;  // the pattern without them
  // The killer (see 2. above): texts from the match's start that make a
  // lookahead fail, or empty when it cannot be built (then the dropped
  // lookahead is a deviation, warned).
  std::string killer;
  std::string what;     // "(?!\"\"), (?!'')"
};

// The pattern with every lazy quantifier rewritten as in 1. above, or
// nullopt when it has none or one of another form.
std::optional<std::string> RewriteLazyQuantifiers(std::string_view pattern);

// Whether a pattern has a lazy quantifier (`*?`, `+?`, `??`, `{m,n}?`): the
// lexer then takes its shortest match (parser/lexer.h), and the comparison
// above cuts alike.
bool HasLazyQuantifier(std::string_view pattern);

// The pattern with its past-the-match lookaheads dropped (see above), or
// nullopt when it has none, or one that refuses matches on their own text,
// or a DFA budget of `limits` runs out (the pattern then stays refused).
std::optional<DroppedLookaheads> DropPastMatchLookaheads(std::string_view pattern, uint32_t flags,
                                                         const RegexLimits& limits = {});

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_LARK_PATTERNS_H_
