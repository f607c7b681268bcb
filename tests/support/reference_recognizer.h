// The slow oracle: a textbook Earley recognizer over bytes, for differential tests.
//
// Everything here is written to be obviously correct, not fast, and shares no
// code with parser/ (nor with grammar/ beyond the IR structs it reads):
//
//  - Lowering. Each expression of the grammar IR becomes one BNF symbol. A
//    literal or a code-point class is a terminal; a rule reference is the
//    rule's nonterminal; every empty expression, sequence, choice and
//    repetition gets a fresh nonterminal. `x{m,n}` is plain expansion: one
//    production `N -> x^k` for every k in m..n; `x{m,}` is `N -> x^m R`,
//    `R -> x R | ε` (a right-recursive helper). Expanded size grows with n,
//    which is fine for the small bounds tests use.
//  - Productivity. A naive fixpoint marks the productive symbols (a literal
//    always, a class when it has a range, a nonterminal when one of its
//    productions has only productive symbols); every production using an
//    unproductive symbol is dropped. Hence every item in a set can still
//    complete, and "some item can continue" means "some sentence extends the
//    input".
//  - Earley over bytes. Set i holds items (production, dot, origin) valid for
//    input[0..i). Terminals are matched directly against the input, so a
//    terminal spans several bytes: set i receives `A -> α T . β` from every
//    item `A -> α . T β` of an earlier set j whose terminal matches
//    input[j..i) exactly (a literal: those exact bytes; a class: exactly one
//    well-formed UTF-8 code point in its ranges, decoded here; overlong
//    forms, surrogates and values above U+10FFFF never match). Closure
//    (predict and complete) is a naive fixpoint: passes over the whole set
//    repeat until one adds nothing, so empty rules need no special care.
//  - Regex terminals (kRegex) are matched by RE2, never by zapgram's regex
//    compiler: the pattern is translated to RE2 syntax with zapgram's
//    conventions (TranslateRegexForRe2 below) and a terminal matches
//    input[j..i) when RE2 fully matches it. A regex is lowered to `N -> T`
//    plus `N -> ε` when RE2 matches the empty string, T standing for its
//    non-empty matches. "input[j..i) is a proper prefix of a match of T" and
//    "T is productive" are decided by BOUNDED brute force: some completion of
//    1..max_completion pieces from `completion_alphabet` (after finishing a
//    partial code point at the end) must make RE2 match. A found completion is
//    a proof; a missed one may exist beyond the bound or outside the alphabet,
//    so for grammars with regex terminals IsViable can under-report (never
//    over-report) viability, and tests must pick alphabets accordingly.
//  - Viability. A prefix of length i is viable (a prefix of some sentence)
//    iff it is a sentence, or some item of a set j <= i sits before a
//    terminal T such that input[j..i) is a proper prefix of a string T
//    matches (j = i included: the empty prefix, true for any T that matches
//    something). A position inside a multi-byte terminal has no item of its
//    own, which is why the definition looks back.
//
// Nothing recurses on the C++ stack over the grammar or the input.
// Self-tests: tests/parser/differential_test.cc (DifferentialReference.*).
#ifndef ZAPGRAM_TESTS_SUPPORT_REFERENCE_RECOGNIZER_H_
#define ZAPGRAM_TESTS_SUPPORT_REFERENCE_RECOGNIZER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "grammar/grammar.h"

namespace re2 {
class RE2;
}

namespace zapgram::testing {

// RE2 syntax for a zapgram regex (grammar/regex_compiler.h) under the same
// conventions: the flags i, s, m become an inline (?ims) group; \d \w \s use
// Python's Unicode meaning (\d = \p{Nd}; \w = [\p{L}\p{N}_], which differs
// from Python's isalnum() only on rare numeric letters outside L and N; \s =
// Python's isspace() list) instead of RE2's ASCII ones; (?<name> becomes
// (?P<name>, {,n} becomes {0,n}, \Z becomes \z. Returns false (and says why)
// for what RE2 lacks or the translation does not cover: the x flag, \W or \S
// inside a class.
bool TranslateRegexForRe2(std::string_view pattern, uint32_t flags, std::string* out,
                          std::string* error);

struct ReferenceOptions {
  // For regex terminals only (see above): completion pieces and their count.
  std::vector<std::string> completion_alphabet = {"a", "b", "c", "A", "B", "0", "1",
                                                  "_", " ", "\n", "\xC3\xA9"};
  size_t max_completion = 3;
};

// Decodes `bytes` as exactly one well-formed UTF-8 code point (shortest form,
// not a surrogate, at most U+10FFFF). Returns false otherwise.
bool DecodeOneCodepoint(std::string_view bytes, uint32_t* codepoint);

// True when `bytes` is a proper prefix (possibly empty) of the UTF-8 encoding
// of some code point lying in `ranges`.
bool IsProperPrefixOfClass(std::string_view bytes,
                           const std::vector<grammar::CodepointRange>& ranges);

class ReferenceRecognizer {
 public:
  // Copies what it needs from `grammar`; the grammar need not outlive it.
  // A regex the oracle cannot translate is reported by error() (and never matches).
  explicit ReferenceRecognizer(const grammar::Grammar& grammar,
                               ReferenceOptions options = ReferenceOptions());
  const std::string& error() const { return error_; }

  // `input` is a sentence of the grammar.
  bool Accepts(std::string_view input) const;
  // `input` is a prefix of some sentence.
  bool IsViablePrefix(std::string_view input) const;
  // Length of the longest viable prefix of `input` (input.size() when all of it is viable).
  size_t LongestViablePrefix(std::string_view input) const;
  // The grammar derives no string at all.
  bool LanguageIsEmpty() const;

  // The lowered BNF, one production per line (unproductive ones marked), for failure messages.
  std::string DumpBnf() const;

  // Incremental use: the chart of one growing input. Push appends a byte
  // (whether or not the result is viable), Pop drops the last one.
  class Session {
   public:
    // `recognizer` must outlive the session.
    explicit Session(const ReferenceRecognizer* recognizer);
    void Push(uint8_t byte);
    void Pop();
    size_t size() const { return input_.size(); }
    const std::string& input() const { return input_; }
    bool IsAccepting() const;
    bool IsViable() const;
    // Viability of input + b for each b in `bytes` (the session is unchanged afterwards).
    std::vector<bool> ViableAfter(const std::vector<uint8_t>& bytes);

   private:
    struct Item {
      uint32_t production;
      uint32_t dot;
      uint32_t origin;
      friend bool operator==(const Item&, const Item&) = default;
    };
    struct Set {
      std::vector<Item> items;
      // Indexes over `items`, for speed only: membership, items by the
      // nonterminal after their dot, items whose dot is before a terminal.
      absl::flat_hash_set<std::tuple<uint32_t, uint32_t, uint32_t>> members;
      absl::flat_hash_map<int32_t, std::vector<uint32_t>> waiting_on;
      std::vector<uint32_t> on_terminal;
    };
    // Adds `item` to the newest set if absent; returns whether it was added.
    bool Add(const Item& item);
    void Close();

    const ReferenceRecognizer* rec_;
    std::string input_;
    std::vector<Set> sets_;  // sets_[i] is valid for input_[0..i)
  };

 private:
  friend class Session;
  // A symbol: nonterminals are >= 0, terminal t is encoded as -1 - t.
  using Sym = int32_t;
  struct Terminal {
    bool is_class = false;
    std::string literal;
    std::vector<grammar::CodepointRange> ranges;
    std::shared_ptr<const re2::RE2> regex;  // set for a regex terminal (non-empty matches)
  };
  struct Production {
    Sym lhs = 0;
    std::vector<Sym> rhs;
    bool productive = false;
  };

  Sym NewNonterminal(std::string name);
  Sym NewTerminal(Terminal t);
  void AddProduction(Sym lhs, std::vector<Sym> rhs);
  void ComputeProductive();
  bool TerminalMatches(uint32_t terminal, std::string_view bytes) const;
  bool TerminalProperPrefix(uint32_t terminal, std::string_view bytes) const;
  // Bounded search for a non-empty completion c with RE2 full match of bytes + c.
  bool RegexCompletes(const re2::RE2& re, std::string_view bytes) const;

  std::vector<std::string> nt_names_;
  std::vector<Terminal> terminals_;
  std::vector<Production> productions_;
  std::vector<std::vector<uint32_t>> productions_of_;  // per nonterminal: productive ones only
  std::vector<bool> nt_productive_;
  Sym start_ = 0;  // S' -> root
  uint32_t start_production_ = 0;
  size_t max_terminal_bytes_ = 4;  // longest literal, at least 4 (a UTF-8 code point);
                                   // unbounded once a regex terminal exists
  ReferenceOptions options_;
  std::string error_;
};

// A random string of up to `max_length` bytes over AlphabetBytes() that
// mostly stays viable: each byte is drawn among the alphabet bytes the oracle
// allows next, except one time in eight (any alphabet byte).
std::string GuidedString(const ReferenceRecognizer& ref, std::mt19937_64& rng, size_t max_length);

}  // namespace zapgram::testing

#endif  // ZAPGRAM_TESTS_SUPPORT_REFERENCE_RECOGNIZER_H_
