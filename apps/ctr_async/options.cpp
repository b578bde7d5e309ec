// defines: parse_config, with_flag_names, Config::shape, Config::layout
#include "options.h"

#include <boost/program_options.hpp>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <sstream>
#include <utility>

#include "app_cli.h"
#include "library_flags.h"
#include "flag_effect.h"
#include "strict_command_line.h"
#include "writable_dir.h"
#include "asyncps/error.h"
#include "asyncps/option_choices.h"

namespace po = boost::program_options;

namespace ctr_async {

namespace {

using app_cli::refuse_placeholders;
using app_cli::require;
using app_cli::show;

void validate(const Config& c) {
  app_cli::refuse_timeline_over_logs(c.library.timeline, c.logdir, {});  // (its event files)
  constexpr double kFloatMax = std::numeric_limits<float>::max();
  require(c.model == "lr" || c.model == "wide_deep", "--model must be lr or wide_deep, got '" + c.model + "'");
  require(c.prefetch == "auto" || c.prefetch == "on" || c.prefetch == "off",
          "--prefetch must be auto, on or off, got '" + c.prefetch + "'");
  (void)asyncps::parse_choice<asyncps::RowOptimizer>(c.optimizer, "--optimizer");
  require(c.rows >= 1 && c.rows <= (std::uint64_t{1} << 36), "--rows must be in [1, 2^36], got " + std::to_string(c.rows));
  require(c.dim >= 1 && c.dim <= 1024, "--dim must be in [1, 1024], got " + std::to_string(c.dim));
  require(c.hidden >= 1 && c.hidden <= 4096, "--hidden must be in [1, 4096], got " + std::to_string(c.hidden));
  require(c.batch_size >= 1 && c.batch_size <= 65536, "--batch_size must be in [1, 65536], got " + std::to_string(c.batch_size));
  for (const auto& [name, v] : {std::pair{"--learning_rate", c.learning_rate}, std::pair{"--embedding_lr", c.embedding_lr}})
    require(std::isfinite(v) && v > 0 && v <= kFloatMax, std::string(name) + " must be a positive finite number, got " + show(v));
  require(std::isfinite(c.initial_accumulator) && c.initial_accumulator > 0 && c.initial_accumulator <= kFloatMax,
          "--initial_accumulator must be a positive finite number, got " + show(c.initial_accumulator));
  for (const auto& [name, v] : {std::pair{"--ftrl_l1", c.ftrl_l1}, std::pair{"--ftrl_l2", c.ftrl_l2}})
    require(std::isfinite(v) && v >= 0 && v <= kFloatMax, std::string(name) + " must be a finite number >= 0, got " + show(v));
  require(std::isfinite(c.ftrl_beta) && c.ftrl_beta > 0 && c.ftrl_beta <= kFloatMax,
          "--ftrl_beta must be a positive finite number, got " + show(c.ftrl_beta));
  require(c.training_steps >= 1 && c.training_steps <= (std::int64_t{1} << 50),
          "--training_steps must be in [1, 2^50], got " + std::to_string(c.training_steps));
  require(c.test_examples >= 1 && c.test_examples <= 100000000,
          "--test_examples must be in [1, 1e8], got " + std::to_string(c.test_examples));
  require(c.log_every >= 1, "--log_every must be positive, got " + std::to_string(c.log_every));
  require(c.eval_every >= 0, "--eval_every must be >= 0, got " + std::to_string(c.eval_every));
  require(c.eval_every <= c.training_steps,
          "--eval_every " + std::to_string(c.eval_every) + " has no effect: no rank takes more than --training_steps " +
              std::to_string(c.training_steps) + " steps");
  require(c.dump_examples >= 1 && c.dump_examples <= 100000000,
          "--dump_examples must be in [1, 1e8], got " + std::to_string(c.dump_examples));
  require(c.dump_workers >= 1 && c.dump_workers <= 1024, "--dump_workers must be in [1, 1024], got " + std::to_string(c.dump_workers));
  require(!(c.allreduce && !c.dump_data.empty()), "--allreduce and --dump_data do not go together");
  require(!(c.allreduce && !c.logdir.empty()), "--allreduce keeps no checkpoints: drop --logdir");
  require(!(c.allreduce && c.optimizer == "ftrl"), "--allreduce updates sgd or adagrad rows itself: --optimizer ftrl needs the servers (drop --allreduce)");
  require(!(!c.dump_data.empty() && !c.logdir.empty()), "--dump_data writes the streams and exits: drop --logdir");
  require(c.export_dir.empty() || !c.logdir.empty(), "--export_dir writes the final checkpoint: it needs --logdir");
  if (!c.logdir.empty()) refuse_placeholders(c.logdir, "--logdir");
  if (!c.export_dir.empty()) refuse_placeholders(c.export_dir, "--export_dir");
  if (!c.dump_data.empty()) refuse_placeholders(c.dump_data, "--dump_data");
  require(c.data.vocab >= 1 && c.data.vocab <= (std::uint64_t{1} << 32),
          "--vocab must be in [1, 2^32], got " + std::to_string(c.data.vocab));
  require(std::isfinite(c.data.zipf) && c.data.zipf > 1 && c.data.zipf <= 10, "--zipf must be in (1, 10], got " + show(c.data.zipf));
  asyncps::validate(c.library);  // what the library takes, checked once by the library
}

}  // namespace

ModelShape Config::shape() const {
  ModelShape s;
  s.deep = model == "wide_deep";
  s.fields = data.fields;
  s.dense = data.dense;
  s.dim = dim;
  s.hidden = hidden;
  return s;
}

asyncps::ParamLayout Config::layout() const {
  const auto opt = asyncps::parse_choice<asyncps::RowOptimizer>(optimizer, "--optimizer");
  asyncps::TableSpec wide{.rows = rows, .dim = 1, .optimizer = opt, .init_scale = 0.f, .seed = data.seed};
  asyncps::TableSpec deep{.rows = rows, .dim = dim, .optimizer = opt, .init_scale = 0.05f, .seed = data.seed,
                          .share_rows_with = separate_tables ? "" : "wide"};
  // (an optimizer refuses another's fields: they would do nothing)
  if (opt == asyncps::RowOptimizer::Adagrad) wide.initial_accumulator = deep.initial_accumulator = static_cast<float>(initial_accumulator);
  if (opt == asyncps::RowOptimizer::Ftrl)
    for (asyncps::TableSpec* s : {&wide, &deep}) {
      s->ftrl_l1 = static_cast<float>(ftrl_l1);
      s->ftrl_l2 = static_cast<float>(ftrl_l2);
      s->ftrl_beta = static_cast<float>(ftrl_beta);
    }
  return ctr_layout(shape(), wide, deep);
}

// The library's options this program offers as flags (app_cli::add_library_flags): all but the
// mode's (its workers run the async step of EmbeddingTable, and --allreduce the baseline).
const app_cli::Groups kLibraryGroups = {"job", "transport", "diagnostics", "checkpoint"};

std::string with_flag_names(std::string_view library_message) {
  static const auto names = app_cli::library_flag_names(kLibraryGroups);
  return app_cli::with_names(library_message, names);
}

namespace {

// An unsigned setting read as a signed number, so that a negative value is refused rather than
// wrapped (--seed -1 was the seed 2^64 - 1, --rows -1 was refused as 18446744073709551615).
po::typed_value<std::int64_t>* non_negative(std::uint64_t& field, const char* flag) {
  return po::value<std::int64_t>()
      ->default_value(static_cast<std::int64_t>(field))
      ->notifier([&field, flag](std::int64_t v) {
        if (v < 0) throw asyncps::ConfigError(std::string("--") + flag + " must be a non-negative integer, got " + std::to_string(v));
        field = static_cast<std::uint64_t>(v);
      });
}

}  // namespace

std::optional<Config> parse_config(int argc, char** argv, bool print_help) {
  Config c;
  asyncps::Options& lib = c.library;
  po::options_description general(
      "ctr_async: click-through-rate models (hashed logistic regression, wide & deep) on synthetic click logs,\n"
      "trained by async SGD on libasyncps with the embeddings in row-sparse tables on the servers.\n"
      "Run it as: mpirun -np 2 build/bin/ctr_async  (ranks [0, ps) serve, the rest are workers)\n\nOptions");
  general.add_options()
    ("help,h", "print this help and exit")
    ("model", app_cli::value_defaulted(&c.model), "lr (hashed logistic regression) | wide_deep")
    ("rows", non_negative(c.rows, "rows"), "rows of each embedding table (ids are hashed into them)")
    ("dim", app_cli::value_defaulted(&c.dim), "wide_deep: floats per embedding row")
    ("hidden", app_cli::value_defaulted(&c.hidden), "wide_deep: hidden units of the deep part")
    ("optimizer", app_cli::value_defaulted(&c.optimizer),
     "the rows' optimizer: sgd | adagrad (row-wise, one accumulator per row on the servers) | ftrl\n"
     "(FTRL-Proximal per coordinate; learning rate --embedding_lr, strengths --ftrl_l1, --ftrl_l2)")
    ("row_optimizer", po::value<std::string>(), "--optimizer by another name: the rows' optimizer (sgd | adagrad | ftrl)")
    ("batch_size", app_cli::value_defaulted(&c.batch_size), "examples per worker step")
    ("learning_rate", app_cli::value_defaulted(&c.learning_rate), "the dense weights' learning rate (SGD)")
    ("embedding_lr", app_cli::value_defaulted(&c.embedding_lr), "the embedding rows' learning rate")
    ("initial_accumulator", app_cli::value_defaulted(&c.initial_accumulator),
     "--optimizer adagrad: every row's accumulator to start with")
    ("ftrl_l1", app_cli::value_defaulted(&c.ftrl_l1), "--optimizer ftrl: L1 strength (> 0 makes weights exactly 0)")
    ("ftrl_l2", app_cli::value_defaulted(&c.ftrl_l2), "--optimizer ftrl: L2 strength")
    ("ftrl_beta", app_cli::value_defaulted(&c.ftrl_beta), "--optimizer ftrl: beta in (beta + sqrt(n)) / alpha")
    ("training_steps", app_cli::value_defaulted(&c.training_steps), "global steps to train")
    ("test_examples", app_cli::value_defaulted(&c.test_examples), "held-out examples the chief evaluates at the end (AUC n/a where they hold one class only)")
    ("vocab", non_negative(c.data.vocab, "vocab"), "ids per categorical field (26 fields, 13 dense features)")
    ("zipf", app_cli::value_defaulted(&c.data.zipf), "ids per field follow P(k) ~ (k + 1)^-zipf")
    ("seed", non_negative(c.data.seed, "seed"), "seed of the data, the planted model and the initial weights")
    ("log_every", app_cli::value_defaulted(&c.log_every), "the chief logs every N local steps")
    ("verbose,v", po::bool_switch(&c.verbose), "every worker logs, not only the chief")
    ("logdir", po::value(&c.logdir)->notifier([&lib](const std::string& d) { lib.checkpoint.dir = d; }),
     "servers checkpoint the dense weights and the tables' rows here, and a run resumes from the newest (default: none)")
    ("export_dir", po::value(&c.export_dir),
     "at the end server 0 writes the final checkpoint here as .npy: each dense tensor, each table (rows x dim) and its "
     "Adagrad accumulators (needs --logdir)")
    ("eval_every", app_cli::value_defaulted(&c.eval_every),
     "the chief also evaluates every N local steps (\"eval: ...\" lines, training time without the evaluations; 0: never)")
    ("separate_tables", po::bool_switch(&c.separate_tables),
     "store the wide and deep tables' rows apart, each moved by its own operations (by default a key's wide weight and "
     "deep embedding share a row group: one operation per run for both)")
    ("prefetch", app_cli::value_defaulted(&c.prefetch),
     "auto | on | off: read the next batch's rows during each step (EmbeddingTable::prefetch_rows: a worker's own "
     "updates are in them, the others' one step staler); auto: where the rows' operations need the servers (across "
     "hosts, or MPICH), not on one node where a pull is as fast and fresher")
    ("allreduce", po::bool_switch(&c.allreduce),
     "train data-parallel instead, the baseline: every rank a worker holding the whole model, the tables' gradient "
     "MPI_Allreduce-summed every step (no servers: --ps is not used)")
    ("dump_data", po::value(&c.dump_data), "write the training streams and the held-out one as .npy files here, and exit")
    ("dump_examples", app_cli::value_defaulted(&c.dump_examples), "--dump_data: examples per training stream")
    ("dump_workers", app_cli::value_defaulted(&c.dump_workers), "--dump_data: training streams (one per worker)");
  // the library's own options, from its table: --ps, --stall_timeout, --server_progress, ..., --save_secs
  app_cli::add_library_flags(general, lib, kLibraryGroups);
  po::variables_map vm;
  try {
    for (int i = 1; i < argc; ++i) refuse_placeholders(argv[i], "the command line");
    po::store(app_cli::parse_command_line_strictly(argc, argv, general), vm);
    if (vm.count("help")) {
      if (print_help) std::cout << general << std::endl;
      return std::nullopt;
    }
    po::notify(vm);
    if (vm.count("row_optimizer")) {
      if (!vm["optimizer"].defaulted())
        throw asyncps::ConfigError("--row_optimizer and --optimizer name the same setting: give one");
      c.optimizer = vm["row_optimizer"].as<std::string>();
    }
    if (c.allreduce)  // no Session: none of the library's options would do anything
      for (const asyncps::OptionInfo& o : asyncps::option_table()) {
        const std::string flag = app_cli::flag_of(o);
        if (app_cli::offered(o, kLibraryGroups) && vm.count(flag) && !vm[flag].defaulted())
          throw asyncps::ConfigError(flag == "ps" ? "--allreduce has no servers: every rank is a worker (drop --ps)"
                                                  : "--allreduce has no servers: --" + flag + " has no effect there");
      }
  } catch (const po::error& e) {
    throw asyncps::ConfigError(std::string("bad command line: ") + e.what() + " (see --help)");
  }
  // flags given that this run would not use
  app_cli::refuse_empty_values(vm);
  if (!c.dump_data.empty())  // it writes the streams and exits: what trains, serves or evaluates does nothing
    app_cli::refuse_unused(vm, {"dump_data", "dump_examples", "dump_workers", "rows", "test_examples", "vocab", "zipf", "seed"},
                           "--dump_data (it writes the click streams and exits: it trains nothing)");
  using app_cli::refuse_without;
  for (const char* f : {"separate_tables", "prefetch"})  // (the tables' rows are the ranks' own there)
    refuse_without(vm, f, !c.allreduce, "the servers' tables (--allreduce all-reduces the whole tables instead)");
  refuse_without(vm, "verbose", !c.allreduce, "the servers (--allreduce logs from rank 0 only)");
  refuse_without(vm, "dim", c.model == "wide_deep", "--model wide_deep (lr has no embeddings)");
  refuse_without(vm, "hidden", c.model == "wide_deep", "--model wide_deep (lr has no hidden layer)");
  refuse_without(vm, "separate_tables", c.model == "wide_deep", "--model wide_deep (lr has one table)");
  refuse_without(vm, "dump_examples", !c.dump_data.empty(), "--dump_data");
  refuse_without(vm, "dump_workers", !c.dump_data.empty(), "--dump_data");
  refuse_without(vm, "initial_accumulator", c.optimizer == "adagrad", "--optimizer adagrad");
  for (const char* f : {"ftrl_l1", "ftrl_l2", "ftrl_beta"}) refuse_without(vm, f, c.optimizer == "ftrl", "--optimizer ftrl");
  app_cli::refuse_library_flags_without_effect(vm, c.library, kLibraryGroups);
  validate(c);
  // each rank's own: the help, how much it logs, paths on its host (--optimizer: as resolved, either name)
  c.shared_flags = app_cli::flag_texts(general, vm, {"help", "verbose", "logdir", "export_dir", "row_optimizer"},
                                       kLibraryGroups);
  for (auto& [flag, text] : c.shared_flags)
    if (flag == "optimizer") text = c.optimizer;
  return c;
}

}  // namespace ctr_async
