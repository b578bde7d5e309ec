// defines: Arrival
#include "diagnostics/arrival.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "asyncps/log.h"
#include "core/check.h"
#include "transport/mpi_implementation.h"

namespace asyncps::detail {

namespace {
constexpr int kArrivalTag = 0x4172;  // ("Ar": no other message on the session's communicator has a tag)

std::string seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f s", s);
  return b;
}
}  // namespace

Arrival::Arrival(const JobFacts& job, double limit, const std::string& what) {
  const MPI_Comm comm = job.comm();
  const int size = job.roles().size;
  if (job.roles().rank != 0) {
    ASYNCPS_MPI_CHECK(MPI_Isend(nullptr, 0, MPI_BYTE, 0, kArrivalTag, comm, &sent_));
    return;
  }
  std::vector<MPI_Request> heard(static_cast<std::size_t>(std::max(size - 1, 0)), MPI_REQUEST_NULL);
  for (int r = 1; r < size; ++r)
    ASYNCPS_MPI_CHECK(MPI_Irecv(nullptr, 0, MPI_BYTE, r, kArrivalTag, comm, &heard[static_cast<std::size_t>(r - 1)]));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int> which(heard.size());
  for (int nap_us = 20, left = static_cast<int>(heard.size());;) {
    int n = 0;  // (MPI_Testsome sets the completed ones to MPI_REQUEST_NULL; MPI_Testall would not)
    if (left > 0)
      ASYNCPS_MPI_CHECK(MPI_Testsome(static_cast<int>(heard.size()), heard.data(), &n, which.data(), MPI_STATUSES_IGNORE));
    if (n != MPI_UNDEFINED) left -= n;
    if (left == 0) return;
    if (limit > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > limit) break;
    std::this_thread::sleep_for(std::chrono::microseconds(nap_us));
    nap_us = std::min(nap_us * 2, 1000);
  }
  // (completed requests are MPI_REQUEST_NULL now: the others never sent)
  std::string missing;
  int count = 0;
  for (int r = 1; r < size; ++r)
    if (heard[static_cast<std::size_t>(r - 1)] != MPI_REQUEST_NULL) {
      if (++count <= 4) missing += (missing.empty() ? "" : ", ") + job.describe_rank(r);
    }
  if (count > 4) missing += " and " + std::to_string(count - 4) + " more";
  const std::string line = missing + (count == 1 ? " has" : " have") + " not come to " + what +
                           " in " + seconds(limit) +
                           " (its program has not made its ParameterServer or WorkerClient: it stopped, or its own "
                           "start-up takes longer, which needs a longer stall timeout); ending the job";
  try {
    log(LogLevel::Error, line);
  } catch (...) {
    std::fprintf(stderr, "asyncps: %s\n", line.c_str());
  }
  abort_world(1);
}

void Arrival::done() {
  if (sent_ != MPI_REQUEST_NULL) ASYNCPS_MPI_CHECK(MPI_Wait(&sent_, MPI_STATUS_IGNORE));
}

Arrival::~Arrival() {
  if (sent_ == MPI_REQUEST_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Request_free(&sent_);  // (unwinding before rank 0 went on: the job is ending)
}

}  // namespace asyncps::detail
