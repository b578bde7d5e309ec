// defines: asyncps::detail::SessionWindows, open_windows
// The windows of a session, created in the same order on every rank (creation is collective):
//   params:  servers expose their shard (floats), workers 0 bytes
//   control: rank 0 exposes the control block (int64), the rest 0 bytes
//   accum:   sync mode only: servers expose a shard-sized buffer the round's updates add into
//   shadow:  servers expose a shard-sized copy of the chief's EMA shadow (MPI_REPLACE writes)
//   rows:    only where the layout has embedding tables: servers expose their rows of every
//            table (ChannelConfig::row_plan), workers 0 bytes
#pragma once
#include <mpi.h>

#include "transport/channel_config.h"
#include "transport/window.h"

namespace asyncps::detail {

// The windows and, on each, this rank's MPI_Win_lock_all epoch for the session's life (servers
// and workers alike: one passive-target epoch, flushed per operation). The locks are declared
// after the windows, so they end first.
struct SessionWindows {
  Window params;
  Window control;
  Window accum;  // empty unless Mode::Sync
  Window shadow;
  Window rows;  // empty unless the layout has tables
  LockAll lock_params, lock_control, lock_accum, lock_shadow, lock_rows;
  void end_epochs();  // early (a worker's finish), throwing on error
  // Collective, at the job's end only (the end of ParameterServer::serve() and of
  // WorkerClient::finish(), where every rank is): ends the epochs still open and frees the
  // windows, in the same order on every rank. Windows never closed are abandoned.
  void close();
};

// Collective over config.comm: creates the windows (same order on every rank) and opens the epochs.
SessionWindows open_windows(const ChannelConfig& config);

}  // namespace asyncps::detail
