// defines: parse_config
#include "options.h"

#include <boost/program_options.hpp>
#include <algorithm>
#include <string_view>
#include <cmath>
#include <initializer_list>
#include <cstring>
#include <utility>
#include <limits>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <iostream>
#include <sstream>
#include <vector>

#include "app_cli.h"
#include "library_flags.h"
#include "flag_effect.h"
#include "strict_command_line.h"
#include "writable_dir.h"
#include "asyncps/error.h"
#include "asyncps/session.h"
#include "nn/gpu/gpu_backend.h"  // parse_gpu_kernels, gpu_kernels_choices (CUDA-free)

namespace po = boost::program_options;

namespace mnist_async {

namespace {

using app_cli::refuse_placeholders;
using app_cli::require;
using app_cli::show;

// The trace replaces its file at the end: never the chief's metrics or event file in --logdir.
void validate(const Config& c) {
  app_cli::refuse_timeline_over_logs(c.library.timeline, c.logdir, {"metrics.jsonl"});
  require(c.batch_size > 0, "--batch_size must be positive, got " + std::to_string(c.batch_size));
  require(c.batch_size <= 65536, "--batch_size must be at most 65536, got " + std::to_string(c.batch_size));
  // every float the workers compute with must be a finite float, not only a finite double
  constexpr double kFloatMax = std::numeric_limits<float>::max();
  const std::string float_max = "3.40282e+38";  // (as people write it: show() would give all 17 digits)
  require(std::isfinite(c.learning_rate) && c.learning_rate > 0 && c.learning_rate <= kFloatMax,
          "--learning_rate must be a positive finite number (at most " + float_max + ", a float), got " +
              show(c.learning_rate));
  require(std::isfinite(c.learning_rate_decay) && c.learning_rate_decay > 0 && c.learning_rate_decay <= 1,
          "--learning_rate_decay must be in (0, 1], got " + show(c.learning_rate_decay));
  require(std::isfinite(c.l2) && c.l2 >= 0 && c.l2 <= kFloatMax,
          "--l2 must be a finite number in [0, " + float_max + "] (a float), got " + show(c.l2));
  require(c.training_steps > 0 && c.training_steps <= (std::int64_t{1} << 50),
          "--training_steps must be in [1, 2^50], got " + std::to_string(c.training_steps));
  require(c.seed >= 0, "--seed must be >= 0, got " + std::to_string(c.seed));
  require(c.train_limit >= 0, "--train_limit must be >= 0 (0: all), got " + std::to_string(c.train_limit));
  require(std::isfinite(c.moving_average_decay) && c.moving_average_decay >= 0 && c.moving_average_decay < 1,
          "--moving_average_decay must be in [0, 1), got " + show(c.moving_average_decay));
  require(c.moving_average_correction == "trend" || c.moving_average_correction == "none",
          "--moving_average_correction must be trend or none, got '" + c.moving_average_correction + "'");
  require(c.device == "cpu" || c.device == "gpu" || c.device == "auto",
          "--device must be cpu, gpu or auto, got '" + c.device + "'");
  try {  // (the CNN library's one list of the names; CUDA-free)
    asyncps::nn::parse_gpu_kernels(c.gpu_kernels);
  } catch (const asyncps::nn::Error&) {
    require(false, "--gpu_kernels must be " + std::string(asyncps::nn::gpu_kernels_choices()) + ", got '" + c.gpu_kernels + "'");
  }
  require(std::isfinite(c.save_summaries_secs) && c.save_summaries_secs >= 0 && c.save_summaries_secs <= 1e9,
          "--save_summaries_secs must be in [0, 1e9], got " + show(c.save_summaries_secs));
  require(c.log_every > 0, "--log_every must be positive, got " + std::to_string(c.log_every));
  require(std::isfinite(c.straggler_ms) && c.straggler_ms >= 0 && c.straggler_ms <= 3.6e6,
          "--straggler_ms must be in [0, 3600000], got " + show(c.straggler_ms));
  require(!c.logdir.empty(), "--logdir must not be empty");
  require(c.eval_every >= 0, "--eval_every must be >= 0, got " + std::to_string(c.eval_every));
  require(c.eval_every <= c.training_steps,
          "--eval_every " + std::to_string(c.eval_every) + " has no effect: the job takes --training_steps " +
              std::to_string(c.training_steps) + " global steps");
  require(std::isfinite(c.eval_target) && c.eval_target > 0 && c.eval_target <= 1,
          "--eval_target must be in (0, 1], got " + show(c.eval_target));
  const OptimizerConfig& o = c.optimizer;
  require(o.name == "sgd" || o.name == "momentum" || o.name == "adam" || o.name == "adagrad",
          "--optimizer must be sgd, momentum, adam or adagrad, got '" + o.name + "'");
  require(std::isfinite(o.momentum) && o.momentum >= 0 && o.momentum < 1,
          "--momentum must be in [0, 1), got " + show(o.momentum));
  require(o.momentum_correction == "predict" || o.momentum_correction == "staleness" || o.momentum_correction == "none",
          "--momentum_correction must be predict, staleness or none, got '" + o.momentum_correction + "'");
  for (const auto& [name, v] : {std::pair{"--beta1", o.beta1}, std::pair{"--beta2", o.beta2}})
    require(std::isfinite(v) && v >= 0 && v < 1, std::string(name) + " must be in [0, 1), got " + show(v));
  require(std::isfinite(o.epsilon) && o.epsilon > 0 && o.epsilon <= 1, "--epsilon must be in (0, 1], got " + show(o.epsilon));
  require(std::isfinite(o.initial_accumulator) && o.initial_accumulator >= 0 && o.initial_accumulator <= 1e6,
          "--initial_accumulator must be in [0, 1e6], got " + show(o.initial_accumulator));
  require(!(o.weight_prediction && c.library.mode == asyncps::Mode::Sync),
          "--weight_prediction is for async and ssp: a sync round's parameters do not move while it computes");
  // what the library takes is checked by the library, once (with_flag_names names the flags)
  asyncps::validate(c.library);
}

// The --config file, whole: only a regular file (a FIFO would block the read), at most 1 MiB.
std::string read_config_file(const std::string& path) {
  if (path.empty()) throw asyncps::ConfigError("--config must not be empty (leave the flag out for none)");
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) throw asyncps::ConfigError("--config: cannot read " + path + ": no such file");
  if (!std::filesystem::is_regular_file(st)) throw asyncps::ConfigError("--config: " + path + " is not a regular file");
  constexpr std::uintmax_t kMaxBytes = 1 << 20;
  if (std::filesystem::file_size(path, ec) > kMaxBytes || ec)
    throw asyncps::ConfigError("--config: " + path + " is larger than 1 MiB (or unreadable)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw asyncps::ConfigError("--config: cannot read " + path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  refuse_placeholders(text, ("--config " + path).c_str());
  return text;
}

}  // namespace

namespace {

// Flags given that this run would not use (what the library's own options need is the library's
// check, in validate()).
void refuse_without_effect(const po::variables_map& vm, const Config& c) {
  using app_cli::refuse_without;
  const std::string& opt = c.optimizer.name;
  // first: a training flag with --eval_only is refused as such, not for what else it would need
  if (c.eval_only) {  // it reads a checkpoint and the data, evaluates and exports: the rest is training's
    static constexpr std::string_view kUsed[] = {"config",   "eval_only", "checkpoint",  "logdir",       "data_dir",
                                                 "device",   "gpu_kernels", "export_dir", "stall_timeout"};
    for (const auto& [flag, value] : vm)
      if (!value.defaulted() && std::find(std::begin(kUsed), std::end(kUsed), flag) == std::end(kUsed))
        throw asyncps::ConfigError("--" + flag +
                                   " has no effect with --eval_only (it evaluates one checkpoint and trains nothing" +
                                   (flag == "restart_from" ? "; --checkpoint names the checkpoint to evaluate)" : ")"));
  }
  if (c.eval_only && app_cli::given(vm, "checkpoint") && app_cli::given(vm, "logdir"))
    throw asyncps::ConfigError("--logdir has no effect with --eval_only --checkpoint (the checkpoint is named; "
                               "--logdir would only say where to look for the newest)");
  refuse_without(vm, "checkpoint", c.eval_only,
                 "--eval_only (it names the checkpoint to evaluate; training resumes from one with --restart_from)");
  refuse_without(vm, "gpu_kernels", c.device != "cpu", "--device gpu or auto");
  refuse_without(vm, "gpu_eager", c.device != "cpu", "--device gpu or auto");
  refuse_without(vm, "eval_target", c.eval_every > 0, "--eval_every (the snapshots it is measured on)");
  refuse_without(vm, "momentum", opt == "momentum", "--optimizer momentum");
  refuse_without(vm, "momentum_correction", opt == "momentum", "--optimizer momentum");
  refuse_without(vm, "momentum_correction", c.library.mode != asyncps::Mode::Sync,
                 "--mode async or ssp (a sync round's updates have no staleness to correct)");
  refuse_without(vm, "beta1", opt == "adam", "--optimizer adam");
  refuse_without(vm, "beta2", opt == "adam", "--optimizer adam");
  refuse_without(vm, "epsilon", opt == "adam" || opt == "adagrad", "--optimizer adam or adagrad");
  refuse_without(vm, "initial_accumulator", opt == "adagrad", "--optimizer adagrad");
  if (app_cli::given(vm, "weight_prediction") && opt == "momentum" && c.optimizer.momentum_correction == "predict")
    throw asyncps::ConfigError("--weight_prediction has no effect with --optimizer momentum and its default "
                               "--momentum_correction predict, which predicts the weights already");
}

}  // namespace

// The library's options this program offers as flags (app_cli::add_library_flags): all of them.
const app_cli::Groups kLibraryGroups = {"job", "mode", "transport", "diagnostics", "checkpoint"};

std::string with_flag_names(std::string_view library_message) {
  static const auto names = app_cli::library_flag_names(kLibraryGroups);
  return app_cli::with_names(library_message, names);
}

namespace {

// Every flag, bound to `c` (and --config to `config_file`).
po::options_description describe(Config& c, std::string& config_file) {
  asyncps::Options& lib = c.library;
  po::options_description general("mnist_async: the TF1 tutorial's MNIST CNN, trained by async SGD on libasyncps.\n"
                                  "Run it as: mpirun -np 2 --hostfile hostfiles/localhost build/bin/mnist_async\n"
                                  "(ranks [0, ps) serve the parameters, the rest are workers)\n\nOptions");
  general.add_options()
    ("help,h", "print this help and exit")
    ("config", po::value(&config_file), "read options from this file too (name = value lines; the command line wins)")
    ("batch_size", app_cli::value_defaulted(&c.batch_size), "examples per worker step")
    ("learning_rate", app_cli::value_defaulted(&c.learning_rate), "base learning rate")
    ("learning_rate_decay", app_cli::value_defaulted(&c.learning_rate_decay),
     "lr = learning_rate * decay^(global_step / (60000 / batch_size))")
    ("l2", app_cli::value_defaulted(&c.l2), "L2 regularisation rate on the weights (tutorial: 0.0001 defined, not applied)")
    ("training_steps", app_cli::value_defaulted(&c.training_steps), "global steps to train")
    ("moving_average_decay", app_cli::value_defaulted(&c.moving_average_decay),
     "EMA decay kept by the chief (warm-up min(decay, (1+n)/(10+n)))")
    ("moving_average_correction",
     app_cli::value_defaulted(&c.moving_average_correction),
     "trend (the chief's average is 2*EMA - EMA(EMA): the EMA without its lag of about decay/(1-decay) "
     "global steps, Brown's double smoothing) | none (TF1's EMA itself)")
    ("logdir",
     app_cli::value_defaulted(&c.logdir)->notifier([&lib](const std::string& d) { lib.checkpoint.dir = d; }),
     "where metrics.jsonl (and checkpoints) go")
    ("data_dir", app_cli::value_defaulted(&c.data_dir), "directory with the four MNIST IDX files (make data)")
    ("seed", app_cli::value_defaulted(&c.seed), "seed of the initial parameters and of the data order")
    ("device", app_cli::value_defaulted(&c.device), "cpu | gpu | auto: where workers compute gradients")
    ("gpu_kernels", app_cli::value_defaulted(&c.gpu_kernels),
     "--device gpu|auto: fused (the project's own kernels) | cudnn (cuDNN convolutions and pooling, cuBLAS for "
     "the fc layer: to compare against)")
    ("gpu_eager", po::bool_switch(&c.gpu_eager),
     "--device gpu|auto: enqueue each step's calls one by one instead of replaying the step's CUDA graph (to "
     "compare against)")
    ("save_summaries_secs", app_cli::value_defaulted(&c.save_summaries_secs),
     "the chief appends a metrics line to logdir/metrics.jsonl this often (0: after every step)")
    ("log_every", app_cli::value_defaulted(&c.log_every), "the chief logs every N local steps")
    ("train_limit", app_cli::value_defaulted(&c.train_limit), "use only the first N training examples (0: all)")
    ("optimizer", app_cli::value_defaulted(&c.optimizer.name),
     "sgd (the tutorial's) | momentum (heavy ball) | adam | adagrad: the state kept on the worker, which pushes "
     "the direction (the arena moves by -learning_rate times it)")
    ("momentum", app_cli::value_defaulted(&c.optimizer.momentum), "--optimizer momentum: mu in [0, 1)")
    ("momentum_correction", app_cli::value_defaulted(&c.optimizer.momentum_correction),
     "--optimizer momentum under asynchrony (tau: the worker's mean staleness): predict (compute the gradient at the "
     "parameters predicted for when the update lands, params - learning_rate * tau * velocity; mu as given) | "
     "staleness (apply mu^(1+tau), mu per global step, and push sqrt((1-mu')/(1-mu)) times the velocity) | "
     "none (mu as given, the gradient at the parameters pulled)")
    ("beta1", app_cli::value_defaulted(&c.optimizer.beta1), "--optimizer adam: the first moment's decay")
    ("beta2", app_cli::value_defaulted(&c.optimizer.beta2), "--optimizer adam: the second moment's decay")
    ("epsilon", app_cli::value_defaulted(&c.optimizer.epsilon), "--optimizer adam|adagrad: added to the root")
    ("initial_accumulator", app_cli::value_defaulted(&c.optimizer.initial_accumulator),
     "--optimizer adagrad: every accumulator to start with")
    ("weight_prediction", po::bool_switch(&c.optimizer.weight_prediction),
     "async/ssp: compute each gradient at the parameters predicted for when the update lands, "
     "params - learning_rate * staleness * (the direction this worker last pushed)")
    ("eval_every", app_cli::value_defaulted(&c.eval_every),
     "the chief snapshots the model every N global steps (a copy, off the critical path) and evaluates the "
     "snapshots on the test set after training: accuracy vs steps and wall time (0: off)")
    ("eval_target", app_cli::value_defaulted(&c.eval_target),
     "with --eval_every: report the wall time at which test accuracy first reached this")
    ("straggler_ms", app_cli::value_defaulted(&c.straggler_ms),
     "experiments: the last worker sleeps this many ms every step")
    ("halt_on_nonfinite", po::bool_switch(&c.halt_on_nonfinite),
     "stop the job (after saving) when a worker computes a NaN/Inf gradient; by default it is skipped and counted")
    ("export_dir", po::value(&c.export_dir), "at the end the chief writes the parameters as <name>.npy here (EMA in ema/)")
    ("eval_only", po::bool_switch(&c.eval_only), "evaluate a checkpoint and exit (no training; one rank is enough)")
    ("checkpoint", po::value(&c.checkpoint), "--eval_only: the checkpoint index (default: the newest in --logdir)")
    ("verbose,v", po::bool_switch(&c.verbose), "every worker logs, not only the chief");

  // the library's own options, from its table: --ps, --mode, --staleness, ..., --save_secs, --no_restore
  app_cli::add_library_flags(general, lib, kLibraryGroups);
  return general;
}

}  // namespace

std::vector<std::string> flag_names() {
  Config c;
  std::string config_file;
  std::vector<std::string> names;
  const po::options_description flags = describe(c, config_file);
  for (const auto& option : flags.options()) names.push_back(option->long_name());
  return names;
}

std::optional<Config> parse_config(int argc, char** argv, bool print_help) {
  Config c;
  std::string config_file;
  const po::options_description general = describe(c, config_file);
  po::variables_map vm;
  try {
    for (int i = 1; i < argc; ++i) refuse_placeholders(argv[i], "the command line");
    po::store(app_cli::parse_command_line_strictly(argc, argv, general), vm);
    if (vm.count("help")) {
      if (print_help) std::cout << general << std::endl;
      return std::nullopt;
    }
    if (vm.count("config")) {
      const std::string path = vm["config"].as<std::string>();
      std::istringstream in(read_config_file(path));
      const po::parsed_options from_file = [&] {
        try {
          return po::parse_config_file(in, general);
        } catch (const po::error& e) {  // (named by the file, not "bad command line")
          throw asyncps::ConfigError("--config " + path + ": " + e.what());
        }
      }();
      for (const auto& o : from_file.options)
        if (o.string_key == "config" || o.string_key == "help")
          throw asyncps::ConfigError("--config: " + path + " sets '" + o.string_key +
                                     "', which only the command line takes (a config file cannot include another "
                                     "or ask for the help)");
      po::store(from_file, vm);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw asyncps::ConfigError(std::string("bad command line: ") + e.what() + " (see --help)");
  }
  app_cli::refuse_empty_values(vm);
  refuse_without_effect(vm, c);
  app_cli::refuse_library_flags_without_effect(vm, c.library, kLibraryGroups);
  if (app_cli::given(vm, "gpu_eager")) c.gpu_flag_given = "--gpu_eager";
  else if (app_cli::given(vm, "gpu_kernels")) c.gpu_flag_given = "--gpu_kernels " + c.gpu_kernels;
  validate(c);
  // each rank's own: paths on its host, the help, how much it logs, the device it computes on
  c.shared_flags = app_cli::flag_texts(general, vm,
                                       {"help", "config", "logdir", "data_dir", "export_dir", "checkpoint", "verbose",
                                        "device", "gpu_kernels", "gpu_eager"},
                                       kLibraryGroups);
  return c;
}

}  // namespace mnist_async
