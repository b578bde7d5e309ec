// Proves: tables that share rows (TableSpec::share_rows_with) behave exactly as the same tables
// stored apart, while an EmbeddingGroup moves them in fewer operations: their seeded starts are
// each table's own; concurrent group pushes from 2 workers, mixed with one table's own pushes,
// sum exactly per table and leave the other tables' columns alone; row-wise Adagrad in a group
// gives bit for bit the rows and accumulators of the same tables stored apart; a non-finite
// gradient in any table of a group call sends nothing for any; the calls refuse bad groups, bad
// buffers, another thread and a finished worker with one message; and the grouped tables restore from a checkpoint on another
// number of servers, read back per table; a prefetch (prefetch_rows) taken by the next pull of the
// same keys reads what a plain pull then reads, this worker's pushes since included (Adagrad's
// accumulators too: bit for bit the tables apart), a pull of other keys drops it, and in the
// training loop's order every push still counts exactly. (np4: 2 servers + 2 workers, also
// over osc pt2pt; np3: 1 server + 2 workers.)
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
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
constexpr std::uint64_t kRows = 600;
constexpr int kPushes = 200;

// Two pairs with the same specs: "wide"+"deep" share rows, "wide_apart"+"deep_apart" do not;
// "seeded" (shares wide's rows) starts from its seed, and "other" is a group of its own.
ParamLayout group_layout() {
  ParamLayout l;
  l.add("bias", {1});
  l.add_table("wide", {.rows = kRows, .dim = 1, .optimizer = RowOptimizer::Adagrad, .init_scale = 0.f});
  l.add_table("other", {.rows = 50, .dim = 2, .init_scale = 0.f});
  l.add_table("deep", {.rows = kRows, .dim = 3, .init_scale = 0.f, .share_rows_with = "wide"});
  l.add_table("seeded", {.rows = kRows, .dim = 2, .init_scale = 0.3f, .seed = 9, .share_rows_with = "deep"});
  l.add_table("wide_apart", {.rows = kRows, .dim = 1, .optimizer = RowOptimizer::Adagrad, .init_scale = 0.f});
  l.add_table("deep_apart", {.rows = kRows, .dim = 3, .init_scale = 0.f});
  return l;
}

std::vector<std::uint64_t> batch_keys(int w, int p) {
  std::vector<std::uint64_t> k = {1, 2, 2, 3, 3, 3};  // duplicates
  for (int i = 0; i < 24; ++i) k.push_back(static_cast<std::uint64_t>((p * 41 + i * 97 + w * 5) % 3000));
  return k;
}
float grad_value(int w, int p, std::size_t i, int c) {
  return static_cast<float>(((w + 2) * 5 + p + static_cast<int>(i) * 3 + c) % 7 + 1);
}
std::vector<float> grads_for(int w, int p, std::size_t keys, int dim, int salt) {
  std::vector<float> g(keys * static_cast<std::size_t>(dim));
  for (std::size_t i = 0; i < keys; ++i)
    for (int c = 0; c < dim; ++c) g[i * static_cast<std::size_t>(dim) + static_cast<std::size_t>(c)] = grad_value(w, p + salt, i, c);
  return g;
}
int test_servers() { return std::getenv("ASYNCPS_TEST_SERVERS") ? std::atoi(std::getenv("ASYNCPS_TEST_SERVERS")) : 2; }
}  // namespace

TEST_CASE("row groups: own starts, exact concurrent sums per table, Adagrad as if apart, refusals",
          "[mpi][embedding]") {
  const int servers = test_servers();
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm workers;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank < servers ? 0 : 1, world_rank, &workers);
  Session session(MPI_COMM_WORLD, group_layout(), {.num_servers = servers});
  const Roles& roles = session.roles();
  if (roles.is_server()) {
    ParameterServer ps(session, std::vector<float>{0.f});
    ps.serve();
    MPI_Comm_free(&workers);
    return;
  }
  WorkerClient w(session);
  EmbeddingTable wide(w, "wide"), deep(w, "deep"), seeded(w, "seeded");
  EmbeddingGroup pair(w, {"wide", "deep"}), all(w, {"deep", "seeded", "wide"});
  CHECK(pair.size() == 2);
  CHECK(pair.name(1) == "deep");
  CHECK(pair.dim(1) == 3);
  CHECK(pair.rows() == kRows);
  const int me = roles.worker_index();
  const ParamLayout& layout = session.layout();

  // each table starts as its own spec says, read through a group or alone
  std::vector<std::uint64_t> probe;
  for (std::uint64_t k = 0; k < 60; ++k) probe.push_back(k * 13);
  std::vector<float> d0(probe.size() * 3), s0(probe.size() * 2), w0(probe.size()), s_alone(probe.size() * 2);
  const std::span<float> outs[] = {d0, s0, w0};
  all.pull_rows(probe, outs);
  seeded.pull_rows(probe, s_alone);
  CHECK(s0 == s_alone);
  bool spread = false;
  for (std::size_t i = 0; i < probe.size(); ++i) {
    const std::uint64_t r = seeded.row_of(probe[i]);
    for (int c = 0; c < 2; ++c) {
      CHECK(s0[i * 2 + c] == table_initial_value(layout.table("seeded"), r, c));
      spread = spread || s0[i * 2 + c] != s0[0];
    }
    CHECK(w0[i] == 0.f);
    for (int c = 0; c < 3; ++c) CHECK(d0[i * 3 + c] == 0.f);
  }
  CHECK(spread);

  // the refusals, each one message naming the call
  CHECK_THROWS_WITH(EmbeddingGroup(w, {}), Catch::Contains("at least one table"));
  CHECK_THROWS_WITH(EmbeddingGroup(w, {"wide", "nope"}), Catch::Contains("no embedding table named"));
  CHECK_THROWS_WITH(EmbeddingGroup(w, {"wide", "deep", "wide"}), Catch::Contains("named twice"));
  CHECK_THROWS_WITH(EmbeddingGroup(w, {"wide", "other"}), Catch::Contains("do not share rows"));
  CHECK_THROWS_WITH(EmbeddingGroup(w, {"wide", "wide_apart"}), Catch::Contains("do not share rows"));
  const std::vector<std::uint64_t> two = {5, 6};
  std::vector<float> w2(2), d2(6), bad(5);
  {
    const std::span<float> one[] = {w2};
    CHECK_THROWS_WITH(pair.pull_rows(two, one), Catch::Contains("one buffer per table of the group (2), got 1"));
    const std::span<float> wrong[] = {w2, bad};
    CHECK_THROWS_WITH(pair.pull_rows(two, wrong), Catch::Contains("EmbeddingGroup::pull_rows (table 'deep')") &&
                                                       Catch::Contains("keys x dim 3"));
    const std::span<const float> gwrong[] = {w2, bad};
    CHECK_THROWS_WITH(pair.push_rows(two, gwrong, 1.f), Catch::Contains("EmbeddingGroup::push_rows (table 'deep')"));
    const std::span<const float> g[] = {w2, d2};
    CHECK_THROWS_WITH(pair.push_rows(two, g, std::nanf("")), Catch::Contains("EmbeddingGroup::push_rows"));
  }
  // a NaN in the second table's gradient sends nothing for either
  MPI_Barrier(workers);
  if (me == 0) {
    std::vector<float> gw = {1.f, 1.f}, gd(6, 1.f);
    gd[4] = std::numeric_limits<float>::infinity();
    const std::span<const float> g[] = {gw, gd};
    const RowPush r = pair.push_rows(two, g, 1.f);
    CHECK_FALSE(r.applied);
    CHECK(r.nonfinite);
    CHECK(pair.stats().nonfinite == 1);
    CHECK(deep.stats().nonfinite == 1);
    CHECK(wide.stats().nonfinite == 0);
    const std::span<float> out[] = {w2, d2};
    pair.pull_rows(two, out);
    for (float x : w2) CHECK(x == 0.f);
    for (float x : d2) CHECK(x == 0.f);
  }
  MPI_Barrier(workers);

  // concurrent pushes: deep's rows get the group's pushes and deep's own; "other" (a group of its
  // own) gets its own; seeded, never pushed, keeps its start; wide (Adagrad) is checked below
  std::map<std::uint64_t, std::vector<double>> expected;  // deep's rows
  for (int ww = 0; ww < roles.num_workers(); ++ww)
    for (int p = 0; p < kPushes; ++p) {
      const auto keys = batch_keys(ww, p);
      const auto g = grads_for(ww, p, keys.size(), 3, 0);
      const auto own = grads_for(ww, p, keys.size(), 3, 1000);
      for (std::size_t i = 0; i < keys.size(); ++i) {
        auto& e = expected[deep.row_of(keys[i])];
        e.resize(3);
        for (int c = 0; c < 3; ++c) e[static_cast<std::size_t>(c)] += g[i * 3 + c] + (p % 3 == 0 ? own[i * 3 + c] : 0.0);
      }
    }
  const std::uint64_t runs_before = pair.stats().runs;
  for (int p = 0; p < kPushes; ++p) {
    const auto keys = batch_keys(me, p);
    const auto gd = grads_for(me, p, keys.size(), 3, 0);
    const std::vector<float> gw(keys.size(), 0.f);  // (wide's Adagrad step of a zero gradient is 0)
    const std::span<const float> g[] = {gw, gd};
    REQUIRE(pair.push_rows(keys, g, 1.f).applied);
    if (p % 3 == 0) REQUIRE(deep.push_rows(keys, grads_for(me, p, keys.size(), 3, 1000), 1.f).applied);
  }
  CHECK(pair.stats().pushes == static_cast<std::uint64_t>(kPushes));  // (the refused one is not counted)
  CHECK(pair.stats().runs > runs_before);
  CHECK(deep.stats().pushes == static_cast<std::uint64_t>(kPushes + (kPushes + 2) / 3));
  w.drain();
  std::vector<std::uint64_t> keys;
  for (std::uint64_t k = 0; k < 3000; ++k)
    if (expected.count(deep.row_of(k))) keys.push_back(k);
  std::vector<float> dd(keys.size() * 3), ss(keys.size() * 2), ww_(keys.size());
  const std::span<float> outs2[] = {dd, ss, ww_};
  all.pull_rows(keys, outs2);
  std::size_t wrong_sum = 0, moved_seed = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::uint64_t r = deep.row_of(keys[i]);
    for (int c = 0; c < 3; ++c) wrong_sum += dd[i * 3 + c] != static_cast<float>(expected[r][static_cast<std::size_t>(c)]);
    for (int c = 0; c < 2; ++c) moved_seed += ss[i * 2 + c] != table_initial_value(layout.table("seeded"), r, c);
    CHECK(ww_[i] == 0.f);
  }
  CHECK(wrong_sum == 0);
  CHECK(moved_seed == 0);
  CHECK(expected.size() > 100);
  // another thread: refused before anything is sent (MPI_THREAD_FUNNELED); a closed worker: refused
  std::thread other([&] {
    const std::span<float> out[] = {w2, d2};
    CHECK_THROWS_WITH(pair.pull_rows(two, out), Catch::Contains("another thread"));
    CHECK_THROWS_WITH(pair.prefetch_rows(two), Catch::Contains("another thread"));
    CHECK_THROWS_WITH(EmbeddingGroup(w, {"wide"}), Catch::Contains("another thread"));
  });
  other.join();
  w.finish();
  {
    const std::span<float> out[] = {w2, d2};
    const std::span<const float> g[] = {w2, d2};
    CHECK_THROWS_WITH(pair.pull_rows(two, out), Catch::Contains("after finish()"));
    CHECK_THROWS_WITH(pair.push_rows(two, g, 1.f), Catch::Contains("after finish()"));
    CHECK_THROWS_WITH(EmbeddingGroup(w, {"wide"}), Catch::Contains("after finish()"));
  }
  MPI_Comm_free(&workers);
}

TEST_CASE("row groups: row-wise Adagrad in a group gives bit for bit what the tables stored apart give, in fewer operations",
          "[mpi][embedding]") {
  Session session(MPI_COMM_WORLD, group_layout(), {.num_servers = test_servers()});
  if (session.roles().is_server()) {
    ParameterServer ps(session, std::vector<float>{0.f});
    ps.serve();
    return;
  }
  WorkerClient w(session);
  EmbeddingTable wide_apart(w, "wide_apart"), deep_apart(w, "deep_apart");
  EmbeddingGroup pair(w, {"wide", "deep"});
  if (w.worker_index() != 0) return;  // the only writer: both pairs see the same updates
  std::vector<float> gw, gd, pw, pd, aw, ad;
  for (int p = 0; p < 40; ++p) {
    const auto keys = batch_keys(0, p);
    gw = grads_for(0, p, keys.size(), 1, 7);
    for (float& x : gw) x = 0.25f * x - 1.f;
    gd = grads_for(0, p, keys.size(), 3, 3);
    pw.resize(keys.size()), pd.resize(keys.size() * 3), aw.resize(keys.size()), ad.resize(keys.size() * 3);
    if (p % 4 == 1) {  // pulls between some pushes (the accumulators then come from them)
      const std::span<float> out[] = {pw, pd};
      pair.pull_rows(keys, out);
      wide_apart.pull_rows(keys, aw);
      deep_apart.pull_rows(keys, ad);
      CHECK(pw == aw);
      CHECK(pd == ad);
    }
    const std::span<const float> g[] = {gw, gd};
    REQUIRE(pair.push_rows(keys, g, -0.1f).applied);
    REQUIRE(wide_apart.push_rows(keys, gw, -0.1f).applied);
    REQUIRE(deep_apart.push_rows(keys, gd, -0.1f).applied);
  }
  std::vector<std::uint64_t> keys;
  for (std::uint64_t k = 0; k < 3000; ++k) keys.push_back(k);
  pw.resize(keys.size()), pd.resize(keys.size() * 3), aw.resize(keys.size()), ad.resize(keys.size() * 3);
  const std::span<float> out[] = {pw, pd};
  pair.pull_rows(keys, out);
  wide_apart.pull_rows(keys, aw);
  deep_apart.pull_rows(keys, ad);
  CHECK(pw == aw);
  CHECK(pd == ad);
  bool moved = false;
  for (float x : pw) moved = moved || x != 0.f;
  CHECK(moved);
  // one operation per run for both tables: fewer than the two tables' own
  CHECK(pair.stats().runs < wide_apart.stats().runs + deep_apart.stats().runs);
  CHECK(pair.stats().runs > 0);
}

TEST_CASE("row groups survive a checkpoint: restored on another number of servers, read back per table",
          "[mpi][embedding][checkpoint]") {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int first = test_servers(), second = first == 1 ? 2 : 1;
  char dir[64] = "/tmp/asyncps-group-ckpt-XXXXXX";
  if (rank == 0 && !::mkdtemp(dir)) dir[0] = '\0';
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  REQUIRE(dir[0] != '\0');
  std::vector<std::uint64_t> keys;
  for (std::uint64_t k = 0; k < 400; ++k) keys.push_back(k * 7 + 1);  // rows on every server
  std::vector<float> w_before(keys.size()), d_before(keys.size() * 3), s_before(keys.size() * 2);
  auto job = [&](int servers, auto work) {
    Options o;
    o.num_servers = servers;
    o.checkpoint.dir = dir;
    o.checkpoint.save_secs = 0;  // the final save only
    Session session(MPI_COMM_WORLD, group_layout(), o);
    if (session.roles().is_server()) {
      ParameterServer ps(session, std::vector<float>{0.f});
      ps.serve();
      return;
    }
    WorkerClient w(session);
    EmbeddingGroup all(w, {"wide", "deep", "seeded"});
    if (w.worker_index() == 0) {
      work(all);
      const std::vector<float> one{1.f};
      w.push(one, 1.f);  // a step: the job's end saves
      w.next_step();
    }
    w.finish();
  };
  job(first, [&](EmbeddingGroup& all) {
    const auto gw = grads_for(0, 1, keys.size(), 1, 0), gd = grads_for(0, 2, keys.size(), 3, 0),
               gs = grads_for(0, 3, keys.size(), 2, 0);
    const std::span<const float> g[] = {gw, gd, gs};
    for (int p = 0; p < 3; ++p) all.push_rows(keys, g, -0.05f);
    const std::span<float> out[] = {w_before, d_before, s_before};
    all.pull_rows(keys, out);
  });
  MPI_Bcast(w_before.data(), static_cast<int>(w_before.size()), MPI_FLOAT, first, MPI_COMM_WORLD);
  MPI_Bcast(d_before.data(), static_cast<int>(d_before.size()), MPI_FLOAT, first, MPI_COMM_WORLD);
  MPI_Bcast(s_before.data(), static_cast<int>(s_before.size()), MPI_FLOAT, first, MPI_COMM_WORLD);
  // read back per table (CHECKs only up to the second job: no rank may leave early)
  const auto saved = list_checkpoints(dir);
  CHECK(saved.size() == 1);
  CheckpointData c;
  if (!saved.empty()) CHECK_NOTHROW(c = read_checkpoint(saved.front(), group_layout()));
  const bool have = c.tables.size() == 6;
  CHECK(have);
  if (have) {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const std::uint64_t r = table_row(keys[i], kRows);
      wrong += c.tables[0].values[r] != w_before[i];
      for (int col = 0; col < 3; ++col) wrong += c.tables[2].values[r * 3 + col] != d_before[i * 3 + col];
      for (int col = 0; col < 2; ++col) wrong += c.tables[3].values[r * 2 + col] != s_before[i * 2 + col];
      wrong += !(c.tables[0].accumulators[r] > 0.1f);  // (3 pushes added g^2 to wide's)
    }
    CHECK(wrong == 0);
    CHECK(c.tables[2].accumulators.empty());  // (deep: SGD)
  }
  std::vector<float> w_after(keys.size()), d_after(keys.size() * 3), s_after(keys.size() * 2);
  job(second, [&](EmbeddingGroup& all) {
    const std::span<float> out[] = {w_after, d_after, s_after};
    all.pull_rows(keys, out);
  });
  MPI_Bcast(w_after.data(), static_cast<int>(w_after.size()), MPI_FLOAT, second, MPI_COMM_WORLD);
  MPI_Bcast(d_after.data(), static_cast<int>(d_after.size()), MPI_FLOAT, second, MPI_COMM_WORLD);
  MPI_Bcast(s_after.data(), static_cast<int>(s_after.size()), MPI_FLOAT, second, MPI_COMM_WORLD);
  CHECK(w_after == w_before);
  CHECK(d_after == d_before);
  CHECK(s_after == s_before);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::filesystem::remove_all(dir);
}

TEST_CASE("prefetch: a pull of the same keys takes it with this worker's pushes since added; other keys drop it",
          "[mpi][embedding]") {
  const int servers = test_servers();
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm workers;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank < servers ? 0 : 1, world_rank, &workers);
  Session session(MPI_COMM_WORLD, group_layout(), {.num_servers = servers});
  if (session.roles().is_server()) {
    ParameterServer ps(session, std::vector<float>{0.f});
    ps.serve();
    MPI_Comm_free(&workers);
    return;
  }
  WorkerClient w(session);
  EmbeddingGroup pair(w, {"wide", "deep"});
  EmbeddingTable wide(w, "wide"), deep(w, "deep");
  const int me = w.worker_index();
  auto pull_pair = [&](const std::vector<std::uint64_t>& keys, std::vector<float>& pw, std::vector<float>& pd) {
    pw.resize(keys.size()), pd.resize(keys.size() * 3);
    const std::span<float> out[] = {pw, pd};
    pair.pull_rows(keys, out);
  };
  auto push_pair = [&](const std::vector<std::uint64_t>& keys, int p, float scale) {
    auto gw = grads_for(me, p, keys.size(), 1, 11);
    for (float& x : gw) x = 0.5f - 0.125f * x;
    const auto gd = grads_for(me, p, keys.size(), 3, 5);
    const std::span<const float> g[] = {gw, gd};
    REQUIRE(pair.push_rows(keys, g, scale).applied);
  };
  // worker 0 alone: what a taken prefetch returns equals a read made after the pushes
  MPI_Barrier(workers);
  if (me == 0) {
    const auto a = batch_keys(0, 1), b = batch_keys(0, 2);  // (they share rows 1, 2, 3 and others)
    std::vector<float> tw, td, rw, rd;
    // first, on fresh tables: prefetch, push, take, push again, against the same tables apart with
    // plain reads: bit for bit the same rows, so the Adagrad accumulators came with the prefetch
    // and got this worker's push added too (the second push steps by them)
    EmbeddingTable wide_apart(w, "wide_apart"), deep_apart(w, "deep_apart");
    auto push_apart = [&](const std::vector<std::uint64_t>& keys, int p, float scale) {
      auto gw = grads_for(me, p, keys.size(), 1, 11);
      for (float& x : gw) x = 0.5f - 0.125f * x;
      REQUIRE(wide_apart.push_rows(keys, gw, scale).applied);
      REQUIRE(deep_apart.push_rows(keys, grads_for(me, p, keys.size(), 3, 5), scale).applied);
    };
    pair.prefetch_rows(a);
    push_pair(b, 30, -0.05f);
    pull_pair(a, tw, td);
    push_pair(a, 31, -0.05f);
    pull_pair(a, tw, td);
    push_apart(b, 30, -0.05f);
    rw.resize(a.size()), rd.resize(a.size() * 3);
    wide_apart.pull_rows(a, rw);
    deep_apart.pull_rows(a, rd);
    push_apart(a, 31, -0.05f);
    wide_apart.pull_rows(a, rw);
    deep_apart.pull_rows(a, rd);
    CHECK(tw == rw);
    CHECK(td == rd);
    CHECK(pair.stats().prefetched == 1);
    for (int round = 0; round < 3; ++round) {
      pair.prefetch_rows(a);
      push_pair(b, round, -0.05f);                    // issued after the prefetch: added when it lands
      if (round == 2) push_pair(a, round + 10, -0.05f);  // two pushes in between
      pull_pair(a, tw, td);                           // takes it
      pull_pair(a, rw, rd);                           // a plain read
      CHECK(tw == rw);
      CHECK(td == rd);
    }
    CHECK(pair.stats().prefetched == 4);
    // other keys drop it: the pull reads anew, and counts nothing as prefetched
    pair.prefetch_rows(a);
    pull_pair(b, rw, rd);
    CHECK(pair.stats().prefetched == 4);  // (unchanged)
    std::vector<float> bw, bd;
    pull_pair(b, bw, bd);
    CHECK(rw == bw);
    CHECK(rd == bd);
    // a table's own handle takes a prefetch of its group made by the group, and the other way round
    pair.prefetch_rows(b);
    push_pair(a, 21, -0.05f);
    std::vector<float> only(b.size() * 3), direct(b.size() * 3);
    deep.pull_rows(b, only);
    deep.pull_rows(b, direct);
    CHECK(only == direct);
    CHECK(deep.stats().prefetched == 1);
    wide.prefetch_rows(a);
    pull_pair(a, tw, td);
    CHECK(pair.stats().prefetched == 5);
    pull_pair(a, rw, rd);
    CHECK(tw == rw);
    CHECK(td == rd);
  }
  MPI_Barrier(workers);
  // both workers: the training loop's order (pull taking the prefetch, prefetch the next, push)
  // leaves every push counted exactly, and each pull reads at least this worker's own pushes
  const std::vector<std::uint64_t> hot = {100, 101, 102};
  std::vector<float> before_w, before_d;
  pull_pair(hot, before_w, before_d);
  MPI_Barrier(workers);
  std::vector<float> pw, pd;
  double own = 0;
  pair.prefetch_rows(hot);
  std::size_t below = 0;
  for (int p = 0; p < 100; ++p) {
    pull_pair(hot, pw, pd);
    below += pd[0] < before_d[0] + static_cast<float>(own);
    pair.prefetch_rows(hot);
    std::vector<float> gw(hot.size(), 0.f), gd(hot.size() * 3, 1.f);
    const std::span<const float> g[] = {gw, gd};
    REQUIRE(pair.push_rows(hot, g, 1.f).applied);
    own += 1;
  }
  CHECK(below == 0);
  w.drain();  // (with a prefetch still in flight: dropped)
  pull_pair(hot, pw, pd);
  for (int c = 0; c < 3; ++c)
    CHECK(pd[static_cast<std::size_t>(c)] == before_d[static_cast<std::size_t>(c)] + 100.f * session.roles().num_workers());
  w.finish();
  CHECK_THROWS_WITH(pair.prefetch_rows(hot), Catch::Contains("after finish()"));
  MPI_Comm_free(&workers);
}
