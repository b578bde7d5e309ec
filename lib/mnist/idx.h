#pragma once

// Reader for the IDX files MNIST ships in (http://yann.lecun.com/exdb/mnist/):
// big-endian header, then unsigned bytes. Every failure throws DataError.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "mnist/error.h"

namespace asyncps::mnist {

inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;  // unsigned byte, 3 dims
inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;  // unsigned byte, 1 dim

struct IdxImages {
  int count = 0, rows = 0, cols = 0;
  std::vector<float> pixels;  // (count, rows*cols), row-major, in [0,1] = byte/255
};

IdxImages read_idx_images(const std::filesystem::path& file);

// Labels must be digits 0..9.
std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& file);

// The same from a file's bytes, already read (`file` only names it in messages; fuzz/ uses these).
IdxImages parse_idx_images(std::span<const unsigned char> bytes, const std::filesystem::path& file);
std::vector<std::uint8_t> parse_idx_labels(std::span<const unsigned char> bytes, const std::filesystem::path& file);

}  // namespace asyncps::mnist
