// defines: asyncps::detail::check_same_everywhere
// What every rank must agree on before any window exists (the layout, the number of servers,
// the step mode and its rules, the checkpoint options, the transport options): the layout's hash
// and size, and every option whose row in the options' table (asyncps/option_table.h) says the
// ranks must agree; the facts make each rank's fingerprint and name what differs.
#pragma once

#include <mpi.h>

#include "asyncps/session.h"

namespace asyncps::detail {

// Collective over comm. Every rank sees every rank's fingerprint, so every rank reaches the same
// verdict: all throw ConfigError (naming the first rank and the first fact that differ from
// rank 0's) or none does.
void check_same_everywhere(MPI_Comm comm, const ParamLayout& layout, const Options& options);

}  // namespace asyncps::detail
