// Proves: in SSP mode no worker ever starts a step more than s clocks ahead of the slowest —
// checked from every worker's own step timeline (not from the clocks the wait itself read, nor
// from timing budgets): with one worker slowed on purpose, so the fast ones really had to wait.
//
// Each worker records when each of its end_step calls began (a clock tick cannot reach the
// servers before that), when each of its begin_step calls returned (the wait's read of the
// clocks happened before that) and when it began to finish (its clock can jump ahead only
// after that). The timelines are gathered at the end. If worker w began a step at clock c at
// time T, each other worker v still in the job had ticked its clock at most U_v times by then,
// U_v = the number of v's end_step calls begun before T; a correct wait implies U_v >= c - s.
// The times are std::chrono::steady_clock (CLOCK_MONOTONIC: one clock for every process on the
// host; this test runs on one host).
#include <catch2/catch.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "asyncps/parameter_server.h"
#include "asyncps/step_loop.h"
#include "asyncps/worker_client.h"

using namespace asyncps;

namespace {
long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

TEST_CASE("ssp: the clock gap never exceeds the staleness bound", "[mpi][ssp]") {
  constexpr int kStaleness = 2;
  constexpr std::int64_t kSteps = 240;
  ParamLayout layout;
  layout.add("w", {256});
  Session session(MPI_COMM_WORLD, layout, {.mode = Mode::Ssp, .staleness = kStaleness});
  // the workers among themselves, to gather the timelines at the end (collective on every rank)
  MPI_Comm workers = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, session.roles().is_worker() ? 0 : MPI_UNDEFINED, session.roles().rank, &workers);
  if (session.roles().is_server()) {
    ParameterServer ps(session, std::vector<float>(256, 0.f));
    ps.serve();
    return;
  }
  WorkerClient client(session);
  StepLoop steps(client);
  const int num_workers = session.roles().num_workers();
  const bool slow = client.worker_index() == num_workers - 1;
  std::vector<float> params(256), grad(256, 1.f);
  // this worker's timeline: [begins, ends, finish time, begin clock x kSteps, begin time x kSteps,
  // end time x kSteps] (a worker takes at most kSteps steps)
  constexpr std::size_t kRecord = 3 + 3 * static_cast<std::size_t>(kSteps);
  std::vector<long long> rec(kRecord, -1);
  long long* begin_clock = rec.data() + 3;
  long long* begin_t = begin_clock + kSteps;
  long long* end_t = begin_t + kSteps;
  long long begins = 0, ends = 0;
  while (auto begun = steps.begin_step(params, kSteps)) {
    const long long t = now_ns();
    if (begins == kSteps) {  // (CHECK, not REQUIRE: this rank must still reach the collectives)
      FAIL_CHECK("more than " << kSteps << " steps begun by one worker");
      break;
    }
    begin_clock[begins] = begun->clock;
    begin_t[begins++] = t;
    CHECK(begun->clock == ends);  // the clock it reports is its own completed steps
    if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    end_t[ends++] = now_ns();  // before end_step: its clock tick is sent inside
    CHECK(steps.end_step(grad, -0.001f).applied);
  }
  rec[0] = begins;
  rec[1] = ends;
  rec[2] = now_ns();  // before finish(): drain() moves this worker's clock far ahead
  const WorkerStats st = client.stats();
  client.finish();

  std::vector<long long> all(kRecord * static_cast<std::size_t>(num_workers));
  MPI_Allgather(rec.data(), static_cast<int>(kRecord), MPI_LONG_LONG, all.data(), static_cast<int>(kRecord),
                MPI_LONG_LONG, workers);
  MPI_Comm_free(&workers);
  auto of = [&](int v) { return all.data() + kRecord * static_cast<std::size_t>(v); };
  long long total = 0;
  for (int v = 0; v < num_workers; ++v) total += of(v)[1];
  CHECK(total == kSteps);  // the timelines hold every step of the job

  // The largest gap worker w's timeline shows: c - min over the others still in the job of U_v.
  auto max_gap_of = [&](int w) {
    const long long* rw = of(w);
    long long worst = 0;
    for (long long k = 0; k < rw[0]; ++k) {
      const long long c = rw[3 + k], t = rw[3 + kSteps + k];
      for (int v = 0; v < num_workers; ++v) {
        const long long* rv = of(v);
        if (v == w || t > rv[2]) continue;  // itself, or v may have finished (its clock jumped)
        const long long* ends_v = rv + 3 + 2 * kSteps;
        const long long ticked = std::count_if(ends_v, ends_v + rv[1], [t](long long e) { return e < t; });
        worst = std::max(worst, c - ticked);
      }
    }
    return worst;
  };
  long long fast_reached_bound = 0;
  for (int w = 0; w < num_workers; ++w) {
    const long long gap = max_gap_of(w);
    INFO("worker " << w << ": " << of(w)[1] << " steps, largest clock gap in the timelines " << gap);
    CHECK(gap <= kStaleness);
    if (w != num_workers - 1) fast_reached_bound += gap == kStaleness;
  }
  INFO("worker " << client.worker_index() << " waited " << st.mode_waits << " times");
  if (!slow) CHECK(st.mode_waits > 0);  // the bound really held the fast workers back
  CHECK(fast_reached_bound > 0);        // and a fast worker ran up to it
}
