// Tests on the real MNIST files. Hidden from the default run ([.]); CMake registers
// them as the ctest test mnist_real_data (`test_mnist [real]`, ASYNCPS_MNIST_DIR set);
// `make test` fetches the data first. Run by hand as
//   ASYNCPS_MNIST_DIR=data/mnist test_mnist [real]
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "mnist/dataset.h"
#include "mnist/idx.h"

using namespace asyncps::mnist;

namespace {

// The data directory, or a test failure saying why it is missing (never a silent skip).
std::filesystem::path real_data_dir() {
  const char* env = std::getenv("ASYNCPS_MNIST_DIR");
  if (env == nullptr || *env == '\0')
    FAIL("MNIST data missing: ASYNCPS_MNIST_DIR is not set (run scripts/fetch-mnist.sh data/mnist)");
  const std::filesystem::path dir(env);
  if (!std::filesystem::exists(dir / kTrainImagesFile))
    FAIL("MNIST data missing: no " << kTrainImagesFile << " in " << dir.string()
                                   << " (run scripts/fetch-mnist.sh " << dir.string() << ")");
  return dir;
}

}  // namespace

TEST_CASE("real MNIST: splits are 55000/5000/10000 and validation is the first 5000 training images",
          "[.][real]") {
  const auto dir = real_data_dir();
  const Mnist m = load_mnist(dir);
  CHECK(m.train.size() == 55000);
  CHECK(m.validation.size() == 5000);
  CHECK(m.test.size() == 10000);
  CHECK(m.train.images.size() == 55000 * kPixels);
  CHECK(m.validation.images.size() == 5000 * kPixels);
  CHECK(m.test.images.size() == 10000 * kPixels);

  const IdxImages raw = read_idx_images(dir / kTrainImagesFile);
  const auto raw_labels = read_idx_labels(dir / kTrainLabelsFile);
  REQUIRE(raw.count == 60000);
  const auto val_end = raw.pixels.begin() + static_cast<std::ptrdiff_t>(5000 * kPixels);
  CHECK(std::equal(m.validation.images.begin(), m.validation.images.end(), raw.pixels.begin(),
                   val_end));
  CHECK(std::equal(m.train.images.begin(), m.train.images.end(), val_end, raw.pixels.end()));
  CHECK(std::equal(m.validation.labels.begin(), m.validation.labels.end(), raw_labels.begin(),
                   raw_labels.begin() + 5000));
  CHECK(std::equal(m.train.labels.begin(), m.train.labels.end(), raw_labels.begin() + 5000,
                   raw_labels.end()));

  // Well-known facts about MNIST: the first training labels are 5 0 4 1 9, test 7 2 1.
  CHECK(m.validation.labels[0] == 5);
  CHECK(m.validation.labels[1] == 0);
  CHECK(m.validation.labels[2] == 4);
  CHECK(m.test.labels[0] == 7);
  CHECK(m.test.labels[1] == 2);
  CHECK(m.test.labels[2] == 1);

  std::array<int, kClasses> counts{};
  for (auto l : m.train.labels) ++counts[l];
  for (int c : counts) CHECK(c > 4000);
  const auto [lo, hi] = std::minmax_element(m.test.images.begin(), m.test.images.end());
  CHECK(*lo == 0.0f);
  CHECK(*hi == 1.0f);
}

TEST_CASE("real MNIST: train_limit keeps the first N training examples", "[.][real]") {
  const auto dir = real_data_dir();
  const Mnist m = load_mnist(dir, 100);
  CHECK(m.train.size() == 100);
  CHECK(m.validation.size() == 5000);
  CHECK(m.test.size() == 10000);
  const IdxImages raw = read_idx_images(dir / kTrainImagesFile);
  const auto first = raw.pixels.begin() + static_cast<std::ptrdiff_t>(5000 * kPixels);
  CHECK(std::equal(m.train.images.begin(), m.train.images.end(), first,
                   first + static_cast<std::ptrdiff_t>(100 * kPixels)));
}
