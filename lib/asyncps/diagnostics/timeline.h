// defines: asyncps::detail::Timeline, write_timeline
// Per-rank spans (pull, compute, push, waits, server activity, checkpoint saves), written at the
// end of the job as one Chrome trace-event JSON file (Perfetto and chrome://tracing open it):
// one process per rank, times in microseconds since the moment all ranks left the set-up
// barrier (every rank takes that as its origin, so ranks line up to within a barrier's skew).
// Recording a span is two clock reads and a 24-byte append; nothing is recorded when disabled.
#pragma once
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/job_facts.h"

namespace asyncps::detail {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kMaxSpans = 4u << 20;  // ~100 MB at most per rank, then drops

  explicit Timeline(bool enabled = false) : enabled_(enabled), origin_(Clock::now()) {}
  bool enabled() const noexcept { return enabled_; }
  // Call right after a barrier that every rank of the session leaves together.
  void set_origin() noexcept { origin_ = Clock::now(); }
  // `name` must outlive the Timeline (a string literal).
  void span(const char* name, Clock::time_point t0, Clock::time_point t1) {
    if (!enabled_) return;
    if (spans_.size() >= kMaxSpans) { ++dropped_; return; }
    spans_.push_back({name, t0, t1});
  }
  std::size_t size() const noexcept { return spans_.size(); }

  // Collective over `comm`: rank 0 of it writes every rank's spans to `path` (written to a
  // temporary name, then renamed). `label` names this rank's process in the viewer.
  void write(MPI_Comm comm, const std::string& path, const std::string& label) const;

 private:
  struct Span {
    const char* name;
    Clock::time_point t0, t1;
  };
  std::string to_json(int rank, const std::string& label) const;
  bool enabled_;
  Clock::time_point origin_;
  std::vector<Span> spans_;
  std::uint64_t dropped_ = 0;
};

// Collective: when Options::timeline is set, rank 0 writes every rank's spans there; a failure
// (rank 0's) throws Error on every rank.
void write_timeline(const JobFacts& job, const Timeline& timeline);

}  // namespace asyncps::detail
