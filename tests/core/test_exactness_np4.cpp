// Proves: concurrent pushes from 3 workers are never lost. Each worker pushes PUSHES updates of
// known small integers into an ARENA-float arena; every float sum stays below 2^24, so the
// final arena must equal the expected sum exactly. Also run with --mca osc pt2pt (ctest
// core_progress_pt2pt_np3), where nothing completes unless the server inside serve() enters MPI.
#include <catch2/catch.hpp>

#include "asyncps/parameter_server.h"
#include "asyncps/worker_client.h"
#include "test_helpers.h"

using namespace asyncps;

namespace {
float initial_value(std::size_t i) { return static_cast<float>(i % 3); }
// the update worker w adds per push to element i
float increment(int w, std::size_t i) { return static_cast<float>((w + 1) * (static_cast<int>(i % 5) + 1)); }
}  // namespace

TEST_CASE("accumulated pushes from every worker land exactly once", "[mpi][exactness]") {
  const std::size_t arena = test::env_size("ASYNCPS_TEST_ARENA", 1u << 20);
  // (under the sanitizers 500: each push's finiteness check reads the whole arena, instrumented)
  const std::size_t pushes = test::env_size("ASYNCPS_TEST_PUSHES", test::sanitized() ? 500 : 10000);
  ParamLayout layout;
  layout.add("arena", {static_cast<std::int64_t>(arena)});
  Session session(MPI_COMM_WORLD, layout, {.num_servers = 1});
  const Roles& roles = session.roles();

  if (roles.is_server()) {
    std::vector<float> init(arena);
    for (std::size_t i = 0; i < arena; ++i) init[i] = initial_value(i);
    ParameterServer ps(session, init);
    ps.serve();
    CHECK(ps.polls() > 0);  // it entered MPI while workers pushed
    auto shard = ps.snapshot();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < shard.size(); ++i) {
      float expect = initial_value(i);
      for (int w = 0; w < roles.num_workers(); ++w) expect += static_cast<float>(pushes) * increment(w, i);
      wrong += shard[i] != expect;
    }
    CHECK(wrong == 0);
  } else {
    WorkerClient client(session);
    const int w = roles.worker_index();
    std::vector<float> grad(arena);
    for (std::size_t i = 0; i < arena; ++i) grad[i] = increment(w, i);
    for (std::size_t k = 0; k < pushes; ++k) client.push(grad, 1.0f);
    client.finish();
    CHECK(client.stats().pushes == pushes);
  }
}
