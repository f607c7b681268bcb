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
// Tests: tests/api/structural_tags_test.cc (languages, formats, errors),
// tests/masks/tag_dispatch_mask_test.cc (masks against the brute force).
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

namespace zapgram::internal {
namespace {

using Json = nlohmann::ordered_json;

struct TagText {
  std::string begin;
  std::string end;
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

// The tags and triggers of a ready-made format for `tools`.
absl::Status ExpandFormat(const Json& spec, std::string_view source, std::vector<TagText>* tags,
                          std::vector<std::string>* triggers) {
  const std::string format = spec.at("format").is_string() ? spec.at("format").get<std::string>() : "";
  const auto tools = spec.find("tools");
  if (tools == spec.end() || !tools->is_array() || tools->empty()) {
    return ErrorAt(source, "/tools", "expected a non-empty array of {\"name\", \"parameters\"}");
  }
  if (format == "llama3") {
    triggers->push_back("{\"name\": ");
  } else if (format == "qwen2_5" || format == "hermes") {
    triggers->push_back("<tool_call>");
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
    if (format == "llama3") {
      tag.begin = absl::StrCat("{\"name\": ", quoted, ", \"parameters\": ");
      tag.end = "}";
    } else if (format == "qwen2_5") {
      tag.begin = absl::StrCat("<tool_call>\n{\"name\": ", quoted, ", \"arguments\": ");
      tag.end = "}\n</tool_call>";
    } else {
      tag.begin = "<tool_call>\n{\"arguments\": ";
      tag.end = absl::StrCat(", \"name\": ", quoted, "}\n</tool_call>");
    }
    tags->push_back(std::move(tag));
  }
  return absl::OkStatus();
}

absl::Status ReadExplicit(const Json& spec, std::string_view source, std::vector<TagText>* tags,
                          std::vector<std::string>* triggers) {
  const auto tag_list = spec.find("tags");
  if (tag_list == spec.end() || !tag_list->is_array()) {
    return ErrorAt(source, "/tags", "expected an array of {\"begin\", \"schema\" or \"grammar\", \"end\"}");
  }
  for (size_t k = 0; k < tag_list->size(); ++k) {
    const Json& item = (*tag_list)[k];
    TagText tag;
    tag.pointer = absl::StrCat("/tags/", k);
    if (!item.is_object()) return ErrorAt(source, tag.pointer, "expected an object");
    absl::StatusOr<std::string> begin = StringMember(item, "begin", source, tag.pointer, false);
    if (!begin.ok()) return begin.status();
    absl::StatusOr<std::string> end = StringMember(item, "end", source, tag.pointer, true);
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
    const Json& trigger = (*trigger_list)[k];
    if (!trigger.is_string() || trigger.get<std::string>().empty()) {
      return ErrorAt(source, absl::StrCat("/triggers/", k), "expected a non-empty string");
    }
    triggers->push_back(trigger.get<std::string>());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<grammar::Grammar> ReadStructuralTags(std::string_view text,
                                                    std::string_view source_name,
                                                    const SchemaOptions& schema,
                                                    std::vector<std::string>* warnings) {
  const Json spec = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (spec.is_discarded() || !spec.is_object()) {
    return ErrorAt(source_name, "", "expected a JSON object with \"tags\" and \"triggers\", or "
                                    "\"format\" and \"tools\"");
  }
  std::vector<TagText> tags;
  std::vector<std::string> triggers;
  absl::Status read = spec.contains("format") ? ExpandFormat(spec, source_name, &tags, &triggers)
                                              : ReadExplicit(spec, source_name, &tags, &triggers);
  if (!read.ok()) return read;

  grammar::Grammar g;
  g.source_name = std::string(source_name);
  g.rules.push_back({"root", 0, {1, 1}});
  std::vector<std::vector<grammar::ExprId>> per_trigger(triggers.size());
  for (size_t k = 0; k < tags.size(); ++k) {
    const TagText& tag = tags[k];
    size_t owner = triggers.size();
    for (size_t t = 0; t < triggers.size(); ++t) {
      if (tag.begin.starts_with(triggers[t]) &&
          (owner == triggers.size() || triggers[t].size() < triggers[owner].size())) {
        owner = t;
      }
    }
    if (owner == triggers.size()) {
      return ErrorAt(source_name, tag.pointer + "/begin",
                     absl::StrCat("\"", tag.begin, "\" starts with no trigger, so it never occurs"));
    }
    const std::string body_source = std::string(source_name) + tag.pointer;
    absl::StatusOr<grammar::Grammar> body =
        tag.schema != nullptr
            ? ReadSchemaText(tag.schema->dump(), body_source, schema, /*draft7=*/false, warnings)
            : grammar::ReadGbnf(tag.grammar, body_source);
    if (!body.ok()) return body.status();
    absl::StatusOr<grammar::RuleId> body_root =
        grammar::AppendGrammar(g, *body, absl::StrCat("tag", k, "_"));
    if (!body_root.ok()) return body_root.status();
    per_trigger[owner].push_back(g.AddSequence({g.AddLiteral(tag.begin.substr(triggers[owner].size())),
                                                g.AddRuleRef(*body_root), g.AddLiteral(tag.end)}));
  }
  grammar::TagDispatchSpec dispatch;
  for (size_t t = 0; t < triggers.size(); ++t) {
    if (per_trigger[t].empty()) {
      return ErrorAt(source_name, absl::StrCat("/triggers/", t),
                     absl::StrCat("no tag begins with \"", triggers[t], "\""));
    }
    dispatch.tags.push_back({triggers[t], g.AddChoice(std::move(per_trigger[t]))});
  }
  if (absl::Status s = grammar::CheckTagDispatch(dispatch); !s.ok()) {
    return ErrorAt(source_name, "/triggers", std::string(s.message()));
  }
  g.rules[0].body = grammar::AddTagDispatch(g, dispatch);
  if (absl::Status s = g.Validate(); !s.ok()) return s;
  return g;
}

}  // namespace zapgram::internal
