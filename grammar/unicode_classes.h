// Unicode code-point sets for regular expressions: \p{..} properties, the
// shorthand classes \d \w \s, and case-insensitive closure.
//
// Everything is computed from ICU (the same tables the rest of the system
// trusts) and returned as sorted, disjoint, non-adjacent CodepointRange lists,
// ready for ByteNfa::AddCodepoints.
//
//  - Properties. A \p{NAME} name is looked up, in order, as: the special names
//    Any, ASCII, Assigned; a General_Category value (short or long, with ICU's
//    loose matching: L, Lu, Letter, Uppercase_Letter, LC, Cased_Letter, P,
//    Punctuation, ...); a Script (Greek, Latn, ...); a binary property
//    (Alphabetic, White_Space, ...); or the explicit form PROPERTY=VALUE
//    (gc=Lu, Script=Greek, sc=Grek). Results are cached per name (a mutex
//    guards the cache; the functions are thread-safe). An unknown name is an
//    InvalidArgument error naming it.
//  - Shorthands. zapgram's convention is Python `re` on str patterns (Lark's
//    semantics, Lark grammars being the main users), ShorthandDialect::kPython:
//      \d = General_Category Nd (what str.isdecimal() accepts);
//      \w = str.isalnum() plus '_': L (Lu Ll Lt Lm Lo) plus every code point
//           with a Numeric_Type (Decimal, Digit, Numeric), plus U+005F;
//      \s = str.isspace(): \t \n \v \f \r, U+001C..U+001F, space, U+0085,
//           U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F,
//           U+3000.
//    kPythonAscii is Python's re.ASCII / (?a): [0-9], [A-Za-z0-9_],
//    [ \t\n\r\f\v]. kEcma is ECMA-262 (JSON Schema `pattern`) without /u:
//    [0-9], [A-Za-z0-9_], and \s = WhiteSpace + LineTerminator (\t \n \v \f
//    \r, space, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F,
//    U+205F, U+3000, U+FEFF). The regex compiler uses kPython (kPythonAscii
//    under the a flag); kEcma is here for a future JSON Schema flag.
//  - Case closure. Simple case folding (Unicode CaseFolding.txt statuses C
//    and S, via u_foldCase with the default, non-Turkic option): a code point
//    is added when some code point of the set folds to the same value, so
//    k, K and U+212A KELVIN SIGN travel together, as in Python 3 and RE2.
//
// Tests: tests/grammar/unicode_classes_test.cc.
#ifndef ZAPGRAM_GRAMMAR_UNICODE_CLASSES_H_
#define ZAPGRAM_GRAMMAR_UNICODE_CLASSES_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "grammar/grammar.h"

namespace zapgram::grammar {

// The code points of the Unicode property `name` (the text between the braces
// of \p{..}). Thread-safe; cached.
absl::StatusOr<std::vector<CodepointRange>> UnicodePropertyRanges(std::string_view name);

enum class ShorthandClass { kDigit, kWord, kSpace };
enum class ShorthandDialect { kPython, kPythonAscii, kEcma };

// The positive class of \d, \w or \s (\D, \W, \S are their complements).
// Thread-safe; the reference stays valid for the life of the process.
const std::vector<CodepointRange>& ShorthandRanges(ShorthandClass c, ShorthandDialect dialect);

// `ranges` (normalized) plus every code point that case-folds like one of
// them. With `ascii_only`, only ASCII letters are folded (Python's
// re.ASCII | re.IGNORECASE). Returns a normalized list.
std::vector<CodepointRange> CaseClosure(const std::vector<CodepointRange>& ranges,
                                        bool ascii_only);

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_UNICODE_CLASSES_H_
