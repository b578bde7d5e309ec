// defines: asyncps::detail::check_same_everywhere
#include "runtime/rank_agreement.h"

#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "asyncps/error.h"
#include "core/check.h"

namespace asyncps::detail {
namespace {

// FNV-1a of the checkpoint options: every rank takes part in the collective restore and saves,
// so they must agree on all of them (a rank with another save_secs or restore choice would
// enter a different protocol).
std::uint64_t checkpoint_hash(const CheckpointOptions& c) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](const void* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 0x100000001b3ull;
  };
  const std::string dir = c.dir.string(), from = c.restart_from.string();
  mix(dir.data(), dir.size() + 1);  // (+1: the terminator separates the fields)
  mix(from.data(), from.size() + 1);
  mix(&c.save_secs, sizeof c.save_secs);
  mix(&c.keep, sizeof c.keep);
  const char restore = c.restore ? 1 : 0;
  mix(&restore, 1);
  return h;
}

// A value's bits as one fingerprint word (floats compared bit for bit, as the ranks use them).
template <class T>
std::uint64_t bits(T v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(std::uint64_t));
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}

// Which message a difference gets; the table is ordered so that the first differing row is
// the most basic fact (a layout difference explains any other).
enum class Kind { Layout, Servers, Mode, Checkpoint, Other };

struct Fact {
  const char* name;  // as the message names it
  Kind kind;
  std::uint64_t (*value)(const ParamLayout&, const Options&);
};

using L = const ParamLayout&;
using O = const Options&;
constexpr Fact kFacts[] = {
    {"the layout's hash", Kind::Layout, [](L l, O) -> std::uint64_t { return l.hash(); }},
    {"the layout's size", Kind::Layout, [](L l, O) -> std::uint64_t { return l.size(); }},
    {"Options::num_servers", Kind::Servers, [](L, O o) { return bits(o.num_servers); }},
    {"Options::mode", Kind::Mode, [](L, O o) { return bits(o.mode); }},
    {"Options::staleness", Kind::Mode, [](L, O o) { return bits(o.staleness); }},
    {"Options::staleness_lr", Kind::Mode, [](L, O o) { return bits(o.staleness_lr); }},
    // (the power and the relative choice matter only with staleness_lr)
    {"Options::staleness_lr_power", Kind::Mode,
     [](L, O o) { return o.staleness_lr ? bits(o.staleness_lr_power) : 0; }},
    {"Options::staleness_lr_relative", Kind::Mode,
     [](L, O o) { return o.staleness_lr ? bits(o.staleness_lr_relative) : 0; }},
    {"Options::dc_lambda", Kind::Mode, [](L, O o) { return bits(o.dc_lambda); }},
    {"Options::checkpoint", Kind::Checkpoint, [](L, O o) { return checkpoint_hash(o.checkpoint); }},
    {"Options::pull", Kind::Other, [](L, O o) { return bits(o.pull); }},
    {"Options::chunk_bytes", Kind::Other, [](L, O o) { return bits(o.chunk_bytes); }},
    {"Options::overlap", Kind::Other, [](L, O o) { return bits(o.overlap); }},
    {"Options::timeline (set or not)", Kind::Other, [](L, O o) { return bits(!o.timeline.empty()); }},
    {"Options::stall_timeout", Kind::Other, [](L, O o) { return bits(o.stall_timeout); }},
};
constexpr std::size_t kN = std::size(kFacts);
constexpr std::size_t kHash = 0, kSize = 1;  // the two layout rows, which the message quotes

std::string difference(const Fact& fact, int r, const std::uint64_t* f, const std::uint64_t* f0) {
  std::ostringstream msg;
  switch (fact.kind) {
    case Kind::Layout:
      msg << "parameter layout differs between ranks: rank " << r << " has layout hash " << std::hex << f[kHash]
          << std::dec << " (" << f[kSize] << " floats), rank 0 has " << std::hex << f0[kHash] << std::dec << " ("
          << f0[kSize] << " floats); every rank must build the same model";
      return msg.str();
    case Kind::Servers:
      msg << "number of servers differs between ranks: rank " << r << " has " << static_cast<int>(f[2])
          << ", rank 0 has " << static_cast<int>(f0[2]);
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
      msg << "options differ between ranks (rank " << r << " vs rank 0): every rank must be given the same Options";
      break;
  }
  msg << " (the first that differs: " << fact.name << ")";
  return msg.str();
}

}  // namespace

void check_same_everywhere(MPI_Comm comm, const ParamLayout& layout, const Options& options) {
  static_assert(kFacts[2].kind == Kind::Servers, "the servers' message reads row 2");
  int size = 0;
  ASYNCPS_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<std::uint64_t> mine(kN);
  for (std::size_t i = 0; i < kN; ++i) mine[i] = kFacts[i].value(layout, options);
  std::vector<std::uint64_t> all(kN * static_cast<std::size_t>(size));
  ASYNCPS_MPI_CHECK(MPI_Allgather(mine.data(), static_cast<int>(kN), MPI_UINT64_T, all.data(), static_cast<int>(kN),
                                  MPI_UINT64_T, comm));
  const std::uint64_t* f0 = all.data();
  for (int r = 1; r < size; ++r) {
    const std::uint64_t* f = &all[static_cast<std::size_t>(r) * kN];
    for (std::size_t i = 0; i < kN; ++i)
      if (f[i] != f0[i]) throw ConfigError(difference(kFacts[i], r, f, f0));
  }
}

}  // namespace asyncps::detail
