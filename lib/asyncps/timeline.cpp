// defines: Timeline::write
#include "timeline.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "asyncps/error.h"
#include "check.h"

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
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const std::string mine = to_json(rank, label);
  const int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  ASYNCPS_MPI_CHECK(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, comm));
  std::string all;
  if (rank == 0) {
    long long total = 0;
    for (int r = 0; r < size; ++r) {
      displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += lens[static_cast<std::size_t>(r)];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  ASYNCPS_MPI_CHECK(MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0, comm));
  if (rank != 0) return;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) throw Error("timeline: cannot write " + tmp);
    f << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
    std::size_t at = 0;
    for (int r = 0; r < size; ++r) {
      if (r) f << ",\n";
      f.write(all.data() + at, lens[static_cast<std::size_t>(r)]);
      at += static_cast<std::size_t>(lens[static_cast<std::size_t>(r)]);
    }
    f << "\n]}\n";
    if (!f.flush()) throw Error("timeline: writing " + tmp + " failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error("timeline: cannot rename " + tmp + " to " + path + ": " + ec.message());
}

}  // namespace asyncps::detail
