// Proves: a layout that differs on one rank is a clear ConfigError on EVERY rank (none hangs in
// a window creation the others never reach), and so is a different number of servers.
#include <catch2/catch.hpp>

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
