// defines: asyncps_python::bind_table (asyncps.EmbeddingTable, asyncps.EmbeddingGroup, RowPush)
// A worker's handle on one embedding table (asyncps/embedding_table.h). It keeps its
// WorkerClient's Python object alive and checks, on every call, the owner thread and that the
// worker is open (a closed worker has let go of the C++ state the table uses) before its
// arguments are converted, then releases the GIL around the library call. Keys: uint64 or int64
// buffers of any shape (buffers.h); rows: float32 buffers of keys x dim.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "args.h"
#include "asyncps/embedding_table.h"
#include "asyncps/error.h"
#include "asyncps/option_choices.h"
#include "handles.h"

namespace py = pybind11;

namespace asyncps_python {
namespace {

struct TableHandle {
  std::shared_ptr<WorkerHandle> worker;
  std::unique_ptr<asyncps::EmbeddingTable> table;  // (its state lives in the worker: used only while it is open)
  std::string name;                                // copies, readable whatever the worker's state
  std::uint64_t rows = 0;
  int dim = 0;
  asyncps::RowOptimizer optimizer{};
  // The thread check and the worker's (closed, in serve()'s tick), then the table.
  asyncps::EmbeddingTable& get(const char* call, bool in_tick_ok = false) const {
    worker->get(call, in_tick_ok);
    return *table;
  }
};

py::dict stats_dict(const asyncps::TableStats& s) {
  py::dict d;
  d["pulls"] = s.pulls;
  d["pushes"] = s.pushes;
  d["keys_pulled"] = s.keys_pulled;
  d["keys_pushed"] = s.keys_pushed;
  d["rows_pulled"] = s.rows_pulled;
  d["rows_pushed"] = s.rows_pushed;
  d["runs"] = s.runs;
  d["bytes_pulled"] = s.bytes_pulled;
  d["bytes_pushed"] = s.bytes_pushed;
  d["nonfinite"] = s.nonfinite;
  d["prefetched"] = s.prefetched;
  d["pull_seconds"] = s.pull_seconds;
  d["push_seconds"] = s.push_seconds;
  return d;
}

struct GroupHandle {
  std::shared_ptr<WorkerHandle> worker;
  std::unique_ptr<asyncps::EmbeddingGroup> group;  // (as TableHandle's table)
  std::vector<std::string> names;
  std::vector<int> dims;
  std::uint64_t rows = 0;
  asyncps::EmbeddingGroup& get(const char* call, bool in_tick_ok = false) const {
    worker->get(call, in_tick_ok);
    return *group;
  }
};

// A group call's buffers: `list` holds one per table of the group (`arg` names it in messages),
// each len(keys) * that table's dim float32 (writable for a pull's out).
template <class Span>
struct GroupBuffers {
  std::vector<FloatBuffer> held;  // (what keeps the buffers alive through the call)
  std::vector<Span> spans;
};
std::size_t row_floats(std::size_t keys, int dim, const char* call);
template <class Span>
GroupBuffers<Span> group_buffers(const GroupHandle& h, py::handle list, std::size_t keys, const char* call,
                                 const char* arg, bool writable) {
  if (py::isinstance<py::str>(list) || !py::isinstance<py::sequence>(list) || py::len(list) != h.dims.size())
    throw py::value_error("asyncps: " + std::string(call) + ": " + arg + " must be a list of " +
                          std::to_string(h.dims.size()) + " float32 buffers, one per table (got " + type_name(list) + ")");
  GroupBuffers<Span> b;
  for (std::size_t m = 0; m < h.dims.size(); ++m) {
    const std::string what =
        std::string(call) + ": " + arg + "[" + std::to_string(m) + "] (table '" + h.names[m] + "')";
    py::object x = list[py::int_(m)];
    b.held.push_back(float_buffer(x, row_floats(keys, h.dims[m], call), what, writable));
    b.spans.push_back(b.held.back().span);
  }
  return b;
}

std::size_t row_floats(std::size_t keys, int dim, const char* call) {
  const auto d = static_cast<std::size_t>(dim);
  if (keys > (std::size_t{1} << 32) - 1)
    throw asyncps::ConfigError("asyncps: " + std::string(call) + ": at most 2^32 - 1 keys per call, got " +
                               std::to_string(keys));
  return keys * d;
}

// One key as a Python integer: int64's bits or a uint64 (2**64 - 1 and -1 are one key).
std::uint64_t key_int(py::handle v, const char* call) {
  py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!i) {
    PyErr_Clear();
    throw py::type_error("asyncps: " + std::string(call) + ": key must be an integer or an array of keys (got " +
                         type_name(v) + ")");
  }
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow == 0) return static_cast<std::uint64_t>(x);
  if (overflow > 0) {
    const unsigned long long u = PyLong_AsUnsignedLongLong(i.ptr());
    if (!(u == static_cast<unsigned long long>(-1) && PyErr_Occurred())) return u;
    PyErr_Clear();
  }
  throw asyncps::ConfigError("asyncps: " + std::string(call) + ": key = " + short_repr(v) +
                             " is not a 64-bit key (in [-2**63, 2**64))");
}

}  // namespace

void bind_table(py::module_& m) {
  py::class_<asyncps::RowPush>(m, "RowPush", "What EmbeddingTable.push_rows() did.")
      .def_readonly("applied", &asyncps::RowPush::applied, "the update left for the servers")
      .def_readonly("nonfinite", &asyncps::RowPush::nonfinite, "NaN/Inf in the gradients: nothing was sent")
      .def_readonly("rows", &asyncps::RowPush::rows, "distinct rows updated")
      .def("__bool__", [](const asyncps::RowPush& p) { return p.applied; })
      .def("__repr__", [](const asyncps::RowPush& p) {
        return std::string("RowPush(applied=") + (p.applied ? "True" : "False") +
               ", nonfinite=" + (p.nonfinite ? "True" : "False") + ", rows=" + std::to_string(p.rows) + ")";
      });

  py::class_<TableHandle>(
      m, "EmbeddingTable",
      "A worker's handle on one embedding table of the layout (Layout.add_table): rows x dim float32 sharded\n"
      "across the servers by row, read and updated a few rows at a time by key, one-sided. Keys are any 64-bit\n"
      "ids (uint64 or int64 arrays of any shape, CPU torch tensors too), hashed into rows (row_of). Not\n"
      "collective; the worker must be open. Updates are Hogwild: atomic per element, never lost.")
      .def(py::init([](py::handle worker_obj, py::handle name) {
             constexpr const char* call = "EmbeddingTable";
             check_thread(call);
             if (!py::isinstance<WorkerHandle>(worker_obj))
               throw py::type_error("asyncps: EmbeddingTable: worker must be an asyncps.WorkerClient (got " +
                                    type_name(worker_obj) + ")");
             const std::string n = str_arg(name, call, "name");
             auto worker = worker_obj.cast<std::shared_ptr<WorkerHandle>>();
             asyncps::WorkerClient& w = worker->get(call);
             auto h = std::make_unique<TableHandle>();
             h->table = std::make_unique<asyncps::EmbeddingTable>(w, n);
             h->name = h->table->name(), h->rows = h->table->rows(), h->dim = h->table->dim();
             h->optimizer = h->table->optimizer();
             h->worker = std::move(worker);
             return h;
           }),
           py::arg("worker"), py::arg("name"))
      .def_readonly("name", &TableHandle::name)
      .def_readonly("rows", &TableHandle::rows)
      .def_readonly("dim", &TableHandle::dim)
      .def_property_readonly("optimizer", [](const TableHandle& h) { return std::string(asyncps::name_of(h.optimizer)); })
      .def_property(
          "epsilon", [](const TableHandle& h) { return h.get("EmbeddingTable.epsilon", true).epsilon(); },
          [](TableHandle& h, py::handle eps) {
            constexpr const char* call = "EmbeddingTable.epsilon";
            h.get(call);
            const float e = float32_arg(eps, call, "epsilon");
            h.get(call).set_epsilon(e);
          },
          "Adagrad's epsilon in scale * g / (sqrt(acc) + eps) (default 1e-8; finite, >= 0)")
      .def_property_readonly("stats",
                             [](const TableHandle& h) { return stats_dict(h.get("EmbeddingTable.stats", true).stats()); })
      .def(
          "row_of",
          [](const TableHandle& h, py::handle key) -> py::object {
            constexpr const char* call = "EmbeddingTable.row_of";
            asyncps::EmbeddingTable& t = h.get(call, true);
            const bool array_like = PyObject_CheckBuffer(key.ptr()) || (py::hasattr(key, "detach") && py::hasattr(key, "numpy"));
            if (PyBool_Check(key.ptr()) || (!PyIndex_Check(key.ptr()) && !array_like))
              throw py::type_error("asyncps: EmbeddingTable.row_of: key must be an integer or an array of keys (got " +
                                   type_name(key) + ")");
            // an array of keys: buffers and tensors, but not 0-d ones (numpy's integer scalars): those are one key
            const bool one_key = !array_like || (py::hasattr(key, "ndim") && py::int_(key.attr("ndim")).cast<int>() == 0);
            if (one_key) return py::int_(t.row_of(key_int(key, call)));
            KeyBuffer k = key_buffer(key, "EmbeddingTable.row_of: key");
            py::array_t<std::uint64_t> out(static_cast<py::ssize_t>(k.span.size()));
            std::uint64_t* o = out.mutable_data();
            for (std::size_t i = 0; i < k.span.size(); ++i) o[i] = t.row_of(k.span[i]);
            return out;
          },
          py::arg("key"),
          "The row a key is hashed into (mix64(key) mod rows, the same on every rank): an int for one key (any "
          "integer in [-2**63, 2**64)), a flat uint64 array for an array of keys.")
      .def(
          "pull_rows",
          [](TableHandle& h, py::handle keys, py::handle out) -> py::object {
            constexpr const char* call = "EmbeddingTable.pull_rows";
            h.get(call);
            KeyBuffer k = key_buffer(keys, "EmbeddingTable.pull_rows: keys");
            const int dim = h.dim;
            const std::size_t floats = row_floats(k.span.size(), dim, call);
            py::object result;
            if (out.is_none())
              result = py::array_t<float>({static_cast<py::ssize_t>(k.span.size()), static_cast<py::ssize_t>(dim)});
            else
              result = py::reinterpret_borrow<py::object>(out);
            FloatBuffer b = float_buffer(result, floats, "EmbeddingTable.pull_rows: out", true);
            asyncps::EmbeddingTable& t = h.get(call);
            {
              py::gil_scoped_release unlocked;
              t.pull_rows(k.span, b.span);
            }
            return result;
          },
          py::arg("keys"), py::arg("out") = py::none(),
          "out[i] = the row of keys[i] (element-wise atomic reads), after this worker's earlier pushes; returns out. "
          "out: a writable float32 buffer of len(keys) * dim elements, or None for a new (len(keys), dim) array.")
      .def(
          "prefetch_rows",
          [](TableHandle& h, py::handle keys) {
            constexpr const char* call = "EmbeddingTable.prefetch_rows";
            h.get(call);
            KeyBuffer k = key_buffer(keys, "EmbeddingTable.prefetch_rows: keys");
            asyncps::EmbeddingTable& t = h.get(call);
            py::gil_scoped_release unlocked;
            t.prefetch_rows(k.span);
          },
          py::arg("keys"),
          "Starts reading the rows of keys (the next batch's) and returns; the next pull_rows of the very same keys "
          "takes them instead of reading then, so the read flies during this step. They are the rows as of now plus "
          "this worker's own pushes since; a pull of other keys, another prefetch or drain() drops it.")
      .def(
          "push_rows",
          [](TableHandle& h, py::handle keys, py::handle grads, py::handle scale) {
            constexpr const char* call = "EmbeddingTable.push_rows";
            h.get(call);
            const float sc = scale_arg(scale, call);
            KeyBuffer k = key_buffer(keys, "EmbeddingTable.push_rows: keys");
            const std::size_t floats = row_floats(k.span.size(), h.dim, call);
            FloatBuffer g = float_buffer(grads, floats, "EmbeddingTable.push_rows: grads", false);
            asyncps::EmbeddingTable& t = h.get(call);
            py::gil_scoped_release unlocked;
            return t.push_rows(k.span, g.span, sc);
          },
          py::arg("keys"), py::arg("grads"), py::arg("scale"),
          "grads[i] is the gradient of keys[i]'s row (len(keys) * dim float32); gradients of keys that share a row "
          "are summed, then each row is updated once: sgd row += scale * g; adagrad acc += mean(g*g), row += scale * "
          "g / (sqrt(acc) + eps) (scale = -learning rate). NaN/Inf in the gradients sends nothing (RowPush.nonfinite); "
          "a non-finite scale is a ConfigError. Returns a RowPush once the buffers are free; the update lands before "
          "this worker's next pull_rows.")
      .def("__repr__", [](const TableHandle& h) {
        return "EmbeddingTable(" + h.name + ", rows=" + std::to_string(h.rows) + ", dim=" + std::to_string(h.dim) +
               ", optimizer=" + asyncps::name_of(h.optimizer) + ")";
      });

  py::class_<GroupHandle>(
      m, "EmbeddingGroup",
      "Tables of one row group (Layout.add_table(..., share_rows_with=...)), pulled and pushed together: each\n"
      "run of rows is one operation for all of them. Each table is updated as its own EmbeddingTable.push_rows\n"
      "would update it. Not collective; the worker must be open.")
      .def(py::init([](py::handle worker_obj, py::handle names) {
             constexpr const char* call = "EmbeddingGroup";
             check_thread(call);
             if (!py::isinstance<WorkerHandle>(worker_obj))
               throw py::type_error("asyncps: EmbeddingGroup: worker must be an asyncps.WorkerClient (got " +
                                    type_name(worker_obj) + ")");
             if (py::isinstance<py::str>(names) || !py::isinstance<py::sequence>(names))
               throw py::type_error("asyncps: EmbeddingGroup: names must be a list of table names (got " +
                                    type_name(names) + ")");
             std::vector<std::string> n;
             for (py::handle x : names) n.push_back(str_arg(x, call, "names"));
             auto worker = worker_obj.cast<std::shared_ptr<WorkerHandle>>();
             asyncps::WorkerClient& w = worker->get(call);
             auto h = std::make_unique<GroupHandle>();
             h->group = std::make_unique<asyncps::EmbeddingGroup>(w, n);
             for (std::size_t i = 0; i < h->group->size(); ++i) h->names.push_back(h->group->name(i)), h->dims.push_back(h->group->dim(i));
             h->rows = h->group->rows();
             h->worker = std::move(worker);
             return h;
           }),
           py::arg("worker"), py::arg("names"))
      .def_property_readonly("names", [](const GroupHandle& h) { return py::list(py::cast(h.names)); }, "the tables, in order")
      .def_property_readonly("dims", [](const GroupHandle& h) { return py::list(py::cast(h.dims)); }, "each table's dim")
      .def_readonly("rows", &GroupHandle::rows)
      .def_property_readonly("stats",
                             [](const GroupHandle& h) { return stats_dict(h.get("EmbeddingGroup.stats", true).stats()); },
                             "this group's calls: operations (runs), bytes, seconds; each table's stats count its keys and rows")
      .def(
          "pull_rows",
          [](GroupHandle& h, py::handle keys, py::handle out) -> py::list {
            constexpr const char* call = "EmbeddingGroup.pull_rows";
            h.get(call);
            KeyBuffer k = key_buffer(keys, "EmbeddingGroup.pull_rows: keys");
            py::list results;  // the buffers filled: out's, or new (len(keys), dim) arrays
            if (out.is_none())
              for (int dim : h.dims)
                results.append(py::array_t<float>({static_cast<py::ssize_t>(k.span.size()), static_cast<py::ssize_t>(dim)}));
            const py::handle given = out.is_none() ? py::handle(results) : out;
            const auto b = group_buffers<std::span<float>>(h, given, k.span.size(), call, "out", true);
            if (!out.is_none())
              for (py::handle x : out) results.append(x);
            asyncps::EmbeddingGroup& g = h.get(call);
            {
              py::gil_scoped_release unlocked;
              g.pull_rows(k.span, b.spans);
            }
            return results;
          },
          py::arg("keys"), py::arg("out") = py::none(),
          "Each table's rows of keys, as its EmbeddingTable.pull_rows, in one operation per run; returns a list of "
          "them in the group's order. out: a list of writable float32 buffers (len(keys) * dim of each table), or "
          "None for new (len(keys), dim) arrays.")
      .def(
          "prefetch_rows",
          [](GroupHandle& h, py::handle keys) {
            constexpr const char* call = "EmbeddingGroup.prefetch_rows";
            h.get(call);
            KeyBuffer k = key_buffer(keys, "EmbeddingGroup.prefetch_rows: keys");
            asyncps::EmbeddingGroup& g = h.get(call);
            py::gil_scoped_release unlocked;
            g.prefetch_rows(k.span);
          },
          py::arg("keys"), "As EmbeddingTable.prefetch_rows, for all the group's tables.")
      .def(
          "push_rows",
          [](GroupHandle& h, py::handle keys, py::handle grads, py::handle scale) {
            constexpr const char* call = "EmbeddingGroup.push_rows";
            h.get(call);
            const float sc = scale_arg(scale, call);
            KeyBuffer k = key_buffer(keys, "EmbeddingGroup.push_rows: keys");
            const auto b = group_buffers<std::span<const float>>(h, grads, k.span.size(), call, "grads", false);
            asyncps::EmbeddingGroup& g = h.get(call);
            py::gil_scoped_release unlocked;
            return g.push_rows(k.span, b.spans, sc);
          },
          py::arg("keys"), py::arg("grads"), py::arg("scale"),
          "grads: a list of each table's gradients of keys (len(keys) * dim float32 each); each table updated as by "
          "its EmbeddingTable.push_rows with this scale, in one operation per run. NaN/Inf in any sends nothing for "
          "any (RowPush.nonfinite).")
      .def("__repr__", [](const GroupHandle& h) {
        std::string s = "EmbeddingGroup([";
        for (std::size_t i = 0; i < h.names.size(); ++i) s += (i ? ", " : "") + h.names[i];
        return s + "], rows=" + std::to_string(h.rows) + ")";
      });
}

}  // namespace asyncps_python
