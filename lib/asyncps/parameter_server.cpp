// defines: ParameterServer
#include "asyncps/parameter_server.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "asyncps/error.h"
#include "asyncps/stall_watch.h"
#include "check.h"
#include "checkpointer.h"
#include "control_block.h"
#include "liveness.h"
#include "progress.h"
#include "string_collectives.h"
#include "timeline.h"
#include "vector_ops.h"
#include "windows.h"

namespace asyncps {

struct ParameterServer::Impl {
  Session& session;
  detail::SessionWindows win;  // and this server's own epochs on them
  std::unique_ptr<detail::ServerCheckpointer> ckpt;
  detail::DirLock dir_lock;  // server 0: the checkpoint directory is this job's
  detail::RestoredShard restored;
  detail::FinalState final_state;
  StalenessHistogram job_staleness;
  detail::Timeline timeline;
  std::unique_ptr<detail::ProgressEngine> progress;
  detail::Liveness liveness;
  bool served = false;
  bool closed = false;               // serve() has freed the windows (at its end)
  std::vector<float> final_shard;    // this server's shard as the job ended (snapshot() after serve())

  // Server 0: `rank` has been silent for the stall timeout. Saves what it safely can (every
  // server live: the arena is whole, Hogwild-consistent) and ends the job with StallError.
  [[noreturn]] void stalled(int rank, const std::function<void()>& progress_once) {
    std::string msg = liveness.describe_silence(rank);
    bool servers_live = true;
    for (int k = 1; k < session.roles().num_servers; ++k)
      // (a live server beats every min(1 s, timeout/4): silent for half the timeout, it is not)
      servers_live = servers_live && liveness.silent_for(k) <= liveness.timeout() / 2;
    if (!session.options().checkpoint.dir.empty()) {
      const std::string saved = servers_live ? ckpt->save_now(progress_once, std::min(10.0, liveness.timeout())) : "";
      msg += saved.empty() ? "; no checkpoint saved now (a server is silent): a restart resumes from the last one"
                           : "; saved " + saved + ": a restart resumes from it";
    }
    throw StallError(msg);
  }

  explicit Impl(Session& s) : session(s), timeline(!s.options().timeline.empty()) {}
};

ParameterServer::ParameterServer(Session& session, std::span<const float> initial, std::int64_t initial_step)
    : impl_(std::make_unique<Impl>(session)) {
  session.check_thread("ParameterServer");
  StallWatch watch(watch_timeout(session.options().stall_timeout),
                   session.role_name() + " creating the windows and restoring (collective with every rank)");
  const Roles& roles = session.roles();
  // Refused on every rank alike (the workers' constructors take part): no rank is left waiting
  // in the window creation for one that threw.
  std::string problem;
  if (!roles.is_server())
    problem = "rank " + std::to_string(roles.rank) + " is a worker, not a server (ParameterServer)";
  else if (initial.size() != session.layout().size())
    problem = "ParameterServer: initial parameters have " + std::to_string(initial.size()) + " floats, the layout has " +
              std::to_string(session.layout().size());
  else if (!detail::all_finite(initial.data(), initial.size()))
    problem = "ParameterServer: initial parameters hold NaN or Inf";
  else if (initial_step < 0 || initial_step > (std::int64_t{1} << 62))
    problem = "ParameterServer: initial_step must be in [0, 2^62], got " + std::to_string(initial_step);
  if (const std::string first = detail::first_problem(session.comm(), problem); !first.empty())
    throw ConfigError(first);
  impl_->win = detail::open_windows(session);
  const Shard& sh = session.plan().shard(roles.rank);
  if (impl_->win.accum.get() != MPI_WIN_NULL) {
    std::fill_n(impl_->win.accum.data<float>(), sh.size, 0.f);
    ASYNCPS_MPI_CHECK(MPI_Win_sync(impl_->win.accum.get()));
  }

  // A checkpoint in Options::checkpoint.dir (or restart_from) wins over `initial`.
  auto& restored = impl_->restored = detail::restore_checkpoint(session, roles.rank == 0 ? &impl_->dir_lock : nullptr);  // collective
  if (restored.found)
    std::copy(restored.params.begin(), restored.params.end(), impl_->win.params.data<float>());
  else
    std::copy_n(initial.begin() + static_cast<std::ptrdiff_t>(sh.offset), sh.size, impl_->win.params.data<float>());
  if (restored.has_shadow) std::copy(restored.shadow.begin(), restored.shadow.end(), impl_->win.shadow.data<float>());
  else std::fill_n(impl_->win.shadow.data<float>(), sh.size, 0.f);
  if (roles.rank == detail::ctrl::kControlRank) {
    auto* ctrl = impl_->win.control.data<std::int64_t>();
    std::fill_n(ctrl, detail::ctrl::slots(roles.num_workers(), roles.num_servers), 0);
    ctrl[detail::ctrl::kGlobalStep] = restored.found ? restored.step : initial_step;
    ctrl[detail::ctrl::kShadowValid] = restored.has_shadow ? 1 : 0;
  }
  // (a server that cannot create its checkpoint directory, on a host of its own, says so on
  // every rank: the agreement below is also the barrier the workers' constructor matches)
  std::string ckpt_problem;
  try {
    impl_->ckpt = std::make_unique<detail::ServerCheckpointer>(session, impl_->win,
                                                               restored.found ? restored.step : initial_step);
  } catch (const Error& e) {
    ckpt_problem = session.describe_rank(roles.rank) + ": " + e.what();
  }
  // Make the local stores visible to the window before anyone reads it.
  ASYNCPS_MPI_CHECK(MPI_Win_sync(impl_->win.params.get()));
  ASYNCPS_MPI_CHECK(MPI_Win_sync(impl_->win.shadow.get()));
  ASYNCPS_MPI_CHECK(MPI_Win_sync(impl_->win.control.get()));
  if (const std::string first = detail::first_problem(session.comm(), ckpt_problem); !first.empty())
    throw ConfigError(first);
  impl_->timeline.set_origin();
  detail::ProgressConfig pc;
  pc.wake_on_sockets = session.server_progress() == ServerProgress::Wake;
  pc.poll_us = session.server_poll_us();
  pc.spin_us = session.options().server_spin_us;
  pc.tick_us = std::min(pc.poll_us, 10000);
  impl_->progress = std::make_unique<detail::ProgressEngine>(pc, &impl_->timeline);
  impl_->liveness = detail::Liveness(session, impl_->win);
  impl_->liveness.beat();
}

// Never collective: serve() freed the windows at the job's end; a server destroyed without
// having served abandons them (see detail::Window).
ParameterServer::~ParameterServer() = default;

void ParameterServer::serve(const std::function<void()>& tick) {
  impl_->session.check_thread("ParameterServer::serve");
  if (impl_->served) throw Error("ParameterServer::serve called twice");
  impl_->served = true;
  // Every rank posts the same non-blocking barrier: workers in finish(), servers here. It
  // completes once every worker has finished. (A blocking MPI_Barrier would never match it.)
  MPI_Request done = MPI_REQUEST_NULL;
  ASYNCPS_MPI_CHECK(MPI_Ibarrier(impl_->session.comm(), &done));
  const auto progress_once = [&] {  // (the stall save's progress: it keeps beating, so no worker
    int ignored = 0;                   // takes server 0 for the silent one while it saves)
    ASYNCPS_MPI_CHECK(MPI_Test(&done, &ignored, MPI_STATUS_IGNORE));
    impl_->liveness.beat();
  };
  impl_->progress->run_until(done, [&] {
    impl_->liveness.beat();
    if (auto r = impl_->liveness.stalled_rank()) impl_->stalled(*r, progress_once);
    const auto t0 = detail::Timeline::Clock::now();
    impl_->ckpt->tick();
    if (tick) tick();
    const auto t1 = detail::Timeline::Clock::now();
    if (t1 - t0 > std::chrono::microseconds(100)) impl_->timeline.span("checkpoint", t0, t1);  // a save, not a check
  });
  impl_->liveness.finished();  // the last heartbeat completed before the job's end
  StallWatch watch(watch_timeout(impl_->session.options().stall_timeout),
                   impl_->session.role_name() + " at the end of the job (final checkpoint, staleness, timeline, freeing the windows: collective "
                       "with every rank)");
  ASYNCPS_MPI_CHECK(MPI_Win_sync(impl_->win.params.get()));
  const auto t0 = detail::Timeline::Clock::now();
  impl_->final_state = detail::finish_job(impl_->session, impl_->win, impl_->ckpt.get());
  impl_->timeline.span("final save", t0, detail::Timeline::Clock::now());
  impl_->job_staleness = detail::allreduce_staleness(impl_->session.comm(), StalenessHistogram{});
  detail::write_timeline(impl_->session, impl_->timeline);
  // The job's end, where every rank is (workers at the end of finish()): the one place the
  // server's windows are freed, so that nothing collective is left for its destructor.
  const float* mine = impl_->win.params.data<float>();
  impl_->final_shard.assign(mine, mine + shard().size);
  impl_->ckpt.reset();
  impl_->win.close();
  impl_->closed = true;
}

bool ParameterServer::restored() const noexcept { return impl_->restored.found; }
std::int64_t ParameterServer::restored_step() const noexcept { return impl_->restored.step; }
bool ParameterServer::halted() const noexcept { return impl_->final_state.halted; }
std::int64_t ParameterServer::final_step() const noexcept { return impl_->final_state.global_step; }
const std::string& ParameterServer::saved_checkpoint() const noexcept { return impl_->final_state.saved; }

const StalenessHistogram& ParameterServer::job_staleness() const noexcept { return impl_->job_staleness; }

const Shard& ParameterServer::shard() const noexcept {
  return impl_->session.plan().shard(impl_->session.roles().rank);
}

std::span<const float> ParameterServer::snapshot() {
  impl_->session.check_thread("ParameterServer::snapshot");
  if (impl_->closed) return impl_->final_shard;
  ASYNCPS_MPI_CHECK(MPI_Win_sync(impl_->win.params.get()));
  return {impl_->win.params.data<float>(), shard().size};
}

std::int64_t ParameterServer::global_step() {
  impl_->session.check_thread("ParameterServer::global_step");
  if (impl_->session.roles().rank != detail::ctrl::kControlRank)
    throw Error("ParameterServer::global_step: only server 0 holds the control block");
  if (impl_->closed) return impl_->final_state.global_step;
  ASYNCPS_MPI_CHECK(MPI_Win_sync(impl_->win.control.get()));
  return __atomic_load_n(&impl_->win.control.data<std::int64_t>()[detail::ctrl::kGlobalStep], __ATOMIC_ACQUIRE);
}

std::uint64_t ParameterServer::polls() const noexcept { return impl_->progress->stats().rounds; }
std::uint64_t ParameterServer::wakeups() const noexcept { return impl_->progress->stats().wakeups; }

}  // namespace asyncps
