// Proves: request-based pushes and pulls (tickets) complete and are exact when a caller keeps
// at most 11 in flight, waiting on the oldest, and completes the rest with wait_all; a push's
// gradient buffer may be reused as soon as push_async returns; a ticket already waited on is
// refused.
#include <catch2/catch.hpp>

#include <deque>

#include "asyncps/error.h"
#include "asyncps/parameter_server.h"
#include "asyncps/worker_client.h"

using namespace asyncps;

TEST_CASE("push_async and pull_async with tickets are exact", "[mpi][tickets]") {
  constexpr std::size_t kN = 9098;
  constexpr int kPushes = 500;
  ParamLayout layout;
  layout.add("p", {static_cast<std::int64_t>(kN)});
  Session session(MPI_COMM_WORLD, layout, {.pull = PullMethod::Get});
  const int workers = session.roles().num_workers();
  if (session.roles().is_server()) {
    ParameterServer ps(session, std::vector<float>(kN, 1.f));
    ps.serve();
    auto mem = ps.snapshot();
    std::size_t wrong = 0;
    for (float v : mem) wrong += v != 1.f + static_cast<float>(workers * kPushes * 2);
    CHECK(wrong == 0);
  } else {
    WorkerClient client(session);
    std::vector<float> grad(kN), params(kN);
    std::deque<Ticket> inflight;
    for (int k = 0; k < kPushes; ++k) {
      std::fill(grad.begin(), grad.end(), 1.f);
      inflight.push_back(client.push_async(grad, 2.f));
      std::fill(grad.begin(), grad.end(), -7.f);  // reusing the buffer must not change the push
      if (inflight.size() > 10) {                 // bound what is in flight (ps-lite's habit)
        client.wait(inflight.front());
        inflight.pop_front();
      }
    }
    client.wait_all();
    CHECK_THROWS_AS(client.wait(inflight.front()), Error);  // already completed
    Ticket t = client.pull_async(params);
    client.wait(t);
    CHECK(params[0] >= 1.f + 2.f * kPushes);  // at least our own pushes are visible
    client.finish();
  }
}
