// Proves: embedding tables sharded over 2 servers start at their seeded values, the same on
// every worker; a push returns in flight with the caller's buffer free, and the worker's next
// pull reads it exactly; concurrent row pushes from 2 workers (duplicate keys within a batch, keys that
// share a row, rows on both servers, runs cut at the servers' boundary) sum exactly; a
// non-finite gradient sends nothing; row-wise Adagrad and FTRL-Proximal do what their formulas say
// (FTRL's L1 keeping weights exactly 0); and the calls
// refuse bad sizes, scales and calls after drain() with one message; a job's tables (rows and
// Adagrad accumulators, FTRL's z and n) are in its checkpoint and restore on another number of servers; rows
// pushed without a dense step are saved every save_secs (each save of the step replacing the one
// before, its shards removed, a restored run's files never written over) and not re-saved while
// they do not move. (np4: 2 servers + 2 workers, also over osc pt2pt; np3: 1 server + 2 workers.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstdlib>
#include <limits>
#include <map>
#include <thread>
#include <vector>

#include <stdlib.h>

#include "asyncps/checkpoint.h"
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
  l.add_table("ftrl", {.rows = 83, .dim = 2, .optimizer = RowOptimizer::Ftrl, .init_scale = 0.3f, .seed = 5,
                       .ftrl_l1 = 0.05f, .ftrl_l2 = 0.01f, .ftrl_beta = 1.f});
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

  // a push returns in flight: the caller's buffer is free at once (overwritten here), and this
  // worker's next pull of the rows reads the push exactly; then a second push (which completes
  // the first's buffer) takes them back to 0 for the sums below. Worker 0 alone, the others wait.
  MPI_Barrier(workers);
  if (me == 0) {
    const std::vector<std::uint64_t> own = {4321, 17, 4321};
    std::vector<float> g(own.size() * kDim), back(own.size() * kDim);
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(i + 1);
    const std::vector<float> sent = g;
    REQUIRE(sum.push_rows(own, g, 1.f).applied);
    std::fill(g.begin(), g.end(), 1000.f);  // the caller's buffer, reused before anything completes
    sum.pull_rows(own, back);
    for (int c = 0; c < kDim; ++c) {
      const auto cc = static_cast<std::size_t>(c);
      CHECK(back[cc] == sent[cc] + sent[2 * kDim + cc]);         // key 4321: its two gradients summed
      CHECK(back[kDim + cc] == sent[kDim + cc]);                 // key 17
      CHECK(back[2 * kDim + cc] == back[cc]);                    // the same row twice
    }
    REQUIRE(sum.push_rows(own, sent, -1.f).applied);  // undone: every row back to exactly 0
    sum.pull_rows(own, back);
    for (float x : back) CHECK(x == 0.f);
  }
  MPI_Barrier(workers);

  // concurrent pushes: expected[row][c] = sum over workers, pushes and keys of that row
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
  std::map<std::uint64_t, std::vector<double>> own;  // own[row][c]: this worker's pushes to it so far
  for (int p = 0; p < kPushes; ++p) {
    const auto keys = batch_keys(me, p);
    grads.resize(keys.size() * kDim);
    for (std::size_t i = 0; i < keys.size(); ++i)
      for (int c = 0; c < kDim; ++c) grads[i * kDim + static_cast<std::size_t>(c)] = grad_value(me, p, i, c);
    const RowPush r = sum.push_rows(keys, grads, 1.f);
    REQUIRE(r.applied);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      auto& o = own[sum.row_of(keys[i])];
      o.resize(kDim);
      for (int c = 0; c < kDim; ++c) o[static_cast<std::size_t>(c)] += grads[i * kDim + static_cast<std::size_t>(c)];
    }
    if (p % 50 == 0) {  // a pull between pushes sees every push of this worker's so far, on every key
      pulled.resize(keys.size() * kDim);  // (the other worker's only add: every gradient is positive)
      sum.pull_rows(keys, pulled);
      std::size_t short_of_own = 0;
      for (std::size_t i = 0; i < keys.size(); ++i)
        for (int c = 0; c < kDim; ++c)
          short_of_own += pulled[i * kDim + static_cast<std::size_t>(c)] <
                          static_cast<float>(own[sum.row_of(keys[i])][static_cast<std::size_t>(c)]);
      CHECK(short_of_own == 0);
    }
  }
  const std::size_t own_pushes = me == 0 ? 2 : 0;  // (the two of the in-flight check above, 3 keys each)
  CHECK(sum.stats().pushes == kPushes + own_pushes);
  CHECK(sum.stats().keys_pushed == kPushes * batch_keys(me, 0).size() + 3 * own_pushes);
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
  CHECK_THROWS_WITH(sum.set_epsilon(0.1f), Catch::Contains("table 'sum' uses SGD, which reads no eps"));
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

// FTRL-Proximal (McMahan et al. 2013, Algorithm 1) on one coordinate, alpha = -scale: the
// reference the table's rows must follow.
struct FtrlRef {
  double w = 0, z = 0, n = 0;
  void step(double g, double alpha, double l1, double l2, double beta) {
    const double n1 = n + g * g, sigma = (std::sqrt(n1) - std::sqrt(n)) / alpha;
    z += g - sigma * w;
    n = n1;
    w = std::abs(z) <= l1 ? 0.0 : -(z - std::copysign(l1, z)) / ((beta + std::sqrt(n)) / alpha + l2);
  }
};

TEST_CASE("FTRL-Proximal rows follow its formula on one worker's rows, L1 keeping weights exactly 0",
          "[mpi][embedding]") {
  const int servers = std::getenv("ASYNCPS_TEST_SERVERS") ? std::atoi(std::getenv("ASYNCPS_TEST_SERVERS")) : 2;
  Session session(MPI_COMM_WORLD, table_layout(), {.num_servers = servers});
  const Roles& roles = session.roles();
  if (roles.is_server()) {
    ParameterServer ps(session, std::vector<float>{0.f});
    ps.serve();
    return;
  }
  WorkerClient w(session);
  EmbeddingTable ftrl(w, "ftrl");
  REQUIRE(ftrl.optimizer() == RowOptimizer::Ftrl);
  const std::vector<std::uint64_t> keys = {21, 22, 21};  // a duplicate: its gradients add
  std::vector<float> row(keys.size() * 2), grad(keys.size() * 2);
  CHECK_THROWS_WITH(ftrl.push_rows(keys, grad, 0.1f), Catch::Contains("table 'ftrl': FTRL's learning rate is -scale") && Catch::EndsWith(", got 0.1"));
  if (roles.worker_index() == 0) {  // the only writer: the formula holds exactly
    ftrl.pull_rows(keys, row);
    const bool share = ftrl.row_of(21) == ftrl.row_of(22);
    FtrlRef ref[2][2];  // [row of key 21, 22][column]: w as the table starts, z = n = 0
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 2; ++c) ref[r][c].w = row[static_cast<std::size_t>(r * 2 + c)];
    const float lr = 0.1f;
    for (int step = 0; step < 6; ++step) {
      // column 0: large gradients (its weight moves); column 1: tiny ones, |z| stays under l1 = 0.05
      for (std::size_t i = 0; i < keys.size(); ++i) {
        grad[i * 2] = static_cast<float>(0.5 - 0.3 * step + 0.1 * static_cast<double>(i));
        grad[i * 2 + 1] = 0.002f;
      }
      if (step == 3) ftrl.pull_rows(keys, row);  // a pull between pushes; otherwise w, z, n are the push's own
      REQUIRE(ftrl.push_rows(keys, grad, -lr).applied);
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 2; ++c) {
          const auto col = static_cast<std::size_t>(c);
          const double g = r == 0 ? grad[col] + grad[4 + col] : grad[2 + col];
          ref[r][c].step(g, lr, 0.05, 0.01, 1.0);
        }
    }
    ftrl.pull_rows(keys, row);
    if (!share) {
      for (int r = 0; r < 2; ++r) {
        CHECK(ref[r][0].w != 0);
        CHECK(row[static_cast<std::size_t>(r * 2)] == Approx(ref[r][0].w).epsilon(1e-4));
        CHECK(ref[r][1].w == 0);
        CHECK(row[static_cast<std::size_t>(r * 2 + 1)] == 0.f);  // exactly: L1 made it 0
      }
    }
    CHECK(row[0] == row[4]);  // the duplicate reads the same row
  }
}

namespace {
// One job of the checkpoint test: `servers` servers, the checkpoint directory `dir` (its final
// save at the end). `work` runs on worker 0 (world rank `servers`) between the tables' creation
// and finish(); `restored` is what ParameterServer::restored() said on the servers.
template <class Work>
void table_job(int servers, const std::string& dir, Work work, bool* restored = nullptr, bool dense_step = true,
               double save_secs = 0) {
  Options o;
  o.num_servers = servers;
  o.checkpoint.dir = dir;
  o.checkpoint.save_secs = save_secs;  // 0: the final save only
  Session session(MPI_COMM_WORLD, table_layout(), o);
  if (session.roles().is_server()) {
    ParameterServer ps(session, std::vector<float>{0.f});
    if (restored) *restored = ps.restored();
    ps.serve();
    return;
  }
  WorkerClient w(session);
  EmbeddingTable sum(w, "sum"), ada(w, "ada");
  if (w.worker_index() == 0) {
    work(w, sum, ada);
    if (dense_step) {  // (the job's end saves with or without one: the rows moved)
      const std::vector<float> one{1.f};
      w.push(one, 1.f);
      w.next_step();
    }
  }
  w.finish();
}
}  // namespace

TEST_CASE("tables survive a checkpoint: rows and Adagrad accumulators restore on another number of servers",
          "[mpi][embedding][checkpoint]") {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // saved by 2 servers and restored by 1 (np4), or saved by 1 and restored by 2 (np3)
  const int first = std::getenv("ASYNCPS_TEST_SERVERS") ? std::atoi(std::getenv("ASYNCPS_TEST_SERVERS")) : 2;
  const int second = first == 1 ? 2 : 1;
  char dir[64] = "/tmp/asyncps-table-ckpt-XXXXXX";
  if (rank == 0 && !::mkdtemp(dir)) dir[0] = '\0';
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  REQUIRE(dir[0] != '\0');
  const std::vector<std::uint64_t> keys = {5, 77, 123456, 999, 3, 4242};  // rows on every server
  const std::size_t n_sum = keys.size() * kDim, n_ada = keys.size() * 3;
  std::vector<float> sum_before(n_sum), ada_before(n_ada), ftrl_before(keys.size() * 2);
  table_job(first, dir, [&](WorkerClient& w, EmbeddingTable& sum, EmbeddingTable& ada) {
    EmbeddingTable ftrl(w, "ftrl");
    std::vector<float> gf(keys.size() * 2);
    for (std::size_t i = 0; i < gf.size(); ++i) gf[i] = 0.3f * static_cast<float>(i % 3) - 0.25f;
    for (int p = 0; p < 3; ++p) ftrl.push_rows(keys, gf, -0.2f);
    ftrl.pull_rows(keys, ftrl_before);
    std::vector<float> g(n_sum), ga(n_ada);
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(i % 7) + 0.5f;
    for (std::size_t i = 0; i < ga.size(); ++i) ga[i] = 0.1f * static_cast<float>(i % 5) - 0.2f;
    for (int p = 0; p < 3; ++p) {
      sum.push_rows(keys, g, 1.f);
      ada.push_rows(keys, ga, -0.05f);
    }
    sum.pull_rows(keys, sum_before);
    ada.pull_rows(keys, ada_before);
  });
  MPI_Bcast(sum_before.data(), static_cast<int>(n_sum), MPI_FLOAT, first, MPI_COMM_WORLD);
  MPI_Bcast(ada_before.data(), static_cast<int>(n_ada), MPI_FLOAT, first, MPI_COMM_WORLD);
  MPI_Bcast(ftrl_before.data(), static_cast<int>(ftrl_before.size()), MPI_FLOAT, first, MPI_COMM_WORLD);
  // every rank reads the final save: what it holds is what worker 0 pulled (CHECKs, not REQUIREs,
  // up to the second job: a rank that left the test case here would leave the others waiting)
  const auto saved = list_checkpoints(dir);
  CHECK(saved.size() == 1);
  CheckpointData c;
  if (!saved.empty()) CHECK_NOTHROW(c = read_checkpoint(saved.front(), table_layout()));
  CHECK(c.num_servers == first);
  const bool have = c.tables.size() == 3 && !c.tables[1].accumulators.empty() && c.tables[2].accumulators.size() == 83 * 4;
  CHECK(have);
  if (!have) {  // (what the second job's checks read: a failure above is reported, the job still runs)
    c.tables.assign(3, TableData{});
    c.tables[2].values.assign(83 * 2, 0.f);
    c.tables[2].accumulators.assign(83 * 4, 0.f);
    c.tables[0].values.assign(kRows * kDim, 0.f);
    c.tables[1].values.assign(97 * 3, 0.f);
    c.tables[1].accumulators.assign(97, 0.f);
  }
  bool same = true;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const std::uint64_t r_sum = table_row(keys[k], kRows), r_ada = table_row(keys[k], 97);
    for (int col = 0; col < kDim; ++col) same = same && c.tables[0].values[r_sum * kDim + col] == sum_before[k * kDim + col];
    for (int col = 0; col < 3; ++col) same = same && c.tables[1].values[r_ada * 3 + col] == ada_before[k * 3 + col];
    const std::uint64_t r_ftrl = table_row(keys[k], 83);
    for (int col = 0; col < 2; ++col) same = same && c.tables[2].values[r_ftrl * 2 + col] == ftrl_before[k * 2 + col];
  }
  CHECK(same);
  const std::uint64_t r5 = table_row(5, 97);
  CHECK(c.tables[1].accumulators[r5] > 0.25f);  // (3 pushes added g^2 to it)
  const std::uint64_t f5 = table_row(5, 83);  // FTRL's z then n beside it: n = 3 g^2 per column
  CHECK(c.tables[2].accumulators[f5 * 4 + 2] == Approx(3 * 0.25 * 0.25).epsilon(1e-5));
  CHECK(c.tables[2].accumulators[f5 * 4 + 3] == Approx(3 * 0.05 * 0.05).epsilon(1e-5));
  CHECK(c.tables[2].accumulators[f5 * 4] != 0.f);

  // the second job restores it on the other number of servers
  std::vector<float> sum_after(n_sum), ada_after(n_ada), ada_stepped(3), ftrl_after(keys.size() * 2), ftrl_stepped(2);
  bool restored = false;
  table_job(second, dir, [&](WorkerClient& w, EmbeddingTable& sum, EmbeddingTable& ada) {
    EmbeddingTable ftrl(w, "ftrl");
    ftrl.pull_rows(keys, ftrl_after);
    const std::vector<float> gf5 = {0.7f, -0.4f};
    ftrl.push_rows(std::vector<std::uint64_t>{5}, gf5, -0.2f);  // uses the restored w, z and n
    ftrl.pull_rows(std::vector<std::uint64_t>{5}, ftrl_stepped);
    sum.pull_rows(keys, sum_after);
    ada.pull_rows(keys, ada_after);
    const std::vector<std::uint64_t> k5 = {5};
    const std::vector<float> g5 = {0.3f, -0.6f, 0.9f};
    ada.push_rows(k5, g5, -0.1f);  // uses the restored accumulator
    ada.pull_rows(k5, ada_stepped);
  }, &restored);
  int worker0 = second;
  MPI_Bcast(sum_after.data(), static_cast<int>(n_sum), MPI_FLOAT, worker0, MPI_COMM_WORLD);
  MPI_Bcast(ada_after.data(), static_cast<int>(n_ada), MPI_FLOAT, worker0, MPI_COMM_WORLD);
  MPI_Bcast(ada_stepped.data(), 3, MPI_FLOAT, worker0, MPI_COMM_WORLD);
  MPI_Bcast(ftrl_after.data(), static_cast<int>(ftrl_after.size()), MPI_FLOAT, worker0, MPI_COMM_WORLD);
  MPI_Bcast(ftrl_stepped.data(), 2, MPI_FLOAT, worker0, MPI_COMM_WORLD);
  CHECK(ftrl_after == ftrl_before);
  for (int col = 0; col < 2; ++col) {  // FTRL after the restore, from the saved w, z and n
    FtrlRef r{c.tables[2].values[f5 * 2 + static_cast<std::uint64_t>(col)], c.tables[2].accumulators[f5 * 4 + static_cast<std::uint64_t>(col)],
              c.tables[2].accumulators[f5 * 4 + 2 + static_cast<std::uint64_t>(col)]};
    r.step(col == 0 ? 0.7 : -0.4, 0.2, 0.05, 0.01, 1.0);
    CHECK(ftrl_stepped[static_cast<std::size_t>(col)] == Approx(r.w).epsilon(1e-4).margin(1e-7));
  }
  if (rank < second) CHECK(restored);
  CHECK(sum_after == sum_before);
  CHECK(ada_after == ada_before);
  // Adagrad after the restore: acc' = acc + mean(g^2); row += -0.1 g / (sqrt(acc') + 1e-8)
  const double acc = c.tables[1].accumulators[r5] + (0.09 + 0.36 + 0.81) / 3;
  const double g5[3] = {0.3, -0.6, 0.9};
  for (int col = 0; col < 3; ++col)
    CHECK(ada_stepped[static_cast<std::size_t>(col)] ==
          Approx(c.tables[1].values[r5 * 3 + col] - 0.1 * g5[col] / (std::sqrt(acc) + 1e-8)).epsilon(1e-5));
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::filesystem::remove_all(dir);
}

TEST_CASE("rows pushed without a dense step are saved at the job's end", "[mpi][embedding][checkpoint]") {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char dir[64] = "/tmp/asyncps-rows-only-XXXXXX";
  if (rank == 0 && !::mkdtemp(dir)) dir[0] = '\0';
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  REQUIRE(dir[0] != '\0');
  const std::vector<std::uint64_t> keys = {7, 4242, 99};
  std::vector<float> pulled(keys.size() * kDim);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int servers = size > 2 ? 2 : 1;
  table_job(servers, dir, [&](WorkerClient&, EmbeddingTable& sum, EmbeddingTable&) {
    std::vector<float> g(pulled.size(), 0.25f);
    for (int p = 0; p < 4; ++p) sum.push_rows(keys, g, 1.f);  // the rows move; the global step stays 0
    sum.pull_rows(keys, pulled);
  }, nullptr, /*dense_step=*/false);
  MPI_Bcast(pulled.data(), static_cast<int>(pulled.size()), MPI_FLOAT, servers, MPI_COMM_WORLD);
  const auto saved = list_checkpoints(dir);
  CHECK(saved.size() == 1);
  CheckpointData c;
  if (!saved.empty()) CHECK_NOTHROW(c = read_checkpoint(saved.front(), table_layout()));
  bool same = !c.tables.empty();
  for (std::size_t k = 0; k < keys.size() && same; ++k)
    for (int col = 0; col < kDim; ++col)
      same = same && c.tables[0].values[table_row(keys[k], kRows) * kDim + col] == pulled[k * kDim + col] &&
             pulled[k * kDim + col] == 1.f;  // 4 pushes of 0.25 onto 0
  CHECK(same);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::filesystem::remove_all(dir);
}

namespace {
// The files in `dir` (names, sorted); shards_only: the shard files alone.
std::vector<std::string> ckpt_files(const std::string& dir, bool shards_only = false) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (!shards_only || e.path().filename().string().find(".shard-") != std::string::npos)
      out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}
// Row `key`'s first column in the newest checkpoint of `dir` (-1: none could be read).
float saved_value(const std::string& dir, std::uint64_t key) {
  const auto saved = list_checkpoints(dir);
  if (saved.size() != 1) return -1.f;
  try {
    const CheckpointData c = read_checkpoint(saved.front(), table_layout());
    return c.global_step == 0 ? c.tables[0].values[table_row(key, kRows) * kDim] : -1.f;
  } catch (const Error&) {
    return -1.f;
  }
}
// Waits `seconds` while entering MPI (a pull every 20 ms: over pt2pt the row pushes and the
// worker's "rows moved" signal progress only then).
void wait_pulling(EmbeddingTable& sum, const std::vector<std::uint64_t>& keys, double seconds) {
  std::vector<float> tmp(keys.size() * kDim);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    sum.pull_rows(keys, tmp);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}
}  // namespace

TEST_CASE("rows pushed without a dense step are saved every save_secs, each save replacing the one before",
          "[mpi][embedding][checkpoint]") {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char dir[64] = "/tmp/asyncps-rows-periodic-XXXXXX";
  if (rank == 0 && !::mkdtemp(dir)) dir[0] = '\0';
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  REQUIRE(dir[0] != '\0');
  const int servers = size > 3 ? 2 : 1;
  const std::vector<std::uint64_t> keys = {7, 4242, 99};
  const std::vector<float> g(keys.size() * kDim, 0.25f);
  std::vector<float> pulled(keys.size() * kDim);
  // what worker 0 saw: [0] a save during the pushes, [1] the saved value after them, [2] pulled,
  // [3] 1 if the files stayed the same for 0.6 s without a push
  float seen[4] = {-1.f, -1.f, -1.f, 0.f};
  auto pushes = [&](EmbeddingTable& sum, int n, bool look) {
    for (int p = 0; p < n; ++p) {
      sum.push_rows(keys, g, 1.f);  // the rows move; the global step stays 0
      wait_pulling(sum, keys, 0.05);
      if (look && p == n / 2) seen[0] = saved_value(dir, 7);  // (0.2 s saves: some by now)
    }
    // the worker tells server 0 of the last pushes with a pull after them: the next save holds all
    wait_pulling(sum, keys, 0.8);
    seen[1] = saved_value(dir, 7);
    sum.pull_rows(keys, pulled);
    seen[2] = pulled[0];
    const auto before = ckpt_files(dir);
    wait_pulling(sum, keys, 0.6);  // three save periods with nothing pushed
    seen[3] = ckpt_files(dir) == before ? 1.f : 0.f;
  };
  table_job(servers, dir, [&](WorkerClient&, EmbeddingTable& sum, EmbeddingTable&) { pushes(sum, 16, true); },
            nullptr, /*dense_step=*/false, /*save_secs=*/0.2);
  MPI_Bcast(seen, 4, MPI_FLOAT, servers, MPI_COMM_WORLD);
  INFO("worker 0 saw: during " << seen[0] << ", after " << seen[1] << ", pulled " << seen[2] << ", idle " << seen[3]);
  CHECK(seen[2] == 16 * 0.25f);
  CHECK(seen[0] >= 0.25f);          // a periodic save while the rows moved and the step did not
  CHECK(seen[0] < seen[2]);         // ... taken before the last pushes
  CHECK(seen[1] == seen[2]);        // a later save of the same step holds them all
  CHECK(seen[3] == 1.f);            // nothing moved: nothing saved again
  // after the job: one checkpoint, one shard per server (the replaced saves' removed)
  const auto restored_from = ckpt_files(dir, true);
  CHECK(restored_from.size() == static_cast<std::size_t>(servers));
  CHECK(saved_value(dir, 7) == seen[2]);

  // a run that restores step 0 saves it again under new names: the files it restored from are
  // never written over (a kill mid-save leaves them whole), and are removed once replaced
  table_job(servers, dir, [&](WorkerClient&, EmbeddingTable& sum, EmbeddingTable&) { pushes(sum, 4, false); },
            nullptr, /*dense_step=*/false, /*save_secs=*/0.2);
  MPI_Bcast(seen, 4, MPI_FLOAT, servers, MPI_COMM_WORLD);
  CHECK(seen[2] == 20 * 0.25f);
  CHECK(seen[1] == seen[2]);
  CHECK(saved_value(dir, 7) == seen[2]);
  const auto files = ckpt_files(dir, true);
  std::vector<std::string> kept_old;
  for (const auto& f : files)
    if (std::find(restored_from.begin(), restored_from.end(), f) != restored_from.end()) kept_old.push_back(f);
  CHECK(kept_old == std::vector<std::string>{});  // every shard is new
  CHECK(files.size() == static_cast<std::size_t>(servers));
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::filesystem::remove_all(dir);
}
