// Proves: DC-ASGD (Options::dc_lambda) pushes exactly g + lambda * g*g*(w_now - w_read), where
// w_read is what begin_step pulled and w_now the arena when end_step runs; with lambda = 0 the
// update is bit-identical to plain async. Scenario on 1 server + 2 workers: worker 0 begins a
// step (reads w_read = 1), worker 1 then moves the arena by delta = 2 (a plain push), and worker
// 0 ends its step with gradient g = 0.5, scale -1. Values are exact in float (no rounding).
#include <catch2/catch.hpp>

#include <mpi.h>

#include <vector>

#include "asyncps/parameter_server.h"
#include "asyncps/step_loop.h"
#include "asyncps/worker_client.h"
#include "asyncps_internal/core/vector_ops.h"

using namespace asyncps;

namespace {

constexpr std::size_t kArena = 1000;
constexpr float kInit = 1.0f, kDelta = 2.0f, kG = 0.5f, kScale = -1.0f;

// The arena after the scenario, as seen by worker 0 (every element the same value).
float run(float lambda) {
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm workers = MPI_COMM_NULL;  // the two workers coordinate their order through it
  MPI_Comm_split(MPI_COMM_WORLD, world_rank == 0 ? 0 : 1, world_rank, &workers);
  ParamLayout layout;
  layout.add("w", {static_cast<std::int64_t>(kArena)});
  Session session(MPI_COMM_WORLD, layout, {.num_servers = 1, .dc_lambda = lambda});
  float result = 0;
  if (session.roles().is_server()) {
    ParameterServer ps(session, std::vector<float>(kArena, kInit));
    ps.serve();
  } else {
    WorkerClient w(session);
    StepLoop steps(w);
    std::vector<float> params(kArena), grad(kArena, kG), delta(kArena, kDelta);
    if (w.worker_index() == 0) {
      REQUIRE(steps.begin_step(params, 1));  // w_read
      CHECK(params[0] == kInit);
      MPI_Barrier(workers);                  // worker 1 moves the arena ...
      MPI_Barrier(workers);                  // ... and is done
      CHECK(steps.end_step(grad, kScale).applied);
      w.drain();
      w.pull(params);
      result = params[0];
      bool uniform = true;
      for (float v : params) uniform = uniform && v == params[0];
      CHECK(uniform);
    } else {
      MPI_Barrier(workers);
      w.push(delta, 1.0f);  // arena += delta, complete at the server on return
      MPI_Barrier(workers);
      w.drain();
    }
    w.finish();
  }
  MPI_Comm_free(&workers);
  MPI_Bcast(&result, 1, MPI_FLOAT, 1, MPI_COMM_WORLD);  // worker 0 is rank 1
  return result;
}

}  // namespace

TEST_CASE("the compensation is g + lambda * g*g*(now - read), element by element", "[dc]") {
  const std::vector<float> g = {0.5f, -2.0f, 0.0f, 4.0f}, now = {3.0f, 1.0f, 5.0f, -1.0f},
                           read = {1.0f, 2.0f, 5.0f, 1.0f};
  std::vector<float> out(4);
  asyncps::detail::dc_correct(out.data(), g.data(), now.data(), read.data(), 4, 0.25f);
  CHECK(out == std::vector<float>{0.5f + 0.25f * 0.25f * 2.0f, -2.0f + 0.25f * 4.0f * -1.0f, 0.0f, 4.0f + 0.25f * 16.0f * -2.0f});
}

TEST_CASE("DC-ASGD pushes the compensated gradient; lambda 0 is plain async, bit for bit", "[mpi][dc]") {
  const float plain = run(0.0f);
  CHECK(plain == kInit + kDelta + kScale * kG);  // 1 + 2 - 0.5
  const float lambda = 0.25f;
  const float compensated = run(lambda);
  // w_now - w_read = delta: g + lambda g^2 delta = 0.5 + 0.25 * 0.25 * 2 = 0.625
  CHECK(compensated == kInit + kDelta + kScale * (kG + lambda * kG * kG * kDelta));
  CHECK(compensated != plain);
}
