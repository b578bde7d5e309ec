// defines: crc32c, masked_crc32c, tf_record, encode_version_event, encode_scalar_event
#include "diagnostics/event_record.h"

#include <array>
#include <cstring>

namespace asyncps::detail {
namespace {

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected 0x1EDC6F41
    t[i] = c;
  }
  return t;
}
constexpr auto kTable = make_table();

void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_key(std::string& out, int field, int wire_type) { put_varint(out, static_cast<std::uint64_t>(field << 3 | wire_type)); }
void put_bytes(std::string& out, int field, std::string_view bytes) {  // wire type 2: length-delimited
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out.append(bytes);
}
void put_double(std::string& out, int field, double v) {  // wire type 1: 64 bits
  put_key(out, field, 1);
  std::uint64_t bits;
  std::memcpy(&bits, &v, 8);
  put_le(out, bits, 8);
}
void put_float(std::string& out, int field, float v) {  // wire type 5: 32 bits
  put_key(out, field, 5);
  std::uint32_t bits;
  std::memcpy(&bits, &v, 4);
  put_le(out, bits, 4);
}
std::string event_head(double wall_time, std::int64_t step) {
  std::string e;
  put_double(e, 1, wall_time);
  if (step != 0) {  // (proto3: a zero is left out)
    put_key(e, 2, 0);
    put_varint(e, static_cast<std::uint64_t>(step));
  }
  return e;
}

}  // namespace

std::uint32_t crc32c(std::string_view bytes) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) c = kTable[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::uint32_t masked_crc32c(std::string_view bytes) {
  const std::uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tf_record(std::string_view data) {
  std::string len, out;
  put_le(len, data.size(), 8);
  out = len;
  put_le(out, masked_crc32c(len), 4);
  out.append(data);
  put_le(out, masked_crc32c(data), 4);
  return out;
}

std::string encode_version_event(double wall_time) {
  std::string e = event_head(wall_time, 0);
  put_bytes(e, 3, "brain.Event:2");
  return e;
}

std::string encode_scalar_event(double wall_time, std::int64_t step,
                                const std::vector<std::pair<std::string, double>>& values) {
  std::string summary;
  for (const auto& [tag, value] : values) {
    std::string v;
    put_bytes(v, 1, tag);
    put_float(v, 2, static_cast<float>(value));
    put_bytes(summary, 1, v);
  }
  std::string e = event_head(wall_time, step);
  put_bytes(e, 5, summary);
  return e;
}

}  // namespace asyncps::detail
