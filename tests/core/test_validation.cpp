// Proves: the library refuses, with one message naming the field or argument, every Options /
// CheckpointOptions value out of range or without effect, and every ParamLayout entry that
// cannot work (names that are not file names, too many dimensions, sizes that would wrap); and
// the factor Options::staleness_lr scales an update by, absolute and relative.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "asyncps/checkpoint.h"
#include "asyncps/error.h"
#include "asyncps/limits.h"
#include "asyncps/option_choices.h"
#include "asyncps/param_layout.h"
#include "asyncps/session.h"
#include "asyncps/stall_watch.h"
#include "asyncps/staleness.h"

using namespace asyncps;

namespace {
// validate(o) throws ConfigError whose message contains `field`
void refused(const Options& o, const std::string& field) {
  try {
    validate(o);
    FAIL("accepted, expected a ConfigError naming " << field);
  } catch (const ConfigError& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(field) != std::string::npos);
  }
}
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("the default Options are valid", "[validation]") { CHECK_NOTHROW(validate(Options{})); }

TEST_CASE("every Options field out of range is refused, naming the field", "[validation]") {
  Options o;
  o.num_servers = 0;
  refused(o, "Options::num_servers");
  o = {};
  o.num_servers = limits::kMaxServers + 1;
  refused(o, "Options::num_servers");
  o = {};
  o.mode = static_cast<Mode>(7);
  refused(o, "Options::mode");
  o = {};
  o.mode = Mode::Ssp;
  o.staleness = -1;
  refused(o, "Options::staleness");
  o.staleness = 1000001;
  refused(o, "Options::staleness");
  for (double v : {-1.0, kNaN, kInf, 2e6}) {
    o = {};
    o.dc_lambda = static_cast<float>(v);
    refused(o, "Options::dc_lambda");
  }
  o = {};
  o.pull = static_cast<PullMethod>(-3);
  refused(o, "Options::pull");
  o = {};
  o.server_progress = static_cast<ServerProgress>(9);
  refused(o, "Options::server_progress");
  for (int v : {-2, 1000001}) {
    o = {};
    o.server_poll_us = v;
    refused(o, "Options::server_poll_us");
    o = {};
    o.server_spin_us = v;
    refused(o, "Options::server_spin_us");
    o = {};
    o.wait_spin_us = v;
    refused(o, "Options::wait_spin_us");
  }
  for (std::size_t v : {std::size_t{0}, std::size_t{3}, std::size_t{6}, limits::kMaxChunkBytes + 1}) {
    o = {};
    o.chunk_bytes = v;
    refused(o, "Options::chunk_bytes must be a multiple of 4 (whole floats)");
  }
  o = {};
  o.chunk_bytes = 8;  // (two floats: taken)
  CHECK_NOTHROW(validate(o));
  o = {};
  o.timeline = std::string("a\0b", 3);
  refused(o, "Options::timeline");
}

TEST_CASE("a stall timeout too short to work is refused with its floor", "[validation]") {
  Options o;
  for (double v : {-1.0, 0.1, 0.49, kNaN, kInf, 2e6}) {
    o.stall_timeout = v;
    refused(o, "Options::stall_timeout");
  }
  o.stall_timeout = 0.1;
  try {
    validate(o);
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("[0.5, ") != std::string::npos);  // the floor is in the message
  }
  for (double v : {0.0, 0.5, 1.0, 60.0}) {
    o.stall_timeout = v;
    CHECK_NOTHROW(validate(o));
  }
}

TEST_CASE("options that would have no effect are refused", "[validation]") {
  Options o;
  o.staleness = 3;  // async: the SSP bound does nothing
  refused(o, "Options::staleness");
  o = {};
  o.mode = Mode::Sync;
  o.staleness_lr = true;
  refused(o, "Options::staleness_lr");
  o = {};
  o.staleness_lr_power = 1;  // without staleness_lr: no effect
  refused(o, "Options::staleness_lr_power has no effect");
  o.staleness_lr = true;
  CHECK_NOTHROW(validate(o));
  for (float bad : {0.f, -1.f, 2.5f, std::numeric_limits<float>::quiet_NaN()}) {
    o.staleness_lr_power = bad;
    refused(o, "Options::staleness_lr_power must be in (0, 2]");
  }
  o = {};
  o.staleness_lr_relative = true;  // without staleness_lr: no effect
  refused(o, "Options::staleness_lr_relative has no effect");
  o.staleness_lr = true;
  CHECK_NOTHROW(validate(o));
  o = {};
  o.mode = Mode::Sync;
  o.overlap = true;
  refused(o, "Options::overlap");
  o = {};
  o.mode = Mode::Ssp;  // SSP's push already flies during the next compute: overlap would do nothing
  o.staleness = 2;
  o.overlap = true;
  refused(o, "Options::overlap");
  o = {};
  o.mode = Mode::Sync;
  o.dc_lambda = 0.5f;
  refused(o, "Options::dc_lambda");
  o = {};
  o.server_progress = ServerProgress::Poll;
  o.server_spin_us = 100;
  refused(o, "Options::server_spin_us");
  o = {};
  o.mode = Mode::Ssp;
  o.staleness = 3;
  CHECK_NOTHROW(validate(o));
}

TEST_CASE("checkpoint options: keep 0 (which would delete the final checkpoint) and bad intervals are refused",
          "[validation]") {
  CheckpointOptions c;
  CHECK_NOTHROW(validate(c));
  c.keep = 0;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("Options::checkpoint.keep"));
  c.keep = -5;
  CHECK_THROWS_AS(validate(c), ConfigError);
  c.keep = limits::kMaxCheckpointsKept + 1;
  CHECK_THROWS_AS(validate(c), ConfigError);
  c = {};
  for (double v : {-1.0, kNaN, kInf, 2e9}) {
    c.save_secs = v;
    CHECK_THROWS_WITH(validate(c), Catch::Contains("Options::checkpoint.save_secs"));
  }
  // the same through Options (what Session's constructor checks)
  Options o;
  o.checkpoint.keep = 0;
  refused(o, "Options::checkpoint.keep");
}

TEST_CASE("a tensor name is never a path: separators, '.', '..', control bytes and long names are refused",
          "[validation][layout]") {
  for (const std::string& bad : {std::string(), std::string("a/b"), std::string("..\\x"), std::string("."),
                                std::string(".."), std::string("../../etc/passwd"), std::string("tab\there"),
                                std::string("nul\0x", 5), std::string(252, 'n')}) {
    ParamLayout layout;
    INFO("name of " << bad.size() << " bytes");
    CHECK_THROWS_AS(layout.add(bad, {2}), ConfigError);
    CHECK(layout.size() == 0);  // nothing was added
  }
  ParamLayout ok;
  CHECK_NOTHROW(ok.add(std::string(251, 'n'), {1}));
  CHECK_NOTHROW(ok.add("..a", {1}));  // only the whole names "." and ".." are refused
  CHECK_NOTHROW(ok.add("conv1 weights (5x5)", {1}));
}

TEST_CASE("layout sizes are overflow-checked and bounded", "[validation][layout]") {
  ParamLayout layout;
  // 2^32 * 2^32 wraps a 64-bit size to 0: refused, not a zero-sized tensor
  CHECK_THROWS_AS(layout.add("wrap", {std::int64_t{1} << 32, std::int64_t{1} << 32}), ConfigError);
  CHECK_THROWS_AS(layout.add("huge", {std::numeric_limits<std::int64_t>::max()}), ConfigError);
  CHECK_THROWS_AS(layout.add("big", {static_cast<std::int64_t>(limits::kMaxArenaFloats) + 1}), ConfigError);
  CHECK_THROWS_AS(layout.add("neg", {4, -1}), ConfigError);
  CHECK_THROWS_AS(layout.add("zero", {0}), ConfigError);
  CHECK_THROWS_AS(layout.add("rank", std::vector<std::int64_t>(limits::kMaxTensorRank + 1, 1)), ConfigError);
  CHECK(layout.size() == 0);
  // the arena as a whole: two tensors that each fit, but not together
  const auto half = static_cast<std::int64_t>(limits::kMaxArenaFloats / 2 + 1);
  CHECK_NOTHROW(layout.add("a", {half}));
  CHECK_THROWS_AS(layout.add("b", {half}), ConfigError);
  CHECK(layout.tensors().size() == 1);
  CHECK_NOTHROW(layout.add("scalar", {}));  // an empty shape is one float
  CHECK(layout.tensor("scalar").size == 1);
  CHECK_THROWS_AS(layout.add("a", {1}), ConfigError);  // a duplicate
}

TEST_CASE("a StallWatch refuses a timeout that cannot work; 0 and +Inf never fire", "[validation][stall]") {
  CHECK_THROWS_WITH(StallWatch(-1, "x"), Catch::Contains("StallWatch: timeout must be >= 0"));
  CHECK_THROWS_AS(StallWatch(std::numeric_limits<double>::quiet_NaN(), "x"), ConfigError);
  CHECK_NOTHROW(StallWatch(0, "off"));
  CHECK_NOTHROW(StallWatch(kInf, "capped at 1e9 s"));
  CHECK(watch_timeout(0) == 0);
  CHECK(watch_timeout(-3) == 0);
  CHECK(watch_timeout(kNaN) == 0);
  CHECK(watch_timeout(1) == 3);    // 1 + max(2, 0.5)
  CHECK(watch_timeout(60) == 90);  // 60 + 30
}

TEST_CASE("set-up stretches get at least the set-up floor, steps do not", "[validation][stall]") {
  CHECK(setup_watch_timeout(0) == 0);  // off stays off
  CHECK(setup_watch_timeout(kNaN) == 0);
  CHECK(setup_watch_timeout(0.5) == kSetupWatchFloor);  // 2.5 s for a step, 10 s for loading
  CHECK(setup_watch_timeout(1) == kSetupWatchFloor);
  CHECK(setup_watch_timeout(60) == watch_timeout(60));  // above the floor: the step's deadline
}

TEST_CASE("a Session without MPI is one clear error, not a crash", "[validation]") {
  int initialized = 0;
  MPI_Initialized(&initialized);
  REQUIRE(initialized == 0);  // this test binary never initialises MPI
  ParamLayout layout;
  layout.add("w", {3});
  CHECK_THROWS_WITH(Session(MPI_COMM_WORLD, layout), Catch::Contains("MPI is not initialised"));
}

TEST_CASE("every choice of the Options enums has one name, parsed back to itself; others are refused by name",
          "[validation][choices]") {
  auto round_trips = [](auto e) {
    using E = decltype(e);
    int n = 0;
    for (const Choice<E>& c : choices(E{})) {
      CHECK(parse_choice<E>(c.name, "Options::x") == c.value);
      CHECK(std::string(name_of(c.value)) == c.name);
      ++n;
    }
    CHECK(choices(E{})[0].value == E{});  // the default first
    return n;
  };
  CHECK(round_trips(Mode{}) == 3);
  CHECK(round_trips(PullMethod{}) == 2);
  CHECK(round_trips(ServerProgress{}) == 3);
  CHECK(choice_list<Mode>() == "async, sync or ssp");
  CHECK(choice_list<PullMethod>() == "get_accumulate or get");
  try {
    (void)parse_choice<Mode>("hogwild", "Options::mode");
    FAIL("accepted");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "Options::mode must be async, sync or ssp, got 'hogwild'");
  }
  CHECK_THROWS_AS(parse_choice<ServerProgress>("Auto", "Options::server_progress"), ConfigError);  // case matters
  CHECK_THROWS_AS(parse_choice<PullMethod>("", "Options::pull"), ConfigError);
}

TEST_CASE("the staleness learning rate: 1/max(1, tau)^p absolute, ((1 + mean)/(1 + tau))^p relative",
          "[validation][staleness]") {
  CHECK(staleness_lr_scale(0, 7, 1, false) == 1.0);  // tau 0 counts as 1: never lifted
  CHECK(staleness_lr_scale(4, 7, 1, false) == Approx(0.25));
  CHECK(staleness_lr_scale(4, 7, 0.5, false) == Approx(0.5));
  CHECK(staleness_lr_scale(8, 0, 1.5, false) == Approx(1.0 / std::pow(8.0, 1.5)));
  // relative: 1 at the mean, damped above it, lifted below it
  CHECK(staleness_lr_scale(7, 7, 0.5, true) == Approx(1.0));
  CHECK(staleness_lr_scale(15, 7, 1, true) == Approx(0.5));
  CHECK(staleness_lr_scale(1, 7, 1, true) == Approx(4.0));
  CHECK(staleness_lr_scale(31, 7, 0.5, true) == Approx(0.5));
  CHECK(staleness_lr_scale(0, 0, 1, true) == Approx(1.0));  // W = 1: always 1
  CHECK(staleness_lr_scale(-3, -1, 1, true) == Approx(1.0));  // (negative inputs count as 0)
  CHECK(staleness_lr_scale(std::numeric_limits<std::int64_t>::max(), 7, 0.5, true) > 0);  // huge tau: tiny, not 0
  for (double bad : {0.0, -1.0, 2.5, 1e300, std::numeric_limits<double>::quiet_NaN()})
    CHECK_THROWS_WITH(staleness_lr_scale(3, 3, bad, false), Catch::Contains("staleness_lr_scale: power must be in (0, 2]"));
  for (double bad : {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()})
    CHECK_THROWS_WITH(staleness_lr_scale(3, bad, 0.5, true), Catch::Contains("staleness_lr_scale: mean_tau must be finite"));
  // a uniform staleness (tau = W - 1 everywhere, as on a few cores) leaves the relative rule at 1
  // and cuts the absolute one to 1/sqrt(W - 1)
  for (int tau : {1, 3, 7}) {
    CHECK(staleness_lr_scale(tau, tau, 0.5, true) == Approx(1.0));
    CHECK(staleness_lr_scale(tau, tau, 0.5, false) == Approx(1.0 / std::sqrt(tau)));
  }
}

TEST_CASE("a staleness histogram refuses a percentile outside [0, 100] and raw state to_vector could not have given",
          "[validation][staleness]") {
  StalenessHistogram h;
  for (std::int64_t tau : {0, 1, 1, 2, 5000}) h.record(tau);
  CHECK(h.percentile(0) == 0);
  CHECK(h.percentile(50) == 1);
  CHECK(h.percentile(100) == 5000);  // the last bin holds tau >= 1023: its percentile is the max
  for (double bad : {-1.0, 100.5, std::nan("")})
    CHECK_THROWS_WITH(h.percentile(bad), Catch::Contains("StalenessHistogram::percentile: p must be in [0, 100]"));
  CHECK_THROWS_WITH(h.percentile(100.5), Catch::EndsWith("got 100.5"));  // (the number as given, not 100.500000)
  CHECK(StalenessHistogram{}.percentile(99) == 0);

  const std::vector<double> v = h.to_vector();  // round trip
  const StalenessHistogram back = StalenessHistogram::from_vector(v);
  CHECK(back.count() == 5);
  CHECK(back.max() == 5000);
  CHECK(back.mean() == Approx(h.mean()));
  CHECK(back.percentile(50) == 1);

  const auto refused_state = [](std::vector<double> w, const char* what) {
    CHECK_THROWS_WITH(StalenessHistogram::from_vector(w), Catch::Contains("StalenessHistogram::from_vector: ") && Catch::Contains(what));
  };
  refused_state({}, "needs 1027 values");
  refused_state(std::vector<double>(v.begin(), v.end() - 1), "got 1026");
  auto w = v;
  w[3] = -1;
  refused_state(w, "bin 3 is not a count");
  w = v;
  w[1] = 1.5;
  refused_state(w, "bin 1 is not a count");
  w = v;
  w[0] = std::nan("");
  refused_state(w, "bin 0 is not a count");
  w = v;
  w[StalenessHistogram::kBins] = 6;  // count != the bins' sum
  refused_state(w, "is not the bins' sum");
  w = v;
  w[StalenessHistogram::kBins + 1] = std::numeric_limits<double>::infinity();
  refused_state(w, "sum must be finite");
  w = v;
  w[StalenessHistogram::kBins + 2] = 1e30;  // a max no int64 holds
  refused_state(w, "max a whole number");
}
