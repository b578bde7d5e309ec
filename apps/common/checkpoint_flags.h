// defines: app_cli::add_checkpoint_flags, app_cli::kCheckpointFlagNames
// The checkpoint flags the example apps share (--save_secs, --keep_checkpoints, --restart_from,
// --no_restore), bound to Options::checkpoint, and the names the library's checkpoint messages
// take in them. Each app binds --logdir itself (its default differs: mnist_async always has one).
#pragma once
#include <boost/program_options.hpp>

#include <string>
#include <utility>

#include "asyncps/checkpoint.h"

namespace app_cli {

inline void add_checkpoint_flags(boost::program_options::options_description& flags, asyncps::CheckpointOptions& co) {
  namespace po = boost::program_options;
  flags.add_options()
    ("save_secs", po::value(&co.save_secs)->default_value(co.save_secs),
     "servers checkpoint into --logdir this often (0: only at the end), like the tutorial's Supervisor")
    ("keep_checkpoints", po::value(&co.keep)->default_value(co.keep), "newest checkpoints kept in --logdir")
    ("restart_from", po::value<std::string>()->notifier([&co](const std::string& v) { co.restart_from = v; }),
     "start from this checkpoint index, written by any number of servers (default: the newest valid one in --logdir)")
    ("no_restore", po::bool_switch()->notifier([&co](bool no) { co.restore = !no; }),
     "do not resume from the checkpoints in --logdir (those this run would overwrite are moved into "
     "earlier-run-<time>/, never overwritten)");
}

// The library's checkpoint API names (and its cross-rank message) as these flags; longest first.
inline constexpr std::pair<const char*, const char*> kCheckpointFlagNames[] = {
    {"the same checkpoint directory, save interval, number kept, restart checkpoint and restore choice (Options::checkpoint)",
     "the same --logdir, --save_secs, --keep_checkpoints, --restart_from and --no_restore"},
    {"Options::checkpoint.restart_from", "--restart_from"},
    {"Options::checkpoint.save_secs", "--save_secs"},
    {"Options::checkpoint.restore", "--no_restore"},
    {"Options::checkpoint.keep", "--keep_checkpoints"},
    {"Options::checkpoint.dir", "--logdir"},
};

}  // namespace app_cli
