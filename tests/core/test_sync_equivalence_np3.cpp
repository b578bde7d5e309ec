// Proves: sync mode with W = 2 workers of batch B and a fixed data order gives the same
// parameters after N rounds as one worker with batch 2B on the same examples (plain SGD,
// computed here in-process as the reference), within float summation tolerance; and, exactly,
// that every round applies once the mean of the W workers' updates and nothing else: the
// parameters each worker pulls in round r equal init plus rounds 0..r-1's means, bit for bit
// (from every worker's own record of what it pulled and pushed, gathered at the end).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include <mpi.h>

#include "asyncps/parameter_server.h"
#include "asyncps/step_loop.h"
#include "asyncps/worker_client.h"
#include "nn/mnist_cnn.h"
#include "nn/mnist_cnn_layout.h"

using namespace asyncps;

namespace {
constexpr int kB = 8, kRounds = 12;
constexpr float kLr = 0.1f;

}  // namespace

TEST_CASE("sync: each round applies exactly the mean of the 2 workers' updates, as one worker of batch 2B would",
          "[mpi][sync]") {
  Session session(MPI_COMM_WORLD, nn::mnist_cnn_layout(), {.mode = Mode::Sync});
  REQUIRE(session.roles().num_workers() == 2);
  const std::size_t n = session.layout().size();
  std::vector<float> init(n);
  nn::glorot_uniform_init(init, 7);
  // the examples, identical on every rank: round t uses [t*2B, (t+1)*2B), worker w the w-th half
  const std::size_t examples = static_cast<std::size_t>(2 * kB * kRounds);
  std::vector<float> images(examples * nn::kImagePixels);
  std::vector<std::uint8_t> labels(examples);
  std::mt19937 rng(11);
  for (float& p : images) p = static_cast<float>(rng() % 256) / 255.f;
  for (auto& l : labels) l = static_cast<std::uint8_t>(rng() % 10);
  auto slice = [&](std::size_t first, std::size_t count) {
    return std::pair{std::span<const float>(images).subspan(first * nn::kImagePixels, count * nn::kImagePixels),
                     std::span<const std::uint8_t>(labels).subspan(first, count)};
  };

  // the workers among themselves, to gather their records at the end (collective on every rank)
  MPI_Comm workers = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, session.roles().is_worker() ? 0 : MPI_UNDEFINED, session.roles().rank, &workers);

  if (session.roles().is_server()) {
    ParameterServer ps(session, init);
    ps.serve();
    return;
  }
  WorkerClient client(session);
  StepLoop steps(client);
  auto backend = nn::make_cpu_backend(2 * kB);
  std::vector<float> params(n), grad(n);
  // this worker's record, round by round: the parameters begin_step pulled, and the update it
  // pushed, (scale / W) * grad (end_step's scale divided by W: the worker's share of the mean)
  constexpr int kW = 2;
  const float share = -kLr / static_cast<float>(kW);
  std::vector<float> pulled(static_cast<std::size_t>(kRounds) * n), pushed(static_cast<std::size_t>(kRounds) * n);
  int rounds = 0;
  while (auto begun = steps.begin_step(params, kRounds)) {
    if (rounds == kRounds) {  // (CHECK, not REQUIRE: this rank must still reach the collectives)
      FAIL_CHECK("more than " << kRounds << " rounds");
      break;
    }
    CHECK(begun->global_step == rounds);
    std::copy(params.begin(), params.end(), pulled.begin() + static_cast<std::ptrdiff_t>(rounds * n));
    const auto [x, y] = slice(static_cast<std::size_t>(begun->global_step * 2 * kB + client.worker_index() * kB), kB);
    backend->loss_and_grad(params, x, y, grad);
    for (std::size_t i = 0; i < n; ++i) pushed[rounds * n + i] = share * grad[i];
    CHECK(steps.end_step(grad, -kLr).applied);
    ++rounds;
  }
  CHECK(rounds == kRounds);  // every worker took part in every round
  client.drain();
  client.pull(params);
  // worker 0 gets both workers' records
  std::vector<float> all_pulled(kW * pulled.size()), all_pushed(kW * pushed.size());
  MPI_Gather(pulled.data(), static_cast<int>(pulled.size()), MPI_FLOAT, all_pulled.data(), static_cast<int>(pulled.size()),
             MPI_FLOAT, 0, workers);
  MPI_Gather(pushed.data(), static_cast<int>(pushed.size()), MPI_FLOAT, all_pushed.data(), static_cast<int>(pushed.size()),
             MPI_FLOAT, 0, workers);
  MPI_Comm_free(&workers);
  if (client.worker_index() == 0) {
    auto at = [&](const std::vector<float>& v, int w, int r) {
      return std::span<const float>(v).subspan((static_cast<std::size_t>(w) * kRounds + static_cast<std::size_t>(r)) * n, n);
    };
    // the arena after round r: what was pulled in round r plus the round's summed shares (the
    // servers' accumulation buffer starts at 0, and a + b is the same in either arrival order)
    auto after_round = [&](int r) {
      std::vector<float> a(n);
      const auto p = at(all_pulled, 0, r), u0 = at(all_pushed, 0, r), u1 = at(all_pushed, 1, r);
      for (std::size_t i = 0; i < n; ++i) a[i] = p[i] + (u0[i] + u1[i]);
      return a;
    };
    std::size_t wrong_start = 0, wrong_same = 0, wrong_round = 0, wrong_final = 0;
    for (int w = 0; w < kW; ++w) {
      const auto p = at(all_pulled, w, 0);
      for (std::size_t i = 0; i < n; ++i) wrong_start += p[i] != init[i];
    }
    for (int r = 0; r < kRounds; ++r) {
      const auto p0 = at(all_pulled, 0, r), p1 = at(all_pulled, 1, r);
      for (std::size_t i = 0; i < n; ++i) wrong_same += p0[i] != p1[i];
      if (r == 0) continue;
      const auto expect = after_round(r - 1);
      for (std::size_t i = 0; i < n; ++i) wrong_round += p0[i] != expect[i];
    }
    const auto expect_final = after_round(kRounds - 1);
    for (std::size_t i = 0; i < n; ++i) wrong_final += params[i] != expect_final[i];
    CHECK(wrong_start == 0);  // round 0 pulled the initial parameters
    CHECK(wrong_same == 0);   // in each round both workers pulled the same parameters
    CHECK(wrong_round == 0);  // round r pulled exactly init + the means of rounds 0..r-1
    CHECK(wrong_final == 0);  // and the final arena holds exactly all kRounds means
  }
  if (client.worker_index() == 0) {
    std::vector<float> ref = init, g(n);
    for (int t = 0; t < kRounds; ++t) {
      const auto [x, y] = slice(static_cast<std::size_t>(t * 2 * kB), 2 * kB);
      backend->loss_and_grad(ref, x, y, g);
      for (std::size_t i = 0; i < n; ++i) ref[i] -= kLr * g[i];  // one SGD step on the 2B batch
    }
    double max_diff = 0, max_ref = 0, max_move = 0;
    for (std::size_t i = 0; i < n; ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(params[i] - ref[i])));
      max_ref = std::max(max_ref, static_cast<double>(std::fabs(ref[i])));
      max_move = std::max(max_move, static_cast<double>(std::fabs(ref[i] - init[i])));
    }
    INFO("max |sync - reference| = " << max_diff << ", max |reference| = " << max_ref << ", training moved "
                                     << max_move);
    CHECK(max_move > 1e-2);                 // the parameters really trained
    CHECK(max_diff / max_ref <= 1e-5);      // and sync equals the big-batch reference
  }
  client.finish();
}

TEST_CASE("sync: a worker that leaves its loop early halts the job on every rank, every applied round whole",
          "[mpi][sync]") {
  // worker 0 breaks out after 5 rounds (out of data, say); worker 1 asks for 50. Every round
  // needs both: the job halts (it had ended silently at round 4 or 5, dropping a round whose
  // end_step had said applied), and the arena holds whole rounds only (each adds 1.0).
  ParamLayout layout;
  layout.add("w", {64});
  Session session(MPI_COMM_WORLD, layout, {.mode = Mode::Sync});
  REQUIRE(session.roles().num_workers() == 2);
  if (session.roles().is_server()) {
    ParameterServer ps(session, std::vector<float>(64, 0.f));
    ps.serve();
    CHECK(ps.halted());
    const std::span<const float> arena = ps.snapshot();
    CHECK(arena[0] == static_cast<float>(ps.final_step()));  // whole rounds: one 1.0 each
    CHECK(ps.final_step() <= 5);
    return;
  }
  WorkerClient client(session);
  StepLoop steps(client);
  std::vector<float> params(64);
  const std::vector<float> ones(64, 1.f);
  int taken = 0;
  while (steps.begin_step(params, 50)) {
    steps.end_step(ones, 1.f);  // (mean of the two: 1.0 a round)
    if (++taken == 5 && session.roles().worker_index() == 0) break;
  }
  client.finish();
  CHECK(steps.halted());
  CHECK(taken <= 6);
}
