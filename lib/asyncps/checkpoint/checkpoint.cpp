// defines: read_checkpoint, list_checkpoints, export_npy, export_checkpoint_npy
#include "asyncps/checkpoint.h"

#include <algorithm>
#include <list>
#include <regex>
#include <string>

#include "asyncps/error.h"
#include "asyncps/limits.h"
#include "asyncps/roles.h"
#include "checkpoint/checkpoint_format.h"

namespace asyncps {

namespace {
constexpr std::size_t kMaxFileNameBytes = 255;  // NAME_MAX on every common file system
}  // namespace

CheckpointData read_checkpoint(const std::filesystem::path& index_file, const ParamLayout& layout) {
  const detail::Index index = detail::read_index(index_file, /*follow_links=*/true);  // a path the caller named
  if (index.layout_hash != layout.hash() || index.arena != layout.size())
    throw CheckpointError(index_file.string() + ": written for another model (" +
                          detail::another_model(index.arena, layout.size()) + ")");
  CheckpointData out;
  out.global_step = index.step;
  out.num_servers = static_cast<int>(index.num_servers);
  out.params.assign(layout.size(), 0.f);
  bool all_shadow = true;
  std::vector<float> shadow(layout.size(), 0.f);
  const auto& tables = layout.tables();
  // (index.num_servers >= 1: parse_index; its entries are servers 0..S-1 in order)
  const RowPlan plan = tables.empty() ? RowPlan() : RowPlan(layout, static_cast<int>(index.num_servers));
  for (const auto& t : tables) {
    TableData d;
    d.name = t.name;
    d.rows = t.spec.rows;
    d.dim = t.spec.dim;
    d.values.assign(static_cast<std::size_t>(t.spec.rows) * static_cast<std::size_t>(t.spec.dim), 0.f);
    d.accumulators.assign(static_cast<std::size_t>(t.spec.rows) * static_cast<std::size_t>(t.state_width()), 0.f);
    out.tables.push_back(std::move(d));
  }
  // (the index's shards tile its arena, which is this layout's: every copy below stays inside)
  for (std::size_t k = 0; k < index.shards.size(); ++k) {
    const auto& e = index.shards[k];
    const auto file = index_file.parent_path() / e.file;  // a plain name (parse_index)
    const detail::ShardFile s = detail::read_shard(file, layout);
    const int server = static_cast<int>(k);
    if (s.checksum != e.checksum || s.header.offset != e.offset || s.header.count != e.count ||
        s.header.server != k || s.header.num_servers != index.num_servers ||
        s.rows.size() != (tables.empty() ? 0 : plan.server_floats(server)))
      throw CheckpointError(file.string() + ": does not match its index " + index_file.filename().string() +
                            " (a shard of another save)");
    std::copy(s.params.begin(), s.params.end(), out.params.begin() + static_cast<std::ptrdiff_t>(e.offset));
    if (s.shadow.empty()) all_shadow = false;
    else std::copy(s.shadow.begin(), s.shadow.end(), shadow.begin() + static_cast<std::ptrdiff_t>(e.offset));
    // this server's rows of each table: [first_row, + rows), one every pitch floats (a row group's
    // tables interleave), values then accumulator
    for (std::size_t t = 0; t < tables.size(); ++t) {
      const RowPlan::Part& part = plan.part(t, server);
      const auto dim = static_cast<std::size_t>(tables[t].spec.dim), pitch = static_cast<std::size_t>(plan.pitch(t));
      const float* src = s.rows.data() + part.offset;
      TableData& d = out.tables[t];
      const auto width = static_cast<std::size_t>(tables[t].state_width());
      for (std::uint64_t i = 0; i < part.rows; ++i, src += pitch) {
        const auto row = static_cast<std::size_t>(part.first_row + i);
        std::copy_n(src, dim, d.values.begin() + static_cast<std::ptrdiff_t>(row * dim));
        std::copy_n(src + dim, width, d.accumulators.begin() + static_cast<std::ptrdiff_t>(row * width));
      }
    }
  }
  if (all_shadow) out.shadow = std::move(shadow);
  return out;
}

std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& dir) {
  static const std::regex re(R"(^ckpt-(\d+)\.index$)");
  std::vector<std::pair<std::int64_t, std::filesystem::path>> found;
  // an error ends the listing early (what was found is listed): never a throw
  detail::for_each_name(dir, [&](const std::string& name) {
    std::smatch m;
    if (!std::regex_match(name, m, re)) return;
    const std::int64_t step = detail::parse_step(m[1].str());  // -1: digits that do not fit: not ours
    if (step >= 0) found.emplace_back(step, dir / name);
  });
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::filesystem::path> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

namespace {

// One .npy file to write: its name in the directory, its shape, its floats.
struct NpyFile {
  std::string name;
  std::vector<std::int64_t> shape;
  const float* data = nullptr;
  std::size_t size = 0;
};

// NPY 1.0: magic, version, little-endian header length, a Python dict padded to 64 bytes, the data.
std::string npy_bytes(const NpyFile& f) {
  std::string shape = "(";
  for (auto d : f.shape) shape += std::to_string(d) + ",";
  if (f.shape.size() > 1) shape.pop_back();
  shape += ")";
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict += std::string((64 - unpadded % 64) % 64, ' ') + "\n";
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<std::uint16_t>(dict.size());
  bytes += static_cast<char>(len & 0xff);
  bytes += static_cast<char>(len >> 8);
  bytes += dict;
  bytes.append(reinterpret_cast<const char*>(f.data), f.size * sizeof(float));
  return bytes;
}

// Checks every file name first (valid, fits a file name, no two alike), then writes them all.
void write_npy_files(const std::filesystem::path& dir, const std::vector<NpyFile>& files, const std::string& call) {
  std::vector<std::string> names;
  for (const auto& f : files) {
    const std::string stem = f.name.substr(0, f.name.size() - 4);  // (every name ends in ".npy")
    if (auto p = limits::tensor_name_problem(stem); !p.empty())
      throw ConfigError(call + ": a tensor or table name " + p + "; nothing exported");
    if (f.name.size() > kMaxFileNameBytes)
      throw ConfigError(call + ": '" + f.name + "' would be " + std::to_string(f.name.size()) +
                        " bytes, more than a file name can be (" + std::to_string(kMaxFileNameBytes) +
                        "); nothing exported");
    names.push_back(f.name);
  }
  std::sort(names.begin(), names.end());
  if (const auto dup = std::adjacent_find(names.begin(), names.end()); dup != names.end())
    throw ConfigError(call + ": two arrays would both be written as '" + *dup +
                      "' (a tensor named like a table's accumulator); nothing exported");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(call + ": " + dir.string() + ": cannot create it: " + ec.message());
  // (a temporary name of its own: "<name>.npy.tmp" could exceed a file name's length)
  for (const auto& f : files) detail::write_file_atomically(dir / f.name, npy_bytes(f), dir / ".export-npy.tmp");
}

std::vector<NpyFile> tensor_files(const ParamLayout& layout, const std::vector<float>& arena, const std::string& call) {
  if (arena.size() != layout.size()) throw Error(call + ": the arena does not match the layout");
  std::vector<NpyFile> files;
  for (const auto& t : layout.tensors()) {
    if (t.offset > arena.size() || t.size > arena.size() - t.offset)
      throw Error(call + ": tensor '" + t.name + "' lies outside the arena");
    files.push_back({t.name + ".npy", t.shape, arena.data() + t.offset, t.size});
  }
  return files;
}

}  // namespace

void export_npy(const std::filesystem::path& dir, const ParamLayout& layout, const std::vector<float>& arena) {
  write_npy_files(dir, tensor_files(layout, arena, "export_npy"), "export_npy");
}

void export_checkpoint_npy(const std::filesystem::path& dir, const ParamLayout& layout, const CheckpointData& ckpt) {
  std::vector<NpyFile> files = tensor_files(layout, ckpt.params, "export_checkpoint_npy");
  std::list<std::vector<float>> state_copies;  // (the blocks' floats, alive until written; a list: never moved)
  const auto& tables = layout.tables();
  if (ckpt.tables.size() != tables.size())
    throw Error("export_checkpoint_npy: the checkpoint holds " + std::to_string(ckpt.tables.size()) + " tables, the layout " +
                std::to_string(tables.size()));
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const TableInfo& info = tables[t];
    const TableData& d = ckpt.tables[t];
    const auto rows = static_cast<std::size_t>(info.spec.rows), dim = static_cast<std::size_t>(info.spec.dim);
    const auto width = static_cast<std::size_t>(info.state_width());
    if (d.name != info.name || d.rows != info.spec.rows || d.dim != info.spec.dim || d.values.size() != rows * dim ||
        d.accumulators.size() != rows * width)
      throw Error("export_checkpoint_npy: table '" + info.name + "' of the checkpoint does not match the layout");
    files.push_back({info.name + ".npy", {static_cast<std::int64_t>(rows), static_cast<std::int64_t>(dim)}, d.values.data(),
                     d.values.size()});
    // each block of the optimizer's state (rows, or rows x its width), gathered from the rows' columns
    std::size_t at = 0;
    for (const RowStateBlock& b : info.state_blocks()) {
      auto& block = state_copies.emplace_back(rows * static_cast<std::size_t>(b.width));
      for (std::size_t r = 0; r < rows; ++r)
        std::copy_n(d.accumulators.begin() + static_cast<std::ptrdiff_t>(r * width + at), b.width,
                    block.begin() + static_cast<std::ptrdiff_t>(r * static_cast<std::size_t>(b.width)));
      std::vector<std::int64_t> shape{static_cast<std::int64_t>(rows)};
      if (b.width > 1 || b.per_coordinate) shape.push_back(b.width);
      files.push_back({info.name + "." + b.name + ".npy", shape, block.data(), block.size()});
      at += static_cast<std::size_t>(b.width);
    }
  }
  write_npy_files(dir, files, "export_checkpoint_npy");
}

}  // namespace asyncps
