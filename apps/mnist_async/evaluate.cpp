// defines: evaluate, run_eval
#include "evaluate.h"

#include <cstdio>
#include <filesystem>

#include "asyncps/asyncps.h"
#include "device.h"
#include "train_worker.h"

namespace mnist_async {

Accuracy evaluate(asyncps::nn::Backend& backend, const asyncps::mnist::Mnist& data, std::span<const float> params) {
  Accuracy a;
  a.validation = static_cast<double>(count_correct(backend, params, data.validation.images, data.validation.labels)) /
                 static_cast<double>(data.validation.size());
  a.test = static_cast<double>(count_correct(backend, params, data.test.images, data.test.labels)) /
           static_cast<double>(data.test.size());
  return a;
}

int run_eval(const Config& config) {
  const auto layout = mnist_layout();
  std::filesystem::path index = config.checkpoint;
  if (index.empty()) {
    const auto all = asyncps::list_checkpoints(config.logdir);
    if (all.empty()) throw asyncps::ConfigError("--eval_only: no checkpoint in " + config.logdir + " (pass --checkpoint)");
    index = all.front();
  }
  const auto ckpt = asyncps::read_checkpoint(index, layout);
  const auto data = [&] {
    asyncps::StallWatch watch(asyncps::setup_watch_timeout(config.library.stall_timeout), "reading the MNIST data in " + config.data_dir);
    return asyncps::mnist::load_mnist(config.data_dir);
  }();
  auto backend = make_backend(config, 1000, 0);
  const Accuracy plain = evaluate(*backend, data, ckpt.params);
  std::printf("%s (global step %lld): validation accuracy %.4f, test accuracy %.4f", index.c_str(),
              static_cast<long long>(ckpt.global_step), plain.validation, plain.test);
  if (!ckpt.shadow.empty()) {
    const Accuracy averaged = evaluate(*backend, data, ckpt.shadow);
    std::printf("; EMA: validation %.4f, test %.4f", averaged.validation, averaged.test);
  }
  std::printf("\n");
  if (!config.export_dir.empty()) {
    asyncps::export_npy(config.export_dir, layout, ckpt.params);
    if (!ckpt.shadow.empty()) asyncps::export_npy(std::filesystem::path(config.export_dir) / "ema", layout, ckpt.shadow);
    std::printf("exported to %s\n", config.export_dir.c_str());
  }
  return 0;
}

}  // namespace mnist_async
