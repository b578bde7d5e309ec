// Times the CPU backend's loss_and_grad and forward on random data, one thread.
//
//   bench_cpu_step [batch=128] [seconds=2]
//       one batch size at the CPU level that runs (the best this CPU has, or ASYNCPS_CPU_KERNELS)
//   bench_cpu_step --compare [--batches 32,128,1024] [--seconds 2] [--rounds 3]
//                  [--torch bench/torch_mnist.py --data_dir data/mnist --python /usr/bin/python3 | --torch none]
//       every CPU level this CPU runs, side by side: each (batch, level) is this program run again
//       with ASYNCPS_CPU_KERNELS=<level>, alternated round by round, and PyTorch on one thread
//       (torch_mnist.py, plain and --channels_last: its best single-thread configuration is the
//       one compared). Prints one RESULT line per measurement and a table of medians with each
//       level's ratio to the baseline and to PyTorch's best.
//
// What is timed differs a little: loss_and_grad here (forward, loss, backward), a training step
// in torch_mnist.py (the same plus gathering the batch and the SGD update, both small).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench_args.h"
#include "bench_batch.h"
#include "nn/cpu_kernels.h"
#include "nn/mnist_cnn.h"

namespace nn = asyncps::nn;

namespace {

int single(int batch, double seconds) {
  auto backend = nn::make_cpu_backend(batch);
  bench::RandomBatch in(batch);
  auto& [params, grad, x, labels, logits] = in;
  volatile float sink = 0.0f;
  std::printf("backend %s, 1 thread, 1.63 MFLOP/sample for forward+backward\n", backend->name());
  std::printf("cpu kernels: %s\n", nn::cpu_kernel_levels().c_str());
  bench::time_it("loss_and_grad", batch, seconds, 20, [&] { sink = sink + backend->loss_and_grad(params, x, labels, grad); });
  bench::time_it("forward", batch, seconds, 20, [&] {
    backend->forward(params, x, logits);
    sink = sink + logits[0];
  });
  return 0;
}

// Runs cmd, returns its whole stdout ("" when it fails).
std::string run(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    if (pclose(p) != 0) return "";
  }
  return out;
}

// The number after `key` in text (-1 when absent).
double number_after(const std::string& text, const std::string& key) {
  const auto at = text.find(key);
  return at == std::string::npos ? -1.0 : std::atof(text.c_str() + at + key.size());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1.0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::vector<std::string> runnable_levels() {
  // "avx2 (this CPU runs baseline, avx2; compiled: ...)": the list after "runs "
  const std::string all = nn::cpu_kernel_levels();
  const auto from = all.find("runs ") + 5, to = all.find(';', from);
  std::vector<std::string> out;
  std::string s = all.substr(from, to - from);
  for (std::size_t at = 0; at <= s.size();) {
    const auto comma = s.find(", ", at);
    out.push_back(s.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 2;
  }
  return out;
}

int compare(int argc, char** argv, const std::string& self) {
  // every value checked whole before anything runs (atoi/atof had run "nan", "1.7" and "32x")
  const bench::Args args("bench_cpu_step --compare", argc - 1, argv + 1,
                         {"--batches", "--seconds", "--rounds", "--torch", "--data_dir", "--python"});
  std::vector<int> batches;
  const std::string list = args.text("--batches", "32,128,1024");
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string one = list.substr(at, comma - at);
    char* end = nullptr;
    const long long b = std::strtoll(one.c_str(), &end, 10);
    if (one.empty() || *end != '\0' || b < 1 || b > 65536)
      throw std::invalid_argument("bench_cpu_step --compare: --batches must be whole numbers in [1, 65536] apart by "
                                  "commas, got '" + list + "'");
    batches.push_back(static_cast<int>(b));
    at = comma + 1;
  }
  const double seconds = args.real("--seconds", 2.0, 0.01, 86400);
  const int rounds = static_cast<int>(args.integer("--rounds", 3, 1, 1000));
  const std::string torch = args.text("--torch", "bench/torch_mnist.py"), data_dir = args.text("--data_dir", "data/mnist"),
                    python = args.text("--python", "/usr/bin/python3");
  if (torch != "none" && (access(torch.c_str(), R_OK) != 0 || access(python.c_str(), X_OK) != 0))
    throw std::invalid_argument("bench_cpu_step --compare: cannot run " + python + " " + torch +
                                " (--torch none leaves PyTorch out)");
  int failed = 0;  // measurements that printed no figure: the run ends non-zero
  const std::vector<std::string> levels = runnable_levels();
  std::printf("# bench_cpu_step --compare: loss_and_grad, 1 thread, levels this CPU runs, %d round%s of %g s\n", rounds,
              rounds == 1 ? "" : "s", seconds);
  std::printf("# cpu kernels: %s\n", nn::cpu_kernel_levels().c_str());
  std::map<std::pair<int, std::string>, std::vector<double>> got;  // (batch, what) -> samples/s per round
  for (int r = 0; r < rounds; ++r)
    for (int b : batches) {
      for (const auto& l : levels) {
        const std::string out =
            run("ASYNCPS_CPU_KERNELS=" + l + " '" + self + "' " + std::to_string(b) + " " + std::to_string(seconds));
        const auto line = out.find("loss_and_grad");  // "loss_and_grad   batch   128:   12345 samples/s ..."
        const double sps = line == std::string::npos ? -1.0 : number_after(out.substr(line), ":");
        std::printf("RESULT round %d batch %d impl asyncps-%s samples_per_sec %.0f\n", r, b, l.c_str(), sps);
        std::fflush(stdout);
        if (sps > 0) got[{b, l}].push_back(sps);
        else ++failed;
      }
      if (torch == "none") continue;
      const int steps = std::max(20, static_cast<int>(seconds * 12000 / b));
      for (const char* layout : {"", " --channels_last"}) {
        const std::string what = *layout ? "torch-channels_last" : "torch";
        const std::string out = run(python + " " + torch + " --threads 1" + layout + " --batch " +
                                    std::to_string(b) + " --steps " + std::to_string(steps) + " --data_dir " + data_dir +
                                    " 2>/dev/null");
        const double sps = number_after(out, "\"samples_per_sec\": ");
        std::printf("RESULT round %d batch %d impl %s samples_per_sec %.0f\n", r, b, what.c_str(), sps);
        std::fflush(stdout);
        if (sps > 0) got[{b, what}].push_back(sps);
        else ++failed;
      }
    }
  std::printf("\n# medians, samples/s (x: ratio to the baseline level; vs torch: to PyTorch's best on 1 thread)\n");
  std::printf("%6s  %-22s %12s %8s %9s\n", "batch", "impl", "samples/s", "x", "vs torch");
  for (int b : batches) {
    const double base = median(got[{b, "baseline"}]);
    const double best_torch = std::max(median(got[{b, "torch"}]), median(got[{b, "torch-channels_last"}]));
    for (const auto& l : levels) {
      const double m = median(got[{b, l}]);
      std::printf("%6d  %-22s %12.0f %7.2fx", b, ("asyncps " + l).c_str(), m, base > 0 ? m / base : 0.0);
      if (best_torch > 0) std::printf(" %8.2fx", m / best_torch);
      std::printf("\n");
    }
    for (const char* t : {"torch", "torch-channels_last"})
      if (!got[{b, t}].empty()) std::printf("%6d  %-22s %12.0f\n", b, t, median(got[{b, t}]));
  }
  if (failed) {
    std::fprintf(stderr, "asyncps: bench_cpu_step --compare: %d measurement(s) printed no figure (-1 above)\n", failed);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc > 1 && std::string(argv[1]) == "--compare") {
      char self[4096];
      const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
      return compare(argc, argv, n > 0 ? std::string(self, static_cast<std::size_t>(n)) : std::string(argv[0]));
    }
    // [batch] [seconds], each checked whole (atoi read "nan" as 0 and "1e9" as 1), each named when bad
    const std::string usage = " (usage: bench_cpu_step [batch] [seconds] | bench_cpu_step --compare [flags])";
    for (int i = 1; i < argc; ++i)
      if (argv[i][0] == '-' && argv[i][1] == '-')
        throw std::invalid_argument("bench_cpu_step: " + std::string(argv[i]) +
                                    " is not a flag of bench_cpu_step: its flags follow --compare" + usage);
    if (argc > 3)
      throw std::invalid_argument("bench_cpu_step: at most two arguments, batch and seconds; got " + std::to_string(argc - 1) +
                                  usage);
    char* end = nullptr;
    const long long batch = argc > 1 ? std::strtoll(argv[1], &end, 10) : 128;
    if (argc > 1 && (end == argv[1] || *end != '\0' || batch < 1 || batch > 65536))
      throw std::invalid_argument("bench_cpu_step: batch must be a whole number in [1, 65536], got '" + std::string(argv[1]) +
                                  "'" + usage);
    const double seconds = argc > 2 ? std::strtod(argv[2], &end) : 2.0;
    if (argc > 2 && (end == argv[2] || *end != '\0' || !std::isfinite(seconds) || seconds < 0.01 || seconds > 86400))
      throw std::invalid_argument("bench_cpu_step: seconds must be a number in [0.01, 86400], got '" + std::string(argv[2]) +
                                  "'" + usage);
    return single(static_cast<int>(batch), seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "asyncps: %s\n", e.what());
    return 1;
  }
}
