// defines: ctr_async::run_allreduce
// --allreduce: the same models trained the way data-parallel frameworks train them, as the
// baseline of bench/embedding.sh. Every rank is a worker holding the whole model, the tables
// included; each step every rank computes the gradient of its own batch, scatters it into a dense
// gradient of the whole model (tables too: a table's gradient is rows x dim, almost all zeros),
// MPI_Allreduce-sums it, and applies the same update (the tables' optimizer row-wise, as the
// servers' tables do). What it moves per step is the tables' size, whatever the batch touches.
#pragma once
#include "options.h"

namespace ctr_async {

int run_allreduce(const Config& c);

}  // namespace ctr_async
