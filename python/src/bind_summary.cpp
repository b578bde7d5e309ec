// asyncps.SummaryWriter: TensorBoard scalars (asyncps/summary_writer.h), for the Python examples
// and any loop: SummaryWriter(logdir).add_scalar(tag, value, step), add_scalars({tag: value}, step).
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "asyncps/summary_writer.h"
#include "handles.h"

namespace py = pybind11;

namespace asyncps_python {

void bind_summary(py::module_& m) {
  py::class_<asyncps::SummaryWriter>(m, "SummaryWriter",
      "Scalar curves for TensorBoard: a new events.out.tfevents.* file in logdir (created if needed), "
      "each add flushed, so `tensorboard --logdir` shows a running job. Write from one rank (the chief). "
      "A context manager: `with asyncps.SummaryWriter(d) as s:` closes the file at the end.")
      .def(py::init([](py::handle logdir) {
             return std::make_unique<asyncps::SummaryWriter>(path_arg(logdir, "SummaryWriter", "logdir"));
           }),
           py::arg("logdir"))
      .def("add_scalar",
           [](asyncps::SummaryWriter& w, py::handle tag, py::handle value, py::handle step) {
             w.add_scalar(str_arg(tag, "SummaryWriter.add_scalar", "tag"),
                          double_arg(value, "SummaryWriter.add_scalar", "value"),
                          int64_arg(step, "SummaryWriter.add_scalar", "step"));
           },
           py::arg("tag"), py::arg("value"), py::arg("step"), "One scalar at a global step (its wall time now).")
      .def("add_scalars",
           [](asyncps::SummaryWriter& w, py::handle values, py::handle step) {
             if (!py::isinstance<py::dict>(values))
               throw py::type_error(std::string("asyncps: SummaryWriter.add_scalars: values must be a dict of "
                                                "{tag: value} (got ") +
                                    py::str(py::type::of(values).attr("__name__")).cast<std::string>() + ")");
             std::vector<std::pair<std::string, double>> v;
             for (auto [k, x] : values.cast<py::dict>())
               v.emplace_back(str_arg(k, "SummaryWriter.add_scalars", "a tag"),
                              double_arg(x, "SummaryWriter.add_scalars", "a value"));
             w.add_scalars(v, int64_arg(step, "SummaryWriter.add_scalars", "step"));
           },
           py::arg("values"), py::arg("step"), "Several scalars ({tag: value}) at one global step: one event.")
      .def_property_readonly("path", [](const asyncps::SummaryWriter& w) { return w.path().string(); },
                             "the event file written")
      .def("close", &asyncps::SummaryWriter::close, "closes the file (later adds are refused)")
      .def("__enter__", [](asyncps::SummaryWriter& w) -> asyncps::SummaryWriter& { return w; },
           py::return_value_policy::reference)
      .def("__exit__", [](asyncps::SummaryWriter& w, py::args) { w.close(); });
}

}  // namespace asyncps_python
