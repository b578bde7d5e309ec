// defines: asyncps::validate(const Options&), asyncps::validate(const CheckpointOptions&)
// Every option's rule, run in the table's order (core/option_table.cpp: one row per option, its
// range and where it would have no effect), one message per problem that names the field (apps
// map "Options::x" to their own flag names). Session's constructor calls it on every rank.
#include "asyncps/error.h"
#include "asyncps/option_table.h"
#include "asyncps/options.h"

namespace asyncps {

namespace {
void check_rows(const Options& o, bool checkpoint_only) {
  for (const OptionInfo& option : option_table()) {
    if (checkpoint_only && option.group != "checkpoint") continue;
    if (std::string p = option.problem(o); !p.empty()) throw ConfigError(p);
  }
}
}  // namespace

void validate(const Options& o) { check_rows(o, false); }

void validate(const CheckpointOptions& c) {
  Options o;
  o.checkpoint = c;
  check_rows(o, true);
}

}  // namespace asyncps
