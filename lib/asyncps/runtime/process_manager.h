// defines: asyncps::detail::leave_process_manager
// How a rank that skips MPI_Finalize (MpiEnvironment, MPICH before 4.2 across nodes) still tells
// its launcher that it ended on purpose.
#pragma once
#include <chrono>

namespace asyncps::detail {

// Sends the PMI-1 "finalize" command on the socket the launcher passed in PMI_FD (MPICH's hydra
// proxy; Slurm's mpi/pmi2 plugin answers it too) and waits up to `limit` for "finalize_ack",
// then closes the socket: what MPICH's own PMI_Finalize does inside MPI_Finalize. Without it
// hydra takes a rank that exits with its PMI socket open for a crashed one: it marks the rank's
// exit status 1 and SIGKILLs the ranks still running on that host (mpich src/pm/hydra
// pmip_cb.c), which fails a job whose ranks leave moments apart. Returns whether the launcher
// acknowledged; false, with nothing sent, when PMI_FD is unset or not a socket. Never throws.
bool leave_process_manager(std::chrono::milliseconds limit) noexcept;

}  // namespace asyncps::detail
