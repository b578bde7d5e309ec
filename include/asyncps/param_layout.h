// defines: asyncps::TensorInfo, asyncps::ParamLayout
// A model's trainable parameters as named tensors packed into one flat float arena (the
// llm.c habit: one allocation, per-tensor views carved from a size table). The arena is what
// the servers expose as an MPI window.
//
//   asyncps::ParamLayout layout;
//   layout.add("fc_w", {784, 10});
//   layout.add("fc_b", {10});
//   layout.size();        // 7850 floats
//   layout.hash();        // same on every rank that built the same layout
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace asyncps {

struct TensorInfo {
  std::string name;
  std::vector<std::int64_t> shape;
  std::size_t offset = 0;  // first float of the tensor in the arena
  std::size_t size = 0;    // number of floats (product of shape)
};

class ParamLayout {
 public:
  // Appends a tensor; returns its offset. Throws ConfigError for a name that is not a valid
  // tensor name (limits::tensor_name_problem: 1..251 bytes, no '/', '\\' or control character,
  // not "." or ".."), a duplicate name, more than limits::kMaxTensors tensors or
  // limits::kMaxTensorRank dimensions, a non-positive dimension, or an arena that would exceed
  // limits::kMaxArenaFloats floats (all size arithmetic is overflow-checked). An empty shape is
  // a scalar (one float).
  std::size_t add(const std::string& name, const std::vector<std::int64_t>& shape);

  std::size_t size() const noexcept { return size_; }
  std::size_t bytes() const noexcept { return size_ * sizeof(float); }
  const std::vector<TensorInfo>& tensors() const noexcept { return tensors_; }
  const TensorInfo& tensor(const std::string& name) const;  // throws ConfigError if absent

  // The tensor's view into an arena laid out by this layout.
  std::span<float> view(std::span<float> arena, const std::string& name) const;
  std::span<const float> view(std::span<const float> arena, const std::string& name) const;

  // FNV-1a over names, shapes and order: stable across runs, compilers and hosts.
  std::uint64_t hash() const noexcept;

 private:
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, std::size_t> by_name_;  // name -> index in tensors_
  std::size_t size_ = 0;
};

}  // namespace asyncps
