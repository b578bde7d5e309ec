// OSU-style benchmark of libasyncps's push (MPI_Accumulate) and pull (MPI_Get_accumulate or
// MPI_Get), each with its flush, through the library's own WorkerClient, beside a local memcpy
// and axpy of the same bytes (the physical limit on one node).
//
//   mpirun -np 2 build/bin/bench_push_pull [--min_bytes 4] [--max_bytes 67108864] [--csv out.csv]
//   mpirun -np 4 build/bin/bench_push_pull ...   # 3 workers push and pull at once
//
// Rank 0 serves; every other rank is a worker running the same loop; worker 0 reports.
// Sizes double; the MNIST arena (9,098 floats) is always included.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "asyncps/asyncps.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Row {
  std::size_t bytes;
  double push_us, pull_us, step_us, memcpy_us, axpy_us;
};

int iterations_for(std::size_t bytes) {
  if (bytes <= 64 * 1024) return 2000;
  if (bytes <= 1024 * 1024) return 200;
  return 20;
}

// Best of 3 timings of `iters` calls of fn, in microseconds per call.
template <class Fn>
double time_us(int iters, Fn fn) {
  double best = 1e300;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) fn();
    best = std::min(best, std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters);
  }
  return best;
}

Row measure(std::size_t floats, const asyncps::Options& options, bool report) {
  asyncps::ParamLayout layout;
  layout.add("arena", {static_cast<std::int64_t>(floats)});
  asyncps::Session session(MPI_COMM_WORLD, layout, options);
  Row row{floats * sizeof(float), 0, 0, 0, 0, 0};
  if (session.roles().is_server()) {
    asyncps::ParameterServer ps(session, std::vector<float>(floats, 0.f));
    ps.serve();
    return row;
  }
  asyncps::WorkerClient w(session);
  std::vector<float> params(floats), grad(floats, 1e-6f), local(floats, 0.f);
  const int iters = iterations_for(row.bytes);
  for (int i = 0; i < std::min(iters, 50); ++i) w.push(grad, 1.f), w.pull(params);  // warm-up, skipped
  row.push_us = time_us(iters, [&] { w.push(grad, -0.01f); });
  row.pull_us = time_us(iters, [&] { w.pull(params); });
  row.step_us = time_us(iters, [&] { w.pull(params); w.push(grad, -0.01f); });
  if (report) {
    // the same bytes moved locally: memcpy (pull's limit) and axpy y += a*x (push's limit)
    row.memcpy_us = time_us(iters, [&] { std::memcpy(params.data(), local.data(), row.bytes); asm volatile("" ::: "memory"); });
    row.axpy_us = time_us(iters, [&] {
      for (std::size_t i = 0; i < floats; ++i) local[i] += -0.01f * grad[i];
      asm volatile("" ::: "memory");
    });
  }
  w.finish();
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  asyncps::MpiEnvironment mpi(&argc, &argv);
  try {
    std::size_t min_bytes = 4, max_bytes = 64u << 20;
    std::string csv;
    asyncps::Options options;
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string a = argv[i];
      if (a == "--min_bytes") min_bytes = std::stoull(argv[i + 1]);
      else if (a == "--max_bytes") max_bytes = std::stoull(argv[i + 1]);
      else if (a == "--csv") csv = argv[i + 1];
      else if (a == "--pull") options.pull = std::string(argv[i + 1]) == "get" ? asyncps::PullMethod::Get : asyncps::PullMethod::GetAccumulate;
      else if (a == "--ps") options.num_servers = std::stoi(argv[i + 1]);
      else throw asyncps::ConfigError("bench_push_pull: unknown option " + a);
    }
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const bool report = rank == options.num_servers;  // worker 0
    std::vector<std::size_t> sizes;
    std::size_t b = 4;
    while (b < min_bytes) b *= 2;
    for (; b <= max_bytes; b *= 2) sizes.push_back(b);
    if (9098 * 4 >= min_bytes && 9098 * 4 <= max_bytes) sizes.push_back(9098 * 4);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    if (report) {
      std::printf("# libasyncps push/pull benchmark (OSU style)\n");
      std::printf("# Window creation: MPI_Win_allocate; Synchronization: MPI_Win_lock_all + MPI_Win_flush\n");
      std::printf("# Servers: %d, concurrent workers: %d, pull: %s\n", options.num_servers, size - options.num_servers,
                  options.pull == asyncps::PullMethod::Get ? "MPI_Get" : "MPI_Get_accumulate(MPI_NO_OP)");
      std::printf("%-12s %12s %12s %14s %12s %12s %12s %12s\n", "# Size(B)", "push(us)", "pull(us)", "push+pull(us)",
                  "memcpy(us)", "axpy(us)", "step/limit", "push MB/s");
    }
    std::FILE* out = (report && !csv.empty()) ? std::fopen(csv.c_str(), "w") : nullptr;
    if (out) std::fprintf(out, "bytes,push_us,pull_us,step_us,memcpy_us,axpy_us,workers\n");
    for (std::size_t b : sizes) {
      const Row r = measure(b / 4, options, report);
      if (!report) continue;
      std::printf("%-12zu %12.2f %12.2f %14.2f %12.2f %12.2f %12.2f %12.0f\n", r.bytes, r.push_us, r.pull_us, r.step_us,
                  r.memcpy_us, r.axpy_us, r.step_us / (r.memcpy_us + r.axpy_us), static_cast<double>(r.bytes) / r.push_us);
      std::fflush(stdout);
      if (out)
        std::fprintf(out, "%zu,%.4f,%.4f,%.4f,%.4f,%.4f,%d\n", r.bytes, r.push_us, r.pull_us, r.step_us, r.memcpy_us,
                     r.axpy_us, size - options.num_servers);
    }
    if (out) std::fclose(out);
  } catch (const std::exception& e) {
    asyncps::abort_job(e.what());
  }
  return 0;
}
