// defines: asyncps_python::bind_layout (asyncps.Layout, TensorInfo, the checkpoint functions)
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "asyncps/checkpoint.h"
#include "asyncps/param_layout.h"
#include "handles.h"

namespace py = pybind11;

namespace asyncps_python {
namespace {
py::array_t<float> to_numpy(const std::vector<float>& v) {
  py::array_t<float> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}
}  // namespace

void bind_layout(py::module_& m) {
  py::class_<asyncps::TensorInfo>(m, "TensorInfo", "One named tensor of a Layout: its shape and place in the arena.")
      .def_readonly("name", &asyncps::TensorInfo::name)
      .def_property_readonly("shape", [](const asyncps::TensorInfo& t) { return py::tuple(py::cast(t.shape)); })
      .def_readonly("offset", &asyncps::TensorInfo::offset, "first float of the tensor in the arena")
      .def_readonly("size", &asyncps::TensorInfo::size, "number of floats")
      .def("__repr__", [](const asyncps::TensorInfo& t) {
        return "TensorInfo(" + t.name + ", shape=" + std::string(py::str(py::tuple(py::cast(t.shape)))) +
               ", offset=" + std::to_string(t.offset) + ")";
      });

  py::class_<asyncps::ParamLayout>(m, "Layout",
                                   "A model's parameters as named tensors packed into one flat float32 arena.\n"
                                   "Every rank must build the same layout (names, shapes, order).")
      .def(py::init<>())
      .def("add", &asyncps::ParamLayout::add, py::arg("name"), py::arg("shape"),
           "Appends a tensor; returns its offset in the arena. ConfigError for an empty or repeated name or a "
           "non-positive dimension.")
      .def_property_readonly("size", &asyncps::ParamLayout::size, "floats in the arena")
      .def_property_readonly("bytes", &asyncps::ParamLayout::bytes)
      .def_property_readonly("hash", &asyncps::ParamLayout::hash, "FNV-1a over names, shapes and order")
      .def_property_readonly("tensors", &asyncps::ParamLayout::tensors)
      .def("tensor", &asyncps::ParamLayout::tensor, py::arg("name"), py::return_value_policy::reference_internal)
      .def("__len__", [](const asyncps::ParamLayout& l) { return l.tensors().size(); })
      .def("__repr__", [](const asyncps::ParamLayout& l) {
        return "Layout(" + std::to_string(l.tensors().size()) + " tensors, " + std::to_string(l.size()) + " floats)";
      });

  m.def(
      "read_checkpoint",
      [](const std::filesystem::path& index, const asyncps::ParamLayout& layout) {
        asyncps::CheckpointData c;
        {
          py::gil_scoped_release unlocked;
          c = asyncps::read_checkpoint(index, layout);
        }
        py::dict d;
        d["global_step"] = c.global_step;
        d["num_servers"] = c.num_servers;
        d["params"] = to_numpy(c.params);
        d["shadow"] = c.shadow.empty() ? py::object(py::none()) : py::object(to_numpy(c.shadow));
        return d;
      },
      py::arg("index"), py::arg("layout"),
      "Reads and verifies a whole checkpoint: {'global_step', 'num_servers', 'params', 'shadow' (or None)}. "
      "CheckpointError names the file and the problem.");
  m.def(
      "list_checkpoints",
      [](const std::filesystem::path& dir) {
        std::vector<std::string> out;
        for (const auto& p : asyncps::list_checkpoints(dir)) out.push_back(p.string());
        return out;
      },
      py::arg("dir"), "The checkpoint indexes in dir, newest first (not yet verified).");
  m.def(
      "export_npy",
      [](const std::filesystem::path& dir, const asyncps::ParamLayout& layout, py::handle arena) {
        FloatBuffer b = float_buffer(arena, layout.size(), "export_npy: arena", false);
        asyncps::export_npy(dir, layout, std::vector<float>(b.span.begin(), b.span.end()));
      },
      py::arg("dir"), py::arg("layout"), py::arg("arena"), "Writes each tensor of the arena as <dir>/<name>.npy.");
}

}  // namespace asyncps_python
