// Persistent compiled grammars: CompiledGrammar::Serialize / Deserialize.
//
// What travels. Compiling a grammar is reading, normalizing, merging its
// regular parts and lowering them to the parser's tables; nearly all of the
// time goes into the terminal automata (determinization, minimization, the
// lexer's product automaton). The result, parser::FlatGrammar, is what a
// matcher reads, and it does not depend on the vocabulary: a
// masks::CompiledGrammar only adds the vocabulary's shared trie, caches and
// the masks of token terminals, built in microseconds. So the stored form is
// the FlatGrammar's *inputs to layout*: the productions as listed in the
// tables, the terminal table (eager rows, counted terminals' parts, the lazy
// terminals' NFA), token terminals and a Lark grammar's lexer. Loading runs
// parser::LayOutProductions on the productions, the same code the compile
// ends with, so rhs, dot_lhs, nullable and the prediction closures are
// rebuilt, never trusted; likewise every eager state's live bytes (from its
// row), each counted automaton (CountedAutomaton::Build checks its parts)
// and the lazy automaton (built afresh from its NFA). What the vocabulary
// adds is rebuilt by CompiledGrammar::Compile. Token sets, cached masks and
// the lazy states made so far do not travel: after one document they take
// 3.6x the tables' bytes at p50 (MaskBench, Llama 3), cover only the states
// that document visited, and could not be checked on load (a forged token
// set would allow tokens the grammar forbids, silently); the vocabulary's
// shared token sets already serve most of them on a running replica.
// Measured by perf/serialize_roundtrip.cc: a load takes 0.07x the compile
// at p50 and 0.13x at p99; the tables take 95 KiB p50, 22.7 MB max.
//
// Format (version 2, little-endian; version 1 had no counted bodies):
//   header, 40 bytes:
//     "ZGCGRAM\0"   magic
//     u32 version   kFormatVersion
//     u32 flags     kFlagRuleAttributes when the grammar has captured rules
//                   or rules with a temperature, else 0
//     u64           fingerprint of the vocabulary (masks::Vocabulary::Fingerprint)
//     u64           payload bytes
//     u64           XXH64 of the payload (grammar/checksum.h)
//   payload:
//     u64 ir_rules; strings warnings
//     strings nt_names; u32 start_nt
//     productions: u32 count; per production u32 lhs, u32 length, u32 symbols
//     u8 lexed; if 1: the lexer (WriteLexer: per-token names, ranks and
//       flags; byte classes; the transition table and per-state arrays)
//     terminals (WriteTerminals): names; start per terminal; 256 byte
//       classes and their count; eager states: rows (u32 per class) and
//       accepting flags; counted terminals: base, twin offset, prefix,
//       suffix, bounds, the unit DFA and the body DFA (0 states: none); u8 lazy, if 1 its state budget,
//       its NFA (per state: accepting, byte ranges, epsilon moves) and the
//       NFA start of each automaton
//     token terminals: u32 token_state_begin, u32 token_state_end, then per
//       terminal: id ranges, names, exclude (+2: clipped ranges), where, name
//     with kFlagRuleAttributes: rule attributes (FlatGrammar::nt_capture,
//       nt_temperature): strings capture names; u32 count; per nonterminal
//       that has one, u32 nt, u32 capture (0 or 1 + name index), f32
//       temperature (negative: none). Grammars without them are written as
//       before the attributes existed.
//     with kFlagIndenter (a Lark grammar with an Indenter, parser/indenter.h):
//       u32 newline, indent, dedent tokens, u32 tab length, i8 per token
//       (+1 open bracket, -1 close bracket, 0 neither)
//     with kFlagLexerKills (lookahead killers, parser/lexer.h): u32 per lexer
//       state kill_rank, then kill_later
//   A string is u32 length + bytes; an array is its count + raw elements.
//
// Safety. Every count is checked against the bytes left before anything is
// allocated for it (an element takes at least its smallest encoding), and
// every number used as an index is checked against what it indexes: state
// ids against the eager, counted and lazy state ranges, symbols against the
// nonterminals and terminals, lexer tokens, classes and bytes. The checksum
// catches accidents; the structural checks are what make forged input
// (tests/api/grammar_serializer_test.cc recomputes the checksum after each
// corruption, fuzz/compiled_grammar_fuzzer.cc) an error or a grammar whose
// every table lookup stays in range. Errors: kInvalidArgument (not a
// compiled grammar, another format version), kFailedPrecondition (another
// vocabulary), kDataLoss (truncated or corrupt, with the byte offset),
// kResourceExhausted (a budget of the given CompileLimits).
//
// Tests: tests/api/grammar_serializer_test.cc; fuzz/compiled_grammar_fuzzer.cc.
#include <algorithm>
#include <bit>
#include <cmath>
#include <chrono>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/grammar_data.h"
#include "grammar/byte_automaton.h"
#include "grammar/checksum.h"
#include "masks/vocabulary.h"
#include "zapgram/matcher.h"

namespace zapgram {

namespace {

static_assert(std::endian::native == std::endian::little,
              "the serialized form is written and read as the host's little-endian memory");

constexpr char kMagic[8] = {'Z', 'G', 'C', 'G', 'R', 'A', 'M', '\0'};
constexpr size_t kHeaderBytes = 40;

class Writer {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v) { Raw(&v, sizeof v); }
  void U64(uint64_t v) { Raw(&v, sizeof v); }
  void String(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  void Strings(const std::vector<std::string>& v) {
    U32(static_cast<uint32_t>(v.size()));
    for (const std::string& s : v) String(s);
  }
  // Elements only: the reader knows the count from an earlier field.
  template <typename T>
  void Elements(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    Raw(v.data(), v.size() * sizeof(T));
  }
  template <typename T>
  void Array(const std::vector<T>& v) {
    U32(static_cast<uint32_t>(v.size()));
    Elements(v);
  }
  std::string& out() { return out_; }

 private:
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

// A bounds-checked reader with a sticky error: after the first failure
// every read returns zero or empty (so no count read after it allocates)
// and status() names the first failure and its byte offset.
class Reader {
 public:
  Reader(std::string_view payload, size_t base) : bytes_(payload), base_(base) {}

  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }
  size_t remaining() const { return bytes_.size() - at_; }

  // Records a structural error at the current offset; returns false.
  bool Fail(std::string_view what) {
    if (ok()) {
      status_ = absl::DataLossError(
          absl::StrFormat("compiled grammar: corrupt at byte %d: %s", base_ + at_, what));
    }
    return false;
  }
  bool Check(bool condition, std::string_view what) { return condition || Fail(what); }

  uint8_t U8(std::string_view what) {
    uint8_t v = 0;
    Raw(&v, 1, what);
    return v;
  }
  uint32_t U32(std::string_view what) {
    uint32_t v = 0;
    Raw(&v, 4, what);
    return v;
  }
  uint64_t U64(std::string_view what) {
    uint64_t v = 0;
    Raw(&v, 8, what);
    return v;
  }
  // A count of elements that each take at least `min_bytes` of what is
  // left; 0 (and an error) when they cannot fit or exceed `max`.
  uint32_t Count(std::string_view what, size_t min_bytes, uint64_t max = UINT32_MAX) {
    const uint32_t n = U32(what);
    if (!ok()) return 0;
    if (n > max) {
      Fail(absl::StrFormat("%s: %d exceeds %d", what, n, max));
      return 0;
    }
    if (min_bytes > 0 && n > remaining() / min_bytes) {
      Fail(absl::StrFormat("%s: %d do not fit in the %d bytes left (truncated?)", what, n, remaining()));
      return 0;
    }
    return n;
  }
  std::string String(std::string_view what) {
    const uint32_t n = Count(what, 1);
    std::string s;
    if (!ok()) return s;
    s.assign(bytes_.substr(at_, n));
    at_ += n;
    return s;
  }
  std::vector<std::string> Strings(std::string_view what) {
    const uint32_t n = Count(what, 4);
    std::vector<std::string> v;
    v.reserve(n);
    for (uint32_t i = 0; i < n && ok(); ++i) v.push_back(String(what));
    return v;
  }
  // `n` raw elements (n from an earlier field, checked here against the
  // bytes left before allocating).
  template <typename T>
  std::vector<T> Elements(uint64_t n, std::string_view what) {
    std::vector<T> v;
    if (!ok()) return v;
    if (n > remaining() / sizeof(T)) {
      Fail(absl::StrFormat("%s: %d elements do not fit in the %d bytes left (truncated?)", what, n, remaining()));
      return v;
    }
    v.resize(n);
    Raw(v.data(), n * sizeof(T), what);
    return v;
  }
  template <typename T>
  std::vector<T> Array(std::string_view what) {
    return Elements<T>(Count(what, sizeof(T)), what);
  }

 private:
  void Raw(void* p, size_t n, std::string_view what) {
    if (!ok()) return;
    if (remaining() < n) {
      Fail(absl::StrFormat("%s: truncated", what));
      return;
    }
    if (n > 0) std::memcpy(p, bytes_.data() + at_, n);
    at_ += n;
  }

  std::string_view bytes_;
  size_t base_;  // offset of bytes_ in the whole serialized form
  size_t at_ = 0;
  absl::Status status_;
};

// Every entry of `v` below `bound`.
bool AllBelow(const std::vector<uint32_t>& v, uint64_t bound) {
  for (uint32_t x : v) {
    if (x >= bound) return false;
  }
  return true;
}

// Whether every state s >= 1 of a transition table (rows of `columns`
// entries, state 0 dead) that is reachable from `starts` and not `exempt`
// can reach a state marked in `target`. Compiled automata have it (their
// reachable states are prefixes of some match; a counted terminal's twin
// numbers one unreachable state); a forged table without it could force
// bytes forever where no text can end (Matcher::ForcedBytes follows a
// state with one live byte until something accepts), so the loader
// requires it. Exempt states must leave on no byte (token states).
//
// Cost: a load is a fraction of a compile only if this stays near a scan
// of the table. Rows are mostly dead entries, which ForEachLiveColumn skips
// by groups; the reversed edges are built from the live entries only, and
// StatesReachingAcceptance walks them. Then no state that cannot reach
// `target` may be reachable: none is a start, and no edge leads to one
// from a state that can (a path from a start would have to take such an
// edge: exempt states have no way out).
bool AllStatesLive(const std::vector<uint32_t>& next, uint32_t columns, const std::vector<uint8_t>& target,
                   const std::vector<uint32_t>& starts, const std::vector<uint8_t>& exempt) {
  const size_t states = target.size();
  if (states <= 1) return true;
  const auto row = [&](size_t s) { return &next[s * columns]; };
  std::vector<uint32_t> begin(states + 1, 0);
  for (size_t s = 1; s < states; ++s) {
    grammar::ForEachLiveColumn(row(s), columns, [&](uint32_t, uint32_t to) { ++begin[to + 1]; });
  }
  for (size_t t = 0; t < states; ++t) begin[t + 1] += begin[t];
  std::vector<uint32_t> from(begin[states]);
  {
    std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
    for (size_t s = 1; s < states; ++s) {
      grammar::ForEachLiveColumn(row(s), columns,
                                 [&](uint32_t, uint32_t to) { from[fill[to]++] = static_cast<uint32_t>(s); });
    }
  }
  const std::vector<uint8_t> live = grammar::StatesReachingAcceptance(target, begin, from);
  if (std::all_of(live.begin() + 1, live.end(), [](uint8_t v) { return v != 0; })) return true;
  const auto allowed = [&](uint32_t t) { return t == 0 || live[t] || (!exempt.empty() && exempt[t]); };
  for (uint32_t s : starts) {
    if (s < states && !allowed(s)) return false;
  }
  for (size_t s = 1; s < states; ++s) {
    if (!live[s]) continue;
    bool ok = true;
    grammar::ForEachLiveColumn(row(s), columns, [&](uint32_t, uint32_t to) { ok = ok && allowed(to); });
    if (!ok) return false;
  }
  return true;
}

// Byte classes (byte -> class) and their count: a lexer's or the terminal
// table's.
void WriteByteClasses(const std::array<uint8_t, 256>& byte_class, uint32_t num_classes, Writer& w) {
  for (uint8_t c : byte_class) w.U8(c);
  w.U32(num_classes);
}

// Checks 1 <= count <= 256 and that every class is in range and has a byte;
// returns the bytes of each class (empty on error).
std::vector<parser::ByteSet> ReadByteClasses(Reader& r, std::array<uint8_t, 256>& byte_class,
                                             uint32_t& num_classes) {
  for (uint8_t& c : byte_class) c = r.U8("byte classes");
  num_classes = r.U32("byte class count");
  if (!r.Check(num_classes >= 1 && num_classes <= 256, "byte class count out of range")) return {};
  std::vector<parser::ByteSet> bytes_of_class(num_classes);
  for (uint32_t b = 0; b < 256; ++b) {
    if (!r.Check(byte_class[b] < num_classes, "byte class out of range")) return {};
    bytes_of_class[byte_class[b]].set(b);
  }
  for (const parser::ByteSet& bytes : bytes_of_class) {
    if (!r.Check(bytes.any(), "a byte class has no byte")) return {};
  }
  return bytes_of_class;
}

// ---------------------------------------------------------------------------
// The lexer of a lexed (Lark) grammar.

void WriteLexer(const parser::LexerTable& l, Writer& w) {
  w.Strings(l.names);
  w.Elements(l.rank);
  w.Elements(l.ignored);
  w.Elements(l.in_lexer);
  WriteByteClasses(l.byte_class, l.num_classes, w);
  w.U32(l.num_states());
  w.Elements(l.next);
  w.Elements(l.emit);
  w.Elements(l.emit_rank);
  w.Elements(l.min_accepting_rank);
  w.Elements(l.min_rank_later);
  w.Elements(l.ignored_can_continue);
  w.Elements(l.continue_bits);
}

std::shared_ptr<const parser::LexerTable> ReadLexer(Reader& r, const CompileLimits& limits) {
  auto l = std::make_shared<parser::LexerTable>();
  l->names = r.Strings("lexer token names");
  const size_t tokens = l->names.size();
  l->rank = r.Elements<uint32_t>(tokens, "lexer ranks");
  l->ignored = r.Elements<uint8_t>(tokens, "lexer ignored flags");
  l->in_lexer = r.Elements<uint8_t>(tokens, "lexer in-lexer flags");
  if (ReadByteClasses(r, l->byte_class, l->num_classes).empty()) return nullptr;
  const uint32_t states = r.U32("lexer state count");
  if (!r.Check(states >= 2, "a lexer has a dead and a start state")) return nullptr;
  if (states > limits.max_lexer_states) {
    r.Fail(absl::StrCat("lexer of ", states, " states is over max_lexer_states = ", limits.max_lexer_states));
    return nullptr;
  }
  l->next = r.Elements<uint32_t>(uint64_t{states} * l->num_classes, "lexer transitions");
  if (!r.Check(AllBelow(l->next, states), "lexer transition to a state out of range")) return nullptr;
  for (uint32_t c = 0; c < l->num_classes && r.ok(); ++c) r.Check(l->next[c] == 0, "lexer dead state has a transition");
  l->emit = r.Elements<uint32_t>(states, "lexer emits");
  for (uint32_t t : l->emit) {
    if (!r.Check(t == parser::kNoToken || t < tokens, "lexer emits a token out of range")) return nullptr;
  }
  l->emit_rank = r.Elements<uint32_t>(states, "lexer emit ranks");
  l->min_accepting_rank = r.Elements<uint32_t>(states, "lexer accepting ranks");
  l->min_rank_later = r.Elements<uint32_t>(states, "lexer later ranks");
  l->ignored_can_continue = r.Elements<uint8_t>(states, "lexer ignored-continue flags");
  l->words_per_state = static_cast<uint32_t>((tokens + 63) / 64);
  l->continue_bits = r.Elements<uint64_t>(uint64_t{states} * l->words_per_state, "lexer continue bits");
  if (!r.ok()) return nullptr;
  // Live: every state can still reach one where a terminal accepts.
  std::vector<uint8_t> accepts(states, 0);
  for (uint32_t s = 0; s < states; ++s) {
    accepts[s] = l->emit[s] != parser::kNoToken || l->min_accepting_rank[s] != parser::kNoRank;
  }
  if (!r.Check(AllStatesLive(l->next, l->num_classes, accepts, {1}, {}), "a lexer state can never end a token")) {
    return nullptr;
  }
  // No bit past the last token: ForEachToken would name a token out of range.
  if (tokens % 64 != 0) {
    const uint64_t past = ~uint64_t{0} << (tokens % 64);
    for (uint32_t s = 0; s < states; ++s) {
      const size_t last = static_cast<size_t>(s) * l->words_per_state + l->words_per_state - 1;
      if (!r.Check((l->continue_bits[last] & past) == 0, "lexer continue bit past the last token")) return nullptr;
    }
  }
  return l;
}

// ---------------------------------------------------------------------------
// The terminal table.

void WriteByteNfa(const grammar::ByteNfa& nfa, Writer& w) {
  w.U32(nfa.num_states());
  for (uint32_t s = 0; s < nfa.num_states(); ++s) {
    w.U8(nfa.accepting(s) ? 1 : 0);
    w.U32(static_cast<uint32_t>(nfa.ranges(s).size()));
    for (const grammar::ByteNfa::Range& range : nfa.ranges(s)) {
      w.U8(range.lo);
      w.U8(range.hi);
      w.U32(range.to);
    }
    w.U32(static_cast<uint32_t>(nfa.epsilons(s).size()));
    for (uint32_t to : nfa.epsilons(s)) w.U32(to);
  }
}

bool ReadByteNfa(Reader& r, grammar::ByteNfa& nfa) {
  // A state takes at least 9 bytes (flag and two counts).
  const uint32_t n = r.Count("lazy NFA states", 9);
  if (!r.Check(n >= 1, "a lazy NFA has a start state")) return false;
  for (uint32_t s = 1; s < n; ++s) nfa.AddState();
  for (uint32_t s = 0; s < n && r.ok(); ++s) {
    if (r.U8("lazy NFA accepting flag") != 0) nfa.SetAccepting(s);
    const uint32_t ranges = r.Count("lazy NFA ranges", 6);
    for (uint32_t k = 0; k < ranges && r.ok(); ++k) {
      const uint8_t lo = r.U8("lazy NFA range");
      const uint8_t hi = r.U8("lazy NFA range");
      const uint32_t to = r.U32("lazy NFA range");
      if (!r.Check(lo <= hi && to < n, "lazy NFA range out of order or to a state out of range")) return false;
      nfa.AddRange(s, lo, hi, to);
    }
    const uint32_t epsilons = r.Count("lazy NFA epsilon moves", 4);
    for (uint32_t k = 0; k < epsilons && r.ok(); ++k) {
      const uint32_t to = r.U32("lazy NFA epsilon move");
      if (!r.Check(to < n, "lazy NFA epsilon move to a state out of range")) return false;
      nfa.AddEpsilon(s, to);
    }
  }
  return r.ok();
}

// A counted terminal's unit or body: states, rows of 256, accepting flags
// (no states: no body).
void WriteCountedDfa(const grammar::ByteDfa& dfa, Writer& w) {
  w.U32(dfa.num_states());
  for (const std::array<uint32_t, 256>& row : dfa.next) {
    for (uint32_t to : row) w.U32(to);
  }
  w.Elements(dfa.accepting);
}

void WriteTerminals(const parser::TerminalTable& t, Writer& w) {
  w.Strings(t.names);
  w.Elements(t.start);
  WriteByteClasses(t.byte_class, t.num_classes, w);
  w.U32(t.eager_states());
  w.Elements(t.next);
  w.Elements(t.eager_accepting);
  w.U32(static_cast<uint32_t>(t.counted.size()));
  for (const parser::TerminalTable::CountedSegment& seg : t.counted) {
    const grammar::CountedParts& parts = seg.automaton->parts();
    w.U32(seg.base);
    w.U32(seg.twin_offset);
    w.String(parts.prefix);
    w.String(parts.suffix);
    w.U32(parts.min);
    w.U32(parts.max);
    WriteCountedDfa(parts.unit, w);
    WriteCountedDfa(parts.body, w);
  }
  w.U8(t.lazy != nullptr ? 1 : 0);
  if (t.lazy == nullptr) return;
  w.U32(t.lazy->max_states());
  WriteByteNfa(t.lazy->nfa(), w);
  w.Array(t.lazy->nfa_starts());
}

// WriteCountedDfa's form, checked: transitions in range, a start state,
// every state live; false on error.
bool ReadCountedDfa(Reader& r, const std::string& what, bool may_be_absent, grammar::ByteDfa& dfa) {
  const std::string where = "counted terminal " + what;
  const uint32_t states = r.Count(where + " states", 256 * 4 + 1);
  if (!r.ok()) return false;
  if (states == 0 && may_be_absent) return true;
  for (uint32_t s = 0; s < states && r.ok(); ++s) {
    std::array<uint32_t, 256>& row = dfa.next.emplace_back();
    for (uint32_t& to : row) {
      to = r.U32(where + " row");
      if (!r.Check(to < states, where + " transition out of range")) return false;
    }
  }
  dfa.accepting = r.Elements<uint8_t>(states, where + " accepting flags");
  if (!r.ok() || !r.Check(states >= 2, where + " without a start state")) return false;
  std::vector<uint32_t> rows;
  rows.reserve(static_cast<size_t>(states) * 256);
  for (const std::array<uint32_t, 256>& row : dfa.next) rows.insert(rows.end(), row.begin(), row.end());
  return r.Check(AllStatesLive(rows, 256, dfa.accepting, {1}, {}), "a " + where + " state is dead");
}

// A counted terminal's parts and its place in the table; false on error.
bool ReadCountedSegment(Reader& r, uint32_t eager_states, uint64_t expected_base,
                        parser::TerminalTable::CountedSegment& seg) {
  seg.base = r.U32("counted terminal base");
  seg.twin_offset = r.U32("counted terminal twin");
  grammar::CountedParts parts;
  parts.prefix = r.String("counted terminal prefix");
  parts.suffix = r.String("counted terminal suffix");
  parts.min = r.U32("counted terminal bounds");
  parts.max = r.U32("counted terminal bounds");
  if (!ReadCountedDfa(r, "unit", /*may_be_absent=*/false, parts.unit) ||
      !ReadCountedDfa(r, "body", /*may_be_absent=*/true, parts.body)) {
    return false;
  }
  if (!r.Check(seg.base == expected_base, "counted terminals not numbered after the eager states")) return false;
  absl::StatusOr<grammar::CountedAutomaton> automaton = grammar::CountedAutomaton::Build(std::move(parts));
  if (!automaton.ok()) return r.Fail(std::string(automaton.status().message()));
  // The twin's states k >= 1 are eager states twin_offset + k
  // (CountedAutomaton::TwinDfa, counted here rather than built).
  const uint64_t twin_states = automaton->twin_states();
  if (!r.Check(seg.twin_offset < eager_states && uint64_t{seg.twin_offset} + twin_states <= eager_states,
               "counted terminal twin out of the eager states")) {
    return false;
  }
  seg.automaton = std::make_shared<const grammar::CountedAutomaton>(*std::move(automaton));
  return true;
}

bool ReadTerminals(Reader& r, const CompileLimits& limits, parser::TerminalTable& t) {
  t.names = r.Strings("terminal names");
  t.start = r.Elements<uint32_t>(t.names.size(), "terminal starts");
  // Every class has a byte: the lazy automaton's representatives.
  const std::vector<parser::ByteSet> bytes_of_class = ReadByteClasses(r, t.byte_class, t.num_classes);
  if (bytes_of_class.empty()) return false;
  const uint32_t eager = r.U32("eager state count");
  if (!r.Check(eager >= 1, "no dead state")) return false;
  if (eager > limits.max_dfa_states) {
    return r.Fail(absl::StrCat(eager, " eager states are over max_dfa_states = ", limits.max_dfa_states));
  }
  t.next = r.Elements<uint32_t>(uint64_t{eager} * t.num_classes, "eager transitions");
  t.eager_accepting = r.Elements<uint8_t>(eager, "eager accepting flags");
  if (!r.ok()) return false;
  if (!r.Check(AllBelow(t.next, eager), "eager transition to a state out of range")) return false;
  // Derived, not stored: live bytes and has_next from the rows.
  t.eager_has_next.assign(eager, 0);
  t.eager_live_bytes.assign(eager, parser::ByteSet());
  for (uint32_t s = 0; s < eager; ++s) {
    grammar::ForEachLiveColumn(&t.next[static_cast<size_t>(s) * t.num_classes], t.num_classes,
                               [&](uint32_t c, uint32_t) { t.eager_live_bytes[s] |= bytes_of_class[c]; });
    t.eager_has_next[s] = t.eager_live_bytes[s].any();
    t.eager_accepting[s] = t.eager_accepting[s] != 0;
  }
  if (!r.Check(!t.eager_has_next[0] && !t.eager_accepting[0], "the dead state is live")) return false;

  const uint32_t counted = r.Count("counted terminals", 28);
  uint64_t numbered = eager;
  for (uint32_t k = 0; k < counted; ++k) {
    parser::TerminalTable::CountedSegment& seg = t.counted.emplace_back();
    if (!ReadCountedSegment(r, eager, numbered, seg)) return false;
    numbered += seg.automaton->num_states();
    if (!r.Check(numbered < parser::TerminalTable::kOverflow / 2, "counted terminals need too many states")) {
      return false;
    }
  }
  if (counted > 0) t.counted_end = static_cast<uint32_t>(numbered);

  const uint8_t lazy = r.U8("lazy flag");
  if (!r.Check(lazy <= 1, "lazy flag")) return false;
  if (lazy == 1) {
    const uint32_t first_lazy = static_cast<uint32_t>(numbered);
    uint32_t max_states = r.U32("lazy state budget");
    grammar::ByteNfa nfa;
    if (!ReadByteNfa(r, nfa)) return false;
    const std::vector<uint32_t> starts = r.Array<uint32_t>("lazy starts");
    if (!r.ok()) return false;
    if (!r.Check(AllBelow(starts, nfa.num_states()), "lazy start out of the NFA")) return false;
    // The budget as the compile set it, within this load's limits.
    if (limits.max_dfa_states > eager) max_states = std::min(max_states, limits.max_dfa_states - eager);
    else max_states = 0;
    max_states = std::min<uint32_t>(max_states, grammar::LazyDfa::RoomFrom(first_lazy));
    if (max_states < starts.size()) {
      return r.Fail(absl::StrCat("lazy terminals do not fit max_dfa_states = ", limits.max_dfa_states));
    }
    t.lazy = std::make_shared<const grammar::LazyDfa>(nfa, starts, t.ClassRepresentatives(), first_lazy,
                                                      max_states);
  }
  // Starts: any state that exists now (a lazy one among those the lazy
  // automaton made for its starts).
  const uint64_t states = t.num_states();
  return r.Check(AllBelow(t.start, states), "terminal start out of range");
}

// ---------------------------------------------------------------------------
// The grammar.

void WriteFlatGrammar(const parser::FlatGrammar& g, Writer& w) {
  w.Strings(g.nt_names);
  w.U32(g.start_nt);
  w.U32(g.num_productions());
  for (uint32_t p = 0; p < g.num_productions(); ++p) {
    const uint32_t begin = g.production_begin[p];
    uint32_t end = begin;
    while (!parser::IsEnd(g.rhs[end])) ++end;
    w.U32(g.dot_lhs[begin]);
    w.U32(end - begin);
    for (uint32_t d = begin; d < end; ++d) w.U32(g.rhs[d]);
  }
  w.U8(g.lexed() ? 1 : 0);
  if (g.lexed()) WriteLexer(*g.lexer, w);
  WriteTerminals(g.terminals, w);
  w.U32(g.token_state_begin);
  w.U32(g.token_state_end);
  w.U32(static_cast<uint32_t>(g.token_terminals.size()));
  for (const parser::TokenTerminal& tt : g.token_terminals) {
    w.U32(static_cast<uint32_t>(tt.ids.size()));
    for (const grammar::CodepointRange& range : tt.ids) {
      w.U32(range.lo);
      w.U32(range.hi);
    }
    w.Strings(tt.names);
    w.U8((tt.exclude ? 1 : 0) | (tt.clip ? 2 : 0));  // bit 1: clipped ranges (llguidance)
    w.String(tt.where);
    w.String(tt.name);
  }
}

bool ReadTokenTerminals(Reader& r, parser::FlatGrammar& g) {
  g.token_state_begin = r.U32("token state range");
  g.token_state_end = r.U32("token state range");
  const uint32_t count = r.Count("token terminals", 17);
  for (uint32_t k = 0; k < count && r.ok(); ++k) {
    parser::TokenTerminal& tt = g.token_terminals.emplace_back();
    const uint32_t ranges = r.Count("token id ranges", 8);
    for (uint32_t i = 0; i < ranges && r.ok(); ++i) {
      grammar::CodepointRange range;
      range.lo = r.U32("token id range");
      range.hi = r.U32("token id range");
      // Sorted and merged, ids below 2^31 (TokenId).
      const bool after = tt.ids.empty() || uint64_t{tt.ids.back().hi} + 1 < range.lo;
      if (!r.Check(range.lo <= range.hi && range.hi < (uint32_t{1} << 31) && after,
                   "token id ranges not sorted or out of range")) {
        return false;
      }
      tt.ids.push_back(range);
    }
    tt.names = r.Strings("token names");
    const uint8_t exclude = r.U8("token exclude flag");
    if (!r.Check(exclude <= 3, "token exclude flag")) return false;
    tt.exclude = (exclude & 1) != 0;
    tt.clip = (exclude & 2) != 0;
    tt.where = r.String("token terminal place");
    tt.name = r.String("token terminal name");
  }
  if (!r.ok()) return false;
  if (g.token_terminals.empty()) {
    return r.Check(g.token_state_begin == 0 && g.token_state_end == 0, "token states without token terminals");
  }
  // One token state per token terminal, then the hold state: eager states
  // no byte leaves and that do not accept.
  const parser::TerminalTable& t = g.terminals;
  if (!r.Check(g.token_state_begin >= 1 &&
                   uint64_t{g.token_state_end} == uint64_t{g.token_state_begin} + g.token_terminals.size() + 1 &&
                   g.token_state_end <= t.eager_states(),
               "token states out of range")) {
    return false;
  }
  for (uint32_t s = g.token_state_begin; s < g.token_state_end; ++s) {
    if (!r.Check(!t.eager_has_next[s] && !t.eager_accepting[s], "a token state reads bytes")) return false;
  }
  return true;
}

absl::Status ReadFlatGrammar(Reader& r, const CompileLimits& limits, parser::FlatGrammar& g) {
  g.nt_names = r.Strings("nonterminal names");
  g.start_nt = r.U32("start nonterminal");
  const uint32_t count = r.Count("productions", 8, limits.max_productions);
  std::vector<parser::FlatProduction> productions(count);
  uint64_t symbols = 0;
  for (parser::FlatProduction& p : productions) {
    p.lhs = r.U32("production lhs");
    p.rhs = r.Array<uint32_t>("production symbols");
    symbols += p.rhs.size() + 1;
    if (!r.ok()) break;
  }
  if (!r.ok()) return r.status();
  if (symbols > limits.max_rhs_symbols) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "compiled grammar: ", symbols, " symbols are over max_rhs_symbols = ", limits.max_rhs_symbols));
  }
  const uint8_t lexed = r.U8("lexed flag");
  r.Check(lexed <= 1, "lexed flag");
  if (lexed == 1) g.lexer = ReadLexer(r, limits);
  if (r.ok()) ReadTerminals(r, limits, g.terminals);
  if (r.ok()) ReadTokenTerminals(r, g);
  if (!r.ok()) return r.status();
  // Every eager state a terminal reaches, but the token states (which
  // leave on no byte by design), can still reach acceptance.
  {
    const parser::TerminalTable& t = g.terminals;
    std::vector<uint8_t> token_state(t.eager_states(), 0);
    for (uint32_t s = g.token_state_begin; s < g.token_state_end; ++s) token_state[s] = 1;
    if (!AllStatesLive(t.next, t.num_classes, t.eager_accepting, t.start, token_state)) {
      return absl::DataLossError("compiled grammar: corrupt: an eager terminal state can never accept");
    }
  }
  // Terminal symbols name a terminal of the table, or a token of the lexer.
  // A byte-level terminal starts in a state that is neither dead nor
  // accepting, as in a compile (which never lowers a terminal that matches
  // no non-empty text): else a production would look productive and be
  // unproductive. (A lexer token a compile keeps may be one the lexer never
  // emits, shadowed by another; Matcher::ForcedBytes' bound covers forged
  // lexers.)
  const uint64_t terminals = g.lexed() ? g.lexer->names.size() : g.terminals.start.size();
  for (const parser::FlatProduction& p : productions) {
    for (parser::Symbol s : p.rhs) {
      if (!parser::IsTerminal(s)) continue;
      const uint32_t k = parser::Payload(s);
      if (k >= terminals) {
        return absl::DataLossError("compiled grammar: corrupt: a production names a terminal out of range");
      }
      if (!g.lexed() && (g.terminals.start[k] == 0 || g.terminals.accepting(g.terminals.start[k]))) {
        return absl::DataLossError(
            "compiled grammar: corrupt: a production names a terminal that matches no non-empty text");
      }
    }
  }
  if (absl::Status st = parser::LayOutProductions(productions, std::string("compiled grammar"), limits, g); !st.ok()) {
    if (absl::IsInvalidArgument(st)) return absl::DataLossError(absl::StrCat("corrupt: ", st.message()));
    return st;
  }
  // A well-formed form lays out to exactly its own productions (it lists
  // only productive and reachable ones): fewer means it was tampered with.
  if (g.num_productions() != count) {
    return absl::DataLossError("compiled grammar: corrupt: productions that are not productive or reachable");
  }
  return absl::OkStatus();
}

constexpr uint32_t kFlagRuleAttributes = 1;

void WriteRuleAttributes(const parser::FlatGrammar& g, Writer& w) {
  w.Strings(g.capture_names);
  std::vector<uint32_t> nts;
  for (uint32_t nt = 0; nt < g.num_nonterminals(); ++nt) {
    if (g.observed(nt)) nts.push_back(nt);
  }
  w.U32(static_cast<uint32_t>(nts.size()));
  for (uint32_t nt : nts) {
    w.U32(nt);
    w.U32(g.CaptureOf(nt));
    const float t = g.TemperatureOf(nt);
    uint32_t bits;
    std::memcpy(&bits, &t, 4);
    w.U32(bits);
  }
}

bool ReadRuleAttributes(Reader& r, parser::FlatGrammar& g) {
  g.capture_names = r.Strings("capture names");
  const uint32_t count = r.Count("rule attributes", 12);
  for (uint32_t k = 0; k < count && r.ok(); ++k) {
    const uint32_t nt = r.U32("rule attribute nonterminal");
    const uint32_t capture = r.U32("rule attribute capture");
    const uint32_t bits = r.U32("rule attribute temperature");
    float t;
    std::memcpy(&t, &bits, 4);
    if (!r.Check(nt < g.num_nonterminals() && capture <= g.capture_names.size() && std::isfinite(t),
                 "rule attribute out of range")) {
      return false;
    }
    if (capture != 0) {
      g.nt_capture.resize(g.num_nonterminals(), 0);
      g.nt_capture[nt] = capture;
    }
    if (t >= 0.0f) {
      g.nt_temperature.resize(g.num_nonterminals(), -1.0f);
      g.nt_temperature[nt] = t;
    }
  }
  if (!r.ok()) return false;
  return r.Check(g.capture_names.empty() == g.nt_capture.empty(), "capture names without captured rules");
}

constexpr uint32_t kFlagIndenter = 2;
constexpr uint32_t kFlagLexerKills = 4;

// Lookahead killers of a lexed grammar (parser/lexer.h: kill_rank, kill_later).
void WriteKills(const parser::LexerTable& l, Writer& w) {
  w.Elements(l.kill_rank);
  w.Elements(l.kill_later);
}

bool ReadKills(Reader& r, parser::FlatGrammar& g) {
  if (!r.Check(g.lexed(), "lookahead killers without a lexer")) return false;
  auto lexer = std::make_shared<parser::LexerTable>(*g.lexer);
  const uint32_t states = lexer->num_states();
  lexer->kill_rank = r.Elements<uint32_t>(states, "lexer kill ranks");
  lexer->kill_later = r.Elements<uint32_t>(states, "lexer kill-later ranks");
  if (!r.ok()) return false;
  g.lexer = std::move(lexer);
  return true;
}

// Lark's Indenter of a lexed grammar (parser/indenter.h).
void WriteIndenter(const parser::IndenterTable& t, Writer& w) {
  w.U32(t.nl);
  w.U32(t.indent);
  w.U32(t.dedent);
  w.U32(t.tab_len);
  w.Elements(t.bracket);
}

bool ReadIndenter(Reader& r, parser::FlatGrammar& g) {
  if (!r.Check(g.lexed(), "an indenter without a lexer")) return false;
  auto lexer = std::make_shared<parser::LexerTable>(*g.lexer);
  parser::IndenterTable& t = lexer->indenter;
  const uint32_t tokens = static_cast<uint32_t>(lexer->names.size());
  t.nl = r.U32("indenter newline");
  t.indent = r.U32("indenter indent");
  t.dedent = r.U32("indenter dedent");
  t.tab_len = r.U32("indenter tab length");
  t.bracket = r.Elements<int8_t>(tokens, "indenter brackets");
  if (!r.ok()) return false;
  auto produced = [&](uint32_t token) {
    return token == parser::kNoIndentToken || (token < tokens && !lexer->in_lexer[token]);
  };
  if (!r.Check(t.nl < tokens && lexer->in_lexer[t.nl] && produced(t.indent) && produced(t.dedent) &&
                   t.tab_len > 0 && t.bracket.size() == tokens,
               "indenter tokens out of range")) {
    return false;
  }
  for (int8_t b : t.bracket) {
    if (!r.Check(b >= -1 && b <= 1, "indenter bracket flag")) return false;
  }
  g.lexer = std::move(lexer);
  return true;
}

absl::StatusOr<std::shared_ptr<const internal::CompiledGrammarData>> ReadPayload(std::string_view payload,
                                                                                const CompileLimits& limits,
                                                                                uint32_t flags) {
  Reader r(payload, kHeaderBytes);
  auto data = std::make_shared<internal::CompiledGrammarData>();
  data->ir_rules = r.U64("rule count");
  data->warnings = r.Strings("warnings");
  if (!r.ok()) return r.status();
  if (absl::Status st = ReadFlatGrammar(r, limits, data->flat); !st.ok()) return st;
  if ((flags & kFlagRuleAttributes) != 0 && !ReadRuleAttributes(r, data->flat)) return r.status();
  if ((flags & kFlagIndenter) != 0 && !ReadIndenter(r, data->flat)) return r.status();
  if ((flags & kFlagLexerKills) != 0 && !ReadKills(r, data->flat)) return r.status();
  if (r.remaining() != 0) {
    r.Fail(absl::StrCat(r.remaining(), " bytes after the grammar"));
    return r.status();
  }
  return std::shared_ptr<const internal::CompiledGrammarData>(std::move(data));
}

uint64_t ReadU64At(std::string_view bytes, size_t at) {
  uint64_t v;
  std::memcpy(&v, bytes.data() + at, 8);
  return v;
}

}  // namespace

std::string CompiledGrammar::Serialize() const {
  Writer payload;
  const internal::CompiledGrammarData& data = grammar_.data();
  payload.U64(data.ir_rules);
  payload.Strings(data.warnings);
  WriteFlatGrammar(data.flat, payload);
  const bool attributes = data.flat.has_captures() || data.flat.has_temperatures();
  if (attributes) WriteRuleAttributes(data.flat, payload);
  const bool indenter = data.flat.lexed() && data.flat.lexer->indenter.on();
  if (indenter) WriteIndenter(data.flat.lexer->indenter, payload);
  const bool kills = data.flat.lexed() && !data.flat.lexer->kill_rank.empty();
  if (kills) WriteKills(*data.flat.lexer, payload);
  Writer out;
  out.out().append(kMagic, sizeof kMagic);
  out.U32(kSerialFormatVersion);
  out.U32((attributes ? kFlagRuleAttributes : 0) | (indenter ? kFlagIndenter : 0) | (kills ? kFlagLexerKills : 0));
  out.U64(vocabulary_.fingerprint());
  out.U64(payload.out().size());
  out.U64(grammar::XxHash64(payload.out()));
  out.out().append(payload.out());
  return std::move(out.out());
}

absl::StatusOr<CompiledGrammar> CompiledGrammar::Deserialize(std::string_view bytes, const Vocabulary& vocabulary,
                                                             const CompileLimits& limits) {
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return absl::InvalidArgumentError("not a zapgram compiled grammar (bad magic bytes)");
  }
  if (bytes.size() < kHeaderBytes) {
    return absl::DataLossError(
        absl::StrFormat("compiled grammar: truncated header (%d of %d bytes)", bytes.size(), kHeaderBytes));
  }
  uint32_t version, flags;
  std::memcpy(&version, bytes.data() + 8, 4);
  std::memcpy(&flags, bytes.data() + 12, 4);
  if (version != kSerialFormatVersion) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "compiled grammar: format version %d, this build reads version %d (compile the grammar again)", version,
        kSerialFormatVersion));
  }
  if ((flags & ~(kFlagRuleAttributes | kFlagIndenter | kFlagLexerKills)) != 0) return absl::DataLossError(absl::StrFormat("compiled grammar: corrupt at byte 12: flags %d", flags));
  const uint64_t fingerprint = ReadU64At(bytes, 16);
  if (fingerprint != vocabulary.fingerprint()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "compiled grammar: compiled for another vocabulary (fingerprint %016x, this vocabulary %016x, %s)",
        fingerprint, vocabulary.fingerprint(), vocabulary.impl()->source_name()));
  }
  const uint64_t length = ReadU64At(bytes, 24);
  if (length != bytes.size() - kHeaderBytes) {
    return absl::DataLossError(absl::StrFormat(
        "compiled grammar: the header promises %d payload bytes, %d follow (truncated?)", length,
        bytes.size() - kHeaderBytes));
  }
  const std::string_view payload = bytes.substr(kHeaderBytes);
  if (ReadU64At(bytes, 32) != grammar::XxHash64(payload)) {
    return absl::DataLossError("compiled grammar: checksum mismatch (corrupt payload)");
  }
  absl::StatusOr<std::shared_ptr<const internal::CompiledGrammarData>> data = ReadPayload(payload, limits, flags);
  if (!data.ok()) return data.status();
  // Token ids within this vocabulary before CompiledGrammar::Compile lists
  // them (its own check names ids past padded_size after expanding ranges).
  for (const parser::TokenTerminal& tt : (*data)->flat.token_terminals) {
    if (!tt.ids.empty() && tt.ids.back().hi >= static_cast<uint32_t>(vocabulary.padded_size())) {
      return absl::DataLossError(absl::StrCat("compiled grammar: corrupt: ", tt.name, " names an id past the vocabulary"));
    }
  }
  return Compile(Grammar(*std::move(data)), vocabulary);
}

}  // namespace zapgram
