// defines: open_windows, write_timeline, wait_sleeping
#include "windows.h"

#include <chrono>
#include <thread>
#include <vector>

#include "asyncps/error.h"
#include "check.h"
#include "string_collectives.h"
#include "control_block.h"
#include "timeline.h"

namespace asyncps::detail {

SessionWindows open_windows(const Session& session) {
  const Roles& roles = session.roles();
  const std::size_t shard_bytes = roles.is_server() ? session.plan().shard(roles.rank).size * sizeof(float) : 0;
  const std::size_t ctrl_bytes =
      roles.rank == ctrl::kControlRank ? ctrl::slots(roles.num_workers(), roles.num_servers) * sizeof(std::int64_t) : 0;
  SessionWindows w;
  w.params = Window(session.comm(), shard_bytes, sizeof(float), "parameter");
  w.control = Window(session.comm(), ctrl_bytes, sizeof(std::int64_t), "control");
  if (session.options().mode == Mode::Sync) w.accum = Window(session.comm(), shard_bytes, sizeof(float), "accumulation");
  w.shadow = Window(session.comm(), shard_bytes, sizeof(float), "EMA shadow", /*sum_and_no_op_only=*/false);
  w.lock_params = LockAll(w.params.get());
  w.lock_control = LockAll(w.control.get());
  if (w.accum.get() != MPI_WIN_NULL) w.lock_accum = LockAll(w.accum.get());
  w.lock_shadow = LockAll(w.shadow.get());
  return w;
}

void SessionWindows::end_epochs() {
  lock_accum.unlock();
  lock_shadow.unlock();
  lock_params.unlock();
  lock_control.unlock();
}

void SessionWindows::close() {
  end_epochs();
  params.free();
  control.free();
  accum.free();  // (a null window where the session made none: on every rank alike)
  shadow.free();
}

StalenessHistogram allreduce_staleness(MPI_Comm comm, const StalenessHistogram& mine) {
  std::vector<double> v = mine.to_vector(), sum(v.size()), mx(1);
  const double my_max = v.back();
  ASYNCPS_MPI_CHECK(MPI_Allreduce(v.data(), sum.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_SUM, comm));
  ASYNCPS_MPI_CHECK(MPI_Allreduce(&my_max, mx.data(), 1, MPI_DOUBLE, MPI_MAX, comm));
  sum.back() = mx[0];
  return StalenessHistogram::from_vector(sum);
}

void write_timeline(const Session& session, const Timeline& timeline) {
  if (session.options().timeline.empty()) return;
  const Roles& r = session.roles();
  std::string label = "rank " + std::to_string(r.rank) + ": ";
  label += r.is_server() ? "server " + std::to_string(r.rank)
                         : "worker " + std::to_string(r.worker_index()) + (r.is_chief() ? " (chief)" : "");
  label += " on " + session.host(r.rank);
  // Rank 0 alone writes: its failure (a full disk, a directory gone) is every rank's verdict,
  // so none is left waiting in the window free that follows.
  std::string problem;
  try {
    timeline.write(session.comm(), session.options().timeline, label);
  } catch (const Error& e) {
    problem = e.what();
  }
  if (const std::string first = first_problem(session.comm(), problem); !first.empty()) throw Error(first);
}

void wait_sleeping(MPI_Request& request, int poll_us, const std::function<void()>& each_round) {
  for (;;) {
    int done = 0;
    ASYNCPS_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (each_round) each_round();
    std::this_thread::sleep_for(std::chrono::microseconds(poll_us));
  }
}

}  // namespace asyncps::detail
