// defines: bench::with_flag_names — the library's messages in the benchmarks' flags
#pragma once
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "asyncps/option_table.h"
#include "choice_spellings.h"  // (apps/common)

namespace bench {

// The library's messages name its options (Options::chunk_bytes, Options::num_servers) and their
// choices as enumerators (Options::server_progress Wake): the same message in the bench programs'
// flags (--chunk_bytes, --ps, --server_progress wake).
inline std::string with_flag_names(std::string message) {
  std::vector<std::pair<std::string, std::string>> names;
  for (const asyncps::OptionInfo& o : asyncps::option_table())
    for (auto& spelling : app_cli::choice_spellings(o, "--" + std::string(o.key))) names.push_back(std::move(spelling));
  std::stable_sort(names.begin(), names.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  names.emplace_back("Options::num_servers", "--ps");
  names.emplace_back("Options::", "--");
  for (const auto& [api, flag] : names)
    for (std::size_t at; (at = message.find(api)) != std::string::npos;) message.replace(at, api.size(), flag);
  return message;
}

}  // namespace bench
