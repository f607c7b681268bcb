// Literal fusion: fewer, longer terminals and flatter trees.
//
// Each rewrite is a law of regular-expression algebra applied bottom-up
// (children first, rewrite.h), so that a node sees its children already in
// normal form and one pass suffices:
//  - associativity: (x y) z = x y z and (x | y) | z = x | y | z, so a
//    sequence (choice) child of a sequence (choice) is spliced into it;
//  - unit: x "" = x, so empty parts of a sequence disappear, and a sequence
//    or choice left with one part is that part (none: the empty string);
//  - concatenation of constants: "a" "b" = "ab" (byte strings, so a stray
//    UTF-8 lead byte followed by its continuation is just the two bytes);
//  - union of one-code-point sets: [ab] | "c" | [é] = [abcé]. A literal
//    takes part only when it is exactly one well-formed UTF-8 code point, so
//    the class matches the very same bytes; an empty class (matches nothing)
//    adds nothing. The class takes the place of the first such alternative
//    (order of alternatives does not change a language);
//  - x{1,1} = x, x{0,0} = "" and ""{m,n} = "".
// Regex terminals are atoms: never concatenated with literals (they are
// compiled separately and a literal next to one keeps its own DFA). So are
// the tokens of a lexed grammar: two adjacent tokens are two lexemes, and
// fusing them would change where the lexer cuts.
// The output is a fresh grammar with the same rules; shared nodes stay shared.
//
// This is what RE2's simplifier and most grammar compilers (XGrammar's
// "nested rule unwrapper", llguidance's grammar builder) do before lowering:
// the lowering then makes one terminal where there were several, and one
// production where nested sequences would have needed fresh nonterminals.
//
// Tests: tests/transforms/transforms_test.cc (FuseLiterals.*, LanguagePreservation.*).
#include "transforms/fuse_literals.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "transforms/rewrite.h"

namespace zapgram::transforms {

namespace {

using grammar::CodepointRange;
using grammar::Expr;
using grammar::ExprId;
using grammar::ExprKind;
using grammar::Grammar;
using grammar::RuleId;

// The code point when `bytes` is exactly one well-formed UTF-8 sequence
// (shortest form, no surrogate, at most U+10FFFF); -1 otherwise.
int64_t SingleCodepoint(const std::string& bytes) {
  if (bytes.empty() || bytes.size() > 4) return -1;
  const auto b0 = static_cast<unsigned char>(bytes[0]);
  size_t len = b0 < 0x80 ? 1 : b0 < 0xC0 ? 0 : b0 < 0xE0 ? 2 : b0 < 0xF0 ? 3 : b0 < 0xF8 ? 4 : 0;
  if (len == 0 || len != bytes.size()) return -1;
  if (len == 1) return b0;
  uint32_t cp = b0 & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    const auto c = static_cast<unsigned char>(bytes[k]);
    if ((c & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (c & 0x3F);
  }
  const uint32_t smallest = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
  if (cp < smallest || cp > grammar::kMaxCodepoint || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  return cp;
}

class Fuser {
 public:
  Fuser(const Grammar& src, Grammar& dst) : src_(src), dst_(dst) {}

  ExprId Build(ExprId id, const std::vector<ExprId>& kids) {
    const Expr& e = src_.exprs[id];
    switch (e.kind) {
      case ExprKind::kSequence:
        return Sequence(e, kids);
      case ExprKind::kChoice:
        return Choice(e, kids);
      case ExprKind::kRepeat:
        if (dst_.exprs[kids[0]].kind == ExprKind::kEmpty || e.max == 0) {
          ++repeats_unwrapped;
          return dst_.AddEmpty(e.loc);
        }
        if (e.min == 1 && e.max == 1) {
          ++repeats_unwrapped;
          return kids[0];
        }
        return internal::CopyNode(e, kids, 0, dst_);
      default:
        return internal::CopyNode(e, kids, e.rule, dst_);
    }
  }

  uint64_t literals_fused = 0;      // literals absorbed into a preceding one
  uint64_t sequences_flattened = 0;
  uint64_t choices_flattened = 0;
  uint64_t classes_merged = 0;      // alternatives absorbed into a class
  uint64_t wrappers_unwrapped = 0;  // one-element sequences and choices
  uint64_t repeats_unwrapped = 0;

 private:
  ExprId Sequence(const Expr& e, const std::vector<ExprId>& kids) {
    // Splice, dropping empties (children are already flat).
    std::vector<ExprId> parts;
    for (ExprId k : kids) {
      const Expr& c = dst_.exprs[k];
      if (c.kind == ExprKind::kEmpty) continue;
      if (c.kind == ExprKind::kSequence) {
        ++sequences_flattened;
        parts.insert(parts.end(), c.children.begin(), c.children.end());
      } else {
        parts.push_back(k);
      }
    }
    // Fuse runs of literals (new nodes: the old ones may be shared).
    std::vector<ExprId> out;
    for (size_t i = 0; i < parts.size();) {
      if (dst_.exprs[parts[i]].kind != ExprKind::kLiteral) {
        out.push_back(parts[i++]);
        continue;
      }
      size_t j = i + 1;
      while (j < parts.size() && dst_.exprs[parts[j]].kind == ExprKind::kLiteral) ++j;
      if (j == i + 1) {
        out.push_back(parts[i]);
      } else {
        std::string bytes;
        for (size_t k = i; k < j; ++k) bytes += dst_.exprs[parts[k]].literal;
        literals_fused += j - i - 1;
        out.push_back(dst_.AddLiteral(std::move(bytes), dst_.exprs[parts[i]].loc));
      }
      i = j;
    }
    if (out.size() <= 1) ++wrappers_unwrapped;
    return dst_.AddSequence(std::move(out), e.loc);
  }

  ExprId Choice(const Expr& e, const std::vector<ExprId>& kids) {
    std::vector<ExprId> alts;
    for (ExprId k : kids) {
      const Expr& c = dst_.exprs[k];
      if (c.kind == ExprKind::kChoice) {
        ++choices_flattened;
        alts.insert(alts.end(), c.children.begin(), c.children.end());
      } else {
        alts.push_back(k);
      }
    }
    // One-code-point alternatives into one class, at the first one's place.
    std::vector<CodepointRange> ranges;
    size_t members = 0;
    size_t first = alts.size();
    for (size_t i = 0; i < alts.size(); ++i) {
      const Expr& c = dst_.exprs[alts[i]];
      if (c.kind == ExprKind::kCharClass) {
        ranges.insert(ranges.end(), c.ranges.begin(), c.ranges.end());
      } else if (int64_t cp = c.kind == ExprKind::kLiteral ? SingleCodepoint(c.literal) : -1;
                 cp >= 0) {
        ranges.push_back({static_cast<uint32_t>(cp), static_cast<uint32_t>(cp)});
      } else {
        continue;
      }
      ++members;
      if (first == alts.size()) first = i;
    }
    if (members >= 2) {
      classes_merged += members - 1;
      ExprId merged = dst_.AddCharClass(std::move(ranges), /*negated=*/false,
                                        dst_.exprs[alts[first]].loc);
      std::vector<ExprId> kept;
      for (size_t i = 0; i < alts.size(); ++i) {
        const Expr& c = dst_.exprs[alts[i]];
        bool member = c.kind == ExprKind::kCharClass ||
                      (c.kind == ExprKind::kLiteral && SingleCodepoint(c.literal) >= 0);
        if (i == first) {
          kept.push_back(merged);
        } else if (!member) {
          kept.push_back(alts[i]);
        }
      }
      alts = std::move(kept);
    }
    if (alts.size() <= 1) ++wrappers_unwrapped;
    return dst_.AddChoice(std::move(alts), e.loc);
  }

  const Grammar& src_;
  Grammar& dst_;
};

}  // namespace

absl::StatusOr<Grammar> FuseLiterals(const Grammar& g, PassReport* report) {
  if (absl::Status st = g.Validate(); !st.ok()) return st;
  Grammar out;
  out.source_name = g.source_name;
  out.tokens = g.tokens;
  out.root = g.root;
  out.rules = g.rules;
  Fuser fuser(g, out);
  internal::PostOrderMemo memo(g.exprs.size());
  for (RuleId r = 0; r < g.rules.size(); ++r) {
    absl::StatusOr<ExprId> body = internal::BuildPostOrder(
        g, g.rules[r].body, memo, internal::OwnChildren(g),
        [&](ExprId id, const std::vector<ExprId>& kids) { return fuser.Build(id, kids); });
    if (!body.ok()) return body.status();
    out.rules[r].body = *body;
  }
  if (report != nullptr) {
    report->Count("literals fused", fuser.literals_fused);
    report->Count("classes merged", fuser.classes_merged);
    report->Count("sequences flattened", fuser.sequences_flattened);
    report->Count("choices flattened", fuser.choices_flattened);
    report->Count("wrappers unwrapped", fuser.wrappers_unwrapped);
    report->Count("repeats simplified", fuser.repeats_unwrapped);
  }
  // Drop the nodes that fusion replaced (they were built before their parents fused them).
  std::vector<RuleId> ids(out.rules.size());
  for (RuleId r = 0; r < ids.size(); ++r) ids[r] = r;
  return internal::CopyRules(out, ids, ids, out.root);
}

}  // namespace zapgram::transforms
