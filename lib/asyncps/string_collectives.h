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
// Every rank's `mine`, on rank 0 (in rank order; empty elsewhere).
std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine);

}  // namespace asyncps::detail
