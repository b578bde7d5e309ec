// defines: ParamLayout
#include "asyncps/param_layout.h"

#include "asyncps/error.h"
#include "asyncps/limits.h"

namespace asyncps {


std::size_t ParamLayout::add(const std::string& name, const std::vector<std::int64_t>& shape) {
  if (const std::string problem = limits::tensor_name_problem(name); !problem.empty())
    throw ConfigError("ParamLayout::add: tensor name " + limits::shown_name(name) + " " + problem);
  if (by_name_.count(name)) throw ConfigError("ParamLayout::add: tensor '" + name + "' added twice");
  if (tensors_.size() >= limits::kMaxTensors)
    throw ConfigError("ParamLayout::add: more than " + std::to_string(limits::kMaxTensors) + " tensors");
  if (shape.size() > limits::kMaxTensorRank)
    throw ConfigError("ParamLayout::add: tensor '" + name + "' has " + std::to_string(shape.size()) +
                      " dimensions (at most " + std::to_string(limits::kMaxTensorRank) + ")");
  // n = product of the dimensions, checked at every factor against what the arena may still take
  const std::uint64_t room = limits::kMaxArenaFloats - size_;
  std::uint64_t n = 1;
  for (auto d : shape) {
    if (d <= 0)
      throw ConfigError("ParamLayout::add: tensor '" + name + "' has a non-positive dimension (" + std::to_string(d) + ")");
    if (static_cast<std::uint64_t>(d) > room / n)
      throw ConfigError("ParamLayout::add: tensor '" + name + "' makes the arena larger than " +
                        std::to_string(limits::kMaxArenaFloats) + " floats");
    n *= static_cast<std::uint64_t>(d);
  }
  by_name_.emplace(name, tensors_.size());
  tensors_.push_back(TensorInfo{name, shape, size_, static_cast<std::size_t>(n)});
  size_ += static_cast<std::size_t>(n);
  return tensors_.back().offset;
}

const TensorInfo& ParamLayout::tensor(const std::string& name) const {
  const auto it = by_name_.find(name);
  if (it == by_name_.end()) throw ConfigError("ParamLayout: no tensor named " + limits::shown_name(name));
  return tensors_[it->second];
}

std::span<float> ParamLayout::view(std::span<float> arena, const std::string& name) const {
  const auto& t = tensor(name);
  if (arena.size() < size_) throw ConfigError("ParamLayout::view: arena smaller than the layout");
  return arena.subspan(t.offset, t.size);
}

std::span<const float> ParamLayout::view(std::span<const float> arena, const std::string& name) const {
  const auto& t = tensor(name);
  if (arena.size() < size_) throw ConfigError("ParamLayout::view: arena smaller than the layout");
  return arena.subspan(t.offset, t.size);
}

std::uint64_t ParamLayout::hash() const noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a offset basis
  auto mix = [&h](const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  };
  for (const auto& t : tensors_) {
    mix(t.name.data(), t.name.size());
    const unsigned char sep = 0;
    mix(&sep, 1);
    for (std::int64_t d : t.shape) {
      // little-endian bytes whatever the host, so the hash is the same everywhere
      unsigned char le[8];
      for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(d) >> (8 * i));
      mix(le, 8);
    }
    mix(&sep, 1);
  }
  return h;
}

}  // namespace asyncps
