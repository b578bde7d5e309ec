// Proves: the options' table (asyncps/option_table.h) is what the library reads its options by:
// one row per option with a unique key and field; every default reads back as itself and passes
// its rule; set_option parses each type and names the field when the text is not a value; a
// row's rule is what validate() refuses; every option the ranks must agree on has a fingerprint
// that moves with its value (a rank given another value is told, see core_layout_mismatch_np3).
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "asyncps/error.h"
#include "asyncps/option_table.h"
#include "asyncps/options.h"

using namespace asyncps;

TEST_CASE("every option is one row with its own key and field", "[option-table]") {
  std::set<std::string_view> keys, fields;
  for (const OptionInfo& o : option_table()) {
    INFO(o.key);
    CHECK(keys.insert(o.key).second);
    CHECK(fields.insert(o.field).second);
    CHECK(o.field.starts_with("Options::"));
    CHECK_FALSE(o.help.empty());
    CHECK((o.group == "job" || o.group == "mode" || o.group == "transport" || o.group == "diagnostics" ||
           o.group == "checkpoint"));
    CHECK(find_option(o.key) == &o);
    CHECK((o.choices != nullptr) == (o.type == OptionType::Choice));
  }
  CHECK(find_option("no_such_option") == nullptr);
  // the fields of Options and CheckpointOptions, each once (a field added without a row fails here)
  CHECK(option_table().size() == 22);
}

TEST_CASE("every default reads back as itself and passes its rule", "[option-table]") {
  const Options defaults;
  for (const OptionInfo& o : option_table()) {
    INFO(o.key << " = '" << o.get(defaults) << "'");
    CHECK(o.problem(defaults).empty());
    Options read = defaults;
    if (o.type != OptionType::Path && o.type != OptionType::Text) set_option(read, o, o.get(defaults));
    CHECK(o.fingerprint(read) == o.fingerprint(defaults));
    CHECK(o.get(read) == o.get(defaults));
  }
  CHECK_NOTHROW(validate(defaults));
}

TEST_CASE("set_option reads each type, and names the field when the text is not a value", "[option-table]") {
  Options o;
  set_option(o, *find_option("staleness"), "3");
  set_option(o, *find_option("mode"), "ssp");
  set_option(o, *find_option("staleness_lr"), "true");
  set_option(o, *find_option("staleness_lr_power"), "0.25");
  set_option(o, *find_option("stall_timeout"), "+30");
  set_option(o, *find_option("chunk_bytes"), "65536");
  set_option(o, *find_option("checkpoint_dir"), "/tmp/ckpt");
  set_option(o, *find_option("restore"), "false");
  CHECK(o.staleness == 3);
  CHECK(o.mode == Mode::Ssp);
  CHECK(o.staleness_lr);
  CHECK(o.staleness_lr_power == 0.25f);
  CHECK(o.stall_timeout == 30);
  CHECK(o.chunk_bytes == 65536);
  CHECK(o.checkpoint.dir == "/tmp/ckpt");
  CHECK_FALSE(o.checkpoint.restore);
  CHECK(find_option("staleness_lr_power")->get(o) == "0.25");
  CHECK_NOTHROW(validate(o));

  CHECK_THROWS_WITH(set_option(o, *find_option("staleness"), "3.5"),
                    "Options::staleness must be an integer that fits an int, got '3.5'");
  CHECK_THROWS_WITH(set_option(o, *find_option("num_servers"), "99999999999"),
                    Catch::StartsWith("Options::num_servers must be an integer"));
  CHECK_THROWS_WITH(set_option(o, *find_option("chunk_bytes"), "-1"),
                    "Options::chunk_bytes must be a whole number of bytes, got '-1'");
  CHECK_THROWS_WITH(set_option(o, *find_option("dc_lambda"), "0.1x"), "Options::dc_lambda must be a number, got '0.1x'");
  CHECK_THROWS_WITH(set_option(o, *find_option("overlap"), "maybe"), "Options::overlap must be true or false, got 'maybe'");
  CHECK_THROWS_WITH(set_option(o, *find_option("pull"), "put"), "Options::pull must be get_accumulate or get, got 'put'");
  CHECK(o.staleness == 3);  // a refused text changes nothing
}

TEST_CASE("a value just out of range is shown as given, never rounded into the range", "[option-table]") {
  Options o;
  o.stall_timeout = 1000001;
  CHECK_THROWS_WITH(validate(o), Catch::EndsWith("got 1000001"));
  o.stall_timeout = 0.4999999;
  CHECK_THROWS_WITH(validate(o), Catch::EndsWith("got 0.4999999"));
  o = Options{};
  o.dc_lambda = 1000000.1f;  // (a float: as a float, 1000000.1)
  CHECK_THROWS_WITH(validate(o), Catch::EndsWith("got 1000000.1"));
  o.dc_lambda = 2e6f;
  CHECK_THROWS_WITH(validate(o), Catch::EndsWith("got 2e+06"));
}

TEST_CASE("a row's rule is what validate refuses", "[option-table]") {
  Options o;
  o.staleness = 3;  // without Mode::Ssp: no effect
  const std::string rule = find_option("staleness")->problem(o);
  CHECK_THAT(rule, Catch::Contains("no effect unless Options::mode is Ssp"));
  CHECK_THROWS_WITH(validate(o), rule);
  o = Options{};
  o.checkpoint.keep = 0;
  CHECK_THROWS_WITH(validate(o.checkpoint), find_option("keep")->problem(o));
}

// A value of the option other than its default (of its type).
std::string other_value(const OptionInfo& o, const Options& defaults) {
  switch (o.type) {
    case OptionType::Bool: return o.get(defaults) == "true" ? "false" : "true";
    case OptionType::Int: return o.key == "server_poll_us" || o.key == "wait_max_sleep_us" ? "100" : "3";
    case OptionType::Size: return std::to_string(std::stoll(o.get(defaults)) + 4096);
    case OptionType::Float:
    case OptionType::Double: {
      const double d = std::stod(o.get(defaults));
      return std::to_string(d == 0 ? 0.5 : d / 2);
    }
    case OptionType::Text:
    case OptionType::Path: return "elsewhere";
    case OptionType::Choice: return o.key == "mode" ? "sync" : "get";
  }
  return {};
}

TEST_CASE("an option without effect is refused at any value other than its default, with its no_effect line",
          "[option-table]") {
  // where each option with a no_effect rule does nothing: the options it needs left out
  const Options defaults;
  int rules = 0;
  for (const OptionInfo& o : option_table()) {
    if (!o.no_effect) continue;
    ++rules;
    INFO(o.key);
    Options without = defaults;  // the defaults give most of them nothing to act on
    if (o.key == "server_spin_us" || o.key == "wait_max_sleep_us" || o.key == "wait_spin_us")
      without.server_progress = ServerProgress::Poll;
    if (o.key == "staleness_lr" || o.key == "dc_lambda" || o.key == "overlap") without.mode = Mode::Sync;
    const std::string why = o.no_effect(without);
    CHECK_THAT(why, Catch::StartsWith(std::string(o.field)));
    CHECK(o.problem(without).empty());  // at its default it is not known to be given
    set_option(without, o, other_value(o, defaults));
    CHECK(o.problem(without) == o.no_effect(without));
    CHECK_THROWS(validate(without));
  }
  CHECK(rules == 12);
  // and where they act, the same values pass
  Options with = defaults;
  with.mode = Mode::Ssp;
  with.staleness = 3;
  with.staleness_lr = true;
  with.staleness_lr_power = 0.5f;
  with.staleness_lr_relative = true;
  with.dc_lambda = 0.5f;
  with.server_progress = ServerProgress::Wake;
  with.server_spin_us = 3;
  with.wait_max_sleep_us = 100;
  with.checkpoint.dir = "/tmp/ckpt";
  with.checkpoint.keep = 3;
  with.checkpoint.save_secs = 30;
  with.checkpoint.restore = false;
  for (const OptionInfo& o : option_table())
    if (o.no_effect && o.key != "overlap") CHECK(o.no_effect(with).empty());
  CHECK_NOTHROW(validate(with));
  with.mode = Mode::Async;
  with.staleness = 0;
  CHECK(find_option("overlap")->no_effect(with).empty());
}

TEST_CASE("every option the ranks must agree on has a fingerprint that moves with its value", "[option-table]") {
  const Options defaults;
  int agreed = 0;
  for (const OptionInfo& o : option_table()) {
    if (o.agree == RankAgreement::Free) continue;
    ++agreed;
    INFO(o.key);
    Options other = defaults;
    switch (o.type) {  // a value other than the default, of its type
      case OptionType::Bool: set_option(other, o, o.get(defaults) == "true" ? "false" : "true"); break;
      case OptionType::Int:
      case OptionType::Size: set_option(other, o, std::to_string(std::stoll(o.get(defaults)) + 4096)); break;
      case OptionType::Float:
      case OptionType::Double: set_option(other, o, std::to_string(std::stod(o.get(defaults)) + 0.25)); break;
      case OptionType::Text:
      case OptionType::Path: set_option(other, o, "elsewhere"); break;
      case OptionType::Choice: set_option(other, o, o.key == "mode" ? "sync" : "get"); break;
    }
    CHECK(o.fingerprint(other) != o.fingerprint(defaults));
  }
  CHECK(agreed == 17);  // all but the five progress settings, which are each rank's own
}

TEST_CASE("a waiting worker's longest sleep: -1 or in [0, 1000000], and not beside Poll", "[option-table]") {
  for (const int bad : {-2, 1000001, -2147483647 - 1}) {
    Options o;
    o.wait_max_sleep_us = bad;
    CHECK_THROWS_WITH(validate(o), Catch::StartsWith("Options::wait_max_sleep_us must be -1 (auto) or in [0, 1000000]"));
  }
  Options o;
  o.wait_max_sleep_us = 0;
  CHECK_NOTHROW(validate(o));
  o.server_progress = ServerProgress::Poll;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("wait_max_sleep_us has no effect with Options::server_progress Poll"));
  CHECK_THROWS_WITH(set_option(o, *find_option("wait_max_sleep_us"), "1e3"),
                    "Options::wait_max_sleep_us must be an integer that fits an int, got '1e3'");
}

TEST_CASE("a server's poll and a worker's sleep may not outlast the heartbeat interval", "[option-table]") {
  // stall_timeout 2 s: heartbeats every 0.5 s, so a sleep of more than 500000 us would have the
  // sleeping rank named stalled (a woken server's sleeps end at each tick: its poll is free)
  Options o;
  o.stall_timeout = 2;
  o.server_poll_us = 500000;
  CHECK_NOTHROW(validate(o));
  o.server_poll_us = 500001;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("Options::server_poll_us 500001 exceeds the heartbeat interval of "
                                                 "Options::stall_timeout 2 (500000 microseconds)"));
  o.server_progress = ServerProgress::Poll;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("Options::server_poll_us 500001 exceeds"));
  o.server_progress = ServerProgress::Wake;
  CHECK_NOTHROW(validate(o));
  o.stall_timeout = 0;  // no stall check: any poll
  o.server_progress = ServerProgress::Poll;
  o.server_poll_us = 1000000;
  CHECK_NOTHROW(validate(o));

  Options w;
  w.stall_timeout = 2;
  w.wait_max_sleep_us = 500000;
  CHECK_NOTHROW(validate(w));
  w.wait_max_sleep_us = 500001;
  CHECK_THROWS_WITH(validate(w), Catch::Contains("Options::wait_max_sleep_us 500001 exceeds the heartbeat interval"));
  w.stall_timeout = 60;  // heartbeats every 1 s: the whole range
  w.wait_max_sleep_us = 1000000;
  CHECK_NOTHROW(validate(w));
}
