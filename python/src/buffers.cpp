// defines: asyncps_python::float_buffer
#include "buffers.h"

#include <string>

namespace py = pybind11;

namespace asyncps_python {
namespace {

std::string dtype_name(const Py_buffer& view) {
  std::string_view f = view.format ? view.format : "B";
  while (!f.empty() && (f.front() == '@' || f.front() == '=' || f.front() == '<' || f.front() == '>' || f.front() == '!'))
    f.remove_prefix(1);
  const auto sized = [&](const char* kind) { return std::string(kind) + std::to_string(8 * view.itemsize); };
  if (f == "f" || f == "d" || f == "e") return sized("float");
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
  std::string need = std::string(writable ? "a writable " : "a ") + "C-contiguous float32 buffer";
  if (floats) need += " of " + std::to_string(floats) + " elements";
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
  if (floats && count != floats) refuse(what, floats, writable, std::to_string(count) + " elements");
  out.span = std::span<float>(static_cast<float*>(view->buf), count);
  return out;
}

}  // namespace asyncps_python
