// llguidance's parametric rules (its docs/parametric.md): a rule written
// `name::_ : ...` takes one 64-bit parameter p; a reference `name::EXPR`
// passes it a value computed from the referring rule's p, and an
// alternative ending in `%if COND` exists only where COND holds for p.
//
// Expressions (k, x, y bit indices 0..64, v an integer literal, decimal or
// 0x hex; a range is [x:y], x < y, or `_` = [0:64]; p[x:y] = the bits x..y-1):
//   _                 p
//   v                 v
//   set_bit(k)        p | 1<<k          clear_bit(k)  p & ~(1<<k)
//   bit_and(v)        p & v             bit_or(v)     p | v
//   incr(range)       p + 1<<x unless p[x:y] is all ones (saturating)
//   decr(range)       p - 1<<x unless p[x:y] is zero (saturating)
// Conditions:
//   true, true()      bit_clear(k), bit_set(k)
//   is_ones(range), is_zeros(range)
//   eq ne lt le gt ge (range, v)              p[x:y] against v, unsigned
//   bit_count_eq ne lt le gt ge (range, k)    set bits of p[x:y] against k
//   and(c, c), or(c, c), not(c)
// Both are evaluated without recursion (an explicit stack of open calls).
// A syntax error gives the offset into the text and a message.
//
// zapgram expands a parametric grammar ahead of time: the lowering
// (grammar/lark_llguidance_lowering.cc) instantiates each (rule, value) the
// start rule reaches, one grammar rule each (`perm::0x5`), within
// LarkLoweringOptions::max_parametric_instances.
//
// Tests: tests/grammar/lark_llguidance_test.cc (ParametricRules).
#ifndef ZAPGRAM_GRAMMAR_LARK_LLGUIDANCE_PARAMS_H_
#define ZAPGRAM_GRAMMAR_LARK_LLGUIDANCE_PARAMS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace zapgram::grammar {

struct ParamResult {
  bool ok = false;
  uint64_t value = 0;  // the value, or 1/0 for a condition
  size_t error_offset = 0;
  std::string error;
};

// `text` is an expression (want_condition false) or a condition (true).
ParamResult EvalParam(std::string_view text, uint64_t p, bool want_condition);

}  // namespace zapgram::grammar

#endif  // ZAPGRAM_GRAMMAR_LARK_LLGUIDANCE_PARAMS_H_
