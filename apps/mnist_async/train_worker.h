// defines: mnist_async::run_worker, mnist_async::run_server
// One rank's part in the MNIST job: the server serves its shard until every worker is done;
// a worker pulls, computes a gradient, pushes -lr*grad and claims a global step until the job
// has taken --training_steps steps. The chief (first worker) also logs, keeps the EMA, writes
// metrics and evaluates at the end.
#pragma once
#include "asyncps/session.h"
#include "options.h"

namespace mnist_async {

asyncps::ParamLayout mnist_layout();
void run_server(const Config& config, asyncps::Session& session);
void run_worker(const Config& config, asyncps::Session& session);

}  // namespace mnist_async
