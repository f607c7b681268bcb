// libFuzzer target for grammar/regex_compiler.cc and grammar/dfa_set_ops.cc: a pattern (Python re syntax, with zapgram's set operations (?&:A|B) and (?~:A)).
// Input: TEXT [\xff\xfe INPUT] (fuzz/fuzz_support.h): the text is loaded
// with Grammar::FromText; a grammar that loads runs INPUT through the
// recognizer invariants (CheckRecognizer). Seeds: scripts/fuzz_seeds.py.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zapgram::fuzz::FuzzGrammarText(zapgram::GrammarFormat::kRegex, data, size);
  return 0;
}
