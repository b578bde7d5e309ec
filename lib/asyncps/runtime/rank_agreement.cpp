// defines: asyncps::detail::check_same_everywhere
#include "runtime/rank_agreement.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "asyncps/error.h"
#include "asyncps/option_table.h"
#include "core/check.h"

namespace asyncps::detail {
namespace {

// Which message a difference gets; the facts are ordered by it so that the first differing one is
// the most basic (a layout difference explains any other).
enum class Kind { Layout, Servers, Mode, Checkpoint, Other };

Kind kind_of(RankAgreement a) {
  switch (a) {
    case RankAgreement::Servers: return Kind::Servers;
    case RankAgreement::Mode: return Kind::Mode;
    case RankAgreement::Checkpoint: return Kind::Checkpoint;
    default: return Kind::Other;
  }
}

struct Fact {
  std::string name;  // as the message names it
  Kind kind;
  const OptionInfo* option;                           // an option's fingerprint, or
  std::uint64_t (*of_layout)(const ParamLayout&);     // a fact of the layout
  std::uint64_t value(const ParamLayout& l, const Options& o) const {
    return option ? option->fingerprint(o) : of_layout(l);
  }
};

// The two layout facts, then every option the ranks must agree on (asyncps/option_table.h), by kind.
const std::vector<Fact>& facts() {
  static const std::vector<Fact> all = [] {
    std::vector<Fact> f = {
        {"the layout's hash", Kind::Layout, nullptr, [](const ParamLayout& l) -> std::uint64_t { return l.hash(); }},
        {"the layout's size", Kind::Layout, nullptr, [](const ParamLayout& l) -> std::uint64_t { return l.size(); }}};
    for (const OptionInfo& o : option_table())
      if (o.agree != RankAgreement::Free) f.push_back({std::string(o.field), kind_of(o.agree), &o, nullptr});
    std::stable_sort(f.begin(), f.end(), [](const Fact& a, const Fact& b) { return a.kind < b.kind; });
    return f;
  }();
  return all;
}
constexpr std::size_t kHash = 0, kSize = 1;  // the two layout facts, which the message quotes

std::string difference(std::size_t i, int r, const std::uint64_t* f, const std::uint64_t* f0) {
  const Fact& fact = facts()[i];
  std::ostringstream msg;
  switch (fact.kind) {
    case Kind::Layout:
      msg << "parameter layout differs between ranks: rank " << r << " has layout hash " << std::hex << f[kHash]
          << std::dec << " (" << f[kSize] << " floats), rank 0 has " << std::hex << f0[kHash] << std::dec << " ("
          << f0[kSize] << " floats); every rank must build the same model";
      return msg.str();
    case Kind::Servers:  // (the servers' fact: num_servers, an int)
      msg << "number of servers differs between ranks: rank " << r << " has " << static_cast<int>(f[i])
          << ", rank 0 has " << static_cast<int>(f0[i]);
      return msg.str();
    case Kind::Mode:
      msg << "synchronisation mode differs between ranks (rank " << r << " vs rank 0): every rank must be given "
             "the same Options::mode, Options::staleness, Options::staleness_lr (its power and relative choice) "
             "and Options::dc_lambda";
      break;
    case Kind::Checkpoint:
      msg << "checkpoint options differ between ranks (rank " << r
          << " vs rank 0): every rank must be given the same checkpoint directory, save interval, number kept, "
             "restart checkpoint and restore choice (Options::checkpoint)";
      return msg.str();  // (one fact: the message names it)
    case Kind::Other:
      msg << "options differ between ranks (rank " << r << " vs rank 0): every rank must be given the same options";
      break;
  }
  msg << " (the first that differs: " << fact.name << ")";
  return msg.str();
}

}  // namespace

void check_same_everywhere(MPI_Comm comm, const ParamLayout& layout, const Options& options) {
  const std::vector<Fact>& all_facts = facts();
  const std::size_t n = all_facts.size();
  int size = 0;
  ASYNCPS_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<std::uint64_t> mine(n);
  for (std::size_t i = 0; i < n; ++i) mine[i] = all_facts[i].value(layout, options);
  std::vector<std::uint64_t> all(n * static_cast<std::size_t>(size));
  ASYNCPS_MPI_CHECK(MPI_Allgather(mine.data(), static_cast<int>(n), MPI_UINT64_T, all.data(), static_cast<int>(n),
                                  MPI_UINT64_T, comm));
  const std::uint64_t* f0 = all.data();
  for (int r = 1; r < size; ++r) {
    const std::uint64_t* f = &all[static_cast<std::size_t>(r) * n];
    for (std::size_t i = 0; i < n; ++i)
      if (f[i] != f0[i]) throw ConfigError(difference(i, r, f, f0));
  }
}

}  // namespace asyncps::detail
