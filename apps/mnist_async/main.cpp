// mnist_async: the TF1 tutorial's asynchronous MNIST training, on libasyncps.
//   mpirun -np 2 --hostfile hostfiles/localhost build/bin/mnist_async [--help]
// Every fatal error prints one line and aborts every rank (no rank is left waiting).
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <string_view>
#include <string>

#include "app_cli.h"
#include "asyncps/asyncps.h"
#include "options.h"
#include "evaluate.h"
#include "server.h"
#include "train_worker.h"
#include "writable_dir.h"  // (apps/common)

int main(int argc, char** argv) {
  asyncps::MpiEnvironment mpi(&argc, &argv);
  // the library's lines, in this program's flag names
  app_cli::install_log_sink(mnist_async::with_flag_names);
  try {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const auto config = mnist_async::parse_config(argc, argv, /*print_help=*/rank == 0);
    if (!config) return 0;  // --help
    app_cli::refuse_flags_differing_between_ranks(MPI_COMM_WORLD, config->shared_flags);  // (an MPMD launch)
    if (config->eval_only) return rank == 0 ? mnist_async::run_eval(*config) : 0;
    app_cli::check_writable_dir(config->logdir, "--logdir");  // every rank: its host's logdir
    if (!config->export_dir.empty() && rank == config->library.num_servers)  // the chief exports at the end: fail now
      app_cli::check_writable_dir(config->export_dir, "--export_dir");
    asyncps::Session session(MPI_COMM_WORLD, mnist_async::mnist_layout(), config->library);
    // exit code 3 on every rank when a worker halted the job (--halt_on_nonfinite), 143 when
    // SIGTERM stopped it (after the final checkpoint)
    return session.roles().is_server() ? mnist_async::run_server(*config, session)
                                       : mnist_async::run_worker(*config, session);
  } catch (const std::exception& e) {
    asyncps::abort_job(mnist_async::with_flag_names(e.what()).c_str());
  }
  return 0;
}
