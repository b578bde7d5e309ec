// defines: StepMode and its strategies SyncRounds, ClaimedSteps, BoundedSteps
#include "worker/step_modes.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <thread>
#include <utility>

#include "asyncps/log.h"
#include "core/vector_ops.h"
#include "worker/update_rule.h"
#include "worker/worker_access.h"

namespace asyncps::detail {

// ---- what every mode shares -------------------------------------------------------------------

StepMode::StepMode(WorkerClient& worker)
    : client_(worker),
      t_(detail::transport_of(worker)),
      ch_(t_.channel()),
      control_(t_.control()),
      push_batch_(ch_.batch()) {}

bool StepMode::job_complete(std::int64_t limit) {
  const JobProgress p = control_.progress();
  t_.liveness().saw_server0(p.beat0());
  last_seen_step_ = p.step();
  return p.step() >= limit || p.halt() != 0 || (drained_ends_job_ && p.done() != 0);
}

template <class Ready>
bool StepMode::wait_until(Ready ready, std::int64_t limit) {
  const auto t0 = WorkerClock::now();
  int backoff_us = 20;
  bool waited = false;
  for (;;) {
    if (ready()) break;  // (ready() and job_complete() beat: waiting is alive, the rank waited for is the silent one)
    if (job_complete(limit)) return false;
    waited = true;
    std::this_thread::sleep_for(std::chrono::microseconds(backoff_us));
    backoff_us = std::min(backoff_us * 2, 1000);
  }
  if (waited) {
    ++t_.stats().mode_waits;
    t_.stats().mode_wait_seconds += seconds_since(t0);
  }
  return true;
}

bool StepMode::stage(std::span<const float> grad, float scale) {
  push_stage_.resize(t_.arena());
  return scale_into_finite(push_stage_.data(), grad.data(), grad.size(), scale);  // scale * grad
}

void StepMode::complete_push() {
  if (push_batch_.requests.empty()) return;
  const auto t0 = WorkerClock::now();
  ch_.complete_local(push_batch_);
  t_.stats().wait_seconds += seconds_since(t0);
  t_.timeline().span("push wait", t0, WorkerClock::now());
}

namespace {

// ---- sync -------------------------------------------------------------------------------------

class SyncRounds final : public StepMode {
 public:
  explicit SyncRounds(WorkerClient& worker) : StepMode(worker) { drained_ends_job_ = true; }

  std::optional<StepStart> begin(std::span<float> params, std::int64_t limit) override {
    if (version_base_ < 0) version_base_ = control_.version();
    const std::int64_t want = version_base_ + clock_;  // every round before ours is applied
    const auto t0 = WorkerClock::now();
    const bool go = wait_until([&] { return control_.version() >= want; }, limit);
    t_.timeline().span("wait (sync round)", t0, WorkerClock::now());
    if (!go || job_complete(limit)) {
      loop_ended_ = true;
      return std::nullopt;
    }
    begin_global_step_ = last_seen_step_;
    client_.pull(params);
    t_.begin_compute();
    return StepStart{begin_global_step_, clock_};
  }

  StepEnd end(std::span<const float> grad, float scale) override {
    const auto t0 = WorkerClock::now();
    StepEnd out;
    // accum += (scale / W) * grad: the round applies the mean of the W workers' updates; NaN or
    // Inf never reaches it (stage checks what would be pushed)
    out.nonfinite = !stage(grad, scale / static_cast<float>(t_.num_workers()));
    ++t_.stats().steps;  // (a round is one global step, each worker's included)
    if (out.nonfinite) {
      ++t_.stats().nonfinite;
    } else {
      ch_.add(Table::Accum, push_stage_.data(), push_batch_);
      complete_push();
      ch_.complete(push_batch_);  // complete at the servers before we announce our arrival
      ++t_.stats().pushes;
    }
    if (control_.arrive() == t_.num_workers() - 1) apply_round();
    t_.stats().push_seconds += seconds_since(t0);  // (the last to arrive applies the round)
    ++clock_;
    if (!out.nonfinite) t_.staleness().record(0);  // (an update's staleness: none was pushed)
    out.applied = !out.nonfinite;
    out.global_step = begin_global_step_ + 1;
    t_.timeline().span("push (sync round)", t0, WorkerClock::now());
    return out;
  }

  // A worker that leaves its loop before begin_step returned nothing (out of data, a break)
  // would leave every round from now on one worker short: its drain halts the job, as
  // request_halt() does, so that every rank hears it (halted()) instead of the others ending
  // silently with the round in progress never applied.
  void settle() override {
    if (loop_ended_) return;
    log(LogLevel::Warning, "worker " + std::to_string(t_.worker_index()) +
                               " left its sync loop before the job's end (StepLoop::begin_step had not returned "
                               "nothing): every round needs every worker, so the job halts (the round in progress "
                               "is not applied)");
    control_.request_halt();
    loop_ended_ = true;
  }

 private:
  // Run by the last worker to arrive in a round: arena += accum; accum = 0, all with atomic
  // accumulate operations (nobody else touches accum until the version moves).
  void apply_round() {
    sum_.resize(t_.arena());
    RmaBatch b = RmaBatch::flushed();
    ch_.read(Table::Accum, sum_.data(), b);
    ch_.complete(b);
    ch_.add(Table::Params, sum_.data(), b);
    ch_.complete(b);
    for (float& v : sum_) v = -v;  // accum -= what was fetched: exactly zero (x - x == 0)
    ch_.add(Table::Accum, sum_.data(), b);
    ch_.complete(b);
    control_.close_round();
  }

  std::int64_t version_base_ = -1;  // the version when this worker took its first step
  bool loop_ended_ = false;         // begin returned nothing: the job is over for this worker
  AlignedFloats sum_;               // the round's summed update, fetched by the applier
};

// ---- async ------------------------------------------------------------------------------------

// begin_step claims its step and pulls in one go (docs/ARCHITECTURE.md "One step, one round
// trip"): by request, one MPI_Rget_accumulate(SUM, +1) on [step, halt, done, beat0] next to the
// pulls, one wait, no flush; by flush, a fetch-and-op, a read and plain pulls, completed by one
// flush per window. end_step's push leaves in the channel's batch kind, completed in the next
// begin_step.
class ClaimedSteps : public StepMode {
 public:
  explicit ClaimedSteps(WorkerClient& worker, bool prefetch)
      : StepMode(worker), prefetch_(prefetch), step_batch_(ch_.batch()), prefetch_batch_(ch_.batch()),
        rules_(update_rules(t_.options(), t_.num_workers())), view_(*this) {}

  std::optional<StepStart> begin(std::span<float> params, std::int64_t limit) override {
    if (!gate(limit)) return std::nullopt;
    const auto t0 = WorkerClock::now();
    const JobProgress* got = &claim_now_;
    if (prefetching_) {  // claimed and pulled while the last gradient was computed
      ch_.complete(prefetch_batch_);
      prefetching_ = false;
      std::copy(prefetch_params_.begin(), prefetch_params_.end(), params.begin());
      got = &claim_next_;
    } else {
      order_pull_after_push();
      resolving_.insert(resolving_.end(), unresolved_.begin(), unresolved_.end());
      unresolved_.clear();
      start_claim_and_pull(params.data(), claim_now_, step_batch_);
      ch_.complete(step_batch_);
    }
    complete_push();  // (usually long complete: it left before the claim and pull)
    for (auto& rule : rules_) rule->began(params);
    t_.liveness().saw_server0(got->beat0());
    resolve(got->step());
    ++t_.stats().pulls;
    t_.stats().pull_seconds += seconds_since(t0);
    t_.timeline().span(prefetch_ ? "claim+pull (prefetched)" : "claim+pull", t0, WorkerClock::now());
    if (got->step() + 1 > limit || got->halt() != 0) {  // the job is complete (or halted): give the step back
      control_.give_back();
      return std::nullopt;
    }
    current_claim_ = got->step() + 1;
    begin_global_step_ = got->step();
    if (prefetch_) {
      // the next step's claim and pull fly during this compute (its parameters miss this step's
      // own update: one step more staleness, which the report counts)
      prefetch_params_.resize(t_.arena());
      order_pull_after_push();
      resolving_ = std::move(unresolved_);
      unresolved_.clear();
      start_claim_and_pull(prefetch_params_.data(), claim_next_, prefetch_batch_);
      prefetching_ = true;
    }
    t_.begin_compute();
    return StepStart{begin_global_step_, clock_};
  }

  StepEnd end(std::span<const float> grad, float scale) override {
    if (current_claim_ == 0) throw Error("StepLoop::end_step without a begin_step that returned a step");
    const auto t0 = WorkerClock::now();
    StepEnd out;
    out.global_step = std::exchange(current_claim_, 0);  // claimed in begin_step: exactly `limit` steps in all
    ++t_.stats().steps;
    ++clock_;  // a skipped update still spends its step (and its clock: nobody waits for it)
    complete_push();  // overlap: the buffer of the last push is free again
    view_.start(out.global_step);
    for (auto& rule : rules_) rule->apply(view_, grad, scale);  // (none: nothing read, nothing changed)
    const std::int64_t tau = view_.known_staleness();
    out.nonfinite = !stage(grad, scale);  // NaN or Inf in what would be pushed: nothing is
    if (out.nonfinite) {
      ++t_.stats().nonfinite;
    } else {
      if (tau >= 0) t_.staleness().record(tau);
      else unresolved_.push_back(out.global_step);
      ch_.add(Table::Params, push_stage_.data(), push_batch_);
      ++t_.stats().pushes;
      out.applied = true;
    }
    after_push();
    t_.stats().push_seconds += seconds_since(t0);
    t_.timeline().span("push", t0, WorkerClock::now());
    return out;
  }

  // Ends everything in flight: the prefetched claim is given back (never used).
  void settle() override {
    if (prefetching_) {
      ch_.complete(prefetch_batch_);
      prefetching_ = false;
      resolve(claim_next_.step());
      control_.give_back();
    }
    complete_push();
    ch_.flush_pending();
    // updates no later claim reported on: the steps claimed by now
    resolving_.insert(resolving_.end(), unresolved_.begin(), unresolved_.end());
    unresolved_.clear();
    if (!resolving_.empty()) resolve(control_.global_step());
  }

 protected:
  virtual bool gate(std::int64_t /*limit*/) { return true; }  // SSP waits here
  virtual void after_push() {}                                // SSP ticks its clock here

 private:
  void start_claim_and_pull(float* dst, JobProgress& result, RmaBatch& batch) {
    control_.claim(result, batch);
    ch_.read(Table::Params, dst, batch);
  }
  // MPI_Get is not ordered after our accumulates: our last push must be complete at the servers
  // before a pull may read (MPI_Get_accumulate is ordered: nothing to do).
  void order_pull_after_push() {
    if (t_.options().pull != PullMethod::Get || !ch_.pending(Table::Params)) return;
    complete_push();
    ch_.flush(Table::Params);
  }
  // Every claim reports the steps claimed before it: the updates pushed before it was sent have
  // a staleness of (that count) - (their own step).
  void resolve(std::int64_t claimed_before) {
    for (std::int64_t landed : resolving_) t_.staleness().record(std::max<std::int64_t>(0, claimed_before - landed));
    resolving_.clear();
  }

  const bool prefetch_;
  JobProgress claim_now_, claim_next_;  // what this step's claim and the prefetched one read
  std::int64_t current_claim_ = 0;      // the global step this worker's update will take
  RmaBatch step_batch_, prefetch_batch_;
  AlignedFloats prefetch_params_;
  bool prefetching_ = false;
  // Staleness is known once a later claim reports how many steps were claimed meanwhile:
  std::vector<std::int64_t> unresolved_;  // steps pushed, not yet given to a claim
  std::vector<std::int64_t> resolving_;   // steps the claim in flight will resolve

  // What the update rules may ask of this step (worker/update_rule.h), each at most once.
  class View final : public StepView {
   public:
    explicit View(ClaimedSteps& s) : s_(s) {}
    void start(std::int64_t global_step) {
      step_ = global_step;
      tau_ = -1;
    }
    std::int64_t known_staleness() const noexcept { return tau_; }  // -1: no rule asked
    std::int64_t staleness() override {  // one read of the steps claimed since ours
      if (tau_ < 0) tau_ = std::max<std::int64_t>(0, s_.control_.global_step() - step_);
      return tau_;
    }
    std::span<const float> parameters_now() override {  // one more read of the arena
      const auto t0 = WorkerClock::now();
      now_.resize(s_.t_.arena());
      s_.order_pull_after_push();
      s_.client_.pull(now_);
      s_.t_.timeline().span("dc read", t0, WorkerClock::now());
      return now_;
    }

   private:
    ClaimedSteps& s_;
    std::int64_t step_ = 0, tau_ = -1;
    AlignedFloats now_;  // [arena]
  };
  std::vector<std::unique_ptr<UpdateRule>> rules_;  // the dense update rules in effect (Options)
  View view_;
};

// ---- ssp --------------------------------------------------------------------------------------

class BoundedSteps final : public ClaimedSteps {
 public:
  explicit BoundedSteps(WorkerClient& worker) : ClaimedSteps(worker, /*prefetch=*/false) {}

 private:
  // Waits (sleeping, backing off) while the slowest worker's clock is below clock - staleness.
  bool gate(std::int64_t limit) override {
    std::int64_t slowest = 0;
    const std::int64_t s = t_.options().staleness;
    const auto t0 = WorkerClock::now();
    const bool go = wait_until([&] { return (slowest = control_.min_clock()) >= clock_ - s; }, limit);
    t_.timeline().span("wait (ssp bound)", t0, WorkerClock::now());
    if (!go) return false;
    t_.stats().max_clock_gap = std::max(t_.stats().max_clock_gap, clock_ - slowest);
    return true;
  }
  // beside the push; for a skipped update too, so a NaN worker pins nobody
  void after_push() override { control_.tick_clock(t_.worker_index(), push_batch_); }
};

}  // namespace

std::unique_ptr<StepMode> make_step_mode(WorkerClient& worker) {
  const Options& o = detail::transport_of(worker).options();
  switch (o.mode) {
    case Mode::Sync: return std::make_unique<SyncRounds>(worker);
    case Mode::Ssp: return std::make_unique<BoundedSteps>(worker);
    case Mode::Async: break;
  }
  return std::make_unique<ClaimedSteps>(worker, o.overlap);
}

}  // namespace asyncps::detail
