// defines: mnist_async::Config, parse_config, with_flag_names, flag_names
// The command line of mnist_async, named like the TF1 tutorial's flags. Defaults reproduce it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app_cli.h"
#include "rank_flags.h"
#include "asyncps/session.h"
#include "optimizer.h"

namespace mnist_async {

// The app's own flags, and in `library` every option of the library its flags set (bound to
// them: the defaults, ranges and choice names are the library's, asyncps/session.h and
// option_choices.h). --logdir also sets library.checkpoint.dir, --no_restore clears
// library.checkpoint.restore.
struct Config {
  int batch_size = 128;
  double learning_rate = 0.01;
  double learning_rate_decay = 0.99;
  double l2 = 0.0;  // the tutorial defines 0.0001 but never applies it
  std::int64_t training_steps = 1000;
  double moving_average_decay = 0.99;
  std::string moving_average_correction = "trend";  // trend (2 * EMA - EMA of the EMA: no lag) | none (TF1's)
  std::string logdir = "log_async";  // metrics.jsonl, and the checkpoints (library.checkpoint.dir)
  std::string data_dir = "data/mnist";
  std::int64_t seed = 1;   // signed, so that -1 is an error rather than 2^64 - 1
  std::string device = "cpu";
  std::string gpu_kernels = "fused";  // the GPU step's kernels: fused (the project's) | cudnn (cuDNN + cuBLAS)
  bool gpu_eager = false;             // the GPU step enqueued call by call rather than replayed as a CUDA graph
  std::string gpu_flag_given;         // "--gpu_kernels X" or "--gpu_eager" where either was given, for --device auto's check
  double save_summaries_secs = 60;
  int log_every = 10;
  std::int64_t train_limit = 0;  // use only the first N training examples (0 = all); signed like seed
  std::int64_t eval_every = 0;    // the chief snapshots the model every N global steps, evaluated after training
  double eval_target = 0.91;      // ... and reports when test accuracy first reached this
  OptimizerConfig optimizer;      // --optimizer sgd | momentum | adam | adagrad and its flags (kept on the worker)
  double straggler_ms = 0;        // experiments: the last worker sleeps this long every step
  bool halt_on_nonfinite = false;
  std::string export_dir;
  bool eval_only = false;
  std::string checkpoint;  // --eval_only: the index to evaluate (default: newest in --logdir)
  bool verbose = false;
  asyncps::Options library;  // --ps, --mode, --stall_timeout, ...: the library's table (app_cli::add_library_flags)
  // the flags every rank must be given alike, as text (app_cli::refuse_flags_differing_between_ranks)
  app_cli::FlagTexts shared_flags;
};

// The library names its own API in messages (Options::num_servers, ...): the same message in
// this program's flags (--ps, ...), for the lines a user of mnist_async reads.
std::string with_flag_names(std::string_view library_message);


// Parses and validates argv (the flags the library takes through asyncps::validate). Returns nullopt after printing --help (the caller exits 0).
// Throws asyncps::ConfigError with one line naming the bad flag.
std::optional<Config> parse_config(int argc, char** argv, bool print_help);

// Every flag's name (the fuzzer's dictionary: fuzz/fuzz_config.cpp).
std::vector<std::string> flag_names();

// Every rank's exit code after SIGTERM stopped the job (128 + 15, as a shell reports a TERM).
using app_cli::kTerminatedExit;

}  // namespace mnist_async
