// Glorot/Xavier uniform initialisation (TF1 xavier_initializer), deterministic across platforms.
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

#include "nn/mnist_cnn.h"
#include "nn/error.h"

namespace asyncps::nn {

void glorot_uniform_init(std::span<float> params, std::uint64_t seed) {
  if (params.size() != kMnistCnnParams)
    throw Error("glorot_uniform_init: params has " +
                                std::to_string(params.size()) + " floats, expected " +
                                std::to_string(kMnistCnnParams));
  std::mt19937_64 rng(seed);
  std::size_t off = 0;
  for (const TensorSpec& t : mnist_cnn_tensors()) {
    double fan_in, fan_out;
    if (t.dims.size() == 4) {  // conv HWIO [kh,kw,in,out]
      const double rf = static_cast<double>(t.dims[0]) * t.dims[1];  // receptive field
      fan_in = rf * t.dims[2];
      fan_out = rf * t.dims[3];
    } else if (t.dims.size() == 2) {  // fc [in,out]
      fan_in = t.dims[0];
      fan_out = t.dims[1];
    } else {  // 1-D (bias): fan_in = fan_out = n
      fan_in = fan_out = static_cast<double>(t.size());
    }
    const double limit = std::sqrt(6.0 / (fan_in + fan_out));  // limit = sqrt(6/(fan_in+fan_out))
    for (std::size_t i = 0; i < t.size(); ++i) {
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // u ~ U[0,1), 53 bits
      params[off + i] = static_cast<float>((2.0 * u - 1.0) * limit);  // v ~ U[-limit, limit)
    }
    off += t.size();
  }
}

}  // namespace asyncps::nn
