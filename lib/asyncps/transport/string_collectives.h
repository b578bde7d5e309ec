// defines: bcast_string, gather_strings
// Strings across the ranks of a communicator (messages, file names, JSON): collective, each
// call made by every rank in the same order.
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

namespace asyncps::detail {

// Rank 0's `s`, on every rank.
void bcast_string(MPI_Comm comm, std::string& s);
// Collective: the first rank's non-empty `mine` (prefixed "rank N: " where it differs from the
// caller's own), on every rank; empty when every rank's is. For preconditions that one rank
// alone may fail: every rank then throws, none is left waiting in the next collective.
std::string first_problem(MPI_Comm comm, const std::string& mine);
// Every rank's `mine`, on rank 0 (in rank order; empty elsewhere).
std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine);

}  // namespace asyncps::detail
