// defines: asyncps_python::bind_server (asyncps.ParameterServer)
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "handles.h"
#include "staleness_dict.h"

namespace py = pybind11;

namespace asyncps_python {

void bind_server(py::module_& m) {
  py::class_<ServerHandle, std::shared_ptr<ServerHandle>>(
      m, "ParameterServer",
      "This rank's shard of the arena in an MPI window. Collective with every worker's WorkerClient.\n"
      "initial: the whole arena (layout.size float32); a checkpoint in checkpoint_dir replaces it.")
      .def(py::init([](std::shared_ptr<SessionHandle> session, py::handle initial, std::int64_t initial_step) {
             asyncps::Session& s = session->get();
             FloatBuffer init = float_buffer(initial, s.layout().size(), "ParameterServer: initial", false);
             auto h = std::make_shared<ServerHandle>();
             h->attach(std::move(session));
             {
               py::gil_scoped_release unlocked;
               h->server = std::make_unique<asyncps::ParameterServer>(s, init.span, initial_step);
             }
             track(h);
             return h;
           }),
           py::arg("session"), py::arg("initial"), py::arg("initial_step") = 0)
      .def(
          "serve",
          [](ServerHandle& h, const std::optional<py::function>& tick) {
            asyncps::ParameterServer& server = h.get();
            std::function<void()> hook;
            if (tick) hook = [&tick] {
              py::gil_scoped_acquire locked;
              (*tick)();
            };
            py::gil_scoped_release unlocked;
            server.serve(hook);
          },
          py::arg("tick") = py::none(),
          "Serves until every worker has finished (the GIL released). tick(), if given, runs after every entry "
          "into MPI; it must not call collective MPI operations.")
      .def("snapshot",
           [](ServerHandle& h) {
             auto s = h.get().snapshot();
             py::array_t<float> a(static_cast<py::ssize_t>(s.size()));
             std::copy(s.begin(), s.end(), a.mutable_data());
             return a;
           },
           "A copy of this server's shard as it is now (workers may be adding to it).")
      .def_property_readonly("shard",
                             [](ServerHandle& h) { return py::make_tuple(h.get().shard().offset, h.get().shard().size); },
                             "(offset, size) of this server's shard in the arena")
      .def_property_readonly("global_step", [](ServerHandle& h) { return h.get().global_step(); })
      .def_property_readonly("polls", [](ServerHandle& h) { return h.get().polls(); })
      .def_property_readonly("wakeups", [](ServerHandle& h) { return h.get().wakeups(); })
      .def_property_readonly("restored", [](ServerHandle& h) { return h.get().restored(); })
      .def_property_readonly("restored_step", [](ServerHandle& h) { return h.get().restored_step(); })
      .def_property_readonly("final_step", [](ServerHandle& h) { return h.get().final_step(); })
      .def_property_readonly("halted", [](ServerHandle& h) { return h.get().halted(); })
      .def_property_readonly("saved_checkpoint", [](ServerHandle& h) { return h.get().saved_checkpoint(); })
      .def_property_readonly("job_staleness", [](ServerHandle& h) { return staleness_dict(h.get().job_staleness()); })
      .def_property_readonly("closed", [](const ServerHandle& h) { return !h.server; })
      .def("close", [](ServerHandle& h) { h.close(); },
           "Frees the windows now. Collective with the workers' close() (as at exit): every rank closes at the "
           "same point.");
}

}  // namespace asyncps_python
