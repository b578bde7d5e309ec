// defines: app_cli::given, app_cli::refuse_without, app_cli::refuse_unused, app_cli::refuse_empty_values
// A flag the user gave that would change nothing (--momentum without --optimizer momentum) is
// refused with one line naming what it needs, never ignored.
#pragma once
#include <boost/program_options.hpp>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>

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

// A run of a kind that reads only the flags `used` (--dump_data, --eval_only): ConfigError
// "--FLAG has no effect with WHAT" for the first other flag given.
inline void refuse_unused(const boost::program_options::variables_map& vm, std::initializer_list<std::string_view> used,
                          const std::string& what) {
  for (const auto& [flag, value] : vm)
    if (!value.defaulted() && std::find(used.begin(), used.end(), flag) == used.end())
      throw asyncps::ConfigError("--" + flag + " has no effect with " + what);
}

// Any flag given an empty value: ConfigError "--FLAG must not be empty". For a path ("" would
// read as the flag left out: --logdir '' saving nothing, --timeline '' writing nothing) and for
// a name alike, an empty value is a mistake, never a choice.
inline void refuse_empty_values(const boost::program_options::variables_map& vm) {
  for (const auto& [flag, value] : vm) {
    if (value.defaulted() || value.empty()) continue;
    if (const auto* text = boost::any_cast<std::string>(&value.value()); text && text->empty())
      throw asyncps::ConfigError("--" + flag + " must not be empty (leave the flag out for its default)");
  }
}

}  // namespace app_cli
