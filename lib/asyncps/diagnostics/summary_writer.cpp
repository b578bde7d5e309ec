// defines: SummaryWriter (see asyncps/summary_writer.h)
#include "asyncps/summary_writer.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "asyncps/error.h"
#include "asyncps/log.h"
#include "diagnostics/event_record.h"

namespace asyncps {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char h[256] = {};
  if (gethostname(h, sizeof h - 1) != 0 || h[0] == '\0') return "localhost";
  return h;
}

}  // namespace

SummaryWriter::SummaryWriter(const std::filesystem::path& logdir) {
  if (logdir.empty()) throw ConfigError("SummaryWriter: the log directory must not be empty");
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  if (ec) throw ConfigError("SummaryWriter: cannot create " + logdir.string() + ": " + ec.message());
  const double t = now_seconds();
  // events.out.tfevents.<seconds>.<host>.<pid>[.<n>]: TensorBoard reads every file whose name
  // holds "tfevents"; the pid, and a counter after it, keep writers started in the same second
  // apart (each created new: never appended to another's file)
  const std::string base = "events.out.tfevents." + std::to_string(static_cast<long long>(t)) + "." + host_name() +
                           "." + std::to_string(static_cast<long long>(getpid()));
  for (int n = 0; !file_ && n < 1000; ++n) {
    path_ = logdir / (n == 0 ? base : base + "." + std::to_string(n));
    file_ = std::fopen(path_.c_str(), "wbx");  // (x: fails if it exists)
    if (!file_ && errno != EEXIST)
      throw ConfigError("SummaryWriter: cannot write " + path_.string() + ": " + std::strerror(errno));
  }
  if (!file_) throw ConfigError("SummaryWriter: cannot create a new event file in " + logdir.string());
  // unbuffered: each record goes to the file in write(2)s at once, and a write that fails leaves
  // nothing behind in a buffer that fclose would write after the cut below
  std::setvbuf(file_, nullptr, _IONBF, 0);
  write_record(detail::encode_version_event(t));
}

SummaryWriter::~SummaryWriter() { close(); }

SummaryWriter::SummaryWriter(SummaryWriter&& other) noexcept
    : path_(std::move(other.path_)), file_(std::exchange(other.file_, nullptr)), whole_(other.whole_),
      failed_(other.failed_) {
  other.path_.clear();
}

SummaryWriter& SummaryWriter::operator=(SummaryWriter&& other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    other.path_.clear();
    file_ = std::exchange(other.file_, nullptr);
    whole_ = other.whole_;
    failed_ = other.failed_;
  }
  return *this;
}

void SummaryWriter::close() {
  if (file_) std::fclose(file_);
  file_ = nullptr;
}

void SummaryWriter::add_scalars(const std::vector<std::pair<std::string, double>>& values, std::int64_t step) {
  if (!file_ && !failed_) throw ConfigError("SummaryWriter: the writer is closed");
  if (step < 0) throw ConfigError("SummaryWriter: step must be >= 0, got " + std::to_string(step));
  for (const auto& [tag, value] : values) {
    if (tag.empty() || tag.find('\0') != std::string::npos)
      throw ConfigError("SummaryWriter: a tag must be non-empty and hold no NUL byte");
    if (std::isfinite(value) && std::fabs(value) > std::numeric_limits<float>::max()) {
      std::ostringstream v;
      v << value;
      throw ConfigError("SummaryWriter: " + tag + " is " + v.str() +
                        ", beyond the range of a scalar summary (a 32-bit float; NaN and Inf are written as they are)");
    }
  }
  write_record(detail::encode_scalar_event(now_seconds(), step, values));
}

void SummaryWriter::write_record(const std::string& data) {
  if (failed_ || !file_) return;
  const std::string r = detail::tf_record(data);
  if (std::fwrite(r.data(), 1, r.size(), file_) != r.size() || std::fflush(file_) != 0) {
    failed_ = true;  // (a full disk: the curves stop, training goes on)
    const int err = errno;
    // the part of the record that was written is cut off: the file ends with a whole record,
    // which TFRecord readers that stop at a torn one (tf.data) read to the end
    if (ftruncate(fileno(file_), whole_) != 0) {}
    errno = err;
    log(LogLevel::Warning, "SummaryWriter: cannot write " + path_.string() + " (" + std::strerror(errno) +
                               "); no more summaries are written to it");
    return;
  }
  whole_ += static_cast<long long>(r.size());
}

}  // namespace asyncps
