// defines: asyncps::detail::RankRuntime, JobEnd
// What every rank of a session runs at its start and at its end, servers and workers alike.
//   start (the constructor, collective): the role's precondition agreed on every rank; the
//          windows and this rank's epochs on them (RmaChannel) and the control block; the
//          restore of a checkpoint (server 0 takes the directory's lock). The role then fills
//          what it serves, and ready() (collective) agrees that every rank could, starts the
//          timeline's clock and the heartbeats. Watched for Options::stall_timeout throughout.
//   end    (end(), collective, after the shutdown barrier): the final checkpoint, the staleness
//          all-reduce, the timeline, the windows freed. Watched as well.
// It does not move (the channel, the control block and the heartbeats point at each other).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "asyncps/session.h"
#include "asyncps/staleness.h"
#include "asyncps/stall_watch.h"
#include "checkpoint/checkpointer.h"
#include "core/job_facts.h"
#include "diagnostics/arrival.h"
#include "diagnostics/liveness.h"
#include "diagnostics/timeline.h"
#include "transport/control_block.h"
#include "transport/rma_channel.h"

namespace asyncps::detail {

// What the parts below runtime are told of the job (core/job_facts.h): the Session's plans,
// options and every rank's host.
JobFacts job_facts(const Session& session);

// What the session's transport is given (transport/channel_config.h): the session's plans and
// options, the control block's size, the stall timeout's deadline.
ChannelConfig channel_config(const Session& session);

struct JobEnd {
  FinalState state;                // the final step, the halt flag, the index written
  StalenessHistogram staleness;    // every worker's, summed
  std::uint64_t nonfinite = 0;     // every worker's end_step gradients never pushed (NaN or Inf), summed
};

class RankRuntime {
 public:
  // `problem`: why this rank cannot take part ("" if it can). The first rank's is thrown on
  // every rank (ConfigError) before anything is created.
  RankRuntime(Session& session, const std::string& problem);
  RankRuntime(const RankRuntime&) = delete;
  RankRuntime& operator=(const RankRuntime&) = delete;

  // Collective, once the role has filled its windows: `problem` as above (a server that cannot
  // create its checkpoint directory). Starts the timeline's clock and the heartbeats.
  void ready(const std::string& problem);

  // Collective, after the shutdown barrier: `ckpt` (servers; null on workers) writes the final
  // checkpoint; `mine` is this rank's staleness, `nonfinite` its count of gradients never pushed
  // (0 on servers); `before_free` runs just before the windows are
  // freed (a server copies its final shard out). Workers end their epochs first (their last
  // operations complete there). `out` is filled as each stage ends (a failure later, in the
  // timeline's write say, leaves the final state known).
  void end(JobEnd& out, ServerCheckpointer* ckpt, const StalenessHistogram& mine, std::uint64_t nonfinite,
           const std::function<void()>& before_free = {});

  Session& session() noexcept { return session_; }
  const JobFacts& job() const noexcept { return job_; }
  RmaChannel& channel() noexcept { return channel_; }
  ControlBlock& control() noexcept { return control_; }
  Liveness& liveness() noexcept { return liveness_; }
  Timeline& timeline() noexcept { return timeline_; }
  RestoredShard& restored() noexcept { return restored_; }
  const RestoredShard& restored() const noexcept { return restored_; }
  DirLock& dir_lock() noexcept { return dir_lock_; }

 private:
  Session& session_;
  JobFacts job_;  // (before everything that is given it)
  std::optional<StallWatch> start_watch_;
  std::optional<Arrival> arrival_;  // (rank 0: every rank came to the windows' creation; until ready())
  RmaChannel channel_;
  ControlBlock control_;
  DirLock dir_lock_;  // server 0: the checkpoint directory is this job's
  RestoredShard restored_;
  Liveness liveness_;
  Timeline timeline_;
};

// Sums every rank's histogram over the session (collective; servers contribute empty ones).
StalenessHistogram allreduce_staleness(MPI_Comm comm, const StalenessHistogram& mine);

}  // namespace asyncps::detail
