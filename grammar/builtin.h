// Grammars bundled with zapgram, addressed as `builtin:NAME`.
#ifndef ZAPGRAM_GRAMMAR_BUILTIN_H_
#define ZAPGRAM_GRAMMAR_BUILTIN_H_

#include <string_view>
#include <vector>

namespace zapgram::grammar {

// GBNF text of builtin:NAME, or an empty view when there is no such grammar.
std::string_view BuiltinGrammarText(std::string_view name);

// Names of every builtin grammar ("json", ...).
std::vector<std::string_view> BuiltinGrammarNames();

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_BUILTIN_H_
