// defines: asyncps::detail::check_thread
// The library runs under MPI_THREAD_FUNNELED: only the thread that created a Session
// (Session::owner_thread) may call it, its servers and its workers. Every public call checks.
#pragma once

#include "asyncps/session.h"

namespace asyncps::detail {

// Throws ConfigError unless called on `session`'s owner thread (`call` names the public call
// in the message).
void check_thread(const Session& session, const char* call);

}  // namespace asyncps::detail
