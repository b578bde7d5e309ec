// defines: StepLoop (the step policy: modes, non-finite guard, staleness-scaled rates, halts)
#include "asyncps/step_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>

#include "worker_impl.h"

namespace asyncps {

StepLoop::StepLoop(WorkerClient& worker) : worker_(worker) {}

std::optional<StepStart> StepLoop::begin_step(std::span<float> params, std::int64_t limit) {
  WorkerClient::Impl& m = *worker_.impl_;
  m.enter("StepLoop::begin_step");
  m.check_size(params.size(), "StepLoop::begin_step");
  WorkerClient::Impl::check_limit(limit, "StepLoop::begin_step");
  if (m.drained) throw Error("StepLoop::begin_step after drain(): this worker said it was done updating");
  m.end_compute();
  m.limit = limit;
  const Mode mode = m.options().mode;
  if (mode == Mode::Sync) {
    if (m.version_base < 0) m.version_base = m.fetch_and_add(detail::ctrl::kVersion, 0, MPI_NO_OP);
    const std::int64_t want = m.version_base + m.clock;  // every round before ours is applied
    const auto t0 = Clock::now();
    const bool go = m.wait_until([&] { return m.fetch_and_add(detail::ctrl::kVersion, 0, MPI_NO_OP) >= want; });
    m.timeline.span("wait (sync round)", t0, Clock::now());
    if (!go || m.job_complete()) return std::nullopt;
    m.begin_global_step = m.last_seen_step;
    worker_.pull(params);
    m.computing = true;
    m.compute_since = Clock::now();
    return StepStart{m.begin_global_step, m.clock};
  }
  if (mode == Mode::Ssp) {
    std::int64_t slowest = 0;
    const std::int64_t s = m.options().staleness;
    const auto t0 = Clock::now();
    const bool go = m.wait_until([&] { return (slowest = m.min_clock()) >= m.clock - s; });
    m.timeline.span("wait (ssp bound)", t0, Clock::now());
    if (!go) return std::nullopt;
    m.stats.max_clock_gap = std::max(m.stats.max_clock_gap, m.clock - slowest);
  }
  const auto t0 = Clock::now();
  const std::int64_t* got = m.claim_now;
  if (m.prefetching) {  // overlap: claimed and pulled while the last gradient was computed
    m.finish_claim(m.prefetch_requests);
    m.prefetching = false;
    std::copy(m.prefetch_params.begin(), m.prefetch_params.end(), params.begin());
    got = m.claim_next;
  } else {
    m.order_pull_after_push();
    m.resolving.insert(m.resolving.end(), m.unresolved.begin(), m.unresolved.end());
    m.unresolved.clear();
    m.start_claim_and_pull(params.data(), m.claim_now, m.step_requests);
    m.finish_claim(m.step_requests);
  }
  m.complete_push();  // (usually long complete: it left before the claim and pull)
  if (m.options().dc_lambda > 0) m.dc_read.assign(params.begin(), params.end());  // w_read
  const std::int64_t before = got[0], halt = got[1];
  m.liveness.saw_server0(got[3]);
  m.resolve(before);
  ++m.stats.pulls;
  m.stats.pull_seconds += seconds_since(t0);
  m.timeline.span(m.options().overlap && mode == Mode::Async ? "claim+pull (prefetched)" : "claim+pull", t0, Clock::now());
  if (before + 1 > limit || halt != 0) {  // the job is complete (or halted): give the step back
    m.fetch_and_add(detail::ctrl::kGlobalStep, -1, MPI_SUM);
    return std::nullopt;
  }
  m.current_claim = before + 1;
  m.begin_global_step = before;
  if (m.options().overlap && mode == Mode::Async) {
    // the next step's claim and pull fly during this compute (its parameters miss this step's
    // own update: one step more staleness, which the report counts)
    m.prefetch_params.resize(m.arena());
    m.order_pull_after_push();
    m.resolving = std::move(m.unresolved);
    m.unresolved.clear();
    m.start_claim_and_pull(m.prefetch_params.data(), m.claim_next, m.prefetch_requests);
    m.prefetching = true;
  }
  m.computing = true;
  m.compute_since = Clock::now();
  return StepStart{m.begin_global_step, m.clock};
}

StepEnd StepLoop::end_step(std::span<const float> grad, float scale) {
  WorkerClient::Impl& m = *worker_.impl_;
  m.enter("StepLoop::end_step");
  m.check_size(grad.size(), "StepLoop::end_step");
  WorkerClient::Impl::check_scale(scale, "StepLoop::end_step");
  m.end_compute();
  const Mode mode = m.options().mode;
  StepEnd out;
  if (mode == Mode::Sync) {
    const auto t0 = Clock::now();
    // accum += (scale / W) * grad: the round applies the mean of the W workers' updates; NaN or
    // Inf never reaches it (stage checks what would be pushed)
    out.nonfinite = !m.stage(grad, scale / static_cast<float>(m.num_workers()));
    if (out.nonfinite) {
      ++m.stats.nonfinite;
    } else {
      m.for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
        m.issue_accumulate(m.push_stage.data() + off, n, MPI_FLOAT, target, disp, m.win.accum.get());
      });
      m.complete_push();
      m.flush(m.win.accum);  // complete at the servers before we announce our arrival
    }
    if (m.fetch_and_add(detail::ctrl::kArrivals, 1, MPI_SUM) == m.num_workers() - 1) m.apply_sync_round();
    ++m.clock;
    m.staleness.record(0);
    out.applied = !out.nonfinite;
    out.global_step = m.begin_global_step + 1;
    m.timeline.span("push (sync round)", t0, Clock::now());
    return out;
  }
  if (m.current_claim == 0) throw Error("StepLoop::end_step without a begin_step that returned a step");
  const auto t0 = Clock::now();
  out.global_step = std::exchange(m.current_claim, 0);  // claimed in begin_step: exactly `limit` steps in all
  ++m.stats.steps;
  ++m.clock;  // a skipped update still spends its step (and its clock: nobody waits for it)
  m.complete_push();  // overlap: the buffer of the last push is free again
  std::int64_t tau = -1;
  if (m.options().staleness_lr) {  // needs tau now: one read of the steps claimed since ours
    tau = std::max<std::int64_t>(0, m.fetch_and_add(detail::ctrl::kGlobalStep, 0, MPI_NO_OP) - out.global_step);
    scale /= static_cast<float>(std::max<std::int64_t>(1, tau));
  }
  if (m.options().dc_lambda > 0) {  // g + lambda * g*g*(w_now - w_read): one more read of the arena
    const auto t_dc = Clock::now();
    m.dc_now.resize(m.arena());
    m.dc_grad.resize(m.arena());
    m.order_pull_after_push();
    worker_.pull(m.dc_now);
    detail::dc_correct(m.dc_grad.data(), grad.data(), m.dc_now.data(), m.dc_read.data(), m.arena(),
                       m.options().dc_lambda);
    grad = m.dc_grad;
    m.timeline.span("dc read", t_dc, Clock::now());
  }
  out.nonfinite = !m.stage(grad, scale);  // NaN or Inf in what would be pushed: nothing is
  if (out.nonfinite) {
    ++m.stats.nonfinite;
  } else {
    if (tau >= 0) m.staleness.record(tau);
    else m.unresolved.push_back(out.global_step);
    m.for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
      m.issue_accumulate(m.push_stage.data() + off, n, MPI_FLOAT, target, disp, m.win.params.get());
    });
    ++m.stats.pushes;
    out.applied = true;
  }
  if (mode == Mode::Ssp)  // (beside the push; for a skipped update too, so a NaN worker pins nobody)
    m.issue_accumulate(&m.clock_tick, 1, MPI_INT64_T, detail::ctrl::kControlRank,
                       detail::ctrl::kClocks + worker_.worker_index(), m.win.control.get());
  m.remote_incomplete = true;
  m.stats.push_seconds += seconds_since(t0);
  m.timeline.span("push", t0, Clock::now());
  return out;
}

void StepLoop::request_halt() {
  worker_.impl_->enter("StepLoop::request_halt");
  worker_.impl_->fetch_and_add(detail::ctrl::kHalt, 1, MPI_SUM);
}
bool StepLoop::halted() const noexcept { return worker_.impl_->final_state.halted; }
std::int64_t StepLoop::final_step() const noexcept { return worker_.impl_->final_state.global_step; }
const StalenessHistogram& StepLoop::staleness() const noexcept { return worker_.impl_->staleness; }
const StalenessHistogram& StepLoop::job_staleness() const noexcept { return worker_.impl_->job_staleness; }
const WorkerStats& StepLoop::stats() const noexcept { return worker_.stats(); }

}  // namespace asyncps
