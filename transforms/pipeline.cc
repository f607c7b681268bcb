// The normalization pipeline (pipeline.h) and the transform report (report.h).
//
// Measuring is one post-order over the expression DAG below the rule bodies
// (explicit stack): distinct nodes are counted once; symbols, the leaves of
// the written-out trees, are summed children-first with saturation, so a
// DAG whose written-out form is exponential still measures in linear time.
//
// Tests: tests/transforms/transforms_test.cc (Pipeline.*, RealGrammars.*).
#include "transforms/pipeline.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "transforms/fuse_literals.h"
#include "transforms/useless_rules.h"

namespace zapgram::transforms {

namespace {

using grammar::Expr;
using grammar::ExprId;
using grammar::ExprKind;
using grammar::Grammar;

constexpr uint64_t kSaturated = ~uint64_t{0};

}  // namespace

GrammarSize MeasureGrammar(const Grammar& g) {
  GrammarSize size;
  size.rules = g.rules.size();
  const size_t n = g.exprs.size();
  std::vector<uint64_t> leaves(n, 0);
  std::vector<uint8_t> state(n, 0);
  std::vector<ExprId> stack;
  for (const grammar::Rule& rule : g.rules) {
    stack = {rule.body};
    while (!stack.empty()) {
      ExprId id = stack.back();
      if (state[id] == 2) {
        stack.pop_back();
        continue;
      }
      const Expr& e = g.exprs[id];
      if (state[id] == 0) {
        state[id] = 1;
        for (ExprId c : e.children) {
          if (state[c] == 0) stack.push_back(c);
        }
        continue;
      }
      stack.pop_back();
      state[id] = 2;
      ++size.expressions;
      uint64_t total = 0;
      switch (e.kind) {
        case ExprKind::kLiteral:
        case ExprKind::kCharClass:
        case ExprKind::kRegex:
        case ExprKind::kToken:
        case ExprKind::kTokenIds:
        case ExprKind::kRuleRef:
          total = 1;
          break;
        default:
          for (ExprId c : e.children) {
            total = total > kSaturated - leaves[c] ? kSaturated : total + leaves[c];
          }
          break;
      }
      leaves[id] = total;
    }
    size.symbols = size.symbols > kSaturated - leaves[rule.body] ? kSaturated
                                                                 : size.symbols + leaves[rule.body];
  }
  return size;
}

std::string FormatSize(const GrammarSize& size) {
  return absl::StrCat(size.rules, size.rules == 1 ? " rule, " : " rules, ", size.expressions,
                      size.expressions == 1 ? " expression, " : " expressions, ", size.symbols,
                      size.symbols == 1 ? " symbol" : " symbols");
}

void PassReport::AddRule(const std::string& list, const std::string& name) {
  for (auto& [key, names] : rules) {
    if (key == list) {
      names.push_back(name);
      return;
    }
  }
  rules.push_back({list, {name}});
}

void PassReport::Count(const std::string& counter, uint64_t n) {
  if (n == 0) return;
  for (auto& [key, value] : counts) {
    if (key == counter) {
      value += n;
      return;
    }
  }
  counts.push_back({counter, n});
}

std::string FormatPassReport(const PassReport& pass, size_t max_names) {
  std::string out =
      absl::StrCat(pass.pass, ": ", FormatSize(pass.before), " -> ", FormatSize(pass.after));
  if (!pass.changed()) return out + "; no change";
  for (const auto& [list, names] : pass.rules) {
    std::vector<std::string> shown(names.begin(),
                                   names.begin() + static_cast<std::ptrdiff_t>(
                                                       std::min(names.size(), max_names)));
    absl::StrAppend(&out, "; ", list, ": ", absl::StrJoin(shown, ", "));
    if (names.size() > shown.size()) {
      absl::StrAppend(&out, " ... (", names.size() - shown.size(), " more)");
    }
  }
  for (const auto& [counter, value] : pass.counts) absl::StrAppend(&out, "; ", counter, ": ", value);
  return out;
}

std::string FormatReport(const TransformReport& report, size_t max_names) {
  std::string out;
  for (const PassReport& pass : report.passes) {
    absl::StrAppend(&out, FormatPassReport(pass, max_names), "\n");
  }
  return out;
}

namespace {

// Normalize; `owned`, when not null, is `grammar` itself, given up by the
// caller: it is emptied once the first pass has read it.
absl::StatusOr<Grammar> RunPasses(const Grammar& grammar, Grammar* owned, TransformReport* report,
                                  const NormalizeOptions& options) {
  if (absl::Status st = grammar.Validate(); !st.ok()) return st;
  // The first pass reads the input itself (no copy of it: a schema's IR can
  // run to tens of MB); each later one reads its predecessor's output, which
  // is released as soon as the next exists.
  Grammar current;
  const Grammar* input = &grammar;
  auto run = [&](const char* name, auto pass) -> absl::Status {
    PassReport pass_report;
    pass_report.pass = name;
    if (report != nullptr) pass_report.before = MeasureGrammar(*input);
    absl::StatusOr<Grammar> next = pass(*input, &pass_report);
    if (!next.ok()) return next.status();
    current = *std::move(next);
    if (owned != nullptr && input == owned) *owned = Grammar();
    input = &current;
    if (report != nullptr) {
      pass_report.after = MeasureGrammar(current);
      report->passes.push_back(std::move(pass_report));
    }
    return absl::OkStatus();
  };
  absl::Status st = run("useless_rules", [](const Grammar& g, PassReport* r) {
    return RemoveUselessRules(g, r);
  });
  if (st.ok()) {
    st = run("inline_rules", [&](const Grammar& g, PassReport* r) {
      return InlineRules(g, options.inlining, r);
    });
  }
  if (st.ok()) {
    st = run("fuse_literals", [](const Grammar& g, PassReport* r) { return FuseLiterals(g, r); });
  }
  if (st.ok()) {
    st = run("dedup_rules", [&](const Grammar& g, PassReport* r) {
      return DedupRules(g, options.dedup, r);
    });
  }
  if (!st.ok()) return st;
  return current;
}

}  // namespace

absl::StatusOr<Grammar> Normalize(const Grammar& grammar, TransformReport* report,
                                  const NormalizeOptions& options) {
  return RunPasses(grammar, /*owned=*/nullptr, report, options);
}

absl::StatusOr<Grammar> NormalizeForCompile(const Grammar& grammar) {
  return RunPasses(grammar, /*owned=*/nullptr, /*report=*/nullptr, NormalizeOptions());
}

absl::StatusOr<Grammar> NormalizeForCompile(Grammar&& grammar) {
  return RunPasses(grammar, &grammar, /*report=*/nullptr, NormalizeOptions());
}

}  // namespace zapgram::transforms
