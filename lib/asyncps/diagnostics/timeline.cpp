// defines: Timeline::write, write_timeline
#include "diagnostics/timeline.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "asyncps/error.h"
#include "core/check.h"
#include "transport/string_collectives.h"

namespace asyncps::detail {

namespace {
std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}
}  // namespace

std::string Timeline::to_json(int rank, const std::string& label) const {
  std::string out;
  out.reserve(spans_.size() * 72 + 256);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"%s\"}},\n"
                "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"sort_index\":%d}}",
                rank, escaped(label).c_str(), rank, rank);
  out += buf;
  for (const Span& s : spans_) {
    const double ts = std::chrono::duration<double, std::micro>(s.t0 - origin_).count();
    const double dur = std::chrono::duration<double, std::micro>(s.t1 - s.t0).count();
    std::snprintf(buf, sizeof buf, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,\"dur\":%.3f}",
                  s.name, rank, ts, dur);
    out += buf;
  }
  if (dropped_) {
    std::snprintf(buf, sizeof buf,
                  ",\n{\"name\":\"spans dropped (limit reached)\",\"ph\":\"i\",\"s\":\"p\",\"pid\":%d,\"tid\":0,"
                  "\"ts\":0,\"args\":{\"dropped\":%llu}}",
                  rank, static_cast<unsigned long long>(dropped_));
    out += buf;
  }
  return out;
}

void Timeline::write(MPI_Comm comm, const std::string& path, const std::string& label) const {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const std::string mine = to_json(rank, label);
  const std::vector<std::string> parts = gather_strings(comm, mine);
  if (rank != 0) return;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) throw Error("timeline: cannot write " + tmp);
    f << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
    for (std::size_t r = 0; r < parts.size(); ++r) f << (r ? ",\n" : "") << parts[r];
    f << "\n]}\n";
    if (!f.flush()) throw Error("timeline: writing " + tmp + " failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error("timeline: cannot rename " + tmp + " to " + path + ": " + ec.message());
}

void write_timeline(const JobFacts& job, const Timeline& timeline) {
  if (job.options().timeline.empty()) return;
  const Roles& r = job.roles();
  std::string label = "rank " + std::to_string(r.rank) + ": ";
  label += r.is_server() ? "server " + std::to_string(r.rank)
                         : "worker " + std::to_string(r.worker_index()) + (r.is_chief() ? " (chief)" : "");
  label += " on " + job.host(r.rank);
  // Rank 0 alone writes: its failure (a full disk, a directory gone) is every rank's verdict,
  // so none is left waiting in the window free that follows.
  std::string problem;
  try {
    timeline.write(job.comm(), job.options().timeline, label);
  } catch (const Error& e) {
    problem = e.what();
  }
  if (const std::string first = first_problem(job.comm(), problem); !first.empty()) throw Error(first);
}

}  // namespace asyncps::detail
