// Bitmasks and logits as the Python package receives them: numpy arrays and
// torch CPU tensors, read without importing either library into C++.
//
// A TensorView is the raw memory of a 1-D or 2-D array: data pointer, shape
// and strides (in elements), element type. A 1-D array is one row. numpy
// arrays are read through numpy's C structs (pybind11's npy_api: no Python
// calls); torch tensors, when `torch` is imported, through five attribute
// reads (is_cpu, dtype, shape, stride(), data_ptr()), their names interned
// once. Nothing is copied: masks are written into the caller's buffer.
//
// Checks name the argument and what was expected (dtype, device, shape, row
// index) and raise TypeError, ValueError or IndexError; no shape reaching the
// kernels can write outside the buffer.
//
// ApplyBitmask is apply_token_bitmask_inplace: logits[r, j] = -inf for every
// j < vocab_size whose bit (j % 32 of word j / 32 of bitmask row r) is 0.
// Whole zero words are filled 32 at a time; other words go bit by bit over
// their zero bits only.
//
// Tests: tests/python/test_bitmask.py.
#ifndef ZAPGRAM_PYTHON_SRC_TENSOR_VIEW_H_
#define ZAPGRAM_PYTHON_SRC_TENSOR_VIEW_H_

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zapgram::python {

enum class DType { kInt32, kInt64, kFloat32, kFloat64, kFloat16, kBFloat16, kOther };

struct TensorView {
  char* data = nullptr;
  int ndim = 0;
  int64_t rows = 1, cols = 0;               // a 1-D array is one row
  int64_t row_stride = 0, col_stride = 1;   // in elements
  DType dtype = DType::kOther;
  size_t element_size = 0;
  std::string other_dtype;  // the dtype's name when kOther (for errors; empty otherwise)
};

// The memory of `obj`, a numpy array or a torch CPU tensor of 1 or 2 dims;
// `name` names the argument in errors. `writable`: a read-only numpy array
// is refused (torch tensors are always writable).
TensorView ViewOf(pybind11::handle obj, const char* name, bool writable);

// Whether `obj` is a numpy array or a torch tensor (what ViewOf reads).
bool IsArray(pybind11::handle obj);
// The view's dtype as errors name it ("int32", "float16", ...).
std::string DTypeName(const TensorView& view);

// Row `index` of a bitmask view for masks of `mask_words` words: int32, rows
// of exactly mask_words contiguous words, 0 <= index < rows (a 1-D bitmask
// takes index 0 only).
uint32_t* BitmaskRow(const TensorView& bitmask, int64_t index, size_t mask_words);

// apply_token_bitmask_inplace (see above). `indices`: the rows to mask (the
// same row of logits and of the bitmask), else every row (the two must then
// have as many rows). vocab_size: default min(logits cols, 32 * bitmask cols).
void ApplyBitmask(const TensorView& logits, const TensorView& bitmask, std::optional<int64_t> vocab_size,
                  const std::optional<std::vector<int64_t>>& indices);

}  // namespace zapgram::python

#endif  // ZAPGRAM_PYTHON_SRC_TENSOR_VIEW_H_
