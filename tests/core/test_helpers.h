// defines: env_size, sanitized, world_rank, gather_to_all — small helpers shared by the MPI tests
#pragma once
#include <mpi.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace asyncps::test {

inline std::size_t env_size(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<std::size_t>(std::stoull(v)) : fallback;
}

// True in a sanitizer build's tests (cmake/AsyncpsSanitizers.cmake): load-only loops run lighter.
inline bool sanitized() {
  const char* v = std::getenv("ASYNCPS_TEST_SANITIZED");
  return v && *v && std::string(v) != "0";
}

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// Every rank contributes `mine`; every rank gets everyone's values concatenated in rank order.
inline std::vector<long long> gather_to_all(const std::vector<long long>& mine) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size; ++r) displs[static_cast<std::size_t>(r)] = total, total += counts[static_cast<std::size_t>(r)];
  std::vector<long long> all(static_cast<std::size_t>(total));
  MPI_Allgatherv(mine.data(), n, MPI_LONG_LONG, all.data(), counts.data(), displs.data(), MPI_LONG_LONG,
                 MPI_COMM_WORLD);
  return all;
}

}  // namespace asyncps::test
