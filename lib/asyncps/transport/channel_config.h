// defines: asyncps::detail::ChannelConfig, Deadline, DeadlineScope, kControlRank
// What the transport is given (plain facts, no Session): the communicator, the plans that say
// where every float lives, the channel's options, and a deadline for the blocking waits no
// heartbeat covers. runtime/ makes it from the Session (channel_config()); transport/ depends on
// core/ only.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <string>

#include "asyncps/roles.h"

namespace asyncps::detail {

// The rank that holds the control block (ControlBlock's slots).
inline constexpr int kControlRank = 0;

// A deadline on a blocking call: begin() before it, end() after (nested stretches end in
// reverse order). If a stretch lasts longer than its timeout the job ends, saying `what`
// (diagnostics/stall_deadline.h: the StallWatch behind it). Used from one thread.
class Deadline {
 public:
  virtual ~Deadline() = default;
  // timeout in seconds, 0: off; `what` outlives the stretch
  virtual void begin(double timeout, const std::string& what) noexcept = 0;
  virtual void end() noexcept = 0;
};

// One watched stretch, for as long as it lives (no deadline: nothing watched).
class DeadlineScope {
 public:
  DeadlineScope(Deadline* d, double timeout, const std::string& what) noexcept : d_(timeout > 0 ? d : nullptr) {
    if (d_) d_->begin(timeout, what);
  }
  ~DeadlineScope() {
    if (d_) d_->end();
  }
  DeadlineScope(const DeadlineScope&) = delete;
  DeadlineScope& operator=(const DeadlineScope&) = delete;

 private:
  Deadline* d_;
};

struct ChannelConfig {
  MPI_Comm comm = MPI_COMM_NULL;  // the session's (collective window creation)
  // where every float lives (owned by whoever made the config; they outlive the channel)
  const Roles* roles = nullptr;
  const ShardPlan* plan = nullptr;
  const RowPlan* row_plan = nullptr;
  std::size_t chunk_bytes = 0;     // one operation moves at most this many bytes of the arena
  bool atomic_pull = true;         // arena reads by MPI_Get_accumulate(MPI_NO_OP), else MPI_Get
  bool sync_accumulation = false;  // a window for sync rounds' accumulation
  std::size_t control_slots = 0;   // the control block's int64 slots (ControlBlock::slots), on kControlRank
  double control_timeout = 0;      // the deadline of a blocking wait on the control block (0: off)
  Deadline* deadline = nullptr;    // (null: nothing is watched)
};

}  // namespace asyncps::detail
