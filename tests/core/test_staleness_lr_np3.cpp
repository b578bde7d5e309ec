// Proves: Options::staleness_lr scales an update by 1/max(1, tau)^power before it reaches the
// server, with tau the update's staleness, in exact arithmetic on a toy layout. 1 server + 2
// workers; worker A begins a step (claims global step 1), worker B then takes 4 whole steps
// (claims 2..5), and only then A ends its step: A's staleness is exactly 4. Every gradient
// element is 4 (A) or 1 (B), every scale -1: B's updates land unscaled (staleness 0), A's is
// scaled by 1/4^0.5 = 1/2, so each element ends at -(4 * 1 + 4 / 2) = -6 (-8 if the scaling were
// lost), and A's staleness histogram holds the one 4.
#include <catch2/catch.hpp>

#include <mpi.h>

#include <vector>

#include "asyncps/parameter_server.h"
#include "asyncps/step_loop.h"
#include "asyncps/worker_client.h"

using namespace asyncps;

TEST_CASE("staleness_lr: an update 4 steps stale lands scaled by 1/4^0.5, fresh ones unscaled", "[mpi][staleness]") {
  constexpr std::size_t kN = 1000;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm workers = MPI_COMM_NULL;  // ranks 1 and 2, to order A's and B's steps
  MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : 1, rank, &workers);
  ParamLayout layout;
  layout.add("p", {static_cast<std::int64_t>(kN)});
  Options o;
  o.staleness_lr = true;
  o.staleness_lr_power = 0.5;
  Session session(MPI_COMM_WORLD, layout, o);
  REQUIRE(session.roles().num_workers() == 2);
  if (session.roles().is_server()) {
    ParameterServer ps(session, std::vector<float>(kN, 0.f));
    ps.serve();
    const auto shard = ps.snapshot();
    std::size_t wrong = 0;
    for (float v : shard) wrong += v != -6.f;
    CAPTURE(shard[0]);
    CHECK(wrong == 0);
  } else {
    const bool a = session.roles().worker_index() == 0;
    WorkerClient client(session);
    StepLoop steps(client);
    std::vector<float> params(kN), grad(kN, a ? 4.f : 1.f);
    if (a) REQUIRE(steps.begin_step(params, 100));  // claims global step 1
    MPI_Barrier(workers);
    if (!a)
      for (int k = 0; k < 4; ++k) {  // claims 2..5, each fresh when it lands
        REQUIRE(steps.begin_step(params, 100));
        REQUIRE(steps.end_step(grad, -1.f));
      }
    client.drain();
    MPI_Barrier(workers);
    if (a) {
      REQUIRE(steps.end_step(grad, -1.f));  // 4 steps were claimed since A's
      client.drain();
      CHECK(steps.staleness().count() == 1);
      CHECK(steps.staleness().max() == 4);
    } else {
      CHECK(steps.staleness().max() == 0);
    }
    client.finish();
  }
  MPI_Comm_free(&workers);
}
