// Lark reader, stage 2b: llguidance's extensions of Lark (its docs/syntax.md;
// what each means and what zapgram does with it: docs/llguidance-lark.md).
//
// The dialect. llguidance's Lark is the grammar format of vLLM's and
// SGLang's guidance backend. Its grammars are parsed by an Earley parser over
// lexemes found in context, not by Lark's context-free lexer, so zapgram
// lowers them byte by byte (grammar/lark_llguidance_lowering.cc) instead of
// through parser/lexer.h. LarkReadOptions::dialect chooses: kLlguidance, or
// kAuto (the default), where the first construct only llguidance has
// (UseLlguidance: `%llguidance`, `%json`, `%regex`, `<special>`, `<[ids]>`,
// `{M,N}`, `&`, prefix `~`, a '-' inside a name, a lexeme option) selects it
// and is named in LarkGrammar::dialect_reason. Under kLark each of them is
// refused as "llguidance syntax".
//
// What this stage reads (the parser, grammar/lark_parse.cc, calls in here
// when it meets the construct's first byte):
//   <|eot_id|>, <think>   one vocabulary token by its text: a kTokenIds node
//                         with the text as a name (resolved when compiled).
//   <[128010]>, <[1,5-9]>, <[^1-3]>, <[*]>, ..-MAX
//                         one token by id: a kTokenIds node with id ranges;
//                         `^` complements the whole list, `*` is every id.
//                         A list of single ids is checked as Token(...) is
//                         (unknown, unused or EOS ids are errors); a list
//                         with a range, `^` or `*` (kTokenIdsClip) matches
//                         the ids in it that the vocabulary has, EOS excepted.
//   %json { ... }         a JSON Schema, as a kLarkJson node holding the
//                         JSON text (rules only; compiled by the lowering).
//   %regex { ... }        llguidance's structured regex: substring_chunks,
//                         substring_words, substring_chars; a kRegex node.
//   item{M,N}             {N}, {M,}, {,N}: a kRepeat, like Lark's item~M..N.
//   A & B, ~A             intersection and complement of terminals (terminal
//                         bodies only): kChoice nodes flagged
//                         kLarkIntersection / kLarkComplement (lark_reader.h).
//                         `&` binds looser than a sequence and tighter than
//                         `|`; `~` tighter than a postfix operator.
//   name[lazy, suffix=T, capture, capture="x", temperature=x]
//                         lexeme options; max_tokens, stop, stop_capture are
//                         refused (why: ReadLlguidanceAttributes).
//   %llguidance { ... }   grammar options, merged: ignore_once,
//                         allow_initial_skip, no_forcing;
//                         allow_invalid_utf8 true is refused.
//   names with '-'        (ReadName, grammar/lark_reader_internal.h).
//   name::_ : ... %if C  parametric rules (grammar/lark_llguidance_params.h):
//                         `name::EXPR` a kRuleRef flagged kLarkParamRef, the
//                         condition a kChoice flagged kLarkCondition.
// Refused where met (grammar/lark_parse.cc): `@grammar` references.
//
// Tests: tests/grammar/lark_llguidance_test.cc.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grammar/lark_llguidance_params.h"
#include "grammar/lark_reader_internal.h"
#include "grammar/regex_render.h"
#include "grammar/utf8.h"
#include "nlohmann/json.hpp"

namespace zapgram::grammar::lark_internal {
namespace {

// The largest token id `MAX`, `*` and `^` reach; ids past the vocabulary
// are clipped when the grammar is compiled (kTokenIdsClip).
constexpr uint32_t kMaxTokenId = 0x7FFFFFFE;

// Chunks of %regex's substring_chunks are joined by nesting one group per
// chunk (the regex parser's max_nesting is 256).
constexpr size_t kMaxSubstringChunks = 200;

bool IsWordByte(unsigned char b) {
  return b >= 0x80 || (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || b == '_';
}

}  // namespace

absl::Status LarkReader::UseLlguidance(size_t offset, std::string_view construct) {
  if (options_.dialect == LarkDialect::kLark) {
    return ErrorAt(offset, absl::StrFormat("%s is llguidance's Lark syntax; this grammar is read as plain Lark "
                                           "(LarkDialect::kLark)", construct));
  }
  if (!out_.llguidance) {
    out_.llguidance = true;
    out_.dialect_reason = absl::StrFormat("%s at %s", construct, Site(offset));
  }
  return absl::OkStatus();
}

absl::Status LarkReader::NoteDashNames() {
  if (dash_name_offset_ == kNone) return absl::OkStatus();
  const size_t offset = dash_name_offset_;
  dash_name_offset_ = kNone;
  return UseLlguidance(offset, "a name holding '-'");
}

void LarkReader::PushItem(Frame& frame, ExprId item) {
  for (; frame.pending_complements > 0; --frame.pending_complements) {
    item = AddSetOperation(kLarkComplement, {item}, out_.arena.exprs[item].loc);
  }
  frame.items.push_back({item, false});
}

// At '<': `<name>` (a token by its text) or `<[ids]>`.
absl::StatusOr<ExprId> LarkReader::ReadSpecialToken() {
  const size_t open = pos_;
  const SourceLocation loc = LocationOf(open);
  if (absl::Status s = UseLlguidance(open, "a special token '<...>'"); !s.ok()) return s;
  Expr e;
  e.kind = ExprKind::kTokenIds;
  e.loc = loc;
  if (At(open + 1) != '[') {
    size_t close = open + 1;
    while (close < text_.size() && text_[close] != '>' && text_[close] != '\n' && text_[close] != ' ') ++close;
    if (At(close) != '>' || close == open + 1) {
      return ErrorAt(open, "expected a special token '<name>' (its text, without blanks, up to '>')");
    }
    e.names.emplace_back(text_.substr(open, close + 1 - open));
    pos_ = close + 1;
    return AddNode(std::move(e));
  }
  pos_ = open + 2;
  bool negated = false;
  bool clip = false;
  if (At(pos_) == '^') {
    negated = clip = true;
    ++pos_;
  }
  std::vector<CodepointRange> ranges;
  auto read_id = [&]() -> absl::StatusOr<uint32_t> {
    if (text_.substr(pos_, 3) == "MAX") {
      pos_ += 3;
      clip = true;
      return kMaxTokenId;
    }
    if (!IsDigit(At(pos_))) return ErrorAt(pos_, absl::StrCat("expected a token id, found ", Describe(pos_)));
    uint64_t v = 0;
    const size_t start = pos_;
    while (IsDigit(At(pos_))) {
      v = v * 10 + static_cast<uint64_t>(At(pos_++) - '0');
      if (v > kMaxTokenId) return ErrorAt(start, absl::StrFormat("token id above %d", kMaxTokenId));
    }
    return static_cast<uint32_t>(v);
  };
  while (true) {
    pos_ = SkipInlineFrom(pos_);
    if (At(pos_) == '*') {
      ++pos_;
      clip = true;
      ranges.push_back({0, kMaxTokenId});
    } else {
      const size_t item_offset = pos_;
      auto lo = read_id();
      if (!lo.ok()) return lo.status();
      uint32_t hi = *lo;
      if (At(pos_) == '-') {
        ++pos_;
        auto h = read_id();
        if (!h.ok()) return h.status();
        hi = *h;
        clip = true;
        if (hi < *lo) return ErrorAt(item_offset, "token id range bounds are reversed");
      }
      ranges.push_back({*lo, hi});
    }
    pos_ = SkipInlineFrom(pos_);
    if (At(pos_) == ',') {
      ++pos_;
      continue;
    }
    if (At(pos_) == ']' && At(pos_ + 1) == '>') {
      pos_ += 2;
      break;
    }
    return ErrorAt(pos_, absl::StrCat("expected ',' or ']>' in token ids, found ", Describe(pos_)));
  }
  e.ranges = MergeRanges(std::move(ranges), negated, kMaxTokenId);
  if (e.ranges.empty()) return ErrorAt(open, "'<[^...]>' excludes every token id");
  e.flags = clip ? kTokenIdsClip : 0u;
  return AddNode(std::move(e));
}

// After `%json` or `%regex`: a JSON object `{ ... }`, which may span lines.
absl::StatusOr<std::string> LarkReader::ReadJsonBlock(std::string_view directive) {
  pos_ = SkipAllFrom(pos_);
  if (At(pos_) != '{') {
    return ErrorAt(pos_, absl::StrFormat("expected '{' after %s, found %s", directive, Describe(pos_)));
  }
  const size_t open = pos_;
  uint32_t depth = 0;
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      while (pos_ < text_.size() && text_[pos_] != '"') pos_ += text_[pos_] == '\\' ? 2 : 1;
      if (pos_ >= text_.size()) break;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) {
        ++pos_;
        return std::string(text_.substr(open, pos_ - open));
      }
    }
    ++pos_;
  }
  return ErrorAt(open, absl::StrFormat("unterminated %s block: expected the '}' closing this '{'", directive));
}

// At '%' inside a body: %json { ... } or %regex { ... }.
absl::StatusOr<ExprId> LarkReader::ReadPercentItem(BodyKind kind) {
  const size_t start = pos_++;
  const size_t word_offset = pos_;
  while (At(pos_) >= 'a' && At(pos_) <= 'z') ++pos_;
  const std::string_view word = text_.substr(word_offset, pos_ - word_offset);
  if (word != "json" && word != "regex") {
    return ErrorAt(start, absl::StrFormat("'%%%s' cannot stand in a rule body (expected %%json { ... } or "
                                          "%%regex { ... })", word));
  }
  if (absl::Status s = UseLlguidance(start, absl::StrFormat("'%%%s'", word)); !s.ok()) return s;
  auto json = ReadJsonBlock(absl::StrFormat("%%%s", word));
  if (!json.ok()) return json.status();
  if (word == "regex") return ReadRegexBlock(start, *json);
  if (kind != BodyKind::kRule) {
    return ErrorAt(start, "%json may be used in rules only: a JSON Schema is a grammar, not one lexeme");
  }
  Expr e;
  e.kind = ExprKind::kEmpty;
  e.flags = kLarkJson;
  e.literal = std::move(*json);
  e.loc = LocationOf(start);
  return AddNode(std::move(e));
}

// %regex { "substring_chunks": [...] | "substring_words": "..." |
// "substring_chars": "..." }: every lst[n:m] joined, n <= m.
absl::StatusOr<ExprId> LarkReader::ReadRegexBlock(size_t offset, std::string_view json) {
  nlohmann::json value = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded() || !value.is_object()) return ErrorAt(offset, "%regex: expected a JSON object");
  if (value.size() != 1) {
    return ErrorAt(offset, "%regex: expected exactly one of substring_chunks, substring_words, substring_chars "
                           "(llguidance's other structured regexes are not defined yet)");
  }
  const auto first = value.begin();
  const std::string key = first.key();
  const nlohmann::json& arg = first.value();
  std::vector<std::string> chunks;
  if (key == "substring_chunks") {
    if (!arg.is_array()) return ErrorAt(offset, "%regex: substring_chunks must be an array of strings");
    for (const auto& c : arg) {
      if (!c.is_string()) return ErrorAt(offset, "%regex: substring_chunks must be an array of strings");
      chunks.push_back(c.get<std::string>());
    }
  } else if (key == "substring_words" || key == "substring_chars") {
    if (!arg.is_string()) return ErrorAt(offset, absl::StrFormat("%%regex: %s must be a string", key));
    const std::string s = arg.get<std::string>();
    for (size_t i = 0; i < s.size();) {
      const size_t len = std::max<size_t>(1, DecodeUtf8(std::string_view(s).substr(i)).length);
      size_t end = i + len;
      // Words: a run of letters, digits, '_' and non-ASCII characters; any
      // other character is a chunk of its own.
      if (key == "substring_words" && IsWordByte(static_cast<unsigned char>(s[i]))) {
        while (end < s.size() && IsWordByte(static_cast<unsigned char>(s[end]))) ++end;
      }
      chunks.push_back(s.substr(i, end - i));
      i = end;
    }
  } else {
    return ErrorAt(offset, absl::StrFormat("%%regex: unknown key \"%s\" (expected substring_chunks, "
                                           "substring_words or substring_chars)", key));
  }
  chunks.erase(std::remove(chunks.begin(), chunks.end(), std::string()), chunks.end());
  if (chunks.size() > kMaxSubstringChunks) {
    return ErrorAt(offset, absl::StrFormat("%%regex: %d chunks; zapgram writes a substring regex with one "
                                           "nested group per chunk and takes at most %d",
                                           chunks.size(), kMaxSubstringChunks));
  }
  // Substrings starting at chunk n: e_n (?: e_n+1 (?: ... )? )?; the union
  // over n, or nothing.
  std::string pattern = "(?:";
  for (size_t n = 0; n < chunks.size(); ++n) {
    if (n > 0) pattern += "|";
    std::string nested;
    for (size_t m = chunks.size(); m-- > n;) {
      nested = m + 1 == chunks.size() ? PythonEscape(chunks[m])
                                      : absl::StrCat(PythonEscape(chunks[m]), "(?:", nested, ")?");
    }
    pattern += nested;
  }
  pattern += ")?";
  if (chunks.empty()) pattern = "";
  return AddRegex(std::move(pattern), 0, LocationOf(offset));
}

// At '%llguidance' (start just before '%'): `{ JSON object }`, merged.
absl::Status LarkReader::ReadLlguidanceDirective(size_t start) {
  if (absl::Status s = UseLlguidance(start, "'%llguidance'"); !s.ok()) return s;
  auto json = ReadJsonBlock("%llguidance");
  if (!json.ok()) return json.status();
  nlohmann::json value = nlohmann::json::parse(*json, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded() || !value.is_object()) return ErrorAt(start, "%llguidance: expected a JSON object");
  for (const auto& [key, v] : value.items()) {
    if (!v.is_boolean()) return ErrorAt(start, absl::StrFormat("%%llguidance: \"%s\" must be true or false", key));
    const bool on = v.get<bool>();
    LlguidanceOptions& o = out_.llguidance_options;
    if (key == "ignore_once") {
      o.ignore_once = o.ignore_once || on;
    } else if (key == "allow_initial_skip") {
      o.allow_initial_skip = o.allow_initial_skip || on;
    } else if (key == "no_forcing") {
      o.no_forcing = o.no_forcing || on;
    } else if (key == "allow_invalid_utf8") {
      if (on) {
        return ErrorAt(start, "%llguidance: \"allow_invalid_utf8\": true is not supported (zapgram's grammars "
                              "match UTF-8 text only)");
      }
    } else {
      return ErrorAt(start, absl::StrFormat("%%llguidance: unknown option \"%s\" (expected ignore_once, "
                                            "allow_initial_skip, no_forcing or allow_invalid_utf8)", key));
    }
  }
  return ExpectEndOfLine();
}

// At '{' after an item: {N}, {M,}, {,N}, {M,N}.
absl::Status LarkReader::ReadBraceRepeat(Frame& top) {
  const size_t open = pos_;
  if (absl::Status s = UseLlguidance(open, "'{M,N}' (repetition)"); !s.ok()) return s;
  if (top.items.empty() || top.pending_complements != 0) return ErrorAt(open, "'{M,N}' must follow an item");
  if (top.items.back().has_operator) {
    return ErrorAt(open, "'{M,N}': only one operator may follow an item (use parentheses)");
  }
  pos_ = SkipInlineFrom(pos_ + 1);
  uint32_t min = 0, max = kUnbounded;
  if (At(pos_) != ',') {
    auto lo = ReadNumber();
    if (!lo.ok()) return lo.status();
    min = max = *lo;
    pos_ = SkipInlineFrom(pos_);
  }
  if (At(pos_) == ',') {
    pos_ = SkipInlineFrom(pos_ + 1);
    max = kUnbounded;
    if (At(pos_) != '}') {
      const size_t hi_offset = pos_;
      auto hi = ReadNumber();
      if (!hi.ok()) return hi.status();
      if (*hi < min) return ErrorAt(hi_offset, "repetition bounds are reversed");
      max = *hi;
      pos_ = SkipInlineFrom(pos_);
    }
  }
  if (At(pos_) != '}') return ErrorAt(pos_, absl::StrCat("expected '}' to end '{M,N}', found ", Describe(pos_)));
  ++pos_;
  Frame::Item& item = top.items.back();
  item.expr = out_.arena.AddRepeat(item.expr, min, max, LocationOf(open));
  item.has_operator = true;
  return absl::OkStatus();
}

// Whether the attribute list at `open` ('[') holds an option only llguidance
// has (lazy, suffix, stop, stop_capture, max_tokens), or the dialect is
// already llguidance's: then ReadLlguidanceAttributes reads it, else
// XGrammar's reader (ReadRuleAttributes).
bool LarkReader::WantsLlguidanceAttributes(size_t open) const {
  if (options_.dialect == LarkDialect::kLark) return false;
  if (options_.dialect == LarkDialect::kLlguidance || out_.llguidance) return true;
  size_t p = open + 1;
  while (p < text_.size() && text_[p] != ']' && text_[p] != '\n') {
    if (text_[p] == '"') {
      ++p;
      while (p < text_.size() && text_[p] != '"' && text_[p] != '\n') p += text_[p] == '\\' ? 2 : 1;
      ++p;
      continue;
    }
    if (IsNameStart(text_[p]) && !IsNameChar(text_[p - 1])) {
      size_t q = p;
      while (q < text_.size() && IsNameChar(text_[q])) ++q;
      const std::string_view word = text_.substr(p, q - p);
      if (word == "lazy" || word == "suffix" || word == "stop" || word == "stop_capture" || word == "max_tokens") {
        return true;
      }
      p = q;
      continue;
    }
    ++p;
  }
  return false;
}

// A terminal as an attribute value: "string", /regex/flags or NAME.
absl::StatusOr<ExprId> LarkReader::ReadAttributeTerminal() {
  const char c = At(pos_);
  if (c == '"') return ReadStringItem();
  if (c == '/') return ReadRegexItem();
  const size_t offset = pos_;
  const std::string_view name = ReadName();
  if (name.empty() || NameKind(name) != 1) {
    return ErrorAt(offset, "expected a terminal (a string, a /regex/ or an uppercase name)");
  }
  return out_.arena.AddRuleRef(Symbol(name, true, offset), LocationOf(offset));
}

// llguidance's `name[option, ...]` (docs/llguidance-lark.md):
//   capture, capture="x", temperature=x  as XGrammar's (rule_attributes.h);
//   lazy        the rule is one lexeme that ends as soon as it can;
//   suffix=T    the rule is one lexeme: its body then T, lazily;
// refused, with why:
//   max_tokens=n  a per-lexeme token budget that forces the lexeme to end:
//               not a language (it depends on how the model tokenizes);
//   stop=T      the lexeme ends at T and T is then removed from the output by
//               rolling back tokens already sampled: a mask cannot undo a
//               sampled token (use suffix=, as llguidance also advises);
//   stop_capture="x"  a capture of that hidden stop text.
absl::Status LarkReader::ReadLlguidanceAttributes(std::string_view name, Definition& def) {
  const size_t open = pos_;
  if (def.terminal) {
    return ErrorAt(open, absl::StrFormat("rule attributes apply to rules, not to the terminal '%s'", name));
  }
  ++pos_;
  while (true) {
    pos_ = SkipInlineFrom(pos_);
    const size_t key_offset = pos_;
    const std::string_view key = ReadName();
    if (key.empty()) return ErrorAt(pos_, absl::StrCat("expected a rule attribute name, found ", Describe(pos_)));
    pos_ = SkipInlineFrom(pos_);
    const bool has_value = At(pos_) == '=';
    if (has_value) pos_ = SkipInlineFrom(pos_ + 1);
    auto need_value = [&](bool want) -> absl::Status {
      if (has_value == want) return absl::OkStatus();
      return ErrorAt(key_offset, absl::StrFormat("rule attribute '%s' %s", key, want ? "needs a value" : "takes no value"));
    };
    if (key == "lazy") {
      if (absl::Status s = need_value(false); !s.ok()) return s;
      if (absl::Status s = UseLlguidance(key_offset, "the lexeme option 'lazy'"); !s.ok()) return s;
      def.attributes.lazy = true;
    } else if (key == "capture") {
      def.attributes.capture = true;
      if (has_value) {
        if (At(pos_) != '"') return ErrorAt(pos_, "expected a quoted capture name");
        auto s = ReadString();
        if (!s.ok()) return s.status();
        def.attributes.capture_name = *s;
      }
    } else if (key == "temperature") {
      if (absl::Status s = need_value(true); !s.ok()) return s;
      const size_t start = pos_;
      while (IsDigit(At(pos_)) || At(pos_) == '.' || At(pos_) == 'e' || At(pos_) == 'E' || At(pos_) == '-' ||
             At(pos_) == '+') {
        ++pos_;
      }
      const std::string number(text_.substr(start, pos_ - start));
      char* end = nullptr;
      const double t = number.empty() ? -1.0 : std::strtod(number.c_str(), &end);
      if (number.empty() || end != number.c_str() + number.size() || !(t >= 0.0) || t > 1e30) {
        return ErrorAt(start, "temperature must be a finite number >= 0");
      }
      def.attributes.temperature = static_cast<float>(t);
    } else if (key == "suffix") {
      if (absl::Status s = need_value(true); !s.ok()) return s;
      if (absl::Status s = UseLlguidance(key_offset, "the lexeme option 'suffix'"); !s.ok()) return s;
      auto t = ReadAttributeTerminal();
      if (!t.ok()) return t.status();
      def.suffix = *t;
    } else if (key == "stop") {
      return ErrorAt(key_offset, absl::StrFormat(
                                     "rule attribute 'stop' (rule '%s') is not supported: llguidance removes the "
                                     "stop text from the output by rolling back tokens already sampled, which a "
                                     "token mask cannot express; use suffix= or lazy", name));
    } else if (key == "stop_capture") {
      return ErrorAt(key_offset, absl::StrFormat("rule attribute 'stop_capture' (rule '%s') is not supported: it "
                                                 "captures the stop text, which 'stop' hides (refused)", name));
    } else if (key == "max_tokens") {
      return ErrorAt(key_offset, absl::StrFormat(
                                     "rule attribute 'max_tokens' (rule '%s') is not supported: a budget of model "
                                     "tokens per lexeme depends on how the model tokenizes, so it is not a "
                                     "language a mask can hold exactly", name));
    } else {
      return ErrorAt(key_offset, absl::StrFormat("unknown rule attribute '%s' (llguidance's are capture, lazy, "
                                                 "temperature, suffix, stop, stop_capture, max_tokens)", key));
    }
    pos_ = SkipInlineFrom(pos_);
    if (At(pos_) == ',') {
      ++pos_;
      continue;
    }
    if (At(pos_) == ']') {
      ++pos_;
      break;
    }
    return ErrorAt(pos_, absl::StrCat("expected ',' or ']' in rule attributes, found ", Describe(pos_)));
  }
  if (def.attributes.capture && def.suffix != kNoLarkExpr) {
    return ErrorAt(open, absl::StrFormat("'capture' with 'suffix' (rule '%s') is not supported: llguidance "
                                         "captures the text without the suffix, and zapgram captures what a "
                                         "rule matches", name));
  }
  return absl::OkStatus();
}

// The text of a parameter expression (after `name::`) or of a condition
// (after `%if`): a name or number, with balanced ( ) [ ] on this line.
absl::StatusOr<std::string> LarkReader::ReadParamText(bool condition) {
  pos_ = condition ? SkipInlineFrom(pos_) : pos_;
  const size_t start = pos_;
  uint32_t depth = 0;
  while (pos_ < text_.size() && text_[pos_] != '\n') {
    const char c = text_[pos_];
    if (c == '(' || c == '[') {
      ++depth;
    } else if (c == ')' || c == ']') {
      if (depth == 0) break;
      --depth;
    } else if (depth == 0 && !IsNameChar(c)) {
      break;
    }
    ++pos_;
  }
  if (depth != 0) return ErrorAt(start, "unclosed '(' or '[' in a parameter expression");
  if (pos_ == start) {
    return ErrorAt(start, absl::StrCat(condition ? "expected a condition after %if, found "
                                                 : "expected a parameter expression after '::', found ",
                                       Describe(start)));
  }
  const std::string text(text_.substr(start, pos_ - start));
  const ParamResult r = EvalParam(text, 0, condition);
  if (!r.ok) return ErrorAt(start + r.error_offset, r.error);
  for (size_t i = 0; i < text.size(); ++i) {
    const bool self = text[i] == '_' && (i == 0 || !IsNameChar(text[i - 1])) &&
                      (i + 1 == text.size() || !IsNameChar(text[i + 1]));
    if (self && !current_parametric_) {
      return ErrorAt(start + i, "'_' (the parameter) outside a parametric rule 'name::_'");
    }
  }
  return text;
}

// At '::' after the rule name read at `offset`: a reference `name::EXPR`.
absl::StatusOr<ExprId> LarkReader::ReadParamRef(std::string_view name, size_t offset) {
  if (absl::Status s = UseLlguidance(offset, "a parametric reference 'name::...'"); !s.ok()) return s;
  pos_ += 2;
  auto text = ReadParamText(false);
  if (!text.ok()) return text.status();
  Expr e;
  e.kind = ExprKind::kRuleRef;
  e.rule = Symbol(name, false, offset);
  e.flags = kLarkParamRef;
  e.literal = std::move(*text);
  e.loc = LocationOf(offset);
  const ExprId id = AddNode(std::move(e));
  own_refs_.push_back({id, offset, false});
  return id;
}

// At `%if`: the condition of the alternative read so far.
absl::Status LarkReader::ReadCondition(Frame& top, size_t depth) {
  const size_t start = pos_;
  if (absl::Status s = UseLlguidance(start, "'%if'"); !s.ok()) return s;
  if (!current_parametric_ || depth != 1) {
    return ErrorAt(start, "%if ends an alternative of a parametric rule 'name::_' (outside any brackets)");
  }
  if (top.items.empty()) return ErrorAt(start, "%if must follow the alternative it conditions");
  pos_ += 3;
  auto text = ReadParamText(true);
  if (!text.ok()) return text.status();
  top.condition = std::move(*text);
  return absl::OkStatus();
}

}  // namespace zapgram::grammar::lark_internal
