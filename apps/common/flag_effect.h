// defines: app_cli::given, app_cli::refuse_without
// A flag the user gave that would change nothing (--momentum without --optimizer momentum) is
// refused with one line naming what it needs, never ignored.
#pragma once
#include <boost/program_options.hpp>

#include <string>

#include "asyncps/error.h"

namespace app_cli {

// Whether `flag` was given (on the command line or in a --config file), not only defaulted.
inline bool given(const boost::program_options::variables_map& vm, const char* flag) {
  const auto it = vm.find(flag);
  return it != vm.end() && !it->second.defaulted();
}

// ConfigError "--FLAG has no effect without NEEDS" when `flag` was given and `takes_effect` is false.
inline void refuse_without(const boost::program_options::variables_map& vm, const char* flag, bool takes_effect,
                           const std::string& needs) {
  if (given(vm, flag) && !takes_effect)
    throw asyncps::ConfigError(std::string("--") + flag + " has no effect without " + needs);
}

}  // namespace app_cli
