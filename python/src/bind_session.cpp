// defines: asyncps_python::bind_session (asyncps.Session: the job's ranks, roles and options)
#include <pybind11/pybind11.h>

#include <exception>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <optional>

#include "args.h"
#include "asyncps/error.h"
#include "asyncps/option_choices.h"
#include "handles.h"

namespace py = pybind11;

namespace asyncps_python {
namespace {

// A choice option (mode, pull, server_progress) by the library's names; its message otherwise.
template <class E>
E choice_arg(py::handle value, const char* option) {
  const std::string name = str_arg(value, "Session", option);
  try {
    return asyncps::parse_choice<E>(name, "Options::" + std::string(option));
  } catch (const asyncps::ConfigError& e) {
    throw asyncps::ConfigError(std::string("asyncps: Session: ") + e.what());
  }
}

// (choice_names<Mode>() == ("async", "sync", "ssp"): asyncps.MODES and friends)
template <class E>
py::tuple choice_names() {
  py::list names;
  for (const auto& c : asyncps::choices(E{})) names.append(c.name);
  return py::tuple(names);
}

// MPI_COMM_WORLD, or an mpi4py intracommunicator (through its Fortran handle: no mpi4py
// headers). Anything else is refused before it can reach MPI as a bogus handle.
MPI_Comm communicator(const py::object& comm) {
  if (comm.is_none()) return MPI_COMM_WORLD;
  const py::dict modules = py::module_::import("sys").attr("modules");
  const py::object mpi = modules.contains("mpi4py.MPI") ? py::object(modules["mpi4py.MPI"]) : py::object(py::none());
  if (mpi.is_none() || !py::isinstance(comm, mpi.attr("Comm")))
    throw py::type_error("asyncps: Session: comm must be None (MPI_COMM_WORLD) or an mpi4py intracommunicator (got " +
                         type_name(comm) + ")");
  const MPI_Comm c = MPI_Comm_f2c(comm.attr("py2f")().cast<MPI_Fint>());
  if (c == MPI_COMM_NULL) throw asyncps::ConfigError("asyncps: Session: comm is MPI.COMM_NULL (or freed)");
  if (!py::isinstance(comm, mpi.attr("Intracomm")))
    throw py::type_error("asyncps: Session: comm must be an intracommunicator (got " + type_name(comm) + ")");
  return c;
}

std::string mode_name(asyncps::Mode m) { return asyncps::name_of(m); }

// A rank of the session: an integer in [0, size).
int rank_arg(const SessionHandle& h, py::handle rank, const char* call) {
  const int size = h.get(call).roles().size;
  const std::int64_t r = int64_arg(rank, call, "rank");
  if (r < 0 || r >= size)
    throw asyncps::ConfigError("asyncps: " + std::string(call) + ": rank must be in [0, " + std::to_string(size) +
                               "), got " + std::to_string(r));
  return static_cast<int>(r);
}

}  // namespace

void bind_session(py::module_& m) {
  const asyncps::Options kDefaults;
  m.attr("MODES") = choice_names<asyncps::Mode>();
  m.attr("PULL_METHODS") = choice_names<asyncps::PullMethod>();
  m.attr("SERVER_PROGRESS") = choice_names<asyncps::ServerProgress>();
  py::class_<SessionHandle, std::shared_ptr<SessionHandle>>(
      m, "Session",
      "One training job's view of the ranks. Collective over the communicator: every rank creates it with\n"
      "the same layout and options (ConfigError on every rank otherwise). Ranks [0, num_servers) serve the\n"
      "arena (ParameterServer), the others are workers (WorkerClient); the first worker is the chief.")
      .def(py::init([](py::handle layout_arg, const py::object& comm, py::handle num_servers, py::handle mode,
                       py::handle staleness, py::handle staleness_lr, py::handle staleness_lr_power,
                       py::handle staleness_lr_relative,
                       py::handle dc_lambda, py::handle overlap,
                       py::handle pull, py::handle stall_timeout, py::handle timeline, py::handle checkpoint_dir,
                       py::handle save_secs, py::handle keep, py::handle restart_from, py::handle restore,
                       py::handle server_progress, py::handle server_poll_us, py::handle server_spin_us,
                       py::handle wait_spin_us) {
             constexpr const char* call = "Session";
             check_thread(call);
             // Every argument converted (Python code may run) before anything is kept. A refusal here
             // is this rank's alone: it is still taken to the collective, as options the library
             // refuses on every rank (no rank is left waiting), and then raised as it was.
             std::exception_ptr refused;
             asyncps::Options o;
             asyncps::ParamLayout layout;
             const MPI_Comm c = communicator(comm);  // (a bad communicator: nothing to agree over)
             try {
               if (!py::isinstance<asyncps::ParamLayout>(layout_arg))
                 throw py::type_error("asyncps: Session: layout must be an asyncps.Layout (got " + type_name(layout_arg) +
                                      ")");
               o.num_servers = int_arg(num_servers, call, "num_servers");
               o.mode = choice_arg<asyncps::Mode>(mode, "mode");
               o.staleness = int_arg(staleness, call, "staleness");
               o.staleness_lr = bool_arg(staleness_lr, call, "staleness_lr");
               o.staleness_lr_power = float32_arg(staleness_lr_power, call, "staleness_lr_power");
               o.staleness_lr_relative = bool_arg(staleness_lr_relative, call, "staleness_lr_relative");
               o.dc_lambda = float32_arg(dc_lambda, call, "dc_lambda");
               o.overlap = bool_arg(overlap, call, "overlap");
               o.pull = choice_arg<asyncps::PullMethod>(pull, "pull");
               o.stall_timeout = double_arg(stall_timeout, call, "stall_timeout");
               o.timeline = str_arg(timeline, call, "timeline");
               if (auto d = optional_path_arg(checkpoint_dir, call, "checkpoint_dir")) o.checkpoint.dir = *d;
               o.checkpoint.save_secs = double_arg(save_secs, call, "save_secs");
               o.checkpoint.keep = int_arg(keep, call, "keep");
               if (auto r = optional_path_arg(restart_from, call, "restart_from")) o.checkpoint.restart_from = *r;
               o.checkpoint.restore = bool_arg(restore, call, "restore");
               o.server_progress = choice_arg<asyncps::ServerProgress>(server_progress, "server_progress");
               o.server_poll_us = int_arg(server_poll_us, call, "server_poll_us");
               o.server_spin_us = int_arg(server_spin_us, call, "server_spin_us");
               o.wait_spin_us = int_arg(wait_spin_us, call, "wait_spin_us");
               // a copy taken with the GIL held: another thread may change the Layout meanwhile
               layout = layout_arg.cast<const asyncps::ParamLayout&>();
             } catch (...) {
               refused = std::current_exception();
               o = asyncps::Options{};
               o.num_servers = 0;  // refused by validate() on every rank
             }
             check_thread(call);  // (the conversions ran Python code: still here, and not in a tick)
             auto h = std::make_shared<SessionHandle>();
             try {
               py::gil_scoped_release unlocked;  // collective: the other ranks may take a while
               h->session = std::make_unique<asyncps::Session>(c, std::move(layout), std::move(o));
             } catch (const asyncps::ConfigError&) {
               if (refused) std::rethrow_exception(refused);  // this rank's own reason, as it was
               throw;
             }
             track(h);
             return h;
           }),
           // every default is the C++ one (asyncps::Options{}), choices by the library's names
           py::arg("layout"), py::arg("comm") = py::none(), py::kw_only(), py::arg("num_servers") = kDefaults.num_servers,
           py::arg("mode") = asyncps::name_of(kDefaults.mode), py::arg("staleness") = kDefaults.staleness,
           py::arg("staleness_lr") = kDefaults.staleness_lr,
           py::arg("staleness_lr_power") = static_cast<double>(kDefaults.staleness_lr_power),
           py::arg("staleness_lr_relative") = kDefaults.staleness_lr_relative, py::arg("dc_lambda") = static_cast<double>(kDefaults.dc_lambda),
           py::arg("overlap") = kDefaults.overlap, py::arg("pull") = asyncps::name_of(kDefaults.pull),
           py::arg("stall_timeout") = kDefaults.stall_timeout, py::arg("timeline") = kDefaults.timeline,
           py::arg("checkpoint_dir") = py::none(), py::arg("save_secs") = kDefaults.checkpoint.save_secs,
           py::arg("keep") = kDefaults.checkpoint.keep, py::arg("restart_from") = py::none(),
           py::arg("restore") = kDefaults.checkpoint.restore,
           py::arg("server_progress") = asyncps::name_of(kDefaults.server_progress),
           py::arg("server_poll_us") = kDefaults.server_poll_us, py::arg("server_spin_us") = kDefaults.server_spin_us,
           py::arg("wait_spin_us") = kDefaults.wait_spin_us)
      .def_property_readonly("rank", [](const SessionHandle& h) { return h.get("Session.rank").roles().rank; })
      .def_property_readonly("size", [](const SessionHandle& h) { return h.get("Session.size").roles().size; })
      .def_property_readonly("num_servers",
                             [](const SessionHandle& h) { return h.get("Session.num_servers").roles().num_servers; })
      .def_property_readonly("num_workers",
                             [](const SessionHandle& h) { return h.get("Session.num_workers").roles().num_workers(); })
      .def_property_readonly("is_server",
                             [](const SessionHandle& h) { return h.get("Session.is_server").roles().is_server(); })
      .def_property_readonly("is_worker",
                             [](const SessionHandle& h) { return h.get("Session.is_worker").roles().is_worker(); })
      .def_property_readonly("is_chief",
                             [](const SessionHandle& h) { return h.get("Session.is_chief").roles().is_chief(); })
      .def_property_readonly("worker_index",
                             [](const SessionHandle& h) -> std::optional<int> {
                               const auto& r = h.get("Session.worker_index").roles();
                               return r.is_worker() ? std::optional<int>(r.worker_index()) : std::nullopt;
                             })
      .def_property_readonly("mode",
                             [](const SessionHandle& h) { return mode_name(h.get("Session.mode").options().mode); })
      .def_property_readonly(
          "layout", [](const SessionHandle& h) { return asyncps::ParamLayout(h.get("Session.layout").layout()); },
          "a copy of the session's layout")
      .def_property_readonly("single_node",
                             [](const SessionHandle& h) { return h.get("Session.single_node").single_node(); })
      .def_property_readonly(
          "rma_needs_target",
          [](const SessionHandle& h) { return h.get("Session.rma_needs_target").rma_needs_target(); },
          "whether one-sided operations complete only when the servers enter MPI (between hosts; MPICH on one node too)")
      .def(
          "host",
          [](const SessionHandle& h, py::handle rank) {
            return h.get("Session.host").host(rank_arg(h, rank, "Session.host"));
          },
          py::arg("rank"), "That rank's host name (MPI_Get_processor_name).")
      .def(
          "describe_rank",
          [](const SessionHandle& h, py::handle rank) {
            return h.get("Session.describe_rank").describe_rank(rank_arg(h, rank, "Session.describe_rank"));
          },
          py::arg("rank"), "'worker 1 (rank 2 on host-b)': a rank as messages name it.")
      .def_property_readonly("closed", [](const SessionHandle& h) { return !h.session; })
      .def(
          "close",
          [](SessionHandle& h) {
            check_thread("Session.close");
            if (!h.session) return;  // (closing twice does nothing)
            if (h.open_dependants > 0)
              throw py::value_error(
                  "asyncps: Session.close: close its ParameterServer or WorkerClient first (a WorkerClient dropped "
                  "without finish() stays open until exit)");
            h.close();
          },
          "Frees the session's communicator (MPI_Comm_free: collective, so at the same point on every rank; the GIL "
          "released). Its server or worker must be closed first. Without close() it is freed at exit.")
      .def("__repr__", [](const SessionHandle& h) {
        if (!h.session) return std::string("Session(closed)");
        return "Session(" + h.session->describe_rank(h.session->roles().rank) + ", " +
               std::to_string(h.session->roles().num_servers) + " server(s), " +
               std::to_string(h.session->roles().num_workers()) + " worker(s), " +
               mode_name(h.session->options().mode) + ")";
      });
}

}  // namespace asyncps_python
