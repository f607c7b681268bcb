// Lark reader: Lark grammar text -> LarkGrammar (grammar/lark_reader.h).
//
// How it works. Like the GBNF reader, a hand-written scanner fused with a
// parser that keeps its own stack; nothing on the C++ call stack grows with
// the input (the one exception, imports, is bounded by max_import_depth).
// One LarkReader reads one text (a "module"); the top-level reader then
// builds the result. Steps:
//
//   1. Validation (lark_lex.cc): the text must be UTF-8; a table of line
//      starts maps byte offsets to line:col for messages.
//   2. Imports first, as Lark does (lark_import.cc): every line starting
//      with `%import` is parsed up front and the imports are grouped by
//      module path, so each imported module is read once per importing file
//      with all the names asked of it.
//   3. Top level (lark_parse.cc): each definition or directive starts a
//      line; bodies are read with a stack of group frames, and names become
//      arena rules on first mention, tokens coming from lark_lex.cc.
//   4. %override and %extend (here) are applied after the whole text is
//      read, in text order; the target must be imported or defined earlier
//      in the text.
//   5. The top-level reader checks that every mentioned name is defined,
//      imported or %declare'd ("undefined ..." at its first use), that
//      terminals are not recursive, and then builds the result: a fresh
//      arena in which templates are expanded (lark_build.cc).
//
// Each stage's file opens with its own account; the shared state is
// grammar/lark_reader_internal.h. This file is the driver (ReadModule,
// Read), applies %override/%extend, and holds the entry points of
// grammar/lark_reader.h.
//
// Tests: tests/grammar/lark_reader_test.cc (fixtures in tests/testdata/lark/;
// OverrideAndExtend, SharedDataGrammars, SyncodeCalcGolden).
#include "grammar/lark_reader.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "grammar/lark_reader_internal.h"

namespace zapgram::grammar {
namespace lark_internal {

// %override replaces a definition; %extend puts its alternatives before the
// existing ones (Lark inserts them first). Both need an imported definition
// or one earlier in the text.
absl::Status LarkReader::ApplyModifications() {
  for (Modification& mod : mods_) {
    Definition& def = mod.def;
    const RuleId id = def.id;
    const std::string name = out_.arena.rules[id].name;
    const char* kind = def.terminal ? "terminal" : "rule";
    const bool extend = mod.mode == DefinitionMode::kExtend;
    const char* word = extend ? "%extend" : "%override";
    if (def_offset_[id] == kNone || (!imported_[id] && def_offset_[id] > mod.directive_offset)) {
      return ErrorAt(def.name_offset, absl::StrFormat("%s: the %s '%s' has no earlier definition to %s", word,
                                                      kind, name, extend ? "extend" : "override"));
    }
    if (!extend) {
      Register(std::move(def));
      continue;
    }
    if (def.attributes.capture || def.attributes.temperature >= 0.0f) {
      return ErrorAt(def.name_offset, absl::StrFormat("%%extend cannot give the %s '%s' rule attributes; "
                                                      "put them on its definition", kind, name));
    }
    const size_t index = static_cast<size_t>(out_.index_of[id]);
    auto it = params_.find(id);
    const std::vector<std::string> none;
    const std::vector<std::string>& params = it == params_.end() ? none : it->second;
    if (params != def.params) {
      return ErrorAt(def.name_offset, absl::StrFormat("%%extend: '%s' must be extended with its own template "
                                                      "parameters {%s}", name, absl::StrJoin(params, ", ")));
    }
    const SourceLocation loc = LocationOf(def.name_offset);
    if (def.terminal) {
      if (out_.terminals[index].declared) {
        return ErrorAt(def.name_offset,
                       absl::StrFormat("%%extend: the terminal '%s' is %%declare'd and has no body to extend", name));
      }
      std::vector<ExprId> alternatives = def.body.alternatives;
      const ExprId old = out_.arena.rules[id].body;
      if (out_.arena.exprs[old].kind == ExprKind::kChoice) {
        const std::vector<ExprId> children = out_.arena.exprs[old].children;
        alternatives.insert(alternatives.end(), children.begin(), children.end());
      } else {
        alternatives.push_back(old);
      }
      out_.arena.rules[id].body = out_.arena.AddChoice(std::move(alternatives), loc);
      continue;
    }
    LarkRule& r = out_.rules[index];
    r.alternatives.insert(r.alternatives.begin(), def.body.alternatives.begin(), def.body.alternatives.end());
    r.aliases.insert(r.aliases.begin(), def.body.aliases.begin(), def.body.aliases.end());
    out_.arena.rules[id].body = out_.arena.AddChoice(r.alternatives, loc);
  }
  mods_.clear();
  return absl::OkStatus();
}

absl::Status LarkReader::ReadModule() {
  if (absl::Status s = ValidateUtf8(); !s.ok()) return s;
  if (absl::Status s = ReadAllImports(); !s.ok()) return s;
  if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
  while (true) {
    pos_ = SkipAllFrom(pos_);
    if (AtEnd()) break;
    const char c = At(pos_);
    absl::Status s;
    if (c == '%') {
      s = ReadDirective();
    } else if (c == '!' || c == '?' || IsNameStart(c)) {
      s = ReadDefinition(DefinitionMode::kDefine);
    } else {
      s = ErrorAt(pos_, absl::StrCat("expected a rule or terminal definition or a %directive, found ", Describe(pos_)));
    }
    if (!s.ok()) return s;
  }
  if (absl::Status s = ApplyModifications(); !s.ok()) return s;
  return CheckTemplateUses();
}

absl::StatusOr<LarkGrammar> LarkReader::Read() {
  if (absl::Status s = ReadModule(); !s.ok()) return s;
  if (absl::Status s = CheckUndefined(nullptr, ""); !s.ok()) return s;
  if (absl::Status s = CheckTerminalCycles(); !s.ok()) return s;
  return Build();
}

}  // namespace lark_internal

using lark_internal::ImportContext;
using lark_internal::LarkReader;

absl::StatusOr<LarkGrammar> ReadLark(std::string_view text, std::string_view source_name,
                                     const LarkReadOptions& options) {
  ImportContext context;
  context.chain.push_back(std::filesystem::path(source_name).lexically_normal().generic_string());
  LarkReader reader(text, source_name, options, &context, options.base_dir);
  return reader.Read();
}

absl::StatusOr<std::string> ReadLarkFileText(std::string_view path) {
  std::ifstream in{std::string(path), std::ios::binary};
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::path(path), ec)) {
      return absl::NotFoundError(absl::StrFormat("no file '%s'", path));
    }
    return absl::UnavailableError(absl::StrFormat("cannot open '%s'", path));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::UnavailableError(absl::StrFormat("cannot read '%s'", path));
  return ss.str();
}

absl::StatusOr<LarkGrammar> ReadLarkFile(std::string_view path, const LarkReadOptions& options) {
  LarkReadOptions with_files = options;
  if (!with_files.loader) with_files.loader = ReadLarkFileText;
  const std::string normal = std::filesystem::path(path).lexically_normal().generic_string();
  if (with_files.base_dir.empty()) {
    with_files.base_dir = std::filesystem::path(normal).parent_path().generic_string();
  }
  absl::StatusOr<std::string> text = with_files.loader(normal);
  if (!text.ok()) return text.status();
  return ReadLark(*text, normal, with_files);
}

std::string DumpLark(const LarkGrammar& g) {
  std::string out = g.arena.rules.empty() ? std::string() : Dump(g.arena);
  for (const LarkRule& r : g.rules) {
    out += absl::StrFormat("rule %s", g.arena.rules[r.rule].name);
    if (r.inline_children) out += " inline";
    if (r.hidden) out += " hidden";
    if (r.keep_all_tokens) out += " keep_all_tokens";
    if (r.has_priority) out += absl::StrFormat(" priority=%d", r.priority);
    out += absl::StrFormat(" alternatives=%d", r.alternatives.size());
    for (size_t i = 0; i < r.aliases.size(); ++i) {
      if (!r.aliases[i].empty()) out += absl::StrFormat(" alias[%d]=%s", i, r.aliases[i]);
    }
    out += "\n";
  }
  for (const LarkTerminal& t : g.terminals) {
    out += absl::StrFormat("terminal %s", g.arena.rules[t.rule].name);
    if (t.has_priority) out += absl::StrFormat(" priority=%d", t.priority);
    if (t.hidden) out += " hidden";
    if (t.imported) out += " imported";
    if (t.declared) out += " declared";
    out += "\n";
  }
  for (const LarkIgnore& i : g.ignores) out += absl::StrFormat("ignore %s\n", DumpExpr(g.arena, i.expr));
  for (ExprId id : g.istring_exprs) out += absl::StrFormat("istring %s\n", DumpExpr(g.arena, id));
  return out;
}

}  // namespace zapgram::grammar
