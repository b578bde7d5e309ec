// defines: evaluate, run_eval
#include "evaluate.h"

#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>

#include "asyncps/asyncps.h"
#include "device.h"
#include "train_worker.h"
#include "writable_dir.h"  // (apps/common)

namespace mnist_async {

Accuracy evaluate(asyncps::nn::Backend& backend, const asyncps::mnist::Mnist& data, std::span<const float> params) {
  Accuracy a;
  a.validation = static_cast<double>(count_correct(backend, params, data.validation.images, data.validation.labels)) /
                 static_cast<double>(data.validation.size());
  a.test = static_cast<double>(count_correct(backend, params, data.test.images, data.test.labels)) /
           static_cast<double>(data.test.size());
  return a;
}

namespace {
// The newest checkpoint in --logdir that reads back whole: a damaged one is reported and skipped,
// as a training run's restore does.
std::pair<std::filesystem::path, asyncps::CheckpointData> newest_readable(const Config& config,
                                                                         const asyncps::ParamLayout& layout) {
  const auto all = asyncps::list_checkpoints(config.logdir);
  if (all.empty()) throw asyncps::ConfigError("--eval_only: no checkpoint in " + config.logdir + " (pass --checkpoint)");
  std::string skipped;
  for (const auto& index : all) {
    try {
      return {index, asyncps::read_checkpoint(index, layout)};
    } catch (const asyncps::CheckpointError& e) {
      std::fprintf(stderr, "asyncps: warning: %s; skipped\n", e.what());
      skipped += std::string(skipped.empty() ? "" : "; ") + e.what();
    }
  }
  throw asyncps::ConfigError("--eval_only: no checkpoint in " + config.logdir + " reads back whole (" + skipped + ")");
}
}  // namespace

int run_eval(const Config& config) {
  const auto layout = mnist_layout();
  // the export is the last thing done: a directory that cannot take it is refused first
  if (!config.export_dir.empty()) app_cli::check_writable_dir(config.export_dir, "--export_dir");
  auto [index, ckpt] = config.checkpoint.empty()
                           ? newest_readable(config, layout)
                           : std::pair{std::filesystem::path(config.checkpoint),
                                       asyncps::read_checkpoint(config.checkpoint, layout)};
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
