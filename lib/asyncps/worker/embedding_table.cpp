// defines: EmbeddingTable (a worker's row-sparse pull and push on the session's channel)
#include "asyncps/embedding_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "asyncps/error.h"
#include "asyncps/stall_watch.h"
#include "core/check.h"
#include "core/row_rule.h"
#include "core/rows.h"
#include "worker/worker_access.h"
#include "worker/worker_transport.h"
#include "core/number_text.h"

namespace asyncps {

using detail::RmaBatch;
using detail::Table;
namespace detail {
struct RowMove;
}
using detail::RowMove;
constexpr std::size_t kNotCached = ~std::size_t{0};

// A worker's state for one table: what is its own (what its row rule reads of its rows as last
// seen, its counters); the buffers of a move are its row group's.
struct detail::TableState {
  std::size_t index = 0;       // in layout().tables()
  const TableInfo* info = nullptr;
  const detail::RowRule* rule = nullptr;
  detail::WorkerTransport* transport = nullptr;  // the worker's (its layers live as long as it)
  std::size_t seen_first = 0, seen_count = 0;  // the floats of a stored row its rule reads
  std::size_t stride = 0;                      // info->stride(), asked once (it asks the rule)
  detail::RowGroupState* group = nullptr;
  float eps = 1e-8f;
  TableStats stats;
  // what the rule reads of this table's rows (seen_count floats each) as its last pull read them
  // (rows sorted), kept up to date with this worker's own pushes since
  std::vector<std::uint64_t> seen_rows;
  std::vector<float> seen;
  std::vector<float> fresh;          // a push's: seen_count floats per distinct row
  std::vector<std::size_t> cached;   // row u's place in seen_rows, or kNotCached
};

// Tells server 0 that this worker pushed rows (ControlBlock's "rows moved"), so that a periodic
// checkpoint is taken where rows moved and the global step did not: the pushes flushed to the
// servers, then a blocking +1, at most once per kEvery; pushes in between are told by the next
// push or pull after it (the job's final save holds any that are not). Only where periodic saves
// are on.
namespace {
class RowsMovedSignal {
 public:
  static constexpr std::chrono::milliseconds kEvery{100};
  explicit RowsMovedSignal(detail::WorkerTransport& t)
      : t_(t), wanted_(!t.options().checkpoint.dir.empty() && t.options().checkpoint.save_secs > 0) {}
  // after a push (pushed) or a pull: tells server 0 if rows moved since it was last told and kEvery has passed
  void note(bool pushed) {
    if (!wanted_) return;
    untold_ = untold_ || pushed;
    if (!untold_) return;
    const auto now = detail::WorkerClock::now();
    if (now - told_ < kEvery) return;
    // the pushes complete at the servers first: a save server 0 starts after the +1 holds them
    if (t_.channel().pending(detail::Table::Rows)) t_.channel().flush(detail::Table::Rows);
    t_.control().add_rows_moved();
    told_ = now;
    untold_ = false;
  }

 private:
  detail::WorkerTransport& t_;
  bool wanted_ = false, untold_ = false;
  detail::WorkerClock::time_point told_{};
};
}  // namespace

// One move's plan: a call's keys grouped into distinct sorted rows (order = (row, key index)
// sorted; rows = its distinct rows; slot[i] = key i's place in rows), cut into runs of rows on one
// server, gaps of a few rows included (read along, or added as zeros: fewer, larger operations);
// pos[u] = row u's group row's float offset in buf (the runs' group rows: a pull's data, a push's
// update).
struct detail::RowMove {
  struct Run {
    int server = 0;
    std::uint64_t first_row = 0, rows = 0;
    std::size_t buf = 0;
  };
  std::vector<std::pair<std::uint64_t, std::uint32_t>> order;
  std::vector<std::uint64_t> rows;
  std::vector<std::uint32_t> slot;
  std::vector<Run> runs;
  std::vector<std::size_t> pos;
  std::vector<float> buf;
};

// A worker's state for one row group (TableSpec::share_rows_with; a table stored alone is a group
// of its own): the moves that a pull, a push or a prefetch of any of its tables makes, whole group
// rows at a time.
struct detail::RowGroupState {
  std::size_t leader = 0;           // the group's first table (its rows place the group's)
  std::size_t pitch = 0;            // floats per group row
  std::size_t merge_gap_bytes = 0;  // (merge_gap_bytes() of the session's transport)
  RowMove pull;
  // the last push, in flight from its own buffer (push.buf), completed locally only when the next
  // push needs the buffer or the worker settles (so that it flies during the dense step and the compute)
  RowMove push;
  RmaBatch push_inflight;
  bool push_pending = false;
  // a prefetch (prefetch_rows) in flight, until a pull of the same keys takes it (or another call
  // drops it); the pushes sent meanwhile, which it cannot see, leave their update of its rows to
  // add when it lands: patch_rows[j] = the row's place in ahead.rows, patch = pitch floats each
  RowMove ahead;
  std::vector<std::uint64_t> ahead_keys;
  RmaBatch ahead_inflight;
  bool ahead_pending = false;
  double ahead_seconds = 0;  // issuing it
  std::vector<std::uint32_t> patch_rows;
  std::vector<float> patch;
};

namespace {

// The worker's tables' state: a layer of its transport, so that drain() completes the rows'
// moves and the buffers live as long as the windows.
class TableLayer final : public detail::WorkerLayer {
 public:
  explicit TableLayer(detail::WorkerTransport& t) : rows_moved(t), t_(t) {}
  RowsMovedSignal rows_moved;
  // table `index`'s state, made on first use (with its group's)
  detail::TableState& state(std::size_t index) {
    if (tables_.size() <= index) tables_.resize(index + 1);
    if (tables_[index]) return *tables_[index];
    const ParamLayout& layout = t_.session().layout();
    const TableInfo& info = layout.tables()[index];
    if (groups_.size() <= info.group) groups_.resize(info.group + 1);
    if (!groups_[info.group]) {
      groups_[info.group] = std::make_unique<detail::RowGroupState>();
      groups_[info.group]->leader = info.group;
      groups_[info.group]->pitch = static_cast<std::size_t>(info.group_stride);
      groups_[info.group]->merge_gap_bytes = merge_gap_bytes();
    }
    tables_[index] = std::make_unique<detail::TableState>();
    tables_[index]->index = index;
    tables_[index]->info = &info;
    tables_[index]->transport = &t_;
    tables_[index]->rule = &detail::row_rule(info.spec.optimizer);
    tables_[index]->seen_first = static_cast<std::size_t>(tables_[index]->rule->seen_first(info.spec.dim));
    tables_[index]->seen_count = static_cast<std::size_t>(tables_[index]->rule->seen_count(info.spec.dim));
    tables_[index]->stride = static_cast<std::size_t>(info.stride());
    tables_[index]->group = groups_[info.group].get();
    return *tables_[index];
  }
  void settle() override {
    for (auto& g : groups_) {
      if (!g) continue;
      complete_push(t_, *g);
      drop_prefetch(t_, *g);
    }
    if (t_.channel().pending(Table::Rows)) t_.channel().flush(Table::Rows);
  }
  // The last push's buffer is free again (its writes complete at the servers by the next flush).
  static void complete_push(detail::WorkerTransport& t, detail::RowGroupState& g) {
    if (!g.push_pending) return;
    g.push_pending = false;
    t.channel().complete_local(g.push_inflight);
  }
  // A prefetch nobody took: waited for (its buffer is MPI's until then) and forgotten.
  static void drop_prefetch(detail::WorkerTransport& t, detail::RowGroupState& g) {
    if (!g.ahead_pending) return;
    g.ahead_pending = false;
    t.channel().complete_local(g.ahead_inflight);
    g.patch_rows.clear();
    g.patch.clear();
  }

 private:
  // A run of rows takes in the rows between two wanted ones when they are at most this many bytes
  // apart (read along, or added as zeros), as an operation costs about as much as that many bytes.
  // Chosen by measurement (docs/EMBEDDINGS.md "Merging runs"): on one host, where bytes are cheap,
  // 4 KiB; across hosts, where the gaps' bytes cross the network too, 1 KiB (it still merges the
  // rows of small or dense tables).
  std::size_t merge_gap_bytes() const { return t_.session().single_node() ? 4096 : 1024; }

  detail::WorkerTransport& t_;
  std::vector<std::unique_ptr<detail::TableState>> tables_;      // [table index]
  std::vector<std::unique_ptr<detail::RowGroupState>> groups_;   // [group's first table]
};

// keys -> the move's order, rows, slot (distinct rows, sorted: by server, then by offset)
void group_keys(RowMove& mv, std::uint64_t n_rows, std::span<const std::uint64_t> keys) {
  mv.order.resize(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i)
    mv.order[i] = {detail::row_of_key(keys[i], n_rows), static_cast<std::uint32_t>(i)};
  std::sort(mv.order.begin(), mv.order.end());
  mv.rows.clear();
  mv.slot.resize(keys.size());
  for (const auto& [row, i] : mv.order) {
    if (mv.rows.empty() || mv.rows.back() != row) mv.rows.push_back(row);
    mv.slot[i] = static_cast<std::uint32_t>(mv.rows.size() - 1);
  }
}

// The move's runs and pos for its rows; returns the floats its buffer needs.
std::size_t plan_runs(RowMove& mv, const detail::RowGroupState& g, const RowPlan& plan) {
  const std::size_t pitch = g.pitch;
  const std::uint64_t max_gap = g.merge_gap_bytes / (pitch * sizeof(float));
  mv.runs.clear();
  mv.pos.resize(mv.rows.size());
  std::size_t floats = 0;
  std::size_t j = 0;
  while (j < mv.rows.size()) {
    const int server = plan.server_of(g.leader, mv.rows[j]);
    const RowPlan::Part& part = plan.part(g.leader, server);
    std::size_t k = j + 1;
    while (k < mv.rows.size() && mv.rows[k] < part.first_row + part.rows && mv.rows[k] - mv.rows[k - 1] - 1 <= max_gap) ++k;
    RowMove::Run run{server, mv.rows[j], mv.rows[k - 1] - mv.rows[j] + 1, floats};
    for (std::size_t u = j; u < k; ++u) mv.pos[u] = floats + static_cast<std::size_t>(mv.rows[u] - run.first_row) * pitch;
    floats += static_cast<std::size_t>(run.rows) * pitch;
    mv.runs.push_back(run);
    j = k;
  }
  return floats;
}

void check_keys(std::size_t keys, std::size_t floats, int dim, const std::string& call) {
  if (keys > std::numeric_limits<std::uint32_t>::max())
    throw ConfigError(call + ": at most 2^32 - 1 keys per call, got " + std::to_string(keys));
  const auto d = static_cast<std::size_t>(dim);
  if (keys > std::numeric_limits<std::size_t>::max() / d || floats != keys * d)
    throw ConfigError(call + ": " + std::to_string(keys) + " keys need " +
                      (keys > std::numeric_limits<std::size_t>::max() / d ? std::string("more") : std::to_string(keys * d)) +
                      " floats (keys x dim " + std::to_string(dim) + "), got " + std::to_string(floats));
}
void check_key_count(std::size_t keys, const std::string& call) { check_keys(keys, keys, 1, call); }
// A scale a member's row rule cannot use (FTRL's learning rate is -scale).
void check_rule_scale(std::span<detail::TableState* const> members, float scale, const char* call) {
  for (const detail::TableState* st : members)
    if (const std::string problem = st->rule->scale_problem(scale); !problem.empty())
      throw ConfigError(std::string(call) + ": table '" + st->info->name + "': " + problem + ", got " + detail::number_text(scale));
}
// A group call's buffers: one per table, each keys x that table's dim floats.
template <class Buffer>
void check_buffers(std::span<detail::TableState* const> members, std::size_t keys, std::span<const Buffer> given,
                   const char* call) {
  if (given.size() != members.size())
    throw ConfigError(std::string(call) + ": one buffer per table of the group (" + std::to_string(members.size()) +
                      "), got " + std::to_string(given.size()));
  for (std::size_t m = 0; m < members.size(); ++m)
    check_keys(keys, given[m].size(), members[m]->info->spec.dim,
               std::string(call) + " (table '" + members[m]->info->name + "')");
}

// Issues the reads of the move's group rows of keys (one operation per run) into `batch`.
void issue_reads(detail::WorkerTransport& t, detail::RowGroupState& g, RowMove& mv, std::uint64_t n_rows,
                 std::span<const std::uint64_t> keys, RmaBatch& batch, TableStats& ops) {
  group_keys(mv, n_rows, keys);
  const RowPlan& plan = t.session().row_plan();
  mv.buf.resize(plan_runs(mv, g, plan));
  detail::RmaChannel& ch = t.channel();
  for (const auto& run : mv.runs) {
    ch.read_run(Table::Rows, run.server, static_cast<MPI_Aint>(plan.offset_of(g.leader, run.server, run.first_row)),
                mv.buf.data() + run.buf, static_cast<std::size_t>(run.rows) * g.pitch, batch);
    ++ops.runs;
  }
}

// Starts reading the group rows of keys, to be taken by the next pull of the same keys.
void prefetch_group(detail::WorkerTransport& t, detail::RowGroupState& g, std::uint64_t n_rows,
                    std::span<const std::uint64_t> keys, TableStats& ops) {
  const auto t0 = detail::WorkerClock::now();
  TableLayer::drop_prefetch(t, g);  // (one at a time)
  g.ahead_keys.assign(keys.begin(), keys.end());
  g.ahead_inflight = t.channel().batch();
  issue_reads(t, g, g.ahead, n_rows, keys, g.ahead_inflight, ops);
  g.ahead_pending = true;
  g.ahead_seconds = detail::seconds_since(t0);
}

// One pull of the tables `members` (of one row group): out[m] = their rows of keys. Every run
// moves whole group rows, so that all the tables come in one operation per run. A prefetch of the
// same keys is taken (completed, and the pushes sent since added); one of other keys is dropped.
// The operations' counts go to `ops`.
RowsMovedSignal& rows_moved_signal(detail::WorkerTransport& t) {
  return t.layer<TableLayer>([&] { return std::make_unique<TableLayer>(t); }).rows_moved;
}

void pull_group(detail::WorkerTransport& t, std::span<detail::TableState* const> members,
                std::span<const std::uint64_t> keys, std::span<const std::span<float>> out, TableStats& ops) {
  const auto t0 = detail::WorkerClock::now();
  detail::RowGroupState& g = *members.front()->group;
  detail::RmaChannel& ch = t.channel();
  RowMove* mv = &g.pull;
  const bool taken = g.ahead_pending && std::equal(keys.begin(), keys.end(), g.ahead_keys.begin(), g.ahead_keys.end());
  if (taken) {
    g.ahead_pending = false;
    ch.complete_local(g.ahead_inflight);  // the data is here
    for (std::size_t j = 0; j < g.patch_rows.size(); ++j) {  // + this worker's pushes it could not see
      float* row = g.ahead.buf.data() + g.ahead.pos[g.patch_rows[j]];
      const float* add = g.patch.data() + j * g.pitch;
      for (std::size_t c = 0; c < g.pitch; ++c) row[c] += add[c];
    }
    g.patch_rows.clear();
    g.patch.clear();
    mv = &g.ahead;
    ++ops.prefetched;
    ops.pull_seconds += g.ahead_seconds;
  } else {
    TableLayer::drop_prefetch(t, g);
    RmaBatch batch = ch.batch();
    issue_reads(t, g, g.pull, members.front()->info->spec.rows, keys, batch, ops);
    ch.complete_local(batch);  // the data is here (a read needs nothing more)
  }
  for (std::size_t m = 0; m < members.size(); ++m) {
    detail::TableState& st = *members[m];
    const auto dim = static_cast<std::size_t>(st.info->spec.dim), at = static_cast<std::size_t>(st.info->group_offset);
    // out[i] = its row (what its rule keeps beside it stays behind)
    for (std::size_t i = 0; i < keys.size(); ++i) std::copy_n(mv->buf.data() + mv->pos[mv->slot[i]] + at, dim, out[m].data() + i * dim);
    if (const std::size_t n = st.seen_count) {  // what the rule reads, for the next push
      st.seen_rows = mv->rows;
      st.seen.resize(mv->rows.size() * n);
      for (std::size_t u = 0; u < mv->rows.size(); ++u)
        std::copy_n(mv->buf.data() + mv->pos[u] + at + st.seen_first, n, st.seen.data() + u * n);
    }
    ++st.stats.pulls;
    st.stats.keys_pulled += keys.size();
    st.stats.rows_pulled += mv->rows.size();
  }
  if (&ops != &members.front()->stats) ++ops.pulls;  // (a group's own count)
  ops.bytes_pulled += mv->buf.size() * sizeof(float);
  ops.pull_seconds += detail::seconds_since(t0);
  rows_moved_signal(t).note(/*pushed=*/false);
}

// One push of the tables `members` (of one row group) with one scale: each table's update in its
// columns of the group rows, zeros in the others' (and in the gaps), one accumulate per run.
RowPush push_group(detail::WorkerTransport& t, std::span<detail::TableState* const> members,
                   std::span<const std::uint64_t> keys, std::span<const std::span<const float>> grads, float scale,
                   TableStats& ops) {
  const auto t0 = detail::WorkerClock::now();
  RowPush result;
  auto refuse = [&](std::size_t m) {  // a gradient of table m held NaN or Inf, or overflowed: send nothing
    ++members[m]->stats.nonfinite;
    if (&ops != &members[m]->stats) ++ops.nonfinite;
    result.nonfinite = true;
    return result;
  };
  for (std::size_t m = 0; m < members.size(); ++m)
    if (!detail::all_finite(grads[m].data(), grads[m].size())) return refuse(m);
  detail::RowGroupState& g = *members.front()->group;
  TableLayer::complete_push(t, g);  // the last push's buffer, before it is written again
  RowMove& mv = g.push;
  group_keys(mv, members.front()->info->spec.rows, keys);
  const RowPlan& plan = t.session().row_plan();
  std::vector<float>& buf = mv.buf;
  buf.assign(plan_runs(mv, g, plan), 0.f);
  detail::RmaChannel& ch = t.channel();
  for (std::size_t m = 0; m < members.size(); ++m) {
    detail::TableState& st = *members[m];
    const auto d = static_cast<std::size_t>(st.info->spec.dim), at = static_cast<std::size_t>(st.info->group_offset);
    // row u's columns = the sum of the gradients of its keys (in sorted order: the same sum on
    // every run); the gap rows stay 0
    for (const auto& [row, i] : mv.order) {
      float* dst = buf.data() + mv.pos[mv.slot[i]] + at;
      const float* gi = grads[m].data() + static_cast<std::size_t>(i) * d;
      for (std::size_t c = 0; c < d; ++c) dst[c] += gi[c];
    }
    // what the rule reads of each row: from this worker's last pull of it, else read now
    const std::size_t n = st.seen_count;
    if (n > 0) {
      st.fresh.assign(mv.rows.size() * n, std::numeric_limits<float>::quiet_NaN());
      st.cached.assign(mv.rows.size(), kNotCached);
      RmaBatch reads = ch.batch();
      bool any = false;
      for (std::size_t u = 0; u < mv.rows.size(); ++u) {
        const auto it = std::lower_bound(st.seen_rows.begin(), st.seen_rows.end(), mv.rows[u]);
        if (it != st.seen_rows.end() && *it == mv.rows[u]) {
          st.cached[u] = static_cast<std::size_t>(it - st.seen_rows.begin());
          std::copy_n(st.seen.data() + st.cached[u] * n, n, st.fresh.data() + u * n);
          continue;
        }
        const int server = plan.server_of(st.index, mv.rows[u]);
        ch.read_run(Table::Rows, server, static_cast<MPI_Aint>(plan.offset_of(st.index, server, mv.rows[u]) + st.seen_first),
                    st.fresh.data() + u * n, n, reads);
        any = true;
      }
      if (any) ch.complete_local(reads);
    }
    // row u's columns (stride floats) = what its rule adds for the summed gradient
    const std::size_t stride = st.stride;
    for (std::size_t u = 0; u < mv.rows.size(); ++u)
      st.rule->update({.row = {buf.data() + mv.pos[u] + at, stride},
                       .seen = {st.fresh.data() + u * n, n},
                       .scale = scale,
                       .eps = st.eps},
                      st.info->spec);
    for (std::size_t u = 0; u < mv.rows.size(); ++u)  // (scale * g overflowed)
      if (!detail::all_finite(buf.data() + mv.pos[u] + at, stride)) return refuse(m);
  }
  // (only now that the update will be sent:) a second push before a pull sees its own update
  for (detail::TableState* st : members) {
    const std::size_t n = st->seen_count;
    if (n == 0) continue;
    const auto at = static_cast<std::size_t>(st->info->group_offset) + st->seen_first;
    for (std::size_t u = 0; u < mv.rows.size(); ++u)
      if (st->cached[u] != kNotCached)
        for (std::size_t k = 0; k < n; ++k) st->seen[st->cached[u] * n + k] += buf[mv.pos[u] + at + k];
  }
  // a prefetch in flight was issued before this push, so it cannot see it: its rows that this
  // push updates get the update added when it lands (both row lists are sorted)
  if (g.ahead_pending) {
    const auto& want = g.ahead.rows;
    std::size_t v = 0;
    for (std::size_t u = 0; u < mv.rows.size() && v < want.size(); ++u) {
      while (v < want.size() && want[v] < mv.rows[u]) ++v;
      if (v == want.size() || want[v] != mv.rows[u]) continue;
      g.patch_rows.push_back(static_cast<std::uint32_t>(v));
      g.patch.insert(g.patch.end(), buf.begin() + static_cast<std::ptrdiff_t>(mv.pos[u]),
                     buf.begin() + static_cast<std::ptrdiff_t>(mv.pos[u] + g.pitch));
    }
  }
  RmaBatch batch = ch.batch();
  for (const auto& run : mv.runs) {
    ch.add_run(Table::Rows, run.server, static_cast<MPI_Aint>(plan.offset_of(g.leader, run.server, run.first_row)),
               buf.data() + run.buf, static_cast<std::size_t>(run.rows) * g.pitch, batch);
    ++ops.runs;
  }
  // in flight: completed locally by the next push of this group (or the worker's settle), at the
  // servers by the next flush
  g.push_inflight = std::move(batch);
  g.push_pending = true;
  for (detail::TableState* st : members) {
    ++st->stats.pushes;
    st->stats.keys_pushed += keys.size();
    st->stats.rows_pushed += mv.rows.size();
  }
  if (&ops != &members.front()->stats) ++ops.pushes;
  ops.bytes_pushed += buf.size() * sizeof(float);
  ops.push_seconds += detail::seconds_since(t0);
  rows_moved_signal(t).note(/*pushed=*/true);
  result.applied = true;
  result.rows = mv.rows.size();
  return result;
}

}  // namespace

std::uint64_t table_row(std::uint64_t key, std::uint64_t rows) {
  if (rows == 0) throw ConfigError("table_row: a table has at least one row, got rows 0");
  return detail::row_of_key(key, rows);
}
float table_initial_value(const TableInfo& table, std::uint64_t row, int col) noexcept {
  return detail::initial_row_value(table, row, col);
}

EmbeddingTable::EmbeddingTable(WorkerClient& worker, const std::string& name) : worker_(&worker) {
  detail::WorkerTransport& t = detail::transport_of(worker);
  t.enter("EmbeddingTable");
  const std::size_t index = t.session().layout().table_index(name);  // (ConfigError naming it if absent)
  TableLayer& layer = t.layer<TableLayer>([&] { return std::make_unique<TableLayer>(t); });
  state_ = &layer.state(index);
}

const std::string& EmbeddingTable::name() const noexcept { return state_->info->name; }
std::uint64_t EmbeddingTable::rows() const noexcept { return state_->info->spec.rows; }
int EmbeddingTable::dim() const noexcept { return state_->info->spec.dim; }
RowOptimizer EmbeddingTable::optimizer() const noexcept { return state_->info->spec.optimizer; }
std::uint64_t EmbeddingTable::row_of(std::uint64_t key) const noexcept { return detail::row_of_key(key, rows()); }
const TableStats& EmbeddingTable::stats() const noexcept { return state_->stats; }
float EmbeddingTable::epsilon() const noexcept { return state_->eps; }

void EmbeddingTable::set_epsilon(float eps) {
  state_->transport->enter("EmbeddingTable::set_epsilon");
  if (!std::isfinite(eps) || eps < 0) throw ConfigError("EmbeddingTable::set_epsilon: eps must be finite and >= 0");
  if (!state_->rule->uses_eps())
    throw ConfigError("EmbeddingTable::set_epsilon: table '" + state_->info->name + "' uses " + state_->rule->label() +
                      ", which reads no eps (it is Adagrad's): it would have no effect");
  state_->eps = eps;
}

void EmbeddingTable::pull_rows(std::span<const std::uint64_t> keys, std::span<float> out) {
  detail::WorkerTransport& t = *state_->transport;
  t.enter("EmbeddingTable::pull_rows");
  check_keys(keys.size(), out.size(), state_->info->spec.dim, "EmbeddingTable::pull_rows");
  detail::TableState* const members[] = {state_};
  const std::span<float> outs[] = {out};
  pull_group(t, members, keys, outs, state_->stats);
}

void EmbeddingTable::prefetch_rows(std::span<const std::uint64_t> keys) {
  detail::WorkerTransport& t = *state_->transport;
  t.enter("EmbeddingTable::prefetch_rows");
  check_key_count(keys.size(), "EmbeddingTable::prefetch_rows");
  prefetch_group(t, *state_->group, state_->info->spec.rows, keys, state_->stats);
}

RowPush EmbeddingTable::push_rows(std::span<const std::uint64_t> keys, std::span<const float> grads, float scale) {
  detail::WorkerTransport& t = *state_->transport;
  t.enter("EmbeddingTable::push_rows");
  check_keys(keys.size(), grads.size(), state_->info->spec.dim, "EmbeddingTable::push_rows");
  detail::WorkerTransport::check_scale(scale, "EmbeddingTable::push_rows");
  detail::TableState* const members[] = {state_};
  check_rule_scale(members, scale, "EmbeddingTable::push_rows");
  t.check_updating("EmbeddingTable::push_rows");
  const std::span<const float> gs[] = {grads};
  return push_group(t, members, keys, gs, scale, state_->stats);
}

EmbeddingGroup::EmbeddingGroup(WorkerClient& worker, const std::vector<std::string>& names) : worker_(&worker) {
  detail::WorkerTransport& t = detail::transport_of(worker);
  t.enter("EmbeddingGroup");
  const ParamLayout& layout = t.session().layout();
  if (names.empty()) throw ConfigError("EmbeddingGroup: needs at least one table");
  std::vector<std::size_t> index;
  for (const auto& name : names) index.push_back(layout.table_index(name));  // (ConfigError naming one absent)
  for (std::size_t i = 0; i < index.size(); ++i) {
    const TableInfo& a = layout.tables()[index[i]];
    for (std::size_t j = 0; j < i; ++j)
      if (index[j] == index[i]) throw ConfigError("EmbeddingGroup: table '" + a.name + "' is named twice");
    const TableInfo& first = layout.tables()[index[0]];
    if (a.group != first.group)
      throw ConfigError("EmbeddingGroup: tables '" + first.name + "' and '" + a.name +
                        "' do not share rows (TableSpec::share_rows_with), so one operation cannot move both");
  }
  TableLayer& layer = t.layer<TableLayer>([&] { return std::make_unique<TableLayer>(t); });
  for (std::size_t i : index) members_.push_back(&layer.state(i));
}

std::size_t EmbeddingGroup::size() const noexcept { return members_.size(); }
const std::string& EmbeddingGroup::name(std::size_t i) const { return members_.at(i)->info->name; }
int EmbeddingGroup::dim(std::size_t i) const { return members_.at(i)->info->spec.dim; }
std::uint64_t EmbeddingGroup::rows() const noexcept { return members_.front()->info->spec.rows; }
const TableStats& EmbeddingGroup::stats() const noexcept { return stats_; }

void EmbeddingGroup::pull_rows(std::span<const std::uint64_t> keys, std::span<const std::span<float>> out) {
  detail::WorkerTransport& t = *members_.front()->transport;
  t.enter("EmbeddingGroup::pull_rows");
  check_buffers(members_, keys.size(), out, "EmbeddingGroup::pull_rows");
  pull_group(t, members_, keys, out, stats_);
}

void EmbeddingGroup::prefetch_rows(std::span<const std::uint64_t> keys) {
  detail::WorkerTransport& t = *members_.front()->transport;
  t.enter("EmbeddingGroup::prefetch_rows");
  check_key_count(keys.size(), "EmbeddingGroup::prefetch_rows");
  prefetch_group(t, *members_.front()->group, members_.front()->info->spec.rows, keys, stats_);
}

RowPush EmbeddingGroup::push_rows(std::span<const std::uint64_t> keys, std::span<const std::span<const float>> grads,
                                  float scale) {
  detail::WorkerTransport& t = *members_.front()->transport;
  t.enter("EmbeddingGroup::push_rows");
  check_buffers(members_, keys.size(), grads, "EmbeddingGroup::push_rows");
  detail::WorkerTransport::check_scale(scale, "EmbeddingGroup::push_rows");
  check_rule_scale(members_, scale, "EmbeddingGroup::push_rows");
  t.check_updating("EmbeddingGroup::push_rows");
  return push_group(t, members_, keys, grads, scale, stats_);
}

}  // namespace asyncps
