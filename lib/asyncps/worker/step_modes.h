// defines: asyncps::detail::StepMode, make_step_mode
// StepLoop's state and its one strategy per Options::mode (the public contract is in
// asyncps/step_loop.h):
//   SyncRounds    sync: wait for the previous round, pull; add scale*grad/W to the round's
//                 buffer; the last arrival applies the sum once
//   ClaimedSteps  async: claim a step and pull in one round trip; push, completed inside the
//                 next begin_step (Options::overlap: the next claim and pull prefetched too)
//   BoundedSteps  ssp: ClaimedSteps behind a gate (the slowest clock within `staleness`), with
//                 a clock tick beside each push
// Each is a WorkerLayer, held by the transport: its drain() asks it to settle what is in flight.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "asyncps/step_loop.h"
#include "core/vector_ops.h"
#include "worker/worker_transport.h"

namespace asyncps::detail {

class StepMode : public WorkerLayer {
 public:
  explicit StepMode(WorkerClient& worker);
  StepMode(const StepMode&) = delete;
  StepMode& operator=(const StepMode&) = delete;

  virtual std::optional<StepStart> begin(std::span<float> params, std::int64_t limit) = 0;
  virtual StepEnd end(std::span<const float> grad, float scale) = 0;
  void settle() override {}
  WorkerTransport& transport() noexcept { return t_; }
  // A step begin returned and end has not ended yet (the worker's, as the mode is: a second
  // StepLoop sees it). StepLoop refuses an end_step without one and a begin_step with one, in
  // every mode: sync had no check (an end_step first joined a round it had not waited for, and
  // the job hung), and a second begin_step lost the claimed step's update.
  bool step_open = false;

 protected:
  // The global step has reached `limit`, a worker asked for a halt, or (sync, where a worker
  // that left can never arrive again) a worker has drained. One atomic read of the progress slots.
  bool job_complete(std::int64_t limit);
  // Sleeps with exponential back-off (20 us .. 1 ms) until ready() or the job is complete.
  // Returns false if the job completed first.
  template <class Ready>
  bool wait_until(Ready ready, std::int64_t limit);
  // push_stage_ = scale * grad; false when an element of it is NaN or Inf (a non-finite
  // gradient, or a finite product that overflows float): what would be pushed, checked in the
  // same vectorised pass as the scaling.
  bool stage(std::span<const float> grad, float scale);
  // Completes the last push locally (its buffer is free again).
  void complete_push();

  WorkerClient& client_;
  WorkerTransport& t_;
  RmaChannel& ch_;
  ControlBlock& control_;
  bool drained_ends_job_ = false;  // sync
  std::int64_t clock_ = 0;         // this worker's completed steps
  std::int64_t begin_global_step_ = 0;
  std::int64_t last_seen_step_ = 0;
  AlignedFloats push_stage_;     // scale*grad of the last push (whole arena)
  RmaBatch push_batch_;            // that push (and the SSP clock tick)
};

// The strategy Options::mode names, for `worker` (its transport holds it: WorkerTransport::layer).
std::unique_ptr<StepMode> make_step_mode(WorkerClient& worker);

}  // namespace asyncps::detail
