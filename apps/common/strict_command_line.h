// defines: app_cli::parse_command_line_strictly, app_cli::value_defaulted
// The example programs' command line as their --help lists it: every flag by its whole name (no
// prefixes: --training is not --training_steps) and no words beside the flags (--no_restore
// false would otherwise drop "false" and start afresh). Either is one ConfigError line.
#pragma once
#include <boost/program_options.hpp>

#include <sstream>
#include <string>
#include <type_traits>

#include "asyncps/error.h"

namespace app_cli {

inline boost::program_options::parsed_options parse_command_line_strictly(
    int argc, char** argv, const boost::program_options::options_description& flags) {
  namespace po = boost::program_options;
  namespace style = po::command_line_style;
  const po::parsed_options parsed = po::command_line_parser(argc, argv)
                                        .options(flags)
                                        .style(style::default_style & ~style::allow_guessing)
                                        .run();
  for (const po::option& o : parsed.options)
    if (o.position_key >= 0)  // a word that is no flag's value
      throw asyncps::ConfigError(
          "unexpected argument '" + (o.value.empty() ? std::string() : o.value.front()) +
          "' (each flag takes its value as --flag value or --flag=value; a switch takes none)");
  return parsed;
}

// po::value(field) with its current value as the default, shown in --help as written (0.99, not
// Boost's 0.98999999999999999).
template <class T>
boost::program_options::typed_value<T>* value_defaulted(T* field) {
  auto* v = boost::program_options::value(field);
  if constexpr (std::is_floating_point_v<T>) {
    std::ostringstream shown;
    shown << *field;
    return v->default_value(*field, shown.str());
  } else {
    return v->default_value(*field);
  }
}

}  // namespace app_cli
