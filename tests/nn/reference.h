// Naive double-precision reference of every layer and of the whole model, written
// independently of lib/nn (plain loops, bounds checks), plus gradient-check helpers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <cstdlib>
#include <string>
#include <vector>

namespace ref {

using Vec = std::vector<double>;

// x (B,H,W,CI), w (3,3,CI,CO), b (CO) -> (B,H,W,CO), SAME, stride 1
inline Vec conv3x3(const Vec& x, const Vec& w, const Vec& b, int B, int H, int W, int CI, int CO) {
  Vec out(static_cast<std::size_t>(B) * H * W * CO);
  for (int n = 0; n < B; ++n)
    for (int h = 0; h < H; ++h)
      for (int q = 0; q < W; ++q)
        for (int co = 0; co < CO; ++co) {
          double s = b[co];
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
              const int ih = h + kh - 1, iw = q + kw - 1;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              for (int ci = 0; ci < CI; ++ci)
                s += x[((n * H + ih) * W + iw) * CI + ci] * w[((kh * 3 + kw) * CI + ci) * CO + co];
            }
          out[((n * H + h) * W + q) * CO + co] = s;
        }
  return out;
}

// x (B,H,W,C) -> (B,ceil(H/2),ceil(W/2),C), 2x2 stride 2 SAME (windows clipped at the far edge)
inline Vec maxpool(const Vec& x, int B, int H, int W, int C) {
  const int PH = (H + 1) / 2, PW = (W + 1) / 2;
  Vec out(static_cast<std::size_t>(B) * PH * PW * C);
  for (int n = 0; n < B; ++n)
    for (int i = 0; i < PH; ++i)
      for (int j = 0; j < PW; ++j)
        for (int c = 0; c < C; ++c) {
          double m = -std::numeric_limits<double>::infinity();
          for (int h = 2 * i; h < std::min(2 * i + 2, H); ++h)
            for (int q = 2 * j; q < std::min(2 * j + 2, W); ++q)
              m = std::max(m, x[((n * H + h) * W + q) * C + c]);
          out[((n * PH + i) * PW + j) * C + c] = m;
        }
  return out;
}

// x (B,IN), w (IN,OUT), b (OUT) -> (B,OUT)
inline Vec dense(const Vec& x, const Vec& w, const Vec& b, int B, int IN, int OUT) {
  Vec y(static_cast<std::size_t>(B) * OUT);
  for (int n = 0; n < B; ++n)
    for (int o = 0; o < OUT; ++o) {
      double s = b[o];
      for (int i = 0; i < IN; ++i) s += x[n * IN + i] * w[i * OUT + o];
      y[n * OUT + o] = s;
    }
  return y;
}

// mean softmax cross-entropy of logits (B,C)
inline double xent(const Vec& z, const std::vector<std::uint8_t>& labels, int B, int C) {
  double total = 0.0;
  for (int n = 0; n < B; ++n) {
    double m = z[n * C];
    for (int c = 1; c < C; ++c) m = std::max(m, z[n * C + c]);
    double s = 0.0;
    for (int c = 0; c < C; ++c) s += std::exp(z[n * C + c] - m);
    total += m + std::log(s) - z[n * C + labels[n]];
  }
  return total / B;
}

inline Vec slice(const Vec& v, std::size_t off, std::size_t n) {
  return Vec(v.begin() + off, v.begin() + off + n);
}

// Whole model: logits (B,10) from params (9098) and x (B,784).
inline Vec model_logits(const Vec& p, const Vec& x, int B) {
  const Vec c1 = conv3x3(x, slice(p, 0, 72), slice(p, 72, 8), B, 28, 28, 1, 8);
  const Vec p1 = maxpool(c1, B, 28, 28, 8);
  const Vec c2 = conv3x3(p1, slice(p, 80, 1152), slice(p, 1232, 16), B, 14, 14, 8, 16);
  const Vec p2 = maxpool(c2, B, 14, 14, 16);
  return dense(p2, slice(p, 1248, 7840), slice(p, 9088, 10), B, 784, 10);
}

inline double model_loss(const Vec& p, const Vec& x, const std::vector<std::uint8_t>& labels,
                         int B) {
  return xent(model_logits(p, x, B), labels, B, 10);
}

inline double dot(const Vec& a, const Vec& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central difference of f at v[i] (double precision).
inline double fd(const std::function<double(const Vec&)>& f, Vec& v, std::size_t i,
                 double eps = 1e-6) {
  const double old = v[i];
  v[i] = old + eps;
  const double fp = f(v);
  v[i] = old - eps;
  const double fm = f(v);
  v[i] = old;
  return (fp - fm) / (2.0 * eps);
}

// Max over checked entries of |analytic - numeric| / max(|analytic|, |numeric|, floor), with
// floor = 1e-3 * max |numeric| so that entries that are (near) zero are judged on the scale of
// the whole gradient instead of producing 0/0.
struct GradCheck {
  double max_rel = 0.0;
  std::size_t checked = 0;
};
inline GradCheck compare(const std::vector<float>& analytic, const Vec& numeric,
                         const std::vector<std::size_t>& idx) {
  double scale = 0.0;
  for (std::size_t i : idx) scale = std::max(scale, std::abs(numeric[i]));
  const double floor = std::max(1e-3 * scale, 1e-12);
  GradCheck r;
  for (std::size_t i : idx) {
    const double a = analytic[i], n = numeric[i];
    r.max_rel = std::max(r.max_rel, std::abs(a - n) / std::max({std::abs(a), std::abs(n), floor}));
    ++r.checked;
  }
  return r;
}

// Finite-difference gradient of f w.r.t. v at the given indices (others left 0), then compare.
inline GradCheck check_grad(const std::function<double(const Vec&)>& f, Vec v,
                            const std::vector<float>& analytic,
                            const std::vector<std::size_t>& idx, double eps = 1e-6) {
  Vec numeric(v.size(), 0.0);
  for (std::size_t i : idx) numeric[i] = fd(f, v, i, eps);
  return compare(analytic, numeric, idx);
}

inline std::vector<std::size_t> all_indices(std::size_t n) {
  std::vector<std::size_t> idx(n);
  for (std::size_t i = 0; i < n; ++i) idx[i] = i;
  return idx;
}

// Whether the tests run under the sanitizers (ASYNCPS_TEST_SANITIZED=1, cmake/AsyncpsSanitizers.cmake),
// where every instrumented double costs 10-50 times more.
inline bool sanitized() {
  const char* s = std::getenv("ASYNCPS_TEST_SANITIZED");
  return s && *s && std::string(s) != "0";
}

// The coordinates a finite-difference check compares: all of them; under the sanitizers, every
// k-th and the last, at most about 200 (the kernels still compute every gradient, which is what
// the sanitizers watch; the reference's finite differences, plain loops, are what cost there).
inline std::vector<std::size_t> fd_indices(std::size_t n) {
  if (!sanitized() || n <= 200) return all_indices(n);
  const std::size_t stride = (n + 199) / 200 | 1;  // (odd: across the channels and the columns)
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < n; i += stride) idx.push_back(i);
  if (idx.back() != n - 1) idx.push_back(n - 1);
  return idx;
}

inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return v;
}

inline Vec to_double(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

}  // namespace ref
