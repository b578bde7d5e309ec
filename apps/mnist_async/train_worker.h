// defines: mnist_async::mnist_layout, mnist_async::run_worker
// A worker rank's part in the MNIST job (server.h has the server's): a worker pulls, computes a gradient, pushes -lr*grad and claims a global step until the job
// has taken --training_steps steps. The chief (first worker) also logs, keeps the EMA, writes
// metrics and evaluates at the end.
#pragma once
#include "asyncps/session.h"
#include "options.h"

namespace mnist_async {

asyncps::ParamLayout mnist_layout();
// Returns the process's exit code: 0, or 3 when a worker halted the job.
int run_worker(const Config& config, asyncps::Session& session);

}  // namespace mnist_async
