// Single-threaded CPU backend of the MNIST CNN. All scratch is sized by max_batch in the
// constructor; loss_and_grad / forward allocate nothing.
//
// Step (per sample for the conv part, so the conv outputs stay in L1):
//   x (28,28,1) -conv1-> c1 (28,28,8) -pool-> p1 (14,14,8), idx1
//   p1          -conv2-> c2 (14,14,16) -pool-> p2 (7,7,16) = (784), idx2
//   p2 (B,784)  -fc-> logits (B,10) -softmax xent-> loss, dlogits
// Backward: fc -> dp2 (B,784); conv2+pool2 fused (sparse at idx2) -> dw2, db2, dp1 (B,14,14,8);
//           conv1+pool1 fused (sparse at idx1) -> dw1, db1 (no input gradient needed).
#include <stdexcept>
#include <string>
#include <vector>

#include "nn/backend_args.h"
#include "nn/conv3x3.h"
#include "nn/dense.h"
#include "nn/maxpool.h"
#include "nn/mnist_cnn.h"
#include "nn/softmax_xent.h"
#include "nn/error.h"

namespace asyncps::nn {
namespace {

// Arena offsets, from the one description (kMnistCnnArena).
constexpr std::size_t kW1 = mnist_cnn_offset(kConv1W), kB1 = mnist_cnn_offset(kConv1B),
                      kW2 = mnist_cnn_offset(kConv2W), kB2 = mnist_cnn_offset(kConv2B),
                      kWf = mnist_cnn_offset(kFcW), kBf = mnist_cnn_offset(kFcB);

constexpr Conv3x3Dims kConv1{1, 28, 28, 1, 8};   // per sample
constexpr Conv3x3Dims kConv2{1, 14, 14, 8, 16};  // per sample
constexpr Pool2x2Dims kPool1{1, 28, 28, 8};
constexpr Pool2x2Dims kPool2{1, 14, 14, 16};
constexpr int kP1 = 14 * 14 * 8, kP2 = 7 * 7 * 16;  // pooled sizes per sample
static_assert(kP2 == kImagePixels);

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int max_batch)
      : max_batch_(max_batch),
        c1_(28 * 28 * 8),
        c2_(14 * 14 * 16),
        p1_(static_cast<std::size_t>(max_batch) * kP1),
        idx1_(p1_.size()),
        dp1_(p1_.size()),
        p2_(static_cast<std::size_t>(max_batch) * kP2),
        idx2_(p2_.size()),
        dp2_(p2_.size()),
        logits_(static_cast<std::size_t>(max_batch) * kClasses),
        probs_(logits_.size()),
        dlogits_(logits_.size()) {}

  const char* name() const override { return "cpu"; }
  int max_batch() const override { return max_batch_; }

  float loss_and_grad(std::span<const float> params, std::span<const float> x,
                      std::span<const std::uint8_t> labels, std::span<float> grad) override {
    const int B = check_step_args("loss_and_grad", max_batch_, params, x, labels, grad);

    const float* P = params.data();
    float* G = grad.data();
    run_forward(P, x.data(), B, logits_.data());  // logits (B,10)
    const float loss = softmax_xent_forward(logits_.data(), labels.data(), probs_.data(), B, kClasses);
    softmax_xent_backward(probs_.data(), labels.data(), dlogits_.data(), B, kClasses);  // (B,10)
    // fc: dWf (784,10), dbf (10), dp2 (B,784)
    dense_backward(p2_.data(), P + kWf, dlogits_.data(), G + kWf, G + kBf, dp2_.data(),
                   DenseDims{B, kP2, kClasses});
    // conv2 + pool2: dW2 (3,3,8,16), db2 (16), dp1 (B,14,14,8)
    Conv3x3Dims d2 = kConv2;
    d2.B = B;
    conv3x3_backward_pooled(p1_.data(), P + kW2, idx2_.data(), dp2_.data(), 7, 7, G + kW2,
                            G + kB2, dp1_.data(), d2);
    // conv1 + pool1: dW1 (3,3,1,8), db1 (8); the input needs no gradient
    Conv3x3Dims d1 = kConv1;
    d1.B = B;
    conv3x3_backward_pooled(x.data(), P + kW1, idx1_.data(), dp1_.data(), 14, 14, G + kW1,
                            G + kB1, nullptr, d1);
    return loss;
  }

  void forward(std::span<const float> params, std::span<const float> x,
               std::span<float> logits) override {
    const int B = check_forward_args("forward", max_batch_, params, x);
    if (logits.size() != static_cast<std::size_t>(B) * kClasses)
      throw Error("forward: logits has " + std::to_string(logits.size()) +
                                  " floats, expected " + std::to_string(B * kClasses));
    if (B > 0) run_forward(params.data(), x.data(), B, logits.data());
  }

 private:

  // Fills p1_, idx1_, p2_, idx2_ for the batch and writes logits (B,10).
  void run_forward(const float* P, const float* x, int B, float* logits) {
    for (int b = 0; b < B; ++b) {
      conv3x3_forward(x + static_cast<long>(b) * kImagePixels, P + kW1, P + kB1, c1_.data(),
                      kConv1);  // c1 is (28,28,8)
      maxpool2x2_forward(c1_.data(), p1_.data() + static_cast<long>(b) * kP1,
                         idx1_.data() + static_cast<long>(b) * kP1, kPool1);  // p1[b] is (14,14,8)
      conv3x3_forward(p1_.data() + static_cast<long>(b) * kP1, P + kW2, P + kB2, c2_.data(),
                      kConv2);  // c2 is (14,14,16)
      maxpool2x2_forward(c2_.data(), p2_.data() + static_cast<long>(b) * kP2,
                         idx2_.data() + static_cast<long>(b) * kP2, kPool2);  // p2[b] is (7,7,16)
    }
    dense_forward(p2_.data(), P + kWf, P + kBf, logits, DenseDims{B, kP2, kClasses});  // (B,10)
  }

  int max_batch_;
  std::vector<float> c1_, c2_;          // per-sample conv outputs
  std::vector<float> p1_;               // (B,14,14,8) pool1 output = conv2 input
  std::vector<std::int32_t> idx1_;      // (B,14,14,8) pool1 argmax into c1
  std::vector<float> dp1_;              // (B,14,14,8)
  std::vector<float> p2_;               // (B,784) pool2 output = fc input
  std::vector<std::int32_t> idx2_;      // (B,7,7,16) pool2 argmax into c2
  std::vector<float> dp2_;              // (B,784)
  std::vector<float> logits_, probs_, dlogits_;  // (B,10)
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int max_batch) {
  if (max_batch <= 0)
    throw Error("make_cpu_backend: max_batch must be positive, got " +
                                std::to_string(max_batch));
  return std::make_unique<CpuBackend>(max_batch);
}

}  // namespace asyncps::nn
