// defines: MetricsLog
#include "metrics_log.h"

#include <cerrno>
#include <cmath>
#include <cstring>

#include "asyncps/error.h"

namespace mnist_async {

MetricsLog::MetricsLog(const std::filesystem::path& logdir) : path_(logdir / "metrics.jsonl"), summaries_(logdir) {
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  if (ec) throw asyncps::ConfigError("--logdir " + logdir.string() + ": cannot create it: " + ec.message());
  file_ = std::fopen(path_.c_str(), "a");
  if (!file_) throw asyncps::ConfigError("--logdir " + logdir.string() + ": cannot write " + path_.string() + ": " +
                                         std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);
}

void MetricsLog::write(const std::vector<std::pair<std::string, double>>& fields) {
  std::string line = "{";
  char num[64];
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const double v = fields[i].second;
    if (std::isfinite(v)) std::snprintf(num, sizeof num, "%.9g", v);
    else std::snprintf(num, sizeof num, "null");  // JSON has no NaN
    line += (i ? ", \"" : "\"") + fields[i].first + "\": " + num;
  }
  line += "}\n";
  std::fputs(line.c_str(), file_);
  std::fflush(file_);
  // the TensorBoard scalars: the step is the line's global step, every other field a curve
  std::int64_t step = -1;
  std::vector<std::pair<std::string, double>> scalars;
  for (const auto& [name, value] : fields) {
    if (name == "global_step" || name == "eval_global_step") step = static_cast<std::int64_t>(value);
    else if (name != "local_step") scalars.emplace_back(name, value);
  }
  if (step >= 0 && !scalars.empty()) summaries_.add_scalars(scalars, step);
}

}  // namespace mnist_async
