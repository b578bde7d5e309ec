// defines: asyncps::StepLoop, asyncps::StepStart, asyncps::StepEnd
// The training step policy, one layer above the transport (WorkerClient): the mode
// (Options::mode: async, sync, SSP), the non-finite guard on what is pushed, staleness-scaled
// learning rates (Options::staleness_lr), the staleness report and halts.
//
//   asyncps::WorkerClient w(session);           // the transport (collective)
//   asyncps::StepLoop steps(w);                 // the policy on it
//   while (auto s = steps.begin_step(params, limit)) {        // waits as the mode says, pulls
//     float loss = model.loss_and_grad(params, batch, grad);
//     steps.end_step(grad, -lr(s->global_step));              // applies the update
//   }
//   w.finish();
//
// async: no waiting; begin_step claims a global step and pulls in one round trip (the claim
//        reads [step, halt, done, server 0's heartbeat] beside the pulls: one wait on requests
//        under Wake progress, a flush per window under Poll); end_step sends scale*grad,
//        completed inside the next begin_step. Options::overlap also prefetches the next claim
//        and pull during the compute (one step more staleness).
// sync:  begin_step waits until the previous round's mean update is applied; end_step adds
//        scale*grad/W to the servers' accumulation buffer; the last of the W workers to arrive
//        applies the sum to the arena once and moves the global step and version.
// ssp:   begin_step waits (sleeping, backing off) while the slowest worker's clock is below this
//        worker's clock - staleness, then claims and pulls; end_step is async's plus a clock tick.
#pragma once
#include <cstdint>
#include <optional>
#include <span>

#include "asyncps/staleness.h"
#include "asyncps/worker_client.h"

namespace asyncps {

namespace detail {
class StepMode;  // the mode's strategy (lib/asyncps/worker/step_modes.h)
}

// What begin_step() hands the model: the parameters were pulled at (about) global_step.
struct StepStart {
  std::int64_t global_step = 0;  // use it for the learning-rate schedule
  std::int64_t clock = 0;        // this worker's completed steps
};

// What end_step() did with the update.
struct StepEnd {
  bool applied = false;          // the update is in the arena (sync: added to the round)
  bool nonfinite = false;        // the gradient held NaN or Inf: nothing was pushed
  std::int64_t global_step = 0;  // where it landed (when applied)
  explicit operator bool() const noexcept { return applied; }
};

class StepLoop {
 public:
  // The worker must outlive it. Its state (the clock, a prefetched claim, the last push) is the
  // worker's: a second StepLoop on the same worker goes on where the first stopped, and the
  // worker's drain() completes what is in flight.
  explicit StepLoop(WorkerClient& worker);

  // Returns nothing once the global step has reached `limit` (or a worker halted, or a rank
  // received SIGTERM: this is where a worker notices its own; in sync mode a worker that leaves
  // its loop before this returned nothing halts the job when it drains, since every round needs
  // every worker); in
  // async/ssp the step it returns is already this worker's, so end_step always lands. The two
  // alternate, in every mode: begin_step again before the step it returned is ended, or end_step
  // without such a step, is an Error naming the call (nothing is sent).
  std::optional<StepStart> begin_step(std::span<float> params, std::int64_t limit);
  // A gradient holding NaN or Inf (or a scale*grad that overflows) is never pushed (sync: this
  // worker adds nothing to the round); it is counted in stats().nonfinite and still spends its
  // global step (and SSP clock), so a job whose gradients all go bad ends on schedule.
  StepEnd end_step(std::span<const float> grad, float scale);

  // Asks every worker to stop: their next begin_step returns nothing (e.g. --halt_on_nonfinite).
  void request_halt();
  // After the WorkerClient's finish(): whether some worker asked for a halt, the final step.
  bool halted() const noexcept;
  bool terminated() const noexcept;  // the halt was for SIGTERM (see ParameterServer::terminated)
  std::int64_t final_step() const noexcept;

  // Staleness of this worker's updates; job_staleness(): every worker's, after finish().
  const StalenessHistogram& staleness() const noexcept;
  const StalenessHistogram& job_staleness() const noexcept;
  // After finish(): every worker's end_step gradients never pushed (NaN or Inf), summed (this
  // worker's alone: stats().nonfinite).
  std::uint64_t job_nonfinite() const noexcept;
  const WorkerStats& stats() const noexcept;  // the WorkerClient's

 private:
  WorkerClient& worker_;
  detail::StepMode* mode_;  // its state: one strategy per Options::mode, held by the worker's transport
};

}  // namespace asyncps
