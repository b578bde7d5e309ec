// defines: mnist_async::run_server — a server rank's part in the MNIST job: it draws the initial
// arena, serves its shard until every worker is done, and reports its CPU and the final save
#pragma once
#include "asyncps/session.h"
#include "options.h"

namespace mnist_async {

// Returns the process's exit code: 0, or 3 when a worker halted the job.
int run_server(const Config& config, asyncps::Session& session);

}  // namespace mnist_async
