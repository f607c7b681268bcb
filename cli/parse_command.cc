// `zapgram parse GRAMMAR FILE... [--json] [--stats] [--no-pruning] [--data-root DIR]
//  [--lenient] [--generation] [--texts F.jsonl] [--lines F.jsonl] [-j N]`:
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
// --lines F.jsonl (F '-': standard input) takes each non-blank line of F as
// one document itself (JSON Lines, a dataset as it comes), also reported as
// "F:LINE", and ends with a summary on stderr (documents, verdicts, MB/s,
// peak RSS; --summary prints it for any input).
//
// Memory does not grow with the input: files are read in 1 MiB chunks and
// fed as they come, the recognizer holds what its compacted chart holds
// (proportional to nesting depth), and the item counts of --stats are
// summarized as they go. (--stats reads a document whole: it feeds it to a
// second recognizer; a line of --lines or --texts is held whole too.)
//
// -j N parses documents (files and lines) on N threads (default: the
// machine's cores) over the one compiled grammar, one recognizer per
// thread; documents go in batches of at most 1,024 documents or 8 MiB
// of lines, and every report is printed in input order.
//
// Each thread's recognizer keeps a memo of the parser's transitions between
// canonical states across its documents (parser/transition_memo.h,
// --memo-mb per thread, 64 by default; 0 turns it off): a byte read before
// from a state met before is one table lookup instead of an Earley step.
// Verdicts, offsets, expected bytes and item counts are the same either
// way. --stats and --no-pruning parse without it. The summary line says
// what share of the bytes the memo served.
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
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <bitset>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
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
    "                     [--data-root DIR] [--generation] [--texts F.jsonl]\n"
    "                     [--lines F.jsonl] [-j N] [--memo-mb N] [--quiet]\n"
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
    "  --indenter=MODE   Lark's Indenter (Python's _INDENT/_DEDENT): auto (default:\n"
    "                    when the grammar %declares _INDENT and _DEDENT and uses\n"
    "                    _NL or _NEWLINE), on, off\n"
    "  --lenient         schema:PATH: drop keywords a grammar cannot enforce (each\n"
    "                    reported on stderr) instead of failing\n"
    "  --generation      schema:PATH: parse with the generation grammar (what masks\n"
    "                    and sampling use: at most 2 whitespace bytes between tokens,\n"
    "                    members in schema order, canonical string spellings)\n"
    "  --texts F.jsonl   also parse the documents of F, one per line: a JSON string or\n"
    "                    an object with a \"text\" string; reported as F:LINE\n"
    "  --lines F.jsonl   also parse each non-blank line of F as one document (JSON\n"
    "                    Lines as they come; F '-' is standard input); reported as\n"
    "                    F:LINE, then a summary on stderr: documents, accepted,\n"
    "                    rejected, errors, MB/s\n"
    "  -j N, --jobs N    parse documents on N threads (default: the machine's cores);\n"
    "                    output stays in input order\n"
    "  --memo-mb N       per thread, the memo of parser transitions between the\n"
    "                    states met (default 64; 0: off); same verdicts either way\n"
    "  --summary         the summary line on stderr for any input (documents,\n"
    "                    verdicts, MB/s, peak RSS)\n"
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
  IndenterOptions indenter;
  std::vector<std::string> texts_files;
  std::vector<std::string> lines_files;
  bool summary = false;  // the summary line on stderr (always with --lines, unless --quiet)
  uint32_t threads = std::max(1u, std::thread::hardware_concurrency());
  bool stats = false;
  bool pruning = true;
  size_t memo_bytes = size_t{64} << 20;  // per thread; 0: no memo
  std::string data_root;
};

// Reads the lines of a file (or standard input) one at a time, in bounded
// chunks: each call to Next gives the next line without its '\n' (and a
// '\r' before it), with its 1-based number. A line is held whole up to
// `max_held` bytes; a longer one is returned cut there with line_open()
// true, and its rest is read in pieces by ReadRestOfLine (a document of
// --lines is then fed as it is read: a line of any length in bounded memory).
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path) {
    absl::StatusOr<std::FILE*> opened = OpenInput(path);
    if (opened.ok()) {
      file_ = *opened;
    } else {
      status_ = opened.status();
    }
  }
  ~LineReader() { CloseInput(file_); }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;
  const absl::Status& status() const { return status_; }
  bool line_open() const { return line_open_; }

  bool Next(std::string* line, size_t* number, size_t max_held) {
    line->clear();
    if (line_open_) ReadRestOfLine([](std::string_view) { return false; });
    if (!Fill()) return false;
    while (true) {
      const char* start = buffer_ + at_;
      const size_t room = max_held > line->size() ? max_held - line->size() : 0;
      const size_t span = std::min(end_ - at_, room);
      const void* newline = std::memchr(start, '\n', span);
      if (newline != nullptr) {
        const size_t n = static_cast<const char*>(newline) - start;
        line->append(start, n);
        at_ += n + 1;
        if (!line->empty() && line->back() == '\r') line->pop_back();
        break;
      }
      line->append(start, span);
      at_ += span;
      if (line->size() >= max_held) {
        line_open_ = true;  // the rest comes through ReadRestOfLine
        break;
      }
      if (!Fill()) break;  // a last line without '\n'
    }
    *number = ++line_number_;
    return true;
  }

  // The rest of a line Next left open, handed to `take` in pieces until the
  // line ends; once `take` returns false the rest is skipped. A '\r' right
  // before the '\n' is dropped, as Next drops it.
  void ReadRestOfLine(absl::FunctionRef<bool(std::string_view)> take) {
    bool taking = true;
    bool held_cr = false;  // a '\r' ended the last piece: dropped if '\n' follows
    while (line_open_ && Fill()) {
      const char* start = buffer_ + at_;
      const void* newline = std::memchr(start, '\n', end_ - at_);
      size_t n = newline != nullptr ? static_cast<size_t>(static_cast<const char*>(newline) - start)
                                    : end_ - at_;
      at_ += n + (newline != nullptr ? 1 : 0);
      if (newline != nullptr) line_open_ = false;
      if (!taking) continue;
      if (held_cr && (n > 0 || newline == nullptr)) taking = take("\r");
      held_cr = false;
      if (n > 0 && start[n - 1] == '\r') {
        held_cr = true;
        --n;
      }
      if (taking && n > 0) taking = take(std::string_view(start, n));
    }
    if (taking && held_cr && line_open_) take("\r");  // the input ended right after it
    line_open_ = false;
  }

 private:
  // Makes unread bytes available; false at the end of the input.
  bool Fill() {
    if (at_ < end_) return true;
    if (file_ == nullptr || done_) return false;
    end_ = std::fread(buffer_, 1, sizeof buffer_, file_);
    at_ = 0;
    if (end_ > 0) return true;
    if (std::ferror(file_) != 0) {
      status_ = absl::DataLossError(absl::StrCat(path_, ": read error: ", std::strerror(errno)));
    }
    done_ = true;
    return false;
  }

  std::string path_;
  std::FILE* file_ = nullptr;
  absl::Status status_;
  char buffer_[1 << 16];
  size_t at_ = 0, end_ = 0;
  size_t line_number_ = 0;
  bool done_ = false;
  bool line_open_ = false;
};

// Where a document's bytes come from: a file (or standard input) read in
// chunks of kChunkBytes, so that a file of any size is parsed in bounded
// memory; text already in memory (--texts, --lines); or why there are none.
constexpr size_t kChunkBytes = size_t{1} << 20;

class DocumentBytes {
 public:
  static DocumentBytes File(std::string path) {
    DocumentBytes d;
    d.path_ = std::move(path);
    return d;
  }
  static DocumentBytes Text(std::string text) {
    DocumentBytes d;
    d.text_ = std::move(text);
    d.in_memory_ = true;
    return d;
  }
  // A line of --lines too long to hold: `head`, then the rest of the line
  // as `reader` reads it (consumed once).
  static DocumentBytes LongLine(std::string head, LineReader* reader) {
    DocumentBytes d;
    d.text_ = std::move(head);
    d.rest_of_line_ = reader;
    return d;
  }
  static DocumentBytes Failed(absl::Status status) {
    DocumentBytes d;
    d.failed_ = std::move(status);
    d.in_memory_ = true;
    return d;
  }
  const absl::Status& failed() const { return failed_; }
  bool in_memory() const { return in_memory_; }
  // The size when known before reading (0 otherwise).
  size_t known_size() const { return in_memory_ ? text_.size() : 0; }

  // Hands the document to `take` in consecutive pieces until it returns
  // false or the bytes end. Errors: the file cannot be opened (nothing was
  // handed) or a read fails (`*handed` says how many bytes were).
  absl::Status ForEachChunk(absl::FunctionRef<bool(std::string_view)> take, size_t* handed) const {
    *handed = 0;
    if (!failed_.ok()) return failed_;
    if (in_memory_ || rest_of_line_ != nullptr) {
      bool taking = true;
      for (size_t at = 0; taking && at < text_.size(); at += kChunkBytes) {
        const std::string_view piece = std::string_view(text_).substr(at, kChunkBytes);
        *handed += piece.size();
        taking = take(piece);
      }
      if (taking && rest_of_line_ != nullptr) {
        rest_of_line_->ReadRestOfLine([&](std::string_view piece) {
          *handed += piece.size();
          return take(piece);
        });
      }
      return absl::OkStatus();
    }
    absl::StatusOr<std::FILE*> opened = OpenInput(path_);
    if (!opened.ok()) return opened.status();
    std::FILE* file = *opened;
    std::string buffer(kChunkBytes, '\0');
    absl::Status status;
    size_t n;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), file)) > 0) {
      *handed += n;
      if (!take(std::string_view(buffer.data(), n))) break;
    }
    if (std::ferror(file) != 0) {
      status = absl::DataLossError(absl::StrCat(path_, ": read error: ", std::strerror(errno)));
    }
    CloseInput(file);
    return status;
  }

  // The whole document in memory (--stats feeds it to two recognizers).
  DocumentBytes InMemory() const {
    if (in_memory_) return *this;
    std::string all;
    size_t handed = 0;
    absl::Status st = ForEachChunk(
        [&all](std::string_view piece) {
          all.append(piece);
          return true;
        },
        &handed);
    return st.ok() ? Text(std::move(all)) : Failed(std::move(st));
  }

 private:
  std::string path_;
  std::string text_;
  bool in_memory_ = false;
  LineReader* rest_of_line_ = nullptr;  // LongLine: the reader holding the rest
  absl::Status failed_;
};

// One recognizer's run over one document.
struct Run {
  enum class Outcome { kAccepted, kRejected, kError, kUnread };
  Outcome outcome = Outcome::kAccepted;
  size_t offset = 0;             // kRejected/kError: where; else the document's length
  size_t line = 1, col = 1;      // of `offset` (1-based; the column counts bytes)
  bool at_end = false;           // kRejected: all bytes taken, the end is not accepting
  bool accepting_there = false;  // kRejected: the input up to `offset` is a sentence
  std::bitset<256> expected;     // kRejected: NextBytes() at `offset`
  absl::Status error;            // kError: a budget or a read error; kUnread: why nothing was read
  // RetainedItems() before the first byte and after each accepted byte,
  // summarized as the bytes go (a per-byte record would cost 8 bytes per
  // input byte): the most, the sum and count, and every `every`-th value.
  size_t max_items = 0;
  double sum_items = 0;
  size_t counted = 0;
  size_t every = 1;
  std::vector<size_t> samples;
  uint64_t peak_work = 0;  // Recognizer::PeakWorkPerSet() at the end
};

RecognizerOptions ParseRecognizerOptions(bool pruning, size_t memo_bytes) {
  RecognizerOptions options;
  options.pruning = pruning;
  options.max_rollback = 0;  // parse never rolls back
  options.in_place_terminal_steps = true;
  options.transition_memo_bytes = memo_bytes;
  return options;
}

// `reused` (optional): a recognizer of `grammar` for parse to Reset and use
// (one per thread, keeping its transition memo), else a fresh one.
Run Recognize(const Grammar& grammar, const DocumentBytes& document, bool pruning,
              Recognizer* reused = nullptr) {
  std::optional<Recognizer> fresh;
  if (reused == nullptr) fresh.emplace(grammar, ParseRecognizerOptions(pruning, 0));
  Recognizer& recognizer = reused != nullptr ? *reused : *fresh;
  recognizer.Reset();
  Run run;
  run.every = std::max<size_t>(1, (document.known_size() + kProfileSamples) / kProfileSamples);
  auto note_items = [&run](size_t n) {
    run.max_items = std::max(run.max_items, n);
    run.sum_items += static_cast<double>(n);
    if (run.counted % run.every == 0 && run.samples.size() <= kProfileSamples) run.samples.push_back(n);
    ++run.counted;
  };
  note_items(recognizer.RetainedItems());
  size_t position = 0;       // bytes accepted so far
  size_t line_start = 0;     // offset of the current line's first byte
  bool stopped = false;
  auto take = [&](std::string_view piece) {
    for (size_t i = 0; i < piece.size(); ++i) {
      const uint8_t byte = static_cast<uint8_t>(piece[i]);
      if (!recognizer.Feed(byte)) {
        stopped = true;
        absl::Status status = recognizer.status();
        if (!status.ok()) {
          run.outcome = Run::Outcome::kError;
          run.error = status;
        } else {
          run.outcome = Run::Outcome::kRejected;
          run.expected = recognizer.NextBytes();
          run.accepting_there = recognizer.IsAccepting();
        }
        return false;
      }
      ++position;
      if (byte == '\n') {
        ++run.line;
        line_start = position;
      }
      note_items(recognizer.RetainedItems());
    }
    return true;
  };
  size_t handed = 0;
  absl::Status read = document.ForEachChunk(take, &handed);
  run.peak_work = recognizer.PeakWorkPerSet();
  run.offset = position;
  run.col = position - line_start + 1;
  if (!read.ok()) {
    run.outcome = handed == 0 ? Run::Outcome::kUnread : Run::Outcome::kError;
    run.error = read;
    return run;
  }
  if (!stopped && !recognizer.IsAccepting()) {
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

size_t MaxItems(const Run& run) { return run.max_items; }

double MeanItems(const Run& run) {
  return run.counted == 0 ? 0 : run.sum_items / static_cast<double>(run.counted);
}

// "items max 14, mean 9.3; unpruned max 456, mean 230.1; every 4 bytes: 3 5 7 ..."
std::string HumanStats(size_t bytes, const Run& pruned, const Run& unpruned) {
  std::string text =
      absl::StrFormat("  %zu bytes; items max %zu, mean %.1f; unpruned max %zu, mean %.1f; peak "
                      "work per byte %d",
                      bytes, MaxItems(pruned), MeanItems(pruned), MaxItems(unpruned),
                      MeanItems(unpruned), pruned.peak_work);
  if (bytes <= kSmallFileBytes && !pruned.samples.empty()) {
    absl::StrAppend(&text, "; items every ", pruned.every,
                    pruned.every == 1 ? " byte: " : " bytes: ", absl::StrJoin(pruned.samples, " "));
  }
  return text;
}

// Outcome of one document for the exit status.
enum class Verdict { kAccepted, kRejected, kError };

// What one document prints: its line(s) on stdout and stderr, kept until
// every earlier document's are out (-j runs documents in parallel, output
// stays in input order).
struct Report {
  Verdict verdict = Verdict::kAccepted;
  std::string out;
  std::string err;
  size_t bytes = 0;  // bytes read
};

void AppendLine(std::string* to, const std::string& text) {
  to->append(text);
  to->push_back('\n');
}

// `reused`: the thread's recognizer (with its memo), used unless --stats.
Report ParseDocument(const Grammar& grammar, const std::string& path, const DocumentBytes& source,
                     const ParseOptions& options, Recognizer* reused) {
  using Json = nlohmann::ordered_json;
  Report report;
  Json line;
  line["file"] = path;
  auto emit_json = [&line, &report] {
    AppendLine(&report.out, line.dump(-1, ' ', false, Json::error_handler_t::replace));
  };
  auto set_nulls = [&line] {
    line["offset"] = nullptr;
    line["line"] = nullptr;
    line["col"] = nullptr;
    line["expected"] = nullptr;
  };
  auto unreadable = [&](const absl::Status& status) {
    if (options.json) {
      line["accepted"] = nullptr;
      set_nulls();
      line["error"] = std::string(status.message());
      emit_json();
    }
    AppendLine(&report.err, absl::StrCat("zapgram parse: ", status.message()));
    report.verdict = Verdict::kError;
    return report;
  };

  // --stats runs a second recognizer over the same bytes: read them once.
  std::optional<DocumentBytes> read_whole;
  if (options.stats) read_whole = source.InMemory();
  const DocumentBytes& document = read_whole ? *read_whole : source;
  if (!document.failed().ok()) return unreadable(document.failed());
  Run main_run = Recognize(grammar, document, options.pruning, options.stats ? nullptr : reused);
  if (main_run.outcome == Run::Outcome::kUnread) return unreadable(main_run.error);
  report.bytes = main_run.outcome == Run::Outcome::kAccepted ? main_run.offset
                                                              : std::max(main_run.offset, document.known_size());
  std::optional<Run> other_run;
  if (options.stats) {
    // The other configuration, fed the same bytes, for max_items(_unpruned).
    other_run = Recognize(grammar, document, !options.pruning);
    if (other_run->outcome != Run::Outcome::kError && main_run.outcome != Run::Outcome::kError &&
        (other_run->outcome != main_run.outcome || other_run->offset != main_run.offset)) {
      AppendLine(&report.err,
                 absl::StrFormat("zapgram parse: %s: warning: pruned and unpruned recognizers disagree "
                                 "(%s at byte %zu vs %s at byte %zu)",
                                 path, main_run.outcome == Run::Outcome::kAccepted ? "accepted" : "rejected",
                                 main_run.offset,
                                 other_run->outcome == Run::Outcome::kAccepted ? "accepted" : "rejected",
                                 other_run->offset));
    }
  }

  std::string human;
  switch (main_run.outcome) {
    case Run::Outcome::kAccepted:
      line["accepted"] = true;
      set_nulls();
      human = absl::StrCat(path, ": accepted");
      break;
    case Run::Outcome::kRejected:
      report.verdict = Verdict::kRejected;
      line["accepted"] = false;
      line["offset"] = main_run.offset;
      line["line"] = main_run.line;
      line["col"] = main_run.col;
      line["expected"] = ByteSetItems(main_run.expected);
      human = absl::StrCat(path, ":", main_run.line, ":", main_run.col, ": rejected at byte ",
                           main_run.offset, "; ", ExpectedText(main_run));
      break;
    case Run::Outcome::kError:
    case Run::Outcome::kUnread:
      report.verdict = Verdict::kError;
      line["accepted"] = nullptr;
      line["offset"] = main_run.offset;
      line["line"] = main_run.line;
      line["col"] = main_run.col;
      line["expected"] = nullptr;
      line["error"] = std::string(main_run.error.message());
      AppendLine(&report.err, absl::StrFormat("zapgram parse: %s:%zu:%zu: error at byte %zu: %s", path,
                                              main_run.line, main_run.col, main_run.offset,
                                              std::string(main_run.error.message())));
      break;
  }
  if (options.stats) {
    const Run& pruned = options.pruning ? main_run : *other_run;
    const Run& unpruned = options.pruning ? *other_run : main_run;
    line["bytes"] = document.known_size();
    line["max_items"] = MaxItems(pruned);
    line["max_items_unpruned"] = MaxItems(unpruned);
    if (other_run->outcome == Run::Outcome::kError) {
      // The second configuration ran out of budget: its maximum is a lower bound.
      line[options.pruning ? "error_unpruned" : "error_pruned"] =
          std::string(other_run->error.message());
    }
    if (!options.json && report.verdict != Verdict::kError) {
      AppendLine(&human, "");
      human += HumanStats(document.known_size(), pruned, unpruned);
    }
  }

  if (options.json) {
    emit_json();
  } else if (report.verdict != Verdict::kError) {
    AppendLine(&report.out, human);
  }
  return report;
}

// A named document waiting to be parsed.
struct Document {
  std::string name;
  DocumentBytes bytes;
};

bool Blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

// A line of a --texts file: its JSON string, or its "text" member. A line
// that holds neither is an error of that document.
DocumentBytes InlineText(const std::string& path, size_t number, std::string_view line) {
  nlohmann::json value = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (value.is_object() && value.contains("text")) value = value["text"];
  if (value.is_string()) return DocumentBytes::Text(value.get<std::string>());
  return DocumentBytes::Failed(absl::InvalidArgumentError(absl::StrFormat(
      "%s:%d: not a JSON string nor an object with a \"text\" string", path, number)));
}

// Parses documents on `threads` threads, one compiled grammar shared by all
// (each document its own recognizer), and prints their reports in input
// order. Documents come in batches of up to kBatchDocuments or
// kBatchBytes of text in memory, so memory stays bounded by a batch
// whatever the input's size.
class Driver {
 public:
  static constexpr size_t kBatchDocuments = 1024;
  static constexpr size_t kBatchBytes = size_t{8} << 20;

  Driver(const Grammar& grammar, const ParseOptions& options)
      : grammar_(grammar), options_(options), start_(std::chrono::steady_clock::now()) {}

  void Add(Document document) {
    batch_bytes_ += document.bytes.known_size();
    batch_.push_back(std::move(document));
    if (batch_.size() >= kBatchDocuments || batch_bytes_ >= kBatchBytes ||
        (!batch_.back().bytes.in_memory() && batch_.size() >= 4 * options_.threads)) {
      Flush();
    }
  }

  void Flush() {
    std::vector<Report> reports(batch_.size());
    std::atomic<size_t> next{0};
    auto work = [&](size_t thread) {
      Recognizer* reused = ThreadRecognizer(thread);
      for (size_t i; (i = next.fetch_add(1)) < batch_.size();) {
        reports[i] = ParseDocument(grammar_, batch_[i].name, batch_[i].bytes, options_, reused);
      }
    };
    const size_t threads = std::min<size_t>(options_.threads, batch_.size());
    if (recognizers_.size() < std::max<size_t>(threads, 1)) recognizers_.resize(std::max<size_t>(threads, 1));
    if (threads <= 1) {
      work(0);
    } else {
      std::vector<std::thread> pool;
      for (size_t t = 0; t < threads; ++t) pool.emplace_back(work, t);
      for (std::thread& t : pool) t.join();
    }
    for (const Report& r : reports) {
      std::fputs(r.out.c_str(), stdout);
      std::fputs(r.err.c_str(), stderr);
      ++documents_;
      bytes_ += r.bytes;
      accepted_ += r.verdict == Verdict::kAccepted;
      rejected_ += r.verdict == Verdict::kRejected;
      errors_ += r.verdict == Verdict::kError;
    }
    std::fflush(stdout);
    batch_.clear();
    batch_bytes_ = 0;
  }

  size_t documents() const { return documents_; }
  bool any_rejected() const { return rejected_ > 0; }
  bool any_error() const { return errors_ > 0; }
  void NoteError() { ++errors_; }

  // "3000 documents: 2990 accepted, 10 rejected, 0 errors; 1.9 MB in 0.21 s
  // (9.0 MB/s, 2 threads); peak RSS 31 MB; memo: 98.2% of steps, 1204 states,
  // 0 clears"
  std::string Summary() const {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double mb = static_cast<double>(bytes_) / 1e6;
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);  // ru_maxrss: KiB on Linux
    return absl::StrFormat(
        "%d documents: %d accepted, %d rejected, %d errors; %.1f MB in %.2f s (%.1f MB/s, %d threads); "
        "peak RSS %d MB",
        documents_, accepted_, rejected_, errors_, mb, seconds, seconds > 0 ? mb / seconds : 0.0,
        options_.threads, static_cast<int64_t>(usage.ru_maxrss) / 1024) + MemoSummary();
  }

 private:
  // The recognizer of worker `thread`, kept across batches for its
  // transition memo; null when there is none (--stats, --no-pruning, --memo-mb 0).
  Recognizer* ThreadRecognizer(size_t thread) {
    if (options_.memo_bytes == 0 || !options_.pruning || options_.stats) return nullptr;
    std::unique_ptr<Recognizer>& r = recognizers_[thread];
    if (r == nullptr) {
      r = std::make_unique<Recognizer>(grammar_, ParseRecognizerOptions(true, options_.memo_bytes));
    }
    return r.get();
  }
  std::string MemoSummary() const {
    RecognizerMemoStats total;
    for (const std::unique_ptr<Recognizer>& r : recognizers_) {
      if (r == nullptr) continue;
      const RecognizerMemoStats m = r->memo_stats();
      total.hits += m.hits;
      total.misses += m.misses;
      total.states += m.states;
      total.clears += m.clears;
      total.detached += m.detached;
    }
    const uint64_t steps = total.hits + total.misses;
    if (steps == 0) return "";
    return absl::StrFormat("; memo: %.1f%% of steps, %d states, %d clears%s",
                           100.0 * static_cast<double>(total.hits) / static_cast<double>(steps),
                           total.states, total.clears,
                           total.detached > 0 ? absl::StrFormat(", %d steps too deep to keep", total.detached)
                                              : std::string());
  }

  const Grammar& grammar_;
  const ParseOptions& options_;
  // Per worker thread (resized before the workers start: see Flush).
  std::vector<std::unique_ptr<Recognizer>> recognizers_;
  std::chrono::steady_clock::time_point start_;
  std::vector<Document> batch_;
  size_t batch_bytes_ = 0;
  size_t documents_ = 0, accepted_ = 0, rejected_ = 0, errors_ = 0, bytes_ = 0;
};

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
    } else if (std::string error; TakeIndenterOption(args, &i, &options.indenter, &error)) {
      if (!error.empty()) return UsageError("parse", error);
    } else if (arg == "--generation") {
      options.generation = true;
    } else if (arg == "--texts" || absl::StartsWith(arg, "--texts=")) {
      std::string path;
      if (!TakeOptionValue(args, &i, "--texts", &path)) {
        return UsageError("parse", "--texts needs a file");
      }
      options.texts_files.push_back(path);
    } else if (arg == "--lines" || absl::StartsWith(arg, "--lines=")) {
      std::string path;
      if (!TakeOptionValue(args, &i, "--lines", &path)) {
        return UsageError("parse", "--lines needs a file ('-': standard input)");
      }
      options.lines_files.push_back(path);
    } else if (arg == "-j" || arg == "--jobs" || absl::StartsWith(arg, "--jobs=") ||
               (absl::StartsWith(arg, "-j") && arg.size() > 2)) {
      std::string value;
      if (absl::StartsWith(arg, "-j") && arg.size() > 2) {
        value = arg.substr(2);
      } else if (!TakeOptionValue(args, &i, arg == "-j" ? "-j" : "--jobs", &value)) {
        return UsageError("parse", "-j needs a thread count");
      }
      uint32_t threads = 0;
      if (!absl::SimpleAtoi(value, &threads) || threads == 0 || threads > 1024) {
        return UsageError("parse", absl::StrCat("-j takes a thread count from 1 to 1024, got '", value, "'"));
      }
      options.threads = threads;
    } else if (arg == "--memo-mb" || absl::StartsWith(arg, "--memo-mb=")) {
      std::string value;
      uint32_t mb = 0;
      if (!TakeOptionValue(args, &i, "--memo-mb", &value) || !absl::SimpleAtoi(value, &mb) ||
          mb > (1u << 20)) {
        return UsageError("parse", absl::StrCat("--memo-mb takes a size in MiB from 0 to 1048576, got '",
                                                value, "'"));
      }
      options.memo_bytes = size_t{mb} << 20;
    } else if (arg == "--quiet") {
      options.quiet = true;
    } else if (arg == "--summary") {
      options.summary = true;
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
  if (positional.size() < 2 && options.texts_files.empty() && options.lines_files.empty()) {
    return UsageError("parse", "missing FILE");
  }

  LoadOptions load_options;
  load_options.schema.lenient = options.lenient;
  load_options.indenter = options.indenter;
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

  Driver driver(*grammar, options);
  const size_t files = positional.size() - 1;
  Progress progress("parse", "files", files,
                    files > 1 && ProgressWanted(options.quiet, /*results_on_stdout=*/true));
  for (size_t i = 1; i < positional.size(); ++i) {
    driver.Add({positional[i], DocumentBytes::File(positional[i])});
    progress.Update(i);
  }
  driver.Flush();
  progress.Finish(files);
  // --texts and --lines: one document per non-blank line, named F:LINE.
  auto read_lines = [&](const std::string& path, bool json_strings) {
    LineReader reader(path);
    std::string line;
    size_t number = 0;
    // --texts lines are JSON read whole; a --lines line past kBatchBytes is
    // fed as it is read, on this thread, after the documents before it.
    const size_t max_held = json_strings ? std::numeric_limits<size_t>::max() : Driver::kBatchBytes;
    while (reader.Next(&line, &number, max_held)) {
      const std::string name = absl::StrCat(path, ":", number);
      if (reader.line_open()) {
        driver.Flush();
        driver.Add({name, DocumentBytes::LongLine(std::move(line), &reader)});
        driver.Flush();
        continue;
      }
      if (Blank(line)) continue;
      driver.Add({name, json_strings ? InlineText(path, number, line) : DocumentBytes::Text(line)});
    }
    driver.Flush();
    if (!reader.status().ok()) {
      std::fprintf(stderr, "zapgram parse: %s\n", std::string(reader.status().message()).c_str());
      if (options.json) {
        nlohmann::ordered_json error_line = {{"file", path}, {"accepted", nullptr}, {"offset", nullptr},
                                             {"line", nullptr}, {"col", nullptr}, {"expected", nullptr},
                                             {"error", std::string(reader.status().message())}};
        std::printf("%s\n", error_line.dump().c_str());
      }
      driver.NoteError();
    }
  };
  for (const std::string& path : options.texts_files) read_lines(path, /*json_strings=*/true);
  for (const std::string& path : options.lines_files) read_lines(path, /*json_strings=*/false);
  if ((!options.lines_files.empty() && !options.quiet) || options.summary) {
    std::fprintf(stderr, "zapgram parse: %s\n", driver.Summary().c_str());
  }
  if (driver.any_error()) return kExitError;
  return driver.any_rejected() ? kExitNo : kExitOk;
}

}  // namespace

const Command kParseCommand = {
    "parse",
    "check files against a grammar: accepted, or where and what was expected",
    kHelp,
    &RunParse,
};

}  // namespace zapgram::cli

