// defines: asyncps_python::Closable, track, park, check_thread, on_owner_thread, mpi_usable,
//          warn_dropped, close_all, init_mpi, finalize_mpi, TickScope
// The lifetime rule of the Python objects (docs/PYTHON.md "Lifetime"):
//  - Collective frees happen only where every rank is anyway: at the end of
//    ParameterServer.serve() and WorkerClient.finish() (the library's own rule), in an explicit
//    close() made at the same point on every rank, and at exit.
//  - Nothing Python frees at a moment of its own (the last reference dropped, the garbage
//    collector, another thread) ever runs a collective or waits for another rank. A dropped
//    object that could only be freed that way (an unfinished WorkerClient, an open Session) is
//    parked here instead and closed at exit; one dropped on another thread that holds nothing
//    collective any more is freed by the owner thread's next call (only the owner calls MPI).
//  - The module's atexit hook closes every live and parked object in reverse order of creation
//    (the same order on every rank: their collective frees match), then finalises MPI if the
//    module initialised it.
// Every call of the module that touches MPI runs on the thread that imported asyncps (the
// owner: MPI_THREAD_FUNNELED); check_thread() refuses any other before anything happens.
#pragma once
#include <cstdint>
#include <memory>

namespace asyncps_python {

class Closable {
 public:
  virtual ~Closable() = default;
  virtual void close() = 0;  // frees the MPI resources (collective where the C++ object's release is)
  std::uint64_t seq = 0;     // order of creation (track())
};

void track(const std::shared_ptr<Closable>& object);
// Keeps `object` (what a dropped handle still owned) until exit, where it is closed in the
// dropped handle's place. Called from destructors, with the GIL held.
void park(std::uint64_t seq, std::unique_ptr<Closable> object) noexcept;
// For what could be freed at once but was dropped on another thread (a served server, a
// finished worker: nothing collective left): closed and freed by the next call of the module
// on the owner thread (outside a tick), or at exit.
void defer(std::unique_ptr<Closable> object) noexcept;
void close_all() noexcept;

// The thread that imported asyncps (called init_mpi).
bool on_owner_thread() noexcept;
// Throws asyncps::ConfigError unless on the owner thread and, for calls that may enter MPI
// (`in_tick_ok` false), outside a ParameterServer.serve() tick. `call` names the Python call.
void check_thread(const char* call, bool in_tick_ok = false);
// MPI initialised and not yet finalised.
bool mpi_usable() noexcept;
// A RuntimeWarning from a destructor (never raises: a failing warning is printed as unraisable).
void warn_dropped(const char* message) noexcept;

// While serve()'s tick runs Python code: only calls that never enter MPI collectively are allowed.
struct TickScope {
  TickScope();
  ~TickScope();
  TickScope(const TickScope&) = delete;
  TickScope& operator=(const TickScope&) = delete;
};

// MPI_Init_thread(FUNNELED) unless MPI is already up (mpi4py imported first), through
// asyncps::MpiEnvironment; returns whether this module owns MPI. Records the owner thread.
bool init_mpi();
void finalize_mpi() noexcept;  // close_all(), then MPI_Finalize if init_mpi() initialised it

}  // namespace asyncps_python
