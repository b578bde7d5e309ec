// defines: WorkerClient (the transport: pull, push, tickets, claims, drain, finish)
#include "asyncps/worker_client.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "asyncps/error.h"
#include "asyncps/mpi_environment.h"
#include "asyncps/stall_watch.h"
#include "string_collectives.h"
#include "worker_impl.h"

namespace asyncps {

WorkerClient::WorkerClient(Session& session) : impl_(std::make_unique<Impl>(session)) {
  session.check_thread("WorkerClient");
  StallWatch watch(watch_timeout(session.options().stall_timeout),
                   session.role_name() + " creating the windows and restoring (collective with every rank)");
  // refused on every rank alike (the servers' constructors take part in this collective)
  const std::string problem = session.roles().is_worker()
                                  ? std::string()
                                  : "rank " + std::to_string(session.roles().rank) + " is a server, not a worker (WorkerClient)";
  if (const std::string first = detail::first_problem(session.comm(), problem); !first.empty()) throw ConfigError(first);
  impl_->chunk_floats = std::max<std::size_t>(1, session.options().chunk_bytes / sizeof(float));
  // the transport needs the target (pt2pt): complete by request, and sleep while waiting
  impl_->by_request = session.server_progress() == ServerProgress::Wake;
  impl_->waiter = detail::RequestWaiter(impl_->by_request, session.options().wait_spin_us,
                                        session.shared_memory_neighbours() ? 100 : 1000);
  impl_->win = detail::open_windows(session);
  detail::restore_checkpoint(session);             // collective with the servers' constructors
  // the servers have filled their shards (and each could create its checkpoint directory):
  // their agreement is this constructor's barrier
  if (const std::string first = detail::first_problem(session.comm(), ""); !first.empty()) throw ConfigError(first);
  impl_->timeline.set_origin();
  impl_->liveness = detail::Liveness(session, impl_->win);
  const int s = session.roles().num_servers;
  // (a flush waits on the target only where the transport needs it: on one node it completes
  // locally, and the watch stays off the step's path)
  impl_->flush_timeout = impl_->by_request ? watch_timeout(session.options().stall_timeout) : 0;
  impl_->flush_what = session.role_name() + " waiting in MPI_Win_flush for " +
                      (s == 1 ? session.describe_rank(0) : "the servers (ranks 0-" + std::to_string(s - 1) + ")");
  impl_->waiter.watch(&impl_->liveness, s == 1 ? "an answer from " + session.describe_rank(0)
                                               : "an answer from the servers (ranks 0-" + std::to_string(s - 1) + ")");
  impl_->liveness.beat();
}

WorkerClient::~WorkerClient() {
  // the job is about to abort: no finish() (collective); the windows abandon themselves
  if (detail::unwinding()) return;
  try {
    finish();
  } catch (const std::exception& e) {
    // destructors never throw, and the other ranks wait for this one in collectives: abort all
    abort_job((std::string("WorkerClient::finish failed: ") + e.what()).c_str());
  }
}

void WorkerClient::pull(std::span<float> params) {
  impl_->enter("WorkerClient::pull");
  impl_->check_size(params.size(), "WorkerClient::pull");
  const auto t0 = Clock::now();
  impl_->issue_pull(params.data(), nullptr);
  impl_->flush(impl_->win.params);
  ++impl_->stats.pulls;
  impl_->stats.pull_seconds += seconds_since(t0);
  impl_->timeline.span("pull", t0, Clock::now());
}

void WorkerClient::push(std::span<const float> grad, float scale) {
  Impl& m = *impl_;
  m.enter("WorkerClient::push");
  m.check_size(grad.size(), "WorkerClient::push");
  Impl::check_scale(scale, "WorkerClient::push");
  if (m.drained) throw Error("WorkerClient::push after drain(): this worker said it was done updating");
  const auto t0 = Clock::now();
  // Plain MPI_Accumulate (no request objects on the hot path). Each piece (at most
  // chunk_bytes) is scaled into a small staging buffer that stays in cache, accumulated, and
  // completed locally before the buffer is reused: one pass over the gradient, not two
  // (docs/DECISIONS.md "Large pushes": the pipelined ring measured against it).
  const std::size_t piece = std::min(m.chunk_floats, m.arena());
  m.push_buffer.resize(piece);
  float* scaled = m.push_buffer.data();
  const MPI_Win w = m.win.params.get();
  // Nothing non-finite is ever sent: each scaled piece is checked in cache before it goes, and
  // when there are several, a NaN or Inf in grad is refused before the first leaves (a finite
  // product overflowing to Inf in a later piece leaves the earlier pieces applied:
  // StepLoop::end_step and push_async check the whole update first).
  if (m.arena() > piece && !detail::all_finite(grad.data(), grad.size()))
    throw ConfigError("WorkerClient::push: grad holds NaN or Inf (nothing was sent)");
  m.for_each_piece([&](int target, MPI_Aint disp, std::size_t off, int n) {
    if (!detail::scale_into_finite(scaled, grad.data() + off, static_cast<std::size_t>(n), scale))  // scale * grad
      throw ConfigError("WorkerClient::push: scale * grad holds NaN or Inf in the piece from float " + std::to_string(off) +
                        (off == 0 ? " (nothing was sent)" : " (the pieces before it were applied)"));
    ASYNCPS_MPI_CHECK(MPI_Accumulate(scaled, n, MPI_FLOAT, target, disp, n, MPI_FLOAT, MPI_SUM, w));
    ASYNCPS_MPI_CHECK(MPI_Win_flush_local(target, w));  // the buffer may be reused now
  });
  m.flush(m.win.params);
  ++m.stats.pushes;
  m.stats.push_seconds += seconds_since(t0);
  m.timeline.span("push", t0, Clock::now());
}

Ticket WorkerClient::push_async(std::span<const float> grad, float scale) {
  impl_->enter("WorkerClient::push_async");
  impl_->check_size(grad.size(), "WorkerClient::push_async");
  Impl::check_scale(scale, "WorkerClient::push_async");
  if (impl_->drained) throw Error("WorkerClient::push_async after drain(): this worker said it was done updating");
  return impl_->start_accumulate(impl_->win.params, grad, scale);
}

Ticket WorkerClient::pull_async(std::span<float> params) {
  impl_->enter("WorkerClient::pull_async");
  impl_->check_size(params.size(), "WorkerClient::pull_async");
  const auto t0 = Clock::now();
  Impl::Pending p;
  impl_->issue_pull(params.data(), &p.requests);
  const Ticket t = impl_->next_ticket++;
  impl_->pending.emplace(t, std::move(p));
  ++impl_->stats.pulls;
  impl_->stats.pull_seconds += seconds_since(t0);
  return t;
}

void WorkerClient::wait(Ticket ticket) {
  impl_->enter("WorkerClient::wait");
  auto it = impl_->pending.find(ticket);
  if (it == impl_->pending.end()) throw Error("WorkerClient::wait: unknown or already completed ticket");
  const auto t0 = Clock::now();
  impl_->waitall(it->second.requests);
  // A push's request completion is local (the buffer is reusable); the flush makes it remote too.
  if (it->second.win != MPI_WIN_NULL) impl_->flush(it->second.win);
  if (it->second.staging >= 0) impl_->free_staging.push_back(it->second.staging);
  impl_->pending.erase(it);
  impl_->stats.wait_seconds += seconds_since(t0);
}

void WorkerClient::wait_all() {
  impl_->enter("WorkerClient::wait_all");
  while (!impl_->pending.empty()) wait(impl_->pending.begin()->first);
}

std::int64_t WorkerClient::next_step() {
  impl_->enter("WorkerClient::next_step");
  if (impl_->drained) throw Error("WorkerClient::next_step after drain(): this worker said it was done updating");
  ++impl_->stats.steps;
  return impl_->fetch_and_add(detail::ctrl::kGlobalStep, 1, MPI_SUM) + 1;
}

std::optional<std::int64_t> WorkerClient::claim_step(std::int64_t limit) {
  impl_->enter("WorkerClient::claim_step");
  Impl::check_limit(limit, "WorkerClient::claim_step");
  if (impl_->drained) throw Error("WorkerClient::claim_step after drain(): this worker said it was done updating");
  const std::int64_t mine = impl_->fetch_and_add(detail::ctrl::kGlobalStep, 1, MPI_SUM) + 1;
  if (mine <= limit) {
    ++impl_->stats.steps;
    return mine;
  }
  impl_->fetch_and_add(detail::ctrl::kGlobalStep, -1, MPI_SUM);  // over the limit: give it back
  return std::nullopt;
}

std::int64_t WorkerClient::global_step() {
  impl_->enter("WorkerClient::global_step");
  return impl_->fetch_and_add(detail::ctrl::kGlobalStep, 0, MPI_NO_OP); }

void WorkerClient::drain() {
  impl_->session.check_thread("WorkerClient::drain");
  if (impl_->drained) return;
  impl_->end_compute();
  wait_all();
  impl_->settle();
  // A worker that is done no longer holds anyone back in SSP: its clock jumps far ahead.
  impl_->fetch_and_add(detail::ctrl::kClocks + worker_index(), std::int64_t{1} << 60, MPI_SUM);
  impl_->fetch_and_add(detail::ctrl::kDone, 1, MPI_SUM);
  impl_->drained = true;
  const std::int64_t workers = impl_->session.roles().num_workers();
  for (;;) {
    std::int64_t v[2] = {0, 0};  // done, server 0's heartbeat
    impl_->control_op(detail::ctrl::kDone, nullptr, v, 2, MPI_NO_OP);
    impl_->liveness.saw_server0(v[1]);
    if (v[0] >= workers) break;  // (control_op beats)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  impl_->liveness.finished();  // silent from now on by right
}

void WorkerClient::finish() {
  if (!impl_ || impl_->finished) return;
  impl_->session.check_thread("WorkerClient::finish");
  drain();
  impl_->finished = true;
  // Matches the servers' MPI_Ibarrier in serve(): completes when every worker is here. A worker
  // may wait here long (the chief evaluating after drain()): while it does, it watches server
  // 0's heartbeat, so only a silent server 0 ends the wait early; the epochs end after it.
  MPI_Request done = MPI_REQUEST_NULL;
  ASYNCPS_MPI_CHECK(MPI_Ibarrier(impl_->session.comm(), &done));
  auto last_look = Clock::now();
  detail::wait_sleeping(done, 200, [&] {
    if (!impl_->liveness.enabled() || Clock::now() - last_look < std::chrono::milliseconds(250)) return;
    last_look = Clock::now();
    std::int64_t beat0 = 0;
    impl_->control_op(detail::ctrl::kBeat0, nullptr, &beat0, 1, MPI_NO_OP);
    impl_->liveness.saw_server0(beat0);
  });
  StallWatch watch(watch_timeout(impl_->session.options().stall_timeout),
                   impl_->session.role_name() + " at the end of the job (final checkpoint, staleness, timeline, freeing the windows: collective "
                       "with every rank)");
  impl_->win.end_epochs();
  impl_->final_state = detail::finish_job(impl_->session, impl_->win, nullptr);  // the final checkpoint
  impl_->job_staleness = detail::allreduce_staleness(impl_->session.comm(), impl_->staleness);
  detail::write_timeline(impl_->session, impl_->timeline);
  impl_->win.close();  // the job's end, where every rank is (the servers at the end of serve())
}

bool WorkerClient::finished() const noexcept { return impl_->finished; }
const WorkerStats& WorkerClient::stats() const noexcept { return impl_->stats; }
int WorkerClient::worker_index() const noexcept { return impl_->session.roles().worker_index(); }

}  // namespace asyncps
