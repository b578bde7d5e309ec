// defines: asyncps_python::bind_server (asyncps.ParameterServer)
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <chrono>
#include <exception>
#include <optional>
#include <pybind11/stl.h>

#include "args.h"
#include "asyncps/error.h"
#include "handles.h"
#include "staleness_dict.h"

namespace py = pybind11;

namespace asyncps_python {

namespace {
std::shared_ptr<SessionHandle> session_arg(py::handle s, const char* call) {
  if (!py::isinstance<SessionHandle>(s))
    throw py::type_error("asyncps: " + std::string(call) + ": session must be an asyncps.Session (got " + type_name(s) +
                         ")");
  return s.cast<std::shared_ptr<SessionHandle>>();
}
}  // namespace

void bind_server(py::module_& m) {
  py::class_<ServerHandle, std::shared_ptr<ServerHandle>>(
      m, "ParameterServer",
      "This rank's shard of the arena in an MPI window. Collective with every worker's WorkerClient.\n"
      "initial: the whole arena (layout.size float32); a checkpoint in checkpoint_dir replaces it.\n"
      "serve() frees the windows at its end (where every rank is); dropping or closing the object\n"
      "never runs anything collective.")
      .def(py::init([](py::handle session_obj, py::handle initial, py::handle initial_step) {
             constexpr const char* call = "ParameterServer";
             check_thread(call);
             std::shared_ptr<SessionHandle> session = session_arg(session_obj, call);
             const std::size_t floats = session->get(call, false).layout().size();
             // A refusal here is this rank's alone: every rank agrees on it first (the workers'
             // WorkerClient too), so every rank raises, this one as it was and the others with its
             // message and rank, and none enters the library's collective.
             std::exception_ptr refused;
             std::string mine;
             std::int64_t step = 0;
             std::optional<FloatBuffer> init;
             try {
               step = int64_arg(initial_step, call, "initial_step");
               // (may run Python code: the session is looked up again below)
               init.emplace(float_buffer(initial, floats, "ParameterServer: initial", false));
             } catch (const std::exception& e) {
               refused = std::current_exception();
               mine = e.what();
             } catch (...) {
               refused = std::current_exception();
             }
             asyncps::Session& s = session->get(call, false);
             if (mine.starts_with("asyncps: ")) mine.erase(0, 9);
             const std::string first =
                 first_problem_over(s.comm(), refused && mine.empty() ? "ParameterServer: refused" : mine);
             if (refused) std::rethrow_exception(refused);
             if (!first.empty()) throw asyncps::ConfigError("asyncps: " + first);
             auto h = std::make_shared<ServerHandle>();
             h->attach(std::move(session));
             {
               py::gil_scoped_release unlocked;
               h->server = std::make_unique<asyncps::ParameterServer>(s, init->span, step);
             }
             track(h);
             return h;
           }),
           py::arg("session"), py::arg("initial"), py::arg("initial_step") = 0)
      .def(
          "serve",
          [](ServerHandle& h, py::handle tick) {
            constexpr const char* call = "ParameterServer.serve";
            check_thread(call);
            if (!tick.is_none() && !PyCallable_Check(tick.ptr()))
              throw py::type_error("asyncps: ParameterServer.serve: tick must be None or a callable (got " +
                                   type_name(tick) + ")");
            asyncps::ParameterServer& server = h.get(call);
            const py::object fn = py::reinterpret_borrow<py::object>(tick);
            std::function<void()> hook;
            if (!fn.is_none()) {
              hook = [&fn] {  // (its Python code runs the signal handlers that are due: Ctrl-C raises in it)
                py::gil_scoped_acquire locked;
                TickScope inside;  // the tick may only read (lifetime.h)
                fn();
              };
            } else {
              // No tick: the signals Python has caught (SIGINT: KeyboardInterrupt) are looked at
              // every 50 ms, so that an interrupt ends serve() with its exception now rather than at
              // the job's end (nothing else runs Python code in this thread until serve() returns).
              hook = [last = std::chrono::steady_clock::now()]() mutable {
                const auto now = std::chrono::steady_clock::now();
                if (now - last < std::chrono::milliseconds(50)) return;
                last = now;
                py::gil_scoped_acquire locked;
                if (PyErr_CheckSignals() != 0) throw py::error_already_set();
              };
            }
            h.served = true;
            h.serving = true;
            struct Done {
              ServerHandle& h;
              ~Done() { h.serving = false; }
            } done{h};
            py::gil_scoped_release unlocked;
            server.serve(hook);
          },
          py::arg("tick") = py::none(),
          "Serves until every worker has finished, then frees the windows (collective: every rank is at the job's "
          "end there). The GIL is released; a signal Python catches (Ctrl-C: KeyboardInterrupt) raises from serve() "
          "within 50 ms. tick(), if given, runs every 1 to 10 ms, after an entry into MPI; it may read "
          "(snapshot(), properties) and nothing else of asyncps; an exception from it ends serve() with it.")
      .def(
          "snapshot",
          [](ServerHandle& h) {
            auto s = h.get("ParameterServer.snapshot", true).snapshot();
            py::array_t<float> a(static_cast<py::ssize_t>(s.size()));
            std::copy(s.begin(), s.end(), a.mutable_data());
            return a;
          },
          "A copy of this server's shard: as it is now while serving (workers may be adding to it), the final one "
          "after serve().")
      .def_property_readonly(
          "shard",
          [](ServerHandle& h) {
            const auto& sh = h.get("ParameterServer.shard", true).shard();
            return py::make_tuple(sh.offset, sh.size);
          },
          "(offset, size) of this server's shard in the arena")
      .def_property_readonly("global_step",
                             [](ServerHandle& h) { return h.get("ParameterServer.global_step", true).global_step(); })
      .def_property_readonly("polls", [](ServerHandle& h) { return h.get("ParameterServer.polls", true).polls(); })
      .def_property_readonly("wakeups",
                             [](ServerHandle& h) { return h.get("ParameterServer.wakeups", true).wakeups(); })
      .def_property_readonly("restored",
                             [](ServerHandle& h) { return h.get("ParameterServer.restored", true).restored(); })
      .def_property_readonly(
          "restored_step", [](ServerHandle& h) { return h.get("ParameterServer.restored_step", true).restored_step(); })
      .def_property_readonly("final_step",
                             [](ServerHandle& h) { return h.get("ParameterServer.final_step", true).final_step(); })
      .def_property_readonly("halted", [](ServerHandle& h) { return h.get("ParameterServer.halted", true).halted(); })
      .def_property_readonly("terminated",
                             [](ServerHandle& h) { return h.get("ParameterServer.terminated", true).terminated(); })
      .def_property_readonly(
          "saved_checkpoint",
          [](ServerHandle& h) { return h.get("ParameterServer.saved_checkpoint", true).saved_checkpoint(); })
      .def_property_readonly("job_staleness",
                             [](ServerHandle& h) {
                               return staleness_dict(h.get("ParameterServer.job_staleness", true).job_staleness());
                             })
      .def_property_readonly("job_nonfinite",
                             [](ServerHandle& h) { return h.get("ParameterServer.job_nonfinite", true).job_nonfinite(); })
      .def_property_readonly("closed", [](const ServerHandle& h) { return !h.server; })
      .def(
          "close",
          [](ServerHandle& h) {
            check_thread("ParameterServer.close", true);
            if (h.serving)
              throw asyncps::ConfigError("asyncps: ParameterServer.close: called while serve() runs (from its tick)");
            h.close();
          },
          "Lets go of the server now (snapshot() and the rest refuse afterwards). Never collective: serve() freed "
          "the windows at its end; a server closed before serve() abandons them, and its workers' finish() waits "
          "for it.");
}

}  // namespace asyncps_python
