// GPU backend of the MNIST CNN. Two kernel sets behind one step (GpuOptions::kernels):
//   fused  the project's kernels (fused_kernels.cu, arithmetic in fused_math.h): conv+bias+pool in
//          one pass per layer, fc, softmax cross-entropy, the backward passes through the pooling
//          argmax (the conv gradients dc1, dc2 are never stored) and the weight gradients as
//          chunked partial sums reduced in a fixed order: 8 kernels a step, no library calls.
//   cudnn  cuDNN convolutions and max-pooling, cuBLAS for the fc layer, small kernels
//          (kernels.cu) for biases, softmax cross-entropy and the filter layout changes. Its
//          filters: the arena's HWIO [3,3,I,O] transposed to cuDNN's KRSC [O,3,3,I] each step and
//          the filter gradients back; fc_w [784,10] row-major is read by cuBLAS (column-major) as
//          its transpose, without copies.
// Activations are NHWC like the CPU backend and the arena.
//
// A step: params -> device, from the caller's step_params() as they are (page-locked) or from
// pinned staging they were copied into; the batch -> device (the images and labels, or with a
// resident dataset only the row list: set_dataset uploaded the images once); forward, backward;
// the gradient arena and the mean loss (one buffer) -> step_grad()'s buffer (the loss in a slot
// past its end) or pinned staging; one synchronisation. It runs on one stream, except that with
// GpuOptions::fused_branches the fused step forks a second stream for conv2's and fc's weight
// gradients, which also reduces and downloads their elements, and joins it back at the end
// (launch_fused_step). With GpuOptions::graph the step of each (batch size, batch source, host
// buffers) is captured once as a CUDA graph (the fork a branch of it) and replayed: one launch
// a step. Nothing is allocated in a step.
//
// Determinism and precision: every sum runs in a fixed order (no atomics), so a step gives
// bit-identical results run to run. cudnn: convolution algorithms are chosen once per batch size
// with cudnnGet*Algorithm_v7 (heuristics; no benchmarking, so no buffer is clobbered mid-step),
// taking the first one that is CUDNN_DETERMINISTIC, needs no more than the workspace allocated in
// the constructor, and uses plain FP32 FMA math (no TF32, which would miss the CPU backend by ~1e-3);
// pooling is CUDNN_POOLING_MAX_DETERMINISTIC; cuBLAS runs in CUBLAS_DEFAULT_MATH (FP32).
#include <algorithm>
#include <cmath>
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "nn/backend_args.h"
#include "nn/gpu/cuda_check.h"
#include "nn/gpu/gpu_backend.h"
#include "nn/gpu/fused_kernels.h"
#include "nn/gpu/fused_math.h"
#include "nn/gpu/kernels.h"
#include "nn/error.h"

namespace asyncps::nn {
namespace {

using namespace gpu;

// Arena offsets, from the one description (kMnistCnnArena).
constexpr std::size_t kW1 = mnist_cnn_offset(kConv1W), kB1 = mnist_cnn_offset(kConv1B),
                      kW2 = mnist_cnn_offset(kConv2W), kB2 = mnist_cnn_offset(kConv2B),
                      kWf = mnist_cnn_offset(kFcW), kBf = mnist_cnn_offset(kFcB);
static_assert(fused::kW1 == kW1 && fused::kB1 == kB1 && fused::kW2 == kW2 && fused::kB2 == kB2 &&
              fused::kWf == kWf && fused::kBf == kBf && fused::kParams == kMnistCnnParams);
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
  GpuBackend(int max_batch, int device, GpuOptions options)
      : max_batch_(max_batch), device_(device), options_(options), algos_(max_batch + 1) {
    CUDA_CHECK(cudaSetDevice(device_));
    {
      cudaStream_t s = nullptr;
      CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      compute_.reset(s);
      cudaEvent_t e = nullptr;
      CUDA_CHECK(cudaEventCreate(&e));
      step_begin_.reset(e);
      CUDA_CHECK(cudaEventCreate(&e));
      step_end_.reset(e);
      if (options_.kernels == GpuKernels::fused && options_.fused_branches) {
        CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        side_.reset(s);
        CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        fork_.reset(e);
        CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        join_.reset(e);
      }
    }
    for (auto& by_source : graphs_)
      for (auto& g : by_source) g.resize(static_cast<std::size_t>(max_batch_) + 1);
    const std::size_t B = static_cast<std::size_t>(max_batch_);
    d_params_ = DeviceArray<float>(kMnistCnnParams);
    d_grad_loss_ = DeviceArray<float>(kMnistCnnParams + 1);  // gradient arena, then the mean loss
    d_x_ = DeviceArray<float>(B * kImagePixels);
    d_labels_ = DeviceArray<std::uint8_t>(B);
    d_rows_ = DeviceArray<std::int32_t>(B);
    d_iota_ = DeviceArray<std::int32_t>(B);
    CUDA_CHECK(launch_iota(d_iota_.get(), max_batch_, compute_.get()));
    h_params_ = PinnedArray<float>(kMnistCnnParams);
    h_x_ = PinnedArray<float>(B * kImagePixels);
    h_labels_ = PinnedArray<std::uint8_t>(B);
    h_rows_ = PinnedArray<std::int32_t>(B);
    h_out_ = PinnedArray<float>(std::max<std::size_t>(kMnistCnnParams + 1, B * kClasses));
    h_own_params_ = PinnedArray<float>(kMnistCnnParams);
    h_own_grad_ = PinnedArray<float>(kMnistCnnParams + 1);  // the gradient, then the mean loss
    std::fill_n(h_own_params_.get(), kMnistCnnParams, 0.0f);
    std::fill_n(h_own_grad_.get(), kMnistCnnParams + 1, 0.0f);
    if (options_.kernels == GpuKernels::fused) {
      d_xg_ = DeviceArray<float>(B * kImagePixels);
      d_p1_ = DeviceArray<float>(B * fused::kP1);
      d_dp1_ = DeviceArray<float>(B * fused::kP1);
      d_a1_ = DeviceArray<std::uint8_t>(B * fused::kP1);
      d_p2_ = DeviceArray<float>(B * fused::kP2);
      d_dp2_ = DeviceArray<float>(B * fused::kP2);
      d_a2_ = DeviceArray<std::uint8_t>(B * fused::kP2);
      d_logits_ = DeviceArray<float>(B * kClasses);
      d_dlogits_ = DeviceArray<float>(B * kClasses);
      d_loss_ = DeviceArray<float>(B);
      d_partial_ = DeviceArray<float>(static_cast<std::size_t>(fused::partial_floats(max_batch_)));
    } else {
      init_cudnn();
    }
    CUDA_CHECK(cudaStreamSynchronize(compute_.get()));
  }

  ~GpuBackend() override { sync_streams(); }

  const char* name() const override { return options_.kernels == GpuKernels::fused ? "gpu" : "gpu-cudnn"; }
  int max_batch() const override { return max_batch_; }
  double last_step_device_seconds() const override { return last_step_seconds_; }
  std::span<float> step_params() override { return {h_own_params_.get(), kMnistCnnParams}; }
  std::span<float> step_grad() override { return {h_own_grad_.get(), kMnistCnnParams}; }

  float loss_and_grad(std::span<const float> params, std::span<const float> x,
                      std::span<const std::uint8_t> labels, std::span<float> grad) override {
    const int B = check_step_args("loss_and_grad", max_batch_, params, x, labels, grad);
    const float* hp = stage_params(params);
    std::memcpy(h_x_.get(), x.data(), x.size_bytes());
    std::memcpy(h_labels_.get(), labels.data(), labels.size_bytes());
    return run_step(B, kHostBatch, hp, grad);
  }

  void set_dataset(std::span<const float> images, std::span<const std::uint8_t> labels) override {
    const std::size_t n = check_dataset(images, labels);
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaStreamSynchronize(compute_.get()));
    for (auto& by_ends : graphs_[kResident])  // they name the old dataset's memory
      for (auto& g : by_ends) g.reset();
    data_rows_ = 0;
    d_data_u8_ = {};
    d_data_f32_ = {};
    // bytes when every pixel is exactly byte/255 (what the device reads back), else floats
    std::vector<std::uint8_t> bytes(images.size());
    bool exact = true;
    for (std::size_t i = 0; i < images.size() && exact; ++i) {
      const long k = std::lround(static_cast<double>(images[i]) * 255.0);
      exact = k >= 0 && k <= 255 && fused::pixel(static_cast<std::uint8_t>(k)) == images[i];
      bytes[i] = static_cast<std::uint8_t>(k);
    }
    if (exact) {
      d_data_u8_ = DeviceArray<std::uint8_t>(images.size());
      CUDA_CHECK(cudaMemcpy(d_data_u8_.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
    } else {
      d_data_f32_ = DeviceArray<float>(images.size());
      CUDA_CHECK(cudaMemcpy(d_data_f32_.get(), images.data(), images.size_bytes(), cudaMemcpyHostToDevice));
    }
    d_data_labels_ = DeviceArray<std::uint8_t>(n);
    CUDA_CHECK(cudaMemcpy(d_data_labels_.get(), labels.data(), n, cudaMemcpyHostToDevice));
    data_rows_ = n;
  }

  float loss_and_grad_rows(std::span<const float> params, std::span<const std::int32_t> rows,
                           std::span<float> grad) override {
    const int B = check_rows("loss_and_grad_rows", max_batch_, data_rows_, rows);
    if (params.size() != kMnistCnnParams || grad.size() != kMnistCnnParams)
      throw Error("loss_and_grad_rows: params and grad must have " + std::to_string(kMnistCnnParams) +
                  " floats, got " + std::to_string(params.size()) + " and " + std::to_string(grad.size()));
    const float* hp = stage_params(params);
    std::memcpy(h_rows_.get(), rows.data(), rows.size_bytes());
    return run_step(B, kResident, hp, grad);
  }

  void forward(std::span<const float> params, std::span<const float> x, std::span<float> logits) override {
    const int B = check_forward_args("forward", max_batch_, params, x);
    if (logits.size() != static_cast<std::size_t>(B) * kClasses)
      throw Error("forward: logits has " + std::to_string(logits.size()) +
                                  " floats, expected " + std::to_string(B * kClasses));
    if (B == 0) return;
    CUDA_CHECK(cudaSetDevice(device_));
    cudaStream_t s = compute_.get();
    const float* hp = stage_params(params);
    std::memcpy(h_x_.get(), x.data(), x.size_bytes());
    CUDA_CHECK(cudaMemcpyAsync(d_params_.get(), hp, params.size_bytes(), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(d_x_.get(), h_x_.get(), x.size_bytes(), cudaMemcpyHostToDevice, s));
    if (options_.kernels == GpuKernels::fused) {
      CUDA_CHECK(launch_fused_forward(B, BatchSource<float>{d_x_.get(), nullptr, d_iota_.get()}, d_params_.get(),
                                      scratch(), s));
    } else {
      const StepAlgos& a = prepare(B);
      transpose_filters();
      run_forward(B, a);
    }
    CUDA_CHECK(cudaMemcpyAsync(h_out_.get(), d_logits_.get(), logits.size_bytes(), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    std::memcpy(logits.data(), h_out_.get(), logits.size_bytes());
  }

 private:
  enum Source { kHostBatch, kResident, kSources };
  // Which host buffers a step's copies use: bit 0, the parameters come from step_params() (else
  // h_params_); bit 1, the gradient and loss go to step_grad()'s buffer (else h_out_).
  static constexpr int kEnds = 4;

  // The page-locked parameters the step's upload reads: the caller's own step_params() as they
  // are, any other span copied into the staging buffer.
  const float* stage_params(std::span<const float> params) {
    if (params.data() == h_own_params_.get()) return h_own_params_.get();
    std::memcpy(h_params_.get(), params.data(), params.size_bytes());
    return h_params_.get();
  }

  // Both streams idle (errors ignored: for destruction and error paths).
  void sync_streams() noexcept {
    if (compute_) (void)cudaStreamSynchronize(compute_.get());
    if (side_) (void)cudaStreamSynchronize(side_.get());
  }

  FusedScratch scratch() const {
    return FusedScratch{d_xg_.get(), d_p1_.get(),      d_p2_.get(),  d_logits_.get(), d_loss_.get(), d_dlogits_.get(),
                        d_dp2_.get(), d_dp1_.get(), d_partial_.get(), d_a1_.get(), d_a2_.get()};
  }

  // The staged step (the parameters at hp, and h_x_/h_labels_ or h_rows_) on the device: as a graph
  // when options_.graph, else enqueued call by call; the gradient and mean loss out, into grad
  // itself where it is step_grad().
  float run_step(int B, Source src, const float* hp, std::span<float> grad) {
    float* hg = grad.data() == h_own_grad_.get() ? h_own_grad_.get() : h_out_.get();
    const int ends = (hp == h_own_params_.get() ? 1 : 0) | (hg == h_own_grad_.get() ? 2 : 0);
    CUDA_CHECK(cudaSetDevice(device_));
    if (options_.kernels == GpuKernels::cudnn) prepare(B);
    cudaStream_t s = compute_.get();
    try {
      CUDA_CHECK(cudaEventRecord(step_begin_.get(), s));
      if (options_.graph) {
        GraphExec& g = graphs_[src][ends][static_cast<std::size_t>(B)];
        if (!g) g = capture(B, src, hp, hg);
        CUDA_CHECK(cudaGraphLaunch(g.get(), s));
      } else {
        enqueue_step(B, src, hp, hg);
      }
      CUDA_CHECK(cudaEventRecord(step_end_.get(), s));
    } catch (...) {
      sync_streams();  // what was enqueued may read and write the caller's buffers
      throw;
    }
    wait_for_step();
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, step_begin_.get(), step_end_.get()));
    last_step_seconds_ = 1e-3 * ms;
    if (hg != grad.data()) std::memcpy(grad.data(), hg, kMnistCnnParams * sizeof(float));
    return hg[kMnistCnnParams];
  }

  // Until the step's end event: polling the device between calls of the while_computing function
  // where there is one (the worker's transport moves meanwhile), yielding the core after each (a
  // node's workers and servers may share its cores), else in cudaEventSynchronize.
  void wait_for_step() {
    if (!has_while_computing()) {
      CUDA_CHECK(cudaEventSynchronize(step_end_.get()));
      return;
    }
    for (;;) {
      const cudaError_t e = cudaEventQuery(step_end_.get());
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) throw_call_failed("cudaEventQuery(step_end_)", cudaGetErrorString(e), __FILE__, __LINE__);
      try {
        while_computing();
      } catch (...) {
        (void)cudaEventSynchronize(step_end_.get());  // the step's buffers are the device's until then
        throw;
      }
      std::this_thread::yield();
    }
  }

  // The step of (B, src) with its host buffers hp, hg recorded once into a graph (nothing runs while
  // it is captured).
  GraphExec capture(int B, Source src, const float* hp, float* hg) {
    cudaStream_t s = compute_.get();
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      enqueue_step(B, src, hp, hg);
    } catch (...) {
      cudaGraph_t partial = nullptr;
      (void)cudaStreamEndCapture(s, &partial);  // leaves the stream out of capture mode
      if (partial) (void)cudaGraphDestroy(partial);
      (void)cudaGetLastError();
      throw;
    }
    cudaGraph_t raw = nullptr;
    CUDA_CHECK(cudaStreamEndCapture(s, &raw));
    Graph graph(raw);
    cudaGraphExec_t exec = nullptr;
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph.get(), 0));
    return GraphExec(exec);
  }

  // Every operation of one step, on compute_ (and the fused branch's side_): the parameters from
  // hp, the gradient and the mean loss to hg (kMnistCnnParams + 1 floats; both page-locked).
  void enqueue_step(int B, Source src, const float* hp, float* hg) {
    cudaStream_t s = compute_.get();
    const auto nb = static_cast<std::size_t>(B);
    CUDA_CHECK(cudaMemcpyAsync(d_params_.get(), hp, kMnistCnnParams * sizeof(float),
                               cudaMemcpyHostToDevice, s));
    if (src == kHostBatch) {
      CUDA_CHECK(cudaMemcpyAsync(d_x_.get(), h_x_.get(), nb * kImagePixels * sizeof(float), cudaMemcpyHostToDevice, s));
      CUDA_CHECK(cudaMemcpyAsync(d_labels_.get(), h_labels_.get(), nb, cudaMemcpyHostToDevice, s));
      enqueue_compute(B, BatchSource<float>{d_x_.get(), d_labels_.get(), d_iota_.get()}, hg);
    } else {
      CUDA_CHECK(cudaMemcpyAsync(d_rows_.get(), h_rows_.get(), nb * sizeof(std::int32_t), cudaMemcpyHostToDevice, s));
      if (d_data_u8_.get())
        enqueue_compute(B, BatchSource<std::uint8_t>{d_data_u8_.get(), d_data_labels_.get(), d_rows_.get()}, hg);
      else
        enqueue_compute(B, BatchSource<float>{d_data_f32_.get(), d_data_labels_.get(), d_rows_.get()}, hg);
    }
  }

  // Forward and backward of batch B read from `in`, into d_grad_loss_, downloaded to hg (the fused
  // step's branch downloads most of it while conv1's weight gradient still runs).
  template <class T>
  void enqueue_compute(int B, BatchSource<T> in, float* hg) {
    cudaStream_t s = compute_.get();
    float* G = d_grad_loss_.get();
    if (options_.kernels == GpuKernels::fused) {
      const FusedBranch branch{side_.get(), fork_.get(), join_.get()};
      CUDA_CHECK(launch_fused_step(B, in, d_params_.get(), scratch(), G, hg, s, side_ ? &branch : nullptr));
      return;
    }
    const StepAlgos& a = algos_[static_cast<std::size_t>(B)];
    if (in.rows != d_iota_.get()) CUDA_CHECK(launch_gather(B, in, d_x_.get(), d_labels_.get(), s));
    transpose_filters();
    run_forward(B, a);
    CUDA_CHECK(launch_softmax_xent(d_logits_.get(), d_labels_.get(), B, d_dlogits_.get(), d_loss_.get(), s));
    CUDA_CHECK(launch_mean(d_loss_.get(), B, G + kMnistCnnParams, s));
    run_backward(B, a);
    CUDA_CHECK(cudaMemcpyAsync(hg, G, (kMnistCnnParams + 1) * sizeof(float), cudaMemcpyDeviceToHost, s));
  }

  // ---- the cuDNN path ---------------------------------------------------------------------------

  void init_cudnn() {
    const std::size_t B = static_cast<std::size_t>(max_batch_);
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
      // a workspace of its own, so that a captured step allocates nothing
      cublas_workspace_ = DeviceArray<unsigned char>(std::size_t{4} << 20);
      CUBLAS_CHECK(cublasSetWorkspace(b, cublas_workspace_.get(), cublas_workspace_.bytes()));
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
    d_w1k_ = DeviceArray<float>(kB1 - kW1);
    d_w2k_ = DeviceArray<float>(kB2 - kW2);
    d_dw1k_ = DeviceArray<float>(kB1 - kW1);
    d_dw2k_ = DeviceArray<float>(kB2 - kW2);
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
    // Algorithms for max_batch decide the workspace size, allocated once here.
    ws_limit_ = kWorkspaceCap;
    StepAlgos& a = choose_algos(max_batch_);
    std::size_t need = 0;
    for (const Algo* x : {&a.conv1.fwd, &a.conv1.bwd_filter, &a.conv2.fwd, &a.conv2.bwd_data, &a.conv2.bwd_filter})
      need = std::max(need, x->workspace);
    ws_limit_ = std::max(need, kWorkspaceFloor);
    workspace_ = DeviceArray<unsigned char>(ws_limit_);
  }

  // Sets the tensor descriptors to batch B, returns B's algorithms (chosen once).
  const StepAlgos& prepare(int B) {
    set_batch(B);
    return algos_[B].chosen ? algos_[B] : choose_algos(B);
  }

  // The filters HWIO -> KRSC for cuDNN.
  void transpose_filters() {
    cudaStream_t s = compute_.get();
    const float* P = d_params_.get();
    CUDA_CHECK(launch_transpose(P + kW1, d_w1k_.get(), 9 * 1, kC1, s));    // HWIO (9,8) -> KRSC (8,9)
    CUDA_CHECK(launch_transpose(P + kW2, d_w2k_.get(), 9 * kC1, kC2, s));  // HWIO (72,16) -> KRSC (16,72)
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
  GpuOptions options_;
  int batch_ = -1;  // the batch the tensor descriptors are set to
  std::vector<StepAlgos> algos_;  // indexed by batch size
  std::size_t ws_limit_ = 0;
  double last_step_seconds_ = -1.0;
  std::size_t data_rows_ = 0;  // the resident dataset's size (0: none)
  // Declared first, destroyed last: stream, events, library handles.
  Stream compute_, side_;  // side_: the fused step's branch (fused_branches), else empty
  Event step_begin_, step_end_, fork_, join_;
  CudnnHandle cudnn_;
  CublasHandle cublas_;
  TensorDesc x_desc_, c1_desc_, p1_desc_, c2_desc_, p2_desc_, b1_desc_, b2_desc_;
  FilterDesc w1_desc_, w2_desc_;  // KRSC
  ConvDesc conv1_, conv2_;
  PoolDesc pool_;
  DeviceArray<unsigned char> workspace_, cublas_workspace_;
  DeviceArray<float> d_params_, d_w1k_, d_w2k_, d_dw1k_, d_dw2k_, d_grad_loss_, d_x_;
  DeviceArray<std::uint8_t> d_labels_, d_a1_, d_a2_, d_data_u8_, d_data_labels_;
  DeviceArray<std::int32_t> d_rows_, d_iota_;
  DeviceArray<float> d_c1_, d_dc1_, d_p1_, d_dp1_, d_c2_, d_dc2_, d_p2_, d_dp2_, d_logits_, d_dlogits_, d_loss_,
      d_partial_, d_data_f32_, d_xg_;
  PinnedArray<float> h_params_, h_x_, h_out_;
  PinnedArray<float> h_own_params_, h_own_grad_;  // step_params(), step_grad() (+ the loss)
  PinnedArray<std::uint8_t> h_labels_;
  PinnedArray<std::int32_t> h_rows_;
  // Graphs last: destroyed first. [source][host ends][batch size]; empty until that step first runs.
  std::vector<GraphExec> graphs_[kSources][kEnds];
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

std::unique_ptr<Backend> make_gpu_backend(int max_batch, int device, GpuOptions options) {
  if (max_batch <= 0)
    throw Error("make_gpu_backend: max_batch must be positive, got " + std::to_string(max_batch));
  const int n = gpu_device_count();
  if (n == 0) throw Error("make_gpu_backend: no CUDA device is visible");
  if (options.kernels == GpuKernels::cudnn && !options.fused_branches)
    throw Error("make_gpu_backend: fused_branches = false applies to the fused kernels only");
  if (device < 0 || device >= n)
    throw Error("make_gpu_backend: device " + std::to_string(device) + " not in 0.." +
                                std::to_string(n - 1));
  return std::make_unique<GpuBackend>(max_batch, device, options);
}

}  // namespace asyncps::nn
