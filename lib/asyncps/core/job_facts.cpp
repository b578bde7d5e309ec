// defines: JobFacts, describe_rank
#include "core/job_facts.h"

namespace asyncps::detail {

std::string describe_rank(const Roles& roles, int rank, const std::string& host) {
  const std::string role = rank < roles.num_servers ? "server " + std::to_string(rank)
                                                    : "worker " + std::to_string(rank - roles.num_servers);
  return role + " (rank " + std::to_string(rank) + " on " + host + ")";
}

const std::string& JobFacts::host(int rank) const {
  static const std::string unknown = "?";
  return rank >= 0 && static_cast<std::size_t>(rank) < hosts_.size() ? hosts_[static_cast<std::size_t>(rank)] : unknown;
}

std::string JobFacts::role_name() const {
  return roles_->is_server() ? "server " + std::to_string(roles_->rank)
                             : "worker " + std::to_string(roles_->worker_index());
}

}  // namespace asyncps::detail
