// defines: asyncps::WorkerClient, asyncps::Ticket, asyncps::WorkerStats
// The worker side: reads and updates the arena on the servers without the servers taking part
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
// Request-based variants, in the style of ps-lite, let a push overlap the next compute:
//   asyncps::Ticket t = w.push_async(grad, -lr);   // grad may be overwritten right away
//   ... compute the next gradient ...
//   w.wait(t);                                     // now the update is in the arena
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "asyncps/session.h"
#include "asyncps/staleness.h"

namespace asyncps {

using Ticket = std::int64_t;

struct WorkerStats {
  std::uint64_t pulls = 0, pushes = 0, steps = 0;
  double pull_seconds = 0, push_seconds = 0, wait_seconds = 0;  // time spent inside the calls
  double mode_wait_seconds = 0;    // sync/ssp: time spent waiting for other workers
  std::uint64_t mode_waits = 0;    // begin_step calls that had to wait at least once
  std::int64_t max_clock_gap = 0;  // ssp: largest (my clock - slowest clock) seen when a step began
  std::uint64_t dropped = 0;       // end_step updates not applied because the job was complete
                                   // (0 since begin_step claims the step: kept for callers)
  std::uint64_t nonfinite = 0;     // end_step gradients with NaN or Inf, never pushed
};

// What end_step() did with the update.
struct StepEnd {
  bool applied = false;          // the update is in the arena (sync: added to the round)
  bool nonfinite = false;        // the gradient held NaN or Inf: nothing was pushed
  std::int64_t global_step = 0;  // where it landed (when applied)
  explicit operator bool() const noexcept { return applied; }
};

// What begin_step() hands the model: the parameters were pulled at (about) global_step.
struct StepStart {
  std::int64_t global_step = 0;  // use it for the learning-rate schedule
  std::int64_t clock = 0;        // this worker's completed steps
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

  // Atomically adds 1 to the global step; returns the new value.
  std::int64_t next_step();
  // Claims one global step if fewer than `limit` have been taken: adds 1 and returns the new
  // value, or returns nothing (and leaves the count at its limit) once the job is complete.
  // Claim before pushing and exactly `limit` updates are applied, however many workers race.
  std::optional<std::int64_t> claim_step(std::int64_t limit);
  // Atomic read of the global step.
  std::int64_t global_step();

  // The mode-aware training step (Options::mode). Typical loop:
  //   while (auto s = w.begin_step(params, steps)) {           // waits as the mode says, pulls
  //     float loss = model.loss_and_grad(params, batch, grad);
  //     w.end_step(grad, -lr(s->global_step));                   // applies the update
  //   }
  // async: no waiting; begin_step claims a global step and pulls in one round trip (one atomic
  //        on [step, halt, done] beside the pulls); end_step sends scale*grad, completed inside
  //        the next begin_step. Options::overlap also prefetches the next claim and pull during
  //        the compute (one step more staleness).
  // sync:  begin_step waits until the previous round's mean update is applied; end_step adds
  //        scale*grad/W to the servers' accumulation buffer; the last of the W workers to arrive
  //        applies the sum to the arena once and moves the global step and version.
  // ssp:   begin_step waits (sleeping, backing off) while the slowest worker's clock is below
  //        this worker's clock - staleness, then claims and pulls; end_step is async's plus a
  //        clock tick.
  // begin_step returns nothing once the global step has reached `limit` (or a worker halted);
  // in async/ssp the step it returns is already this worker's, so end_step always lands.
  std::optional<StepStart> begin_step(std::span<float> params, std::int64_t limit);
  // A gradient holding NaN or Inf is never pushed (sync: this worker adds nothing to the round);
  // it is counted in stats().nonfinite and still spends its global step (and SSP clock), so a
  // job whose gradients all go bad ends on schedule instead of spinning.
  StepEnd end_step(std::span<const float> grad, float scale);

  // Asks every worker to stop: their next begin_step returns nothing (e.g. --halt_on_nonfinite).
  void request_halt();
  // After finish(): whether some worker asked for a halt, and the final global step.
  bool halted() const noexcept;
  std::int64_t final_step() const noexcept;

  // The chief's EMA shadow kept on the servers, so checkpoints hold it: store_shadow copies
  // `shadow` (layout().size() floats) there; load_shadow fills it from there and returns false
  // if the servers hold none (a fresh job) — a restarted job continues its average.
  void store_shadow(std::span<const float> shadow);
  bool load_shadow(std::span<float> shadow);

  // Staleness of this worker's updates; job_staleness(): every worker's, after finish().
  const StalenessHistogram& staleness() const noexcept;
  const StalenessHistogram& job_staleness() const noexcept;

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

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace asyncps
