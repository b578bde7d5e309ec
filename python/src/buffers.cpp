// defines: asyncps_python::float_buffer, and the scalar arguments of args.h
#include "buffers.h"

#include <cfloat>
#include <climits>
#include <cmath>
#include <string>

#include "args.h"
#include "asyncps/error.h"

namespace py = pybind11;

namespace asyncps_python {
namespace {

std::string dtype_name(const Py_buffer& view) {
  std::string_view f = view.format ? view.format : "B";
  while (!f.empty() && (f.front() == '@' || f.front() == '=' || f.front() == '<' || f.front() == '>' || f.front() == '!'))
    f.remove_prefix(1);
  const auto sized = [&](const char* kind) { return std::string(kind) + std::to_string(8 * view.itemsize); };
  const bool swapped = view.format && (view.format[0] == '>' || view.format[0] == '!');  // (little-endian hosts)
  if (f == "f" || f == "d" || f == "e") return (swapped ? "big-endian " : "") + sized("float");
  if (f == "b" || f == "h" || f == "i" || f == "l" || f == "q") return sized("int");
  if (f == "B" || f == "H" || f == "I" || f == "L" || f == "Q") return sized("uint");
  if (f == "?") return "bool";
  return "format '" + std::string(f) + "'";
}

bool is_float32(const Py_buffer& view) {
  std::string_view f = view.format ? view.format : "B";
  if (!f.empty() && (f.front() == '@' || f.front() == '=' || f.front() == '<')) f.remove_prefix(1);
  return f == "f" && view.itemsize == 4;
}

std::string shape_of(const Py_buffer& view) {
  std::string s = "(";
  for (int d = 0; d < view.ndim; ++d) s += (d ? ", " : "") + std::to_string(view.shape[d]);
  return s + (view.ndim == 1 ? ",)" : ")");
}

[[noreturn]] void refuse(std::string_view what, std::size_t floats, bool writable, const std::string& got) {
  const std::string need = std::string(writable ? "a writable " : "a ") + "C-contiguous float32 buffer of " +
                           std::to_string(floats) + " elements";
  throw py::value_error("asyncps: " + std::string(what) + " must be " + need + " (got " + got + ")");
}

}  // namespace

FloatBuffer float_buffer(py::handle obj, std::size_t floats, std::string_view what, bool writable) {
  py::object owner = py::reinterpret_borrow<py::object>(obj);
  if (!PyObject_CheckBuffer(owner.ptr()) && py::hasattr(owner, "detach") && py::hasattr(owner, "numpy")) {
    // a torch.Tensor: its numpy() view shares the memory (CPU tensors only)
    try {
      owner = owner.attr("detach")().attr("numpy")();
    } catch (py::error_already_set& e) {
      refuse(what, floats, writable, std::string(py::str(py::type::handle_of(obj).attr("__name__"))) +
                                         " that numpy() cannot view without a copy: " + e.what());
    }
  }
  if (!PyObject_CheckBuffer(owner.ptr()))
    refuse(what, floats, writable, std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
  auto* view = new Py_buffer();
  const int flags = PyBUF_FORMAT | PyBUF_STRIDES | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(owner.ptr(), view, flags) != 0) {
    PyErr_Clear();
    delete view;
    if (writable && PyObject_GetBuffer(owner.ptr(), view = new Py_buffer(), PyBUF_FORMAT | PyBUF_STRIDES) == 0) {
      PyBuffer_Release(view);
      delete view;
      refuse(what, floats, writable, "a read-only buffer");
    }
    PyErr_Clear();
    refuse(what, floats, writable, "a buffer that cannot be viewed as strided memory");
  }
  FloatBuffer out{py::buffer_info(view, /*ownview=*/true), owner, {}};  // releases the view from here on
  std::size_t count = 1;
  for (int d = 0; d < view->ndim; ++d) count *= static_cast<std::size_t>(view->shape[d]);
  if (!is_float32(*view)) refuse(what, floats, writable, dtype_name(*view) + " of shape " + shape_of(*view));
  if (!PyBuffer_IsContiguous(view, 'C'))
    refuse(what, floats, writable, "a non-contiguous float32 view of shape " + shape_of(*view));
  if (count != floats) refuse(what, floats, writable, std::to_string(count) + " elements");
  out.span = std::span<float>(static_cast<float*>(view->buf), count);
  return out;
}

KeyBuffer key_buffer(py::handle obj, std::string_view what) {
  const auto refuse_keys = [&](const std::string& got) {
    throw py::value_error("asyncps: " + std::string(what) + " must be a C-contiguous uint64 or int64 buffer (got " + got +
                          ")");
  };
  py::object owner = py::reinterpret_borrow<py::object>(obj);
  if (!PyObject_CheckBuffer(owner.ptr()) && py::hasattr(owner, "detach") && py::hasattr(owner, "numpy")) {
    try {
      owner = owner.attr("detach")().attr("numpy")();
    } catch (py::error_already_set& e) {
      refuse_keys(std::string(py::str(py::type::handle_of(obj).attr("__name__"))) +
                  " that numpy() cannot view without a copy: " + e.what());
    }
  }
  if (!PyObject_CheckBuffer(owner.ptr())) refuse_keys(type_name(obj));
  auto* view = new Py_buffer();
  if (PyObject_GetBuffer(owner.ptr(), view, PyBUF_FORMAT | PyBUF_STRIDES) != 0) {
    PyErr_Clear();
    delete view;
    refuse_keys("a buffer that cannot be viewed as strided memory");
  }
  KeyBuffer out{py::buffer_info(view, /*ownview=*/true), owner, {}};
  std::string_view f = view->format ? view->format : "B";
  if (!f.empty() && (f.front() == '@' || f.front() == '=' || f.front() == '<')) f.remove_prefix(1);
  const bool is64 = view->itemsize == 8 && (f == "Q" || f == "q" || f == "L" || f == "l");
  std::size_t count = 1;
  for (int d = 0; d < view->ndim; ++d) count *= static_cast<std::size_t>(view->shape[d]);
  if (!is64) refuse_keys(dtype_name(*view) + " of shape " + shape_of(*view));
  if (!PyBuffer_IsContiguous(view, 'C')) refuse_keys("a non-contiguous view of shape " + shape_of(*view));
  out.span = std::span<const std::uint64_t>(static_cast<const std::uint64_t*>(view->buf), count);
  return out;
}

}  // namespace asyncps_python

// ---- scalar arguments (args.h)
namespace asyncps_python {
namespace {

[[noreturn]] void wrong_type(const char* call, const char* arg, const char* need, py::handle v) {
  throw py::type_error("asyncps: " + std::string(call) + ": " + arg + " must be " + need + " (got " + type_name(v) + ")");
}
[[noreturn]] void out_of_range(const char* call, const char* arg, py::handle v, const char* what) {
  throw asyncps::ConfigError("asyncps: " + std::string(call) + ": " + arg + " = " + short_repr(v) + " " + what);
}
bool is_numpy_bool(py::handle v) {
  const std::string t = type_name(v);
  return t == "numpy.bool_" || t == "numpy.bool";
}
// The integer `v` holds, as a new reference: int, numpy integers, anything with __index__; a
// bool or a float is refused, as is anything else.
PyObject* index_of(py::handle v, const char* call, const char* arg) {
  if (PyBool_Check(v.ptr()) || PyFloat_Check(v.ptr())) wrong_type(call, arg, "an integer", v);
  PyObject* i = PyNumber_Index(v.ptr());
  if (!i) {
    PyErr_Clear();
    wrong_type(call, arg, "an integer", v);
  }
  return i;
}

}  // namespace

std::string type_name(py::handle v) {
  PyTypeObject* t = Py_TYPE(v.ptr());
  try {
    const auto mod = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(t)).attr("__module__");
    const std::string m = py::str(mod);
    const std::string n = py::str(py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(t)).attr("__qualname__"));
    return m == "builtins" ? n : m + "." + n;
  } catch (py::error_already_set&) {
    return t->tp_name;
  }
}

std::string short_repr(py::handle v) {
  std::string s;
  try {
    s = py::repr(v);
  } catch (py::error_already_set&) {
    return "<" + type_name(v) + ">";
  }
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

std::int64_t int64_arg(py::handle v, const char* call, const char* arg) {
  PyObject* i = index_of(v, call, arg);
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(i, &overflow);
  Py_DECREF(i);
  if (overflow) out_of_range(call, arg, v, "does not fit a 64-bit integer");
  if (x == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    wrong_type(call, arg, "an integer", v);
  }
  return static_cast<std::int64_t>(x);
}

std::uint64_t uint64_arg(py::handle v, const char* call, const char* arg) {
  PyObject* i = index_of(v, call, arg);
  const unsigned long long x = PyLong_AsUnsignedLongLong(i);  // (OverflowError: negative or 2**64 and up)
  Py_DECREF(i);
  if (x == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    const bool overflow = PyErr_ExceptionMatches(PyExc_OverflowError);
    PyErr_Clear();
    if (overflow) out_of_range(call, arg, v, "is not in [0, 2**64)");
    wrong_type(call, arg, "an integer", v);
  }
  return static_cast<std::uint64_t>(x);
}

int int_arg(py::handle v, const char* call, const char* arg) {
  const std::int64_t x = int64_arg(v, call, arg);
  if (x < INT_MIN || x > INT_MAX) out_of_range(call, arg, v, "does not fit a 32-bit integer");
  return static_cast<int>(x);
}

double double_arg(py::handle v, const char* call, const char* arg) {
  if (PyBool_Check(v.ptr()) || PyUnicode_Check(v.ptr()) || PyBytes_Check(v.ptr())) wrong_type(call, arg, "a number", v);
  const double d = PyFloat_AsDouble(v.ptr());  // float, int, numpy scalars, __float__/__index__
  if (d == -1.0 && PyErr_Occurred()) {
    const bool overflow = PyErr_ExceptionMatches(PyExc_OverflowError);
    PyErr_Clear();
    if (overflow) out_of_range(call, arg, v, "does not fit a double");
    wrong_type(call, arg, "a number", v);
  }
  return d;
}

float float32_arg(py::handle v, const char* call, const char* arg) {
  const double d = double_arg(v, call, arg);
  if (std::isfinite(d) && std::fabs(d) > static_cast<double>(FLT_MAX)) out_of_range(call, arg, v, "does not fit a float32");
  return static_cast<float>(d);
}

float scale_arg(py::handle v, const char* call) {
  const float s = float32_arg(v, call, "scale");
  if (!std::isfinite(s))
    throw asyncps::ConfigError("asyncps: " + std::string(call) + ": scale must be a finite number, got " + short_repr(v) +
                               " (nothing was sent)");
  return s;
}

bool bool_arg(py::handle v, const char* call, const char* arg) {
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (is_numpy_bool(v)) return PyObject_IsTrue(v.ptr()) == 1;
  wrong_type(call, arg, "True or False", v);
}

std::string str_arg(py::handle v, const char* call, const char* arg) {
  if (!PyUnicode_Check(v.ptr())) wrong_type(call, arg, "a str", v);
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(v.ptr(), &n);
  if (!s) {
    PyErr_Clear();
    throw asyncps::ConfigError("asyncps: " + std::string(call) + ": " + arg + " is not valid text (it cannot be UTF-8 encoded)");
  }
  return std::string(s, static_cast<std::size_t>(n));
}

std::filesystem::path path_arg(py::handle v, const char* call, const char* arg) {
  PyObject* p = PyOS_FSPath(v.ptr());  // str or bytes, from os.PathLike too
  if (!p) {
    PyErr_Clear();
    wrong_type(call, arg, "a path (str, bytes or os.PathLike)", v);
  }
  py::object fs = py::reinterpret_steal<py::object>(p);
  if (PyUnicode_Check(p)) {
    PyObject* b = PyUnicode_EncodeFSDefault(p);
    if (!b) {
      PyErr_Clear();
      throw asyncps::ConfigError("asyncps: " + std::string(call) + ": " + arg + " cannot be encoded as a file name");
    }
    fs = py::reinterpret_steal<py::object>(b);
  }
  char* data = nullptr;
  Py_ssize_t n = 0;
  if (PyBytes_AsStringAndSize(fs.ptr(), &data, &n) != 0) {
    PyErr_Clear();
    wrong_type(call, arg, "a path (str, bytes or os.PathLike)", v);
  }
  const std::string s(data, static_cast<std::size_t>(n));
  if (s.find('\0') != std::string::npos)
    throw asyncps::ConfigError("asyncps: " + std::string(call) + ": " + arg + " contains a NUL byte");
  return std::filesystem::path(s);
}

std::optional<std::filesystem::path> optional_path_arg(py::handle v, const char* call, const char* arg) {
  if (v.is_none()) return std::nullopt;
  return path_arg(v, call, arg);
}

}  // namespace asyncps_python
