// defines: MpiEnvironment, abort_job
#include "asyncps/mpi_environment.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include "asyncps/error.h"
#include "asyncps/log.h"
#include "core/check.h"
#include "core/log_origin.h"
#include "runtime/process_manager.h"
#include "transport/mpi_implementation.h"

namespace asyncps {

MpiEnvironment::MpiEnvironment(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {  // the host program owns MPI: use it as it is, never finalise it
    MPI_Query_thread(&provided_);
    detail::set_log_origin();
    return;
  }
  // srun's tasks without PMI: one line and exit 1 now, on every task, before MPI_Init prints a
  // page (Open MPI) or starts each task as a job of its own (MPICH)
  if (const std::string why = detail::launch_problem_before_init(); !why.empty()) abort_job(why.c_str(), 1);
  // the implementation's own settings where the user made none (transport/mpi_implementation.h)
  detail::mpi_implementation().prepare_environment();
  ASYNCPS_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided_));
  owns_ = true;
  detail::set_log_origin();
  if (detail::mpi_implementation().finalize_may_hang_across_nodes()) {  // (collective, as MPI_Init is)
    int world = 0, node = 0;
    MPI_Comm local = MPI_COMM_NULL;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    ASYNCPS_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local));
    MPI_Comm_size(local, &node);
    MPI_Comm_free(&local);
    int spans = node < world ? 1 : 0, any = 0;  // (node sizes differ between nodes: agree)
    ASYNCPS_MPI_CHECK(MPI_Allreduce(&spans, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    skip_finalize_ = any != 0;
  }
}

MpiEnvironment::~MpiEnvironment() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (skip_finalize_) {  // (see the header: every rank is done with MPI once all have met here)
    MPI_Barrier(MPI_COMM_WORLD);
    std::fflush(nullptr);
    // hydra kills the ranks still running on a host once one exits with its PMI socket open:
    // each rank says it is done, as MPI_Finalize would (runtime/process_manager.h). Then every
    // rank lingers a moment, so that none closes its connections while a peer may still be
    // reading the barrier's last message.
    detail::leave_process_manager(std::chrono::seconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return;
  }
  // Every rank meets before any finalises: a rank that fails after the others were done (the
  // chief's evaluation after finish(), a call on a finished worker) then aborts a job whose ranks
  // are all still there. Open MPI 4.1's mpirun, once some ranks have finalised and exited, hangs
  // in about 1 run of 3 on a later MPI_Abort or non-zero exit (reproduced without the library).
  // The wait sleeps (a rank may wait here minutes for an evaluation) and has no deadline: it ends
  // when every rank is here, or with the job.
  // (Not while unwinding: an MpiEnvironment inside the try whose catch calls abort_job must let
  // this rank reach the abort, not wait for the others.)
  MPI_Request all_here = MPI_REQUEST_NULL;
  if (std::uncaught_exceptions() == 0 && MPI_Ibarrier(MPI_COMM_WORLD, &all_here) == MPI_SUCCESS) {
    for (int done = 0, nap_us = 50;;) {
      if (MPI_Test(&all_here, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done) break;
      std::this_thread::sleep_for(std::chrono::microseconds(nap_us));
      nap_us = std::min(nap_us * 2, 10000);
    }
  }
  MPI_Finalize();
}

void abort_job(const char* message, int exit_code) noexcept {
  // an abort is never a success, and a process's exit status is a byte: 0 and codes outside
  // [1, 255] (256 would read as 0) end it with 1
  if (exit_code < 1 || exit_code > 255) exit_code = 1;
  try {  // (noexcept: a sink that throws, or no memory for the line, still ends the job)
    // one line (a message's line breaks become spaces) saying which rank failed, and where: with
    // many ranks on many hosts the line alone must say it (the sinks end every line with
    // log_origin(), " [rank R of N on HOST]")
    std::string line(message ? message : "");
    for (char& ch : line)
      if (ch == '\n' || ch == '\r') ch = ' ';
    detail::set_log_origin();
    log(LogLevel::Error, line.c_str());
  } catch (...) {
    std::fprintf(stderr, "asyncps: %s\n", message ? message : "");
  }
  detail::abort_world(exit_code);
}

}  // namespace asyncps
