// defines: mnist_async::MetricsLog
// The chief's logdir/metrics.jsonl: one JSON object per line, appended (the file a plot or a
// dashboard reads; the role of the tutorial's summary writer).
#pragma once
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace mnist_async {

class MetricsLog {
 public:
  // Creates the directory if needed; throws asyncps::ConfigError if it cannot be written.
  explicit MetricsLog(const std::filesystem::path& logdir);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  // Appends {"k": v, ...} and flushes.
  void write(const std::vector<std::pair<std::string, double>>& fields);
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace mnist_async
