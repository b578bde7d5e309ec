// defines: ctr_async::fill, RowSource, Evaluation, evaluate, print_eval, print_result,
//          print_bytes_per_step, EvalClock
// What every way of training ctr_async's models shares: batches cut from the click streams, and
// the held-out evaluation (AUC and log-loss beside the planted model's) on rows from wherever the
// tables live (the servers, or a local copy in --allreduce).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "asyncps/param_layout.h"
#include "clicks.h"
#include "model.h"

namespace ctr_async {

// Examples [first, first + n) of a stream as a batch.
void fill(const ClickLog& log, std::uint64_t stream, std::uint64_t first, int n, Batch& b, Example& ex);

// Fills wide_rows (one float per key) and deep_rows (dim floats per key; untouched for lr) with
// the rows of keys.
using RowSource = std::function<void(std::span<const std::uint64_t> keys, std::vector<float>& wide_rows,
                                     std::vector<float>& deep_rows)>;

struct Evaluation {
  double auc = 0, planted_auc = 0, log_loss = 0, planted_log_loss = 0;
};
// The model (params, and the rows rows() gives) on the first `examples` of the held-out stream.
Evaluation evaluate(const ClickLog& log, const ModelShape& shape, const asyncps::ParamLayout& layout,
                    std::span<const float> params, std::int64_t examples, const RowSource& rows);

// The log lines that bench/embedding.sh reads:
//   eval: G global steps, S samples, T s training, AUC a, log-loss l
//   Done: G global steps [(R in this run), after a restore] by W worker(s) in T s: X samples/s (of this run)
//   AUC a (the planted model's: p), log-loss l (planted: q) on N held-out examples
//   bytes per step: M moved by this worker's tables, N on the wire (this host, in + out)
void print_eval(std::int64_t global_steps, int batch, double training_seconds, const Evaluation& e);
void print_result(std::int64_t global_steps, std::int64_t run_steps, int batch, int workers, double seconds,
                  std::int64_t examples, const Evaluation& e);
void print_bytes_per_step(double moved, double wire);

// Training time with the evaluations left out: what "time to a target AUC" counts.
class EvalClock {
 public:
  using Clock = std::chrono::steady_clock;
  EvalClock() : start_(Clock::now()) {}
  void pause() {
    paused_at_ = Clock::now();
    paused_ = true;
  }
  void resume() {
    excluded_ += Clock::now() - paused_at_;
    paused_ = false;
  }
  // the time trained so far; while paused, up to the pause (an evaluation never counts)
  double training_seconds() const {
    return std::chrono::duration<double>((paused_ ? paused_at_ : Clock::now()) - start_ - excluded_).count();
  }

 private:
  Clock::time_point start_, paused_at_;
  Clock::duration excluded_{};
  bool paused_ = false;
};

}  // namespace ctr_async
