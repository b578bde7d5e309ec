// defines: ctr_async::ModelShape, Batch, Grads, ctr_layout, init_dense, forward_backward
// The two click-through models, on rows pulled from the embedding tables:
//   lr         hashed logistic regression: logit = b + sum_f wide[key_f] + v . x
//   wide_deep  the same wide part, plus a deep part on 16-float embeddings of the same keys:
//              z = [deep[key_1] ... deep[key_F], x]  (F*dim + dense floats)
//              logit += w2 . relu(W1^T z + b1) + b2
// The dense arena holds b, v and the deep part's weights; the tables "wide" (dim 1) and "deep"
// (dim 16) the rows.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "asyncps/param_layout.h"

namespace ctr_async {

struct ModelShape {
  bool deep = true;
  int fields = 26, dense = 13, dim = 16, hidden = 64;
  int z() const noexcept { return fields * dim + dense; }  // the deep part's input width
};

struct Batch {
  int n = 0;
  std::vector<std::uint64_t> keys;  // n x fields
  std::vector<float> dense;         // n x dense
  std::vector<float> labels, planted;
};

struct Grads {
  std::vector<float> dense;  // the arena's gradient (layout size)
  std::vector<float> wide;   // n x fields x 1: one per key of the batch
  std::vector<float> deep;   // n x fields x dim
};

asyncps::ParamLayout ctr_layout(const ModelShape& shape, const asyncps::TableSpec& wide, const asyncps::TableSpec& deep);
// Glorot-uniform W1 and w2 from the seed (the same on every server), zeros elsewhere.
void init_dense(const asyncps::ParamLayout& layout, std::uint64_t seed, std::span<float> params);
// logits[i] of the batch; with grads, the gradients of the batch's mean log-loss. Returns that loss.
double forward_backward(const ModelShape& shape, const asyncps::ParamLayout& layout, std::span<const float> params,
                        const Batch& batch, std::span<const float> wide_rows, std::span<const float> deep_rows,
                        std::vector<float>& logits, Grads* grads);

}  // namespace ctr_async
