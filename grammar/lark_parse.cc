// Lark reader, stage 2: parsing definitions, bodies and directives.
//
// Lark is line-oriented. Each definition or directive starts a line:
// `[!?_]name[{params}][.prio]: body` (ReadDefinition) or `%directive ...`
// (ReadDirective). A body ends at a newline, unless the next line (after
// blank and comment lines) starts with `|`, or a ( [ or { is still open
// (inside brackets newlines are blanks; Lark's own parser is stricter there).
//
// Bodies (ReadBody) are read without recursion: a stack of group frames,
// frame 0 the body, one frame per open ( [ or template-argument {. `|`
// finishes a sequence, `,` an argument, `)`/`]`/`}` pops a frame, and a
// postfix operator (? * + ~n ~n..m; one per item, as in Lark) wraps the
// last item in a kRepeat. `[x]` is read as x? (the same language; Lark's
// maybe_placeholders only changes the tree). Nesting is bounded by
// LarkReadOptions::max_nesting.
//
// Names become arena rules on first mention (Symbol; rules and terminals
// share the arena, LarkGrammar::is_terminal tells them apart); a definition
// is registered (Register) as a LarkRule or LarkTerminal, or kept for
// %override/%extend, which the driver applies once the text is read. Inside
// a template's body a parameter is a placeholder node (kEmpty, listed in
// param_refs_), and a use `t{a, b}` is a kRuleRef to the template whose
// children are the arguments (listed in template_uses_); grammar/lark_build.cc
// expands them.
//
// llguidance's dialect hooks in at its first bytes (grammar/lark_llguidance.cc
// reads each construct): `<` a special token, `%json`/`%regex`/`%if` inside a
// body, `{` after an item a repetition (a name followed by `{` and a digit or
// `,` is one too, not a template use), `&` an intersection (FinishSequence
// folds the operands), `~` with no number after it a complement (PushItem
// applies it to the next item), `name::` a parametric reference or
// definition, `@` refused.
//
// Tests: tests/grammar/lark_reader_test.cc (RulesFlagsPrioritiesAliases,
// FullDumpOfSmallGrammar, HostileNestingNeverRecurses, Errors).
#include "grammar/lark_reader_internal.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace zapgram::grammar::lark_internal {
namespace {

void FinishSequence(Grammar& g, Frame& frame, const SourceLocation& loc) {
  std::vector<ExprId> items;
  items.reserve(frame.items.size());
  for (const auto& item : frame.items) items.push_back(item.expr);
  ExprId sequence = g.AddSequence(std::move(items), loc);
  if (!frame.condition.empty()) {  // llguidance's `%if COND`
    Expr e;
    e.kind = ExprKind::kChoice;
    e.flags = kLarkCondition;
    e.literal = std::move(frame.condition);
    e.children = {sequence};
    e.loc = loc;
    g.exprs.push_back(std::move(e));
    sequence = static_cast<ExprId>(g.exprs.size() - 1);
    frame.condition.clear();
  }
  if (!frame.conjuncts.empty()) {  // llguidance's `A & B`
    frame.conjuncts.push_back(sequence);
    Expr e;
    e.kind = ExprKind::kChoice;
    e.flags = kLarkIntersection;
    e.children = std::move(frame.conjuncts);
    e.loc = loc;
    g.exprs.push_back(std::move(e));
    sequence = static_cast<ExprId>(g.exprs.size() - 1);
    frame.conjuncts.clear();
  }
  frame.alternatives.push_back(sequence);
  frame.aliases.push_back(std::move(frame.alias));
  frame.alias.clear();
  frame.items.clear();
  frame.after_alias = false;
}

}  // namespace

RuleId LarkReader::Symbol(std::string_view name, bool terminal, size_t use_offset) {
  auto it = ids_.find(std::string(name));
  if (it != ids_.end()) {
    if (first_use_[it->second] == kNone) first_use_[it->second] = use_offset;
    return it->second;
  }
  const RuleId id = static_cast<RuleId>(out_.arena.rules.size());
  Rule rule;
  rule.name = std::string(name);
  rule.body = out_.arena.AddEmpty();
  out_.arena.rules.push_back(std::move(rule));
  out_.is_terminal.push_back(terminal);
  out_.index_of.push_back(-1);
  first_use_.push_back(use_offset);
  def_offset_.push_back(kNone);
  imported_.push_back(false);
  dependency_.push_back(false);
  ids_.emplace(std::string(name), id);
  return id;
}

absl::StatusOr<Body> LarkReader::ReadBody(BodyKind kind) {
  std::vector<Frame> stack(1);
  stack[0].open_offset = pos_;
  stack[0].sequence_offset = pos_;
  auto closer = [](char open) { return open == '(' ? ')' : open == '[' ? ']' : open == '{' ? '}' : 0; };
  while (true) {
    pos_ = SkipInlineFrom(pos_);
    Frame& top = stack.back();
    const char c = At(pos_);
    if (AtEnd() || c == '\n') {
      if (stack.size() > 1) {
        if (AtEnd()) {
          return ErrorAt(pos_, absl::StrFormat("expected '%c' to close the '%c' at %d:%d", closer(top.open),
                                               top.open, LocationOf(top.open_offset).line,
                                               LocationOf(top.open_offset).col));
        }
        ++pos_;
        continue;
      }
      const size_t next = SkipAllFrom(pos_);
      if (At(next) == '|') {
        pos_ = next;
        continue;
      }
      break;
    }
    if (!top.condition.empty() && c != '|') {
      return ErrorAt(pos_, absl::StrCat("expected '|' or end of line after %if, found ", Describe(pos_)));
    }
    if (top.after_alias && c != '|' && c != ')' && c != ']' && c != '}' && c != ',') {
      return ErrorAt(pos_, absl::StrCat("expected '|' or end of line after the alias, found ", Describe(pos_)));
    }
    if (c == '|' && (top.pending_complements != 0 || (!top.conjuncts.empty() && top.items.empty()))) {
      return ErrorAt(pos_, "'&' or '~' must be followed by an item");
    }
    if (c == '|') {
      FinishSequence(out_.arena, top, LocationOf(top.sequence_offset));
      ++pos_;
      top.sequence_offset = pos_;
      continue;
    }
    if (c == '(' || c == '[') {
      if (stack.size() >= options_.max_nesting) {
        return ErrorAt(pos_, absl::StrFormat("nesting deeper than %d (max_nesting)", options_.max_nesting));
      }
      Frame f;
      f.open = c;
      f.open_offset = pos_;
      ++pos_;
      f.sequence_offset = pos_;
      stack.push_back(std::move(f));
      continue;
    }
    if (c == ',' || c == '}') {
      if (top.open != '{') {
        return ErrorAt(pos_, stack.size() == 1 && c == '}'
                                 ? std::string("unexpected '}' with no open '{'")
                                 : top.open == 0 ? absl::StrFormat("unexpected '%c' outside template arguments", c)
                                                 : absl::StrFormat("expected '%c', found '%c'", closer(top.open), c));
      }
      if (!top.alias.empty()) return ErrorAt(pos_, "an alias '->' may only end a rule's alternative");
      if (top.items.empty()) return ErrorAt(pos_, absl::StrFormat("expected a template argument before '%c'", c));
      FinishSequence(out_.arena, top, LocationOf(top.sequence_offset));
      top.args.push_back(out_.arena.AddChoice(std::move(top.alternatives), LocationOf(top.sequence_offset)));
      top.alternatives.clear();
      top.aliases.clear();
      ++pos_;
      top.sequence_offset = pos_;
      if (c == ',') continue;
      Expr use;
      use.kind = ExprKind::kRuleRef;
      use.rule = top.template_rule;
      use.children = std::move(top.args);
      use.loc = LocationOf(top.name_offset);
      const ExprId id = AddNode(std::move(use));
      template_uses_.emplace(id, Site(top.name_offset));
      own_refs_.push_back({id, top.name_offset, true});
      stack.pop_back();
      PushItem(stack.back(), id);
      continue;
    }
    if (c == ')' || c == ']') {
      const char want = closer(top.open);
      if (want != c) {
        return ErrorAt(pos_, stack.size() == 1
                                 ? absl::StrFormat("unexpected '%c' with no open bracket", c)
                                 : absl::StrFormat("expected '%c', found '%c'", want, c));
      }
      if (!top.alias.empty()) return ErrorAt(pos_, "an alias '->' may only end a rule's alternative");
      if (top.pending_complements != 0 || (!top.conjuncts.empty() && top.items.empty())) {
        return ErrorAt(pos_, "'&' or '~' must be followed by an item");
      }
      FinishSequence(out_.arena, top, LocationOf(top.sequence_offset));
      const SourceLocation loc = LocationOf(top.open_offset);
      ExprId group = out_.arena.AddChoice(std::move(top.alternatives), loc);
      if (top.open == '[') group = out_.arena.AddRepeat(group, 0, 1, loc);
      stack.pop_back();
      PushItem(stack.back(), group);
      ++pos_;
      continue;
    }
    // llguidance's negation `~A`: where no item precedes, or in a terminal
    // before something other than a number (Lark's `A ~ n` repetition).
    if (c == '~' && (top.items.empty() || (kind != BodyKind::kRule && !IsDigit(At(SkipInlineFrom(pos_ + 1)))))) {
      // llguidance's negation `~A` (Lark's `A ~ n` has a number after it).
      if (absl::Status s = UseLlguidance(pos_, "'~' (negation)"); !s.ok()) return s;
      if (kind == BodyKind::kRule) {
        return ErrorAt(pos_, "'~' (negation) may be used in terminal definitions only (llguidance's rule: "
                             "it is an operation on the regular language of a lexeme)");
      }
      if (stack.size() + top.pending_complements + 1 > options_.max_nesting) {
        return ErrorAt(pos_, absl::StrFormat("nesting deeper than %d (max_nesting)", options_.max_nesting));
      }
      ++top.pending_complements;
      ++pos_;
      continue;
    }
    if (c == '&') {
      if (absl::Status s = UseLlguidance(pos_, "'&' (intersection)"); !s.ok()) return s;
      if (kind == BodyKind::kRule) {
        return ErrorAt(pos_, "'&' (intersection) may be used in terminal definitions only (llguidance's rule: "
                             "it is an operation on the regular language of a lexeme)");
      }
      if (top.items.empty() || top.pending_complements != 0) return ErrorAt(pos_, "'&' must follow an item");
      std::vector<ExprId> items;
      for (const auto& it : top.items) items.push_back(it.expr);
      top.conjuncts.push_back(out_.arena.AddSequence(std::move(items), LocationOf(top.sequence_offset)));
      top.items.clear();
      ++pos_;
      continue;
    }
    if (c == '{') {
      if (absl::Status s = ReadBraceRepeat(top); !s.ok()) return s;
      continue;
    }
    if (c == '?' || c == '*' || c == '+' || c == '~') {
      if (top.items.empty()) {
        return ErrorAt(pos_, absl::StrFormat("'%c' must follow an item", c));
      }
      if (top.items.back().has_operator) {
        return ErrorAt(pos_, absl::StrFormat("'%c': only one operator may follow an item (use parentheses)", c));
      }
      if (stack.size() + 1 > options_.max_nesting) {
        return ErrorAt(pos_, absl::StrFormat("nesting deeper than %d (max_nesting)", options_.max_nesting));
      }
      const SourceLocation loc = LocationOf(pos_);
      uint32_t min = 0, max = kUnbounded;
      if (c == '?') max = 1;
      if (c == '+') min = 1;
      ++pos_;
      if (c == '~') {
        pos_ = SkipInlineFrom(pos_);
        auto lo = ReadNumber();
        if (!lo.ok()) return lo.status();
        min = max = *lo;
        const size_t after = SkipInlineFrom(pos_);
        if (At(after) == '.' && At(after + 1) == '.') {
          pos_ = SkipInlineFrom(after + 2);
          const size_t hi_offset = pos_;
          auto hi = ReadNumber();
          if (!hi.ok()) return hi.status();
          if (*hi < *lo) return ErrorAt(hi_offset, "repetition bounds are reversed");
          max = *hi;
        }
      }
      Frame::Item& item = top.items.back();
      item.expr = out_.arena.AddRepeat(item.expr, min, max, loc);
      item.has_operator = true;
      continue;
    }
    if (c == '-' && At(pos_ + 1) == '>') {
      if (kind != BodyKind::kRule || stack.size() > 1) {
        return ErrorAt(pos_, kind == BodyKind::kRule ? "an alias '->' may only end a rule's alternative"
                                                     : "aliases '->' are allowed in rules only");
      }
      pos_ = SkipInlineFrom(pos_ + 2);
      const size_t name_offset = pos_;
      const std::string_view name = ReadName();
      if (name.empty() || NameKind(name) != 0) {
        pos_ = name_offset;
        return ErrorAt(name_offset, absl::StrCat("expected a rule name after '->', found ", Describe(name_offset)));
      }
      top.alias = std::string(name);
      top.after_alias = true;
      continue;
    }
    ExprId item = 0;
    if (c == '"') {
      auto r = ReadStringItem();
      if (!r.ok()) return r.status();
      item = *r;
    } else if (c == '/') {
      auto r = ReadRegexItem();
      if (!r.ok()) return r.status();
      item = *r;
    } else if (IsNameStart(c)) {
      const size_t offset = pos_;
      const std::string_view name = ReadName();
      if (absl::Status s = NoteDashNames(); !s.ok()) return s;
      const int name_kind = NameKind(name);
      if (name_kind < 0) return ErrorAt(offset, absl::StrFormat("'%s' is neither a rule nor a terminal name", name));
      if (At(pos_) == ':' && At(pos_ + 1) == ':') {
        if (kind != BodyKind::kRule || name_kind != 0) {
          return ErrorAt(offset, absl::StrFormat("'%s::...': only rules take parameters", name));
        }
        auto ref = ReadParamRef(name, offset);
        if (!ref.ok()) return ref.status();
        PushItem(stack.back(), *ref);
        continue;
      }
      const size_t after = SkipInlineFrom(pos_);
      // `name{2,5}` is llguidance's repetition, not a template use.
      const size_t brace_next = SkipInlineFrom(after + 1);
      const bool use = At(after) == '{' && !IsDigit(At(brace_next)) && At(brace_next) != ',';
      int param = -1;
      if (current_params_ != nullptr) {
        auto it = std::find(current_params_->begin(), current_params_->end(), name);
        if (it != current_params_->end()) param = static_cast<int>(it - current_params_->begin());
      }
      if (use) {
        if (kind != BodyKind::kRule || name_kind != 0) {
          return ErrorAt(offset, absl::StrFormat("template use '%s{...}': templates are rules, usable in rules only",
                                                 name));
        }
        if (param >= 0) {
          return ErrorAt(offset, absl::StrFormat("the template parameter '%s' is used as a template; zapgram "
                                                 "does not support templates passed as arguments", name));
        }
        if (stack.size() >= options_.max_nesting) {
          return ErrorAt(after, absl::StrFormat("nesting deeper than %d (max_nesting)", options_.max_nesting));
        }
        Frame f;
        f.open = '{';
        f.open_offset = after;
        f.sequence_offset = after + 1;
        f.template_rule = Symbol(name, false, offset);
        f.name_offset = offset;
        pos_ = after + 1;
        stack.push_back(std::move(f));
        continue;
      }
      if (param >= 0) {
        Expr placeholder;
        placeholder.kind = ExprKind::kEmpty;
        placeholder.loc = LocationOf(offset);
        item = AddNode(std::move(placeholder));
        param_refs_.emplace(item, static_cast<uint32_t>(param));
      } else {
        if (kind == BodyKind::kTerminal && name_kind == 0) {
          return ErrorAt(offset, absl::StrFormat("a terminal cannot refer to the rule '%s'", name));
        }
        item = out_.arena.AddRuleRef(Symbol(name, name_kind == 1, offset), LocationOf(offset));
        if (name_kind == 0) own_refs_.push_back({item, offset, false});
      }
    } else if (c == '<') {
      const size_t token_offset = pos_;
      auto r = ReadSpecialToken();
      if (!r.ok()) return r.status();
      if (kind != BodyKind::kRule) {
        return ErrorAt(token_offset, "special tokens '<...>' may be used in rules only, not inside terminals "
                                           "or %ignore (llguidance's rule: a token is not bytes a lexeme can hold)");
      }
      item = *r;
    } else if (c == '%' && text_.substr(pos_, 3) == "%if" && !IsNameChar(At(pos_ + 3))) {
      if (absl::Status s = ReadCondition(top, stack.size()); !s.ok()) return s;
      continue;
    } else if (c == '%') {
      auto r = ReadPercentItem(kind);
      if (!r.ok()) return r.status();
      item = *r;
    } else if (c == '@') {
      return ErrorAt(pos_, "'@name' (a reference to another grammar of llguidance's grammar list) is not "
                           "supported: zapgram reads one grammar text, so there is no list to refer to; "
                           "write the JSON Schema inline with %json { ... }");
    } else {
      return ErrorAt(pos_, absl::StrCat("expected an item, '|' or end of line, found ", Describe(pos_)));
    }
    PushItem(stack.back(), item);
  }
  Frame& body = stack[0];
  if (body.pending_complements != 0 || (!body.conjuncts.empty() && body.items.empty())) {
    return ErrorAt(pos_, "'&' or '~' must be followed by an item");
  }
  FinishSequence(out_.arena, body, LocationOf(body.sequence_offset));
  Body result;
  result.alternatives = body.alternatives;
  result.aliases = std::move(body.aliases);
  result.expr = out_.arena.AddChoice(std::move(body.alternatives), LocationOf(body.open_offset));
  return result;
}

absl::Status LarkReader::ReadDefinition(DefinitionMode mode) {
  const size_t start = pos_;
  Definition def;
  while (At(pos_) == '!' || At(pos_) == '?') {
    (At(pos_) == '!' ? def.keep : def.inline_children) = true;
    ++pos_;
  }
  def.name_offset = pos_;
  const std::string_view name = ReadName();
  if (name.empty()) {
    return ErrorAt(pos_, absl::StrCat("expected a rule or terminal name, found ", Describe(pos_)));
  }
  const int name_kind = NameKind(name);
  if (name_kind < 0) return ErrorAt(def.name_offset, absl::StrFormat("'%s' is neither a rule nor a terminal name", name));
  def.terminal = name_kind == 1;
  if (def.terminal && (def.keep || def.inline_children)) {
    return ErrorAt(start, absl::StrFormat("'?' and '!' apply to rules, not to the terminal '%s'", name));
  }
  if (absl::Status s = NoteDashNames(); !s.ok()) return s;
  if (At(pos_) == ':' && At(pos_ + 1) == ':') {
    // llguidance's parametric rule `name::_ :`.
    if (absl::Status s = UseLlguidance(pos_, "a parametric rule 'name::_'"); !s.ok()) return s;
    if (def.terminal) return ErrorAt(pos_, absl::StrFormat("'%s::_': only rules take parameters", name));
    pos_ = SkipInlineFrom(pos_ + 2);
    if (At(pos_) != '_' || IsNameChar(At(pos_ + 1))) {
      return ErrorAt(pos_, absl::StrFormat("expected '_' after '%s::' (a parametric rule's one parameter)", name));
    }
    ++pos_;
    def.parametric = true;
  }
  pos_ = SkipInlineFrom(pos_);
  if (At(pos_) == '[') {
    absl::Status st = WantsLlguidanceAttributes(pos_) ? ReadLlguidanceAttributes(name, def)
                                                      : ReadRuleAttributes(name, def);
    if (!st.ok()) return st;
    pos_ = SkipInlineFrom(pos_);
  }
  if (At(pos_) == '{') {
    if (def.terminal) {
      return ErrorAt(pos_, absl::StrFormat("'%s{...}': templates are rules; Lark has no terminal templates", name));
    }
    def.has_params = true;
    ++pos_;
    auto params = ReadNameList('}', "a template parameter");
    if (!params.ok()) return params.status();
    for (const auto& [param, offset] : *params) {
      if (NameKind(param) != 0) {
        return ErrorAt(offset, absl::StrFormat("a template parameter must be a rule name, not '%s'", param));
      }
      if (std::find(def.params.begin(), def.params.end(), param) != def.params.end()) {
        return ErrorAt(offset, absl::StrFormat("duplicate template parameter '%s'", param));
      }
      def.params.emplace_back(param);
    }
    pos_ = SkipInlineFrom(pos_);
  }
  if (At(pos_) == '.') {
    pos_ = SkipInlineFrom(pos_ + 1);
    bool negative = false;
    if (At(pos_) == '-' || At(pos_) == '+') negative = At(pos_++) == '-';
    auto n = ReadNumber();
    if (!n.ok()) return n.status();
    def.priority = negative ? -static_cast<int32_t>(*n) : static_cast<int32_t>(*n);
    def.has_priority = true;
    pos_ = SkipInlineFrom(pos_);
  }
  if (At(pos_) != ':') {
    return ErrorAt(pos_, absl::StrFormat("expected ':' after '%s', found %s", name, Describe(pos_)));
  }
  ++pos_;
  def.id = Symbol(name, def.terminal, kNone);
  if (mode == DefinitionMode::kDefine && def_offset_[def.id] != kNone) {
    return ErrorAt(def.name_offset, AlreadyDefined(name, def.id));
  }
  if (out_.is_terminal[def.id] != def.terminal && def_offset_[def.id] == kNone) {
    return ErrorAt(def.name_offset, "internal: a name of both kinds");
  }
  if (out_.is_terminal[def.id] != def.terminal) {
    // Only an import can give a name the other kind: Lark keeps the kind of
    // a renamed dependency (`csv__INT` is a terminal).
    return ErrorAt(def.name_offset, absl::StrFormat("'%s' is the imported %s defined at %d:%d; it cannot be "
                                                    "modified as a %s", name,
                                                    out_.is_terminal[def.id] ? "terminal" : "rule",
                                                    LocationOf(def_offset_[def.id]).line,
                                                    LocationOf(def_offset_[def.id]).col,
                                                    def.terminal ? "terminal" : "rule"));
  }
  if (mode == DefinitionMode::kDefine) def_offset_[def.id] = def.name_offset;
  current_params_ = def.has_params ? &def.params : nullptr;
  current_parametric_ = def.parametric;
  auto body = ReadBody(def.terminal ? BodyKind::kTerminal : BodyKind::kRule);
  current_params_ = nullptr;
  current_parametric_ = false;
  if (!body.ok()) return body.status();
  def.body = std::move(*body);
  if (mode == DefinitionMode::kDefine) {
    Register(std::move(def));
  } else {
    mods_.push_back({mode, start, std::move(def)});
  }
  return absl::OkStatus();
}

// XGrammar's rule attributes, `name[lazy, capture="x", temperature=0.5]`,
// read by the EBNF reader's parser (grammar/rule_attributes.h) and meaning
// the same. Rules only (XGrammar: "uppercase terminals cannot carry
// options"); not on templates (each instance would be another rule), and
// `lazy` is refused: a Lark rule here matches whole tokens of the lexer,
// and zapgram makes only byte-level regular rules lazy.
absl::Status LarkReader::ReadRuleAttributes(std::string_view name, Definition& def) {
  const size_t open = pos_;
  if (def.terminal) {
    return ErrorAt(open, absl::StrFormat("rule attributes apply to rules, not to the terminal '%s'", name));
  }
  // To the closing ']' on this line, over quoted strings.
  size_t close = open + 1;
  while (close < text_.size() && text_[close] != ']' && text_[close] != '\n') {
    if (text_[close] == '"') {
      ++close;
      while (close < text_.size() && text_[close] != '"' && text_[close] != '\n') {
        close += text_[close] == '\\' ? 2 : 1;
      }
    }
    if (close < text_.size()) ++close;
  }
  if (close >= text_.size() || text_[close] != ']') {
    return ErrorAt(open, absl::StrFormat("unterminated rule attributes of '%s' (expected ']')", name));
  }
  size_t error_offset = 0;
  std::string error;
  if (!ParseRuleAttributes(text_.substr(open + 1, close - open - 1), &def.attributes, &error_offset, &error)) {
    return ErrorAt(open + 1 + error_offset, absl::StrFormat("%s (rule '%s')", error, name));
  }
  if (def.attributes.lazy) {
    return ErrorAt(open + 1, absl::StrFormat("rule attribute 'lazy' is not supported in a Lark grammar (rule "
                                             "'%s'): its rules match whole tokens of the lexer, and zapgram makes "
                                             "only byte-level regular rules lazy (write it in EBNF)", name));
  }
  pos_ = close + 1;
  if (At(SkipInlineFrom(pos_)) == '{') {
    return ErrorAt(open, absl::StrFormat("rule attributes on the template '%s' are not supported", name));
  }
  return absl::OkStatus();
}

// Makes `def` the definition of def.id (new, or replacing the current one).
void LarkReader::Register(Definition def) {
  const RuleId id = def.id;
  const std::string& name = out_.arena.rules[id].name;
  Rule& rule = out_.arena.rules[id];
  rule.body = def.body.expr;
  rule.loc = LocationOf(def.name_offset);
  const bool replace = out_.index_of[id] >= 0;
  const auto index = static_cast<size_t>(out_.index_of[id]);
  if (def.terminal) {
    LarkTerminal t;
    t.rule = id;
    t.priority = def.priority;
    t.has_priority = def.has_priority;
    t.hidden = name[0] == '_';
    t.loc = rule.loc;
    if (replace) {
      if (out_.terminals[index].declared) {
        out_.declared.erase(std::find(out_.declared.begin(), out_.declared.end(), name));
      }
      out_.terminals[index] = t;
    } else {
      out_.index_of[id] = static_cast<int32_t>(out_.terminals.size());
      out_.terminals.push_back(t);
    }
    return;
  }
  LarkRule r;
  r.rule = id;
  r.inline_children = def.inline_children;
  r.hidden = name[0] == '_';
  r.keep_all_tokens = def.keep;
  r.priority = def.priority;
  r.has_priority = def.has_priority;
  r.alternatives = std::move(def.body.alternatives);
  r.aliases = std::move(def.body.aliases);
  r.attributes = def.attributes;
  r.suffix = def.suffix;
  r.parametric = def.parametric;
  r.loc = rule.loc;
  if (def.has_params) {
    params_[id] = std::move(def.params);
  } else {
    params_.erase(id);
  }
  if (replace) {
    out_.rules[index] = std::move(r);
  } else {
    out_.index_of[id] = static_cast<int32_t>(out_.rules.size());
    out_.rules.push_back(std::move(r));
  }
}

absl::Status LarkReader::ReadDirective() {
  const size_t start = pos_++;
  const size_t word_offset = pos_;
  while (At(pos_) >= 'a' && At(pos_) <= 'z') ++pos_;
  const std::string_view word = text_.substr(word_offset, pos_ - word_offset);
  if (word == "ignore") {
    const SourceLocation loc = LocationOf(start);
    auto body = ReadBody(BodyKind::kIgnore);
    if (!body.ok()) return body.status();
    if (out_.arena.exprs[body->expr].kind == ExprKind::kEmpty) {
      return ErrorAt(pos_, "expected what to ignore after '%ignore'");
    }
    out_.ignores.push_back({body->expr, loc});
    return absl::OkStatus();
  }
  if (word == "declare") {
    bool any = false;
    while (true) {
      pos_ = SkipInlineFrom(pos_);
      if (AtEnd() || At(pos_) == '\n') break;
      const size_t offset = pos_;
      const std::string_view name = ReadName();
      if (name.empty()) return ErrorAt(offset, absl::StrCat("expected a terminal name, found ", Describe(offset)));
      if (NameKind(name) != 1) {
        return ErrorAt(offset, absl::StrFormat("%%declare takes terminal names; '%s' is not one", name));
      }
      const RuleId id = Symbol(name, true, kNone);
      if (def_offset_[id] != kNone) return ErrorAt(offset, AlreadyDefined(name, id));
      def_offset_[id] = offset;
      LarkTerminal t;
      t.rule = id;
      t.hidden = name[0] == '_';
      t.declared = true;
      t.loc = LocationOf(offset);
      out_.arena.rules[id].loc = t.loc;
      out_.index_of[id] = static_cast<int32_t>(out_.terminals.size());
      out_.terminals.push_back(t);
      out_.declared.push_back(std::string(name));
      any = true;
    }
    if (!any) return ErrorAt(pos_, "expected at least one terminal name after '%declare'");
    return absl::OkStatus();
  }
  if (word == "import") return ReadImport(nullptr);  // already done by ReadAllImports
  if (word == "llguidance") return ReadLlguidanceDirective(start);
  if (word == "override" || word == "extend") {
    pos_ = SkipInlineFrom(pos_);
    return ReadDefinition(word == "override" ? DefinitionMode::kOverride : DefinitionMode::kExtend);
  }
  return ErrorAt(start, absl::StrFormat(
                            "unknown directive '%%%s' (expected %%ignore, %%import, %%declare, %%override, %%extend or "
                            "llguidance's %%llguidance)",
                            word));
}

}  // namespace zapgram::grammar::lark_internal
