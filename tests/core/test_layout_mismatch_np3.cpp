// Proves: a layout that differs on one rank is a clear ConfigError on EVERY rank (none hangs in
// a window creation the others never reach), and so is a different number of servers; every
// option the ranks must share is named when one rank is given another value.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "asyncps/error.h"
#include "asyncps/session.h"
#include "test_helpers.h"

using namespace asyncps;

TEST_CASE("a layout that differs on one rank is an error on every rank", "[mpi][config]") {
  ParamLayout layout;
  layout.add("w", {10, 10});
  if (test::world_rank() == 2) layout.add("extra", {3});
  CHECK_THROWS_WITH(Session(MPI_COMM_WORLD, layout, {}), Catch::Contains("parameter layout differs between ranks") &&
                                                             Catch::Contains("rank 2"));
}

TEST_CASE("a number of servers that differs between ranks is an error on every rank", "[mpi][config]") {
  ParamLayout layout;
  layout.add("w", {10});
  Options o;
  o.num_servers = test::world_rank() == 1 ? 2 : 1;
  CHECK_THROWS_WITH(Session(MPI_COMM_WORLD, layout, o), Catch::Contains("number of servers differs"));
}

TEST_CASE("as many servers as ranks is an error on every rank", "[mpi][config]") {
  ParamLayout layout;
  layout.add("w", {10});
  CHECK_THROWS_WITH(Session(MPI_COMM_WORLD, layout, {.num_servers = 3}), Catch::Contains("leaves no worker"));
}

TEST_CASE("every option the ranks must share is named when one rank is given another", "[mpi][config]") {
  ParamLayout layout;
  layout.add("w", {10});
  const std::vector<std::pair<std::string, std::function<void(Options&)>>> cases = {
      {"Options::mode", [](Options& o) { o.mode = Mode::Sync; }},
      {"Options::staleness_lr", [](Options& o) { o.staleness_lr = true; }},
      {"Options::dc_lambda", [](Options& o) { o.dc_lambda = 0.5f; }},
      {"Options::pull", [](Options& o) { o.pull = PullMethod::Get; }},
      {"Options::chunk_bytes", [](Options& o) { o.chunk_bytes = 1u << 16; }},
      {"Options::overlap", [](Options& o) { o.overlap = true; }},
      {"Options::stall_timeout", [](Options& o) { o.stall_timeout = 30; }},
  };
  for (const auto& [name, change] : cases) {
    INFO(name);
    Options o;
    if (test::world_rank() == 2) change(o);
    CHECK_THROWS_WITH(Session(MPI_COMM_WORLD, layout, o),
                      Catch::Contains("rank 2 vs rank 0") && Catch::Contains("the first that differs: " + name + ")"));
  }
  // the staleness rate's power, with the rate on everywhere
  Options same;
  same.staleness_lr = true;
  same.staleness_lr_power = test::world_rank() == 1 ? 1.0f : 0.5f;
  CHECK_THROWS_WITH(Session(MPI_COMM_WORLD, layout, same), Catch::Contains("the first that differs: Options::staleness_lr_power)"));
}
