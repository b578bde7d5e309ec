// The GPU's fused step (lib/nn/gpu/fused_math.h) run on the host, element by element as its CUDA
// kernels run it, against the CPU backend: the same logits, loss and every gradient tensor, for
// byte and float datasets, batches that end mid-chunk, rows in any order and repeated. This is
// the fused kernels' arithmetic checked in every build, GPU or not (test_nn_gpu then checks the
// kernels themselves on a device). Also the base Backend's loss_and_grad_rows and its checks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "model_inputs.h"
#include "nn/error.h"
#include "nn/gpu/fused_math.h"
#include "nn/mnist_cnn.h"

namespace nn = asyncps::nn;
namespace f = asyncps::nn::fused;

static_assert(f::kW1 == nn::mnist_cnn_offset(nn::kConv1W) && f::kB1 == nn::mnist_cnn_offset(nn::kConv1B) &&
              f::kW2 == nn::mnist_cnn_offset(nn::kConv2W) && f::kB2 == nn::mnist_cnn_offset(nn::kConv2B) &&
              f::kWf == nn::mnist_cnn_offset(nn::kFcW) && f::kBf == nn::mnist_cnn_offset(nn::kFcB) &&
              f::kParams == nn::kMnistCnnParams);

namespace {

// The fused step on the host, pass by pass in the kernels' order; returns grad (9098) + loss.
template <class T>
std::vector<float> fused_step(int B, const std::vector<T>& X, const std::vector<std::uint8_t>& labels,
                              const std::vector<std::int32_t>& rows, const std::vector<float>& P,
                              std::vector<float>* logits_out = nullptr) {
  const auto nb = static_cast<std::size_t>(B);
  std::vector<float> x(nb * 784), p1(nb * f::kP1), dp1(p1.size()), p2(nb * f::kP2), dp2(p2.size()), logits(nb * f::kK),
      dlogits(logits.size()), loss(nb), partial(static_cast<std::size_t>(f::PartialLayout(B).size()), NAN),
      out(f::kParams + 1, NAN);
  std::vector<std::uint8_t> a1(p1.size(), 9), a2(p2.size(), 9);
  // one sample per "block", its inputs staged as the kernels stage them in shared memory
  std::vector<float> img(784);
  for (long b = 0; b < B; ++b) {
    for (int p = 0; p < 784; ++p) {
      img[static_cast<std::size_t>(p)] = f::image_pixel(b, p, X.data(), rows.data());
      x[static_cast<std::size_t>(b * 784 + p)] = img[static_cast<std::size_t>(p)];
    }
    for (int q = 0; q < f::kP1; ++q)
      f::conv1_pool_cell(q, img.data(), P.data() + f::kW1, P.data() + f::kB1, p1.data() + b * f::kP1, a1.data() + b * f::kP1);
  }
  for (long b = 0; b < B; ++b)
    for (int q = 0; q < f::kP2; ++q)
      f::conv2_pool_cell(q, p1.data() + b * f::kP1, P.data() + f::kW2, P.data() + f::kB2, p2.data() + b * f::kP2,
                         a2.data() + b * f::kP2);
  float lanes[f::kLanes];  // one warp's lanes, combined in the device's tree order
  for (long b = 0; b < B; ++b)
    for (int j = 0; j < f::kK; ++j) {
      for (int l = 0; l < f::kLanes; ++l) lanes[l] = f::fc_lane(b, j, l, p2.data(), P.data());
      logits[static_cast<std::size_t>(b * f::kK + j)] = f::tree32(lanes) + P[static_cast<std::size_t>(f::kBf + j)];
    }
  for (long b = 0; b < B; ++b) f::xent(b, B, logits.data(), labels.data(), rows.data(), loss.data(), dlogits.data());
  for (long i = 0; i < static_cast<long>(dp2.size()); ++i) f::fc_back(i, dlogits.data(), P.data(), dp2.data());
  std::vector<float> dc2(14 * 14 * f::kC2), wt(f::kB2 - f::kW2);
  for (int i = 0; i < f::kB2 - f::kW2; ++i) wt[static_cast<std::size_t>(i)] = f::w2_by_output(i, P.data() + f::kW2);
  for (long b = 0; b < B; ++b) {
    for (int i = 0; i < 14 * 14 * f::kC2; ++i)
      dc2[static_cast<std::size_t>(i)] = f::dc2_dense(i, dp2.data() + b * f::kP2, a2.data() + b * f::kP2);
    for (int pix = 0; pix < 196; ++pix) f::conv2_back_pixel(pix, dc2.data(), wt.data(), dp1.data() + b * f::kP1);
  }
  // the weight gradients: each chunk's samples summed in order, as a block does
  const f::PartialLayout L(B);
  const f::Chunking c1(B, f::kTarget1), c2(B, f::kTarget2);
  for (int ch = 0; ch < L.n1; ++ch)
    for (int o = 0; o < f::kConv1Outs; ++o) {
      float acc = 0.0f;
      for (long b = c1.begin(ch); b < c1.end(ch, B); ++b)
        acc += f::conv1_wgrad_sample(o, x.data() + b * 784, dp1.data() + b * f::kP1, a1.data() + b * f::kP1);
      partial[static_cast<std::size_t>(L.conv1_at() + ch * f::kConv1Outs + o)] = acc;
    }
  for (int ch = 0; ch < L.n2; ++ch)
    for (int t = 0; t < f::kConv2WgradThreads; ++t) {
      float acc[f::kC1] = {};
      for (long b = c2.begin(ch); b < c2.end(ch, B); ++b)
        f::conv2_wgrad_sample(t, p1.data() + b * f::kP1, dp2.data() + b * f::kP2, a2.data() + b * f::kP2, acc);
      for (int ci = 0; ci < f::kC1; ++ci)
        if (const int o = f::conv2_wgrad_output(t, ci); o >= 0)
          partial[static_cast<std::size_t>(L.conv2_at() + ch * f::kConv2Outs + o)] = acc[ci];
    }
  for (long t = 0; t < L.fc_threads(); ++t) f::fc_partial(t, B, p2.data(), dlogits.data(), loss.data(), partial.data());
  for (long i = 0; i <= f::kParams; ++i) {
    for (int l = 0; l < f::kLanes; ++l) lanes[l] = f::reduce_lane(i, l, B, partial.data());
    out[static_cast<std::size_t>(i)] = f::reduced_value(i, B, f::tree32(lanes));
  }
  if (logits_out) *logits_out = logits;
  return out;
}


// A dataset of n images with MNIST-like bytes (mostly 0, some strokes) and its float copy.
struct Data {
  std::vector<std::uint8_t> bytes, labels;
  std::vector<float> floats;
};
Data make_data(int n, std::uint32_t seed) {
  Data d;
  std::mt19937 rng(seed);
  for (int i = 0; i < n * 784; ++i) {
    const std::uint8_t v = rng() % 3 == 0 ? static_cast<std::uint8_t>(rng() % 256) : 0;  // blank areas: pooling ties
    d.bytes.push_back(v);
    d.floats.push_back(static_cast<float>(v) / 255.0f);
  }
  for (int i = 0; i < n; ++i) d.labels.push_back(static_cast<std::uint8_t>(rng() % 10));
  return d;
}

void check_against_cpu(const std::vector<float>& fused, const std::vector<float>& cpu_grad, float cpu_loss) {
  CHECK(std::abs(fused[f::kParams] - cpu_loss) <= 1e-5 * std::abs(cpu_loss));
  std::size_t off = 0;
  for (const auto& t : nn::mnist_cnn_tensors()) {
    const double e = nn_test::rel_error(fused, cpu_grad, off, t.size());
    CAPTURE(t.name, e);
    CHECK(e <= 1e-4);
    off += t.size();
  }
}

}  // namespace

TEST_CASE("the fused GPU step's arithmetic equals the cpu backend on byte and float datasets", "[fused]") {
  const Data data = make_data(300, 5);
  auto cpu = nn::make_cpu_backend(1100);
  // one sample a chunk (conv1 and conv2 up to 1024 and 512 samples), several with a shorter last
  // chunk (fc at 7, 33, 130, 300; at 1100 conv1 2 a chunk, conv2 3 with a last of 2, fc 69)
  for (const int B : {1, 7, 33, 130, 300, 1100}) {
    CAPTURE(B);
    std::vector<std::int32_t> rows;
    std::mt19937 rng(static_cast<std::uint32_t>(B));
    for (int b = 0; b < B; ++b) rows.push_back(static_cast<std::int32_t>(rng() % 300));  // any order, repeats
    const auto P = nn_test::glorot_params(static_cast<std::uint64_t>(B) + 3);
    std::vector<float> x, g(nn::kMnistCnnParams), lc(static_cast<std::size_t>(B) * 10);
    std::vector<std::uint8_t> y;
    for (int r : rows) {
      x.insert(x.end(), data.floats.begin() + r * 784, data.floats.begin() + (r + 1) * 784);
      y.push_back(data.labels[static_cast<std::size_t>(r)]);
    }
    const float loss = cpu->loss_and_grad(P, x, y, g);
    cpu->forward(P, x, lc);
    std::vector<float> lf;
    const auto from_bytes = fused_step(B, data.bytes, data.labels, rows, P, &lf);
    CHECK(nn_test::rel_error(lf, lc, 0, lc.size()) <= 1e-5);
    check_against_cpu(from_bytes, g, loss);
    // the float dataset gives the very same numbers as the bytes (byte/255 is exact on both)
    const auto from_floats = fused_step(B, data.floats, data.labels, rows, P);
    CHECK(from_floats == from_bytes);
  }
}

TEST_CASE("the fused step on random (non-MNIST) pixels and an identity row list equals the cpu backend", "[fused]") {
  const int B = 48;
  const auto batch = nn_test::random_batch(B, 77);
  std::vector<std::int32_t> iota(B);
  for (int b = 0; b < B; ++b) iota[static_cast<std::size_t>(b)] = b;
  const auto P = nn_test::glorot_params(78);
  auto cpu = nn::make_cpu_backend(B);
  std::vector<float> g(nn::kMnistCnnParams);
  const float loss = cpu->loss_and_grad(P, batch.x, batch.y, g);
  check_against_cpu(fused_step(B, batch.x, batch.y, iota, P), g, loss);
}

TEST_CASE("loss_and_grad_rows equals loss_and_grad on the gathered batch, and checks its rows", "[rows]") {
  const Data data = make_data(50, 9);
  auto cpu = nn::make_cpu_backend(8);
  std::vector<float> g1(nn::kMnistCnnParams), g2(nn::kMnistCnnParams);
  const auto P = nn_test::glorot_params(4);
  const std::vector<std::int32_t> rows{49, 0, 7, 7, 3};
  CHECK_THROWS_WITH(cpu->loss_and_grad_rows(P, rows, g1), Catch::Contains("no dataset"));
  cpu->set_dataset(data.floats, data.labels);
  std::vector<float> x;
  std::vector<std::uint8_t> y;
  for (int r : rows) {
    x.insert(x.end(), data.floats.begin() + r * 784, data.floats.begin() + (r + 1) * 784);
    y.push_back(data.labels[static_cast<std::size_t>(r)]);
  }
  const float l1 = cpu->loss_and_grad_rows(P, rows, g1);
  const float l2 = cpu->loss_and_grad(P, x, y, g2);
  CHECK(l1 == l2);
  CHECK(g1 == g2);
  const std::vector<std::int32_t> out_of_range{0, 50}, negative{-1}, too_many(9, 0);
  CHECK_THROWS_WITH(cpu->loss_and_grad_rows(P, out_of_range, g1), Catch::Contains("row 50 not in 0..49"));
  CHECK_THROWS_AS(cpu->loss_and_grad_rows(P, negative, g1), nn::Error);
  CHECK_THROWS_WITH(cpu->loss_and_grad_rows(P, too_many, g1), Catch::Contains("exceeds max_batch"));
  CHECK_THROWS_WITH(cpu->loss_and_grad_rows(P, {}, g1), Catch::Contains("empty batch"));
  auto bad = data.labels;
  bad[3] = 10;
  CHECK_THROWS_WITH(cpu->set_dataset(data.floats, bad), Catch::Contains("label 10"));
  CHECK_THROWS_AS(cpu->set_dataset(std::span(data.floats).first(100), data.labels), nn::Error);
  CHECK(cpu->last_step_device_seconds() < 0);  // the CPU has no device clock
}

TEST_CASE("the partials' buffer sized for max_batch holds the partials of every smaller batch", "[fused]") {
  for (const int max_batch : {1, 16, 64, 127, 128, 129, 1000, 4096}) {
    CAPTURE(max_batch);
    for (int B = 1; B <= max_batch; ++B) REQUIRE(f::PartialLayout(B).size() <= f::partial_floats(max_batch));
  }
  // at most the target number of chunks, none empty, the last ending at the last sample
  for (long B = 1; B <= 20000; B += 37) {
    const f::Chunking c(B, f::kTarget2);
    REQUIRE(c.n <= f::kTarget2);
    REQUIRE(c.begin(c.n - 1) < B);
    REQUIRE(c.end(c.n - 1, B) == B);
  }
}
