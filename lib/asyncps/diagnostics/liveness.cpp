// defines: Liveness
#include "diagnostics/liveness.h"

#include <algorithm>
#include <cstdio>

#include "asyncps/error.h"
#include "asyncps/stall_watch.h"
#include "core/check.h"

namespace asyncps::detail {

namespace {
double seconds(Liveness::Clock::duration d) { return std::chrono::duration<double>(d).count(); }
std::string fmt_seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f s", s);
  return b;
}
}  // namespace

Liveness::Liveness(const JobFacts& job, ControlBlock& control)
    : job_(&job), control_(&control), timeout_(job.options().stall_timeout) {
  if (!enabled()) return;
  interval_ = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(1.0, timeout_ / 4)));
  // Server 0 looks at the beats every min(250 ms, timeout / 8): a gap between two looks longer
  // than timeout / 2 (a long save) is then always an absence, never the regular period. (With a
  // fixed 250 ms and the 0.5 s floor, every look came more than timeout / 2 after the one
  // before, so every look was "away" and nobody was ever named.)
  check_every_ = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(0.25, timeout_ / 8)));
  const auto now = Clock::now();
  const auto n = static_cast<std::size_t>(job.roles().size);
  seen_.assign(n, -1);
  changed_.assign(n, now);
  last_check_ = beat0_changed_ = now;
}

void Liveness::beat() {
  if (!enabled() || done_) return;
  const auto now = Clock::now();
  if (now - last_beat_ < interval_) return;
  last_beat_ = now;
  const Roles& roles = job_->roles();
  if (roles.rank == ControlBlock::kRank) {  // its own memory: a local atomic add
    control_->local_beat0();
    return;
  }
  if (beat_request_ != MPI_REQUEST_NULL) {  // the last beat is long sent; if not, skip this one
    int done = 0;
    ASYNCPS_MPI_CHECK(MPI_Test(&beat_request_, &done, MPI_STATUS_IGNORE));
    if (!done) return;
  }
  control_->post_beat(roles.rank, beat_request_);
}

void Liveness::finished() {
  if (!enabled() || done_) return;
  done_ = true;
  // the finished marker's waits block inside MPI: watched (a stopped server 0 ends the job)
  const StallWatch watch(watch_timeout(timeout_),
                         job_->role_name() + " marking itself finished at " +
                             job_->describe_rank(ControlBlock::kRank));
  if (beat_request_ != MPI_REQUEST_NULL) ASYNCPS_MPI_CHECK(MPI_Wait(&beat_request_, MPI_STATUS_IGNORE));
  const Roles& roles = job_->roles();
  if (roles.is_server()) return;  // servers stop with the job: nobody watches them any more
  control_->mark_finished(roles.rank);
}

std::optional<int> Liveness::stalled_rank() {
  // (the beats are in server 0's memory: another server's control window is empty, and reading
  // it read whatever lay there, which under MPICH was unmapped)
  if (!enabled() || job_->roles().rank != ControlBlock::kRank) return std::nullopt;
  const auto now = Clock::now();
  if (now - last_check_ < check_every_) return std::nullopt;
  // Not watching for a while (a long save): beats that came meanwhile may not have landed yet
  // (pt2pt applies them as this rank enters MPI), so nobody is judged on that gap.
  const bool was_away = seconds(now - last_check_) > timeout_ / 2;
  last_check_ = now;
  const Roles& roles = job_->roles();
  const std::int64_t* beats = control_->local_beats();
  // The longest silent, servers first: workers wait on servers, never the other way round, and
  // a worker stuck waiting on a stopped server goes silent too (over pt2pt its beats stop
  // landing). So a silent worker is named only while no server has been silent half as long.
  std::optional<int> server, worker;  // the longest silent of each kind
  for (int r = 1; r < roles.size; ++r) {
    const auto i = static_cast<std::size_t>(r);
    const std::int64_t v = __atomic_load_n(&beats[r], __ATOMIC_ACQUIRE);
    if (v >= ControlBlock::kFinished) continue;  // done: silent by right
    if (v != seen_[i] || was_away) {
      seen_[i] = v;
      changed_[i] = now;
      continue;
    }
    std::optional<int>& worst = r < roles.num_servers ? server : worker;
    const double limit = r < roles.num_servers ? timeout_ / 2 : timeout_;
    if (seconds(now - changed_[i]) > limit && (!worst || changed_[i] < changed_[static_cast<std::size_t>(*worst)]))
      worst = r;
  }
  if (server && (worker || silent_for(*server) > timeout_)) return server;
  return server ? std::nullopt : worker;
}

double Liveness::silent_for(int rank) const {
  return enabled() ? seconds(Clock::now() - changed_[static_cast<std::size_t>(rank)]) : 0;
}

std::string Liveness::silence(int rank, double seconds) const {
  return job_->describe_rank(rank) + " has made no progress for " + fmt_seconds(seconds) + " (stall timeout " +
         fmt_seconds(timeout_) + ")";
}

std::string Liveness::describe_silence(int rank) const { return silence(rank, silent_for(rank)); }

void Liveness::saw_server0(std::int64_t beat0) {
  if (!enabled()) return;
  const auto now = Clock::now();
  if (beat0 != beat0_seen_) {
    beat0_seen_ = beat0;
    beat0_changed_ = now;
    return;
  }
  const double silent = seconds(now - beat0_changed_);
  if (silent > timeout_)
    throw StallError(silence(0, silent) + "; noticed by " + job_->describe_rank(job_->roles().rank));
}


void Liveness::check_wait(double waited, const std::string& whom) const {
  if (!enabled()) return;
  // The grace lets server 0, which watches every rank, name the silent one first (a wait on a
  // stopped server 1 is as long as this worker's): twice the watched stretches' grace.
  if (waited > timeout_ + 2 * (watch_timeout(timeout_) - timeout_))
    throw StallError(job_->describe_rank(job_->roles().rank) + " has waited " + fmt_seconds(waited) + " for " +
                     whom + " (stall timeout " + fmt_seconds(timeout_) + "): one of them stopped making progress");
}

}  // namespace asyncps::detail
