// defines: run_allreduce
#include "allreduce.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "asyncps/embedding_table.h"
#include "asyncps/error.h"
#include "batches.h"
#include "net_counters.h"

namespace ctr_async {

namespace {

using Clock = std::chrono::steady_clock;

// A whole table on this rank, as the servers start it: rows x dim floats, and (Adagrad) one
// accumulator per row.
struct LocalTable {
  std::uint64_t rows = 0;
  int dim = 0;
  bool adagrad = false;
  std::vector<float> w, acc;  // (rows, dim), (rows)
  LocalTable(const asyncps::TableInfo& t) : rows(t.spec.rows), dim(t.spec.dim), adagrad(t.spec.optimizer == asyncps::RowOptimizer::Adagrad) {
    w.resize(rows * static_cast<std::uint64_t>(dim));
    if (adagrad) acc.resize(rows);
    for (std::uint64_t r = 0; r < rows; ++r) {
      for (int j = 0; j < dim; ++j) w[r * dim + j] = asyncps::table_initial_value(t, r, j);
      if (adagrad) acc[r] = asyncps::table_initial_value(t, r, dim);
    }
  }
  void lookup(std::span<const std::uint64_t> keys, std::vector<float>& out) const {
    out.resize(keys.size() * static_cast<std::size_t>(dim));
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const std::uint64_t r = asyncps::table_row(keys[i], rows);
      std::copy_n(w.begin() + static_cast<std::ptrdiff_t>(r * dim), dim, out.begin() + static_cast<std::ptrdiff_t>(i * dim));
    }
  }
  // grad: (rows, dim), summed over every rank. Every row with a gradient takes one step:
  // sgd w -= lr g; adagrad acc += mean(g*g), w -= lr g / (sqrt(acc) + eps) (the servers' rule).
  void apply(const float* grad, double lr) {
    constexpr double kEps = 1e-8;
    for (std::uint64_t r = 0; r < rows; ++r) {
      const float* g = grad + r * dim;
      double sq = 0;
      for (int j = 0; j < dim; ++j) sq += static_cast<double>(g[j]) * g[j];
      if (sq == 0) continue;
      double step = lr;
      if (adagrad) {
        acc[r] += static_cast<float>(sq / dim);
        step = lr / (std::sqrt(static_cast<double>(acc[r])) + kEps);
      }
      float* row = w.data() + r * dim;
      for (int j = 0; j < dim; ++j) row[j] -= static_cast<float>(step * g[j]);
    }
  }
};

void allreduce_sum(std::vector<float>& v) {
  constexpr std::size_t kChunk = std::size_t{1} << 28;  // (an int count)
  for (std::size_t at = 0; at < v.size(); at += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, v.size() - at));
    if (MPI_Allreduce(MPI_IN_PLACE, v.data() + at, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
      throw asyncps::Error("MPI_Allreduce of the model's gradient failed");
  }
}

// Every rank holds the whole tables twice (the rows and the all-reduced gradient): refused before
// allocating where its host's ranks together would take more than 90% of its memory (a
// std::bad_alloc, or the OOM killer, otherwise), as the servers' windows are.
void check_host_memory(const asyncps::ParamLayout& layout) {
  double floats = 0;
  for (const asyncps::TableInfo& t : layout.tables())
    floats += static_cast<double>(t.spec.rows) * (2.0 * t.spec.dim + (t.spec.optimizer == asyncps::RowOptimizer::Adagrad));
  MPI_Comm node = MPI_COMM_NULL;
  int on_host = 1;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_size(node, &on_host);
    MPI_Comm_free(&node);
  }
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  while (in >> key >> kb && key != "MemAvailable:") in.ignore(256, '\n');
  const double available = key == "MemAvailable:" ? kb * 1024 : 0, needed = 4 * floats * on_host;
  if (available > 0 && needed > 0.9 * available) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "--allreduce holds the whole tables on every rank: %.1f GB on this host (%d rank(s)), which has "
                  "%.1f GB of memory available: fewer rows (--rows), or the servers' tables (drop --allreduce)",
                  needed / 1e9, on_host, available / 1e9);
    throw asyncps::ConfigError(text);
  }
}

}  // namespace

int run_allreduce(const Config& c) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const ModelShape shape = c.shape();
  const asyncps::ParamLayout layout = c.layout();
  check_host_memory(layout);
  const ClickLog log(c.data);
  const std::size_t L = layout.size();
  std::vector<float> params(L);
  init_dense(layout, c.data.seed, params);
  LocalTable wide(layout.table("wide"));
  std::optional<LocalTable> deep;
  if (shape.deep) deep.emplace(layout.table("deep"));
  const std::size_t W = wide.w.size(), Dn = deep ? deep->w.size() : 0;
  std::vector<float> grad(L + W + Dn);  // [dense | wide table | deep table]: what every step all-reduces
  const double step_bytes = 4.0 * static_cast<double>(grad.size());
  if (rank == 0)
    std::printf("data-parallel (--allreduce): %d worker(s), %s, tables of %llu rows (%s rows), batch %d; every step "
                "all-reduces %.1f MB\n",
                size, shape.deep ? "wide & deep" : "hashed logistic regression", static_cast<unsigned long long>(c.rows),
                c.optimizer.c_str(), c.batch_size, 1e-6 * step_bytes);
  const RowSource rows = [&](std::span<const std::uint64_t> keys, std::vector<float>& w, std::vector<float>& d) {
    wide.lookup(keys, w);
    if (deep) deep->lookup(keys, d);
  };
  std::vector<float> wide_rows, deep_rows, logits;
  Batch batch;
  Grads grads;
  Example ex;
  // each: one step of every rank, but the last, where only the first training_steps mod size
  // ranks step (the others add a zero gradient): exactly --training_steps global steps
  const std::int64_t iterations = (c.training_steps + size - 1) / size;
  const int D = shape.dim;
  MPI_Barrier(MPI_COMM_WORLD);  // (the tables' set-up is not training)
  const net_counters::NetBytes wire0 = net_counters::read();
  EvalClock clock;
  double loss = 0;
  for (std::int64_t it = 1; it <= iterations; ++it) {
    const std::int64_t steps_so_far = std::min<std::int64_t>(it * size, c.training_steps);  // the job's, after this one
    std::fill(grad.begin(), grad.end(), 0.f);  // (a dense gradient, as nn.Embedding's without sparse=True)
    if ((it - 1) * size + rank < c.training_steps) {  // this rank steps in this iteration
      fill(log, 1 + static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(it - 1) * c.batch_size, c.batch_size,
           batch, ex);
      rows(batch.keys, wide_rows, deep_rows);
      loss = forward_backward(shape, layout, params, batch, wide_rows, deep_rows, logits, &grads);
      std::copy(grads.dense.begin(), grads.dense.end(), grad.begin());
      for (std::size_t i = 0; i < batch.keys.size(); ++i) {
        const std::uint64_t r = asyncps::table_row(batch.keys[i], c.rows);
        grad[L + r] += grads.wide[i];
        if (deep)
          for (int j = 0; j < D; ++j) grad[L + W + r * D + j] += grads.deep[i * D + j];
      }
    }
    allreduce_sum(grad);
    for (std::size_t k = 0; k < L; ++k) params[k] -= static_cast<float>(c.learning_rate) * grad[k];
    wide.apply(grad.data() + L, c.embedding_lr);
    if (deep) deep->apply(grad.data() + L + W, c.embedding_lr);
    if (rank == 0 && it % c.log_every == 0) {
      std::printf("After %lld training steps (%lld global steps), log-loss on training batch is %.4f.\n",
                  static_cast<long long>(it), static_cast<long long>(steps_so_far), loss);
      std::fflush(stdout);
    }
    if (rank == 0 && c.eval_every > 0 && it % c.eval_every == 0) {  // (the others wait in the next all-reduce)
      clock.pause();
      print_eval(steps_so_far, c.batch_size, clock.training_seconds(),
                 evaluate(log, shape, layout, params, c.test_examples, rows));
      clock.resume();
    }
  }
  const double seconds = clock.training_seconds();  // (without rank 0's evaluations: --eval_every)
  const net_counters::NetBytes wire1 = net_counters::read();
  if (rank == 0) {
    // a ring all-reduce sends and receives 2 (n - 1) / n of the buffer per rank
    print_bytes_per_step(2.0 * (size - 1) / size * step_bytes,
                         (wire1.rx + wire1.tx - wire0.rx - wire0.tx) / static_cast<double>(iterations));
    print_result(c.training_steps, c.training_steps, c.batch_size, size, seconds, c.test_examples,
                 evaluate(log, shape, layout, params, c.test_examples, rows));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return 0;
}

}  // namespace ctr_async
