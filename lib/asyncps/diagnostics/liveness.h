// defines: asyncps::detail::Liveness
// Heartbeats in the control block (transport/control_block.h) and the checks that turn a silent rank
// into a StallError naming it, instead of a job that waits forever.
//
//   server 0   adds to kBeat0 (its own memory) and watches every other rank's beats slot: one
//              unchanged for stall_timeout, of a rank that has not finished, is a stall
//   servers    add to their beats slot from the progress loop
//   workers    add to theirs once per step and while they wait for other workers; each claim
//              reads kBeat0 beside the step, so a worker notices a silent server 0 too (on one
//              node, where shared memory lets workers go on without any server)
// Beats are one MPI_Raccumulate(SUM, +1) about every min(1 s, stall_timeout / 4), completed
// locally by the next one: never a round trip.
#pragma once
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/job_facts.h"
#include "asyncps/stall_watch.h"
#include "transport/control_block.h"
#include "transport/request_waiter.h"

namespace asyncps::detail {


class Liveness final : public WaitWatch {
 public:
  using Clock = std::chrono::steady_clock;
  Liveness() = default;
  Liveness(const JobFacts& job, ControlBlock& control);
  bool enabled() const noexcept { return timeout_ > 0; }
  bool watching() const noexcept override { return enabled(); }
  double timeout() const noexcept { return timeout_; }

  // Any rank: a heartbeat, if one is due (cheap to call often: a clock comparison). Needs the
  // lock_all epoch on the control window. Workers beat from every operation that enters MPI
  // (the RmaChannel's flushes, fetches and waits), servers from their progress loop.
  void beat() override;
  // Once, when this rank is done (before it ends its epoch on the control window): completes
  // the last heartbeat, marks the rank finished (workers), and beats no more.
  void finished();

  // Server 0, from its progress loop: the first rank silent for the timeout, if any.
  std::optional<int> stalled_rank();
  // Seconds since that rank's beat last changed (server 0).
  double silent_for(int rank) const;
  // "worker 1 (rank 2 on host-b) has made no progress for 3.2 s (stall timeout 3.0 s)"
  std::string describe_silence(int rank) const;

  // Workers: kBeat0 as read by a claim or a wait; throws StallError when it has not moved for
  // the timeout (server 0 stopped, yet shared memory lets this worker go on without it).
  void saw_server0(std::int64_t beat0);

  // Workers: a wait for other ranks (or for the servers' answer) that has lasted `waited`
  // seconds; throws StallError naming `whom` once it exceeds the timeout plus a grace that lets
  // server 0 report a stalled worker first (it knows which).
  void check_wait(double waited, const std::string& whom) const override;

 private:
  std::string silence(int rank, double seconds) const;  // the one wording of a stall
  const JobFacts* job_ = nullptr;
  ControlBlock* control_ = nullptr;
  double timeout_ = 0;
  Clock::duration interval_{};     // between two beats: min(1 s, timeout / 4)
  Clock::duration check_every_{};  // between two looks at the beats (server 0): min(250 ms, timeout / 8)
  Clock::time_point last_beat_{};
  MPI_Request beat_request_ = MPI_REQUEST_NULL;
  bool done_ = false;  // finished(): no more beats
  // server 0's watch, per rank: the value last seen and when it last changed
  std::vector<std::int64_t> seen_;
  std::vector<Clock::time_point> changed_;
  Clock::time_point last_check_{};
  // workers' watch of server 0
  std::int64_t beat0_seen_ = -1;
  Clock::time_point beat0_changed_{};
};

}  // namespace asyncps::detail
