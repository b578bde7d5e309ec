// defines: open_windows, SessionWindows::end_epochs, close
#include "transport/session_windows.h"

#include "core/check.h"
#include "transport/window_creation_lock.h"

namespace asyncps::detail {

SessionWindows open_windows(const ChannelConfig& config) {
  const Roles& roles = *config.roles;
  const MPI_Comm comm = config.comm;
  const std::size_t shard_bytes = roles.is_server() ? config.plan->shard(roles.rank).size * sizeof(float) : 0;
  const std::size_t ctrl_bytes = roles.rank == kControlRank ? config.control_slots * sizeof(std::int64_t) : 0;
  const std::size_t row_bytes =
      roles.is_server() && !config.row_plan->empty() ? config.row_plan->server_floats(roles.rank) * sizeof(float) : 0;
  const WindowPart parts[] = {{"parameter", shard_bytes},
                              {"control", ctrl_bytes},
                              {"accumulation", config.sync_accumulation ? shard_bytes : 0},
                              {"EMA shadow", shard_bytes},
                              {"embedding table", row_bytes}};
  check_host_memory(comm, parts);  // (all of them: none is allocated before a refusal)
  SessionWindows w;
  const WindowCreationLock one_session_at_a_time(comm);  // (Open MPI 4's shared-memory file names)
  w.params = Window(comm, shard_bytes, sizeof(float), "parameter");
  w.control = Window(comm, ctrl_bytes, sizeof(std::int64_t), "control");
  if (config.sync_accumulation) w.accum = Window(comm, shard_bytes, sizeof(float), "accumulation");
  w.shadow = Window(comm, shard_bytes, sizeof(float), "EMA shadow", /*sum_and_no_op_only=*/false);
  if (!config.row_plan->empty()) w.rows = Window(comm, row_bytes, sizeof(float), "embedding table");
  w.lock_params = LockAll(w.params.get());
  w.lock_control = LockAll(w.control.get());
  if (w.accum.get() != MPI_WIN_NULL) w.lock_accum = LockAll(w.accum.get());
  w.lock_shadow = LockAll(w.shadow.get());
  if (w.rows.get() != MPI_WIN_NULL) w.lock_rows = LockAll(w.rows.get());
  return w;
}

void SessionWindows::end_epochs() {
  lock_rows.unlock();
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
  rows.free();  // (null where the layout has no tables: on every rank alike)
}

}  // namespace asyncps::detail
