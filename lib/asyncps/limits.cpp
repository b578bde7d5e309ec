// defines: asyncps::limits::tensor_name_problem
#include "asyncps/limits.h"

namespace asyncps::limits {

std::string tensor_name_problem(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxTensorNameBytes)
    return "is " + std::to_string(name.size()) + " bytes long (at most " + std::to_string(kMaxTensorNameBytes) + ")";
  if (name == "." || name == "..") return "is '" + name + "' (a tensor name is also a file name)";
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '/' || c == '\\') return std::string("contains '") + c + "' (a tensor name is also a file name)";
    if (u < 0x20 || u == 0x7f) return "contains a control character";
  }
  return {};
}

}  // namespace asyncps::limits
