// A complete minimal libasyncps program. It is also the downstream test of the installed
// package: tests/downstream_test.sh builds it against find_package(asyncps) and pkg-config and
// runs it under `mpirun -np 3`. docs/USING.md shows this file verbatim (a ctest keeps them equal).
//
// The model: y = w*x + b, fitted to y = 3x - 2 by asynchronous SGD. Rank 0 serves the two
// parameters; every other rank is a worker that pulls them, computes the gradient of the mean
// squared error on its own points and pushes it, until 400 updates have been applied in all.
// The host program owns MPI: it calls MPI_Init and MPI_Finalize itself, and the library must
// leave MPI alone (it neither initialises nor finalises it).
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <span>
#include <vector>

#include "asyncps/asyncps.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);  // the host program initialises MPI ...
  int failed = 0;
  {
    asyncps::MpiEnvironment mpi(&argc, &argv);  // ... so the library only uses it
    try {
      if (mpi.owns_mpi()) throw asyncps::Error("MpiEnvironment took over the host's MPI");

      asyncps::ParamLayout layout;  // every rank registers the same tensors in the same order
      layout.add("w", {1});
      layout.add("b", {1});
      asyncps::Session session(MPI_COMM_WORLD, layout, {.num_servers = 1});  // collective
      const std::int64_t steps = 400;

      if (session.roles().is_server()) {
        const std::vector<float> initial(layout.size(), 0.0f);  // the whole arena
        asyncps::ParameterServer server(session, initial);
        server.serve();  // returns once every worker has called finish()
      } else {
        asyncps::WorkerClient worker(session);
        std::vector<float> params(layout.size()), grad(layout.size());
        std::span<float> w = layout.view(std::span<float>(params), "w");  // views into the arena
        std::span<float> b = layout.view(std::span<float>(params), "b");
        std::span<float> dw = layout.view(std::span<float>(grad), "w");
        std::span<float> db = layout.view(std::span<float>(grad), "b");
        const int k = session.roles().worker_index(), n = 16;
        while (worker.claim_step(steps)) {  // exactly `steps` updates in all, however many workers
          worker.pull(params);              // params = the arena now
          dw[0] = db[0] = 0.0f;
          for (int i = 0; i < n; ++i) {     // this worker's points: x in [-1, 1], y = 3x - 2
            const float x = -1.0f + 2.0f * (i + 0.5f * k / session.roles().num_workers()) / n;
            const float err = w[0] * x + b[0] - (3.0f * x - 2.0f);
            dw[0] += 2.0f * err * x / n;    // d/dw mean(err^2)
            db[0] += 2.0f * err / n;        // d/db mean(err^2)
          }
          worker.push(grad, -0.1f);         // arena += -0.1 * grad
        }
        worker.drain();  // every worker is done updating: the arena is final
        if (session.roles().is_chief()) {
          worker.pull(params);
          const std::int64_t applied = worker.global_step();
          std::printf("%d worker(s), %lld updates: w = %.4f, b = %.4f (want 3, -2)\n",
                      session.roles().num_workers(), static_cast<long long>(applied), w[0], b[0]);
          failed = applied != steps || std::fabs(w[0] - 3.0f) > 1e-3f || std::fabs(b[0] + 2.0f) > 1e-3f;
        }
        worker.finish();  // lets the servers' serve() return
      }
    } catch (const std::exception& e) {
      asyncps::abort_job(e.what());  // one line on stderr, then MPI_Abort: no rank is left waiting
    }
  }  // the library's objects are gone; MPI is still the host's, and still up
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (finalized) asyncps::abort_job("the library finalised the host's MPI");
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();  // ... and finalises it
  return failed;
}
