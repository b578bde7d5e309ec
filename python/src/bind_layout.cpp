// defines: asyncps_python::bind_layout (asyncps.Layout, TensorInfo, TableInfo, the checkpoint functions)
#include <pybind11/numpy.h>
#include <algorithm>
#include <string>
#include <utility>
#include <vector>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "args.h"
#include "asyncps/checkpoint.h"
#include "asyncps/error.h"
#include "asyncps/limits.h"
#include "asyncps/option_choices.h"
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
// A tensor's shape: a sequence (with a length) of integers. Refused as the library would
// (ParamLayout::add) when it is longer than limits::kMaxTensorRank, before it is read.
std::vector<std::int64_t> shape_arg(py::handle shape, const std::string& name) {
  constexpr const char* call = "Layout.add";
  if (PyUnicode_Check(shape.ptr()) || PyBytes_Check(shape.ptr()) || !PySequence_Check(shape.ptr()))
    throw py::type_error(std::string("asyncps: Layout.add: shape must be a sequence of integers, e.g. (784, 10) (got ") +
                         type_name(shape) + ")");
  const Py_ssize_t n = PySequence_Size(shape.ptr());
  if (n < 0) {
    PyErr_Clear();
    throw py::type_error("asyncps: Layout.add: shape must be a sequence of integers with a length (got " +
                         type_name(shape) + ")");
  }
  if (static_cast<std::size_t>(n) > asyncps::limits::kMaxTensorRank)
    throw asyncps::ConfigError("asyncps: ParamLayout::add: tensor '" + name + "' has " + std::to_string(n) +
                               " dimensions (at most " + std::to_string(asyncps::limits::kMaxTensorRank) + ")");
  std::vector<std::int64_t> dims;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_GetItem(shape.ptr(), i);
    if (!item) throw py::error_already_set();
    const py::object d = py::reinterpret_steal<py::object>(item);
    const std::string arg = "shape[" + std::to_string(i) + "]";
    dims.push_back(int64_arg(d, call, arg.c_str()));
  }
  return dims;
}

asyncps::ParamLayout layout_arg(py::handle layout, const char* call) {
  if (!py::isinstance<asyncps::ParamLayout>(layout))
    throw py::type_error("asyncps: " + std::string(call) + ": layout must be an asyncps.Layout (got " +
                         type_name(layout) + ")");
  return layout.cast<const asyncps::ParamLayout&>();  // a copy: the GIL may be released while it is used
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

  py::class_<asyncps::TableInfo>(m, "TableInfo", "One embedding table of a Layout (Layout.add_table): a copy.")
      .def_readonly("name", &asyncps::TableInfo::name)
      .def_property_readonly("rows", [](const asyncps::TableInfo& t) { return t.spec.rows; })
      .def_property_readonly("dim", [](const asyncps::TableInfo& t) { return t.spec.dim; })
      .def_property_readonly("optimizer", [](const asyncps::TableInfo& t) { return std::string(asyncps::name_of(t.spec.optimizer)); })
      .def_property_readonly("init_scale", [](const asyncps::TableInfo& t) { return t.spec.init_scale; })
      .def_property_readonly("seed", [](const asyncps::TableInfo& t) { return t.spec.seed; })
      .def_property_readonly("initial_accumulator", [](const asyncps::TableInfo& t) { return t.spec.initial_accumulator; })
      .def_property_readonly("share_rows_with", [](const asyncps::TableInfo& t) { return t.spec.share_rows_with; },
                             "the earlier table whose rows this one's are stored beside ('' if stored alone)")
      .def_property_readonly("ftrl_l1", [](const asyncps::TableInfo& t) { return t.spec.ftrl_l1; })
      .def_property_readonly("ftrl_l2", [](const asyncps::TableInfo& t) { return t.spec.ftrl_l2; })
      .def_property_readonly("ftrl_beta", [](const asyncps::TableInfo& t) { return t.spec.ftrl_beta; })
      .def_property_readonly("stride", &asyncps::TableInfo::stride,
                             "floats per row on the servers (the row, then what its optimizer keeps beside it)")
      .def_property_readonly(
          "state_blocks",
          [](const asyncps::TableInfo& t) {
            py::list out;
            for (const auto& b : t.state_blocks()) out.append(py::make_tuple(b.name, b.width));
            return out;
          },
          "what the optimizer keeps beside each row, as (name, floats per row) pairs: adagrad [('accumulator', 1)], "
          "ftrl [('ftrl_z', dim), ('ftrl_n', dim)], sgd []")
      .def("__repr__", [](const asyncps::TableInfo& t) {
        return "TableInfo(" + t.name + ", rows=" + std::to_string(t.spec.rows) + ", dim=" + std::to_string(t.spec.dim) +
               ", optimizer=" + asyncps::name_of(t.spec.optimizer) + ")";
      });

  py::class_<asyncps::ParamLayout>(m, "Layout",
                                   "A model's parameters as named tensors packed into one flat float32 arena.\n"
                                   "Every rank must build the same layout (names, shapes, order).")
      .def(py::init<>())
      .def(
          "add",
          [](asyncps::ParamLayout& l, py::handle name, py::handle shape) {
            const std::string n = str_arg(name, "Layout.add", "name");
            const std::vector<std::int64_t> dims = shape_arg(shape, n);
            return l.add(n, dims);
          },
          py::arg("name"), py::arg("shape"),
          "Appends a tensor; returns its offset in the arena. ConfigError for an invalid or repeated name, a "
          "non-positive dimension, too many dimensions or an arena beyond the library's limits.")
      .def(
          "add_table",
          [](asyncps::ParamLayout& l, py::handle name, py::handle rows, py::handle dim, py::handle optimizer,
             py::handle init_scale, py::handle seed, py::handle initial_accumulator, py::handle ftrl_l1, py::handle ftrl_l2,
             py::handle ftrl_beta, py::handle share_rows_with) {
            constexpr const char* call = "Layout.add_table";
            const std::string n = str_arg(name, call, "name");
            asyncps::TableSpec spec;
            const std::int64_t r = int64_arg(rows, call, "rows");
            if (r <= 0)
              throw asyncps::ConfigError("asyncps: Layout.add_table: rows = " + std::to_string(r) + " must be positive");
            spec.rows = static_cast<std::uint64_t>(r);
            spec.dim = int_arg(dim, call, "dim");
            spec.optimizer = asyncps::parse_choice<asyncps::RowOptimizer>(str_arg(optimizer, call, "optimizer"),
                                                                         "Layout.add_table: optimizer");
            spec.init_scale = float32_arg(init_scale, call, "init_scale");
            spec.seed = uint64_arg(seed, call, "seed");  // (the library's: any of the 2**64)
            // A keyword given (not None) that the optimizer does not take would do nothing, whatever
            // its value (add_table itself can only see one set away from its default): refused.
            const std::vector<std::string> own = asyncps::row_optimizer_fields(spec.optimizer);
            for (const auto& [key, given] : {std::pair{"initial_accumulator", &initial_accumulator},
                                              std::pair{"ftrl_l1", &ftrl_l1}, std::pair{"ftrl_l2", &ftrl_l2},
                                              std::pair{"ftrl_beta", &ftrl_beta}}) {
              if (given->is_none() || std::find(own.begin(), own.end(), key) != own.end()) continue;
              std::string owner;
              for (const auto& c : asyncps::choices(asyncps::RowOptimizer{})) {
                const auto f = asyncps::row_optimizer_fields(c.value);
                if (std::find(f.begin(), f.end(), key) != f.end()) owner = c.name;
              }
              throw asyncps::ConfigError("asyncps: Layout.add_table: table '" + n + "': " + key + " is for optimizer='" + owner +
                                         "': it does nothing for optimizer='" + asyncps::name_of(spec.optimizer) +
                                         "' rows");
            }
            if (!initial_accumulator.is_none())  // (None: the default)
              spec.initial_accumulator = float32_arg(initial_accumulator, call, "initial_accumulator");
            if (!ftrl_l1.is_none()) spec.ftrl_l1 = float32_arg(ftrl_l1, call, "ftrl_l1");
            if (!ftrl_l2.is_none()) spec.ftrl_l2 = float32_arg(ftrl_l2, call, "ftrl_l2");
            if (!ftrl_beta.is_none()) spec.ftrl_beta = float32_arg(ftrl_beta, call, "ftrl_beta");
            if (!share_rows_with.is_none()) spec.share_rows_with = str_arg(share_rows_with, call, "share_rows_with");
            l.add_table(n, spec);
          },
          py::arg("name"), py::arg("rows"), py::arg("dim"), py::kw_only(), py::arg("optimizer") = "sgd",
          py::arg("init_scale") = 0.01, py::arg("seed") = 0, py::arg("initial_accumulator") = py::none(),
          py::arg("ftrl_l1") = py::none(), py::arg("ftrl_l2") = py::none(), py::arg("ftrl_beta") = py::none(),
          py::arg("share_rows_with") = py::none(),
          "Adds an embedding table of rows x dim float32, sharded across the servers by row and read and updated a "
          "few rows at a time (asyncps.EmbeddingTable); it is not part of the arena (size). optimizer: 'sgd' or "
          "'adagrad' (one accumulator per row on the servers, initial_accumulator to start with; default 0.1) or 'ftrl' "
          "(FTRL-Proximal per coordinate, z and n beside the row; ftrl_l1, ftrl_l2 >= 0, default 0; ftrl_beta > 0, "
          "default 1; learning rate -scale). A field of another optimizer, given with any value, is refused. Rows start uniform "
          "in [-init_scale, init_scale], a function of seed, the name, row and column. share_rows_with: the name of an "
          "earlier table with the same rows whose keys this one shares; row r of both is stored side by side, so that "
          "an asyncps.EmbeddingGroup moves them in one operation per run. ConfigError for an invalid or repeated name, "
          "a share_rows_with that names no earlier table or one of other rows, and values beyond the library's limits.")
      .def_property_readonly(
          "tables", [](const asyncps::ParamLayout& l) { return std::vector<asyncps::TableInfo>(l.tables()); },
          "a list of copies of the tables' TableInfo, in order")
      .def(
          "table",
          [](const asyncps::ParamLayout& l, py::handle name) {
            return asyncps::TableInfo(l.table(str_arg(name, "Layout.table", "name")));
          },
          py::arg("name"), "A copy of that table's TableInfo; ConfigError if the layout has none of that name.")
      .def_property_readonly("size", &asyncps::ParamLayout::size, "floats in the arena")
      .def_property_readonly("bytes", &asyncps::ParamLayout::bytes)
      .def_property_readonly("hash", &asyncps::ParamLayout::hash, "FNV-1a over names, shapes and order")
      // copies: a later add() may move the tensors of the layout
      .def_property_readonly(
          "tensors", [](const asyncps::ParamLayout& l) { return std::vector<asyncps::TensorInfo>(l.tensors()); },
          "a list of copies of the tensors' TensorInfo, in order")
      .def(
          "tensor",
          [](const asyncps::ParamLayout& l, py::handle name) {
            return asyncps::TensorInfo(l.tensor(str_arg(name, "Layout.tensor", "name")));
          },
          py::arg("name"), "A copy of that tensor's TensorInfo; ConfigError if the layout has none of that name.")
      .def("__len__", [](const asyncps::ParamLayout& l) { return l.tensors().size(); })
      .def("__repr__", [](const asyncps::ParamLayout& l) {
        return "Layout(" + std::to_string(l.tensors().size()) + " tensors, " + std::to_string(l.size()) + " floats" +
               (l.tables().empty() ? std::string() : ", " + std::to_string(l.tables().size()) + " tables") + ")";
      });

  m.def(
      "read_checkpoint",
      [](py::handle index_arg, py::handle layout_obj) {
        const std::filesystem::path index = path_arg(index_arg, "read_checkpoint", "index");
        const asyncps::ParamLayout layout = layout_arg(layout_obj, "read_checkpoint");
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
        py::dict tables;  // name -> {'values': (rows, dim), 'accumulators': (rows,) or None}
        for (const auto& t : c.tables) {
          py::dict one;
          py::array_t<float> values = to_numpy(t.values);
          one["values"] = values.reshape({static_cast<py::ssize_t>(t.rows), static_cast<py::ssize_t>(t.dim)});
          // what the optimizer keeps per row: (rows,) for one float a row, else (rows, width); and by block
          const asyncps::TableInfo& info = layout.table(t.name);
          const auto width = static_cast<py::ssize_t>(info.state_width()), rows = static_cast<py::ssize_t>(t.rows);
          py::dict state;
          if (t.accumulators.empty()) {
            one["accumulators"] = py::none();
          } else {
            py::array_t<float> all = to_numpy(t.accumulators);
            one["accumulators"] = width == 1 ? py::object(all) : py::object(all.reshape({rows, width}));
            py::ssize_t at = 0;
            for (const auto& b : info.state_blocks()) {
              std::vector<float> block(static_cast<std::size_t>(rows * b.width));
              for (py::ssize_t r = 0; r < rows; ++r)
                std::copy_n(t.accumulators.begin() + r * width + at, b.width, block.begin() + r * b.width);
              py::array_t<float> a = to_numpy(block);
              state[py::str(b.name)] = b.width == 1 && !b.per_coordinate
                                           ? py::object(a)
                                           : py::object(a.reshape({rows, static_cast<py::ssize_t>(b.width)}));
              at += b.width;
            }
          }
          one["state"] = state;
          tables[py::str(t.name)] = one;
        }
        d["tables"] = tables;
        return d;
      },
      py::arg("index"), py::arg("layout"),
      "Reads and verifies a whole checkpoint: {'global_step', 'num_servers', 'params', 'shadow' (or None), "
      "'tables': {name: {'values': (rows, dim) array, 'accumulators': what the optimizer keeps per row ((rows,) for "
      "adagrad, (rows, 2 dim) for ftrl: z then n; None for sgd), 'state': the same by block name ({'accumulator': ...}, "
      "{'ftrl_z': ..., 'ftrl_n': ...})}}}. "
      "CheckpointError names the file and the problem.");
  m.def(
      "list_checkpoints",
      [](py::handle dir_arg) {
        const std::filesystem::path dir = path_arg(dir_arg, "list_checkpoints", "dir");
        std::vector<std::string> out;
        {
          py::gil_scoped_release unlocked;  // (a directory scan: maybe a slow file system)
          for (const auto& p : asyncps::list_checkpoints(dir)) out.push_back(p.string());
        }
        return out;
      },
      py::arg("dir"), "The checkpoint indexes in dir, newest first (not yet verified).");
  m.def(
      "export_npy",
      [](py::handle dir_arg, py::handle layout_obj, py::handle arena) {
        const std::filesystem::path dir = path_arg(dir_arg, "export_npy", "dir");
        const asyncps::ParamLayout layout = layout_arg(layout_obj, "export_npy");
        FloatBuffer b = float_buffer(arena, layout.size(), "export_npy: arena", false);
        std::vector<float> copy(b.span.begin(), b.span.end());  // (with the GIL: the arena is Python's)
        py::gil_scoped_release unlocked;
        asyncps::export_npy(dir, layout, copy);
      },
      py::arg("dir"), py::arg("layout"), py::arg("arena"), "Writes each tensor of the arena as <dir>/<name>.npy.");
  m.def(
      "export_checkpoint_npy",
      [](py::handle dir_arg, py::handle layout_obj, py::handle index_arg) {
        const std::filesystem::path dir = path_arg(dir_arg, "export_checkpoint_npy", "dir");
        const asyncps::ParamLayout layout = layout_arg(layout_obj, "export_checkpoint_npy");
        const std::filesystem::path index = path_arg(index_arg, "export_checkpoint_npy", "index");
        py::gil_scoped_release unlocked;
        asyncps::export_checkpoint_npy(dir, layout, asyncps::read_checkpoint(index, layout));
      },
      py::arg("dir"), py::arg("layout"), py::arg("index"),
      "Reads the checkpoint `index` (read_checkpoint's checks) and writes each tensor as <dir>/<name>.npy and each "
      "embedding table as <dir>/<table>.npy (rows, dim), with one <dir>/<table>.<block>.npy per block of its "
      "optimizer's state (adagrad: accumulator; ftrl: ftrl_z and ftrl_n).");
}

}  // namespace asyncps_python
