// llguidance's %json options -> JsonSchemaOptions (transforms/llguidance_json.h).
#include "transforms/llguidance_json.h"

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace zapgram::transforms {

absl::StatusOr<grammar::Grammar> LlguidanceJsonSchema(std::string_view schema_json, std::string_view where,
                                                      const JsonSchemaOptions& base) {
  JsonSchemaOptions options = base;
  options.compact = false;
  options.max_whitespace = kAnyWhitespace;
  options.member_order = MemberOrder::kSchema;
  options.any_spelling = false;
  options.lenient = false;
  // Ordered, so that re-writing the schema without "x-guidance" keeps the
  // order of `properties` (the order of members).
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(schema_json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError("the schema is not valid JSON");
  std::string text(schema_json);
  if (doc.is_object() && doc.contains("x-guidance")) {
    const nlohmann::ordered_json& x = doc["x-guidance"];
    if (!x.is_object()) return absl::InvalidArgumentError("\"x-guidance\" must be an object");
    for (const auto& [key, v] : x.items()) {
      auto bad = [&](std::string_view why) {
        return absl::InvalidArgumentError(absl::StrFormat("x-guidance.%s: %s", key, why));
      };
      if (key == "whitespace_flexible" || key == "lenient" || key == "coerce_one_of" ||
          key == "json_allow_general_unicode_escapes") {
        if (!v.is_boolean()) return bad("must be true or false");
        const bool on = v.get<bool>();
        if (key == "whitespace_flexible") {
          options.compact = !on;
        } else if (key == "lenient") {
          options.lenient = on;
        } else if (key == "json_allow_general_unicode_escapes" && on) {
          return bad("true is not supported (zapgram writes other characters raw, as llguidance's default)");
        }
      } else if (key == "item_separator" || key == "key_separator" || key == "json_allowed_escapes") {
        if (!v.is_string()) return bad("must be a string");
        const std::string want = key == "item_separator" ? "," : key == "key_separator" ? ":" : "nrbtf\\\"u";
        if (v.get<std::string>() != want) {
          return bad(absl::StrFormat("only the default \"%s\" is supported (zapgram's JSON Schema compiler has "
                                     "fixed separators and escapes)", want));
        }
      } else if (key == "whitespace_pattern") {
        return bad("is not supported: zapgram's JSON Schema compiler takes no whitespace regex "
                   "(whitespace_flexible true or false is)");
      } else {
        return bad("unknown option (llguidance's are whitespace_flexible, whitespace_pattern, item_separator, "
                   "key_separator, coerce_one_of, json_allowed_escapes, json_allow_general_unicode_escapes, "
                   "lenient)");
      }
    }
    doc.erase("x-guidance");
    text = doc.dump();
  }
  absl::StatusOr<JsonSchemaGrammar> g = JsonSchemaToGrammar(text, where, options);
  if (!g.ok()) return g.status();
  return std::move(g->grammar);
}

}  // namespace zapgram::transforms
