// Proves: in SSP mode no worker ever starts a step more than s clocks ahead of the slowest,
// checked from the clocks each worker read when it began a step (not from timing) — with one
// worker slowed on purpose, so the fast ones really had to wait.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "asyncps/parameter_server.h"
#include "asyncps/worker_client.h"

using namespace asyncps;

TEST_CASE("ssp: the clock gap never exceeds the staleness bound", "[mpi][ssp]") {
  constexpr int kStaleness = 2;
  constexpr std::int64_t kSteps = 240;
  ParamLayout layout;
  layout.add("w", {256});
  Session session(MPI_COMM_WORLD, layout, {.mode = Mode::Ssp, .staleness = kStaleness});
  if (session.roles().is_server()) {
    ParameterServer ps(session, std::vector<float>(256, 0.f));
    ps.serve();
    return;
  }
  WorkerClient client(session);
  const bool slow = client.worker_index() == session.roles().num_workers() - 1;
  std::vector<float> params(256), grad(256, 1.f);
  std::int64_t mine = 0;
  while (auto begun = client.begin_step(params, kSteps)) {
    if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (client.end_step(grad, -0.001f)) ++mine;
  }
  const WorkerStats st = client.stats();
  INFO("worker " << client.worker_index() << ": " << mine << " steps, max clock gap " << st.max_clock_gap
                 << ", waited " << st.mode_waits << " times");
  CHECK(st.max_clock_gap <= kStaleness);
  if (!slow) {
    CHECK(st.mode_waits > 0);                   // the bound really held the fast workers back
    CHECK(st.max_clock_gap == kStaleness);      // and they ran up to it
  }
  client.finish();
}
