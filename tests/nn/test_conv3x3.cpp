#include <catch2/catch.hpp>

#include "nn/conv3x3.h"
#include "nn/maxpool.h"
#include "reference.h"

using asyncps::nn::Conv3x3Dims;
using asyncps::nn::Pool2x2Dims;

namespace {

struct ConvCase {
  int B, H, W, CI, CO;
};
// The model's two shapes (fast paths), widths 7 and 21 with CI 8 / CO 16 (the fast path in 7-pixel
// blocks without AVX-512, the generic path with it), and odd shapes (generic path).
const ConvCase kCases[] = {{2, 28, 28, 1, 8}, {2, 14, 14, 8, 16}, {1, 7, 7, 8, 16},
                           {2, 6, 21, 8, 16}, {3, 5, 7, 3, 5},   {2, 6, 4, 8, 16}};

std::size_t sz(int B, int H, int W, int C) { return static_cast<std::size_t>(B) * H * W * C; }

}  // namespace

TEST_CASE("conv3x3 forward matches a naive direct loop, including SAME padding at the borders",
          "[conv3x3]") {
  for (const auto& c : kCases) {
    CAPTURE(c.B, c.H, c.W, c.CI, c.CO);
    const auto x = ref::random_floats(sz(c.B, c.H, c.W, c.CI), 1);
    const auto w = ref::random_floats(9 * c.CI * c.CO, 2);
    const auto b = ref::random_floats(c.CO, 3);
    std::vector<float> out(sz(c.B, c.H, c.W, c.CO), -99.0f);
    asyncps::nn::conv3x3_forward(x.data(), w.data(), b.data(), out.data(),
                                 Conv3x3Dims{c.B, c.H, c.W, c.CI, c.CO});
    const auto expect = ref::conv3x3(ref::to_double(x), ref::to_double(w), ref::to_double(b), c.B,
                                     c.H, c.W, c.CI, c.CO);
    for (std::size_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == Approx(expect[i]).margin(1e-5));
  }
}

TEST_CASE("conv3x3 SAME padding: an all-ones image and kernel count the in-bounds taps",
          "[conv3x3]") {
  const int H = 14, W = 14, CI = 8, CO = 16;
  std::vector<float> x(sz(1, H, W, CI), 1.0f), w(9 * CI * CO, 1.0f), b(CO, 0.0f), out(sz(1, H, W, CO));
  asyncps::nn::conv3x3_forward(x.data(), w.data(), b.data(), out.data(), Conv3x3Dims{1, H, W, CI, CO});
  CHECK(out[0] == Approx(4 * CI));                                // corner: 2x2 taps
  CHECK(out[(0 * W + 5) * CO] == Approx(6 * CI));                 // top edge: 2x3 taps
  CHECK(out[(5 * W + 5) * CO + 3] == Approx(9 * CI));             // interior: 3x3 taps
  CHECK(out[((H - 1) * W + W - 1) * CO + 15] == Approx(4 * CI));  // far corner
}

TEST_CASE("conv3x3 backward matches double-precision finite differences (x, w, b)", "[conv3x3][grad]") {
  for (const auto& c : kCases) {
    CAPTURE(c.B, c.H, c.W, c.CI, c.CO);
    const Conv3x3Dims d{c.B, c.H, c.W, c.CI, c.CO};
    const auto x = ref::random_floats(sz(c.B, c.H, c.W, c.CI), 4);
    const auto w = ref::random_floats(9 * c.CI * c.CO, 5);
    const auto b = ref::random_floats(c.CO, 6);
    const auto r = ref::random_floats(sz(c.B, c.H, c.W, c.CO), 7);  // L = sum(r * conv(x))
    std::vector<float> dw(w.size()), db(b.size()), dx(x.size());
    asyncps::nn::conv3x3_backward(x.data(), w.data(), r.data(), dw.data(), db.data(), dx.data(), d);
    const ref::Vec X = ref::to_double(x), Wd = ref::to_double(w), Bd = ref::to_double(b),
                   R = ref::to_double(r);
    auto L = [&](const ref::Vec& xx, const ref::Vec& ww, const ref::Vec& bb) {
      return ref::dot(R, ref::conv3x3(xx, ww, bb, c.B, c.H, c.W, c.CI, c.CO));
    };
    const auto gw = ref::check_grad([&](const ref::Vec& v) { return L(X, v, Bd); }, Wd, dw,
                                    ref::fd_indices(w.size()));
    const auto gb = ref::check_grad([&](const ref::Vec& v) { return L(X, Wd, v); }, Bd, db,
                                    ref::fd_indices(b.size()));
    const auto gx = ref::check_grad([&](const ref::Vec& v) { return L(v, Wd, Bd); }, X, dx,
                                    ref::fd_indices(x.size()));
    CHECK(gw.max_rel < 1e-3);
    CHECK(gb.max_rel < 1e-3);
    CHECK(gx.max_rel < 1e-3);
  }
}

TEST_CASE("conv3x3 backward through a max pool (fused, sparse) equals pool backward + conv backward "
          "and finite differences",
          "[conv3x3][maxpool][grad]") {
  for (const auto& c : kCases) {
    for (bool with_dx : {true, false}) {
      CAPTURE(c.B, c.H, c.W, c.CI, c.CO, with_dx);
      const Conv3x3Dims d{c.B, c.H, c.W, c.CI, c.CO};
      const Pool2x2Dims pd{c.B, c.H, c.W, c.CO};
      const int PH = pd.ph(), PW = pd.pw();
      const auto x = ref::random_floats(sz(c.B, c.H, c.W, c.CI), 8);
      const auto w = ref::random_floats(9 * c.CI * c.CO, 9);
      const auto b = ref::random_floats(c.CO, 10);
      const auto r = ref::random_floats(sz(c.B, PH, PW, c.CO), 11);  // L = sum(r * pool(conv(x)))
      std::vector<float> y(sz(c.B, c.H, c.W, c.CO)), p(r.size());
      std::vector<std::int32_t> idx(r.size());
      asyncps::nn::conv3x3_forward(x.data(), w.data(), b.data(), y.data(), d);
      asyncps::nn::maxpool2x2_forward(y.data(), p.data(), idx.data(), pd);

      std::vector<float> dw(w.size()), db(b.size()), dx(x.size(), 7.0f);
      asyncps::nn::conv3x3_backward_pooled(x.data(), w.data(), idx.data(), r.data(), PH, PW,
                                           dw.data(), db.data(), with_dx ? dx.data() : nullptr, d);
      // dense composition
      std::vector<float> dy(y.size()), dw2(w.size()), db2(b.size()), dx2(x.size());
      asyncps::nn::maxpool2x2_backward(r.data(), idx.data(), dy.data(), pd);
      asyncps::nn::conv3x3_backward(x.data(), w.data(), dy.data(), dw2.data(), db2.data(),
                                    dx2.data(), d);
      for (std::size_t i = 0; i < dw.size(); ++i) REQUIRE(dw[i] == Approx(dw2[i]).margin(1e-4));
      for (std::size_t i = 0; i < db.size(); ++i) REQUIRE(db[i] == Approx(db2[i]).margin(1e-4));
      if (with_dx)
        for (std::size_t i = 0; i < dx.size(); ++i) REQUIRE(dx[i] == Approx(dx2[i]).margin(1e-4));
      else
        for (float v : dx) REQUIRE(v == 7.0f);  // untouched

      const ref::Vec X = ref::to_double(x), Wd = ref::to_double(w), Bd = ref::to_double(b),
                     R = ref::to_double(r);
      auto L = [&](const ref::Vec& xx, const ref::Vec& ww, const ref::Vec& bb) {
        return ref::dot(R, ref::maxpool(ref::conv3x3(xx, ww, bb, c.B, c.H, c.W, c.CI, c.CO), c.B,
                                        c.H, c.W, c.CO));
      };
      const auto gw = ref::check_grad([&](const ref::Vec& v) { return L(X, v, Bd); }, Wd, dw,
                                      ref::fd_indices(w.size()));
      const auto gb = ref::check_grad([&](const ref::Vec& v) { return L(X, Wd, v); }, Bd, db,
                                      ref::fd_indices(b.size()));
      CHECK(gw.max_rel < 1e-3);
      CHECK(gb.max_rel < 1e-3);
      if (with_dx) {
        const auto gx = ref::check_grad([&](const ref::Vec& v) { return L(v, Wd, Bd); }, X, dx,
                                        ref::fd_indices(x.size()));
        CHECK(gx.max_rel < 1e-3);
      }
    }
  }
}
