// A job whose ranks leave moments apart: every rank ends MPI (MpiEnvironment's destructor), then
// the last rank stays on for 2 s before it exits 0. The job must end 0. (Under MPICH before 4.2
// across nodes, where MpiEnvironment skips MPI_Finalize, hydra took the first rank to exit for a
// crashed one and SIGKILLed the late rank on its host: multihost_step_exactness_np4 failed so
// in CI, 1 run in many, when a rank was slow to leave.)
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "asyncps/mpi_environment.h"

int main(int argc, char** argv) {
  int rank = 0, size = 0;
  {
    asyncps::MpiEnvironment mpi(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  if (rank == size - 1) {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    std::printf("rank %d of %d left 2 s after the others\n", rank, size);
  }
  return 0;
}
