// defines: mnist_layout, run_worker
#include "train_worker.h"

#include <chrono>
#include <filesystem>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "asyncps/asyncps.h"
#include "metrics_log.h"
#include "mnist/batcher.h"
#include "mnist/dataset.h"
#include "device.h"
#include "nn/cpu_kernels.h"
#include "nn/mnist_cnn.h"
#include "nn/mnist_cnn_layout.h"
#include "optimizer.h"
#include "schedule.h"
#include "evaluate.h"
#include "process_stats.h"

namespace mnist_async {

namespace {

// TF1's mnist.train.num_examples is 55,000 but the tutorial decays over 60000/batch steps.
constexpr double kDecayExamples = 60000.0;

// grad += l2 * w for the weight tensors (TF's l2_regularizer: rate * sum(w^2) / 2).
void add_l2(const asyncps::ParamLayout& layout, double l2, std::span<const float> params, std::span<float> grad) {
  if (l2 == 0) return;
  for (const auto& t : layout.tensors()) {
    if (t.shape.size() < 2) continue;  // biases are not regularised
    for (std::size_t i = t.offset; i < t.offset + t.size; ++i) grad[i] += static_cast<float>(l2) * params[i];
  }
}

// The chief's model every --eval_every global steps, evaluated after training (off the
// critical path: a copy per snapshot, no evaluation while the job trains).
struct Snapshot {
  std::int64_t global_step = 0;
  double seconds = 0;  // since training began
  std::vector<float> params, shadow;
};

}  // namespace

asyncps::ParamLayout mnist_layout() { return asyncps::nn::mnist_cnn_layout(); }

int run_worker(const Config& config, asyncps::Session& session) {
  const asyncps::Roles& roles = session.roles();
  const bool chief = roles.is_chief();
  const bool talk = chief || config.verbose;
  auto data = [&] {  // watched: a data directory that never answers ends the job, not hangs it
    asyncps::StallWatch watch(asyncps::setup_watch_timeout(config.library.stall_timeout), "reading the MNIST data in " + config.data_dir);
    return asyncps::mnist::load_mnist(config.data_dir, static_cast<std::size_t>(config.train_limit));
  }();
  auto backend = make_backend(config, config.batch_size, session.node_worker_index());
  backend->set_dataset(data.train.images, data.train.labels);  // (a GPU keeps it on the device)
  if (config.verbose)  // the instruction-set level of the CPU kernels (the model's on cpu, the updates' on either)
    std::printf("worker %d: backend %s, cpu kernels: %s\n", roles.worker_index(), backend->name(),
                asyncps::nn::cpu_kernel_levels().c_str());
  std::optional<MetricsLog> metrics;  // (opened once the job has the directory: below)
  asyncps::mnist::Batcher batcher(data.train, config.batch_size, static_cast<std::uint64_t>(config.seed) * 1000003u + static_cast<std::uint64_t>(roles.worker_index()));

  const std::size_t n = session.layout().size();
  // The parameters the step reads and the gradient it writes are the backend's own buffers (on a
  // GPU page-locked: the device copies to and from them, no host copy): the parameters pulled,
  // or with prediction the parameters predicted from them (the pulled ones kept apart).
  std::vector<float> pulled(config.optimizer.predicts() ? n : 0);
  const std::span<float> params = config.optimizer.predicts() ? std::span<float>(pulled) : backend->step_params();
  const std::span<float> ahead = config.optimizer.predicts() ? backend->step_params() : std::span<float>();
  const std::span<float> grad = backend->step_grad();
  std::vector<std::int32_t> rows(static_cast<std::size_t>(config.batch_size));  // the batch, as rows of data.train

  asyncps::WorkerClient client(session);  // the transport
  asyncps::StepLoop step_loop(client);     // the mode, the non-finite guard, staleness
  asyncps::ShadowStore shadow_store(client);  // the chief's EMA, kept on the servers for checkpoints
  // the chief's metrics.jsonl and event file, only now: a job refused at the start (the directory
  // held by another job, a checkpoint it cannot restore) leaves nothing of its own there
  if (chief) metrics.emplace(config.logdir);
  // the transport's operations in flight (the last push; with --overlap the next claim and pull)
  // move while a GPU computes the step (the CPU backend, computing on this thread, never calls it)
  backend->set_while_computing([&client] { client.progress(); });
  client.pull(params);
  std::optional<MovingAverage> ema;
  std::vector<Snapshot> snapshots;
  WorkerOptimizer optimizer(session.layout().size(), config.optimizer);
  if (chief) {  // a restarted job continues the average the checkpoint holds
    ema.emplace(params, config.moving_average_decay,
                config.moving_average_correction == "trend" ? MovingAverage::Correction::trend
                                                             : MovingAverage::Correction::none);
    std::vector<float> saved(n);
    if (shadow_store.load(saved)) {
      ema->restore(saved);
      std::printf("the chief continues the EMA from the checkpoint\n");
    }
  }
  if (talk)
    std::printf("worker %d of %d: %s backend, %zu training examples, batch %d, %d server(s)\n", roles.worker_index(),
                roles.num_workers(), backend->name(), data.train.size(), config.batch_size, roles.num_servers);

  const double decay_steps = kDecayExamples / config.batch_size;
  const bool straggler = config.straggler_ms > 0 && roles.worker_index() == roles.num_workers() - 1;
  std::int64_t global_step = client.global_step(), local_step = 0;
  const std::int64_t first_step = global_step;
  float loss = 0;
  double lr = 0;
  const auto start = Clock::now();
  auto last_summary = start;
  double compute_seconds = 0, device_seconds = 0;
  for (;;) {
    const auto t_step = Clock::now();
    batcher.next_rows(rows);
    const auto begun = step_loop.begin_step(params, config.training_steps);  // waits as --mode says, pulls
    if (!begun) break;
    if (ema) ema->apply(params, begun->global_step);  // the chief's shadow follows the shared model
    lr = exponential_decay(config.learning_rate, config.learning_rate_decay, begun->global_step, decay_steps);
    // momentum's correction and weight prediction need the staleness (W - 1 until 20 are measured)
    const auto& seen = step_loop.staleness();
    const double tau = config.library.mode == asyncps::Mode::Sync ? 0.0  // (a round's updates have none)
                       : seen.count() >= 20 ? seen.mean() : static_cast<double>(roles.num_workers() - 1);
    const auto t_compute = Clock::now();
    // the gradient where the arena will be when this update lands, tau pushes on
    // (--momentum_correction predict, --weight_prediction)
    const bool predicted = config.optimizer.predicts() && tau > 0 && optimizer.predict(params, lr, tau, ahead);
    const std::span<const float> at = predicted ? std::span<const float>(ahead) : std::span<const float>(params);
    loss = backend->loss_and_grad_rows(at, rows, grad);
    if (const double on_device = backend->last_step_device_seconds(); on_device >= 0) {
      // the device's own time for the step (CUDA events), ending when its result reached the host
      const auto now = Clock::now();
      device_seconds += on_device;
      client.note_span("gpu", now - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(on_device)), now);
    }
    add_l2(session.layout(), config.l2, at, grad);
    if (straggler) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(config.straggler_ms));
    compute_seconds += since(t_compute);
    // the optimizer's direction (momentum's velocity, Adam's step, ...), its state kept only if
    // the push lands
    const asyncps::StepEnd landed = step_loop.end_step(optimizer.propose(grad, tau), static_cast<float>(-lr));
    if (landed.applied) optimizer.commit();
    if (landed.nonfinite) {
      const auto seen = client.stats().nonfinite;
      if (seen <= 5 || config.halt_on_nonfinite)
        std::fprintf(stderr, "asyncps: worker %d: non-finite gradient at global step %lld (loss %g): %s%s\n",
                     roles.worker_index(), static_cast<long long>(begun->global_step), static_cast<double>(loss),
                     config.halt_on_nonfinite ? "halting the job (--halt_on_nonfinite)" : "skipped",
                     seen == 5 && !config.halt_on_nonfinite ? " (further ones are only counted)" : "");
      if (config.halt_on_nonfinite) step_loop.request_halt();
    } else {
      global_step = landed.global_step;
      ++local_step;
      if (chief && config.eval_every > 0 &&
          (snapshots.empty() ? begun->global_step >= 0 : begun->global_step / config.eval_every > snapshots.back().global_step / config.eval_every)) {
        const auto average = ema->average();
        snapshots.push_back({begun->global_step, since(start), std::vector<float>(params.begin(), params.end()),
                             std::vector<float>(average.begin(), average.end())});
      }
      if (ema && local_step % config.log_every == 0) shadow_store.store(ema->average());  // checkpoints hold it
      if (talk && local_step % config.log_every == 0) {
        std::printf("After %lld training steps (%lld global steps), loss on training batch is %g. (%.3f sec/batch)\n",
                    static_cast<long long>(local_step), static_cast<long long>(global_step), static_cast<double>(loss),
                    since(t_step));
        std::fflush(stdout);
      }
    }
    // the summaries follow the clock whether or not the step's update landed (a run whose updates
    // are all non-finite still reports how many were skipped)
    if (metrics && since(last_summary) >= config.save_summaries_secs) {
      const double wall = since(start);
      const auto& tau = step_loop.staleness();
      // (a skipped step is reported at the step it took, which it spent: the last applied one may
      // be far behind, and the rate counts the steps taken)
      const std::int64_t reached = std::max(global_step, landed.global_step);
      metrics->write({{"global_step", static_cast<double>(reached)}, {"local_step", static_cast<double>(local_step)},
                      {"loss", loss}, {"learning_rate", lr}, {"wall_seconds", wall},
                      {"samples_per_sec", static_cast<double>((reached - first_step) * config.batch_size) / wall},
                      {"global_steps_per_sec", static_cast<double>(reached - first_step) / wall},
                      {"staleness_mean", tau.mean()}, {"staleness_p99", static_cast<double>(tau.percentile(99))},
                      {"staleness_max", static_cast<double>(tau.max())},
                      {"nonfinite_skipped", static_cast<double>(client.stats().nonfinite)}});
      last_summary = Clock::now();
    }
  }
  if (chief && local_step == 0)
    std::printf("nothing to train: the global step had already reached --training_steps %lld (resumed from a "
                "checkpoint? raise --training_steps to continue, or pass --no_restore)\n",
                static_cast<long long>(config.training_steps));
  backend->set_while_computing({});  // (the evaluation below computes after the transport is done)
  if (ema) shadow_store.store(ema->average());
  client.drain();  // every worker is done: the arena is final
  const double wall = since(start);
  const auto& st = client.stats();
  if (config.verbose) {
    char on_gpu[48] = "";
    if (device_seconds > 0) std::snprintf(on_gpu, sizeof on_gpu, " (the GPU's own time %.3f s)", device_seconds);
    std::printf("worker %d: %lld local steps in %.3f s: compute %.3f s%s, pull %.3f s, push %.3f s, waiting for others "
                "%.3f s; peak RSS %.1f MB\n",
                roles.worker_index(), static_cast<long long>(local_step), wall, compute_seconds, on_gpu,
                st.pull_seconds, st.push_seconds + st.wait_seconds, st.mode_wait_seconds, peak_rss_mb());
  }
  // The chief evaluates now, with the arena final, and reports once the job has ended well
  // (client.finish(): the servers' final save): a job that a stall or a failed save ends shows no
  // "After ..." or "Done" line.
  std::int64_t steps = 0;
  double samples_per_sec = 0;
  Accuracy plain{}, averaged{};
  struct Evaluated {
    const Snapshot* snap;
    Accuracy plain, averaged;
  };
  std::vector<Evaluated> evaluated;
  if (chief) {
    client.pull(params);
    steps = client.global_step();
    // a sync step is one round: every worker contributed a batch
    const double per_step = config.batch_size * (config.library.mode == asyncps::Mode::Sync ? roles.num_workers() : 1);
    samples_per_sec = static_cast<double>(steps - first_step) * per_step / wall;
    plain = evaluate(*backend, data, params);
    averaged = evaluate(*backend, data, ema->average());
    for (const Snapshot& snap : snapshots)  // the snapshots: accuracy against global steps and wall time
      evaluated.push_back({&snap, evaluate(*backend, data, snap.params), evaluate(*backend, data, snap.shadow)});
  }
  client.finish();
  if (chief) {
    std::printf("After %lld global steps, validation accuracy %.4f (EMA %.4f), test accuracy %.4f (EMA %.4f)\n",
                static_cast<long long>(steps), plain.validation, averaged.validation, plain.test, averaged.test);
    const Snapshot* reached = nullptr;  // when it first reached the target
    for (const auto& [snap, a, e] : evaluated) {
      std::printf("eval: global step %lld at %.3f s: test accuracy %.4f (EMA %.4f)\n",
                  static_cast<long long>(snap->global_step), snap->seconds, a.test, e.test);
      metrics->write({{"eval_global_step", static_cast<double>(snap->global_step)}, {"eval_seconds", snap->seconds},
                      {"eval_test_accuracy", a.test}, {"eval_test_accuracy_ema", e.test}});
      if (!reached && a.test >= config.eval_target) reached = snap;
    }
    if (config.eval_every > 0) {
      if (reached)
        std::printf("time to %.2f test accuracy: %.3f s (global step %lld)\n", config.eval_target, reached->seconds,
                    static_cast<long long>(reached->global_step));
      else
        std::printf("time to %.2f test accuracy: not reached in %lld global steps\n", config.eval_target,
                    static_cast<long long>(steps));
    }
    std::printf("Done: %lld global steps by %d worker(s) in %.2f s: %.0f samples/s; test accuracy %.4f (EMA %.4f)\n",
                static_cast<long long>(steps), roles.num_workers(), wall, samples_per_sec, plain.test, averaged.test);
    std::fflush(stdout);
    std::vector<std::pair<std::string, double>> last{
        {"global_step", static_cast<double>(steps)}, {"local_step", static_cast<double>(local_step)},
        {"loss", loss}, {"learning_rate", lr}, {"wall_seconds", wall},
        {"validation_accuracy", plain.validation}, {"validation_accuracy_ema", averaged.validation},
        {"test_accuracy", plain.test}, {"test_accuracy_ema", averaged.test},
        {"workers", static_cast<double>(roles.num_workers())}};
    if (steps > first_step) last.emplace_back("samples_per_sec", samples_per_sec);  // (no step taken: no rate to plot)
    metrics->write(last);
    const auto& tau = step_loop.job_staleness();
    std::printf("Staleness over %llu updates (%s): mean %.2f, p50 %lld, p99 %lld, max %lld; the chief waited %.3f s for "
                "other workers\n",
                static_cast<unsigned long long>(tau.count()), asyncps::name_of(config.library.mode), tau.mean(),
                static_cast<long long>(tau.percentile(50)), static_cast<long long>(tau.percentile(99)),
                static_cast<long long>(tau.max()), st.mode_wait_seconds);
    const std::uint64_t skipped = step_loop.job_nonfinite();  // every worker's
    if (skipped) std::printf("%llu non-finite gradient(s) were not pushed (by all %d worker(s))\n",
                             static_cast<unsigned long long>(skipped), roles.num_workers());
    metrics->write({{"global_step", static_cast<double>(steps)},
                    {"job_nonfinite_skipped", static_cast<double>(skipped)},
                    {"staleness_mean", tau.mean()}, {"staleness_p50", static_cast<double>(tau.percentile(50))},
                    {"staleness_p99", static_cast<double>(tau.percentile(99))},
                    {"staleness_max", static_cast<double>(tau.max())}});
    if (!config.export_dir.empty()) {
      asyncps::export_npy(config.export_dir, session.layout(), std::vector<float>(params.begin(), params.end()));
      const auto average = ema->average();
      asyncps::export_npy(std::filesystem::path(config.export_dir) / "ema", session.layout(),
                          std::vector<float>(average.begin(), average.end()));
      std::printf("exported the parameters to %s (EMA in %s/ema)\n", config.export_dir.c_str(), config.export_dir.c_str());
    }
  }
  if (step_loop.terminated()) return kTerminatedExit;  // (server 0 says so, for the job)
  if (step_loop.halted()) {
    if (chief) std::printf("halted by a worker at global step %lld (--halt_on_nonfinite)\n",
                           static_cast<long long>(step_loop.final_step()));
    return app_cli::kHaltedExit;
  }
  return 0;
}

}  // namespace mnist_async
