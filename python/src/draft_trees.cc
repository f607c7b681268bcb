// Draft-tree arguments of the Python package (see draft_trees.h).
#include "python/src/draft_trees.h"

#include <string>

#include "python/src/arguments.h"
#include "python/src/tensor_view.h"

namespace py = pybind11;

namespace zapgram::python {

namespace {

// Row r of an integer view (int64 or int32), as int64.
std::vector<int64_t> ViewRow(const TensorView& v, int64_t r) {
  std::vector<int64_t> out(static_cast<size_t>(v.cols));
  for (int64_t c = 0; c < v.cols; ++c) {
    const int64_t at = r * v.row_stride + c * v.col_stride;
    out[static_cast<size_t>(c)] = v.dtype == DType::kInt64 ? reinterpret_cast<const int64_t*>(v.data)[at]
                                                           : reinterpret_cast<const int32_t*>(v.data)[at];
  }
  return out;
}

TensorView IntView(py::handle obj, const std::string& name, int ndim) {
  const TensorView v = ViewOf(obj, name.c_str(), false);
  if (v.dtype != DType::kInt64 && v.dtype != DType::kInt32) {
    throw py::type_error(name + " must have dtype int64, got " + DTypeName(v));
  }
  if (v.ndim != ndim) {
    throw py::value_error(name + " must have " + std::to_string(ndim) + " dimension" + (ndim == 1 ? "" : "s") +
                          (ndim == 1 ? " (one entry per node)" : " (one row per matcher)") + ", got " +
                          std::to_string(v.ndim));
  }
  return v;
}

// One tree's array: a 1-D integer array or a list of ints.
std::vector<int64_t> TreeArray(py::handle obj, const ArgName& name) {
  if (IsArray(obj)) return ViewRow(IntView(obj, name.str(), 1), 0);
  return IntListArg(obj, name);
}

// `batch` trees' arrays: a 2-D integer array of `batch` rows, or a list of
// `batch` one-tree arrays.
std::vector<std::vector<int64_t>> BatchArrays(py::handle obj, const char* name, size_t batch) {
  std::vector<std::vector<int64_t>> out;
  if (IsArray(obj)) {
    const TensorView v = IntView(obj, name, 2);
    for (int64_t r = 0; r < v.rows; ++r) out.push_back(ViewRow(v, r));
  } else {
    const py::sequence items = SequenceArg(obj, name, "one array of ints per matcher");
    for (size_t k = 0; k < items.size(); ++k) {
      out.push_back(TreeArray(items[k], ArgName(name, static_cast<int64_t>(k))));
    }
  }
  if (out.size() != batch) {
    throw py::value_error(std::string(name) + " has " + std::to_string(out.size()) + " trees for " +
                          std::to_string(batch) + " matchers");
  }
  return out;
}

}  // namespace

DraftTreeArgs ReadDraftTrees(py::handle retrieve_next_token, py::handle retrieve_next_sibling,
                             py::handle draft_tokens, std::optional<size_t> batch) {
  DraftTreeArgs args;
  if (!batch.has_value()) {
    args.next_token.push_back(TreeArray(retrieve_next_token, "retrieve_next_token"));
    args.next_sibling.push_back(TreeArray(retrieve_next_sibling, "retrieve_next_sibling"));
    args.tokens.push_back(TreeArray(draft_tokens, "draft_tokens"));
  } else {
    args.next_token = BatchArrays(retrieve_next_token, "retrieve_next_token", *batch);
    args.next_sibling = BatchArrays(retrieve_next_sibling, "retrieve_next_sibling", *batch);
    args.tokens = BatchArrays(draft_tokens, "draft_tokens", *batch);
  }
  return args;
}

DraftTreeOutputs ReadDraftTreeOutputs(py::handle token_bitmask, py::handle temperatures, const DraftTreeArgs& trees,
                                      size_t mask_words) {
  DraftTreeOutputs out;
  std::vector<int64_t> offset;
  int64_t total = 0;
  bool equal = true;
  for (size_t k = 0; k < trees.trees(); ++k) {
    if (trees.tokens[k].empty()) {
      throw py::value_error(std::string(trees.trees() > 1 ? "tree " + std::to_string(k) + ": " : "") +
                            "the draft tree is empty (node 0, the root, is required)");
    }
    offset.push_back(total);
    total += static_cast<int64_t>(trees.tokens[k].size());
    equal = equal && trees.tokens[k].size() == trees.tokens[0].size();
  }
  const TensorView bitmask = ViewOf(token_bitmask, "token_bitmask", true);
  if (bitmask.dtype != DType::kInt32) {
    throw py::type_error("token_bitmask must have dtype int32, got " + DTypeName(bitmask));
  }
  if (bitmask.rows != total) {
    throw py::value_error("token_bitmask must have one row per draft tree node: " + std::to_string(total) +
                          " rows, got " + std::to_string(bitmask.rows));
  }
  if (total > 1 && bitmask.row_stride < static_cast<int64_t>(mask_words)) {
    throw py::value_error("token_bitmask rows overlap or run backwards (row stride " +
                          std::to_string(bitmask.row_stride) + " words, a row has " + std::to_string(mask_words) + ")");
  }
  out.row_stride = total > 1 ? static_cast<size_t>(bitmask.row_stride) : 0;
  for (size_t k = 0; k < trees.trees(); ++k) {
    // Checks the row length and contiguity.
    out.masks.push_back(BitmaskRow(bitmask, offset[k], mask_words));
  }
  if (temperatures.is_none()) return out;
  const TensorView t = ViewOf(temperatures, "temperatures", true);
  if (t.dtype != DType::kFloat32) throw py::type_error("temperatures must have dtype float32, got " + DTypeName(t));
  const bool flat = t.ndim == 1 && t.cols == total;
  const bool rows = t.ndim == 2 && equal && t.rows == static_cast<int64_t>(trees.trees()) && trees.trees() > 0 &&
                    t.cols == static_cast<int64_t>(trees.tokens[0].size());
  if (!flat && !rows) {
    throw py::value_error("temperatures must have one float32 entry per draft tree node (" + std::to_string(total) +
                          (trees.trees() > 1 ? ", 1-D or one row per matcher" : "") + ")");
  }
  if (t.col_stride != 1 && t.cols > 1) throw py::value_error("temperatures must be contiguous");
  float* data = reinterpret_cast<float*>(t.data);
  for (size_t k = 0; k < trees.trees(); ++k) {
    float* first = flat ? data + offset[k] * t.col_stride : data + static_cast<int64_t>(k) * t.row_stride;
    out.temperatures.push_back(absl::MakeSpan(first, trees.tokens[k].size()));
  }
  return out;
}

}  // namespace zapgram::python
