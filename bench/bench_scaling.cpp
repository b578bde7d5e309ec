// One point of the scaling study (bench/scaling.sh, docs/SCALING.md): S servers and W workers
// training "steps" of an arena of B bytes for a while, as an async job does (StepLoop
// begin_step + end_step), with no model: what is left is the cost of the parameter server.
//
//   mpirun -np S+W build/bin/bench_scaling --bytes B [--ps S] [--seconds T] [--compute_us C]
//                                          [--json FILE] [--label TEXT]
//
// Ranks 0..S-1 serve; the others are workers. Each worker steps for T seconds (at least 3
// steps), sleeping C µs per step where a model would compute (a sleep: on a shared machine it
// leaves the cores to the others). Measured:
//   worker   step time, and its non-compute part: the time inside begin_step (claim + pull of
//            B bytes, completing the last push) and end_step (posting the push of B bytes);
//   server   CPU time (getrusage, user + system) while serving, per update it applied (every
//            worker step updates every server's shard), and CPU / wall (its utilisation);
//   wire     bytes sent on the network interfaces other than lo (/proc/self/net/dev, read by
//            one rank per host: in the simulated hosts each namespace has its own counters),
//            per worker step (the 3 warm-up steps and the set-up included), next to the 2B that
//            a pull and a push move.
// Prints one line, and appends it as JSON to FILE.
#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "asyncps/asyncps.h"
#include "bench_args.h"
#include "flag_names.h"
#include "net_counters.h"

namespace {

using Clock = std::chrono::steady_clock;

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Bytes sent on this network namespace's interfaces other than lo.
double wire_tx_bytes() { return net_counters::read().tx; }

// What every rank reports to rank 0.
struct Report {
  double is_server = 0, cpu_s = 0, wall_s = 0, steps = 0, warm_steps = 0, step_s = 0, begin_s = 0, end_s = 0, tx = 0,
         host_first = 0;  // 1 on the lowest rank of its host (counts the host's bytes)
};

// A JSON string's contents: quotes, backslashes and control characters escaped (MPICH's version
// line holds a tab).
std::string json_escaped(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') out += '\\', out += ch;
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += ch;
  }
  return out;
}

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return std::string(name, len);
}

}  // namespace

int main(int argc, char** argv) {
  asyncps::MpiEnvironment mpi(&argc, &argv);
  try {
    const bench::Args args("bench_scaling", argc, argv, {"--bytes", "--ps", "--seconds", "--compute_us", "--json", "--label"});
    const auto bytes = static_cast<std::size_t>(args.integer("--bytes", 36392, 4, std::int64_t{1} << 36));
    const double seconds = args.real("--seconds", 3, 0.01, 86400);
    const int compute_us = static_cast<int>(args.integer("--compute_us", 0, 0, 10000000));
    const std::string json = args.text("--json", ""), label = args.text("--label", "");
    if (bytes % 4 != 0)
      throw asyncps::ConfigError("bench_scaling: --bytes must be a multiple of 4 (whole floats), got " + std::to_string(bytes));
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (world_rank == 0 && !json.empty()) {  // rank 0 writes it: fail now, not after the whole measurement
      std::FILE* probe = std::fopen(json.c_str(), "a");
      if (!probe) throw asyncps::ConfigError("bench_scaling: cannot write " + json);
      std::fclose(probe);
    }
    asyncps::Options options;
    options.num_servers = static_cast<int>(args.integer("--ps", 1, 1, 1 << 20));
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int servers = options.num_servers, workers = size - servers;
    if (servers < 1 || workers < 1) throw asyncps::ConfigError("bench_scaling: needs at least one server and one worker");
    const auto floats = static_cast<std::int64_t>(std::max<std::size_t>(bytes / 4, 1));

    // one rank per host reads the host's counters
    const std::string host = host_name();
    const int name_len = static_cast<int>(host.size());
    int max_len = 0;
    MPI_Allreduce(&name_len, &max_len, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    std::vector<char> names(static_cast<std::size_t>(max_len + 1) * size, '\0'), mine(max_len + 1, '\0');
    std::memcpy(mine.data(), host.data(), host.size());
    MPI_Allgather(mine.data(), max_len + 1, MPI_CHAR, names.data(), max_len + 1, MPI_CHAR, MPI_COMM_WORLD);
    std::set<std::string> hosts;
    bool host_first = true;
    for (int r = 0; r < size; ++r) {
      const std::string h(&names[static_cast<std::size_t>(r) * (max_len + 1)]);
      hosts.insert(h);
      if (r < rank && h == host) host_first = false;
    }

    Report me;
    me.host_first = host_first;
    MPI_Barrier(MPI_COMM_WORLD);
    const double tx0 = wire_tx_bytes();
    {
      asyncps::ParamLayout layout;
      layout.add("arena", {floats});
      asyncps::Session session(MPI_COMM_WORLD, layout, options);
      if (session.roles().is_server()) {
        asyncps::ParameterServer ps(session, std::vector<float>(floats, 0.f));
        const double c0 = cpu_seconds();
        const auto t0 = Clock::now();
        ps.serve();
        me.cpu_s = cpu_seconds() - c0;
        me.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
        me.is_server = 1;
      } else {
        asyncps::WorkerClient w(session);
        asyncps::StepLoop steps(w);
        std::vector<float> params(floats), grad(floats, 1e-7f);
        for (int i = 0; i < 3; ++i)  // warm-up: connections, first touches (in the bytes and server CPU)
          if (steps.begin_step(params, std::int64_t{1} << 60)) (void)steps.end_step(grad, -1e-3f), ++me.warm_steps;
        const auto t0 = Clock::now();
        const auto until = t0 + std::chrono::duration<double>(seconds);
        for (;;) {
          const auto a = Clock::now();
          if (a >= until && me.steps >= 3) break;
          if (!steps.begin_step(params, std::int64_t{1} << 60)) break;
          const auto b = Clock::now();
          if (compute_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(compute_us));
          const auto c = Clock::now();
          (void)steps.end_step(grad, -1e-3f);
          const auto d = Clock::now();
          me.begin_s += std::chrono::duration<double>(b - a).count();
          me.end_s += std::chrono::duration<double>(d - c).count();
          ++me.steps;
        }
        w.drain();  // completes the last push: part of the work (finish() also waits for the others)
        me.step_s = std::chrono::duration<double>(Clock::now() - t0).count();
        w.finish();
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    me.tx = host_first ? wire_tx_bytes() - tx0 : 0;

    std::vector<Report> all(size);
    MPI_Gather(&me, sizeof(Report), MPI_BYTE, all.data(), sizeof(Report), MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      double steps = 0, updates = 0, step_us = 0, begin_us = 0, end_us = 0, cpu_per_update = 0, util = 0, tx = 0, wall = 0;
      for (const Report& r : all) {
        tx += r.tx;
        if (r.is_server) {
          util += r.cpu_s / r.wall_s / servers;
          continue;
        }
        wall = std::max(wall, r.step_s);  // the longest worker's timed loop
        steps += r.steps;
        updates += r.steps + r.warm_steps;  // what the servers' CPU time and the counted bytes cover
        step_us += 1e6 * r.step_s / r.steps / workers;
        begin_us += 1e6 * r.begin_s / r.steps / workers;
        end_us += 1e6 * r.end_s / r.steps / workers;
      }
      for (const Report& r : all)
        if (r.is_server) cpu_per_update += 1e6 * r.cpu_s / updates / servers;  // every step updates every shard
      const double noncompute_us = begin_us + end_us;  // inside the library (a sleep overshoots its C)
      char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
      int len = 0;
      MPI_Get_library_version(version, &len);
      const std::string mpi_name(version, std::strcspn(version, ",\n"));
      char line[1024];  // the numbers; the strings go around them
      std::snprintf(line, sizeof line,
                    "\"bytes\": %zu, \"servers\": %d, \"workers\": %d, "
                    "\"hosts\": %zu, \"compute_us\": %d, \"steps\": %.0f, \"updates_per_s\": %.1f, "
                    "\"step_us\": %.2f, \"noncompute_us\": %.2f, \"begin_us\": %.2f, \"end_us\": %.2f, "
                    "\"server_cpu_us_per_update\": %.3f, \"server_util\": %.3f, \"wire_bytes_per_step\": %.0f}",
                    static_cast<std::size_t>(floats) * 4, servers, workers, hosts.size(),
                    compute_us, steps, steps / std::max(wall, 1e-9), step_us, noncompute_us, begin_us, end_us,
                    cpu_per_update, util, tx / updates);
      std::printf("bench_scaling %s B=%zu S=%d W=%d hosts=%zu: step %.1f us (non-compute %.1f: begin %.1f, end %.1f), "
                  "%.0f updates/s, server %.2f us CPU per update (util %.2f), %.0f wire bytes/step (2B = %zu)\n",
                  label.c_str(), static_cast<std::size_t>(floats) * 4, servers, workers, hosts.size(), step_us,
                  noncompute_us, begin_us, end_us, steps / std::max(wall, 1e-9), cpu_per_update, util, tx / updates,
                  static_cast<std::size_t>(floats) * 8);
      if (!json.empty()) {
        std::FILE* out = std::fopen(json.c_str(), "a");
        if (!out) throw asyncps::ConfigError("bench_scaling: cannot write " + json);
        std::fprintf(out, "{\"label\": \"%s\", \"mpi\": \"%s\", %s\n", json_escaped(label).c_str(),
                     json_escaped(mpi_name).c_str(), line);
        std::fclose(out);
      }
    }
  } catch (const std::exception& e) {
    asyncps::abort_job(bench::with_flag_names(e.what()).c_str());
  }
  return 0;
}
