// defines: asyncps::validate(const Options&)
// Every Options field checked in one place, with one message per problem that names the field
// (apps map "Options::x" to their own flag names). Session's constructor calls it on every rank.
#include <cmath>
#include <sstream>
#include <string>

#include "asyncps/error.h"
#include "asyncps/limits.h"
#include "asyncps/options.h"

namespace asyncps {

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

std::string show(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

bool in_range(double v, double lo, double hi) { return std::isfinite(v) && v >= lo && v <= hi; }

}  // namespace

void validate(const Options& o) {
  require(o.num_servers >= 1 && o.num_servers <= limits::kMaxServers,
          "Options::num_servers must be in [1, " + std::to_string(limits::kMaxServers) + "], got " +
              std::to_string(o.num_servers));
  require(o.mode == Mode::Async || o.mode == Mode::Sync || o.mode == Mode::Ssp,
          "Options::mode is not one of Async, Sync, Ssp (got " + std::to_string(static_cast<int>(o.mode)) + ")");
  require(o.staleness >= 0 && o.staleness <= 1000000,
          "Options::staleness must be in [0, 1000000], got " + std::to_string(o.staleness));
  require(o.staleness == 0 || o.mode == Mode::Ssp,
          "Options::staleness is the SSP bound: it has no effect unless Options::mode is Ssp (got staleness " +
              std::to_string(o.staleness) + ")");
  require(!(o.staleness_lr && o.mode == Mode::Sync),
          "Options::staleness_lr is for async and ssp: sync mode's updates have no staleness");
  require(std::isfinite(o.staleness_lr_power) && o.staleness_lr_power > 0 && o.staleness_lr_power <= 2,
          "Options::staleness_lr_power must be in (0, 2], got " + show(o.staleness_lr_power));
  require(o.staleness_lr || o.staleness_lr_power == Options{}.staleness_lr_power,
          "Options::staleness_lr_power has no effect unless Options::staleness_lr is on (got power " +
              show(o.staleness_lr_power) + ")");
  require(o.staleness_lr || !o.staleness_lr_relative,
          "Options::staleness_lr_relative has no effect unless Options::staleness_lr is on");
  require(in_range(o.dc_lambda, 0, 1e6), "Options::dc_lambda must be in [0, 1e6], got " + show(o.dc_lambda));
  require(o.dc_lambda == 0 || o.mode != Mode::Sync,
          "Options::dc_lambda is for async and ssp: sync mode has no delay to compensate");
  require(!(o.overlap && o.mode == Mode::Sync),
          "Options::overlap is for async: a sync round cannot start before the last one is applied");
  require(!(o.overlap && o.mode == Mode::Ssp),
          "Options::overlap is for async: it would have no effect in SSP, whose push already flies during the "
          "next compute (and whose next claim waits for the clock bound)");
  require(o.pull == PullMethod::GetAccumulate || o.pull == PullMethod::Get,
          "Options::pull is not one of GetAccumulate, Get (got " + std::to_string(static_cast<int>(o.pull)) + ")");
  require(o.server_progress == ServerProgress::Auto || o.server_progress == ServerProgress::Poll ||
              o.server_progress == ServerProgress::Wake,
          "Options::server_progress is not one of Auto, Poll, Wake (got " +
              std::to_string(static_cast<int>(o.server_progress)) + ")");
  require(o.server_poll_us >= -1 && o.server_poll_us <= 1000000,
          "Options::server_poll_us must be -1 (auto) or in [0, 1000000] microseconds, got " +
              std::to_string(o.server_poll_us));
  require(o.server_spin_us >= 0 && o.server_spin_us <= 1000000,
          "Options::server_spin_us must be in [0, 1000000] microseconds, got " + std::to_string(o.server_spin_us));
  require(o.server_spin_us == 0 || o.server_progress != ServerProgress::Poll,
          "Options::server_spin_us has no effect with Options::server_progress Poll (it is Wake's spin)");
  require(o.wait_spin_us >= 0 && o.wait_spin_us <= 1000000,
          "Options::wait_spin_us must be in [0, 1000000] microseconds, got " + std::to_string(o.wait_spin_us));
  require(o.chunk_bytes >= limits::kMinChunkBytes && o.chunk_bytes <= limits::kMaxChunkBytes,
          "Options::chunk_bytes must be in [" + std::to_string(limits::kMinChunkBytes) + ", " +
              std::to_string(limits::kMaxChunkBytes) + "], got " + std::to_string(o.chunk_bytes));
  require(o.timeline.find('\0') == std::string::npos, "Options::timeline contains a NUL byte");
  require(std::isfinite(o.stall_timeout) && (o.stall_timeout == 0 || (o.stall_timeout >= limits::kMinStallTimeout &&
                                                                      o.stall_timeout <= limits::kMaxStallTimeout)),
          "Options::stall_timeout must be 0 (off) or in [" + show(limits::kMinStallTimeout) + ", " +
              show(limits::kMaxStallTimeout) + "] seconds (heartbeats go every min(1 s, timeout / 4): a shorter "
              "timeout names ranks stalled that are only scheduled out), got " + show(o.stall_timeout));
  validate(o.checkpoint);
}

}  // namespace asyncps

namespace asyncps {

void validate(const CheckpointOptions& c) {
  require(c.keep >= 1 && c.keep <= limits::kMaxCheckpointsKept,
          "Options::checkpoint.keep must be in [1, " + std::to_string(limits::kMaxCheckpointsKept) +
              "] (the final checkpoint is one of those kept), got " + std::to_string(c.keep));
  require(in_range(c.save_secs, 0, limits::kMaxSeconds),
          "Options::checkpoint.save_secs must be in [0, 1e9] seconds (0: only at the end), got " + show(c.save_secs));
  require(c.dir.native().find('\0') == std::string::npos, "Options::checkpoint.dir contains a NUL byte");
  require(c.restart_from.native().find('\0') == std::string::npos,
          "Options::checkpoint.restart_from contains a NUL byte");
  // without a directory nothing is saved: an interval or a count to keep would change nothing
  require(!c.dir.empty() || c.save_secs == CheckpointOptions{}.save_secs,
          "Options::checkpoint.save_secs has no effect without Options::checkpoint.dir (nothing is saved), got " +
              show(c.save_secs));
  require(!c.dir.empty() || c.keep == CheckpointOptions{}.keep,
          "Options::checkpoint.keep has no effect without Options::checkpoint.dir (nothing is saved), got " +
              std::to_string(c.keep));
}

}  // namespace asyncps
