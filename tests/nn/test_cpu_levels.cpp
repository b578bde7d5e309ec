// Every CPU level this machine runs (kernels::table_at, all in one process) against scalar
// double-precision references written here, on random data: convolution forward and backward
// after a pool (dw, db, dx), max pool forward and backward, the dense layer (y, dw, db, dx), the
// softmax cross-entropy (loss, probabilities, gradient) and the element-wise updates, at batches
// 1, 7, 128 and odd shapes. A level this CPU cannot run is named and not called (compiled and
// linked all the same: the build holds every level). The public functions (the active level,
// which ASYNCPS_CPU_KERNELS forces: the nn_kernels_forced_* runs of the whole test_nn) are what
// the other test files check.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cpu/level.h"
#include "nn/cpu_kernels.h"
#include "nn/kernels/kernel_table.h"
#include "reference.h"

namespace nn = asyncps::nn;
namespace cpu = asyncps::cpu;

namespace {

std::vector<cpu::Level> runnable_levels() {
  std::vector<cpu::Level> out;
  for (cpu::Level l : cpu::compiled_levels())
    if (cpu::runnable(l)) out.push_back(l);
    else WARN("this CPU cannot run CPU level " << cpu::level_name(l) << ": compiled, not tested here");
  return out;
}

std::size_t sz(int B, int H, int W, int C) { return static_cast<std::size_t>(B) * H * W * C; }

// max |a - b| / (1 + |b|)
double max_rel(const std::vector<float>& a, const ref::Vec& b) {
  REQUIRE(a.size() == b.size());
  double m = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]) / (1.0 + std::abs(b[i])));
  return m;
}

// Dense conv backward in double: dout (B,H,W,CO) -> dw (3,3,CI,CO), db (CO), dx (B,H,W,CI).
void ref_conv_backward(const ref::Vec& x, const ref::Vec& w, const ref::Vec& dout, int B, int H, int W, int CI,
                       int CO, ref::Vec& dw, ref::Vec& db, ref::Vec& dx) {
  dw.assign(9 * CI * CO, 0.0);
  db.assign(CO, 0.0);
  dx.assign(sz(B, H, W, CI), 0.0);
  for (int n = 0; n < B; ++n)
    for (int h = 0; h < H; ++h)
      for (int q = 0; q < W; ++q)
        for (int co = 0; co < CO; ++co) {
          const double g = dout[((static_cast<std::size_t>(n) * H + h) * W + q) * CO + co];
          db[co] += g;
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
              const int ih = h + kh - 1, iw = q + kw - 1;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              for (int ci = 0; ci < CI; ++ci) {
                const std::size_t xi = ((static_cast<std::size_t>(n) * H + ih) * W + iw) * CI + ci;
                const std::size_t wi = ((kh * 3 + kw) * CI + ci) * CO + co;
                dw[wi] += x[xi] * g;
                dx[xi] += w[wi] * g;
              }
            }
        }
}

// Max pool 2x2 SAME with the first max in scan order: out and idx as nn/maxpool.h says.
void ref_pool(const std::vector<float>& x, int B, int H, int W, int C, std::vector<float>& out,
              std::vector<std::int32_t>& idx) {
  const int PH = (H + 1) / 2, PW = (W + 1) / 2;
  out.assign(sz(B, PH, PW, C), 0.0f);
  idx.assign(out.size(), 0);
  for (int n = 0; n < B; ++n)
    for (int i = 0; i < PH; ++i)
      for (int j = 0; j < PW; ++j)
        for (int c = 0; c < C; ++c) {
          int best = -1;
          for (int h = 2 * i; h < std::min(2 * i + 2, H); ++h)
            for (int q = 2 * j; q < std::min(2 * j + 2, W); ++q) {
              const int e = (h * W + q) * C + c;
              if (best < 0 || x[sz(n, H, W, C) + e] > x[sz(n, H, W, C) + best]) best = e;
            }
          const std::size_t o = ((static_cast<std::size_t>(n) * PH + i) * PW + j) * C + c;
          out[o] = x[sz(n, H, W, C) + best];
          idx[o] = best;
        }
}

struct ConvCase {
  int B, H, W, CI, CO;
};
// The model's two layers at batch 1, 7 and 128 (the fast paths), and odd shapes (the generic ones).
const ConvCase kConvCases[] = {{1, 28, 28, 1, 8},  {7, 28, 28, 1, 8},  {128, 28, 28, 1, 8}, {1, 14, 14, 8, 16},
                               {7, 14, 14, 8, 16}, {128, 14, 14, 8, 16}, {3, 5, 7, 3, 5},     {2, 7, 21, 8, 16},
                               {1, 9, 9, 1, 8}};

}  // namespace

TEST_CASE("every CPU level this machine runs: conv3x3 forward, max pool and the pooled backward match double precision",
          "[cpu-levels]") {
  for (cpu::Level l : runnable_levels()) {
    const nn::kernels::Table& k = nn::kernels::table_at(l);
    for (const auto& c : kConvCases) {
      CAPTURE(cpu::level_name(l), c.B, c.H, c.W, c.CI, c.CO);
      const nn::Conv3x3Dims d{c.B, c.H, c.W, c.CI, c.CO};
      const auto x = ref::random_floats(sz(c.B, c.H, c.W, c.CI), 11);
      const auto w = ref::random_floats(9 * c.CI * c.CO, 12);
      const auto b = ref::random_floats(c.CO, 13);
      const ref::Vec X = ref::to_double(x), Wd = ref::to_double(w);

      std::vector<float> out(sz(c.B, c.H, c.W, c.CO), -99.0f);  // out is (B,H,W,CO)
      k.conv3x3_forward(x.data(), w.data(), b.data(), out.data(), d);
      CHECK(max_rel(out, ref::conv3x3(X, Wd, ref::to_double(b), c.B, c.H, c.W, c.CI, c.CO)) < 1e-5);

      // max pool of that output: exact (a max is exact), ties to the first in scan order
      const nn::Pool2x2Dims pd{c.B, c.H, c.W, c.CO};
      std::vector<float> pooled(sz(c.B, pd.ph(), pd.pw(), c.CO)), expect_pooled;
      std::vector<std::int32_t> idx(pooled.size()), expect_idx;
      k.maxpool2x2_forward(out.data(), pooled.data(), idx.data(), pd);
      ref_pool(out, c.B, c.H, c.W, c.CO, expect_pooled, expect_idx);
      CHECK(pooled == expect_pooled);
      CHECK(idx == expect_idx);

      // the pool's backward: the gradient at the argmax only
      const auto dpool = ref::random_floats(pooled.size(), 14);
      std::vector<float> dconv(out.size(), -5.0f);
      k.maxpool2x2_backward(dpool.data(), idx.data(), dconv.data(), pd);
      ref::Vec dense_dout(out.size(), 0.0);
      const std::size_t per_in = sz(1, c.H, c.W, c.CO), per_out = sz(1, pd.ph(), pd.pw(), c.CO);
      for (int n = 0; n < c.B; ++n)
        for (std::size_t p = 0; p < per_out; ++p) dense_dout[n * per_in + idx[n * per_out + p]] += dpool[n * per_out + p];
      CHECK(max_rel(dconv, dense_dout) == 0.0);

      // conv backward after the pool, against the dense double-precision backward of that gradient
      ref::Vec edw, edb, edx;
      ref_conv_backward(X, Wd, dense_dout, c.B, c.H, c.W, c.CI, c.CO, edw, edb, edx);
      for (bool with_dx : {true, false}) {
        CAPTURE(with_dx);
        std::vector<float> dw(edw.size(), -7.0f), db(edb.size(), -7.0f), dx(edx.size(), -7.0f);
        k.conv3x3_backward_pooled(x.data(), w.data(), idx.data(), dpool.data(), pd.ph(), pd.pw(), dw.data(),
                                  db.data(), with_dx ? dx.data() : nullptr, d);
        CHECK(max_rel(dw, edw) < 1e-4);
        CHECK(max_rel(db, edb) < 1e-4);
        if (with_dx) CHECK(max_rel(dx, edx) < 1e-5);
      }
      // the dense backward (any dout) on the same gradient
      std::vector<float> dw(edw.size()), db(edb.size()), dx(edx.size());
      std::vector<float> dout_f(dense_dout.begin(), dense_dout.end());
      k.conv3x3_backward(x.data(), w.data(), dout_f.data(), dw.data(), db.data(), dx.data(), d);
      CHECK(max_rel(dw, edw) < 1e-4);
      CHECK(max_rel(db, edb) < 1e-4);
      CHECK(max_rel(dx, edx) < 1e-5);
    }
  }
}

TEST_CASE("every CPU level this machine runs: the dense layer and the softmax cross-entropy match double precision",
          "[cpu-levels]") {
  struct DenseCase {
    int B, IN, OUT;
  };
  for (cpu::Level l : runnable_levels()) {
    const nn::kernels::Table& k = nn::kernels::table_at(l);
    for (const DenseCase c : {DenseCase{1, 784, 10}, DenseCase{7, 784, 10}, DenseCase{128, 784, 10},
                              DenseCase{5, 37, 3}, DenseCase{3, 1, 1}, DenseCase{9, 100, 17}}) {
      CAPTURE(cpu::level_name(l), c.B, c.IN, c.OUT);
      const auto x = ref::random_floats(static_cast<std::size_t>(c.B) * c.IN, 21);
      const auto w = ref::random_floats(static_cast<std::size_t>(c.IN) * c.OUT, 22);
      const auto b = ref::random_floats(c.OUT, 23), dy = ref::random_floats(static_cast<std::size_t>(c.B) * c.OUT, 24);
      std::vector<float> y(static_cast<std::size_t>(c.B) * c.OUT, -9.0f);
      k.dense_forward(x.data(), w.data(), b.data(), y.data(), nn::DenseDims{c.B, c.IN, c.OUT});
      CHECK(max_rel(y, ref::dense(ref::to_double(x), ref::to_double(w), ref::to_double(b), c.B, c.IN, c.OUT)) < 1e-5);

      ref::Vec edw(w.size(), 0.0), edb(c.OUT, 0.0), edx(x.size(), 0.0);  // dW = X^T dY, db = sum dY, dX = dY W^T
      for (int n = 0; n < c.B; ++n)
        for (int o = 0; o < c.OUT; ++o) {
          const double g = dy[n * c.OUT + o];
          edb[o] += g;
          for (int i = 0; i < c.IN; ++i) {
            edw[i * c.OUT + o] += double(x[n * c.IN + i]) * g;
            edx[n * c.IN + i] += double(w[i * c.OUT + o]) * g;
          }
        }
      std::vector<float> dw(w.size(), -9.0f), db(c.OUT, -9.0f), dx(x.size(), -9.0f);
      k.dense_backward(x.data(), w.data(), dy.data(), dw.data(), db.data(), dx.data(), nn::DenseDims{c.B, c.IN, c.OUT});
      CHECK(max_rel(dw, edw) < 1e-5);
      CHECK(max_rel(db, edb) < 1e-5);
      CHECK(max_rel(dx, edx) < 1e-5);
      std::vector<float> dw2(w.size(), -9.0f), db2(c.OUT, -9.0f);  // without dx: the same dw, db
      k.dense_backward(x.data(), w.data(), dy.data(), dw2.data(), db2.data(), nullptr, nn::DenseDims{c.B, c.IN, c.OUT});
      CHECK(dw2 == dw);
      CHECK(db2 == db);
    }
    for (int B : {1, 7, 128}) {
      CAPTURE(cpu::level_name(l), B);
      const int C = 10;
      auto z = ref::random_floats(static_cast<std::size_t>(B) * C, 31, -20.0f, 20.0f);
      std::vector<std::uint8_t> labels(B);
      for (int n = 0; n < B; ++n) labels[n] = static_cast<std::uint8_t>((n * 7 + 3) % C);
      std::vector<float> probs(z.size()), g(z.size());
      const float loss = k.softmax_xent_forward(z.data(), labels.data(), probs.data(), B, C);
      k.softmax_xent_backward(probs.data(), labels.data(), g.data(), B, C);
      CHECK(loss == Approx(ref::xent(ref::to_double(z), labels, B, C)).epsilon(1e-5));
      ref::Vec eg(z.size());
      for (int n = 0; n < B; ++n) {
        double m = z[n * C], s = 0.0;
        for (int c = 1; c < C; ++c) m = std::max<double>(m, z[n * C + c]);
        for (int c = 0; c < C; ++c) s += std::exp(z[n * C + c] - m);
        for (int c = 0; c < C; ++c) eg[n * C + c] = (std::exp(z[n * C + c] - m) / s - (c == labels[n])) / B;
      }
      CHECK(max_rel(g, eg) < 1e-6);
    }
  }
}

TEST_CASE("every CPU level this machine runs: the optimizers' and the moving average's updates match a scalar loop",
          "[cpu-levels]") {
  for (cpu::Level l : runnable_levels()) {
    const nn::kernels::Table& k = nn::kernels::table_at(l);
    for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{128}, std::size_t{1001}, std::size_t{9098}}) {
      CAPTURE(cpu::level_name(l), n);
      const auto g = ref::random_floats(n, 41), a = ref::random_floats(n, 42), p = ref::random_floats(n, 44);
      const auto s = ref::random_floats(n, 43, 0.0f, 1.0f);  // second moments are >= 0
      std::vector<float> o1(n), o2(n), o3(n);
      ref::Vec e1(n), e2(n), e3(n);

      k.momentum_step(o1.data(), o2.data(), a.data(), g.data(), n, 0.9f, 0.5f);
      for (std::size_t i = 0; i < n; ++i) e1[i] = 0.9 * a[i] + g[i], e2[i] = 0.5 * e1[i];
      CHECK(max_rel(o1, e1) < 1e-6);
      CHECK(max_rel(o2, e2) < 1e-6);

      const nn::AdamFactors f{0.9f, 0.999f, 1.5f, 2.5f, 1e-3f};
      k.adam_step(o1.data(), o2.data(), o3.data(), a.data(), s.data(), g.data(), n, f);
      for (std::size_t i = 0; i < n; ++i) {
        e1[i] = f.beta1 * a[i] + (1.0 - f.beta1) * g[i];
        e2[i] = f.beta2 * s[i] + (1.0 - f.beta2) * g[i] * g[i];
        e3[i] = f.c1 * e1[i] / (std::sqrt(f.c2 * e2[i]) + f.epsilon);
      }
      CHECK(max_rel(o1, e1) < 1e-6);
      CHECK(max_rel(o2, e2) < 1e-6);
      CHECK(max_rel(o3, e3) < 1e-4);

      k.adagrad_step(o1.data(), o2.data(), s.data(), g.data(), n, 1e-3f);
      for (std::size_t i = 0; i < n; ++i) e1[i] = s[i] + double(g[i]) * g[i], e2[i] = g[i] / (std::sqrt(e1[i]) + 1e-3);
      CHECK(max_rel(o1, e1) < 1e-6);
      CHECK(max_rel(o2, e2) < 1e-4);

      k.step_along(o1.data(), p.data(), g.data(), n, 0.25f);
      for (std::size_t i = 0; i < n; ++i) e1[i] = p[i] - 0.25 * g[i];
      CHECK(max_rel(o1, e1) < 1e-6);

      std::vector<float> level(a), smooth(s);
      k.ema_step(level.data(), g.data(), n, 0.1f);
      for (std::size_t i = 0; i < n; ++i) e1[i] = a[i] - 0.1 * (a[i] - double(g[i]));
      CHECK(max_rel(level, e1) < 1e-6);
      level = a;
      k.ema_trend_step(level.data(), smooth.data(), g.data(), n, 0.1f);
      for (std::size_t i = 0; i < n; ++i) e2[i] = s[i] - 0.1 * (s[i] - e1[i]);
      CHECK(max_rel(level, e1) < 1e-6);
      CHECK(max_rel(smooth, e2) < 1e-6);
      k.trend_average(o1.data(), level.data(), smooth.data(), n);
      for (std::size_t i = 0; i < n; ++i) e3[i] = 2.0 * level[i] - smooth[i];
      CHECK(max_rel(o1, e3) < 1e-6);
    }
  }
}

TEST_CASE("the level the public kernels run is the best this CPU runs, or the one ASYNCPS_CPU_KERNELS forces",
          "[cpu-levels]") {
  const char* forced = std::getenv(cpu::kLevelEnv);
  const std::string expect = forced && *forced ? forced : cpu::level_name(cpu::best_runnable());
  CHECK(nn::cpu_kernel_level() == expect);
  CHECK(&nn::kernels::active() == &nn::kernels::table_at(cpu::active_level()));
  CHECK(nn::cpu_kernel_levels().rfind(expect + " (this CPU runs ", 0) == 0);
}

TEST_CASE("ASYNCPS_CPU_KERNELS: an unknown level, or one this CPU cannot run, is refused naming the variable",
          "[cpu-levels]") {
  CHECK(cpu::choose_level(nullptr) == cpu::best_runnable());
  CHECK(cpu::choose_level("") == cpu::best_runnable());
  CHECK(cpu::choose_level("baseline") == cpu::Level::baseline);
  CHECK_THROWS_WITH(cpu::choose_level("sse9"),
                    Catch::Contains("ASYNCPS_CPU_KERNELS=sse9: not a CPU kernel level of this build (baseline"));
  CHECK_THROWS_WITH(cpu::choose_level("AVX2"), Catch::Contains("not a CPU kernel level"));
  for (cpu::Level l : cpu::compiled_levels()) {
    CAPTURE(cpu::level_name(l));
    if (cpu::runnable(l))
      CHECK(cpu::choose_level(cpu::level_name(l)) == l);
    else
      CHECK_THROWS_WITH(cpu::choose_level(cpu::level_name(l)), Catch::Contains("this CPU cannot run it (it runs baseline"));
  }
}
