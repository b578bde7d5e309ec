#include "mnist/dataset.h"

#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "mnist/idx.h"
#include "mnist/error.h"

namespace asyncps::mnist {

std::span<const float> Split::image(std::size_t i) const {
  if (i >= size())
    throw DataError("mnist::Split::image: index " + std::to_string(i) +
                            " out of range (size " + std::to_string(size()) + ")");
  return std::span<const float>(images).subspan(i * kPixels, kPixels);
}

namespace {

constexpr const char* kHowToGetData = "run `make data` (scripts/fetch-mnist.sh) or pass --data_dir";

std::filesystem::path require_file(const std::filesystem::path& dir, const char* name) {
  auto file = dir / name;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    throw DataError(file.string() + ": MNIST file not found; " + kHowToGetData);
  return file;
}

// Reads one images/labels pair and checks they belong together.
Split read_pair(const std::filesystem::path& dir, const char* images_name,
                const char* labels_name) {
  const auto images_file = require_file(dir, images_name);
  const auto labels_file = require_file(dir, labels_name);
  IdxImages images = read_idx_images(images_file);
  if (images.rows != kRows || images.cols != kCols)
    throw DataError(images_file.string() + ": images are " + std::to_string(images.rows) + "x" +
                    std::to_string(images.cols) + ", expected " + std::to_string(kRows) + "x" +
                    std::to_string(kCols));
  std::vector<std::uint8_t> labels = read_idx_labels(labels_file);
  if (labels.size() != static_cast<std::size_t>(images.count))
    throw DataError("image/label count mismatch: " + images_file.string() + " has " +
                    std::to_string(images.count) + " images but " + labels_file.string() +
                    " has " + std::to_string(labels.size()) + " labels");
  return Split{std::move(images.pixels), std::move(labels)};
}

}  // namespace

Mnist load_mnist(const std::filesystem::path& dir, std::size_t train_limit) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw DataError(dir.string() + ": MNIST data directory not found; " + kHowToGetData);

  Mnist m;
  Split all_train = read_pair(dir, kTrainImagesFile, kTrainLabelsFile);
  if (all_train.size() <= kValidationSize)
    throw DataError((dir / kTrainImagesFile).string() + ": only " +
                    std::to_string(all_train.size()) + " training images, need more than " +
                    std::to_string(kValidationSize) + " (the first " +
                    std::to_string(kValidationSize) + " are the validation set)");

  // validation = first kValidationSize; train = the rest, moved down in place (no second copy).
  const auto val_pixels = static_cast<std::ptrdiff_t>(kValidationSize * kPixels);
  const auto val_labels = static_cast<std::ptrdiff_t>(kValidationSize);
  m.validation.images.assign(all_train.images.begin(), all_train.images.begin() + val_pixels);
  m.validation.labels.assign(all_train.labels.begin(), all_train.labels.begin() + val_labels);
  all_train.images.erase(all_train.images.begin(), all_train.images.begin() + val_pixels);
  all_train.labels.erase(all_train.labels.begin(), all_train.labels.begin() + val_labels);
  if (train_limit > 0 && train_limit < all_train.size()) {
    all_train.images.resize(train_limit * kPixels);
    all_train.labels.resize(train_limit);
    all_train.images.shrink_to_fit();
    all_train.labels.shrink_to_fit();
  }
  m.train = std::move(all_train);

  m.test = read_pair(dir, kTestImagesFile, kTestLabelsFile);
  return m;
}

}  // namespace asyncps::mnist
