// defines: ParameterServer
#include "asyncps/parameter_server.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "asyncps/error.h"
#include "core/check.h"
#include "core/rows.h"
#include "core/vector_ops.h"
#include "runtime/owner_thread.h"
#include "runtime/progress_policy.h"
#include "runtime/rank_runtime.h"
#include "runtime/termination.h"
#include "server/progress_engine.h"

namespace asyncps {

struct ParameterServer::Impl {
  detail::RankRuntime rt;  // start-up and end, shared with the workers; the windows and heartbeats
  std::unique_ptr<detail::ServerCheckpointer> ckpt;
  detail::JobEnd end;
  std::unique_ptr<detail::ProgressEngine> progress;
  bool served = false;
  bool closed = false;             // serve() has freed the windows (at its end)
  std::vector<float> final_shard;  // this server's shard as the job ended (snapshot() after serve())

  Impl(Session& s, const std::string& problem) : rt(s, problem) {}
  Session& session() { return rt.session(); }
  detail::SessionWindows& win() { return rt.channel().windows(); }

  // Server 0: `rank` has been silent for the stall timeout. Saves what it safely can (every
  // server live: the arena is whole, Hogwild-consistent) and ends the job with StallError.
  [[noreturn]] void stalled(int rank, const std::function<void()>& progress_once) {
    detail::Liveness& liveness = rt.liveness();
    std::string msg = liveness.describe_silence(rank);
    bool servers_live = true;
    for (int k = 1; k < session().roles().num_servers; ++k)
      // (a live server beats every min(1 s, timeout/4): silent for half the timeout, it is not)
      servers_live = servers_live && liveness.silent_for(k) <= liveness.timeout() / 2;
    if (!session().options().checkpoint.dir.empty()) {
      const std::string saved = servers_live ? ckpt->save_now(progress_once, std::min(10.0, liveness.timeout())) : "";
      msg += saved.empty() ? "; no checkpoint saved now (a server is silent): a restart resumes from the last one"
                           : "; saved " + saved + ": a restart resumes from it";
    }
    throw StallError(msg);
  }
};

namespace {
// Why this rank cannot serve (refused on every rank alike: the workers' constructors take part).
std::string server_problem(const Session& session, std::span<const float> initial, std::int64_t initial_step) {
  if (!session.roles().is_server())
    return "rank " + std::to_string(session.roles().rank) + " is a worker, not a server (ParameterServer)";
  if (initial.size() != session.layout().size())
    return "ParameterServer: initial parameters have " + std::to_string(initial.size()) + " floats, the layout has " +
           std::to_string(session.layout().size());
  if (!detail::all_finite(initial.data(), initial.size())) return "ParameterServer: initial parameters hold NaN or Inf";
  if (initial_step < 0 || initial_step > (std::int64_t{1} << 62))
    return "ParameterServer: initial_step must be in [0, 2^62], got " + std::to_string(initial_step);
  return {};
}
}  // namespace

ParameterServer::ParameterServer(Session& session, std::span<const float> initial, std::int64_t initial_step) {
  detail::check_thread(session, "ParameterServer");
  impl_ = std::make_unique<Impl>(session, server_problem(session, initial, initial_step));  // collective
  detail::SessionWindows& win = impl_->win();
  const Shard& sh = session.plan().shard(session.roles().rank);
  if (win.accum.get() != MPI_WIN_NULL) {
    std::fill_n(win.accum.data<float>(), sh.size, 0.f);
    ASYNCPS_MPI_CHECK(MPI_Win_sync(win.accum.get()));
  }
  // A checkpoint in Options::checkpoint.dir (or restart_from) wins over `initial`.
  const detail::RestoredShard& restored = impl_->rt.restored();
  if (restored.found)
    std::copy(restored.params.begin(), restored.params.end(), win.params.data<float>());
  else
    std::copy_n(initial.begin() + static_cast<std::ptrdiff_t>(sh.offset), sh.size, win.params.data<float>());
  if (restored.has_shadow) std::copy(restored.shadow.begin(), restored.shadow.end(), win.shadow.data<float>());
  else std::fill_n(win.shadow.data<float>(), sh.size, 0.f);
  if (win.rows.get() != MPI_WIN_NULL) {  // the embedding tables' rows: the checkpoint's, or their first values
    if (restored.found) std::copy(restored.rows.begin(), restored.rows.end(), win.rows.data<float>());
    else detail::init_server_rows(session.layout(), session.row_plan(), session.roles().rank, win.rows.data<float>());
    ASYNCPS_MPI_CHECK(MPI_Win_sync(win.rows.get()));
  }
  if (session.roles().rank == detail::ControlBlock::kRank)
    impl_->rt.control().init_local(restored.found ? restored.step : initial_step, restored.has_shadow);
  // (a server that cannot create its checkpoint directory, on a host of its own, says so on
  // every rank: ready() agrees on it)
  std::string ckpt_problem;
  try {
    impl_->ckpt = std::make_unique<detail::ServerCheckpointer>(impl_->rt.job(), win, impl_->rt.control(),
                                                               restored.found ? restored.step : initial_step);
  } catch (const Error& e) {
    ckpt_problem = session.describe_rank(session.roles().rank) + ": " + e.what();
  }
  // Make the local stores visible to the window before anyone reads it.
  ASYNCPS_MPI_CHECK(MPI_Win_sync(win.params.get()));
  ASYNCPS_MPI_CHECK(MPI_Win_sync(win.shadow.get()));
  ASYNCPS_MPI_CHECK(MPI_Win_sync(win.control.get()));
  impl_->rt.ready(ckpt_problem);  // collective
  detail::ProgressConfig pc;
  const detail::ProgressChoice progress = detail::progress_choice(session);
  pc.wake_on_sockets = progress.progress == ServerProgress::Wake;
  pc.poll_us = progress.poll_us;
  pc.spin_us = session.options().server_spin_us;
  // The ticks (heartbeats, stall checks, checkpoint requests, serve()'s callback) at most once a
  // poll, but never more often than every 1 ms: a server that spins (poll_us 0) would otherwise
  // run them every round, and a server other than 0 would read server 0's checkpoint request
  // every 10 rounds.
  pc.tick_us = std::clamp(pc.poll_us, 1000, 10000);
  impl_->progress = std::make_unique<detail::ProgressEngine>(pc, &impl_->rt.timeline());
}

// Never collective: serve() freed the windows at the job's end; a server destroyed without
// having served abandons them (see detail::Window).
ParameterServer::~ParameterServer() = default;

void ParameterServer::serve(const std::function<void()>& tick) {
  Impl& m = *impl_;
  detail::check_thread(m.session(), "ParameterServer::serve");
  if (m.served) throw Error("ParameterServer::serve called twice");
  m.served = true;
  // Every rank posts the same non-blocking barrier: workers in finish(), servers here. It
  // completes once every worker has finished. (A blocking MPI_Barrier would never match it.)
  MPI_Request done = MPI_REQUEST_NULL;
  ASYNCPS_MPI_CHECK(MPI_Ibarrier(m.session().comm(), &done));
  detail::Liveness& liveness = m.rt.liveness();
  const auto progress_once = [&] {  // (the stall save's progress: it keeps beating, so no worker
    int ignored = 0;                   // takes server 0 for the silent one while it saves)
    ASYNCPS_MPI_CHECK(MPI_Test(&done, &ignored, MPI_STATUS_IGNORE));
    liveness.beat();
  };
  bool termination_posted = false;
  m.progress->run_until(done, [&] {
    liveness.beat();
    if (!termination_posted && detail::termination_requested()) {  // SIGTERM: every rank stops
      termination_posted = true;
      m.rt.control().request_halt(/*terminated=*/true);
    }
    if (auto r = liveness.stalled_rank()) m.stalled(*r, progress_once);
    const auto t0 = detail::Timeline::Clock::now();
    m.ckpt->tick();
    if (tick) tick();
    const auto t1 = detail::Timeline::Clock::now();
    if (t1 - t0 > std::chrono::microseconds(100)) m.rt.timeline().span("checkpoint", t0, t1);  // a save, not a check
  });
  liveness.finished();  // the last heartbeat completed before the job's end
  m.rt.end(m.end, m.ckpt.get(), StalenessHistogram{}, 0, [&] {
    const float* mine = m.win().params.data<float>();
    m.final_shard.assign(mine, mine + shard().size);
    m.ckpt.reset();
  });
  m.closed = true;
}

bool ParameterServer::restored() const noexcept { return impl_->rt.restored().found; }
std::int64_t ParameterServer::restored_step() const noexcept { return impl_->rt.restored().step; }
bool ParameterServer::halted() const noexcept { return impl_->end.state.halted; }
bool ParameterServer::terminated() const noexcept { return impl_->end.state.terminated; }
std::int64_t ParameterServer::final_step() const noexcept { return impl_->end.state.global_step; }
const std::string& ParameterServer::saved_checkpoint() const noexcept { return impl_->end.state.saved; }

const StalenessHistogram& ParameterServer::job_staleness() const noexcept { return impl_->end.staleness; }
std::uint64_t ParameterServer::job_nonfinite() const noexcept { return impl_->end.nonfinite; }

const Shard& ParameterServer::shard() const noexcept {
  return impl_->session().plan().shard(impl_->session().roles().rank);
}

std::span<const float> ParameterServer::snapshot() {
  detail::check_thread(impl_->session(), "ParameterServer::snapshot");
  if (impl_->closed) return impl_->final_shard;
  ASYNCPS_MPI_CHECK(MPI_Win_sync(impl_->win().params.get()));
  return {impl_->win().params.data<float>(), shard().size};
}

std::int64_t ParameterServer::global_step() {
  detail::check_thread(impl_->session(), "ParameterServer::global_step");
  if (impl_->closed) return impl_->end.state.global_step;  // (every server knows the final step)
  if (impl_->session().roles().rank != detail::ControlBlock::kRank)
    throw Error("ParameterServer::global_step: only server 0 holds the control block while serving (after "
                "serve(), every server returns the final step)");
  return impl_->rt.control().local_step();
}

std::uint64_t ParameterServer::polls() const noexcept { return impl_->progress->stats().rounds; }
std::uint64_t ParameterServer::wakeups() const noexcept { return impl_->progress->stats().wakeups; }

}  // namespace asyncps
