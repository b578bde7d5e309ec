// defines: asyncps::detail::JobFacts, describe_rank
// What the parts below runtime/ are told of the job, as plain facts (no Session): the
// communicator, the roles, the layout and its plans, the options, every rank's host. runtime/
// makes it from the Session (job_facts(), runtime/rank_runtime.h); the liveness checks, the
// timeline and the checkpointer take it, so diagnostics/ and checkpoint/ never reach runtime/.
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

#include "asyncps/options.h"
#include "asyncps/param_layout.h"
#include "asyncps/roles.h"

namespace asyncps::detail {

// "worker 1 (rank 2 on host-b)" / "server 0 (rank 0 on host-a)": a rank as messages name it.
std::string describe_rank(const Roles& roles, int rank, const std::string& host);

class JobFacts {
 public:
  JobFacts() = default;
  // The references must outlive the facts (the Session's own members do).
  JobFacts(MPI_Comm comm, const Roles& roles, const ParamLayout& layout, const ShardPlan& plan,
           const RowPlan& row_plan, const Options& options, std::vector<std::string> hosts)
      : comm_(comm), roles_(&roles), layout_(&layout), plan_(&plan), row_plan_(&row_plan), options_(&options),
        hosts_(std::move(hosts)) {}

  MPI_Comm comm() const noexcept { return comm_; }
  const Roles& roles() const noexcept { return *roles_; }
  const ParamLayout& layout() const noexcept { return *layout_; }
  const ShardPlan& plan() const noexcept { return *plan_; }
  const RowPlan& row_plan() const noexcept { return *row_plan_; }
  const Options& options() const noexcept { return *options_; }
  const std::string& host(int rank) const;  // "?" for a rank out of range
  std::string describe_rank(int rank) const { return detail::describe_rank(*roles_, rank, host(rank)); }
  std::string role_name() const;  // this rank's: "server 0", "worker 1"

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  const Roles* roles_ = nullptr;
  const ParamLayout* layout_ = nullptr;
  const ShardPlan* plan_ = nullptr;
  const RowPlan* row_plan_ = nullptr;
  const Options* options_ = nullptr;
  std::vector<std::string> hosts_;  // every rank's, in rank order
};

}  // namespace asyncps::detail
