// defines: asyncps::detail::crc32c, masked_crc32c, tf_record, encode_scalar_event, encode_version_event
// The bytes of TensorBoard's event files: TFRecord framing and the protobuf messages of one
// Event, written by hand (tensorflow/core/util/event.proto, summary.proto).
//   record:  uint64 length (LE), uint32 masked_crc32c(length), data, uint32 masked_crc32c(data)
//   Event:   1 wall_time (double), 2 step (int64), 3 file_version (string) | 5 summary (Summary)
//   Summary: 1 value (repeated Value);  Value: 1 tag (string), 2 simple_value (float)
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asyncps::detail {

// CRC-32C (Castagnoli, the polynomial 0x1EDC6F41 reflected), as TFRecord uses it.
std::uint32_t crc32c(std::string_view bytes);
// TFRecord's masked form: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
std::uint32_t masked_crc32c(std::string_view bytes);
// One framed record holding `data`.
std::string tf_record(std::string_view data);
// An Event{wall_time, step, file_version = "brain.Event:2"}: an event file's first record.
std::string encode_version_event(double wall_time);
// An Event{wall_time, step, summary{value{tag, simple_value} ...}}.
std::string encode_scalar_event(double wall_time, std::int64_t step,
                                const std::vector<std::pair<std::string, double>>& values);

}  // namespace asyncps::detail
