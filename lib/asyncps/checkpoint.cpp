// defines: read_checkpoint, list_checkpoints, export_npy
#include "asyncps/checkpoint.h"

#include <algorithm>
#include <regex>
#include <string>

#include "asyncps/error.h"
#include "checkpoint_format.h"

namespace asyncps {

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
  for (const auto& e : index.shards) {
    const auto file = index_file.parent_path() / e.file;
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
  std::vector<std::pair<long long, std::filesystem::path>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, re)) continue;
    const std::int64_t step = detail::parse_step(m[1].str());  // -1: digits that do not fit: not ours
    if (step >= 0) found.emplace_back(step, entry.path());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::filesystem::path> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

void export_npy(const std::filesystem::path& dir, const ParamLayout& layout, const std::vector<float>& arena) {
  if (arena.size() != layout.size()) throw Error("export_npy: the arena does not match the layout");
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
    detail::write_file_atomically(dir / (t.name + ".npy"), bytes);
  }
}

}  // namespace asyncps
