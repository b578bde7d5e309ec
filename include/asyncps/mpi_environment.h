// defines: asyncps::MpiEnvironment
// RAII for MPI itself. Respects an MPI already initialised by the host program and only
// finalises what it initialised (the horovod habit: a library must not own a process's MPI).
//
//   int main(int argc, char** argv) {
//     asyncps::MpiEnvironment mpi(&argc, &argv);   // MPI_Init_thread(FUNNELED) unless already up
//     ...
//   }                                               // MPI_Finalize only if we called MPI_Init
#pragma once

namespace asyncps {

class MpiEnvironment {
 public:
  // Before initialising MPI, makes the settings of the implementation it runs on, where the user
  // made none (Open MPI 4: OMPI_MCA_osc=^ucx, since Debian's openmpi-mca-params.conf disables the
  // pt2pt one-sided component that windows between hosts need; see docs/MULTIHOST.md), and
  // refuses a task that srun started among several without a PMI (srun --mpi=none): one line
  // and exit 1 (abort_job), as MPI_Init would otherwise abort or start singletons.
  // Asks for MPI_THREAD_FUNNELED (pt2pt refuses MPI_THREAD_MULTIPLE).
  MpiEnvironment(int* argc, char*** argv);
  MpiEnvironment() : MpiEnvironment(nullptr, nullptr) {}
  // MPI_Finalize, when this object initialised MPI, once every rank has reached its
  // MpiEnvironment's end (a sleeping wait, without a deadline: a rank that fails later, the
  // chief after an evaluation, then aborts a job whose ranks are all still there; under Open MPI
  // 4.1 an abort after some ranks had finalised and exited left mpirun hanging). One exception: MPICH before 4.2 on ch4:ucx
  // with ranks on several nodes, whose MPI_Finalize can hang for good (a rank's UCX disconnect
  // waits on a peer already blocked in the final PMI barrier: mpich#6596, fixed in 4.2; 2 of 4
  // netns runs here): there every rank meets in an MPI_Barrier, tells its launcher it is done
  // (the PMI "finalize" that MPI_Finalize would send: hydra kills the ranks still running on a
  // host once one exits without it) and exits without MPI_Finalize. See docs/MULTIHOST.md
  // "Which MPI".
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  bool owns_mpi() const noexcept { return owns_; }
  int thread_level() const noexcept { return provided_; }

 private:
  bool owns_ = false;
  int provided_ = 0;
  bool skip_finalize_ = false;  // (decided collectively right after MPI_Init)
};

// Prints "asyncps: <message> [rank R of N on HOST]" on stderr as one line (line breaks in the
// message become spaces) and aborts every rank of MPI_COMM_WORLD (or exits if MPI is not running)
// with exit_code, which is in [1, 255]: any other code (0 among them) ends it with 1. For fatal errors in main(): nobody is left
// hanging. An exception from the library may have left windows abandoned on this rank (they are
// never freed while an exception unwinds: the other ranks may be elsewhere), so a program that
// catches one must end the job, with this call, rather than go on.
[[noreturn]] void abort_job(const char* message, int exit_code = 1) noexcept;

}  // namespace asyncps
