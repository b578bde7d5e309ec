// defines: asyncps_python::SessionHandle, ServerHandle, WorkerHandle
// What the Python objects hold: the C++ objects behind a pointer that close() resets (see
// lifetime.h for the rule), and the handles they depend on (a WorkerClient keeps its Session
// alive). A handle's destructor (Python dropped the object) never runs a collective and never
// waits for another rank:
//   - a Session still open is parked: its communicator is freed at exit (MPI_Comm_free is
//     collective);
//   - a ParameterServer is destroyed (the library's destructor never is collective: serve()
//     freed the windows at its end, and an unserved server abandons them);
//   - a WorkerClient already finished is destroyed; an unfinished one is parked and finished
//     at exit (finishing now would wait for every worker), with a RuntimeWarning;
//   - a server or finished worker dropped on another thread than the owner is freed by the
//     owner thread's next call of the module (only the owner calls MPI), an unfinished worker
//     or open Session there is parked as above;
//   - anything dropped after MPI was finalised (mpi4py's MPI.Finalize()) is leaked.
#pragma once
#include <pybind11/pybind11.h>

#include <map>
#include <memory>
#include <string>

#include "asyncps/error.h"
#include "asyncps/parameter_server.h"
#include "asyncps/session.h"
#include "asyncps/shadow_store.h"
#include "asyncps/step_loop.h"
#include "asyncps/worker_client.h"
#include "buffers.h"
#include "lifetime.h"

namespace asyncps_python {

// The owner thread's check (lifetime.h), then the object's: "asyncps: <call>: this X is closed".
template <class T>
T& open_or_refuse(const std::unique_ptr<T>& p, const char* call, const char* what, bool in_tick_ok) {
  check_thread(call, in_tick_ok);
  if (!p) throw pybind11::value_error(std::string("asyncps: ") + call + ": this " + what + " is closed");
  return *p;
}

struct SessionHandle : Closable {
  std::unique_ptr<asyncps::Session> session;
  int open_dependants = 0;  // servers and workers built on it and not closed (parked ones too)
  asyncps::Session& get(const char* call, bool in_tick_ok = true) const {
    return open_or_refuse(session, call, "Session", in_tick_ok);
  }
  void close() override {  // MPI_Comm_free: collective (close() at the same point everywhere, or exit)
    pybind11::gil_scoped_release unlocked;
    session.reset();
  }
  ~SessionHandle() override {
    if (!session) return;
    if (!mpi_usable()) {
      (void)session.release();  // (MPI is gone: nothing to free it with)
      return;
    }
    auto parked = std::make_unique<SessionHandle>();
    parked->session = std::move(session);
    park(seq, std::move(parked));
  }
};

// A server or worker: it uses its Session until it is closed (and a Session with open
// dependants refuses Session.close()).
struct SessionDependant : Closable {
  std::shared_ptr<SessionHandle> session;
  void attach(std::shared_ptr<SessionHandle> s) {
    session = std::move(s);
    ++session->open_dependants;
  }
  void release_session() {
    if (session) --session->open_dependants;
    session.reset();
  }
  ~SessionDependant() override { release_session(); }  // (also when the constructor threw)
};

struct ServerHandle : SessionDependant {
  std::unique_ptr<asyncps::ParameterServer> server;
  bool served = false;   // serve() was called
  bool serving = false;  // serve() is running (its tick may run Python code: close() refuses)
  asyncps::ParameterServer& get(const char* call, bool in_tick_ok = false) const {
    return open_or_refuse(server, call, "ParameterServer", in_tick_ok);
  }
  // Never collective: serve() freed the windows at its end; a server that never served
  // abandons them (its workers' finish() then waits until the stall timeout ends the job).
  void close() override {
    server.reset();
    release_session();
  }
  ~ServerHandle() override {
    if (!server) return;
    if (!mpi_usable()) {
      (void)server.release();
      return;
    }
    if (!on_owner_thread()) {  // (freed by the owner thread's next call)
      auto later = std::make_unique<ServerHandle>();
      later->server = std::move(server);
      later->session = std::move(session);
      later->served = true;  // (no warning from there)
      defer(std::move(later));
      return;
    }
    if (!served)
      warn_dropped(
          "asyncps: a ParameterServer was dropped without serve(): its windows are abandoned and its workers' "
          "finish() waits for it (until the stall timeout ends the job)");
    close();
  }
};

struct WorkerHandle : SessionDependant {
  std::unique_ptr<asyncps::WorkerClient> client;
  std::unique_ptr<asyncps::StepLoop> steps;
  std::unique_ptr<asyncps::ShadowStore> shadow;
  std::map<asyncps::Ticket, FloatBuffer> pending;  // pull_async buffers, alive until waited for
  bool abandoned = false;  // finish() failed: requests may be in flight, pending buffers never released
  asyncps::WorkerClient& get(const char* call, bool in_tick_ok = false) const {
    return open_or_refuse(client, call, "WorkerClient", in_tick_ok);
  }
  asyncps::StepLoop& loop(const char* call, bool in_tick_ok = false) const {
    return open_or_refuse(steps, call, "WorkerClient", in_tick_ok);
  }
  // The job's outcome (halted, final_step, job_staleness, ...): known only once finish() ended the
  // job; before, an Error (it used to read as "not halted", step 0).
  const asyncps::StepLoop& after_finish(const char* call) const {
    const asyncps::StepLoop& l = loop(call, true);
    if (!client->finished())
      throw asyncps::Error(std::string(call) + ": the job's outcome, known once finish() has ended it");
    return l;
  }
  // finish() (GIL released) unless finished; a failure marks the worker abandoned and propagates.
  void finish() {
    if (!client || client->finished()) return;
    try {
      pybind11::gil_scoped_release unlocked;
      client->finish();
    } catch (...) {
      abandoned = true;
      throw;
    }
    pending.clear();  // drain() completed every pull_async
  }
  // finish()es if needed (collective with the servers' serve()), then frees what is left (nothing
  // collective: finish() freed the windows).
  void close() override {
    finish();
    shadow.reset();
    steps.reset();
    if (abandoned) new std::map<asyncps::Ticket, FloatBuffer>(std::move(pending));  // (leaked on purpose)
    pending.clear();
    client.reset();
    release_session();
  }
  ~WorkerHandle() override {
    if (!client) return;
    if (!mpi_usable()) {
      (void)client.release(), (void)steps.release(), (void)shadow.release();
      new std::map<asyncps::Ticket, FloatBuffer>(std::move(pending));
      return;
    }
    const bool finished = client->finished();
    if (!on_owner_thread() || !finished) {
      if (!finished)
        warn_dropped(
            "asyncps: a WorkerClient was dropped without finish(): it is kept and finished at exit, and until then "
            "the servers' serve() waits for it (call finish(), or use `with WorkerClient(session) as w:`)");
      auto kept = std::make_unique<WorkerHandle>();
      kept->client = std::move(client);
      kept->steps = std::move(steps);
      kept->shadow = std::move(shadow);
      kept->pending = std::move(pending);
      kept->session = std::move(session);
      kept->abandoned = abandoned;
      if (finished)
        defer(std::move(kept));  // (on another thread: freed by the owner thread's next call)
      else
        park(seq, std::move(kept));
      return;
    }
    try {
      close();  // finished: nothing collective is left
    } catch (...) {
    }
  }
};

void bind_errors(pybind11::module_& m);
void bind_layout(pybind11::module_& m);
void bind_session(pybind11::module_& m);
void bind_server(pybind11::module_& m);
void bind_worker(pybind11::module_& m);
void bind_table(pybind11::module_& m);
void bind_summary(pybind11::module_& m);

// Collective over comm: the lowest rank's non-empty `mine` ("rank N: " before it where that is
// another rank), on every rank; "" when none has one (bind_session.cpp). A constructor whose
// arguments this rank's binding refused agrees on it first, so every rank raises with the real
// message and none waits in the library's collective.
std::string first_problem_over(MPI_Comm comm, const std::string& mine);

}  // namespace asyncps_python
