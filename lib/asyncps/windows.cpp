// defines: open_windows, wait_sleeping
#include "windows.h"

#include <chrono>
#include <thread>

#include "check.h"
#include "control_block.h"

namespace asyncps::detail {

SessionWindows open_windows(const Session& session) {
  const Roles& roles = session.roles();
  const std::size_t shard_bytes = roles.is_server() ? session.plan().shard(roles.rank).size * sizeof(float) : 0;
  const std::size_t ctrl_bytes =
      roles.rank == ctrl::kControlRank ? ctrl::slots(roles.num_workers()) * sizeof(std::int64_t) : 0;
  SessionWindows w;
  w.params = Window(session.comm(), shard_bytes, sizeof(float), "parameter");
  w.control = Window(session.comm(), ctrl_bytes, sizeof(std::int64_t), "control");
  return w;
}

void wait_sleeping(MPI_Request& request, int poll_us, void (*pump)(void*), void* arg) {
  for (;;) {
    int done = 0;
    ASYNCPS_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (pump) pump(arg);
    std::this_thread::sleep_for(std::chrono::microseconds(poll_us));
  }
}

}  // namespace asyncps::detail
