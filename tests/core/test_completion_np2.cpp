// Proves: a worker's operations complete the way its channel's one strategy says, with no flush
// more than the step needs. MPI_Win_flush is counted by interposing on it (the MPI profiling
// interface: this program's MPI_Win_flush is the one the library calls, and it calls
// PMPI_Win_flush). On one node (Poll progress: completion by flush) an async step costs two
// flushes (the claim's control window and the pull's parameter window), with overlap two (the
// prefetch's), with --pull get three (its pull is ordered after the last push), DC-ASGD with
// overlap and MPI_Get three; a sync round with one worker five (the pull, the update, the
// round's three); SSP two. Under Wake (completion by request) a step needs none. A blocking pull
// and push need one each. Run with 2 ranks (1 server + 1 worker).
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <vector>

#include "asyncps/parameter_server.h"
#include "asyncps/step_loop.h"
#include "asyncps/worker_client.h"

using namespace asyncps;

namespace {
long long g_flushes = 0;
}  // namespace

extern "C" int MPI_Win_flush(int rank, MPI_Win win) {
  ++g_flushes;
  return PMPI_Win_flush(rank, win);
}

namespace {

constexpr std::size_t kArena = 9098;
constexpr int kSteps = 40;

// Flushes the worker issues in `kSteps` steps of `step` (after a few unmeasured ones), per step;
// -1 on the server.
double flushes_per_step(const Options& options, const std::function<void(WorkerClient&, StepLoop&)>& step) {
  ParamLayout layout;
  layout.add("arena", {static_cast<std::int64_t>(kArena)});
  Session session(MPI_COMM_WORLD, layout, options);
  if (session.roles().is_server()) {
    ParameterServer ps(session, std::vector<float>(kArena, 0.f));
    ps.serve();
    return -1;
  }
  WorkerClient w(session);
  StepLoop steps(w);
  for (int i = 0; i < 3; ++i) step(w, steps);
  const long long before = g_flushes;
  for (int i = 0; i < kSteps; ++i) step(w, steps);
  const long long used = g_flushes - before;
  w.finish();
  return static_cast<double>(used) / kSteps;
}

std::vector<float> params(kArena), grad(kArena, 1e-3f);

void async_step(WorkerClient&, StepLoop& steps) {
  REQUIRE(steps.begin_step(params, std::int64_t{1} << 40));
  REQUIRE(steps.end_step(grad, -0.01f).applied);
}

void check(const Options& options, const std::function<void(WorkerClient&, StepLoop&)>& step, double expected) {
  const double got = flushes_per_step(options, step);
  if (got >= 0) CHECK(got == expected);
}

}  // namespace

TEST_CASE("on one node an async step completes by two flushes (the claim's and the pull's)", "[mpi][completion]") {
  check({.server_progress = ServerProgress::Poll}, async_step, 2);
}

TEST_CASE("under Wake an async step completes by its requests: no flush", "[mpi][completion]") {
  check({.server_progress = ServerProgress::Wake}, async_step, 0);
}

TEST_CASE("overlap: the prefetched claim and pull complete by the same two flushes", "[mpi][completion]") {
  check({.overlap = true, .server_progress = ServerProgress::Poll}, async_step, 2);
}

TEST_CASE("--pull get: one more flush orders the pull after the last push", "[mpi][completion]") {
  check({.pull = PullMethod::Get, .server_progress = ServerProgress::Poll}, async_step, 3);
}

TEST_CASE("DC-ASGD with overlap and MPI_Get: three flushes (the second read's, none to order it)",
          "[mpi][completion]") {
  check({.dc_lambda = 0.1f, .overlap = true, .pull = PullMethod::Get, .server_progress = ServerProgress::Poll},
        async_step, 3);
}

TEST_CASE("SSP: the clock tick completes with the next claim's flushes", "[mpi][completion]") {
  check({.mode = Mode::Ssp, .staleness = 2, .server_progress = ServerProgress::Poll}, async_step, 2);
}

TEST_CASE("a sync round with one worker: the pull, the update, the round's three", "[mpi][completion]") {
  check({.mode = Mode::Sync, .server_progress = ServerProgress::Poll}, async_step, 5);
}

TEST_CASE("a blocking pull and a blocking push complete by one flush each", "[mpi][completion]") {
  for (auto progress : {ServerProgress::Poll, ServerProgress::Wake}) {
    INFO("server_progress " << static_cast<int>(progress));
    check({.server_progress = progress}, [](WorkerClient& w, StepLoop&) { w.pull(params); }, 1);
    check({.server_progress = progress}, [](WorkerClient& w, StepLoop&) { w.push(grad, -0.01f); }, 1);
  }
}
