// The public Grammar and Recognizer: thin wrappers over the readers, the
// regular-terminal merge (transforms/regular_terminals.h), the lowering
// (parser/flat_grammar.h) and the pruned recognizer (pruning/compact.h).
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_cat.h"
#include "api/grammar_data.h"
#include "grammar/builtin.h"
#include "grammar/gbnf_reader.h"
#include "grammar/lark_lowering.h"
#include "grammar/shared_regex_dfas.h"
#include "pruning/compact.h"
#include "transforms/json_schema.h"
#include "transforms/llguidance_json.h"
#include "transforms/pipeline.h"
#include "transforms/regular_terminals.h"
#include "zapgram/grammar.h"

namespace zapgram {

namespace internal {

absl::StatusOr<grammar::Grammar> ReadSchemaText(std::string_view text, std::string_view source_name,
                                                const SchemaOptions& schema, bool draft7,
                                                std::vector<std::string>* warnings,
                                                const CompileLimits& limits) {
  transforms::JsonSchemaOptions options;
  if (schema.purpose == SchemaPurpose::kValidation) {
    options = transforms::ValidationSchemaOptions(schema.lenient);
  } else {
    options.lenient = schema.lenient;
    options.compact = schema.compact;
    options.max_whitespace = schema.max_whitespace;
    options.member_order =
        schema.any_order ? transforms::MemberOrder::kAny : transforms::MemberOrder::kSchema;
  }
  if (draft7) options.draft = transforms::JsonSchemaDraft::kDraft7;
  options.max_grammar_bytes = limits.max_grammar_bytes;
  absl::StatusOr<transforms::JsonSchemaGrammar> converted =
      transforms::JsonSchemaToGrammar(text, source_name, options);
  if (!converted.ok()) return converted.status();
  if (warnings != nullptr) {
    for (const transforms::JsonSchemaWarning& w : converted->warnings) {
      warnings->push_back(absl::StrFormat("%s %s at %s: %s", w.dropped ? "dropped" : "ignored",
                                          w.keyword, w.pointer, w.message));
    }
  }
  return std::move(converted->grammar);
}

namespace {

// The text of the file at `path_text` (relative to `data_root`), or an error
// naming what it was to be.
absl::StatusOr<std::string> ReadSpecFile(std::string_view path_text, std::string_view data_root,
                                         std::string_view what, std::string* resolved) {
  std::filesystem::path path{std::string(path_text)};
  if (path.is_relative() && !data_root.empty()) {
    path = std::filesystem::path(std::string(data_root)) / path;
  }
  *resolved = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", absl::string_view(what.data(), what.size()),
                                            " file '", path.string(), "'"));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// schema:PATH. A schema without `$schema` is read as draft 2020-12, except
// under a folder named draft7 or draft-07 (the JSON-Schema-Test-Suite's layout).
absl::StatusOr<grammar::Grammar> ReadSchemaSpec(std::string_view path_text,
                                                std::string_view data_root,
                                                const SchemaOptions& schema,
                                                std::vector<std::string>* warnings,
                                                const CompileLimits& limits) {
  std::string resolved;
  absl::StatusOr<std::string> text = ReadSpecFile(path_text, data_root, "schema", &resolved);
  if (!text.ok()) return text.status();
  bool draft7 = false;
  for (const std::filesystem::path& part : std::filesystem::path(resolved)) {
    draft7 = draft7 || part == "draft7" || part == "draft-07";
  }
  return ReadSchemaText(*text, resolved, schema, draft7, warnings, limits);
}

// Lowering options of a Lark grammar: llguidance's %json compiles through
// transforms/llguidance_json.h within the compile budget.
grammar::LarkLoweringOptions LarkLowering(const CompileLimits& limits) {
  grammar::LarkLoweringOptions options;
  const size_t max_grammar_bytes = limits.max_grammar_bytes;
  options.json_schema = [max_grammar_bytes](std::string_view schema, std::string_view where) {
    transforms::JsonSchemaOptions base;
    base.max_grammar_bytes = max_grammar_bytes;
    return transforms::LlguidanceJsonSchema(schema, where, base);
  };
  return options;
}

// regex:PATTERN: the whole text must match the pattern (Python `re`
// conventions, see grammar/regex_compiler.h); syntax errors surface when
// compiling, at column `column` of the source.
grammar::Grammar RegexGrammar(std::string_view pattern, std::string_view source_name,
                              uint32_t column) {
  grammar::Grammar g;
  g.source_name = std::string(source_name);
  g.rules.push_back({"root", 0, {1, 1}});
  g.rules[0].body = g.AddRegex(std::string(pattern), 0, {1, column});
  return g;
}

}  // namespace

absl::StatusOr<grammar::Grammar> ReadGrammarSpec(std::string_view spec,
                                                 std::string_view data_root) {
  return ReadGrammarSpec(spec, data_root, SchemaOptions{}, nullptr);
}

absl::StatusOr<grammar::Grammar> ReadGrammarSpec(std::string_view spec, std::string_view data_root,
                                                 const SchemaOptions& schema,
                                                 std::vector<std::string>* warnings,
                                                 const CompileLimits& limits,
                                                 const IndenterOptions& indenter) {
  if (spec.starts_with("schema:")) {
    return ReadSchemaSpec(spec.substr(7), data_root, schema, warnings, limits);
  }
  if (spec.starts_with("structural:")) {
    std::string path;
    absl::StatusOr<std::string> text =
        ReadSpecFile(spec.substr(11), data_root, "structural-tag", &path);
    if (!text.ok()) return text.status();
    return ReadStructuralTags(*text, path, schema, warnings, limits);
  }
  // Debian's abseil keeps its own string_view type: StrFormat takes
  // std::string_view, StrCat does not.
  if (spec.starts_with("builtin:")) {
    std::string_view name = spec.substr(8);
    std::string_view text = grammar::BuiltinGrammarText(name);
    if (text.empty()) {
      return absl::NotFoundError(absl::StrFormat("unknown builtin grammar '%s'", spec));
    }
    return grammar::ReadGbnf(text, absl::StrFormat("<%s>", spec));
  }
  if (spec.starts_with("regex:")) {
    return RegexGrammar(spec.substr(6), absl::StrFormat("<%s>", spec), 7);
  }
  // llguidance:PATH.lark reads the file in llguidance's Lark dialect (a
  // plain PATH.lark is read as Lark unless it uses llguidance's syntax).
  const bool llguidance = spec.starts_with("llguidance:");
  if (llguidance) spec = spec.substr(11);
  std::filesystem::path path{std::string(spec)};
  if (path.is_relative() && !data_root.empty()) {
    path = std::filesystem::path(std::string(data_root)) / path;
  }
  std::string ext = path.extension().string();
  if (ext == ".lark") {
    // Relative %imports resolve next to the file (grammar/lark_reader.h).
    grammar::LarkReadOptions read;
    if (llguidance) read.dialect = grammar::LarkDialect::kLlguidance;
    absl::StatusOr<grammar::LarkGrammar> lark = grammar::ReadLarkFile(path.string(), read);
    if (!lark.ok()) return lark.status();
    grammar::LarkLoweringOptions lowering = LarkLowering(limits);
    lowering.indenter = indenter;
    return grammar::LowerLark(*lark, lowering);
  }
  if (llguidance) {
    return absl::InvalidArgumentError(
        absl::StrFormat("'llguidance:%s': llguidance's dialect is a Lark grammar (a .lark path)", spec));
  }
  if (ext != ".gbnf" && ext != ".ebnf" && ext != ".lark") {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot tell the grammar format of '%s': expected a .gbnf, .ebnf or .lark path, "
        "builtin:NAME, regex:PATTERN, schema:PATH or structural:PATH",
        spec));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read grammar file '", path.string(), "'"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return grammar::ReadGbnf(buffer.str(), path.string());
}

}  // namespace internal

namespace {

// Milliseconds since `start` on the steady clock.
double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// One form of the grammar against CompileLimits::max_grammar_bytes.
absl::Status CheckGrammarBytes(const grammar::Grammar& g, const CompileLimits& limits,
                               std::string_view form) {
  const size_t bytes = g.memory_bytes();
  if (bytes <= limits.max_grammar_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrFormat("%s: the grammar %s takes %d bytes, over max_grammar_bytes = %d",
                      g.source_name, form, bytes, limits.max_grammar_bytes));
}

// `read_ms`: what reading the text to `ir` took.
absl::StatusOr<std::shared_ptr<const internal::CompiledGrammarData>> Compile(
    absl::StatusOr<grammar::Grammar> ir, const LoadOptions& options, double read_ms,
    std::vector<std::string> warnings = {}) {
  const CompileLimits& limits = options.limits;
  if (!ir.ok()) return ir.status();
  if (absl::Status st = CheckGrammarBytes(*ir, limits, "as read"); !st.ok()) return st;
  auto data = std::make_shared<internal::CompiledGrammarData>();
  data->warnings = std::move(warnings);
  data->warnings.insert(data->warnings.end(), ir->warnings.begin(), ir->warnings.end());
  data->ir_rules = ir->rules.size();
  data->times.read_ms = read_ms;
  // Normalized (transforms/pipeline.h), then regular parts (strings,
  // numbers, whitespace) become single DFA terminals:
  // one Earley item per string instead of an item per character, and token
  // masks can use per-terminal-state token sets.
  auto start = std::chrono::steady_clock::now();
  // The IR is released once the first transform has read it.
  absl::StatusOr<grammar::Grammar> normalized = transforms::NormalizeForCompile(*std::move(ir));
  if (!normalized.ok()) return normalized.status();
  if (absl::Status st = CheckGrammarBytes(*normalized, limits, "normalized"); !st.ok()) return st;
  data->times.normalize_ms = MsSince(start);
  // The merge compiles its candidate regexes; the lowering reuses them.
  start = std::chrono::steady_clock::now();
  grammar::RegexDfaCache dfa_cache;
  grammar::LazyRegexNfas lazy_nfas;
  transforms::RegularTerminalOptions merge_options;
  merge_options.dfa_cache = &dfa_cache;
  if (options.lazy_terminals) merge_options.lazy_nfas = &lazy_nfas;
  absl::StatusOr<grammar::Grammar> merged =
      transforms::MergeRegularTerminals(*normalized, nullptr, merge_options);
  if (!merged.ok()) return merged.status();
  normalized = absl::StatusOr<grammar::Grammar>();
  if (absl::Status st = CheckGrammarBytes(*merged, limits, "with regular parts merged"); !st.ok()) {
    return st;
  }
  data->times.merge_ms = MsSince(start);
  start = std::chrono::steady_clock::now();
  absl::StatusOr<parser::FlatGrammar> flat = parser::BuildFlatGrammar(*merged, limits, &dfa_cache, &lazy_nfas);
  if (!flat.ok()) return flat.status();
  data->flat = *std::move(flat);
  data->times.lower_ms = MsSince(start);
  return data;
}

}  // namespace

absl::StatusOr<Grammar> Grammar::Load(std::string_view spec, std::string_view data_root,
                                      const CompileLimits& limits) {
  LoadOptions options;
  options.limits = limits;
  return Load(spec, data_root, options);
}

absl::StatusOr<Grammar> Grammar::Load(std::string_view spec, std::string_view data_root,
                                      const LoadOptions& options) {
  std::vector<std::string> warnings;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<grammar::Grammar> ir =
      internal::ReadGrammarSpec(spec, data_root, options.schema, &warnings, options.limits, options.indenter);
  auto data = Compile(std::move(ir), options, MsSince(start), std::move(warnings));
  if (!data.ok()) return data.status();
  return Grammar(*std::move(data));
}

const std::vector<std::string>& Grammar::warnings() const { return data_->warnings; }
const CompileTimes& Grammar::compile_times() const { return data_->times; }

void Grammar::SetSharedRegexCacheBytes(size_t bytes) { grammar::SharedRegexDfas::Process().set_budget_bytes(bytes); }

SharedRegexCacheStats Grammar::GetSharedRegexCacheStats() {
  const grammar::SharedRegexStats s = grammar::SharedRegexDfas::Process().stats();
  return {s.hits, s.misses, s.entries, s.bytes, s.evictions};
}

absl::StatusOr<Grammar> Grammar::FromGbnf(std::string_view text, std::string_view source_name,
                                          const CompileLimits& limits) {
  LoadOptions options;
  options.limits = limits;
  return FromText(GrammarFormat::kGbnf, text, options, source_name);
}

absl::StatusOr<Grammar> Grammar::FromText(GrammarFormat format, std::string_view text,
                                          const LoadOptions& options,
                                          std::string_view source_name) {
  std::vector<std::string> warnings;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<grammar::Grammar> ir = absl::InvalidArgumentError("unknown grammar format");
  switch (format) {
    case GrammarFormat::kGbnf:
      ir = grammar::ReadGbnf(text, source_name);
      break;
    case GrammarFormat::kLark:
    case GrammarFormat::kLlguidanceLark: {
      grammar::LarkReadOptions read;
      if (format == GrammarFormat::kLlguidanceLark) read.dialect = grammar::LarkDialect::kLlguidance;
      grammar::LarkLoweringOptions lowering = internal::LarkLowering(options.limits);
      lowering.indenter = options.indenter;
      ir = grammar::ReadLarkGrammar(text, source_name, read, lowering);
      break;
    }
    case GrammarFormat::kRegex:
      ir = internal::RegexGrammar(text, source_name, 1);
      break;
    case GrammarFormat::kJsonSchema:
      ir = internal::ReadSchemaText(text, source_name, options.schema, /*draft7=*/false, &warnings,
                                    options.limits);
      break;
    case GrammarFormat::kStructuralTags:
      ir = internal::ReadStructuralTags(text, source_name, options.schema, &warnings, options.limits);
      break;
  }
  auto data = Compile(std::move(ir), options, MsSince(start), std::move(warnings));
  if (!data.ok()) return data.status();
  return Grammar(*std::move(data));
}

GrammarStats Grammar::stats() const {
  GrammarStats s;
  s.rules = data_->ir_rules;
  s.nonterminals = data_->flat.num_nonterminals();
  s.productions = data_->flat.num_productions();
  s.rhs_symbols = data_->flat.rhs.size();
  const parser::FlatGrammar& flat = data_->flat;
  s.terminals = flat.lexed() ? flat.lexer->names.size() : flat.terminals.start.size();
  s.terminal_states = flat.lexed() ? flat.lexer->num_states() : flat.terminals.num_states();
  return s;
}

Recognizer::Recognizer(const Grammar& grammar, const RecognizerOptions& options)
    : grammar_(grammar),
      state_(std::make_unique<internal::RecognizerState>(
          pruning::MakeRecognizer(&grammar_.data().flat, options), options.transition_memo_bytes)) {}
Recognizer::~Recognizer() = default;
Recognizer::Recognizer(Recognizer&&) noexcept = default;
Recognizer& Recognizer::operator=(Recognizer&&) noexcept = default;

bool Recognizer::Feed(uint8_t byte) {
  internal::RecognizerState& s = *state_;
  if (s.memo == nullptr) return s.recognizer->Feed(byte);
  const uint32_t next = s.memo->Step(s.memo_state, byte);
  if (next == parser::TransitionMemo::kRejected) return false;
  if (next == parser::TransitionMemo::kError) {
    s.status = s.memo->status();
    return false;
  }
  s.memo_state = next;
  ++s.position;
  if (!s.status.ok()) s.status = absl::OkStatus();
  return true;
}
size_t Recognizer::FeedBytes(std::string_view bytes) {
  if (state_->memo == nullptr) return state_->recognizer->FeedBytes(bytes);
  size_t n = 0;
  while (n < bytes.size() && Feed(static_cast<uint8_t>(bytes[n]))) ++n;
  return n;
}
bool Recognizer::Rollback(size_t n) {
  if (state_->memo == nullptr) return state_->recognizer->Rollback(n);
  return n == 0;  // no rollback with a memo (max_rollback 0)
}
void Recognizer::Reset() {
  internal::RecognizerState& s = *state_;
  if (s.memo == nullptr) return s.recognizer->Reset();
  s.memo_state = parser::TransitionMemo::kStart;
  s.position = 0;
  s.status = absl::OkStatus();
}
bool Recognizer::IsAccepting() const {
  const internal::RecognizerState& s = *state_;
  return s.memo == nullptr ? s.recognizer->IsAccepting() : s.memo->accepting(s.memo_state);
}
bool Recognizer::CanContinue() const {
  return state_->memo == nullptr ? state_->recognizer->CanContinue() : NextBytes().any();
}
std::bitset<256> Recognizer::NextBytes() const {
  const internal::RecognizerState& s = *state_;
  return s.memo == nullptr ? s.recognizer->NextBytes() : s.memo->NextBytes(s.memo_state);
}
size_t Recognizer::Position() const {
  return state_->memo == nullptr ? state_->recognizer->Position() : state_->position;
}
size_t Recognizer::RetainedItems() const {
  const internal::RecognizerState& s = *state_;
  return s.memo == nullptr ? s.recognizer->RetainedItems() : s.memo->retained_items(s.memo_state);
}
uint64_t Recognizer::PeakWorkPerSet() const {
  const internal::RecognizerState& s = *state_;
  return s.memo == nullptr ? s.recognizer->peak_work_per_set() : s.memo->peak_work_per_set();
}
absl::Status Recognizer::status() const {
  const internal::RecognizerState& s = *state_;
  return s.memo == nullptr ? s.recognizer->status() : s.status;
}
RecognizerMemoStats Recognizer::memo_stats() const {
  if (state_->memo == nullptr) return {};
  const parser::TransitionMemoStats m = state_->memo->stats();
  return {m.hits, m.misses, m.states, m.clears, m.bytes, m.detached};
}

}  // namespace zapgram
