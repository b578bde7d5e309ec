// A minimal libasyncps program, started wrongly on purpose by the bad-configuration tests:
//   bad_config [--ps S] [--mismatch_rank R] [--checkpoint_dir DIR] [--save_secs_rank R]
// (with --checkpoint_dir it runs one step and leaves a checkpoint of its 100-float model: a
// foreign checkpoint for mnist_async's tests)
// It must print one clear line and exit non-zero on every rank within seconds.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "asyncps/asyncps.h"

int main(int argc, char** argv) {
  asyncps::MpiEnvironment mpi(&argc, &argv);
  try {
    asyncps::Options options;
    int mismatch_rank = -1, save_secs_rank = -1, relative_rank = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
      if (!std::strcmp(argv[i], "--ps")) options.num_servers = std::atoi(argv[i + 1]);
      if (!std::strcmp(argv[i], "--mismatch_rank")) mismatch_rank = std::atoi(argv[i + 1]);
      if (!std::strcmp(argv[i], "--checkpoint_dir")) options.checkpoint.dir = argv[i + 1];
      if (!std::strcmp(argv[i], "--save_secs_rank")) save_secs_rank = std::atoi(argv[i + 1]);
      if (!std::strcmp(argv[i], "--relative_rank")) relative_rank = std::atoi(argv[i + 1]);
    }
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == save_secs_rank) options.checkpoint.save_secs = 1;  // the others keep 60
    if (relative_rank >= 0) {  // every rank scales by staleness; one of them relative to the mean
      options.staleness_lr = true;
      options.staleness_lr_relative = rank == relative_rank;
    }
    asyncps::ParamLayout layout;
    layout.add("w", {100});
    if (rank == mismatch_rank) layout.add("b", {1});
    asyncps::Session session(MPI_COMM_WORLD, layout, options);
    if (session.roles().is_server()) {
      asyncps::ParameterServer ps(session, std::vector<float>(layout.size()));
      ps.serve();
    } else {
      asyncps::WorkerClient w(session);
      std::vector<float> p(layout.size());
      w.pull(p);
      if (w.claim_step(1)) w.push(p, 1.f);  // one step, so the final checkpoint has something to save
      w.finish();
    }
  } catch (const std::exception& e) {
    asyncps::abort_job(e.what());
  }
  return 0;
}
