// defines: asyncps::limits::tensor_name_problem
#include "asyncps/limits.h"

namespace asyncps::limits {

std::string shown_name(const std::string& name) {
  std::string out = "'";
  for (std::size_t i = 0; i < name.size() && i < 64; ++i) {
    const auto u = static_cast<unsigned char>(name[i]);
    if (u < 0x20 || u == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += name[i];
    }
  }
  return out + (name.size() > 64 ? "...'" : "'");
}

std::string file_name_problem(const std::string& name, std::size_t max_bytes) {
  if (name.empty()) return "is empty";
  if (name.size() > max_bytes)
    return "is " + std::to_string(name.size()) + " bytes long (at most " + std::to_string(max_bytes) + ")";
  if (name == "." || name == "..") return "is '" + name + "' (a tensor name is also a file name)";
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '/' || c == '\\') return std::string("contains '") + c + "' (a tensor name is also a file name)";
    if (u < 0x20 || u == 0x7f) return "contains a control character";
  }
  return {};
}

std::string tensor_name_problem(const std::string& name) { return file_name_problem(name, kMaxTensorNameBytes); }

}  // namespace asyncps::limits
