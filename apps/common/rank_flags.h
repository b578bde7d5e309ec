// defines: app_cli::FlagTexts, app_cli::flag_texts, app_cli::refuse_flags_differing_between_ranks
// An MPMD launch (mpirun -np 1 prog --ps 1 : -np 2 prog --ps 1 --learning_rate 0.1) can give the
// ranks different flags. The library compares its own options (Session's constructor); a
// program's own flags that shape the run (--learning_rate, --training_steps, --seed, ...) are
// compared here, before the Session: a flag whose value differs is one line on every rank, naming
// it, rank 0's value and the first rank with another. Each rank's own flags (paths on its host,
// how much it logs) are left out by the program.
#pragma once
#include <mpi.h>

#include <boost/program_options.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "asyncps/error.h"
#include "library_flags.h"

namespace app_cli {

// (flag, its value as text; "" where it has no value), in the flags' order
using FlagTexts = std::vector<std::pair<std::string, std::string>>;

namespace detail_rank_flags {

template <class T>
bool text_if(const boost::any& v, std::string& out) {
  const T* x = boost::any_cast<T>(&v);
  if (!x) return false;
  if constexpr (std::is_same_v<T, std::string>) out = *x;
  else if constexpr (std::is_same_v<T, bool>) out = *x ? "true" : "false";
  else {
    char buf[64];  // (floats: the shortest text that reads back the same bits)
    const auto r = std::to_chars(buf, buf + sizeof buf, *x);
    out.assign(buf, r.ptr);
  }
  return true;
}

inline std::string text_of(const std::string& flag, const boost::any& v) {
  std::string s;
  if (v.empty() || text_if<std::string>(v, s) || text_if<bool>(v, s) || text_if<int>(v, s) || text_if<long>(v, s) ||
      text_if<long long>(v, s) || text_if<unsigned>(v, s) || text_if<unsigned long>(v, s) ||
      text_if<unsigned long long>(v, s) || text_if<double>(v, s) || text_if<float>(v, s))
    return s;
  throw std::logic_error("app_cli::flag_texts: --" + flag + " has a type it cannot show");
}

inline std::uint64_t hash_text(const std::string& s) {  // FNV-1a
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

inline std::string bcast_text(std::string text, int root, MPI_Comm comm) {
  int n = static_cast<int>(text.size());
  MPI_Bcast(&n, 1, MPI_INT, root, comm);
  text.resize(static_cast<std::size_t>(n));
  MPI_Bcast(text.data(), n, MPI_CHAR, root, comm);
  return text;
}

inline std::string shown(const std::string& text) { return text.empty() ? "none" : "'" + text + "'"; }

}  // namespace detail_rank_flags

// Every flag of `flags` but those in `own` and the library's of `library_groups` (the Session
// compares those), with its value in `vm` as text.
inline FlagTexts flag_texts(const boost::program_options::options_description& flags,
                            const boost::program_options::variables_map& vm, std::initializer_list<std::string_view> own,
                            Groups library_groups) {
  std::vector<std::string> library;
  for (const asyncps::OptionInfo& o : asyncps::option_table())
    if (offered(o, library_groups)) library.push_back(flag_of(o));
  FlagTexts out;
  for (const auto& option : flags.options()) {
    const std::string& flag = option->long_name();
    if (std::find(own.begin(), own.end(), flag) != own.end()) continue;
    if (std::find(library.begin(), library.end(), flag) != library.end()) continue;
    const auto it = vm.find(flag);
    out.emplace_back(flag, it == vm.end() ? std::string() : detail_rank_flags::text_of(flag, it->second.value()));
  }
  return out;
}

// Collective over comm: ConfigError on every rank where a flag of `mine` differs between ranks.
inline void refuse_flags_differing_between_ranks(MPI_Comm comm, const FlagTexts& mine) {
  using namespace detail_rank_flags;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // [0]: how many flags (one program on every rank), then each value's hash
  std::vector<std::uint64_t> h{mine.size()}, lo, hi;
  for (const auto& [flag, text] : mine) h.push_back(hash_text(flag + '=' + text));
  std::uint64_t count_lo = h[0], count_hi = h[0];
  MPI_Allreduce(MPI_IN_PLACE, &count_lo, 1, MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(MPI_IN_PLACE, &count_hi, 1, MPI_UINT64_T, MPI_MAX, comm);
  if (count_lo != count_hi)
    throw asyncps::ConfigError("the ranks run programs with different flags (an MPMD launch of two programs)");
  lo = hi = h;
  MPI_Allreduce(MPI_IN_PLACE, lo.data(), static_cast<int>(lo.size()), MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(MPI_IN_PLACE, hi.data(), static_cast<int>(hi.size()), MPI_UINT64_T, MPI_MAX, comm);
  std::size_t i = 1;
  while (i < h.size() && lo[i] == hi[i]) ++i;
  if (i == h.size()) return;
  const auto& [flag, text] = mine[i - 1];
  std::uint64_t first = h[i];  // rank 0's
  MPI_Bcast(&first, 1, MPI_UINT64_T, 0, comm);
  int other = h[i] != first ? rank : size;  // the lowest rank with another value
  MPI_Allreduce(MPI_IN_PLACE, &other, 1, MPI_INT, MPI_MIN, comm);
  const std::string at0 = bcast_text(text, 0, comm), at_other = bcast_text(text, other, comm);
  throw asyncps::ConfigError("--" + flag + " differs between ranks: rank 0 has " + shown(at0) + ", rank " +
                             std::to_string(other) + " has " + shown(at_other) +
                             " (every rank of the job must be given the same)");
}

}  // namespace app_cli
