// defines: check_thread
#include "runtime/owner_thread.h"

#include <string>
#include <thread>

#include "asyncps/error.h"

namespace asyncps::detail {

void check_thread(const Session& session, const char* call) {
  if (std::this_thread::get_id() != session.owner_thread())
    throw ConfigError(std::string(call) +
                      " called from another thread: libasyncps runs under MPI_THREAD_FUNNELED, so only the thread "
                      "that created the Session may call it, its servers and its workers");
}

}  // namespace asyncps::detail
