// Accuracy helper: argmax predictions in chunks of the backend's max batch.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "nn/mnist_cnn.h"
#include "nn/error.h"

namespace asyncps::nn {

std::size_t count_correct(Backend& backend, std::span<const float> params,
                          std::span<const float> images, std::span<const std::uint8_t> labels) {
  const std::size_t n = labels.size();
  if (images.size() != n * kImagePixels)
    throw Error("count_correct: images has " + std::to_string(images.size()) +
                                " floats, expected " + std::to_string(n) + " x 784");
  const std::size_t chunk = static_cast<std::size_t>(backend.max_batch());
  std::vector<float> logits(std::min(chunk, n) * kClasses);
  std::size_t correct = 0;
  for (std::size_t i = 0; i < n; i += chunk) {
    const std::size_t m = std::min(chunk, n - i);
    backend.forward(params, images.subspan(i * kImagePixels, m * kImagePixels),
                    std::span<float>(logits).first(m * kClasses));
    for (std::size_t b = 0; b < m; ++b) {
      const float* z = logits.data() + b * kClasses;
      const auto pred = std::max_element(z, z + kClasses) - z;  // first max on ties
      correct += (pred == labels[i + b]);
    }
  }
  return correct;
}

}  // namespace asyncps::nn
