// zapgram._core: the pybind11 module under the Python package (python/zapgram).
//
// It binds the public C++ API (include/zapgram/) and nothing below it:
//   Vocabulary        zapgram::Vocabulary (tokenizer.json or a token list)
//   Grammar           zapgram::Grammar::FromText / Load
//   CompiledGrammar   zapgram::CompiledGrammar::Compile (GIL released)
//   GrammarMatcher    zapgram::Matcher, with XGrammar's method names
//   BatchGrammarMatcher  zapgram::BatchMasker: one decode step's masks (or
//                     draft trees) on a persistent pool, GIL released
//                     while it runs
//   apply_token_bitmask_inplace  tensor_view.h's kernel
// The Python files add what needs no speed (TokenizerInfo, GrammarCompiler
// and its cache, allocate_token_bitmask, the logits processor).
//
// The per-step calls (fill_next_token_bitmask, accept_token) are bound
// directly as methods of GrammarMatcher, with no Python layer in between:
// pybind11's dispatch plus the tensor view (tensor_view.h) is the whole
// overhead over Matcher::ComputeMask, which writes straight into the
// caller's bitmask row. The single-matcher calls keep the GIL: a cache hit
// costs about as much as releasing and taking it back. traverse_draft_tree
// (a mask per node of a draft tree, draft_trees.h) releases it: it runs for
// tens of microseconds or more.
//
// Errors: an absl::Status becomes ValueError (bad grammar, schema or
// argument: the engine's message with its place), FileNotFoundError (a file
// that cannot be read) or RuntimeError (a budget ran out; misuse such as a
// mask after termination). A matcher taking part in a batch running on
// another Python thread refuses every call (RuntimeError) instead of racing.
// Arguments users get wrong (ids, indices, sizes, lists, text, flags) are
// read by arguments.h: TypeError for a wrong type, ValueError for a value out
// of range (a token id outside [0, vocab_size) included), each naming the
// argument; bitmasks and logits are checked by tensor_view.h.
//
// Tests: tests/python/ (test_api.py, test_bitmask.py, test_batch.py,
// test_bad_input.py, test_draft_tree.py).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "python/src/arguments.h"
#include "python/src/draft_trees.h"
#include "python/src/tensor_view.h"
#include "zapgram/grammar.h"
#include "zapgram/matcher.h"

namespace py = pybind11;

namespace zapgram::python {
namespace {

[[noreturn]] void Raise(const absl::Status& status) {
  const std::string message(status.message());
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
      PyErr_SetString(PyExc_FileNotFoundError, message.c_str());
      throw py::error_already_set();
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kInternal:
      throw std::runtime_error(message);
    default:
      throw py::value_error(message);
  }
}

template <typename T>
T Unwrap(absl::StatusOr<T> v) {
  if (!v.ok()) Raise(v.status());
  return *std::move(v);
}

// Runs `f` (returning a StatusOr) without the GIL, then unwraps it with the
// GIL held (raising needs it).
template <typename F>
auto WithoutGil(F&& f) {
  std::optional<decltype(f())> result;
  {
    py::gil_scoped_release release;
    result.emplace(f());
  }
  return Unwrap(*std::move(result));
}

// GrammarMatcher: a Matcher plus XGrammar's termination rule.
struct PyMatcher {
  PyMatcher(const CompiledGrammar& grammar, const MatcherOptions& options, bool terminate_without_stop)
      : matcher(grammar, options),
        mask_words(grammar.mask_words()),
        vocab_size(grammar.vocabulary().padded_size()),
        eos_ids(grammar.vocabulary().eos_ids()),
        terminate_without_stop_token(terminate_without_stop) {}
  // fork(): the matcher's state forked, the same settings, in no batch.
  explicit PyMatcher(const PyMatcher& other, Matcher forked)
      : matcher(std::move(forked)),
        mask_words(other.mask_words),
        vocab_size(other.vocab_size),
        eos_ids(other.eos_ids),
        terminate_without_stop_token(other.terminate_without_stop_token) {}

  // Every call but the batch's own checks that no batch holds the matcher
  // (the flag is read and written with the GIL held).
  void CheckFree() const {
    if (in_batch) throw std::runtime_error("this GrammarMatcher is being filled by a batch on another thread");
  }
  void CheckStatus() const {
    const absl::Status status = matcher.status();
    if (!status.ok()) Raise(status);
  }
  void CheckNotFinished() const {
    if (matcher.IsFinished()) {
      throw std::runtime_error(
          "the GrammarMatcher has terminated (it accepted a stop token); reset() or rollback() it first");
    }
  }
  bool IsTerminated() const {
    return matcher.IsFinished() || (terminate_without_stop_token && matcher.IsAccepting());
  }

  Matcher matcher;
  size_t mask_words;
  int32_t vocab_size;
  std::vector<int32_t> eos_ids;
  bool terminate_without_stop_token;
  bool in_batch = false;
};

// get_temperature() and the `temperature` property.
std::optional<float> Temperature(const PyMatcher& m) {
  m.CheckFree();
  return m.matcher.GetTemperature();
}

// tokens_left: None or an int (the engine's semantics: <= 0 allows nothing).
std::optional<int64_t> TokensLeftArg(py::handle tokens_left, const ArgName& name) {
  if (tokens_left.is_none()) return std::nullopt;
  return IntArg(tokens_left, name);
}

bool Fill(PyMatcher& m, py::handle bitmask, py::handle index, py::handle tokens_left) {
  m.CheckFree();
  m.CheckNotFinished();
  const TensorView view = ViewOf(bitmask, "bitmask", true);
  const std::optional<int64_t> budget = TokensLeftArg(tokens_left, "tokens_left");
  uint32_t* row = BitmaskRow(view, IntArg(index, "index"), m.mask_words);
  // tokens_left: the budget-aware mask (masks/budget_mask.h).
  const size_t allowed = budget ? m.matcher.ComputeMask(row, *budget) : m.matcher.ComputeMask(row);
  m.CheckStatus();
  return allowed != static_cast<size_t>(m.vocab_size);
}

// A token id of the matcher's vocabulary: ValueError outside [0, vocab_size)
// (XGrammar logs a warning and refuses the token; an id no logits column
// has is a caller's bug, so zapgram says so).
int32_t TokenIdArg(py::handle value, const ArgName& name, int32_t vocab_size) {
  const auto out_of_range = [&](const std::string& id) {
    return py::value_error(name.str() + " is " + id + ": not a token id of this vocabulary (ids are 0 <= id < " +
                           std::to_string(vocab_size) + ")");
  };
  int64_t id = 0;
  try {
    id = IntArg(value, name);
  } catch (const py::value_error&) {  // past 64 bits
    throw out_of_range(std::string(py::str(value)));
  }
  if (id < 0 || id >= vocab_size) throw out_of_range(std::to_string(id));
  return static_cast<int32_t>(id);
}

// accept_token: false when the grammar refuses the token (special and
// padding ids included); an exhausted budget raises.
bool AcceptToken(PyMatcher& m, py::handle token, const ArgName& name) {
  m.CheckFree();
  const bool ok = m.matcher.AcceptToken(TokenIdArg(token, name, m.vocab_size));
  if (!ok) m.CheckStatus();
  return ok;
}

bool AcceptString(PyMatcher& m, py::handle input, const ArgName& name) {
  m.CheckFree();
  const std::string text = TextArg(input, name);
  const bool ok = m.matcher.AcceptBytes(text);
  if (!ok) m.CheckStatus();
  return ok;
}

// Median over `blocks` timed blocks of `per_block` calls of `f`, in ns per
// call: the C++ side of perf/python_overhead.py.
template <typename F>
double MedianNsPerCall(int blocks, int per_block, F&& f) {
  if (blocks < 1 || per_block < 1) throw py::value_error("blocks and per_block must be >= 1");
  std::vector<double> ns;
  for (int b = 0; b < blocks; ++b) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < per_block; ++i) f();
    const auto end = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(end - start).count() / per_block);
  }
  std::nth_element(ns.begin(), ns.begin() + ns.size() / 2, ns.end());
  return ns[ns.size() / 2];
}

// ComputeMask on the matcher's current state.
double TimeComputeMask(PyMatcher& m, int blocks, int per_block) {
  m.CheckFree();
  std::vector<uint32_t> words(m.mask_words);
  return MedianNsPerCall(blocks, per_block, [&] { m.matcher.ComputeMask(words.data()); });
}

// The apply_token_bitmask_inplace kernel on views taken once.
double TimeApply(py::handle logits, py::handle bitmask, int blocks, int per_block) {
  const TensorView l = ViewOf(logits, "logits", true);
  const TensorView b = ViewOf(bitmask, "bitmask", false);
  return MedianNsPerCall(blocks, per_block, [&] { ApplyBitmask(l, b, std::nullopt, std::nullopt); });
}

PyMatcher& AsMatcher(py::handle h, size_t k) {
  if (!py::isinstance<PyMatcher>(h)) {
    throw py::type_error("matchers[" + std::to_string(k) + "] must be a GrammarMatcher, got " + Describe(h));
  }
  return h.cast<PyMatcher&>();
}

// batch_accept_token / batch_accept_string: accept(matchers[k], items[k],
// "NAME[k]"). `what` words the error for an items argument that is not a
// list ("ints", "strings").
template <typename Accept>
std::vector<bool> BatchAccept(py::handle matchers_arg, py::handle items_arg, const char* name, const char* what,
                              Accept accept) {
  const py::sequence matchers = SequenceArg(matchers_arg, "matchers", "GrammarMatcher objects");
  const py::sequence items = SequenceArg(items_arg, name, (std::string(what) + ", one per matcher").c_str());
  if (items.size() != matchers.size()) {
    throw py::value_error("one token or string per matcher is needed: " + std::to_string(items.size()) + " for " +
                          std::to_string(matchers.size()) + " matchers");
  }
  std::vector<bool> accepted;
  for (size_t k = 0; k < items.size(); ++k) {
    accepted.push_back(accept(AsMatcher(matchers[k], k), items[k], ArgName(name, static_cast<int64_t>(k))));
  }
  return accepted;
}

// The matchers of a batch call, marked busy for its duration.
class BatchClaim {
 public:
  explicit BatchClaim(const py::sequence& matchers) {
    claimed_.reserve(matchers.size());
    try {
      for (py::handle h : matchers) {
        PyMatcher& m = AsMatcher(h, claimed_.size());
        if (m.in_batch) {
          throw std::runtime_error("a GrammarMatcher appears twice in the batch, or is in another batch");
        }
        m.in_batch = true;
        claimed_.push_back(&m);
      }
    } catch (...) {
      Release();
      throw;
    }
  }
  ~BatchClaim() { Release(); }
  const std::vector<PyMatcher*>& matchers() const { return claimed_; }

 private:
  void Release() {
    for (PyMatcher* m : claimed_) m->in_batch = false;
  }
  std::vector<PyMatcher*> claimed_;
};

// tokens_left: None (plain masks), one int for every row, or one entry per
// matcher, each an int (its budget-aware mask) or None (its plain mask).
std::vector<std::optional<int64_t>> BudgetsOf(py::handle tokens_left, size_t num_matchers) {
  if (tokens_left.is_none()) return {};
  if (!PySequence_Check(tokens_left.ptr()) || PyUnicode_Check(tokens_left.ptr()) ||
      PyBytes_Check(tokens_left.ptr())) {
    return std::vector<std::optional<int64_t>>(num_matchers, IntArg(tokens_left, "tokens_left"));
  }
  std::vector<std::optional<int64_t>> budgets;
  const py::sequence entries = py::reinterpret_borrow<py::sequence>(tokens_left);
  for (size_t k = 0; k < entries.size(); ++k) {
    budgets.push_back(TokensLeftArg(entries[k], ArgName("tokens_left", static_cast<int64_t>(k))));
  }
  if (budgets.size() != num_matchers) {
    throw py::value_error("tokens_left has " + std::to_string(budgets.size()) + " entries for " +
                          std::to_string(num_matchers) + " matchers");
  }
  return budgets;
}

void BatchFill(BatchMasker& masker, py::handle matchers_arg, py::handle bitmask, py::handle indices_arg,
               py::handle tokens_left) {
  const py::sequence matchers = SequenceArg(matchers_arg, "matchers", "GrammarMatcher objects");
  std::optional<std::vector<int64_t>> indices;
  if (!indices_arg.is_none()) indices = IntListArg(indices_arg, "indices");
  if (indices.has_value() && indices->size() != matchers.size()) {
    throw py::value_error("indices has " + std::to_string(indices->size()) + " entries for " +
                          std::to_string(matchers.size()) + " matchers");
  }
  const std::vector<std::optional<int64_t>> budgets = BudgetsOf(tokens_left, matchers.size());
  BatchClaim claim(matchers);
  const TensorView view = ViewOf(bitmask, "bitmask", true);
  std::vector<Matcher*> raw;
  std::vector<uint32_t*> rows;
  for (size_t k = 0; k < claim.matchers().size(); ++k) {
    PyMatcher& m = *claim.matchers()[k];
    m.CheckNotFinished();
    rows.push_back(BitmaskRow(view, indices.has_value() ? (*indices)[k] : static_cast<int64_t>(k), m.mask_words));
    raw.push_back(&m.matcher);
  }
  std::vector<uint32_t*> sorted = rows;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw py::value_error("two matchers of the batch would fill the same bitmask row");
  }
  {
    py::gil_scoped_release release;
    masker.ComputeWithBudgets(raw, rows, budgets);
  }
  for (PyMatcher* m : claim.matchers()) m->CheckStatus();
}

// Marks matchers busy while their draft trees are walked without the GIL
// (another Python thread's call on one of them then raises instead of
// racing); the flags are set and cleared with the GIL held.
class GilFreeClaim {
 public:
  explicit GilFreeClaim(std::vector<PyMatcher*> matchers) : matchers_(std::move(matchers)) {
    for (size_t k = 0; k < matchers_.size(); ++k) {
      if (matchers_[k]->in_batch) {
        Release(k);
        throw std::runtime_error("a GrammarMatcher appears twice in the batch, or is in another batch");
      }
      matchers_[k]->in_batch = true;
    }
  }
  ~GilFreeClaim() { Release(matchers_.size()); }

 private:
  void Release(size_t n) {
    for (size_t k = 0; k < n; ++k) matchers_[k]->in_batch = false;
  }
  std::vector<PyMatcher*> matchers_;
};

DraftTreeOptions DraftOptions(py::handle time_threshold, size_t row_stride) {
  DraftTreeOptions options;
  options.time_threshold = FloatArg(time_threshold, "time_threshold");
  options.row_stride = row_stride;
  return options;
}

// traverse_draft_tree: XGrammar's (see zapgram/matcher.h and
// masks/draft_tree.h for what it fills).
bool TraverseDraftTree(PyMatcher& m, py::handle next_token, py::handle next_sibling, py::handle draft_tokens,
                       py::handle token_bitmask, py::handle time_threshold, py::handle temperatures) {
  m.CheckFree();
  const DraftTreeArgs trees = ReadDraftTrees(next_token, next_sibling, draft_tokens, std::nullopt);
  const DraftTreeOutputs out = ReadDraftTreeOutputs(token_bitmask, temperatures, trees, m.mask_words);
  DraftTreeOptions options = DraftOptions(time_threshold, out.row_stride);
  options.terminate_when_accepting = m.terminate_without_stop_token;
  std::optional<absl::StatusOr<bool>> done;
  {
    GilFreeClaim claim({&m});
    py::gil_scoped_release release;
    done.emplace(m.matcher.TraverseDraftTree(trees.tree(0), out.masks[0],
                                             out.temperatures.empty() ? absl::Span<float>() : out.temperatures[0],
                                             options));
  }
  return Unwrap(*std::move(done));
}

// batch_traverse_draft_tree: one tree per matcher on the pool, the GIL
// released; the trees' rows one after the other in token_bitmask.
std::vector<bool> BatchTraverseDraftTrees(BatchMasker& masker, py::handle matchers_arg, py::handle next_token,
                                          py::handle next_sibling, py::handle draft_tokens, py::handle token_bitmask,
                                          py::handle time_threshold, py::handle temperatures) {
  const py::sequence matchers = SequenceArg(matchers_arg, "matchers", "GrammarMatcher objects");
  std::vector<PyMatcher*> claimed;
  std::vector<Matcher*> raw;
  for (size_t k = 0; k < matchers.size(); ++k) {
    claimed.push_back(&AsMatcher(matchers[k], k));
    raw.push_back(&claimed.back()->matcher);
  }
  const DraftTreeArgs trees = ReadDraftTrees(next_token, next_sibling, draft_tokens, matchers.size());
  const size_t words = claimed.empty() ? 0 : claimed[0]->mask_words;
  for (PyMatcher* m : claimed) {
    if (m->mask_words != words) throw py::value_error("the matchers' vocabularies differ in size");
  }
  const DraftTreeOutputs out = ReadDraftTreeOutputs(token_bitmask, temperatures, trees, words);
  DraftTreeOptions options = DraftOptions(time_threshold, out.row_stride);
  std::vector<DraftTree> views;
  for (size_t k = 0; k < trees.trees(); ++k) views.push_back(trees.tree(k));
  bool terminate = false;
  for (PyMatcher* m : claimed) terminate = terminate || m->terminate_without_stop_token;
  for (PyMatcher* m : claimed) {
    if (m->terminate_without_stop_token != terminate) {
      throw py::value_error("the matchers of a batch_traverse_draft_tree differ in terminate_without_stop_token");
    }
  }
  options.terminate_when_accepting = terminate;
  std::unique_ptr<bool[]> completed(new bool[raw.size()]());
  absl::Status status;
  {
    GilFreeClaim claim(claimed);
    py::gil_scoped_release release;
    status = masker.TraverseDraftTrees(raw, views, out.masks, out.temperatures, options,
                                       absl::MakeSpan(completed.get(), raw.size()));
  }
  if (!status.ok()) Raise(status);
  return std::vector<bool>(completed.get(), completed.get() + raw.size());
}

// The longest prefix of `s` that is valid UTF-8 (a str cannot hold the tail
// of a character begun earlier, nor the head of one the grammar has not
// settled yet).
std::string ValidUtf8Prefix(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t lead = static_cast<uint8_t>(s[i]);
    const size_t length = lead < 0x80 ? 1 : (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3
                        : (lead & 0xF8) == 0xF0 ? 4 : 0;
    if (length == 0 || i + length > s.size()) break;
    bool whole = true;
    for (size_t k = 1; k < length; ++k) whole = whole && (static_cast<uint8_t>(s[i + k]) & 0xC0) == 0x80;
    if (!whole) break;
    i += length;
  }
  return s.substr(0, i);
}

GrammarFormat ParseFormat(const std::string& name) {
  if (name == "gbnf" || name == "ebnf") return GrammarFormat::kGbnf;
  if (name == "lark") return GrammarFormat::kLark;
  if (name == "llguidance") return GrammarFormat::kLlguidanceLark;
  if (name == "regex") return GrammarFormat::kRegex;
  if (name == "json_schema") return GrammarFormat::kJsonSchema;
  if (name == "structural_tags") return GrammarFormat::kStructuralTags;
  throw py::value_error("unknown grammar format '" + name +
                        "' (gbnf, ebnf, lark, llguidance, regex, json_schema or structural_tags)");
}

IndenterOptions::Mode ParseIndenter(const std::string& mode) {
  if (mode == "auto") return IndenterOptions::Mode::kAuto;
  if (mode == "on") return IndenterOptions::Mode::kOn;
  if (mode == "off") return IndenterOptions::Mode::kOff;
  throw py::value_error("indenter must be 'auto', 'on' or 'off', not '" + mode + "'");
}

LoadOptions MakeLoadOptions(bool lenient, bool compact, uint32_t max_whitespace, bool any_order,
                            bool validation, const std::string& indenter = "auto") {
  LoadOptions options;
  options.indenter.mode = ParseIndenter(indenter);
  options.schema.purpose = validation ? SchemaPurpose::kValidation : SchemaPurpose::kGeneration;
  options.schema.lenient = lenient;
  options.schema.compact = compact;
  options.schema.max_whitespace = max_whitespace;
  options.schema.any_order = any_order;
  return options;
}

}  // namespace
}  // namespace zapgram::python

PYBIND11_MODULE(_core, m) {
  using namespace zapgram;
  using namespace zapgram::python;
  m.doc() = "zapgram's C++ engine (use the zapgram package, not this module)";
  m.attr("SERIAL_FORMAT_VERSION") = CompiledGrammar::kSerialFormatVersion;

  py::class_<Vocabulary>(m, "Vocabulary")
      .def_static(
          "load",
          [](const std::string& path, uint32_t padded_size, std::optional<std::vector<int32_t>> eos_ids) {
            VocabularyOptions options;
            options.padded_size = padded_size;
            options.eos_ids = std::move(eos_ids);
            return WithoutGil([&] { return Vocabulary::Load(path, options); });
          },
          py::arg("path"), py::arg("padded_size") = 0, py::arg("eos_ids") = py::none())
      .def_static(
          "from_tokens",
          [](const std::vector<std::string>& tokens, const std::vector<int32_t>& eos_ids) {
            return Unwrap(Vocabulary::FromTokens(tokens, eos_ids));
          },
          py::arg("tokens"), py::arg("eos_ids"))
      .def_property_readonly("size", &Vocabulary::size)
      .def_property_readonly("padded_size", &Vocabulary::padded_size)
      .def_property_readonly("eos_ids", &Vocabulary::eos_ids)
      .def("token_bytes", [](const Vocabulary& v, int32_t id) { return py::bytes(std::string(v.token_bytes(id))); })
      .def("is_normal", &Vocabulary::is_normal)
      .def_property_readonly("fingerprint", &Vocabulary::fingerprint);

  py::class_<Grammar>(m, "Grammar")
      .def_static(
          "from_text",
          [](const std::string& format, const std::string& text, bool lenient, bool compact,
             uint32_t max_whitespace, bool any_order, const std::string& source_name, bool validation,
             const std::string& indenter) {
            const GrammarFormat f = ParseFormat(format);
            const LoadOptions options =
                MakeLoadOptions(lenient, compact, max_whitespace, any_order, validation, indenter);
            return WithoutGil([&] { return Grammar::FromText(f, text, options, source_name); });
          },
          py::arg("format"), py::arg("text"), py::arg("lenient") = false, py::arg("compact") = false,
          py::arg("max_whitespace") = 2, py::arg("any_order") = false, py::arg("source_name") = "<text>",
          py::arg("validation") = false, py::arg("indenter") = "auto")
      .def_static(
          "load",
          [](const std::string& spec, const std::string& data_root, bool lenient, bool compact,
             uint32_t max_whitespace, bool any_order, bool validation, const std::string& indenter) {
            const LoadOptions options =
                MakeLoadOptions(lenient, compact, max_whitespace, any_order, validation, indenter);
            return WithoutGil([&] { return Grammar::Load(spec, data_root, options); });
          },
          py::arg("spec"), py::arg("data_root") = "", py::arg("lenient") = false, py::arg("compact") = false,
          py::arg("max_whitespace") = 2, py::arg("any_order") = false, py::arg("validation") = false,
          py::arg("indenter") = "auto")
      .def_property_readonly("warnings", &Grammar::warnings);

  py::class_<CompiledGrammar>(m, "CompiledGrammar", py::dynamic_attr())
      .def(py::init([](py::handle grammar_arg, py::handle vocabulary_arg) {
             if (!py::isinstance<Grammar>(grammar_arg) || !py::isinstance<Vocabulary>(vocabulary_arg)) {
               throw py::type_error(
                   "a CompiledGrammar is made by GrammarCompiler(tokenizer_info).compile_*(...), not directly "
                   "(got " + Describe(grammar_arg) + ", " + Describe(vocabulary_arg) + ")");
             }
             const Grammar& grammar = grammar_arg.cast<const Grammar&>();
             const Vocabulary& vocabulary = vocabulary_arg.cast<const Vocabulary&>();
             return WithoutGil([&] { return CompiledGrammar::Compile(grammar, vocabulary); });
           }),
           py::arg("grammar"), py::arg("vocabulary"))
      // Persistent compiled grammars: the bytes of CompiledGrammar::Serialize
      // and back (the Python package adds serialize(), serialize_json() and
      // their inverses over these, compiler.py).
      .def("_serialize",
           [](const CompiledGrammar& g) {
             std::string bytes;
             {
               py::gil_scoped_release release;
               bytes = g.Serialize();
             }
             return py::bytes(bytes);
           })
      .def_static(
          "_deserialize",
          [](py::bytes data, py::handle vocabulary_arg) {
            if (!py::isinstance<Vocabulary>(vocabulary_arg)) {
              throw py::type_error("vocabulary must be a Vocabulary, got " + Describe(vocabulary_arg));
            }
            const Vocabulary& vocabulary = vocabulary_arg.cast<const Vocabulary&>();
            const std::string_view view = data;
            return WithoutGil([&] { return CompiledGrammar::Deserialize(view, vocabulary); });
          },
          py::arg("data"), py::arg("vocabulary"))
      .def_property_readonly("_warnings", [](const CompiledGrammar& g) { return g.grammar().warnings(); })
      .def_property_readonly("mask_words", &CompiledGrammar::mask_words)
      .def_property_readonly("vocabulary", &CompiledGrammar::vocabulary)
      .def_property_readonly("memory_bytes", &CompiledGrammar::memory_bytes)
      .def_property_readonly("cache_stats", [](const CompiledGrammar& g) {
        const CompiledGrammar::CacheStats s = g.cache_stats();
        py::dict d;
        d["hits"] = s.hits;
        d["misses"] = s.misses;
        d["entries"] = s.entries;
        d["bytes"] = s.bytes;
        return d;
      });

  py::class_<PyMatcher>(m, "GrammarMatcher", R"(Matches one sequence against a compiled grammar and
fills its next-token bitmask (XGrammar's GrammarMatcher). Stop tokens are the
TokenizerInfo's; max_rollback_bytes bounds rollback (zapgram's budget is in bytes);
cache=False turns off the mask cache (for measurements).)")
      .def(py::init([](py::handle compiled_grammar, py::handle override_stop_tokens,
                       py::handle terminate_without_stop_token, py::handle max_rollback_tokens,
                       py::handle max_rollback_bytes, py::handle cache, py::handle default_temperature) {
             if (!py::isinstance<CompiledGrammar>(compiled_grammar)) {
               throw py::type_error(
                   "compiled_grammar must be a CompiledGrammar (from GrammarCompiler(tokenizer_info).compile_*), "
                   "got " + Describe(compiled_grammar));
             }
             const CompiledGrammar& grammar = compiled_grammar.cast<const CompiledGrammar&>();
             // XGrammar deprecated max_rollback_tokens (-1: no limit); zapgram's budget is in bytes.
             IntArg(max_rollback_tokens, "max_rollback_tokens", -1);
             MatcherOptions options;
             options.max_rollback_bytes = static_cast<uint32_t>(
                 IntArg(max_rollback_bytes, "max_rollback_bytes", 0, std::numeric_limits<uint32_t>::max()));
             options.use_cache = BoolArg(cache, "cache");
             if (!default_temperature.is_none()) {
               const double t = FloatArg(default_temperature, "default_temperature");
               if (!std::isfinite(t) || t < 0 || t > std::numeric_limits<float>::max()) {
                 throw py::value_error("default_temperature must be a finite number >= 0, got " +
                                       Describe(default_temperature));
               }
               options.default_temperature = static_cast<float>(t);
             }
             const bool terminate = BoolArg(terminate_without_stop_token, "terminate_without_stop_token");
             if (!override_stop_tokens.is_none()) {
               const int32_t vocab_size = grammar.vocabulary().padded_size();
               PyObject* o = override_stop_tokens.ptr();
               if (PyUnicode_Check(o) || PyBytes_Check(o)) {
                 throw py::type_error("override_stop_tokens must be an int or a list of ints, got " +
                                      Describe(override_stop_tokens));
               }
               // One id or a list of them.
               const std::vector<int64_t> given =
                   PySequence_Check(o) ? IntListArg(o, "override_stop_tokens", 0, vocab_size - 1)
                                       : std::vector<int64_t>{IntArg(o, "override_stop_tokens", 0, vocab_size - 1)};
               std::vector<int32_t> ids(given.begin(), given.end());
               std::sort(ids.begin(), ids.end());
               ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
               if (ids != grammar.vocabulary().eos_ids()) {
                 throw py::value_error(
                     "override_stop_tokens is not supported: zapgram's stop tokens belong to the vocabulary "
                     "(TokenizerInfo(..., stop_token_ids=...))");
               }
             }
             return std::make_unique<PyMatcher>(grammar, options, terminate);
           }),
           py::arg("compiled_grammar"), py::kw_only(), py::arg("override_stop_tokens") = py::none(),
           py::arg("terminate_without_stop_token") = false, py::arg("max_rollback_tokens") = -1,
           py::arg("max_rollback_bytes") = 512, py::arg("cache") = true,
           py::arg("default_temperature") = py::none())
      .def(
          "fill_next_token_bitmask",
          [](PyMatcher& m, py::handle bitmask, py::handle index, bool debug_print, py::handle tokens_left) {
            (void)debug_print;
            return Fill(m, bitmask, index, tokens_left);
          },
          py::arg("bitmask"), py::arg("index") = 0, py::kw_only(), py::arg("debug_print") = false,
          py::arg("tokens_left") = py::none(),
          "Writes the next-token mask into bitmask[index]; returns whether it masks anything.\n"
          "tokens_left=n (zapgram extension): the budget-aware mask, tokens after which the\n"
          "text can still be finished within n tokens, EOS counted.")
      .def(
          "accept_token",
          [](PyMatcher& m, py::handle token_id, bool debug_print) {
            (void)debug_print;
            return AcceptToken(m, token_id, "token_id");
          },
          py::arg("token_id"), py::kw_only(), py::arg("debug_print") = false)
      .def(
          "accept_string",
          [](PyMatcher& m, py::handle input_str, bool debug_print) {
            (void)debug_print;
            return AcceptString(m, input_str, "input_str");
          },
          py::arg("input_str"), py::kw_only(), py::arg("debug_print") = false)
      .def(
          "rollback",
          [](PyMatcher& m, py::handle num_tokens) {
            m.CheckFree();
            const int64_t n = IntArg(num_tokens, "num_tokens", 0);
            if (!m.matcher.Rollback(static_cast<size_t>(n))) {
              throw std::runtime_error("cannot roll back " + std::to_string(n) +
                                       " tokens: more than were accepted, or beyond max_rollback_bytes");
            }
          },
          py::arg("num_tokens") = 1)
      .def("reset",
           [](PyMatcher& m) {
             m.CheckFree();
             m.matcher.Reset();
           })
      .def(
          "get_captures",
          [](const PyMatcher& m, py::handle deduplicate) {
            m.CheckFree();
            py::list out;
            for (const auto& [name, bytes] : m.matcher.GetCaptures(BoolArg(deduplicate, "deduplicate"))) {
              out.append(py::make_tuple(py::str(name), py::bytes(bytes)));
            }
            return out;
          },
          py::kw_only(), py::arg("deduplicate") = true,
          "The captures recorded so far, [(name, bytes)], in completion order (XGrammar's\n"
          "get_captures): rules written name[capture] or name[capture=\"x\"] record the text of each\n"
          "completion while tokens or strings are accepted; masks record none and rollback removes\n"
          "those of the tokens it undoes. deduplicate=True keeps the longest completion of each\n"
          "occurrence (a rule at one start); False gives every completion.")
      .def(
          "get_temperature", &Temperature,
          "The sampling temperature in effect: that of the innermost rule written\n"
          "name[temperature=x] around the current position (the largest when parses differ), else\n"
          "default_temperature, else None.")
      .def_property_readonly("temperature", &Temperature, "XGrammar's name for get_temperature().")
      .def(
          "fork",
          [](const PyMatcher& m) {
            m.CheckFree();
            return std::make_unique<PyMatcher>(m, m.matcher.Fork());
          },
          "A new GrammarMatcher in this one's state (text, rollback window, termination),\n"
          "sharing the compiled grammar; the two then accept, roll back and fill masks apart.")
      .def("is_terminated",
           [](const PyMatcher& m) {
             m.CheckFree();
             return m.IsTerminated();
           })
      .def("is_completed",
           [](const PyMatcher& m) {
             m.CheckFree();
             return m.matcher.IsAccepting();
           })
      .def("find_jump_forward_string",
           [](PyMatcher& m) {
             m.CheckFree();
             return ValidUtf8Prefix(m.matcher.ForcedBytes());
           })
      .def("find_jump_forward_bytes",
           [](PyMatcher& m) {
             m.CheckFree();
             return py::bytes(m.matcher.ForcedBytes());
           })
      .def(
          "compute_ff_tokens",
          [](PyMatcher& m) {
            m.CheckFree();
            if (m.IsTerminated()) return std::vector<int32_t>();
            return WithoutGil([&] { return m.matcher.ComputeFastForwardTokens(); });
          },
          "Canonical fast-forward tokens: the ids every continuation the grammar allows begins with\n"
          "in the tokenizer's own encoding, stopping before any token the following text could\n"
          "respell (llguidance's compute_ff_tokens). Their bytes are a prefix of\n"
          "find_jump_forward_bytes(); the matcher is unchanged. The first call reads the tokenizer's\n"
          "merges from its tokenizer.json (TokenizerInfo.from_huggingface); a TokenizerInfo built from\n"
          "a token list raises ValueError.")
      .def(
          "validate_tokens",
          [](PyMatcher& m, py::handle tokens_arg) {
            m.CheckFree();
            std::vector<int32_t> tokens;
            const py::sequence items = SequenceArg(tokens_arg, "tokens", "token ids");
            for (size_t k = 0; k < items.size(); ++k) {
              tokens.push_back(TokenIdArg(items[k], ArgName("tokens", static_cast<int64_t>(k)), m.vocab_size));
            }
            return m.matcher.ValidateTokens(tokens);
          },
          py::arg("tokens"), "How many leading tokens would be accepted in sequence (the state is unchanged).")
      .def("traverse_draft_tree", &TraverseDraftTree, py::arg("retrieve_next_token"),
           py::arg("retrieve_next_sibling"), py::arg("draft_tokens"), py::arg("token_bitmask"),
           py::arg("time_threshold") = -1.0, py::arg("temperatures") = py::none(),
           "Fills token_bitmask[i] with the mask after the path to draft tree node i (XGrammar's\n"
           "traverse_draft_tree): node 0 is the current state; a node is visited when its parent's row\n"
           "allows its token and the matcher accepts it without terminating; every other row is zeroed.\n"
           "The tree arrays are int64 tensors (or lists); token_bitmask has one row per node;\n"
           "temperatures (float32, one per node) gets each visited node's get_temperature() after\n"
           "its path, -1 for none and for nodes not visited. The matcher is unchanged. Returns False when time_threshold (seconds, > 0) ran out.")
      .def_property_readonly("stop_token_ids",
                             [](const PyMatcher& m) { return m.eos_ids; })
      .def_property_readonly("max_rollback_tokens", [](const PyMatcher&) { return -1; })
      .def_property_readonly("vocab_size", [](const PyMatcher& m) { return m.vocab_size; })
      .def("_time_compute_mask", &TimeComputeMask, py::arg("blocks") = 31, py::arg("per_block") = 200);

  py::class_<BatchMasker>(m, "BatchGrammarMatcher", R"(Fills many matchers' bitmasks on a persistent pool
of max_threads threads ("auto": half the hardware threads), with the GIL released.)")
      .def(py::init([](py::handle max_threads) {
             int threads = 0;
             if (PyUnicode_Check(max_threads.ptr())) {
               if (max_threads.cast<std::string>() != "auto") {
                 throw py::value_error("max_threads must be an int >= 1 or \"auto\", got " + Describe(max_threads));
               }
             } else {
               if (!PyLong_Check(max_threads.ptr()) && !PyIndex_Check(max_threads.ptr())) {
                 throw py::type_error("max_threads must be an int >= 1 or \"auto\", got " + Describe(max_threads));
               }
               threads = static_cast<int>(IntArg(max_threads, "max_threads", 1, std::numeric_limits<int>::max()));
             }
             return std::make_unique<BatchMasker>(threads);
           }),
           py::arg("max_threads") = "auto")
      .def_property_readonly("max_threads", &BatchMasker::threads)
      .def(
          "batch_fill_next_token_bitmask",
          [](BatchMasker& masker, py::handle matchers, py::handle bitmask, py::handle indices, bool debug_print,
             py::handle tokens_left) {
            (void)debug_print;
            BatchFill(masker, matchers, bitmask, indices, tokens_left);
          },
          py::arg("matchers"), py::arg("bitmask"), py::arg("indices") = py::none(), py::arg("debug_print") = false,
          py::kw_only(), py::arg("tokens_left") = py::none(),
          "Fills bitmask[indices[k]] (row k without indices) for each matcher on the pool.\n"
          "tokens_left (zapgram extension): one int for every row or one entry per matcher (int or\n"
          "None): the budget-aware masks, as fill_next_token_bitmask(..., tokens_left=n).")
      .def("batch_traverse_draft_tree", &BatchTraverseDraftTrees, py::arg("matchers"),
           py::arg("retrieve_next_token"), py::arg("retrieve_next_sibling"), py::arg("draft_tokens"),
           py::arg("token_bitmask"), py::arg("time_threshold") = -1.0, py::arg("temperatures") = py::none(),
           "traverse_draft_tree for one tree per matcher on the pool, the GIL released (zapgram\n"
           "extension). The tree arrays are 2-D (one row per matcher; SGLang's layout) or lists of\n"
           "1-D ones; matcher k's node i fills row offset_k + i of token_bitmask (k * N for trees of\n"
           "N nodes). time_threshold counts from the call's start for every tree. Returns one bool\n"
           "per matcher.")
      .def_static(
          "batch_accept_token",
          [](py::handle matchers, py::handle tokens, bool debug_print) {
            (void)debug_print;
            return BatchAccept(matchers, tokens, "tokens", "token ids", &AcceptToken);
          },
          py::arg("matchers"), py::arg("tokens"), py::arg("debug_print") = false)
      .def_static(
          "batch_accept_string",
          [](py::handle matchers, py::handle strings, bool debug_print) {
            (void)debug_print;
            return BatchAccept(matchers, strings, "strings", "str or bytes", &AcceptString);
          },
          py::arg("matchers"), py::arg("strings"), py::arg("debug_print") = false);

  m.def(
      "apply_token_bitmask_inplace",
      [](py::handle logits, py::handle bitmask, py::handle vocab_size, py::handle indices) {
        const TensorView logits_view = ViewOf(logits, "logits", true);
        const TensorView bitmask_view = ViewOf(bitmask, "bitmask", false);
        std::optional<int64_t> vocab;
        if (!vocab_size.is_none()) vocab = IntArg(vocab_size, "vocab_size", 0);
        std::optional<std::vector<int64_t>> rows;
        if (!indices.is_none()) rows = IntListArg(indices, "indices");
        ApplyBitmask(logits_view, bitmask_view, vocab, rows);
      },
      py::arg("logits"), py::arg("bitmask"), py::kw_only(), py::arg("vocab_size") = py::none(),
      py::arg("indices") = py::none(),
      "Sets logits[i, j] to -inf where bit j of bitmask row i is 0 (in place; CPU tensors or numpy arrays).");
  // The argument checks of arguments.h, for the package's Python files.
  m.def(
      "_int_arg",
      [](py::handle value, const std::string& name, std::optional<int64_t> minimum, std::optional<int64_t> maximum) {
        return IntArg(value, name.c_str(), minimum.value_or(std::numeric_limits<int64_t>::min()),
                      maximum.value_or(std::numeric_limits<int64_t>::max()));
      },
      py::arg("value"), py::arg("name"), py::arg("minimum") = py::none(), py::arg("maximum") = py::none());
  m.def(
      "_int_list_arg",
      [](py::handle value, const std::string& name, std::optional<int64_t> minimum, std::optional<int64_t> maximum) {
        return IntListArg(value, name.c_str(), minimum.value_or(std::numeric_limits<int64_t>::min()),
                          maximum.value_or(std::numeric_limits<int64_t>::max()));
      },
      py::arg("value"), py::arg("name"), py::arg("minimum") = py::none(), py::arg("maximum") = py::none());
  m.def("_time_apply", &TimeApply, py::arg("logits"), py::arg("bitmask"), py::arg("blocks") = 31,
        py::arg("per_block") = 20);
}
