// Lark reader, stage 3: %import.
//
// Lark reads every %import of a file before its definitions, and so does
// this: ReadAllImports parses each line that starts with `%import` up front
// and groups the requests by module path, so each imported module is read
// once per importing file with all the names asked of it (Lark's
// GrammarBuilder.load_grammar / do_import).
//
// `%import common...` reads zapgram's built-in text
// (grammar/lark_common.cc); any other module is read through
// LarkReadOptions::loader: `.a.b` relative to the importing file's folder,
// `a.b` in base_dir then lark_grammars_dir. The module is read by a child
// LarkReader (its own imports first, recursively; its %ignore lines are
// dropped, as in Lark), and what the imported names need is copied in
// (Lark's _remove_unused: the names, plus every rule and terminal a copied
// rule refers to; terminals refer to no rule). Copied names are renamed with
// Lark's mangling (_get_mangle): an imported name takes its alias (`-> Y`,
// or itself), any other name `prefix__name` (`_prefix__name` for a leading
// `_`) where prefix is the dotted module path joined by `__`, so
// dependencies never clash with the importer's names; nested imports
// compose the prefixes. Inside copied terminals, references to other
// terminals are inlined (Lark's resolve_term_references), so a terminal
// needed only by another terminal is not copied. A file already being read
// higher up the import chain is an import cycle (an error). Copied
// expressions lose their source locations (they point into another file);
// the definitions carry the location of the %import.
//
// Tests: tests/grammar/lark_reader_test.cc (ImportsFromCommon,
// ImportsNamespaceDependencies, ImportErrors,
// ReadLarkFileResolvesImportsNextToTheFile).
#include "grammar/lark_reader_internal.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace zapgram::grammar::lark_internal {
namespace {

constexpr std::string_view kCommonSource = "<builtin:lark-common>";

}  // namespace

// After "%import": reads the line; adds its names to `groups` (when not null).
absl::Status LarkReader::ReadImport(std::vector<ImportGroup>* groups) {
  pos_ = SkipInlineFrom(pos_);
  const size_t path_offset = pos_;
  const bool relative = At(pos_) == '.';
  if (relative) ++pos_;
  std::vector<std::pair<std::string_view, size_t>> parts;
  while (true) {
    const size_t offset = pos_;
    const std::string_view part = ReadName();
    if (part.empty()) return ErrorAt(offset, absl::StrCat("expected a module or name, found ", Describe(offset)));
    parts.push_back({part, offset});
    if (At(pos_) != '.') break;
    ++pos_;
  }
  pos_ = SkipInlineFrom(pos_);
  std::vector<ImportRequest> requests;
  if (At(pos_) == '(') {
    ++pos_;
    auto names = ReadNameList(')', "a name");
    if (!names.ok()) return names.status();
    for (const auto& [name, offset] : *names) requests.push_back({std::string(name), std::string(name), offset});
  } else {
    if (parts.size() < 2) {
      return ErrorAt(path_offset, "expected 'module.NAME' or 'module (NAME, ...)' after '%import'");
    }
    requests.push_back({std::string(parts.back().first), std::string(parts.back().first), parts.back().second});
    parts.pop_back();
    if (At(pos_) == '-' && At(pos_ + 1) == '>') {
      pos_ = SkipInlineFrom(pos_ + 2);
      const size_t offset = pos_;
      const std::string_view alias = ReadName();
      if (alias.empty()) return ErrorAt(offset, absl::StrCat("expected a name after '->', found ", Describe(offset)));
      requests.back().alias = std::string(alias);
    }
  }
  if (absl::Status s = ExpectEndOfLine(); !s.ok()) return s;
  if (groups == nullptr) return absl::OkStatus();
  std::vector<std::string> path;
  for (const auto& part : parts) path.emplace_back(part.first);
  ImportGroup* group = nullptr;
  for (ImportGroup& g : *groups) {
    if (g.relative == relative && g.parts == path) group = &g;
  }
  if (group == nullptr) {
    groups->push_back({relative, std::move(path), path_offset, {}});
    group = &groups->back();
  }
  for (ImportRequest& r : requests) {
    // As in Lark, a name imported twice from one module takes the last alias.
    auto it = std::find_if(group->requests.begin(), group->requests.end(),
                           [&](const ImportRequest& q) { return q.name == r.name; });
    if (it != group->requests.end()) {
      *it = std::move(r);
    } else {
      group->requests.push_back(std::move(r));
    }
  }
  return absl::OkStatus();
}

// Lark reads every %import of a file before its definitions: so does this.
absl::Status LarkReader::ReadAllImports() {
  std::vector<ImportGroup> groups;
  for (size_t line_start : line_starts_) {
    size_t p = line_start;
    if (p == 0 && text_.substr(0, 3) == "\xEF\xBB\xBF") p = 3;
    while (p < text_.size() && IsInlineBlank(text_[p])) ++p;
    if (text_.substr(p, 7) != "%import" || IsNameChar(At(p + 7))) continue;
    pos_ = p + 7;
    if (absl::Status s = ReadImport(&groups); !s.ok()) return s;
  }
  pos_ = 0;
  for (const ImportGroup& group : groups) {
    if (absl::Status s = ImportGroupNames(group); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<LoadedModule*> LarkReader::LoadModule(const ImportGroup& group) {
  const std::string display = absl::StrCat(group.relative ? "." : "", absl::StrJoin(group.parts, "."));
  auto module = std::make_unique<LoadedModule>();
  std::string dir;
  if (!group.relative && group.parts.size() == 1 && group.parts[0] == "common") {
    module->text = std::string(LarkCommonText());
    module->path = std::string(kCommonSource);
  } else {
    std::vector<std::string> folders;
    if (group.relative) {
      folders.push_back(dir_);
    } else {
      folders.push_back(options_.base_dir);
      if (!options_.lark_grammars_dir.empty()) folders.push_back(options_.lark_grammars_dir);
    }
    if (!options_.loader) {
      return ErrorAt(group.path_offset,
                     absl::StrFormat("cannot import module '%s': no file loader (use ReadLarkFile, or set "
                                     "LarkReadOptions::loader; zapgram builds in only 'common')",
                                     display));
    }
    std::vector<std::string> tried;
    bool found = false;
    for (const std::string& folder : folders) {
      std::filesystem::path file = folder;
      for (const std::string& part : group.parts) file /= part;
      file += ".lark";
      const std::string path = file.lexically_normal().generic_string();
      absl::StatusOr<std::string> text = options_.loader(path);
      if (text.ok()) {
        module->text = std::move(*text);
        module->path = path;
        dir = file.lexically_normal().parent_path().generic_string();
        found = true;
        break;
      }
      if (!absl::IsNotFound(text.status())) {
        return absl::Status(text.status().code(),
                            absl::StrCat(Site(group.path_offset), ": cannot import module '", display,
                                         "': ", text.status().message()));
      }
      tried.push_back(absl::StrCat("'", path, "'"));
    }
    if (!found) {
      std::string hint;
      if (!group.relative && options_.lark_grammars_dir.empty()) {
        hint = " (set LarkReadOptions::lark_grammars_dir to Lark's lark/grammars folder for its modules)";
      }
      return ErrorAt(group.path_offset, absl::StrFormat("cannot find module '%s' (tried %s)%s", display,
                                                        absl::StrJoin(tried, ", "), hint));
    }
  }
  std::vector<std::string>& chain = context_->chain;
  if (std::find(chain.begin(), chain.end(), module->path) != chain.end()) {
    return ErrorAt(group.path_offset,
                   absl::StrFormat("import cycle: %s -> %s", absl::StrJoin(chain, " -> "), module->path));
  }
  if (chain.size() >= options_.max_import_depth) {
    return ErrorAt(group.path_offset, absl::StrFormat("imports nested deeper than %d "
                                                      "(LarkReadOptions::max_import_depth)",
                                                      options_.max_import_depth));
  }
  module->reader = std::make_unique<LarkReader>(module->text, module->path, options_, context_, dir);
  chain.push_back(module->path);
  absl::Status s = module->reader->ReadModule();
  chain.pop_back();
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat(s.message(), "; in module '", display, "' imported at ",
                                               Site(group.path_offset)));
  }
  modules_.push_back(std::move(module));
  return modules_.back().get();
}

// Copies expressions of a module's reader into the importing reader.
struct ModuleCopier {
  const LarkReader& src;
  LarkReader& dst;
  const std::vector<RuleId>& map;  // module rule -> importer rule (kNoRule: not copied)

  // Copies `root`. With `inline_terminals` (a terminal body), references to
  // terminals are replaced by their bodies (the module has no terminal cycle).
  absl::StatusOr<ExprId> Copy(ExprId root, bool inline_terminals) {
    struct CopyFrame {
      ExprId src;
      size_t next = 0;
      std::vector<ExprId> done;
    };
    const Grammar& g = src.out_.arena;
    auto resolve = [&](ExprId e) -> absl::StatusOr<ExprId> {
      while (inline_terminals && g.exprs[e].kind == ExprKind::kRuleRef && src.out_.is_terminal[g.exprs[e].rule]) {
        const RuleId t = g.exprs[e].rule;
        if (src.out_.terminals[static_cast<size_t>(src.out_.index_of[t])].declared) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s: an imported terminal refers to the %%declare'd terminal '%s', which has no body to inline",
              src.source_name_, g.rules[t].name));
        }
        e = g.rules[t].body;
      }
      return e;
    };
    std::vector<CopyFrame> stack;
    auto first = resolve(root);
    if (!first.ok()) return first.status();
    stack.push_back({*first, 0, {}});
    ExprId copied = 0;
    while (!stack.empty()) {
      CopyFrame& f = stack.back();
      const Expr& e = g.exprs[f.src];
      if (f.next < e.children.size()) {
        auto child = resolve(e.children[f.next++]);
        if (!child.ok()) return child.status();
        stack.push_back({*child, 0, {}});
        continue;
      }
      Expr copy = e;
      copy.children = std::move(f.done);
      copy.loc = {};
      if (copy.kind == ExprKind::kRuleRef) {
        copy.rule = map[e.rule];
        if (copy.rule == kNoRule) return absl::InternalError("lark import: reference to a name not copied");
      }
      copied = dst.AddNode(std::move(copy));
      if (auto it = src.param_refs_.find(f.src); it != src.param_refs_.end()) dst.param_refs_[copied] = it->second;
      if (auto it = src.template_uses_.find(f.src); it != src.template_uses_.end()) {
        dst.template_uses_[copied] = it->second;
      }
      if (src.istrings_.contains(f.src)) dst.istrings_.insert(copied);
      stack.pop_back();
      if (!stack.empty()) stack.back().done.push_back(copied);
    }
    return copied;
  }
};

absl::Status LarkReader::ImportGroupNames(const ImportGroup& group) {
  auto loaded = LoadModule(group);
  if (!loaded.ok()) return loaded.status();
  const LarkReader& m = *(*loaded)->reader;
  const bool common = m.source_name_ == kCommonSource;
  const std::string display = absl::StrCat(group.relative ? "." : "", absl::StrJoin(group.parts, "."));
  const std::string prefix = absl::StrJoin(group.parts, "__");
  const size_t n = m.out_.arena.rules.size();
  // 1 = copied, 2 = needed only inside copied terminals (inlined there).
  std::vector<uint8_t> state(n, 0);
  std::vector<size_t> request_of(n, kNone);
  std::vector<RuleId> work;
  for (size_t i = 0; i < group.requests.size(); ++i) {
    const ImportRequest& r = group.requests[i];
    auto it = m.ids_.find(r.name);
    if (it == m.ids_.end() || m.def_offset_[it->second] == kNone) {
      if (common) {
        return ErrorAt(r.offset, absl::StrFormat("module 'common' has no terminal '%s' in zapgram's built-in copy",
                                                 r.name));
      }
      return ErrorAt(r.offset, absl::StrFormat("module '%s' (%s) defines no rule or terminal '%s'", display,
                                               m.source_name_, r.name));
    }
    const RuleId id = it->second;
    if (NameKind(r.alias) != NameKind(r.name)) {
      const char* kind = m.out_.is_terminal[id] ? "terminal" : "rule";
      return ErrorAt(r.offset, absl::StrFormat("the %s '%s' must be imported under a %s name, not '%s'", kind,
                                               r.name, kind, r.alias));
    }
    request_of[id] = i;
    if (state[id] == 0) work.push_back(id);
    state[id] = 1;
  }
  while (!work.empty()) {
    const RuleId id = work.back();
    work.pop_back();
    std::vector<ExprId> exprs = {m.out_.arena.rules[id].body};
    while (!exprs.empty()) {
      const Expr& e = m.out_.arena.exprs[exprs.back()];
      exprs.pop_back();
      for (ExprId c : e.children) exprs.push_back(c);
      if (e.kind != ExprKind::kRuleRef || state[e.rule] == 1) continue;
      const bool copy = !m.out_.is_terminal[id];  // a rule's references are copied
      if (state[e.rule] == 2 && !copy) continue;
      state[e.rule] = copy ? 1 : 2;
      work.push_back(e.rule);
    }
  }
  // What the import needs must be defined in the module (Lark checks only those).
  std::string suffix = absl::StrFormat("; in module '%s' imported at %s", display, Site(group.path_offset));
  if (absl::Status s = m.CheckUndefined(&state, suffix); !s.ok()) return s;
  if (absl::Status s = m.CheckTerminalCycles(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(s.message(), suffix));
  }
  auto mangle = [&](RuleId id) -> std::string {
    if (request_of[id] != kNone) return group.requests[request_of[id]].alias;
    const std::string& name = m.out_.arena.rules[id].name;
    if (name[0] == '_') return absl::StrCat("_", prefix, "__", name.substr(1));
    return absl::StrCat(prefix, "__", name);
  };
  std::vector<RuleId> map(n, kNoRule);
  for (RuleId id = 0; id < n; ++id) {
    if (state[id] != 1) continue;
    const std::string name = mangle(id);
    const size_t offset = request_of[id] != kNone ? group.requests[request_of[id]].offset : group.path_offset;
    const RuleId to = Symbol(name, m.out_.is_terminal[id], kNone);
    if (def_offset_[to] != kNone) {
      return ErrorAt(offset, request_of[id] != kNone
                                 ? AlreadyDefined(name, to)
                                 : absl::StrFormat("importing from module '%s' needs '%s', but %s", display, name,
                                                   AlreadyDefined(name, to)));
    }
    def_offset_[to] = offset;
    imported_[to] = true;
    dependency_[to] = request_of[id] == kNone;
    map[id] = to;
  }
  ModuleCopier copier{m, *this, map};
  for (RuleId id = 0; id < n; ++id) {
    if (state[id] != 1) continue;
    const RuleId to = map[id];
    const size_t offset = def_offset_[to];
    const std::string& name = out_.arena.rules[to].name;
    Rule& rule = out_.arena.rules[to];
    rule.loc = LocationOf(offset);
    const size_t index = static_cast<size_t>(m.out_.index_of[id]);
    if (m.out_.is_terminal[id]) {
      const LarkTerminal& from = m.out_.terminals[index];
      LarkTerminal t = from;
      t.rule = to;
      t.hidden = name[0] == '_';
      t.imported = true;
      t.loc = rule.loc;
      if (from.declared) {
        out_.declared.push_back(name);
        out_.arena.rules[to].body = out_.arena.AddEmpty();
      } else {
        auto body = copier.Copy(m.out_.arena.rules[id].body, true);
        if (!body.ok()) return body.status();
        out_.arena.rules[to].body = *body;
      }
      out_.index_of[to] = static_cast<int32_t>(out_.terminals.size());
      out_.terminals.push_back(t);
      continue;
    }
    const LarkRule& from = m.out_.rules[index];
    LarkRule r = from;
    r.rule = to;
    r.hidden = name[0] == '_';
    r.loc = rule.loc;
    r.alternatives.clear();
    for (ExprId alt : from.alternatives) {
      auto copied = copier.Copy(alt, false);
      if (!copied.ok()) return copied.status();
      r.alternatives.push_back(*copied);
    }
    out_.arena.rules[to].body = out_.arena.AddChoice(r.alternatives, rule.loc);
    if (auto it = m.params_.find(id); it != m.params_.end()) params_[to] = it->second;
    out_.index_of[to] = static_cast<int32_t>(out_.rules.size());
    out_.rules.push_back(std::move(r));
  }
  return absl::OkStatus();
}

}  // namespace zapgram::grammar::lark_internal
