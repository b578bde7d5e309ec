// defines: asyncps::detail::choose_progress, progress_choice
#include "runtime/progress_policy.h"

#include "transport/mpi_implementation.h"

namespace asyncps::detail {
namespace {

using F = const ProgressFacts&;

// How a server lets operations complete, when the Options leave it to the Session.
struct ProgressRow {
  bool (*applies)(F);
  ServerProgress progress;
};
constexpr ProgressRow kProgress[] = {
    // Embedding tables move thousands of small operations per step; Open MPI's pt2pt keeps part
    // of them after a server's entry into MPI with no new bytes to wake it, so a woken server
    // stalls the tables' traffic
    {[](F f) { return f.tables && f.needs_target; }, ServerProgress::Poll},
    // the implementation's own choice: operations complete without the server (Open MPI on one
    // node), or a poll measured faster than a wake (the MPICH family on one node)
    {[](F f) { return f.implementation_polls; }, ServerProgress::Poll},
    // otherwise sleep until bytes arrive on one of the process's sockets
    {[](F) { return true; }, ServerProgress::Wake},
};

// The longest a server sleeps between entries into MPI, when the Options leave it to the Session.
struct PollRow {
  bool (*applies)(F, ServerProgress);
  int poll_us;
};
constexpr PollRow kPoll[] = {
    // woken, but another rank on the node talks over shared memory, which wakes no socket
    {[](F f, ServerProgress p) { return p == ServerProgress::Wake && f.shared_memory_neighbours; }, 1000},
    // polling for tables' operations that wait for it, with no worker's core on its node to take
    {[](F f, ServerProgress p) { return p == ServerProgress::Poll && f.needs_target && f.tables && f.node_no_workers; },
     0},
    // polling for operations that every worker waits for: short
    {[](F f, ServerProgress p) { return p == ServerProgress::Poll && f.needs_target; }, 50},
    // a poll (or a wake's timeout) that only serves the clock and the heartbeats: long
    {[](F, ServerProgress) { return true; }, 10000},
};

// The longest a waiting worker sleeps between looks at its operations.
struct WorkerRow {
  bool (*applies)(F);
  int max_sleep_us;
};
constexpr WorkerRow kWorker[] = {
    // a rank on its node answers over shared memory, which wakes no socket: look often
    {[](F f) { return f.shared_memory_neighbours; }, 100},
    {[](F) { return true; }, 1000},
};

// How the workers' step operations complete, and whether a waiting worker sleeps on the sockets.
// A woken server enters MPI only when bytes arrive: request-based operations complete by their
// replies, with no flush round trip, and the worker sleeps until they come. A polling server (or
// none needed): plain operations and one flush (a hardware fetch-and-op on osc rdma), spinning.
struct CompletionRow {
  bool (*applies)(ServerProgress);
  const Completion& (*completion)();
  bool sleeps_on_sockets;
};
const CompletionRow kCompletion[] = {
    {[](ServerProgress p) { return p == ServerProgress::Wake; }, request_completion, true},
    {[](ServerProgress) { return true; }, flush_completion, false},
};

}  // namespace

ProgressChoice choose_progress(const ProgressFacts& facts, ServerProgress requested, int requested_poll_us,
                               int requested_worker_sleep_us) {
  ProgressChoice c;
  c.progress = requested;
  if (requested == ServerProgress::Auto)
    for (const auto& row : kProgress)
      if (row.applies(facts)) {
        c.progress = row.progress;
        break;
      }
  c.poll_us = requested_poll_us;
  if (requested_poll_us < 0)
    for (const auto& row : kPoll)
      if (row.applies(facts, c.progress)) {
        c.poll_us = row.poll_us;
        break;
      }
  c.worker_max_sleep_us = requested_worker_sleep_us;
  if (requested_worker_sleep_us < 0)
    for (const auto& row : kWorker)
      if (row.applies(facts)) {
        c.worker_max_sleep_us = row.max_sleep_us;
        break;
      }
  for (const auto& row : kCompletion)
    if (row.applies(c.progress)) {
      c.completion = &row.completion();
      c.worker_sleeps_on_sockets = row.sleeps_on_sockets;
      break;
    }
  return c;
}

ProgressChoice progress_choice(const Session& session) {
  ProgressFacts f;
  f.needs_target = session.rma_needs_target();
  f.implementation_polls = mpi_implementation().server_polls(session.single_node());
  f.tables = !session.layout().tables().empty();
  f.shared_memory_neighbours = session.node_ranks() > 1 && mpi_implementation().shared_memory_on_node();
  f.node_no_workers = session.node_has_no_workers();
  return choose_progress(f, session.options().server_progress, session.options().server_poll_us,
                         session.options().wait_max_sleep_us);
}

}  // namespace asyncps::detail
