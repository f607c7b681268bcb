// `zapgram parse GRAMMAR FILE... [--json] [--stats] [--no-pruning] [--data-root DIR]
//  [--lenient] [--generation] [--texts F.jsonl]`:
// is each file a sentence of the grammar, and if not, where does it go wrong?
//
// A schema:PATH grammar is read for validation (SchemaPurpose::kValidation):
// JSON text as RFC 8259 reads it, so the verdict is the validation verdict
// (any whitespace, any member order where the grammar stays exact, every
// string spelling). --generation parses with the grammar that masks and
// sampling use instead (bounded whitespace, schema order, canonical spelling).
//
// --texts F.jsonl adds documents given inline, one per line of F (a JSON
// string, or an object whose "text" is one, as in trace files), reported as
// "F:LINE": many documents against one compiled grammar in one process.
//
// Each file's bytes are fed one at a time into a zapgram::Recognizer. A file is
// accepted iff every byte is accepted and the recognizer is accepting at the
// end. Otherwise the verdict names the first offending position: the offset of
// the first rejected byte, or the file length when every byte was accepted but
// the input may not end there ("end of input not allowed"); its 1-based line
// and column (the column counts bytes); and the bytes the grammar would have
// taken there (Recognizer::NextBytes at that point, whose state a rejected byte
// leaves unchanged), printed as a compact list of C character literals and
// ranges: '"', '0'-'9', '[', '\x0A'.
//
// Output (the JSON shape is fixed by DESIGN.md, since other engines are
// compared through it):
//   human  one line per file: `FILE: accepted` or
//          `FILE:LINE:COL: rejected at byte OFFSET; expected ...`
//   --json one object per line per file:
//          {"file","accepted","offset","line","col","expected"} (nulls when accepted)
//   --stats adds "bytes", "max_items" (most items the chart retained after any
//          step, pruning on) and "max_items_unpruned" (the same with pruning off,
//          from a second recognizer fed the same bytes); the human form adds a
//          line with the maximum and mean item counts, and for small files the
//          counts every N steps.
// A budget running out (Recognizer::status() not ok) is an error naming the
// limit, not a rejection. Errors about one file (unreadable, budget) are
// reported on stderr; with --json the file still gets its line, with "error"
// set and "accepted": null (the file was not decided). Exit status: 0 all accepted, 1 some
// rejected, 2 usage error, grammar that does not load, or a file error.
//
// FILE paths are taken as given ("-" is standard input); --data-root applies
// to a relative GRAMMAR path only, as in the trace files. With several files
// and stdout not a terminal (results going to a file or a pipe), progress is
// drawn on a terminal's stderr (cli/progress.h) unless --quiet.
//
// Tests: tests/cli/cli_test.cc (CliTest.Parse*).
#include <algorithm>
#include <bitset>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "api/grammar_data.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "nlohmann/json.hpp"
#include "zapgram/grammar.h"

namespace zapgram::cli {
namespace {

constexpr std::string_view kHelp =
    "usage: zapgram parse GRAMMAR FILE... [--json] [--stats] [--no-pruning] [--lenient]\n"
    "                     [--data-root DIR] [--generation] [--texts F.jsonl] [--quiet]\n"
    "\n"
    "Feeds each FILE byte by byte to a recognizer for GRAMMAR and reports whether\n"
    "the file is a sentence of the grammar. For a rejected file it reports the\n"
    "offset of the first rejected byte (or the file length when the input may not\n"
    "end there), its line and column (1-based, column in bytes) and the bytes that\n"
    "were expected there.\n"
    "\n"
    "  FILE: accepted\n"
    "  FILE:LINE:COL: rejected at byte OFFSET; expected '\"', '0'-'9', '['\n"
    "  FILE:LINE:COL: rejected at byte OFFSET; end of input not allowed; expected ...\n"
    "\n"
    "GRAMMAR is PATH.gbnf or PATH.ebnf (by extension), PATH.lark, builtin:NAME,\n"
    "regex:PATTERN or schema:PATH. FILE '-' is standard input.\n"
    "\n"
    "A schema:PATH grammar validates: it accepts the JSON texts valid under the schema\n"
    "as RFC 8259 reads them (any whitespace, members in any order where the grammar\n"
    "stays exact, every string escape spelling).\n"
    "\n"
    "options:\n"
    "  --json            one JSON object per file and line:\n"
    "                    {\"file\",\"accepted\",\"offset\",\"line\",\"col\",\"expected\"}\n"
    "                    (nulls when accepted; \"error\" set when the file could not\n"
    "                    be decided)\n"
    "  --stats           also report \"bytes\", \"max_items\" (most Earley items retained\n"
    "                    after any step, pruning on) and \"max_items_unpruned\" (the\n"
    "                    same with pruning off); human output adds item-count summaries\n"
    "  --no-pruning      decide with pruning off (ablation)\n"
    "  --lenient         schema:PATH: drop keywords a grammar cannot enforce (each\n"
    "                    reported on stderr) instead of failing\n"
    "  --generation      schema:PATH: parse with the generation grammar (what masks\n"
    "                    and sampling use: at most 2 whitespace bytes between tokens,\n"
    "                    members in schema order, canonical string spellings)\n"
    "  --texts F.jsonl   also parse the documents of F, one per line: a JSON string or\n"
    "                    an object with a \"text\" string; reported as F:LINE\n"
    "  --data-root DIR   resolve a relative GRAMMAR path against DIR\n"
    "  --quiet           no progress line on stderr (drawn only for several files,\n"
    "                    with stderr a terminal and stdout not)\n"
    "\n"
    "exit status: 0 all accepted, 1 some rejected, 2 usage error, grammar error,\n"
    "unreadable file or exhausted budget.\n";

// Files up to this size get their item counts sampled in the human --stats line.
constexpr size_t kSmallFileBytes = 4096;
constexpr size_t kProfileSamples = 32;

struct ParseOptions {
  bool json = false;
  bool quiet = false;
  bool lenient = false;
  bool generation = false;
  std::vector<std::string> texts_files;
  bool stats = false;
  bool pruning = true;
  std::string data_root;
};

// One recognizer's run over one file.
struct Run {
  enum class Outcome { kAccepted, kRejected, kError };
  Outcome outcome = Outcome::kAccepted;
  size_t offset = 0;             // kRejected/kError: where; else the file length
  bool at_end = false;           // kRejected: all bytes taken, the end is not accepting
  bool accepting_there = false;  // kRejected: the input up to `offset` is a sentence
  std::bitset<256> expected;     // kRejected: NextBytes() at `offset`
  absl::Status error;            // kError
  // RetainedItems() before the first byte and after each accepted byte.
  std::vector<size_t> items;
  uint64_t peak_work = 0;  // Recognizer::PeakWorkPerSet() at the end
};

Run Recognize(const Grammar& grammar, std::string_view bytes, bool pruning) {
  RecognizerOptions options;
  options.pruning = pruning;
  options.max_rollback = 0;  // parse never rolls back
  Recognizer recognizer(grammar, options);
  Run run;
  run.items.reserve(bytes.size() + 1);
  run.items.push_back(recognizer.RetainedItems());
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!recognizer.Feed(static_cast<uint8_t>(bytes[i]))) {
      run.offset = i;
      absl::Status status = recognizer.status();
      if (!status.ok()) {
        run.outcome = Run::Outcome::kError;
        run.error = status;
      } else {
        run.outcome = Run::Outcome::kRejected;
        run.expected = recognizer.NextBytes();
        run.accepting_there = recognizer.IsAccepting();
      }
      run.peak_work = recognizer.PeakWorkPerSet();
      return run;
    }
    run.items.push_back(recognizer.RetainedItems());
  }
  run.peak_work = recognizer.PeakWorkPerSet();
  run.offset = bytes.size();
  if (!recognizer.IsAccepting()) {
    run.outcome = Run::Outcome::kRejected;
    run.at_end = true;
    run.expected = recognizer.NextBytes();
  }
  return run;
}

// A byte as a C character literal: 'a', '\'', '\\', '\x0A'.
std::string ByteLiteral(int b) {
  if (b == '\'' || b == '\\') return absl::StrCat("'\\", std::string(1, static_cast<char>(b)), "'");
  if (b >= 0x20 && b < 0x7F) return absl::StrCat("'", std::string(1, static_cast<char>(b)), "'");
  return absl::StrFormat("'\\x%02X'", b);
}

// The set as single bytes and runs: runs of three or more bytes print as 'a'-'z'.
std::vector<std::string> ByteSetItems(const std::bitset<256>& set) {
  std::vector<std::string> items;
  int b = 0;
  while (b < 256) {
    if (!set[b]) {
      ++b;
      continue;
    }
    int end = b;
    while (end + 1 < 256 && set[end + 1]) ++end;
    if (end - b >= 2) {
      items.push_back(absl::StrCat(ByteLiteral(b), "-", ByteLiteral(end)));
    } else {
      for (int c = b; c <= end; ++c) items.push_back(ByteLiteral(c));
    }
    b = end + 1;
  }
  return items;
}

struct LineCol {
  size_t line = 1;
  size_t col = 1;
};

LineCol LineColAt(std::string_view bytes, size_t offset) {
  LineCol lc;
  size_t line_start = 0;
  for (size_t i = 0; i < offset && i < bytes.size(); ++i) {
    if (bytes[i] == '\n') {
      ++lc.line;
      line_start = i + 1;
    }
  }
  lc.col = offset - line_start + 1;
  return lc;
}

std::string ExpectedText(const Run& run) {
  std::vector<std::string> items = ByteSetItems(run.expected);
  std::string text;
  if (run.at_end) text = "end of input not allowed; ";
  if (items.empty()) {
    absl::StrAppend(&text, run.accepting_there ? "expected end of input" : "expected nothing");
  } else {
    absl::StrAppend(&text, "expected ", absl::StrJoin(items, ", "));
    if (run.accepting_there) absl::StrAppend(&text, " or end of input");
  }
  return text;
}

size_t MaxItems(const Run& run) {
  return run.items.empty() ? 0 : *std::max_element(run.items.begin(), run.items.end());
}

double MeanItems(const Run& run) {
  if (run.items.empty()) return 0;
  double sum = 0;
  for (size_t n : run.items) sum += static_cast<double>(n);
  return sum / static_cast<double>(run.items.size());
}

// "items max 14, mean 9.3; unpruned max 456, mean 230.1; every 4 bytes: 3 5 7 ..."
std::string HumanStats(size_t bytes, const Run& pruned, const Run& unpruned) {
  std::string text =
      absl::StrFormat("  %zu bytes; items max %zu, mean %.1f; unpruned max %zu, mean %.1f; peak "
                      "work per byte %d",
                      bytes, MaxItems(pruned), MeanItems(pruned), MaxItems(unpruned),
                      MeanItems(unpruned), pruned.peak_work);
  if (bytes <= kSmallFileBytes && !pruned.items.empty()) {
    size_t every =
        std::max<size_t>(1, (pruned.items.size() + kProfileSamples - 1) / kProfileSamples);
    std::vector<size_t> samples;
    for (size_t i = 0; i < pruned.items.size(); i += every) samples.push_back(pruned.items[i]);
    absl::StrAppend(&text, "; items every ", every,
                    every == 1 ? " byte: " : " bytes: ", absl::StrJoin(samples, " "));
  }
  return text;
}

// Outcome of one file for the exit status.
enum class Verdict { kAccepted, kRejected, kError };

// One document: its name in the report and its bytes (or why there are none).
Verdict ParseDocument(const Grammar& grammar, const std::string& path,
                      const absl::StatusOr<std::string>& bytes, const ParseOptions& options) {
  using Json = nlohmann::ordered_json;
  Json line;
  line["file"] = path;
  auto emit_json = [&line] {
    std::string text = line.dump(-1, ' ', false, Json::error_handler_t::replace);
    std::printf("%s\n", text.c_str());
  };
  auto set_nulls = [&line] {
    line["offset"] = nullptr;
    line["line"] = nullptr;
    line["col"] = nullptr;
    line["expected"] = nullptr;
  };

  if (!bytes.ok()) {
    if (options.json) {
      line["accepted"] = nullptr;
      set_nulls();
      line["error"] = std::string(bytes.status().message());
      emit_json();
    }
    std::fprintf(stderr, "zapgram parse: %s\n", std::string(bytes.status().message()).c_str());
    return Verdict::kError;
  }

  Run main_run = Recognize(grammar, *bytes, options.pruning);
  std::optional<Run> other_run;
  if (options.stats) {
    // The other configuration, fed the same bytes, for max_items(_unpruned).
    other_run = Recognize(grammar, *bytes, !options.pruning);
    if (other_run->outcome != Run::Outcome::kError && main_run.outcome != Run::Outcome::kError &&
        (other_run->outcome != main_run.outcome || other_run->offset != main_run.offset)) {
      std::fprintf(
          stderr,
          "zapgram parse: %s: warning: pruned and unpruned recognizers disagree "
          "(%s at byte %zu vs %s at byte %zu)\n",
          path.c_str(), main_run.outcome == Run::Outcome::kAccepted ? "accepted" : "rejected",
          main_run.offset, other_run->outcome == Run::Outcome::kAccepted ? "accepted" : "rejected",
          other_run->offset);
    }
  }
  const Run& pruned = options.pruning ? main_run : *other_run;
  const Run& unpruned = options.pruning ? *other_run : main_run;

  LineCol lc = LineColAt(*bytes, main_run.offset);
  Verdict verdict = Verdict::kAccepted;
  std::string human;
  switch (main_run.outcome) {
    case Run::Outcome::kAccepted:
      line["accepted"] = true;
      set_nulls();
      human = absl::StrCat(path, ": accepted");
      break;
    case Run::Outcome::kRejected: {
      verdict = Verdict::kRejected;
      line["accepted"] = false;
      line["offset"] = main_run.offset;
      line["line"] = lc.line;
      line["col"] = lc.col;
      line["expected"] = ByteSetItems(main_run.expected);
      human = absl::StrCat(path, ":", lc.line, ":", lc.col, ": rejected at byte ", main_run.offset,
                           "; ", ExpectedText(main_run));
      break;
    }
    case Run::Outcome::kError:
      verdict = Verdict::kError;
      line["accepted"] = nullptr;
      line["offset"] = main_run.offset;
      line["line"] = lc.line;
      line["col"] = lc.col;
      line["expected"] = nullptr;
      line["error"] = std::string(main_run.error.message());
      std::fprintf(stderr, "zapgram parse: %s:%zu:%zu: error at byte %zu: %s\n", path.c_str(),
                   lc.line, lc.col, main_run.offset, std::string(main_run.error.message()).c_str());
      break;
  }
  if (options.stats) {
    line["bytes"] = bytes->size();
    line["max_items"] = MaxItems(pruned);
    line["max_items_unpruned"] = MaxItems(unpruned);
    if (other_run->outcome == Run::Outcome::kError) {
      // The second configuration ran out of budget: its maximum is a lower bound.
      line[options.pruning ? "error_unpruned" : "error_pruned"] =
          std::string(other_run->error.message());
    }
  }

  if (options.json) {
    emit_json();
  } else if (verdict != Verdict::kError) {
    std::printf("%s\n", human.c_str());
    if (options.stats) std::printf("%s\n", HumanStats(bytes->size(), pruned, unpruned).c_str());
  }
  return verdict;
}

// A document of a --texts file: its line number and its text.
struct InlineText {
  size_t line = 0;
  absl::StatusOr<std::string> text;
};

// The documents of a --texts file, one per non-blank line: the line's JSON
// string, or its "text" member. A line that holds neither is an error of
// that document.
std::vector<InlineText> ReadTexts(const std::string& path, const std::string& content) {
  std::vector<InlineText> texts;
  size_t start = 0, line_number = 0;
  while (start < content.size()) {
    size_t end = content.find('\n', start);
    if (end == std::string::npos) end = content.size();
    ++line_number;
    const std::string_view line(content.data() + start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    nlohmann::json value = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (value.is_object() && value.contains("text")) value = value["text"];
    if (value.is_string()) {
      texts.push_back({line_number, value.get<std::string>()});
    } else {
      texts.push_back({line_number, absl::InvalidArgumentError(absl::StrFormat(
                                        "%s:%d: not a JSON string nor an object with a \"text\" string",
                                        path, line_number))});
    }
  }
  return texts;
}

int RunParse(const std::vector<std::string>& args) {
  ParseOptions options;
  std::vector<std::string> positional;
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_done || arg.empty() || arg[0] != '-' || arg == "-") {
      positional.push_back(arg);
    } else if (arg == "--") {
      options_done = true;
    } else if (arg == "--json") {
      options.json = true;
    } else if (arg == "--lenient") {
      options.lenient = true;
    } else if (arg == "--generation") {
      options.generation = true;
    } else if (arg == "--texts" || absl::StartsWith(arg, "--texts=")) {
      std::string path;
      if (!TakeOptionValue(args, &i, "--texts", &path)) {
        return UsageError("parse", "--texts needs a file");
      }
      options.texts_files.push_back(path);
    } else if (arg == "--quiet") {
      options.quiet = true;
    } else if (arg == "--stats") {
      options.stats = true;
    } else if (arg == "--no-pruning") {
      options.pruning = false;
    } else if (arg == "--data-root" || absl::StartsWith(arg, "--data-root=")) {
      if (!TakeOptionValue(args, &i, "--data-root", &options.data_root)) {
        return UsageError("parse", "--data-root needs a directory");
      }
    } else {
      return UsageError("parse", absl::StrCat("unknown option '", arg, "'"));
    }
  }
  if (positional.empty()) return UsageError("parse", "missing GRAMMAR and FILE");
  if (positional.size() < 2 && options.texts_files.empty()) return UsageError("parse", "missing FILE");

  LoadOptions load_options;
  load_options.schema.lenient = options.lenient;
  load_options.schema.purpose =
      options.generation ? SchemaPurpose::kGeneration : SchemaPurpose::kValidation;
  absl::StatusOr<Grammar> grammar = Grammar::Load(positional[0], options.data_root, load_options);
  if (grammar.ok()) {
    for (const std::string& w : grammar->warnings()) {
      std::fprintf(stderr, "zapgram parse: warning: %s\n", w.c_str());
    }
  }
  if (!grammar.ok()) {
    std::fprintf(stderr, "zapgram parse: %s\n", std::string(grammar.status().message()).c_str());
    return kExitError;
  }
  // Token terminals (XGrammar's Token / ExcludeToken / TokenTagDispatch)
  // match token ids, which a text does not have: refused rather than
  // giving text-only verdicts (grammar/xgrammar_macros.h).
  if (const parser::FlatGrammar& flat = grammar->data().flat; flat.has_token_terminals()) {
    const parser::TokenTerminal& first = flat.token_terminals.front();
    std::fprintf(stderr,
                 "zapgram parse: %s: %s matches a vocabulary token by id, and a text has no token "
                 "ids: check token sequences with a tokenizer instead (zapgram trace, bench, mask)\n",
                 first.where.c_str(), first.name.c_str());
    return kExitError;
  }

  bool any_rejected = false;
  bool any_error = false;
  auto tally = [&](Verdict verdict) {
    any_rejected |= verdict == Verdict::kRejected;
    any_error |= verdict == Verdict::kError;
    std::fflush(stdout);
  };
  const size_t files = positional.size() - 1;
  Progress progress("parse", "files", files,
                    files > 1 && ProgressWanted(options.quiet, /*results_on_stdout=*/true));
  for (size_t i = 1; i < positional.size(); ++i) {
    tally(ParseDocument(*grammar, positional[i], ReadFileBytes(positional[i]), options));
    progress.Update(i);
  }
  for (const std::string& path : options.texts_files) {
    absl::StatusOr<std::string> content = ReadFileBytes(path);
    if (!content.ok()) {
      tally(ParseDocument(*grammar, path, content.status(), options));
      continue;
    }
    for (const InlineText& t : ReadTexts(path, *content)) {
      tally(ParseDocument(*grammar, absl::StrCat(path, ":", t.line), t.text, options));
    }
  }
  progress.Finish(files);
  if (any_error) return kExitError;
  return any_rejected ? kExitNo : kExitOk;
}

}  // namespace

const Command kParseCommand = {
    "parse",
    "check files against a grammar: accepted, or where and what was expected",
    kHelp,
    &RunParse,
};

}  // namespace zapgram::cli
