#include <catch2/catch.hpp>

#include <string>

#include "idx_files.h"
#include "mnist/dataset.h"

using namespace asyncps::mnist;
using namespace mnist_test;
using Catch::Matchers::Contains;

namespace {

// A data directory laid out like the real one, with small synthetic files.
void write_dataset(const TempDir& dir, std::size_t train, std::size_t test) {
  write_mnist_pair(dir / kTrainImagesFile, dir / kTrainLabelsFile, train, train);
  write_mnist_pair(dir / kTestImagesFile, dir / kTestLabelsFile, test, test);
}

}  // namespace

TEST_CASE("load_mnist: a missing data directory says how to get the data", "[dataset]") {
  TempDir dir;
  const auto missing = dir / "no-such-dir";
  const auto msg = data_error_message([&] { load_mnist(missing); });
  CHECK_THAT(msg, Contains(missing.string()) && Contains("not found") && Contains("make data") &&
                      Contains("--data_dir"));
}

TEST_CASE("load_mnist: a missing file in the data directory is a DataError naming it",
          "[dataset]") {
  TempDir dir;
  write_dataset(dir, 5010, 3);
  std::filesystem::remove(dir / kTestLabelsFile);
  const auto msg = data_error_message([&] { load_mnist(dir.path()); });
  CHECK_THAT(msg, Contains((dir / kTestLabelsFile).string()) && Contains("not found") &&
                      Contains("make data"));
}

TEST_CASE("load_mnist: image and label counts that differ are a DataError naming both files",
          "[dataset]") {
  TempDir dir;
  write_dataset(dir, 5010, 3);
  write_mnist_pair(dir / kTestImagesFile, dir / kTestLabelsFile, 3, 4);
  const auto msg = data_error_message([&] { load_mnist(dir.path()); });
  CHECK_THAT(msg, Contains((dir / kTestImagesFile).string()) &&
                      Contains((dir / kTestLabelsFile).string()) && Contains("3 images") &&
                      Contains("4 labels"));
}

TEST_CASE("load_mnist: images that are not 28x28 are a DataError", "[dataset]") {
  TempDir dir;
  write_dataset(dir, 5010, 3);
  write_bytes(dir / kTestImagesFile, idx_images_bytes(3, 32, 32, std::vector<std::uint8_t>(3 * 1024)));
  const auto msg = data_error_message([&] { load_mnist(dir.path()); });
  CHECK_THAT(msg, Contains((dir / kTestImagesFile).string()) && Contains("32x32") &&
                      Contains("expected 28x28"));
}

TEST_CASE("load_mnist: a training set no larger than the validation split is a DataError",
          "[dataset]") {
  TempDir dir;
  write_dataset(dir, 5000, 3);
  CHECK_THAT(data_error_message([&] { load_mnist(dir.path()); }),
             Contains((dir / kTrainImagesFile).string()) && Contains("5000"));
}

TEST_CASE("load_mnist: validation is the first 5000 training images, train the rest",
          "[dataset]") {
  TempDir dir;
  write_dataset(dir, 5000 + 37, 11);
  const Mnist m = load_mnist(dir.path());

  REQUIRE(m.validation.size() == 5000);
  REQUIRE(m.train.size() == 37);
  REQUIRE(m.test.size() == 11);
  CHECK(m.validation.images.size() == 5000 * kPixels);
  CHECK(m.train.images.size() == 37 * kPixels);
  CHECK(m.test.images.size() == 11 * kPixels);

  for (std::size_t i = 0; i < m.validation.size(); ++i) {
    REQUIRE(image_id(m.validation.image(i).data()) == i);
    REQUIRE(m.validation.labels[i] == i % 10);
  }
  for (std::size_t i = 0; i < m.train.size(); ++i) {
    const auto img = m.train.image(i);
    REQUIRE(img.size() == kPixels);
    REQUIRE(image_id(img.data()) == 5000 + i);
    REQUIRE(img[500] == static_cast<float>(tag_byte(5000 + i)) / 255.0f);
    REQUIRE(m.train.labels[i] == (5000 + i) % 10);
  }
  for (std::size_t i = 0; i < m.test.size(); ++i) REQUIRE(image_id(m.test.image(i).data()) == i);
  CHECK_THROWS_AS(m.test.image(11), DataError);
}

TEST_CASE("load_mnist: train_limit keeps only the first N training examples", "[dataset]") {
  TempDir dir;
  write_dataset(dir, 5000 + 37, 11);
  const Mnist m = load_mnist(dir.path(), 5);
  REQUIRE(m.train.size() == 5);
  CHECK(m.train.images.size() == 5 * kPixels);
  for (std::size_t i = 0; i < 5; ++i) CHECK(image_id(m.train.image(i).data()) == 5000 + i);
  CHECK(m.validation.size() == 5000);
  CHECK(m.test.size() == 11);

  CHECK(load_mnist(dir.path(), 1000).train.size() == 37);  // a limit above the size keeps all
}
