// Proves: sync mode with W = 2 workers of batch B and a fixed data order gives the same
// parameters after N rounds as one worker with batch 2B on the same examples (plain SGD,
// computed here in-process as the reference), within float summation tolerance.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "asyncps/parameter_server.h"
#include "asyncps/worker_client.h"
#include "nn/mnist_cnn.h"

using namespace asyncps;

namespace {
constexpr int kB = 8, kRounds = 12;
constexpr float kLr = 0.1f;

ParamLayout cnn_layout() {
  ParamLayout l;
  for (const auto& t : nn::mnist_cnn_tensors()) l.add(t.name, std::vector<std::int64_t>(t.dims.begin(), t.dims.end()));
  return l;
}
}  // namespace

TEST_CASE("sync with 2 workers of batch B equals one worker of batch 2B", "[mpi][sync]") {
  Session session(MPI_COMM_WORLD, cnn_layout(), {.mode = Mode::Sync});
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

  if (session.roles().is_server()) {
    ParameterServer ps(session, init);
    ps.serve();
    return;
  }
  WorkerClient client(session);
  auto backend = nn::make_cpu_backend(2 * kB);
  std::vector<float> params(n), grad(n);
  int rounds = 0;
  while (auto begun = client.begin_step(params, kRounds)) {
    const auto [x, y] = slice(static_cast<std::size_t>(begun->global_step * 2 * kB + client.worker_index() * kB), kB);
    backend->loss_and_grad(params, x, y, grad);
    CHECK(client.end_step(grad, -kLr).applied);
    ++rounds;
  }
  CHECK(rounds == kRounds);  // every worker took part in every round
  client.drain();
  client.pull(params);
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
  CHECK(client.staleness().max() == 0);
  client.finish();
}
