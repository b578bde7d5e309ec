// OSU-style benchmark of libasyncps's one-sided operations, beside raw MPI and local memory.
//
//   mpirun -np 2 build/bin/bench_push_pull [--min_bytes 4] [--max_bytes 67108864]
//                                          [--csv out.csv] [--json out.json] [--ps 1]
//                                          [--chunk_bytes B] [--server_progress auto|poll|wake]
//                                          [--server_poll_us U] [--server_spin_us U] [--timeline F]
//   mpirun -np 4 --oversubscribe build/bin/bench_push_pull ...   # 3 workers at once
//
// Rank 0 serves; every other rank is a worker running the same loop at the same time (they
// start each timed repetition together, after a barrier among the workers). For every size:
//
//   library (one MPI_Win_lock_all epoch for the worker's life, MPI_Win_flush per operation,
//   through asyncps::WorkerClient, 1 MiB chunks):
//     push        WorkerClient::push   = scale*grad per piece, MPI_Accumulate(SUM), flush
//     pull_gacc   WorkerClient::pull   with MPI_Get_accumulate(MPI_NO_OP) (the default)
//     pull_get    WorkerClient::pull   with MPI_Get (--pull get)
//     step        pull_gacc + push (what one training step moves)
//     bestep      begin_step + end_step (async): claim and pull in one wait, push by request
//     fop         WorkerClient::next_step = MPI_Fetch_and_op(SUM) on an int64 + flush
//   raw MPI, lock/unlock per operation (a window from MPI_Win_allocate of the same size, the same
//   1 MiB chunks, MPI_Win_lock(SHARED) ... MPI_Win_unlock around each operation):
//     lk_acc, lk_get, lk_gacc, lk_fop
//   local, the same bytes on one core (worker 0 alone): memcpy (pull's limit), axpy y += a*x
//   (push's limit).
//
// Latency = best of 3 repetitions of the mean time per call, the largest over the workers.
// Bandwidth (MB/s = 1e6 B/s) = bytes / latency; "agg" columns sum bytes/latency over workers.
// Sizes double from --min_bytes to --max_bytes; the MNIST arena (9,098 floats) is included.
// stdout: a latency table, then a bandwidth/ratio table. --csv / --json: every number.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "asyncps/asyncps.h"
#include "bench_args.h"
#include "flag_names.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kChunkBytes = 1u << 20;
constexpr std::size_t kArenaFloats = 9098;

// The measured quantities, in the order of the CSV columns.
const std::vector<std::string> kOps = {"push",   "pull_gacc", "pull_get", "step",   "bestep", "fop",
                                       "lk_acc", "lk_get",    "lk_gacc",  "lk_fop", "memcpy", "axpy"};

struct Row {
  std::size_t bytes = 0;
  int workers = 0;
  std::map<std::string, double> us;      // latency per call, max over workers
  std::map<std::string, double> agg_us;  // harmonic: bytes*workers / sum(bytes/us_i) -> for agg bandwidth
};

int iterations_for(std::size_t bytes) {
  if (bytes <= 64 * 1024) return 1000;
  return static_cast<int>(std::clamp<std::size_t>((64u << 20) / bytes, 4, 200));
}

// Best of 3 repetitions of `iters` calls of fn, in microseconds per call; the workers start each
// repetition together.
template <class Fn>
double time_us(MPI_Comm workers, int iters, Fn fn) {
  double best = 1e300;
  for (int rep = 0; rep < 3; ++rep) {
    MPI_Barrier(workers);
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) fn();
    best = std::min(best, std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters);
  }
  return best;
}

// Reduces one worker-local latency into row (max over workers; aggregate bandwidth).
void record(Row& row, MPI_Comm workers, const std::string& op, double us) {
  double mx = 0, bw = row.bytes / us, bw_sum = 0;
  MPI_Allreduce(&us, &mx, 1, MPI_DOUBLE, MPI_MAX, workers);
  MPI_Allreduce(&bw, &bw_sum, 1, MPI_DOUBLE, MPI_SUM, workers);
  row.us[op] = mx;
  row.agg_us[op] = row.bytes / bw_sum;  // the latency that one worker would need for the same total bandwidth
}

// The library: WorkerClient over a Session, lock_all + flush.
void measure_library(Row& row, std::size_t floats, asyncps::PullMethod pull, const asyncps::Options& base,
                     MPI_Comm workers, bool with_fop) {
  asyncps::ParamLayout layout;
  layout.add("arena", {static_cast<std::int64_t>(floats)});
  asyncps::Options options = base;
  options.pull = pull;
  asyncps::Session session(MPI_COMM_WORLD, layout, options);
  if (session.roles().is_server()) {
    asyncps::ParameterServer ps(session, std::vector<float>(floats, 0.f));
    ps.serve();
    return;
  }
  asyncps::WorkerClient w(session);
  asyncps::StepLoop steps(w);
  std::vector<float> params(floats), grad(floats, 1e-6f);
  const int iters = iterations_for(row.bytes);
  for (int i = 0; i < std::min(iters, 20); ++i) w.push(grad, 1.f), w.pull(params);  // warm-up
  if (pull == asyncps::PullMethod::GetAccumulate) {
    record(row, workers, "push", time_us(workers, iters, [&] { w.push(grad, -0.01f); }));
    record(row, workers, "pull_gacc", time_us(workers, iters, [&] { w.pull(params); }));
    record(row, workers, "step", time_us(workers, iters, [&] {
             w.pull(params);
             w.push(grad, -0.01f);
           }));
    // begin_step + end_step: what one async training step costs (claim and pull in one wait, the
    // push leaving with requests and completing inside the next begin_step)
    record(row, workers, "bestep", time_us(workers, iters, [&] {
             if (steps.begin_step(params, std::int64_t{1} << 60)) (void)steps.end_step(grad, -0.01f);
           }));
    if (with_fop) record(row, workers, "fop", time_us(workers, 1000, [&] { (void)w.next_step(); }));
  } else {
    record(row, workers, "pull_get", time_us(workers, iters, [&] { w.pull(params); }));
  }
  w.finish();
}

// Raw MPI: a window from MPI_Win_allocate on rank 0 (floats + one int64), lock/unlock per op.
void measure_raw(Row& row, std::size_t floats, MPI_Comm workers, bool is_server, bool with_fop) {
  const MPI_Aint float_bytes = static_cast<MPI_Aint>(floats * sizeof(float));
  const MPI_Aint counter_disp = (float_bytes + 7) / 8 * 8;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "accumulate_ops", "same_op_no_op");
  void* base = nullptr;
  MPI_Win win;
  MPI_Win_allocate(is_server ? counter_disp + 8 : 0, 1, info, MPI_COMM_WORLD, &base, &win);
  MPI_Info_free(&info);
  if (is_server) {
    std::memset(base, 0, counter_disp + 8);
    // Keep entering MPI until the workers are done (progress for transports that need it).
    MPI_Win_lock_all(0, win);
    MPI_Request done;
    MPI_Ibarrier(MPI_COMM_WORLD, &done);
    for (int flag = 0; !flag;) {
      MPI_Test(&done, &flag, MPI_STATUS_IGNORE);
      MPI_Win_flush_all(win);
      if (!flag) usleep(1000);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    return;
  }
  std::vector<float> buf(floats), grad(floats, 1e-6f);
  const std::size_t chunk = kChunkBytes / sizeof(float);
  auto chunks = [&](auto op) {
    for (std::size_t off = 0; off < floats; off += chunk) op(off, static_cast<int>(std::min(chunk, floats - off)));
  };
  auto acc = [&] {
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    chunks([&](std::size_t off, int n) {
      MPI_Accumulate(grad.data() + off, n, MPI_FLOAT, 0, off * 4, n, MPI_FLOAT, MPI_SUM, win);
    });
    MPI_Win_unlock(0, win);
  };
  auto get = [&] {
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    chunks([&](std::size_t off, int n) { MPI_Get(buf.data() + off, n, MPI_FLOAT, 0, off * 4, n, MPI_FLOAT, win); });
    MPI_Win_unlock(0, win);
  };
  auto gacc = [&] {
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    chunks([&](std::size_t off, int n) {
      MPI_Get_accumulate(nullptr, 0, MPI_FLOAT, buf.data() + off, n, MPI_FLOAT, 0, off * 4, n, MPI_FLOAT, MPI_NO_OP,
                         win);
    });
    MPI_Win_unlock(0, win);
  };
  const std::int64_t one = 1;
  std::int64_t old = 0;
  auto fop = [&] {
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, counter_disp, MPI_SUM, win);
    MPI_Win_unlock(0, win);
  };
  const int iters = iterations_for(row.bytes);
  for (int i = 0; i < std::min(iters, 20); ++i) acc(), gacc();
  record(row, workers, "lk_acc", time_us(workers, iters, acc));
  record(row, workers, "lk_get", time_us(workers, iters, get));
  record(row, workers, "lk_gacc", time_us(workers, iters, gacc));
  if (with_fop) record(row, workers, "lk_fop", time_us(workers, 1000, fop));
  MPI_Request done;
  MPI_Ibarrier(MPI_COMM_WORLD, &done);
  MPI_Wait(&done, MPI_STATUS_IGNORE);
  MPI_Win_free(&win);
}

// Local memcpy and axpy of the same bytes, on worker 0 alone (the others wait).
void measure_local(Row& row, std::size_t floats, MPI_Comm workers, bool report) {
  if (report) {
    std::vector<float> dst(floats), src(floats, 1.f), x(floats, 1e-6f);
    const int iters = std::max(10, iterations_for(row.bytes));  // cheap: a few more against noise
    MPI_Comm self = MPI_COMM_SELF;
    row.us["memcpy"] = time_us(self, iters, [&] {
      std::memcpy(dst.data(), src.data(), floats * sizeof(float));
      asm volatile("" ::: "memory");
    });
    row.us["axpy"] = time_us(self, iters, [&] {
      float* __restrict y = src.data();
      const float* __restrict xx = x.data();
      for (std::size_t i = 0; i < floats; ++i) y[i] += -0.01f * xx[i];
      asm volatile("" ::: "memory");
    });
    row.agg_us["memcpy"] = row.us["memcpy"];
    row.agg_us["axpy"] = row.us["axpy"];
  }
  MPI_Barrier(workers);
}

double mbps(std::size_t bytes, double us) { return us > 0 ? bytes / us : 0.0; }  // B/us = MB/s

}  // namespace

int main(int argc, char** argv) {
  asyncps::MpiEnvironment mpi(&argc, &argv);
  try {
    const bench::Args args("bench_push_pull", argc, argv,
                           {"--min_bytes", "--max_bytes", "--csv", "--json", "--ps", "--chunk_bytes", "--server_poll_us",
                            "--timeline", "--server_spin_us", "--server_progress"});
    const auto min_bytes = static_cast<std::size_t>(args.integer("--min_bytes", 4, 4, std::int64_t{1} << 32));
    const auto max_bytes = static_cast<std::size_t>(args.integer("--max_bytes", 64 << 20, 4, std::int64_t{1} << 32));
    if (min_bytes > max_bytes) throw asyncps::ConfigError("bench_push_pull: --min_bytes is above --max_bytes");
    const std::string csv = args.text("--csv", ""), json = args.text("--json", "");
    std::error_code same_ec;
    if (!csv.empty() && !json.empty() &&
        std::filesystem::weakly_canonical(csv, same_ec) == std::filesystem::weakly_canonical(json, same_ec))
      throw asyncps::ConfigError("bench_push_pull: --csv and --json name one file (" + csv + "): the second would replace the first");
    for (const std::string& out : {csv, json}) {  // fail now, not after the whole run
      if (out.empty()) continue;
      std::FILE* probe = std::fopen(out.c_str(), "a");
      if (!probe) throw asyncps::ConfigError("bench_push_pull: cannot write " + out);
      std::fclose(probe);
    }
    asyncps::Options options;  // (the library's own checks apply when the Session is made)
    options.num_servers = static_cast<int>(args.integer("--ps", 1, 1, 1 << 20));
    options.chunk_bytes = static_cast<std::size_t>(args.integer("--chunk_bytes", static_cast<std::int64_t>(options.chunk_bytes),
                                                                asyncps::limits::kMinChunkBytes,
                                                                asyncps::limits::kMaxChunkBytes));  // (whole floats: the library's check)
    options.server_poll_us = static_cast<int>(args.integer("--server_poll_us", options.server_poll_us, -1, 1000000));
    options.server_spin_us = static_cast<int>(args.integer("--server_spin_us", options.server_spin_us, 0, 1000000));
    options.timeline = args.text("--timeline", "");  // its cost: compare bestep with and without
    options.server_progress = asyncps::parse_choice<asyncps::ServerProgress>(
        args.text("--server_progress", asyncps::name_of(asyncps::ServerProgress::Auto)), "bench_push_pull: --server_progress");
    if (options.num_servers != 1) throw asyncps::ConfigError("bench_push_pull: the raw-MPI part needs --ps 1");
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) throw asyncps::ConfigError("bench_push_pull: run it with at least 2 ranks (1 server + workers)");
    const bool is_server = rank < options.num_servers;
    const bool report = rank == options.num_servers;  // worker 0
    const int nworkers = size - options.num_servers;
    MPI_Comm workers;
    MPI_Comm_split(MPI_COMM_WORLD, is_server ? 0 : 1, rank, &workers);

    std::vector<std::size_t> sizes;
    std::size_t b = 4;
    while (b < min_bytes) b *= 2;
    for (; b <= max_bytes; b *= 2) sizes.push_back(b);
    if (kArenaFloats * 4 >= min_bytes && kArenaFloats * 4 <= max_bytes) sizes.push_back(kArenaFloats * 4);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    if (sizes.empty())
      throw asyncps::ConfigError("bench_push_pull: no size it measures lies in [--min_bytes, --max_bytes] = [" +
                                 std::to_string(min_bytes) + ", " + std::to_string(max_bytes) +
                                 "] (powers of two from 4, and the MNIST arena's " + std::to_string(kArenaFloats * 4) +
                                 " bytes)");

    const auto t_start = Clock::now();
    if (report) {
      char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
      int len = 0;
      MPI_Get_library_version(version, &len);
      const std::string mpi(version, std::strcspn(version, ",\n"));  // "Open MPI v4.1.4" / "MPICH Version:\t4.0.2"
      std::printf("# libasyncps one-sided benchmark (OSU style), %s, %d server + %d concurrent worker(s)\n", mpi.c_str(),
                  options.num_servers, nworkers);
      std::printf("# library: MPI_Win_allocate, MPI_Win_lock_all once + MPI_Win_flush per op, 1 MiB chunks\n");
      std::printf("# lk_*: raw MPI_Win_allocate window, MPI_Win_lock(SHARED)/MPI_Win_unlock around each op\n");
      std::printf("# latency in us per call (max over workers); memcpy/axpy: the same bytes on one core\n");
      std::printf("%-10s %9s %9s %9s %9s %9s %7s %9s %9s %9s %7s %9s %9s %8s\n", "# Size(B)", "push", "pull_gacc",
                  "pull_get", "push+pull", "step(b/e)", "fop", "lk_acc", "lk_get", "lk_gacc", "lk_fop", "memcpy", "axpy",
                  "step/lim");
    }
    std::vector<Row> rows;
    for (std::size_t bytes : sizes) {
      Row row;
      row.bytes = bytes;
      row.workers = nworkers;
      const std::size_t floats = bytes / 4;
      // fetch-and-op does not depend on the size: measured at the first size and at the arena's
      const bool with_fop = bytes == sizes.front() || floats == kArenaFloats;
      measure_library(row, floats, asyncps::PullMethod::GetAccumulate, options, workers, with_fop);
      measure_library(row, floats, asyncps::PullMethod::Get, options, workers, false);
      measure_raw(row, floats, workers, is_server, with_fop);
      if (is_server) continue;
      if (!with_fop)
        for (const char* k : {"fop", "lk_fop"}) row.us[k] = rows.front().us[k], row.agg_us[k] = rows.front().agg_us[k];
      measure_local(row, floats, workers, report);
      rows.push_back(row);
      if (!report) continue;
      auto u = [&](const char* k) { return row.us.count(k) ? row.us[k] : 0.0; };
      std::printf("%-10zu %9.2f %9.2f %9.2f %9.2f %9.2f %7.2f %9.2f %9.2f %9.2f %7.2f %9.3f %9.3f %8.2f\n", bytes,
                  u("push"), u("pull_gacc"), u("pull_get"), u("step"), u("bestep"), u("fop"), u("lk_acc"), u("lk_get"), u("lk_gacc"),
                  u("lk_fop"), u("memcpy"), u("axpy"), u("step") / (u("memcpy") + u("axpy")));
      std::fflush(stdout);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
    if (report) {
      std::printf("\n# bandwidth in MB/s (1e6 B/s) per worker; agg = summed over the %d worker(s); ratios of times\n",
                  nworkers);
      std::printf("%-10s %9s %9s %9s %9s %9s %9s %9s %9s %9s %10s %9s %9s\n", "# Size(B)", "push", "pull_gacc", "pull_get",
                  "lk_acc", "lk_gacc", "memcpy", "axpy", "agg_push", "agg_pull", "push/axpy", "pull/mcpy",
                  "lk/lib");
      for (auto& r : rows) {
        auto u = [&](const char* k) { return r.us.count(k) ? r.us[k] : 0.0; };
        std::printf("%-10zu %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %10.2f %9.2f %9.2f\n", r.bytes,
                    mbps(r.bytes, u("push")), mbps(r.bytes, u("pull_gacc")), mbps(r.bytes, u("pull_get")),
                    mbps(r.bytes, u("lk_acc")), mbps(r.bytes, u("lk_gacc")), mbps(r.bytes, u("memcpy")),
                    mbps(r.bytes, u("axpy")), mbps(r.bytes, r.agg_us["push"]), mbps(r.bytes, r.agg_us["pull_gacc"]),
                    u("push") / u("axpy"), u("pull_gacc") / u("memcpy"),
                    (u("lk_acc") + u("lk_gacc")) / (u("push") + u("pull_gacc")));
      }
      std::printf("# RMA benchmark took %.1f s\n", seconds);
      if (!csv.empty()) {
        std::FILE* out = std::fopen(csv.c_str(), "w");
        if (!out) throw asyncps::ConfigError("bench_push_pull: cannot write " + csv);
        std::fprintf(out, "workers,bytes");
        for (auto& op : kOps) std::fprintf(out, ",%s_us", op.c_str());
        for (auto& op : kOps) std::fprintf(out, ",%s_agg_mbps", op.c_str());
        std::fprintf(out, "\n");
        for (auto& r : rows) {
          std::fprintf(out, "%d,%zu", r.workers, r.bytes);
          for (auto& op : kOps) std::fprintf(out, ",%.4f", r.us.count(op) ? r.us[op] : 0.0);
          for (auto& op : kOps) std::fprintf(out, ",%.1f", r.agg_us.count(op) ? mbps(r.bytes, r.agg_us[op]) : 0.0);
          std::fprintf(out, "\n");
        }
        std::fclose(out);
      }
      if (!json.empty()) {
        std::FILE* out = std::fopen(json.c_str(), "w");
        if (!out) throw asyncps::ConfigError("bench_push_pull: cannot write " + json);
        std::fprintf(out, "{\"servers\": %d, \"workers\": %d, \"seconds\": %.2f, \"unit\": \"us per call\", \"rows\": [\n",
                     options.num_servers, nworkers, seconds);
        for (std::size_t i = 0; i < rows.size(); ++i) {
          auto& r = rows[i];
          std::fprintf(out, "  {\"bytes\": %zu", r.bytes);
          for (auto& op : kOps) std::fprintf(out, ", \"%s\": %.4f", op.c_str(), r.us.count(op) ? r.us[op] : 0.0);
          for (auto& op : kOps)
            std::fprintf(out, ", \"%s_agg_mbps\": %.1f", op.c_str(), r.agg_us.count(op) ? mbps(r.bytes, r.agg_us[op]) : 0.0);
          std::fprintf(out, "}%s\n", i + 1 < rows.size() ? "," : "");
        }
        std::fprintf(out, "]}\n");
        std::fclose(out);
      }
    }
    MPI_Comm_free(&workers);
  } catch (const std::exception& e) {
    asyncps::abort_job(bench::with_flag_names(e.what()).c_str());
  }
  return 0;
}
