// defines: app_cli::add_library_flags, app_cli::refuse_library_flags_without_effect,
//   app_cli::library_flag_names, app_cli::flag_of, app_cli::kRenamed
// The library's options as a program's flags, made from the library's table
// (asyncps/option_table.h): every option of the groups a program offers becomes a flag with the
// table's help and default, read by the library (set_option) on the command line and in a
// --config file alike, and library_flag_names() gives the library's messages ("Options::mode
// must be ...") those flags' names. The example programs rename a few options (kRenamed) and bind
// the checkpoint directory themselves (--logdir, which also holds their own files). A new option
// of the library needs no line here.
#pragma once
#include <boost/program_options.hpp>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "asyncps/error.h"
#include "asyncps/option_table.h"
#include "asyncps/options.h"
#include "choice_spellings.h"
#include "flag_effect.h"

namespace app_cli {

// The options whose flag is not their key ("": no flag; the program binds the field itself).
struct Renamed {
  std::string_view key, flag;
  bool inverts;  // a switch that sets the option false
};
inline constexpr Renamed kRenamed[] = {
    {"num_servers", "ps", false},
    {"keep", "keep_checkpoints", false},
    {"restore", "no_restore", true},
    {"checkpoint_dir", "", false},  // --logdir
};

using Groups = std::initializer_list<std::string_view>;

inline const Renamed* renamed(std::string_view key) {
  for (const Renamed& r : kRenamed)
    if (r.key == key) return &r;
  return nullptr;
}

inline std::string flag_of(const asyncps::OptionInfo& o) {
  const Renamed* r = renamed(o.key);
  return std::string(r ? r->flag : o.key);
}

inline bool offered(const asyncps::OptionInfo& o, Groups groups) {
  return std::find(groups.begin(), groups.end(), o.group) != groups.end() && !flag_of(o).empty();
}

// Adds a flag for every option of `groups`, bound to `lib`.
inline void add_library_flags(boost::program_options::options_description& flags, asyncps::Options& lib, Groups groups) {
  namespace po = boost::program_options;
  const asyncps::Options defaults;
  for (const asyncps::OptionInfo& o : asyncps::option_table()) {
    if (!offered(o, groups)) continue;
    const std::string flag = flag_of(o);
    const asyncps::OptionInfo* option = &o;
    if (o.type == asyncps::OptionType::Bool) {  // a switch: given, the option is on (or off, inverted)
      const bool inverts = renamed(o.key) && renamed(o.key)->inverts;
      const std::string help = inverts ? "switches off the default, which is to " + std::string(o.help) : std::string(o.help);
      flags.add_options()(flag.c_str(), po::bool_switch()->notifier([&lib, option, inverts](bool given) {
        if (given) asyncps::set_option(lib, *option, inverts ? "false" : "true");
      }),
                          help.c_str());
      continue;
    }
    std::string help(o.help);
    auto* value = po::value<std::string>()->notifier(
        [&lib, option](const std::string& text) { asyncps::set_option(lib, *option, text); });
    if (const std::string d = o.get(defaults); !d.empty()) value->default_value(d);
    flags.add_options()(flag.c_str(), value, help.c_str());
  }
}

// A library flag given (on the command line or in a --config file) where it would have no effect
// is refused, even at its default value (--staleness 0 without --mode ssp), as the program's own
// flags are: ConfigError with the table's no_effect line, which names the option
// ("Options::staleness ...": with_names makes it the flag). Run after the flags are stored.
inline void refuse_library_flags_without_effect(const boost::program_options::variables_map& vm,
                                                const asyncps::Options& lib, Groups groups) {
  for (const asyncps::OptionInfo& o : asyncps::option_table()) {
    if (!offered(o, groups) || !o.no_effect || !given(vm, flag_of(o).c_str())) continue;
    if (std::string why = o.no_effect(lib); !why.empty()) throw asyncps::ConfigError(why);
  }
}

// The library's names of the offered options ("Options::num_servers", its cross-rank messages)
// and the program's flags for them, longest first (app_cli::with_names).
inline std::vector<std::pair<std::string, std::string>> library_flag_names(Groups groups) {
  std::vector<std::pair<std::string, std::string>> names = {{"the same options (", "the same flags ("}};
  for (const asyncps::OptionInfo& o : asyncps::option_table()) {
    if (!offered(o, groups)) continue;
    names.emplace_back(std::string(o.field), "--" + flag_of(o));
    for (auto& spelling : choice_spellings(o, "--" + flag_of(o))) names.push_back(std::move(spelling));
  }
  if (std::find(groups.begin(), groups.end(), "checkpoint") != groups.end()) {
    names.emplace_back("Options::checkpoint.dir", "--logdir");
    names.emplace_back(
        "the same checkpoint directory, save interval, number kept, restart checkpoint and restore choice "
        "(Options::checkpoint)",
        "the same --logdir, --save_secs, --keep_checkpoints, --restart_from and --no_restore");
  }
  std::stable_sort(names.begin(), names.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  return names;
}

}  // namespace app_cli
