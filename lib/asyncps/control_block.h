// defines: asyncps::detail::ctrl (slot indices of the control block)
// The control block is an array of int64 in a window on server 0 (rank 0):
//   [kGlobalStep]  global step, moved by MPI_Fetch_and_op(MPI_SUM) once per applied push
//   [kDone]        workers that have finished
//   [kVersion]     sync mode: updates applied so far (workers wait for it to move)
//   [kArrivals]    sync mode: gradients added to the accumulation buffer in this round
//   [kClocks + w]  worker w's clock: local steps it has completed (SSP reads the minimum)
#pragma once
#include <cstddef>

namespace asyncps::detail::ctrl {
inline constexpr int kGlobalStep = 0;
inline constexpr int kDone = 1;
inline constexpr int kVersion = 2;
inline constexpr int kArrivals = 3;
inline constexpr int kClocks = 4;
inline constexpr int kControlRank = 0;
inline std::size_t slots(int num_workers) { return static_cast<std::size_t>(kClocks + num_workers); }
}  // namespace asyncps::detail::ctrl
