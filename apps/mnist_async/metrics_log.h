// defines: mnist_async::MetricsLog
// The chief's logdir/metrics.jsonl: one JSON object per line, appended (the file a plot or a
// script reads), and the same figures as TensorBoard scalars in logdir/events.out.tfevents.*
// (asyncps::SummaryWriter: the tutorial's Supervisor summaries; a new event file per run).
#pragma once
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "asyncps/summary_writer.h"

namespace mnist_async {

class MetricsLog {
 public:
  // Creates the directory if needed; throws asyncps::ConfigError if it cannot be written.
  explicit MetricsLog(const std::filesystem::path& logdir);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  // Appends {"k": v, ...} and flushes; and one TensorBoard event at the line's global_step (or
  // eval_global_step) holding every other field as a scalar of that name.
  void write(const std::vector<std::pair<std::string, double>>& fields);
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  asyncps::SummaryWriter summaries_;
};

}  // namespace mnist_async
