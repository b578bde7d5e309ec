// defines: ctr_async::dump_data
// --dump_data DIR: the click streams as .npy files, for programs that train the same model on the
// same data (bench/torch_ctr.py, PyTorch's sparse Hogwild). For each of --dump_workers workers w,
// train<w>_rows.npy (int64, examples x 26: each key's row, asyncps::table_row(key, --rows), the
// row the tables use), train<w>_dense.npy (float32, examples x 13) and train<w>_labels.npy
// (float32); the same for the held-out stream (test_*, --test_examples of them, with
// test_planted.npy: the planted model's logits), and meta.json. Worker w's stream is the one
// ctr_async's worker w trains on.
#pragma once
#include "options.h"

namespace ctr_async {

int dump_data(const Config& c);

}  // namespace ctr_async
