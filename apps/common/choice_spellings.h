// defines: app_cli::choice_spellings — an option's choices as the library's messages spell them
// ("Options::server_progress Poll", "Options::mode is Ssp": the enumerators) and as a flag takes
// them ("--server_progress poll", "--mode is ssp"), for a program that puts its flags' names in
// the library's messages (app_cli::library_flag_names, bench::with_flag_names). No Boost.
#pragma once
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "asyncps/option_table.h"

namespace app_cli {

// (library text, flag text) for each choice of `o` (none for an option without choices)
inline std::vector<std::pair<std::string, std::string>> choice_spellings(const asyncps::OptionInfo& o,
                                                                        const std::string& flag) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!o.choices) return out;
  const std::string all = o.choices();  // "auto | poll | wake"
  for (std::size_t at = 0; at < all.size();) {
    const std::size_t end = std::min(all.find(" | ", at), all.size());
    const std::string choice = all.substr(at, end - at);
    std::string spelt;  // get_accumulate -> GetAccumulate
    for (std::size_t i = 0; i < choice.size(); ++i)
      if (choice[i] != '_')
        spelt += (i == 0 || choice[i - 1] == '_') ? static_cast<char>(std::toupper(static_cast<unsigned char>(choice[i])))
                                                  : choice[i];
    for (const char* between : {" ", " is "}) out.emplace_back(std::string(o.field) + between + spelt, flag + between + choice);
    at = end + 3;
  }
  return out;
}

}  // namespace app_cli
