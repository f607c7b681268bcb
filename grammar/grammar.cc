#include "grammar/grammar.h"

#include "grammar/heap_bytes.h"

#include "grammar/regex_compiler.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace zapgram::grammar {

namespace {

// Surrogates never match: strip them so classes compare equal however written.
std::vector<CodepointRange> WithoutSurrogates(const std::vector<CodepointRange>& in) {
  std::vector<CodepointRange> out;
  for (CodepointRange r : in) {
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      out.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) out.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) out.push_back({0xE000, r.hi});
  }
  return out;
}

}  // namespace

std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges, bool negated) {
  for (CodepointRange& r : ranges) {
    if (r.lo > r.hi) std::swap(r.lo, r.hi);
    r.hi = std::min(r.hi, kMaxCodepoint);
  }
  // One range clear of the surrogates is already normal (every literal
  // character of a regex comes here): no sorting, merging or copying.
  if (!negated && ranges.size() == 1 && ranges[0].lo <= kMaxCodepoint &&
      (ranges[0].hi < 0xD800 || ranges[0].lo > 0xDFFF)) {
    return ranges;
  }
  ranges.erase(std::remove_if(ranges.begin(), ranges.end(),
                              [](const CodepointRange& r) { return r.lo > kMaxCodepoint; }),
               ranges.end());
  return WithoutSurrogates(MergeRanges(std::move(ranges), negated, kMaxCodepoint));
}

std::vector<CodepointRange> MergeRanges(std::vector<CodepointRange> ranges, bool negated, uint32_t max) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CodepointRange& a, const CodepointRange& b) { return a.lo < b.lo; });
  std::vector<CodepointRange> merged;
  for (CodepointRange r : ranges) {
    r.hi = std::min(r.hi, max);
    if (r.lo > r.hi) continue;
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  if (negated) {
    std::vector<CodepointRange> complement;
    uint64_t next = 0;
    for (CodepointRange r : merged) {
      if (r.lo > next) complement.push_back({static_cast<uint32_t>(next), r.lo - 1});
      next = uint64_t{r.hi} + 1;
    }
    if (next <= max) complement.push_back({static_cast<uint32_t>(next), max});
    merged = std::move(complement);
  }
  return merged;
}

absl::StatusOr<RuleId> AppendGrammar(Grammar& into, const Grammar& from, std::string_view prefix) {
  if (from.lexed()) {
    return absl::InvalidArgumentError(
        absl::StrCat(from.source_name, ": a lexed grammar cannot be embedded in another"));
  }
  const auto expr_offset = static_cast<ExprId>(into.exprs.size());
  const auto rule_offset = static_cast<RuleId>(into.rules.size());
  for (Expr expr : from.exprs) {
    for (ExprId& child : expr.children) child += expr_offset;
    if (expr.kind == ExprKind::kRuleRef) expr.rule += rule_offset;
    into.exprs.push_back(std::move(expr));
  }
  for (const Rule& rule : from.rules) {
    Rule copy = rule;  // attributes and keep_as_rule go along
    copy.name = absl::StrCat(absl::string_view(prefix.data(), prefix.size()), rule.name);
    copy.body += expr_offset;
    into.rules.push_back(std::move(copy));
  }
  return from.root + rule_offset;
}

ExprId Grammar::AddEmpty(SourceLocation loc) {
  Expr e;
  e.kind = ExprKind::kEmpty;
  e.loc = loc;
  exprs.push_back(std::move(e));
  return static_cast<ExprId>(exprs.size() - 1);
}

ExprId Grammar::AddLiteral(std::string bytes, SourceLocation loc) {
  if (bytes.empty()) return AddEmpty(loc);
  Expr e;
  e.kind = ExprKind::kLiteral;
  e.literal = std::move(bytes);
  e.loc = loc;
  exprs.push_back(std::move(e));
  return static_cast<ExprId>(exprs.size() - 1);
}

ExprId Grammar::AddCharClass(std::vector<CodepointRange> ranges, bool negated,
                             SourceLocation loc) {
  Expr e;
  e.kind = ExprKind::kCharClass;
  e.ranges = NormalizeRanges(std::move(ranges), negated);
  e.loc = loc;
  exprs.push_back(std::move(e));
  return static_cast<ExprId>(exprs.size() - 1);
}

ExprId Grammar::AddRuleRef(RuleId rule, SourceLocation loc) {
  Expr e;
  e.kind = ExprKind::kRuleRef;
  e.rule = rule;
  e.loc = loc;
  exprs.push_back(std::move(e));
  return static_cast<ExprId>(exprs.size() - 1);
}

ExprId Grammar::AddRegex(std::string pattern, uint32_t flags, SourceLocation loc) {
  Expr e;
  e.kind = ExprKind::kRegex;
  e.literal = std::move(pattern);
  e.flags = flags;
  e.loc = loc;
  exprs.push_back(std::move(e));
  return static_cast<ExprId>(exprs.size() - 1);
}

ExprId Grammar::AddTokenIds(std::vector<uint32_t> ids, bool exclude, SourceLocation loc,
                            std::vector<std::string> names) {
  Expr e;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  e.names = std::move(names);
  e.kind = ExprKind::kTokenIds;
  e.flags = exclude ? uint32_t{kTokenIdsExclude} : 0u;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (uint32_t id : ids) {
    if (!e.ranges.empty() && e.ranges.back().hi + 1 == id) {
      e.ranges.back().hi = id;
    } else {
      e.ranges.push_back({id, id});
    }
  }
  e.loc = loc;
  exprs.push_back(std::move(e));
  return static_cast<ExprId>(exprs.size() - 1);
}

bool Grammar::HasTokenIds() const {
  return std::any_of(exprs.begin(), exprs.end(),
                     [](const Expr& e) { return e.kind == ExprKind::kTokenIds; });
}

std::vector<uint32_t> TokenIdsOf(const Expr& e) {
  std::vector<uint32_t> ids;
  for (const CodepointRange& r : e.ranges) {
    for (uint64_t id = r.lo; id <= r.hi; ++id) ids.push_back(static_cast<uint32_t>(id));
  }
  return ids;
}

ExprId Grammar::AddToken(uint32_t token, SourceLocation loc) {
  Expr e;
  e.kind = ExprKind::kToken;
  e.token = token;
  e.loc = loc;
  exprs.push_back(std::move(e));
  return static_cast<ExprId>(exprs.size() - 1);
}

ExprId Grammar::AddSequence(std::vector<ExprId> children, SourceLocation loc) {
  if (children.empty()) return AddEmpty(loc);
  if (children.size() == 1) return children[0];
  Expr e;
  e.kind = ExprKind::kSequence;
  e.children = std::move(children);
  e.loc = loc;
  exprs.push_back(std::move(e));
  return static_cast<ExprId>(exprs.size() - 1);
}

ExprId Grammar::AddChoice(std::vector<ExprId> children, SourceLocation loc) {
  if (children.empty()) return AddEmpty(loc);
  if (children.size() == 1) return children[0];
  Expr e;
  e.kind = ExprKind::kChoice;
  e.children = std::move(children);
  e.loc = loc;
  exprs.push_back(std::move(e));
  return static_cast<ExprId>(exprs.size() - 1);
}

ExprId Grammar::AddRepeat(ExprId child, uint32_t min, uint32_t max, SourceLocation loc) {
  Expr e;
  e.kind = ExprKind::kRepeat;
  e.children = {child};
  e.min = min;
  e.max = max;
  e.loc = loc;
  exprs.push_back(std::move(e));
  return static_cast<ExprId>(exprs.size() - 1);
}

int64_t Grammar::FindRule(std::string_view name) const {
  for (size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].name == name) return static_cast<int64_t>(i);
  }
  return -1;
}

size_t Grammar::memory_bytes() const {
  size_t bytes = HeapBytes(source_name) + HeapBytes(rules) + HeapBytes(exprs) + HeapBytes(tokens);
  for (const Rule& r : rules) bytes += HeapBytes(r.name);
  for (const Expr& e : exprs) bytes += HeapBytes(e.literal) + HeapBytes(e.ranges) + HeapBytes(e.children) + HeapBytes(e.names);
  for (const Token& t : tokens) bytes += HeapBytes(t.name) + HeapBytes(t.pattern) + HeapBytes(t.text);
  return bytes;
}

absl::Status Grammar::Validate() const {
  if (rules.empty()) return absl::InvalidArgumentError(absl::StrCat(source_name, ": no rules"));
  if (root >= rules.size()) {
    return absl::InvalidArgumentError(absl::StrCat(source_name, ": root rule out of range"));
  }
  for (const Rule& rule : rules) {
    if (rule.body >= exprs.size()) {
      return absl::InternalError(absl::StrCat(source_name, ": rule '", rule.name,
                                              "' has a body out of range"));
    }
  }
  for (size_t i = 0; i < exprs.size(); ++i) {
    const Expr& e = exprs[i];
    for (ExprId c : e.children) {
      if (c >= exprs.size()) {
        return absl::InternalError(absl::StrCat(source_name, ": expression ", i,
                                                " has a child out of range"));
      }
    }
    switch (e.kind) {
      case ExprKind::kRuleRef:
        if (e.rule >= rules.size()) {
          return absl::InternalError(absl::StrCat(source_name, ": expression ", i,
                                                  " refers to a rule out of range"));
        }
        break;
      case ExprKind::kRepeat:
        if (e.children.size() != 1 || e.min > e.max) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s:%d:%d: repetition {%d,%d} is malformed", source_name, e.loc.line, e.loc.col,
              e.min, e.max));
        }
        break;
      case ExprKind::kCharClass:
        if (e.ranges != NormalizeRanges(e.ranges, false)) {
          return absl::InternalError(absl::StrCat(source_name, ": class ", i,
                                                  " is not normalized"));
        }
        break;
      case ExprKind::kToken:
        if (e.token >= tokens.size()) {
          return absl::InternalError(absl::StrCat(source_name, ": expression ", i,
                                                  " refers to a token out of range"));
        }
        break;
      case ExprKind::kTokenIds:
        for (size_t k = 0; k < e.ranges.size(); ++k) {
          if (e.ranges[k].lo > e.ranges[k].hi ||
              (k > 0 && e.ranges[k].lo <= e.ranges[k - 1].hi + 1)) {
            return absl::InternalError(absl::StrCat(source_name, ": token ids of expression ", i,
                                                    " are not sorted and merged"));
          }
        }
        if (lexed()) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s:%d:%d: a lexed grammar cannot match token ids", source_name, e.loc.line,
              e.loc.col));
        }
        break;
      default:
        break;
    }
    // A lexed grammar's rules see tokens only (token definitions are not
    // expressions of the arena, so every terminal node here is a rule's).
    if (lexed() && (e.kind == ExprKind::kLiteral || e.kind == ExprKind::kCharClass ||
                    e.kind == ExprKind::kRegex)) {
      return absl::InternalError(absl::StrFormat(
          "%s:%d:%d: a lexed grammar has a terminal that is not a token", source_name,
          e.loc.line, e.loc.col));
    }
  }
  return absl::OkStatus();
}

namespace {

void AppendEscapedCodepoint(uint32_t cp, bool in_class, std::string* out) {
  switch (cp) {
    case '\n': *out += "\\n"; return;
    case '\r': *out += "\\r"; return;
    case '\t': *out += "\\t"; return;
    case '\\': *out += "\\\\"; return;
    default: break;
  }
  if ((in_class && (cp == ']' || cp == '-' || cp == '^')) || (!in_class && cp == '"')) {
    out->push_back('\\');
    out->push_back(static_cast<char>(cp));
    return;
  }
  if (cp >= 0x20 && cp < 0x7F) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x100) {
    *out += absl::StrFormat("\\x%02X", cp);
  } else if (cp < 0x10000) {
    *out += absl::StrFormat("\\u%04X", cp);
  } else {
    *out += absl::StrFormat("\\U%08X", cp);
  }
}

// Literal bytes printed as a GBNF string. Bytes that do not form valid UTF-8
// are printed as \xNN, which GBNF reads back as the code point U+00NN; such
// literals only arise from non-GBNF readers, and the dump marks them so.
void AppendLiteral(std::string_view bytes, std::string* out) {
  out->push_back('"');
  size_t i = 0;
  while (i < bytes.size()) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    uint32_t cp = c;
    size_t len = 1;
    if (c >= 0x80) {
      len = c >= 0xF8 ? 0 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
      bool ok = len > 0 && i + len <= bytes.size();
      if (ok) {
        cp = c & (0x7F >> len);
        for (size_t k = 1; k < len; ++k) {
          unsigned char cc = static_cast<unsigned char>(bytes[i + k]);
          if ((cc & 0xC0) != 0x80) ok = false;
          cp = (cp << 6) | (cc & 0x3F);
        }
        // Overlong forms, surrogates and values above U+10FFFF are not UTF-8 either.
        const uint32_t smallest = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
        if (cp < smallest || cp > kMaxCodepoint || (cp >= 0xD800 && cp <= 0xDFFF)) ok = false;
      }
      if (!ok) {
        *out += absl::StrFormat("\\x%02X", c);
        ++i;
        continue;
      }
    }
    AppendEscapedCodepoint(cp, /*in_class=*/false, out);
    i += len;
  }
  out->push_back('"');
}

void AppendClass(const std::vector<CodepointRange>& ranges, std::string* out) {
  out->push_back('[');
  for (CodepointRange r : ranges) {
    AppendEscapedCodepoint(r.lo, /*in_class=*/true, out);
    if (r.hi != r.lo) {
      out->push_back('-');
      AppendEscapedCodepoint(r.hi, /*in_class=*/true, out);
    }
  }
  out->push_back(']');
}

// Iterative printer: a stack of (expr, next child, needs parens) frames.
void AppendExpr(const Grammar& g, ExprId root, std::string* out) {
  struct Frame {
    ExprId id;
    size_t next;
    bool parens;
  };
  std::vector<Frame> stack;
  auto needs_parens = [&](ExprId parent, ExprId child) {
    ExprKind pk = g.exprs[parent].kind;
    ExprKind ck = g.exprs[child].kind;
    if (ck == ExprKind::kChoice) return true;
    if (pk == ExprKind::kRepeat && ck == ExprKind::kSequence) return true;
    if (pk == ExprKind::kRepeat && ck == ExprKind::kRepeat) return true;
    return false;
  };
  stack.push_back({root, 0, false});
  while (!stack.empty()) {
    Frame& f = stack.back();
    const Expr& e = g.exprs[f.id];
    if (f.next == 0 && f.parens) out->push_back('(');
    switch (e.kind) {
      case ExprKind::kEmpty:
        *out += "\"\"";
        break;
      case ExprKind::kLiteral:
        AppendLiteral(e.literal, out);
        break;
      case ExprKind::kRegex:
        // zapgram's GBNF extension, Lark-style /pattern/flags (the GBNF reader reads it back).
        *out += RegexDisplayName(e.literal, e.flags);
        break;
      case ExprKind::kCharClass:
        AppendClass(e.ranges, out);
        break;
      case ExprKind::kToken:
        // Not GBNF: a lexed grammar's token, by name (the lexicon follows the rules).
        *out += g.tokens[e.token].name;
        break;
      case ExprKind::kTokenIds: {
        if (e.flags & kTokenIdsClip) {
          // llguidance's clipped id ranges, in its syntax (ranges may reach
          // far past any vocabulary, so they are not listed id by id).
          *out += "<[";
          for (size_t k = 0; k < e.ranges.size(); ++k) {
            absl::StrAppend(out, k ? "," : "", e.ranges[k].lo);
            if (e.ranges[k].hi != e.ranges[k].lo) absl::StrAppend(out, "-", e.ranges[k].hi);
          }
          *out += "]>";
          break;
        }
        // XGrammar's macros (the GBNF reader reads them back).
        *out += (e.flags & kTokenIdsExclude) ? "ExcludeToken(" : "Token(";
        const std::vector<uint32_t> ids = TokenIdsOf(e);
        for (size_t k = 0; k < ids.size(); ++k) absl::StrAppend(out, k ? ", " : "", ids[k]);
        for (size_t k = 0; k < e.names.size(); ++k) {
          if (k > 0 || !ids.empty()) *out += ", ";
          AppendLiteral(e.names[k], out);
        }
        out->push_back(')');
        break;
      }
      case ExprKind::kRuleRef:
        *out += g.rules[e.rule].name;
        break;
      case ExprKind::kSequence:
      case ExprKind::kChoice:
      case ExprKind::kRepeat:
        if (f.next < e.children.size()) {
          if (f.next > 0) *out += e.kind == ExprKind::kChoice ? " | " : " ";
          ExprId child = e.children[f.next];
          bool parens = needs_parens(f.id, child);
          ++f.next;
          stack.push_back({child, 0, parens});
          continue;
        }
        if (e.kind == ExprKind::kRepeat) {
          if (e.min == 0 && e.max == kUnbounded) {
            out->push_back('*');
          } else if (e.min == 1 && e.max == kUnbounded) {
            out->push_back('+');
          } else if (e.min == 0 && e.max == 1) {
            out->push_back('?');
          } else if (e.max == kUnbounded) {
            *out += absl::StrFormat("{%d,}", e.min);
          } else if (e.min == e.max) {
            *out += absl::StrFormat("{%d}", e.min);
          } else {
            *out += absl::StrFormat("{%d,%d}", e.min, e.max);
          }
        }
        break;
    }
    if (stack.back().parens) out->push_back(')');
    stack.pop_back();
  }
}

// Calls visit(child) for every expression reachable from `root` (root included).
template <typename Visit>
void ForEachSubexpr(const Grammar& g, ExprId root, Visit visit) {
  std::vector<ExprId> stack = {root};
  while (!stack.empty()) {
    ExprId id = stack.back();
    stack.pop_back();
    visit(id);
    for (ExprId c : g.exprs[id].children) stack.push_back(c);
  }
}

}  // namespace

std::string DumpExpr(const Grammar& grammar, ExprId id) {
  std::string out;
  AppendExpr(grammar, id, &out);
  return out;
}

std::string Dump(const Grammar& grammar) {
  std::string out;
  std::vector<RuleId> order = {grammar.root};
  for (RuleId r = 0; r < grammar.rules.size(); ++r) {
    if (r != grammar.root) order.push_back(r);
  }
  for (RuleId r : order) {
    const Rule& rule = grammar.rules[r];
    out += rule.name;
    if (rule.observed()) {
      // XGrammar's attribute block (grammar/rule_attributes.h), which reads back.
      const char* sep = "[";
      if (!rule.capture.empty()) {
        absl::StrAppend(&out, sep, "capture=\"", rule.capture, "\"");
        sep = ", ";
      }
      if (rule.temperature >= 0.0f) absl::StrAppend(&out, sep, "temperature=", rule.temperature);
      out += "]";
    }
    out += " ::= ";
    AppendExpr(grammar, rule.body, &out);
    out.push_back('\n');
  }
  for (const Token& t : grammar.tokens) {
    out += absl::StrFormat("# token %s = %s prio=%d%s%s\n", t.name,
                           RegexDisplayName(t.pattern, t.flags), t.priority,
                           t.is_string ? " string" : "", t.ignored ? " ignored" : "");
  }
  return out;
}

std::vector<bool> ReachableRules(const Grammar& grammar) {
  std::vector<bool> reached(grammar.rules.size(), false);
  if (grammar.rules.empty()) return reached;
  std::vector<RuleId> work = {grammar.root};
  reached[grammar.root] = true;
  while (!work.empty()) {
    RuleId r = work.back();
    work.pop_back();
    ForEachSubexpr(grammar, grammar.rules[r].body, [&](ExprId id) {
      const Expr& e = grammar.exprs[id];
      if (e.kind == ExprKind::kRuleRef && !reached[e.rule]) {
        reached[e.rule] = true;
        work.push_back(e.rule);
      }
    });
  }
  return reached;
}

// Linear: one worklist over expression nodes and rules (the counting
// algorithm of parser/flat_grammar.cc, on trees). A literal, regex or empty
// node is productive, a class when it has a range, a rule reference when its
// rule is, a rule when its body is, a choice when one child is, a repetition
// when min = 0 or its child is, a sequence when its count of unproductive
// children reaches zero. Shared nodes are handled through parent slots.
Productivity ComputeProductivity(const Grammar& g) {
  const size_t n = g.exprs.size();
  Productivity p;
  p.expr.assign(n, 0);
  p.rule.assign(g.rules.size(), 0);
  // Parent slots (CSR): one entry per (parent, child slot), so a child listed
  // twice by a sequence is counted twice, like the sequence's counter.
  std::vector<uint32_t> parent_begin(n + 1, 0);
  for (const Expr& e : g.exprs) {
    for (ExprId c : e.children) ++parent_begin[c + 1];
  }
  for (size_t i = 0; i < n; ++i) parent_begin[i + 1] += parent_begin[i];
  std::vector<ExprId> parents(parent_begin[n]);
  {
    std::vector<uint32_t> fill(parent_begin.begin(), parent_begin.end() - 1);
    for (ExprId id = 0; id < n; ++id) {
      for (ExprId c : g.exprs[id].children) parents[fill[c]++] = id;
    }
  }
  std::vector<std::vector<ExprId>> refs_to(g.rules.size());     // reference nodes per rule
  std::vector<std::vector<RuleId>> body_of(n);                   // rules whose body a node is
  for (RuleId r = 0; r < g.rules.size(); ++r) body_of[g.rules[r].body].push_back(r);
  std::vector<uint32_t> missing(n, 0);
  std::vector<ExprId> work;
  auto mark = [&](ExprId id) {
    if (!p.expr[id]) {
      p.expr[id] = 1;
      work.push_back(id);
    }
  };
  for (ExprId id = 0; id < n; ++id) {
    const Expr& e = g.exprs[id];
    switch (e.kind) {
      case ExprKind::kEmpty:
      case ExprKind::kLiteral:
      case ExprKind::kRegex:  // opaque: an empty regex language is the lowering's to report
      case ExprKind::kToken:  // likewise
      case ExprKind::kTokenIds:  // ids are checked against a vocabulary when compiled
        mark(id);
        break;
      case ExprKind::kCharClass:
        if (!e.ranges.empty()) mark(id);
        break;
      case ExprKind::kRuleRef:
        refs_to[e.rule].push_back(id);
        break;
      case ExprKind::kSequence:
        missing[id] = static_cast<uint32_t>(e.children.size());
        if (missing[id] == 0) mark(id);
        break;
      case ExprKind::kChoice:
        break;
      case ExprKind::kRepeat:
        if (e.min == 0) mark(id);
        break;
    }
  }
  while (!work.empty()) {
    ExprId id = work.back();
    work.pop_back();
    for (RuleId r : body_of[id]) {
      if (p.rule[r]) continue;
      p.rule[r] = 1;
      for (ExprId ref : refs_to[r]) mark(ref);
    }
    for (uint32_t k = parent_begin[id]; k < parent_begin[id + 1]; ++k) {
      ExprId parent = parents[k];
      if (p.expr[parent]) continue;
      switch (g.exprs[parent].kind) {
        case ExprKind::kChoice:
        case ExprKind::kRepeat:
          mark(parent);
          break;
        case ExprKind::kSequence:
          if (--missing[parent] == 0) mark(parent);
          break;
        default:
          break;
      }
    }
  }
  return p;
}

std::vector<bool> ProductiveRules(const Grammar& grammar) {
  Productivity p = ComputeProductivity(grammar);
  return std::vector<bool>(p.rule.begin(), p.rule.end());
}

}  // namespace zapgram::grammar
