// mnist_async: the TF1 tutorial's asynchronous MNIST training, on libasyncps.
//   mpirun -np 2 --hostfile hostfiles/localhost build/bin/mnist_async [--help]
// Every fatal error prints one line and aborts every rank (no rank is left waiting).
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <string_view>
#include <initializer_list>
#include <string>
#include <utility>

#include "asyncps/asyncps.h"
#include "options.h"
#include "train_worker.h"

namespace {
// The enum a (validated) flag value names; `otherwise` for the default value.
template <class E>
E choice(const std::string& value, std::initializer_list<std::pair<const char*, E>> named, E otherwise) {
  for (const auto& [name, e] : named)
    if (value == name) return e;
  return otherwise;
}
}  // namespace

int main(int argc, char** argv) {
  asyncps::MpiEnvironment mpi(&argc, &argv);
  // the library's lines, in this program's flag names
  asyncps::set_log_sink([](asyncps::LogLevel level, std::string_view text) {
    const std::string line = mnist_async::with_flag_names(text);
    std::FILE* out = level == asyncps::LogLevel::Info ? stdout : stderr;
    std::fprintf(out, "asyncps: %s%s\n", level == asyncps::LogLevel::Warning ? "warning: " : "", line.c_str());
    std::fflush(out);
  });
  try {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const auto config = mnist_async::parse_config(argc, argv, /*print_help=*/rank == 0);
    if (!config) return 0;  // --help
    if (config->eval_only) return rank == 0 ? mnist_async::run_eval(*config) : 0;
    mnist_async::check_writable_dir(config->logdir, "--logdir");  // every rank: its host's logdir
    if (!config->export_dir.empty() && rank == config->ps)  // the chief exports at the end: fail now
      mnist_async::check_writable_dir(config->export_dir, "--export_dir");
    asyncps::Options options;
    options.num_servers = config->ps;
    options.server_poll_us = config->server_poll_us;
    options.server_progress = choice(config->server_progress, {{"poll", asyncps::ServerProgress::Poll},
                                                               {"wake", asyncps::ServerProgress::Wake}},
                                     asyncps::ServerProgress::Auto);
    options.server_spin_us = config->server_spin_us;
    options.wait_spin_us = config->wait_spin_us;
    options.timeline = config->timeline;
    options.stall_timeout = config->stall_timeout;
    options.mode = choice(config->mode, {{"sync", asyncps::Mode::Sync}, {"ssp", asyncps::Mode::Ssp}}, asyncps::Mode::Async);
    options.staleness = config->staleness;
    options.staleness_lr = config->staleness_lr;
    options.dc_lambda = config->dc_lambda;
    options.overlap = config->overlap;
    options.pull = choice(config->pull, {{"get", asyncps::PullMethod::Get}}, asyncps::PullMethod::GetAccumulate);
    options.checkpoint.dir = config->logdir;
    options.checkpoint.save_secs = config->save_secs;
    options.checkpoint.keep = config->keep_checkpoints;
    options.checkpoint.restart_from = config->restart_from;
    options.checkpoint.restore = !config->no_restore;
    asyncps::Session session(MPI_COMM_WORLD, mnist_async::mnist_layout(), options);
    // exit code 3 on every rank when a worker halted the job (--halt_on_nonfinite)
    return session.roles().is_server() ? mnist_async::run_server(*config, session)
                                       : mnist_async::run_worker(*config, session);
  } catch (const std::exception& e) {
    asyncps::abort_job(mnist_async::with_flag_names(e.what()).c_str());
  }
  return 0;
}
