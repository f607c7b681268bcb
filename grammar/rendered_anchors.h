// Misplaced anchors in the regex RenderRegex would write, found without
// writing or parsing it.
//
// The regular-terminal merge (transforms/regular_terminals.h) tries the
// largest regular expressions first: a JSON object's whole body, then its
// members, then runs of them. A JSON Schema `pattern` becomes a kRegex leaf
// (?J:^...$) between two quote literals, and the regex dialect refuses ^
// where something can precede it and $ where something can follow it
// (grammar/regex_compiler.h). So the quoted string, and every candidate
// around it, is refused; before this pass each was written out and parsed
// up to the anchor check, top-down, one enclosing candidate after another.
//
// Why a refusal carries over. The anchor check walks the syntax tree with
// two bits, "nothing can precede" and "nothing can follow", both true at
// the root; each child's bits are its parent's ANDed with facts about its
// siblings (a concatenation: every sibling before it is empty or ^, every
// sibling after it empty or $) or its quantifier (at most once). A pattern
// written inside a larger one keeps its subtree unchanged (RenderRegex
// writes every node as one atom: a group, a class, a quantified group), so
// its bits there are at most those it had alone, and an anchor refused
// alone stays refused. That is the monotonicity every rule below relies on.
//
// What is kept per node (a summary of the tree its text parses to):
//   refused      its own anchor check fails;
//   has_start    it holds a ^ or \A (refused once anything precedes it);
//   has_end      it holds a $ \Z \z (refused once anything follows it);
//   never_blank  the root of its tree is not empty and not an anchor.
// Every field is a claim that is known to hold; false only means "no claim",
// so a missed case costs a regex compile, never a wrong verdict. Leaves:
// literals (escaped, no anchors; never blank unless empty), classes (never
// blank), regexes (grammar::AnchorUseOf, which parses the pattern, or no
// claim when the text holds no anchor character at all). A sequence of two
// or more parts, a choice of two or more and a repetition parse to a
// concatenation, an alternation and a repeat node, all never blank; a
// sequence or choice of one part is that part; a repetition allowing more
// than one copy refuses every anchor inside it. A sequence refuses when a
// part with ^ has a never-blank part before it, or a part with $ one after
// it; a run of parts written one after another (the merge's runs) is judged
// as the sequence of those parts.
//
// Cost: each node summarized once (explicit stack, memoized), each regex
// leaf holding an anchor character parsed once.
//
// Tests: tests/grammar/rendered_anchors_test.cc (the claims agree with
// compiling the rendered regex, on hand-written cases and random
// expressions); tests/transforms/regular_terminals_test.cc.
#ifndef ZAPGRAM_GRAMMAR_RENDERED_ANCHORS_H_
#define ZAPGRAM_GRAMMAR_RENDERED_ANCHORS_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "grammar/grammar.h"

namespace zapgram::grammar {

class RenderedAnchors {
 public:
  // `rule_body` as RenderRegex takes it (a kRuleRef stands for that
  // expression, which must not reach itself). `g` may grow between calls
  // (what is summarized depends only on an expression and what it reaches).
  RenderedAnchors(const Grammar& g, std::function<ExprId(RuleId)> rule_body);

  // True when the regex written for `parts` one after another (RenderRegex
  // of each, concatenated; one part: that expression's regex) is certainly
  // refused by the regex compiler for a misplaced anchor.
  bool Refused(const std::vector<ExprId>& parts);

 private:
  enum : uint8_t {
    kKnown = 1,       // the summary below is computed
    kRefused = 2,
    kHasStart = 4,
    kHasEnd = 8,
    kNeverBlank = 16,
  };
  // The summary bits of `id`, computing what is missing (explicit stack).
  uint8_t Summary(ExprId id);
  uint8_t LeafSummary(const Expr& e) const;
  // The parts of a concatenation, their summaries in order: refused or
  // holding a misplaced anchor.
  static uint8_t Concatenation(const uint8_t* parts, size_t n);
  const std::vector<ExprId>& ChildrenOf(ExprId id, std::vector<ExprId>* scratch) const;

  const Grammar& g_;
  std::function<ExprId(RuleId)> rule_body_;
  std::vector<uint8_t> summary_;  // per ExprId (sized to the grammar at each call)
};

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_RENDERED_ANCHORS_H_
