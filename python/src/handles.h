// defines: asyncps_python::SessionHandle, ServerHandle, WorkerHandle
// What the Python objects hold: the C++ objects behind a pointer that close() resets (see
// lifetime.h), and the handles they depend on (a WorkerClient keeps its Session alive).
#pragma once
#include <pybind11/pybind11.h>

#include <map>
#include <memory>
#include <string>

#include "asyncps/parameter_server.h"
#include "asyncps/session.h"
#include "asyncps/shadow_store.h"
#include "asyncps/step_loop.h"
#include "asyncps/worker_client.h"
#include "buffers.h"
#include "lifetime.h"

namespace asyncps_python {

template <class T>
T& open_or_refuse(const std::unique_ptr<T>& p, const char* what) {
  if (!p) throw pybind11::value_error(std::string("asyncps: this ") + what + " is closed");
  return *p;
}

struct SessionHandle : Closable {
  std::unique_ptr<asyncps::Session> session;
  int open_dependants = 0;  // servers and workers built on it and not closed: they use the Session
  asyncps::Session& get() const { return open_or_refuse(session, "Session"); }
  void close() override { session.reset(); }
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
  asyncps::ParameterServer& get() const { return open_or_refuse(server, "ParameterServer"); }
  void close() override {
    server.reset();  // frees the windows: collective with the workers' close
    release_session();
  }
  ~ServerHandle() override { close(); }
};

struct WorkerHandle : SessionDependant {
  std::unique_ptr<asyncps::WorkerClient> client;
  std::unique_ptr<asyncps::StepLoop> steps;
  std::unique_ptr<asyncps::ShadowStore> shadow;
  std::map<asyncps::Ticket, FloatBuffer> pending;  // pull_async buffers, alive until waited for
  asyncps::WorkerClient& get() const { return open_or_refuse(client, "WorkerClient"); }
  asyncps::StepLoop& loop() const { return open_or_refuse(steps, "WorkerClient"); }
  void close() override {
    shadow.reset();
    steps.reset();
    client.reset();  // finish()es unless it was, frees the windows: collective with the servers' close
    pending.clear();  // (after the client: a pull_async may write into these until it finished)
    release_session();
  }
  ~WorkerHandle() override { close(); }  // the same order when Python frees it unclosed
};

void bind_errors(pybind11::module_& m);
void bind_layout(pybind11::module_& m);
void bind_session(pybind11::module_& m);
void bind_server(pybind11::module_& m);
void bind_worker(pybind11::module_& m);

}  // namespace asyncps_python
