// defines: ctr_async::Config, parse_config, with_flag_names
// The command line of ctr_async, in mnist_async's style (flag names, one-line errors).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "asyncps/session.h"
#include "rank_flags.h"
#include "clicks.h"
#include "model.h"

namespace ctr_async {

struct Config {
  std::string model = "wide_deep";  // lr | wide_deep
  std::uint64_t rows = std::uint64_t{1} << 22;  // rows of each table (keys hashed into them)
  int dim = 16;
  int hidden = 64;
  std::string optimizer = "adagrad";  // the tables' rows: sgd | adagrad | ftrl
  int batch_size = 256;
  double learning_rate = 0.05;   // the dense arena (SGD)
  double embedding_lr = 0.05;    // the rows
  double initial_accumulator = 1e-4;  // adagrad: every row's accumulator to start with
  double ftrl_l1 = 0, ftrl_l2 = 0, ftrl_beta = 1;  // ftrl: TableSpec's ftrl_l1, ftrl_l2, ftrl_beta
  std::int64_t training_steps = 2000;
  std::int64_t test_examples = 20000;
  int log_every = 100;
  bool verbose = false;
  int eval_every = 0;            // the chief evaluates every N local steps (0: only at the end)
  bool separate_tables = false;  // the wide and deep tables' rows stored apart (not a row group)
  std::string prefetch = "auto";  // the next batch's rows read during a step: auto (where operations need the servers) | on | off
  bool allreduce = false;        // train data-parallel instead (allreduce.h)
  std::string dump_data;         // write the streams here and exit (dump.h)
  std::int64_t dump_examples = 262144;
  int dump_workers = 2;
  std::string logdir;            // checkpoints (the dense weights and the tables' rows) go here; empty: none
  std::string export_dir;        // server 0 writes the final checkpoint as .npy files here (needs logdir)
  // the flags every rank must be given alike, as text (app_cli::refuse_flags_differing_between_ranks)
  app_cli::FlagTexts shared_flags;
  ClickConfig data;              // --vocab, --zipf, --seed
  asyncps::Options library;      // --ps, --stall_timeout, --server_progress, --server_poll_us, checkpoints
  ModelShape shape() const;
  asyncps::ParamLayout layout() const;
};

// The library's API names in its messages (Options::num_servers, ...) as this program's flags.
std::string with_flag_names(std::string_view library_message);
// Parses and validates argv; nullopt after printing --help. Throws asyncps::ConfigError with one
// line naming the bad flag.
std::optional<Config> parse_config(int argc, char** argv, bool print_help);

}  // namespace ctr_async
