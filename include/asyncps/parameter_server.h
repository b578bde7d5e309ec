// defines: asyncps::ParameterServer
// The server side: holds this rank's shard of the arena in an MPI window (server 0 also the
// control block) and keeps entering MPI until every worker has finished, so that one-sided
// operations complete on every transport — including pt2pt between hosts, where nothing
// completes unless the target calls into MPI. It never busy-spins a core: between entries it
// sleeps, on a timer or until bytes arrive (Options::server_progress).
//
//   asyncps::ParameterServer ps(session, initial_params);  // collective with the WorkerClients
//   ps.serve();                                             // returns when all workers finish()
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "asyncps/session.h"
#include "asyncps/staleness.h"

namespace asyncps {

class ParameterServer {
 public:
  // Collective over the session (every worker constructs its WorkerClient at the same time).
  // `initial` is the whole arena (layout().size() floats); this server keeps its shard of it.
  // `initial_step` starts the global step. If Options::checkpoint names a checkpoint to resume
  // from (or a directory holding one), its parameters, EMA shadow and step are used instead:
  // see asyncps/checkpoint.h. Periodic and final checkpoints are written by serve().
  ParameterServer(Session& session, std::span<const float> initial, std::int64_t initial_step = 0);
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  // Polls until every worker has called WorkerClient::finish(). `tick`, if given, runs after a
  // poll every 1 to 10 ms (Options::server_poll_us, within those bounds; checkpointing hooks in
  // here); it must not call collective MPI operations.
  void serve(const std::function<void()>& tick = {});

  const Shard& shard() const noexcept;
  // This server's shard as it is now in window memory (synchronised with MPI_Win_sync).
  // Workers may be accumulating into it concurrently: each element is whole, the set may mix
  // updates (exactly what a Hogwild reader sees).
  std::span<const float> snapshot();
  // The global step as it is now (server 0 only: it holds the count), or after serve() the
  // final step (any server).
  std::int64_t global_step();
  // Entries into MPI while serving, and sleeps ended by arriving bytes (ServerProgress::Wake).
  std::uint64_t polls() const noexcept;
  std::uint64_t wakeups() const noexcept;
  // Every worker's update staleness summed (valid after serve() returns).
  const StalenessHistogram& job_staleness() const noexcept;
  // After serve(): every worker's end_step gradients never pushed (NaN or Inf), summed.
  std::uint64_t job_nonfinite() const noexcept;

  // Whether the constructor restored a checkpoint (Options::checkpoint), and its step.
  bool restored() const noexcept;
  std::int64_t restored_step() const noexcept;
  // After serve(): the final global step, whether a worker halted the job, and the checkpoint
  // index written at the end (server 0; empty if none was written).
  std::int64_t final_step() const noexcept;
  bool halted() const noexcept;
  // Whether the halt was for SIGTERM (a rank of the job received it while its Session was open:
  // Slurm's scancel and pre-emption, or a TERM to mpirun). The final checkpoint is saved as at
  // any end, and a restart resumes from it. See "Stopping a job" in docs/ARCHITECTURE.md.
  bool terminated() const noexcept;
  const std::string& saved_checkpoint() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace asyncps
