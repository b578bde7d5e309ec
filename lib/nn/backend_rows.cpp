// defines: check_dataset, check_rows, Backend::set_dataset, Backend::loss_and_grad_rows
// Steps that name their batch by rows of a dataset the backend holds: the checks every backend
// makes, and the base version that gathers the batch on the host (the CPU backend's).
#include <algorithm>
#include <string>

#include "nn/error.h"
#include "nn/mnist_cnn.h"

namespace asyncps::nn {

std::size_t check_dataset(std::span<const float> images, std::span<const std::uint8_t> labels) {
  if (labels.empty()) throw Error("set_dataset: the dataset is empty");
  if (images.size() != labels.size() * kImagePixels)
    throw Error("set_dataset: images has " + std::to_string(images.size()) + " floats for " +
                std::to_string(labels.size()) + " labels (expected 784 per label)");
  for (std::uint8_t l : labels)
    if (l >= kClasses) throw Error("set_dataset: label " + std::to_string(l) + " not in 0..9");
  return labels.size();
}

int check_rows(const char* fn, int max_batch, std::size_t n, std::span<const std::int32_t> rows) {
  if (n == 0) throw Error(std::string(fn) + ": no dataset (set_dataset first)");
  if (rows.empty()) throw Error(std::string(fn) + ": empty batch");
  if (rows.size() > static_cast<std::size_t>(max_batch))
    throw Error(std::string(fn) + ": batch " + std::to_string(rows.size()) + " exceeds max_batch " +
                std::to_string(max_batch));
  for (std::int32_t r : rows)
    if (r < 0 || static_cast<std::size_t>(r) >= n)
      throw Error(std::string(fn) + ": row " + std::to_string(r) + " not in 0.." + std::to_string(n - 1));
  return static_cast<int>(rows.size());
}

void Backend::set_dataset(std::span<const float> images, std::span<const std::uint8_t> labels) {
  check_dataset(images, labels);
  data_images_ = images;
  data_labels_ = labels;
  rows_x_.resize(static_cast<std::size_t>(max_batch()) * kImagePixels);
  rows_y_.resize(static_cast<std::size_t>(max_batch()));
}

float Backend::loss_and_grad_rows(std::span<const float> params, std::span<const std::int32_t> rows,
                                  std::span<float> grad) {
  const int B = check_rows("loss_and_grad_rows", max_batch(), data_labels_.size(), rows);
  for (int b = 0; b < B; ++b) {  // x (B,784), y (B) gathered from the dataset
    const auto r = static_cast<std::size_t>(rows[static_cast<std::size_t>(b)]);
    std::copy_n(data_images_.data() + r * kImagePixels, kImagePixels, rows_x_.data() + static_cast<std::size_t>(b) * kImagePixels);
    rows_y_[static_cast<std::size_t>(b)] = data_labels_[r];
  }
  const auto n = static_cast<std::size_t>(B);
  return loss_and_grad(params, std::span<const float>(rows_x_).first(n * kImagePixels),
                       std::span<const std::uint8_t>(rows_y_).first(n), grad);
}

}  // namespace asyncps::nn
