// defines: check_forward_args, check_step_args
#include "backend_args.h"

#include <stdexcept>
#include <string>

#include "mnist_cnn.h"
#include "nn/error.h"

namespace asyncps::nn {

int check_forward_args(const char* fn, int max_batch, std::span<const float> params, std::span<const float> x) {
  if (params.size() != kMnistCnnParams)
    throw Error(std::string(fn) + ": params has " + std::to_string(params.size()) +
                                " floats, expected " + std::to_string(kMnistCnnParams));
  if (x.size() % kImagePixels != 0)
    throw Error(std::string(fn) + ": x has " + std::to_string(x.size()) +
                                " floats, not a multiple of 784");
  const std::size_t B = x.size() / kImagePixels;
  if (B > static_cast<std::size_t>(max_batch))
    throw Error(std::string(fn) + ": batch " + std::to_string(B) + " exceeds max_batch " +
                                std::to_string(max_batch));
  return static_cast<int>(B);
}

int check_step_args(const char* fn, int max_batch, std::span<const float> params, std::span<const float> x,
                    std::span<const std::uint8_t> labels, std::span<float> grad) {
  const int B = check_forward_args(fn, max_batch, params, x);
  if (B == 0) throw Error(std::string(fn) + ": empty batch");
  if (labels.size() != static_cast<std::size_t>(B))
    throw Error(std::string(fn) + ": labels has " + std::to_string(labels.size()) +
                                " values for a batch of " + std::to_string(B));
  if (grad.size() != kMnistCnnParams)
    throw Error(std::string(fn) + ": grad has " + std::to_string(grad.size()) +
                                " floats, expected " + std::to_string(kMnistCnnParams));
  for (std::uint8_t l : labels)
    if (l >= kClasses) throw Error(std::string(fn) + ": label " + std::to_string(l) + " not in 0..9");
  return B;
}

}  // namespace asyncps::nn
