// Proves: every public call of the worker checks its arguments where it takes them (sizes,
// finite scales, what would be pushed, step limits), refuses a call from another thread
// (MPI_THREAD_FUNNELED) and any use after finish(); nothing refused ever reaches the arena.
// And freeing is never a collective a rank can be caught in: a temporary ParameterServer
// (`ParameterServer(s, init).serve()`) followed by a collective of the program's own ends.
#include <catch2/catch.hpp>

#include <chrono>

#include <cmath>
#include <exception>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "asyncps/error.h"
#include "asyncps/parameter_server.h"
#include "asyncps/shadow_store.h"
#include "asyncps/step_loop.h"
#include "asyncps/worker_client.h"

using namespace asyncps;

namespace {
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// What `call` throws when run on another thread (the message), or "" if it did not throw.
template <class F>
std::string from_other_thread(F call) {
  std::string what;
  std::thread t([&] {
    try {
      call();
    } catch (const ConfigError& e) {
      what = e.what();
    } catch (const std::exception& e) {
      what = std::string("wrong type: ") + e.what();
    }
  });
  t.join();
  return what;
}
}  // namespace

TEST_CASE("refused arguments never reach the arena; the temporary server frees nothing collective late",
          "[mpi][validation]") {
  constexpr std::size_t kN = 3000;
  ParamLayout layout;
  layout.add("p", {static_cast<std::int64_t>(kN)});
  // small pieces, so that a push is several operations (the per-piece checks are exercised)
  Session session(MPI_COMM_WORLD, layout, {.chunk_bytes = 4096});
  std::optional<WorkerClient> alive;  // a worker still in scope at the program's own collective
  if (session.roles().is_server()) {
    CHECK_THAT(from_other_thread([&] { ParameterServer ps(session, std::vector<float>(kN, 1.f)); }),
               Catch::Contains("called from another thread"));
    // the natural program: a temporary, then a collective of the program's own
    ParameterServer(session, std::vector<float>(kN, 1.f)).serve();
  } else {
    WorkerClient& w = alive.emplace(session);
    StepLoop steps(w);
    ShadowStore shadow(w);
    std::vector<float> params(kN), grad(kN, 1.f), small(kN - 1), before(kN), after(kN);
    w.pull(before);
    CHECK_THROWS_WITH(w.push(grad, kNaN), Catch::Contains("WorkerClient::push: scale must be a finite number"));
    CHECK_THROWS_AS(w.push(grad, kInf), ConfigError);
    CHECK_THROWS_AS(w.push_async(grad, kNaN), ConfigError);
    CHECK_THROWS_AS(w.push(small, 1.f), ConfigError);
    CHECK_THROWS_AS(w.pull(small), ConfigError);
    CHECK_THROWS_AS(w.pull_async(small), ConfigError);
    CHECK_THROWS_AS(shadow.store(small), ConfigError);
    std::vector<float> bad = grad;
    bad[kN - 1] = kNaN;  // in the last piece: nothing of the push may have left before it
    CHECK_THROWS_WITH(w.push(bad, 1.f), Catch::Contains("nothing was sent"));
    CHECK_THROWS_AS(w.push_async(bad, 1.f), ConfigError);
    CHECK_THROWS_WITH(shadow.store(bad), Catch::Contains("ShadowStore::store: shadow holds NaN or Inf"));
    CHECK(!shadow.load(params));  // nothing was stored: the servers hold no shadow
    std::vector<float> overflow(kN, 1.f);
    overflow[kN - 1] = 3e38f;  // finite, but 3e38 * 10 overflows float
    CHECK_THROWS_AS(w.push_async(overflow, 10.f), ConfigError);
    CHECK_THROWS_AS(w.claim_step(-1), ConfigError);
    CHECK_THROWS_AS(w.claim_step(std::numeric_limits<std::int64_t>::max()), ConfigError);
    CHECK_THROWS_AS(steps.begin_step(params, -5), ConfigError);
    CHECK_THROWS_AS(steps.begin_step(small, 10), ConfigError);
    const auto t = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH(w.note_span(nullptr, t, t), Catch::Contains("WorkerClient::note_span: the span's name is null"));
    CHECK_THROWS_WITH(w.note_span("gpu", t, t - std::chrono::seconds(1)), Catch::Contains("ends before it begins"));
    CHECK_NOTHROW(w.note_span("gpu", t - std::chrono::microseconds(5), t));
    CHECK_THAT(from_other_thread([&] { w.note_span("gpu", t, t); }), Catch::Contains("WorkerClient::note_span"));
    // progress: from the Session's thread, with operations in flight or none
    const Ticket in_flight = w.pull_async(params);
    for (int i = 0; i < 100; ++i) CHECK_NOTHROW(w.progress());
    w.wait(in_flight);
    CHECK_NOTHROW(w.progress());
    CHECK_THAT(from_other_thread([&] { w.progress(); }), Catch::Contains("WorkerClient::progress"));
    // FUNNELED: the thread that made the Session only
    CHECK_THAT(from_other_thread([&] { w.pull(params); }), Catch::Contains("called from another thread"));
    CHECK_THAT(from_other_thread([&] { w.push(grad, 1.f); }), Catch::Contains("WorkerClient::push"));
    CHECK_THAT(from_other_thread([&] { steps.begin_step(params, 10); }), Catch::Contains("StepLoop::begin_step"));
    CHECK_THAT(from_other_thread([&] { w.finish(); }), Catch::Contains("WorkerClient::finish"));
    CHECK_FALSE(w.finished());
    // a valid step still works after all that, and nothing refused reached the arena
    auto s = steps.begin_step(params, 1'000'000);
    REQUIRE(s);
    CHECK_THROWS_AS(steps.end_step(grad, kNaN), ConfigError);
    CHECK(steps.end_step(grad, 0.f).applied);  // a zero update: the arena stays as it was
    w.drain();
    w.pull(after);
    CHECK(after == before);
    w.finish();
    CHECK_THROWS_WITH(w.pull(params), Catch::Contains("after finish()"));
    CHECK_THROWS_WITH(w.progress(), Catch::Contains("WorkerClient::progress after finish()"));
    CHECK_THROWS_AS(w.push(grad, 1.f), Error);
    CHECK_THROWS_AS(steps.begin_step(params, 10), Error);
  }
  // every rank: a collective of the program's own, the servers' objects gone, the workers' still
  // alive (a collective free in the temporary's destructor would leave this barrier waiting)
  CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);
}

TEST_CASE("a precondition one rank fails is refused on every rank", "[mpi][validation]") {
  ParamLayout layout;
  layout.add("p", {100});
  Session session(MPI_COMM_WORLD, layout);
  if (session.roles().is_server()) {
    std::vector<float> init(100, 0.f);
    init[7] = kNaN;  // poisoned initial parameters: refused before any window exists
    CHECK_THROWS_WITH(ParameterServer(session, init), Catch::Contains("initial parameters hold NaN or Inf"));
    CHECK_THROWS_WITH(ParameterServer(session, std::vector<float>(100), -1), Catch::Contains("initial_step must be in"));
    CHECK_THROWS_WITH(ParameterServer(session, std::vector<float>(99)), Catch::Contains("initial parameters have 99"));
  } else {
    // the workers are told why, instead of waiting in the window creation for the server
    CHECK_THROWS_WITH(WorkerClient(session), Catch::Contains("initial parameters hold NaN or Inf"));
    CHECK_THROWS_WITH(WorkerClient(session), Catch::Contains("initial_step must be in"));
    CHECK_THROWS_WITH(WorkerClient(session), Catch::Contains("initial parameters have 99"));
  }
  CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);
}

TEST_CASE("window parts that fit their host alone but not together are refused on every rank, before allocating",
          "[mpi][memory]") {
  // two servers on this host, each a table part of half the memory it has available: each fits,
  // both do not (they had filled /dev/shm and hung)
  double available = 0;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    std::ifstream in("/proc/meminfo");
    std::string key;
    double kb = 0;
    while (in >> key >> kb && key != "MemAvailable:") in.ignore(256, '\n');
    available = key == "MemAvailable:" ? kb * 1024 : 0;
  }
  MPI_Bcast(&available, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  REQUIRE(available > 0);
  ParamLayout layout;
  layout.add("p", {100});
  layout.add_table("t", {.rows = static_cast<std::uint64_t>(available / 64), .dim = 16});  // 64 bytes a row
  Options o;
  o.num_servers = 2;
  Session session(MPI_COMM_WORLD, layout, o);
  const std::string refused = "(2 ranks' parts), which has";  // (the table window's, on the host of rank 0)
  if (session.roles().is_server()) CHECK_THROWS_WITH(ParameterServer(session, std::vector<float>(100)), Catch::Contains(refused));
  else CHECK_THROWS_WITH(WorkerClient(session), Catch::Contains(refused));
  CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);
}

TEST_CASE("invalid options on one rank only are refused on every rank, with that rank's message",
          "[mpi][validation]") {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ParamLayout layout;
  layout.add("p", {10});
  Options o;
  if (rank == 2) o.wait_spin_us = -7;  // not part of the fingerprint: validation must catch it everywhere
  try {
    Session session(MPI_COMM_WORLD, layout, o);
    FAIL("accepted");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("Options::wait_spin_us") != std::string::npos);
    if (rank != 2) CHECK(what.find("rank 2: ") == 0);
  }
  CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);
}
