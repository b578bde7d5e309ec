// defines: bcast_string, gather_strings
#include "string_collectives.h"

#include <utility>

#include "check.h"

namespace asyncps::detail {

void bcast_string(MPI_Comm comm, std::string& s) {
  unsigned long long n = s.size();
  ASYNCPS_MPI_CHECK(MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, comm));
  s.resize(n);
  if (n) ASYNCPS_MPI_CHECK(MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, 0, comm));
}

std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine) {
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  int n = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(size)), offs(static_cast<std::size_t>(size));
  ASYNCPS_MPI_CHECK(MPI_Gather(&n, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, comm));
  std::string all;
  if (rank == 0) {
    int total = 0;
    for (int r = 0; r < size; ++r) offs[static_cast<std::size_t>(r)] = std::exchange(total, total + lens[static_cast<std::size_t>(r)]);
    all.resize(static_cast<std::size_t>(total));
  }
  ASYNCPS_MPI_CHECK(MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, 0, comm));
  std::vector<std::string> out;
  if (rank == 0)
    for (int r = 0; r < size; ++r)
      out.push_back(all.substr(static_cast<std::size_t>(offs[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(lens[static_cast<std::size_t>(r)])));
  return out;
}

}  // namespace asyncps::detail
