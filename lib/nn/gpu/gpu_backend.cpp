// GPU backend of the MNIST CNN: cuDNN convolutions and max-pooling, cuBLAS for the fc layer, a few
// small kernels (kernels.cu) for biases, softmax cross-entropy and the filter layout changes.
//
// Layouts. Activations are NHWC like the CPU backend and the arena (CUDNN_TENSOR_NHWC), so the
// pool2 output (B,7,7,16) is already the (B,784) fc input in (h,w,c) order. The arena's conv
// filters are HWIO [3,3,I,O]; cuDNN's filter format for NHWC tensors is KRSC [O,3,3,I]
// (cudnnSetFilter4dDescriptor with CUDNN_TENSOR_NHWC). Each step transposes the two filters
// (HWIO seen as a (9*I, O) matrix -> (O, 9*I)) into device scratch, and transposes the two filter
// gradients back (KRSC -> HWIO) into the device gradient arena. fc_w [784,10] row-major is read by
// cuBLAS (column-major) as its transpose, without copies.
//
// Step (all on stream compute_, except the batch upload):
//   host: params -> pinned staging; H2D on compute_; transpose filters to KRSC
//   host: x, labels -> pinned staging; H2D on copy_, event x_ready_; compute_ waits for it, so
//         the batch upload overlaps the params upload and the filter transposes
//   conv1 (cudnnConvolutionForward) + bias (cudnnAddTensor) -> c1 (B,28,28,8); pool -> p1 (B,14,14,8)
//   conv2 + bias -> c2 (B,14,14,16); pool -> p2 (B,7,7,16) = (B,784)
//   fc: sgemm -> logits (B,10) + bias kernel; softmax-xent kernel -> per-sample loss, dlogits
//   backward: sgemm dWf, bias kernel dbf, sgemm dp2; cudnnPoolingBackward -> dc2; bias kernel db2;
//     cudnnConvolutionBackwardFilter dW2 (KRSC); cudnnConvolutionBackwardData dp1; pool backward
//     -> dc1; db1; dW1; transpose dW1, dW2 to HWIO
//   D2H of the gradient arena and the loss (one copy, into pinned staging), synchronize, copy out.
//
// Determinism and precision: convolution algorithms are chosen once per batch size with
// cudnnGet*Algorithm_v7 (heuristics; no benchmarking, so no buffer is clobbered mid-step), taking
// the first one that is CUDNN_DETERMINISTIC, needs no more than the workspace allocated in the
// constructor, and uses plain FP32 FMA math (no TF32 tensor ops, which would miss the CPU backend
// by ~1e-3). Pooling is CUDNN_POOLING_MAX_DETERMINISTIC; every reduction kernel sums in a fixed
// order; cuBLAS runs in CUBLAS_DEFAULT_MATH (FP32, no TF32).
#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "nn/backend_args.h"
#include "nn/gpu/cuda_check.h"
#include "nn/gpu/gpu_backend.h"
#include "nn/gpu/kernels.h"
#include "nn/error.h"

namespace asyncps::nn {
namespace {

using namespace gpu;

// Arena offsets, from the one description (kMnistCnnArena).
constexpr std::size_t kW1 = mnist_cnn_offset(kConv1W), kB1 = mnist_cnn_offset(kConv1B),
                      kW2 = mnist_cnn_offset(kConv2W), kB2 = mnist_cnn_offset(kConv2B),
                      kWf = mnist_cnn_offset(kFcW), kBf = mnist_cnn_offset(kFcB);
constexpr int kC1 = 8, kC2 = 16;                  // conv output channels
constexpr int kS1 = 28 * 28, kS2 = 14 * 14, kS3 = 7 * 7;  // spatial sizes per sample
constexpr int kFcIn = kS3 * kC2;
static_assert(kFcIn == kImagePixels);

// Workspace: chosen algorithms at max_batch may use up to kWorkspaceCap; the buffer is at least
// kWorkspaceFloor so that smaller batches have some room for their own choice.
constexpr std::size_t kWorkspaceCap = std::size_t{256} << 20, kWorkspaceFloor = std::size_t{8} << 20;

struct Algo {
  int algo = 0;  // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  cudnnMathType_t math = CUDNN_FMA_MATH;
  std::size_t workspace = 0;
};
struct LayerAlgos {
  Algo fwd, bwd_data, bwd_filter;
};
struct StepAlgos {
  bool chosen = false;
  LayerAlgos conv1, conv2;  // conv1 has no bwd_data (the image needs no gradient)
};

// The first result that ran, is deterministic, fits in ws_limit and uses FP32 FMA math; failing
// that, the first deterministic one that fits and uses no tensor-op math. Perf is one of the three
// cudnnConvolution*AlgoPerf_t types (same fields).
template <class Perf>
Algo pick_algo(const Perf* perf, int n, std::size_t ws_limit, const char* what, int batch) {
  for (int pass = 0; pass < 2; ++pass)
    for (int i = 0; i < n; ++i) {
      const Perf& p = perf[i];
      if (p.status != CUDNN_STATUS_SUCCESS || p.determinism != CUDNN_DETERMINISTIC || p.memory > ws_limit)
        continue;
      const bool ok = pass == 0 ? p.mathType == CUDNN_FMA_MATH
                                : p.mathType != CUDNN_TENSOR_OP_MATH &&
                                      p.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
      if (ok) return Algo{static_cast<int>(p.algo), p.mathType, p.memory};
    }
  throw Error(std::string("gpu backend: cuDNN offers no deterministic FP32 algorithm for ") +
                           what + " at batch " + std::to_string(batch) + " within a workspace of " +
                           std::to_string(ws_limit) + " bytes");
}

TensorDesc make_tensor_desc() {
  cudnnTensorDescriptor_t d = nullptr;
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&d));
  return TensorDesc(d);
}

void set_nhwc(const TensorDesc& d, int n, int c, int h, int w) {
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, c, h, w));
}

FilterDesc make_krsc_filter(int k, int c) {
  cudnnFilterDescriptor_t d = nullptr;
  CUDNN_CHECK(cudnnCreateFilterDescriptor(&d));
  FilterDesc owned(d);
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, k, c, 3, 3));
  return owned;
}

ConvDesc make_conv_3x3_same() {
  cudnnConvolutionDescriptor_t d = nullptr;
  CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d));
  ConvDesc owned(d);
  // pad 1, stride 1, dilation 1; cross-correlation like TF's conv2d.
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CUDNN_CHECK(cudnnSetConvolutionMathType(d, CUDNN_FMA_MATH));
  return owned;
}

class GpuBackend final : public Backend {
 public:
  GpuBackend(int max_batch, int device) : max_batch_(max_batch), device_(device), algos_(max_batch + 1) {
    CUDA_CHECK(cudaSetDevice(device_));
    {
      cudaStream_t s = nullptr;
      CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      compute_.reset(s);
      CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      copy_.reset(s);
      cudaEvent_t e = nullptr;
      CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      x_ready_.reset(e);
    }
    {
      cudnnHandle_t h = nullptr;
      CUDNN_CHECK(cudnnCreate(&h));
      cudnn_.reset(h);
      CUDNN_CHECK(cudnnSetStream(h, compute_.get()));
      cublasHandle_t b = nullptr;
      CUBLAS_CHECK(cublasCreate(&b));
      cublas_.reset(b);
      CUBLAS_CHECK(cublasSetStream(b, compute_.get()));
      CUBLAS_CHECK(cublasSetMathMode(b, CUBLAS_DEFAULT_MATH));
      CUBLAS_CHECK(cublasSetPointerMode(b, CUBLAS_POINTER_MODE_HOST));
    }
    x_desc_ = make_tensor_desc();
    c1_desc_ = make_tensor_desc();
    p1_desc_ = make_tensor_desc();
    c2_desc_ = make_tensor_desc();
    p2_desc_ = make_tensor_desc();
    b1_desc_ = make_tensor_desc();
    b2_desc_ = make_tensor_desc();
    set_nhwc(b1_desc_, 1, kC1, 1, 1);
    set_nhwc(b2_desc_, 1, kC2, 1, 1);
    w1_desc_ = make_krsc_filter(kC1, 1);
    w2_desc_ = make_krsc_filter(kC2, kC1);
    conv1_ = make_conv_3x3_same();
    conv2_ = make_conv_3x3_same();
    {
      cudnnPoolingDescriptor_t p = nullptr;
      CUDNN_CHECK(cudnnCreatePoolingDescriptor(&p));
      pool_.reset(p);
      // 2x2 stride 2, no padding: TF's SAME padding adds none for the even sizes 28 and 14.
      CUDNN_CHECK(cudnnSetPooling2dDescriptor(p, CUDNN_POOLING_MAX_DETERMINISTIC, CUDNN_NOT_PROPAGATE_NAN, 2, 2,
                                              0, 0, 2, 2));
    }
    set_batch(max_batch_);
    check_output_dims();

    const std::size_t B = static_cast<std::size_t>(max_batch_);
    d_params_ = DeviceArray<float>(kMnistCnnParams);
    d_w1k_ = DeviceArray<float>(kB1 - kW1);
    d_w2k_ = DeviceArray<float>(kB2 - kW2);
    d_dw1k_ = DeviceArray<float>(kB1 - kW1);
    d_dw2k_ = DeviceArray<float>(kB2 - kW2);
    d_grad_loss_ = DeviceArray<float>(kMnistCnnParams + 1);  // gradient arena, then the mean loss
    d_x_ = DeviceArray<float>(B * kImagePixels);
    d_labels_ = DeviceArray<std::uint8_t>(B);
    d_c1_ = DeviceArray<float>(B * kS1 * kC1);
    d_dc1_ = DeviceArray<float>(B * kS1 * kC1);
    d_p1_ = DeviceArray<float>(B * kS2 * kC1);
    d_dp1_ = DeviceArray<float>(B * kS2 * kC1);
    d_c2_ = DeviceArray<float>(B * kS2 * kC2);
    d_dc2_ = DeviceArray<float>(B * kS2 * kC2);
    d_p2_ = DeviceArray<float>(B * kFcIn);
    d_dp2_ = DeviceArray<float>(B * kFcIn);
    d_logits_ = DeviceArray<float>(B * kClasses);
    d_dlogits_ = DeviceArray<float>(B * kClasses);
    d_loss_ = DeviceArray<float>(B);
    d_partial_ = DeviceArray<float>(static_cast<std::size_t>(bias_grad_partial_blocks(static_cast<long>(B) * kS1)) *
                                    kC2);
    h_params_ = PinnedArray<float>(kMnistCnnParams);
    h_x_ = PinnedArray<float>(B * kImagePixels);
    h_labels_ = PinnedArray<std::uint8_t>(B);
    h_out_ = PinnedArray<float>(std::max<std::size_t>(kMnistCnnParams + 1, B * kClasses));

    // Algorithms for max_batch decide the workspace size, allocated once here.
    ws_limit_ = kWorkspaceCap;
    StepAlgos& a = choose_algos(max_batch_);
    std::size_t need = 0;
    for (const Algo* x : {&a.conv1.fwd, &a.conv1.bwd_filter, &a.conv2.fwd, &a.conv2.bwd_data, &a.conv2.bwd_filter})
      need = std::max(need, x->workspace);
    ws_limit_ = std::max(need, kWorkspaceFloor);
    workspace_ = DeviceArray<unsigned char>(ws_limit_);
  }

  ~GpuBackend() override {
    if (compute_) (void)cudaStreamSynchronize(compute_.get());
    if (copy_) (void)cudaStreamSynchronize(copy_.get());
  }

  const char* name() const override { return "gpu"; }
  int max_batch() const override { return max_batch_; }

  float loss_and_grad(std::span<const float> params, std::span<const float> x,
                      std::span<const std::uint8_t> labels, std::span<float> grad) override {
    const int B = check_step_args("loss_and_grad", max_batch_, params, x, labels, grad);

    const StepAlgos& a = prepare(B);
    upload(params, x, labels);
    run_forward(B, a);
    cudaStream_t s = compute_.get();
    float* G = d_grad_loss_.get();
    CUDA_CHECK(launch_softmax_xent(d_logits_.get(), d_labels_.get(), B, d_dlogits_.get(), d_loss_.get(), s));
    CUDA_CHECK(launch_mean(d_loss_.get(), B, G + kMnistCnnParams, s));
    run_backward(B, a);
    CUDA_CHECK(cudaMemcpyAsync(h_out_.get(), G, (kMnistCnnParams + 1) * sizeof(float), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    std::memcpy(grad.data(), h_out_.get(), kMnistCnnParams * sizeof(float));
    return h_out_.get()[kMnistCnnParams];
  }

  void forward(std::span<const float> params, std::span<const float> x, std::span<float> logits) override {
    const int B = check_forward_args("forward", max_batch_, params, x);
    if (logits.size() != static_cast<std::size_t>(B) * kClasses)
      throw Error("forward: logits has " + std::to_string(logits.size()) +
                                  " floats, expected " + std::to_string(B * kClasses));
    if (B == 0) return;
    const StepAlgos& a = prepare(B);
    upload(params, x, {});
    run_forward(B, a);
    cudaStream_t s = compute_.get();
    CUDA_CHECK(cudaMemcpyAsync(h_out_.get(), d_logits_.get(), logits.size_bytes(), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    std::memcpy(logits.data(), h_out_.get(), logits.size_bytes());
  }

 private:

  // Makes device_ current, sets the tensor descriptors to batch B, returns B's algorithms.
  const StepAlgos& prepare(int B) {
    CUDA_CHECK(cudaSetDevice(device_));
    set_batch(B);
    return algos_[B].chosen ? algos_[B] : choose_algos(B);
  }

  void set_batch(int B) {
    if (B == batch_) return;
    set_nhwc(x_desc_, B, 1, 28, 28);
    set_nhwc(c1_desc_, B, kC1, 28, 28);
    set_nhwc(p1_desc_, B, kC1, 14, 14);
    set_nhwc(c2_desc_, B, kC2, 14, 14);
    set_nhwc(p2_desc_, B, kC2, 7, 7);
    batch_ = B;
  }

  void check_output_dims() const {
    std::array<int, 4> d1{}, d2{}, q1{}, q2{};
    CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv1_.get(), x_desc_.get(), w1_desc_.get(), &d1[0], &d1[1],
                                                      &d1[2], &d1[3]));
    CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv2_.get(), p1_desc_.get(), w2_desc_.get(), &d2[0], &d2[1],
                                                      &d2[2], &d2[3]));
    CUDNN_CHECK(cudnnGetPooling2dForwardOutputDim(pool_.get(), c1_desc_.get(), &q1[0], &q1[1], &q1[2], &q1[3]));
    CUDNN_CHECK(cudnnGetPooling2dForwardOutputDim(pool_.get(), c2_desc_.get(), &q2[0], &q2[1], &q2[2], &q2[3]));
    const int B = max_batch_;
    if (d1 != std::array{B, kC1, 28, 28} || d2 != std::array{B, kC2, 14, 14} || q1 != std::array{B, kC1, 14, 14} ||
        q2 != std::array{B, kC2, 7, 7})
      throw Error("gpu backend: cuDNN output shapes differ from the model's");
  }

  // Chooses (once) the algorithms of batch B; the tensor descriptors must be set to B.
  StepAlgos& choose_algos(int B) {
    constexpr int kMax = 16;  // more than the number of algorithms of each kind
    int n = 0;
    StepAlgos& a = algos_[B];
    {
      cudnnConvolutionFwdAlgoPerf_t perf[kMax];
      CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_.get(), x_desc_.get(), w1_desc_.get(), conv1_.get(),
                                                         c1_desc_.get(), kMax, &n, perf));
      a.conv1.fwd = pick_algo(perf, n, ws_limit_, "conv1 forward", B);
      CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_.get(), p1_desc_.get(), w2_desc_.get(), conv2_.get(),
                                                         c2_desc_.get(), kMax, &n, perf));
      a.conv2.fwd = pick_algo(perf, n, ws_limit_, "conv2 forward", B);
    }
    {
      cudnnConvolutionBwdDataAlgoPerf_t perf[kMax];
      CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_.get(), w2_desc_.get(), c2_desc_.get(),
                                                              conv2_.get(), p1_desc_.get(), kMax, &n, perf));
      a.conv2.bwd_data = pick_algo(perf, n, ws_limit_, "conv2 backward data", B);
    }
    {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[kMax];
      CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnn_.get(), x_desc_.get(), c1_desc_.get(),
                                                                conv1_.get(), w1_desc_.get(), kMax, &n, perf));
      a.conv1.bwd_filter = pick_algo(perf, n, ws_limit_, "conv1 backward filter", B);
      CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnn_.get(), p1_desc_.get(), c2_desc_.get(),
                                                                conv2_.get(), w2_desc_.get(), kMax, &n, perf));
      a.conv2.bwd_filter = pick_algo(perf, n, ws_limit_, "conv2 backward filter", B);
    }
    a.chosen = true;
    return a;
  }

  // params -> device (compute_) and filters -> KRSC; x (and labels) -> device on copy_, which
  // compute_ waits for before the first convolution.
  void upload(std::span<const float> params, std::span<const float> x, std::span<const std::uint8_t> labels) {
    cudaStream_t s = compute_.get(), c = copy_.get();
    std::memcpy(h_params_.get(), params.data(), params.size_bytes());
    CUDA_CHECK(cudaMemcpyAsync(d_params_.get(), h_params_.get(), params.size_bytes(), cudaMemcpyHostToDevice, s));
    const float* P = d_params_.get();
    CUDA_CHECK(launch_transpose(P + kW1, d_w1k_.get(), 9 * 1, kC1, s));    // HWIO (9,8) -> KRSC (8,9)
    CUDA_CHECK(launch_transpose(P + kW2, d_w2k_.get(), 9 * kC1, kC2, s));  // HWIO (72,16) -> KRSC (16,72)
    // The host copies below run while the GPU uploads and transposes the parameters.
    std::memcpy(h_x_.get(), x.data(), x.size_bytes());
    CUDA_CHECK(cudaMemcpyAsync(d_x_.get(), h_x_.get(), x.size_bytes(), cudaMemcpyHostToDevice, c));
    if (!labels.empty()) {
      std::memcpy(h_labels_.get(), labels.data(), labels.size_bytes());
      CUDA_CHECK(cudaMemcpyAsync(d_labels_.get(), h_labels_.get(), labels.size_bytes(), cudaMemcpyHostToDevice, c));
    }
    CUDA_CHECK(cudaEventRecord(x_ready_.get(), c));
    CUDA_CHECK(cudaStreamWaitEvent(s, x_ready_.get(), 0));
  }

  void conv_forward(const TensorDesc& xd, const float* x, const FilterDesc& wd, const float* w, const ConvDesc& cd,
                    const Algo& al, const TensorDesc& bd, const float* bias, const TensorDesc& yd, float* y) {
    const float one = 1.0f, zero = 0.0f;
    CUDNN_CHECK(cudnnSetConvolutionMathType(cd.get(), al.math));
    CUDNN_CHECK(cudnnConvolutionForward(cudnn_.get(), &one, xd.get(), x, wd.get(), w, cd.get(),
                                        static_cast<cudnnConvolutionFwdAlgo_t>(al.algo), workspace_.get(),
                                        workspace_.bytes(), &zero, yd.get(), y));
    CUDNN_CHECK(cudnnAddTensor(cudnn_.get(), &one, bd.get(), bias, &one, yd.get(), y));
  }

  void pool_forward(const TensorDesc& xd, const float* x, const TensorDesc& yd, float* y) {
    const float one = 1.0f, zero = 0.0f;
    CUDNN_CHECK(cudnnPoolingForward(cudnn_.get(), pool_.get(), &one, xd.get(), x, &zero, yd.get(), y));
  }

  // d_x_ (B,784) -> d_logits_ (B,10), keeping c1, p1, c2, p2 for the backward pass.
  void run_forward(int B, const StepAlgos& a) {
    const float* P = d_params_.get();
    conv_forward(x_desc_, d_x_.get(), w1_desc_, d_w1k_.get(), conv1_, a.conv1.fwd, b1_desc_, P + kB1, c1_desc_,
                 d_c1_.get());
    pool_forward(c1_desc_, d_c1_.get(), p1_desc_, d_p1_.get());
    conv_forward(p1_desc_, d_p1_.get(), w2_desc_, d_w2k_.get(), conv2_, a.conv2.fwd, b2_desc_, P + kB2, c2_desc_,
                 d_c2_.get());
    pool_forward(c2_desc_, d_c2_.get(), p2_desc_, d_p2_.get());
    // logits (B,10) = p2 (B,784) . Wf (784,10): column-major logits^T (10,B) = Wf^T (10,784) . p2^T (784,B)
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, kClasses, B, kFcIn, &one, P + kWf, kClasses,
                             d_p2_.get(), kFcIn, &zero, d_logits_.get(), kClasses));
    CUDA_CHECK(launch_add_row_bias(d_logits_.get(), P + kBf, B, kClasses, compute_.get()));
  }

  // From d_dlogits_ (B,10) to the whole gradient arena (filters transposed back to HWIO).
  void run_backward(int B, const StepAlgos& a) {
    const float one = 1.0f, zero = 0.0f;
    cudaStream_t s = compute_.get();
    const float* P = d_params_.get();
    float* G = d_grad_loss_.get();
    // fc. dWf (784,10) = p2^T . dlogits: column-major dWf^T (10,784) = dlogits^T (10,B) . p2 (B,784)
    CUBLAS_CHECK(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, kClasses, kFcIn, B, &one, d_dlogits_.get(),
                             kClasses, d_p2_.get(), kFcIn, &zero, G + kWf, kClasses));
    CUDA_CHECK(launch_bias_grad(d_dlogits_.get(), B, kClasses, d_partial_.get(), G + kBf, s));
    // dp2 (B,784) = dlogits . Wf^T: column-major dp2^T (784,B) = Wf (784,10) . dlogits^T (10,B)
    CUBLAS_CHECK(cublasSgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, kFcIn, B, kClasses, &one, P + kWf, kClasses,
                             d_dlogits_.get(), kClasses, &zero, d_dp2_.get(), kFcIn));
    // pool2, conv2
    CUDNN_CHECK(cudnnPoolingBackward(cudnn_.get(), pool_.get(), &one, p2_desc_.get(), d_p2_.get(), p2_desc_.get(),
                                     d_dp2_.get(), c2_desc_.get(), d_c2_.get(), &zero, c2_desc_.get(), d_dc2_.get()));
    CUDA_CHECK(launch_bias_grad(d_dc2_.get(), static_cast<long>(B) * kS2, kC2, d_partial_.get(), G + kB2, s));
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv2_.get(), a.conv2.bwd_filter.math));
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        cudnn_.get(), &one, p1_desc_.get(), d_p1_.get(), c2_desc_.get(), d_dc2_.get(), conv2_.get(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.conv2.bwd_filter.algo), workspace_.get(), workspace_.bytes(),
        &zero, w2_desc_.get(), d_dw2k_.get()));
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv2_.get(), a.conv2.bwd_data.math));
    CUDNN_CHECK(cudnnConvolutionBackwardData(
        cudnn_.get(), &one, w2_desc_.get(), d_w2k_.get(), c2_desc_.get(), d_dc2_.get(), conv2_.get(),
        static_cast<cudnnConvolutionBwdDataAlgo_t>(a.conv2.bwd_data.algo), workspace_.get(), workspace_.bytes(),
        &zero, p1_desc_.get(), d_dp1_.get()));
    // pool1, conv1 (no gradient for the image)
    CUDNN_CHECK(cudnnPoolingBackward(cudnn_.get(), pool_.get(), &one, p1_desc_.get(), d_p1_.get(), p1_desc_.get(),
                                     d_dp1_.get(), c1_desc_.get(), d_c1_.get(), &zero, c1_desc_.get(), d_dc1_.get()));
    CUDA_CHECK(launch_bias_grad(d_dc1_.get(), static_cast<long>(B) * kS1, kC1, d_partial_.get(), G + kB1, s));
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv1_.get(), a.conv1.bwd_filter.math));
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        cudnn_.get(), &one, x_desc_.get(), d_x_.get(), c1_desc_.get(), d_dc1_.get(), conv1_.get(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.conv1.bwd_filter.algo), workspace_.get(), workspace_.bytes(),
        &zero, w1_desc_.get(), d_dw1k_.get()));
    // KRSC -> HWIO
    CUDA_CHECK(launch_transpose(d_dw1k_.get(), G + kW1, kC1, 9 * 1, s));
    CUDA_CHECK(launch_transpose(d_dw2k_.get(), G + kW2, kC2, 9 * kC1, s));
  }

  int max_batch_, device_;
  int batch_ = -1;  // the batch the tensor descriptors are set to
  std::vector<StepAlgos> algos_;  // indexed by batch size
  std::size_t ws_limit_ = 0;
  // Declared first, destroyed last: streams, event, library handles.
  Stream compute_, copy_;
  Event x_ready_;
  CudnnHandle cudnn_;
  CublasHandle cublas_;
  TensorDesc x_desc_, c1_desc_, p1_desc_, c2_desc_, p2_desc_, b1_desc_, b2_desc_;
  FilterDesc w1_desc_, w2_desc_;  // KRSC
  ConvDesc conv1_, conv2_;
  PoolDesc pool_;
  DeviceArray<unsigned char> workspace_;
  DeviceArray<float> d_params_, d_w1k_, d_w2k_, d_dw1k_, d_dw2k_, d_grad_loss_, d_x_;
  DeviceArray<std::uint8_t> d_labels_;
  DeviceArray<float> d_c1_, d_dc1_, d_p1_, d_dp1_, d_c2_, d_dc2_, d_p2_, d_dp2_, d_logits_, d_dlogits_, d_loss_,
      d_partial_;
  PinnedArray<float> h_params_, h_x_, h_out_;
  PinnedArray<std::uint8_t> h_labels_;
};

}  // namespace

bool gpu_backend_built() noexcept { return true; }

int gpu_device_count() noexcept {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  return n;
}

std::unique_ptr<Backend> make_gpu_backend(int max_batch, int device) {
  if (max_batch <= 0)
    throw Error("make_gpu_backend: max_batch must be positive, got " + std::to_string(max_batch));
  const int n = gpu_device_count();
  if (n == 0) throw Error("make_gpu_backend: no CUDA device is visible");
  if (device < 0 || device >= n)
    throw Error("make_gpu_backend: device " + std::to_string(device) + " not in 0.." +
                                std::to_string(n - 1));
  return std::make_unique<GpuBackend>(max_batch, device);
}

}  // namespace asyncps::nn
