// Proves: the automatic progress policy (runtime/progress_policy.h) picks, for each kind of job,
// the server progress, the server's longest sleep and the waiting worker's longest sleep that
// docs/ARCHITECTURE.md "Server progress" describes, how the workers' step operations complete
// with it (request-based beside a woken server, flushed beside a polling one), and an explicit
// Option always wins.
#include <catch2/catch.hpp>

#include "asyncps_internal/runtime/progress_policy.h"

using asyncps::ServerProgress;
using asyncps::detail::choose_progress;
using asyncps::detail::ProgressFacts;

namespace {
ProgressFacts facts(bool needs_target, bool implementation_polls, bool tables = false, bool neighbours = false,
                    bool no_workers = false) {
  ProgressFacts f;
  f.needs_target = needs_target;
  f.implementation_polls = implementation_polls;
  f.tables = tables;
  f.shared_memory_neighbours = neighbours;
  f.node_no_workers = no_workers;
  return f;
}
}  // namespace

TEST_CASE("operations that complete without the server: it polls, rarely", "[progress-policy]") {
  // Open MPI on one node (osc rdma over shared memory)
  const auto c = choose_progress(facts(false, true, false, true), ServerProgress::Auto, -1);
  CHECK(c.progress == ServerProgress::Poll);
  CHECK(c.poll_us == 10000);
  CHECK(c.worker_max_sleep_us == 100);
  CHECK(c.completion->name() == "flush");
  CHECK_FALSE(c.worker_sleeps_on_sockets);
}

TEST_CASE("operations that need the server between hosts: it sleeps until woken", "[progress-policy]") {
  // Open MPI's pt2pt across hosts, the server alone on its node: a wake's timeout serves the clock
  auto c = choose_progress(facts(true, false), ServerProgress::Auto, -1);
  CHECK(c.progress == ServerProgress::Wake);
  CHECK(c.poll_us == 10000);
  CHECK(c.worker_max_sleep_us == 1000);
  CHECK(c.completion->name() == "request");
  CHECK(c.worker_sleeps_on_sockets);
  // a rank on its node talks over shared memory, which wakes no socket
  c = choose_progress(facts(true, false, false, true), ServerProgress::Auto, -1);
  CHECK(c.progress == ServerProgress::Wake);
  CHECK(c.poll_us == 1000);
  CHECK(c.worker_max_sleep_us == 100);
}

TEST_CASE("operations that need the server where the implementation polls: every 50 us", "[progress-policy]") {
  // the MPICH family on one node
  const auto c = choose_progress(facts(true, true, false, true), ServerProgress::Auto, -1);
  CHECK(c.progress == ServerProgress::Poll);
  CHECK(c.poll_us == 50);
}

TEST_CASE("embedding tables whose operations need the server: it polls, never sleeping alone", "[progress-policy]") {
  auto c = choose_progress(facts(true, false, true), ServerProgress::Auto, -1);
  CHECK(c.progress == ServerProgress::Poll);
  CHECK(c.poll_us == 50);
  c = choose_progress(facts(true, false, true, false, true), ServerProgress::Auto, -1);
  CHECK(c.progress == ServerProgress::Poll);
  CHECK(c.poll_us == 0);
  // tables whose operations complete without the server change nothing
  c = choose_progress(facts(false, true, true, false, true), ServerProgress::Auto, -1);
  CHECK(c.progress == ServerProgress::Poll);
  CHECK(c.poll_us == 10000);
}

TEST_CASE("an explicit progress or sleep in the Options always wins", "[progress-policy]") {
  auto c = choose_progress(facts(true, true), ServerProgress::Wake, -1);
  CHECK(c.progress == ServerProgress::Wake);
  CHECK(c.poll_us == 10000);
  CHECK(c.completion->name() == "request");  // the completion follows the progress chosen
  c = choose_progress(facts(true, false), ServerProgress::Poll, -1);
  CHECK(c.progress == ServerProgress::Poll);
  CHECK(c.poll_us == 50);
  CHECK(c.completion->name() == "flush");
  c = choose_progress(facts(true, false, true, false, true), ServerProgress::Auto, 250);
  CHECK(c.progress == ServerProgress::Poll);
  CHECK(c.poll_us == 250);
  c = choose_progress(facts(true, false, false, true), ServerProgress::Auto, -1, 300);  // Options::wait_max_sleep_us
  CHECK(c.worker_max_sleep_us == 300);
}
