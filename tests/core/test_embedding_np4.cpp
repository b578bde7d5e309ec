// Proves: embedding tables sharded over 2 servers start at their seeded values, the same on
// every worker; concurrent row pushes from 2 workers (duplicate keys within a batch, keys that
// share a row, rows on both servers, runs cut at the servers' boundary) sum exactly; a
// non-finite gradient sends nothing; row-wise Adagrad does what its formula says; and the calls
// refuse bad sizes, scales and calls after drain() with one message. (np4: 2 servers + 2 workers;
// np3 and the pt2pt/TCP variants run it with 1 server.)
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <thread>
#include <vector>

#include "asyncps/embedding_table.h"
#include "asyncps/error.h"
#include "asyncps/parameter_server.h"
#include "asyncps/worker_client.h"
#include "test_helpers.h"

using namespace asyncps;

namespace {
constexpr std::uint64_t kRows = 1000;
constexpr int kDim = 4;
constexpr int kPushes = 300;

ParamLayout table_layout() {
  ParamLayout l;
  l.add("bias", {1});
  l.add_table("sum", {.rows = kRows, .dim = kDim, .init_scale = 0.f});  // starts at 0: sums are exact
  l.add_table("ada", {.rows = 97, .dim = 3, .optimizer = RowOptimizer::Adagrad, .init_scale = 0.5f, .seed = 7,
                      .initial_accumulator = 0.25f});
  return l;
}

// Worker w's batch at push p: keys that repeat, keys that share a row, keys in every part of the
// table (so in both servers' ranges and across their boundary).
std::vector<std::uint64_t> batch_keys(int w, int p) {
  std::vector<std::uint64_t> k = {1, 2, 2, 3, 3, 3};
  for (int i = 0; i < 20; ++i) k.push_back(static_cast<std::uint64_t>((p * 37 + i * 101 + w * 7) % 5000));
  return k;
}
float grad_value(int w, int p, std::size_t i, int c) { return static_cast<float>(((w + 1) * 3 + p + static_cast<int>(i) + c) % 5 + 1); }
}  // namespace

TEST_CASE("embedding rows: seeded start, exact concurrent sums, non-finite guard, Adagrad", "[mpi][embedding]") {
  const int servers = std::getenv("ASYNCPS_TEST_SERVERS") ? std::atoi(std::getenv("ASYNCPS_TEST_SERVERS")) : 2;
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm workers;  // (collective over every rank: before the servers go into serve())
  MPI_Comm_split(MPI_COMM_WORLD, world_rank < servers ? 0 : 1, world_rank, &workers);
  Session session(MPI_COMM_WORLD, table_layout(), {.num_servers = servers});
  const Roles& roles = session.roles();
  if (roles.is_server()) {
    ParameterServer ps(session, std::vector<float>{0.f});
    ps.serve();
    MPI_Comm_free(&workers);
    return;
  }
  WorkerClient w(session);
  EmbeddingTable sum(w, "sum"), ada(w, "ada");
  REQUIRE(sum.rows() == kRows);
  REQUIRE(sum.dim() == kDim);
  REQUIRE(ada.optimizer() == RowOptimizer::Adagrad);
  const int me = roles.worker_index();

  // the seeded start: within the scale, not all equal, and the same on every worker
  std::vector<std::uint64_t> probe;
  for (std::uint64_t k = 0; k < 40; ++k) probe.push_back(k * 31);
  std::vector<float> start(probe.size() * 3);
  ada.pull_rows(probe, start);
  bool spread = false;
  for (float x : start) {
    CHECK(std::abs(x) <= 0.5f);
    spread = spread || x != start[0];
  }
  CHECK(spread);
  std::vector<float> first(start.size());
  if (me == 0) first = start;
  MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_FLOAT, 0, workers);
  CHECK(first == start);

  // the refusals
  std::vector<std::uint64_t> two = {5, 6};
  std::vector<float> wrong(7), nan_grad(2 * kDim, 1.f);
  CHECK_THROWS_WITH(sum.pull_rows(two, wrong), Catch::Contains("EmbeddingTable::pull_rows") && Catch::Contains("keys x dim 4"));
  CHECK_THROWS_WITH(sum.push_rows(two, wrong, 1.f), Catch::Contains("EmbeddingTable::push_rows"));
  CHECK_THROWS_AS(sum.push_rows(two, nan_grad, std::numeric_limits<float>::infinity()), ConfigError);
  CHECK_THROWS_WITH(EmbeddingTable(w, "nope"), Catch::Contains("no embedding table named"));
  // a gradient with NaN sends nothing
  nan_grad[3] = std::nanf("");
  const RowPush refused = sum.push_rows(two, nan_grad, 1.f);
  CHECK_FALSE(refused.applied);
  CHECK(refused.nonfinite);
  CHECK(sum.stats().nonfinite == 1);

  // concurrent pushes: expected[row][c] = sum over workers, pushes and keys of that row
  MPI_Barrier(workers);
  std::map<std::uint64_t, std::vector<double>> expected;
  for (int ww = 0; ww < roles.num_workers(); ++ww)
    for (int p = 0; p < kPushes; ++p) {
      const auto keys = batch_keys(ww, p);
      for (std::size_t i = 0; i < keys.size(); ++i) {
        auto& e = expected[sum.row_of(keys[i])];
        e.resize(kDim);
        for (int c = 0; c < kDim; ++c) e[static_cast<std::size_t>(c)] += grad_value(ww, p, i, c);
      }
    }
  std::vector<float> grads, pulled;
  for (int p = 0; p < kPushes; ++p) {
    const auto keys = batch_keys(me, p);
    grads.resize(keys.size() * kDim);
    for (std::size_t i = 0; i < keys.size(); ++i)
      for (int c = 0; c < kDim; ++c) grads[i * kDim + static_cast<std::size_t>(c)] = grad_value(me, p, i, c);
    const RowPush r = sum.push_rows(keys, grads, 1.f);
    REQUIRE(r.applied);
    if (p % 50 == 0) {  // a pull between pushes sees at least this worker's own so far
      pulled.resize(keys.size() * kDim);
      sum.pull_rows(keys, pulled);
      CHECK(pulled[0] >= 1.f);
    }
  }
  CHECK(sum.stats().pushes == kPushes);
  CHECK(sum.stats().keys_pushed == kPushes * batch_keys(me, 0).size());
  // every row's sum, exactly, after every worker is done
  w.drain();
  std::vector<std::uint64_t> keys;
  std::vector<std::uint64_t> rows;
  for (std::uint64_t k = 0; k < 5000; ++k)
    if (expected.count(sum.row_of(k))) keys.push_back(k), rows.push_back(sum.row_of(k));
  pulled.resize(keys.size() * kDim);
  sum.pull_rows(keys, pulled);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < keys.size(); ++i)
    for (int c = 0; c < kDim; ++c)
      bad += pulled[i * kDim + static_cast<std::size_t>(c)] != static_cast<float>(expected[rows[i]][static_cast<std::size_t>(c)]);
  CHECK(bad == 0);
  CHECK(expected.size() > 50);  // the batches reached rows all over the table
  // rows no key touched are still 0
  std::vector<std::uint64_t> untouched;
  for (std::uint64_t k = 5000; untouched.size() < 10 && k < 100000; ++k)
    if (!expected.count(sum.row_of(k))) untouched.push_back(k);
  std::vector<float> zero(untouched.size() * kDim);
  sum.pull_rows(untouched, zero);
  for (float x : zero) CHECK(x == 0.f);
  CHECK_THROWS_WITH(sum.push_rows(keys, pulled, 1.f), Catch::Contains("drain"));
  // another thread: refused before anything is sent (MPI_THREAD_FUNNELED)
  std::thread other([&] {
    CHECK_THROWS_WITH(sum.pull_rows(untouched, zero), Catch::Contains("another thread"));
    CHECK_THROWS_WITH(sum.set_epsilon(1e-6f), Catch::Contains("another thread"));
    CHECK_THROWS_WITH(EmbeddingTable(w, "sum"), Catch::Contains("another thread"));
  });
  other.join();
  CHECK_THROWS_WITH(ada.set_epsilon(-1.f), Catch::Contains("eps must be finite"));
  CHECK_THROWS_WITH(ada.set_epsilon(std::nanf("")), Catch::Contains("eps must be finite"));
  // a closed worker: every call is refused, nothing is sent to freed windows
  w.finish();
  CHECK_THROWS_WITH(sum.pull_rows(untouched, zero), Catch::Contains("after finish()"));
  CHECK_THROWS_WITH(sum.push_rows(untouched, zero, 1.f), Catch::Contains("after finish()"));
  CHECK_THROWS_WITH(EmbeddingTable(w, "sum"), Catch::Contains("after finish()"));
  MPI_Comm_free(&workers);
}

TEST_CASE("row-wise Adagrad follows its formula on one worker's rows", "[mpi][embedding]") {
  const int servers = std::getenv("ASYNCPS_TEST_SERVERS") ? std::atoi(std::getenv("ASYNCPS_TEST_SERVERS")) : 2;
  Session session(MPI_COMM_WORLD, table_layout(), {.num_servers = servers});
  const Roles& roles = session.roles();
  if (roles.is_server()) {
    ParameterServer ps(session, std::vector<float>{0.f});
    ps.serve();
    return;
  }
  WorkerClient w(session);
  EmbeddingTable ada(w, "ada");
  if (roles.worker_index() == 0) {  // the only writer: the formula holds exactly
    const std::vector<std::uint64_t> keys = {11, 12, 11};  // a duplicate: its gradients add
    std::vector<float> row(keys.size() * 3), grad(keys.size() * 3);
    ada.pull_rows(keys, row);
    std::vector<double> ref(row.begin(), row.begin() + 6);  // rows of keys 11, 12
    double acc[2] = {0.25, 0.25};
    const float lr = 0.1f;
    const bool share = ada.row_of(11) == ada.row_of(12);
    for (int step = 0; step < 5; ++step) {
      for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = static_cast<float>(0.5 + 0.1 * static_cast<double>(i) - 0.2 * step);
      if (step == 2) {  // a pull between pushes; otherwise the accumulators come from the push's own bookkeeping
        ada.pull_rows(keys, row);
      }
      ada.push_rows(keys, grad, -lr);
      if (share) continue;  // (all three keys in one row: the reference below does not apply)
      // row of key 11 gets grads 0 and 2; key 12 grad 1
      for (int r = 0; r < 2; ++r) {
        double g[3], g2 = 0;
        for (int c = 0; c < 3; ++c) {
          g[c] = r == 0 ? grad[static_cast<std::size_t>(c)] + grad[6 + static_cast<std::size_t>(c)] : grad[3 + static_cast<std::size_t>(c)];
          g2 += g[c] * g[c];
        }
        acc[r] += g2 / 3;
        for (int c = 0; c < 3; ++c) ref[static_cast<std::size_t>(r * 3 + c)] += -lr * g[c] / (std::sqrt(acc[r]) + 1e-8);
      }
    }
    ada.pull_rows(keys, row);
    if (!share)
      for (int i = 0; i < 6; ++i) CHECK(row[static_cast<std::size_t>(i)] == Approx(ref[static_cast<std::size_t>(i)]).epsilon(1e-5));
    CHECK(row[0] == row[6]);  // the duplicate reads the same row
  }
}

TEST_CASE("a job with tables and checkpoints is refused on every rank (checkpoints hold no tables yet)", "[mpi][embedding]") {
  Options o;
  o.num_servers = 1;
  o.checkpoint.dir = "/tmp/asyncps-embedding-ckpt-refused";
  CHECK_THROWS_WITH(Session(MPI_COMM_WORLD, table_layout(), o), Catch::Contains("checkpoints do not hold embedding tables"));
}
