// defines: bcast_string, gather_strings
#include "transport/string_collectives.h"

#include <limits>
#include <string>
#include <utility>

#include "asyncps/error.h"
#include "core/check.h"

namespace asyncps::detail {

namespace {
void check_int_count(unsigned long long n, const char* what) {
  if (n > static_cast<unsigned long long>(std::numeric_limits<int>::max()))
    throw Error(std::string(what) + ": " + std::to_string(n) + " bytes, more than one MPI message can carry (2^31 - 1)");
}
}  // namespace

void bcast_string(MPI_Comm comm, std::string& s) {
  unsigned long long n = s.size();
  ASYNCPS_MPI_CHECK(MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, comm));
  check_int_count(n, "bcast_string");  // (every rank has n: all refuse alike)
  s.resize(n);
  if (n) ASYNCPS_MPI_CHECK(MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, 0, comm));
}

std::string first_problem(MPI_Comm comm, const std::string& mine) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int first = mine.empty() ? size : rank;
  ASYNCPS_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == size) return {};
  std::string theirs = mine;
  unsigned long long n = theirs.size();
  ASYNCPS_MPI_CHECK(MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, first, comm));
  theirs.resize(n);
  ASYNCPS_MPI_CHECK(MPI_Bcast(theirs.data(), static_cast<int>(n), MPI_CHAR, first, comm));
  // (the same problem everywhere, the usual case, reads the same everywhere)
  return theirs == mine ? theirs : "rank " + std::to_string(first) + ": " + theirs;
}

std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine) {
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  // MPI counts and displacements are ints: the whole gather must fit one (every rank learns the
  // total first, so all refuse alike rather than rank 0 alone)
  unsigned long long total_bytes = mine.size();
  ASYNCPS_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &total_bytes, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm));
  check_int_count(total_bytes, "gather_strings");
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
