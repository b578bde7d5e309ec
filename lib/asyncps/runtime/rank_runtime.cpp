// defines: RankRuntime (start-up and end of every rank), allreduce_staleness
#include "runtime/rank_runtime.h"

#include <string>
#include <utility>
#include <vector>

#include "asyncps/error.h"
#include "core/check.h"
#include "diagnostics/stall_deadline.h"
#include "transport/string_collectives.h"

namespace asyncps::detail {

JobFacts job_facts(const Session& session) {
  std::vector<std::string> hosts;
  for (int r = 0; r < session.roles().size; ++r) hosts.push_back(session.host(r));
  return JobFacts(session.comm(), session.roles(), session.layout(), session.plan(), session.row_plan(),
                  session.options(), std::move(hosts));
}

ChannelConfig channel_config(const Session& session) {
  const Options& o = session.options();
  ChannelConfig c;
  c.comm = session.comm();
  c.roles = &session.roles();
  c.plan = &session.plan();
  c.row_plan = &session.row_plan();
  c.chunk_bytes = o.chunk_bytes;
  c.atomic_pull = o.pull == PullMethod::GetAccumulate;
  c.sync_accumulation = o.mode == Mode::Sync;
  c.control_slots = ControlBlock::slots(session.roles().num_workers(), session.roles().num_servers);
  c.control_timeout = watch_timeout(o.stall_timeout);
  c.deadline = &stall_deadline();
  return c;
}

RankRuntime::RankRuntime(Session& session, const std::string& problem)
    : session_(session), job_(job_facts(session)), timeline_(!session.options().timeline.empty()) {
  const double setup = setup_watch_timeout(session.options().stall_timeout);
  start_watch_.emplace(setup, session.role_name() + " creating the windows and restoring (collective with every rank)");
  // rank 0 names a rank that never comes, half a second before its own watch (and, where rank 0
  // came first, the others') could only say it made no progress
  arrival_.emplace(job_, setup > 0 ? setup - 0.5 : 0, "the windows' creation (collective with every rank)");
  // Refused on every rank alike (the other role's constructors take part in this collective):
  // no rank is left waiting in the window creation for one that threw.
  if (const std::string first = first_problem(session.comm(), problem); !first.empty()) throw ConfigError(first);
  channel_ = RmaChannel(channel_config(session));
  control_ = ControlBlock(channel_, session.roles().num_workers(), session.roles().num_servers);
  restored_ = restore_checkpoint(job_, session.roles().rank == 0 ? &dir_lock_ : nullptr);  // collective
}

void RankRuntime::ready(const std::string& problem) {
  // every server has filled its shard (and could create its checkpoint directory): this
  // agreement is the barrier both roles' constructors end on
  if (const std::string first = first_problem(session_.comm(), problem); !first.empty()) throw ConfigError(first);
  arrival_->done();
  arrival_.reset();
  start_watch_.reset();
  timeline_.set_origin();
  liveness_ = Liveness(job_, control_);
  liveness_.beat();
}

void RankRuntime::end(JobEnd& out, ServerCheckpointer* ckpt, const StalenessHistogram& mine,
                      std::uint64_t nonfinite, const std::function<void()>& before_free) {
  const StallWatch watch(watch_timeout(session_.options().stall_timeout),
                         session_.role_name() + " at the end of the job (final checkpoint, staleness, timeline, freeing "
                                                "the windows: collective with every rank)");
  if (session_.roles().is_worker()) channel_.end_epochs();
  else ASYNCPS_MPI_CHECK(MPI_Win_sync(channel_.windows().params.get()));
  const auto t0 = Timeline::Clock::now();
  out.state = finish_job(job_, control_, ckpt);  // the final checkpoint
  if (ckpt) timeline_.span("final save", t0, Timeline::Clock::now());
  out.staleness = allreduce_staleness(session_.comm(), mine);
  ASYNCPS_MPI_CHECK(MPI_Allreduce(&nonfinite, &out.nonfinite, 1, MPI_UINT64_T, MPI_SUM, session_.comm()));
  write_timeline(job_, timeline_);
  if (before_free) before_free();
  channel_.close();  // the job's end, where every rank is: the one place windows are freed
}

StalenessHistogram allreduce_staleness(MPI_Comm comm, const StalenessHistogram& mine) {
  std::vector<double> v = mine.to_vector(), sum(v.size()), mx(1);
  const double my_max = v.back();
  ASYNCPS_MPI_CHECK(MPI_Allreduce(v.data(), sum.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_SUM, comm));
  ASYNCPS_MPI_CHECK(MPI_Allreduce(&my_max, mx.data(), 1, MPI_DOUBLE, MPI_MAX, comm));
  sum.back() = mx[0];
  return StalenessHistogram::from_vector(sum);
}

}  // namespace asyncps::detail
