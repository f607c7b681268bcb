// Lowering the grammar IR to the parser's flat BNF (see flat_grammar.h).
//
// Steps, each linear in the grammar's size:
//  1. Expressions to productions. A work stack of "define nonterminal N as
//     expression E" tasks: a choice gives one production per alternative,
//     nested sequences are flattened into the production, and any choice or
//     repetition met inside a sequence gets a fresh nonterminal (and a task).
//     Repetition: `X{m,}` becomes the left-recursive `R -> X^m | R X`
//     (Earley's favourite shape: constant work per step, no Leo chain),
//     `X{m,n}` becomes m copies of X followed by a right-nested chain of n-m
//     optionals `O_k -> X O_{k-1} | ε` (unambiguous, unlike X? X? X?).
//  2. Terminals: each distinct literal, class or regex (grammar/regex_compiler.h)
//     becomes one byte DFA (a regex that matches the empty string becomes
//     `N -> ε | T`, T without the empty string; an empty language, like an
//     empty class, a nonterminal without productions); all are
//     merged into one table whose columns are byte classes (bytes no terminal
//     tells apart share a column).
//  3. Useless productions: unproductive ones (some symbol derives nothing)
//     and unreachable ones are dropped; a root that derives nothing is an error.
//  4. Nullable nonterminals and prediction closures, by worklists.
// A lexed grammar's terminals are its tokens (kToken); its lexer
// (parser/lexer.h) is built here too, and the byte-level table stays empty.
#include "parser/flat_grammar.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grammar/byte_automaton.h"
#include "grammar/regex_compiler.h"

namespace zapgram::parser {

namespace {

using grammar::Expr;
using grammar::ExprId;
using grammar::ExprKind;

struct RawProduction {
  uint32_t lhs;
  std::vector<Symbol> rhs;
};

class Lowering {
 public:
  Lowering(const grammar::Grammar& g, const CompileLimits& limits) : g_(g), limits_(limits) {}

  absl::StatusOr<FlatGrammar> Run();

 private:
  uint32_t NewNonterminal(std::string name) {
    names_.push_back(std::move(name));
    return static_cast<uint32_t>(names_.size() - 1);
  }
  // A nonterminal with no productions: the symbol of an expression that matches nothing.
  uint32_t NeverNonterminal() {
    if (never_nt_ == kNone) never_nt_ = NewNonterminal("<never>");
    return never_nt_;
  }
  absl::StatusOr<Symbol> TerminalFor(const Expr& e);
  // A kRegex terminal (a nonterminal when its language is empty or has the empty string).
  absl::StatusOr<Symbol> RegexSymbolFor(const Expr& e);
  // The symbol standing for `id` inside a sequence (fresh nonterminal for composites).
  absl::StatusOr<Symbol> SymbolFor(ExprId id, uint32_t owner);
  // Appends the symbols of `id`, flattening nested sequences.
  absl::Status AppendSymbols(ExprId id, uint32_t owner, std::vector<Symbol>* out);
  absl::Status Define(uint32_t nt, ExprId id);
  absl::Status DefineRepeat(uint32_t nt, const Expr& e);
  absl::Status AddProduction(uint32_t lhs, std::vector<Symbol> rhs);
  absl::Status BuildTerminalTable(FlatGrammar& out);
  absl::Status Finish(FlatGrammar& out);

  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  const grammar::Grammar& g_;
  const CompileLimits& limits_;
  std::vector<std::string> names_;
  std::vector<RawProduction> productions_;
  std::vector<std::pair<uint32_t, ExprId>> tasks_;
  absl::flat_hash_map<ExprId, uint32_t> composite_nt_;
  absl::flat_hash_map<std::string, uint32_t> terminal_ids_;
  absl::flat_hash_map<std::string, Symbol> regex_symbols_;  // key "R<flags>/<pattern>"
  std::vector<grammar::ByteDfa> dfas_;
  std::vector<std::string> terminal_names_;
  uint64_t rhs_symbols_ = 0;
  uint32_t never_nt_ = kNone;
};

absl::Status Lowering::AddProduction(uint32_t lhs, std::vector<Symbol> rhs) {
  rhs_symbols_ += rhs.size() + 1;
  if (productions_.size() >= limits_.max_productions) {
    return absl::ResourceExhaustedError(absl::StrCat(
        g_.source_name, ": grammar too large after lowering (max_productions = ",
        limits_.max_productions, ")"));
  }
  if (rhs_symbols_ > limits_.max_rhs_symbols) {
    return absl::ResourceExhaustedError(absl::StrCat(
        g_.source_name, ": grammar too large after lowering (max_rhs_symbols = ",
        limits_.max_rhs_symbols, ")"));
  }
  productions_.push_back({lhs, std::move(rhs)});
  return absl::OkStatus();
}

// The DFA of L minus the empty string: a fresh, non-accepting start state
// with the old start's transitions, so loops back to the old start keep it.
absl::StatusOr<grammar::ByteDfa> WithoutEmptyString(const grammar::ByteDfa& dfa,
                                                    uint32_t max_states) {
  grammar::ByteNfa nfa;  // state 0: the new start; states 1.. mirror the DFA's
  for (uint32_t s = 1; s < dfa.num_states(); ++s) nfa.AddState();
  auto copy_row = [&](uint32_t row, uint32_t into) {
    for (uint32_t b = 0; b < 256;) {
      uint32_t to = dfa.next[row][b], e = b;
      while (e + 1 < 256 && dfa.next[row][e + 1] == to) ++e;
      if (to != 0) nfa.AddRange(into, static_cast<uint8_t>(b), static_cast<uint8_t>(e), to);
      b = e + 1;
    }
  };
  copy_row(1, 0);
  for (uint32_t s = 1; s < dfa.num_states(); ++s) {
    copy_row(s, s);
    if (dfa.accepting[s]) nfa.SetAccepting(s);
  }
  return grammar::Determinize(nfa, max_states);
}

absl::StatusOr<Symbol> Lowering::RegexSymbolFor(const Expr& e) {
  std::string key = absl::StrCat("R", e.flags, "/", e.literal);
  auto it = regex_symbols_.find(key);
  if (it != regex_symbols_.end()) return it->second;
  grammar::RegexLimits limits;
  limits.max_dfa_states = std::min(limits.max_dfa_states, limits_.max_dfa_states);
  absl::StatusOr<grammar::ByteDfa> dfa = grammar::CompileRegex(e.literal, e.flags, limits);
  if (!dfa.ok()) {
    return absl::Status(dfa.status().code(),
                        absl::StrFormat("%s:%d:%d: %s", g_.source_name, e.loc.line, e.loc.col,
                                        std::string(dfa.status().message())));
  }
  // A terminal consumes at least one byte: a regex that matches the empty
  // string becomes `N -> ε | T` with T matching the rest of its language.
  const bool nullable = !dfa->empty() && dfa->accepting[1];
  if (nullable) {
    dfa = WithoutEmptyString(*dfa, limits.max_dfa_states);
    if (!dfa.ok()) return dfa.status();
  }
  const std::string name = grammar::RegexDisplayName(e.literal, e.flags);
  Symbol sym = kNone;
  if (!dfa->empty()) {
    uint32_t id = static_cast<uint32_t>(dfas_.size());
    dfas_.push_back(*std::move(dfa));
    terminal_names_.push_back(name);
    sym = kTerminalTag | id;
  }
  if (nullable) {
    uint32_t nt = NewNonterminal(name + "#opt");
    absl::Status st = AddProduction(nt, {});
    if (st.ok() && sym != kNone) st = AddProduction(nt, {sym});
    if (!st.ok()) return st;
    sym = nt;
  } else if (sym == kNone) {
    sym = NeverNonterminal();
  }
  regex_symbols_.emplace(std::move(key), sym);
  return sym;
}

absl::StatusOr<Symbol> Lowering::TerminalFor(const Expr& e) {
  std::string key;
  if (e.kind == ExprKind::kRegex) return RegexSymbolFor(e);
  if (e.kind == ExprKind::kLiteral) {
    key = "L";
    key += e.literal;
  } else {
    if (e.ranges.empty()) return NeverNonterminal();
    key = "C";
    for (const grammar::CodepointRange& r : e.ranges) {
      absl::StrAppend(&key, r.lo, "-", r.hi, ",");
    }
  }
  auto it = terminal_ids_.find(key);
  if (it != terminal_ids_.end()) return kTerminalTag | it->second;
  absl::StatusOr<grammar::ByteDfa> dfa = e.kind == ExprKind::kLiteral
                                             ? grammar::LiteralDfa(e.literal)
                                             : grammar::CodepointClassDfa(e.ranges);
  if (!dfa.ok()) return dfa.status();
  if (dfa->empty()) return NeverNonterminal();
  uint32_t id = static_cast<uint32_t>(dfas_.size());
  dfas_.push_back(*std::move(dfa));
  Expr copy = e;
  copy.children.clear();
  grammar::Grammar scratch;
  scratch.exprs.push_back(copy);
  terminal_names_.push_back(grammar::DumpExpr(scratch, 0));
  terminal_ids_.emplace(std::move(key), id);
  return kTerminalTag | id;
}

absl::StatusOr<Symbol> Lowering::SymbolFor(ExprId id, uint32_t owner) {
  const Expr& e = g_.exprs[id];
  switch (e.kind) {
    case ExprKind::kLiteral:
    case ExprKind::kCharClass:
    case ExprKind::kRegex:
      return TerminalFor(e);
    case ExprKind::kRuleRef:
      return e.rule;
    case ExprKind::kToken:
      return kTerminalTag | e.token;
    default:
      break;
  }
  auto it = composite_nt_.find(id);
  if (it != composite_nt_.end()) return it->second;
  const char* suffix = e.kind == ExprKind::kChoice     ? "alt"
                       : e.kind == ExprKind::kRepeat   ? "rep"
                       : e.kind == ExprKind::kSequence ? "seq"
                                                       : "empty";
  uint32_t nt = NewNonterminal(absl::StrCat(names_[owner], "#", suffix, names_.size()));
  composite_nt_.emplace(id, nt);
  tasks_.push_back({nt, id});
  return nt;
}

absl::Status Lowering::AppendSymbols(ExprId id, uint32_t owner, std::vector<Symbol>* out) {
  std::vector<ExprId> stack = {id};
  while (!stack.empty()) {
    ExprId top = stack.back();
    stack.pop_back();
    const Expr& e = g_.exprs[top];
    if (e.kind == ExprKind::kEmpty) continue;
    if (e.kind == ExprKind::kSequence) {
      for (auto c = e.children.rbegin(); c != e.children.rend(); ++c) stack.push_back(*c);
      continue;
    }
    absl::StatusOr<Symbol> s = SymbolFor(top, owner);
    if (!s.ok()) return s.status();
    out->push_back(*s);
  }
  return absl::OkStatus();
}

absl::Status Lowering::DefineRepeat(uint32_t nt, const Expr& e) {
  ExprId child = e.children[0];
  std::vector<Symbol> item;
  absl::Status st = AppendSymbols(child, nt, &item);
  if (!st.ok()) return st;
  if (item.empty() || e.max == 0) return AddProduction(nt, {});
  if (item.size() > 1) {
    // A sequence child gets a nonterminal of its own, so copies stay short.
    uint32_t seq = NewNonterminal(absl::StrCat(names_[nt], "#item"));
    st = AddProduction(seq, std::move(item));
    if (!st.ok()) return st;
    item = {seq};
  }
  Symbol x = item[0];
  std::vector<Symbol> body(e.min, x);
  if (e.max == grammar::kUnbounded) {
    // X{m,} : N -> X^m | N X
    if (!(st = AddProduction(nt, std::move(body))).ok()) return st;
    return AddProduction(nt, {nt, x});
  }
  // X{m,n} : N -> X^m O_{n-m}, O_k -> X O_{k-1} | ε ; with m = 0, N is O_{n-m}.
  uint32_t optional_count = e.max - e.min;
  uint32_t chain = kNone;
  for (uint32_t k = 1; k <= optional_count; ++k) {
    uint32_t opt = (k == optional_count && e.min == 0)
                       ? nt
                       : NewNonterminal(absl::StrCat(names_[nt], "#opt", k));
    std::vector<Symbol> more = {x};
    if (chain != kNone) more.push_back(chain);
    if (!(st = AddProduction(opt, std::move(more))).ok()) return st;
    if (!(st = AddProduction(opt, {})).ok()) return st;
    chain = opt;
  }
  if (e.min == 0) return absl::OkStatus();
  if (chain != kNone) body.push_back(chain);
  return AddProduction(nt, std::move(body));
}

absl::Status Lowering::Define(uint32_t nt, ExprId id) {
  const Expr& e = g_.exprs[id];
  if (e.kind == ExprKind::kChoice) {
    for (ExprId c : e.children) {
      std::vector<Symbol> rhs;
      absl::Status st = AppendSymbols(c, nt, &rhs);
      if (!st.ok()) return st;
      if (!(st = AddProduction(nt, std::move(rhs))).ok()) return st;
    }
    return absl::OkStatus();
  }
  if (e.kind == ExprKind::kRepeat) return DefineRepeat(nt, e);
  std::vector<Symbol> rhs;
  // A composite nonterminal must not be defined as itself: expand its parts.
  if (e.kind == ExprKind::kSequence) {
    for (ExprId c : e.children) {
      absl::Status st = AppendSymbols(c, nt, &rhs);
      if (!st.ok()) return st;
    }
  } else {
    absl::Status st = AppendSymbols(id, nt, &rhs);
    if (!st.ok()) return st;
  }
  return AddProduction(nt, std::move(rhs));
}

absl::Status Lowering::BuildTerminalTable(FlatGrammar& out) {
  TerminalTable& t = out.terminals;
  t.names = terminal_names_;
  uint32_t total = 1;
  for (const grammar::ByteDfa& d : dfas_) {
    t.start.push_back(total);
    total += d.num_states() - 1;
    if (total > limits_.max_dfa_states) {
      return absl::ResourceExhaustedError(absl::StrCat(
          g_.source_name, ": terminal automata exceed max_dfa_states = ", limits_.max_dfa_states));
    }
  }
  // Global rows: row 0 dead, then each DFA's states 1.. shifted to its offset.
  std::vector<std::array<uint32_t, 256>> rows(total);
  t.accepting.assign(total, 0);
  for (size_t i = 0; i < dfas_.size(); ++i) {
    const grammar::ByteDfa& d = dfas_[i];
    uint32_t offset = t.start[i] - 1;
    for (uint32_t s = 1; s < d.num_states(); ++s) {
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t to = d.next[s][b];
        rows[offset + s][b] = to ? offset + to : 0;
      }
      t.accepting[offset + s] = d.accepting[s];
    }
  }
  // Byte classes: bytes whose columns are identical share a class. Refined
  // row by row: two bytes stay together while every row sends them to the
  // same state.
  std::array<uint32_t, 256> cls{};
  uint32_t num_classes = 1;
  for (uint32_t s = 1; s < total; ++s) {
    absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> refined;
    for (uint32_t b = 0; b < 256; ++b) {
      auto [it, inserted] =
          refined.emplace(std::make_pair(cls[b], rows[s][b]), static_cast<uint32_t>(refined.size()));
      cls[b] = it->second;
    }
    num_classes = static_cast<uint32_t>(refined.size());
    if (num_classes == 256) break;
  }
  std::vector<int> representative(num_classes, -1);
  for (uint32_t b = 0; b < 256; ++b) {
    t.byte_class[b] = static_cast<uint8_t>(cls[b]);
    if (representative[cls[b]] < 0) representative[cls[b]] = static_cast<int>(b);
  }
  t.num_classes = static_cast<uint32_t>(representative.size());
  t.next.assign(static_cast<size_t>(total) * t.num_classes, 0);
  t.has_next.assign(total, 0);
  t.live_bytes.assign(total, ByteSet());
  for (uint32_t s = 0; s < total; ++s) {
    for (uint32_t c = 0; c < t.num_classes; ++c) {
      t.next[static_cast<size_t>(s) * t.num_classes + c] = rows[s][representative[c]];
    }
    for (uint32_t b = 0; b < 256; ++b) {
      if (rows[s][b]) t.live_bytes[s].set(b);
    }
    t.has_next[s] = t.live_bytes[s].any();
  }
  return absl::OkStatus();
}

absl::Status Lowering::Finish(FlatGrammar& out) {
  const uint32_t num_nt = static_cast<uint32_t>(names_.size());

  // Productive nonterminals: count, per production, the nonterminals not yet
  // known productive; a production reaching zero makes its lhs productive.
  std::vector<uint8_t> productive(num_nt, 0);
  std::vector<uint32_t> missing(productions_.size(), 0);
  std::vector<std::vector<uint32_t>> uses(num_nt);
  std::vector<uint32_t> work;
  for (uint32_t p = 0; p < productions_.size(); ++p) {
    for (Symbol s : productions_[p].rhs) {
      if (IsNonterminal(s)) {
        ++missing[p];
        uses[s].push_back(p);
      }
    }
    if (missing[p] == 0 && !productive[productions_[p].lhs]) {
      productive[productions_[p].lhs] = 1;
      work.push_back(productions_[p].lhs);
    }
  }
  while (!work.empty()) {
    uint32_t nt = work.back();
    work.pop_back();
    for (uint32_t p : uses[nt]) {
      if (--missing[p] == 0 && !productive[productions_[p].lhs]) {
        productive[productions_[p].lhs] = 1;
        work.push_back(productions_[p].lhs);
      }
    }
  }
  if (!productive[out.start_nt]) {
    return absl::InvalidArgumentError(absl::StrCat(g_.source_name, ": root rule '",
                                                   g_.rules[g_.root].name,
                                                   "' derives no string"));
  }
  // Keep productions whose symbols are all productive and which are reachable.
  std::vector<std::vector<uint32_t>> by_lhs(num_nt);
  for (uint32_t p = 0; p < productions_.size(); ++p) {
    bool ok = std::all_of(productions_[p].rhs.begin(), productions_[p].rhs.end(),
                          [&](Symbol s) { return !IsNonterminal(s) || productive[s]; });
    if (ok) by_lhs[productions_[p].lhs].push_back(p);
  }
  std::vector<uint8_t> reachable(num_nt, 0);
  reachable[out.start_nt] = 1;
  work = {out.start_nt};
  while (!work.empty()) {
    uint32_t nt = work.back();
    work.pop_back();
    for (uint32_t p : by_lhs[nt]) {
      for (Symbol s : productions_[p].rhs) {
        if (IsNonterminal(s) && !reachable[s]) {
          reachable[s] = 1;
          work.push_back(s);
        }
      }
    }
  }

  // Layout, grouped by lhs.
  out.nt_names = names_;
  out.nt_production_begin.assign(num_nt + 1, 0);
  for (uint32_t nt = 0; nt < num_nt; ++nt) {
    out.nt_production_begin[nt] = static_cast<uint32_t>(out.production_begin.size());
    if (!reachable[nt]) continue;
    for (uint32_t p : by_lhs[nt]) {
      out.production_begin.push_back(static_cast<uint32_t>(out.rhs.size()));
      for (Symbol s : productions_[p].rhs) {
        out.rhs.push_back(s);
        out.dot_lhs.push_back(nt);
      }
      out.rhs.push_back(kEndTag | nt);
      out.dot_lhs.push_back(nt);
    }
  }
  out.nt_production_begin[num_nt] = static_cast<uint32_t>(out.production_begin.size());
  out.start_dot = out.production_begin[out.nt_production_begin[out.start_nt]];

  // Nullable: a production with only nullable nonterminals left makes its lhs nullable.
  out.nullable.assign(num_nt, 0);
  std::vector<uint32_t> pending(out.production_begin.size(), 0);
  std::vector<std::vector<uint32_t>> nt_uses(num_nt);
  for (uint32_t nt = 0; nt < num_nt; ++nt) {
    for (uint32_t p = out.nt_production_begin[nt]; p < out.nt_production_begin[nt + 1]; ++p) {
      uint32_t d = out.production_begin[p];
      bool has_terminal = false;
      for (; !IsEnd(out.rhs[d]); ++d) {
        if (IsTerminal(out.rhs[d])) has_terminal = true;
        else {
          ++pending[p];
          nt_uses[out.rhs[d]].push_back(p);
        }
      }
      if (has_terminal) pending[p] = 0xFFFFFFFFu;
      else if (pending[p] == 0 && !out.nullable[nt]) {
        out.nullable[nt] = 1;
        work.push_back(nt);
      }
    }
  }
  while (!work.empty()) {
    uint32_t nt = work.back();
    work.pop_back();
    for (uint32_t p : nt_uses[nt]) {
      if (pending[p] == 0xFFFFFFFFu) continue;
      uint32_t lhs = out.dot_lhs[out.production_begin[p]];
      if (--pending[p] == 0 && !out.nullable[lhs]) {
        out.nullable[lhs] = 1;
        work.push_back(lhs);
      }
    }
  }

  // Prediction closures.
  out.predict_waiting_begin.assign(num_nt + 1, 0);
  out.predict_scan_begin.assign(num_nt + 1, 0);
  std::vector<uint32_t> visited(num_nt, 0xFFFFFFFFu);
  for (uint32_t a = 0; a < num_nt; ++a) {
    out.predict_waiting_begin[a] = static_cast<uint32_t>(out.predict_waiting.size());
    out.predict_scan_begin[a] = static_cast<uint32_t>(out.predict_scan.size());
    if (!reachable[a]) continue;
    work = {a};
    visited[a] = a;
    while (!work.empty()) {
      uint32_t b = work.back();
      work.pop_back();
      for (uint32_t p = out.nt_production_begin[b]; p < out.nt_production_begin[b + 1]; ++p) {
        for (uint32_t d = out.production_begin[p];; ++d) {
          Symbol s = out.rhs[d];
          if (IsEnd(s)) break;
          if (IsTerminal(s)) {
            out.predict_scan.push_back(d);
            break;
          }
          out.predict_waiting.push_back(d);
          if (visited[s] != a) {
            visited[s] = a;
            work.push_back(s);
          }
          if (!out.nullable[s]) break;
        }
      }
      if (out.predict_waiting.size() + out.predict_scan.size() > limits_.max_rhs_symbols) {
        return absl::ResourceExhaustedError(absl::StrCat(
            g_.source_name, ": prediction tables exceed max_rhs_symbols = ",
            limits_.max_rhs_symbols));
      }
    }
  }
  out.predict_waiting_begin[num_nt] = static_cast<uint32_t>(out.predict_waiting.size());
  out.predict_scan_begin[num_nt] = static_cast<uint32_t>(out.predict_scan.size());
  return absl::OkStatus();
}

absl::StatusOr<FlatGrammar> Lowering::Run() {
  absl::Status st = g_.Validate();
  if (!st.ok()) return st;
  for (const grammar::Rule& r : g_.rules) names_.push_back(r.name);
  for (uint32_t r = 0; r < g_.rules.size(); ++r) tasks_.push_back({r, g_.rules[r].body});
  while (!tasks_.empty()) {
    auto [nt, id] = tasks_.back();
    tasks_.pop_back();
    if (!(st = Define(nt, id)).ok()) return st;
  }
  FlatGrammar out;
  out.start_nt = NewNonterminal("<start>");
  if (!(st = AddProduction(out.start_nt, {g_.root})).ok()) return st;
  if (g_.lexed()) {
    absl::StatusOr<std::shared_ptr<const LexerTable>> lexer = BuildLexer(g_, limits_);
    if (!lexer.ok()) return lexer.status();
    out.lexer = *std::move(lexer);
  }
  if (!(st = BuildTerminalTable(out)).ok()) return st;
  if (!(st = Finish(out)).ok()) return st;
  return out;
}

std::string SymbolName(const FlatGrammar& g, Symbol s) {
  if (IsTerminal(s)) {
    return g.lexed() ? g.lexer->names[Payload(s)] : g.terminals.names[Payload(s)];
  }
  return g.nt_names[Payload(s)];
}

}  // namespace

absl::StatusOr<FlatGrammar> BuildFlatGrammar(const grammar::Grammar& grammar,
                                             const CompileLimits& limits) {
  Lowering lowering(grammar, limits);
  return lowering.Run();
}

std::string DumpDottedProduction(const FlatGrammar& g, uint32_t dot) {
  uint32_t begin = dot;
  while (begin > 0 && !IsEnd(g.rhs[begin - 1])) --begin;
  std::string out = absl::StrCat(g.nt_names[g.dot_lhs[dot]], " ->");
  for (uint32_t d = begin;; ++d) {
    if (d == dot) out += " .";
    if (IsEnd(g.rhs[d])) break;
    absl::StrAppend(&out, " ", SymbolName(g, g.rhs[d]));
  }
  return out;
}

std::string DumpFlatGrammar(const FlatGrammar& g) {
  std::string out;
  for (uint32_t nt = 0; nt < g.num_nonterminals(); ++nt) {
    for (uint32_t p = g.nt_production_begin[nt]; p < g.nt_production_begin[nt + 1]; ++p) {
      absl::StrAppend(&out, g.nt_names[nt], " ->");
      for (uint32_t d = g.production_begin[p]; !IsEnd(g.rhs[d]); ++d) {
        absl::StrAppend(&out, " ", SymbolName(g, g.rhs[d]));
      }
      if (g.nullable[nt]) absl::StrAppend(&out, "    (nullable)");
      out += "\n";
    }
  }
  if (g.lexed()) {
    out += DumpLexer(*g.lexer);
  } else {
    absl::StrAppend(&out, "terminals: ", g.terminals.start.size(), ", states: ",
                    g.terminals.num_states(), ", byte classes: ", g.terminals.num_classes, "\n");
  }
  return out;
}

}  // namespace zapgram::parser
