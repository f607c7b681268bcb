// zapgram public API: compiled grammars and byte-level recognition.
//
// A grammar argument (`spec`) is one of
//   PATH.gbnf | PATH.ebnf   GBNF / XGrammar EBNF text
//   builtin:NAME            a bundled grammar (builtin:json = RFC 8259 JSON)
//   PATH.lark               a Lark grammar (lexed), or in llguidance's dialect
//                           when it uses that dialect's syntax (byte level;
//                           docs/llguidance-lark.md)
//   llguidance:PATH.lark    a Lark grammar in llguidance's dialect, always
//   regex:PATTERN           texts matching PATTERN as a whole (Python `re` syntax)
//   schema:PATH             JSON texts valid under the JSON Schema in PATH
//                           (docs/json-schema.md; SchemaOptions below)
//   structural:PATH         free text with tool calls: the structural tags in PATH
//                           (JSON; docs/structural_tags.md)
// Relative paths are resolved against `data_root` when given.
//
// zapgram::Grammar is immutable after Load and safe to share across threads
// (copies share one compiled form). A Recognizer is per input sequence.
#ifndef ZAPGRAM_GRAMMAR_H_
#define ZAPGRAM_GRAMMAR_H_

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "zapgram/export.h"
#include "zapgram/limits.h"

namespace zapgram {

namespace internal {
struct CompiledGrammarData;
struct RecognizerState;
}  // namespace internal

struct GrammarStats {
  size_t rules = 0;          // rules as read
  size_t nonterminals = 0;   // after lowering
  size_t productions = 0;
  size_t rhs_symbols = 0;
  size_t terminals = 0;
  size_t terminal_states = 0;
};

// Where a Grammar's load spent its time (wall clock, ms): reading the text
// to IR (a JSON Schema's conversion included), the normalizing transforms,
// the merge of regular parts into regex terminals, and the lowering to the
// parser's tables (terminal automata included).
struct CompileTimes {
  double read_ms = 0;
  double normalize_ms = 0;
  double merge_ms = 0;
  double lower_ms = 0;
};

// What a schema grammar is for.
enum class SchemaPurpose {
  // Generation (the default; masks, sampling, bench): canonical JSON with
  // bounded whitespace (compact / max_whitespace below), members in
  // `properties` order unless any_order, canonical string spellings under
  // pattern/format/enum and in keys. A model cannot loop on whitespace, and
  // what it writes parses back as the same value.
  kGeneration,
  // Validation (`zapgram parse`): the JSON texts valid under the schema as
  // RFC 8259 reads them: any whitespace wherever RFC 8259 allows it (before
  // and after the value too), members in any order wherever the any-order
  // grammar keeps every constraint (else the schema's order), every escape
  // spelling of a string. compact, max_whitespace and any_order are not used.
  kValidation,
};

// How `schema:PATH` becomes a grammar (docs/json-schema.md).
struct SchemaOptions {
  SchemaPurpose purpose = SchemaPurpose::kGeneration;
  // Keywords a context-free grammar cannot enforce (uniqueItems, contains,
  // if/then/else, dependent*, unevaluated*, complex `not`, ...): false = Load
  // fails with "unsupported: <keyword> at <pointer>"; true = they are dropped
  // (the grammar then accepts more than the schema) and Grammar::warnings()
  // lists each with its JSON pointer.
  bool lenient = false;
  // Generation only: no whitespace between JSON tokens, or at most
  // max_whitespace bytes.
  bool compact = false;
  uint32_t max_whitespace = 2;
  // Generation only: object members in any order (default: the schema's
  // `properties` order).
  bool any_order = false;
};

// Lark's Indenter post-lexer (docs/lark-lexing.md, "Indentation"): the
// newline token drives a stack of indentation levels; the indenter emits
// the indent token when a line is indented deeper, one dedent token per
// level left when it is indented less (a line between two levels is an
// error), nothing inside brackets (where the newline token itself is
// dropped), and the remaining dedents at the end of the input. Python
// grammars (SynCode's python.lark, Lark's python.lark) need it.
struct IndenterOptions {
  enum class Mode : uint8_t {
    // On for a Lark grammar that %declares `indent_type` and `dedent_type`
    // and uses a newline token (`nl_type`, or _NL / _NEWLINE when empty).
    kAuto,
    kOn,   // required: a grammar that lacks one of the tokens is an error
    kOff,  // never: %declare'd tokens used by a rule are an error
  };
  Mode mode = Mode::kAuto;
  std::string nl_type;  // empty: _NL, else _NEWLINE (SynCode's and Lark's names)
  std::string indent_type = "_INDENT";
  std::string dedent_type = "_DEDENT";
  // Token names as Lark gives them (an anonymous "(" is LPAR); names the
  // grammar does not have are skipped.
  std::vector<std::string> open_paren_types = {"LPAR", "LSQB", "LBRACE"};
  std::vector<std::string> close_paren_types = {"RPAR", "RSQB", "RBRACE"};
  uint32_t tab_len = 8;  // Lark's PythonIndenter: a tab counts 8 columns
};

struct LoadOptions {
  CompileLimits limits;
  SchemaOptions schema;
  // The lazy tier: large regular parts of the grammar (a JSON Schema
  // object whose members are all regular, say) become terminals that are
  // determinized as the input visits them, not at compile time. Every
  // mask stays exact. It trades compile time for mask time: on every 25th
  // schema of MaskBench's every 5th record (Llama 3, instructions counted)
  // compiles take a quarter less (first-mask p90 and p99 a quarter to a
  // third less) and masks a tenth more (their token sets are built over
  // states made on demand); compile and masks together take 3% less. On
  // by default; false compiles every terminal ahead of time.
  bool lazy_terminals = true;
  // Lark grammars: the Indenter post-lexer (auto-detected by default).
  IndenterOptions indenter;
};

// The kinds of grammar text Grammar::FromText reads (no file involved).
enum class GrammarFormat {
  kGbnf,        // GBNF / XGrammar EBNF, as in a .gbnf file
  kLark,        // Lark, as in a .lark file; only `%import common` resolves
                // (llguidance's dialect when the text uses its syntax)
  kLlguidanceLark,  // llguidance's Lark dialect (docs/llguidance-lark.md), always
  kRegex,       // a pattern the whole text must match, as after regex:
  kJsonSchema,  // JSON Schema text (draft 2020-12 unless it says `$schema`),
                // read with options.schema, as in a schema:PATH file
  kStructuralTags,  // structural tags (JSON: tags of begin, schema or grammar, end, plus
                    // triggers; or a ready-made format and tools), as in a
                    // structural:PATH file. Free text outside the tags, exactly
                    // the body inside. docs/structural_tags.md
};

struct SharedRegexCacheStats {
  uint64_t hits = 0, misses = 0, entries = 0, bytes = 0, evictions = 0;
};

class ZAPGRAM_EXPORT Grammar {
 public:
  static absl::StatusOr<Grammar> Load(std::string_view spec, std::string_view data_root,
                                      const LoadOptions& options);
  static absl::StatusOr<Grammar> Load(std::string_view spec, std::string_view data_root = {},
                                      const CompileLimits& limits = {});
  // GBNF text; `source_name` prefixes error messages.
  static absl::StatusOr<Grammar> FromGbnf(std::string_view text,
                                          std::string_view source_name = "<text>",
                                          const CompileLimits& limits = {});

  // Grammar text given in memory (a server's request carries its schema or
  // grammar). `source_name` prefixes error messages ("<text>:LINE:COL: ...").
  static absl::StatusOr<Grammar> FromText(GrammarFormat format, std::string_view text,
                                          const LoadOptions& options = {},
                                          std::string_view source_name = "<text>");

  // The process-wide store of determinized regex DFAs that every load
  // consults before it determinizes a terminal, and fills (a new JSON
  // Schema then pays only for the patterns no earlier grammar had): its
  // byte budget, 16 MiB by default, least recently used out first; 0
  // empties it and turns it off. Thread-safe. Grammars compile to the same
  // tables either way.
  static void SetSharedRegexCacheBytes(size_t bytes);
  static SharedRegexCacheStats GetSharedRegexCacheStats();

  GrammarStats stats() const;
  // What loading dropped or approximated, one line each: lenient schema
  // keywords ("dropped <keyword> at <pointer>: <why>"), Lark terminals that
  // can never match ("SOURCE:LINE:COL: terminal NAME /.../ can never match
  // (<assertion>): compiled to the empty language", as Lark compiles them).
  // Empty otherwise.
  const std::vector<std::string>& warnings() const;
  const CompileTimes& compile_times() const;
  const internal::CompiledGrammarData& data() const { return *data_; }
  const std::shared_ptr<const internal::CompiledGrammarData>& shared_data() const { return data_; }

 private:
  explicit Grammar(std::shared_ptr<const internal::CompiledGrammarData> data)
      : data_(std::move(data)) {}
  friend class CompiledGrammar;  // Deserialize wraps the data it reads
  std::shared_ptr<const internal::CompiledGrammarData> data_;
};

// RecognizerOptions::transition_memo_bytes at work: steps read from the
// memo, full steps taken, states held, times the budget emptied it, bytes
// held, full steps into states too deep to keep (more than 256 live items).
struct RecognizerMemoStats {
  uint64_t hits = 0, misses = 0, states = 0, clears = 0, bytes = 0, detached = 0;
};

class ZAPGRAM_EXPORT Recognizer {
 public:
  explicit Recognizer(const Grammar& grammar, const RecognizerOptions& options = {});
  ~Recognizer();
  Recognizer(Recognizer&&) noexcept;
  Recognizer& operator=(Recognizer&&) noexcept;

  // true: byte accepted. false: rejected (state unchanged) or a budget ran out
  // (status() is then not ok). Bytes are text: a token-level construct
  // (XGrammar's Token / ExcludeToken / TokenTagDispatch) never matches them;
  // grammars with those need a vocabulary and a Matcher.
  bool Feed(uint8_t byte);
  size_t FeedBytes(std::string_view bytes);  // bytes accepted before the first rejection
  bool Rollback(size_t n);
  void Reset();

  bool IsAccepting() const;
  bool CanContinue() const;
  std::bitset<256> NextBytes() const;
  size_t Position() const;
  size_t RetainedItems() const;
  // The most item attempts one byte has taken so far (the unit of
  // ParserLimits::max_work_per_set), for sizing that budget.
  uint64_t PeakWorkPerSet() const;
  absl::Status status() const;
  // All zero without a transition memo.
  RecognizerMemoStats memo_stats() const;

 private:
  Grammar grammar_;
  std::unique_ptr<internal::RecognizerState> state_;
};

}  // namespace zapgram

#endif  // ZAPGRAM_GRAMMAR_H_
