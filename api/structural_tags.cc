// Structural tags: free text with tool calls inside it.
//
// A structural-tag grammar (XGrammar's name; llama.cpp calls the same thing a
// lazy grammar with triggers) is a list of tags, each (begin, body, end), plus
// trigger strings. The text is free (any UTF-8 text) until a trigger occurs;
// from there it must go on as one of the tags whose begin starts with that
// trigger: the rest of the begin, a body under the tag's JSON Schema (or GBNF
// grammar), the end. Then free text again, and so on. It is built as an
// XGrammar TagDispatch (grammar/xgrammar_macros.h) whose rule for a trigger
// t is the choice of (begin minus t, body, end) over t's tags:
//
//   root ::= TagDispatch((t1, after_t1), (t2, after_t2), ...)
//   after_t1 ::= "<rest of begin 1>" tag0_root "<end 1>" | ...
//
// with each body's grammar appended under the prefix "tagK_"
// (grammar::AppendGrammar). A tag belongs to the shortest trigger its begin
// starts with (that one ends first, so it is the one that dispatches); a tag
// whose begin starts with no trigger could never occur and is an error, as is
// a trigger that starts no tag.
//
// Tokens. A begin, an end or a trigger may also name one token of the
// vocabulary, as {"token": ID} or {"token": "TEXT"} (XGrammar's TokenFormat:
// a special token such as <|python_tag|>, or Qwen's <tool_call> taken as
// its single id); a begin or an end may be a list of such parts and strings.
// Triggers are all strings or all tokens. With trigger tokens the free part
// is made of free *tokens* (XGrammar's TokenTagDispatch: any normal token
// but the triggers), each tag's begin starts with its trigger token, and
//   root ::= TokenTagDispatch((t1, after_t1), ...)
// Token parts become kTokenIds nodes, checked (ids) and resolved (texts)
// against the vocabulary when the grammar is compiled for one
// (masks/matcher.h); such a grammar cannot be used by `zapgram parse`.
//
// The input is JSON (GrammarFormat::kStructuralTags, `structural:PATH`):
//   {"tags": [{"begin": "<function=get_weather>", "schema": {...}, "end": "</function>"},
//             {"begin": "...", "grammar": "root ::= ...", "end": "..."}],
//    "triggers": ["<function="]}
// or a ready-made format for a list of tools (docs/structural_tags.md):
//   {"format": "llama3" | "qwen2_5" | "hermes",
//    "tools": [{"name": "get_weather", "parameters": {JSON Schema}}]}
//   llama3   {"name": "NAME", "parameters": ARGS}             trigger {"name":
//   qwen2_5  <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>
//   hermes   <tool_call>\n{"arguments": ARGS, "name": "NAME"}\n</tool_call>
//   (both trigger <tool_call>). Schemas use LoadOptions::schema (generation
//   by default). Errors name the JSON pointer of the offending member.
//
// Tests: tests/masks/matcher_test.cc (MatcherTagDispatch: masks against the
// brute force), tests/masks/token_terminals_test.cc (token triggers, begins
// and ends: masks against the brute force, errors), tests/c/c_api_test.c
// (the JSON text through the C API), tests/python/test_api.py.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "api/grammar_data.h"
#include "grammar/gbnf_reader.h"
#include "grammar/xgrammar_macros.h"
#include "nlohmann/json.hpp"
#include "transforms/ordered_json_reader.h"

namespace zapgram::internal {
namespace {

using Json = nlohmann::ordered_json;

// One piece of a begin or an end: text, or one token by id or by text.
struct Part {
  bool is_token = false;
  std::string text;  // the text, or the token's text when named so
  int64_t id = -1;   // a token by id
  bool SameToken(const Part& other) const {
    return is_token && other.is_token && id == other.id && text == other.text;
  }
};
using Parts = std::vector<Part>;

struct TagText {
  Parts begin;
  Parts end;
  const Json* schema = nullptr;  // one of schema / grammar
  std::string grammar;
  std::string pointer;  // "/tags/K"
};

absl::Status ErrorAt(std::string_view source, std::string_view pointer, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(absl::string_view(source.data(), source.size()),
                                                 ": ", absl::string_view(pointer.data(), pointer.size()),
                                                 ": ", absl::string_view(what.data(), what.size())));
}

// A JSON string member, or an error.
absl::StatusOr<std::string> StringMember(const Json& object, const char* key,
                                         std::string_view source, const std::string& pointer,
                                         bool allow_empty) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) {
    return ErrorAt(source, absl::StrCat(pointer, "/", key), "expected a string");
  }
  std::string value = it->get<std::string>();
  if (value.empty() && !allow_empty) {
    return ErrorAt(source, absl::StrCat(pointer, "/", key), "must not be empty");
  }
  return value;
}

// A string, a {"token": ...} object, or (with `list`) an array of those.
absl::StatusOr<Parts> ReadParts(const Json& value, std::string_view source, const std::string& pointer,
                                bool allow_empty, bool list) {
  Parts parts;
  if (value.is_string()) {
    if (value.get<std::string>().empty()) {
      if (allow_empty) return parts;
      return ErrorAt(source, pointer, "must not be empty");
    }
    parts.push_back({false, value.get<std::string>(), -1});
    return parts;
  }
  if (value.is_object()) {
    const auto token = value.find("token");
    if (token == value.end() || value.size() != 1) {
      return ErrorAt(source, pointer, "expected {\"token\": ID or \"TEXT\"}");
    }
    if (token->is_number_integer()) {
      const int64_t id = token->get<int64_t>();
      if (id < 0 || id > (int64_t{1} << 24) - 1) {
        return ErrorAt(source, pointer + "/token", "a token id must be in 0..16777215");
      }
      parts.push_back({true, "", id});
      return parts;
    }
    if (token->is_string() && !token->get<std::string>().empty()) {
      parts.push_back({true, token->get<std::string>(), -1});
      return parts;
    }
    return ErrorAt(source, pointer + "/token", "expected a token id or a non-empty token text");
  }
  if (value.is_array() && list) {
    for (size_t k = 0; k < value.size(); ++k) {
      absl::StatusOr<Parts> one =
          ReadParts(value[k], source, absl::StrCat(pointer, "/", k), /*allow_empty=*/true, false);
      if (!one.ok()) return one.status();
      parts.insert(parts.end(), one->begin(), one->end());
    }
    if (parts.empty() && !allow_empty) return ErrorAt(source, pointer, "must not be empty");
    return parts;
  }
  return ErrorAt(source, pointer,
                 list ? "expected a string, a {\"token\": ...} or an array of those"
                      : "expected a string or a {\"token\": ...}");
}

// The expression of `parts` (text literals and one-token nodes) in order.
grammar::ExprId AddParts(grammar::Grammar& g, const Parts& parts, size_t first = 0) {
  std::vector<grammar::ExprId> items;
  for (size_t k = first; k < parts.size(); ++k) {
    const Part& p = parts[k];
    if (!p.is_token) {
      items.push_back(g.AddLiteral(p.text));
    } else if (p.id >= 0) {
      items.push_back(g.AddTokenIds({static_cast<uint32_t>(p.id)}, /*exclude=*/false));
    } else {
      items.push_back(g.AddTokenIds({}, /*exclude=*/false, {}, {p.text}));
    }
  }
  return g.AddSequence(std::move(items));
}

// The tags and triggers of a ready-made format for `tools`.
absl::Status ExpandFormat(const Json& spec, std::string_view source, std::vector<TagText>* tags,
                          std::vector<Part>* triggers) {
  const std::string format = spec.at("format").is_string() ? spec.at("format").get<std::string>() : "";
  const auto tools = spec.find("tools");
  if (tools == spec.end() || !tools->is_array() || tools->empty()) {
    return ErrorAt(source, "/tools", "expected a non-empty array of {\"name\", \"parameters\"}");
  }
  if (format == "llama3") {
    triggers->push_back({false, "{\"name\": ", -1});
  } else if (format == "qwen2_5" || format == "hermes") {
    triggers->push_back({false, "<tool_call>", -1});
  } else {
    return ErrorAt(source, "/format",
                   absl::StrCat("unknown format '", format, "' (llama3, qwen2_5, hermes)"));
  }
  for (size_t k = 0; k < tools->size(); ++k) {
    const Json& tool = (*tools)[k];
    const std::string pointer = absl::StrCat("/tools/", k);
    if (!tool.is_object()) return ErrorAt(source, pointer, "expected an object");
    absl::StatusOr<std::string> name = StringMember(tool, "name", source, pointer, false);
    if (!name.ok()) return name.status();
    const auto parameters = tool.find("parameters");
    if (parameters == tool.end() || !(parameters->is_object() || parameters->is_boolean())) {
      return ErrorAt(source, pointer + "/parameters", "expected a JSON Schema");
    }
    const std::string quoted = Json(*name).dump();
    TagText tag;
    tag.schema = &*parameters;
    tag.pointer = pointer;
    std::string begin, end;
    if (format == "llama3") {
      begin = absl::StrCat("{\"name\": ", quoted, ", \"parameters\": ");
      end = "}";
    } else if (format == "qwen2_5") {
      begin = absl::StrCat("<tool_call>\n{\"name\": ", quoted, ", \"arguments\": ");
      end = "}\n</tool_call>";
    } else {
      begin = "<tool_call>\n{\"arguments\": ";
      end = absl::StrCat(", \"name\": ", quoted, "}\n</tool_call>");
    }
    tag.begin = {{false, std::move(begin), -1}};
    tag.end = {{false, std::move(end), -1}};
    tags->push_back(std::move(tag));
  }
  return absl::OkStatus();
}

absl::Status ReadExplicit(const Json& spec, std::string_view source, std::vector<TagText>* tags,
                          std::vector<Part>* triggers) {
  const auto tag_list = spec.find("tags");
  if (tag_list == spec.end() || !tag_list->is_array()) {
    return ErrorAt(source, "/tags", "expected an array of {\"begin\", \"schema\" or \"grammar\", \"end\"}");
  }
  for (size_t k = 0; k < tag_list->size(); ++k) {
    const Json& item = (*tag_list)[k];
    TagText tag;
    tag.pointer = absl::StrCat("/tags/", k);
    if (!item.is_object()) return ErrorAt(source, tag.pointer, "expected an object");
    const auto begin_member = item.find("begin");
    const auto end_member = item.find("end");
    if (begin_member == item.end()) return ErrorAt(source, tag.pointer + "/begin", "missing");
    if (end_member == item.end()) return ErrorAt(source, tag.pointer + "/end", "missing");
    absl::StatusOr<Parts> begin = ReadParts(*begin_member, source, tag.pointer + "/begin", false, true);
    if (!begin.ok()) return begin.status();
    absl::StatusOr<Parts> end = ReadParts(*end_member, source, tag.pointer + "/end", true, true);
    if (!end.ok()) return end.status();
    tag.begin = *std::move(begin);
    tag.end = *std::move(end);
    const bool has_schema = item.contains("schema");
    if (has_schema == item.contains("grammar")) {
      return ErrorAt(source, tag.pointer, "expected exactly one of \"schema\" and \"grammar\"");
    }
    if (has_schema) {
      tag.schema = &item.at("schema");
    } else {
      absl::StatusOr<std::string> text = StringMember(item, "grammar", source, tag.pointer, false);
      if (!text.ok()) return text.status();
      tag.grammar = *std::move(text);
    }
    tags->push_back(std::move(tag));
  }
  const auto trigger_list = spec.find("triggers");
  if (trigger_list == spec.end() || !trigger_list->is_array()) {
    return ErrorAt(source, "/triggers", "expected an array of strings");
  }
  for (size_t k = 0; k < trigger_list->size(); ++k) {
    const std::string pointer = absl::StrCat("/triggers/", k);
    absl::StatusOr<Parts> trigger = ReadParts((*trigger_list)[k], source, pointer, false, false);
    if (!trigger.ok()) return trigger.status();
    if (!triggers->empty() && trigger->front().is_token != triggers->front().is_token) {
      return ErrorAt(source, pointer, "triggers must be all strings or all tokens");
    }
    triggers->push_back(trigger->front());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<grammar::Grammar> ReadStructuralTags(std::string_view text,
                                                    std::string_view source_name,
                                                    const SchemaOptions& schema,
                                                    std::vector<std::string>* warnings,
                                                    const CompileLimits& limits) {
  const Json spec = transforms::ReadOrderedJson(text);
  if (spec.is_discarded() || !spec.is_object()) {
    return ErrorAt(source_name, "", "expected a JSON object with \"tags\" and \"triggers\", or "
                                    "\"format\" and \"tools\"");
  }
  std::vector<TagText> tags;
  std::vector<Part> triggers;
  absl::Status read = spec.contains("format") ? ExpandFormat(spec, source_name, &tags, &triggers)
                                              : ReadExplicit(spec, source_name, &tags, &triggers);
  if (!read.ok()) return read;
  const bool token_triggers = !triggers.empty() && triggers.front().is_token;

  grammar::Grammar g;
  g.source_name = std::string(source_name);
  g.rules.push_back({"root", 0, {1, 1}});
  std::vector<std::vector<grammar::ExprId>> per_trigger(triggers.size());
  for (size_t k = 0; k < tags.size(); ++k) {
    const TagText& tag = tags[k];
    const Part& first = tag.begin.front();
    size_t owner = triggers.size();
    for (size_t t = 0; t < triggers.size(); ++t) {
      const bool starts = token_triggers ? first.SameToken(triggers[t])
                                         : !first.is_token && first.text.starts_with(triggers[t].text);
      if (starts && (owner == triggers.size() || triggers[t].text.size() < triggers[owner].text.size())) {
        owner = t;
      }
    }
    if (owner == triggers.size()) {
      return ErrorAt(source_name, tag.pointer + "/begin",
                     token_triggers ? "does not begin with one of the trigger tokens (named the same "
                                      "way: by the same id or the same text), so it never occurs"
                     : first.is_token
                         ? "begins with a token: a tag's begin starts with its trigger, here a string"
                         : absl::StrCat("\"", first.text, "\" starts with no trigger, so it never occurs"));
    }
    const std::string body_source = std::string(source_name) + tag.pointer;
    absl::StatusOr<grammar::Grammar> body =
        tag.schema != nullptr
            ? ReadSchemaText(tag.schema->dump(), body_source, schema, /*draft7=*/false, warnings, limits)
            : grammar::ReadGbnf(tag.grammar, body_source);
    if (!body.ok()) return body.status();
    absl::StatusOr<grammar::RuleId> body_root =
        grammar::AppendGrammar(g, *body, absl::StrCat("tag", k, "_"));
    if (!body_root.ok()) return body_root.status();
    // What follows the trigger: the rest of the begin, the body, the end.
    std::vector<grammar::ExprId> after;
    if (!token_triggers) after.push_back(g.AddLiteral(first.text.substr(triggers[owner].text.size())));
    after.push_back(AddParts(g, tag.begin, 1));
    after.push_back(g.AddRuleRef(*body_root));
    after.push_back(AddParts(g, tag.end));
    per_trigger[owner].push_back(g.AddSequence(std::move(after)));
  }
  for (size_t t = 0; t < triggers.size(); ++t) {
    if (per_trigger[t].empty()) {
      return ErrorAt(source_name, absl::StrCat("/triggers/", t),
                     triggers[t].is_token ? std::string("no tag begins with this token")
                                          : absl::StrCat("no tag begins with \"", triggers[t].text, "\""));
    }
  }
  if (token_triggers) {
    grammar::TokenTagDispatchSpec dispatch;
    for (size_t t = 0; t < triggers.size(); ++t) {
      grammar::TokenTagDispatchSpec::Tag tag;
      if (triggers[t].id >= 0) {
        tag.trigger.ids.push_back(static_cast<uint32_t>(triggers[t].id));
      } else {
        tag.trigger.names.push_back(triggers[t].text);
      }
      tag.body = g.AddChoice(std::move(per_trigger[t]));
      dispatch.tags.push_back(std::move(tag));
    }
    g.rules[0].body = grammar::AddTokenTagDispatch(g, dispatch);
  } else {
    grammar::TagDispatchSpec dispatch;
    for (size_t t = 0; t < triggers.size(); ++t) {
      dispatch.tags.push_back({triggers[t].text, g.AddChoice(std::move(per_trigger[t]))});
    }
    if (absl::Status s = grammar::CheckTagDispatch(dispatch); !s.ok()) {
      return ErrorAt(source_name, "/triggers", std::string(s.message()));
    }
    g.rules[0].body = grammar::AddTagDispatch(g, dispatch);
  }
  if (absl::Status s = g.Validate(); !s.ok()) return s;
  return g;
}

}  // namespace zapgram::internal
