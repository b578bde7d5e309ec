// make_seeds OUT_DIR: writes the fuzzers' seed corpora, valid files made by the library's own
// writers, into OUT_DIR/<target>/ (fuzz/corpus is its output, committed):
//   checkpoint_index, checkpoint_shard   write_index / write_shard of fuzz_common.h's layouts,
//                                        by 1 and by 2 servers, with and without the EMA shadow;
//                                        with tables (rows sections) by 1 and by 3 servers
//   idx                                  IDX image and label files (the header MNIST's have)
// The config seeds are plain text, written by hand.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "asyncps/roles.h"
#include "asyncps_internal/checkpoint/checkpoint_format.h"
#include "fuzz_common.h"

namespace fs = std::filesystem;
using namespace asyncps::detail;

namespace {

void copy_into(const fs::path& from, const fs::path& dir, const std::string& name) {
  fs::create_directories(dir);
  fs::copy_file(from, dir / name, fs::copy_options::overwrite_existing);
  std::printf("%s (%ju bytes)\n", (dir / name).c_str(), static_cast<std::uintmax_t>(fs::file_size(dir / name)));
}

void write_bytes(const fs::path& dir, const std::string& name, const std::vector<unsigned char>& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                    static_cast<std::streamsize>(bytes.size()));
  std::printf("%s (%zu bytes)\n", (dir / name).c_str(), bytes.size());
}

void put_be32(std::vector<unsigned char>& out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<unsigned char>(v >> s));
}

// One checkpoint of `servers` servers at `step` in `tmp`; its files copied into the corpora.
void checkpoint(const fs::path& tmp, const fs::path& out, int servers, bool shadow, std::int64_t step,
                const asyncps::ParamLayout& layout = asyncps_fuzz::shard_layout()) {
  const asyncps::RowPlan rows(layout, servers);
  std::mt19937 rng(static_cast<unsigned>(step));
  std::normal_distribution<float> d;
  std::vector<float> params(layout.size()), ema(layout.size());
  for (auto& x : params) x = d(rng);
  for (auto& x : ema) x = d(rng);
  Index idx{step, static_cast<std::uint32_t>(servers), layout.hash(), layout.size(), {}};
  const std::uint64_t n = layout.size();
  for (int s = 0; s < servers; ++s) {
    const std::uint64_t begin = n * s / servers, end = n * (s + 1) / servers;
    const ShardHeader h{layout.hash(), n, step, static_cast<std::uint32_t>(servers), static_cast<std::uint32_t>(s),
                        begin, end - begin};
    const auto p = std::span<const float>(params).subspan(begin, end - begin);
    const auto e = shadow ? std::span<const float>(ema).subspan(begin, end - begin) : std::span<const float>();
    std::vector<float> mine(layout.tables().empty() ? 0 : rows.server_floats(s));
    for (auto& x : mine) x = d(rng);
    const auto sum = write_shard(tmp, h, layout, p, e, mine);
    const fs::path file = shard_path(tmp, step, s, servers);
    idx.shards.push_back({begin, end - begin, sum, file.filename().string()});
    copy_into(file, out / "checkpoint_shard", file.filename().string());
  }
  write_index(tmp, idx);
  copy_into(index_path(tmp, step), out / "checkpoint_index", index_path(tmp, step).filename().string());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  const fs::path tmp = fs::temp_directory_path() / ("asyncps-make-seeds." + std::to_string(std::random_device{}()));
  fs::create_directories(tmp);
  checkpoint(tmp, out, 1, true, 100);
  checkpoint(tmp, out, 2, false, 200);
  checkpoint(tmp, out, 1, true, 300, asyncps_fuzz::table_layout());  // with a rows section
  checkpoint(tmp, out, 3, false, 400, asyncps_fuzz::table_layout());
  fs::remove_all(tmp);

  // IDX: 2 images of 3x4, 3 labels; the smallest valid ones (1 image of 1x1, 1 label)
  std::vector<unsigned char> images;
  put_be32(images, 0x00000803);
  for (std::uint32_t v : {2u, 3u, 4u}) put_be32(images, v);
  for (int i = 0; i < 2 * 3 * 4; ++i) images.push_back(static_cast<unsigned char>(i * 11));
  write_bytes(out / "idx", "images-2x3x4.idx", images);
  std::vector<unsigned char> tiny;
  put_be32(tiny, 0x00000803);
  for (std::uint32_t v : {1u, 1u, 1u}) put_be32(tiny, v);
  tiny.push_back(255);
  write_bytes(out / "idx", "images-1x1x1.idx", tiny);
  std::vector<unsigned char> labels;
  put_be32(labels, 0x00000801);
  put_be32(labels, 3);
  for (unsigned char l : {7, 0, 9}) labels.push_back(l);
  write_bytes(out / "idx", "labels-3.idx", labels);
  return 0;
}
