// Proves: with S = 2 servers and tensors that do not divide evenly, every element lands on the
// server the plan names, and pull returns exactly what was pushed.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "asyncps/parameter_server.h"
#include "asyncps/worker_client.h"
#include "test_helpers.h"

using namespace asyncps;

namespace {
ParamLayout odd_layout() {
  ParamLayout l;
  l.add("a", {7});
  l.add("b", {13, 11});
  l.add("c", {1001});
  l.add("d", {5});
  return l;  // 1156 floats: shards of 578 cut tensor c in two
}
float initial_value(std::size_t i) { return static_cast<float>(i); }
float increment(int w, std::size_t i) { return static_cast<float>((w + 1) * 1000 + static_cast<int>(i % 7)); }
constexpr int kPushes = 50;
}  // namespace

TEST_CASE("every element lands on the right server and pull returns what was pushed", "[mpi][sharding]") {
  ParamLayout layout = odd_layout();
  const std::size_t n = layout.size();
  Session session(MPI_COMM_WORLD, layout, {.num_servers = 2});
  const Roles& roles = session.roles();
  REQUIRE(roles.num_servers == 2);
  // tensor "c" is split between the two servers
  const auto& c = layout.tensor("c");
  CHECK(session.plan().server_of(c.offset) == 0);
  CHECK(session.plan().server_of(c.offset + c.size - 1) == 1);

  auto expected = [&](std::size_t i) {
    float e = initial_value(i);
    for (int w = 0; w < roles.num_workers(); ++w) e += kPushes * increment(w, i);
    return e;
  };

  if (roles.is_server()) {
    std::vector<float> init(n);
    for (std::size_t i = 0; i < n; ++i) init[i] = initial_value(i);
    ParameterServer ps(session, init);
    if (roles.rank != 0)  // while serving, only server 0 holds the count ...
      CHECK_THROWS_WITH(ps.global_step(), Catch::Contains("only server 0 holds the control block while serving"));
    ps.serve();
    CHECK(ps.global_step() == ps.final_step());  // ... after serve(), every server has the final step
    const Shard& sh = ps.shard();
    CHECK(sh.size == session.plan().shard(roles.rank).size);
    auto mem = ps.snapshot();
    REQUIRE(mem.size() == sh.size);
    std::size_t wrong = 0;
    for (std::size_t j = 0; j < sh.size; ++j) wrong += mem[j] != expected(sh.offset + j);
    CHECK(wrong == 0);
  } else {
    WorkerClient client(session);
    std::vector<float> params(n), grad(n);
    auto wait_for_step = [&](std::int64_t step) {
      while (client.global_step() < step) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    };
    // worker 0 reads the initial arena before anyone pushes (the step counter is the signal)
    if (roles.worker_index() == 0) {
      client.pull(params);
      std::size_t wrong_initial = 0;
      for (std::size_t i = 0; i < n; ++i) wrong_initial += params[i] != initial_value(i);
      CHECK(wrong_initial == 0);
      client.next_step();
    }
    wait_for_step(1);
    for (std::size_t i = 0; i < n; ++i) grad[i] = increment(roles.worker_index(), i);
    for (int k = 0; k < kPushes; ++k) client.push(grad, 1.0f);
    // wait until every worker's pushes are in: each moves the step once when it is done
    client.next_step();
    wait_for_step(1 + roles.num_workers());
    client.pull(params);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += params[i] != expected(i);
    CHECK(wrong == 0);
    client.finish();
  }
}
