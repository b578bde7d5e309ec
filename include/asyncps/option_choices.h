// defines: asyncps::Choice, choices, name_of, parse_choice, choice_list
// The names of the Options enums' values, in one table: the library's messages, mnist_async's
// flags and Python's arguments (asyncps.MODES, ...) all spell them from here.
//
//   asyncps::Mode m = asyncps::parse_choice<asyncps::Mode>("ssp", "Options::mode");  // Mode::Ssp
//   asyncps::name_of(m);                      // "ssp"
//   asyncps::choice_list<asyncps::Mode>();    // "async, sync or ssp"
#pragma once
#include <span>
#include <string>
#include <string_view>

#include "asyncps/error.h"
#include "asyncps/param_layout.h"
#include "asyncps/options.h"

namespace asyncps {

template <class E>
struct Choice {
  const char* name;
  E value;
};

// Every value of each enum, the default first.
std::span<const Choice<Mode>> choices(Mode);                      // async, sync, ssp
std::span<const Choice<PullMethod>> choices(PullMethod);          // get_accumulate, get
std::span<const Choice<ServerProgress>> choices(ServerProgress);  // auto, poll, wake
std::span<const Choice<RowOptimizer>> choices(RowOptimizer);      // sgd, adagrad, ftrl (a table's rows)

template <class E>
const char* name_of(E value) {
  for (const Choice<E>& c : choices(E{}))
    if (c.value == value) return c.name;
  return "(not a value of this enum)";
}

// "async, sync or ssp"
template <class E>
std::string choice_list() {
  const auto all = choices(E{});
  std::string s;
  for (std::size_t i = 0; i < all.size(); ++i) s += (i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + std::string(all[i].name);
  return s;
}

// The value named `name`; ConfigError "<option> must be async, sync or ssp, got 'x'" otherwise.
template <class E>
E parse_choice(std::string_view name, std::string_view option) {
  for (const Choice<E>& c : choices(E{}))
    if (name == c.name) return c.value;
  throw ConfigError(std::string(option) + " must be " + choice_list<E>() + ", got '" + std::string(name) + "'");
}

}  // namespace asyncps
