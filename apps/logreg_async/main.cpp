// logreg_async: multinomial logistic regression on synthetic Gaussian blobs (10 classes,
// 20 features by default), trained by asynchronous SGD with libasyncps. The second model of
// the project, and unlike mnist_async it uses nothing but the library's public API.
//
//   mpirun -np 3 logreg_async [--ps 1] [--steps 2000] [--batch_size 32] [--learning_rate 0.2]
//                             [--min_accuracy 0.85] [--log_every 200] [--seed 2024]
//                             [--noise 1.5] [--classes 10] [--features 20]
//
// Ranks [0, ps) serve the parameters, the rest are workers; every rank generates the same data
// from the seed. Each worker draws its own batches (seeded by its index), pulls the arena,
// computes the gradient and pushes it, until `steps` updates have been applied in all. The
// chief (first worker) logs its batch loss, and at the end evaluates the final arena:
//   Done: 2000 global steps by 2 worker(s) in 0.41 s; train loss 0.31 accuracy 0.905; test loss 0.33 accuracy 0.899
// and the job exits 1 when the test accuracy is below --min_accuracy (it did not converge).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "asyncps/asyncps.h"
#include "blobs.h"
#include "softmax_regression.h"

namespace {

struct Config {
  asyncps::Options ps;
  std::int64_t steps = 2000;
  int batch_size = 32;
  double learning_rate = 0.2;  // > 0
  double min_accuracy = 0.85;  // in [0, 1]
  std::int64_t log_every = 200;  // (up to 1e15: never narrowed to an int)
  logreg::BlobSpec blobs;
};

// Every flag once, with its type and range: parsed strictly (an integer flag takes an integer,
// "1.5" and "1e12" are refused, not cast), and the --help text made from the same rows.
struct Flag {
  const char* name;
  const char* help;
  std::int64_t* integer = nullptr;  // exactly one of the two
  double* real = nullptr;
  double min = 0, max = 0;  // the accepted range, both ends included
};

std::string show(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

// Returns false after printing the help (--help, -h).
bool parse(int argc, char** argv, Config& c, bool print_help) {
  // read as 64-bit integers, then narrowed once in range
  std::int64_t ps = c.ps.num_servers, batch = c.batch_size, seed = static_cast<std::int64_t>(c.blobs.seed), classes = c.blobs.classes, features = c.blobs.features;
  const Flag flags[] = {
      {"ps", "parameter-server ranks (the rest are workers)", &ps, nullptr, 1, 1 << 20},
      {"steps", "global steps (updates) to train", &c.steps, nullptr, 1, 1125899906842624.0 /* 2^50 */},
      {"batch_size", "examples per worker step", &batch, nullptr, 1, 65536},
      {"learning_rate", "the first step's learning rate (it halves over the run)", nullptr, &c.learning_rate, 1e-30, 1e30},
      {"min_accuracy", "the job exits 1 when the test accuracy ends below this", nullptr, &c.min_accuracy, 0, 1},
      {"log_every", "the chief logs every N of its steps", &c.log_every, nullptr, 1, 1e15},
      {"seed", "seed of the blobs and the batches", &seed, nullptr, 0, 9.2e18},
      {"noise", "the blobs' spread around their centres", nullptr, &c.blobs.noise, 0, 1e6},
      {"classes", "classes (blobs)", &classes, nullptr, 2, 1000},
      {"features", "features per example", &features, nullptr, 1, 10000},
  };
  std::vector<const Flag*> given;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::optional<std::string> inline_value;  // --name=value, as the other programs take it
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg.resize(eq);
    }
    if (arg == "--help" || arg == "-h") {
      if (print_help) {
        std::printf("logreg_async: multinomial logistic regression on synthetic Gaussian blobs, trained by async SGD "
                    "on libasyncps.\nRun it as: mpirun -np 3 logreg_async [flags]  (ranks [0, ps) serve, the rest "
                    "are workers)\n\n");
        for (const Flag& f : flags)
          std::printf("  --%-15s %s (default %s)\n", f.name, f.help,
                      f.integer ? std::to_string(*f.integer).c_str() : show(*f.real).c_str());
      }
      return false;
    }
    const Flag* flag = nullptr;
    for (const Flag& f : flags)
      if (arg == std::string("--") + f.name) flag = &f;
    if (!flag) throw asyncps::ConfigError("unknown flag '" + arg + "' (see --help)");
    if (std::find(given.begin(), given.end(), flag) != given.end())
      throw asyncps::ConfigError(arg + " is given twice (give each flag once)");
    given.push_back(flag);
    if (!inline_value && i + 1 >= argc) throw asyncps::ConfigError(arg + ": missing value");
    const std::string value = inline_value ? *inline_value : std::string(argv[++i]);
    const char* text = value.c_str();
    char* end = nullptr;
    errno = 0;
    if (flag->integer) {
      const long long v = std::strtoll(text, &end, 10);
      if (end == text || *end != '\0' || errno == ERANGE || v < flag->min || static_cast<double>(v) > flag->max)
        throw asyncps::ConfigError(arg + " must be an integer in [" + std::to_string(static_cast<long long>(flag->min)) +
                                   ", " + std::to_string(static_cast<long long>(flag->max)) + "], got '" + text + "'");
      *flag->integer = v;
    } else {
      const double v = std::strtod(text, &end);
      if (end == text || *end != '\0' || !std::isfinite(v) || v < flag->min || v > flag->max)
        throw asyncps::ConfigError(arg + " must be a number in [" + show(flag->min) + ", " + show(flag->max) + "], got '" +
                                   text + "'");
      *flag->real = v;
    }
  }
  c.ps.num_servers = static_cast<int>(ps);
  c.batch_size = static_cast<int>(batch);
  c.blobs.seed = static_cast<std::uint64_t>(seed);
  c.blobs.classes = static_cast<int>(classes);
  c.blobs.features = static_cast<int>(features);
  return true;
}

// The worker loop. Returns true when the job converged (chief only; others return true).
bool work(asyncps::Session& session, const logreg::SoftmaxRegression& model, const logreg::Blobs& data,
          const Config& cfg) {
  asyncps::WorkerClient worker(session);
  const auto& roles = session.roles();
  const std::size_t arena = session.layout().size();
  std::vector<float> params(arena), grad(arena);
  std::vector<std::size_t> batch(static_cast<std::size_t>(cfg.batch_size));
  logreg::SplitMix64 rng(cfg.blobs.seed * 7919u + static_cast<std::uint64_t>(roles.worker_index()) + 1u);
  const auto start = std::chrono::steady_clock::now();
  std::int64_t mine = 0;
  asyncps::StepLoop steps(worker);  // the step policy on the transport: exactly cfg.steps updates
  while (const auto begun = steps.begin_step(params, cfg.steps)) {  // claims a step and pulls
    const std::int64_t step = begun->global_step + 1;               // the step this update takes
    for (auto& i : batch) i = rng.below(data.train.size());
    const double loss = model.loss_and_grad(params, data.train, batch, grad);
    // lr decays continuously to half its value over the run
    const double lr = cfg.learning_rate * std::pow(0.5, static_cast<double>(step) / static_cast<double>(cfg.steps));
    steps.end_step(grad, static_cast<float>(-lr));
    if (roles.is_chief() && ++mine % cfg.log_every == 0)
      std::printf("After %lld training steps (%lld global steps), loss on training batch is %.4f (lr %.4f)\n",
                  static_cast<long long>(mine), static_cast<long long>(step), loss, lr);
  }
  worker.drain();  // every worker has stopped updating: the arena is final
  bool converged = true;
  if (roles.is_chief()) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    worker.pull(params);
    const auto train = model.evaluate(params, data.train);
    const auto test = model.evaluate(params, data.test);
    std::printf("Done: %lld global steps by %d worker(s) in %.2f s; train loss %.4f accuracy %.4f; "
                "test loss %.4f accuracy %.4f\n",
                static_cast<long long>(worker.global_step()), roles.num_workers(), seconds, train.loss,
                train.accuracy, test.loss, test.accuracy);
    converged = test.accuracy >= cfg.min_accuracy && std::isfinite(test.loss);
    if (!converged)
      std::fprintf(stderr, "asyncps: did not converge: test accuracy %.4f below --min_accuracy %.4f\n",
                   test.accuracy, cfg.min_accuracy);
    std::fflush(stdout);
  }
  worker.finish();
  return converged;
}

}  // namespace

int main(int argc, char** argv) {
  asyncps::MpiEnvironment mpi(&argc, &argv);
  int failed = 0;
  try {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    Config cfg;
    if (!parse(argc, argv, cfg, /*print_help=*/rank == 0)) return 0;  // --help
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) throw asyncps::ConfigError("needs at least 2 MPI ranks (1 server + 1 worker), got 1");

    const logreg::Blobs data = logreg::make_blobs(cfg.blobs);
    asyncps::ParamLayout layout;
    const logreg::SoftmaxRegression model(layout, cfg.blobs.features, cfg.blobs.classes);
    asyncps::Session session(MPI_COMM_WORLD, layout, cfg.ps);
    if (session.roles().is_chief()) {
      const std::vector<float> zero(layout.size(), 0.0f);
      const auto before = model.evaluate(zero, data.test);
      std::printf("logreg_async: %d classes, %d features, %zu train / %zu test samples; %d server(s), "
                  "%d worker(s); before training: test loss %.4f accuracy %.4f\n",
                  cfg.blobs.classes, cfg.blobs.features, data.train.size(), data.test.size(),
                  session.roles().num_servers, session.roles().num_workers(), before.loss, before.accuracy);
      std::fflush(stdout);
    }
    if (session.roles().is_server()) {
      asyncps::ParameterServer server(session, std::vector<float>(layout.size(), 0.0f));  // convex: zeros will do
      server.serve();
    } else {
      failed = work(session, model, data, cfg) ? 0 : 1;
    }
  } catch (const std::exception& e) {
    // the one library option it offers, by its flag ("Options::num_servers 3 leaves no worker")
    std::string message = e.what();
    for (std::size_t at; (at = message.find("Options::num_servers")) != std::string::npos;)
      message.replace(at, std::string_view("Options::num_servers").size(), "--ps");
    asyncps::abort_job(message.c_str());
  }
  // Every rank exits the same way.
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return failed;
}
