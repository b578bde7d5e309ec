// defines: asyncps_python::track, park, close_all, on_owner_thread, check_thread, mpi_usable,
//          warn_dropped, TickScope, init_mpi, finalize_mpi
#include "lifetime.h"

#include <Python.h>
#include <mpi.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "asyncps/error.h"
#include "asyncps/mpi_environment.h"

namespace asyncps_python {
namespace {
// Every tracked object by its order of creation: the live ones (weak: Python owns them) and
// what dropped ones left to close at exit (owned here). Used with the GIL held.
struct Entry {
  std::weak_ptr<Closable> live;
  std::unique_ptr<Closable> parked;
};
std::map<std::uint64_t, Entry>& registry() {
  static auto* objects = new std::map<std::uint64_t, Entry>();  // (never destroyed: exit order)
  return *objects;
}
std::uint64_t next_seq = 0;
std::unique_ptr<asyncps::MpiEnvironment>& environment() {
  static std::unique_ptr<asyncps::MpiEnvironment> env;
  return env;
}
std::vector<std::unique_ptr<Closable>>& deferred() {  // (defer(): freed by the owner's next call)
  static auto* objects = new std::vector<std::unique_ptr<Closable>>();
  return *objects;
}
std::thread::id owner;  // the thread that imported asyncps
bool owner_set = false;
int tick_depth = 0;     // serve() ticks running (owner thread only)
}  // namespace

void track(const std::shared_ptr<Closable>& object) {
  auto& r = registry();
  std::erase_if(r, [](const auto& e) { return !e.second.parked && e.second.live.expired(); });
  object->seq = ++next_seq;
  r[object->seq].live = object;
}

void park(std::uint64_t seq, std::unique_ptr<Closable> object) noexcept {
  try {
    object->seq = seq;
    registry()[seq].parked = std::move(object);
  } catch (...) {
    object.release();  // (no memory for the entry: leaked, never freed at a bad moment)
  }
}

void defer(std::unique_ptr<Closable> object) noexcept {
  try {
    deferred().push_back(std::move(object));
  } catch (...) {
    object.release();
  }
}

namespace {
// On the owner thread, with the GIL: closes and frees what other threads dropped.
void free_deferred() noexcept {
  while (!deferred().empty()) {
    std::vector<std::unique_ptr<Closable>> batch = std::move(deferred());
    deferred().clear();
    for (auto& object : batch) {
      try {
        object->close();  // (non-collective: a served server, a finished worker)
      } catch (const std::exception& ex) {
        asyncps::abort_job((std::string("freeing an object dropped on another thread: ") + ex.what()).c_str());
      }
      object.reset();
    }
  }
}
}  // namespace

void close_all() noexcept {
  if (mpi_usable()) free_deferred();
  auto& r = registry();
  if (mpi_usable()) {
    std::vector<std::uint64_t> order;
    for (auto it = r.rbegin(); it != r.rend(); ++it) order.push_back(it->first);
    for (const std::uint64_t seq : order) {
      auto e = r.find(seq);
      if (e == r.end()) continue;
      try {
        if (auto object = e->second.live.lock()) object->close();
        if (e->second.parked) e->second.parked->close();
      } catch (const std::exception& ex) {
        asyncps::abort_job((std::string("at exit: ") + ex.what()).c_str());
      }
    }
  }
  r.clear();
}

bool on_owner_thread() noexcept { return !owner_set || std::this_thread::get_id() == owner; }

void check_thread(const char* call, bool in_tick_ok) {
  if (!on_owner_thread())
    throw asyncps::ConfigError(std::string(call) +
                               " called from another thread: asyncps runs under MPI_THREAD_FUNNELED, so only the "
                               "thread that imported asyncps may call it (its Sessions, servers and workers)");
  if (tick_depth > 0 && !in_tick_ok)
    throw asyncps::ConfigError(std::string(call) +
                               " called from ParameterServer.serve()'s tick: the tick runs inside serve() and may "
                               "only read (snapshot(), properties), never enter MPI");
  if (tick_depth == 0 && !deferred().empty()) free_deferred();
}

bool mpi_usable() noexcept {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

void warn_dropped(const char* message) noexcept {
#if PY_VERSION_HEX >= 0x030D0000
  if (!Py_IsInitialized() || Py_IsFinalizing()) return;
#else
  if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
#endif
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  if (PyErr_WarnEx(PyExc_RuntimeWarning, message, 1) != 0) PyErr_WriteUnraisable(nullptr);
  PyErr_Restore(type, value, tb);
}

TickScope::TickScope() { ++tick_depth; }
TickScope::~TickScope() { --tick_depth; }

bool init_mpi() {
  auto& env = environment();
  if (!env) {
    env = std::make_unique<asyncps::MpiEnvironment>();
    // MPI up already (mpi4py first): under FUNNELED only its main thread may call it
    int provided = MPI_THREAD_SINGLE, is_main = 1;
    MPI_Query_thread(&provided);
    MPI_Is_thread_main(&is_main);
    if (provided < MPI_THREAD_MULTIPLE && !is_main) {
      env.reset();
      throw asyncps::ConfigError(
          "asyncps: import asyncps on the thread that initialised MPI: under MPI_THREAD_FUNNELED only that thread "
          "may call MPI");
    }
    owner = std::this_thread::get_id();
    owner_set = true;
  }
  return env->owns_mpi();
}

void finalize_mpi() noexcept {
  close_all();
  environment().reset();
}

}  // namespace asyncps_python
