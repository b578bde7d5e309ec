// defines: StepLoop (the step policy's public face: checks, then the mode's strategy)
#include "asyncps/step_loop.h"

#include "worker/step_modes.h"
#include "worker/worker_access.h"

namespace asyncps {

using detail::WorkerTransport;

StepLoop::StepLoop(WorkerClient& worker)
    : worker_(worker),
      mode_(&detail::transport_of(worker).layer<detail::StepMode>([&] { return detail::make_step_mode(worker); })) {}

std::optional<StepStart> StepLoop::begin_step(std::span<float> params, std::int64_t limit) {
  WorkerTransport& t = mode_->transport();
  t.enter("StepLoop::begin_step");
  t.check_size(params.size(), "StepLoop::begin_step");
  WorkerTransport::check_limit(limit, "StepLoop::begin_step");
  t.check_updating("StepLoop::begin_step");
  t.end_compute();
  if (mode_->step_open)
    throw Error("StepLoop::begin_step before end_step of the step the last begin_step returned (its update would be "
                "lost): end each step first");
  t.halt_if_terminated();
  std::optional<StepStart> begun = mode_->begin(params, limit);
  mode_->step_open = begun.has_value();
  return begun;
}

StepEnd StepLoop::end_step(std::span<const float> grad, float scale) {
  WorkerTransport& t = mode_->transport();
  t.enter("StepLoop::end_step");
  t.check_size(grad.size(), "StepLoop::end_step");
  WorkerTransport::check_scale(scale, "StepLoop::end_step");
  if (!mode_->step_open) throw Error("StepLoop::end_step without a begin_step that returned a step");
  t.end_compute();
  mode_->step_open = false;
  return mode_->end(grad, scale);
}

void StepLoop::request_halt() {
  mode_->transport().enter("StepLoop::request_halt");
  mode_->transport().control().request_halt();
}

bool StepLoop::halted() const noexcept { return mode_->transport().final_state().halted; }
bool StepLoop::terminated() const noexcept { return mode_->transport().final_state().terminated; }
std::int64_t StepLoop::final_step() const noexcept { return mode_->transport().final_state().global_step; }
const StalenessHistogram& StepLoop::staleness() const noexcept { return mode_->transport().staleness(); }
const StalenessHistogram& StepLoop::job_staleness() const noexcept { return mode_->transport().job_staleness(); }
std::uint64_t StepLoop::job_nonfinite() const noexcept { return mode_->transport().job_nonfinite(); }
const WorkerStats& StepLoop::stats() const noexcept { return worker_.stats(); }

}  // namespace asyncps
