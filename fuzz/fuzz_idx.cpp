// libFuzzer target: the MNIST IDX reader (lib/mnist/idx.h, parse_idx_images and
// parse_idx_labels: read_idx_* without the file). Contract: returns, or throws DataError; what
// it returns matches its header (count x rows x cols pixels in [0, 1]; labels 0-9). Anything
// else is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "mnist/idx.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_idx: the IDX reader returned data that breaks its contract: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace asyncps::mnist;
  const std::span<const unsigned char> bytes(data, size);
  try {
    const IdxImages im = parse_idx_images(bytes, "fuzz-images.idx");
    check(im.count > 0 && im.rows > 0 && im.cols > 0, "positive dimensions");
    check(im.pixels.size() == std::size_t(im.count) * std::size_t(im.rows) * std::size_t(im.cols),
          "count x rows x cols pixels");
    for (const float p : im.pixels) check(p >= 0.0f && p <= 1.0f, "pixels in [0, 1]");
  } catch (const DataError&) {
  }
  try {
    const auto labels = parse_idx_labels(bytes, "fuzz-labels.idx");
    check(!labels.empty() && labels.size() + 8 == size, "one label per byte after the header");
    for (const auto l : labels) check(l <= 9, "labels 0-9");
  } catch (const DataError&) {
  }
  return 0;
}
