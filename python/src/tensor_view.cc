// numpy / torch memory views and the bitmask kernel (see tensor_view.h).
#include "python/src/tensor_view.h"

#include <pybind11/numpy.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <string>

namespace py = pybind11;

namespace zapgram::python {
namespace {

// Objects of the torch module, looked up once torch has been imported by
// someone (zapgram never imports it from C++). Held for the process's life.
struct Torch {
  PyObject* tensor_type = nullptr;
  PyObject* int32 = nullptr;
  PyObject* int64 = nullptr;
  PyObject* float32 = nullptr;
  PyObject* float64 = nullptr;
  PyObject* float16 = nullptr;
  PyObject* bfloat16 = nullptr;
  PyObject* is_cpu = PyUnicode_InternFromString("is_cpu");
  PyObject* dtype = PyUnicode_InternFromString("dtype");
  PyObject* shape = PyUnicode_InternFromString("shape");
  PyObject* stride = PyUnicode_InternFromString("stride");
  PyObject* data_ptr = PyUnicode_InternFromString("data_ptr");

  // The torch types, when torch is in sys.modules.
  bool Ready() {
    if (tensor_type != nullptr) return true;
    PyObject* module = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");  // borrowed
    if (module == nullptr) return false;
    tensor_type = PyObject_GetAttrString(module, "Tensor");
    int32 = PyObject_GetAttrString(module, "int32");
    int64 = PyObject_GetAttrString(module, "int64");
    float32 = PyObject_GetAttrString(module, "float32");
    float64 = PyObject_GetAttrString(module, "float64");
    float16 = PyObject_GetAttrString(module, "float16");
    bfloat16 = PyObject_GetAttrString(module, "bfloat16");
    if (tensor_type == nullptr || int32 == nullptr || int64 == nullptr || bfloat16 == nullptr) {
      throw py::error_already_set();
    }
    return true;
  }
};

Torch& TorchObjects() {
  static Torch* torch = new Torch();  // never destroyed: outlives the interpreter's teardown order
  return *torch;
}

// A new reference or an exception.
py::object Steal(PyObject* o) {
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(o);
}

// stride() or data_ptr() of a tensor with no strided storage (sparse, nested,
// ...): torch's RuntimeError becomes a ValueError naming the argument.
py::object DenseCall(py::handle obj, PyObject* method, const char* name) {
  PyObject* result = PyObject_CallMethodNoArgs(obj.ptr(), method);
  if (result == nullptr) {
    PyErr_Clear();
    throw py::value_error(std::string(name) + " must be a dense tensor (layout torch.strided), got layout " +
                          std::string(py::str(obj.attr("layout"))));
  }
  return py::reinterpret_steal<py::object>(result);
}

void SetShape(TensorView* v, const int64_t* shape, const int64_t* strides, int ndim, const char* name) {
  if (ndim != 1 && ndim != 2) {
    throw py::value_error(std::string(name) + " must have 1 or 2 dimensions, got " + std::to_string(ndim));
  }
  v->ndim = ndim;
  if (ndim == 1) {
    v->rows = 1;
    v->cols = shape[0];
    v->row_stride = 0;
    v->col_stride = strides[0];
  } else {
    v->rows = shape[0];
    v->cols = shape[1];
    v->row_stride = strides[0];
    v->col_stride = strides[1];
  }
}

TensorView TorchView(py::handle obj, Torch& t, const char* name) {
  TensorView v;
  py::object is_cpu = Steal(PyObject_GetAttr(obj.ptr(), t.is_cpu));
  if (is_cpu.ptr() != Py_True) {
    throw py::value_error(std::string(name) + " must be a CPU tensor, got one on device " +
                          std::string(py::str(obj.attr("device"))) + " (zapgram's masks are computed on CPU)");
  }
  py::object dtype = Steal(PyObject_GetAttr(obj.ptr(), t.dtype));
  PyObject* d = dtype.ptr();
  v.dtype = d == t.int32     ? DType::kInt32
            : d == t.int64    ? DType::kInt64
            : d == t.float32  ? DType::kFloat32
            : d == t.float64  ? DType::kFloat64
            : d == t.float16  ? DType::kFloat16
            : d == t.bfloat16 ? DType::kBFloat16
                              : DType::kOther;
  v.element_size = v.dtype == DType::kFloat64 || v.dtype == DType::kInt64                ? 8
                   : v.dtype == DType::kFloat16 || v.dtype == DType::kBFloat16 ? 2
                                                                               : 4;
  // Named as torch names it in errors ("torch.int64"): kept for int64 too.
  if (v.dtype == DType::kOther || v.dtype == DType::kInt64) v.other_dtype = py::str(dtype);
  py::object shape = Steal(PyObject_GetAttr(obj.ptr(), t.shape));
  py::object stride = DenseCall(obj, t.stride, name);
  const Py_ssize_t ndim = PyTuple_Size(shape.ptr());
  if (ndim < 0 || PyTuple_Size(stride.ptr()) != ndim) throw py::error_already_set();
  int64_t dims[2] = {0, 0}, steps[2] = {0, 0};
  for (Py_ssize_t i = 0; i < ndim && i < 2; ++i) {
    dims[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape.ptr(), i));
    steps[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(stride.ptr(), i));
  }
  SetShape(&v, dims, steps, static_cast<int>(ndim), name);
  py::object ptr = DenseCall(obj, t.data_ptr, name);
  v.data = static_cast<char*>(PyLong_AsVoidPtr(ptr.ptr()));
  if (PyErr_Occurred()) throw py::error_already_set();
  return v;
}

TensorView NumpyView(py::handle obj, const char* name, bool writable) {
  TensorView v;
  auto* proxy = py::detail::array_proxy(obj.ptr());
  if (writable && !(proxy->flags & py::detail::npy_api::NPY_ARRAY_WRITEABLE_)) {
    throw py::value_error(std::string(name) + " must be a writable array");
  }
  const int type_num = py::detail::array_descriptor_proxy(proxy->descr)->type_num;
  constexpr int kNpyHalf = 23;
  v.dtype = type_num == py::detail::npy_api::NPY_INT_      ? DType::kInt32
            : type_num == py::detail::npy_api::NPY_LONG_ ||
                    type_num == py::detail::npy_api::NPY_LONGLONG_
                ? DType::kInt64
            : type_num == py::detail::npy_api::NPY_FLOAT_  ? DType::kFloat32
            : type_num == py::detail::npy_api::NPY_DOUBLE_ ? DType::kFloat64
            : type_num == kNpyHalf                         ? DType::kFloat16
                                                           : DType::kOther;
  v.element_size = static_cast<size_t>(py::detail::array_descriptor_proxy(proxy->descr)->elsize);
  if ((v.dtype == DType::kInt32 && v.element_size != 4) || (v.dtype == DType::kInt64 && v.element_size != 8)) {
    v.dtype = DType::kOther;
  }
  // A byte-swapped array ('>i4' on a little-endian machine) would be read and
  // written in the wrong byte order: refused by name.
  const char byteorder = py::detail::array_descriptor_proxy(proxy->descr)->byteorder;
  if (byteorder == (std::endian::native == std::endian::little ? '>' : '<')) {
    v.dtype = DType::kOther;
    v.other_dtype = std::string(py::str(obj.attr("dtype").attr("str"))) + " (not in native byte order)";
  } else if (v.dtype == DType::kOther || v.dtype == DType::kInt64) {
    v.other_dtype = py::str(obj.attr("dtype"));
  }
  const int ndim = proxy->nd;
  int64_t dims[2] = {0, 0}, steps[2] = {0, 0};
  for (int i = 0; i < ndim && i < 2; ++i) {
    dims[i] = proxy->dimensions[i];
    // numpy strides are in bytes; a stride that is not a whole element
    // (a structured view) is refused below as non-contiguous.
    steps[i] = proxy->strides[i] % static_cast<int64_t>(std::max<size_t>(v.element_size, 1)) == 0
                   ? proxy->strides[i] / static_cast<int64_t>(std::max<size_t>(v.element_size, 1))
                   : 0;
  }
  SetShape(&v, dims, steps, ndim, name);
  v.data = proxy->data;
  return v;
}

// Sets logits[j * stride] = minus_inf for every j < vocab_size whose bit is 0.
template <typename T>
void MaskRow(T* logits, int64_t stride, const uint32_t* words, int64_t vocab_size, T minus_inf) {
  const int64_t n_words = (vocab_size + 31) / 32;
  for (int64_t w = 0; w < n_words; ++w) {
    uint32_t off = ~words[w];
    if (off == 0) continue;
    const int64_t base = w * 32;
    const int64_t limit = std::min<int64_t>(32, vocab_size - base);
    if (limit < 32) off &= (1u << limit) - 1;
    if (off == 0xFFFFFFFFu && stride == 1) {
      std::fill_n(logits + base, 32, minus_inf);
      continue;
    }
    while (off != 0) {
      logits[(base + std::countr_zero(off)) * stride] = minus_inf;
      off &= off - 1;
    }
  }
}

}  // namespace

std::string DTypeName(const TensorView& v) {
  switch (v.dtype) {
    case DType::kInt32: return "int32";
    case DType::kInt64: break;  // its name as given
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kOther: break;
  }
  return v.other_dtype.empty() ? "another dtype" : v.other_dtype;
}

bool IsArray(py::handle obj) {
  if (py::detail::npy_api::get().PyArray_Check_(obj.ptr())) return true;
  Torch& torch = TorchObjects();
  if (!torch.Ready()) return false;
  const int is_tensor = PyObject_IsInstance(obj.ptr(), torch.tensor_type);
  if (is_tensor < 0) throw py::error_already_set();
  return is_tensor != 0;
}

TensorView ViewOf(py::handle obj, const char* name, bool writable) {
  if (py::detail::npy_api::get().PyArray_Check_(obj.ptr())) return NumpyView(obj, name, writable);
  Torch& torch = TorchObjects();
  if (torch.Ready()) {
    const int is_tensor = PyObject_IsInstance(obj.ptr(), torch.tensor_type);
    if (is_tensor < 0) throw py::error_already_set();
    if (is_tensor) return TorchView(obj, torch, name);
  }
  throw py::type_error(std::string(name) + " must be a torch.Tensor or a numpy.ndarray, got " +
                       std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
}

uint32_t* BitmaskRow(const TensorView& b, int64_t index, size_t mask_words) {
  if (b.dtype != DType::kInt32) {
    throw py::type_error("bitmask must have dtype int32, got " + DTypeName(b));
  }
  if (b.cols != static_cast<int64_t>(mask_words) || (b.col_stride != 1 && b.cols > 1)) {
    throw py::value_error("bitmask rows must be " + std::to_string(mask_words) +
                          " contiguous int32 words (ceil(vocab_size / 32)), got " + std::to_string(b.cols) +
                          (b.col_stride != 1 ? " with stride " + std::to_string(b.col_stride) : std::string()));
  }
  if (index < 0 || index >= b.rows) {
    throw py::index_error("bitmask row " + std::to_string(index) + " is out of range: the bitmask has " +
                          std::to_string(b.rows) + (b.ndim == 1 ? " row (1-D)" : " rows"));
  }
  return reinterpret_cast<uint32_t*>(b.data) + index * b.row_stride;
}

void ApplyBitmask(const TensorView& logits, const TensorView& bitmask, std::optional<int64_t> vocab_size,
                  const std::optional<std::vector<int64_t>>& indices) {
  if (bitmask.dtype != DType::kInt32) {
    throw py::type_error("bitmask must have dtype int32, got " + DTypeName(bitmask));
  }
  if (logits.dtype == DType::kInt32 || logits.dtype == DType::kInt64 || logits.dtype == DType::kOther) {
    throw py::type_error(std::string("logits must have dtype float32, float16, bfloat16 or float64, got ") +
                         DTypeName(logits));
  }
  if (bitmask.col_stride != 1 && bitmask.cols > 1) throw py::value_error("bitmask rows must be contiguous");
  const int64_t vocab = vocab_size.value_or(std::min<int64_t>(logits.cols, bitmask.cols * 32));
  if (vocab < 0 || vocab > logits.cols || vocab > bitmask.cols * 32) {
    throw py::value_error("vocab_size " + std::to_string(vocab) + " exceeds the logits (" +
                          std::to_string(logits.cols) + " columns) or the bitmask (" +
                          std::to_string(bitmask.cols * 32) + " bits per row)");
  }
  std::vector<int64_t> all;
  if (!indices.has_value()) {
    if (logits.rows != bitmask.rows) {
      throw py::value_error("logits have " + std::to_string(logits.rows) + " rows but the bitmask has " +
                            std::to_string(bitmask.rows) + " (pass indices= to mask some rows)");
    }
    all.resize(static_cast<size_t>(logits.rows));
    for (int64_t r = 0; r < logits.rows; ++r) all[static_cast<size_t>(r)] = r;
  }
  const std::vector<int64_t>& rows = indices.has_value() ? *indices : all;
  for (int64_t r : rows) {
    if (r < 0 || r >= logits.rows || r >= bitmask.rows) {
      throw py::index_error("row index " + std::to_string(r) + " is out of range (logits " +
                            std::to_string(logits.rows) + " rows, bitmask " + std::to_string(bitmask.rows) + ")");
    }
  }
  for (int64_t r : rows) {
    const uint32_t* words = reinterpret_cast<const uint32_t*>(bitmask.data) + r * bitmask.row_stride;
    char* row = logits.data + r * logits.row_stride * static_cast<int64_t>(logits.element_size);
    switch (logits.dtype) {
      case DType::kFloat32:
        MaskRow(reinterpret_cast<float*>(row), logits.col_stride, words, vocab,
                -std::numeric_limits<float>::infinity());
        break;
      case DType::kFloat64:
        MaskRow(reinterpret_cast<double*>(row), logits.col_stride, words, vocab,
                -std::numeric_limits<double>::infinity());
        break;
      case DType::kFloat16:  // IEEE binary16 -inf
        MaskRow(reinterpret_cast<uint16_t*>(row), logits.col_stride, words, vocab, uint16_t{0xFC00});
        break;
      case DType::kBFloat16:  // the high half of float32's -inf
        MaskRow(reinterpret_cast<uint16_t*>(row), logits.col_stride, words, vocab, uint16_t{0xFF80});
        break;
      default:
        break;
    }
  }
}

}  // namespace zapgram::python
