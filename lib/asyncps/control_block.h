// defines: asyncps::detail::ctrl (slot indices of the control block)
// The control block is an array of int64 in a window on server 0 (rank 0):
//   [kGlobalStep]   global step, moved by MPI_Fetch_and_op(MPI_SUM) once per applied update
//   [kHalt]         non-zero: a worker asked the job to stop (begin_step reads it with the step)
//   [kDone]         workers that have drained
//   [kBeat0]        server 0's heartbeat: it adds 1 about every beat interval while it serves
//                   (read by every claim, next to the step: workers notice a stalled server 0)
//   [kVersion]      sync mode: rounds applied so far (workers wait for it to move)
//   [kArrivals]     sync mode: updates added to the accumulation buffer in this round
//   [kSaveRequest]  checkpoints: the step of the save server 0 asked for (0: none yet)
//   [kSaveAcks]     checkpoints: servers other than 0 that have written their shard of it
//   [kSaveFailures] checkpoints: servers that acked the requested save without a shard (a failed
//                   write: the save is dropped with a warning, training goes on)
//   [kShadowValid]  1 once the servers hold an EMA shadow (restored or stored by the chief)
//   [kClocks + w]   worker w's clock: steps it has completed (SSP reads the minimum)
//   [sums(W) + s]   checkpoints: the checksum of server s's shard of the requested save (uint64)
//   [beats(W,S) + r] rank r's heartbeat (r != 0): it adds 1 about every beat interval while it
//                   is live (servers from their progress loop, workers per step and while they
//                   wait); kFinished added once it has finished. Server 0 watches them.
// Every operation on it is MPI_SUM or MPI_NO_OP (the window promises same_op_no_op).
#pragma once
#include <cstddef>

namespace asyncps::detail::ctrl {
inline constexpr int kGlobalStep = 0;
inline constexpr int kHalt = 1;
inline constexpr int kDone = 2;
inline constexpr int kBeat0 = 3;
inline constexpr int kVersion = 4;
inline constexpr int kArrivals = 5;
inline constexpr int kSaveRequest = 6;
inline constexpr int kSaveAcks = 7;
inline constexpr int kShadowValid = 8;
inline constexpr int kSaveFailures = 9;
inline constexpr int kClocks = 10;
inline constexpr int kControlRank = 0;
inline constexpr long long kFinished = 1ll << 60;  // added to a heartbeat slot: that rank is done
inline int sums(int num_workers) { return kClocks + num_workers; }
inline int beats(int num_workers, int num_servers) { return kClocks + num_workers + num_servers; }
inline std::size_t slots(int num_workers, int num_servers) {
  return static_cast<std::size_t>(beats(num_workers, num_servers) + num_workers + num_servers);
}
}  // namespace asyncps::detail::ctrl
