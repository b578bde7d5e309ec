// defines: asyncps_python::bind_session (asyncps.Session: the job's ranks, roles and options)
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <optional>

#include "asyncps/error.h"
#include "handles.h"

namespace py = pybind11;

namespace asyncps_python {
namespace {

template <class E>
E parse_choice(const std::string& value, const char* option, std::initializer_list<std::pair<const char*, E>> choices) {
  std::string names;
  for (const auto& [name, e] : choices) {
    if (value == name) return e;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  throw asyncps::ConfigError("Options::" + std::string(option) + " '" + value + "': one of " + names);
}

// MPI_COMM_WORLD, or an mpi4py communicator (through its Fortran handle: no mpi4py headers).
MPI_Comm communicator(const py::object& comm) {
  if (comm.is_none()) return MPI_COMM_WORLD;
  if (!py::hasattr(comm, "py2f"))
    throw py::value_error("asyncps: Session: comm must be None (MPI_COMM_WORLD) or an mpi4py communicator (got " +
                          std::string(py::str(py::type::handle_of(comm).attr("__name__"))) + ")");
  const MPI_Comm c = MPI_Comm_f2c(comm.attr("py2f")().cast<MPI_Fint>());
  if (c == MPI_COMM_NULL) throw py::value_error("asyncps: Session: comm is MPI.COMM_NULL");
  return c;
}

std::string mode_name(asyncps::Mode m) {
  switch (m) {
    case asyncps::Mode::Async: return "async";
    case asyncps::Mode::Sync: return "sync";
    case asyncps::Mode::Ssp: return "ssp";
  }
  return "?";
}

}  // namespace

void bind_session(py::module_& m) {
  py::class_<SessionHandle, std::shared_ptr<SessionHandle>>(
      m, "Session",
      "One training job's view of the ranks. Collective over the communicator: every rank creates it with\n"
      "the same layout and options (ConfigError on every rank otherwise). Ranks [0, num_servers) serve the\n"
      "arena (ParameterServer), the others are workers (WorkerClient); the first worker is the chief.")
      .def(py::init([](const asyncps::ParamLayout& layout, const py::object& comm, int num_servers,
                       const std::string& mode, int staleness, bool staleness_lr, float dc_lambda, bool overlap,
                       const std::string& pull, double stall_timeout, const std::string& timeline,
                       const std::optional<std::filesystem::path>& checkpoint_dir, double save_secs, int keep,
                       const std::optional<std::filesystem::path>& restart_from, bool restore,
                       const std::string& server_progress, int server_poll_us, int server_spin_us,
                       int wait_spin_us) {
             asyncps::Options o;
             o.num_servers = num_servers;
             o.mode = parse_choice<asyncps::Mode>(mode, "mode", {{"async", asyncps::Mode::Async},
                                                                 {"sync", asyncps::Mode::Sync},
                                                                 {"ssp", asyncps::Mode::Ssp}});
             o.staleness = staleness;
             o.staleness_lr = staleness_lr;
             o.dc_lambda = dc_lambda;
             o.overlap = overlap;
             o.pull = parse_choice<asyncps::PullMethod>(
                 pull, "pull", {{"get_accumulate", asyncps::PullMethod::GetAccumulate}, {"get", asyncps::PullMethod::Get}});
             o.stall_timeout = stall_timeout;
             o.timeline = timeline;
             if (checkpoint_dir) o.checkpoint.dir = *checkpoint_dir;
             o.checkpoint.save_secs = save_secs;
             o.checkpoint.keep = keep;
             if (restart_from) o.checkpoint.restart_from = *restart_from;
             o.checkpoint.restore = restore;
             o.server_progress = parse_choice<asyncps::ServerProgress>(
                 server_progress, "server_progress",
                 {{"auto", asyncps::ServerProgress::Auto}, {"poll", asyncps::ServerProgress::Poll},
                  {"wake", asyncps::ServerProgress::Wake}});
             o.server_poll_us = server_poll_us;
             o.server_spin_us = server_spin_us;
             o.wait_spin_us = wait_spin_us;
             const MPI_Comm c = communicator(comm);
             auto h = std::make_shared<SessionHandle>();
             {
               py::gil_scoped_release unlocked;  // collective: the other ranks may take a while
               h->session = std::make_unique<asyncps::Session>(c, layout, o);
             }
             track(h);
             return h;
           }),
           py::arg("layout"), py::arg("comm") = py::none(), py::kw_only(), py::arg("num_servers") = 1,
           py::arg("mode") = "async", py::arg("staleness") = 0, py::arg("staleness_lr") = false,
           py::arg("dc_lambda") = 0.0f, py::arg("overlap") = false, py::arg("pull") = "get_accumulate",
           py::arg("stall_timeout") = 60.0, py::arg("timeline") = "", py::arg("checkpoint_dir") = py::none(),
           py::arg("save_secs") = 60.0, py::arg("keep") = 5, py::arg("restart_from") = py::none(),
           py::arg("restore") = true, py::arg("server_progress") = "auto", py::arg("server_poll_us") = -1,
           py::arg("server_spin_us") = 0, py::arg("wait_spin_us") = 50)
      .def_property_readonly("rank", [](const SessionHandle& h) { return h.get().roles().rank; })
      .def_property_readonly("size", [](const SessionHandle& h) { return h.get().roles().size; })
      .def_property_readonly("num_servers", [](const SessionHandle& h) { return h.get().roles().num_servers; })
      .def_property_readonly("num_workers", [](const SessionHandle& h) { return h.get().roles().num_workers(); })
      .def_property_readonly("is_server", [](const SessionHandle& h) { return h.get().roles().is_server(); })
      .def_property_readonly("is_worker", [](const SessionHandle& h) { return h.get().roles().is_worker(); })
      .def_property_readonly("is_chief", [](const SessionHandle& h) { return h.get().roles().is_chief(); })
      .def_property_readonly("worker_index",
                             [](const SessionHandle& h) -> std::optional<int> {
                               const auto& r = h.get().roles();
                               return r.is_worker() ? std::optional<int>(r.worker_index()) : std::nullopt;
                             })
      .def_property_readonly("mode", [](const SessionHandle& h) { return mode_name(h.get().options().mode); })
      .def_property_readonly("layout", [](const SessionHandle& h) { return h.get().layout(); })
      .def_property_readonly("single_node", [](const SessionHandle& h) { return h.get().single_node(); })
      .def("host", [](const SessionHandle& h, int rank) { return h.get().host(rank); }, py::arg("rank"))
      .def("describe_rank", [](const SessionHandle& h, int rank) { return h.get().describe_rank(rank); },
           py::arg("rank"))
      .def_property_readonly("closed", [](const SessionHandle& h) { return !h.session; })
      .def(
          "close",
          [](SessionHandle& h) {
            if (h.open_dependants > 0)
              throw py::value_error("asyncps: Session.close: close its ParameterServer or WorkerClient first");
            h.close();
          },
          "Frees the session's communicator (collective). Its server or worker must be closed first.")
      .def("__repr__", [](const SessionHandle& h) {
        if (!h.session) return std::string("Session(closed)");
        return "Session(" + h.session->describe_rank(h.session->roles().rank) + ", " +
               std::to_string(h.session->roles().num_servers) + " server(s), " +
               std::to_string(h.session->roles().num_workers()) + " worker(s), " +
               mode_name(h.session->options().mode) + ")";
      });
}

}  // namespace asyncps_python
