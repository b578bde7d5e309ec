// Proves: Session::node_worker_index deals a node's workers 0, 1, ... in rank order and gives
// servers -1, and node_workers counts the node's workers (all ranks of this test share one node;
// run with 1 and with 2 servers). What the GPU job deals a node's GPUs by.
#include <catch2/catch.hpp>

#include <vector>

#include "asyncps/session.h"
#include "test_helpers.h"

using namespace asyncps;

TEST_CASE("workers on a node are numbered in rank order and servers get none", "[mpi][node]") {
  ParamLayout layout;
  layout.add("w", {16});
  for (const int servers : {1, 2}) {
    CAPTURE(servers);
    Session session(MPI_COMM_WORLD, layout, {.num_servers = servers});
    int size = 0, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    REQUIRE(session.single_node());
    CHECK(session.node_workers() == size - servers);
    if (session.roles().is_server())
      CHECK(session.node_worker_index() == -1);
    else
      CHECK(session.node_worker_index() == session.roles().worker_index());  // (one node: the same order)
    // every index once
    int mine = session.node_worker_index();
    std::vector<int> all(static_cast<std::size_t>(size));
    MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::vector<int> seen(static_cast<std::size_t>(size - servers), 0);
    for (int i : all)
      if (i >= 0) ++seen.at(static_cast<std::size_t>(i));
    for (int n : seen) CHECK(n == 1);
  }
}
