// defines: asyncps_python::int64_arg, uint64_arg, int_arg, double_arg, float32_arg, scale_arg, bool_arg,
//          str_arg, path_arg, optional_path_arg, type_name, short_repr
// The binding converts every scalar argument itself instead of leaving it to pybind11, so that
// a hostile value is one clear exception naming the call and the argument, raised before
// anything is sent:
//   - the wrong Python type (a str where a number goes, a bool where an integer goes, a float
//     where an integer goes, bytes where a str goes): TypeError;
//   - a value the C++ type cannot hold (2**63 for an int64, 1e300 for a float32, a NUL byte in
//     a path, text that is not UTF-8): asyncps.ConfigError, like the values the library refuses.
// Every message starts with "asyncps: <call>: <argument>". (Buffers: buffers.h.)
#pragma once
#include <pybind11/pybind11.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace asyncps_python {

std::string type_name(pybind11::handle v);   // "int", "numpy.float64"
std::string short_repr(pybind11::handle v);  // repr(v), at most 60 characters (never raises)

std::int64_t int64_arg(pybind11::handle v, const char* call, const char* arg);
std::uint64_t uint64_arg(pybind11::handle v, const char* call, const char* arg);  // [0, 2**64)
int int_arg(pybind11::handle v, const char* call, const char* arg);
// Any real number (finite or not: the library validates the value).
double double_arg(pybind11::handle v, const char* call, const char* arg);
// A real number a float32 holds (NaN and +-Inf pass; a finite value beyond float32 does not).
float float32_arg(pybind11::handle v, const char* call, const char* arg);
// A scale of push/push_async/end_step: finite float32 ("... (nothing was sent)").
float scale_arg(pybind11::handle v, const char* call);
bool bool_arg(pybind11::handle v, const char* call, const char* arg);
std::string str_arg(pybind11::handle v, const char* call, const char* arg);
// str, bytes or os.PathLike, without NUL bytes.
std::filesystem::path path_arg(pybind11::handle v, const char* call, const char* arg);
std::optional<std::filesystem::path> optional_path_arg(pybind11::handle v, const char* call, const char* arg);

}  // namespace asyncps_python
