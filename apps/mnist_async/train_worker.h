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
// Each returns the process's exit code: 0, or 3 when a worker halted the job.
int run_server(const Config& config, asyncps::Session& session);
int run_worker(const Config& config, asyncps::Session& session);
// --eval_only: evaluates a checkpoint (plain and EMA) on validation and test; returns the exit code.
int run_eval(const Config& config);
// Creates `dir` if needed and checks a file can be written in it; ConfigError naming `flag`
// otherwise (--logdir on every rank; --export_dir on the chief, before training, not after).
void check_writable_dir(const std::string& dir, const char* flag);

}  // namespace mnist_async
