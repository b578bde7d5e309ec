// defines: asyncps::OptionInfo, OptionType, RankAgreement, option_table, find_option, set_option
// Every option of the library (asyncps/options.h) declared once, in one table
// (lib/asyncps/core/option_table.cpp): its key, the field it sets, its type, default, range, the
// rules that refuse it (a bad value; where it would have no effect), whether every rank must be
// given it alike, and its help. The table is what validate() checks, what the ranks compare (Session's
// constructor), what a program offers as flags, --help lines and config-file keys
// (apps/common/library_flags.h), and Python's Session keywords: adding an option is one row here
// and its use.
//
//   asyncps::Options o;
//   asyncps::set_option(o, *asyncps::find_option("staleness"), "3");   // o.staleness = 3
//   for (const asyncps::OptionInfo& opt : asyncps::option_table()) std::cout << opt.key << "\n";
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "asyncps/options.h"

namespace asyncps {

enum class OptionType { Bool, Int, Float, Double, Size, Text, Path, Choice };

// What Session's constructor says when a rank was given another value (each kind has its message;
// Free: the ranks may differ).
enum class RankAgreement { Free, Servers, Mode, Checkpoint, Other };

struct OptionInfo {
  std::string_view key;    // "staleness_lr_power": Python's keyword, a program's flag and config key
  std::string_view field;  // "Options::staleness_lr_power": how the library's messages name it
  OptionType type;
  // "job", "mode", "transport", "diagnostics" or "checkpoint": which a program offers
  std::string_view group;
  RankAgreement agree;
  std::string_view help;  // one line, in the options' own keys
  // The value in `o` as text that set_option() reads back ("0.5", "ssp", "true"); the default
  // is get(Options{}).
  std::string (*get)(const Options& o);
  // Choice: the values' names ("async | sync | ssp"); empty otherwise.
  std::string (*choices)();
  // Sets the field from text (a flag's or a config file's value): ConfigError naming `field` if
  // the text is not a value of its type. Ranges are problem()'s.
  void (*parse)(Options& o, std::string_view text, std::string_view field);
  // Empty, or why the value in `o` is refused whatever it would change: out of range, or
  // contradicting another option.
  std::string (*bad_value)(const Options& o);
  // nullptr where the option always takes effect; otherwise empty where it takes effect in `o`,
  // or why it would have none there (the other options it needs), whatever its value. A program
  // refuses such an option given on its command line even at its default (--staleness 0 without
  // --mode ssp); from an Options alone, only a value other than the default is known to be given.
  std::string (*no_effect)(const Options& o);
  // What the ranks compare (agree != Free).
  std::uint64_t (*fingerprint)(const Options& o);

  // Empty, or why validate() refuses the value in `o`: bad_value, then no_effect where the value
  // is not the default.
  std::string problem(const Options& o) const;
};

// Every option, in the order validate() checks them.
std::span<const OptionInfo> option_table();
// The option with that key (nullptr: none).
const OptionInfo* find_option(std::string_view key);
// option.parse(o, text, option.field): sets one option from text.
void set_option(Options& o, const OptionInfo& option, std::string_view text);

}  // namespace asyncps
