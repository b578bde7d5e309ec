// defines: run_server
#include "server.h"

#include <cstdio>
#include <string>
#include <vector>

#include "asyncps/asyncps.h"
#include "nn/mnist_cnn.h"
#include "options.h"
#include "process_stats.h"

namespace mnist_async {

int run_server(const Config& config, asyncps::Session& session) {
  std::vector<float> initial(session.layout().size());
  asyncps::nn::glorot_uniform_init(initial, static_cast<std::uint64_t>(config.seed));  // every server draws the same arena
  asyncps::ParameterServer server(session, initial);
  const auto t0 = Clock::now();
  const double cpu0 = cpu_seconds();
  server.serve();
  if (config.verbose)
    std::printf("server %d: %.3f s of CPU over %.2f s serving (%.2f%% of a core), %llu polls, %llu wake-ups; peak RSS "
                "%.1f MB\n",
                session.roles().rank, cpu_seconds() - cpu0, since(t0), 100.0 * (cpu_seconds() - cpu0) / since(t0),
                static_cast<unsigned long long>(server.polls()), static_cast<unsigned long long>(server.wakeups()),
                peak_rss_mb());
  if (server.terminated()) {  // one line for the job (server 0's), then every rank exits 143
    app_cli::print_terminated(session.roles().rank, static_cast<long long>(server.final_step()),
                              server.saved_checkpoint());
    std::fflush(nullptr);
    return kTerminatedExit;
  }
  if (!server.saved_checkpoint().empty())
    std::printf("asyncps: saved %s (global step %lld)\n", server.saved_checkpoint().c_str(),
                static_cast<long long>(server.final_step()));
  std::fflush(stdout);
  return server.halted() ? app_cli::kHaltedExit : 0;
}

}  // namespace mnist_async
