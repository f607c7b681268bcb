// Random grammars, strings and document mutations for differential tests.
//
// Everything is driven by a caller-owned std::mt19937_64 with a fixed seed, and
// draws numbers only through Uniform() (rng() % n), so a failing case is
// reproduced by its seed on any standard library.
//
// Grammars have 1..max_rules rules (`root`, `r1`, ...) whose bodies are
// expression trees of depth <= max_depth over a small alphabet: the bytes
// a, b, c, short multi-byte literals ("ab", "abc"), the two-byte "é" (C3 A9),
// classes ([a-b], [^a], [a-c] + é, an empty class that matches nothing),
// empty, rule references (any rule, so left and right recursion, cycles such as
// A ::= A, nullable and unproductive rules all occur), sequences, choices and
// repetitions (*, +, ?, {m,n}, {m,} with small bounds). A fraction of rules is
// drawn from templates that force the shapes above (left/right recursion,
// cycles, unproductive self-reference, nullable pairs).
//
// Strings mix the alphabet with é, a stray 0xC3 (a truncated é), a lone 0xA9
// and `d` (only [^a] matches it), so invalid UTF-8 is exercised too.
#ifndef ZAPGRAM_TESTS_SUPPORT_RANDOM_GRAMMAR_H_
#define ZAPGRAM_TESTS_SUPPORT_RANDOM_GRAMMAR_H_

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace zapgram::testing {

// A number in [0, n); n must be > 0.
uint64_t Uniform(std::mt19937_64& rng, uint64_t n);

struct RandomGrammarOptions {
  uint32_t max_rules = 6;
  uint32_t max_depth = 4;
  // Leaves with é (literals and classes) and the rare stray-byte literal "\xC3".
  bool multibyte = true;
};

// A valid grammar (Validate() passes), rooted at rule 0 `root`.
grammar::Grammar RandomGrammar(std::mt19937_64& rng, const RandomGrammarOptions& options = {});

// The bytes random grammars and strings are made of (a, b, c, d, 0xC3, 0xA9):
// the bytes a differential test probes NextBytes() with.
const std::vector<uint8_t>& AlphabetBytes();

// A string of 0..max_length bytes over AlphabetBytes(), mostly a/b/c, with
// whole é sequences more often than stray halves.
std::string RandomString(std::mt19937_64& rng, size_t max_length);

// One edit of a document.
struct Mutation {
  enum Kind : uint8_t { kDelete, kInsert, kReplace };
  Kind kind = kInsert;
  size_t offset = 0;
  uint8_t byte = 0;              // inserted or replacing byte
  std::string Describe() const;  // "delete @12", "insert 0x7B @3", ...
};

// `doc` with one byte deleted, inserted or replaced at a random offset. The new
// byte is drawn from `new_bytes`, or from the document itself when that is
// empty (any byte when both are). Replacement picks a different byte when it can.
std::string MutateDocument(std::string_view doc, std::mt19937_64& rng,
                           std::string_view new_bytes = {}, Mutation* applied = nullptr);

// Printable form of arbitrary bytes for failure messages: C escapes, \xNN.
std::string EscapeBytes(std::string_view bytes);

}  // namespace zapgram::testing

#endif  // ZAPGRAM_TESTS_SUPPORT_RANDOM_GRAMMAR_H_
