// defines: asyncps_python::bind_worker (asyncps.WorkerClient: the transport and its step loop,
//          StepStart, StepEnd)
// One Python object holds the C++ layers a worker uses: WorkerClient (pull/push/claim, the
// transport), StepLoop (begin_step/end_step: the mode, the non-finite guard, staleness) and
// ShadowStore (store_shadow/load_shadow). Buffers are viewed, never copied; the GIL is released
// during every call that enters MPI.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "handles.h"
#include "staleness_dict.h"

namespace py = pybind11;

namespace asyncps_python {
namespace {

// (refuses a closed worker first: closing also lets go of its session)
std::size_t arena_floats(const WorkerHandle& h) {
  h.get();
  return h.session->get().layout().size();
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
      "As a context manager it calls finish() on a clean exit.")
      .def(py::init([](std::shared_ptr<SessionHandle> session) {
             asyncps::Session& s = session->get();
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
      // ---- the transport
      .def(
          "pull",
          [](WorkerHandle& h, py::handle params) {
            FloatBuffer b = float_buffer(params, arena_floats(h), "WorkerClient.pull: params", true);
            py::gil_scoped_release unlocked;
            h.get().pull(b.span);
          },
          py::arg("params"), "params[:] = the arena (element-wise atomic reads).")
      .def(
          "push",
          [](WorkerHandle& h, py::handle grad, float scale) {
            FloatBuffer b = float_buffer(grad, arena_floats(h), "WorkerClient.push: grad", false);
            py::gil_scoped_release unlocked;
            h.get().push(b.span, scale);
          },
          py::arg("grad"), py::arg("scale"), "arena += scale * grad; returns when the update is in the arena.")
      .def(
          "push_async",
          [](WorkerHandle& h, py::handle grad, float scale) {
            FloatBuffer b = float_buffer(grad, arena_floats(h), "WorkerClient.push_async: grad", false);
            py::gil_scoped_release unlocked;
            return h.get().push_async(b.span, scale);
          },
          py::arg("grad"), py::arg("scale"), "Like push, returns a ticket at once (grad is copied: free on return).")
      .def(
          "pull_async",
          [](WorkerHandle& h, py::handle params) {
            FloatBuffer b = float_buffer(params, arena_floats(h), "WorkerClient.pull_async: params", true);
            asyncps::Ticket t;
            {
              py::gil_scoped_release unlocked;
              t = h.get().pull_async(b.span);
            }
            h.pending.emplace(t, std::move(b));  // the buffer stays alive until wait()
            return t;
          },
          py::arg("params"), "Starts a pull into params; returns a ticket (params is filled once wait() returns).")
      .def(
          "wait",
          [](WorkerHandle& h, asyncps::Ticket t) {
            {
              py::gil_scoped_release unlocked;
              h.get().wait(t);
            }
            h.pending.erase(t);
          },
          py::arg("ticket"))
      .def("wait_all",
           [](WorkerHandle& h) {
             {
               py::gil_scoped_release unlocked;
               h.get().wait_all();
             }
             h.pending.clear();
           })
      .def("next_step", [](WorkerHandle& h) {
        py::gil_scoped_release unlocked;
        return h.get().next_step();
      }, "Adds 1 to the global step; returns the new value.")
      .def(
          "claim_step",
          [](WorkerHandle& h, std::int64_t limit) {
            py::gil_scoped_release unlocked;
            return h.get().claim_step(limit);
          },
          py::arg("limit"), "Claims one global step below limit: its value, or None once the job is complete.")
      .def_property_readonly("global_step", [](WorkerHandle& h) {
        py::gil_scoped_release unlocked;
        return h.get().global_step();
      })
      .def("drain", [](WorkerHandle& h) {
        py::gil_scoped_release unlocked;
        h.get().drain();
      }, "Waits until no worker updates any more; pull() then returns the final arena.")
      .def("finish", [](WorkerHandle& h) {
        {
          py::gil_scoped_release unlocked;
          h.get().finish();
        }
        h.pending.clear();
      }, "Collective with ParameterServer.serve(): ends this worker's part (drain()s first).")
      .def_property_readonly("finished", [](const WorkerHandle& h) { return h.get().finished(); })
      .def_property_readonly("stats", [](const WorkerHandle& h) { return stats_dict(h.get().stats()); })
      .def_property_readonly("worker_index", [](const WorkerHandle& h) { return h.get().worker_index(); })
      // ---- the step loop (the mode, the non-finite guard, staleness)
      .def(
          "begin_step",
          [](WorkerHandle& h, py::handle params, std::int64_t limit) {
            FloatBuffer b = float_buffer(params, arena_floats(h), "WorkerClient.begin_step: params", true);
            py::gil_scoped_release unlocked;
            return h.loop().begin_step(b.span, limit);
          },
          py::arg("params"), py::arg("limit"),
          "Waits as the mode says and pulls into params: a StepStart, or None once limit global steps are done.")
      .def(
          "end_step",
          [](WorkerHandle& h, py::handle grad, float scale) {
            FloatBuffer b = float_buffer(grad, arena_floats(h), "WorkerClient.end_step: grad", false);
            py::gil_scoped_release unlocked;
            return h.loop().end_step(b.span, scale);
          },
          py::arg("grad"), py::arg("scale"),
          "Applies scale * grad as the mode says (never a gradient with NaN/Inf): a StepEnd.")
      .def("request_halt", [](WorkerHandle& h) {
        py::gil_scoped_release unlocked;
        h.loop().request_halt();
      })
      .def_property_readonly("halted", [](const WorkerHandle& h) { return h.loop().halted(); })
      .def_property_readonly("final_step", [](const WorkerHandle& h) { return h.loop().final_step(); })
      .def_property_readonly("staleness", [](const WorkerHandle& h) { return staleness_dict(h.loop().staleness()); })
      .def_property_readonly("job_staleness",
                             [](const WorkerHandle& h) { return staleness_dict(h.loop().job_staleness()); })
      // ---- the chief's EMA kept on the servers (checkpoints hold it)
      .def(
          "store_shadow",
          [](WorkerHandle& h, py::handle shadow) {
            FloatBuffer b = float_buffer(shadow, arena_floats(h), "WorkerClient.store_shadow: shadow", false);
            py::gil_scoped_release unlocked;
            open_or_refuse(h.shadow, "WorkerClient").store(b.span);
          },
          py::arg("shadow"))
      .def(
          "load_shadow",
          [](WorkerHandle& h, py::handle shadow) {
            FloatBuffer b = float_buffer(shadow, arena_floats(h), "WorkerClient.load_shadow: shadow", true);
            py::gil_scoped_release unlocked;
            return open_or_refuse(h.shadow, "WorkerClient").load(b.span);
          },
          py::arg("shadow"), "Fills shadow from the servers; False if they hold none (a fresh job).")
      .def_property_readonly("closed", [](const WorkerHandle& h) { return !h.client; })
      .def("close", [](WorkerHandle& h) { h.close(); },
           "finish()es if needed and frees the windows now. Collective with the servers' close() (as at exit): "
           "every rank closes at the same point.")
      .def("__enter__", [](std::shared_ptr<WorkerHandle> h) { return h; })
      .def("__exit__", [](WorkerHandle& h, const py::object& type, const py::object&, const py::object&) {
        // a clean exit finishes; an exception propagates (the module's excepthook ends the job)
        if (type.is_none() && h.client && !h.client->finished()) {
          py::gil_scoped_release unlocked;
          h.client->finish();
        }
        return false;
      });
}

}  // namespace asyncps_python
