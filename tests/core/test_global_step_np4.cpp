// Proves: next_step() counts every call exactly once across workers: the values returned to
// the 3 workers are exactly 1..3*N, each once, and server 0 ends with 3*N.
#include <catch2/catch.hpp>

#include <algorithm>

#include "asyncps/parameter_server.h"
#include "asyncps/worker_client.h"
#include "test_helpers.h"

using namespace asyncps;

TEST_CASE("the global step counts every next_step exactly once", "[mpi][step]") {
  constexpr int kSteps = 2000;
  ParamLayout layout;
  layout.add("x", {16});
  Session session(MPI_COMM_WORLD, layout, {});
  std::vector<long long> seen;
  std::int64_t server_final = -1;
  if (session.roles().is_server()) {
    ParameterServer ps(session, std::vector<float>(16, 0.f));
    ps.serve();
    server_final = ps.global_step();
  } else {
    WorkerClient client(session);
    for (int i = 0; i < kSteps; ++i) seen.push_back(client.next_step());
    CHECK(std::is_sorted(seen.begin(), seen.end()));  // each worker sees it move forward
    client.finish();
  }
  auto all = test::gather_to_all(seen);
  const long long total = static_cast<long long>(session.roles().num_workers()) * kSteps;
  REQUIRE(all.size() == static_cast<std::size_t>(total));
  std::sort(all.begin(), all.end());
  std::size_t wrong = 0;
  for (long long i = 0; i < total; ++i) wrong += all[static_cast<std::size_t>(i)] != i + 1;
  CHECK(wrong == 0);
  if (session.roles().is_server()) CHECK(server_final == total);
}
