// ctr_async: click-through-rate models on libasyncps's embedding tables.
//   mpirun -np 3 build/bin/ctr_async [--model lr|wide_deep] [--ps 1] [--help]
// Every rank but the servers trains on its own stream of synthetic clicks; the chief (the first
// worker) evaluates the final model on a held-out stream and prints "AUC 0.xxxx" beside the
// planted model's (and with --eval_every, along the way). --allreduce trains the same model the
// data-parallel way instead (allreduce.h), --dump_data writes the streams for other programs
// (dump.h). With --logdir the servers checkpoint the dense weights and the tables' rows, and a
// run resumes from them (on any number of servers); --export_dir writes the final one as .npy.
// Every fatal error prints one line and aborts every rank.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "allreduce.h"
#include "app_cli.h"
#include "asyncps/asyncps.h"
#include "batches.h"
#include "clicks.h"
#include "dump.h"
#include "metrics.h"
#include "model.h"
#include "net_counters.h"
#include "options.h"
#include "writable_dir.h"

namespace ctr_async {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int run_server(const Config& c, asyncps::Session& session) {
  std::vector<float> initial(session.layout().size());
  init_dense(session.layout(), c.data.seed, initial);
  // (it fills the tables' rows from their seed, or from the checkpoint it restores)
  asyncps::ParameterServer server(session, initial);
  server.serve();
  if (server.terminated()) {  // one line for the job (server 0's), then every rank exits 143, as mnist_async
    app_cli::print_terminated(session.roles().rank, static_cast<long long>(server.final_step()),
                              server.saved_checkpoint());
    std::fflush(nullptr);
    return app_cli::kTerminatedExit;
  }
  if (!c.export_dir.empty() && !server.saved_checkpoint().empty()) {  // server 0 wrote the final index
    const auto ckpt = asyncps::read_checkpoint(server.saved_checkpoint(), session.layout());
    asyncps::export_checkpoint_npy(c.export_dir, session.layout(), ckpt);
    std::printf("exported %s to %s\n", server.saved_checkpoint().c_str(), c.export_dir.c_str());
    std::fflush(stdout);
  }
  return server.halted() ? app_cli::kHaltedExit : 0;
}

int run_worker(const Config& c, asyncps::Session& session) {
  const asyncps::Roles& roles = session.roles();
  const bool chief = roles.is_chief(), talk = chief || c.verbose;
  const ModelShape shape = c.shape();
  const asyncps::ParamLayout& layout = session.layout();
  const ClickLog log(c.data);
  asyncps::WorkerClient client(session);
  // the chief's curves for TensorBoard, in --logdir (a new event file per run), opened only once
  // the job has the directory (the WorkerClient met the servers, server 0 holding its lock and
  // having restored from it): a job refused at the start leaves nothing in another job's logdir
  std::optional<asyncps::SummaryWriter> summaries;
  if (chief && !c.logdir.empty()) summaries.emplace(c.logdir);
  asyncps::StepLoop steps(client);
  asyncps::EmbeddingTable wide(client, "wide");
  std::optional<asyncps::EmbeddingTable> deep;
  if (shape.deep) deep.emplace(client, "deep");
  std::optional<asyncps::EmbeddingGroup> both;  // the two tables' rows side by side: one operation per run
  if (shape.deep && !c.separate_tables) both.emplace(client, std::vector<std::string>{"wide", "deep"});
  const int D = shape.dim;
  if (talk)
    std::printf("worker %d of %d: %s, tables of %llu rows (%s rows), batch %d, %d server(s)\n", roles.worker_index(),
                roles.num_workers(), shape.deep ? "wide & deep" : "hashed logistic regression",
                static_cast<unsigned long long>(c.rows), c.optimizer.c_str(), c.batch_size, roles.num_servers);
  std::vector<float> params(layout.size()), wide_rows, deep_rows, logits;
  const RowSource rows = [&](std::span<const std::uint64_t> keys, std::vector<float>& w, std::vector<float>& d) {
    w.resize(keys.size());
    if (deep) d.resize(keys.size() * static_cast<std::size_t>(D));
    if (both) {
      const std::span<float> out[] = {w, d};
      both->pull_rows(keys, out);
      return;
    }
    wide.pull_rows(keys, w);
    if (deep) deep->pull_rows(keys, d);
  };
  Batch batch;
  Grads grads;
  Example ex;
  const std::uint64_t stream = 1 + static_cast<std::uint64_t>(roles.worker_index());
  std::uint64_t next_example = 0;
  std::int64_t local = 0;
  double loss = 0;
  const std::int64_t first_global = client.restored_step();  // a restored run's starting step (else 0)
  const auto start = Clock::now();
  const net_counters::NetBytes wire0 = net_counters::read();
  EvalClock clock;
  std::vector<float> eval_params(c.eval_every > 0 && chief ? params.size() : 0);
  auto last_log = start;
  // the next batch's rows are read during this step (--prefetch)
  const bool prefetching = c.prefetch == "on" || (c.prefetch == "auto" && session.rma_needs_target());
  Batch next;
  bool have_next = false;
  const auto prefetch = [&](std::span<const std::uint64_t> keys) {
    if (both) return both->prefetch_rows(keys);
    wide.prefetch_rows(keys);
    if (deep) deep->prefetch_rows(keys);
  };
  while (auto s = steps.begin_step(params, c.training_steps)) {
    if (have_next) {
      std::swap(batch, next);
    } else {
      fill(log, stream, next_example, c.batch_size, batch, ex);
      next_example += static_cast<std::uint64_t>(c.batch_size);
    }
    rows(batch.keys, wide_rows, deep_rows);  // (takes the prefetch of these keys)
    have_next = prefetching;
    if (have_next) {
      fill(log, stream, next_example, c.batch_size, next, ex);
      next_example += static_cast<std::uint64_t>(c.batch_size);
      prefetch(next.keys);
    }
    loss = forward_backward(shape, layout, params, batch, wide_rows, deep_rows, logits, &grads);
    const asyncps::StepEnd landed = steps.end_step(grads.dense, static_cast<float>(-c.learning_rate));
    if (landed.applied) {  // the rows follow the dense step (a non-finite gradient sends neither)
      const auto lr = static_cast<float>(-c.embedding_lr);
      if (both) {
        const std::span<const float> g[] = {grads.wide, grads.deep};
        both->push_rows(batch.keys, g, lr);
      } else {
        wide.push_rows(batch.keys, grads.wide, lr);
        if (deep) deep->push_rows(batch.keys, grads.deep, lr);
      }
    }
    ++local;
    if (talk && local % c.log_every == 0) {
      // the job's global steps once this step is taken (where its push landed), as mnist_async
      // counts them: s->global_step is the claimed step's index, one less
      const std::int64_t taken = landed.applied ? landed.global_step : s->global_step + 1;
      std::printf("After %lld training steps (%lld global steps), log-loss on training batch is %.4f. (%.3f sec/batch)\n",
                  static_cast<long long>(local), static_cast<long long>(taken), loss, since(last_log) / c.log_every);
      if (summaries) summaries->add_scalars({{"loss", loss}}, taken);
      last_log = Clock::now();
      std::fflush(stdout);
    }
    if (chief && c.eval_every > 0 && local % c.eval_every == 0) {  // (the other workers go on meanwhile)
      clock.pause();
      // the model at the step just landed: this push complete, the dense weights pulled after it
      // (params were pulled before it), as the rows are
      client.wait_all();
      client.pull(eval_params);
      const Evaluation e = evaluate(log, shape, layout, eval_params, c.test_examples, rows);
      print_eval(landed.global_step, c.batch_size, clock.training_seconds(), e);
      if (summaries) summaries->add_scalars({{"auc", e.auc}, {"log_loss", e.log_loss}}, landed.global_step);
      clock.resume();
    }
  }
  const double seconds = clock.training_seconds();  // (without the chief's evaluations: --eval_every)
  const net_counters::NetBytes wire1 = net_counters::read();
  client.drain();  // every worker is done: the tables and the arena are final
  // what moved: rows per table; operations, bytes and time per call (the group's, or each table's)
  asyncps::TableStats ops = wide.stats();
  std::uint64_t rows_pulled = ops.rows_pulled, rows_pushed = ops.rows_pushed;
  if (deep) {
    rows_pulled += deep->stats().rows_pulled;
    rows_pushed += deep->stats().rows_pushed;
  }
  for (const asyncps::TableStats* s : {both ? &both->stats() : nullptr, deep ? &deep->stats() : nullptr}) {
    if (!s) continue;
    ops.runs += s->runs;
    ops.bytes_pulled += s->bytes_pulled;
    ops.bytes_pushed += s->bytes_pushed;
    ops.pull_seconds += s->pull_seconds;
    ops.push_seconds += s->push_seconds;
  }
  const std::uint64_t moved = ops.bytes_pulled + ops.bytes_pushed;
  if (talk) {
    std::printf("worker %d: %lld local steps in %.3f s; rows: %llu pulled, %llu pushed, %.1f MB moved, %.3f s pulling, "
                "%.3f s pushing, %llu operations\n",
                roles.worker_index(), static_cast<long long>(local), seconds, static_cast<unsigned long long>(rows_pulled),
                static_cast<unsigned long long>(rows_pushed), 1e-6 * static_cast<double>(moved), ops.pull_seconds,
                ops.push_seconds, static_cast<unsigned long long>(ops.runs));
    std::uint64_t refused = wide.stats().nonfinite + (deep ? deep->stats().nonfinite : 0) + (both ? both->stats().nonfinite : 0);
    if (refused)
      std::printf("worker %d: %llu row push(es) held NaN or Inf and were not sent\n", roles.worker_index(),
                  static_cast<unsigned long long>(refused));
    print_bytes_per_step(static_cast<double>(moved) / static_cast<double>(std::max<std::int64_t>(local, 1)),
                         (wire1.rx + wire1.tx - wire0.rx - wire0.tx) / static_cast<double>(std::max<std::int64_t>(local, 1)));
  }
  std::optional<Evaluation> e;
  if (chief && !steps.terminated()) {
    client.pull(params);
    e = evaluate(log, shape, layout, params, c.test_examples, rows);
  }
  std::fflush(stdout);
  client.finish();  // from here final_step() is the job's last global step
  if (steps.terminated()) return app_cli::kTerminatedExit;  // (server 0 says so, for the job)
  if (e) {
    const std::int64_t global = steps.final_step();
    print_result(global, global - first_global, c.batch_size, roles.num_workers(), seconds, c.test_examples, *e);
    if (const std::uint64_t skipped = steps.job_nonfinite())  // every worker's
      std::printf("%llu non-finite gradient(s) were not pushed (by all %d worker(s))\n",
                  static_cast<unsigned long long>(skipped), roles.num_workers());
    if (summaries) {
      summaries->add_scalars({{"auc", e->auc}, {"log_loss", e->log_loss}}, global);
      if (global > first_global)  // (a run that took no step has no rate to plot)
        summaries->add_scalars(
            {{"samples_per_sec", static_cast<double>(global - first_global) * c.batch_size / seconds},
             {"operations_per_step", static_cast<double>(ops.runs) / static_cast<double>(std::max<std::int64_t>(local, 1))}},
            global);
    }
  }
  return steps.halted() ? app_cli::kHaltedExit : 0;
}

}  // namespace

}  // namespace ctr_async

int main(int argc, char** argv) {
  asyncps::MpiEnvironment mpi(&argc, &argv);
  app_cli::install_log_sink(ctr_async::with_flag_names);
  try {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const auto config = ctr_async::parse_config(argc, argv, /*print_help=*/rank == 0);
    if (!config) return 0;  // --help
    app_cli::refuse_flags_differing_between_ranks(MPI_COMM_WORLD, config->shared_flags);  // (an MPMD launch)
    if (!config->dump_data.empty() || config->allreduce) {  // (no Session: the library's environment checked here)
      asyncps::check_log_level_environment();
      (void)asyncps::cpu_kernel_level();
    }
    if (!config->dump_data.empty()) return rank == 0 ? ctr_async::dump_data(*config) : 0;
    if (config->allreduce) return ctr_async::run_allreduce(*config);
    if (!config->logdir.empty()) app_cli::check_writable_dir(config->logdir, "--logdir");  // every rank: its host's
    if (!config->export_dir.empty() && rank == 0) app_cli::check_writable_dir(config->export_dir, "--export_dir");
    asyncps::Session session(MPI_COMM_WORLD, config->layout(), config->library);
    return session.roles().is_server() ? ctr_async::run_server(*config, session) : ctr_async::run_worker(*config, session);
  } catch (const std::exception& e) {
    asyncps::abort_job(ctr_async::with_flag_names(e.what()).c_str());
  }
  return 0;
}
