// defines: fill, evaluate, print_eval, print_result, print_bytes_per_step
#include "batches.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "metrics.h"

namespace ctr_async {

void fill(const ClickLog& log, std::uint64_t stream, std::uint64_t first, int n, Batch& b, Example& ex) {
  const int F = log.config().fields, Dn = log.config().dense;
  b.n = n;
  b.keys.resize(static_cast<std::size_t>(n) * F);
  b.dense.resize(static_cast<std::size_t>(n) * Dn);
  b.labels.resize(static_cast<std::size_t>(n));
  b.planted.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    log.example(stream, first + static_cast<std::uint64_t>(i), ex);
    for (int f = 0; f < F; ++f) b.keys[static_cast<std::size_t>(i) * F + f] = ClickLog::key(f, ex.ids[static_cast<std::size_t>(f)]);
    std::copy(ex.dense.begin(), ex.dense.end(), b.dense.begin() + static_cast<std::ptrdiff_t>(i) * Dn);
    b.labels[static_cast<std::size_t>(i)] = ex.label;
    b.planted[static_cast<std::size_t>(i)] = ex.planted;
  }
}

Evaluation evaluate(const ClickLog& log, const ModelShape& shape, const asyncps::ParamLayout& layout,
                    std::span<const float> params, std::int64_t examples, const RowSource& rows) {
  std::vector<float> scores, labels, planted, wide_rows, deep_rows, logits;
  Batch batch;
  Example ex;
  constexpr int kEvalBatch = 1024;
  for (std::int64_t first = 0; first < examples; first += kEvalBatch) {
    const int n = static_cast<int>(std::min<std::int64_t>(kEvalBatch, examples - first));
    fill(log, 0, static_cast<std::uint64_t>(first), n, batch, ex);
    rows(batch.keys, wide_rows, deep_rows);
    forward_backward(shape, layout, params, batch, wide_rows, deep_rows, logits, nullptr);
    scores.insert(scores.end(), logits.begin(), logits.end());
    labels.insert(labels.end(), batch.labels.begin(), batch.labels.end());
    planted.insert(planted.end(), batch.planted.begin(), batch.planted.end());
  }
  return {auc(scores, labels), auc(planted, labels), log_loss(scores, labels), log_loss(planted, labels)};
}

void print_eval(std::int64_t global_steps, int batch, double training_seconds, const Evaluation& e) {
  std::printf("eval: %lld global steps, %lld samples, %.3f s training, AUC %s, log-loss %.4f\n",
              static_cast<long long>(global_steps), static_cast<long long>(global_steps) * batch, training_seconds,
              auc_text(e.auc).c_str(), e.log_loss);
  std::fflush(stdout);
}

void print_result(std::int64_t global_steps, std::int64_t run_steps, int batch, int workers, double seconds,
                  std::int64_t examples, const Evaluation& e) {
  const std::string resumed =
      run_steps == global_steps ? std::string() : " (" + std::to_string(run_steps) + " in this run)";
  std::printf("Done: %lld global steps%s by %d worker(s) in %.2f s: %.0f samples/s\n", static_cast<long long>(global_steps),
              resumed.c_str(), workers, seconds, static_cast<double>(run_steps) * batch / seconds);
  std::printf("AUC %s (the planted model's: %s), log-loss %.4f (planted: %.4f) on %lld held-out examples\n",
              auc_text(e.auc).c_str(), auc_text(e.planted_auc).c_str(), e.log_loss, e.planted_log_loss,
              static_cast<long long>(examples));
  std::fflush(stdout);
}

void print_bytes_per_step(double moved, double wire) {
  std::printf("bytes per step: %.0f moved by this worker's tables, %.0f on the wire (this host, in + out)\n", moved, wire);
  std::fflush(stdout);
}

}  // namespace ctr_async
