// defines: read_checkpoint, list_checkpoints, export_npy
#include "asyncps/checkpoint.h"

#include <algorithm>
#include <regex>
#include <string>

#include "asyncps/error.h"
#include "asyncps/limits.h"
#include "checkpoint/checkpoint_format.h"

namespace asyncps {

namespace {
constexpr std::size_t kMaxFileNameBytes = 255;  // NAME_MAX on every common file system
}  // namespace

CheckpointData read_checkpoint(const std::filesystem::path& index_file, const ParamLayout& layout) {
  const detail::Index index = detail::read_index(index_file, /*follow_links=*/true);  // a path the caller named
  if (index.layout_hash != layout.hash() || index.arena != layout.size())
    throw CheckpointError(index_file.string() + ": written for another model (" + std::to_string(index.arena) +
                          " floats, layout hash differs); this model has " + std::to_string(layout.size()) + " floats");
  CheckpointData out;
  out.global_step = index.step;
  out.num_servers = static_cast<int>(index.num_servers);
  out.params.assign(layout.size(), 0.f);
  bool all_shadow = true;
  std::vector<float> shadow(layout.size(), 0.f);
  // (the index's shards tile its arena, which is this layout's: every copy below stays inside)
  for (const auto& e : index.shards) {
    const auto file = index_file.parent_path() / e.file;  // a plain name (parse_index)
    const detail::ShardFile s = detail::read_shard(file, layout);
    if (s.checksum != e.checksum || s.header.offset != e.offset || s.header.count != e.count)
      throw CheckpointError(file.string() + ": does not match its index " + index_file.filename().string() +
                            " (a shard of another save)");
    std::copy(s.params.begin(), s.params.end(), out.params.begin() + static_cast<std::ptrdiff_t>(e.offset));
    if (s.shadow.empty()) all_shadow = false;
    else std::copy(s.shadow.begin(), s.shadow.end(), shadow.begin() + static_cast<std::ptrdiff_t>(e.offset));
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

void export_npy(const std::filesystem::path& dir, const ParamLayout& layout, const std::vector<float>& arena) {
  if (arena.size() != layout.size()) throw Error("export_npy: the arena does not match the layout");
  // every name becomes a file name in `dir`: all are checked before anything is written
  for (const auto& t : layout.tensors()) {
    if (auto p = limits::tensor_name_problem(t.name); !p.empty())
      throw ConfigError("export_npy: a tensor name " + p + "; nothing exported");
    if (t.name.size() + 4 > kMaxFileNameBytes)
      throw ConfigError("export_npy: tensor '" + t.name + "': '" + t.name + ".npy' would be " +
                        std::to_string(t.name.size() + 4) + " bytes, more than a file name can be (" +
                        std::to_string(kMaxFileNameBytes) + "); nothing exported");
    if (t.offset > arena.size() || t.size > arena.size() - t.offset)
      throw Error("export_npy: tensor '" + t.name + "' lies outside the arena");
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(dir.string() + ": cannot create it: " + ec.message());
  for (const auto& t : layout.tensors()) {
    // NPY 1.0: magic, version, little-endian header length, a Python dict padded to 64 bytes
    std::string shape = "(";
    for (auto d : t.shape) shape += std::to_string(d) + ",";
    if (t.shape.size() > 1) shape.pop_back();
    shape += ")";
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    const std::size_t unpadded = 10 + dict.size() + 1;
    dict += std::string((64 - unpadded % 64) % 64, ' ') + "\n";
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    const auto len = static_cast<std::uint16_t>(dict.size());
    bytes += static_cast<char>(len & 0xff);
    bytes += static_cast<char>(len >> 8);
    bytes += dict;
    bytes.append(reinterpret_cast<const char*>(arena.data() + t.offset), t.size * sizeof(float));
    // (a temporary name of its own: "<name>.npy.tmp" could exceed a file name's length)
    detail::write_file_atomically(dir / (t.name + ".npy"), bytes, dir / ".export-npy.tmp");
  }
}

}  // namespace asyncps
