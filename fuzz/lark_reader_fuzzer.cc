// libFuzzer target for grammar/lark_reader.cc (and the Lark lowering and lexer automaton): Lark grammar text.
// Input: TEXT [\xff\xfe INPUT] (fuzz/fuzz_support.h): the text is loaded
// with Grammar::FromText; a grammar that loads runs INPUT through the
// recognizer invariants (CheckRecognizer). Seeds: scripts/fuzz_seeds.py.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zapgram::fuzz::FuzzGrammarText(zapgram::GrammarFormat::kLark, data, size);
  return 0;
}
