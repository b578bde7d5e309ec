// defines: asyncps::detail::MpiImplementation, MpiFamily, mpi_implementation, parse_library_version,
//          launch_problem, abort_world
// Everything the library assumes of one MPI implementation, in one place, chosen at run time
// from MPI_Get_library_version (which MPI allows before MPI_Init):
//   Open MPI 4.x  on one node osc rdma (shared memory) completes without the target; between
//                 hosts on TCP only osc pt2pt works, and it needs the target. Debian's
//                 openmpi-mca-params.conf excludes pt2pt, so the library sets OMPI_MCA_osc=^ucx
//                 unless the user chose.
//   Open MPI 5.x  no osc pt2pt; between hosts on TCP osc rdma over btl tcp, which needs the
//                 target; InfiniBand/RoCE osc ucx. The library sets nothing.
//   MPICH family  (MPICH, Intel MPI, MVAPICH, Cray MPICH: one ABI) ch4 accumulates and
//                 fetch-and-ops are messages the target processes, on one node too.
//   anything else treated as needing the target everywhere (the safe choice).
// docs/MULTIHOST.md has, for each, what a user sets on TCP, InfiniBand and RoCE.
#pragma once
#include <string>
#include <string_view>

namespace asyncps::detail {

enum class MpiFamily { OpenMpi, Mpich, Other };

struct MpiImplementation {
  MpiFamily family = MpiFamily::Other;
  std::string name;    // "Open MPI 4.1.4", "MPICH 4.0.2 (ch4:ucx)", "Intel MPI 2021.9", "Cray MPICH 8.1.27"
  int major = 0, minor = 0;  // of the implementation's own version (Intel MPI: its year)
  std::string device;  // MPICH's device ("ch4:ucx"), if the text names one

  // Before MPI_Init: the settings the library makes where the user made none (environment
  // variables the implementation reads at start-up). Never overrides the user's.
  void prepare_environment() const;
  // Whether one-sided operations complete only when the target enters MPI: for a job on one
  // node (`single_node`) or across nodes. Reads the user's settings (OMPI_MCA_osc).
  bool rma_needs_target(bool single_node) const;
  // Whether MPI_Finalize may hang for good once ranks span nodes: MPICH before 4.2 on ch4:ucx,
  // where a rank's UCX disconnect waits on a peer already blocked in the final PMI barrier
  // (mpich#6596). MpiEnvironment then skips MPI_Finalize after a barrier.
  bool finalize_may_hang_across_nodes() const;
  // Whether a server should poll (Options::server_progress auto) rather than sleep until a
  // worker's message wakes it: where operations complete without it (the poll only services the
  // clock and the heartbeats), and under the MPICH family on one node, where a 50 us poll
  // beats a wake (measured: docs/DECISIONS.md, the server-progress entry). Between hosts: wake.
  bool server_polls(bool single_node) const;
  // Whether ranks on one node talk through shared memory (no socket wakes a server for them).
  bool shared_memory_on_node() const;
  // One clause: what to set when a window cannot be created ("between hosts Open MPI 4 needs
  // ...: set OMPI_MCA_osc=^ucx").
  std::string window_failure_hint() const;
};

// The implementation this process runs on (parsed once; callable before MPI_Init).
const MpiImplementation& mpi_implementation();
// The parser behind it, for any MPI_Get_library_version text.
MpiImplementation parse_library_version(std::string_view text);

// Whether this process was started alone although its launcher started more tasks (each rank
// "0 of 1" while Slurm's SLURM_NTASKS > 1: MPI not wired to the launcher's process manager):
// the one line that says so and what to do, or "" when nothing is wrong.
std::string launch_problem(int world_size);
// The same before MPI_Init, from the environment alone: Slurm started this task among several
// but gave it no PMI/PMIx (Open MPI would abort in MPI_Init with a page of its own, MPICH would
// start N singletons). The line to refuse with, or "".
std::string launch_problem_before_init();

// Ends every rank of the job with `exit_code`, after what this rank wrote has reached its
// launcher: stdio flushed, then a pause of `kAbortSettleMs` before MPI_Abort, since a launcher
// may tear the job down on the first abort without forwarding what the ranks wrote just before
// (MPICH's hydra lost the one error line in some runs). Not initialised or finalised: _Exit.
inline constexpr int kAbortSettleMs = 200;
[[noreturn]] void abort_world(int exit_code) noexcept;

}  // namespace asyncps::detail
