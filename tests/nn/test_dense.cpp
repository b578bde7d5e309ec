#include <catch2/catch.hpp>

#include "nn/dense.h"
#include "reference.h"

using asyncps::nn::DenseDims;

TEST_CASE("dense forward matches the reference and backward matches finite differences",
          "[dense][grad]") {
  const int B = 3, IN = 784, OUT = 10;
  const auto x = ref::random_floats(B * IN, 31), w = ref::random_floats(IN * OUT, 32),
             b = ref::random_floats(OUT, 33), r = ref::random_floats(B * OUT, 34);
  std::vector<float> y(B * OUT);
  asyncps::nn::dense_forward(x.data(), w.data(), b.data(), y.data(), DenseDims{B, IN, OUT});
  const ref::Vec X = ref::to_double(x), Wd = ref::to_double(w), Bd = ref::to_double(b),
                 R = ref::to_double(r);
  const auto expect = ref::dense(X, Wd, Bd, B, IN, OUT);
  for (int i = 0; i < B * OUT; ++i) REQUIRE(y[i] == Approx(expect[i]).margin(1e-4));

  std::vector<float> dw(w.size()), db(b.size()), dx(x.size());
  asyncps::nn::dense_backward(x.data(), w.data(), r.data(), dw.data(), db.data(), dx.data(),
                              DenseDims{B, IN, OUT});
  auto L = [&](const ref::Vec& xx, const ref::Vec& ww, const ref::Vec& bb) {
    return ref::dot(R, ref::dense(xx, ww, bb, B, IN, OUT));
  };
  CHECK(ref::check_grad([&](const ref::Vec& v) { return L(X, v, Bd); }, Wd, dw,
                        ref::all_indices(w.size())).max_rel < 1e-3);
  CHECK(ref::check_grad([&](const ref::Vec& v) { return L(X, Wd, v); }, Bd, db,
                        ref::all_indices(b.size())).max_rel < 1e-3);
  CHECK(ref::check_grad([&](const ref::Vec& v) { return L(v, Wd, Bd); }, X, dx,
                        ref::all_indices(x.size())).max_rel < 1e-3);
}
