// defines: asyncps::Options, asyncps::PullMethod, asyncps::Session
// A Session is one training job's view of the ranks: the communicator, the roles, the layout
// and the shard plan. Creating it is collective over the communicator; it verifies that every
// rank has the same layout and options and throws ConfigError on every rank otherwise.
//
//   asyncps::Session session(MPI_COMM_WORLD, layout, {.num_servers = 1});
//   if (session.roles().is_server()) { asyncps::ParameterServer ps(session, init); ps.serve(); }
//   else                             { asyncps::WorkerClient w(session); ... w.finish(); }
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "asyncps/checkpoint.h"
#include "asyncps/param_layout.h"
#include "asyncps/roles.h"

namespace asyncps {

enum class PullMethod {
  GetAccumulate,  // MPI_Get_accumulate(MPI_NO_OP): element-wise atomic reads (default)
  Get,            // MPI_Get: faster on some transports, elements may mix generations
};

// How workers' updates are combined (see docs/ARCHITECTURE.md, "Modes").
enum class Mode {
  Async,  // Hogwild: each update is applied as it arrives; nobody waits (default)
  Sync,   // every round, the mean of all W workers' updates is applied once; workers wait for it
  Ssp,    // stale-synchronous: a worker at clock c waits while the slowest clock is below c - staleness
};

// How a server lets one-sided operations complete (see docs/ARCHITECTURE.md "Server progress").
enum class ServerProgress {
  Auto,  // chosen by the Session from the MPI implementation, the node and the layout: Poll where
         // one-sided operations complete without the server, Wake where they need it between
         // hosts, Poll where the implementation or the layout's tables need it (the cases:
         // docs/ARCHITECTURE.md "Server progress")
  Poll,  // enter MPI every server_poll_us, sleeping in between (0: never sleeps)
  Wake,  // sleep until bytes arrive on one of the process's sockets (TCP), at most
         // server_poll_us; keep entering MPI for server_spin_us after the last arrival
};

struct Options {
  int num_servers = 1;            // S: ranks [0, S) serve the arena
  Mode mode = Mode::Async;
  int staleness = 0;              // SSP bound s (Mode::Ssp only)
  // Staleness-aware learning rate, async/ssp: each update is scaled by 1 / max(1, tau)^power.
  // power 1 is Zhang et al.'s 1/tau (IJCAI 2016), which collapses when tau ~ W - 1 (figures in
  // docs/CONVERGENCE.md); 0.5, 1/sqrt(tau), is the default.
  bool staleness_lr = false;
  float staleness_lr_power = 0.5f;  // in (0, 2]; only with staleness_lr
  // With staleness_lr: scale by ((1 + mean tau) / (1 + tau))^power instead, mean tau the job's,
  // W - 1 (Little's law: W updates in flight; W with overlap). The mean scale is about 1: only
  // updates staler than the job's mean are damped (a straggler's) and fresher ones lifted. It is
  // Zhang et al.'s rule with the base rate raised by the mean staleness, as they tune it.
  bool staleness_lr_relative = false;
  // Delay-compensated updates (DC-ASGD, Zheng et al., ICML 2017), async/ssp: end_step reads the
  // arena again and pushes g + dc_lambda * g*g*(w_now - w_read) instead of g. 0: off.
  float dc_lambda = 0;
  // async only: the next step's claim and pull are prefetched during this compute (one step more
  // staleness). (Every mode but sync already sends a step's push during the next compute.)
  bool overlap = false;
  PullMethod pull = PullMethod::GetAccumulate;
  ServerProgress server_progress = ServerProgress::Auto;
  // The longest a server sleeps between entries into MPI. -1 (auto): chosen by the Session,
  // long where a poll only serves the clock and the heartbeats, short where every worker's
  // operation waits for it (the cases: docs/ARCHITECTURE.md "Server progress").
  int server_poll_us = -1;
  int server_spin_us = 0;
  // Workers, when the transport needs the target (Wake): spin this long on an outstanding
  // claim/pull, then sleep until bytes arrive (frees the core for ranks that share it).
  int wait_spin_us = 50;
  // Non-empty: every rank records its spans (pull, compute, push, waits, server activity,
  // saves) and rank 0 writes them here at the end as Chrome trace-event JSON (Perfetto).
  std::string timeline = {};
  std::size_t chunk_bytes = 1u << 20;  // large pushes/pulls are split into pieces of this size
  // Liveness (see docs/ARCHITECTURE.md "Failure"): every rank sends a heartbeat about every
  // min(1 s, stall_timeout / 4); a rank silent for this many seconds is reported by rank and
  // host, server 0 saves a checkpoint if every server is live, and the job ends with StallError
  // on the rank that noticed. It must exceed the longest compute step and the longest save.
  // 0: off.
  double stall_timeout = 60;
  CheckpointOptions checkpoint = {};  // where and how often servers save (default: never)
};

// Throws ConfigError naming the first field out of range or without effect
// ("Options::stall_timeout must be ..."), or returns. Session's constructor calls it.
void validate(const Options& options);

class Session {
 public:
  // Collective over `comm` (which is duplicated: the library's traffic never mixes with the
  // caller's). Throws ConfigError on every rank for fewer than 2 ranks, S >= ranks, an empty
  // layout, options that validate() refuses on any rank (every rank throws that rank's
  // message), or a layout or options that differ between ranks.
  // The thread that creates the Session is the only one that may call the library on it, its
  // servers and workers (MPI_THREAD_FUNNELED): a call from another thread throws ConfigError.
  Session(MPI_Comm comm, ParamLayout layout, Options options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  MPI_Comm comm() const noexcept { return comm_; }
  const Roles& roles() const noexcept { return roles_; }
  const ParamLayout& layout() const noexcept { return layout_; }
  const ShardPlan& plan() const noexcept { return plan_; }
  const RowPlan& row_plan() const noexcept { return row_plan_; }  // the embedding tables' rows
  const Options& options() const noexcept { return options_; }
  // True when every rank of the session runs on one node (shared memory between all of them).
  bool single_node() const noexcept { return single_node_; }
  // Whether one-sided operations on this session complete only when their target (a server)
  // enters MPI: between hosts on TCP, and on one node too under MPICH and its derivatives
  // (docs/MULTIHOST.md). Then every wait on a server is watched by the stall timeout.
  bool rma_needs_target() const noexcept;
  // The server progress mode and poll interval in effect (Options' auto values resolved).
  ServerProgress server_progress() const noexcept;
  int server_poll_us() const noexcept;
  // "worker 1 (rank 2 on host-b)" / "server 0 (rank 0 on host-a)": a rank as messages name it.
  std::string describe_rank(int rank) const;
  const std::string& host(int rank) const;  // that rank's host (MPI_Get_processor_name), gathered at start
  std::string role_name() const;  // this rank's role: "server 0", "worker 1"
  // Ranks of the session on this rank's node (this one included).
  int node_ranks() const noexcept { return node_ranks_; }
  // Whether every rank on this rank's node is a server (no worker shares its cores).
  bool node_has_no_workers() const noexcept { return node_no_workers_; }
  // The workers on this rank's node (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), so the same
  // under mpirun, hydra and srun) and, on a worker, its index among them in rank order (-1 on a
  // server): how a job deals a node's GPUs to its workers, none to its servers.
  int node_workers() const noexcept { return node_workers_; }
  int node_worker_index() const noexcept { return node_worker_index_; }
  // Whether some other rank on this node may talk to this one over shared memory (Open MPI's
  // vader/sm transport not excluded; MPICH without MPIR_CVAR_NOLOCAL): its messages wake no socket.
  bool shared_memory_neighbours() const noexcept;
  // Throws ConfigError unless called on the thread that created the Session (`call` names the
  // public call in the message). Every public call of the library on this session checks it.
  void check_thread(const char* call) const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  Roles roles_;
  ParamLayout layout_;
  ShardPlan plan_;
  RowPlan row_plan_;
  Options options_;
  bool single_node_ = false;
  int node_ranks_ = 1;
  bool node_no_workers_ = false;
  int node_workers_ = 0, node_worker_index_ = -1;
  std::vector<std::string> hosts_;  // every rank's host (MPI_Get_processor_name)
  std::thread::id owner_;           // the thread that created it (FUNNELED)
  bool holds_sigterm_ = false;      // SIGTERM stops the job while open (runtime/termination.h)
};

}  // namespace asyncps
