// Lazy quantifiers and past-the-match lookaheads in Lark terminals (see
// lark_patterns.h).
//
// Lazy quantifiers: a scan of the pattern source finds each `*?` / `+?`
// outside classes, the one-character atom before it (`.`, a class, an
// escape) and the literal after it, and checks that what follows up to the
// end of the pattern can match the empty string (closers, skipped
// alternatives, `*` `+` `?` after a closer).
//
// Lookaheads: a scan of the pattern source finds each `(?!Y)` outside classes, with Y
// a literal, and the rest R of its alternative (up to a `|` or `)` at its
// own depth). The pattern without the lookaheads is compared, per
// lookahead, with the pattern where that `(?!Y)R` reads
// `(?&:(?:R)|(?~:Y[\s\S]*))` (R minus the strings starting with Y, with
// zapgram's set operations), both under the lexer's shortest-match cut
// when the pattern has a lazy quantifier: equal languages mean the
// lookahead refuses no match on the match's own text.
#include "grammar/lark_patterns.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grammar/dfa_set_ops.h"

namespace zapgram::grammar {

namespace {

constexpr std::string_view kMeta = ".^$*+?()[]{}|\\";

struct Lookahead {
  size_t begin = 0, end = 0;  // the group `(?!Y)`
  size_t rest_end = 0;        // R is [end, rest_end)
};

// Past a character class starting at `i` ('['), or npos when unterminated.
size_t SkipClass(std::string_view p, size_t i) {
  size_t j = i + 1;
  if (j < p.size() && p[j] == '^') ++j;
  if (j < p.size() && p[j] == ']') ++j;
  while (j < p.size() && p[j] != ']') j += p[j] == '\\' ? 2 : 1;
  return j < p.size() ? j + 1 : std::string_view::npos;
}

// Past an escape or a class starting at `i` (npos for an unterminated
// class), or `i` when neither starts there: the scanners below step over
// them as one atom.
size_t SkipEscapeOrClass(std::string_view p, size_t i) {
  if (p[i] == '\\') return i + 2;
  if (p[i] == '[') return SkipClass(p, i);
  return i;
}

// The end of the alternative that starts at `i`: the first `|` or `)` at
// depth 0 from there, or the end of the pattern.
size_t AlternativeEnd(std::string_view p, size_t i) {
  int depth = 0;
  while (i < p.size()) {
    if (const size_t j = SkipEscapeOrClass(p, i); j != i) {
      if (j == std::string_view::npos) return p.size();
      i = j;
      continue;
    }
    const char c = p[i];
    if (c == '(') ++depth;
    if (c == ')' && depth-- == 0) return i;
    if (c == '|' && depth == 0) return i;
    ++i;
  }
  return p.size();
}

// The literal lookaheads of `p`; false when it has a lookahead of another
// kind (left refused).
bool FindLookaheads(std::string_view p, std::vector<Lookahead>* out) {
  for (size_t i = 0; i < p.size();) {
    if (const size_t j = SkipEscapeOrClass(p, i); j != i) {
      if (j == std::string_view::npos) return false;
      i = j;
      continue;
    }
    const char c = p[i];
    if (c != '(' || p.substr(i, 3) != "(?!") {
      ++i;
      continue;
    }
    size_t j = i + 3;
    bool literal = j < p.size() && p[j] != ')';
    while (j < p.size() && p[j] != ')' && literal) {
      if (p[j] == '\\') {
        literal = j + 1 < p.size() && kMeta.find(p[j + 1]) != std::string_view::npos;
        j += 2;
      } else {
        literal = kMeta.find(p[j]) == std::string_view::npos;
        ++j;
      }
    }
    if (!literal || j >= p.size()) return false;
    Lookahead la;
    la.begin = i;
    la.end = j + 1;
    la.rest_end = AlternativeEnd(p, la.end);
    out->push_back(la);
    i = la.end;
  }
  return true;
}

// `p` without the lookaheads but `keep`, which reads as R minus Y.*.
std::string Rewrite(std::string_view p, const std::vector<Lookahead>& all, size_t keep) {
  std::string out;
  size_t at = 0;
  for (size_t k = 0; k < all.size(); ++k) {
    const Lookahead& la = all[k];
    out.append(p.substr(at, la.begin - at));
    at = la.end;
    if (k != keep) continue;
    const std::string_view y = p.substr(la.begin + 3, la.end - 1 - (la.begin + 3));
    // R itself may hold later lookaheads: they are dropped inside it.
    std::string rest;
    size_t r = la.end;
    for (size_t m = k + 1; m < all.size() && all[m].begin < la.rest_end; ++m) {
      rest.append(p.substr(r, all[m].begin - r));
      r = all[m].end;
    }
    rest.append(p.substr(r, la.rest_end - r));
    absl::StrAppend(&out, "(?&:(?:", rest, ")|(?~:(?:", std::string(y), ")[\\s\\S]*))");
    at = la.rest_end;
    while (k + 1 < all.size() && all[k + 1].begin < la.rest_end) ++k;
  }
  out.append(p.substr(at));
  return out;
}

void CutAtAccepting(ByteDfa* dfa) {
  for (uint32_t s = 1; s < dfa->num_states(); ++s) {
    if (dfa->accepting[s]) dfa->next[s].fill(0);
  }
}

// The killer of lookahead `la`: the pattern up to it on its own
// alternative, then Y, the groups on the way closed; empty when a group on
// the way is not a plain (capturing, non-capturing or flag) group, or
// another lookahead stands there.
struct Killer {
  std::string prefix;  // P, its groups closed
  std::string killer;  // P Y, its groups closed
};
Killer KillerOf(std::string_view p, const Lookahead& la) {
  struct Level {
    size_t open = 0, body = 0, alt = 0;  // the group's '(', its first body byte, its alternative's start
    bool plain = true;                   // capturing, non-capturing or flags: its text means the same in P
  };
  std::vector<Level> levels = {{0, 0, 0, true}};
  for (size_t i = 0; i < la.begin;) {
    if (const size_t j = SkipEscapeOrClass(p, i); j != i) {
      if (j == std::string_view::npos) return {};
      i = j;
      continue;
    }
    const char c = p[i];
    if (c == '(') {
      size_t body = i + 1;
      bool plain = true;
      const std::string_view at = p.substr(i, 4);
      if (at.starts_with("(?:")) {
        body = i + 3;
      } else if (at == "(?&:" || at == "(?~:" || at == "(?<=" || at == "(?<!") {
        body = i + 4;  // set operations, lookbehinds: skipped when closed on the way
        plain = false;
      } else if (at.starts_with("(?=") || at.starts_with("(?!")) {
        body = i + 3;
        plain = false;
      } else if (at == "(?P<") {
        const size_t j = p.find('>', i);
        if (j == std::string_view::npos) return {};
        body = j + 1;
      } else if (at.starts_with("(?")) {
        size_t j = i + 2;  // flags: (?is:...) scoped, (?i) for the rest
        while (j < p.size() && std::string_view("aiLmsux-").find(p[j]) != std::string_view::npos) ++j;
        if (j >= p.size() || (p[j] != ':' && p[j] != ')')) return {};
        if (p[j] == ')') {
          i = j + 1;
          continue;
        }
        body = j + 1;
      }
      levels.push_back({i, body, body, plain});
      i = body;
      continue;
    }
    if (c == ')') {
      if (levels.size() <= 1) return {};
      levels.pop_back();
      ++i;
      continue;
    }
    if (c == '|') levels.back().alt = i + 1;
    ++i;
  }
  std::string prefix;
  for (size_t k = 1; k < levels.size(); ++k) {
    if (!levels[k].plain) return {};  // the lookahead inside a set operation or lookaround
  }
  for (size_t k = 0; k < levels.size(); ++k) {
    if (k > 0) prefix.append(p.substr(levels[k].open, levels[k].body - levels[k].open));
    const size_t until = k + 1 < levels.size() ? levels[k + 1].open : la.begin;
    if (until < levels[k].alt) return {};
    const std::string_view part = p.substr(levels[k].alt, until - levels[k].alt);
    if (part.find("(?!") != std::string_view::npos || part.find("(?=") != std::string_view::npos) return {};
    prefix.append(part);
  }
  if (HasLazyQuantifier(prefix)) return {};  // the lexer would cut the killer short
  const std::string closers(levels.size() - 1, ')');
  Killer out;
  out.killer = absl::StrCat(prefix, "(?:", std::string(p.substr(la.begin + 3, la.end - 1 - (la.begin + 3))), ")",
                            closers);
  out.prefix = prefix + closers;
  return out;
}

// Whether no string of `dfa` is a proper prefix of another (a trimmed
// DFA: no accepting state has a move).
bool PrefixFree(const ByteDfa& dfa) {
  for (uint32_t s = 1; s < dfa.num_states(); ++s) {
    if (!dfa.accepting[s]) continue;
    for (uint32_t t : dfa.next[s]) {
      if (t != 0) return false;
    }
  }
  return true;
}

bool AcceptsSomething(const ByteDfa& dfa) {
  if (dfa.num_states() <= 1) return false;
  std::vector<uint8_t> seen(dfa.num_states(), 0);
  std::vector<uint32_t> work = {1};
  seen[1] = 1;
  while (!work.empty()) {
    const uint32_t s = work.back();
    work.pop_back();
    if (dfa.accepting[s]) return true;
    for (uint32_t t : dfa.next[s]) {
      if (t != 0 && !seen[t]) {
        seen[t] = 1;
        work.push_back(t);
      }
    }
  }
  return false;
}

// Past the literal string starting at `i` (characters and escaped
// punctuation, each not followed by a quantifier), or `i` when none.
size_t LiteralEnd(std::string_view p, size_t i) {
  size_t end = i;
  while (end < p.size()) {
    size_t next;
    if (p[end] == '\\') {
      if (end + 1 >= p.size() || kMeta.find(p[end + 1]) == std::string_view::npos) break;
      next = end + 2;
    } else if (kMeta.find(p[end]) == std::string_view::npos) {
      next = end + 1;
    } else {
      break;
    }
    if (next < p.size() && (p[next] == '*' || p[next] == '+' || p[next] == '?' || p[next] == '{')) break;
    end = next;
  }
  return end;
}

// Whether the pattern from `i` to its end can match the empty string in
// the way lark_patterns.h describes (closers, skipped alternatives, `*` `+`
// `?` after a closer).
bool NullableTail(std::string_view p, size_t i) {
  while (i < p.size()) {
    if (p[i] == '|') {
      i = AlternativeEnd(p, i + 1);
      continue;
    }
    if (p[i] != ')') return false;
    ++i;
    if (i < p.size() && (p[i] == '*' || p[i] == '+' || p[i] == '?')) {
      ++i;
      if (i < p.size() && (p[i] == '?' || p[i] == '+')) ++i;
    }
  }
  return true;
}

// The start of the one-character atom that ends right before `i`, or npos.
size_t AtomStart(std::string_view p, size_t i) {
  if (i == 0) return std::string_view::npos;
  if (p[i - 1] == '.' && (i < 2 || p[i - 2] != '\\')) return i - 1;
  if (i >= 2 && p[i - 2] == '\\' && (i < 3 || p[i - 3] != '\\')) return i - 2;  // \d \S \.
  if (p[i - 1] == ']') {
    // The class whose ] ends at i - 1: scan forward from each earlier [.
    for (size_t k = i - 1; k-- > 0;) {
      if (p[k] == '[' && (k == 0 || p[k - 1] != '\\') && SkipClass(p, k) == i) return k;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::optional<std::string> RewriteLazyQuantifiers(std::string_view p) {
  std::string out;
  size_t copied = 0;
  bool any = false;
  for (size_t i = 0; i < p.size();) {
    if (const size_t j = SkipEscapeOrClass(p, i); j != i) {
      if (j == std::string_view::npos) return std::nullopt;
      i = j;
      continue;
    }
    const char c = p[i];
    const bool lazy = (c == '*' || c == '+' || c == '}' || c == '?') && i + 1 < p.size() && p[i + 1] == '?' &&
                      !(c == '?' && i > 0 && p[i - 1] == '(');
    if (!lazy) {
      ++i;
      continue;
    }
    if (c != '*' && c != '+') return std::nullopt;  // ??, {m,n}?: not rewritten
    const size_t atom = AtomStart(p, i);
    if (atom == std::string_view::npos || atom < copied) return std::nullopt;
    const size_t literal = i + 2, literal_end = LiteralEnd(p, literal);
    if (literal_end == literal || !NullableTail(p, literal_end)) return std::nullopt;
    const std::string_view a = p.substr(atom, i - atom), lit = p.substr(literal, literal_end - literal);
    out.append(p.substr(copied, atom - copied));
    absl::StrAppend(&out, "(?&:", std::string(a), c == '*' ? "*" : "+", std::string(lit), "|(?~:[\\s\\S]*",
                    std::string(lit), "[\\s\\S]+))");
    copied = literal_end;
    i = literal_end;
    any = true;
  }
  if (!any) return std::nullopt;
  out.append(p.substr(copied));
  return out;
}

bool HasLazyQuantifier(std::string_view p) {
  bool after_quantifier = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\') {
      ++i;
      after_quantifier = false;
      continue;
    }
    if (c == '[') {  // skip the class; a leading ] (after an optional ^) is literal
      const size_t end = SkipClass(p, i);
      if (end == std::string_view::npos) return false;
      i = end - 1;
      after_quantifier = false;
      continue;
    }
    if (c == '?') {
      if (after_quantifier) return true;
      after_quantifier = i > 0 && p[i - 1] != '(';
      continue;
    }
    after_quantifier = c == '*' || c == '+' || c == '}';
  }
  return false;
}

std::optional<DroppedLookaheads> DropPastMatchLookaheads(std::string_view pattern, uint32_t flags,
                                                         const RegexLimits& limits) {
  std::vector<Lookahead> found;
  if (!FindLookaheads(pattern, &found) || found.empty()) return std::nullopt;
  const bool lazy = HasLazyQuantifier(pattern);
  auto compile = [&](const std::string& p) -> std::optional<ByteDfa> {
    absl::StatusOr<ByteDfa> dfa = CompileRegex(p, flags, limits);
    if (!dfa.ok()) return std::nullopt;
    if (lazy) CutAtAccepting(&*dfa);
    return *std::move(dfa);
  };
  DroppedLookaheads out;
  out.pattern = Rewrite(pattern, found, found.size());
  const std::optional<ByteDfa> dropped = compile(out.pattern);
  if (!dropped.has_value()) return std::nullopt;
  for (size_t k = 0; k < found.size(); ++k) {
    const std::optional<ByteDfa> exact = compile(Rewrite(pattern, found, k));
    if (!exact.has_value()) return std::nullopt;
    // The exact pattern's language is a subset; equal when nothing is left.
    absl::StatusOr<ByteDfa> more = SubtractDfa(*dropped, *exact, limits.max_dfa_states);
    if (!more.ok() || AcceptsSomething(*more)) return std::nullopt;
    absl::StrAppend(&out.what, k > 0 ? ", " : "",
                    std::string(pattern.substr(found[k].begin, found[k].end - found[k].begin)));
  }
  // The killers, one alternative each: exact when every P is prefix-free.
  std::vector<std::string> killers;
  for (const Lookahead& la : found) {
    Killer k = KillerOf(pattern, la);
    if (k.killer.empty()) return out;
    absl::StatusOr<ByteDfa> prefix = CompileRegex(k.prefix, flags, limits);
    if (!prefix.ok() || !PrefixFree(*prefix) || !CompileRegex(k.killer, flags, limits).ok()) return out;
    killers.push_back(std::move(k.killer));
  }
  for (size_t k = 0; k < killers.size(); ++k) absl::StrAppend(&out.killer, k > 0 ? "|" : "", "(?:", killers[k], ")");
  return out;
}

}  // namespace zapgram::grammar
