// The library's log sink: a program can take every line the library would print.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "asyncps/log.h"

TEST_CASE("a log sink set by the program receives the library's messages with their level", "[log]") {
  std::vector<std::pair<asyncps::LogLevel, std::string>> got;
  asyncps::set_log_sink([&](asyncps::LogLevel level, std::string_view text) { got.emplace_back(level, text); });
  asyncps::log(asyncps::LogLevel::Info, "restored x");
  asyncps::log(asyncps::LogLevel::Warning, "the checkpoint of global step 3 was not saved");
  asyncps::set_log_sink({});  // back to the default: stdout/stderr
  asyncps::log(asyncps::LogLevel::Info, "(the default sink prints this line)");
  REQUIRE(got.size() == 2);
  CHECK(got[0] == std::pair{asyncps::LogLevel::Info, std::string("restored x")});
  CHECK(got[1].first == asyncps::LogLevel::Warning);
  CHECK(got[1].second == "the checkpoint of global step 3 was not saved");
}
