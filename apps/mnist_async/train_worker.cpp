// defines: mnist_layout, run_server, run_worker
#include "train_worker.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include "asyncps/asyncps.h"
#include "metrics_log.h"
#include "mnist/batcher.h"
#include "mnist/dataset.h"
#include "device.h"
#include "nn/mnist_cnn.h"

namespace mnist_async {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

struct Accuracy {
  double validation = 0, test = 0;
};

Accuracy evaluate(asyncps::nn::Backend& backend, const asyncps::mnist::Mnist& data, std::span<const float> params) {
  Accuracy a;
  a.validation = static_cast<double>(count_correct(backend, params, data.validation.images, data.validation.labels)) /
                 static_cast<double>(data.validation.size());
  a.test = static_cast<double>(count_correct(backend, params, data.test.images, data.test.labels)) /
           static_cast<double>(data.test.size());
  return a;
}

}  // namespace

asyncps::ParamLayout mnist_layout() {
  asyncps::ParamLayout layout;
  for (const auto& t : asyncps::nn::mnist_cnn_tensors())
    layout.add(t.name, std::vector<std::int64_t>(t.dims.begin(), t.dims.end()));
  return layout;
}

void run_server(const Config& config, asyncps::Session& session) {
  std::vector<float> initial(session.layout().size());
  asyncps::nn::glorot_uniform_init(initial, config.seed);  // every server draws the same arena
  asyncps::ParameterServer server(session, initial);
  server.serve();
}

void run_worker(const Config& config, asyncps::Session& session) {
  const asyncps::Roles& roles = session.roles();
  const bool chief = roles.is_chief();
  const bool talk = chief || config.verbose;
  auto data = asyncps::mnist::load_mnist(config.data_dir, config.train_limit);
  auto backend = make_backend(config.device, config.batch_size, roles.worker_index());
  std::optional<MetricsLog> metrics;
  if (chief) metrics.emplace(config.logdir);
  asyncps::mnist::Batcher batcher(data.train, config.batch_size, config.seed * 1000003u + static_cast<std::uint64_t>(roles.worker_index()));

  const std::size_t n = session.layout().size();
  std::vector<float> params(n), grad(n);
  std::vector<float> x(static_cast<std::size_t>(config.batch_size) * asyncps::nn::kImagePixels);
  std::vector<std::uint8_t> y(static_cast<std::size_t>(config.batch_size));

  asyncps::WorkerClient client(session);
  client.pull(params);
  std::optional<asyncps::MovingAverage> ema;
  if (chief) ema.emplace(params, config.moving_average_decay);
  if (talk)
    std::printf("worker %d of %d: %s backend, %zu training examples, batch %d, %d server(s)\n", roles.worker_index(),
                roles.num_workers(), backend->name(), data.train.size(), config.batch_size, roles.num_servers);

  const double decay_steps = kDecayExamples / config.batch_size;
  std::int64_t global_step = client.global_step(), local_step = 0;
  const std::int64_t first_step = global_step;
  float loss = 0;
  double lr = 0;
  const auto start = Clock::now();
  auto last_summary = start;
  double compute_seconds = 0;
  for (;;) {
    const auto t_step = Clock::now();
    batcher.next(x, y);
    client.pull(params);
    if (ema) ema->apply(params, global_step);  // the chief's shadow follows the shared model
    lr = asyncps::exponential_decay(config.learning_rate, config.learning_rate_decay, global_step, decay_steps);
    const auto t_compute = Clock::now();
    loss = backend->loss_and_grad(params, x, y, grad);
    add_l2(session.layout(), config.l2, params, grad);
    compute_seconds += since(t_compute);
    const auto claimed = client.claim_step(config.training_steps);
    if (!claimed) break;  // the other workers took the last steps
    client.push(grad, static_cast<float>(-lr));
    global_step = *claimed;
    ++local_step;
    if (talk && local_step % config.log_every == 0) {
      std::printf("After %lld training steps (%lld global steps), loss on training batch is %g. (%.3f sec/batch)\n",
                  static_cast<long long>(local_step), static_cast<long long>(global_step), static_cast<double>(loss),
                  since(t_step));
      std::fflush(stdout);
    }
    if (metrics && since(last_summary) >= config.save_summaries_secs) {
      const double wall = since(start);
      metrics->write({{"global_step", static_cast<double>(global_step)}, {"local_step", static_cast<double>(local_step)},
                      {"loss", loss}, {"learning_rate", lr}, {"wall_seconds", wall},
                      {"samples_per_sec", static_cast<double>((global_step - first_step) * config.batch_size) / wall}});
      last_summary = Clock::now();
    }
    if (global_step >= config.training_steps) break;
  }
  client.drain();  // every worker is done: the arena is final
  const double wall = since(start);
  const auto& st = client.stats();
  if (config.verbose)
    std::printf("worker %d: %lld local steps, compute %.3f s, pull %.3f s, push %.3f s\n", roles.worker_index(),
                static_cast<long long>(local_step), compute_seconds, st.pull_seconds, st.push_seconds + st.wait_seconds);
  if (chief) {
    client.pull(params);
    const std::int64_t steps = client.global_step();
    const double samples_per_sec = static_cast<double>((steps - first_step) * config.batch_size) / wall;
    const Accuracy plain = evaluate(*backend, data, params);
    const Accuracy averaged = evaluate(*backend, data, ema->shadow());
    std::printf("After %lld global steps, validation accuracy %.4f (EMA %.4f), test accuracy %.4f (EMA %.4f)\n",
                static_cast<long long>(steps), plain.validation, averaged.validation, plain.test, averaged.test);
    std::printf("Done: %lld global steps by %d worker(s) in %.2f s: %.0f samples/s; test accuracy %.4f (EMA %.4f)\n",
                static_cast<long long>(steps), roles.num_workers(), wall, samples_per_sec, plain.test, averaged.test);
    std::fflush(stdout);
    metrics->write({{"global_step", static_cast<double>(steps)}, {"local_step", static_cast<double>(local_step)},
                    {"loss", loss}, {"learning_rate", lr}, {"wall_seconds", wall},
                    {"samples_per_sec", samples_per_sec}, {"validation_accuracy", plain.validation},
                    {"validation_accuracy_ema", averaged.validation}, {"test_accuracy", plain.test},
                    {"test_accuracy_ema", averaged.test}, {"workers", static_cast<double>(roles.num_workers())}});
  }
  client.finish();
}

}  // namespace mnist_async
