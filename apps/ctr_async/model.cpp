// defines: ctr_layout, init_dense, forward_backward
#include "model.h"

#include <algorithm>
#include <cmath>

namespace ctr_async {

asyncps::ParamLayout ctr_layout(const ModelShape& s, const asyncps::TableSpec& wide, const asyncps::TableSpec& deep) {
  asyncps::ParamLayout l;
  l.add("bias", {1});
  l.add("dense_w", {s.dense});
  l.add_table("wide", wide);
  if (s.deep) {
    l.add("w1", {s.z(), s.hidden});  // [z][hidden]
    l.add("b1", {s.hidden});
    l.add("w2", {s.hidden});
    l.add("b2", {1});
    l.add_table("deep", deep);
  }
  return l;
}

void init_dense(const asyncps::ParamLayout& layout, std::uint64_t seed, std::span<float> params) {
  std::fill(params.begin(), params.end(), 0.f);
  std::uint64_t state = seed * 0x9e3779b97f4a7c15ull + 12345;
  auto uniform = [&] {  // splitmix64
    std::uint64_t x = (state += 0x9e3779b97f4a7c15ull);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return static_cast<double>((x ^ (x >> 31)) >> 11) * 0x1.0p-53;
  };
  for (const char* name : {"w1", "w2"}) {
    bool found = false;
    for (const auto& t : layout.tensors()) found = found || t.name == name;
    if (!found) continue;
    const auto& t = layout.tensor(name);
    const double fan_in = static_cast<double>(t.shape[0]), fan_out = t.shape.size() > 1 ? static_cast<double>(t.shape[1]) : 1;
    const double limit = std::sqrt(6.0 / (fan_in + fan_out));
    for (std::size_t i = 0; i < t.size; ++i) params[t.offset + i] = static_cast<float>(limit * (2 * uniform() - 1));
  }
}

double forward_backward(const ModelShape& s, const asyncps::ParamLayout& layout, std::span<const float> params,
                        const Batch& b, std::span<const float> wide_rows, std::span<const float> deep_rows,
                        std::vector<float>& logits, Grads* g) {
  const int n = b.n, F = s.fields, Dn = s.dense, D = s.dim, H = s.hidden, Z = s.z();
  const float bias = params[layout.tensor("bias").offset];
  const float* v = params.data() + layout.tensor("dense_w").offset;
  const float *w1 = nullptr, *b1 = nullptr, *w2 = nullptr;
  float b2 = 0;
  if (s.deep) {
    w1 = params.data() + layout.tensor("w1").offset;
    b1 = params.data() + layout.tensor("b1").offset;
    w2 = params.data() + layout.tensor("w2").offset;
    b2 = params[layout.tensor("b2").offset];
  }
  logits.assign(static_cast<std::size_t>(n), 0.f);
  if (g) {
    g->dense.assign(layout.size(), 0.f);
    g->wide.assign(static_cast<std::size_t>(n) * F, 0.f);
    g->deep.assign(s.deep ? static_cast<std::size_t>(n) * F * D : 0, 0.f);
  }
  std::vector<float> z(static_cast<std::size_t>(Z)), pre(static_cast<std::size_t>(H)), dh(static_cast<std::size_t>(H));
  double loss = 0;
  for (int i = 0; i < n; ++i) {
    // wide: bias + rows + v . x
    double logit = bias;
    for (int f = 0; f < F; ++f) logit += wide_rows[static_cast<std::size_t>(i) * F + f];
    const float* x = b.dense.data() + static_cast<std::size_t>(i) * Dn;
    for (int d = 0; d < Dn; ++d) logit += v[d] * x[d];
    if (s.deep) {
      // z = [embeddings, x]; pre = W1^T z + b1; logit += w2 . relu(pre) + b2
      std::copy_n(deep_rows.data() + static_cast<std::size_t>(i) * F * D, F * D, z.data());
      std::copy_n(x, Dn, z.data() + F * D);
      std::copy_n(b1, H, pre.data());
      for (int k = 0; k < Z; ++k) {
        const float zk = z[static_cast<std::size_t>(k)];
        if (zk == 0.f) continue;
        const float* row = w1 + static_cast<std::size_t>(k) * H;
        for (int h = 0; h < H; ++h) pre[static_cast<std::size_t>(h)] += zk * row[h];
      }
      double deep = b2;
      for (int h = 0; h < H; ++h) deep += w2[h] * std::max(0.f, pre[static_cast<std::size_t>(h)]);
      logit += deep;
    }
    logits[static_cast<std::size_t>(i)] = static_cast<float>(logit);
    const double y = b.labels[static_cast<std::size_t>(i)];
    loss += std::max(logit, 0.0) + std::log1p(std::exp(-std::abs(logit))) - y * logit;
    if (!g) continue;
    // d(mean loss)/d logit = (sigmoid(logit) - y) / n
    const float dl = static_cast<float>((1 / (1 + std::exp(-logit)) - y) / n);
    g->dense[layout.tensor("bias").offset] += dl;
    float* gv = g->dense.data() + layout.tensor("dense_w").offset;
    for (int d = 0; d < Dn; ++d) gv[d] += dl * x[d];
    for (int f = 0; f < F; ++f) g->wide[static_cast<std::size_t>(i) * F + f] = dl;
    if (s.deep) {
      float* gw1 = g->dense.data() + layout.tensor("w1").offset;
      float* gb1 = g->dense.data() + layout.tensor("b1").offset;
      float* gw2 = g->dense.data() + layout.tensor("w2").offset;
      g->dense[layout.tensor("b2").offset] += dl;
      for (int h = 0; h < H; ++h) {
        const float p = pre[static_cast<std::size_t>(h)];
        gw2[h] += dl * std::max(0.f, p);
        dh[static_cast<std::size_t>(h)] = p > 0 ? dl * w2[h] : 0.f;
        gb1[h] += dh[static_cast<std::size_t>(h)];
      }
      // dW1 = z dh^T; dz = W1 dh (the embeddings' part goes to the deep rows)
      float* gdeep = g->deep.data() + static_cast<std::size_t>(i) * F * D;
      for (int k = 0; k < Z; ++k) {
        const float zk = z[static_cast<std::size_t>(k)];
        float* grow = gw1 + static_cast<std::size_t>(k) * H;
        const float* row = w1 + static_cast<std::size_t>(k) * H;
        double dz = 0;
        for (int h = 0; h < H; ++h) {
          grow[h] += zk * dh[static_cast<std::size_t>(h)];
          dz += row[h] * dh[static_cast<std::size_t>(h)];
        }
        if (k < F * D) gdeep[k] = static_cast<float>(dz);
      }
    }
  }
  return loss / std::max(n, 1);
}

}  // namespace ctr_async
