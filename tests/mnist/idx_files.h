#pragma once

// Test helpers: a self-removing temp directory and writers for synthetic IDX files.

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "mnist/error.h"

namespace mnist_test {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    for (int attempt = 0; attempt < 100; ++attempt) {
      auto p = fs::temp_directory_path() /
               ("asyncps_mnist_test_" + std::to_string(rd()) + "_" + std::to_string(rd()));
      if (fs::create_directory(p)) {
        path_ = p;
        return;
      }
    }
    throw std::runtime_error("could not create a temp directory");
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

inline void put_be32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  out.push_back(static_cast<std::uint8_t>(v >> 24));
  out.push_back(static_cast<std::uint8_t>(v >> 16));
  out.push_back(static_cast<std::uint8_t>(v >> 8));
  out.push_back(static_cast<std::uint8_t>(v));
}

inline void write_bytes(const fs::path& file, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

// Header (magic, count, rows, cols) followed by `pixels` as given (any length).
inline std::vector<std::uint8_t> idx_images_bytes(std::uint32_t count, std::uint32_t rows,
                                                  std::uint32_t cols,
                                                  const std::vector<std::uint8_t>& pixels,
                                                  std::uint32_t magic = 0x00000803) {
  std::vector<std::uint8_t> out;
  put_be32(out, magic);
  put_be32(out, count);
  put_be32(out, rows);
  put_be32(out, cols);
  out.insert(out.end(), pixels.begin(), pixels.end());
  return out;
}

inline std::vector<std::uint8_t> idx_labels_bytes(const std::vector<std::uint8_t>& labels,
                                                  std::uint32_t magic = 0x00000801) {
  std::vector<std::uint8_t> out;
  put_be32(out, magic);
  put_be32(out, static_cast<std::uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

// Pixel byte that identifies image i (so a split can be checked image by image).
inline std::uint8_t tag_byte(std::size_t i) { return static_cast<std::uint8_t>((i * 37 + 11) % 256); }

// An images file of `count` 28x28 images and a labels file of `label_count` labels.
// Image i's first two bytes are i's low and high byte (see image_id), the other
// pixels tag_byte(i); label i is i % 10.
inline void write_mnist_pair(const fs::path& images_file, const fs::path& labels_file,
                             std::size_t count, std::size_t label_count) {
  std::vector<std::uint8_t> pixels(count * 784);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint8_t* img = pixels.data() + i * 784;
    for (std::size_t p = 0; p < 784; ++p) img[p] = tag_byte(i);
    img[0] = static_cast<std::uint8_t>(i & 0xff);
    img[1] = static_cast<std::uint8_t>(i >> 8);
  }
  std::vector<std::uint8_t> labels(label_count);
  for (std::size_t i = 0; i < label_count; ++i) labels[i] = static_cast<std::uint8_t>(i % 10);
  write_bytes(images_file, idx_images_bytes(static_cast<std::uint32_t>(count), 28, 28, pixels));
  write_bytes(labels_file, idx_labels_bytes(labels));
}

// Index of a synthetic image written by write_mnist_pair, from its float pixels.
inline std::size_t image_id(const float* img) {
  auto byte = [](float f) { return static_cast<std::size_t>(f * 255.0f + 0.5f); };
  return byte(img[0]) | (byte(img[1]) << 8);
}

// Runs f, which must throw asyncps::mnist::DataError; returns what().
template <class F>
std::string data_error_message(F&& f) {
  try {
    f();
  } catch (const asyncps::mnist::DataError& e) {
    return e.what();
  }
  FAIL("expected asyncps::mnist::DataError, nothing was thrown");
  return {};
}

}  // namespace mnist_test
