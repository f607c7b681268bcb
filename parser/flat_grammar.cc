// Lowering the grammar IR to the parser's flat BNF (see flat_grammar.h).
//
// Steps, each linear in the grammar's size:
//  1. Expressions to productions. A work stack of "define nonterminal N as
//     expression E" tasks: a choice gives one production per alternative,
//     nested sequences are flattened into the production, and any choice or
//     repetition met inside a sequence gets a fresh nonterminal (and a task).
//     Repetition: `X{m,}` becomes the left-recursive `R -> X^m | R X`
//     (Earley's favourite shape: constant work per step, no Leo chain),
//     `X{m,n}` becomes X^m followed by X{0,n-m}. Counts up to
//     kUnrollMaxCount (16) unroll: X^m is m copies of X, X{0,r} a
//     right-nested chain of optionals `O_k -> X O_{k-1} | ε` (unambiguous,
//     unlike X? X? X?; Leo items make it constant work per byte). Larger
//     counts use binary forms, O(log n) productions and symbols instead of
//     O(n) (see "Counted repetition" below).
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
//
// Counted repetition. With E_k = X{2^k} (E_0 = X, E_k -> E_{k-1} E_{k-1})
// and F_i = X{0,2^i-1} (F_1 -> X | ε, F_i -> E_{i-1} F_{i-1} | F_{i-1}):
//  - X^c is E_k1 E_k2 ... over the set bits of c, high to low;
//  - X{0,r} is R_top over the bits of r, built from bit 0 up with R_{-1} = ε:
//    bit i clear: R_i = R_{i-1}; set with every lower bit set: R_i = F_{i+1};
//    set otherwise: R_i -> E_i R_{i-1} | F_i (a count either has bit i, and
//    the rest is at most r mod 2^i, or it is below 2^i).
// Each count has exactly one derivation shape (its binary digits), so these
// forms are exactly as ambiguous as the unrolled X X ... X: one parse per way
// of cutting the input into X's. X{0,100000} is 61 productions (the chain:
// 200,001), X{0,2^32-2} 156. Nonterminals are named by their language:
// `N#{16}`, `N#{0,15}`.
// The cost moves to the recognizer: a count is known only at the end, so the
// parser follows one hypothesis per binary digit ("inside block E_i",
// "skipped it"), each a stack of nested E items. Measured with pruning
// (tests/parser/repetition_test.cc, RepetitionCost): [a-z]{0,1000} takes at
// most 30 items per set and retains 28 (the chain: 4 and 2, thanks to Leo),
// [a-z]{0,100000} 51 and 49; ("ab"){3,700} 31 and 29. A logarithmic chart
// is the price of a logarithmic grammar: the retained items must encode the
// count consumed so far, and their dots range over O(log n) positions only.
// Ambiguous bodies gain: ("a" | "aa"){0,300} peaks at 1,063 items per
// set against 23,104 for the chain (every chain link is a distinct item per
// live count). Hence the threshold: below it the chain is small and faster.
// A repetition of a single terminal class could also become one terminal
// DFA (the regex compiler counts {m,n} itself); that is left to the readers.
// Tests: tests/parser/repetition_test.cc (sizes, goldens, language against
// the reference recognizer and counting oracles, items per set).
#include "parser/flat_grammar.h"

#include <algorithm>
#include <array>
#include <bit>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grammar/byte_automaton.h"
#include "grammar/heap_bytes.h"
#include "grammar/regex_compiler.h"

namespace zapgram::parser {

namespace {

using grammar::Expr;
using grammar::ExprId;
using grammar::ExprKind;

class Lowering {
 public:
  Lowering(const grammar::Grammar& g, const CompileLimits& limits,
           grammar::RegexDfaCache* dfa_cache, grammar::LazyRegexNfas* lazy_nfas)
      : g_(g), limits_(limits), dfa_cache_(dfa_cache != nullptr ? *dfa_cache : own_dfa_cache_),
        lazy_nfas_(lazy_nfas) {}

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
  // A regex too large to determinize ahead of time: its NFA joins lazy_nfa_.
  // kNone when it matches no non-empty string.
  // The symbol of a regex terminal `sym` (kNone: an empty language), made
  // optional when the regex matches the empty string; memoized under `key`.
  absl::StatusOr<Symbol> FinishRegexSymbol(std::string key, const std::string& name, Symbol sym, bool nullable);
  absl::StatusOr<Symbol> LazyRegexTerminal(const grammar::ByteNfa& nfa, const std::string& name,
                                           bool* nullable);
  // The symbol standing for `id` inside a sequence (fresh nonterminal for composites).
  absl::StatusOr<Symbol> SymbolFor(ExprId id, uint32_t owner);
  // Appends the symbols of `id`, flattening nested sequences.
  absl::Status AppendSymbols(ExprId id, uint32_t owner, std::vector<Symbol>* out);
  absl::Status Define(uint32_t nt, ExprId id);
  absl::Status DefineRepeat(uint32_t nt, const Expr& e);
  // Counted repetition of one symbol X (see the essay): the nonterminals
  // made so far for one repetition `owner`.
  struct CountedForms {
    uint32_t owner = 0;
    std::vector<Symbol> power;  // power[k] = E_k = X{2^k}; power[0] = X
    std::vector<Symbol> below;  // below[i] = F_i = X{0,2^i-1}; below[0] = kNone (ε)
  };
  absl::StatusOr<Symbol> Power(CountedForms& f, uint32_t k);
  absl::StatusOr<Symbol> Below(CountedForms& f, uint32_t i);
  // Appends symbols deriving exactly X^count.
  absl::Status AppendExactly(CountedForms& f, uint32_t count, std::vector<Symbol>* out);
  // A symbol deriving X{0,limit} (limit >= 1); with define_owner, the owner's
  // productions are that symbol's.
  absl::StatusOr<Symbol> UpTo(CountedForms& f, uint32_t limit, bool define_owner);
  // The unrolled X{0,count}: O_count -> X O_{count-1} | ε ...; count >= 1.
  absl::StatusOr<Symbol> OptionalChain(uint32_t nt, Symbol x, uint32_t count, bool define_nt);
  absl::Status AddProduction(uint32_t lhs, std::vector<Symbol> rhs);
  absl::Status BuildTerminalTable(FlatGrammar& out);

  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  // Counts up to this unroll (cheaper below it: see the essay).
  static constexpr uint32_t kUnrollMaxCount = 16;
  const grammar::Grammar& g_;
  const CompileLimits& limits_;
  grammar::RegexDfaCache own_dfa_cache_;
  grammar::RegexDfaCache& dfa_cache_;
  grammar::LazyRegexNfas* lazy_nfas_;  // the merge's lazy terminals (may be null)
  std::vector<std::string> names_;
  std::vector<FlatProduction> productions_;
  std::vector<std::pair<uint32_t, ExprId>> tasks_;
  absl::flat_hash_map<ExprId, uint32_t> composite_nt_;
  absl::flat_hash_map<std::string, uint32_t> terminal_ids_;
  absl::flat_hash_map<std::string, Symbol> regex_symbols_;  // key "R<flags>/<pattern>"
  // Per terminal, in byte classes (a regex's: those it was determinized
  // in; read by class in BuildTerminalTable); empty for lazy ones.
  std::vector<grammar::ClassDfa> dfas_;
  // Terminals determinized lazily: their NFAs side by side in lazy_nfa_.
  struct LazyTerminal {
    uint32_t terminal;
    uint32_t nfa_start;
  };
  grammar::ByteNfa lazy_nfa_;
  std::vector<LazyTerminal> lazy_terminals_;
  // Token terminals (kTokenIds): their terminal ids and definitions, in
  // order; their states are numbered by BuildTerminalTable.
  std::vector<uint32_t> token_terminal_ids_;
  std::vector<TokenTerminal> token_terminals_;
  // Counted terminals (grammar/counted_automaton.h) and their twins' ids.
  struct CountedTerminal {
    uint32_t terminal;
    uint32_t twin;
    std::shared_ptr<const grammar::CountedAutomaton> automaton;
  };
  std::vector<CountedTerminal> counted_terminals_;
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


absl::StatusOr<Symbol> Lowering::RegexSymbolFor(const Expr& e) {
  std::string key = absl::StrCat("R", e.flags, "/", e.literal);
  auto it = regex_symbols_.find(key);
  if (it != regex_symbols_.end()) return it->second;
  auto located = [&](const absl::Status& st) {
    return absl::Status(st.code(), absl::StrFormat("%s:%d:%d: %s", g_.source_name, e.loc.line,
                                                   e.loc.col, std::string(st.message())));
  };
  const std::string name = grammar::RegexDisplayName(e.literal, e.flags);
  // P(?:U){m,n}S with a large bound: a counted terminal, never unrolled.
  absl::StatusOr<std::optional<grammar::CountedParts>> split =
      grammar::MayHaveCountedBound(e.literal)
          ? grammar::SplitCountedRegex(e.literal, e.flags)
          : absl::StatusOr<std::optional<grammar::CountedParts>>(std::nullopt);
  if (split.ok() && split->has_value() && (*split)->max >= grammar::kCountedMinBound) {
    absl::StatusOr<grammar::CountedAutomaton> counted =
        grammar::CountedAutomaton::Build(**std::move(split));
    if (counted.ok()) {
      auto automaton = std::make_shared<const grammar::CountedAutomaton>(*std::move(counted));
      const uint32_t id = static_cast<uint32_t>(dfas_.size());
      dfas_.emplace_back();  // no eager automaton: BuildTerminalTable places it
      terminal_names_.push_back(name);
      dfas_.push_back(grammar::ClassDfa::Narrow(automaton->TwinDfa()));
      terminal_names_.push_back(name + "#unbounded");
      counted_terminals_.push_back({id, id + 1, std::move(automaton)});
      const Symbol sym = kTerminalTag | id;
      regex_symbols_.emplace(std::move(key), sym);
      return sym;
    }
  }
  bool nullable = false;
  Symbol sym = kNone;
  // A lazy terminal of the merge: its NFA is built already.
  if (lazy_nfas_ != nullptr && e.flags == 0) {
    auto lazy_nfa = lazy_nfas_->by_pattern.find(e.literal);
    if (lazy_nfa != lazy_nfas_->by_pattern.end()) {
      absl::StatusOr<Symbol> lazy = LazyRegexTerminal(lazy_nfa->second, name, &nullable);
      if (!lazy.ok()) return located(lazy.status());
      return FinishRegexSymbol(std::move(key), name, *lazy, nullable);
    }
  }
  grammar::RegexLimits regex_limits;
  regex_limits.max_dfa_states = std::min(limits_.max_eager_regex_states, limits_.max_dfa_states);
  absl::StatusOr<grammar::ClassDfa> dfa = dfa_cache_.TakeDeterminized(e.literal, e.flags, regex_limits);
  if (dfa.ok()) {
    // A terminal consumes at least one byte: a regex that matches the empty
    // string becomes `N -> ε | T` with T matching the rest of its language.
    nullable = !dfa->empty() && dfa->accepting[1];
    if (nullable) {
      dfa = grammar::WithoutEmptyString(*dfa, limits_.max_dfa_states);
      if (!dfa.ok()) return located(dfa.status());
    }
    if (!dfa->empty()) {
      sym = kTerminalTag | static_cast<uint32_t>(dfas_.size());
      dfas_.push_back(*std::move(dfa));
      terminal_names_.push_back(name);
    }
  } else if (dfa.status().code() == absl::StatusCode::kResourceExhausted &&
             absl::StrContains(dfa.status().message(), "max_dfa_states")) {
    grammar::ByteNfa nfa;
    absl::StatusOr<uint32_t> end = grammar::AddRegex(nfa, 0, e.literal, e.flags);
    if (!end.ok()) return located(end.status());
    nfa.SetAccepting(*end);
    absl::StatusOr<Symbol> lazy = LazyRegexTerminal(nfa, name, &nullable);
    if (!lazy.ok()) return located(lazy.status());
    sym = *lazy;
  } else {
    return located(dfa.status());
  }
  return FinishRegexSymbol(std::move(key), name, sym, nullable);
}

absl::StatusOr<Symbol> Lowering::FinishRegexSymbol(std::string key, const std::string& name, Symbol sym,
                                                   bool nullable) {
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

absl::StatusOr<Symbol> Lowering::LazyRegexTerminal(const grammar::ByteNfa& nfa,
                                                   const std::string& name, bool* nullable) {
  // The start's closure; without the empty string, the terminal starts from
  // a fresh state with the closure's byte ranges and no epsilons.
  std::vector<uint8_t> mark(nfa.num_states(), 0);
  std::vector<uint32_t> closure = {0};
  grammar::EpsilonClosure(nfa, closure, mark);
  *nullable = std::any_of(closure.begin(), closure.end(),
                          [&](uint32_t s) { return nfa.accepting(s); });
  // Does the terminal match some non-empty string? (Search from the
  // closure's byte successors for an accepting state.)
  std::vector<uint32_t> stack;
  for (uint32_t s : closure) {
    for (const grammar::ByteNfa::Range& r : nfa.ranges(s)) {
      if (!mark[r.to]) {
        mark[r.to] = 1;
        stack.push_back(r.to);
      }
    }
  }
  bool matches_non_empty = false;
  while (!stack.empty() && !matches_non_empty) {
    const uint32_t s = stack.back();
    stack.pop_back();
    matches_non_empty = nfa.accepting(s);
    auto visit = [&](uint32_t t) {
      if (!mark[t]) {
        mark[t] = 1;
        stack.push_back(t);
      }
    };
    for (const grammar::ByteNfa::Range& r : nfa.ranges(s)) visit(r.to);
    for (uint32_t t : nfa.epsilons(s)) visit(t);
  }
  if (!matches_non_empty) return kNone;
  const uint32_t offset = lazy_nfa_.Append(nfa);
  uint32_t start = offset;
  if (*nullable) {
    start = lazy_nfa_.AddState();
    for (uint32_t s : closure) {
      for (const grammar::ByteNfa::Range& r : nfa.ranges(s)) {
        lazy_nfa_.AddRange(start, r.lo, r.hi, offset + r.to);
      }
    }
  }
  const uint32_t id = static_cast<uint32_t>(dfas_.size());
  dfas_.emplace_back();  // no eager automaton: BuildTerminalTable skips it
  terminal_names_.push_back(name);
  lazy_terminals_.push_back({id, start});
  return kTerminalTag | id;
}

absl::StatusOr<Symbol> Lowering::TerminalFor(const Expr& e) {
  std::string key;
  if (e.kind == ExprKind::kRegex) return RegexSymbolFor(e);
  if (e.kind == ExprKind::kTokenIds) {
    grammar::Grammar scratch;
    Expr copy = e;
    scratch.exprs.push_back(copy);
    std::string name = grammar::DumpExpr(scratch, 0);
    key = "T" + name;
    auto it = terminal_ids_.find(key);
    if (it != terminal_ids_.end()) return kTerminalTag | it->second;
    const uint32_t id = static_cast<uint32_t>(dfas_.size());
    dfas_.emplace_back();  // no automaton: BuildTerminalTable gives it a token state
    terminal_names_.push_back(name);
    token_terminal_ids_.push_back(id);
    token_terminals_.push_back({e.ranges, e.names, (e.flags & grammar::kTokenIdsExclude) != 0,
                                (e.flags & grammar::kTokenIdsClip) != 0,
                                // No place for synthesized nodes (structural tags): the source.
                                e.loc.line == 0 ? g_.source_name
                                                : absl::StrCat(g_.source_name, ":", e.loc.line, ":", e.loc.col),
                                std::move(name)});
    terminal_ids_.emplace(std::move(key), id);
    return kTerminalTag | id;
  }
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
  if (e.kind == ExprKind::kLiteral) {
    dfas_.push_back(grammar::LiteralClassDfa(e.literal));
  } else {
    absl::StatusOr<grammar::ByteDfa> dfa = grammar::CodepointClassDfa(e.ranges);
    if (!dfa.ok()) return dfa.status();
    if (dfa->empty()) return NeverNonterminal();
    dfas_.push_back(grammar::ClassDfa::Narrow(*dfa));
  }
  const uint32_t id = static_cast<uint32_t>(dfas_.size() - 1);
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
    case ExprKind::kTokenIds:
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

absl::StatusOr<Symbol> Lowering::OptionalChain(uint32_t nt, Symbol x, uint32_t count,
                                               bool define_nt) {
  // O_k -> X O_{k-1} | ε, O_1 -> X | ε; the last one is `nt` when define_nt.
  uint32_t chain = kNone;
  for (uint32_t k = 1; k <= count; ++k) {
    uint32_t opt = (k == count && define_nt) ? nt
                                             : NewNonterminal(absl::StrCat(names_[nt], "#opt", k));
    std::vector<Symbol> more = {x};
    if (chain != kNone) more.push_back(chain);
    absl::Status st = AddProduction(opt, std::move(more));
    if (st.ok()) st = AddProduction(opt, {});
    if (!st.ok()) return st;
    chain = opt;
  }
  return chain;
}

absl::StatusOr<Symbol> Lowering::Power(CountedForms& f, uint32_t k) {
  // E_0 = X, E_j -> E_{j-1} E_{j-1}.
  while (f.power.size() <= k) {
    const size_t j = f.power.size();
    uint32_t e = NewNonterminal(absl::StrCat(names_[f.owner], "#{", uint64_t{1} << j, "}"));
    absl::Status st = AddProduction(e, {f.power[j - 1], f.power[j - 1]});
    if (!st.ok()) return st;
    f.power.push_back(e);
  }
  return f.power[k];
}

absl::StatusOr<Symbol> Lowering::Below(CountedForms& f, uint32_t i) {
  // F_1 -> X | ε, F_j -> E_{j-1} F_{j-1} | F_{j-1} (j >= 2).
  while (f.below.size() <= i) {
    const uint32_t j = static_cast<uint32_t>(f.below.size());
    if (j == 0) {
      f.below.push_back(kNone);  // F_0 = ε, never a symbol
      continue;
    }
    absl::StatusOr<Symbol> e = Power(f, j - 1);
    if (!e.ok()) return e.status();
    uint32_t nt = NewNonterminal(
        absl::StrCat(names_[f.owner], "#{0,", (uint64_t{1} << j) - 1, "}"));
    std::vector<Symbol> with = {*e}, without;
    if (f.below[j - 1] != kNone) {
      with.push_back(f.below[j - 1]);
      without.push_back(f.below[j - 1]);
    }
    absl::Status st = AddProduction(nt, std::move(with));
    if (st.ok()) st = AddProduction(nt, std::move(without));
    if (!st.ok()) return st;
    f.below.push_back(nt);
  }
  return f.below[i];
}

absl::Status Lowering::AppendExactly(CountedForms& f, uint32_t count, std::vector<Symbol>* out) {
  if (count <= kUnrollMaxCount) {
    out->insert(out->end(), count, f.power[0]);
    return absl::OkStatus();
  }
  // The binary digits of count, high to low: X^count = E_k1 E_k2 ...
  for (int k = 31; k >= 0; --k) {
    if (((count >> k) & 1u) == 0) continue;
    absl::StatusOr<Symbol> e = Power(f, static_cast<uint32_t>(k));
    if (!e.ok()) return e.status();
    out->push_back(*e);
  }
  return absl::OkStatus();
}

absl::StatusOr<Symbol> Lowering::UpTo(CountedForms& f, uint32_t limit, bool define_owner) {
  // R_i = X{0, limit mod 2^(i+1)}, built from bit 0 up; R_{-1} = ε.
  //   bit i of limit clear: R_i = R_{i-1};
  //   set, all bits below set too: R_i = F_{i+1};
  //   set otherwise: R_i -> E_i R_{i-1} | F_i.
  // The top level (the highest set bit) is the owner itself when define_owner.
  const int top = 31 - std::countl_zero(limit);
  Symbol prev = kNone;  // ε
  for (int i = 0; i <= top; ++i) {
    if (((limit >> i) & 1u) == 0) continue;
    const uint64_t low = limit & ((uint64_t{2} << i) - 1);  // limit mod 2^(i+1)
    const bool owner_here = i == top && define_owner;
    if (low == (uint64_t{2} << i) - 1 && !owner_here) {
      absl::StatusOr<Symbol> b = Below(f, static_cast<uint32_t>(i) + 1);
      if (!b.ok()) return b.status();
      prev = *b;
      continue;
    }
    absl::StatusOr<Symbol> e = Power(f, static_cast<uint32_t>(i));
    if (!e.ok()) return e.status();
    absl::StatusOr<Symbol> below = Below(f, static_cast<uint32_t>(i));
    if (!below.ok()) return below.status();
    uint32_t nt = owner_here ? f.owner
                             : NewNonterminal(absl::StrCat(names_[f.owner], "#{0,", low, "}"));
    std::vector<Symbol> with = {*e}, without;
    if (prev != kNone) with.push_back(prev);
    if (*below != kNone) without.push_back(*below);
    absl::Status st = AddProduction(nt, std::move(with));
    if (st.ok()) st = AddProduction(nt, std::move(without));
    if (!st.ok()) return st;
    prev = nt;
  }
  return prev;
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
  CountedForms forms;
  forms.owner = nt;
  forms.power = {item[0]};
  std::vector<Symbol> body;
  if (!(st = AppendExactly(forms, e.min, &body)).ok()) return st;
  if (e.max == grammar::kUnbounded) {
    // X{m,} : N -> X^m | N X
    if (!(st = AddProduction(nt, std::move(body))).ok()) return st;
    return AddProduction(nt, {nt, item[0]});
  }
  // X{m,n} : N -> X^m Y with Y = X{0,n-m}; with m = 0, N is Y.
  const uint32_t optional_count = e.max - e.min;
  if (optional_count > 0) {
    absl::StatusOr<Symbol> rest =
        optional_count <= kUnrollMaxCount
            ? OptionalChain(nt, item[0], optional_count, /*define_nt=*/e.min == 0)
            : UpTo(forms, optional_count, /*define_owner=*/e.min == 0);
    if (!rest.ok()) return rest.status();
    if (e.min == 0) return absl::OkStatus();
    body.push_back(*rest);
  }
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

// Per byte, a number shared exactly by the bytes whose columns of `d`
// (states 1..n-1) are equal: the class columns are grouped by hash, then
// compared in full. One pass over k class columns instead of n rows of 256.
std::array<uint32_t, 256> ColumnClasses(const grammar::ClassDfa& d) {
  const uint32_t k = d.num_classes;
  const auto same_column = [&](uint32_t a, uint32_t b) {
    for (uint32_t s = 1; s < d.num_states(); ++s) {
      if (d.step(s, a) != d.step(s, b)) return false;
    }
    return true;
  };
  // A 32-bit multiply-by-33 hash per column: the row loop vectorizes (a
  // shift and an add per entry), where a 64-bit multiply per entry did not;
  // a collision only costs a full comparison below.
  std::vector<uint32_t> hash(k, 5381u);
  for (uint32_t s = 1; s < d.num_states(); ++s) {
    const uint32_t* row = &d.next[size_t{s} * k];
    for (uint32_t c = 0; c < k; ++c) hash[c] = (hash[c] * 33u) ^ row[c];
  }
  std::vector<std::pair<uint32_t, uint32_t>> keyed;  // (column hash, class)
  for (uint32_t c = 0; c < k; ++c) keyed.push_back({hash[c], c});
  std::sort(keyed.begin(), keyed.end());
  std::vector<uint32_t> group_of_class(k, 0);
  std::vector<uint32_t> group_reps;  // first class of each group
  for (size_t a = 0; a < keyed.size();) {
    size_t b = a;
    while (b < keyed.size() && keyed[b].first == keyed[a].first) ++b;
    const size_t first_group = group_reps.size();
    for (size_t i = a; i < b; ++i) {
      const uint32_t c = keyed[i].second;
      size_t g = first_group;
      while (g < group_reps.size() && !same_column(group_reps[g], c)) ++g;
      if (g == group_reps.size()) group_reps.push_back(c);
      group_of_class[c] = static_cast<uint32_t>(g);
    }
    a = b;
  }
  std::array<uint32_t, 256> row;
  for (uint32_t b = 0; b < 256; ++b) row[b] = group_of_class[d.class_of[b]];
  return row;
}

absl::Status Lowering::BuildTerminalTable(FlatGrammar& out) {
  TerminalTable& t = out.terminals;
  t.names = terminal_names_;
  uint32_t total = 1;
  for (const grammar::ClassDfa& d : dfas_) {
    t.start.push_back(d.next.empty() ? 0 : total);  // lazy terminals: filled below
    if (d.next.empty()) continue;
    total += d.num_states() - 1;
    if (total > limits_.max_dfa_states) {
      return absl::ResourceExhaustedError(absl::StrCat(
          g_.source_name, ": terminal automata exceed max_dfa_states = ", limits_.max_dfa_states));
    }
  }
  // Token terminals: one token state each, then the hold state (rows of
  // dead transitions, not accepting: see FlatGrammar::token_terminals).
  if (!token_terminals_.empty()) {
    out.token_state_begin = total;
    for (size_t k = 0; k < token_terminal_ids_.size(); ++k) t.start[token_terminal_ids_[k]] = total++;
    out.token_state_end = ++total;
    out.token_terminals = std::move(token_terminals_);
    if (total > limits_.max_dfa_states) {
      return absl::ResourceExhaustedError(absl::StrCat(
          g_.source_name, ": terminal automata exceed max_dfa_states = ", limits_.max_dfa_states));
    }
  }
  // Byte classes: bytes whose columns are identical in every DFA share a
  // class, and the lazy automata's byte ranges are unions of classes. Each
  // DFA's rows refine the classes as its rows in the global table would
  // (shifting a DFA's live states by its offset renames values within a
  // row), so the global table is filled per class straight from the DFAs,
  // never as 256-column rows.
  grammar::ByteClassPartition classes;
  for (size_t i = 0; i < dfas_.size() && !classes.all_distinct(); ++i) {
    // Refining by a DFA's column classes once is refining by all its rows.
    if (!dfas_[i].next.empty()) classes.Refine(ColumnClasses(dfas_[i]));
  }
  if (!lazy_terminals_.empty()) classes.RefineByRanges(lazy_nfa_);
  const std::vector<uint8_t> representative = classes.Representatives();
  for (uint32_t b = 0; b < 256; ++b) t.byte_class[b] = classes.class_of(static_cast<uint8_t>(b));
  t.num_classes = classes.num_classes();
  t.next.assign(static_cast<size_t>(total) * t.num_classes, 0);
  t.eager_accepting.assign(total, 0);
  t.eager_has_next.assign(total, 0);
  t.eager_live_bytes.assign(total, ByteSet());
  for (size_t i = 0; i < dfas_.size(); ++i) {
    const grammar::ClassDfa& d = dfas_[i];
    if (d.next.empty()) continue;
    const uint32_t offset = t.start[i] - 1;
    // Read by the DFA's own classes: each global class takes the column of
    // the DFA class of its smallest byte (`globals` lists them per DFA
    // class, in order). A DFA class with no global class of its own has the
    // same column as one that has (ColumnClasses merged them), so a state's
    // live bytes are the bytes of its live DFA classes.
    const uint32_t k = d.num_classes;
    std::vector<uint32_t> globals_begin(k + 1, 0), globals(t.num_classes);
    for (uint32_t c = 0; c < t.num_classes; ++c) ++globals_begin[d.class_of[representative[c]] + 1];
    for (uint32_t dc = 0; dc < k; ++dc) globals_begin[dc + 1] += globals_begin[dc];
    {
      std::vector<uint32_t> fill(globals_begin.begin(), globals_begin.end() - 1);
      for (uint32_t c = 0; c < t.num_classes; ++c) globals[fill[d.class_of[representative[c]]]++] = c;
    }
    std::vector<ByteSet> bytes_of_dfa_class(k);
    for (uint32_t b = 0; b < 256; ++b) bytes_of_dfa_class[d.class_of[b]].set(b);
    for (uint32_t s = 1; s < d.num_states(); ++s) {
      const size_t row = static_cast<size_t>(offset + s) * t.num_classes;
      ByteSet& live = t.eager_live_bytes[offset + s];
      grammar::ForEachLiveColumn(&d.next[size_t{s} * k], k, [&](uint32_t dc, uint32_t to) {
        for (uint32_t g = globals_begin[dc]; g < globals_begin[dc + 1]; ++g) {
          t.next[row + globals[g]] = offset + to;
        }
        live |= bytes_of_dfa_class[dc];
      });
      t.eager_has_next[offset + s] = live.any();
      t.eager_accepting[offset + s] = d.accepting[s];
    }
  }
  // Counted terminals: numbered after the eager states, stepped by their
  // automata (nothing stored per state).
  uint64_t numbered = total;
  for (const CountedTerminal& c : counted_terminals_) {
    t.counted.push_back({static_cast<uint32_t>(numbered), t.start[c.twin] - 1, c.automaton});
    t.start[c.terminal] = static_cast<uint32_t>(numbered) + c.automaton->start();
    numbered += c.automaton->num_states();
    if (numbered >= TerminalTable::kOverflow / 2) {
      return absl::ResourceExhaustedError(
          absl::StrCat(g_.source_name, ": counted terminals need more than 2^31 state numbers"));
    }
  }
  if (!counted_terminals_.empty()) t.counted_end = static_cast<uint32_t>(numbered);
  const uint32_t first_lazy = static_cast<uint32_t>(numbered);
  if (lazy_terminals_.empty()) return absl::OkStatus();
  const uint32_t lazy_budget = std::min(limits_.max_dfa_states - total, grammar::LazyDfa::RoomFrom(first_lazy));
  if (lazy_budget < lazy_terminals_.size()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        g_.source_name, ": terminal automata exceed max_dfa_states = ", limits_.max_dfa_states));
  }
  std::vector<uint32_t> starts;
  for (const LazyTerminal& lazy : lazy_terminals_) starts.push_back(lazy.nfa_start);
  auto dfa = std::make_shared<const grammar::LazyDfa>(lazy_nfa_, starts, representative,
                                                      first_lazy, lazy_budget);
  for (size_t k = 0; k < lazy_terminals_.size(); ++k) {
    t.start[lazy_terminals_[k].terminal] = dfa->start(k);
  }
  t.lazy = std::move(dfa);
  return absl::OkStatus();
}

}  // namespace

absl::Status LayOutProductions(const std::vector<FlatProduction>& productions,
                               const std::string& source_name, const CompileLimits& limits,
                               FlatGrammar& out) {
  const uint32_t num_nt = out.num_nonterminals();
  if (out.start_nt >= num_nt ||
      std::none_of(productions.begin(), productions.end(),
                   [&](const FlatProduction& p) { return p.lhs == out.start_nt; })) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_name, ": the start nonterminal has no production"));
  }
  for (const FlatProduction& p : productions) {
    if (p.lhs >= num_nt || std::any_of(p.rhs.begin(), p.rhs.end(), [&](Symbol s) {
          return (IsNonterminal(s) && s >= num_nt) || IsEnd(s) || (s >> 30) == 3;
        })) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_name, ": a production names a nonterminal out of range"));
    }
  }

  // Productive nonterminals: count, per production, the nonterminals not yet
  // known productive; a production reaching zero makes its lhs productive.
  std::vector<uint8_t> productive(num_nt, 0);
  std::vector<uint32_t> missing(productions.size(), 0);
  std::vector<std::vector<uint32_t>> uses(num_nt);
  std::vector<uint32_t> work;
  for (uint32_t p = 0; p < productions.size(); ++p) {
    for (Symbol s : productions[p].rhs) {
      if (IsNonterminal(s)) {
        ++missing[p];
        uses[s].push_back(p);
      }
    }
    if (missing[p] == 0 && !productive[productions[p].lhs]) {
      productive[productions[p].lhs] = 1;
      work.push_back(productions[p].lhs);
    }
  }
  while (!work.empty()) {
    uint32_t nt = work.back();
    work.pop_back();
    for (uint32_t p : uses[nt]) {
      if (--missing[p] == 0 && !productive[productions[p].lhs]) {
        productive[productions[p].lhs] = 1;
        work.push_back(productions[p].lhs);
      }
    }
  }
  // An unproductive root (the empty language) is not an error: the start
  // production S' -> root is kept below, root keeps none, so S' predicts
  // nothing; no text is accepted and no byte or token is ever allowed.
  // Keep productions whose symbols are all productive and which are
  // reachable, and the start production S' -> root in any case (the chart
  // starts from its item).
  std::vector<std::vector<uint32_t>> by_lhs(num_nt);
  for (uint32_t p = 0; p < productions.size(); ++p) {
    bool ok = productions[p].lhs == out.start_nt ||
              std::all_of(productions[p].rhs.begin(), productions[p].rhs.end(),
                          [&](Symbol s) { return !IsNonterminal(s) || productive[s]; });
    if (ok) by_lhs[productions[p].lhs].push_back(p);
  }
  std::vector<uint8_t> reachable(num_nt, 0);
  reachable[out.start_nt] = 1;
  work = {out.start_nt};
  while (!work.empty()) {
    uint32_t nt = work.back();
    work.pop_back();
    for (uint32_t p : by_lhs[nt]) {
      for (Symbol s : productions[p].rhs) {
        if (IsNonterminal(s) && !reachable[s]) {
          reachable[s] = 1;
          work.push_back(s);
        }
      }
    }
  }

  // Layout, grouped by lhs.
  out.nt_production_begin.assign(num_nt + 1, 0);
  for (uint32_t nt = 0; nt < num_nt; ++nt) {
    out.nt_production_begin[nt] = static_cast<uint32_t>(out.production_begin.size());
    if (!reachable[nt]) continue;
    for (uint32_t p : by_lhs[nt]) {
      out.production_begin.push_back(static_cast<uint32_t>(out.rhs.size()));
      for (Symbol s : productions[p].rhs) {
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
      if (out.predict_waiting.size() + out.predict_scan.size() > limits.max_rhs_symbols) {
        return absl::ResourceExhaustedError(absl::StrCat(
            source_name, ": prediction tables exceed max_rhs_symbols = ",
            limits.max_rhs_symbols));
      }
    }
  }
  out.predict_waiting_begin[num_nt] = static_cast<uint32_t>(out.predict_waiting.size());
  out.predict_scan_begin[num_nt] = static_cast<uint32_t>(out.predict_scan.size());
  return absl::OkStatus();
}

void FlatGrammar::SetRuleAttributes(const grammar::Grammar& grammar) {
  nt_capture.clear();
  capture_names.clear();
  nt_temperature.clear();
  for (uint32_t r = 0; r < grammar.rules.size(); ++r) {
    const grammar::Rule& rule = grammar.rules[r];
    if (!rule.capture.empty()) {
      nt_capture.resize(num_nonterminals(), 0);
      auto it = std::find(capture_names.begin(), capture_names.end(), rule.capture);
      if (it == capture_names.end()) it = capture_names.insert(capture_names.end(), rule.capture);
      nt_capture[r] = static_cast<uint32_t>(it - capture_names.begin()) + 1;
    }
    if (rule.temperature >= 0.0f) {
      nt_temperature.resize(num_nonterminals(), -1.0f);
      nt_temperature[r] = rule.temperature;
    }
  }
}

namespace {

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
  out.nt_names = names_;
  if (!(st = LayOutProductions(productions_, g_.source_name, limits_, out)).ok()) return st;
  out.SetRuleAttributes(g_);
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
                                             const CompileLimits& limits,
                                             grammar::RegexDfaCache* dfa_cache,
                                             grammar::LazyRegexNfas* lazy_nfas) {
  Lowering lowering(grammar, limits, dfa_cache, lazy_nfas);
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

uint64_t TablesDigest(const FlatGrammar& flat) {
  uint64_t h = 1469598103934665603ull;
  auto bytes = [&](const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  auto vec = [&](const auto& v) {
    const uint64_t n = v.size();
    bytes(&n, sizeof n);
    if (n != 0) bytes(v.data(), n * sizeof(v[0]));
  };
  const std::string productions = DumpFlatGrammar(flat);
  vec(productions);
  const TerminalTable& t = flat.terminals;
  vec(t.start);
  bytes(t.byte_class.data(), t.byte_class.size());
  bytes(&t.num_classes, sizeof t.num_classes);
  vec(t.next);
  vec(t.eager_accepting);
  vec(t.eager_has_next);
  for (const ByteSet& live : t.eager_live_bytes) vec(live.to_string());
  for (const TerminalTable::CountedSegment& seg : t.counted) {
    bytes(&seg.base, sizeof seg.base);
    bytes(&seg.twin_offset, sizeof seg.twin_offset);
  }
  bytes(&t.counted_end, sizeof t.counted_end);
  const uint8_t lazy = t.lazy != nullptr;
  bytes(&lazy, 1);
  for (const std::string& name : t.names) vec(name);
  return h;
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

size_t FlatGrammar::memory_bytes() const {
  using grammar::HeapBytes;
  size_t bytes = HeapBytes(rhs) + HeapBytes(dot_lhs) + HeapBytes(production_begin) +
                 HeapBytes(nt_production_begin) + HeapBytes(nt_names) + HeapBytes(nullable) +
                 HeapBytes(predict_waiting_begin) + HeapBytes(predict_waiting) +
                 HeapBytes(predict_scan_begin) + HeapBytes(predict_scan) + HeapBytes(nt_capture) +
                 HeapBytes(capture_names) + HeapBytes(nt_temperature);
  const TerminalTable& t = terminals;
  bytes += HeapBytes(t.counted) + HeapBytes(t.start) + HeapBytes(t.next) + HeapBytes(t.eager_accepting) +
           HeapBytes(t.eager_has_next) + HeapBytes(t.eager_live_bytes) + HeapBytes(t.names);
  for (const TerminalTable::CountedSegment& seg : t.counted) bytes += seg.automaton->memory_bytes();
  if (t.lazy != nullptr) bytes += t.lazy->memory_bytes();
  bytes += HeapBytes(token_terminals);
  for (const TokenTerminal& tt : token_terminals) {
    bytes += HeapBytes(tt.ids) + HeapBytes(tt.names) + HeapBytes(tt.where) + HeapBytes(tt.name);
  }
  if (lexer != nullptr) {
    const LexerTable& x = *lexer;
    bytes += HeapBytes(x.names) + HeapBytes(x.rank) + HeapBytes(x.ignored) + HeapBytes(x.in_lexer) +
             HeapBytes(x.next) + HeapBytes(x.emit) + HeapBytes(x.emit_rank) +
             HeapBytes(x.min_accepting_rank) + HeapBytes(x.min_rank_later) + HeapBytes(x.kill_rank) +
             HeapBytes(x.kill_later) +
             HeapBytes(x.ignored_can_continue) + HeapBytes(x.continue_bits);
  }
  return bytes;
}

std::array<uint32_t, 256> InputByteClasses(const FlatGrammar& g) {
  std::array<uint32_t, 256> out{};
  if (g.lexed()) {
    for (uint32_t b = 0; b < 256; ++b) out[b] = g.lexer->byte_class[b];
    return out;
  }
  const TerminalTable& t = g.terminals;
  // Per byte, its column: the table's class, then its step from every
  // state of every counted automaton.
  std::vector<std::vector<uint32_t>> column(256);
  for (uint32_t b = 0; b < 256; ++b) column[b].push_back(t.byte_class[b]);
  for (const TerminalTable::CountedSegment& seg : t.counted) {
    const grammar::CountedAutomaton& a = *seg.automaton;
    for (uint32_t s = 0; s < a.num_states(); ++s) {
      for (uint32_t b = 0; b < 256; ++b) column[b].push_back(a.Step(s, static_cast<uint8_t>(b)));
    }
  }
  absl::flat_hash_map<std::vector<uint32_t>, uint32_t> ids;
  for (uint32_t b = 0; b < 256; ++b) {
    out[b] = ids.try_emplace(column[b], static_cast<uint32_t>(ids.size())).first->second;
  }
  return out;
}

}  // namespace zapgram::parser
