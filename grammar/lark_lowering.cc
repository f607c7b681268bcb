// LarkGrammar -> lexed Grammar (see lark_lowering.h).
//
// Two walks, both with explicit stacks over the reader's arena:
//  - patterns: a post-order over terminal bodies in which a reference to a
//    terminal has that terminal's body as its only child (terminals never
//    refer to themselves, the reader checked), memoized per node, so a
//    terminal used by many others is rendered once;
//  - rules: a post-order copy of the kept rules' bodies into a fresh arena,
//    where every terminal becomes a kToken.
#include "grammar/lark_lowering.h"

#include "grammar/lark_patterns.h"
#include "grammar/regex_compiler.h"
#include "grammar/rule_attributes.h"
#include "grammar/regex_render.h"

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace zapgram::grammar {

namespace {

// A terminal's pattern as Lark models it: a string (value + flags) or a
// regex; `regexp` is its to_regexp() form (flags folded in).
struct Pattern {
  bool is_string = false;
  bool single = false;  // one string, regex or range (not joined from parts)
  std::string value;  // the string, or the regex source
  uint32_t flags = 0;
  std::string regexp;
};

// The reader stores "x"i as a regex of the escaped text (lark_reader.cc's
// RegexEscape: `\` before punctuation, \xNN for other ASCII); this undoes it.
std::string UnescapeIstring(std::string_view pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 >= pattern.size()) {
      out.push_back(pattern[i]);
      continue;
    }
    if (pattern[i + 1] == 'x' && i + 3 < pattern.size()) {
      out.push_back(static_cast<char>(std::stoi(std::string(pattern.substr(i + 2, 2)), nullptr, 16)));
      i += 3;
    } else {
      out.push_back(pattern[++i]);
    }
  }
  return out;
}

std::string WithFlags(std::string regexp, uint32_t flags) {
  if (flags == 0) return regexp;
  return ScopedRegexp(regexp, flags);
}

// Lark's names for anonymous string terminals: the upper-cased string when
// it is an identifier, else a name of its punctuation, else __ANON_n.
std::string AnonymousName(const Pattern& p, uint32_t serial) {
  if (p.is_string && !p.value.empty()) {
    bool identifier = !(p.value[0] >= '0' && p.value[0] <= '9');
    for (char c : p.value) {
      identifier = identifier && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                  (c >= '0' && c <= '9') || c == '_');
    }
    if (identifier) {
      std::string upper = p.value;
      for (char& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
      return upper;
    }
  }
  return absl::StrCat("__ANON_", serial);
}

class Lowering {
 public:
  Lowering(const LarkGrammar& lark, const LarkLoweringOptions& options)
      : lark_(lark), arena_(lark.arena), options_(options) {}

  absl::StatusOr<Grammar> Run();

 private:
  bool IsTerminalRef(const Expr& e) const {
    return e.kind == ExprKind::kRuleRef && lark_.is_terminal[e.rule];
  }
  absl::Status RenderPatterns(ExprId root);
  absl::StatusOr<uint32_t> TokenForTerminal(RuleId terminal_rule);
  absl::StatusOr<uint32_t> TokenForExpr(ExprId id);
  uint32_t AddToken(const Pattern& p, std::string name, int32_t priority, SourceLocation loc);
  absl::Status CopyRules();
  // A rule that derives nothing (`<never>: <never>`), made on first use.
  RuleId NeverRule() {
    if (never_rule_ == kNoNeverRule) {
      never_rule_ = static_cast<RuleId>(out_.rules.size());
      out_.rules.push_back({"<never>", 0, {}});
      out_.rules[never_rule_].body = out_.AddRuleRef(never_rule_);
    }
    return never_rule_;
  }
  std::string Where(SourceLocation loc) const {
    return absl::StrFormat("%s:%d:%d", arena_.source_name, loc.line, loc.col);
  }
  absl::Status DeclaredTerminalError(SourceLocation loc, std::string_view name) const {
    if (indenter_on_) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: terminal %s is %%declare'd and has no definition; Lark expects a postlexer to "
          "produce it, and the Indenter (the one zapgram runs) produces only %s and %s",
          Where(loc), name, options_.indenter.indent_type, options_.indenter.dedent_type));
    }
    if (options_.indenter.mode == IndenterOptions::Mode::kOff) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: terminal %s is %%declare'd and has no definition; Lark expects a postlexer to "
          "produce it, and the indenter option is off", Where(loc), name));
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: terminal %s is %%declare'd and has no definition; Lark expects a postlexer to "
        "produce it (for _INDENT/_DEDENT: Lark's Indenter, which zapgram runs when the grammar "
        "also uses a newline token named _NL or _NEWLINE, or when the indenter option names it)",
        Where(loc), name));
  }
  // Whether the Indenter runs (IndenterOptions::mode and the grammar's
  // %declare's), and its newline terminal's name.
  absl::Status DecideIndenter();
  // Marks the newline and bracket tokens with their roles.
  absl::Status MarkIndenterRoles();
  bool IsIndenterToken(std::string_view name) const {
    return indenter_on_ && (name == options_.indenter.indent_type || name == options_.indenter.dedent_type);
  }

  const LarkGrammar& lark_;
  const Grammar& arena_;
  const LarkLoweringOptions& options_;
  Grammar out_;
  std::vector<uint8_t> istring_;           // per arena expr
  std::vector<Pattern> patterns_;          // per arena expr, once rendered
  std::vector<uint8_t> rendered_;
  std::vector<uint32_t> token_of_rule_;    // per arena rule (terminals only)
  using PatternKey = std::tuple<bool, std::string, uint32_t>;  // (is_string, value, flags)
  absl::flat_hash_map<PatternKey, RuleId> named_by_pattern_;
  absl::flat_hash_map<PatternKey, uint32_t> anonymous_by_pattern_;
  std::vector<RuleId> kept_rules_;
  std::vector<RuleId> new_rule_id_;
  uint32_t anonymous_serial_ = 0;
  std::vector<uint8_t> never_;  // per token: can never match (NeverMatchingAssertion)
  static constexpr RuleId kNoNeverRule = static_cast<RuleId>(-1);
  RuleId never_rule_ = kNoNeverRule;
  bool indenter_on_ = false;
  std::string nl_name_;  // the Indenter's newline terminal
};

constexpr uint32_t kNone = 0xFFFFFFFFu;

absl::Status Lowering::RenderPatterns(ExprId root) {
  if (rendered_[root]) return absl::OkStatus();
  std::vector<std::pair<ExprId, bool>> stack = {{root, false}};
  auto children = [&](ExprId id) -> std::vector<ExprId> {
    const Expr& e = arena_.exprs[id];
    if (IsTerminalRef(e)) return {arena_.rules[e.rule].body};
    return e.children;
  };
  while (!stack.empty()) {
    auto [id, expanded] = stack.back();
    stack.pop_back();
    if (rendered_[id]) continue;
    if (!expanded) {
      stack.push_back({id, true});
      for (ExprId c : children(id)) {
        if (!rendered_[c]) stack.push_back({c, false});
      }
      continue;
    }
    const Expr& e = arena_.exprs[id];
    Pattern p;
    switch (e.kind) {
      case ExprKind::kEmpty:
        p.is_string = true;
        break;
      case ExprKind::kLiteral:
        p.single = true;
        p.is_string = true;
        p.value = e.literal;
        p.regexp = PythonEscape(e.literal);
        break;
      case ExprKind::kRegex:
        p.single = true;
        if (istring_[id]) {
          p.is_string = true;
          p.value = UnescapeIstring(e.literal);
          p.flags = kRegexIgnoreCase;
          p.regexp = WithFlags(PythonEscape(p.value), p.flags);
        } else {
          p.value = e.literal;
          p.flags = e.flags;
          // Grouped, so that a top-level | stays inside it when joined.
          p.regexp = e.flags != 0 ? WithFlags(e.literal, e.flags) : absl::StrCat("(?:", e.literal, ")");
        }
        break;
      case ExprKind::kCharClass:
        p.single = true;
        p.value = ClassRegexp(e.ranges);
        p.regexp = p.value;
        break;
      case ExprKind::kRuleRef:  // a terminal: its body's pattern
        if (lark_.terminals[lark_.index_of[e.rule]].declared) {
          return DeclaredTerminalError(e.loc, arena_.rules[e.rule].name);
        }
        p = patterns_[arena_.rules[e.rule].body];
        break;
      case ExprKind::kSequence: {
        for (ExprId c : e.children) p.value += patterns_[c].regexp;
        p.regexp = p.value;
        break;
      }
      case ExprKind::kChoice: {
        p.value = "(?:";
        for (size_t i = 0; i < e.children.size(); ++i) {
          if (i > 0) p.value += "|";
          p.value += patterns_[e.children[i]].regexp;
        }
        p.value += ")";
        p.regexp = p.value;
        break;
      }
      case ExprKind::kRepeat: {
        const std::string op = RepeatSuffix(e.min, e.max);
        p.value = absl::StrCat("(?:", patterns_[e.children[0]].regexp, ")", op);
        p.regexp = p.value;
        break;
      }
      case ExprKind::kToken:
      case ExprKind::kTokenIds:
        return absl::InternalError("a Lark arena holds no tokens");
    }
    if (p.regexp.size() > options_.max_token_pattern_bytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s: terminal expands to a regex longer than max_token_pattern_bytes = %d",
          Where(e.loc), options_.max_token_pattern_bytes));
    }
    patterns_[id] = std::move(p);
    rendered_[id] = 1;
  }
  return absl::OkStatus();
}

uint32_t Lowering::AddToken(const Pattern& p, std::string name, int32_t priority,
                            SourceLocation loc) {
  Token t;
  Token killer;  // the lookahead killer of t, when it has one (grammar/lark_patterns.h)
  bool never = false;
  t.name = std::move(name);
  t.is_string = p.is_string;
  t.priority = priority;
  t.loc = loc;
  if (p.is_string) {
    t.text = p.value;
    t.flags = p.flags;
    t.pattern = PythonEscape(p.value);
  } else if (p.single) {
    t.pattern = p.value;  // a lone regex or range: its own source and flags
    t.flags = p.flags;
  } else {
    t.pattern = p.regexp;  // joined: the parts' flags are scoped groups inside
  }
  if (!t.is_string) {
    // Lark orders terminals by the length of the pattern it renders: the one
    // before the rewrites below.
    const std::string rendered = t.pattern;
    // Lazy quantifiers inside greedy repetitions (python.lark's _NL):
    // rewritten to what Python's first-match reading takes
    // (grammar/lark_patterns.h).
    if (std::optional<std::string> greedy = RewriteLazyQuantifiers(t.pattern)) t.pattern = *std::move(greedy);
    // Negative lookaheads of a literal that only look past the match
    // (python.lark's `"(?!"").*?"`): dropped, with a warning
    // (grammar/lark_patterns.h).
    if (std::optional<DroppedLookaheads> dropped = DropPastMatchLookaheads(t.pattern, t.flags)) {
      if (dropped->killer.empty()) {
        out_.warnings.push_back(absl::StrFormat(
            "%s: terminal %s: lookahead %s reads past the match only; read without it (a match "
            "whose end the lookahead's text would continue is taken; Lark does not take it)",
            Where(loc), t.name, dropped->what));
      } else {
        killer.name = t.name + "__lookahead";
        killer.pattern = std::move(dropped->killer);
        killer.flags = t.flags;
        killer.priority = t.priority;
        killer.loc = loc;
      }
      t.pattern = std::move(dropped->pattern);
    }
    if (t.pattern != rendered) {
      size_t length = 0;
      for (unsigned char c : rendered) length += (c & 0xC0) != 0x80;
      t.lark_length = static_cast<uint32_t>(length);
    }
    // A regex whose assertions keep it from matching anything (/a(?=b)c/,
    // /a^b$c/): Lark compiles it and its lexer never produces the terminal;
    // so does this, with a pattern of no string, and says so.
    if (std::optional<std::string> why = NeverMatchingAssertion(t.pattern, t.flags)) {
      out_.warnings.push_back(absl::StrFormat(
          "%s: terminal %s %s can never match (%s): compiled to the empty language", Where(loc),
          t.name, RegexDisplayName(t.pattern, t.flags), *why));
      t.pattern = "[^\\s\\S]";
      t.flags = 0;
      never = true;
    }
  }
  out_.tokens.push_back(std::move(t));
  never_.push_back(never);
  const uint32_t token = static_cast<uint32_t>(out_.tokens.size() - 1);
  if (!killer.name.empty() && !never) {
    killer.lookahead_of = static_cast<int32_t>(token);
    out_.tokens.push_back(std::move(killer));
    never_.push_back(false);
  }
  return token;
}

absl::StatusOr<uint32_t> Lowering::TokenForTerminal(RuleId rule) {
  if (token_of_rule_[rule] != kNone) return token_of_rule_[rule];
  const LarkTerminal& terminal = lark_.terminals[lark_.index_of[rule]];
  if (terminal.declared && IsIndenterToken(arena_.rules[rule].name)) {
    // Produced by the Indenter only: a token no pattern matches, never lexed.
    Token t;
    t.name = arena_.rules[rule].name;
    t.loc = terminal.loc;
    t.indent_role = t.name == options_.indenter.indent_type ? Token::IndentRole::kIndent
                                                            : Token::IndentRole::kDedent;
    out_.tokens.push_back(std::move(t));
    never_.push_back(false);
    token_of_rule_[rule] = static_cast<uint32_t>(out_.tokens.size() - 1);
    return token_of_rule_[rule];
  }
  if (terminal.declared) return DeclaredTerminalError(terminal.loc, arena_.rules[rule].name);
  const ExprId body = arena_.rules[rule].body;
  absl::Status st = RenderPatterns(body);
  if (!st.ok()) return st;
  const uint32_t token = AddToken(patterns_[body], arena_.rules[rule].name, terminal.priority,
                                  terminal.loc);
  token_of_rule_[rule] = token;
  return token;
}

absl::StatusOr<uint32_t> Lowering::TokenForExpr(ExprId id) {
  const Expr& e = arena_.exprs[id];
  if (IsTerminalRef(e)) return TokenForTerminal(e.rule);
  absl::Status st = RenderPatterns(id);
  if (!st.ok()) return st;
  const Pattern& p = patterns_[id];
  PatternKey key = std::make_tuple(p.is_string, p.value, p.flags);
  // A named terminal with this very pattern: Lark uses it.
  auto named = named_by_pattern_.find(key);
  if (named != named_by_pattern_.end()) return TokenForTerminal(named->second);
  auto anonymous = anonymous_by_pattern_.find(key);
  if (anonymous != anonymous_by_pattern_.end()) return anonymous->second;
  const uint32_t token = AddToken(p, AnonymousName(p, anonymous_serial_++), 0, e.loc);
  anonymous_by_pattern_.emplace(std::move(key), token);
  return token;
}

absl::Status Lowering::CopyRules() {
  // Kept rules: reachable from the start rule through rule references.
  const size_t num_rules = arena_.rules.size();
  new_rule_id_.assign(num_rules, kNone);
  std::vector<RuleId> work = {arena_.root};
  new_rule_id_[arena_.root] = 0;
  kept_rules_ = {arena_.root};
  while (!work.empty()) {
    RuleId r = work.back();
    work.pop_back();
    std::vector<ExprId> stack = {arena_.rules[r].body};
    while (!stack.empty()) {
      const Expr& e = arena_.exprs[stack.back()];
      stack.pop_back();
      if (e.kind == ExprKind::kRuleRef && !lark_.is_terminal[e.rule]) {
        if (new_rule_id_[e.rule] == kNone) {
          new_rule_id_[e.rule] = static_cast<RuleId>(kept_rules_.size());
          kept_rules_.push_back(e.rule);
          work.push_back(e.rule);
        }
        continue;
      }
      if (e.kind == ExprKind::kRuleRef) continue;
      for (ExprId c : e.children) stack.push_back(c);
    }
  }
  out_.rules.resize(kept_rules_.size());
  std::vector<ExprId> memo(arena_.exprs.size(), kNone);
  for (size_t i = 0; i < kept_rules_.size(); ++i) {
    const Rule& rule = arena_.rules[kept_rules_[i]];
    out_.rules[i].name = rule.name;
    out_.rules[i].loc = rule.loc;
    ApplyRuleAttributes(lark_.rules[lark_.index_of[kept_rules_[i]]].attributes, out_.rules[i]);
    std::vector<std::pair<ExprId, bool>> stack = {{rule.body, false}};
    while (!stack.empty()) {
      auto [id, expanded] = stack.back();
      stack.pop_back();
      if (memo[id] != kNone) continue;
      const Expr& e = arena_.exprs[id];
      const bool composite = e.kind == ExprKind::kSequence || e.kind == ExprKind::kChoice ||
                             e.kind == ExprKind::kRepeat;
      if (composite && !expanded) {
        stack.push_back({id, true});
        for (ExprId c : e.children) {
          if (memo[c] == kNone) stack.push_back({c, false});
        }
        continue;
      }
      std::vector<ExprId> kids;
      for (ExprId c : e.children) kids.push_back(memo[c]);
      switch (e.kind) {
        case ExprKind::kEmpty:
          memo[id] = out_.AddEmpty(e.loc);
          break;
        case ExprKind::kSequence:
          memo[id] = out_.AddSequence(std::move(kids), e.loc);
          break;
        case ExprKind::kChoice:
          memo[id] = out_.AddChoice(std::move(kids), e.loc);
          break;
        case ExprKind::kRepeat:
          memo[id] = out_.AddRepeat(kids[0], e.min, e.max, e.loc);
          break;
        case ExprKind::kRuleRef:
          if (!lark_.is_terminal[e.rule]) {
            memo[id] = out_.AddRuleRef(new_rule_id_[e.rule], e.loc);
            break;
          }
          [[fallthrough]];
        default: {
          absl::StatusOr<uint32_t> token = TokenForExpr(id);
          if (!token.ok()) return token.status();
          if (never_[*token]) {
            // A terminal that can never match: a rule that derives nothing,
            // which RemoveUselessRules drops (leaving the empty language
            // when nothing else is left).
            memo[id] = out_.AddRuleRef(NeverRule(), e.loc);
            break;
          }
          out_.tokens[*token].in_rules = true;
          memo[id] = out_.AddToken(*token, e.loc);
          break;
        }
      }
    }
    out_.rules[i].body = memo[rule.body];
  }
  return absl::OkStatus();
}

absl::StatusOr<Grammar> Lowering::Run() {
  if (!lark_.has_start) {
    return absl::InvalidArgumentError(
        absl::StrCat(arena_.source_name, ": no start rule (Lark's default start is 'start')"));
  }
  out_.source_name = arena_.source_name;
  istring_.assign(arena_.exprs.size(), 0);
  for (ExprId id : lark_.istring_exprs) istring_[id] = 1;
  patterns_.resize(arena_.exprs.size());
  rendered_.assign(arena_.exprs.size(), 0);
  token_of_rule_.assign(arena_.rules.size(), kNone);
  // Named terminals by pattern, for anonymous terminals equal to one (the
  // last definition wins, as in Lark's reverse map). Declared ones have none.
  for (RuleId r = 0; r < arena_.rules.size(); ++r) {
    if (!lark_.is_terminal[r] || lark_.terminals[lark_.index_of[r]].declared) continue;
    absl::Status st = RenderPatterns(arena_.rules[r].body);
    if (!st.ok()) return st;
    const Pattern& p = patterns_[arena_.rules[r].body];
    named_by_pattern_[std::make_tuple(p.is_string, p.value, p.flags)] = r;
  }
  absl::Status st = DecideIndenter();
  if (!st.ok()) return st;
  if (!(st = CopyRules()).ok()) return st;
  if (!(st = MarkIndenterRoles()).ok()) return st;
  out_.root = 0;
  for (const LarkIgnore& ignore : lark_.ignores) {
    absl::StatusOr<uint32_t> token = TokenForExpr(ignore.expr);
    if (!token.ok()) return token.status();
    out_.tokens[*token].ignored = true;
  }
  // No terminal at all (`start:` with an empty body, or rules that only
  // refer to each other), or only terminals that never match: the language
  // is {""} or empty, and the grammar is not lexed; it compiles as any
  // byte-level grammar does.
  bool lexed = false;
  for (size_t k = 0; k < out_.tokens.size(); ++k) {
    lexed = lexed || out_.tokens[k].in_rules || (out_.tokens[k].ignored && !never_[k]);
  }
  if (!lexed) out_.tokens.clear();
  if (!(st = out_.Validate()).ok()) return st;
  return std::move(out_);
}

absl::Status Lowering::DecideIndenter() {
  const IndenterOptions& o = options_.indenter;
  if (o.mode == IndenterOptions::Mode::kOff) return absl::OkStatus();
  auto declared = [&](std::string_view name) {
    return std::find(lark_.declared.begin(), lark_.declared.end(), name) != lark_.declared.end();
  };
  auto defined_terminal = [&](std::string_view name) {
    const int64_t r = arena_.FindRule(name);
    return r >= 0 && lark_.is_terminal[r] && !lark_.terminals[lark_.index_of[r]].declared;
  };
  const bool both_declared = declared(o.indent_type) && declared(o.dedent_type);
  std::vector<std::string> candidates;
  if (!o.nl_type.empty()) {
    candidates.push_back(o.nl_type);
  } else {
    candidates = {"_NL", "_NEWLINE"};
  }
  for (const std::string& name : candidates) {
    if (defined_terminal(name)) {
      nl_name_ = name;
      break;
    }
  }
  if (o.mode == IndenterOptions::Mode::kAuto) {
    indenter_on_ = both_declared && !nl_name_.empty();
    return absl::OkStatus();
  }
  // kOn: every name must be there.
  if (nl_name_.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the indenter is on but the grammar defines no newline terminal %s",
        arena_.source_name, absl::StrJoin(candidates, " or ")));
  }
  if (o.tab_len == 0) {
    return absl::InvalidArgumentError(absl::StrCat(arena_.source_name, ": the indenter's tab_len must be positive"));
  }
  for (const std::string* name : {&o.indent_type, &o.dedent_type}) {
    if (!declared(*name)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: the indenter is on but the grammar does not %%declare %s", arena_.source_name, *name));
    }
  }
  indenter_on_ = true;
  return absl::OkStatus();
}

absl::Status Lowering::MarkIndenterRoles() {
  if (!indenter_on_) return absl::OkStatus();
  const IndenterOptions& o = options_.indenter;
  if (o.tab_len == 0) {
    return absl::InvalidArgumentError(absl::StrCat(arena_.source_name, ": the indenter's tab_len must be positive"));
  }
  // A kept rule's token by Lark's name: a named terminal, or an anonymous
  // one-character string Lark names so ("(" is LPAR).
  auto find = [&](std::string_view name) -> uint32_t {
    for (uint32_t t = 0; t < out_.tokens.size(); ++t) {
      if (out_.tokens[t].name == name) return t;
    }
    for (uint32_t t = 0; t < out_.tokens.size(); ++t) {
      const Token& token = out_.tokens[t];
      if (token.is_string && token.flags == 0 && token.name.starts_with("__ANON_") &&
          LarkPunctuationName(token.text) == name) {
        return t;
      }
    }
    return kNone;
  };
  auto mark = [&](uint32_t t, Token::IndentRole role) -> absl::Status {
    Token& token = out_.tokens[t];
    if (token.indent_role != Token::IndentRole::kNone && token.indent_role != role) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: token %s has two parts in the indenter", Where(token.loc), token.name));
    }
    token.indent_role = role;
    return absl::OkStatus();
  };
  const uint32_t nl = find(nl_name_);
  if (nl == kNone || !out_.tokens[nl].in_rules) {
    // No kept rule uses the newline: nothing for the indenter to do, but
    // its tokens may still be used.
    if (o.mode == IndenterOptions::Mode::kOn) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: the indenter is on but no rule reachable from the start uses %s",
          arena_.source_name, nl_name_));
    }
  } else {
    if (absl::Status st = mark(nl, Token::IndentRole::kNewline); !st.ok()) return st;
    out_.tokens[nl].tab_len = o.tab_len;
  }
  for (const auto& [names, role] : {std::pair{&o.open_paren_types, Token::IndentRole::kOpenBracket},
                                    std::pair{&o.close_paren_types, Token::IndentRole::kCloseBracket}}) {
    for (const std::string& name : *names) {
      const uint32_t t = find(name);
      if (t == kNone) continue;
      if (absl::Status st = mark(t, role); !st.ok()) return st;
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view LarkPunctuationName(std::string_view text) {
  // Lark's names for one-character terminals (its grammar compiler's table).
  static constexpr std::pair<char, std::string_view> kNames[] = {
      {'.', "DOT"},        {',', "COMMA"},      {':', "COLON"},     {';', "SEMICOLON"},
      {'+', "PLUS"},       {'-', "MINUS"},      {'*', "STAR"},      {'/', "SLASH"},
      {'\\', "BACKSLASH"}, {'|', "VBAR"},       {'?', "QMARK"},     {'!', "BANG"},
      {'@', "AT"},         {'#', "HASH"},       {'$', "DOLLAR"},    {'%', "PERCENT"},
      {'^', "CIRCUMFLEX"}, {'&', "AMPERSAND"},  {'_', "UNDERSCORE"}, {'<', "LESSTHAN"},
      {'>', "MORETHAN"},   {'=', "EQUAL"},      {'"', "DBLQUOTE"},  {'\'', "QUOTE"},
      {'`', "BACKQUOTE"},  {'~', "TILDE"},      {'(', "LPAR"},      {')', "RPAR"},
      {'{', "LBRACE"},     {'}', "RBRACE"},     {'[', "LSQB"},      {']', "RSQB"},
      {'\n', "NEWLINE"},   {'\t', "TAB"},       {' ', "SPACE"}};
  if (text.size() != 1) return {};
  for (const auto& [c, name] : kNames) {
    if (c == text[0]) return name;
  }
  return {};
}

std::string DescribeIndenter(const Grammar& g) {
  std::string nl, indent, dedent, open, close;
  uint32_t tab_len = 0;
  for (const Token& t : g.tokens) {
    switch (t.indent_role) {
      case Token::IndentRole::kNone:
        break;
      case Token::IndentRole::kNewline:
        nl = t.name;
        tab_len = t.tab_len;
        break;
      case Token::IndentRole::kIndent:
        indent = t.name;
        break;
      case Token::IndentRole::kDedent:
        dedent = t.name;
        break;
      case Token::IndentRole::kOpenBracket:
      case Token::IndentRole::kCloseBracket: {
        // Lark's name of an anonymous bracket ("(" is LPAR).
        const std::string_view lark_name = t.is_string && t.name.starts_with("__ANON_")
                                               ? LarkPunctuationName(t.text)
                                               : std::string_view();
        std::string& list = t.indent_role == Token::IndentRole::kOpenBracket ? open : close;
        absl::StrAppend(&list, list.empty() ? "" : " ", lark_name.empty() ? t.name : std::string(lark_name));
        break;
      }
    }
  }
  if (nl.empty()) return "indenter: off";
  return absl::StrFormat("indenter: on (newline %s, indent %s, dedent %s, open brackets [%s], "
                         "close brackets [%s], tab %d)",
                         nl, indent.empty() ? "-" : indent, dedent.empty() ? "-" : dedent, open, close,
                         tab_len);
}

absl::StatusOr<Grammar> LowerLark(const LarkGrammar& lark, const LarkLoweringOptions& options) {
  if (lark.llguidance) return LowerLlguidanceLark(lark, options);
  Lowering lowering(lark, options);
  return lowering.Run();
}

absl::StatusOr<Grammar> ReadLarkGrammar(std::string_view text, std::string_view source_name,
                                        const LarkReadOptions& read_options,
                                        const LarkLoweringOptions& options) {
  absl::StatusOr<LarkGrammar> lark = ReadLark(text, source_name, read_options);
  if (!lark.ok()) return lark.status();
  return LowerLark(*lark, options);
}

}  // namespace zapgram::grammar
