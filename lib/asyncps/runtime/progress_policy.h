// defines: asyncps::detail::ProgressFacts, ProgressChoice, choose_progress, progress_choice
// The automatic progress policy in one place: how a server lets one-sided operations complete
// (Options::server_progress Auto), the longest it sleeps between entries into MPI
// (Options::server_poll_us -1) and the longest a waiting worker sleeps, chosen from what the
// Session knows of the MPI implementation, the node and the layout, and how the workers' step
// operations complete (transport/completion.h), which goes with the servers' progress. Each choice is a table of
// rows in progress_policy.cpp, the first that applies wins; why each number: docs/DECISIONS.md
// "Server progress: which mode on which node?" and docs/EMBEDDINGS.md "server progress".
#pragma once

#include "asyncps/session.h"
#include "transport/completion.h"

namespace asyncps::detail {

// What the policy is chosen from (each fact as the Session knows it).
struct ProgressFacts {
  bool needs_target = false;              // operations complete only when the server enters MPI
  bool implementation_polls = false;      // the MPI implementation's own choice here: poll, not wake
  bool tables = false;                    // the layout has embedding tables
  bool shared_memory_neighbours = false;  // another rank shares this node over shared memory
  bool node_no_workers = false;           // no worker on this rank's node
};

struct ProgressChoice {
  ServerProgress progress = ServerProgress::Poll;  // never Auto
  int poll_us = 0;                                 // >= 0
  int worker_max_sleep_us = 0;                     // a waiting worker's longest sleep
  const Completion* completion = nullptr;          // how the step's operations complete (never null)
  bool worker_sleeps_on_sockets = false;           // a waiting worker sleeps in poll(2), else spins
};

// requested_*: the Options (Auto and -1 leave the choice to the tables).
ProgressChoice choose_progress(const ProgressFacts& facts, ServerProgress requested, int requested_poll_us,
                               int requested_worker_sleep_us = -1);

// The Session's facts and Options through the tables.
ProgressChoice progress_choice(const Session& session);

}  // namespace asyncps::detail
