// Random grammars, strings and mutations (see the header for what is drawn).
//
// The expression generator recurses, but only to `max_depth` (at most a few
// levels): its shape is ours, never user input.
#include "tests/support/random_grammar.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"

namespace zapgram::testing {

namespace {

using grammar::CodepointRange;
using grammar::ExprId;
using grammar::Grammar;
using grammar::kUnbounded;

constexpr uint32_t kEAcute = 0xE9;  // é, C3 A9 in UTF-8

class Generator {
 public:
  Generator(std::mt19937_64& rng, const RandomGrammarOptions& options, uint32_t num_rules,
            Grammar& g)
      : rng_(rng), options_(options), num_rules_(num_rules), g_(g) {}

  bool Chance(uint64_t num, uint64_t den) { return Uniform(rng_, den) < num; }

  ExprId Leaf() {
    uint64_t pick = Uniform(rng_, 100);
    if (pick < 30) return g_.AddLiteral(std::string(1, static_cast<char>('a' + Uniform(rng_, 3))));
    if (pick < 38) {
      static const char* const kMulti[] = {"ab", "ba", "abc", "aa"};
      return g_.AddLiteral(kMulti[Uniform(rng_, 4)]);
    }
    if (pick < 46 && options_.multibyte) {
      static const char* const kUtf8[] = {"\xC3\xA9", "a\xC3\xA9", "\xC3\xA9\xC3\xA9"};
      return g_.AddLiteral(kUtf8[Uniform(rng_, 3)]);
    }
    if (pick < 47 && options_.multibyte) return g_.AddLiteral("\xC3");  // a stray byte
    if (pick < 62) return Class();
    if (pick < 70) return g_.AddEmpty();
    return g_.AddRuleRef(static_cast<uint32_t>(Uniform(rng_, num_rules_)));
  }

  ExprId Class() {
    uint64_t pick = Uniform(rng_, options_.multibyte ? 7 : 4);
    switch (pick) {
      case 0:
        return g_.AddCharClass({{'a', 'b'}}, false);
      case 1:
        return g_.AddCharClass({{'a', 'a'}}, true);  // [^a]: every code point but a
      case 2:
        return g_.AddCharClass({{'b', 'c'}}, false);
      case 3:
        // Rarely empty (matches nothing: unproductive), else [c].
        if (Chance(1, 4)) return g_.AddCharClass({}, false);
        return g_.AddCharClass({{'c', 'c'}}, false);
      case 4:
        return g_.AddCharClass({{'a', 'c'}, {kEAcute, kEAcute}}, false);
      case 5:
        return g_.AddCharClass({{kEAcute, 0xEA}}, false);
      default:
        return g_.AddCharClass({{'a', 'a'}, {kEAcute, kEAcute}}, true);  // [^aé]
    }
  }

  ExprId Repeat(ExprId child) {
    switch (Uniform(rng_, 5)) {
      case 0:
        return g_.AddRepeat(child, 0, kUnbounded);
      case 1:
        return g_.AddRepeat(child, 1, kUnbounded);
      case 2:
        return g_.AddRepeat(child, 0, 1);
      case 3: {
        uint32_t m = static_cast<uint32_t>(Uniform(rng_, 3));
        uint32_t n = m + static_cast<uint32_t>(Uniform(rng_, 3));
        return g_.AddRepeat(child, m, n);
      }
      default:
        return g_.AddRepeat(child, static_cast<uint32_t>(Uniform(rng_, 3)), kUnbounded);
    }
  }

  // An expression tree of depth <= depth (a leaf has depth 1).
  ExprId Expr(uint32_t depth) {
    if (depth <= 1 || Chance(1, 3)) return Leaf();
    switch (Uniform(rng_, 3)) {
      case 0: {
        std::vector<ExprId> children;
        uint64_t n = 2 + Uniform(rng_, 2);
        for (uint64_t i = 0; i < n; ++i) children.push_back(Expr(depth - 1));
        return g_.AddSequence(std::move(children));
      }
      case 1: {
        std::vector<ExprId> children;
        uint64_t n = 2 + Uniform(rng_, 2);
        for (uint64_t i = 0; i < n; ++i) children.push_back(Expr(depth - 1));
        return g_.AddChoice(std::move(children));
      }
      default:
        return Repeat(Expr(depth - 1));
    }
  }

  // A body forcing one of the hard shapes for rule `self`.
  ExprId Template(uint32_t self) {
    uint32_t small = std::max<uint32_t>(1, options_.max_depth / 2);
    ExprId self_ref = g_.AddRuleRef(self);
    switch (Uniform(rng_, 6)) {
      case 0:  // left recursion: A ::= A x | y
        return g_.AddChoice({g_.AddSequence({self_ref, Expr(small)}), Expr(small)});
      case 1:  // right recursion: A ::= x A | y
        return g_.AddChoice({g_.AddSequence({Expr(small), self_ref}), Expr(small)});
      case 2:  // a cycle: A ::= A | x
        return g_.AddChoice({self_ref, Expr(small)});
      case 3:  // unproductive: A ::= A x
        return g_.AddSequence({self_ref, Expr(small)});
      case 4:  // nullable, ambiguous: A ::= A A | x | ""
        return g_.AddChoice(
            {g_.AddSequence({self_ref, g_.AddRuleRef(self)}), Expr(small), g_.AddEmpty()});
      default: {  // a chain of nullable references: A ::= B C with B, C random rules
        ExprId b = g_.AddRuleRef(static_cast<uint32_t>(Uniform(rng_, num_rules_)));
        ExprId c = g_.AddRuleRef(static_cast<uint32_t>(Uniform(rng_, num_rules_)));
        return g_.AddChoice({g_.AddSequence({b, c}), g_.AddEmpty()});
      }
    }
  }

 private:
  std::mt19937_64& rng_;
  const RandomGrammarOptions& options_;
  uint32_t num_rules_;
  Grammar& g_;
};

}  // namespace

uint64_t Uniform(std::mt19937_64& rng, uint64_t n) { return rng() % n; }

Grammar RandomGrammar(std::mt19937_64& rng, const RandomGrammarOptions& options) {
  Grammar g;
  g.source_name = "<random>";
  uint32_t num_rules = 1 + static_cast<uint32_t>(Uniform(rng, options.max_rules));
  Generator gen(rng, options, num_rules, g);
  for (uint32_t r = 0; r < num_rules; ++r) {
    grammar::Rule rule;
    rule.name = r == 0 ? std::string("root") : absl::StrCat("r", r);
    g.rules.push_back(std::move(rule));
  }
  for (uint32_t r = 0; r < num_rules; ++r) {
    g.rules[r].body = Uniform(rng, 5) == 0 ? gen.Template(r) : gen.Expr(options.max_depth);
  }
  g.root = 0;
  return g;
}

const std::vector<uint8_t>& AlphabetBytes() {
  static const std::vector<uint8_t> kBytes = {'a', 'b', 'c', 'd', 0xC3, 0xA9};
  return kBytes;
}

std::string RandomString(std::mt19937_64& rng, size_t max_length) {
  size_t length = Uniform(rng, max_length + 1);
  std::string out;
  while (out.size() < length) {
    uint64_t pick = Uniform(rng, 20);
    if (pick < 15) {
      out.push_back(static_cast<char>('a' + pick % 3));
    } else if (pick < 17) {
      out += "\xC3\xA9";
    } else if (pick == 17) {
      out.push_back('\xC3');
    } else if (pick == 18) {
      out.push_back('\xA9');
    } else {
      out.push_back('d');
    }
  }
  out.resize(length);  // may cut an é in half: one more stray byte
  return out;
}

std::string Mutation::Describe() const {
  char buf[64];
  switch (kind) {
    case kDelete:
      std::snprintf(buf, sizeof buf, "delete @%zu", offset);
      break;
    case kInsert:
      std::snprintf(buf, sizeof buf, "insert 0x%02X @%zu", byte, offset);
      break;
    case kReplace:
      std::snprintf(buf, sizeof buf, "replace with 0x%02X @%zu", byte, offset);
      break;
  }
  return buf;
}

std::string MutateDocument(std::string_view doc, std::mt19937_64& rng, std::string_view new_bytes,
                           Mutation* applied) {
  auto draw_byte = [&]() -> uint8_t {
    if (!new_bytes.empty()) return static_cast<uint8_t>(new_bytes[Uniform(rng, new_bytes.size())]);
    if (!doc.empty()) return static_cast<uint8_t>(doc[Uniform(rng, doc.size())]);
    return static_cast<uint8_t>(Uniform(rng, 256));
  };
  Mutation m;
  m.kind = doc.empty() ? Mutation::kInsert : static_cast<Mutation::Kind>(Uniform(rng, 3));
  std::string out(doc);
  switch (m.kind) {
    case Mutation::kDelete:
      m.offset = Uniform(rng, doc.size());
      out.erase(m.offset, 1);
      break;
    case Mutation::kInsert:
      m.offset = Uniform(rng, doc.size() + 1);
      m.byte = draw_byte();
      out.insert(out.begin() + static_cast<std::ptrdiff_t>(m.offset), static_cast<char>(m.byte));
      break;
    case Mutation::kReplace:
      m.offset = Uniform(rng, doc.size());
      m.byte = draw_byte();
      for (int tries = 0; tries < 8 && m.byte == static_cast<uint8_t>(doc[m.offset]); ++tries) {
        m.byte = draw_byte();
      }
      out[m.offset] = static_cast<char>(m.byte);
      break;
  }
  if (applied != nullptr) *applied = m;
  return out;
}

std::string EscapeBytes(std::string_view bytes) {
  std::string out;
  for (char ch : bytes) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        if (c >= 0x20 && c < 0x7F) {
          out.push_back(static_cast<char>(c));
        } else {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02X", c);
          out += buf;
        }
    }
  }
  return out;
}

}  // namespace zapgram::testing
