// Proves: begin_step/end_step in async mode (the claim fused with the pull, the push completed
// inside the next step, and under overlap the next claim and pull prefetched during compute)
// apply exactly `limit` updates in all however the workers race, each update whole; every
// update's staleness is recorded once; a prefetched claim left over at the end is given back
// (the final global step is exactly the limit). Run with 2 ranks (1 worker: the staleness is
// known exactly: 0 without overlap, 1 with it, the last update 0) and 4 ranks (3 workers), and
// over osc pt2pt and TCP (ctest core_step_exactness_pt2pt_tcp_np4).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "asyncps/parameter_server.h"
#include "asyncps/step_loop.h"
#include "asyncps/worker_client.h"
#include "test_helpers.h"

using namespace asyncps;

namespace {

// worker w's gradient: element i gets (w + 1) * (i % 7 + 1); each update is applied with scale 1
float increment(int w, std::size_t i) { return static_cast<float>((w + 1) * (static_cast<int>(i % 7) + 1)); }

std::size_t count_nonfinite(std::span<const float> v) {
  return static_cast<std::size_t>(std::count_if(v.begin(), v.end(), [](float f) { return !std::isfinite(f); }));
}

// Drains, pulls the final arena, counts its non-finite elements and finishes.
std::size_t final_arena_nonfinite(WorkerClient& w, std::vector<float>& params) {
  w.drain();
  w.pull(params);
  const std::size_t n = count_nonfinite(params);
  w.finish();
  return n;
}

// Server side: every worker's count of applied updates (gathered from the workers, which send
// theirs after finish()); they must add up to `limit`, and the arena must be exactly their sum.
void check_arena_is_the_sum(ParameterServer& ps, const Roles& roles, std::int64_t limit) {
  const std::vector<long long> applied = test::gather_to_all({-1});
  long long total = 0;
  for (long long a : applied) total += a > 0 ? a : 0;
  CHECK(total == limit);
  const auto shard = ps.snapshot();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < shard.size(); ++i) {
    float expect = 0;
    for (int w = 0; w < roles.num_workers(); ++w)
      expect += static_cast<float>(applied[static_cast<std::size_t>(roles.num_servers + w)]) * increment(w, i);
    wrong += shard[i] != expect;
  }
  CHECK(wrong == 0);
}

void run(bool overlap) {
  const std::size_t arena = 9098;  // the MNIST arena's size
  const std::int64_t limit = static_cast<std::int64_t>(test::env_size("ASYNCPS_TEST_STEPS", 600));
  ParamLayout layout;
  layout.add("arena", {static_cast<std::int64_t>(arena)});
  Session session(MPI_COMM_WORLD, layout, {.num_servers = 1, .overlap = overlap});
  const Roles& roles = session.roles();
  INFO("overlap " << overlap << ", rank " << roles.rank);
  if (roles.is_server()) {
    ParameterServer ps(session, std::vector<float>(arena, 0.f));
    ps.serve();
    CHECK(ps.final_step() == limit);
    check_arena_is_the_sum(ps, roles, limit);
    return;
  }
  WorkerClient w(session);
  StepLoop steps(w);
  std::vector<float> params(arena), grad(arena);
  for (std::size_t i = 0; i < arena; ++i) grad[i] = increment(roles.worker_index(), i);
  long long applied = 0;
  while (auto s = steps.begin_step(params, limit)) {
    CHECK(s->global_step < limit);
    const StepEnd e = steps.end_step(grad, 1.0f);
    CHECK(e.applied);
    CHECK(e.global_step == s->global_step + 1);
    ++applied;
  }
  w.finish();
  CHECK(steps.final_step() == limit);
  CHECK(w.stats().pushes == static_cast<std::uint64_t>(applied));  // each step's update sent once
  CHECK(w.stats().steps == static_cast<std::uint64_t>(applied));
  (void)test::gather_to_all({applied});
  if (roles.is_chief()) {
    const StalenessHistogram& tau = steps.job_staleness();
    CHECK(tau.count() == static_cast<std::uint64_t>(limit));  // every update recorded once
    if (roles.num_workers() == 1) {  // the only updates in between are this worker's own
      CHECK(tau.max() == (overlap ? 1 : 0));
      CHECK(tau.percentile(50) == (overlap ? 1 : 0));
    }
  }
}

}  // namespace

TEST_CASE("async steps apply exactly the limit: claim fused with the pull", "[mpi][exactness]") { run(false); }

TEST_CASE("async steps apply exactly the limit: next claim and pull prefetched (overlap)", "[mpi][exactness]") {
  run(true);
}

// A StepLoop is a view: its state (the clock, the prefetched claim and pull, the deferred push)
// is the worker's. One that goes out of scope mid-job with a prefetch in flight leaves it to the
// worker; a second StepLoop goes on where the first stopped (its clock too), and the job still
// applies exactly `limit` updates, each recorded once in the staleness report.
TEST_CASE("a second StepLoop on a worker goes on where the first stopped (overlap in flight)", "[mpi][exactness]") {
  const std::size_t arena = 9098;
  const std::int64_t limit = 200;
  ParamLayout layout;
  layout.add("arena", {static_cast<std::int64_t>(arena)});
  Session session(MPI_COMM_WORLD, layout, {.num_servers = 1, .overlap = true});
  const Roles& roles = session.roles();
  if (roles.is_server()) {
    ParameterServer ps(session, std::vector<float>(arena, 0.f));
    ps.serve();
    CHECK(ps.final_step() == limit);
    check_arena_is_the_sum(ps, roles, limit);
    return;
  }
  WorkerClient w(session);
  std::vector<float> params(arena), grad(arena);
  for (std::size_t i = 0; i < arena; ++i) grad[i] = increment(roles.worker_index(), i);
  long long applied = 0;
  std::int64_t first_clock = 0;
  {
    StepLoop steps(w);
    // (up to 10 steps: a worker that starts late may find the others have taken the whole limit,
    // 4 ranks sharing 2 cores; its second StepLoop then finds the job over, as it must)
    for (int k = 0; k < 10; ++k) {
      auto s = steps.begin_step(params, limit);
      if (!s) break;
      CHECK(s->clock == k);
      CHECK(steps.end_step(grad, 1.0f).applied);
      ++applied;
      first_clock = k + 1;
    }
  }  // the next claim and pull are in flight now, and the last push
  StepLoop steps(w);
  bool first = true;
  while (auto s = steps.begin_step(params, limit)) {
    if (first) CHECK(s->clock == first_clock);  // the worker's clock, not a new one
    first = false;
    CHECK(steps.end_step(grad, 1.0f).applied);
    ++applied;
  }
  w.finish();
  CHECK(steps.final_step() == limit);
  (void)test::gather_to_all({applied});
  if (roles.is_chief()) CHECK(steps.job_staleness().count() == static_cast<std::uint64_t>(limit));
}

// The non-finite guard covers what would be pushed: a finite gradient times a finite scale that
// overflows float is never pushed (it still spends its step, so the job ends on schedule).
TEST_CASE("an update whose scale * grad overflows float is never pushed", "[mpi][nonfinite]") {
  const std::size_t arena = 1000;
  const std::int64_t limit = 40;
  ParamLayout layout;
  layout.add("arena", {static_cast<std::int64_t>(arena)});
  Session session(MPI_COMM_WORLD, layout, {.num_servers = 1});
  if (session.roles().is_server()) {
    ParameterServer ps(session, std::vector<float>(arena, 0.5f));
    ps.serve();
    CHECK(ps.final_step() == limit);
    const auto shard = ps.snapshot();
    std::size_t changed = 0;
    for (float v : shard) changed += v != 0.5f;
    CHECK(changed == 0);  // nothing reached the arena
    CHECK(count_nonfinite(shard) == 0);
    return;
  }
  WorkerClient w(session);
  StepLoop steps(w);
  std::vector<float> params(arena), grad(arena, 1e30f);  // finite; times 1e10 it is +inf in float
  std::uint64_t taken = 0;
  std::size_t pulled_nonfinite = 0;
  while (auto s = steps.begin_step(params, limit)) {
    pulled_nonfinite += count_nonfinite(params);
    const StepEnd e = steps.end_step(grad, 1e10f);
    CHECK(e.nonfinite);
    CHECK_FALSE(e.applied);
    ++taken;
  }
  CHECK(pulled_nonfinite + final_arena_nonfinite(w, params) == 0);  // every pull saw a finite arena
  CHECK(w.stats().nonfinite == taken);
  CHECK(w.stats().pushes == 0);
  CHECK(steps.final_step() == limit);
}

// NaN, +Inf and -Inf gradients among finite ones, every worker: each non-finite one is rejected
// (nothing of it is pushed, not even its finite elements), each finite one lands whole, and the
// arena stays finite: every pull, the final arena, and the servers' shard, which must equal the
// initial value plus exactly the finite updates.
TEST_CASE("non-finite gradients among finite ones are rejected whole and the arena stays finite", "[mpi][nonfinite]") {
  const std::size_t arena = 1000;
  const std::int64_t limit = 90;
  ParamLayout layout;
  layout.add("arena", {static_cast<std::int64_t>(arena)});
  Session session(MPI_COMM_WORLD, layout, {.num_servers = 1});
  const Roles& roles = session.roles();
  if (roles.is_server()) {
    ParameterServer ps(session, std::vector<float>(arena, 0.5f));
    ps.serve();
    CHECK(ps.final_step() == limit);
    const std::vector<long long> counts = test::gather_to_all({-1, -1});  // per rank: applied, rejected
    long long applied = 0, rejected = 0;
    for (int w = 0; w < roles.num_workers(); ++w) {
      applied += counts[2 * static_cast<std::size_t>(roles.num_servers + w)];
      rejected += counts[2 * static_cast<std::size_t>(roles.num_servers + w) + 1];
    }
    CHECK(applied + rejected == limit);
    CHECK(applied > 0);
    CHECK(rejected > 0);
    const auto shard = ps.snapshot();
    CHECK(count_nonfinite(shard) == 0);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < shard.size(); ++i) {
      float expect = 0.5f;
      for (int w = 0; w < roles.num_workers(); ++w)
        expect += static_cast<float>(counts[2 * static_cast<std::size_t>(roles.num_servers + w)]) * increment(w, i);
      wrong += shard[i] != expect;
    }
    CHECK(wrong == 0);  // exactly the finite updates, each whole
    return;
  }
  WorkerClient w(session);
  StepLoop steps(w);
  const int me = roles.worker_index();
  std::vector<float> params(arena), finite(arena);
  for (std::size_t i = 0; i < arena; ++i) finite[i] = increment(me, i);
  // one bad element each, the rest finite (a partial push would show in the arena)
  std::vector<float> with_nan = finite, with_inf = finite, with_minus_inf = finite;
  with_nan[3] = std::numeric_limits<float>::quiet_NaN();
  with_inf[arena - 1] = std::numeric_limits<float>::infinity();
  with_minus_inf[0] = -std::numeric_limits<float>::infinity();
  const std::vector<float>* kinds[4] = {&finite, &with_nan, &with_inf, &with_minus_inf};
  long long applied = 0, rejected = 0, k = 0;
  std::size_t pulled_nonfinite = 0;
  while (auto s = steps.begin_step(params, limit)) {
    pulled_nonfinite += count_nonfinite(params);
    const bool bad = k % 4 != 0;
    const StepEnd e = steps.end_step(*kinds[k % 4], 1.0f);
    CHECK(e.nonfinite == bad);
    CHECK(e.applied == !bad);
    (bad ? rejected : applied) += 1;
    ++k;
  }
  CHECK(pulled_nonfinite + final_arena_nonfinite(w, params) == 0);  // every pull saw a finite arena
  CHECK(steps.final_step() == limit);
  CHECK(w.stats().nonfinite == static_cast<std::uint64_t>(rejected));
  CHECK(w.stats().pushes == static_cast<std::uint64_t>(applied));
  (void)test::gather_to_all({applied, rejected});
}
