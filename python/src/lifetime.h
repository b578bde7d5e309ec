// defines: asyncps_python::Closable, track, close_all, init_mpi, finalize_mpi
// Python frees objects in no fixed order, and an interpreter's exit may free them after MPI is
// gone. So every object of the module that holds MPI resources (Session, ParameterServer,
// WorkerClient) registers here, and the module's atexit hook closes the live ones in reverse
// order of creation (the same order on every rank: their collective frees match), then
// finalises MPI if the module initialised it. A closed object refuses every call.
#pragma once
#include <memory>

namespace asyncps_python {

class Closable {
 public:
  virtual ~Closable() = default;
  virtual void close() = 0;  // frees the MPI resources (collective where the C++ object's destructor is)
};

void track(const std::shared_ptr<Closable>& object);
void close_all() noexcept;

// MPI_Init_thread(FUNNELED) unless MPI is already up (mpi4py imported first), through
// asyncps::MpiEnvironment; returns whether this module owns MPI.
bool init_mpi();
void finalize_mpi() noexcept;  // close_all(), then MPI_Finalize if init_mpi() initialised it

}  // namespace asyncps_python
