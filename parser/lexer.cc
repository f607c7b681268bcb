// Building the lexer automaton (see lexer.h and docs/lark-lexing.md).
//
// Steps:
//  1. Each token of the lexer (used by a rule, or ignored) is compiled to a
//     minimal DFA by the regex compiler. A pattern with a lazy quantifier
//     matches as short as possible: its DFA loses the transitions out of
//     accepting states. A token that matches the empty string is refused.
//  2. Lark's order: keywords first ("unless"): a string token that a regex
//     token of the same priority matches in full is that regex's retype
//     target; it keeps a rank of its own only when its flags are not a subset
//     of the regex's (Lark keeps "select"i beside a case-sensitive NAME). The
//     ranked tokens are sorted by (-priority, -max width, -pattern length,
//     name), widths counted in code points, unbounded widths all equal.
//  3. The product automaton, breadth first over byte classes. A state is the
//     list of live (token, DFA state) components plus `best`; a component is
//     dropped once its token can no longer win (its rank, or its hosts' for a
//     retype target, is worse than `best`), which keeps the product small.
#include "parser/lexer.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grammar/byte_automaton.h"
#include "grammar/lark_patterns.h"
#include "grammar/regex_compiler.h"

namespace zapgram::parser {

namespace {

constexpr uint64_t kUnboundedWidth = ~uint64_t{0};

size_t CodepointCount(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Longest path to an accepting state, in code points (kUnboundedWidth when a
// cycle is reachable). The DFA is trimmed: every state lies on such a path.
uint64_t MaxWidth(const grammar::ByteDfa& dfa) {
  const uint32_t n = dfa.num_states();
  // Kahn's order on the states reachable from the start.
  std::vector<uint32_t> indegree(n, 0);
  for (uint32_t s = 1; s < n; ++s) {
    for (uint32_t b = 0; b < 256; ++b) {
      if (dfa.next[s][b] != 0) ++indegree[dfa.next[s][b]];
    }
  }
  // A path never revisits the start unless there is a cycle, which the
  // order detects (fewer states ordered than exist).
  std::vector<uint32_t> order;
  std::vector<uint32_t> work;
  for (uint32_t s = 1; s < n; ++s) {
    if (indegree[s] == 0) work.push_back(s);
  }
  while (!work.empty()) {
    uint32_t s = work.back();
    work.pop_back();
    order.push_back(s);
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t t = dfa.next[s][b];
      if (t != 0 && --indegree[t] == 0) work.push_back(t);
    }
  }
  if (order.size() + 1 < n) return kUnboundedWidth;
  std::vector<int64_t> longest(n, -1);
  longest[1] = 0;
  uint64_t best = 0;
  for (uint32_t s : order) {
    if (longest[s] < 0) continue;
    if (dfa.accepting[s]) best = std::max<uint64_t>(best, longest[s]);
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t t = dfa.next[s][b];
      if (t == 0) continue;
      int64_t w = longest[s] + ((b & 0xC0) != 0x80 ? 1 : 0);
      longest[t] = std::max(longest[t], w);
    }
  }
  return best;
}

bool DfaMatches(const grammar::ByteDfa& dfa, std::string_view text) {
  uint32_t s = 1;
  for (unsigned char c : text) {
    s = dfa.next[s][c];
    if (s == 0) return false;
  }
  return dfa.accepting[s] != 0;
}

struct TokenAutomaton {
  grammar::ByteDfa dfa;
  std::vector<uint8_t> has_next;  // per state
};

class LexerBuilder {
 public:
  LexerBuilder(const grammar::Grammar& g, const CompileLimits& limits) : g_(g), limits_(limits) {}

  absl::StatusOr<std::shared_ptr<const LexerTable>> Run();

 private:
  absl::Status CompileTokens();
  void RankTokens();
  void SetUpIndenter();
  void ComputeByteClasses();
  absl::Status BuildProduct();
  uint32_t Intern(std::vector<uint32_t> key);
  void DescribeState(uint32_t id);
  // Records a killer's terminal rank in a state's slot (two terminals'
  // killers in one state are refused: overlapping_kills_).
  void NoteKill(uint32_t* slot, uint32_t rank);
  bool overlapping_kills_ = false;

  const grammar::Grammar& g_;
  const CompileLimits& limits_;
  std::shared_ptr<LexerTable> out_ = std::make_shared<LexerTable>();
  std::vector<TokenAutomaton> automata_;  // per token (empty dfa when not in the lexer)
  std::vector<std::vector<uint32_t>> retypes_;  // per host token: its keywords, in Lark order
  std::vector<uint32_t> effective_rank_;        // rank, or the best host's for a retype target
  std::vector<uint8_t> representative_;         // per byte class: one byte of it
  bool has_killers_ = false;                    // some lookahead killer is lexed
  std::vector<uint32_t> killer_of_;             // per token: its killer, or kNoToken
  // Product states: key = {best, token, state, token, state, ...}.
  absl::flat_hash_map<std::vector<uint32_t>, uint32_t> ids_;
  std::vector<std::vector<uint32_t>> keys_;
};

absl::Status LexerBuilder::CompileTokens() {
  const size_t n = g_.tokens.size();
  automata_.resize(n);
  out_->names.resize(n);
  out_->ignored.assign(n, 0);
  out_->in_lexer.assign(n, 0);
  grammar::RegexLimits limits;
  limits.max_dfa_states = std::min(limits.max_dfa_states, limits_.max_dfa_states);
  for (size_t t = 0; t < n; ++t) {
    const grammar::Token& token = g_.tokens[t];
    out_->names[t] = token.name;
    out_->ignored[t] = token.ignored;
    out_->in_lexer[t] = token.ignored || token.in_rules;
    if (token.lookahead_of >= 0) {
      const grammar::Token& of = g_.tokens[static_cast<size_t>(token.lookahead_of)];
      out_->in_lexer[t] = of.ignored || of.in_rules;  // a killer is lexed where its terminal is
    }
    if (token.indent_role == grammar::Token::IndentRole::kIndent ||
        token.indent_role == grammar::Token::IndentRole::kDedent) {
      out_->in_lexer[t] = 0;  // produced by the Indenter, never lexed
    }
    if (!out_->in_lexer[t]) continue;
    absl::StatusOr<grammar::ByteDfa> dfa = grammar::CompileRegex(token.pattern, token.flags, limits);
    if (!dfa.ok()) {
      return absl::Status(dfa.status().code(),
                          absl::StrFormat("%s:%d:%d: token %s: %s", g_.source_name, token.loc.line,
                                          token.loc.col, token.name, dfa.status().message()));
    }
    if (dfa->empty() && !token.in_rules) {
      // An ignored token of no text (a Lark regex whose assertions never
      // hold, compiled to the empty language): never produced, as in Lark.
      out_->in_lexer[t] = 0;
      continue;
    }
    if (dfa->empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d:%d: token %s matches nothing", g_.source_name, token.loc.line, token.loc.col,
          token.name));
    }
    if (dfa->accepting[1]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d:%d: token %s matches the empty string (a lexer token must consume input)",
          g_.source_name, token.loc.line, token.loc.col, token.name));
    }
    TokenAutomaton& a = automata_[t];
    a.dfa = *std::move(dfa);
    if (grammar::HasLazyQuantifier(token.pattern)) {
      // Shortest match: the token ends at its first accepting state.
      for (uint32_t s = 1; s < a.dfa.num_states(); ++s) {
        if (a.dfa.accepting[s]) a.dfa.next[s].fill(0);
      }
    }
    a.has_next.assign(a.dfa.num_states(), 0);
    for (uint32_t s = 1; s < a.dfa.num_states(); ++s) {
      for (uint32_t b = 0; b < 256 && !a.has_next[s]; ++b) a.has_next[s] = a.dfa.next[s][b] != 0;
    }
  }
  return absl::OkStatus();
}

void LexerBuilder::RankTokens() {
  const size_t n = g_.tokens.size();
  std::vector<uint8_t> embedded(n, 0);
  retypes_.assign(n, {});
  for (size_t r = 0; r < n; ++r) {
    const grammar::Token& host = g_.tokens[r];
    if (!out_->in_lexer[r] || host.is_string || host.lookahead_of >= 0) continue;
    for (size_t k = 0; k < n; ++k) {
      const grammar::Token& kw = g_.tokens[k];
      if (!out_->in_lexer[k] || !kw.is_string || kw.priority != host.priority) continue;
      if (!DfaMatches(automata_[r].dfa, kw.text)) continue;
      retypes_[r].push_back(static_cast<uint32_t>(k));
      if ((kw.flags & ~host.flags) == 0) embedded[k] = 1;
    }
  }
  struct SortKey {
    int32_t priority;
    uint64_t width;
    size_t length;
    std::string_view name;
    uint32_t token;
  };
  std::vector<SortKey> keys;
  for (size_t t = 0; t < n; ++t) {
    if (!out_->in_lexer[t] || embedded[t] || g_.tokens[t].lookahead_of >= 0) continue;
    const grammar::Token& token = g_.tokens[t];
    const size_t length = token.lark_length != 0 ? token.lark_length
                                                 : CodepointCount(token.is_string ? token.text : token.pattern);
    keys.push_back({token.priority, MaxWidth(automata_[t].dfa), length, token.name, static_cast<uint32_t>(t)});
  }
  std::sort(keys.begin(), keys.end(), [](const SortKey& a, const SortKey& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.width != b.width) return a.width > b.width;
    if (a.length != b.length) return a.length > b.length;
    return a.name < b.name;
  });
  out_->rank.assign(n, kNoRank);
  for (uint32_t i = 0; i < keys.size(); ++i) out_->rank[keys[i].token] = i;
  // Retype targets in Lark order (by their own sort position among strings).
  effective_rank_ = out_->rank;
  for (size_t r = 0; r < n; ++r) {
    for (uint32_t k : retypes_[r]) {
      effective_rank_[k] = std::min(effective_rank_[k], out_->rank[r]);
    }
  }
  auto string_order = [&](uint32_t a, uint32_t b) {
    const grammar::Token& x = g_.tokens[a];
    const grammar::Token& y = g_.tokens[b];
    size_t lx = CodepointCount(x.text), ly = CodepointCount(y.text);
    if (x.priority != y.priority) return x.priority > y.priority;
    if (lx != ly) return lx > ly;
    return x.name < y.name;
  };
  for (auto& list : retypes_) std::stable_sort(list.begin(), list.end(), string_order);
  // A killer has no rank; it lives in the product as long as its terminal could win.
  killer_of_.assign(n, kNoToken);
  for (size_t t = 0; t < n; ++t) {
    if (g_.tokens[t].lookahead_of >= 0) {
      effective_rank_[t] = effective_rank_[static_cast<size_t>(g_.tokens[t].lookahead_of)];
      has_killers_ = has_killers_ || out_->in_lexer[t];
      killer_of_[static_cast<size_t>(g_.tokens[t].lookahead_of)] = static_cast<uint32_t>(t);
    }
  }
}

void LexerBuilder::SetUpIndenter() {
  IndenterTable& ind = out_->indenter;
  for (uint32_t t = 0; t < g_.tokens.size(); ++t) {
    const grammar::Token& token = g_.tokens[t];
    using Role = grammar::Token::IndentRole;
    switch (token.indent_role) {
      case Role::kNone:
        break;
      case Role::kNewline:
        ind.nl = t;
        ind.tab_len = token.tab_len;
        break;
      case Role::kIndent:
        ind.indent = t;
        break;
      case Role::kDedent:
        ind.dedent = t;
        break;
      case Role::kOpenBracket:
      case Role::kCloseBracket:
        ind.bracket.resize(g_.tokens.size(), 0);
        ind.bracket[t] = token.indent_role == Role::kOpenBracket ? 1 : -1;
        break;
    }
  }
  if (!ind.on()) {
    out_->indenter = IndenterTable{};
    return;
  }
  ind.bracket.resize(g_.tokens.size(), 0);
}

void LexerBuilder::ComputeByteClasses() {
  grammar::ByteClassPartition classes;
  if (out_->indenter.on()) {
    // ' ', '\t' and '\n' count differently toward the indentation.
    std::array<uint32_t, 256> apart{};
    apart[' '] = 1;
    apart['\t'] = 2;
    apart['\n'] = 3;
    classes.Refine(apart);
  }
  for (const TokenAutomaton& a : automata_) {
    for (uint32_t s = 1; s < a.dfa.num_states() && !classes.all_distinct(); ++s) {
      classes.Refine(a.dfa.next[s]);
    }
  }
  representative_ = classes.Representatives();
  for (uint32_t b = 0; b < 256; ++b) out_->byte_class[b] = classes.class_of(static_cast<uint8_t>(b));
  out_->num_classes = classes.num_classes();
}

uint32_t LexerBuilder::Intern(std::vector<uint32_t> key) {
  if (key.size() <= 1) return 0;  // no live component: dead
  auto [it, inserted] = ids_.emplace(key, static_cast<uint32_t>(keys_.size()));
  if (inserted) keys_.push_back(std::move(key));
  return it->second;
}

void LexerBuilder::NoteKill(uint32_t* slot, uint32_t rank) {
  if (*slot != kNoRank && *slot != rank) overlapping_kills_ = true;
  *slot = rank;
}

void LexerBuilder::DescribeState(uint32_t id) {
  const std::vector<uint32_t>& key = keys_[id];
  const uint32_t best = key[0];
  LexerTable& L = *out_;
  uint32_t min_accepting = kNoRank, host = kNoToken, later = kNoRank;
  bool ignored_later = false;
  uint64_t* bits = L.continue_bits.data() + static_cast<size_t>(id) * L.words_per_state;
  for (size_t i = 1; i + 1 < key.size(); i += 2) {
    const uint32_t t = key[i], s = key[i + 1];
    const TokenAutomaton& a = automata_[t];
    const uint32_t rank = L.rank[t];
    if (g_.tokens[t].lookahead_of >= 0) {
      // A killer: the rank of its terminal, where it accepts or still can.
      const uint32_t of = L.rank[static_cast<size_t>(g_.tokens[t].lookahead_of)];
      if (a.dfa.accepting[s]) NoteKill(&L.kill_rank[id], of);
      if (a.has_next[s]) NoteKill(&L.kill_later[id], of);
      continue;
    }
    if (a.dfa.accepting[s] && rank < min_accepting) {
      min_accepting = rank;
      host = t;
    }
    if (a.has_next[s]) {
      later = std::min(later, rank);
      if (effective_rank_[t] <= best) {
        bits[t / 64] |= uint64_t{1} << (t % 64);
        if (L.ignored[t]) ignored_later = true;
      }
    }
  }
  L.min_accepting_rank[id] = min_accepting;
  L.min_rank_later[id] = later;
  L.ignored_can_continue[id] = ignored_later;
  if (min_accepting != kNoRank && min_accepting == best) {
    uint32_t token = host;
    for (uint32_t k : retypes_[host]) {
      bool accepts = false;
      for (size_t i = 1; i + 1 < key.size(); i += 2) {
        if (key[i] == k) accepts = automata_[k].dfa.accepting[key[i + 1]] != 0;
      }
      if (accepts) {
        token = k;
        break;
      }
    }
    L.emit[id] = token;
    L.emit_rank[id] = min_accepting;
  }
}

absl::Status LexerBuilder::BuildProduct() {
  LexerTable& L = *out_;
  const size_t n = g_.tokens.size();
  L.words_per_state = static_cast<uint32_t>((n + 63) / 64);
  keys_.push_back({});  // state 0: dead
  std::vector<uint32_t> start = {kNoRank};
  for (uint32_t t = 0; t < n; ++t) {
    if (L.in_lexer[t]) {
      start.push_back(t);
      start.push_back(1);
    }
  }
  Intern(std::move(start));
  std::vector<uint32_t> key;
  for (uint32_t id = 1; id < keys_.size(); ++id) {
    if (keys_.size() > limits_.max_lexer_states) {
      return absl::ResourceExhaustedError(absl::StrCat(
          g_.source_name, ": lexer automaton exceeds max_lexer_states = ",
          limits_.max_lexer_states));
    }
    L.next.resize(keys_.size() * L.num_classes, 0);
    for (uint32_t c = 0; c < L.num_classes; ++c) {
      const uint8_t byte = representative_[c];
      const std::vector<uint32_t>& from = keys_[id];
      key.assign(1, from[0]);
      uint32_t min_accepting = kNoRank, accepting_token = kNoToken;
      for (size_t i = 1; i + 1 < from.size(); i += 2) {
        const uint32_t t = from[i];
        const uint32_t s = automata_[t].dfa.next[from[i + 1]][byte];
        if (s == 0) continue;
        key.push_back(t);
        key.push_back(s);
        if (automata_[t].dfa.accepting[s] && L.rank[t] < min_accepting) {
          min_accepting = L.rank[t];
          accepting_token = t;
        }
      }
      const uint32_t best = std::min(from[0], min_accepting);
      key[0] = best;
      // Drop components that can no longer win.
      size_t w = 1;
      bool dropped = false;
      for (size_t i = 1; i + 1 < key.size(); i += 2) {
        if (effective_rank_[key[i]] > best) {
          dropped = true;
          continue;
        }
        key[w++] = key[i];
        key[w++] = key[i + 1];
      }
      key.resize(w);
      // A terminal whose killer is still alive has not surely matched: Lark
      // would try the terminals after it where its lookahead fails, and the
      // product has just dropped some of them. Not supported.
      if (dropped && best < from[0] && killer_of_[accepting_token] != kNoToken) {
        bool killer_alive = false;
        for (size_t i = 1; i + 1 < key.size(); i += 2) killer_alive = killer_alive || key[i] == killer_of_[accepting_token];
        if (killer_alive) {
          return absl::UnimplementedError(absl::StrFormat(
              "%s:%d:%d: terminal %s has a lookahead that reads past its match, and a terminal Lark tries "
              "after it could match where that lookahead fails: unsupported",
              g_.source_name, g_.tokens[accepting_token].loc.line, g_.tokens[accepting_token].loc.col,
              g_.tokens[accepting_token].name));
        }
      }
      const uint32_t to = Intern(key);
      L.next[static_cast<size_t>(id) * L.num_classes + c] = to;
    }
  }
  const size_t states = keys_.size();
  L.next.resize(states * L.num_classes, 0);
  L.emit.assign(states, kNoToken);
  L.emit_rank.assign(states, kNoRank);
  L.min_accepting_rank.assign(states, kNoRank);
  L.min_rank_later.assign(states, kNoRank);
  L.ignored_can_continue.assign(states, 0);
  L.continue_bits.assign(states * L.words_per_state, 0);
  if (has_killers_) {
    L.kill_rank.assign(states, kNoRank);
    L.kill_later.assign(states, kNoRank);
  }
  for (uint32_t id = 1; id < states; ++id) DescribeState(id);
  if (overlapping_kills_) {
    return absl::UnimplementedError(absl::StrCat(
        g_.source_name, ": the lookaheads of two terminals can fail on one text; zapgram checks "
        "one terminal's past-the-match lookahead at a time"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const LexerTable>> LexerBuilder::Run() {
  absl::Status st = CompileTokens();
  if (!st.ok()) return st;
  RankTokens();
  SetUpIndenter();
  ComputeByteClasses();
  if (!(st = BuildProduct()).ok()) return st;
  return std::shared_ptr<const LexerTable>(out_);
}

}  // namespace

absl::StatusOr<std::shared_ptr<const LexerTable>> BuildLexer(const grammar::Grammar& g,
                                                             const CompileLimits& limits) {
  LexerBuilder builder(g, limits);
  return builder.Run();
}

std::string DumpLexer(const LexerTable& lexer) {
  std::string out;
  for (uint32_t t = 0; t < lexer.names.size(); ++t) {
    if (!lexer.in_lexer[t]) continue;
    absl::StrAppend(&out, "token ", lexer.names[t], " rank ",
                    lexer.rank[t] == kNoRank ? std::string("retype-only")
                                             : absl::StrCat(lexer.rank[t]),
                    lexer.ignored[t] ? " ignored" : "", "\n");
  }
  absl::StrAppend(&out, "states: ", lexer.num_states(), ", byte classes: ", lexer.num_classes,
                  "\n");
  return out;
}

}  // namespace zapgram::parser
