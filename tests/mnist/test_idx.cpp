#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "idx_files.h"
#include "mnist/idx.h"

using namespace asyncps::mnist;
using namespace mnist_test;
using Catch::Matchers::Contains;

namespace {

std::vector<std::uint8_t> some_pixels(std::size_t n) {
  std::vector<std::uint8_t> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>((i * 97) % 256);
  p[0] = 0;
  p[1] = 255;
  return p;
}

}  // namespace

TEST_CASE("a well-formed IDX image file round-trips as byte/255", "[idx]") {
  TempDir dir;
  const auto file = dir / "images";
  const auto bytes = some_pixels(3 * 4 * 5);
  write_bytes(file, idx_images_bytes(3, 4, 5, bytes));

  const IdxImages img = read_idx_images(file);
  CHECK(img.count == 3);
  CHECK(img.rows == 4);
  CHECK(img.cols == 5);
  REQUIRE(img.pixels.size() == bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i)
    REQUIRE(img.pixels[i] == static_cast<float>(bytes[i]) / 255.0f);
  CHECK(img.pixels[0] == 0.0f);
  CHECK(img.pixels[1] == 1.0f);
}

TEST_CASE("a well-formed IDX label file round-trips exactly", "[idx]") {
  TempDir dir;
  const auto file = dir / "labels";
  const std::vector<std::uint8_t> labels{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 0, 7};
  write_bytes(file, idx_labels_bytes(labels));
  CHECK(read_idx_labels(file) == labels);
}

TEST_CASE("a truncated image file is a DataError naming the file and the sizes", "[idx]") {
  TempDir dir;
  const auto file = dir / "train-images-idx3-ubyte";
  // Header claims 60000 28x28 images; only 984 pixel bytes follow (1000 bytes in all).
  write_bytes(file, idx_images_bytes(60000, 28, 28, some_pixels(984)));
  const auto msg = data_error_message([&] { read_idx_images(file); });
  CHECK(msg == file.string() +
                   ": truncated: header says 60000 images of 28x28 (47040016 bytes) but the file "
                   "has 1000 bytes");
}

TEST_CASE("a truncated label file is a DataError", "[idx]") {
  TempDir dir;
  const auto file = dir / "labels";
  auto bytes = idx_labels_bytes({1, 2, 3, 4});
  bytes.pop_back();
  write_bytes(file, bytes);
  const auto msg = data_error_message([&] { read_idx_labels(file); });
  CHECK_THAT(msg, Contains(file.string()) && Contains("truncated") && Contains("4 labels"));
}

TEST_CASE("an empty file is a DataError saying it is empty", "[idx]") {
  TempDir dir;
  const auto file = dir / "empty";
  write_bytes(file, {});
  CHECK_THAT(data_error_message([&] { read_idx_images(file); }),
             Contains(file.string()) && Contains("empty"));
  CHECK_THAT(data_error_message([&] { read_idx_labels(file); }),
             Contains(file.string()) && Contains("empty"));
}

TEST_CASE("a file shorter than the IDX header is a DataError", "[idx]") {
  TempDir dir;
  const auto file = dir / "short";
  write_bytes(file, {0, 0, 8, 3, 0, 0, 0, 1, 0, 0});  // image magic, 10 of 16 header bytes
  CHECK_THAT(data_error_message([&] { read_idx_images(file); }),
             Contains(file.string()) && Contains("too short"));
  write_bytes(file, {0, 0, 8, 1, 0, 0});  // label magic, 6 of 8 header bytes
  CHECK_THAT(data_error_message([&] { read_idx_labels(file); }),
             Contains(file.string()) && Contains("too short"));
  write_bytes(file, {0, 0});  // not even a magic number
  CHECK_THAT(data_error_message([&] { read_idx_images(file); }),
             Contains(file.string()) && Contains("too short"));
}

TEST_CASE("a missing file or a directory is a DataError naming the path", "[idx]") {
  TempDir dir;
  const auto missing = dir / "no-such-file";
  CHECK_THAT(data_error_message([&] { read_idx_images(missing); }),
             Contains(missing.string()) && Contains("not found"));
  CHECK_THAT(data_error_message([&] { read_idx_labels(missing); }),
             Contains(missing.string()) && Contains("not found"));
  CHECK_THAT(data_error_message([&] { read_idx_images(dir.path()); }),
             Contains(dir.path().string()) && Contains("directory"));
}

TEST_CASE("a wrong magic number is a DataError naming the file and both magics", "[idx]") {
  TempDir dir;
  const auto labels_as_images = dir / "labels";
  write_bytes(labels_as_images, idx_labels_bytes({1, 2, 3}));
  CHECK_THAT(data_error_message([&] { read_idx_images(labels_as_images); }),
             Contains(labels_as_images.string()) && Contains("wrong magic") &&
                 Contains("0x00000801") && Contains("0x00000803"));

  const auto images_as_labels = dir / "images";
  write_bytes(images_as_labels, idx_images_bytes(1, 2, 2, some_pixels(4)));
  CHECK_THAT(data_error_message([&] { read_idx_labels(images_as_labels); }),
             Contains(images_as_labels.string()) && Contains("wrong magic"));

  const auto gz = dir / "images.gz";
  write_bytes(gz, {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  CHECK_THAT(data_error_message([&] { read_idx_images(gz); }),
             Contains(gz.string()) && Contains("wrong magic") && Contains("gunzip"));
}

TEST_CASE("trailing bytes after the data are a DataError", "[idx]") {
  TempDir dir;
  const auto images = dir / "images";
  auto bytes = idx_images_bytes(2, 3, 3, some_pixels(18));
  bytes.push_back(42);
  write_bytes(images, bytes);
  CHECK(data_error_message([&] { read_idx_images(images); }) ==
        images.string() +
            ": trailing bytes: header says 2 images of 3x3 (34 bytes) but the file has 35 bytes");

  const auto labels = dir / "labels";
  auto lbytes = idx_labels_bytes({1, 2});
  lbytes.insert(lbytes.end(), {0, 0, 0});
  write_bytes(labels, lbytes);
  CHECK_THAT(data_error_message([&] { read_idx_labels(labels); }),
             Contains(labels.string()) && Contains("trailing bytes"));
}

TEST_CASE("zero or absurd image dimensions are a DataError", "[idx]") {
  TempDir dir;
  const auto file = dir / "images";
  write_bytes(file, idx_images_bytes(5, 0, 28, {}));
  CHECK_THAT(data_error_message([&] { read_idx_images(file); }),
             Contains(file.string()) && Contains("zero dimension"));
  write_bytes(file, idx_images_bytes(0, 28, 28, {}));
  CHECK_THAT(data_error_message([&] { read_idx_images(file); }),
             Contains(file.string()) && Contains("zero dimension"));
  write_bytes(file, idx_images_bytes(0xffffffffu, 0xffffffffu, 28, some_pixels(100)));
  CHECK_THAT(data_error_message([&] { read_idx_images(file); }),
             Contains(file.string()) && Contains("absurd"));
  write_bytes(file, idx_labels_bytes({}));
  CHECK_THAT(data_error_message([&] { read_idx_labels(file); }),
             Contains(file.string()) && Contains("zero dimension"));
}

TEST_CASE("a label above 9 is a DataError naming the file, value and index", "[idx]") {
  TempDir dir;
  const auto file = dir / "labels";
  write_bytes(file, idx_labels_bytes({3, 9, 0, 12, 5}));
  const auto msg = data_error_message([&] { read_idx_labels(file); });
  CHECK_THAT(msg, Contains(file.string()) && Contains("out of range") && Contains("value 12") &&
                      Contains("index 3"));
  CHECK(msg.find('\n') == std::string::npos);
}
