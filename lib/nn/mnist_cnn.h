// Public interface of the MNIST CNN model (TF1 tutorial network, NHWC like TensorFlow).
//
//   x (B,28,28,1) -> conv_1 3x3 1->8 SAME +b -> maxpool 2x2/2 -> (B,14,14,8)
//                 -> conv_2 3x3 8->16 SAME +b -> maxpool 2x2/2 -> (B,7,7,16)
//                 -> flatten (h,w,c) 784 -> fc 784->10 +b -> logits (B,10)
//   loss = mean softmax cross-entropy.
//
// All parameters live in ONE flat float arena of kMnistCnnParams floats, in the order of
// mnist_cnn_tensors(): conv1_w [3,3,1,8] (HWIO), conv1_b [8], conv2_w [3,3,8,16], conv2_b [16],
// fc_w [784,10], fc_b [10].
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include "nn/error.h"

namespace asyncps::nn {

struct TensorSpec {
  std::string name;
  std::vector<int> dims;
  std::size_t size() const;  // product of dims
};

// The one description of the CNN's arena: its tensors in arena order, each with its shape;
// every offset (the backends', the layout's, the initialiser's) is computed from it.
enum MnistCnnTensor : int { kConv1W, kConv1B, kConv2W, kConv2B, kFcW, kFcB, kMnistCnnTensors };
struct ArenaTensor {
  const char* name;
  int dims[4];
  int rank;
  constexpr std::size_t size() const {
    std::size_t n = 1;
    for (int i = 0; i < rank; ++i) n *= static_cast<std::size_t>(dims[i]);
    return n;
  }
};
inline constexpr ArenaTensor kMnistCnnArena[kMnistCnnTensors] = {
    {"conv1_w", {3, 3, 1, 8}, 4},  // HWIO
    {"conv1_b", {8}, 1},
    {"conv2_w", {3, 3, 8, 16}, 4},  // HWIO
    {"conv2_b", {16}, 1},
    {"fc_w", {784, 10}, 2},
    {"fc_b", {10}, 1},
};
// Where tensor `t` starts in the arena (floats); mnist_cnn_offset(kMnistCnnTensors): the size.
constexpr std::size_t mnist_cnn_offset(int t) {
  std::size_t off = 0;
  for (int i = 0; i < t; ++i) off += kMnistCnnArena[i].size();
  return off;
}

// The same tensors as TensorSpecs (names and shapes), in arena order.
const std::vector<TensorSpec>& mnist_cnn_tensors();

inline constexpr std::size_t kMnistCnnParams = mnist_cnn_offset(kMnistCnnTensors);
static_assert(kMnistCnnParams == 9098);
inline constexpr int kImagePixels = 784, kClasses = 10;

// Glorot/Xavier uniform, exactly TF1's xavier_initializer: limit = sqrt(6/(fan_in+fan_out)).
// Conv HWIO [kh,kw,in,out]: fan_in = kh*kw*in, fan_out = kh*kw*out. fc [in,out]: fan_in=in,
// fan_out=out. Biases are initialised with Xavier too: a 1-D tensor of length n has
// fan_in = fan_out = n. Deterministic given seed on every platform (std::mt19937_64 and an
// explicit 53-bit uniform mapping). params.size() must be kMnistCnnParams.
void glorot_uniform_init(std::span<float> params, std::uint64_t seed);

class Backend {  // one model instance; not thread-safe; holds all scratch buffers
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual int max_batch() const = 0;
  // x: (B,784) row-major, labels: B values 0..9, params/grad: kMnistCnnParams floats.
  // Writes d(mean loss)/d(params) into grad (overwrites), returns the mean loss.
  // Throws nn::Error on wrong sizes, B == 0, B > max_batch() or a label > 9.
  virtual float loss_and_grad(std::span<const float> params, std::span<const float> x,
                              std::span<const std::uint8_t> labels, std::span<float> grad) = 0;
  // logits (B,10) for B = x.size()/784 <= max_batch(). Throws nn::Error on wrong sizes.
  virtual void forward(std::span<const float> params, std::span<const float> x,
                       std::span<float> logits) = 0;

  // A training set the steps of loss_and_grad_rows name their batch from: images (n,784),
  // labels n (0..9), n >= 1; replaces an earlier one. The GPU backend copies it to the device
  // once (as bytes when every pixel is byte/255, as load_mnist reads them; else as floats), so
  // that a step moves only the parameters in, the row list in and the gradient out. This base
  // version keeps views: the spans must then outlive the backend (or the next set_dataset).
  // Throws nn::Error on wrong sizes or a label > 9.
  virtual void set_dataset(std::span<const float> images, std::span<const std::uint8_t> labels);
  // loss_and_grad on the batch of the dataset's rows (B = rows.size(), 1 <= B <= max_batch(),
  // each row in [0, n)); the same result as loss_and_grad on those images and labels.
  // Throws nn::Error without a dataset, on an empty or oversized batch or a row out of range.
  virtual float loss_and_grad_rows(std::span<const float> params, std::span<const std::int32_t> rows,
                                   std::span<float> grad);
  // A function the backend calls on the calling thread while a loss_and_grad* step runs: a GPU
  // backend again and again while the device computes (it polls the device between calls). The
  // CPU backend computes on the calling thread and never calls it: receiving what is in flight
  // would be work for that same thread (measured: no gain). A worker gives it its transport's
  // progress, so that operations in flight (a prefetched pull, the last push) move during the
  // compute: backend.set_while_computing([&] { client.progress(); }). Empty (the default):
  // nothing is called. An exception from it leaves the call once the device has finished the
  // step; the gradient is then unspecified.
  void set_while_computing(std::function<void()> fn) { while_computing_ = std::move(fn); }

  // The backend's own host buffers for a step's parameters and its gradient (kMnistCnnParams
  // floats each, zeroed, valid as long as the backend). A call given these very spans copies
  // nothing on the host: on a GPU they are page-locked, and the device reads the parameters from
  // step_params() and writes the gradient into step_grad() directly; any other span goes through
  // staging buffers of the backend's own. The backend never writes step_params(), and writes
  // step_grad() only as the gradient of a call given it. The caller must leave both alone while
  // a call that was given them runs.
  virtual std::span<float> step_params();
  virtual std::span<float> step_grad();

  // Seconds the device spent on the last loss_and_grad* (its own clock: CUDA events around the
  // step, uploads and downloads included), or a negative value where the backend has none (CPU).
  virtual double last_step_device_seconds() const { return -1.0; }

 protected:
  // Calls the set_while_computing function, if any.
  void while_computing() const {
    if (while_computing_) while_computing_();
  }
  bool has_while_computing() const noexcept { return static_cast<bool>(while_computing_); }

  // The dataset of set_dataset, for backends that gather on the host (this base version).
  std::span<const float> data_images_;
  std::span<const std::uint8_t> data_labels_;
  std::vector<float> rows_x_;
  std::vector<std::uint8_t> rows_y_;

 private:
  std::vector<float> own_params_, own_grad_;  // this base version's step_params(), step_grad()
  std::function<void()> while_computing_;
};

// The checks of set_dataset and loss_and_grad_rows, shared by every backend: the dataset's size n
// (from images and labels), and the batch B of rows (each in [0, n)).
std::size_t check_dataset(std::span<const float> images, std::span<const std::uint8_t> labels);
int check_rows(const char* fn, int max_batch, std::size_t n, std::span<const std::int32_t> rows);

// Single-threaded CPU backend; all scratch is allocated here, none in the step.
std::unique_ptr<Backend> make_cpu_backend(int max_batch);

// Counts correct argmax predictions over n images, evaluating in chunks of backend.max_batch().
// images: (n,784), labels: n.
std::size_t count_correct(Backend& backend, std::span<const float> params,
                          std::span<const float> images, std::span<const std::uint8_t> labels);

}  // namespace asyncps::nn
