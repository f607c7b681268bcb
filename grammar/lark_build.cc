// Lark reader, stage 4: checks of the module as read, and the result.
//
// Checks. CheckUndefined reports a name that is mentioned but neither
// defined, imported nor %declare'd, at its earliest use; CheckTerminalCycles
// refuses recursive terminals (an iterative colored DFS over the terminal
// graph; Lark's terminals must be regular); CheckTemplateUses pairs every
// template with arguments of its arity. The import stage runs the first two
// on what an import needs from a module, the driver on the whole text.
//
// Build copies the module as read into a fresh arena: the arena order is the
// first mention in the text (imported dependencies last), the rules and
// terminals are in definition order, and templates are expanded.
//
// Templates (Lark's `_sep{x, sep}: x (sep x)*`, used as `_sep{item, ","}`).
// While a module is read, a template definition is an ordinary rule listed
// in `params_`; a parameter inside its body is a placeholder node (kEmpty,
// listed in `param_refs_`), and a use is a kRuleRef to the template whose
// `children` are the argument expressions (listed in `template_uses_` with
// its "file:line:col"). Arguments may be any expansion (Lark allows single
// values: names, literals, regexes, ranges, template uses). The build copies
// every non-template definition into a fresh arena; at a use it copies the
// arguments into a scratch arena, names the instance as Lark does,
// `name{arg,arg}` with each argument's dump (so equal argument tuples share
// one rule and no user name can clash: `{` is not a name character), and
// queues the instance, whose body is the template's with the parameters
// replaced by copies of the arguments. The queue is a loop, not recursion;
// a template instantiating itself with growing arguments stops at
// LarkReadOptions::max_template_instances or max_template_exprs with an
// error naming the use. Templates disappear from the result.
//
// Tests: tests/grammar/lark_reader_test.cc
// (TemplatesExpandToOneRulePerArgumentTuple,
// NestedTemplatesLiteralAndExpressionArguments, TemplateErrorsAndBudgets,
// Errors, SyncodeCalcGolden).
#include "grammar/lark_reader_internal.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace zapgram::grammar::lark_internal {
namespace {

// Builds the result from the module as read: a fresh arena holding every
// definition except templates, plus one rule per distinct template instance.
class TemplateExpander {
 public:
  TemplateExpander(const LarkGrammar& in, const absl::flat_hash_map<RuleId, std::vector<std::string>>& params,
                   const absl::flat_hash_map<ExprId, uint32_t>& param_refs,
                   const absl::flat_hash_map<ExprId, std::string>& uses, const absl::flat_hash_set<ExprId>& istrings,
                   const LarkReadOptions& options, LarkGrammar* out)
      : in_(in), params_(params), param_refs_(param_refs), uses_(uses), istrings_(istrings), options_(options),
        out_(*out), budget_(in.arena.exprs.size() + options.max_template_exprs) {}

  std::vector<RuleId> map;  // input rule -> output rule (kNoRule for templates)

  // Copies input expression `root` into the output arena. `env` binds the
  // parameters of the template being instantiated (scratch expressions).
  absl::StatusOr<ExprId> Copy(ExprId root, const std::vector<ExprId>* env) {
    return CopyInto(root, env, &out_.arena);
  }

  // Builds the queued instances (and those they queue).
  absl::Status RunQueue() {
    for (size_t j = 0; j < jobs_.size(); ++j) {
      const Job job = jobs_[j];
      site_ = job.site;
      const LarkRule& from = in_.rules[static_cast<size_t>(in_.index_of[job.template_rule])];
      LarkRule r = from;
      r.rule = job.rule;
      r.alternatives.clear();
      for (ExprId alt : from.alternatives) {
        auto copied = CopyInto(alt, &job.args, &out_.arena);
        if (!copied.ok()) return copied.status();
        r.alternatives.push_back(*copied);
      }
      out_.arena.rules[job.rule].body = out_.arena.AddChoice(r.alternatives, from.loc);
      out_.index_of[job.rule] = static_cast<int32_t>(out_.rules.size());
      out_.rules.push_back(std::move(r));
    }
    return absl::OkStatus();
  }

 private:
  struct Job {
    RuleId template_rule;  // input rule
    RuleId rule;           // output rule of the instance
    std::vector<ExprId> args;  // in scratch_
    std::string site;
  };

  absl::Status OverBudget() const {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: template expansion exceeds its budget of %d expression nodes (LarkReadOptions::max_template_exprs); "
        "does a template instantiate itself with growing arguments?",
        site_, options_.max_template_exprs));
  }
  bool Over() const { return out_.arena.exprs.size() + scratch_.exprs.size() > budget_; }

  // Plain copy of scratch expression `root` into `dst` (which may be scratch_).
  absl::StatusOr<ExprId> CopyBound(ExprId root, Grammar* dst) {
    struct F {
      ExprId src;
      size_t next;
      std::vector<ExprId> done;
    };
    std::vector<F> stack = {{root, 0, {}}};
    ExprId copied = 0;
    while (!stack.empty()) {
      F& f = stack.back();
      if (f.next < scratch_.exprs[f.src].children.size()) {
        const ExprId child = scratch_.exprs[f.src].children[f.next++];
        stack.push_back({child, 0, {}});
        continue;
      }
      Expr copy = scratch_.exprs[f.src];
      copy.children = std::move(f.done);
      const bool istring = scratch_istrings_.contains(f.src);
      dst->exprs.push_back(std::move(copy));
      copied = static_cast<ExprId>(dst->exprs.size() - 1);
      Mark(istring, copied, dst);
      if (Over()) return OverBudget();
      stack.pop_back();
      if (!stack.empty()) stack.back().done.push_back(copied);
    }
    return copied;
  }

  void Mark(bool istring, ExprId id, const Grammar* dst) {
    if (!istring) return;
    if (dst == &scratch_) {
      scratch_istrings_.insert(id);
    } else {
      out_.istring_exprs.push_back(id);
    }
  }

  absl::StatusOr<ExprId> CopyInto(ExprId root, const std::vector<ExprId>* env, Grammar* target) {
    struct F {
      ExprId src;
      Grammar* dst;
      size_t next;
      std::vector<ExprId> done;
    };
    std::vector<F> stack = {{root, target, 0, {}}};
    ExprId copied = 0;
    while (!stack.empty()) {
      F& f = stack.back();
      const Expr& e = in_.arena.exprs[f.src];
      if (auto it = param_refs_.find(f.src); it != param_refs_.end()) {
        if (env == nullptr || it->second >= env->size()) {
          return absl::InternalError("lark templates: a parameter outside its template");
        }
        auto bound = CopyBound((*env)[it->second], f.dst);
        if (!bound.ok()) return bound.status();
        copied = *bound;
      } else {
        const bool use = uses_.contains(f.src);
        if (f.next < e.children.size()) {
          const ExprId child = e.children[f.next++];
          stack.push_back({child, use ? &scratch_ : f.dst, 0, {}});
          continue;
        }
        if (use) {
          auto instance = Instantiate(f.src, std::move(f.done));
          if (!instance.ok()) return instance.status();
          copied = f.dst->AddRuleRef(*instance, e.loc);
        } else {
          Expr copy = e;
          copy.children = std::move(f.done);
          if (copy.kind == ExprKind::kRuleRef) {
            copy.rule = map[e.rule];
            if (copy.rule == kNoRule) {
              return absl::InvalidArgumentError(absl::StrFormat(
                  "%s:%d:%d: the template '%s' is used without arguments '{...}'", in_.arena.source_name,
                  e.loc.line, e.loc.col, in_.arena.rules[e.rule].name));
            }
          }
          f.dst->exprs.push_back(std::move(copy));
          copied = static_cast<ExprId>(f.dst->exprs.size() - 1);
          Mark(istrings_.contains(f.src), copied, f.dst);
        }
        if (Over()) return OverBudget();
      }
      stack.pop_back();
      if (!stack.empty()) stack.back().done.push_back(copied);
    }
    return copied;
  }

  // The output rule of template use `use` with `args` (scratch expressions).
  absl::StatusOr<RuleId> Instantiate(ExprId use, std::vector<ExprId> args) {
    const Expr& e = in_.arena.exprs[use];
    const std::string& site = uses_.at(use);
    const std::string& name = in_.arena.rules[e.rule].name;
    auto it = params_.find(e.rule);
    if (it == params_.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: '%s' is used with arguments '{...}' but is not a template", site, name));
    }
    if (it->second.size() != args.size()) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: the template '%s' takes %d arguments, got %d", site,
                                                        name, it->second.size(), args.size()));
    }
    // Scratch names mirror the output's, for the dumps of the arguments.
    for (size_t r = scratch_.rules.size(); r < out_.arena.rules.size(); ++r) {
      scratch_.rules.push_back({out_.arena.rules[r].name, 0, {}});
    }
    std::vector<std::string> dumped;
    for (ExprId a : args) dumped.push_back(DumpExpr(scratch_, a));
    std::string key = absl::StrCat(name, "{", absl::StrJoin(dumped, ","), "}");
    if (auto found = instances_.find(key); found != instances_.end()) return found->second;
    name_bytes_ += key.size();
    if (name_bytes_ > options_.max_template_name_bytes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: template expansion exceeds its budget of %d bytes of instance names "
          "(LarkReadOptions::max_template_name_bytes) at '%s{...}'; are template uses nested too deeply?",
          site, options_.max_template_name_bytes, name));
    }
    if (instances_.size() >= options_.max_template_instances) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: template expansion exceeds its budget of %d instances (LarkReadOptions::max_template_instances) "
          "at '%s{...}'; does a template instantiate itself with growing arguments?",
          site, options_.max_template_instances, name));
    }
    const RuleId id = static_cast<RuleId>(out_.arena.rules.size());
    out_.arena.rules.push_back({key, 0, in_.arena.rules[e.rule].loc});  // body set by RunQueue
    out_.is_terminal.push_back(false);
    out_.index_of.push_back(-1);
    instances_.emplace(std::move(key), id);
    jobs_.push_back({e.rule, id, std::move(args), site});
    return id;
  }

  const LarkGrammar& in_;
  const absl::flat_hash_map<RuleId, std::vector<std::string>>& params_;
  const absl::flat_hash_map<ExprId, uint32_t>& param_refs_;
  const absl::flat_hash_map<ExprId, std::string>& uses_;
  const absl::flat_hash_set<ExprId>& istrings_;
  const LarkReadOptions& options_;
  LarkGrammar& out_;
  const size_t budget_;
  Grammar scratch_;  // template arguments
  absl::flat_hash_set<ExprId> scratch_istrings_;
  absl::flat_hash_map<std::string, RuleId> instances_;
  std::vector<Job> jobs_;
  std::string site_;
  size_t name_bytes_ = 0;
};

}  // namespace

// Rule references read from this text: a template needs arguments, and
// arguments need a template of that arity. Template parameters must not
// shadow a definition (Lark's rule).
absl::Status LarkReader::CheckTemplateUses() const {
  for (const OwnRef& ref : own_refs_) {
    const Expr& e = out_.arena.exprs[ref.expr];
    if (def_offset_[e.rule] == kNone) continue;  // undefined: reported elsewhere
    const std::string& name = out_.arena.rules[e.rule].name;
    auto it = params_.find(e.rule);
    if (!ref.use && it != params_.end()) {
      return ErrorAt(ref.offset, absl::StrFormat("the template '%s' is used without arguments '{...}'", name));
    }
    if (ref.use && it == params_.end()) {
      return ErrorAt(ref.offset, absl::StrFormat("'%s' is used with arguments '{...}' but is not a template", name));
    }
    if (ref.use && it->second.size() != e.children.size()) {
      return ErrorAt(ref.offset, absl::StrFormat("the template '%s' takes %d arguments, got %d", name,
                                                 it->second.size(), e.children.size()));
    }
  }
  for (const LarkRule& r : out_.rules) {
    auto with_params = params_.find(r.rule);
    if (with_params == params_.end()) continue;
    const RuleId id = r.rule;
    for (const std::string& p : with_params->second) {
      auto it = ids_.find(p);
      if (it != ids_.end() && def_offset_[it->second] != kNone) {
        const SourceLocation at = LocationOf(def_offset_[it->second]);
        return ErrorAt(def_offset_[id], absl::StrFormat("the template parameter '%s' of '%s' has the name of the "
                                                        "rule defined at %d:%d", p, out_.arena.rules[id].name,
                                                        at.line, at.col));
      }
    }
  }
  return absl::OkStatus();
}

// Undefined names (of those with only[id] != 0, when given), reported at the
// earliest first use.
absl::Status LarkReader::CheckUndefined(const std::vector<uint8_t>* only, std::string_view suffix) const {
  const size_t n = out_.arena.rules.size();
  size_t worst = kNone;
  RuleId worst_id = 0;
  bool any = false;
  for (RuleId id = 0; id < n; ++id) {
    if (only != nullptr && (*only)[id] == 0) continue;
    if (def_offset_[id] == kNone && (!any || first_use_[id] < worst)) {
      worst = first_use_[id];
      worst_id = id;
      any = true;
    }
  }
  if (!any) return absl::OkStatus();
  const std::string message = absl::StrFormat("undefined %s '%s'", out_.is_terminal[worst_id] ? "terminal" : "rule",
                                              out_.arena.rules[worst_id].name);
  if (worst == kNone) return absl::InvalidArgumentError(absl::StrFormat("%s: %s%s", source_name_, message, suffix));
  return absl::InvalidArgumentError(absl::StrFormat("%s: %s%s", Site(worst), message, suffix));
}

// Terminal references between terminals must form no cycle (Lark refuses
// recursive terminals). Iterative DFS with colors over the terminal graph.
absl::Status LarkReader::CheckTerminalCycles() const {
  const size_t n = out_.arena.rules.size();
  std::vector<std::vector<RuleId>> deps(n);
  for (RuleId id = 0; id < n; ++id) {
    if (!out_.is_terminal[id]) continue;
    std::vector<ExprId> work = {out_.arena.rules[id].body};
    while (!work.empty()) {
      const Expr& e = out_.arena.exprs[work.back()];
      work.pop_back();
      if (e.kind == ExprKind::kRuleRef) deps[id].push_back(e.rule);
      for (ExprId c : e.children) work.push_back(c);
    }
  }
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  for (RuleId root = 0; root < n; ++root) {
    if (!out_.is_terminal[root] || color[root] != 0) continue;
    std::vector<std::pair<RuleId, size_t>> path = {{root, 0}};
    color[root] = 1;
    while (!path.empty()) {
      auto& [id, next] = path.back();
      if (next < deps[id].size()) {
        const RuleId d = deps[id][next++];
        if (color[d] == 1) {
          return ErrorAt(def_offset_[d], absl::StrFormat("terminal '%s' is recursive (terminals must be regular)",
                                                         out_.arena.rules[d].name));
        }
        if (color[d] == 0) {
          color[d] = 1;
          path.push_back({d, 0});
        }
        continue;
      }
      color[id] = 2;
      path.pop_back();
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LarkGrammar> LarkReader::Build() {
  const size_t n = out_.arena.rules.size();
  LarkGrammar g;
  g.arena.source_name = out_.arena.source_name;
  g.declared = out_.declared;
  TemplateExpander expander(out_, params_, param_refs_, template_uses_, istrings_, options_, &g);
  // Arena order: first mention in this text (imported dependencies last);
  // rules and terminals: definition order.
  auto own = [&](RuleId id, size_t offset) { return offset != kNone ? offset : text_.size() + 1 + id; };
  std::vector<RuleId> order(n);
  for (RuleId id = 0; id < n; ++id) order[id] = id;
  std::stable_sort(order.begin(), order.end(), [&](RuleId a, RuleId b) {
    auto key = [&](RuleId id) {
      return own(id, std::min(first_use_[id], dependency_[id] ? kNone : def_offset_[id]));
    };
    return key(a) < key(b);
  });
  expander.map.assign(n, kNoRule);
  for (RuleId id : order) {
    if (params_.contains(id)) continue;
    expander.map[id] = static_cast<RuleId>(g.arena.rules.size());
    g.arena.rules.push_back({out_.arena.rules[id].name, 0, out_.arena.rules[id].loc});
    g.is_terminal.push_back(out_.is_terminal[id]);
    g.index_of.push_back(-1);
  }
  auto def_key = [&](RuleId id) { return own(id, dependency_[id] ? kNone : def_offset_[id]); };
  std::vector<const LarkRule*> rules;
  for (const LarkRule& r : out_.rules) {
    if (!params_.contains(r.rule)) rules.push_back(&r);
  }
  std::stable_sort(rules.begin(), rules.end(),
                   [&](const LarkRule* a, const LarkRule* b) { return def_key(a->rule) < def_key(b->rule); });
  for (const LarkRule* from : rules) {
    LarkRule r = *from;
    r.rule = expander.map[from->rule];
    r.alternatives.clear();
    for (ExprId alt : from->alternatives) {
      auto copied = expander.Copy(alt, nullptr);
      if (!copied.ok()) return copied.status();
      r.alternatives.push_back(*copied);
    }
    if (from->suffix != kNoLarkExpr) {
      auto suffix = expander.Copy(from->suffix, nullptr);
      if (!suffix.ok()) return suffix.status();
      r.suffix = *suffix;
    }
    const SourceLocation body_loc = out_.arena.exprs[out_.arena.rules[from->rule].body].loc;
    g.arena.rules[r.rule].body = g.arena.AddChoice(r.alternatives, body_loc);
    g.index_of[r.rule] = static_cast<int32_t>(g.rules.size());
    g.rules.push_back(std::move(r));
  }
  std::vector<const LarkTerminal*> terminals;
  for (const LarkTerminal& t : out_.terminals) terminals.push_back(&t);
  std::stable_sort(terminals.begin(), terminals.end(),
                   [&](const LarkTerminal* a, const LarkTerminal* b) { return def_key(a->rule) < def_key(b->rule); });
  for (const LarkTerminal* from : terminals) {
    LarkTerminal t = *from;
    t.rule = expander.map[from->rule];
    auto body = expander.Copy(out_.arena.rules[from->rule].body, nullptr);
    if (!body.ok()) return body.status();
    g.arena.rules[t.rule].body = *body;
    g.index_of[t.rule] = static_cast<int32_t>(g.terminals.size());
    g.terminals.push_back(t);
  }
  for (const LarkIgnore& i : out_.ignores) {
    auto expr = expander.Copy(i.expr, nullptr);
    if (!expr.ok()) return expr.status();
    g.ignores.push_back({*expr, i.loc});
  }
  if (absl::Status s = expander.RunQueue(); !s.ok()) return s;
  std::sort(g.istring_exprs.begin(), g.istring_exprs.end());
  g.llguidance = out_.llguidance || options_.dialect == LarkDialect::kLlguidance;
  g.dialect_reason = out_.llguidance ? out_.dialect_reason
                     : g.llguidance  ? std::string("LarkDialect::kLlguidance")
                                     : std::string();
  g.llguidance_options = out_.llguidance_options;
  const int64_t start = g.arena.FindRule(options_.start);
  g.has_start = start >= 0 && !g.is_terminal[static_cast<size_t>(start)];
  g.arena.root = g.has_start ? static_cast<RuleId>(start) : 0;
  if (g.arena.rules.empty()) {
    // The arena needs a rule for Validate(); an empty grammar has none to name.
    return g;
  }
  if (absl::Status s = g.arena.Validate(); !s.ok()) return s;
  return g;
}

}  // namespace zapgram::grammar::lark_internal
