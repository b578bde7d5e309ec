// defines: EmbeddingTable (a worker's row-sparse pull and push on the session's channel)
#include "asyncps/embedding_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "asyncps/error.h"
#include "core/rows.h"
#include "worker/worker_transport.h"

namespace asyncps {

using detail::RmaBatch;
using detail::Table;
constexpr std::size_t kNotCached = ~std::size_t{0};

struct detail::TableState {
  std::size_t index = 0;       // in layout().tables()
  const TableInfo* info = nullptr;
  float eps = 1e-8f;
  std::size_t merge_gap_bytes = 0;  // (merge_gap_bytes() of the session's transport)
  TableStats stats;
  // one call's rows: order = (row, key index) sorted; rows = its distinct rows; slot[i] = key i's
  // place in rows; buf = rows x stride floats (a pull's data, a push's update)
  std::vector<std::pair<std::uint64_t, std::uint32_t>> order;
  std::vector<std::uint64_t> rows;
  std::vector<std::uint32_t> slot;
  // the operations: runs of rows on one server, gaps of a few rows included (read along, or
  // added as zeros: fewer, larger operations); pos[u] = row u's float offset in buf
  struct Run {
    int server = 0;
    std::uint64_t first_row = 0, rows = 0;
    std::size_t buf = 0;
  };
  std::vector<Run> runs;
  std::vector<std::size_t> pos;
  std::vector<float> buf;
  // Adagrad: the accumulators of the last pull's rows (sorted), and the push's own reads
  std::vector<std::uint64_t> acc_rows;
  std::vector<float> acc;
  std::vector<float> fresh;
  std::vector<std::size_t> cached;  // fresh[u]'s place in acc, or kNotCached
  // the last push, in flight: its own buffer, completed locally only when the next push needs
  // the buffer or the worker settles (so that it flies during the dense step and the compute)
  std::vector<float> push_buf;
  RmaBatch push_inflight;
  bool push_pending = false;
};

namespace {

// The worker's tables' state: a layer of its transport, so that drain() completes the rows'
// writes and the buffers live as long as the windows.
class TableLayer final : public detail::WorkerLayer {
 public:
  explicit TableLayer(detail::WorkerTransport& t) : t_(t) {}
  detail::TableState*& state(std::size_t index) {
    if (states_.size() <= index) states_.resize(index + 1);
    return states_[index];
  }
  std::vector<std::unique_ptr<detail::TableState>> owned;
  void settle() override {
    for (auto& st : owned) complete_push(t_, *st);
    if (t_.channel().pending(Table::Rows)) t_.channel().flush(Table::Rows);
  }
  // The last push's buffer is free again (its writes complete at the servers by the next flush).
  static void complete_push(detail::WorkerTransport& t, detail::TableState& st) {
    if (!st.push_pending) return;
    st.push_pending = false;
    t.channel().complete_local(st.push_inflight);
  }

 private:
  detail::WorkerTransport& t_;
  std::vector<detail::TableState*> states_;
};

// keys -> the state's order, rows, slot (distinct rows, sorted: by server, then by offset)
void group(detail::TableState& st, std::span<const std::uint64_t> keys) {
  const std::uint64_t n_rows = st.info->spec.rows;
  st.order.resize(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i)
    st.order[i] = {detail::row_of_key(keys[i], n_rows), static_cast<std::uint32_t>(i)};
  std::sort(st.order.begin(), st.order.end());
  st.rows.clear();
  st.slot.resize(keys.size());
  for (const auto& [row, i] : st.order) {
    if (st.rows.empty() || st.rows.back() != row) st.rows.push_back(row);
    st.slot[i] = static_cast<std::uint32_t>(st.rows.size() - 1);
  }
}

// A run of rows takes in the rows between two wanted ones when they are at most this many bytes
// apart (read along, or added as zeros), as an operation costs about as much as that many bytes.
// Measured with ctr_async, 2^22 rows, 1 + 2 (docs/EMBEDDINGS.md "Merging runs"): on one host (shared
// memory: bytes are cheap, whether the target's CPU applies them or not) 4 KiB was best (27,507
// samples/s; 0 B: 21,403; 512 B: 24,163; 16 KiB: 15,516); across hosts, where the gaps' bytes cross
// the network too, gaps of 0 to 1 KiB were best (3,011-3,061; 4 KiB: 2,608, 16 KiB: 859), and 1 KiB
// still merges the rows of small or dense tables.
std::size_t merge_gap_bytes(detail::WorkerTransport& t) { return t.session().single_node() ? 4096 : 1024; }

// The state's runs and pos for its rows; returns the floats the buffer needs.
std::size_t plan_runs(detail::TableState& st, const RowPlan& plan) {
  const auto stride = static_cast<std::size_t>(st.info->stride());
  const std::uint64_t max_gap = st.merge_gap_bytes / (stride * sizeof(float));
  st.runs.clear();
  st.pos.resize(st.rows.size());
  std::size_t floats = 0;
  std::size_t j = 0;
  while (j < st.rows.size()) {
    const int server = plan.server_of(st.index, st.rows[j]);
    const RowPlan::Part& part = plan.part(st.index, server);
    std::size_t k = j + 1;
    while (k < st.rows.size() && st.rows[k] < part.first_row + part.rows && st.rows[k] - st.rows[k - 1] - 1 <= max_gap) ++k;
    detail::TableState::Run run{server, st.rows[j], st.rows[k - 1] - st.rows[j] + 1, floats};
    for (std::size_t u = j; u < k; ++u) st.pos[u] = floats + static_cast<std::size_t>(st.rows[u] - run.first_row) * stride;
    floats += static_cast<std::size_t>(run.rows) * stride;
    st.runs.push_back(run);
    j = k;
  }
  return floats;
}

void check_keys(std::size_t keys, std::size_t floats, int dim, const char* call) {
  if (keys > std::numeric_limits<std::uint32_t>::max())
    throw ConfigError(std::string(call) + ": at most 2^32 - 1 keys per call, got " + std::to_string(keys));
  const auto d = static_cast<std::size_t>(dim);
  if (keys > std::numeric_limits<std::size_t>::max() / d || floats != keys * d)
    throw ConfigError(std::string(call) + ": " + std::to_string(keys) + " keys need " +
                      (keys > std::numeric_limits<std::size_t>::max() / d ? std::string("more") : std::to_string(keys * d)) +
                      " floats (keys x dim " + std::to_string(dim) + "), got " + std::to_string(floats));
}

}  // namespace

std::uint64_t table_row(std::uint64_t key, std::uint64_t rows) noexcept { return detail::row_of_key(key, rows); }
float table_initial_value(const TableInfo& table, std::uint64_t row, int col) noexcept {
  return detail::initial_row_value(table, row, col);
}

EmbeddingTable::EmbeddingTable(WorkerClient& worker, const std::string& name) : worker_(&worker) {
  detail::WorkerTransport& t = worker.transport();
  t.enter("EmbeddingTable");
  const ParamLayout& layout = t.session().layout();
  const std::size_t index = layout.table_index(name);  // (ConfigError naming it if absent)
  TableLayer& layer = t.layer<TableLayer>([&] { return std::make_unique<TableLayer>(t); });
  detail::TableState*& st = layer.state(index);
  if (!st) {
    layer.owned.push_back(std::make_unique<detail::TableState>());
    st = layer.owned.back().get();
    st->index = index;
    st->info = &layout.tables()[index];
    st->merge_gap_bytes = merge_gap_bytes(t);
  }
  state_ = st;
}

const std::string& EmbeddingTable::name() const noexcept { return state_->info->name; }
std::uint64_t EmbeddingTable::rows() const noexcept { return state_->info->spec.rows; }
int EmbeddingTable::dim() const noexcept { return state_->info->spec.dim; }
RowOptimizer EmbeddingTable::optimizer() const noexcept { return state_->info->spec.optimizer; }
std::uint64_t EmbeddingTable::row_of(std::uint64_t key) const noexcept { return detail::row_of_key(key, rows()); }
const TableStats& EmbeddingTable::stats() const noexcept { return state_->stats; }
float EmbeddingTable::epsilon() const noexcept { return state_->eps; }

void EmbeddingTable::set_epsilon(float eps) {
  worker_->transport().enter("EmbeddingTable::set_epsilon");
  if (!std::isfinite(eps) || eps < 0) throw ConfigError("EmbeddingTable::set_epsilon: eps must be finite and >= 0");
  state_->eps = eps;
}

void EmbeddingTable::pull_rows(std::span<const std::uint64_t> keys, std::span<float> out) {
  detail::WorkerTransport& t = worker_->transport();
  t.enter("EmbeddingTable::pull_rows");
  detail::TableState& st = *state_;
  const int dim = st.info->spec.dim, stride = st.info->stride();
  check_keys(keys.size(), out.size(), dim, "EmbeddingTable::pull_rows");
  const auto t0 = detail::WorkerClock::now();
  group(st, keys);
  const RowPlan& plan = t.session().row_plan();
  st.buf.resize(plan_runs(st, plan));
  detail::RmaChannel& ch = t.channel();
  RmaBatch batch = ch.batch();
  for (const auto& run : st.runs) {
    ch.read_run(Table::Rows, run.server, static_cast<MPI_Aint>(plan.offset_of(st.index, run.server, run.first_row)),
                st.buf.data() + run.buf, static_cast<std::size_t>(run.rows) * static_cast<std::size_t>(stride), batch);
    ++st.stats.runs;
  }
  ch.complete_local(batch);  // the data is here (a read needs nothing more)
  // out[i] = its row (the accumulator stays behind)
  for (std::size_t i = 0; i < keys.size(); ++i)
    std::copy_n(st.buf.data() + st.pos[st.slot[i]], dim,
                out.data() + i * static_cast<std::size_t>(dim));
  if (st.info->spec.optimizer == RowOptimizer::Adagrad) {
    st.acc_rows = st.rows;
    st.acc.resize(st.rows.size());
    for (std::size_t u = 0; u < st.rows.size(); ++u) st.acc[u] = st.buf[st.pos[u] + static_cast<std::size_t>(dim)];
  }
  ++st.stats.pulls;
  st.stats.keys_pulled += keys.size();
  st.stats.rows_pulled += st.rows.size();
  st.stats.bytes_pulled += st.buf.size() * sizeof(float);
  st.stats.pull_seconds += detail::seconds_since(t0);
}

RowPush EmbeddingTable::push_rows(std::span<const std::uint64_t> keys, std::span<const float> grads, float scale) {
  detail::WorkerTransport& t = worker_->transport();
  t.enter("EmbeddingTable::push_rows");
  detail::TableState& st = *state_;
  const int dim = st.info->spec.dim, stride = st.info->stride();
  check_keys(keys.size(), grads.size(), dim, "EmbeddingTable::push_rows");
  detail::WorkerTransport::check_scale(scale, "EmbeddingTable::push_rows");
  t.check_updating("EmbeddingTable::push_rows");
  const auto t0 = detail::WorkerClock::now();
  RowPush result;
  if (!detail::all_finite(grads.data(), grads.size())) {
    ++st.stats.nonfinite;
    result.nonfinite = true;
    return result;
  }
  TableLayer::complete_push(t, st);  // the last push's buffer, before it is written again
  group(st, keys);
  const std::size_t d = static_cast<std::size_t>(dim), s = static_cast<std::size_t>(stride);
  const RowPlan& plan = t.session().row_plan();
  // row u's place in buf = the sum of the gradients of its keys (in sorted order: the same sum on
  // every run); the gap rows stay 0
  std::vector<float>& buf = st.push_buf;
  buf.assign(plan_runs(st, plan), 0.f);
  for (const auto& [row, i] : st.order) {
    float* dst = buf.data() + st.pos[st.slot[i]];
    const float* g = grads.data() + static_cast<std::size_t>(i) * d;
    for (std::size_t c = 0; c < d; ++c) dst[c] += g[c];
  }
  detail::RmaChannel& ch = t.channel();
  if (st.info->spec.optimizer == RowOptimizer::Adagrad) {
    // the accumulators: from this worker's last pull of the row, else read now
    st.fresh.assign(st.rows.size(), std::numeric_limits<float>::quiet_NaN());
    st.cached.assign(st.rows.size(), kNotCached);
    RmaBatch reads = ch.batch();
    bool any = false;
    for (std::size_t u = 0; u < st.rows.size(); ++u) {
      const auto it = std::lower_bound(st.acc_rows.begin(), st.acc_rows.end(), st.rows[u]);
      if (it != st.acc_rows.end() && *it == st.rows[u]) {
        st.cached[u] = static_cast<std::size_t>(it - st.acc_rows.begin());
        st.fresh[u] = st.acc[st.cached[u]];
        continue;
      }
      const int server = plan.server_of(st.index, st.rows[u]);
      ch.read_run(Table::Rows, server, static_cast<MPI_Aint>(plan.offset_of(st.index, server, st.rows[u]) + d),
                  &st.fresh[u], 1, reads);
      any = true;
    }
    if (any) ch.complete_local(reads);
    // buf[u] = [scale * g / (sqrt(acc + mean(g^2)) + eps) ..., mean(g^2)]
    for (std::size_t u = 0; u < st.rows.size(); ++u) {
      float* row = buf.data() + st.pos[u];
      double g2 = 0;
      for (std::size_t c = 0; c < d; ++c) g2 += static_cast<double>(row[c]) * row[c];
      const double add = g2 / static_cast<double>(d);
      const double denom = std::sqrt(static_cast<double>(st.fresh[u]) + add) + st.eps;
      for (std::size_t c = 0; c < d; ++c) row[c] = static_cast<float>(scale * row[c] / denom);
      row[d] = static_cast<float>(add);
      if (st.cached[u] != kNotCached) st.acc[st.cached[u]] += row[d];  // (a second push before a pull sees its own)
    }
  } else {
    for (float& x : buf) x *= scale;
  }
  if (!detail::all_finite(buf.data(), buf.size())) {  // (scale * g overflowed)
    ++st.stats.nonfinite;
    result.nonfinite = true;
    return result;
  }
  RmaBatch batch = ch.batch();
  for (const auto& run : st.runs) {
    ch.add_run(Table::Rows, run.server, static_cast<MPI_Aint>(plan.offset_of(st.index, run.server, run.first_row)),
               buf.data() + run.buf, static_cast<std::size_t>(run.rows) * s, batch);
    ++st.stats.runs;
  }
  // in flight: completed locally by the next push of this table (or the worker's settle), at the
  // servers by the next flush
  st.push_inflight = std::move(batch);
  st.push_pending = true;
  ++st.stats.pushes;
  st.stats.keys_pushed += keys.size();
  st.stats.rows_pushed += st.rows.size();
  st.stats.bytes_pushed += buf.size() * sizeof(float);
  st.stats.push_seconds += detail::seconds_since(t0);
  result.applied = true;
  result.rows = st.rows.size();
  return result;
}

}  // namespace asyncps
