// defines: asyncps::Session (Options: asyncps/options.h)
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

#include "asyncps/checkpoint.h"  // (what a program of a session reads back: read_checkpoint, export_npy)
#include "asyncps/options.h"
#include "asyncps/param_layout.h"
#include "asyncps/roles.h"

namespace asyncps {

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
  // (docs/MULTIHOST.md). Then every wait on a server is watched by the stall timeout, and a
  // worker gains by having its next pull in flight while it computes (ctr_async's
  // --prefetch auto asks this).
  bool rma_needs_target() const noexcept;
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
  // The thread that created the Session: the only one that may call the library on it, its
  // servers and workers (MPI_THREAD_FUNNELED); every public call checks it and throws
  // ConfigError from any other.
  std::thread::id owner_thread() const noexcept { return owner_; }

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
