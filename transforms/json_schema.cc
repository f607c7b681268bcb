// JSON Schema -> grammar IR: the entry point, the document index and the
// rule worklist.
//
// A schema document is read once (nlohmann, ordered so that `properties`
// keep their order) and indexed by one walk with an explicit stack: the JSON
// pointer of every schema node (for messages and rule names), the base URI
// in force at each node (`$id` changes it), every resource (`$id`) and
// every anchor (`$anchor`, draft-07's `$id: "#name"`). `$ref` resolution
// (ResolveRef) joins the reference to the base URI, finds the resource,
// then follows a JSON pointer fragment or an anchor. References outside the
// document (http://..., the meta-schemas) are refused with an error naming
// the reference: no network access.
//
// Conversion is a worklist over *conjunctions* (json_schema_internal.h):
// RuleFor(conj) hands out a rule id on first use and queues the
// conjunction; Run pops the queue and builds each rule's body
// (json_schema_build.cc), which may queue more. Recursive references hence
// become recursive rules, each conjunction is built once (a 1,000-deep
// chain of $defs makes 1,000 rules), and no C++ recursion follows the
// schema's depth.
//
// Tests: tests/transforms/json_schema_test.cc (units, golden dumps, scale),
// tests/data/jsonschema_suite_test.cc, tests/data/maskbench_test.cc.
#include "transforms/json_schema.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "transforms/json_schema_internal.h"
#include "transforms/ordered_json_reader.h"

namespace zapgram::transforms {
namespace json_schema_internal {
namespace {

constexpr std::string_view kDefaultBase = "zapgram:schema";

std::string EscapePointerToken(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

bool HasScheme(std::string_view uri) {
  if (uri.empty() || !absl::ascii_isalpha(static_cast<unsigned char>(uri[0]))) return false;
  for (size_t i = 1; i < uri.size(); ++i) {
    const char c = uri[i];
    if (c == ':') return true;
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
      return false;
    }
  }
  return false;
}

std::string StripFragment(std::string_view uri) {
  return std::string(uri.substr(0, std::min(uri.size(), uri.find('#'))));
}

// Removes "." and ".." segments from the path of an absolute URI.
std::string RemoveDotSegments(const std::string& uri) {
  const size_t scheme_end = uri.find("://");
  const size_t path_start =
      scheme_end == std::string::npos ? uri.find(':') + 1 : uri.find('/', scheme_end + 3);
  if (path_start == std::string::npos || path_start >= uri.size()) return uri;
  std::vector<std::string> segments;
  std::string path = uri.substr(path_start);
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    std::string seg = path.substr(pos, next - pos);
    if (seg == "..") {
      if (segments.size() > 1) segments.pop_back();
    } else if (seg != ".") {
      segments.push_back(seg);
    }
    pos = next + 1;
  }
  std::string out = uri.substr(0, path_start);
  for (size_t i = 0; i < segments.size(); ++i) {
    if (i > 0) out += "/";
    out += segments[i];
  }
  return out;
}

// RFC 3986 reference resolution, enough for schema identifiers.
std::string ResolveUri(std::string_view base, std::string_view ref) {
  if (HasScheme(ref)) return RemoveDotSegments(std::string(ref));
  const std::string base_doc = StripFragment(base);
  if (ref.empty()) return base_doc;
  if (ref[0] == '#') return absl::StrCat(base_doc, std::string(ref));
  const size_t scheme_end = base_doc.find("://");
  if (ref.substr(0, 2) == "//") {
    return RemoveDotSegments(absl::StrCat(base_doc.substr(0, base_doc.find(':') + 1), std::string(ref)));
  }
  if (ref[0] == '/') {
    if (scheme_end == std::string::npos) {
      return absl::StrCat(base_doc.substr(0, base_doc.find(':') + 1), std::string(ref));
    }
    const size_t path = base_doc.find('/', scheme_end + 3);
    return RemoveDotSegments(absl::StrCat(base_doc.substr(0, path), std::string(ref)));
  }
  const size_t slash = base_doc.rfind('/');
  if (slash == std::string::npos || (scheme_end != std::string::npos && slash < scheme_end + 3)) {
    if (scheme_end != std::string::npos) return RemoveDotSegments(absl::StrCat(base_doc, "/", std::string(ref)));
    return absl::StrCat(base_doc.substr(0, base_doc.find(':') + 1), std::string(ref));
  }
  return RemoveDotSegments(absl::StrCat(base_doc.substr(0, slash + 1), std::string(ref)));
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() &&
        absl::ascii_isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        absl::ascii_isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// How a keyword holds subschemas: the index walks only into these (an
// `$id` inside `enum`, `const` or an unknown keyword identifies nothing).
enum class Holds { kNothing, kSchema, kSchemaMap, kSchemaArray };
Holds SubschemasOf(std::string_view key, const Json& value) {
  if (key == "properties" || key == "patternProperties" || key == "$defs" ||
      key == "definitions" || key == "dependentSchemas" || key == "dependencies") {
    return Holds::kSchemaMap;
  }
  if (key == "allOf" || key == "anyOf" || key == "oneOf" || key == "prefixItems") {
    return Holds::kSchemaArray;
  }
  if (key == "items") return value.is_array() ? Holds::kSchemaArray : Holds::kSchema;
  if (key == "additionalItems" || key == "additionalProperties" || key == "propertyNames" ||
      key == "contains" || key == "not" || key == "if" || key == "then" || key == "else" ||
      key == "unevaluatedItems" || key == "unevaluatedProperties" || key == "contentSchema") {
    return Holds::kSchema;
  }
  return Holds::kNothing;
}

}  // namespace

std::string RuleNameFor(std::string_view pointer) {
  std::string name;
  for (char c : pointer) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(c))) {
      name.push_back(c);
    } else if (!name.empty() && name.back() != '-') {
      name.push_back('-');
    }
    if (name.size() >= 48) break;
  }
  while (!name.empty() && name.back() == '-') name.pop_back();
  return name.empty() ? "schema" : name;
}


Converter::Converter(const Json& document, std::string_view source_name,
                     const JsonSchemaOptions& options)
    : document_(document), options_(options) {
  grammar_.source_name = std::string(source_name);
}

Conj Converter::MakeConj(std::vector<ConjItem> items) {
  auto order = [this](const Json* node) {
    return order_of_.try_emplace(node, static_cast<uint32_t>(order_of_.size())).first->second;
  };
  std::vector<std::pair<std::pair<uint32_t, uint8_t>, ConjItem>> keyed;
  keyed.reserve(items.size());
  for (const ConjItem& item : items) keyed.push_back({{order(item.node), item.skip}, item});
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  Conj out;
  out.reserve(keyed.size());
  for (const auto& [key, item] : keyed) {
    if (out.empty() || !(out.back() == item)) out.push_back(item);
  }
  return out;
}

std::string Converter::PointerOf(const Json* node) const {
  auto it = pointer_of_.find(node);
  return it == pointer_of_.end() ? std::string("#") : it->second;
}

void Converter::IndexDocument() {
  struct Task {
    const Json* node;
    std::string pointer;
    std::string base;
  };
  std::vector<Task> stack = {{&document_, "#", std::string(kDefaultBase)}};
  order_of_.emplace(&document_, 0);
  resources_[std::string(kDefaultBase)] = &document_;
  while (!stack.empty()) {
    Task t = std::move(stack.back());
    stack.pop_back();
    const Json& node = *t.node;
    pointer_of_.emplace(t.node, t.pointer);
    if (node.is_object()) {
      std::string base = t.base;
      auto id = node.find(id_keyword_);
      if (id != node.end() && id->is_string() && !id->get_ref<const std::string&>().empty() &&
          !(legacy_ref_ && node.contains("$ref"))) {
        const std::string resolved = ResolveUri(base, id->get_ref<const std::string&>());
        const size_t hash = resolved.find('#');
        if (hash != std::string::npos && hash + 1 < resolved.size()) {  // draft-07 "#name"
          anchors_[resolved] = t.node;
        }
        if (id->get_ref<const std::string&>()[0] != '#') {
          base = StripFragment(resolved);
          resources_[base] = t.node;
        }
      }
      for (const char* keyword : {"$anchor", "$dynamicAnchor"}) {
        auto anchor = node.find(keyword);
        if (anchor != node.end() && anchor->is_string()) {
          anchors_.emplace(absl::StrCat(base, "#", anchor->get<std::string>()), t.node);
        }
      }
      base_uri_of_.emplace(t.node, base);
      const size_t first_child = stack.size();
      for (auto it = node.begin(); it != node.end(); ++it) {
        const Holds holds = SubschemasOf(it.key(), *it);
        if (holds == Holds::kNothing) continue;
        const std::string at = absl::StrCat(t.pointer, "/", EscapePointerToken(it.key()));
        if (holds == Holds::kSchema) {
          stack.push_back({&*it, at, base});
        } else if (holds == Holds::kSchemaMap && it->is_object()) {
          for (auto c = it->begin(); c != it->end(); ++c) {
            stack.push_back({&*c, absl::StrCat(at, "/", EscapePointerToken(c.key())), base});
          }
        } else if (holds == Holds::kSchemaArray && it->is_array()) {
          for (size_t i = 0; i < it->size(); ++i) stack.push_back({&(*it)[i], absl::StrCat(at, "/", i), base});
        }
      }
      // Numbered when found, so siblings keep the order they are written in.
      for (size_t i = first_child; i < stack.size(); ++i) {
        order_of_.try_emplace(stack[i].node, static_cast<uint32_t>(order_of_.size()));
      }
    }
  }
}

absl::StatusOr<const Json*> Converter::ResolveRef(const Json* from, const std::string& ref) const {
  auto base_it = base_uri_of_.find(from);
  const std::string base = base_it == base_uri_of_.end() ? std::string(kDefaultBase) : base_it->second;
  const std::string target = ResolveUri(base, ref);
  const size_t hash = target.find('#');
  const std::string doc = target.substr(0, std::min(hash, target.size()));
  const std::string fragment = hash == std::string::npos ? "" : PercentDecode(target.substr(hash + 1));
  auto resource = resources_.find(doc);
  if (resource == resources_.end()) {
    return absl::UnimplementedError(absl::StrFormat(
        "unsupported: $ref at %s (reference '%s' leaves the schema document; remote "
        "references are refused)",
        PointerOf(from), ref));
  }
  if (fragment.empty()) return resource->second;
  if (fragment[0] != '/') {
    auto anchor = anchors_.find(absl::StrCat(doc, "#", fragment));
    if (anchor == anchors_.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("$ref at %s: no anchor '%s' in the schema", PointerOf(from), ref));
    }
    return anchor->second;
  }
  const Json* node = resource->second;
  size_t pos = 1;
  while (pos <= fragment.size()) {
    size_t next = fragment.find('/', pos);
    if (next == std::string::npos) next = fragment.size();
    std::string token;
    for (size_t i = pos; i < next; ++i) {
      if (fragment[i] == '~' && i + 1 < next && (fragment[i + 1] == '0' || fragment[i + 1] == '1')) {
        token.push_back(fragment[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        token.push_back(fragment[i]);
      }
    }
    const Json* child = nullptr;
    if (node->is_object()) {
      auto it = node->find(token);
      if (it != node->end()) child = &*it;
    } else if (node->is_array() && !token.empty() &&
               std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
               token.size() < 10 && std::stoul(token) < node->size()) {
      child = &(*node)[std::stoul(token)];
    }
    if (child == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "$ref at %s: '%s' names nothing in the schema (no '%s')", PointerOf(from), ref, token));
    }
    node = child;
    pos = next + 1;
  }
  return node;
}

grammar::RuleId Converter::RuleFor(const Conj& conj) {
  auto it = rule_of_.find(conj);
  if (it != rule_of_.end()) return it->second;
  std::string name = conj.empty() ? "any" : RuleNameFor(PointerOf(conj[0].node));
  if (conj.size() > 1) name += "-and";
  if (!conj.empty() && conj[0].skip != 0) name += "-alt";
  const grammar::RuleId id = NewRule(name, 0);
  rule_of_.emplace(conj, id);
  pending_.push_back({conj, id});
  return id;
}

void Converter::Ignored(std::string_view keyword, std::string_view pointer, std::string_view why) {
  std::string key = absl::StrCat(std::string(keyword), "@", std::string(pointer));
  if (warned_.insert(key).second) {
    warnings_.push_back({std::string(keyword), std::string(pointer), std::string(why), false});
  }
}

absl::Status Converter::Unsupported(std::string_view keyword, std::string_view pointer,
                                    std::string_view why) {
  if (!options_.lenient) {
    return absl::UnimplementedError(absl::StrFormat(
        "unsupported: %s at %s (%s; lenient mode drops it with a warning)", keyword, pointer, why));
  }
  std::string key = absl::StrCat(std::string(keyword), "@", std::string(pointer));
  if (warned_.insert(key).second) {
    warnings_.push_back({std::string(keyword), std::string(pointer), std::string(why)});
  }
  return absl::OkStatus();
}

bool Converter::KeywordExists(std::string_view key) const {
  // Keywords a draft did not have yet are unknown words there, which
  // validators of that draft ignore.
  if (draft_ < 6 && (key == "const" || key == "contains" || key == "propertyNames")) return false;
  if (draft_ < 7 && (key == "if" || key == "then" || key == "else")) return false;
  return true;
}

absl::StatusOr<JsonSchemaGrammar> Converter::Run() {
  legacy_ref_ = options_.draft == JsonSchemaDraft::kDraft7;
  if (legacy_ref_) draft_ = 7;
  if (document_.is_object()) {
    auto schema = document_.find("$schema");
    if (schema != document_.end() && schema->is_string()) {
      const std::string& uri = schema->get_ref<const std::string&>();
      legacy_ref_ = uri.find("draft-0") != std::string::npos;
      for (const auto& [name, number] : {std::pair<const char*, int>{"draft-03", 3},
                                         {"draft-04", 4}, {"draft-06", 6}, {"draft-07", 7}}) {
        if (uri.find(name) != std::string::npos) draft_ = number;
      }
      // Draft-04 and earlier spell $id as `id` (plain-name fragments too).
      id_keyword_ = uri.find("draft-04") != std::string::npos ||
                            uri.find("draft-03") != std::string::npos
                        ? "id"
                        : "$id";
    }
  } else if (!document_.is_boolean()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: a JSON Schema is an object or a boolean, not %s", grammar_.source_name,
        document_.type_name()));
  }
  IndexDocument();
  grammar_.rules.push_back({"root", 0, {}});
  rule_names_.insert("root");
  grammar_.root = 0;
  grammar_.rules[0].body = RefTo(&document_);
  if (!options_.compact && options_.max_whitespace == kAnyWhitespace) {
    // RFC 8259: JSON-text = ws value ws.
    grammar_.rules[0].body = grammar_.AddSequence({Ws(), grammar_.rules[0].body, Ws()});
  }
  while (!pending_.empty()) {
    if (grammar_.rules.size() > options_.max_rules) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s: the grammar needs more than max_rules = %d rules", grammar_.source_name,
          options_.max_rules));
    }
    // Records only (not their strings' and vectors' heap): checked per rule
    // in constant time; the compile measures the whole IR afterwards.
    const size_t bytes = grammar_.exprs.size() * sizeof(grammar::Expr) +
                         grammar_.rules.size() * sizeof(grammar::Rule);
    if (bytes > options_.max_grammar_bytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s: the grammar outgrows max_grammar_bytes = %d (%d rules, %d expressions so far; "
          "next: the schema at '%s')",
          grammar_.source_name, options_.max_grammar_bytes, grammar_.rules.size(),
          grammar_.exprs.size(),
          pending_.back().first.empty() ? "#" : PointerOf(pending_.back().first[0].node)));
    }
    auto [conj, rule] = std::move(pending_.back());
    pending_.pop_back();
    absl::StatusOr<grammar::ExprId> body = Build(conj);
    if (!body.ok()) {
      return absl::Status(body.status().code(),
                          absl::StrCat(grammar_.source_name, ": ", body.status().message()));
    }
    grammar_.rules[rule].body = *body;
  }
  DropUnreachableRules();
  absl::Status valid = grammar_.Validate();
  if (!valid.ok()) return valid;
  JsonSchemaGrammar out;
  out.grammar = std::move(grammar_);
  out.warnings = std::move(warnings_);
  return out;
}

// The builders make a few rules that no other rule ends up using (e.g. the
// "rest" of the last object member); drop them so that dumps and `zapgram
// check` show only the grammar. Expressions of dropped rules stay in the
// arena, unreferenced (their rule references are pointed at the root).
void Converter::DropUnreachableRules() {
  const std::vector<bool> reachable = grammar::ReachableRules(grammar_);
  std::vector<grammar::RuleId> new_id(grammar_.rules.size(), 0);
  std::vector<grammar::Rule> kept;
  for (size_t r = 0; r < grammar_.rules.size(); ++r) {
    if (!reachable[r]) continue;
    new_id[r] = static_cast<grammar::RuleId>(kept.size());
    kept.push_back(std::move(grammar_.rules[r]));
  }
  for (grammar::Expr& e : grammar_.exprs) {
    if (e.kind == grammar::ExprKind::kRuleRef) e.rule = new_id[e.rule];
  }
  grammar_.root = new_id[grammar_.root];
  grammar_.rules = std::move(kept);
}

}  // namespace json_schema_internal

JsonSchemaOptions ValidationSchemaOptions(bool lenient) {
  JsonSchemaOptions options;
  options.lenient = lenient;
  options.compact = false;
  options.max_whitespace = kAnyWhitespace;
  options.member_order = MemberOrder::kAnyWhereExact;
  options.any_spelling = true;
  return options;
}

namespace {

// The offset where the text's arrays and objects first nest deeper than
// `max_depth`, or npos. A linear scan of the text (strings skipped), before
// anything is built: the converter's cost grows with depth times the length
// of each node's JSON pointer, so 100,000 levels would take hours and
// gigabytes (10,000 levels: 13 s, 560 MB) instead of failing.
size_t TooDeepAt(std::string_view text, uint32_t max_depth) {
  uint64_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

}  // namespace

absl::StatusOr<JsonSchemaGrammar> JsonSchemaToGrammar(std::string_view schema_text,
                                                      std::string_view source_name,
                                                      const JsonSchemaOptions& options) {
  if (const size_t at = TooDeepAt(schema_text, options.max_depth); at != std::string_view::npos) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("%s: byte %d: the schema nests arrays and objects deeper than max_depth = %d",
                        std::string(source_name), at, options.max_depth));
  }
  json_schema_internal::Json document = ReadOrderedJson(schema_text);
  if (document.is_discarded()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: not valid JSON text", std::string(source_name)));
  }
  json_schema_internal::Converter converter(document, source_name, options);
  return converter.Run();
}

}  // namespace zapgram::transforms
