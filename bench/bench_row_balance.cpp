// How evenly the servers share an embedding table's traffic on skewed ids (hash or
// range sharding). ctr_async's synthetic click stream (26 fields, Zipf ids) is cut into batches;
// each batch's keys are mapped to rows and rows to servers three ways:
//   hash+range  row = mix64(key) mod rows, server = row's contiguous range (the library's way)
//   range       row = key mod rows (no hash), server = row's contiguous range
//   mod         row = key mod rows (no hash), server = row mod S (round-robin)
// and for each it prints, over all batches, the busiest server's share against the mean: of the
// keys (updates) and of the distinct rows (operations) a batch sends.
//
//   build/bin/bench_row_balance [--servers 4] [--rows 4194304] [--batches 200] [--batch 256]
//                               [--zipf 1.1] [--vocab 100000]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "asyncps/param_layout.h"
#include "asyncps/roles.h"
#include "bench_args.h"
#include "clicks.h"
#include "asyncps_internal/core/rows.h"  // (the library's row hash: what EmbeddingTable::row_of computes)

int main(int argc, char** argv) {
  int servers = 4, batches = 200, batch = 256;
  std::uint64_t rows = std::uint64_t{1} << 22;
  ctr_async::ClickConfig cc;
  try {
    const bench::Args args("bench_row_balance", argc, argv, {"--servers", "--rows", "--batches", "--batch", "--zipf", "--vocab"});
    servers = static_cast<int>(args.integer("--servers", servers, 1, 4096));
    rows = static_cast<std::uint64_t>(args.integer("--rows", static_cast<std::int64_t>(rows), 1, std::int64_t{1} << 36));
    batches = static_cast<int>(args.integer("--batches", batches, 1, 1000000));
    batch = static_cast<int>(args.integer("--batch", batch, 1, 65536));
    const std::string zipf = args.text("--zipf", std::to_string(cc.zipf));  // (its range is open at 1: checked here)
    char* end = nullptr;
    cc.zipf = std::strtod(zipf.c_str(), &end);
    if (*end != '\0' || !(cc.zipf > 1 && cc.zipf <= 10))
      throw std::invalid_argument("bench_row_balance: --zipf must be a number in (1, 10], got '" +
                                  args.text("--zipf", "") + "'");
    cc.vocab = static_cast<std::uint64_t>(args.integer("--vocab", static_cast<std::int64_t>(cc.vocab), 1, std::int64_t{1} << 32));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "asyncps: %s\n", e.what());
    return 2;
  }
  asyncps::ParamLayout layout;
  layout.add("b", {1});
  layout.add_table("t", {.rows = rows, .dim = 16});
  const asyncps::RowPlan plan(layout, servers);
  const ctr_async::ClickLog log(cc);
  ctr_async::Example ex;
  const char* names[3] = {"hash+range", "range", "mod"};
  double max_keys[3] = {}, mean_keys[3] = {}, max_rows[3] = {}, mean_rows[3] = {};
  std::uint64_t index = 0;
  for (int b = 0; b < batches; ++b) {
    std::vector<std::uint64_t> keys;
    for (int i = 0; i < batch; ++i) {
      log.example(1, index++, ex);
      for (int f = 0; f < cc.fields; ++f) keys.push_back(ctr_async::ClickLog::key(f, ex.ids[static_cast<std::size_t>(f)]));
    }
    for (int m = 0; m < 3; ++m) {
      std::vector<double> k(static_cast<std::size_t>(servers));
      std::vector<std::set<std::uint64_t>> r(static_cast<std::size_t>(servers));
      for (const std::uint64_t key : keys) {
        const std::uint64_t row = m == 0 ? asyncps::detail::row_of_key(key, rows) : key % rows;
        const int s = m == 2 ? static_cast<int>(row % static_cast<std::uint64_t>(servers)) : plan.server_of(0, row);
        k[static_cast<std::size_t>(s)] += 1;
        r[static_cast<std::size_t>(s)].insert(row);
      }
      double rmax = 0, rsum = 0;
      for (const auto& set : r) rmax = std::max(rmax, static_cast<double>(set.size())), rsum += static_cast<double>(set.size());
      max_keys[m] += *std::max_element(k.begin(), k.end());
      mean_keys[m] += static_cast<double>(keys.size()) / servers;
      max_rows[m] += rmax;
      mean_rows[m] += rsum / servers;
    }
  }
  std::printf("# %d servers, %llu rows, %d batches of %d examples x %d fields, Zipf %.2f over %llu ids per field\n", servers,
              static_cast<unsigned long long>(rows), batches, batch, cc.fields, cc.zipf,
              static_cast<unsigned long long>(cc.vocab));
  std::printf("# busiest server / mean, summed over batches (1.00 = even)\n%-12s %8s %8s\n", "sharding", "keys", "rows");
  for (int m = 0; m < 3; ++m)
    std::printf("%-12s %8.2f %8.2f\n", names[m], max_keys[m] / mean_keys[m], max_rows[m] / mean_rows[m]);
  return 0;
}
