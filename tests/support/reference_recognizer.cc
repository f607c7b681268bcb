// The slow oracle (see the header for the algorithm and why it is shaped so).
//
// Layout: lowering and productivity first, then UTF-8 decoding and terminal
// matching, then the Earley session (scan by looking back from the new set,
// closure by repeated passes), then the one-shot entry points.
#include "tests/support/reference_recognizer.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "re2/re2.h"
#include "tests/support/random_grammar.h"

namespace zapgram::testing {

namespace {

using grammar::CodepointRange;
using grammar::Expr;
using grammar::ExprId;
using grammar::ExprKind;

constexpr int32_t kUnset = INT32_MIN;
constexpr uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
constexpr uint32_t kMaxForLength[5] = {0, 0x7F, 0x7FF, 0xFFFF, 0x10FFFF};

// Length of the UTF-8 sequence a lead byte announces and the payload bits it
// carries, or length 0 when the byte cannot start a sequence.
int LeadLength(uint8_t b, uint32_t* payload) {
  if (b < 0x80) {
    *payload = b;
    return 1;
  }
  if ((b & 0xE0) == 0xC0) {
    *payload = b & 0x1F;
    return 2;
  }
  if ((b & 0xF0) == 0xE0) {
    *payload = b & 0x0F;
    return 3;
  }
  if ((b & 0xF8) == 0xF0) {
    *payload = b & 0x07;
    return 4;
  }
  return 0;
}

bool IsSurrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

// Some code point in [lo, hi], not a surrogate, lies in `ranges`.
bool IntervalHitsClass(uint32_t lo, uint32_t hi, const std::vector<CodepointRange>& ranges) {
  std::pair<uint32_t, uint32_t> parts[2] = {{lo, std::min(hi, 0xD7FFu)},
                                            {std::max(lo, 0xE000u), hi}};
  for (auto [a, b] : parts) {
    if (a > b) continue;
    for (const CodepointRange& r : ranges) {
      if (std::max(a, r.lo) <= std::min(b, r.hi)) return true;
    }
  }
  return false;
}

bool InClass(uint32_t cp, const std::vector<CodepointRange>& ranges) {
  for (const CodepointRange& r : ranges) {
    if (cp >= r.lo && cp <= r.hi) return true;
  }
  return false;
}

void AppendEscapedBytes(std::string_view bytes, std::string* out) {
  for (char ch : bytes) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out->push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      *out += buf;
    }
  }
}

}  // namespace

bool DecodeOneCodepoint(std::string_view bytes, uint32_t* codepoint) {
  if (bytes.empty()) return false;
  uint32_t v = 0;
  int len = LeadLength(static_cast<uint8_t>(bytes[0]), &v);
  if (len == 0 || bytes.size() != static_cast<size_t>(len)) return false;
  for (int k = 1; k < len; ++k) {
    uint8_t b = static_cast<uint8_t>(bytes[k]);
    if ((b & 0xC0) != 0x80) return false;
    v = (v << 6) | (b & 0x3F);
  }
  if (v < kMinForLength[len] || v > kMaxForLength[len] || IsSurrogate(v)) return false;
  *codepoint = v;
  return true;
}

bool IsProperPrefixOfClass(std::string_view bytes, const std::vector<CodepointRange>& ranges) {
  if (bytes.empty()) return IntervalHitsClass(0, grammar::kMaxCodepoint, ranges);
  uint32_t v = 0;
  int len = LeadLength(static_cast<uint8_t>(bytes[0]), &v);
  size_t k = bytes.size();
  if (len == 0 || k >= static_cast<size_t>(len)) return false;
  for (size_t i = 1; i < k; ++i) {
    uint8_t b = static_cast<uint8_t>(bytes[i]);
    if ((b & 0xC0) != 0x80) return false;
    v = (v << 6) | (b & 0x3F);
  }
  // The code points of length `len` whose first k bytes are `bytes`: the
  // remaining continuation bytes carry 6 free bits each.
  uint32_t shift = 6 * static_cast<uint32_t>(len - static_cast<int>(k));
  uint32_t lo = v << shift;
  uint32_t hi = lo | ((1u << shift) - 1);
  lo = std::max(lo, kMinForLength[len]);
  hi = std::min(hi, kMaxForLength[len]);
  if (lo > hi) return false;
  return IntervalHitsClass(lo, hi, ranges);
}

bool TranslateRegexForRe2(std::string_view p, uint32_t flags, std::string* out,
                          std::string* error) {
  if (flags & grammar::kRegexVerbose) {
    *error = "the x flag has no RE2 equivalent";
    return false;
  }
  static const char kSpace[] =
      "\\t-\\r\\x{1c}-\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}"
      "\\x{202f}\\x{205f}\\x{3000}";
  static const char kWord[] = "\\p{L}\\p{N}_";
  std::string r = "(?";
  if (flags & grammar::kRegexIgnoreCase) r += "i";
  if (flags & grammar::kRegexMultiline) r += "m";
  if (flags & grammar::kRegexDotAll) r += "s";
  r += ":";
  bool in_class = false;
  size_t class_start = 0;  // index just after '[' or '[^'
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char d = p[i + 1];
      ++i;
      switch (d) {
        case 'd': r += "\\p{Nd}"; continue;
        case 'D': r += "\\P{Nd}"; continue;
        case 'w': r += in_class ? std::string(kWord) : absl::StrCat("[", kWord, "]"); continue;
        case 's': r += in_class ? std::string(kSpace) : absl::StrCat("[", kSpace, "]"); continue;
        case 'W':
        case 'S':
          if (in_class) {
            *error = "\\W or \\S inside a class";
            return false;
          }
          r += absl::StrCat("[^", d == 'W' ? kWord : kSpace, "]");
          continue;
        case 'Z': r += "\\z"; continue;
        case 'u':
        case 'U': {  // \uNNNN, \UNNNNNNNN -> \x{...}; \u{...} -> \x{...}
          size_t n = d == 'u' ? 4 : 8;
          if (i + 1 < p.size() && p[i + 1] == '{') {
            size_t close = p.find('}', i);
            if (close == std::string_view::npos) close = p.size() - 1;
            r += "\\x";
            r.append(p.substr(i + 1, close - i));
            i = close;
            continue;
          }
          r += "\\x{";
          r.append(p.substr(i + 1, n));
          r += "}";
          i += n;
          continue;
        }
        case 'p':
        case 'P':
          r += '\\';
          r += d;
          if (i + 1 < p.size() && p[i + 1] == '{') {
            size_t close = p.find('}', i);
            if (close == std::string_view::npos) close = p.size() - 1;
            r.append(p.substr(i + 1, close - i));
            i = close;
          }
          continue;
        default:
          r += '\\';
          r += d;
          continue;
      }
    }
    if (in_class) {
      if (c == ']' && i != class_start) in_class = false;
      if (c == '[') {
        r += "\\[";
        continue;
      }
      r += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      r += c;
      if (i + 1 < p.size() && p[i + 1] == '^') {
        r += '^';
        ++i;
      }
      class_start = i + 1;
      continue;
    }
    if (c == '(' && p.substr(i, 3) == "(?<" && p.substr(i, 4) != "(?<=" &&
        p.substr(i, 4) != "(?<!") {
      r += "(?P<";
      i += 2;
      continue;
    }
    if (c == '{' && i + 1 < p.size() && p[i + 1] == ',') {
      r += "{0";
      continue;
    }
    r += c;
  }
  r += ")";
  *out = std::move(r);
  return true;
}

// ---------------------------------------------------------------------------
// Lowering.

ReferenceRecognizer::Sym ReferenceRecognizer::NewNonterminal(std::string name) {
  nt_names_.push_back(std::move(name));
  return static_cast<Sym>(nt_names_.size() - 1);
}

ReferenceRecognizer::Sym ReferenceRecognizer::NewTerminal(Terminal t) {
  max_terminal_bytes_ = std::max(max_terminal_bytes_, t.literal.size());
  terminals_.push_back(std::move(t));
  return -1 - static_cast<Sym>(terminals_.size() - 1);
}

void ReferenceRecognizer::AddProduction(Sym lhs, std::vector<Sym> rhs) {
  Production p;
  p.lhs = lhs;
  p.rhs = std::move(rhs);
  productions_.push_back(std::move(p));
}

ReferenceRecognizer::ReferenceRecognizer(const grammar::Grammar& g, ReferenceOptions options)
    : options_(std::move(options)) {
  for (const grammar::Rule& rule : g.rules) NewNonterminal(rule.name);
  std::vector<Sym> memo(g.exprs.size(), kUnset);
  // Post-order over the expression tree with an explicit stack.
  auto lower = [&](ExprId root) {
    std::vector<std::pair<ExprId, bool>> stack = {{root, false}};
    while (!stack.empty()) {
      auto [id, expanded] = stack.back();
      if (memo[id] != kUnset) {
        stack.pop_back();
        continue;
      }
      const Expr& e = g.exprs[id];
      if (!expanded && !e.children.empty()) {
        stack.back().second = true;
        for (ExprId c : e.children) stack.push_back({c, false});
        continue;
      }
      stack.pop_back();
      std::string name = absl::StrCat("_e", id);
      Sym sym = kUnset;
      switch (e.kind) {
        case ExprKind::kEmpty:
          sym = NewNonterminal(name);
          AddProduction(sym, {});
          break;
        case ExprKind::kLiteral:
          if (e.literal.empty()) {
            sym = NewNonterminal(name);
            AddProduction(sym, {});
          } else {
            Terminal t;
            t.literal = e.literal;
            sym = NewTerminal(std::move(t));
          }
          break;
        case ExprKind::kCharClass: {
          Terminal t;
          t.is_class = true;
          t.ranges = e.ranges;
          sym = NewTerminal(std::move(t));
          break;
        }
        case ExprKind::kRuleRef:
          sym = static_cast<Sym>(e.rule);
          break;
        case ExprKind::kRegex: {
          std::string translated, why;
          Terminal t;
          if (TranslateRegexForRe2(e.literal, e.flags, &translated, &why)) {
            RE2::Options opts;
            opts.set_encoding(RE2::Options::EncodingUTF8);
            opts.set_log_errors(false);
            opts.set_max_mem(64 << 20);
            t.regex = std::make_shared<const RE2>(translated, opts);
            if (!t.regex->ok()) why = t.regex->error();
          }
          if (!why.empty() || !t.regex) {
            if (error_.empty()) error_ = "regex /" + e.literal + "/: " + why;
            t.regex = std::make_shared<const RE2>("[^\\x00-\\x{10FFFF}]");  // matches nothing
          }
          bool nullable = RE2::FullMatch("", *t.regex);
          max_terminal_bytes_ = SIZE_MAX;
          sym = NewNonterminal(name);
          AddProduction(sym, {NewTerminal(std::move(t))});
          if (nullable) AddProduction(sym, {});
          break;
        }
        case ExprKind::kToken:
          // Lexed grammars need a lexer first; this oracle reads bytes only.
          if (error_.empty()) error_ = "the reference recognizer does not lex (lexed grammar)";
          sym = NewNonterminal(name);
          break;
        case ExprKind::kTokenIds:
          if (error_.empty()) error_ = "the reference recognizer reads bytes, not token ids";
          sym = NewNonterminal(name);
          break;
        case ExprKind::kSequence: {
          sym = NewNonterminal(name);
          std::vector<Sym> rhs;
          for (ExprId c : e.children) rhs.push_back(memo[c]);
          AddProduction(sym, std::move(rhs));
          break;
        }
        case ExprKind::kChoice:
          sym = NewNonterminal(name);
          for (ExprId c : e.children) AddProduction(sym, {memo[c]});
          break;
        case ExprKind::kRepeat: {
          sym = NewNonterminal(name);
          Sym x = memo[e.children[0]];
          if (e.max == grammar::kUnbounded) {
            Sym rest = NewNonterminal(name + "_star");
            AddProduction(rest, {x, rest});
            AddProduction(rest, {});
            std::vector<Sym> rhs(e.min, x);
            rhs.push_back(rest);
            AddProduction(sym, std::move(rhs));
          } else {
            for (uint32_t k = e.min; k <= e.max; ++k) AddProduction(sym, std::vector<Sym>(k, x));
          }
          break;
        }
      }
      memo[id] = sym;
    }
    return memo[root];
  };
  for (size_t r = 0; r < g.rules.size(); ++r) {
    Sym body = lower(g.rules[r].body);
    AddProduction(static_cast<Sym>(r), {body});
  }
  start_ = NewNonterminal("_start");
  start_production_ = static_cast<uint32_t>(productions_.size());
  AddProduction(start_, {static_cast<Sym>(g.root)});
  ComputeProductive();
}

void ReferenceRecognizer::ComputeProductive() {
  std::vector<bool> terminal_productive(terminals_.size());
  for (size_t t = 0; t < terminals_.size(); ++t) {
    terminal_productive[t] = terminals_[t].regex
                                 ? RegexCompletes(*terminals_[t].regex, "")
                                 : !terminals_[t].is_class ||
                                       IsProperPrefixOfClass("", terminals_[t].ranges);
  }
  nt_productive_.assign(nt_names_.size(), false);
  auto sym_ok = [&](Sym s) { return s >= 0 ? nt_productive_[s] : terminal_productive[-1 - s]; };
  bool changed = true;
  while (changed) {
    changed = false;
    for (const Production& p : productions_) {
      if (!nt_productive_[p.lhs] && std::all_of(p.rhs.begin(), p.rhs.end(), sym_ok)) {
        nt_productive_[p.lhs] = true;
        changed = true;
      }
    }
  }
  productions_of_.assign(nt_names_.size(), {});
  for (size_t i = 0; i < productions_.size(); ++i) {
    Production& p = productions_[i];
    p.productive = std::all_of(p.rhs.begin(), p.rhs.end(), sym_ok);
    if (p.productive) productions_of_[p.lhs].push_back(static_cast<uint32_t>(i));
  }
}

bool ReferenceRecognizer::LanguageIsEmpty() const { return !nt_productive_[start_]; }

bool ReferenceRecognizer::TerminalMatches(uint32_t terminal, std::string_view bytes) const {
  const Terminal& t = terminals_[terminal];
  if (t.regex) {
    return !bytes.empty() && RE2::FullMatch(re2::StringPiece(bytes.data(), bytes.size()),
                                            *t.regex);
  }
  if (!t.is_class) return bytes == t.literal;
  uint32_t cp = 0;
  return DecodeOneCodepoint(bytes, &cp) && InClass(cp, t.ranges);
}

bool ReferenceRecognizer::TerminalProperPrefix(uint32_t terminal, std::string_view bytes) const {
  const Terminal& t = terminals_[terminal];
  if (t.regex) return RegexCompletes(*t.regex, bytes);
  if (!t.is_class) {
    return bytes.size() < t.literal.size() && t.literal.compare(0, bytes.size(), bytes) == 0;
  }
  return IsProperPrefixOfClass(bytes, t.ranges);
}

bool ReferenceRecognizer::RegexCompletes(const RE2& re, std::string_view bytes) const {
  const std::vector<std::string>& pieces = options_.completion_alphabet;
  // A partial code point at the end must be finished first, by the rest of a piece.
  std::vector<std::string> starts;
  for (size_t cut = 1; cut < 4 && cut <= bytes.size(); ++cut) {
    std::string_view tail = bytes.substr(bytes.size() - cut);
    uint8_t lead = static_cast<uint8_t>(tail[0]);
    if (lead < 0xC0) continue;  // not the start of a multi-byte sequence
    for (const std::string& piece : pieces) {
      if (piece.size() > cut && piece.compare(0, cut, tail) == 0) {
        starts.push_back(std::string(bytes) + piece.substr(cut));
      }
    }
    break;
  }
  if (starts.empty()) starts.push_back(std::string(bytes));
  // Breadth-first over completions of 1..max_completion pieces (or of the
  // finishing piece plus up to max_completion - 1 more).
  const bool finishing = starts.size() > 1 || starts[0].size() != bytes.size();
  std::vector<std::string> level = starts;
  if (finishing) {
    for (const std::string& s : level) {
      if (RE2::FullMatch(re2::StringPiece(s.data(), s.size()), re)) return true;
    }
  }
  for (size_t k = finishing ? 1 : 0; k < options_.max_completion; ++k) {
    std::vector<std::string> next;
    for (const std::string& s : level) {
      for (const std::string& piece : pieces) {
        std::string t = s + piece;
        if (RE2::FullMatch(re2::StringPiece(t.data(), t.size()), re)) return true;
        next.push_back(std::move(t));
      }
    }
    level = std::move(next);
  }
  return false;
}

std::string ReferenceRecognizer::DumpBnf() const {
  std::string out;
  for (const Production& p : productions_) {
    out += nt_names_[p.lhs];
    out += " ->";
    for (Sym s : p.rhs) {
      out.push_back(' ');
      if (s >= 0) {
        out += nt_names_[s];
        continue;
      }
      const Terminal& t = terminals_[-1 - s];
      if (t.regex) {
        out += "/" + t.regex->pattern() + "/";
        continue;
      }
      if (!t.is_class) {
        out.push_back('"');
        AppendEscapedBytes(t.literal, &out);
        out.push_back('"');
        continue;
      }
      out.push_back('[');
      for (const CodepointRange& r : t.ranges) {
        char buf[32];
        std::snprintf(buf, sizeof buf, r.lo == r.hi ? "U+%X " : "U+%X-U+%X ", r.lo, r.hi);
        out += buf;
      }
      out.push_back(']');
    }
    if (!p.productive) out += "   (unproductive, dropped)";
    out.push_back('\n');
  }
  return out;
}

// ---------------------------------------------------------------------------
// The Earley session.

ReferenceRecognizer::Session::Session(const ReferenceRecognizer* recognizer) : rec_(recognizer) {
  sets_.emplace_back();
  if (rec_->productions_[rec_->start_production_].productive) {
    Add({rec_->start_production_, 0, 0});
  }
  Close();
}

bool ReferenceRecognizer::Session::Add(const Item& item) {
  Set& set = sets_.back();
  if (!set.members.insert({item.production, item.dot, item.origin}).second) return false;
  uint32_t index = static_cast<uint32_t>(set.items.size());
  set.items.push_back(item);
  const Production& p = rec_->productions_[item.production];
  if (item.dot < p.rhs.size()) {
    Sym next = p.rhs[item.dot];
    if (next >= 0) {
      set.waiting_on[next].push_back(index);
    } else {
      set.on_terminal.push_back(index);
    }
  }
  return true;
}

// Predict and complete over the newest set until a whole pass adds nothing.
void ReferenceRecognizer::Session::Close() {
  const uint32_t here = static_cast<uint32_t>(sets_.size() - 1);
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t k = 0; k < sets_.back().items.size(); ++k) {
      const Item item = sets_.back().items[k];
      const Production& p = rec_->productions_[item.production];
      if (item.dot < p.rhs.size()) {
        Sym next = p.rhs[item.dot];
        if (next < 0) continue;  // a terminal: the following sets scan it
        for (uint32_t q : rec_->productions_of_[next]) changed |= Add({q, 0, here});
        continue;
      }
      // Complete: advance every item of the origin set waiting on p.lhs. The
      // list is copied because the origin may be this very set; additions
      // made meanwhile are seen by the next pass.
      const Set& origin = sets_[item.origin];
      auto it = origin.waiting_on.find(p.lhs);
      if (it == origin.waiting_on.end()) continue;
      std::vector<uint32_t> parents = it->second;
      for (uint32_t index : parents) {
        Item parent = sets_[item.origin].items[index];
        changed |= Add({parent.production, parent.dot + 1, parent.origin});
      }
    }
  }
}

void ReferenceRecognizer::Session::Push(uint8_t byte) {
  input_.push_back(static_cast<char>(byte));
  sets_.emplace_back();
  const size_t here = input_.size();
  const size_t lookback = rec_->max_terminal_bytes_;
  std::string_view in = input_;
  for (size_t j = here > lookback ? here - lookback : 0; j < here; ++j) {
    for (uint32_t index : sets_[j].on_terminal) {
      Item item = sets_[j].items[index];
      Sym t = rec_->productions_[item.production].rhs[item.dot];
      if (rec_->TerminalMatches(static_cast<uint32_t>(-1 - t), in.substr(j, here - j))) {
        Add({item.production, item.dot + 1, item.origin});
      }
    }
  }
  Close();
}

void ReferenceRecognizer::Session::Pop() {
  input_.pop_back();
  sets_.pop_back();
}

bool ReferenceRecognizer::Session::IsAccepting() const {
  return sets_.back().members.contains({rec_->start_production_, 1u, 0u});
}

bool ReferenceRecognizer::Session::IsViable() const {
  if (IsAccepting()) return true;
  const size_t here = input_.size();
  const size_t lookback = rec_->max_terminal_bytes_;
  std::string_view in = input_;
  for (size_t j = here > lookback ? here - lookback : 0; j <= here; ++j) {
    for (uint32_t index : sets_[j].on_terminal) {
      Item item = sets_[j].items[index];
      Sym t = rec_->productions_[item.production].rhs[item.dot];
      if (rec_->TerminalProperPrefix(static_cast<uint32_t>(-1 - t), in.substr(j, here - j))) {
        return true;
      }
    }
  }
  return false;
}

std::vector<bool> ReferenceRecognizer::Session::ViableAfter(const std::vector<uint8_t>& bytes) {
  std::vector<bool> out;
  out.reserve(bytes.size());
  for (uint8_t b : bytes) {
    Push(b);
    out.push_back(IsViable());
    Pop();
  }
  return out;
}

// ---------------------------------------------------------------------------
// One-shot entry points.

bool ReferenceRecognizer::Accepts(std::string_view input) const {
  Session s(this);
  for (char c : input) {
    s.Push(static_cast<uint8_t>(c));
    if (!s.IsViable()) return false;
  }
  return s.IsAccepting();
}

bool ReferenceRecognizer::IsViablePrefix(std::string_view input) const {
  Session s(this);
  if (!s.IsViable()) return false;
  for (char c : input) {
    s.Push(static_cast<uint8_t>(c));
    if (!s.IsViable()) return false;  // no extension of a dead prefix is viable
  }
  return true;
}

size_t ReferenceRecognizer::LongestViablePrefix(std::string_view input) const {
  Session s(this);
  if (!s.IsViable()) return 0;
  for (size_t i = 0; i < input.size(); ++i) {
    s.Push(static_cast<uint8_t>(input[i]));
    if (!s.IsViable()) return i;
  }
  return input.size();
}

std::string GuidedString(const ReferenceRecognizer& ref, std::mt19937_64& rng, size_t max_length) {
  const std::vector<uint8_t>& alphabet = AlphabetBytes();
  size_t length = Uniform(rng, max_length + 1);
  ReferenceRecognizer::Session session(&ref);
  while (session.size() < length) {
    std::vector<bool> viable = session.ViableAfter(alphabet);
    std::vector<uint8_t> allowed;
    for (size_t k = 0; k < alphabet.size(); ++k) {
      if (viable[k]) allowed.push_back(alphabet[k]);
    }
    uint8_t b = allowed.empty() || Uniform(rng, 8) == 0 ? alphabet[Uniform(rng, alphabet.size())]
                                                        : allowed[Uniform(rng, allowed.size())];
    session.Push(b);
  }
  return session.input();
}

}  // namespace zapgram::testing
