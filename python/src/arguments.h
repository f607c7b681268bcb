// Arguments as the Python package receives them: each read and checked once,
// with an error that names the argument, what it takes and what it got.
//
// pybind11's own casters answer a wrong type with "incompatible function
// arguments" followed by the whole signature, or, for a py::object cast by
// hand, a bare RuntimeError "Unable to cast Python instance to C++ type";
// neither says which argument was wrong. So the arguments users get wrong
// (ids, indices, sizes, lists of ids, text, flags) are bound as py::handle
// and read here:
//
//   IntArg       an int, or an object with __index__ (numpy and torch integer
//                scalars), as pybind11 took them; bool, float, str and None
//                are TypeError; outside [minimum, maximum] is ValueError.
//   IntListArg   a list, tuple or other sequence (a numpy array, a torch
//                tensor) of IntArg values; a str, bytes or a single int is
//                TypeError (a str is a sequence, of characters).
//   TextArg      str (taken as UTF-8) or bytes / bytearray.
//   BoolArg      what pybind11's bool caster took (bool, None, numbers, numpy
//                bools), with a TypeError naming the argument otherwise.
//   FloatArg     an int or a float (numpy and torch scalars through
//                __float__); bool, str and None are TypeError, NaN is
//                ValueError.
//   SequenceArg  a list or tuple (or other sequence), not str / bytes.
//
// Python-side checks (python/zapgram/*.py) call IntArg and IntListArg too,
// through _core._int_arg and _core._int_list_arg, so both layers word their
// errors alike. The fast path of IntArg (an exact int) is one type check and
// PyLong_AsLongLongAndOverflow, as pybind11's caster; an ArgName ("tokens",
// 3) is spelled "tokens[3]" only when an error needs it, so per-token calls
// build no strings.
//
// Tests: tests/python/test_bad_input.py.
#ifndef ZAPGRAM_PYTHON_SRC_ARGUMENTS_H_
#define ZAPGRAM_PYTHON_SRC_ARGUMENTS_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace zapgram::python {

// An argument's name for errors: `base`, or `base[index]` for an item of a list.
struct ArgName {
  ArgName(const char* name) : base(name) {}  // NOLINT: implicit, call sites pass literals
  ArgName(const char* name, int64_t i) : base(name), index(i) {}
  std::string str() const {
    std::string out(base);
    if (index >= 0) out.append("[").append(std::to_string(index)).append("]");
    return out;
  }
  const char* base;
  int64_t index = -1;
};

// "float (1.5)", "str ('abc')", "NoneType": what was given, for messages.
inline std::string Describe(pybind11::handle value) {
  namespace py = pybind11;
  std::string type = py::str(py::type::handle_of(value).attr("__name__"));
  if (value.is_none()) return type;
  PyObject* repr = PyObject_Repr(value.ptr());
  if (repr == nullptr) {
    PyErr_Clear();
    return type;
  }
  std::string text = py::reinterpret_steal<py::str>(repr);
  if (text.size() > 60) {
    size_t cut = 57;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // whole UTF-8 characters
    text = text.substr(0, cut) + "...";
  }
  return type + " (" + text + ")";
}

inline std::string RangeText(int64_t minimum, int64_t maximum) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (minimum != kMin && maximum != kMax) {
    return "between " + std::to_string(minimum) + " and " + std::to_string(maximum);
  }
  if (minimum != kMin) return ">= " + std::to_string(minimum);
  if (maximum != kMax) return "<= " + std::to_string(maximum);
  return "a 64-bit integer";
}

inline int64_t IntArg(pybind11::handle value, const ArgName& name,
                      int64_t minimum = std::numeric_limits<int64_t>::min(),
                      int64_t maximum = std::numeric_limits<int64_t>::max()) {
  namespace py = pybind11;
  PyObject* o = value.ptr();
  py::object index;  // holds __index__'s result
  if (!PyLong_CheckExact(o)) {
    if (PyBool_Check(o) || PyFloat_Check(o) || !PyIndex_Check(o)) {
      throw py::type_error(name.str() + " must be an int, got " + Describe(value));
    }
    PyObject* converted = PyNumber_Index(o);
    if (converted == nullptr) {  // e.g. a float tensor: it has __index__ but refuses
      PyErr_Clear();
      throw py::type_error(name.str() + " must be an int, got " + Describe(value));
    }
    index = py::reinterpret_steal<py::object>(converted);
    o = converted;
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow != 0 || v < minimum || v > maximum) {
    throw py::value_error(name.str() + " must be " + RangeText(minimum, maximum) + ", got " +
                          std::string(py::str(o)));
  }
  return v;
}

inline std::vector<int64_t> IntListArg(pybind11::handle value, const ArgName& name,
                                       int64_t minimum = std::numeric_limits<int64_t>::min(),
                                       int64_t maximum = std::numeric_limits<int64_t>::max()) {
  namespace py = pybind11;
  PyObject* o = value.ptr();
  if (PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o) || !PySequence_Check(o)) {
    throw py::type_error(name.str() + " must be a list of ints, got " + Describe(value));
  }
  PyObject* items = PySequence_Fast(o, "");  // a list or tuple as is; else the items copied
  if (items == nullptr) {
    PyErr_Clear();
    throw py::type_error(name.str() + " must be a list of ints, got " + Describe(value));
  }
  py::object hold = py::reinterpret_steal<py::object>(items);
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    out.push_back(IntArg(PySequence_Fast_GET_ITEM(items, i), ArgName(name.base, i), minimum, maximum));
  }
  return out;
}

inline std::string TextArg(pybind11::handle value, const ArgName& name) {
  namespace py = pybind11;
  PyObject* o = value.ptr();
  if (PyUnicode_Check(o)) {
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(o, &size);
    if (data == nullptr) throw py::error_already_set();  // lone surrogates: UnicodeEncodeError
    return std::string(data, static_cast<size_t>(size));
  }
  if (PyBytes_Check(o)) return std::string(PyBytes_AS_STRING(o), static_cast<size_t>(PyBytes_GET_SIZE(o)));
  if (PyByteArray_Check(o)) {
    return std::string(PyByteArray_AS_STRING(o), static_cast<size_t>(PyByteArray_GET_SIZE(o)));
  }
  throw py::type_error(name.str() + " must be a str or bytes, got " + Describe(value));
}

inline bool BoolArg(pybind11::handle value, const ArgName& name) {
  namespace py = pybind11;
  PyObject* o = value.ptr();
  if (o == Py_True) return true;
  if (o == Py_False || o == Py_None) return false;
  PyNumberMethods* number = Py_TYPE(o)->tp_as_number;
  if (number == nullptr || number->nb_bool == nullptr) {
    throw py::type_error(name.str() + " must be a bool, got " + Describe(value));
  }
  const int truth = PyObject_IsTrue(o);
  if (truth < 0) throw py::error_already_set();
  return truth != 0;
}

inline double FloatArg(pybind11::handle value, const ArgName& name) {
  namespace py = pybind11;
  PyObject* o = value.ptr();
  if (PyBool_Check(o) || PyUnicode_Check(o) || PyBytes_Check(o) || o == Py_None || !PyNumber_Check(o)) {
    throw py::type_error(name.str() + " must be a float, got " + Describe(value));
  }
  const double v = PyFloat_AsDouble(o);
  if (v == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw py::type_error(name.str() + " must be a float, got " + Describe(value));
  }
  if (v != v) throw py::value_error(name.str() + " must be a number, got nan");
  return v;
}

inline pybind11::sequence SequenceArg(pybind11::handle value, const ArgName& name, const char* what) {
  namespace py = pybind11;
  PyObject* o = value.ptr();
  if (PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o) || !PySequence_Check(o)) {
    throw py::type_error(name.str() + " must be a list of " + what + ", got " + Describe(value));
  }
  return py::reinterpret_borrow<py::sequence>(value);
}

}  // namespace zapgram::python

#endif  // ZAPGRAM_PYTHON_SRC_ARGUMENTS_H_
