#include "mnist/idx.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>

namespace asyncps::mnist {
namespace {

// Sanity bounds on header fields: far above anything MNIST-like, far below overflow.
constexpr std::uint32_t kMaxCount = 100'000'000;
constexpr std::uint32_t kMaxSide = 10'000;

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& problem) {
  throw DataError(file.string() + ": " + problem);
}

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", static_cast<unsigned>(v));
  return buf;
}

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

// One read of the whole file. Rejects missing, unreadable and empty files.
std::vector<unsigned char> slurp(const std::filesystem::path& file) {
  std::error_code ec;
  const auto status = std::filesystem::status(file, ec);
  if (!std::filesystem::exists(status)) fail(file, "file not found");
  if (std::filesystem::is_directory(status)) fail(file, "is a directory, not an IDX file");
  // a FIFO, socket or device in its place would block the read (or never end): refused
  if (!std::filesystem::is_regular_file(status)) fail(file, "not a regular file (a FIFO, socket or device?)");

  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in) fail(file, std::string("cannot open for reading: ") + std::strerror(errno));
  const std::streamoff size = in.tellg();
  if (size < 0) fail(file, "cannot determine the file size");
  if (size == 0) fail(file, "empty file (0 bytes)");
  std::vector<unsigned char> bytes(static_cast<std::size_t>(size));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), size);
  if (in.gcount() != size)
    fail(file, "read error: got " + std::to_string(in.gcount()) + " of " + std::to_string(size) +
                   " bytes");
  return bytes;
}

void check_magic(const std::filesystem::path& file, std::uint32_t got, std::uint32_t want,
                 const char* what) {
  if (got == want) return;
  std::string msg = "wrong magic number " + hex32(got) + ", expected " + hex32(want) + " (" +
                    what + ")";
  if ((got >> 16) == 0x1f8b) msg += "; the file looks gzip-compressed, gunzip it first";
  else if (got == kIdxLabelsMagic) msg += "; this looks like an IDX label file";
  else if (got == kIdxImagesMagic) msg += "; this looks like an IDX image file";
  fail(file, msg);
}

void check_size(const std::filesystem::path& file, std::size_t actual, std::uint64_t expected,
                const std::string& header_says) {
  if (actual == expected) return;
  const char* kind = actual < expected ? "truncated" : "trailing bytes";
  fail(file, std::string(kind) + ": header says " + header_says + " (" +
                 std::to_string(expected) + " bytes) but the file has " + std::to_string(actual) +
                 " bytes");
}

}  // namespace

IdxImages read_idx_images(const std::filesystem::path& file) { return parse_idx_images(slurp(file), file); }

std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& file) { return parse_idx_labels(slurp(file), file); }

IdxImages parse_idx_images(std::span<const unsigned char> bytes, const std::filesystem::path& file) {
  constexpr std::size_t kHeader = 16;
  if (bytes.empty()) fail(file, "empty file (0 bytes)");
  // Magic first (when there are 4 bytes), so a wrong kind of file is reported as such.
  if (bytes.size() >= 4)
    check_magic(file, be32(&bytes[0]), kIdxImagesMagic, "IDX images: unsigned byte, 3 dimensions");
  if (bytes.size() < kHeader)
    fail(file, "too short for an IDX image header: " + std::to_string(bytes.size()) +
                   " bytes, need " + std::to_string(kHeader));

  const std::uint32_t count = be32(&bytes[4]), rows = be32(&bytes[8]), cols = be32(&bytes[12]);
  const std::string dims = std::to_string(count) + " images of " + std::to_string(rows) + "x" +
                           std::to_string(cols);
  if (count == 0 || rows == 0 || cols == 0) fail(file, "zero dimension: header says " + dims);
  if (count > kMaxCount || rows > kMaxSide || cols > kMaxSide)
    fail(file, "absurd dimensions: header says " + dims);

  const std::uint64_t per_image = std::uint64_t{rows} * cols;
  check_size(file, bytes.size(), kHeader + std::uint64_t{count} * per_image, dims);

  // byte/255 through a table: exact same value as the division, one lookup per pixel.
  std::array<float, 256> scale{};
  for (int b = 0; b < 256; ++b) scale[static_cast<std::size_t>(b)] = static_cast<float>(b) / 255.0f;

  IdxImages out;
  out.count = static_cast<int>(count);
  out.rows = static_cast<int>(rows);
  out.cols = static_cast<int>(cols);
  out.pixels.resize(bytes.size() - kHeader);
  const unsigned char* src = bytes.data() + kHeader;
  for (std::size_t i = 0; i < out.pixels.size(); ++i) out.pixels[i] = scale[src[i]];
  return out;
}

std::vector<std::uint8_t> parse_idx_labels(std::span<const unsigned char> bytes, const std::filesystem::path& file) {
  constexpr std::size_t kHeader = 8;
  if (bytes.empty()) fail(file, "empty file (0 bytes)");
  // Magic first (when there are 4 bytes), so a wrong kind of file is reported as such.
  if (bytes.size() >= 4)
    check_magic(file, be32(&bytes[0]), kIdxLabelsMagic, "IDX labels: unsigned byte, 1 dimension");
  if (bytes.size() < kHeader)
    fail(file, "too short for an IDX label header: " + std::to_string(bytes.size()) +
                   " bytes, need " + std::to_string(kHeader));

  const std::uint32_t count = be32(&bytes[4]);
  const std::string says = std::to_string(count) + " labels";
  if (count == 0) fail(file, "zero dimension: header says 0 labels");
  if (count > kMaxCount) fail(file, "absurd dimensions: header says " + says);
  check_size(file, bytes.size(), kHeader + std::uint64_t{count}, says);

  std::vector<std::uint8_t> labels(bytes.begin() + kHeader, bytes.end());
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i] > 9)
      fail(file, "label out of range: value " + std::to_string(labels[i]) + " at index " +
                     std::to_string(i) + " (labels must be 0-9)");
  return labels;
}

}  // namespace asyncps::mnist
