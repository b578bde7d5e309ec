// defines: asyncps::option_table, find_option, set_option (every option of the library, one row each)
// A row: the key, the field, the group, whether the ranks must agree, the help, the rule that
// refuses a value (its range, a contradiction) and the one that says where the option would have no
// effect (nullptr: it always has). Its type, its text form, its
// parsing and its fingerprint follow from the field (Field<...> below). validate.cpp runs the
// rules; runtime/rank_agreement.cpp compares the fingerprints; apps/common/library_flags.h makes
// the flags; python/src/bind_session.cpp the keywords.
#include "asyncps/option_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>
#include <type_traits>

#include "asyncps/error.h"
#include "asyncps/limits.h"
#include "asyncps/option_choices.h"
#include "core/number_text.h"

namespace asyncps {
namespace {

// ---- a field's type: text, parsing, fingerprint -------------------------------------------------

template <class T>
constexpr OptionType type_of() {
  if constexpr (std::is_same_v<T, bool>) return OptionType::Bool;
  else if constexpr (std::is_same_v<T, int>) return OptionType::Int;
  else if constexpr (std::is_same_v<T, float>) return OptionType::Float;
  else if constexpr (std::is_same_v<T, double>) return OptionType::Double;
  else if constexpr (std::is_same_v<T, std::size_t>) return OptionType::Size;
  else if constexpr (std::is_same_v<T, std::string>) return OptionType::Text;
  else if constexpr (std::is_same_v<T, std::filesystem::path>) return OptionType::Path;
  else {
    static_assert(std::is_enum_v<T>, "an option's field is bool, int, float, double, size_t, string, path or an enum");
    return OptionType::Choice;
  }
}

template <class T>
std::string text_of(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (std::is_floating_point_v<T>) return detail::number_text(v);  // (reads back the same)
  else if constexpr (std::is_integral_v<T>) return std::to_string(v);
  else if constexpr (std::is_same_v<T, std::string>) return v;
  else if constexpr (std::is_same_v<T, std::filesystem::path>) return v.string();
  else return name_of(v);
}

[[noreturn]] void not_a(std::string_view field, const char* what, std::string_view text) {
  throw ConfigError(std::string(field) + " must be " + what + ", got '" + std::string(text) + "'");
}

template <class T>
T value_of(std::string_view text, std::string_view field) {
  const std::string s(text);
  if constexpr (std::is_same_v<T, bool>) {
    if (s == "true" || s == "1" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "0" || s == "no" || s == "off") return false;
    not_a(field, "true or false", text);
  } else if constexpr (std::is_floating_point_v<T>) {
    char* end = nullptr;
    const double v = s.empty() ? 0 : std::strtod(s.c_str(), &end);  // (nan, inf: the range rules refuse them)
    if (s.empty() || end != s.c_str() + s.size()) not_a(field, "a number", text);
    return static_cast<T>(v);
  } else if constexpr (std::is_integral_v<T>) {
    long long v = 0;
    const char* first = s.c_str() + (s.starts_with('+') ? 1 : 0);
    const auto r = std::from_chars(first, s.c_str() + s.size(), v);
    const bool fits = std::is_signed_v<T> ? v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max()
                                          : v >= 0 && static_cast<unsigned long long>(v) <= std::numeric_limits<T>::max();
    if (s.empty() || r.ec != std::errc{} || r.ptr != s.c_str() + s.size() || !fits)
      not_a(field, std::is_signed_v<T> ? "an integer that fits an int" : "a whole number of bytes", text);
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::filesystem::path>) {
    return T(s);
  } else {
    return parse_choice<T>(text, field);
  }
}

std::uint64_t hash_text(const std::string& s) {  // FNV-1a
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

template <class T>
std::uint64_t fingerprint_of(const T& v) {  // the value's bits (floats as the ranks use them)
  if constexpr (std::is_same_v<T, std::string>) return hash_text(v);
  else if constexpr (std::is_same_v<T, std::filesystem::path>) return hash_text(v.string());
  else {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(std::uint64_t));
    std::uint64_t b = 0;
    std::memcpy(&b, &v, sizeof v);
    return b;
  }
}

template <class E>
std::string names_of() {
  std::string s;
  for (const auto& c : choices(E{})) s += (s.empty() ? "" : " | ") + std::string(c.name);
  return s;
}

// The field at the end of a path of members: Field<&Options::checkpoint, &CheckpointOptions::keep>.
template <auto... Path>
struct Field {
  static auto& ref(Options& o) { return (o.*....*Path); }
  static const auto& ref(const Options& o) { return (o.*....*Path); }
  using T = std::remove_cvref_t<decltype(ref(std::declval<Options&>()))>;
  static std::string get(const Options& o) { return text_of(ref(o)); }
  static void parse(Options& o, std::string_view text, std::string_view field) { ref(o) = value_of<T>(text, field); }
  static std::uint64_t fingerprint(const Options& o) { return fingerprint_of(ref(o)); }
  static constexpr auto choices() -> std::string (*)() {
    if constexpr (std::is_enum_v<T>) return &names_of<T>;
    else return nullptr;
  }
};

using O = const Options&;
using Rule = std::string (*)(O);

// `fingerprint`: what the ranks compare, where it is not the value itself
template <auto... Path>
OptionInfo row(std::string_view key, std::string_view field, std::string_view group, RankAgreement agree,
               std::string_view help, Rule bad_value, Rule no_effect = nullptr,
               std::uint64_t (*fingerprint)(O) = nullptr) {
  using F = Field<Path...>;
  return OptionInfo{key,       field,     type_of<typename F::T>(), group,
                    agree,     help,      &F::get,                  F::choices(),
                    &F::parse, bad_value, no_effect,                fingerprint ? fingerprint : &F::fingerprint};
}
std::string fine(O) { return {}; }

// ---- the rules' words ---------------------------------------------------------------------------

// a value as the user wrote it: six digits where they read back as the same value, else the
// shortest text that does (1000001 is never shown as 1e+06, which is in range)
template <class T>
std::string show(T v) {
  std::ostringstream s;
  s << v;
  if (std::isnan(v) || static_cast<T>(std::strtod(s.str().c_str(), nullptr)) == v) return s.str();
  return detail::number_text(v);  // (a float as a float: 0.4999999, not 0.49999991...)
}
bool in_range(double v, double lo, double hi) { return std::isfinite(v) && v >= lo && v <= hi; }
std::string unless(bool ok, const std::string& message) { return ok ? std::string() : message; }

// The heartbeat interval, min(1 s, stall_timeout / 4), in microseconds (diagnostics/liveness.cpp),
// and whether a sleep of `us` microseconds (-1: chosen by the library, at most 10 ms) outlasts it.
long beat_interval_us(const Options& o) { return std::lround(std::min(1.0, o.stall_timeout / 4) * 1e6); }
bool sleeps_past_beats(int us, const Options& o) {
  return std::isfinite(o.stall_timeout) && o.stall_timeout > 0 && us > beat_interval_us(o);
}
std::string no_nul(const std::string& text, const char* field) {  // (a path or a name the OS is given)
  return unless(text.find('\0') == std::string::npos, std::string(field) + " contains a NUL byte");
}

using asyncps::limits::kMaxServers;

// ---- the table ----------------------------------------------------------------------------------

const OptionInfo kOptions[] = {
    row<&Options::num_servers>(
        "num_servers", "Options::num_servers", "job", RankAgreement::Servers,
        "parameter-server ranks: ranks [0, num_servers) serve the parameters, the rest are workers",
        [](O o) {
          return unless(o.num_servers >= 1 && o.num_servers <= kMaxServers,
                        "Options::num_servers must be in [1, " + std::to_string(kMaxServers) + "], got " +
                            std::to_string(o.num_servers));
        }),
    row<&Options::mode>(
        "mode", "Options::mode", "mode", RankAgreement::Mode,
        "async (Hogwild: apply each update as it arrives) | sync (apply the mean of all workers' updates once per "
        "round) | ssp (async, but no worker runs more than `staleness` steps ahead of the slowest)",
        [](O o) {
          return unless(o.mode == Mode::Async || o.mode == Mode::Sync || o.mode == Mode::Ssp,
                        "Options::mode is not one of Async, Sync, Ssp (got " +
                            std::to_string(static_cast<int>(o.mode)) + ")");
        }),
    row<&Options::staleness>(
        "staleness", "Options::staleness", "mode", RankAgreement::Mode, "ssp: the bound s on the clock gap",
        [](O o) {
          return unless(o.staleness >= 0 && o.staleness <= 1000000,
                        "Options::staleness must be in [0, 1000000], got " + std::to_string(o.staleness));
        },
        [](O o) {
          return unless(o.mode == Mode::Ssp,
                        "Options::staleness is the SSP bound: it has no effect unless Options::mode is Ssp (got "
                        "staleness " + std::to_string(o.staleness) + ")");
        }),
    row<&Options::staleness_lr>(
        "staleness_lr", "Options::staleness_lr", "mode", RankAgreement::Mode,
        "async/ssp: scale each update by 1/max(1, staleness)^power (staleness_lr_power; 1: Zhang et al. 2016's "
        "1/staleness)",
        fine,
        [](O o) {
          return unless(o.mode != Mode::Sync,
                        "Options::staleness_lr is for async and ssp: sync mode's updates have no staleness");
        }),
    row<&Options::staleness_lr_power>(
        "staleness_lr_power", "Options::staleness_lr_power", "mode", RankAgreement::Mode,
        "with staleness_lr: the power of the staleness the update is divided by, in (0, 2] (0.5: 1/sqrt(staleness))",
        [](O o) {
          return unless(std::isfinite(o.staleness_lr_power) && o.staleness_lr_power > 0 && o.staleness_lr_power <= 2,
                        "Options::staleness_lr_power must be in (0, 2], got " + show(o.staleness_lr_power));
        },
        [](O o) {
          return unless(o.staleness_lr,
                        "Options::staleness_lr_power has no effect unless Options::staleness_lr is on (got power " +
                            show(o.staleness_lr_power) + ")");
        }),
    row<&Options::staleness_lr_relative>(
        "staleness_lr_relative", "Options::staleness_lr_relative", "mode", RankAgreement::Mode,
        "with staleness_lr: scale by ((1 + mean staleness) / (1 + staleness))^power instead (the mean: W - 1 for W "
        "async workers): only updates staler than the mean are damped, a straggler's most",
        fine,
        [](O o) {
          return unless(o.staleness_lr,
                        "Options::staleness_lr_relative has no effect unless Options::staleness_lr is on");
        }),
    row<&Options::dc_lambda>(
        "dc_lambda", "Options::dc_lambda", "mode", RankAgreement::Mode,
        "async/ssp: delay-compensated updates (DC-ASGD, Zheng et al. 2017): push g + lambda*g*g*(w_now - w_read), "
        "one more read of the parameters per step (0: off)",
        [](O o) {
          return unless(in_range(o.dc_lambda, 0, 1e6), "Options::dc_lambda must be in [0, 1e6], got " + show(o.dc_lambda));
        },
        [](O o) {
          return unless(o.mode != Mode::Sync,
                        "Options::dc_lambda is for async and ssp: sync mode has no delay to compensate");
        }),
    row<&Options::overlap>(
        "overlap", "Options::overlap", "mode", RankAgreement::Other,
        "async only: the next step's claim and pull fly while this gradient is computed (one step more staleness); "
        "the push flies during the next compute with or without it",
        fine,
        [](O o) {
          if (o.mode == Mode::Sync)
            return std::string("Options::overlap is for async: a sync round cannot start before the last one is applied");
          return unless(o.mode != Mode::Ssp,
                        "Options::overlap is for async: it would have no effect in SSP, whose push already flies "
                        "during the next compute (and whose next claim waits for the clock bound)");
        }),
    row<&Options::pull>(
        "pull", "Options::pull", "transport", RankAgreement::Other,
        "get_accumulate (element-wise atomic reads) | get (plain MPI_Get: elements may mix generations)",
        [](O o) {
          return unless(o.pull == PullMethod::GetAccumulate || o.pull == PullMethod::Get,
                        "Options::pull is not one of GetAccumulate, Get (got " +
                            std::to_string(static_cast<int>(o.pull)) + ")");
        }),
    row<&Options::server_progress>(
        "server_progress", "Options::server_progress", "transport", RankAgreement::Free,
        "how servers let one-sided operations complete: poll (timed), wake (sleep until bytes arrive on a socket), "
        "auto (chosen from the MPI, the node and the layout)",
        [](O o) {
          return unless(o.server_progress == ServerProgress::Auto || o.server_progress == ServerProgress::Poll ||
                            o.server_progress == ServerProgress::Wake,
                        "Options::server_progress is not one of Auto, Poll, Wake (got " +
                            std::to_string(static_cast<int>(o.server_progress)) + ")");
        }),
    row<&Options::server_poll_us>(
        "server_poll_us", "Options::server_poll_us", "transport", RankAgreement::Free,
        "the longest a server sleeps between entries into MPI, in microseconds (-1: chosen with server_progress; "
        "unless woken, at most the heartbeat interval min(1 s, stall_timeout / 4))",
        [](O o) {
          if (o.server_poll_us < -1 || o.server_poll_us > 1000000)
            return "Options::server_poll_us must be -1 (auto) or in [0, 1000000] microseconds, got " +
                   std::to_string(o.server_poll_us);
          // a polling server beats once a poll: a poll longer than the heartbeat interval would
          // have it named stalled while it sleeps (a woken server's sleeps end at each tick)
          return unless(o.server_progress == ServerProgress::Wake || !sleeps_past_beats(o.server_poll_us, o),
                        "Options::server_poll_us " + std::to_string(o.server_poll_us) +
                            " exceeds the heartbeat interval of Options::stall_timeout " + show(o.stall_timeout) +
                            " (" + std::to_string(beat_interval_us(o)) +
                            " microseconds): a polling server would be named stalled while it sleeps");
        }),
    row<&Options::server_spin_us>(
        "server_spin_us", "Options::server_spin_us", "transport", RankAgreement::Free,
        "wake: a server keeps entering MPI this long after bytes last arrived, in microseconds",
        [](O o) {
          return unless(o.server_spin_us >= 0 && o.server_spin_us <= 1000000,
                        "Options::server_spin_us must be in [0, 1000000] microseconds, got " +
                            std::to_string(o.server_spin_us));
        },
        [](O o) {
          return unless(o.server_progress != ServerProgress::Poll,
                        "Options::server_spin_us has no effect with Options::server_progress Poll (it is Wake's spin)");
        }),
    row<&Options::wait_spin_us>(
        "wait_spin_us", "Options::wait_spin_us", "transport", RankAgreement::Free,
        "where operations need the servers (across hosts): a waiting worker spins this long, in microseconds, then "
        "sleeps until the answer arrives",
        [](O o) {
          return unless(o.wait_spin_us >= 0 && o.wait_spin_us <= 1000000,
                        "Options::wait_spin_us must be in [0, 1000000] microseconds, got " + std::to_string(o.wait_spin_us));
        },
        [](O o) {
          return unless(o.server_progress != ServerProgress::Poll,
                        "Options::wait_spin_us has no effect with Options::server_progress Poll (a waiting worker "
                        "spins there, without end)");
        }),
    row<&Options::wait_max_sleep_us>(
        "wait_max_sleep_us", "Options::wait_max_sleep_us", "transport", RankAgreement::Free,
        "the longest a waiting worker sleeps between looks at its operations, in microseconds, where it sleeps "
        "(wake) (-1: 100 with shared-memory neighbours, else 1000; at most min(1 s, stall_timeout / 4))",
        [](O o) {
          if (o.wait_max_sleep_us < -1 || o.wait_max_sleep_us > 1000000)
            return "Options::wait_max_sleep_us must be -1 (auto) or in [0, 1000000] microseconds, got " +
                   std::to_string(o.wait_max_sleep_us);
          return unless(!sleeps_past_beats(o.wait_max_sleep_us, o),
                        "Options::wait_max_sleep_us " + std::to_string(o.wait_max_sleep_us) +
                            " exceeds the heartbeat interval of Options::stall_timeout " + show(o.stall_timeout) +
                            " (" + std::to_string(beat_interval_us(o)) +
                            " microseconds): a waiting worker would be named stalled while it sleeps");
        },
        [](O o) {
          return unless(o.server_progress != ServerProgress::Poll,
                        "Options::wait_max_sleep_us has no effect with Options::server_progress Poll (a waiting "
                        "worker spins there)");
        }),
    row<&Options::chunk_bytes>(
        "chunk_bytes", "Options::chunk_bytes", "transport", RankAgreement::Other,
        "large pushes and pulls are cut into operations of at most this many bytes",
        [](O o) {
          // (whole floats: an operation moves floats, so 6 would act as 4)
          return unless(o.chunk_bytes >= limits::kMinChunkBytes && o.chunk_bytes <= limits::kMaxChunkBytes &&
                            o.chunk_bytes % sizeof(float) == 0,
                        "Options::chunk_bytes must be a multiple of 4 (whole floats) in [" +
                            std::to_string(limits::kMinChunkBytes) + ", " + std::to_string(limits::kMaxChunkBytes) +
                            "], got " + std::to_string(o.chunk_bytes));
        }),
    row<&Options::timeline>(
        "timeline", "Options::timeline", "diagnostics", RankAgreement::Other,
        "write every rank's spans (pull, compute, push, waits, server activity, saves) to this file as Chrome "
        "trace-event JSON (Perfetto, chrome://tracing); written by rank 0 at the end",
        [](O o) { return no_nul(o.timeline, "Options::timeline"); }, nullptr,
        // whether it is set (every rank then records its spans), not where rank 0 writes them
        [](O o) -> std::uint64_t { return o.timeline.empty() ? 0 : 1; }),
    row<&Options::stall_timeout>(
        "stall_timeout", "Options::stall_timeout", "job", RankAgreement::Other,
        "a rank that makes no progress for this many seconds (stopped, hung, cut off) is named, a checkpoint is "
        "saved if the servers are live, and the job ends non-zero (0: never); must exceed the longest step and save",
        [](O o) {
          return unless(std::isfinite(o.stall_timeout) &&
                            (o.stall_timeout == 0 || (o.stall_timeout >= limits::kMinStallTimeout &&
                                                      o.stall_timeout <= limits::kMaxStallTimeout)),
                        "Options::stall_timeout must be 0 (off) or in [" + show(limits::kMinStallTimeout) + ", " +
                            show(limits::kMaxStallTimeout) +
                            "] seconds (heartbeats go every min(1 s, timeout / 4): a shorter timeout names ranks "
                            "stalled that are only scheduled out), got " + show(o.stall_timeout));
        }),
    // the checkpoint options: every rank takes part in the restore and the saves (one message)
    row<&Options::checkpoint, &CheckpointOptions::keep>(
        "keep", "Options::checkpoint.keep", "checkpoint", RankAgreement::Checkpoint,
        "newest checkpoints this run keeps, the final one among them (each server also keeps its shard of the one "
        "before, whose index is gone; files an earlier run wrote are never deleted)",
        [](O o) {
          const int keep = o.checkpoint.keep;
          return unless(keep >= 1 && keep <= limits::kMaxCheckpointsKept,
                        "Options::checkpoint.keep must be in [1, " + std::to_string(limits::kMaxCheckpointsKept) +
                            "] (the final checkpoint is one of those kept), got " + std::to_string(keep));
        },
        [](O o) {
          return unless(!o.checkpoint.dir.empty(),
                        "Options::checkpoint.keep has no effect without Options::checkpoint.dir (nothing is saved), "
                        "got " + std::to_string(o.checkpoint.keep));
        }),
    row<&Options::checkpoint, &CheckpointOptions::save_secs>(
        "save_secs", "Options::checkpoint.save_secs", "checkpoint", RankAgreement::Checkpoint,
        "servers checkpoint this often, in seconds, when the step or the rows moved (0: only at the end)",
        [](O o) {
          return unless(in_range(o.checkpoint.save_secs, 0, limits::kMaxSeconds),
                        "Options::checkpoint.save_secs must be in [0, 1e9] seconds (0: only at the end), got " +
                            show(o.checkpoint.save_secs));
        },
        [](O o) {
          return unless(!o.checkpoint.dir.empty(),
                        "Options::checkpoint.save_secs has no effect without Options::checkpoint.dir (nothing is "
                        "saved), got " + show(o.checkpoint.save_secs));
        }),
    row<&Options::checkpoint, &CheckpointOptions::dir>(
        "checkpoint_dir", "Options::checkpoint.dir", "checkpoint", RankAgreement::Checkpoint,
        "where the servers save checkpoints and a run resumes from (none: no checkpoints)",
        [](O o) { return no_nul(o.checkpoint.dir.native(), "Options::checkpoint.dir"); }),
    row<&Options::checkpoint, &CheckpointOptions::restart_from>(
        "restart_from", "Options::checkpoint.restart_from", "checkpoint", RankAgreement::Checkpoint,
        "start from this checkpoint index, written by any number of servers (default: the newest valid one in the "
        "checkpoint directory)",
        [](O o) { return no_nul(o.checkpoint.restart_from.native(), "Options::checkpoint.restart_from"); }),
    row<&Options::checkpoint, &CheckpointOptions::restore>(
        "restore", "Options::checkpoint.restore", "checkpoint", RankAgreement::Checkpoint,
        "resume from the newest valid checkpoint in the checkpoint directory (false: start afresh; those the run "
        "would overwrite are moved into earlier-run-<time>/, never overwritten)",
        [](O o) {
          return unless(o.checkpoint.restore || o.checkpoint.restart_from.empty(),
                        "Options::checkpoint.restart_from names a checkpoint to start from, which contradicts "
                        "Options::checkpoint.restore set to start afresh: give one of them (restart_from " +
                            o.checkpoint.restart_from.string() + ")");
        },
        [](O o) {
          return unless(!o.checkpoint.dir.empty(),
                        "Options::checkpoint.restore set to start afresh has no effect without "
                        "Options::checkpoint.dir (there is nothing to restore and nothing is saved)");
        }),
};

}  // namespace

std::span<const OptionInfo> option_table() { return kOptions; }

const OptionInfo* find_option(std::string_view key) {
  for (const OptionInfo& o : kOptions)
    if (o.key == key) return &o;
  return nullptr;
}

void set_option(Options& o, const OptionInfo& option, std::string_view text) { option.parse(o, text, option.field); }

std::string OptionInfo::problem(const Options& o) const {
  if (std::string p = bad_value(o); !p.empty()) return p;
  static const Options defaults;
  return no_effect && get(o) != get(defaults) ? no_effect(o) : std::string();
}

}  // namespace asyncps
