// Lowering a grammar in llguidance's Lark dialect (LarkGrammar::llguidance,
// grammar/lark_llguidance.cc) to a byte-level grammar::Grammar.
//
// Why byte level. llguidance parses with Earley over lexemes that a lexer
// finds in context: only the lexemes the parser can take next are tried
// (Lark's `lexer='dynamic'`, which its docs/syntax.md names as the model).
// Lark's context-free lexer (parser/lexer.h, what plain Lark grammars get)
// would cut the text differently: `start: "a" X` with `X: /a+/` accepts
// "aaa" in llguidance, and Lark's lexer takes the whole "aaa" as one X. So
// here each lexeme is a terminal matched in context by the byte-level
// Earley parser, and the rules are a plain CFG over them:
//  - a named terminal is a rule whose body is one regex, built from its
//    definition (strings escaped, /regex/ scoped with its flags, references
//    inlined, `{M,N}` counted, `A & B` and `~A` as zapgram's set operations
//    (?&:A|B) and (?~:A), grammar/regex_compiler.h); anonymous strings,
//    regexes and ranges in rules stay literals, regexes and classes;
//  - %ignore: each lexeme in a rule is followed by IGN, the rule
//    `%ignore` = (I1|I2|...)* over the %ignore'd terminals, or (...)? with
//    the option ignore_once. So ignored text may stand between lexemes and
//    after the last one, and before the first only with allow_initial_skip
//    (llguidance's default: not at the start); nothing is ignored inside a
//    lexeme;
//  - `<|name|>`, `<[ids]>`: kTokenIds nodes as the reader made them (one
//    whole vocabulary token, as XGrammar's Token(...));
//  - %json { schema }: options.json_schema compiles the schema (its
//    "x-guidance" options as llguidance documents them,
//    transforms/llguidance_json.h) and the grammar is appended under the
//    prefix "%jsonK." (AppendGrammar); the reference is that grammar's root;
//  - parametric rules `name::_` (llguidance's docs/parametric.md): each
//    (rule, value) the start rule reaches is one rule `name::0x..`, its
//    `%if` alternatives kept where the condition holds for the value and
//    its references `other::EXPR` evaluated for it
//    (grammar/lark_llguidance_params.h); a worklist, bounded by
//    LarkLoweringOptions::max_parametric_instances;
//  - rule attributes: capture and temperature as XGrammar's
//    (ApplyRuleAttributes); `lazy` and `suffix=T` make the rule one lexeme:
//    its body (terminals only) as one regex R, or R then T, made lazy
//    (MakeRuleLazy: the strings of the language that extend no shorter one).
// Where llguidance's lexer differs from a CFG over terminals: it is greedy
// (a lexeme goes on while any lexeme allowed there can go on), so where one
// lexeme can be followed directly by bytes that extend it (`A A` with
// `A: /a+/` and no separator) llguidance accepts fewer texts than this
// grammar. docs/llguidance-lark.md lists this and the other deviations.
// CheckGreedy warns (Grammar::warnings) where a rule writes two lexemes side
// by side (or repeats one) and the first can go on with a byte the second
// can start with: the places where that difference shows. It looks at
// adjacent items of one sequence only, not across rules.
//
// Every walk has an explicit stack. Tests: tests/grammar/lark_llguidance_test.cc.
#include <bitset>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grammar/lark_llguidance_params.h"
#include "grammar/lark_lowering.h"
#include "grammar/regex_compiler.h"
#include "grammar/regex_render.h"
#include "grammar/rule_attributes.h"

namespace zapgram::grammar {
namespace {

constexpr RuleId kNoRuleId = static_cast<RuleId>(-1);

class LlguidanceLowering {
 public:
  LlguidanceLowering(const LarkGrammar& lark, const LarkLoweringOptions& options)
      : lark_(lark), in_(lark.arena), options_(options), pattern_(in_.exprs.size()), done_(in_.exprs.size(), 0) {}

  absl::StatusOr<Grammar> Run();

 private:
  std::string Site(SourceLocation loc) const {
    return absl::StrFormat("%s:%d:%d", in_.source_name, loc.line, loc.col);
  }
  absl::Status ErrorAt(SourceLocation loc, std::string_view message) const {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s", Site(loc), message));
  }
  bool IsTerminal(RuleId r) const { return lark_.is_terminal[r]; }
  const LarkRule* RuleOf(RuleId r) const {
    return IsTerminal(r) || lark_.index_of[r] < 0 ? nullptr : &lark_.rules[static_cast<size_t>(lark_.index_of[r])];
  }
  bool IsLexemeRule(RuleId r) const {
    const LarkRule* rule = RuleOf(r);
    return rule != nullptr && (rule->attributes.lazy || rule->suffix != kNoLarkExpr);
  }

  absl::StatusOr<std::string> Pattern(ExprId root, std::string_view what);
  absl::StatusOr<RuleId> TerminalRule(RuleId terminal);
  absl::StatusOr<RuleId> RuleFor(RuleId rule, uint64_t value, bool param_ref, SourceLocation loc);
  absl::StatusOr<ExprId> CopyBody(ExprId root, uint64_t value);
  absl::StatusOr<ExprId> Json(const Expr& e);
  std::optional<std::string> LexemePattern(ExprId id);
  void CheckGreedy(ExprId first, ExprId second);
  ExprId AfterLexeme(ExprId lexeme) {
    if (ignore_rule_ == kNoRuleId) return lexeme;
    return out_.AddSequence({lexeme, out_.AddRuleRef(ignore_rule_)});
  }
  RuleId NewRule(std::string name, SourceLocation loc) {
    out_.rules.push_back({std::move(name), 0, loc});
    return static_cast<RuleId>(out_.rules.size() - 1);
  }

  const LarkGrammar& lark_;
  const Grammar& in_;
  const LarkLoweringOptions& options_;
  Grammar out_;
  std::vector<std::string> pattern_;  // per input expression, once rendered
  std::vector<uint8_t> done_;
  // (input rule or terminal, parameter value) -> output rule; 0 for rules
  // that are not parametric.
  absl::flat_hash_map<std::pair<RuleId, uint64_t>, RuleId> rule_map_;
  std::vector<std::pair<RuleId, uint64_t>> pending_;  // instances whose bodies are still to copy
  uint32_t instances_ = 0;
  RuleId ignore_rule_ = kNoRuleId;
  uint32_t json_count_ = 0;
  // CheckGreedy: per lexeme regex, the bytes that go on from an accepting
  // state and the bytes that start it (nullopt: not compiled); pairs done.
  struct Edges {
    std::bitset<256> go_on, start;
  };
  absl::flat_hash_map<std::string, std::optional<Edges>> edges_;
  absl::flat_hash_set<std::pair<ExprId, ExprId>> greedy_checked_;
  absl::flat_hash_set<std::pair<std::string, std::string>> greedy_warned_;
};

// The regex of a terminal-side expression (a terminal body, an %ignore, a
// lexeme rule's body). Post-order with an explicit stack; a reference to a
// terminal has that terminal's body as its one child; memoized per node.
absl::StatusOr<std::string> LlguidanceLowering::Pattern(ExprId root, std::string_view what) {
  struct Frame {
    ExprId id;
    size_t next;
  };
  std::vector<Frame> stack = {{root, 0}};
  auto children = [&](ExprId id) -> std::vector<ExprId> {
    const Expr& e = in_.exprs[id];
    if (e.kind == ExprKind::kRuleRef) return {in_.rules[e.rule].body};
    return e.children;
  };
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (done_[f.id]) {
      stack.pop_back();
      continue;
    }
    const Expr& e = in_.exprs[f.id];
    if (e.kind == ExprKind::kRuleRef && !IsTerminal(e.rule)) {
      return ErrorAt(e.loc, absl::StrFormat("%s refers to the rule '%s'; it must be made of terminals only",
                                            what, in_.rules[e.rule].name));
    }
    if (e.kind == ExprKind::kRuleRef && lark_.terminals[static_cast<size_t>(lark_.index_of[e.rule])].declared) {
      return ErrorAt(e.loc, absl::StrFormat("the %%declare'd terminal '%s' has no definition", in_.rules[e.rule].name));
    }
    if (e.kind == ExprKind::kTokenIds) {
      return ErrorAt(e.loc, absl::StrFormat("%s holds a special token; llguidance allows them in rules only", what));
    }
    if (e.kind == ExprKind::kEmpty && (e.flags & kLarkJson) != 0) {
      return ErrorAt(e.loc, absl::StrFormat("%s holds %%json; a JSON Schema is a grammar, not a lexeme", what));
    }
    const std::vector<ExprId> kids = children(f.id);
    if (f.next < kids.size()) {
      stack.push_back({kids[f.next++], 0});
      continue;
    }
    std::string p;
    switch (e.kind) {
      case ExprKind::kEmpty:
        break;
      case ExprKind::kLiteral:
        p = PythonEscape(e.literal);
        break;
      case ExprKind::kCharClass:
        p = ClassRegexp(e.ranges);
        break;
      case ExprKind::kRegex:
        p = ScopedRegexp(e.literal, e.flags);
        break;
      case ExprKind::kRuleRef:
        p = absl::StrCat("(?:", pattern_[kids[0]], ")");
        break;
      case ExprKind::kSequence:
        for (ExprId c : kids) absl::StrAppend(&p, "(?:", pattern_[c], ")");
        break;
      case ExprKind::kChoice: {
        const char* open = (e.flags & kLarkIntersection) ? "(?&:" : (e.flags & kLarkComplement) ? "(?~:" : "(?:";
        p = open;
        for (size_t k = 0; k < kids.size(); ++k) absl::StrAppend(&p, k ? "|" : "", "(?:", pattern_[kids[k]], ")");
        p += ")";
        break;
      }
      case ExprKind::kRepeat:
        p = absl::StrCat("(?:", pattern_[kids[0]], ")", RepeatSuffix(e.min, e.max));
        break;
      default:
        return ErrorAt(e.loc, absl::StrFormat("%s: unexpected expression", what));
    }
    if (p.size() > options_.max_token_pattern_bytes) {
      return ErrorAt(e.loc, absl::StrFormat("%s: its regex exceeds %d bytes (max_token_pattern_bytes)", what,
                                            options_.max_token_pattern_bytes));
    }
    pattern_[f.id] = std::move(p);
    done_[f.id] = 1;
    stack.pop_back();
  }
  return pattern_[root];
}

absl::StatusOr<RuleId> LlguidanceLowering::TerminalRule(RuleId terminal) {
  if (auto it = rule_map_.find({terminal, 0}); it != rule_map_.end()) return it->second;
  const LarkTerminal& t = lark_.terminals[static_cast<size_t>(lark_.index_of[terminal])];
  const std::string& name = in_.rules[terminal].name;
  if (t.declared) {
    return ErrorAt(t.loc, absl::StrFormat("the %%declare'd terminal '%s' is used, but llguidance's dialect has "
                                          "no postlexer to produce it", name));
  }
  if (t.has_priority) {
    return ErrorAt(t.loc, absl::StrFormat("terminal priority on '%s': llguidance's lexer has no terminal "
                                          "priorities (its docs list them as unsupported)", name));
  }
  auto p = Pattern(in_.rules[terminal].body, absl::StrFormat("the terminal '%s'", name));
  if (!p.ok()) return p.status();
  const RuleId r = NewRule(name, t.loc);
  out_.rules[r].body = out_.AddRegex(*p, 0, t.loc);
  rule_map_.emplace(std::make_pair(terminal, uint64_t{0}), r);
  return r;
}

absl::StatusOr<RuleId> LlguidanceLowering::RuleFor(RuleId rule, uint64_t value, bool param_ref, SourceLocation loc) {
  if (IsTerminal(rule)) return TerminalRule(rule);
  const std::string& name = in_.rules[rule].name;
  const bool parametric = RuleOf(rule)->parametric;
  if (parametric != param_ref) {
    return ErrorAt(loc, parametric ? absl::StrFormat("the parametric rule '%s' needs a parameter ('%s::...')", name, name)
                                   : absl::StrFormat("'%s::...': the rule '%s' takes no parameter", name, name));
  }
  if (!parametric) value = 0;
  if (auto it = rule_map_.find({rule, value}); it != rule_map_.end()) return it->second;
  if (parametric && ++instances_ > options_.max_parametric_instances) {
    return ErrorAt(loc, absl::StrFormat("parametric rules reach more than %d (rule, parameter) instances "
                                        "(LarkLoweringOptions::max_parametric_instances)",
                                        options_.max_parametric_instances));
  }
  const RuleId r = NewRule(parametric ? absl::StrFormat("%s::0x%x", name, value) : name, in_.rules[rule].loc);
  rule_map_.emplace(std::make_pair(rule, value), r);
  pending_.push_back({rule, value});
  return r;
}

absl::StatusOr<ExprId> LlguidanceLowering::Json(const Expr& e) {
  if (!options_.json_schema) {
    return ErrorAt(e.loc, "%json needs the JSON Schema compiler (LarkLoweringOptions::json_schema), which this "
                          "caller did not supply");
  }
  absl::StatusOr<Grammar> schema = options_.json_schema(e.literal, Site(e.loc));
  if (!schema.ok()) {
    return absl::Status(schema.status().code(), absl::StrCat(Site(e.loc), ": %json: ", schema.status().message()));
  }
  absl::StatusOr<RuleId> root = AppendGrammar(out_, *schema, absl::StrCat("%json", json_count_++, "."));
  if (!root.ok()) return root.status();
  return out_.AddRuleRef(*root, e.loc);
}

// The regex of a rule-side item that is one greedy lexeme (a string, regex,
// range or terminal); nullopt for anything else.
std::optional<std::string> LlguidanceLowering::LexemePattern(ExprId id) {
  const Expr& e = in_.exprs[id];
  switch (e.kind) {
    case ExprKind::kLiteral:
      return PythonEscape(e.literal);
    case ExprKind::kRegex:
      return ScopedRegexp(e.literal, e.flags);
    case ExprKind::kCharClass:
      return ClassRegexp(e.ranges);
    case ExprKind::kRuleRef: {
      if (!IsTerminal(e.rule)) return std::nullopt;
      absl::StatusOr<std::string> p = Pattern(in_.rules[e.rule].body, "a terminal");
      if (!p.ok()) return std::nullopt;
      return *p;
    }
    default:
      return std::nullopt;
  }
}

void LlguidanceLowering::CheckGreedy(ExprId first, ExprId second) {
  constexpr size_t kMaxGreedyWarnings = 20;
  if (greedy_warned_.size() >= kMaxGreedyWarnings || !greedy_checked_.insert({first, second}).second) return;
  const std::optional<std::string> a = LexemePattern(first);
  const std::optional<std::string> b = LexemePattern(second);
  if (!a || !b) return;
  auto edges = [&](const std::string& pattern) -> const std::optional<Edges>& {
    auto [it, inserted] = edges_.try_emplace(pattern);
    if (!inserted) return it->second;
    absl::StatusOr<ByteDfa> dfa = CompileRegex(pattern, 0);
    if (!dfa.ok() || dfa->empty()) return it->second;
    Edges out;
    for (uint32_t s = 1; s < dfa->num_states(); ++s) {
      for (uint32_t byte = 0; byte < 256; ++byte) {
        if (dfa->next[s][byte] == 0) continue;
        if (dfa->accepting[s]) out.go_on.set(byte);
        if (s == 1) out.start.set(byte);
      }
    }
    it->second = out;
    return it->second;
  };
  const std::optional<Edges> ea = edges(*a);  // copies: the second lookup may rehash
  const std::optional<Edges> eb = edges(*b);
  if (!ea || !eb || (ea->go_on & eb->start).none()) return;
  const std::string x = DumpExpr(in_, first), y = DumpExpr(in_, second);
  if (!greedy_warned_.insert({x, y}).second) return;
  out_.warnings.push_back(absl::StrFormat(
      "%s: %s then %s: the first can go on with a byte the second can start with; llguidance's greedy "
      "lexer then takes the longer first lexeme, so this grammar (which also splits them) accepts texts "
      "llguidance refuses (docs/llguidance-lark.md)",
      Site(in_.exprs[first].loc), x, y));
}

// A rule body: lexemes followed by IGN, rule references mapped.
absl::StatusOr<ExprId> LlguidanceLowering::CopyBody(ExprId root, uint64_t value) {
  struct Frame {
    ExprId id;
    size_t next;
    std::vector<ExprId> done;
  };
  std::vector<Frame> stack = {{root, 0, {}}};
  ExprId copied = 0;
  while (!stack.empty()) {
    Frame& f = stack.back();
    const Expr& e = in_.exprs[f.id];
    if (e.kind == ExprKind::kChoice && (e.flags & kLarkCondition) != 0 && f.next == 0) {
      const ParamResult holds = EvalParam(e.literal, value, /*want_condition=*/true);
      if (!holds.ok) return ErrorAt(e.loc, absl::StrFormat("%%if %s: %s", e.literal, holds.error));
      if (holds.value == 0) {  // the alternative is not there for this value
        copied = out_.AddCharClass({}, false, e.loc);
        stack.pop_back();
        if (!stack.empty()) stack.back().done.push_back(copied);
        continue;
      }
    }
    if ((e.kind == ExprKind::kSequence || e.kind == ExprKind::kChoice || e.kind == ExprKind::kRepeat) &&
        (e.flags & (kLarkIntersection | kLarkComplement)) == 0 && f.next < e.children.size()) {
      stack.push_back({e.children[f.next++], 0, {}});
      continue;
    }
    switch (e.kind) {
      case ExprKind::kEmpty:
        if (e.flags & kLarkJson) {
          auto j = Json(e);
          if (!j.ok()) return j.status();
          copied = AfterLexeme(*j);
        } else {
          copied = out_.AddEmpty(e.loc);
        }
        break;
      case ExprKind::kLiteral:
        copied = AfterLexeme(out_.AddLiteral(e.literal, e.loc));
        break;
      case ExprKind::kCharClass:
        copied = AfterLexeme(out_.AddCharClass(e.ranges, false, e.loc));
        break;
      case ExprKind::kRegex:
        copied = AfterLexeme(out_.AddRegex(e.literal, e.flags, e.loc));
        break;
      case ExprKind::kTokenIds: {
        Expr copy = e;
        out_.exprs.push_back(std::move(copy));
        copied = AfterLexeme(static_cast<ExprId>(out_.exprs.size() - 1));
        break;
      }
      case ExprKind::kRuleRef: {
        uint64_t arg = 0;
        const bool param_ref = (e.flags & kLarkParamRef) != 0;
        if (param_ref) {
          const ParamResult v = EvalParam(e.literal, value, /*want_condition=*/false);
          if (!v.ok) return ErrorAt(e.loc, absl::StrFormat("::%s: %s", e.literal, v.error));
          arg = v.value;
        }
        auto r = RuleFor(e.rule, arg, param_ref, e.loc);
        if (!r.ok()) return r.status();
        copied = out_.AddRuleRef(*r, e.loc);
        if (IsTerminal(e.rule) || IsLexemeRule(e.rule)) copied = AfterLexeme(copied);
        break;
      }
      case ExprKind::kSequence:
        for (size_t k = 0; k + 1 < e.children.size(); ++k) CheckGreedy(e.children[k], e.children[k + 1]);
        copied = out_.AddSequence(std::move(f.done), e.loc);
        break;
      case ExprKind::kChoice:
        if (e.flags & (kLarkIntersection | kLarkComplement)) {
          return ErrorAt(e.loc, "'&' and '~' may be used in terminal definitions only");
        }
        copied = (e.flags & kLarkCondition) ? f.done[0] : out_.AddChoice(std::move(f.done), e.loc);
        break;
      case ExprKind::kRepeat:
        if (e.max > 1) CheckGreedy(e.children[0], e.children[0]);
        copied = out_.AddRepeat(f.done[0], e.min, e.max, e.loc);
        break;
      default:
        return ErrorAt(e.loc, "unexpected expression in a rule");
    }
    stack.pop_back();
    if (!stack.empty()) stack.back().done.push_back(copied);
  }
  return copied;
}

absl::StatusOr<Grammar> LlguidanceLowering::Run() {
  out_.source_name = in_.source_name;
  if (!lark_.has_start) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: the grammar has no 'start' rule", in_.source_name));
  }
  if (!lark_.ignores.empty()) {
    std::string alternatives;
    for (const LarkIgnore& ignore : lark_.ignores) {
      auto p = Pattern(ignore.expr, "%ignore");
      if (!p.ok()) return p.status();
      absl::StrAppend(&alternatives, alternatives.empty() ? "" : "|", "(?:", *p, ")");
    }
    ignore_rule_ = NewRule("%ignore", lark_.ignores[0].loc);
    const ExprId once = out_.AddRegex(absl::StrCat("(?:", alternatives, ")"), 0, lark_.ignores[0].loc);
    out_.rules[ignore_rule_].body =
        out_.AddRepeat(once, 0, lark_.llguidance_options.ignore_once ? 1 : kUnbounded, lark_.ignores[0].loc);
  }
  if (lark_.dialect_reason != "LarkDialect::kLlguidance") {
    // Chosen by what the text uses: said once, so `zapgram check` shows it.
    out_.warnings.push_back(absl::StrFormat("%s: read in llguidance's Lark dialect (its first construct: %s; "
                                            "docs/llguidance-lark.md)", in_.source_name, lark_.dialect_reason));
  }
  auto start = RuleFor(in_.root, 0, /*param_ref=*/false, in_.rules[in_.root].loc);
  if (!start.ok()) return start.status();
  out_.root = *start;
  if (ignore_rule_ != kNoRuleId && lark_.llguidance_options.allow_initial_skip) {
    const RuleId top = NewRule("%start", {});
    out_.rules[top].body = out_.AddSequence({out_.AddRuleRef(ignore_rule_), out_.AddRuleRef(*start)});
    out_.root = top;
  }
  while (!pending_.empty()) {
    const auto [rule, value] = pending_.back();
    pending_.pop_back();
    const RuleId r = rule_map_.at({rule, value});
    const LarkRule& lr = *RuleOf(rule);
    const std::string& name = in_.rules[rule].name;
    if (IsLexemeRule(rule) && lr.parametric) {
      return ErrorAt(lr.loc, absl::StrFormat("the parametric rule '%s' cannot be a lexeme (lazy or suffix=)", name));
    }
    if (IsLexemeRule(rule)) {
      auto p = Pattern(in_.rules[rule].body, absl::StrFormat("the lexeme rule '%s' (lazy or suffix=)", name));
      if (!p.ok()) return p.status();
      std::string pattern = *p;
      if (lr.suffix != kNoLarkExpr) {
        auto s = Pattern(lr.suffix, absl::StrFormat("the suffix of '%s'", name));
        if (!s.ok()) return s.status();
        pattern = absl::StrCat("(?:", pattern, ")(?:", *s, ")");
      }
      out_.rules[r].body = out_.AddRegex(std::move(pattern), 0, lr.loc);
      if (absl::Status s = MakeRuleLazy(out_, r); !s.ok()) return ErrorAt(lr.loc, std::string(s.message()));
    } else {
      auto body = CopyBody(in_.rules[rule].body, value);
      if (!body.ok()) return body.status();
      out_.rules[r].body = *body;
    }
    ApplyRuleAttributes(lr.attributes, out_.rules[r]);
  }
  if (absl::Status s = out_.Validate(); !s.ok()) return s;
  return std::move(out_);
}

}  // namespace

absl::StatusOr<Grammar> LowerLlguidanceLark(const LarkGrammar& lark, const LarkLoweringOptions& options) {
  LlguidanceLowering lowering(lark, options);
  return lowering.Run();
}

}  // namespace zapgram::grammar
