// `zapgram check GRAMMAR [--dump] [--lenient] [--any-order] [--validation]
// [--data-root DIR] [--tokenizer T.json --classes]`: is this grammar usable?
//
// The check runs the stages a grammar goes through before it can constrain
// anything, and reports what each stage finds, like a compiler's front end:
//
//   1. read: the GBNF/EBNF reader turns the text into the grammar IR; a
//      .lark file is read and lowered to a lexed IR (rules over tokens, the
//      lexicon beside them) exactly as `parse` loads it
//      (internal::ReadGrammarSpec -> grammar::ReadLarkFile + LowerLark, so
//      relative %imports are resolved against the file's folder). Syntax
//      errors and undefined symbols are errors; the reader's message already
//      names source:line:col.
//   2. analyse the IR: rules not reachable from the root and rules that derive
//      no string at all (unproductive) are warnings naming the rule and where it
//      is defined; an unproductive root means the language is empty, also a
//      warning (such a grammar compiles; it accepts no text).
//   3. normalize: the grammar -> grammar passes of transforms/pipeline.h run
//      on the IR, and each prints what it did: "transform PASS: R rules, E
//      expressions, S symbols -> R' rules, ...; inlined: a, b; ..." (sizes as
//      transforms/report.h defines them; a lexed grammar's tokens are
//      terminal symbols). The compiled form below is built the way the other
//      commands build it.
//   4. compile: zapgram::Grammar::FromGbnf/Load lowers and compiles exactly as
//      `parse` and the matchers will; its failures (e.g. a compile budget) are
//      errors, and its GrammarStats are printed.
//
// The report goes to standard output (it is what the command produces):
// diagnostics as `SOURCE:LINE:COL: warning|error: ...`, then the summary
// statistics of the IR, one line per transform, the statistics of the
// compiled form, then a verdict line.
// `--classes` (with `--tokenizer`) compiles the grammar for the tokenizer and
// prints its token equivalence classes (masks/token_classes.h): how many,
// how long they took, and the largest ones with some decoded members.
// `--dump` appends the IR as GBNF text (grammar::Dump), which re-reads to the
// same IR. `--digest` prints a 64-bit FNV-1a digest of the compiled tables
// (productions as DumpFlatGrammar spells them, the terminal table's start
// states, byte classes, transitions, accepting and live-byte rows, counted
// segments and names): equal digests before and after a compile-time change
// show it left the tables alone. Exit status: 0 usable (warnings allowed), 1 grammar errors, 2
// usage errors (bad options, unreadable file, unsupported grammar kind).
//
// GRAMMAR is resolved here rather than by Grammar::Load because the check
// needs the IR: PATH.gbnf / PATH.ebnf / PATH.lark by extension (relative
// paths against --data-root when given), builtin:NAME (grammar/builtin.h) or
// regex:PATTERN.
//
// Tests: tests/cli/cli_test.cc (CliTest.Check*).
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "api/grammar_data.h"
#include "cli/commands.h"
#include "grammar/builtin.h"
#include "grammar/gbnf_reader.h"
#include "grammar/grammar.h"
#include "grammar/lark_lowering.h"
#include "transforms/pipeline.h"
#include "transforms/report.h"
#include "absl/strings/escaping.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace zapgram::cli {
namespace {

constexpr std::string_view kHelp =
    "usage: zapgram check GRAMMAR [--dump] [--digest] [--lenient] [--any-order] [--validation]\n"
    "                     [--indenter=MODE] [--data-root DIR] [--tokenizer T.json --classes]\n"
    "\n"
    "Reads GRAMMAR and reports whether it is usable:\n"
    "  errors    syntax errors and undefined symbols (SOURCE:LINE:COL), an\n"
    "            unproductive root rule (the language is empty), compile failures\n"
    "  warnings  rules unreachable from the root, rules that derive no string\n"
    "  summary   rules, expressions, literal and class terminals (and tokens, for\n"
    "            .lark) of the grammar as read; nonterminals, productions, rhs\n"
    "            symbols, terminals and terminal (or lexer) automaton states of the\n"
    "            compiled grammar\n"
    "  transforms  what each normalization pass did (useless_rules, inline_rules,\n"
    "            fuse_literals, dedup_rules): rules, expressions and symbols before\n"
    "            and after, and the rules it removed, inlined or merged\n"
    "\n"
    "GRAMMAR is PATH.gbnf, PATH.ebnf or PATH.lark (by extension), builtin:NAME or\n"
    "regex:PATTERN or schema:PATH (a JSON Schema).\n"
    "\n"
    "options:\n"
    "  --dump            also print the grammar as read, in GBNF\n"
    "  --digest          also print a digest of the compiled tables (productions,\n"
    "                    terminal automata), to compare builds\n"
    "  --lenient         schema:PATH: drop keywords a grammar cannot enforce, each\n"
    "                    reported as a warning (default: they are errors)\n"
    "  --any-order       schema:PATH: members in any order (generation grammar)\n"
    "  --validation      schema:PATH: the validation grammar (what parse uses)\n"
    "  --indenter=MODE   PATH.lark: Lark's Indenter (Python's _INDENT/_DEDENT): auto\n"
    "                    (default: when the grammar %declares _INDENT and _DEDENT and\n"
    "                    uses _NL or _NEWLINE), on, off; the choice is printed\n"
    "  --data-root DIR   resolve a relative GRAMMAR path against DIR\n"
    "  --tokenizer T.json --classes\n"
    "                    also print the grammar's token equivalence classes for the\n"
    "                    tokenizer: their number, the time to compute them, and the\n"
    "                    largest classes with a few decoded members\n"
    "\n"
    "exit status: 0 usable (warnings allowed), 1 grammar errors, 2 usage errors.\n";

// Where a grammar's text came from, as the reader and the compiler need it.
struct GrammarSource {
  std::string text;
  std::string name;     // for messages: the resolved path, or "<builtin:NAME>"
  std::string builtin;  // the spec, when it is compiled by spec (builtin:NAME,
                        // regex:PATTERN, the resolved PATH.lark)
  std::optional<grammar::Grammar> ir;  // regex:PATTERN: built directly, no text
  bool lark = false;    // PATH.lark: read (and lowered) by internal::ReadGrammarSpec
  bool schema = false;  // schema:PATH: converted by internal::ReadGrammarSpec
};

void AppendView(std::string* out, std::string_view view) { out->append(view); }

// Errors: FailedPrecondition when the file cannot be read, others for a spec
// that names no grammar we can check (unknown builtin, unsupported kind).
absl::StatusOr<GrammarSource> LoadSource(const std::string& spec, const std::string& data_root) {
  GrammarSource source;
  if (absl::StartsWith(spec, "builtin:")) {
    std::string name = spec.substr(8);
    std::string_view text = grammar::BuiltinGrammarText(name);
    if (text.empty()) {
      return absl::NotFoundError(absl::StrCat(
          "unknown builtin grammar '", name,
          "' (known: ", absl::StrJoin(grammar::BuiltinGrammarNames(), ", ", AppendView), ")"));
    }
    source.text = std::string(text);
    source.name = absl::StrCat("<", spec, ">");
    source.builtin = std::string(spec);
    return source;
  }
  if (absl::StartsWith(spec, "regex:")) {
    absl::StatusOr<grammar::Grammar> ir = internal::ReadGrammarSpec(spec, data_root);
    if (!ir.ok()) return ir.status();
    source.name = ir->source_name;
    source.builtin = spec;
    source.ir = *std::move(ir);
    return source;
  }
  if (absl::StartsWith(spec, "schema:")) {
    // Converted here (transforms/json_schema.h); compiled below by the same
    // spec with the same options, as `parse` does.
    source.builtin = absl::StrCat("schema:", ResolvePath(spec.substr(7), data_root));
    source.name = ResolvePath(spec.substr(7), data_root);
    source.schema = true;
    return source;
  }
  if (absl::StartsWith(spec, "llguidance:")) {
    // llguidance's Lark dialect (docs/llguidance-lark.md), compiled by spec.
    source.lark = absl::EndsWith(spec, ".lark");
    if (!source.lark) {
      return absl::InvalidArgumentError(absl::StrCat("'", spec, "': llguidance:PATH needs a .lark path"));
    }
    source.name = ResolvePath(spec.substr(11), data_root);
    absl::StatusOr<std::string> text = ReadFileBytes(source.name);
    if (!text.ok()) return absl::FailedPreconditionError(text.status().message());
    source.text = *std::move(text);
    source.builtin = absl::StrCat("llguidance:", source.name);
    return source;
  }
  source.lark = absl::EndsWith(spec, ".lark");
  if (!source.lark && !absl::EndsWith(spec, ".gbnf") && !absl::EndsWith(spec, ".ebnf")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", spec, "': a grammar is PATH.gbnf, PATH.ebnf, PATH.lark, builtin:NAME or regex:PATTERN"));
  }
  source.name = ResolvePath(spec, data_root);
  absl::StatusOr<std::string> text = ReadFileBytes(source.name);
  if (!text.ok()) return absl::FailedPreconditionError(text.status().message());
  source.text = *std::move(text);
  if (source.lark) source.builtin = source.name;
  return source;
}

// Reader messages read "SOURCE:LINE:COL: text"; print them in the same
// "SOURCE:LINE:COL: error: text" shape as the other diagnostics.
void PrintReaderError(const std::string& source, const std::string& message) {
  std::string_view rest = message;
  if (rest.starts_with(source) && rest.size() > source.size() && rest[source.size()] == ':') {
    rest.remove_prefix(source.size() + 1);
    size_t colons = 0;
    size_t i = 0;
    while (i < rest.size() && colons < 2 && (absl::ascii_isdigit(rest[i]) || rest[i] == ':')) {
      if (rest[i] == ':') ++colons;
      ++i;
    }
    if (colons == 2 && i < rest.size() && rest[i] == ' ') {
      std::printf("%s:%.*s error: %.*s\n", source.c_str(), static_cast<int>(i), rest.data(),
                  static_cast<int>(rest.size() - i - 1), rest.data() + i + 1);
      return;
    }
  }
  std::printf("error: %.*s\n", static_cast<int>(message.size()), message.data());
}

void PrintDiagnostic(const std::string& source, grammar::SourceLocation loc,
                     std::string_view severity, std::string_view message) {
  std::printf("%s:%u:%u: %.*s: %.*s\n", source.c_str(), loc.line, loc.col,
              static_cast<int>(severity.size()), severity.data(), static_cast<int>(message.size()),
              message.data());
}

// "1 rule", "3 rules".
std::string Count(size_t n, std::string_view noun) {
  return absl::StrCat(n, " ", std::string(noun), n == 1 ? "" : "s");
}

struct IrCounts {
  size_t literals = 0;
  size_t classes = 0;
  size_t tokens = 0;  // the lexicon of a lexed (.lark) grammar
};

IrCounts CountTerminals(const grammar::Grammar& ir) {
  IrCounts counts;
  for (const grammar::Expr& e : ir.exprs) {
    if (e.kind == grammar::ExprKind::kLiteral) ++counts.literals;
    if (e.kind == grammar::ExprKind::kCharClass) ++counts.classes;
  }
  counts.tokens = ir.tokens.size();
  return counts;
}

// The token classes of `compiled` for `tokenizer`: false (after a message)
// when the tokenizer does not load or the grammar does not compile for it.
bool PrintTokenClasses(const Grammar& compiled, const std::string& tokenizer) {
  absl::StatusOr<Vocabulary> vocab = Vocabulary::Load(tokenizer);
  if (!vocab.ok()) {
    std::printf("error: tokenizer: %s\n", std::string(vocab.status().message()).c_str());
    return false;
  }
  absl::StatusOr<CompiledGrammar> for_vocab = CompiledGrammar::Compile(compiled, *vocab);
  if (!for_vocab.ok()) {
    std::printf("error: compile for the tokenizer: %s\n", std::string(for_vocab.status().message()).c_str());
    return false;
  }
  const absl::Time start = absl::Now();
  const absl::Span<const uint32_t> class_of = for_vocab->token_classes();
  const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
  std::vector<std::vector<int32_t>> members;
  for (size_t id = 0; id < class_of.size(); ++id) {
    if (class_of[id] >= members.size()) members.resize(class_of[id] + 1);
    members[class_of[id]].push_back(static_cast<int32_t>(id));
  }
  std::printf("token classes: %zu classes of %zu ids, computed in %.1f ms\n", members.size(), class_of.size(), ms);
  std::vector<uint32_t> order(members.size());
  for (uint32_t c = 0; c < order.size(); ++c) order[c] = c;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return members[a].size() > members[b].size(); });
  constexpr size_t kShownClasses = 10, kShownMembers = 8;
  for (size_t k = 0; k < order.size() && k < kShownClasses; ++k) {
    const std::vector<int32_t>& ids = members[order[k]];
    std::string shown;
    for (size_t m = 0; m < ids.size() && m < kShownMembers; ++m) {
      const std::string_view bytes = vocab->token_bytes(ids[m]);
      absl::StrAppend(&shown, m == 0 ? "" : " ", bytes.empty() ? absl::StrCat("#", ids[m])
                                                              : absl::StrCat("\"", absl::CHexEscape(absl::string_view(bytes.data(), bytes.size())), "\""));
    }
    std::printf("  class %u: %zu ids: %s%s\n", order[k], ids.size(), shown.c_str(),
                ids.size() > kShownMembers ? " ..." : "");
  }
  return true;
}

int RunCheck(const std::vector<std::string>& args) {
  std::vector<std::string> positional;
  std::string data_root;
  bool dump = false;
  bool digest = false;
  bool classes = false;
  std::string tokenizer;
  SchemaOptions schema;
  IndenterOptions indenter;
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_done || arg.empty() || arg[0] != '-') {
      positional.push_back(arg);
    } else if (arg == "--") {
      options_done = true;
    } else if (arg == "--classes") {
      classes = true;
    } else if (arg == "--tokenizer" || absl::StartsWith(arg, "--tokenizer=")) {
      if (!TakeOptionValue(args, &i, "--tokenizer", &tokenizer)) return UsageError("check", "--tokenizer needs a file");
    } else if (arg == "--dump") {
      dump = true;
    } else if (arg == "--digest") {
      digest = true;
    } else if (arg == "--lenient") {
      schema.lenient = true;
    } else if (std::string error; TakeIndenterOption(args, &i, &indenter, &error)) {
      if (!error.empty()) return UsageError("check", error);
    } else if (arg == "--any-order") {
      schema.any_order = true;
    } else if (arg == "--validation") {
      schema.purpose = SchemaPurpose::kValidation;
    } else if (arg == "--data-root" || absl::StartsWith(arg, "--data-root=")) {
      if (!TakeOptionValue(args, &i, "--data-root", &data_root)) {
        return UsageError("check", "--data-root needs a directory");
      }
    } else {
      return UsageError("check", absl::StrCat("unknown option '", arg, "'"));
    }
  }
  if (classes && tokenizer.empty()) return UsageError("check", "--classes needs --tokenizer");
  if (positional.size() != 1) {
    return UsageError("check",
                      positional.empty() ? "missing GRAMMAR" : "expected exactly one GRAMMAR");
  }

  absl::StatusOr<GrammarSource> source = LoadSource(positional[0], data_root);
  if (!source.ok()) {
    if (source.status().code() == absl::StatusCode::kFailedPrecondition) {
      // The file could not be read: not a usage mistake, no help pointer.
      std::fprintf(stderr, "zapgram check: %s\n", std::string(source.status().message()).c_str());
      return kExitError;
    }
    return UsageError("check", std::string(source.status().message()));
  }

  // 1. Read (a .lark file through the path every command uses, so that the
  // check sees the IR that `parse` compiles).
  std::vector<std::string> schema_warnings;
  absl::StatusOr<grammar::Grammar> ir =
      source->ir       ? *source->ir
      : source->schema ? internal::ReadGrammarSpec(source->builtin, "", schema, &schema_warnings)
      : source->lark   ? internal::ReadGrammarSpec(source->builtin, "", {}, nullptr, {}, indenter)
                     : grammar::ReadGbnf(source->text, source->name);
  if (!ir.ok()) {
    PrintReaderError(source->name, std::string(ir.status().message()));
    std::printf("%s: not usable (1 error)\n", source->name.c_str());
    return kExitNo;
  }

  if (ir->rules.empty() || ir->root >= ir->rules.size()) {
    std::printf("error: %s: no root rule\n", source->name.c_str());
    return kExitNo;
  }

  // 2. Analyse: reachability and productivity over the rule graph.
  size_t errors = 0;
  size_t warnings = 0;
  for (const std::string& w : schema_warnings) {
    std::printf("%s: warning: %s\n", source->name.c_str(), w.c_str());
    ++warnings;
  }
  for (const std::string& w : ir->warnings) {  // already located: "SOURCE:LINE:COL: ..."
    std::printf("warning: %s\n", w.c_str());
    ++warnings;
  }
  const std::string& root_name = ir->rules[ir->root].name;
  std::vector<bool> reachable = grammar::ReachableRules(*ir);
  std::vector<bool> productive = grammar::ProductiveRules(*ir);
  for (size_t r = 0; r < ir->rules.size(); ++r) {
    const grammar::Rule& rule = ir->rules[r];
    if (!reachable[r]) {
      PrintDiagnostic(source->name, rule.loc, "warning",
                      absl::StrCat("rule '", rule.name, "' is unreachable from '", root_name, "'"));
      ++warnings;
    }
    if (!productive[r]) {
      if (r == ir->root) {
        // The empty language compiles (transforms/useless_rules.h): no text
        // is accepted and masks allow no token, not even EOS.
        PrintDiagnostic(source->name, rule.loc, "warning",
                        absl::StrCat("root rule '", rule.name,
                                     "' is unproductive: it derives no string, so the "
                                     "language is empty (no text is accepted; masks allow "
                                     "no token, not even EOS)"));
        ++warnings;
      } else {
        PrintDiagnostic(
            source->name, rule.loc, "warning",
            absl::StrCat("rule '", rule.name, "' is unproductive: it derives no string"));
        ++warnings;
      }
    }
  }
  IrCounts counts = CountTerminals(*ir);
  std::printf("grammar: %s, %s, %s, %s%s\n", Count(ir->rules.size(), "rule").c_str(),
              Count(ir->exprs.size(), "expression").c_str(),
              Count(counts.literals, "literal terminal").c_str(),
              Count(counts.classes, "class terminal").c_str(),
              ir->lexed() ? absl::StrCat(", ", Count(counts.tokens, "token")).c_str() : "");
  // Lark's Indenter: whether it runs (detected or asked for), and its tokens.
  if (source->lark) std::printf("%s\n", grammar::DescribeIndenter(*ir).c_str());

  // 3. Normalize: what each transform does to this grammar.
  if (errors == 0) {
    transforms::TransformReport report;
    absl::StatusOr<grammar::Grammar> normalized = transforms::Normalize(*ir, &report);
    if (!normalized.ok()) {
      std::printf("error: transform: %s\n", std::string(normalized.status().message()).c_str());
      ++errors;
    } else {
      for (const transforms::PassReport& pass : report.passes) {
        std::printf("transform %s\n", transforms::FormatPassReport(pass).c_str());
      }
    }
  }

  // 4. Compile, exactly as the other commands load it.
  if (errors == 0) {
    absl::StatusOr<Grammar> compiled = source->builtin.empty()
                                           ? Grammar::FromGbnf(source->text, source->name)
                                           : Grammar::Load(source->builtin, "", LoadOptions{{}, schema, true, indenter});
    if (!compiled.ok()) {
      std::printf("error: compile: %s\n", std::string(compiled.status().message()).c_str());
      ++errors;
    } else {
      GrammarStats stats = compiled->stats();
      std::printf("compiled: %s, %s, %s, %s, %s\n",
                  Count(stats.nonterminals, "nonterminal").c_str(),
                  Count(stats.productions, "production").c_str(),
                  Count(stats.rhs_symbols, "rhs symbol").c_str(),
                  Count(stats.terminals, "terminal").c_str(),
                  Count(stats.terminal_states, "terminal automaton state").c_str());
      if (digest) std::printf("tables digest: %016llx\n", static_cast<unsigned long long>(parser::TablesDigest(compiled->data().flat)));
      if (classes && !PrintTokenClasses(*compiled, tokenizer)) ++errors;
    }
  }

  if (dump) {
    std::printf("# grammar as read (grammar::Dump)\n%s", grammar::Dump(*ir).c_str());
  }
  if (errors > 0) {
    std::printf("%s: not usable (%s, %s)\n", source->name.c_str(), Count(errors, "error").c_str(),
                Count(warnings, "warning").c_str());
    return kExitNo;
  }
  std::printf("%s: ok (%s)\n", source->name.c_str(), Count(warnings, "warning").c_str());
  return kExitOk;
}

}  // namespace

const Command kCheckCommand = {
    "check",
    "check a grammar: syntax, undefined/unreachable/unproductive rules, statistics",
    kHelp,
    &RunCheck,
};

}  // namespace zapgram::cli
