// defines: asyncps_python::bind_worker (asyncps.WorkerClient: the transport and its step loop,
//          StepStart, StepEnd)
// One Python object holds the C++ layers a worker uses: WorkerClient (pull/push/claim, the
// transport), StepLoop (begin_step/end_step: the mode, the non-finite guard, staleness) and
// ShadowStore (store_shadow/load_shadow). Buffers are viewed, never copied; the GIL is released
// during every call that can wait for another rank (docs/PYTHON.md lists them).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "args.h"
#include "asyncps/error.h"
#include "handles.h"
#include "staleness_dict.h"

namespace py = pybind11;

namespace asyncps_python {
namespace {

// The thread check, then the arena's size (refuses a closed worker: closing also lets go of
// its session).
std::size_t arena_floats(const WorkerHandle& h, const char* call) {
  h.get(call);
  return h.session->get(call).layout().size();
}

py::dict stats_dict(const asyncps::WorkerStats& s) {
  py::dict d;
  d["pulls"] = s.pulls;
  d["pushes"] = s.pushes;
  d["steps"] = s.steps;
  d["pull_seconds"] = s.pull_seconds;
  d["push_seconds"] = s.push_seconds;
  d["wait_seconds"] = s.wait_seconds;
  d["mode_wait_seconds"] = s.mode_wait_seconds;
  d["mode_waits"] = s.mode_waits;
  d["max_clock_gap"] = s.max_clock_gap;
  d["nonfinite"] = s.nonfinite;
  return d;
}

}  // namespace

void bind_worker(py::module_& m) {
  py::class_<asyncps::StepStart>(m, "StepStart", "What begin_step() pulled: the global step (for the lr schedule).")
      .def_readonly("global_step", &asyncps::StepStart::global_step)
      .def_readonly("clock", &asyncps::StepStart::clock, "this worker's completed steps")
      .def("__repr__", [](const asyncps::StepStart& s) {
        return "StepStart(global_step=" + std::to_string(s.global_step) + ", clock=" + std::to_string(s.clock) + ")";
      });
  py::class_<asyncps::StepEnd>(m, "StepEnd", "What end_step() did with the update.")
      .def_readonly("applied", &asyncps::StepEnd::applied)
      .def_readonly("nonfinite", &asyncps::StepEnd::nonfinite, "NaN/Inf in the gradient: nothing was pushed")
      .def_readonly("global_step", &asyncps::StepEnd::global_step)
      .def("__bool__", [](const asyncps::StepEnd& e) { return e.applied; })
      .def("__repr__", [](const asyncps::StepEnd& e) {
        return std::string("StepEnd(applied=") + (e.applied ? "True" : "False") +
               ", nonfinite=" + (e.nonfinite ? "True" : "False") + ", global_step=" + std::to_string(e.global_step) + ")";
      });

  py::class_<WorkerHandle, std::shared_ptr<WorkerHandle>>(
      m, "WorkerClient",
      "A worker's access to the arena on the servers (MPI-3 passive target: the servers never take part).\n"
      "Collective with the ParameterServers. Buffers: C-contiguous float32 of layout.size elements (numpy\n"
      "arrays, anything with the buffer protocol, CPU torch tensors), used in place.\n"
      "As a context manager it calls finish() on a clean exit. Dropped unfinished, it is kept and finished\n"
      "at exit (a RuntimeWarning says so): dropping never waits for the other ranks.")
      .def(py::init([](py::handle session_obj) {
             constexpr const char* call = "WorkerClient";
             check_thread(call);
             if (!py::isinstance<SessionHandle>(session_obj))
               throw py::type_error("asyncps: WorkerClient: session must be an asyncps.Session (got " +
                                    type_name(session_obj) + ")");
             auto session = session_obj.cast<std::shared_ptr<SessionHandle>>();
             asyncps::Session& s = session->get(call, false);
             // (the servers' ParameterServer agrees first on what its binding refused: this rank
             // hears it here and raises it, named, before the library's collective)
             if (const std::string first = first_problem_over(s.comm(), ""); !first.empty())
               throw asyncps::ConfigError("asyncps: " + first);
             auto h = std::make_shared<WorkerHandle>();
             h->attach(std::move(session));
             {
               py::gil_scoped_release unlocked;
               h->client = std::make_unique<asyncps::WorkerClient>(s);
             }
             h->steps = std::make_unique<asyncps::StepLoop>(*h->client);
             h->shadow = std::make_unique<asyncps::ShadowStore>(*h->client);
             track(h);
             return h;
           }),
           py::arg("session"))
      // ---- the transport. Every call: the thread check, then its arguments (which may run
      // Python code), then the worker looked up, then the GIL released around the library call
      // (not around progress(), which returns at once).
      .def(
          "pull",
          [](WorkerHandle& h, py::handle params) {
            constexpr const char* call = "WorkerClient.pull";
            FloatBuffer b = float_buffer(params, arena_floats(h, call), "WorkerClient.pull: params", true);
            asyncps::WorkerClient& w = h.get(call);
            py::gil_scoped_release unlocked;
            w.pull(b.span);
          },
          py::arg("params"), "params[:] = the arena (element-wise atomic reads).")
      .def(
          "push",
          [](WorkerHandle& h, py::handle grad, py::handle scale) {
            constexpr const char* call = "WorkerClient.push";
            const std::size_t n = arena_floats(h, call);
            const float sc = scale_arg(scale, call);
            FloatBuffer b = float_buffer(grad, n, "WorkerClient.push: grad", false);
            asyncps::WorkerClient& w = h.get(call);
            py::gil_scoped_release unlocked;
            w.push(b.span, sc);
          },
          py::arg("grad"), py::arg("scale"),
          "arena += scale * grad; returns when the update is in the arena. A non-finite scale or grad is refused "
          "(ConfigError) before anything is sent.")
      .def(
          "push_async",
          [](WorkerHandle& h, py::handle grad, py::handle scale) {
            constexpr const char* call = "WorkerClient.push_async";
            const std::size_t n = arena_floats(h, call);
            const float sc = scale_arg(scale, call);
            FloatBuffer b = float_buffer(grad, n, "WorkerClient.push_async: grad", false);
            asyncps::WorkerClient& w = h.get(call);
            py::gil_scoped_release unlocked;
            return w.push_async(b.span, sc);
          },
          py::arg("grad"), py::arg("scale"),
          "Like push, returns a ticket at once (scale * grad is copied: grad is free on return).")
      .def(
          "pull_async",
          [](WorkerHandle& h, py::handle params) {
            constexpr const char* call = "WorkerClient.pull_async";
            FloatBuffer b = float_buffer(params, arena_floats(h, call), "WorkerClient.pull_async: params", true);
            asyncps::WorkerClient& w = h.get(call);
            asyncps::Ticket t;
            {
              py::gil_scoped_release unlocked;
              t = w.pull_async(b.span);
            }
            h.pending.insert_or_assign(t, std::move(b));  // the buffer (and its owner) stay alive until waited for
            return t;
          },
          py::arg("params"),
          "Starts a pull into params; returns a ticket (params is filled once wait() returns; the worker keeps "
          "params alive until then).")
      .def(
          "wait",
          [](WorkerHandle& h, py::handle ticket) {
            constexpr const char* call = "WorkerClient.wait";
            check_thread(call);
            const asyncps::Ticket t = int64_arg(ticket, call, "ticket");
            asyncps::WorkerClient& w = h.get(call);
            {
              py::gil_scoped_release unlocked;
              w.wait(t);
            }
            h.pending.erase(t);
          },
          py::arg("ticket"), "Blocks until that push_async/pull_async is complete.")
      .def("wait_all",
           [](WorkerHandle& h) {
             asyncps::WorkerClient& w = h.get("WorkerClient.wait_all");
             {
               py::gil_scoped_release unlocked;
               w.wait_all();
             }
             h.pending.clear();
           })
      .def(
          "progress",
          [](WorkerHandle& h) { h.get("WorkerClient.progress").progress(); },  // (keeps the GIL: returns at once)
          "Lets the operations in flight (tickets, StepLoop's prefetched pull, the last push) advance while the "
          "caller waits on something else, a GPU step say: one pass of MPI's progress engine; returns at once.")
      .def(
          "next_step",
          [](WorkerHandle& h) {
            asyncps::WorkerClient& w = h.get("WorkerClient.next_step");
            py::gil_scoped_release unlocked;
            return w.next_step();
          },
          "Adds 1 to the global step; returns the new value.")
      .def(
          "claim_step",
          [](WorkerHandle& h, py::handle limit) {
            constexpr const char* call = "WorkerClient.claim_step";
            check_thread(call);
            const std::int64_t l = int64_arg(limit, call, "limit");
            asyncps::WorkerClient& w = h.get(call);
            py::gil_scoped_release unlocked;
            return w.claim_step(l);
          },
          py::arg("limit"), "Claims one global step below limit: its value, or None once the job is complete.")
      .def_property_readonly("global_step",
                             [](WorkerHandle& h) {
                               asyncps::WorkerClient& w = h.get("WorkerClient.global_step");
                               py::gil_scoped_release unlocked;
                               return w.global_step();
                             })
      .def(
          "drain",
          [](WorkerHandle& h) {
            asyncps::WorkerClient& w = h.get("WorkerClient.drain");
            {
              py::gil_scoped_release unlocked;
              w.drain();
            }
            h.pending.clear();  // (drain completed every pull_async)
          },
          "Waits until no worker updates any more; pull() then returns the final arena.")
      .def(
          "finish",
          [](WorkerHandle& h) {
            h.get("WorkerClient.finish");
            h.finish();
          },
          "Collective with ParameterServer.serve(): ends this worker's part (drain()s first) and frees its windows. "
          "A second call does nothing.")
      .def_property_readonly("finished", [](const WorkerHandle& h) { return h.get("WorkerClient.finished", true).finished(); })
      .def_property_readonly("stats",
                             [](const WorkerHandle& h) { return stats_dict(h.get("WorkerClient.stats", true).stats()); })
      .def_property_readonly("worker_index", [](const WorkerHandle& h) {
        return h.get("WorkerClient.worker_index", true).worker_index();
      })
      .def_property_readonly(
          "restored", [](const WorkerHandle& h) { return h.get("WorkerClient.restored", true).restored(); },
          "whether the job restored a checkpoint")
      .def_property_readonly(
          "restored_step", [](const WorkerHandle& h) { return h.get("WorkerClient.restored_step", true).restored_step(); },
          "the global step the job resumed from (0 when it restored none)")
      // ---- the step loop (the mode, the non-finite guard, staleness)
      .def(
          "begin_step",
          [](WorkerHandle& h, py::handle params, py::handle limit) {
            constexpr const char* call = "WorkerClient.begin_step";
            const std::size_t n = arena_floats(h, call);
            const std::int64_t l = int64_arg(limit, call, "limit");
            FloatBuffer b = float_buffer(params, n, "WorkerClient.begin_step: params", true);
            asyncps::StepLoop& loop = h.loop(call);
            py::gil_scoped_release unlocked;
            return loop.begin_step(b.span, l);
          },
          py::arg("params"), py::arg("limit"),
          "Waits as the mode says and pulls into params: a StepStart, or None once limit global steps are done.")
      .def(
          "end_step",
          [](WorkerHandle& h, py::handle grad, py::handle scale) {
            constexpr const char* call = "WorkerClient.end_step";
            const std::size_t n = arena_floats(h, call);
            const float sc = scale_arg(scale, call);
            FloatBuffer b = float_buffer(grad, n, "WorkerClient.end_step: grad", false);
            asyncps::StepLoop& loop = h.loop(call);
            py::gil_scoped_release unlocked;
            return loop.end_step(b.span, sc);
          },
          py::arg("grad"), py::arg("scale"),
          "Applies scale * grad as the mode says (never a gradient with NaN/Inf: StepEnd.nonfinite): a StepEnd. "
          "A non-finite scale is refused (ConfigError) before anything is sent.")
      .def("request_halt",
           [](WorkerHandle& h) {
             asyncps::StepLoop& loop = h.loop("WorkerClient.request_halt");
             py::gil_scoped_release unlocked;
             loop.request_halt();
           })
      .def_property_readonly("halted", [](const WorkerHandle& h) { return h.after_finish("WorkerClient.halted").halted(); })
      .def_property_readonly("terminated",
                             [](const WorkerHandle& h) { return h.after_finish("WorkerClient.terminated").terminated(); })
      .def_property_readonly("final_step",
                             [](const WorkerHandle& h) { return h.after_finish("WorkerClient.final_step").final_step(); })
      .def_property_readonly("staleness", [](const WorkerHandle& h) {
        return staleness_dict(h.loop("WorkerClient.staleness", true).staleness());
      })
      .def_property_readonly("job_staleness", [](const WorkerHandle& h) {
        return staleness_dict(h.after_finish("WorkerClient.job_staleness").job_staleness());
      })
      .def_property_readonly("job_nonfinite", [](const WorkerHandle& h) {
        return h.after_finish("WorkerClient.job_nonfinite").job_nonfinite();
      })
      // ---- the chief's EMA kept on the servers (checkpoints hold it)
      .def(
          "store_shadow",
          [](WorkerHandle& h, py::handle shadow) {
            constexpr const char* call = "WorkerClient.store_shadow";
            FloatBuffer b = float_buffer(shadow, arena_floats(h, call), "WorkerClient.store_shadow: shadow", false);
            asyncps::ShadowStore& store = open_or_refuse(h.shadow, call, "WorkerClient", false);
            py::gil_scoped_release unlocked;
            store.store(b.span);
          },
          py::arg("shadow"), "Copies shadow to the servers (checkpoints hold it).")
      .def(
          "load_shadow",
          [](WorkerHandle& h, py::handle shadow) {
            constexpr const char* call = "WorkerClient.load_shadow";
            FloatBuffer b = float_buffer(shadow, arena_floats(h, call), "WorkerClient.load_shadow: shadow", true);
            asyncps::ShadowStore& store = open_or_refuse(h.shadow, call, "WorkerClient", false);
            py::gil_scoped_release unlocked;
            return store.load(b.span);
          },
          py::arg("shadow"), "Fills shadow from the servers; False if they hold none (a fresh job).")
      .def_property_readonly("closed", [](const WorkerHandle& h) { return !h.client; })
      .def(
          "close",
          [](WorkerHandle& h) {
            check_thread("WorkerClient.close");
            h.close();
          },
          "finish()es if needed (collective with the servers' serve(); the GIL released), then lets go of the "
          "worker. Closed, it refuses every call.")
      .def("__enter__",
           [](std::shared_ptr<WorkerHandle> h) {
             h->get("WorkerClient.__enter__", true);
             return h;
           })
      .def("__exit__", [](WorkerHandle& h, const py::object& type, const py::object&, const py::object&) {
        // a clean exit finishes; an exception propagates (the module's excepthook ends the job)
        check_thread("WorkerClient.__exit__");
        if (type.is_none()) h.finish();
        return false;
      });
}

}  // namespace asyncps_python
