// defines: asyncps::detail::number_text — a number as the library's messages show it: the
// shortest text that reads back the same ("0.1", "1e+30", "nan", "inf"), not std::to_string's
// six decimals ("0.100000", "0.000000" for 1e-7)
#pragma once
#include <charconv>
#include <string>

namespace asyncps::detail {

template <class T>
std::string number_text(T v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // (a float as a float: 0.1, not 0.100000001)
  return std::string(buf, r.ptr);
}

}  // namespace asyncps::detail
