// `zapgram schema2gbnf SCHEMA [--lenient] [--compact] [--max-ws N]
//  [--any-order] [--draft7] [--validation]`: show the grammar of a JSON Schema.
//
// Converts the schema file (transforms/json_schema.h, the same conversion
// `schema:PATH` runs everywhere) and prints the grammar as GBNF
// (grammar::Dump, which re-reads to the same grammar) on standard output.
// In lenient mode each dropped keyword is a line on standard error:
// "SCHEMA: warning: dropped <keyword> at <pointer>: <why>". The grammar is
// the converter's output before normalization (one rule per subschema).
//
// Exit status: 0 printed, 1 the schema has no grammar (an unsupported
// keyword in strict mode, a bad $ref, not a schema), 2 usage errors and
// unreadable files.
//
// Tests: tests/cli/cli_test.cc (CliTest.Schema2Gbnf*).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "grammar/grammar.h"
#include "transforms/json_schema.h"

namespace zapgram::cli {
namespace {

constexpr std::string_view kHelp =
    "usage: zapgram schema2gbnf SCHEMA [--lenient] [--compact] [--max-ws N]\n"
    "                           [--any-order] [--draft7] [--validation]\n"
    "\n"
    "Prints the grammar of the JSON Schema file SCHEMA in GBNF (the grammar that\n"
    "`schema:SCHEMA` uses everywhere a GRAMMAR is taken).\n"
    "\n"
    "options:\n"
    "  --lenient     drop keywords a grammar cannot enforce (uniqueItems, contains,\n"
    "                if/then/else, ...) with a warning on stderr, instead of failing\n"
    "  --compact     no whitespace between JSON tokens\n"
    "  --max-ws N    at most N whitespace bytes between tokens (default 2)\n"
    "  --any-order   object members in any order (default: schema order)\n"
    "  --draft7      read a schema without $schema as draft-07 ($ref replaces its\n"
    "                siblings); the default is draft 2020-12\n"
    "  --validation  the grammar `zapgram parse` validates with: any JSON whitespace,\n"
    "                any member order where it is exact, every string spelling\n"
    "                (--compact, --max-ws and --any-order are then not used)\n"
    "\n"
    "exit status: 0 printed, 1 the schema has no grammar (unsupported keyword,\n"
    "bad $ref), 2 usage errors, unreadable file.\n";

int RunSchema2Gbnf(const std::vector<std::string>& args) {
  transforms::JsonSchemaOptions options;
  bool validation = false;
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--lenient") {
      options.lenient = true;
    } else if (arg == "--compact") {
      options.compact = true;
    } else if (arg == "--any-order") {
      options.member_order = transforms::MemberOrder::kAny;
    } else if (arg == "--validation") {
      validation = true;
    } else if (arg == "--draft7") {
      options.draft = transforms::JsonSchemaDraft::kDraft7;
    } else if (absl::StartsWith(arg, "--max-ws")) {
      std::string value;
      if (!TakeOptionValue(args, &i, "--max-ws", &value)) {
        return UsageError("schema2gbnf", "--max-ws needs a number");
      }
      char* end = nullptr;
      errno = 0;
      const unsigned long n = std::strtoul(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno != 0 || n > 1000) {
        return UsageError("schema2gbnf", "--max-ws needs a number from 0 to 1000");
      }
      options.max_whitespace = static_cast<uint32_t>(n);
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      return UsageError("schema2gbnf", absl::StrCat("unknown option '", arg, "'"));
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 1) return UsageError("schema2gbnf", "expected exactly one SCHEMA file");
  if (validation) {
    const transforms::JsonSchemaDraft draft = options.draft;
    options = transforms::ValidationSchemaOptions(options.lenient);
    options.draft = draft;
  }
  absl::StatusOr<std::string> text = ReadFileBytes(positional[0]);
  if (!text.ok()) {
    std::fprintf(stderr, "zapgram schema2gbnf: %s\n", std::string(text.status().message()).c_str());
    return kExitError;
  }
  absl::StatusOr<transforms::JsonSchemaGrammar> converted =
      transforms::JsonSchemaToGrammar(*text, positional[0], options);
  if (!converted.ok()) {
    std::fprintf(stderr, "zapgram schema2gbnf: %s\n",
                 std::string(converted.status().message()).c_str());
    return kExitNo;
  }
  for (const transforms::JsonSchemaWarning& w : converted->warnings) {
    std::fprintf(stderr, "%s: warning: %s %s at %s: %s\n", positional[0].c_str(),
                 w.dropped ? "dropped" : "ignored", w.keyword.c_str(), w.pointer.c_str(),
                 w.message.c_str());
  }
  const std::string dump = grammar::Dump(converted->grammar);
  std::fwrite(dump.data(), 1, dump.size(), stdout);
  return kExitOk;
}

}  // namespace

const Command kSchema2GbnfCommand = {
    "schema2gbnf",
    "print the grammar of a JSON Schema in GBNF",
    kHelp,
    RunSchema2Gbnf,
};

}  // namespace zapgram::cli
