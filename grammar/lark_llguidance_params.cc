// Evaluating llguidance's parameter expressions and conditions
// (grammar/lark_llguidance_params.h). A left-to-right scan with an explicit
// stack of open calls: a name followed by '(' opens a call, ')' applies it
// to the arguments read since and hands the result to the call below.
#include "grammar/lark_llguidance_params.h"

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"

namespace zapgram::grammar {
namespace {

struct Val {
  enum Kind { kInt, kRange, kBool, kSelf } kind = kInt;  // kSelf: `_`
  uint64_t a = 0, b = 0;                                  // kInt: a; kRange: [a:b]; kBool: a
};

struct Call {
  std::string name;
  size_t offset;
  std::vector<Val> args;
};

bool IsIdent(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (c >= '0' && c <= '9'); }

uint64_t Mask(uint64_t x, uint64_t y) { return y - x >= 64 ? ~uint64_t{0} : ((uint64_t{1} << (y - x)) - 1); }

class Evaluator {
 public:
  Evaluator(std::string_view text, uint64_t p) : text_(text), p_(p) {}

  ParamResult Run(bool want_condition) {
    ParamResult r;
    std::vector<Call> stack;
    std::vector<Val> top;  // results outside any call
    auto emit = [&](Val v) { (stack.empty() ? top : stack.back().args).push_back(v); };
    while (true) {
      Skip();
      if (pos_ >= text_.size()) break;
      const size_t start = pos_;
      const char c = text_[pos_];
      if (c == ',') {
        if (stack.empty()) return Fail(start, "',' outside a call");
        ++pos_;
        continue;
      }
      if (c == ')') {
        if (stack.empty()) return Fail(start, "unmatched ')'");
        Call call = std::move(stack.back());
        stack.pop_back();
        ++pos_;
        Val v;
        if (!Apply(call, &v)) return Fail(error_offset_, error_);
        emit(v);
        continue;
      }
      if (c == '[') {
        Val v;
        v.kind = Val::kRange;
        ++pos_;
        if (!Number(&v.a)) return Fail(pos_, "expected a bit index after '['");
        Skip();
        if (At() != ':') return Fail(pos_, "expected ':' in a bit range [x:y]");
        ++pos_;
        if (!Number(&v.b)) return Fail(pos_, "expected a bit index after ':'");
        Skip();
        if (At() != ']') return Fail(pos_, "expected ']' to end a bit range");
        ++pos_;
        if (v.a >= v.b || v.b > 64) return Fail(start, "a bit range [x:y] needs x < y <= 64");
        emit(v);
        continue;
      }
      if (c >= '0' && c <= '9') {
        Val v;
        if (!Number(&v.a)) return Fail(start, "integer literal out of range (64 bits)");
        emit(v);
        continue;
      }
      if (!IsIdent(c)) return Fail(start, absl::StrFormat("unexpected '%c'", c));
      while (pos_ < text_.size() && IsIdent(text_[pos_])) ++pos_;
      const std::string name(text_.substr(start, pos_ - start));
      Skip();
      if (At() == '(') {
        ++pos_;
        stack.push_back({name, start, {}});
        continue;
      }
      if (name == "_") {
        emit({Val::kSelf, 0, 0});
      } else if (name == "true") {
        emit({Val::kBool, 1, 0});
      } else {
        return Fail(start, absl::StrFormat("unknown name '%s'", name));
      }
    }
    if (!stack.empty()) return Fail(stack.back().offset, "unclosed '('");
    if (top.size() != 1) return Fail(0, "expected one expression");
    Val v = top[0];
    if (v.kind == Val::kSelf) v = {Val::kInt, p_, 0};
    if (want_condition != (v.kind == Val::kBool) || v.kind == Val::kRange) {
      return Fail(0, want_condition ? "expected a condition" : "expected a value");
    }
    r.ok = true;
    r.value = v.a;
    return r;
  }

 private:
  char At() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void Skip() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  bool Number(uint64_t* out) {
    Skip();
    uint64_t v = 0;
    int base = 10;
    if (At() == '0' && pos_ + 1 < text_.size() && (text_[pos_ + 1] == 'x' || text_[pos_ + 1] == 'X')) {
      base = 16;
      pos_ += 2;
    }
    const size_t start = pos_;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
      if (base == 16 && c >= 'A' && c <= 'F') d = c - 'A' + 10;
      if (d < 0) break;
      if (v > (~uint64_t{0} - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) return false;
      v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
      ++pos_;
    }
    *out = v;
    return pos_ > start;
  }
  ParamResult Fail(size_t offset, std::string message) {
    ParamResult r;
    r.error_offset = offset;
    r.error = std::move(message);
    return r;
  }
  bool Error(const Call& call, std::string message) {
    error_offset_ = call.offset;
    error_ = absl::StrFormat("%s(...): %s", call.name, message);
    return false;
  }
  // Bits [x:y] of an argument that is a range or `_`.
  bool Range(const Call& call, const Val& v, uint64_t* x, uint64_t* y) {
    if (v.kind == Val::kSelf) {
      *x = 0;
      *y = 64;
      return true;
    }
    if (v.kind != Val::kRange) return Error(call, "expected a bit range [x:y] or _");
    *x = v.a;
    *y = v.b;
    return true;
  }
  bool Apply(const Call& call, Val* out) {
    const std::string& f = call.name;
    const std::vector<Val>& a = call.args;
    auto arity = [&](size_t n) { return a.size() == n || Error(call, absl::StrFormat("expects %d argument(s)", n)); };
    auto is_int = [&](const Val& v) { return v.kind == Val::kInt || Error(call, "expected an integer"); };
    auto is_bool = [&](const Val& v) { return v.kind == Val::kBool || Error(call, "expected a condition"); };
    auto bit = [&](const Val& v, uint64_t* k) {
      if (!is_int(v)) return false;
      if (v.a >= 64) return Error(call, "a bit index is 0..63");
      *k = v.a;
      return true;
    };
    uint64_t k = 0, x = 0, y = 0;
    if (f == "true") {
      if (!arity(0)) return false;
      *out = {Val::kBool, 1, 0};
    } else if (f == "set_bit" || f == "clear_bit" || f == "bit_clear" || f == "bit_set") {
      if (!arity(1) || !bit(a[0], &k)) return false;
      const uint64_t m = uint64_t{1} << k;
      if (f == "set_bit") *out = {Val::kInt, p_ | m, 0};
      if (f == "clear_bit") *out = {Val::kInt, p_ & ~m, 0};
      if (f == "bit_clear") *out = {Val::kBool, (p_ & m) == 0, 0};
      if (f == "bit_set") *out = {Val::kBool, (p_ & m) != 0, 0};
    } else if (f == "bit_and" || f == "bit_or") {
      if (!arity(1) || !is_int(a[0])) return false;
      *out = {Val::kInt, f == "bit_and" ? (p_ & a[0].a) : (p_ | a[0].a), 0};
    } else if (f == "incr" || f == "decr" || f == "is_ones" || f == "is_zeros") {
      if (!arity(1) || !Range(call, a[0], &x, &y)) return false;
      const uint64_t field = (p_ >> x) & Mask(x, y);
      const uint64_t one = uint64_t{1} << x;
      if (f == "incr") *out = {Val::kInt, field == Mask(x, y) ? p_ : p_ + one, 0};
      if (f == "decr") *out = {Val::kInt, field == 0 ? p_ : p_ - one, 0};
      if (f == "is_ones") *out = {Val::kBool, field == Mask(x, y), 0};
      if (f == "is_zeros") *out = {Val::kBool, field == 0, 0};
    } else if (f == "eq" || f == "ne" || f == "lt" || f == "le" || f == "gt" || f == "ge" ||
               f.starts_with("bit_count_")) {
      const bool count = f.starts_with("bit_count_");
      const std::string op = count ? f.substr(10) : f;
      if (!arity(2) || !Range(call, a[0], &x, &y) || !is_int(a[1])) return false;
      const uint64_t field = (p_ >> x) & Mask(x, y);
      const uint64_t lhs = count ? static_cast<uint64_t>(std::popcount(field)) : field;
      const uint64_t rhs = a[1].a;
      bool v = false;
      if (op == "eq") v = lhs == rhs;
      else if (op == "ne") v = lhs != rhs;
      else if (op == "lt") v = lhs < rhs;
      else if (op == "le") v = lhs <= rhs;
      else if (op == "gt") v = lhs > rhs;
      else if (op == "ge") v = lhs >= rhs;
      else return Error(call, "unknown function");
      *out = {Val::kBool, v, 0};
    } else if (f == "and" || f == "or") {
      if (!arity(2) || !is_bool(a[0]) || !is_bool(a[1])) return false;
      *out = {Val::kBool, f == "and" ? (a[0].a && a[1].a) : (a[0].a || a[1].a), 0};
    } else if (f == "not") {
      if (!arity(1) || !is_bool(a[0])) return false;
      *out = {Val::kBool, !a[0].a, 0};
    } else {
      return Error(call, "unknown function");
    }
    return true;
  }

  std::string_view text_;
  uint64_t p_;
  size_t pos_ = 0;
  size_t error_offset_ = 0;
  std::string error_;
};

}  // namespace

ParamResult EvalParam(std::string_view text, uint64_t p, bool want_condition) {
  return Evaluator(text, p).Run(want_condition);
}

}  // namespace zapgram::grammar
