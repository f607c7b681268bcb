// Token equivalence classes: a partition of a vocabulary such that the
// tokens of one class are allowed or rejected together in every parser state
// of one compiled grammar (a refinement of the grammar's syntactic
// congruence restricted to mask verdicts, so a mask over classes expands
// losslessly to the vocabulary through the id -> class map).
//
// Byte-level grammars without lazy terminals (builtin:json, JSON Schemas,
// GBNF) get *behaviour classes*. The argument:
//
//  1. The recognizer sees a token's bytes only through the terminal DFAs. An
//     item on terminal T in DFA state s reads token w either wholly inside T
//     (the DFA stays live through w: the item alone allows w, whatever the
//     grammar does around it), or T ends after a prefix w[0:i] (the DFA is
//     accepting there, 1 <= i < |w|) and the rest w[i:] is read by items
//     the grammar predicts after T, each starting at its terminal's start
//     state, or not at all (w is rejected by this item). An end at i = 0 is
//     the item's completion, made before w by other items of the same set.
//     So the verdict of a parser state on w is an OR over its items of a
//     function of key_s(w) = ALIVE, or REJECTED, or CROSS{R(w[i:]) : i in
//     P_s(w)} where P_s(w) are those end positions and R(u) is the *restart
//     signature* of the byte string u.
//  2. R(u) is the same thing seen from every terminal start st: per st,
//     ALIVE, REJECTED or CROSS{R(u[j:]) : j in P_st(u)}. The continuation of
//     a grammar after an ended terminal depends on u only through R(u) (by
//     induction on |u|: the suffixes are shorter).
//  3. Hence tokens w1, w2 with key_s(w1) = key_s(w2) for every eager state s
//     get the same verdict in every parser state. Only positions where a
//     terminal may end enter the key, never the token's length or the state
//     it ends in: "hello" and "hi" inside a JSON string are one class.
//     States equivalent up to the trie's depth (BoundedEquivalence) have the
//     same keys, so one representative per mask class is enough; its
//     ALIVE tokens are the accepted set of its token sets (TokenSets, shared
//     per vocabulary) and its CROSS tokens are the subtrees of its uncertain
//     roots (all end positions lie on the root's path, so they are common to
//     the subtree; only the suffixes differ per token). Counted terminals'
//     states (a string with maxLength) are many, but their mask classes
//     (CompiledGrammar::MaskClass: counts a token cannot tell apart) are
//     few, and each is refined like an eager state.
//  4. The partition is refined exactly, state by state: a token's class
//     becomes the pair (old class, key), with keys interned (no hashing of
//     signatures into a lossy digest).
//
// Lexed (Lark) grammars get *lexed behaviour classes*, the same argument
// over the lexer (parser/lexer.h, the lanes of parser/recognizer.h). A lane
// (lexer state s, guards, the tokens its items wait for, an accepting flag)
// reads bytes w along one lexer path u_0 = s, u_1, ...; what it may still
// become after u_k depends on u_k only through lane(u_k) (the ignored flag,
// else the row of tokens that may still end: these sets only shrink along a
// path, so the filters the lane applied on the way are the last one). Its
// key is
//   - the guard threshold: a guard (s, r) fires on w iff r >= threshold
//     (StepGuards: some u_k accepts a terminal ranked r or better while every
//     u_j before it can still reach one); a fired guard kills the lane and
//     every lane it spawned, so keys of every lexer state cover the guards
//     that lanes hold;
//   - lane(u_n) when the path lives through w, else dead;
//   - per position j where u_j emits a token (and the emit's own guard,
//     run on along the same path, does not fire within w): (lane(u_{j-1}),
//     the token, R(w[j:]) or "at the end"), as a set. R(v) is the key of v
//     from lexer state 1 (a boundary lane), recursively.
// The parser's part (does it take the token, what it waits for next) is a
// function of the lane and the token, so equal keys give equal verdicts.
// Lexer states alike in everything a key reads, up to the trie's depth
// (BoundedEquivalence over the lexer table), are visited once.
//
// Byte-level grammars with lazy terminals (huge regexes), and Lark grammars
// with an Indenter (parser/indenter.h: it counts spaces and tabs the lexer
// may step alike, so lexer keys cannot tell " " from "\t"), get *byte-class
// strings*: two bytes are one class when every state of every automaton
// that reads bytes (the terminal table and each counted automaton) steps
// them alike, and two tokens are one class when their bytes spell the same
// string of byte classes. Nothing downstream of the bytes can tell them
// apart, so this is lossless too, only finer (token lengths stay apart):
// states of those terminals are created while parsing, so no key can list
// them ahead.
//
// Ids that are not normal tokens: every EOS id forms one class (allowed
// exactly when the text is a sentence); ids named by a token terminal
// (Token / ExcludeToken / TokenTagDispatch) are singletons; the other special
// and unused ids form one class (never allowed). Budget-aware masks
// (budget_mask.h) look at where a token ends, not just at the verdict: the
// classes are for plain masks.
//
// Cost (one core, load ~3 on a shared 2-core machine): with Llama 3,
// builtin:json ~40 ms, a MaskBench schema ~25 ms at the median (0.3-1 s
// for the largest, e.g. 52k terminal states), a SynCode Lark grammar
// 0.2-0.3 s; Gemma 3's 262k ids take 2-4x that. Most of it is computing
// keys of the trie's tokens from each representative state; suffix
// signatures are memoized per computation (views into the vocabulary);
// byte-level states whose round would read exactly what an earlier one
// read are skipped; the byte-level form reuses the per-state token sets
// (shared per vocabulary), which the matcher then finds built.
//
// Tests: tests/masks/token_classes_test.cc (every member of every class gets
// the brute-force verdict of its representative at states along real
// traces of JSON, MaskBench, JSON Schema suite, SQL, Java and Go with the
// three tokenizers; a merged pair of distinguishable tokens is caught).
#ifndef ZAPGRAM_MASKS_TOKEN_CLASSES_H_
#define ZAPGRAM_MASKS_TOKEN_CLASSES_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "masks/vocabulary.h"

namespace zapgram::masks {

class CompiledGrammar;

struct TokenClasses {
  enum class Method : uint8_t {
    kBehaviour,         // keys of every terminal state (byte-level grammars)
    kLexedBehaviour,    // keys of every lexer state (lexed grammars)
    kByteClassStrings,  // strings of byte classes (lazy terminals)
  };
  // Per id in [0, padded_size()): its class, numbered 0.. in the order of
  // the classes' smallest ids.
  std::vector<uint32_t> class_of;
  // Per class: its smallest id.
  std::vector<TokenId> representative;
  Method method = Method::kBehaviour;
  uint32_t num_classes() const { return static_cast<uint32_t>(representative.size()); }
  size_t bytes() const { return 4 * (class_of.capacity() + representative.capacity()); }
};

// The classes of `grammar` (see above). Builds the token sets of every
// eager terminal state it has not built yet (behaviour classes).
// Thread-safe as CompiledGrammar is.
TokenClasses ComputeTokenClasses(const CompiledGrammar& grammar);

// The same computation in bounded steps, so that a grammar's first masks
// need not wait for it (MatcherOptions::TokenClasses::kOnceRecurring): a
// lexed grammar's classes are refined for `budget` units of work per Step
// (a trie node visited or a token keyed; a step may stop inside a lexer
// state's walk of the trie and go on there); any other grammar's are
// computed whole by its first Step.
// Finish() gives what ComputeTokenClasses would. Not thread-safe: one
// caller at a time (CompiledGrammar holds it under a mutex).
class TokenClassesInProgress {
 public:
  explicit TokenClassesInProgress(const CompiledGrammar& grammar);
  ~TokenClassesInProgress();
  TokenClassesInProgress(const TokenClassesInProgress&) = delete;
  TokenClassesInProgress& operator=(const TokenClassesInProgress&) = delete;
  // Refines for about `budget` more units; true once complete.
  bool Step(uint64_t budget);
  // Completes what is left, then the classes (once).
  TokenClasses Finish();

 private:
  struct Lexed;
  const CompiledGrammar& g_;
  std::unique_ptr<Lexed> lexed_;
  TokenClasses result_;  // non-lexed grammars: computed whole by the first Step
  bool done_ = false;
};

}  // namespace zapgram::masks

#endif  // ZAPGRAM_MASKS_TOKEN_CLASSES_H_
