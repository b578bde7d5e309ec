// The library's log: a program can take every line the library would print, and the level
// (set_log_level, or ASYNCPS_LOG_LEVEL) drops the more detailed lines before any sink sees them.
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

TEST_CASE("the log level drops the more detailed lines, never an error", "[log]") {
  const asyncps::LogLevel before = asyncps::log_level();
  std::vector<asyncps::LogLevel> got;
  asyncps::set_log_sink([&](asyncps::LogLevel level, std::string_view) { got.push_back(level); });
  auto say_all = [] {
    for (auto l : {asyncps::LogLevel::Error, asyncps::LogLevel::Warning, asyncps::LogLevel::Info, asyncps::LogLevel::Debug})
      asyncps::log(l, "x");
  };
  using L = asyncps::LogLevel;
  asyncps::set_log_level(L::Debug);
  say_all();
  CHECK(got == std::vector{L::Error, L::Warning, L::Info, L::Debug});
  CHECK(asyncps::log_enabled(L::Debug));
  got.clear();
  asyncps::set_log_level(L::Info);  // the default
  say_all();
  CHECK(got == std::vector{L::Error, L::Warning, L::Info});
  CHECK(!asyncps::log_enabled(L::Debug));
  got.clear();
  asyncps::set_log_level(L::Error);
  say_all();
  CHECK(got == std::vector{L::Error});
  CHECK(asyncps::log_enabled(L::Error));
  asyncps::set_log_sink({});
  asyncps::set_log_level(before);
}
