// defines: WorkerTransport (the worker's transport: pull, push, tickets, drain, finish)
#include "worker/worker_transport.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <utility>

#include "asyncps/log.h"
#include "asyncps/mpi_environment.h"
#include "core/check.h"
#include "core/vector_ops.h"
#include "runtime/owner_thread.h"
#include "runtime/progress_policy.h"
#include "core/number_text.h"

namespace asyncps::detail {

namespace {
// Why this rank cannot be a worker (refused on every rank alike: the servers' constructors take
// part in the same collective).
std::string worker_problem(const Session& session) {
  if (session.roles().is_worker()) return {};
  return "rank " + std::to_string(session.roles().rank) + " is a server, not a worker (WorkerClient)";
}
// "server 0 (rank 0 on h)" or "the servers (ranks 0-2)": whom a worker waits for.
std::string the_servers(const Session& session) {
  const int s = session.roles().num_servers;
  return s == 1 ? session.describe_rank(0) : "the servers (ranks 0-" + std::to_string(s - 1) + ")";
}
}  // namespace

WorkerTransport::WorkerTransport(Session& session)
    : rt_session_(session),
      rt_(session, worker_problem(session)),  // collective: the windows and the restore
      options_(session.options()),
      arena_(session.layout().size()),
      num_workers_(session.roles().num_workers()),
      worker_index_(session.roles().worker_index()) {
  rt_.ready("");  // the servers have filled their shards: this agreement ends both constructors
  // How the step's operations complete and how a waiting worker waits go with the servers'
  // progress (runtime/progress_policy.cpp). Where operations need the target (between hosts;
  // MPICH on one node too) or the servers sleep until woken, a flush waits for a server, so it is
  // watched; where they complete without it, the watch stays off the step's path.
  const ProgressChoice policy = progress_choice(session);
  const bool watched = policy.worker_sleeps_on_sockets || session.rma_needs_target();
  rt_.channel().configure(*policy.completion,
                          RequestWaiter(policy.worker_sleeps_on_sockets, options_.wait_spin_us,
                                        policy.worker_max_sleep_us),
                          &rt_.liveness(), watched ? watch_timeout(options_.stall_timeout) : 0,
                          session.role_name() + " waiting in MPI_Win_flush for " + the_servers(session),
                          "an answer from " + the_servers(session));
  if (log_enabled(LogLevel::Debug))
    log(LogLevel::Debug, session.role_name() + ": operations complete by " + std::string(policy.completion->name()) +
                             (policy.worker_sleeps_on_sockets
                                  ? "; a wait spins " + std::to_string(options_.wait_spin_us) +
                                        " us, then sleeps at most " + std::to_string(policy.worker_max_sleep_us) +
                                        " us on the sockets"
                                  : std::string("; a wait spins")) +
                             "; flushes " + (watched ? "watched by the stall timeout" : "not watched"));
}

void WorkerTransport::enter(const char* call) const {
  check_thread(rt_session(), call);
  if (finished_) throw Error(std::string(call) + " after finish(): the worker's windows are freed");
}

void WorkerTransport::check_updating(const char* call) const {
  if (drained_) throw Error(std::string(call) + " after drain(): this worker said it was done updating");
}

void WorkerTransport::check_size(std::size_t n, const char* call) const {
  if (n != arena_)
    throw ConfigError(std::string(call) + ": span has " + std::to_string(n) + (n == 1 ? " float" : " floats") +
                      ", the layout has " + std::to_string(arena_));
}

void WorkerTransport::check_scale(float scale, const char* call) {
  if (!std::isfinite(scale))
    throw ConfigError(std::string(call) + ": scale must be a finite number, got " + number_text(scale) +
                      " (nothing was sent)");
}

void WorkerTransport::check_limit(std::int64_t limit, const char* call) {
  if (limit < 0 || limit > (std::int64_t{1} << 62))
    throw ConfigError(std::string(call) + ": limit must be in [0, 2^62], got " + std::to_string(limit));
}

void WorkerTransport::pull(std::span<float> params) {
  enter("WorkerClient::pull");
  check_size(params.size(), "WorkerClient::pull");
  const auto t0 = WorkerClock::now();
  RmaBatch batch = RmaBatch::flushed();
  channel().read(Table::Params, params.data(), batch);
  channel().complete(batch);
  ++stats_.pulls;
  stats_.pull_seconds += seconds_since(t0);
  timeline().span("pull", t0, WorkerClock::now());
}

void WorkerTransport::check_push(std::span<const float> grad, float scale, const char* call) const {
  enter(call);
  check_size(grad.size(), call);
  check_scale(scale, call);
  check_updating(call);
}

void WorkerTransport::push(std::span<const float> grad, float scale) {
  check_push(grad, scale, "WorkerClient::push");
  const auto t0 = WorkerClock::now();
  // Plain MPI_Accumulate (no request objects on the hot path). Each piece (at most chunk_bytes)
  // is scaled into a small staging buffer that stays in cache: one pass over the gradient, not
  // two (docs/DECISIONS.md "Large pushes"). Nothing non-finite is ever sent: each scaled piece
  // is checked in cache before it goes, and when there are several, a NaN or Inf in grad is
  // refused before the first leaves (a finite product overflowing to Inf in a later piece leaves
  // the earlier pieces applied: StepLoop::end_step and push_async check the whole update first).
  const std::size_t piece = std::min(channel().chunk_floats(), arena_);
  push_buffer_.resize(piece);
  if (arena_ > piece && !all_finite(grad.data(), grad.size()))
    throw ConfigError("WorkerClient::push: grad holds NaN or Inf (nothing was sent)");
  channel().add_staged(Table::Params, push_buffer_.data(), [&](float* scaled, std::size_t off, int n) {
    if (!scale_into_finite(scaled, grad.data() + off, static_cast<std::size_t>(n), scale))  // scale * grad
      throw ConfigError("WorkerClient::push: scale * grad holds NaN or Inf in the piece from float " +
                        std::to_string(off) + (off == 0 ? " (nothing was sent)" : " (the pieces before it were applied)"));
  });
  ++stats_.pushes;
  stats_.push_seconds += seconds_since(t0);
  timeline().span("push", t0, WorkerClock::now());
}

int WorkerTransport::take_staging() {
  if (free_staging_.empty()) {
    staging_.emplace_back(arena_);
    return static_cast<int>(staging_.size() - 1);
  }
  const int i = free_staging_.back();
  free_staging_.pop_back();
  return i;
}

Ticket WorkerTransport::push_async(std::span<const float> grad, float scale) {
  check_push(grad, scale, "WorkerClient::push_async");
  const auto t0 = WorkerClock::now();
  const int buf = take_staging();
  float* scaled = staging_[static_cast<std::size_t>(buf)].data();
  if (!scale_into_finite(scaled, grad.data(), grad.size(), scale)) {  // the update the servers add
    free_staging_.push_back(buf);
    throw ConfigError("WorkerClient::push_async: scale * grad holds NaN or Inf (nothing was sent)");
  }
  Pending p{RmaBatch::requests_batch(), buf};
  channel().add(Table::Params, scaled, p.batch);
  const Ticket t = next_ticket_++;
  pending_.emplace(t, std::move(p));
  ++stats_.pushes;
  stats_.push_seconds += seconds_since(t0);
  return t;
}

Ticket WorkerTransport::pull_async(std::span<float> params) {
  enter("WorkerClient::pull_async");
  check_size(params.size(), "WorkerClient::pull_async");
  const auto t0 = WorkerClock::now();
  Pending p{RmaBatch::requests_batch(), -1};
  channel().read(Table::Params, params.data(), p.batch);
  const Ticket t = next_ticket_++;
  pending_.emplace(t, std::move(p));
  ++stats_.pulls;
  stats_.pull_seconds += seconds_since(t0);
  return t;
}

void WorkerTransport::wait(Ticket ticket) {
  enter("WorkerClient::wait");
  auto it = pending_.find(ticket);
  if (it == pending_.end()) throw Error("WorkerClient::wait: unknown or already completed ticket");
  const auto t0 = WorkerClock::now();
  channel().complete(it->second.batch);  // a push: complete at the servers too, not only locally
  if (it->second.staging >= 0) free_staging_.push_back(it->second.staging);
  pending_.erase(it);
  stats_.wait_seconds += seconds_since(t0);
}

void WorkerTransport::wait_all() {
  enter("WorkerClient::wait_all");
  while (!pending_.empty()) wait(pending_.begin()->first);
}

void WorkerTransport::progress() {
  enter("WorkerClient::progress");
  liveness().beat();  // (a clock comparison unless a heartbeat is due)
  int arrived = 0;    // nothing is taken: the probe only runs the progress engine once
  ASYNCPS_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, rt_.session().comm(), &arrived, MPI_STATUS_IGNORE));
}

void WorkerTransport::drain() {
  check_thread(rt_session(), "WorkerClient::drain");
  if (drained_) return;
  end_compute();
  wait_all();
  for (const auto& [key, layer] : layers_) layer->settle();  // a prefetched claim given back, pushes completed
  channel().flush_pending();
  // A worker that is done no longer holds anyone back in SSP: its clock jumps far ahead.
  control().retire(worker_index_);
  drained_ = true;
  for (;;) {
    const JobProgress p = control().progress();
    liveness().saw_server0(p.beat0());
    if (p.done() >= num_workers_) break;  // (every fetch beats)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  liveness().finished();  // silent from now on by right
}

void WorkerTransport::finish() {
  if (finished_) return;
  check_thread(rt_session(), "WorkerClient::finish");
  drain();
  finished_ = true;
  // Matches the servers' MPI_Ibarrier in serve(): completes when every worker is here. A worker
  // may wait here long (the chief evaluating after drain()): while it does, it watches server
  // 0's heartbeat, so only a silent server 0 ends the wait early; the epochs end after it.
  MPI_Request done = MPI_REQUEST_NULL;
  ASYNCPS_MPI_CHECK(MPI_Ibarrier(rt_.session().comm(), &done));
  auto last_look = WorkerClock::now();
  wait_sleeping(done, 200, [&] {
    if (!liveness().enabled() || WorkerClock::now() - last_look < std::chrono::milliseconds(250)) return;
    last_look = WorkerClock::now();
    liveness().saw_server0(control().progress().beat0());
  });
  rt_.end(end_, nullptr, staleness_, stats_.nonfinite);  // the final checkpoint, staleness, timeline, windows freed
}

void WorkerTransport::begin_compute() noexcept {
  computing_ = true;
  compute_since_ = WorkerClock::now();
}

void WorkerTransport::end_compute() {
  if (!computing_) return;
  computing_ = false;
  timeline().span("compute", compute_since_, WorkerClock::now());
}

}  // namespace asyncps::detail
