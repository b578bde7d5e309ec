// defines: dump_data
#include "dump.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "asyncps/embedding_table.h"
#include "asyncps/error.h"
#include "batches.h"
#include "metrics.h"

namespace ctr_async {

namespace {

// A C-order .npy (version 1.0) of `shape` holding `data` as `descr` ('<i8', '<f4').
template <class T>
void write_npy(const std::filesystem::path& path, const char* descr, std::vector<std::size_t> shape, const std::vector<T>& data) {
  std::string dims;
  for (std::size_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 1);  // "(n, 26)"; "(n,)" keeps its comma
  else dims.pop_back();
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  const unsigned short n = static_cast<unsigned short>(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(static_cast<char>(n & 0xff)).put(static_cast<char>(n >> 8));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size() * sizeof(T)));
  if (!out) throw asyncps::Error("--dump_data: cannot write " + path.string());
}

void dump_stream(const Config& c, const ClickLog& log, std::uint64_t stream, std::int64_t examples,
                 const std::filesystem::path& dir, const std::string& name, std::vector<float>* planted_out) {
  const int F = log.config().fields, Dn = log.config().dense;
  const auto n = static_cast<std::size_t>(examples);
  std::vector<std::int64_t> rows(n * F);
  std::vector<float> dense(n * Dn), labels(n), planted(n);
  Batch b;
  Example ex;
  constexpr int kChunk = 4096;
  for (std::size_t first = 0; first < n; first += kChunk) {
    const int m = static_cast<int>(std::min<std::size_t>(kChunk, n - first));
    fill(log, stream, first, m, b, ex);
    for (std::size_t i = 0; i < b.keys.size(); ++i)
      rows[first * F + i] = static_cast<std::int64_t>(asyncps::table_row(b.keys[i], c.rows));
    std::copy(b.dense.begin(), b.dense.end(), dense.begin() + static_cast<std::ptrdiff_t>(first * Dn));
    std::copy(b.labels.begin(), b.labels.end(), labels.begin() + static_cast<std::ptrdiff_t>(first));
    std::copy(b.planted.begin(), b.planted.end(), planted.begin() + static_cast<std::ptrdiff_t>(first));
  }
  write_npy(dir / (name + "_rows.npy"), "<i8", {n, static_cast<std::size_t>(F)}, rows);
  write_npy(dir / (name + "_dense.npy"), "<f4", {n, static_cast<std::size_t>(Dn)}, dense);
  write_npy(dir / (name + "_labels.npy"), "<f4", {n}, labels);
  if (planted_out) {
    write_npy(dir / (name + "_planted.npy"), "<f4", {n}, planted);
    *planted_out = labels;
    planted_out->insert(planted_out->end(), planted.begin(), planted.end());
  }
}

}  // namespace

int dump_data(const Config& c) {
  const std::filesystem::path dir(c.dump_data);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw asyncps::Error("--dump_data: cannot create " + dir.string() + ": " + ec.message());
  const ClickLog log(c.data);
  for (int w = 0; w < c.dump_workers; ++w)
    dump_stream(c, log, 1 + static_cast<std::uint64_t>(w), c.dump_examples, dir, "train" + std::to_string(w), nullptr);
  std::vector<float> test;  // labels, then planted logits
  dump_stream(c, log, 0, c.test_examples, dir, "test", &test);
  const auto n = static_cast<std::ptrdiff_t>(c.test_examples);
  const std::vector<float> labels(test.begin(), test.begin() + n), planted(test.begin() + n, test.end());
  const double planted_auc = auc(planted, labels);
  std::ofstream meta(dir / "meta.json");
  meta << "{\"rows\": " << c.rows << ", \"fields\": " << log.config().fields << ", \"dense\": " << log.config().dense
       << ", \"workers\": " << c.dump_workers << ", \"examples_per_worker\": " << c.dump_examples
       << ", \"test_examples\": " << c.test_examples << ", \"seed\": " << c.data.seed
       << ", \"planted_auc\": " << (std::isnan(planted_auc) ? std::string("null") : std::to_string(planted_auc)) << "}\n";
  if (!meta) throw asyncps::Error("--dump_data: cannot write " + (dir / "meta.json").string());
  std::printf("wrote %d training stream(s) of %lld examples and %lld held-out examples to %s (planted AUC %s)\n",
              c.dump_workers, static_cast<long long>(c.dump_examples), static_cast<long long>(c.test_examples),
              dir.string().c_str(), auc_text(planted_auc).c_str());
  return 0;
}

}  // namespace ctr_async
