// defines: asyncps::WorkerClient, asyncps::Ticket, asyncps::WorkerStats
// The worker's transport: reads and updates the arena on the servers without the servers taking part
// (MPI-3 passive target, one MPI_Win_lock_all epoch for the worker's life, MPI_Win_flush per
// operation). Nobody locks exclusively: this is Hogwild. Accumulate is atomic per element, so
// no update is ever lost.
//
//   asyncps::WorkerClient w(session);       // collective with the ParameterServers
//   std::vector<float> params(layout.size()), grad(layout.size());
//   for (;;) {
//     w.pull(params);                       // params = arena
//     float loss = model.loss_and_grad(params, batch, grad);
//     w.push(grad, -lr);                    // arena += -lr * grad
//     if (w.next_step() >= steps) break;    // global step += 1
//   }
//   w.finish();                             // lets ParameterServer::serve() return
//
// The training step with modes, the non-finite guard and staleness-scaled rates is a layer on
// top: asyncps::StepLoop (asyncps/step_loop.h); the chief's EMA kept on the servers is an
// optional helper, asyncps::ShadowStore (asyncps/shadow_store.h).
//
// Request-based variants, in the style of ps-lite, let a push overlap the next compute:
//   asyncps::Ticket t = w.push_async(grad, -lr);   // grad may be overwritten right away
//   ... compute the next gradient ...
//   w.wait(t);                                     // now the update is in the arena
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <chrono>
#include <span>

#include "asyncps/session.h"
#include "asyncps/staleness.h"

namespace asyncps {

namespace detail {
class WorkerTransport;  // the library's own (lib/asyncps/worker/worker_transport.h)
}

using Ticket = std::int64_t;

struct WorkerStats {
  std::uint64_t pulls = 0, pushes = 0, steps = 0;
  double pull_seconds = 0, push_seconds = 0, wait_seconds = 0;  // time spent inside the calls
  double mode_wait_seconds = 0;    // sync/ssp: time spent waiting for other workers
  std::uint64_t mode_waits = 0;    // begin_step calls that had to wait at least once
  std::int64_t max_clock_gap = 0;  // ssp: largest (my clock - slowest clock) seen when a step began
  std::uint64_t nonfinite = 0;     // end_step gradients with NaN or Inf, never pushed
};

class WorkerClient {
 public:
  explicit WorkerClient(Session& session);  // collective
  ~WorkerClient();                           // calls finish() unless an exception is unwinding
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  // params = the arena (layout().size() floats), read element-wise atomically.
  void pull(std::span<float> params);
  // arena += scale * grad (layout().size() floats); returns when the update is in the arena.
  void push(std::span<const float> grad, float scale);

  // Non-blocking forms. push_async copies scale*grad at once (grad is free on return); the
  // buffer given to pull_async must stay alive and untouched until wait() returns.
  Ticket push_async(std::span<const float> grad, float scale);
  Ticket pull_async(std::span<float> params);
  void wait(Ticket ticket);  // blocks until that operation is complete at the server
  void wait_all();

  // Lets this worker's operations in flight (StepLoop's prefetched claim and pull, the last push,
  // tickets) advance while the caller waits on something else, a GPU step say: one pass of MPI's
  // progress engine (MPI_Iprobe), returning at once, and a heartbeat where one is due (the
  // worker is alive). Where the network moves data only inside MPI calls (Open MPI's osc pt2pt
  // over TCP, between hosts), an operation issued before a long compute otherwise stands still
  // until the next call. (mnist_async's GPU backend calls it while the device computes a step.)
  void progress();

  // Atomically adds 1 to the global step; returns the new value.
  std::int64_t next_step();
  // Claims one global step if fewer than `limit` have been taken: adds 1 and returns the new
  // value, or returns nothing (and leaves the count at its limit) once the job is complete.
  // Claim before pushing and exactly `limit` updates are applied, however many workers race.
  // Both count the steps of a loop on the transport: with a step policy in the Options (a mode
  // other than async, overlap, staleness_lr, dc_lambda), which only StepLoop applies, they throw
  // ConfigError.
  std::optional<std::int64_t> claim_step(std::int64_t limit);
  // Atomic read of the global step.
  std::int64_t global_step();

  // Among workers: completes this worker's operations, marks it done updating and waits
  // (sleeping, not spinning) until every worker is. Afterwards no update is in flight anywhere
  // and pull() returns the final arena (what the chief evaluates). push() is an error after it.
  void drain();

  // Collective with ParameterServer::serve(): drain()s if not yet done, ends this worker's
  // epoch and waits until every worker has finished; serve() then returns on the servers.
  void finish();
  bool finished() const noexcept;

  const WorkerStats& stats() const noexcept;
  int worker_index() const noexcept;
  // Adds a span of the caller's own to this rank's timeline (Options::timeline; nothing without
  // one), beside the library's pull/push/compute spans: e.g. a GPU's own time for a step, as
  // CUDA events measured it, ending when the step's result reached the host. `name` must be a
  // string literal (it is kept, not copied). Throws ConfigError on a null name, an end before the
  // begin, or a call from another thread than the Session's.
  void note_span(const char* name, std::chrono::steady_clock::time_point begin,
                 std::chrono::steady_clock::time_point end);
  // Whether the job restored a checkpoint (Options::checkpoint: the constructor, collective,
  // restores it on every rank), and the global step it resumed from (0 when none).
  bool restored() const noexcept;
  std::int64_t restored_step() const noexcept;

 private:
  std::unique_ptr<detail::WorkerTransport> impl_;
};

}  // namespace asyncps
