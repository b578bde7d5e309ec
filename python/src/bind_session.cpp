// defines: asyncps_python::bind_session (asyncps.Session: the job's ranks, roles and options)
#include <pybind11/pybind11.h>

#include <exception>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <charconv>
#include <optional>
#include <string>

#include "args.h"
#include "asyncps/error.h"
#include "asyncps/option_choices.h"
#include "asyncps/option_table.h"
#include "handles.h"

namespace py = pybind11;

namespace asyncps_python {
namespace {

// A real number as the shortest text that reads back the same (nan, inf and -inf as such).
template <class T>
std::string shortest(T v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
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

// A keyword's value converted as its option's type asks (TypeError or ConfigError naming it), then
// set as the library reads its options (asyncps/option_table.h).
void set_keyword(asyncps::Options& o, const asyncps::OptionInfo& option, py::handle v) {
  constexpr const char* call = "Session";
  const std::string key(option.key);
  const char* arg = key.c_str();
  std::string text;
  switch (option.type) {
    case asyncps::OptionType::Bool: text = bool_arg(v, call, arg) ? "true" : "false"; break;
    case asyncps::OptionType::Int: text = std::to_string(int_arg(v, call, arg)); break;
    case asyncps::OptionType::Size: text = std::to_string(int64_arg(v, call, arg)); break;
    case asyncps::OptionType::Float: text = shortest(float32_arg(v, call, arg)); break;
    case asyncps::OptionType::Double: text = shortest(double_arg(v, call, arg)); break;
    case asyncps::OptionType::Text:
    case asyncps::OptionType::Choice: text = str_arg(v, call, arg); break;
    case asyncps::OptionType::Path: {
      const auto p = optional_path_arg(v, call, arg);
      if (!p) return;  // None: the default (no directory, no checkpoint named)
      if (p->empty())   // (it read as None: a checkpoint_dir="" job kept nothing)
        throw asyncps::ConfigError(std::string("asyncps: Session: ") + arg +
                                   " must not be empty (None, the default, for none)");
      text = p->string();
      break;
    }
  }
  try {
    asyncps::set_option(o, option, text);
  } catch (const asyncps::ConfigError& e) {
    throw asyncps::ConfigError(std::string("asyncps: Session: ") + e.what());
  }
}

std::string unknown_keyword(const std::string& key) {
  py::list keys;
  for (const auto& option : asyncps::option_table()) keys.append(std::string(option.key));
  const py::list near = py::module_::import("difflib").attr("get_close_matches")(key, keys, 1);
  std::string hint;
  if (!near.empty()) {
    hint = " (did you mean '" + near[0].cast<std::string>() + "'?)";
  } else {
    keys.attr("sort")();
    hint = " (it takes " + py::str(", ").attr("join")(keys).cast<std::string>() + ")";
  }
  return "asyncps: Session: unknown keyword argument '" + key + "'" + hint;
}

// Session's signature and its keywords' help, from the options' table: every default is the C++
// one (asyncps::Options{}), choices by the library's names.
const std::string& session_doc() {
  static const std::string doc = [] {
    const asyncps::Options defaults;
    std::string sig = "__init__(self, layout: asyncps.Layout, comm: object = None, *";
    std::string help;
    for (const asyncps::OptionInfo& o : asyncps::option_table()) {
      const std::string d = o.get(defaults);
      std::string type, value;
      switch (o.type) {
        case asyncps::OptionType::Bool: type = "bool", value = d == "true" ? "True" : "False"; break;
        case asyncps::OptionType::Int:
        case asyncps::OptionType::Size: type = "int", value = d; break;
        case asyncps::OptionType::Float:
        case asyncps::OptionType::Double:
          type = "float", value = py::repr(py::float_(std::stod(d))).cast<std::string>();
          break;
        case asyncps::OptionType::Text:
        case asyncps::OptionType::Choice: type = "str", value = py::repr(py::str(d)).cast<std::string>(); break;
        case asyncps::OptionType::Path: type = "Optional[os.PathLike]", value = "None"; break;
      }
      sig += ", " + std::string(o.key) + ": " + type + " = " + value;
      help += "\n  " + std::string(o.key) + ": " + std::string(o.help);
      if (o.choices) help += " (" + o.choices() + ")";
    }
    return sig + ") -> None\n\n"
                 "One training job's view of the ranks. Collective over the communicator: every rank creates it with\n"
                 "the same layout and options (ConfigError on every rank otherwise). Ranks [0, num_servers) serve the\n"
                 "arena (ParameterServer), the others are workers (WorkerClient); the first worker is the chief.\n"
                 "The keywords are the library's options (asyncps/option_table.h):" +
           help;
  }();
  return doc;
}

}  // namespace

// Collective over comm: the lowest rank's non-empty `mine` ("rank N: " before it where that is
// another rank), on every rank; "" when none has one. For what a Python wrapper checks before its
// Session (AsyncOptimizer's arguments): every rank then raises, none waits in the Session.
std::string first_problem_over(MPI_Comm comm, const std::string& mine) {
  py::gil_scoped_release unlocked;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int candidate = mine.empty() ? size : rank;
  int first = size;
  MPI_Allreduce(&candidate, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return {};
  std::string text = mine;
  int length = static_cast<int>(text.size());
  MPI_Bcast(&length, 1, MPI_INT, first, comm);
  text.resize(static_cast<std::size_t>(length));
  MPI_Bcast(text.data(), length, MPI_CHAR, first, comm);
  return first == rank ? text : "rank " + std::to_string(first) + ": " + text;
}

std::string first_problem(const py::object& comm_arg, const std::string& mine) {
  check_thread("asyncps._first_problem", false);
  return first_problem_over(communicator(comm_arg), mine);
}

void bind_session(py::module_& m) {
  m.def("_first_problem", &first_problem, py::arg("comm"), py::arg("mine"),
        "Collective: the lowest rank's non-empty message (with its rank), or '' (for wrappers' own checks).");
  m.attr("MODES") = choice_names<asyncps::Mode>();
  m.attr("PULL_METHODS") = choice_names<asyncps::PullMethod>();
  m.attr("SERVER_PROGRESS") = choice_names<asyncps::ServerProgress>();
  py::class_<SessionHandle, std::shared_ptr<SessionHandle>>(
      m, "Session",
      "One training job's view of the ranks. Collective over the communicator: every rank creates it with\n"
      "the same layout and options (ConfigError on every rank otherwise). Ranks [0, num_servers) serve the\n"
      "arena (ParameterServer), the others are workers (WorkerClient); the first worker is the chief.")
      .def(py::init([](py::handle layout_arg, const py::object& comm, const py::kwargs& keywords) {
             constexpr const char* call = "Session";
             check_thread(call);
             // Every argument converted (Python code may run) before anything is kept. A refusal here
             // is this rank's alone: the ranks agree on it first (first_problem_over), so every rank
             // raises (this one as it was, the others a ConfigError with its rank and message) and
             // none is left waiting in the Session.
             std::exception_ptr refused;
             std::string mine;  // its message, which every rank raises (the others with its rank)
             asyncps::Options o;
             asyncps::ParamLayout layout;
             const MPI_Comm c = communicator(comm);  // (a bad communicator: nothing to agree over)
             try {
               if (!py::isinstance<asyncps::ParamLayout>(layout_arg))
                 throw py::type_error("asyncps: Session: layout must be an asyncps.Layout (got " + type_name(layout_arg) +
                                      ")");
               // a misspelt keyword: one line naming it and the nearest option
               for (const auto& item : keywords) {
                 const std::string key = py::str(item.first);
                 if (!asyncps::find_option(key)) throw py::type_error(unknown_keyword(key));
               }
               for (const asyncps::OptionInfo& option : asyncps::option_table()) {  // in the table's order
                 const std::string key(option.key);
                 if (keywords.contains(key.c_str())) set_keyword(o, option, py::object(keywords[key.c_str()]));
               }
               // a copy taken with the GIL held: another thread may change the Layout meanwhile
               layout = layout_arg.cast<const asyncps::ParamLayout&>();
             } catch (const std::exception& e) {
               refused = std::current_exception();
               mine = e.what();
             } catch (...) {
               refused = std::current_exception();
               mine = "Session: an argument was refused";
             }
             check_thread(call);  // (the conversions ran Python code: still here, and not in a tick)
             if (mine.starts_with("asyncps: ")) mine.erase(0, 9);
             const std::string first = first_problem_over(c, refused && mine.empty() ? "Session: refused" : mine);
             if (refused) std::rethrow_exception(refused);  // this rank's own reason, as it was
             if (!first.empty()) throw asyncps::ConfigError("asyncps: " + first);  // another rank's, named
             auto h = std::make_shared<SessionHandle>();
             {
               py::gil_scoped_release unlocked;  // collective: the other ranks may take a while
               h->session = std::make_unique<asyncps::Session>(c, std::move(layout), std::move(o));
             }
             track(h);
             return h;
           }),
           py::arg("layout"), py::arg("comm") = py::none(), session_doc().c_str())
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
                  "asyncps: Session.close: close its ParameterServer or WorkerClient first (their close(): a "
                  "WorkerClient finished by finish() or a with block stays open until closed, one dropped without "
                  "finish() until exit)");
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
