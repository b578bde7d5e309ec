// defines: asyncps::detail::Arrival
// Who never came to a collective stretch of a rank's start-up (the windows' creation). Every rank
// but 0 tells rank 0 it has come (one empty message on the session's communicator), and rank 0
// waits for them all, sleeping, up to `limit` seconds (0: without a limit), before it enters the
// collective. A rank that never comes (its program never made its ParameterServer or
// WorkerClient, or its start-up outlasts the stall timeout) is named by rank 0 in one line, and
// the job ends: the ranks waiting in the collective could only say that they made no progress.
// Give it a limit just below the stretch's StallWatch, so that rank 0's line comes first where
// rank 0 itself came in time, and no start-up is cut shorter than the watch would cut it.
//
//   Arrival here(job, limit, "creating the windows and restoring");  // rank 0: waits here
//   ... the collective ...
//   here.done();  // after it: the message was received (rank 0 went on)
#pragma once
#include <mpi.h>

#include <string>

#include "core/job_facts.h"

namespace asyncps::detail {

class Arrival {
 public:
  Arrival(const JobFacts& job, double limit, const std::string& what);
  ~Arrival();
  Arrival(const Arrival&) = delete;
  Arrival& operator=(const Arrival&) = delete;
  // Completes this rank's message (rank 0 received it: call it once the collective is over).
  void done();

 private:
  MPI_Request sent_ = MPI_REQUEST_NULL;
};

}  // namespace asyncps::detail
