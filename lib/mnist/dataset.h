#pragma once

// MNIST as TF1's input_data.read_data_sets splits it: the first 5,000 training
// images are the validation set, the remaining 55,000 the training set, and the
// 10,000 t10k images the test set. Pixels are floats in [0,1], labels digits 0..9.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "mnist/error.h"

namespace asyncps::mnist {

inline constexpr int kRows = 28;
inline constexpr int kCols = 28;
inline constexpr std::size_t kPixels = kRows * kCols;  // 784 floats per image
inline constexpr int kClasses = 10;
inline constexpr std::size_t kValidationSize = 5000;

inline constexpr const char* kTrainImagesFile = "train-images-idx3-ubyte";
inline constexpr const char* kTrainLabelsFile = "train-labels-idx1-ubyte";
inline constexpr const char* kTestImagesFile = "t10k-images-idx3-ubyte";
inline constexpr const char* kTestLabelsFile = "t10k-labels-idx1-ubyte";

struct Split {
  std::vector<float> images;         // (size(), kPixels), row-major
  std::vector<std::uint8_t> labels;  // (size())

  std::size_t size() const { return labels.size(); }
  // Image i as kPixels floats; throws DataError past the end.
  std::span<const float> image(std::size_t i) const;
};

struct Mnist {
  Split train, validation, test;
};

// Reads the four IDX files from dir. train_limit > 0 keeps only the first
// train_limit examples of the (post-validation) training split; 0 keeps all.
Mnist load_mnist(const std::filesystem::path& dir, std::size_t train_limit = 0);

}  // namespace asyncps::mnist
