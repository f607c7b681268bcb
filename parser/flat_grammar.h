// The parser's view of a grammar: flat BNF over byte-level terminals.
//
// Lowering (this file's .cc) turns the IR's expression trees into plain
// productions `A -> X1 ... Xk` without recursion on the C++ stack: every
// choice, repetition and nested sequence gets a fresh nonterminal, and
// `x{m,n}` unrolls to m copies followed by a right-nested chain of optionals
// for counts up to 16, and beyond uses O(log n) binary building blocks
// (flat_grammar.cc).
// Terminals are literals, code-point classes and regexes; each becomes a
// byte automaton (grammar/byte_automaton.h) and all of them are merged into
// one global table, so that an Earley item sitting on a terminal carries its
// automaton state and scanning a byte is one table lookup. A regex whose DFA
// would exceed CompileLimits::max_eager_regex_states is determinized lazily
// instead (grammar/lazy_dfa.h): its states extend the table's numbering and
// are created while parsing, under the same max_dfa_states budget.
//
// Layout (llguidance's CGrammar, XGrammar's CSR arrays): one array `rhs` holds
// every production's symbols followed by an end marker that names the
// production's left-hand side. An Earley item's dot is an index into `rhs`.
// Symbols are tagged in their top two bits (see Symbol below).
//
// Also precomputed here, so that no fixpoint runs per input byte:
//  - nullable nonterminals (Aycock–Horspool: the parser steps over them when predicting);
//  - for every nonterminal, its prediction closure: the dots of every item
//    that predicting it adds to a set (transitively through leftmost
//    nonterminals and over nullable ones), split into items waiting on a
//    nonterminal and items sitting on a terminal.
// Unproductive productions are dropped (they can never complete), so an item
// alive in the chart always has a completion: "can continue" is exact.
// Token terminals (XGrammar's Token / ExcludeToken: one whole vocabulary
// token by id) sit in the same table as states no byte leaves; only a token
// step moves them (FlatGrammar::token_terminals, parser/recognizer.h).
//
// Tests: tests/parser/recognizer_test.cc (dump golden, lowering), differential_test.cc.
#ifndef ZAPGRAM_PARSER_FLAT_GRAMMAR_H_
#define ZAPGRAM_PARSER_FLAT_GRAMMAR_H_

#include <algorithm>
#include <array>
#include <memory>
#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "grammar/counted_automaton.h"
#include "grammar/expression_nfa.h"
#include "grammar/grammar.h"
#include "grammar/lazy_dfa.h"
#include "grammar/regex_compiler.h"
#include "parser/lexer.h"
#include "zapgram/limits.h"

namespace zapgram::parser {

// A right-hand-side entry. Top two bits: 0 = nonterminal, 1 = terminal,
// 2 = end of production (payload = the production's left-hand side).
using Symbol = uint32_t;
inline constexpr uint32_t kSymbolPayloadMask = 0x3FFFFFFFu;
inline constexpr uint32_t kTerminalTag = 1u << 30;
inline constexpr uint32_t kEndTag = 2u << 30;
inline bool IsNonterminal(Symbol s) { return (s >> 30) == 0; }
inline bool IsTerminal(Symbol s) { return (s >> 30) == 1; }
inline bool IsEnd(Symbol s) { return (s >> 30) == 2; }
inline uint32_t Payload(Symbol s) { return s & kSymbolPayloadMask; }

using ByteSet = std::bitset<256>;

// All terminal automata merged into one table. State 0 is the dead state.
// States below eager_states() were determinized while compiling and live in
// the dense arrays; then come the counted terminals' states
// (grammar/counted_automaton.h: P U{m,n} S, stepped arithmetically, below
// counted_end); the states of huge regexes come last and are created
// lazily by `lazy` (grammar/lazy_dfa.h), thread-safely, as inputs reach
// them. Step returns kOverflow when `lazy` ran out of states.
struct TerminalTable {
  static constexpr uint32_t kOverflow = grammar::LazyDfa::kOverflow;

  // A counted terminal: its local state l is global state base + l; its
  // unbounded twin (an eager terminal) has global states twin_offset + k
  // for the twin DFA's states k >= 1.
  struct CountedSegment {
    uint32_t base = 0;
    uint32_t twin_offset = 0;
    std::shared_ptr<const grammar::CountedAutomaton> automaton;
  };
  std::vector<CountedSegment> counted;  // by base, increasing
  uint32_t counted_end = 0;             // 0 when there are none

  std::vector<uint32_t> start;         // per terminal: its start state
  std::array<uint8_t, 256> byte_class; // byte -> column
  uint32_t num_classes = 0;
  std::vector<uint32_t> next;          // [state * num_classes + class] -> state (0 = dead)
  std::vector<uint8_t> eager_accepting;  // per eager state: the terminal may end here
  std::vector<uint8_t> eager_has_next;   // per eager state: some byte leads to a live state
  std::vector<ByteSet> eager_live_bytes; // per eager state: bytes leading to a live state
  std::shared_ptr<const grammar::LazyDfa> lazy;  // null when every terminal is eager
  std::vector<std::string> names;      // per terminal, for dumps: "\"true\"", "[0-9]"

  uint32_t eager_states() const { return static_cast<uint32_t>(eager_accepting.size()); }
  // Per byte class, its lowest byte (a class without a byte gets 0).
  std::vector<uint8_t> ClassRepresentatives() const {
    std::vector<uint8_t> out(num_classes, 0);
    for (uint32_t b = 256; b-- > 0;) out[byte_class[b]] = static_cast<uint8_t>(b);
    return out;
  }
  bool is_counted(uint32_t state) const { return state >= eager_states() && state < counted_end; }
  // The segment holding counted state `state`.
  const CountedSegment& SegmentOf(uint32_t state) const {
    size_t k = counted.size() - 1;
    while (counted[k].base > state) --k;
    return counted[k];
  }
  uint32_t Step(uint32_t state, uint8_t byte) const {
    if (state < eager_states()) return next[state * num_classes + byte_class[byte]];
    if (state < counted_end) {
      const CountedSegment& seg = SegmentOf(state);
      const uint32_t to = seg.automaton->Step(state - seg.base, byte);
      return to == grammar::CountedAutomaton::kDead ? 0 : seg.base + to;
    }
    return lazy->Step(state, byte_class[byte]);
  }
  // Preconditions below: `state` is a state (not kOverflow).
  bool accepting(uint32_t state) const {
    if (state < eager_states()) return eager_accepting[state] != 0;
    if (state < counted_end) {
      const CountedSegment& seg = SegmentOf(state);
      return seg.automaton->accepting(state - seg.base);
    }
    return lazy->accepting(state);
  }
  bool has_next(uint32_t state) const {
    return state < eager_states() ? eager_has_next[state] != 0 : live_bytes(state).any();
  }
  const ByteSet& live_bytes(uint32_t state) const {
    if (state < eager_states()) return eager_live_bytes[state];
    if (state < counted_end) {
      const CountedSegment& seg = SegmentOf(state);
      return seg.automaton->live_bytes(state - seg.base);
    }
    return lazy->live_bytes(state);
  }
  // States so far (lazy ones included; grows while parsing).
  uint32_t num_states() const {
    return std::max(eager_states(), counted_end) + (lazy ? lazy->num_states() : 0);
  }
};

// A terminal matching one whole vocabulary token by id (grammar::ExprKind::
// kTokenIds: XGrammar's Token(...) and ExcludeToken(...)).
struct TokenTerminal {
  std::vector<grammar::CodepointRange> ids;  // id intervals, sorted and merged
  // Tokens named by their text, not yet ids: masks::CompiledGrammar::Build
  // resolves them against its vocabulary (into a copy of the grammar), and
  // only a resolved grammar (no names left) may be parsed.
  std::vector<std::string> names;
  bool exclude = false;                      // any *normal* token not listed
  // grammar::kTokenIdsClip: `ids` may name ids the vocabulary lacks, unused
  // ids and EOS ids; masks::CompiledGrammar::Build drops them (into a copy
  // of the grammar, as it resolves `names`), so only an unclipped one is parsed.
  bool clip = false;
  std::string where;                         // "SOURCE:LINE:COL" of the macro, for errors
  std::string name;                          // "Token(1, 2)", for dumps and errors
  // Whether a token with this id (normal: a text token of the vocabulary,
  // not special) is matched.
  bool Matches(uint32_t id, bool normal) const {
    auto it = std::upper_bound(ids.begin(), ids.end(), id,
                               [](uint32_t v, const grammar::CodepointRange& r) { return v < r.lo; });
    const bool listed = it != ids.begin() && id <= (it - 1)->hi;
    return exclude ? normal && !listed : listed;
  }
};

struct FlatGrammar {
  std::vector<Symbol> rhs;
  std::vector<uint32_t> dot_lhs;             // per rhs index: lhs of the production it belongs to
  std::vector<uint32_t> production_begin;    // rhs index of each production's first symbol
  std::vector<uint32_t> nt_production_begin; // per nonterminal (+1): range into production_begin
  std::vector<std::string> nt_names;
  std::vector<uint8_t> nullable;             // per nonterminal
  // Prediction closure of nonterminal A: waiting dots in
  // predict_waiting[predict_waiting_begin[A] .. predict_waiting_begin[A+1]),
  // terminal dots likewise in predict_scan.
  std::vector<uint32_t> predict_waiting_begin;
  std::vector<uint32_t> predict_waiting;
  std::vector<uint32_t> predict_scan_begin;
  std::vector<uint32_t> predict_scan;
  uint32_t start_nt = 0;   // augmented start S' -> root
  uint32_t start_dot = 0;  // rhs index of S' -> . root
  TerminalTable terminals;  // byte-level terminals (empty for a lexed grammar)
  // A lexed grammar (grammar::Grammar::lexed): terminal symbols are tokens
  // (payload = token index) and this lexer cuts the input into them.
  std::shared_ptr<const LexerTable> lexer;

  bool lexed() const { return lexer != nullptr; }

  // Observed rule attributes (grammar::Rule::capture, temperature), per
  // nonterminal (an IR rule keeps its id as a nonterminal); all three empty
  // when no rule has one. nt_capture: 0, or 1 + an index into
  // capture_names; nt_temperature: negative for none.
  std::vector<uint32_t> nt_capture;
  std::vector<std::string> capture_names;
  std::vector<float> nt_temperature;
  bool has_captures() const { return !capture_names.empty(); }
  bool has_temperatures() const { return !nt_temperature.empty(); }
  uint32_t CaptureOf(uint32_t nt) const { return nt < nt_capture.size() ? nt_capture[nt] : 0; }
  float TemperatureOf(uint32_t nt) const { return nt < nt_temperature.size() ? nt_temperature[nt] : -1.0f; }
  // Captured or with a temperature: the parser must see it complete, so no
  // Leo entry jumps over it (parser/recognizer.cc).
  bool observed(uint32_t nt) const { return CaptureOf(nt) != 0 || TemperatureOf(nt) >= 0.0f; }
  // Fills the three from the IR rules (nonterminals 0.. are its rules).
  void SetRuleAttributes(const grammar::Grammar& grammar);

  // Token terminals. Each has a *token state* as its start state in
  // `terminals`: an eager state no byte leaves and that does not accept,
  // so bytes (Recognizer::Feed, Push) drop items sitting on it; only a token
  // step (Recognizer::FeedToken) moves them, when the token's id matches.
  // Token states are [token_state_begin, token_state_end - 1), in the order
  // of token_terminals; the last state of the block, the hold state, keeps
  // an item that took a token while the token's remaining bytes go by (it
  // too leaves on no byte). Both are 0 when the grammar has no token terminal.
  std::vector<TokenTerminal> token_terminals;
  uint32_t token_state_begin = 0;
  uint32_t token_state_end = 0;
  bool has_token_terminals() const { return token_state_end != 0; }
  // Some token terminal names a token by text (see TokenTerminal::names) or
  // has clipped ranges (TokenTerminal::clip): it needs a vocabulary to resolve.
  bool has_token_names() const {
    return std::any_of(token_terminals.begin(), token_terminals.end(),
                       [](const TokenTerminal& t) { return !t.names.empty() || t.clip; });
  }
  bool IsTokenState(uint32_t s) const { return s >= token_state_begin && s + 1 < token_state_end; }
  uint32_t token_hold_state() const { return token_state_end - 1; }
  const TokenTerminal& TokenTerminalOf(uint32_t token_state) const {
    return token_terminals[token_state - token_state_begin];
  }
  // Heap bytes held (tables, names, the lazy automaton so far, the lexer).
  size_t memory_bytes() const;

  uint32_t num_nonterminals() const { return static_cast<uint32_t>(nt_names.size()); }
  uint32_t num_productions() const { return static_cast<uint32_t>(production_begin.size()); }
};

// Lowers `grammar` (rooted at grammar.root). Errors: a budget of `limits`
// exceeded. A root that derives no string (the empty language) keeps no
// production (S' -> root alone): nothing is ever accepted.
// `dfa_cache`, if given, holds regexes compiled by an earlier stage
// (transforms::MergeRegularTerminals) and receives the ones compiled here.
// `lazy_nfas`, if given, holds the merge's lazy terminals by pattern: those
// regexes become lazy terminals from these NFAs (read, not removed).
absl::StatusOr<FlatGrammar> BuildFlatGrammar(const grammar::Grammar& grammar,
                                             const CompileLimits& limits = {},
                                             grammar::RegexDfaCache* dfa_cache = nullptr,
                                             grammar::LazyRegexNfas* lazy_nfas = nullptr);

// A production before layout: `lhs -> rhs` (rhs without the end marker).
struct FlatProduction {
  uint32_t lhs;
  std::vector<Symbol> rhs;
};

// The last step of the lowering, on its own so that a grammar read back
// from its serialized form (api/grammar_serializer.cc) is laid out by the
// same code: keeps the productions that are productive and reachable from
// out.start_nt (its own are always kept), lays them out grouped by lhs in
// `productions` order (rhs, dot_lhs, production_begin,
// nt_production_begin), and computes nullable and the prediction closures.
// `out` has its nt_names and start_nt set. The productions of a grammar
// laid out here, listed in layout order, lay out to the same tables.
// Errors: InvalidArgument when start_nt has no production or a symbol
// names a nonterminal out of range (terminal payloads are the caller's to
// check); ResourceExhausted past limits.max_rhs_symbols of prediction tables.
absl::Status LayOutProductions(const std::vector<FlatProduction>& productions,
                               const std::string& source_name, const CompileLimits& limits,
                               FlatGrammar& out);

// Byte classes such that the bytes of one class step every state of every
// automaton that reads the input alike (a lexed grammar's lexer; else the
// terminal table and each counted automaton, which reads raw bytes): two
// bytes of a class lead every parser state to the same state. Numbered
// densely.
std::array<uint32_t, 256> InputByteClasses(const FlatGrammar& g);

// One production per line, `A -> x y "lit" [class]`, with a `.` at `dot` if given.
std::string DumpFlatGrammar(const FlatGrammar& g);
// A 64-bit FNV-1a digest of the productions (DumpFlatGrammar) and the
// terminal table (starts, byte classes, transitions, accepting and live
// bytes of eager states, counted segments, whether a lazy part exists,
// names): equal digests before and after a compile-time change show the
// change left the tables alone (`zapgram check --digest`, tests).
uint64_t TablesDigest(const FlatGrammar& g);
std::string DumpDottedProduction(const FlatGrammar& g, uint32_t dot);

}  // namespace zapgram::parser

#endif  // ZAPGRAM_PARSER_FLAT_GRAMMAR_H_
