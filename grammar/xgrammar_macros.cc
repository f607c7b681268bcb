// XGrammar macros -> grammar IR. The essay is in grammar/xgrammar_macros.h.
#include "grammar/xgrammar_macros.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grammar/byte_automaton.h"
#include "grammar/dfa_set_ops.h"
#include "grammar/regex_compiler.h"
#include "grammar/utf8.h"

namespace zapgram::grammar {
namespace {

constexpr std::string_view kMacroNames[] = {
    "TagDispatch", "TokenTagDispatch", "Regex", "Substring", "Token", "ExcludeToken",
};

// Any one code point, whatever the flags.
constexpr char kAnyCodepoint[] = "[\\s\\S]";
// The largest token id a macro may name (the vocabulary's own limit,
// masks/vocabulary.h: max_vocab_size 2^24).
constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;

absl::string_view AsAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsAsciiAlnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

absl::Status PatternError(size_t offset, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(AsAbsl(what), " at pattern offset ", offset));
}

// ---- argument checking ----

std::string_view KindName(MacroValue::Kind kind) {
  switch (kind) {
    case MacroValue::Kind::kString:
      return "a string";
    case MacroValue::Kind::kInteger:
      return "an integer";
    case MacroValue::Kind::kBoolean:
      return "true or false";
    case MacroValue::Kind::kName:
      return "a rule name";
    case MacroValue::Kind::kTuple:
      return "a tuple";
  }
  return "a value";
}

// The call's arguments sorted into positional ones and known named ones.
class Arguments {
 public:
  Arguments(const MacroCall& call, MacroBuilder& builder) : call_(call), builder_(builder) {}

  // Fails on a named argument not in `known` or given twice.
  absl::Status Check(std::initializer_list<std::string_view> known) {
    for (const MacroArgument& argument : call_.arguments) {
      if (argument.name.empty()) {
        positional_.push_back(&argument.value);
        continue;
      }
      if (std::find(known.begin(), known.end(), argument.name) == known.end()) {
        std::string list;
        for (std::string_view name : known) absl::StrAppend(&list, list.empty() ? "" : ", ", AsAbsl(name));
        return builder_.ErrorAt(
            argument.name_offset,
            absl::StrCat(call_.name, "(...) has no argument named '", argument.name, "'",
                         known.size() == 0 ? " (it takes no named arguments)"
                                           : absl::StrCat(" (it takes ", list, ")")));
      }
      for (const MacroArgument* seen : named_) {
        if (seen->name == argument.name) {
          return builder_.ErrorAt(argument.name_offset,
                                  absl::StrCat(call_.name, "(...): argument '", argument.name,
                                               "' is given twice"));
        }
      }
      named_.push_back(&argument);
    }
    return absl::OkStatus();
  }

  const std::vector<const MacroValue*>& positional() const { return positional_; }
  const MacroValue* Named(std::string_view name) const {
    for (const MacroArgument* argument : named_) {
      if (argument->name == name) return &argument->value;
    }
    return nullptr;
  }

  // An error unless `value` is of `kind`; `what` names the value.
  absl::Status Expect(const MacroValue& value, MacroValue::Kind kind, std::string_view what) const {
    if (value.kind == kind) return absl::OkStatus();
    return builder_.ErrorAt(value.offset, absl::StrCat(call_.name, "(...): ", AsAbsl(what),
                                                       " must be ", AsAbsl(KindName(kind)), ", not ",
                                                       AsAbsl(KindName(value.kind))));
  }
  absl::Status ErrorAt(const MacroValue& value, std::string_view message) const {
    return builder_.ErrorAt(value.offset, absl::StrCat(call_.name, "(...): ", AsAbsl(message)));
  }

 private:
  const MacroCall& call_;
  MacroBuilder& builder_;
  std::vector<const MacroValue*> positional_;
  std::vector<const MacroArgument*> named_;
};

// A boolean named argument, or `fallback`.
absl::StatusOr<bool> NamedBoolean(const Arguments& args, std::string_view name, bool fallback) {
  const MacroValue* value = args.Named(name);
  if (value == nullptr) return fallback;
  if (absl::Status s = args.Expect(*value, MacroValue::Kind::kBoolean, name); !s.ok()) return s;
  return value->boolean;
}

// The strings of a tuple (or of one bare string, which XGrammar reads as a
// one-element tuple: `excludes=("end")` is a parenthesized string there).
absl::StatusOr<std::vector<std::string>> StringList(const Arguments& args, const MacroValue& value,
                                                    std::string_view what) {
  std::vector<std::string> out;
  if (value.kind == MacroValue::Kind::kString) {
    out.push_back(value.text);
  } else {
    if (absl::Status s = args.Expect(value, MacroValue::Kind::kTuple, what); !s.ok()) return s;
    for (const MacroValue& element : value.elements) {
      if (absl::Status s = args.Expect(element, MacroValue::Kind::kString,
                                       absl::StrCat("each element of ", AsAbsl(what)));
          !s.ok()) {
        return s;
      }
      if (element.text.empty()) {
        return args.ErrorAt(element, absl::StrCat(AsAbsl(what), " must not hold an empty string"));
      }
      out.push_back(element.text);
    }
  }
  return out;
}

// ---- the macros ----

absl::StatusOr<ExprId> LowerRegex(const MacroCall& call, MacroBuilder& builder) {
  Arguments args(call, builder);
  if (absl::Status s = args.Check({"flags", "json_string"}); !s.ok()) return s;
  if (args.positional().size() != 1) {
    return builder.ErrorAt(call.offset, absl::StrCat("Regex(...) takes exactly one pattern, not ",
                                                     args.positional().size(), " arguments"));
  }
  const MacroValue& pattern = *args.positional()[0];
  if (absl::Status s = args.Expect(pattern, MacroValue::Kind::kString, "the pattern"); !s.ok()) {
    return s;
  }
  std::optional<std::string_view> flags;
  if (const MacroValue* value = args.Named("flags")) {
    if (absl::Status s = args.Expect(*value, MacroValue::Kind::kString, "flags"); !s.ok()) return s;
    for (char f : value->text) {
      if (f != 'i' && f != 's' && f != 'u') {
        return args.ErrorAt(*value, absl::StrFormat("flag '%c' is not supported (flags: i s u)", f));
      }
    }
    flags = value->text;
  }
  absl::StatusOr<bool> json_string = NamedBoolean(args, "json_string", false);
  if (!json_string.ok()) return json_string.status();
  absl::StatusOr<TranslatedRegex> regex = TranslateXGrammarRegex(pattern.text, flags, *json_string);
  if (!regex.ok()) return args.ErrorAt(pattern, std::string(regex.status().message()));
  // Our compiler checks the translation now, so that a refusal is placed here.
  ByteNfa scratch;
  absl::StatusOr<uint32_t> end = AddRegex(scratch, 0, regex->pattern, regex->flags);
  if (!end.ok()) return args.ErrorAt(pattern, std::string(end.status().message()));
  return builder.grammar().AddRegex(std::move(regex->pattern), regex->flags,
                                    builder.LocationOf(call.offset));
}

absl::StatusOr<ExprId> LowerSubstring(const MacroCall& call, MacroBuilder& builder) {
  Arguments args(call, builder);
  if (absl::Status s = args.Check({}); !s.ok()) return s;
  std::vector<std::string> chunks;
  for (const MacroValue* chunk : args.positional()) {
    if (absl::Status s = args.Expect(*chunk, MacroValue::Kind::kString, "each chunk"); !s.ok()) {
      return s;
    }
    chunks.push_back(chunk->text);
  }
  std::string pattern = SubstringPattern(chunks);
  const SourceLocation loc = builder.LocationOf(call.offset);
  if (pattern.empty()) return builder.grammar().AddEmpty(loc);
  return builder.grammar().AddRegex(std::move(pattern), 0, loc);
}

absl::StatusOr<ExprId> LowerTagDispatch(const MacroCall& call, MacroBuilder& builder) {
  Arguments args(call, builder);
  if (absl::Status s = args.Check({"loop_after_dispatch", "excludes", "stop_eos", "stop_str"});
      !s.ok()) {
    return s;
  }
  TagDispatchSpec spec;
  for (const MacroValue* pair : args.positional()) {
    if (pair->kind != MacroValue::Kind::kTuple || pair->elements.size() != 2) {
      return args.ErrorAt(*pair, "each positional argument must be a pair (\"tag\", rule)");
    }
    const MacroValue& tag = pair->elements[0];
    const MacroValue& rule = pair->elements[1];
    if (absl::Status s = args.Expect(tag, MacroValue::Kind::kString, "a tag"); !s.ok()) return s;
    if (tag.text.empty()) return args.ErrorAt(tag, "a tag must not be empty");
    if (absl::Status s = args.Expect(rule, MacroValue::Kind::kName, "the second element of a pair");
        !s.ok()) {
      return s;
    }
    spec.tags.push_back({tag.text, builder.ReferenceRule(rule.text, rule.offset)});
  }
  absl::StatusOr<bool> loop = NamedBoolean(args, "loop_after_dispatch", true);
  if (!loop.ok()) return loop.status();
  spec.loop_after_dispatch = *loop;
  if (const MacroValue* value = args.Named("excludes")) {
    absl::StatusOr<std::vector<std::string>> excludes = StringList(args, *value, "excludes");
    if (!excludes.ok()) return excludes.status();
    spec.excludes = std::move(*excludes);
  }
  // XGrammar before March 2026: stop_eos (default true) and stop_str.
  absl::StatusOr<bool> stop_eos = NamedBoolean(args, "stop_eos", true);
  if (!stop_eos.ok()) return stop_eos.status();
  std::vector<std::string> stop_strings;
  if (const MacroValue* value = args.Named("stop_str")) {
    absl::StatusOr<std::vector<std::string>> stops = StringList(args, *value, "stop_str");
    if (!stops.ok()) return stops.status();
    stop_strings = std::move(*stops);
  }
  if (!*stop_eos && stop_strings.empty()) {
    return builder.ErrorAt(call.offset,
                           "TagDispatch(...) with stop_eos=false needs stop strings (stop_str)");
  }
  spec.excludes.insert(spec.excludes.end(), stop_strings.begin(), stop_strings.end());
  if (absl::Status s = CheckTagDispatch(spec); !s.ok()) {
    return builder.ErrorAt(call.offset, absl::StrCat("TagDispatch(...): ", s.message()));
  }
  Grammar& grammar = builder.grammar();
  const SourceLocation loc = builder.LocationOf(call.offset);
  ExprId dispatch = AddTagDispatch(grammar, spec, loc);
  if (stop_strings.empty()) return dispatch;
  std::vector<ExprId> ends;
  for (const std::string& stop : stop_strings) ends.push_back(grammar.AddLiteral(stop, loc));
  if (*stop_eos) ends.push_back(grammar.AddEmpty(loc));
  return grammar.AddSequence({dispatch, grammar.AddChoice(std::move(ends), loc)}, loc);
}

// Token-level macros: Token(ids...), ExcludeToken(ids...) and
// TokenTagDispatch((id, rule)..., loop_after_dispatch=, excludes=(ids...)).
// The ids are checked against a vocabulary when the grammar is compiled
// (masks/matcher.cc); here only their shape.
absl::StatusOr<ExprId> LowerTokenMacro(const MacroCall& call, MacroBuilder& builder) {
  Arguments args(call, builder);
  const bool dispatch = call.name == "TokenTagDispatch";
  if (absl::Status s = dispatch ? args.Check({"loop_after_dispatch", "excludes"}) : args.Check({});
      !s.ok()) {
    return s;
  }
  // A token: an id, or (our extension, as XGrammar's structural tags allow)
  // a string naming the token by its text.
  using TokenRef = TokenTagDispatchSpec::TokenRef;
  auto read_token = [&](const MacroValue& value, TokenRef* out) -> absl::Status {
    if (value.kind == MacroValue::Kind::kString) {
      if (value.text.empty()) return args.ErrorAt(value, "a token name must not be empty");
      out->names.push_back(value.text);
      return absl::OkStatus();
    }
    if (value.kind != MacroValue::Kind::kInteger) {
      return args.ErrorAt(value, absl::StrCat("a token must be an id or its text (a string), not ",
                                              std::string(KindName(value.kind))));
    }
    if (value.integer < 0) return args.ErrorAt(value, "a token id must not be negative");
    if (value.integer > kMaxTokenId) {
      return args.ErrorAt(value, absl::StrCat("token id ", value.integer, " is too large (at most ",
                                              kMaxTokenId, ")"));
    }
    out->ids.push_back(static_cast<uint32_t>(value.integer));
    return absl::OkStatus();
  };
  Grammar& grammar = builder.grammar();
  const SourceLocation loc = builder.LocationOf(call.offset);
  if (!dispatch) {
    // ExcludeToken() without ids (any one token) is zapgram's: XGrammar wants one.
    if (call.name == "Token" && args.positional().empty()) {
      return builder.ErrorAt(call.offset, "Token(...) needs at least one token id");
    }
    TokenRef tokens;
    for (const MacroValue* value : args.positional()) {
      if (absl::Status s = read_token(*value, &tokens); !s.ok()) return s;
    }
    return grammar.AddTokenIds(std::move(tokens.ids), call.name == "ExcludeToken", loc,
                               std::move(tokens.names));
  }
  TokenTagDispatchSpec spec;
  for (const MacroValue* value : args.positional()) {
    if (value->kind != MacroValue::Kind::kTuple || value->elements.size() != 2) {
      return args.ErrorAt(*value, "each positional argument must be a pair (token id, rule)");
    }
    TokenTagDispatchSpec::Tag tag;
    if (absl::Status s = read_token(value->elements[0], &tag.trigger); !s.ok()) return s;
    tag.trigger.loc = builder.LocationOf(value->elements[0].offset);
    const MacroValue& rule = value->elements[1];
    if (absl::Status s = args.Expect(rule, MacroValue::Kind::kName, "the second element of a pair");
        !s.ok()) {
      return s;
    }
    tag.body = builder.ReferenceRule(rule.text, rule.offset);
    spec.tags.push_back(std::move(tag));
  }
  absl::StatusOr<bool> loop = NamedBoolean(args, "loop_after_dispatch", true);
  if (!loop.ok()) return loop.status();
  spec.loop_after_dispatch = *loop;
  if (const MacroValue* excludes = args.Named("excludes")) {
    if (absl::Status s = args.Expect(*excludes, MacroValue::Kind::kTuple, "excludes"); !s.ok()) {
      return s;
    }
    for (const MacroValue& value : excludes->elements) {
      TokenRef one;
      if (absl::Status s = read_token(value, &one); !s.ok()) return s;
      for (const TokenTagDispatchSpec::Tag& tag : spec.tags) {
        if (tag.trigger.ids == one.ids && tag.trigger.names == one.names) {
          return args.ErrorAt(value, absl::StrCat("token ", value.kind == MacroValue::Kind::kString
                                                                ? absl::StrCat("\"", value.text, "\"")
                                                                : absl::StrCat("id ", value.integer),
                                                  " is both a trigger and excluded"));
        }
      }
      if (absl::Status s = read_token(value, &spec.excludes); !s.ok()) return s;
    }
  }
  return AddTokenTagDispatch(grammar, spec, loc);
}

// Whether the longer pattern `longer` ends with `shorter` (and is longer).
bool EndsWithProperly(std::string_view longer, std::string_view shorter) {
  return longer.size() > shorter.size() && longer.ends_with(shorter);
}

}  // namespace

bool IsXGrammarMacroName(std::string_view name) {
  return std::find(std::begin(kMacroNames), std::end(kMacroNames), name) != std::end(kMacroNames);
}

absl::StatusOr<ExprId> LowerXGrammarMacro(const MacroCall& call, MacroBuilder& builder) {
  if (call.name == "Regex") return LowerRegex(call, builder);
  if (call.name == "Substring") return LowerSubstring(call, builder);
  if (call.name == "TagDispatch") return LowerTagDispatch(call, builder);
  if (call.name == "Token" || call.name == "ExcludeToken" || call.name == "TokenTagDispatch") {
    return LowerTokenMacro(call, builder);
  }
  return builder.ErrorAt(call.offset,
                         absl::StrCat("XGrammar macro '", call.name, "(...)' is not supported"));
}

// The XGrammar pattern text pattern[begin, end) in our dialect. The range
// holds no lookaround (TranslateXGrammarRegex splits those out first).
absl::StatusOr<std::string> TranslatePatternRange(std::string_view pattern, size_t begin,
                                                  size_t end) {
  std::string out;
  bool in_class = false;
  size_t pos = begin;
  while (pos < end) {
    const size_t at = pos;
    const char c = pattern[pos];
    if (c == '\\') {
      if (pos + 1 >= end) return PatternError(at, "trailing backslash");
      const char e = pattern[pos + 1];
      pos += 2;
      switch (e) {
        case 'd': case 'D': case 'w': case 'W': case 's': case 'S':
        case 'n': case 't': case 'r': case 'f': case 'v': case 'a':
          out += '\\';
          out += e;
          break;
        case 'e':
          out += "\\x1B";
          break;
        case '0':
          out += "\\x00";
          break;
        case 'b':
          if (!in_class) return PatternError(at, "word boundary '\\b' is not supported");
          out += "\\x08";
          break;
        case 'B':
          return PatternError(at, "word boundary '\\B' is not supported");
        case 'p': case 'P':
          return PatternError(at, "Unicode property escapes are not supported in XGrammar regexes");
        case 'k': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8':
        case '9':
          return PatternError(at, "backreferences are not supported");
        case 'x':
          if (pos + 1 >= end || HexDigit(pattern[pos]) < 0 ||
              HexDigit(pattern[pos + 1]) < 0) {
            return PatternError(at, "'\\x' must be followed by two hex digits");
          }
          absl::StrAppend(&out, "\\x", AsAbsl(pattern.substr(pos, 2)));
          pos += 2;
          break;
        case 'u': {
          if (pos < end && pattern[pos] == '{') {
            const size_t close = pattern.find('}', pos + 1);
            if (close == std::string_view::npos || close == pos + 1 || close > pos + 7) {
              return PatternError(at, "'\\u{...}' must hold one to six hex digits");
            }
            uint32_t codepoint = 0;
            for (size_t k = pos + 1; k < close; ++k) {
              if (HexDigit(pattern[k]) < 0) {
                return PatternError(at, "'\\u{...}' must hold one to six hex digits");
              }
              codepoint = codepoint * 16 + static_cast<uint32_t>(HexDigit(pattern[k]));
            }
            if (codepoint > kMaxCodepoint) return PatternError(at, "'\\u{...}' is beyond U+10FFFF");
            absl::StrAppend(&out, "\\x{", AsAbsl(pattern.substr(pos + 1, close - pos - 1)), "}");
            pos = close + 1;
            break;
          }
          for (size_t k = 0; k < 4; ++k) {
            if (pos + k >= end || HexDigit(pattern[pos + k]) < 0) {
              return PatternError(at, "'\\u' must be followed by four hex digits");
            }
          }
          absl::StrAppend(&out, "\\u", AsAbsl(pattern.substr(pos, 4)));
          pos += 4;
          break;
        }
        case 'c': {
          const char letter = pos < end ? pattern[pos] : '\0';
          if (!((letter >= 'a' && letter <= 'z') || (letter >= 'A' && letter <= 'Z'))) {
            return PatternError(at, "'\\c' must be followed by a letter");
          }
          absl::StrAppend(&out, absl::StrFormat("\\x%02X", letter & 0x1F));
          ++pos;
          break;
        }
        default:
          if (static_cast<unsigned char>(e) >= 0x80) {
            // An escaped non-ASCII character is itself.
            const DecodedCodepoint ch = DecodeUtf8(pattern.substr(pos - 1));
            if (ch.length == 0) return PatternError(at, "invalid UTF-8 after a backslash");
            out.append(pattern.substr(pos - 1, ch.length));
            pos += ch.length - 1;
          } else if (IsAsciiAlnum(e)) {
            out += e;  // XGrammar matches an escaped letter without a meaning as the letter
          } else {
            out += '\\';
            out += e;
          }
      }
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      if (c == '[') out += '\\';
      out += c;
      ++pos;
      continue;
    }
    if (c == '[') {
      size_t content = pos + 1;
      if (content < end && pattern[content] == '^') ++content;
      if (content < end && pattern[content] == ']') {
        return PatternError(at, "an empty character class is not allowed");
      }
      out.append(pattern.substr(pos, content - pos));
      pos = content;
      in_class = true;
      continue;
    }
    if (c == '(' && pos + 1 < end && pattern[pos + 1] == '?') {
      const char modifier = pos + 2 < end ? pattern[pos + 2] : '\0';
      const char after = pos + 3 < end ? pattern[pos + 3] : '\0';
      if (modifier == ':') {
        out += "(?:";
        pos += 3;
      } else if (modifier == '=' || modifier == '!' ||
                 (modifier == '<' && (after == '=' || after == '!'))) {
        // FindLookaround takes every lookaround out of the ranges this reads.
        return PatternError(at, "a lookaround is not supported here");
      } else if (modifier == '<') {
        out += "(?<";
        pos += 3;
      } else if (modifier == 'P' && after == '<') {
        out += "(?P<";
        pos += 4;
      } else {
        return PatternError(at, absl::StrCat("group modifier '(?", std::string(1, modifier),
                                             "' is not supported"));
      }
      continue;
    }
    out += c;
    ++pos;
  }
  if (in_class) return PatternError(end, "unterminated character class");
  return out;
}

// A lookaround group at the top level of a pattern: (?=X), (?!X), (?<=X), (?<!X).
struct Lookaround {
  size_t start = 0;  // offset of its '('
  size_t body = 0;   // offset of X
  size_t close = 0;  // offset of its ')'
  bool ahead = true;
  bool negative = false;
};

// Finds the lookarounds of pattern[begin, end) (escapes and classes skipped).
// Only one, at the top level of a pattern without a top-level '|', has a
// meaning we can give exactly (see TranslateXGrammarRegex); anything else is
// an error at its place.
absl::StatusOr<std::optional<Lookaround>> FindLookaround(std::string_view pattern, size_t begin) {
  std::optional<Lookaround> found;
  std::vector<size_t> open;  // offsets of the open groups' '('
  std::optional<size_t> lookaround_open;  // index in `open` of an open lookaround
  bool in_class = false, top_alternation = false;
  for (size_t pos = begin; pos < pattern.size(); ++pos) {
    const char c = pattern[pos];
    if (c == '\\') {
      ++pos;
      continue;
    }
    if (in_class) {
      in_class = c != ']';
      continue;
    }
    if (c == '[') {
      in_class = true;
      if (pos + 1 < pattern.size() && pattern[pos + 1] == '^') ++pos;
      if (pos + 1 < pattern.size() && pattern[pos + 1] == ']') ++pos;  // a leading ] is literal
      continue;
    }
    if (c == '|' && open.empty()) top_alternation = true;
    if (c == ')') {
      if (open.empty()) return PatternError(pos, "unbalanced ')'");
      if (lookaround_open && *lookaround_open == open.size() - 1) {
        found->close = pos;
        lookaround_open.reset();
      }
      open.pop_back();
      continue;
    }
    if (c != '(') continue;
    const std::string_view rest = pattern.substr(pos);
    const bool ahead = rest.starts_with("(?=") || rest.starts_with("(?!");
    const bool behind = rest.starts_with("(?<=") || rest.starts_with("(?<!");
    if (ahead || behind) {
      if (!open.empty()) {
        return PatternError(pos, "a lookaround inside a group is not supported (only at the top "
                                 "level of the pattern)");
      }
      if (found) return PatternError(pos, "only one lookaround per pattern is supported");
      Lookaround la;
      la.start = pos;
      la.ahead = ahead;
      la.negative = rest[ahead ? 2 : 3] == '!';
      la.body = pos + (ahead ? 3 : 4);
      found = la;
      lookaround_open = open.size();
    }
    open.push_back(pos);
  }
  if (!open.empty()) return PatternError(open.back(), "unbalanced '('");
  if (found && top_alternation) {
    return PatternError(found->start, "a lookaround in a pattern with a top-level '|' is not "
                                      "supported");
  }
  return found;
}

// Whether every string of `rest` decides the lookahead X by itself: none is
// a prefix of a string of X without also starting with one. Then "the text
// after this point starts with X" means "the rest of this match is in XΣ*",
// whatever follows the Regex in the grammar.
absl::StatusOr<bool> LookaheadDecidedWithin(const std::string& rest, const std::string& x,
                                            uint32_t flags) {
  RegexLimits limits;
  limits.max_dfa_states = 1u << 12;
  absl::StatusOr<ByteDfa> rest_dfa = CompileRegex(rest, flags, limits);
  if (!rest_dfa.ok()) return rest_dfa.status();
  absl::StatusOr<ByteDfa> x_dfa = CompileRegex(x, flags, limits);
  if (!x_dfa.ok()) return x_dfa.status();
  absl::StatusOr<ByteDfa> x_then_any = CompileRegex(absl::StrCat(x, "[\\s\\S]*"), flags, limits);
  if (!x_then_any.ok()) return x_then_any.status();
  ByteDfa prefixes = *std::move(x_dfa);  // trimmed: every live state leads to a match
  for (uint32_t s = 1; s < prefixes.num_states(); ++s) prefixes.accepting[s] = 1;
  absl::StatusOr<ByteDfa> undecided = SubtractDfa(prefixes, *x_then_any, limits.max_dfa_states);
  if (!undecided.ok()) return undecided.status();
  absl::StatusOr<ByteDfa> both = IntersectDfas(*rest_dfa, *undecided, limits.max_dfa_states);
  if (!both.ok()) return both.status();
  return both->empty();
}

absl::StatusOr<TranslatedRegex> TranslateXGrammarRegex(std::string_view pattern,
                                                       std::optional<std::string_view> flags,
                                                       bool json_string) {
  bool fold_case = false;
  bool dot_all = !flags.has_value();  // without a flags argument `.` matches \n too
  if (flags) {
    for (char f : *flags) {
      if (f == 'i') {
        fold_case = true;
      } else if (f == 's') {
        dot_all = true;
      } else if (f != 'u') {
        return absl::InvalidArgumentError(absl::StrFormat(
            "regular-expression flag '%c' is not supported (flags: i s u)", f));
      }
    }
  }
  size_t pos = 0;
  if (pattern.starts_with("(?i)")) {
    fold_case = true;
    pos = 4;
  }
  TranslatedRegex result;
  if (fold_case) result.flags |= kRegexIgnoreCase;
  if (dot_all) result.flags |= kRegexDotAll;
  absl::StatusOr<std::optional<Lookaround>> lookaround = FindLookaround(pattern, pos);
  if (!lookaround.ok()) return lookaround.status();
  std::string out;
  if (!lookaround->has_value()) {
    absl::StatusOr<std::string> whole = TranslatePatternRange(pattern, pos, pattern.size());
    if (!whole.ok()) return whole.status();
    out = *std::move(whole);
  } else {
    // A (?=X) B  is  A (B ∩ XΣ*);  A (?!X) B  is  A (B \ XΣ*), when B alone
    // decides X (LookaheadDecidedWithin); otherwise what follows the Regex
    // in the grammar would decide it, and that is refused. XGrammar drops
    // lookarounds altogether, which would loosen the pattern.
    const Lookaround& la = **lookaround;
    if (!la.ahead) return PatternError(la.start, "lookbehind is not supported");
    absl::StatusOr<std::string> a = TranslatePatternRange(pattern, pos, la.start);
    if (!a.ok()) return a.status();
    absl::StatusOr<std::string> x = TranslatePatternRange(pattern, la.body, la.close);
    if (!x.ok()) return x.status();
    absl::StatusOr<std::string> b = TranslatePatternRange(pattern, la.close + 1, pattern.size());
    if (!b.ok()) return b.status();
    const std::string rest = absl::StrCat("(?a:", *b, ")");
    const std::string x_group = absl::StrCat("(?a:", *x, ")");
    absl::StatusOr<bool> decided = LookaheadDecidedWithin(rest, x_group, result.flags);
    if (!decided.ok()) return PatternError(la.start, std::string(decided.status().message()));
    if (!*decided) {
      return PatternError(la.start, absl::StrCat("lookahead '(?", la.negative ? "!" : "=",
                                                 "' looks past the end of the pattern's match (what "
                                                 "follows the Regex would decide it): not supported"));
    }
    out = la.negative ? absl::StrCat(*a, "(?&:", rest, "|(?~:", x_group, "[\\s\\S]*))")
                      : absl::StrCat(*a, "(?&:", rest, "|", x_group, "[\\s\\S]*)");
  }
  result.pattern = absl::StrCat("(?a:", out, ")");
  if (json_string) {
    result.pattern = absl::StrCat("(?&:", result.pattern, "|[^\"\\\\\\x00-\\x1F]*)");
  }
  return result;
}

std::string RegexQuote(std::string_view text) {
  std::string out;
  for (size_t k = 0; k < text.size(); ++k) {
    const auto byte = static_cast<unsigned char>(text[k]);
    if (IsAsciiAlnum(text[k]) || byte >= 0x80) {
      out += text[k];
    } else if (byte > 0x20 && byte < 0x7F) {
      out += '\\';
      out += text[k];
    } else {
      absl::StrAppend(&out, absl::StrFormat("\\x%02X", byte));
    }
  }
  return out;
}

std::string SubstringPattern(const std::vector<std::string>& chunks) {
  // suffixes[i] = c_i (c_i+1 (...)?)?, built from the last chunk.
  std::vector<std::string> suffixes(chunks.size());
  for (size_t i = chunks.size(); i-- > 0;) {
    suffixes[i] = RegexQuote(chunks[i]);
    if (i + 1 < chunks.size()) absl::StrAppend(&suffixes[i], "(?:", suffixes[i + 1], ")?");
  }
  std::string alternatives;
  for (size_t i = 0; i < suffixes.size(); ++i) {
    if (suffixes[i].empty()) continue;
    absl::StrAppend(&alternatives, alternatives.empty() ? "" : "|", suffixes[i]);
  }
  if (alternatives.empty()) return "";
  return absl::StrCat("(?:", alternatives, ")?");
}

absl::Status CheckTagDispatch(const TagDispatchSpec& spec) {
  for (const TagDispatchSpec::Tag& tag : spec.tags) {
    if (tag.trigger.empty()) return absl::InvalidArgumentError("a tag must not be empty");
  }
  for (const std::string& exclude : spec.excludes) {
    if (exclude.empty()) return absl::InvalidArgumentError("an excluded string must not be empty");
    for (const TagDispatchSpec::Tag& tag : spec.tags) {
      if (tag.trigger.starts_with(exclude)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the excluded string \"", exclude, "\" is a prefix of the tag \"", tag.trigger,
            "\", which could then never dispatch"));
      }
    }
  }
  return absl::OkStatus();
}

namespace {

// (?:P1|P2|...) over every tag and excluded string; "" when there is none.
std::string AnyPattern(const TagDispatchSpec& spec) {
  std::string alternatives;
  auto add = [&](std::string_view text) {
    absl::StrAppend(&alternatives, alternatives.empty() ? "" : "|", RegexQuote(text));
  };
  for (const TagDispatchSpec::Tag& tag : spec.tags) add(tag.trigger);
  for (const std::string& exclude : spec.excludes) add(exclude);
  return alternatives.empty() ? "" : absl::StrCat("(?:", alternatives, ")");
}

}  // namespace

std::string TagDispatchFreeTextPattern(const TagDispatchSpec& spec) {
  const std::string any = AnyPattern(spec);
  if (any.empty()) return absl::StrCat(kAnyCodepoint, "*");
  return absl::StrCat("(?~:", kAnyCodepoint, "*", any, kAnyCodepoint, "*)");
}

std::string TagDispatchTriggerPattern(const TagDispatchSpec& spec, size_t tag) {
  const std::string& trigger = spec.tags[tag].trigger;
  std::string pattern = absl::StrCat("(?&:", kAnyCodepoint, "*", RegexQuote(trigger), "|(?~:",
                                     kAnyCodepoint, "*", AnyPattern(spec), kAnyCodepoint, "+)");
  // A longer pattern ending here wins over this tag.
  auto exclude_longer = [&](std::string_view other) {
    if (EndsWithProperly(other, trigger)) {
      absl::StrAppend(&pattern, "|(?~:", kAnyCodepoint, "*", RegexQuote(other), ")");
    }
  };
  for (const TagDispatchSpec::Tag& other : spec.tags) exclude_longer(other.trigger);
  for (const std::string& exclude : spec.excludes) exclude_longer(exclude);
  return pattern + ")";
}

ExprId AddTokenTagDispatch(Grammar& grammar, const TokenTagDispatchSpec& spec,
                           SourceLocation loc) {
  // As XGrammar builds it (the free token excludes the triggers too):
  //   loop:    (ExcludeToken(T + E) | Token(t_1) body_1 | ...)*
  //   no loop: ExcludeToken(T + E)* (Token(t_1) body_1 | ...)?
  std::vector<uint32_t> excluded_ids = spec.excludes.ids;
  std::vector<std::string> excluded_names = spec.excludes.names;
  std::vector<ExprId> dispatches;
  for (const TokenTagDispatchSpec::Tag& tag : spec.tags) {
    excluded_ids.insert(excluded_ids.end(), tag.trigger.ids.begin(), tag.trigger.ids.end());
    excluded_names.insert(excluded_names.end(), tag.trigger.names.begin(), tag.trigger.names.end());
    dispatches.push_back(grammar.AddSequence(
        {grammar.AddTokenIds(tag.trigger.ids, /*exclude=*/false, tag.trigger.loc, tag.trigger.names),
         tag.body},
        loc));
  }
  const ExprId free_token = grammar.AddTokenIds(std::move(excluded_ids), /*exclude=*/true, loc,
                                                std::move(excluded_names));
  if (spec.loop_after_dispatch) {
    std::vector<ExprId> options = {free_token};
    options.insert(options.end(), dispatches.begin(), dispatches.end());
    return grammar.AddRepeat(grammar.AddChoice(std::move(options), loc), 0, kUnbounded, loc);
  }
  const ExprId free_text = grammar.AddRepeat(free_token, 0, kUnbounded, loc);
  if (dispatches.empty()) return free_text;
  return grammar.AddSequence(
      {free_text, grammar.AddRepeat(grammar.AddChoice(std::move(dispatches), loc), 0, 1, loc)}, loc);
}

ExprId AddTagDispatch(Grammar& grammar, const TagDispatchSpec& spec, SourceLocation loc) {
  const ExprId free_text = grammar.AddRegex(TagDispatchFreeTextPattern(spec), 0, loc);
  std::vector<ExprId> dispatches;
  for (size_t i = 0; i < spec.tags.size(); ++i) {
    const ExprId trigger = grammar.AddRegex(TagDispatchTriggerPattern(spec, i), 0, loc);
    dispatches.push_back(grammar.AddSequence({trigger, spec.tags[i].body}, loc));
  }
  if (dispatches.empty()) return free_text;
  if (!spec.loop_after_dispatch) {
    dispatches.insert(dispatches.begin(), free_text);
    return grammar.AddChoice(std::move(dispatches), loc);
  }
  const ExprId one = grammar.AddChoice(std::move(dispatches), loc);
  return grammar.AddSequence({grammar.AddRepeat(one, 0, kUnbounded, loc), free_text}, loc);
}

}  // namespace zapgram::grammar
