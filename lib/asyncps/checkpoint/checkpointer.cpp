// defines: restore_checkpoint, ServerCheckpointer, finish_job
#include "checkpoint/checkpointer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <system_error>
#include <thread>
#include <utility>

#include "asyncps/checkpoint.h"
#include "asyncps/error.h"
#include "asyncps/log.h"
#include "asyncps/stall_watch.h"
#include "core/check.h"
#include "checkpoint/checkpoint_format.h"
#include "transport/string_collectives.h"

namespace asyncps::detail {

namespace {

// A list of strings packed as (u64 length, bytes)*.
std::string pack(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& it : items) {
    const std::uint64_t n = it.size();
    out.append(reinterpret_cast<const char*>(&n), 8);
    out += it;
  }
  return out;
}
std::vector<std::string> unpack(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t pos = 0; pos + 8 <= s.size();) {
    std::uint64_t n;
    std::memcpy(&n, s.data() + pos, 8);
    if (n > s.size() - pos - 8) break;  // (never: pack wrote it; but no length is trusted to fit)
    out.push_back(s.substr(pos + 8, n));
    pos += 8 + n;
  }
  return out;
}

// The message of a failure that names `file`: the library's errors name it already.
std::string naming(const std::exception& e, const fs::path& file) {
  if (dynamic_cast<const CheckpointError*>(&e)) return e.what();
  return file.string() + ": " + e.what();
}

// When this process loaded the library: an event file in the directory last written before it
// is an earlier job's (this job's chief makes its files after its ranks have started).
const fs::file_time_type g_loaded = fs::file_time_type::clock::now();

// The TensorBoard event files (SummaryWriter's events.out.tfevents.*) in `dir` last written
// before `before`: an earlier run's curves, set aside with its checkpoints so that TensorBoard
// shows them as a run of their own (earlier-run-*/ is a subdirectory) rather than mixed with
// this run's. Never throws (an unreadable directory: what was listed).
std::vector<fs::path> event_files_before(const fs::path& dir, fs::file_time_type before) {
  std::vector<fs::path> out;
  for_each_name(dir, [&](const std::string& name) {
    if (!name.starts_with("events.out.tfevents.")) return;
    std::error_code ec;
    const fs::path f = dir / name;
    if (fs::is_regular_file(fs::symlink_status(f, ec)) && fs::last_write_time(f, ec) < before && !ec) out.push_back(f);
  });
  return out;
}

// A run that does not continue from the newest checkpoint in the directory would overwrite the
// files of an earlier run past its starting step: each server moves its own aside first. So does
// one that starts from a checkpoint elsewhere (restart_from) at a step the directory has one of
// its own (those files too), and one that restores past newer checkpoints it could not use
// (damaged: the only copy of the newest state, kept for whoever can mend it). Server 0 moves the
// earlier runs' event files with them.
void move_earlier_run(const JobFacts& job, std::int64_t after_step, bool skipped_newer = false) {
  const CheckpointOptions& co = job.options().checkpoint;
  if (co.dir.empty() || (co.restore && co.restart_from.empty() && !skipped_newer)) return;
  const Roles& roles = job.roles();
  std::string archive;
  if (roles.rank == 0) {
    char when[32] = {};
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    ::gmtime_r(&now, &tm);
    std::strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &tm);
    // a folder of its own: two runs in the same second (a restart loop) must not share one,
    // where the second's move would replace the first's files
    const std::string base = "earlier-run-" + std::string(when);
    std::string name = base;
    std::error_code ec;
    for (int n = 2; fs::exists(co.dir / name, ec) && n < 1000000; ++n) name = base + "-" + std::to_string(n);
    archive = (co.dir / name).string();
  }
  bcast_string(job.comm(), archive);
  long long moved = 0, failed = 0, events = 0;
  std::string problem;
  if (roles.is_server()) try {
      std::vector<fs::path> files = files_past(co.dir, after_step, roles.rank, roles.num_servers);
      const std::size_t checkpoint_files = files.size();
      if (roles.rank == 0)
        for (auto& f : event_files_before(co.dir, g_loaded)) files.push_back(std::move(f));
      for (std::size_t i = 0; i < files.size(); ++i) {
        const fs::path& f = files[i];
        std::error_code ec;
        fs::create_directories(archive, ec);
        // never replace a file already there (rename would): on a host where the folder
        // rank 0 found free is not, the move fails and the job is refused, nothing lost
        const fs::path target = fs::path(archive) / f.filename();
        if (!ec && fs::exists(target, ec)) ec = std::make_error_code(std::errc::file_exists);
        if (!ec) fs::rename(f, target, ec);
        if (ec) {
          ++failed;
          problem = f.string() + ": " + ec.message();
        } else {
          ++(i < checkpoint_files ? moved : events);
        }
      }
    } catch (const std::exception& e) {  // (a directory that cannot be listed) counted, agreed on below
      ++failed;
      problem = naming(e, co.dir);
    }
  long long mine[3] = {moved, failed, events}, all[3] = {0, 0, 0};
  ASYNCPS_MPI_CHECK(MPI_Allreduce(mine, all, 3, MPI_LONG_LONG, MPI_SUM, job.comm()));
  if (all[1] > 0)  // never overwrite what could not be moved
    throw CheckpointError("cannot move an earlier run's checkpoint files out of the way (" +
                          (problem.empty() ? std::string("on another server") : problem) +
                          "); move them away by hand or use another directory");
  // (the archive's path ends the line: scripts take it from there)
  const std::string with_events =
      all[2] > 0 ? ", and " + std::to_string(all[2]) + " TensorBoard event file(s) written before this job," : "";
  if (roles.rank == 0 && all[0] > 0)
    log(LogLevel::Info, std::to_string(all[0]) + " checkpoint file(s) of an earlier run past step " +
                            std::to_string(std::max<std::int64_t>(after_step, 0)) +
                            ", which this run would overwrite" + with_events + " moved to " + archive);
  else if (roles.rank == 0 && all[2] > 0)
    log(LogLevel::Info, std::to_string(all[2]) + " TensorBoard event file(s) of an earlier run (written before this job), "
                            "which this run starts over, moved to " + archive);
}

}  // namespace

Candidates find_candidates(const CheckpointOptions& co, const ParamLayout& layout, const IndexReader& read) {
  Candidates out;
  try {
    std::vector<fs::path> paths;
    if (!co.restart_from.empty()) paths.push_back(co.restart_from);
    else if (!co.dir.empty() && co.restore) paths = list_checkpoints(co.dir);  // never throws for the disk's sake
    std::size_t damaged = 0;
    for (const auto& p : paths) {
      try {
        // the one file a user names (restart_from) may be a symbolic link; files found are not
        const bool follow = !co.restart_from.empty();
        std::string bytes = read ? read(p, follow) : read_index_bytes(p, follow);
        const Index idx = parse_index(bytes, p);
        if (idx.layout_hash != layout.hash() || idx.arena != layout.size()) {
          out.fatal = p.string() + ": written for another model (" + another_model(idx.arena, layout.size()) +
                      "); use another Options::checkpoint.dir or Options::checkpoint.restart_from";
          break;
        }
        out.items.push_back(p.string());
        out.items.push_back(std::move(bytes));
      } catch (const std::exception& e) {  // any failure: damaged, unreadable, a file system error
        if (!co.restart_from.empty()) {
          out.fatal = std::string("Options::checkpoint.restart_from: ") + naming(e, p);
          break;
        }
        ++damaged;
        log(LogLevel::Warning, "skipping damaged checkpoint: " + naming(e, p) + "; trying an older one");
      }
    }
    if (out.fatal.empty() && out.items.empty() && damaged > 0)
      out.fatal = co.dir.string() + ": " + std::to_string(damaged) +
                  " checkpoint(s) found and none is valid; move them away to start afresh (nothing was overwritten)";
  } catch (const std::exception& e) {  // (out of memory listing them): a verdict all the same
    out.items.clear();
    out.fatal = co.dir.string() + ": cannot list the checkpoints to restore: " + e.what();
  }
  return out;
}

std::string load_range(const Index& index, const fs::path& dir, const ParamLayout& layout, const Shard& mine,
                       const RowPlan& rows, int server, RestoredShard& out, const ShardReader& read) {
  fs::path file = dir;  // the file being read, for a failure's message
  try {
    if (mine.offset > index.arena || mine.size > index.arena - mine.offset)
      return dir.string() + ": this server's range lies outside the checkpoint's arena";
    const std::size_t tables = layout.tables().size();
    if (tables > 0 && rows.empty()) return dir.string() + ": no row plan for the layout's tables";
    out.params.assign(mine.size, 0.f);
    out.shadow.assign(mine.size, 0.f);
    out.rows.assign(tables > 0 ? rows.server_floats(server) : 0, 0.f);
    out.has_shadow = true;
    // (index.num_servers >= 1: parse_index; its entries are servers 0..S-1 in order)
    const RowPlan saved = tables > 0 ? RowPlan(layout, static_cast<int>(index.num_servers)) : RowPlan();
    // the rows [lo, hi) of table t that saved server k and this server share
    auto shared_rows = [&](std::size_t t, int k, std::uint64_t& lo, std::uint64_t& hi) {
      const RowPlan::Part &a = saved.part(t, k), &b = rows.part(t, server);
      lo = std::max(a.first_row, b.first_row);
      hi = std::min(a.first_row + a.rows, b.first_row + b.rows);
      return lo < hi;
    };
    // (parse_index: the shards tile [0, arena), so every offset + count below is <= arena)
    for (std::size_t k = 0; k < index.shards.size(); ++k) {
      const IndexEntry& e = index.shards[k];
      const int ks = static_cast<int>(k);
      const std::uint64_t lo = std::max<std::uint64_t>(e.offset, mine.offset);
      const std::uint64_t hi = std::min<std::uint64_t>(e.offset + e.count, mine.offset + mine.size);
      bool rows_wanted = false;
      for (std::size_t t = 0; t < tables && !rows_wanted; ++t) {
        std::uint64_t a = 0, b = 0;
        rows_wanted = shared_rows(t, ks, a, b);
      }
      if (lo >= hi && !rows_wanted) continue;
      file = dir / e.file;  // a plain name (parse_index)
      const ShardFile s = read ? read(file, layout) : read_shard(file, layout);
      if (s.checksum != e.checksum || s.header.offset != e.offset || s.header.count != e.count ||
          s.header.server != k || s.header.num_servers != index.num_servers || s.params.size() != e.count ||
          (!s.shadow.empty() && s.shadow.size() != e.count) ||
          s.rows.size() != (tables > 0 ? saved.server_floats(ks) : 0))
        return file.string() + ": does not match its index (a shard of another save)";
      if (lo < hi) {
        const auto from = static_cast<std::ptrdiff_t>(lo - e.offset), to = static_cast<std::ptrdiff_t>(hi - e.offset);
        const auto at = static_cast<std::ptrdiff_t>(lo - mine.offset);
        std::copy(s.params.begin() + from, s.params.begin() + to, out.params.begin() + at);
        if (s.shadow.empty()) out.has_shadow = false;
        else std::copy(s.shadow.begin() + from, s.shadow.begin() + to, out.shadow.begin() + at);
      }
      for (std::size_t t = 0; t < tables; ++t) {
        std::uint64_t r0 = 0, r1 = 0;
        if (!shared_rows(t, ks, r0, r1)) continue;
        const auto stride = static_cast<std::size_t>(rows.stride(t)), pitch = static_cast<std::size_t>(rows.pitch(t));
        std::size_t src = saved.offset_of(t, ks, r0), dst = rows.offset_of(t, server, r0);
        if (pitch == stride) {  // a table stored alone: its rows are one block
          std::copy_n(s.rows.begin() + static_cast<std::ptrdiff_t>(src), static_cast<std::size_t>(r1 - r0) * stride,
                      out.rows.begin() + static_cast<std::ptrdiff_t>(dst));
          continue;
        }
        for (std::uint64_t r = r0; r < r1; ++r, src += pitch, dst += pitch)  // a row group's: row by row
          std::copy_n(s.rows.begin() + static_cast<std::ptrdiff_t>(src), stride,
                      out.rows.begin() + static_cast<std::ptrdiff_t>(dst));
      }
    }
    if (!out.has_shadow) out.shadow.clear();
    return {};
  } catch (const std::exception& e) {  // any failure: damaged, unreadable, out of memory
    return naming(e, file);
  }
}

RestoredShard restore_checkpoint(const JobFacts& job, DirLock* lock) {
  const CheckpointOptions& co = job.options().checkpoint;
  const Roles& roles = job.roles();
  const ParamLayout& layout = job.layout();
  // 1. rank 0: the candidates, newest first, as (path, index bytes); damaged ones reported
  std::string fatal, payload;
  if (lock && !co.dir.empty()) {
    *lock = DirLock::acquire(co.dir, fatal);  // fatal: who holds it
    if (!fatal.empty()) fatal = "Options::checkpoint.dir " + fatal;
  }
  if (roles.rank == 0 && fatal.empty()) {
    Candidates c = find_candidates(co, layout);
    fatal = std::move(c.fatal);
    try {
      payload = pack(c.items);
    } catch (const std::exception& e) {  // (every rank must still hear a verdict)
      fatal = "the checkpoints to restore: " + std::string(e.what());
    }
  }
  bcast_string(job.comm(), fatal);
  if (!fatal.empty()) throw CheckpointError(fatal);
  bcast_string(job.comm(), payload);
  const std::vector<std::string> items = unpack(payload);

  // 2. the first candidate every server can load; rank 0 learns why each server could not
  //    (with servers on hosts that share no file system, what is missing where)
  RestoredShard out;
  std::string why_not;  // rank 0: the newest candidate's failures, one per server (then every rank)
  for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
    const fs::path path = items[i];
    Index idx;
    std::string failure;
    try {
      idx = parse_index(items[i + 1], path);  // (rank 0 parsed these bytes already)
    } catch (const std::exception& e) {
      failure = naming(e, path);
    }
    RestoredShard attempt;
    if (failure.empty() && roles.is_server())
      failure = load_range(idx, path.parent_path(), layout, job.plan().shard(roles.rank), job.row_plan(),
                           roles.rank, attempt);
    const int ok = failure.empty() ? 1 : 0, shadow = !roles.is_server() || attempt.has_shadow ? 1 : 0;
    if (!failure.empty())
      failure = (roles.is_server() ? "server " : "rank ") + std::to_string(roles.rank) + " on " +
                job.host(roles.rank) + ": " + failure;
    else if (roles.is_server())
      out = std::move(attempt);
    int all[2] = {ok, shadow}, agreed[2] = {0, 0};
    ASYNCPS_MPI_CHECK(MPI_Allreduce(all, agreed, 2, MPI_INT, MPI_MIN, job.comm()));
    if (agreed[0] == 1) {
      out.found = true;
      out.step = idx.step;
      out.has_shadow = agreed[1] == 1;
      out.from = path.string();
      if (!out.has_shadow) out.shadow.clear();
      if (roles.rank == 0)
        log(LogLevel::Info, "restored " + path.string() + " (global step " + std::to_string(idx.step) + ", written by " +
                                std::to_string(idx.num_servers) + " server(s))");
      // (rank 0 says: the directory's own files at the step restored from elsewhere, where this
      // run saves at that step even without taking one (tables: their rows move without the
      // step, and the final save is always made), or newer checkpoints in it that could not be
      // used)
      int from_elsewhere = 0, skipped_newer = 0;
      if (roles.rank == 0 && !co.dir.empty()) {
        std::error_code ec;
        from_elsewhere = !co.restart_from.empty() && !layout.tables().empty() &&
                         !fs::equivalent(co.restart_from, index_path(co.dir, idx.step), ec);
        const auto in_dir = list_checkpoints(co.dir);  // newest first: ckpt-<step>.index
        const std::string newest = in_dir.empty() ? std::string() : in_dir.front().stem().string();
        skipped_newer = newest.size() > 5 && parse_step(newest.substr(5)) > idx.step;
      }
      int flags[2] = {from_elsewhere, skipped_newer};
      ASYNCPS_MPI_CHECK(MPI_Bcast(flags, 2, MPI_INT, 0, job.comm()));
      move_earlier_run(job, flags[0] ? idx.step - 1 : idx.step, flags[1] != 0);
      return out;
    }
    const std::vector<std::string> failures = gather_strings(job.comm(), failure);
    if (roles.rank == 0) {
      std::string why;
      for (const auto& f : failures)
        if (!f.empty()) why += (why.empty() ? "" : "; ") + f;
      log(LogLevel::Warning, "checkpoint " + path.string() + " cannot be used: " + why);
      if (why_not.empty()) why_not = why;  // the newest candidate's reasons go into the error
    }
  }
  if (items.empty()) {
    move_earlier_run(job, -1);
    return RestoredShard{};
  }
  // candidates existed but none could be loaded everywhere: every rank throws the same error,
  // with rank 0's reasons (and after rank 0 has logged them: nobody ends the job before that)
  bcast_string(job.comm(), why_not);
  const std::string what = !co.restart_from.empty() ? "Options::checkpoint.restart_from " + co.restart_from.string() +
                                                          ": cannot be restored"
                                                    : co.dir.string() +
                                                          ": no checkpoint could be restored on every server; move them "
                                                          "away to start afresh (nothing was overwritten)";
  throw CheckpointError(why_not.empty() ? what : what + " (newest tried: " + why_not + ")");
}

ServerCheckpointer::ServerCheckpointer(const JobFacts& job, SessionWindows& windows, ControlBlock& control,
                                       std::int64_t restored_step)
    : job_(job), win_(windows), control_(control), enabled_(!job.options().checkpoint.dir.empty()),
      last_save_(std::chrono::steady_clock::now()), last_indexed_(restored_step), restored_(restored_step) {
  if (enabled_) {
    std::error_code ec;
    fs::create_directories(job.options().checkpoint.dir, ec);
    if (ec)
      throw ConfigError("Options::checkpoint.dir " + job.options().checkpoint.dir.string() +
                        ": cannot create it: " + ec.message());
    // the restored step's files stay (what was restored, and earlier saves of that step): a
    // save of it in this run takes a generation above theirs and never overwrites them
    if (job.roles().rank == 0) {
      gen_step_ = restored_step;
      next_gen_ = newest_generation(job.options().checkpoint.dir, restored_step) + 1;
    }
  }
}

std::int64_t ServerCheckpointer::take_generation(std::int64_t step) {
  if (step != gen_step_) {  // (steps past the restored one have no files: a run moves them away)
    gen_step_ = step;
    next_gen_ = 0;
  }
  return next_gen_++;  // also after a save that failed: its leftovers are never written over
}

bool ServerCheckpointer::changed_since_save() const {
  return control_.local_step() > last_indexed_ || control_.local_rows_moved() != rows_saved_;
}

std::uint64_t ServerCheckpointer::write_my_shard(std::int64_t step, std::int64_t generation, bool with_shadow,
                                                 bool final_save) {
  const Roles& roles = job_.roles();
  const Shard& sh = job_.plan().shard(roles.rank);
  ASYNCPS_MPI_CHECK(MPI_Win_sync(win_.params.get()));
  ASYNCPS_MPI_CHECK(MPI_Win_sync(win_.shadow.get()));
  const bool tables = win_.rows.get() != MPI_WIN_NULL;
  if (tables) ASYNCPS_MPI_CHECK(MPI_Win_sync(win_.rows.get()));
  ShardHeader h;
  h.layout_hash = job_.layout().hash();
  h.arena = job_.layout().size();
  h.step = step;
  h.num_servers = static_cast<std::uint32_t>(roles.num_servers);
  h.server = static_cast<std::uint32_t>(roles.rank);
  h.offset = sh.offset;
  h.count = sh.size;
  const std::span<const float> params(win_.params.data<float>(), sh.size);
  const std::span<const float> shadow =
      with_shadow ? std::span<const float>(win_.shadow.data<float>(), sh.size) : std::span<const float>();
  // the tables' rows as the window holds them: Hogwild-consistent like the arena (each float
  // whole; a row may be caught between two workers' pushes, as a pull could see it)
  const std::span<const float> rows =
      tables ? std::span<const float>(win_.rows.data<float>(), job_.row_plan().server_floats(roles.rank))
             : std::span<const float>();
  sharded_.push_back(step);
  const auto t0 = std::chrono::steady_clock::now();
  auto written = write_shard(job_.options().checkpoint.dir, h, job_.layout(), params, shadow, rows, final_save,
                             generation);
  if (log_enabled(LogLevel::Debug))
    log(LogLevel::Debug, "server " + std::to_string(roles.rank) + " wrote its shard of global step " + std::to_string(step) +
                             (final_save ? " (final)" : "") + ": " + std::to_string((params.size() + shadow.size() + rows.size()) * 4) +
                             " bytes of floats in " +
                             std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) + " s");
  return written;
}

void ServerCheckpointer::request_save(std::int64_t step) {
  const int s = job_.roles().num_servers;
  const std::int64_t gen = take_generation(step);
  const std::int64_t rows = control_.local_rows_moved();  // read before the rows are: a later push saves again
  try {
    my_sum_ = write_my_shard(step, gen, control_.local_shadow_valid());
  } catch (const std::exception& e) {  // e.g. a full disk: the older checkpoints are intact, go on
    warn_not_saved(step, e.what());
    return;
  }
  pending_ = step;
  pending_gen_ = gen;
  pending_rows_ = rows;
  if (s > 1) control_.set_save_request(step, gen);
  try_commit();
}

void ServerCheckpointer::try_commit() {
  const Roles& roles = job_.roles();
  const int s = roles.num_servers;
  if (s > 1 && control_.local_save_acks() < s - 1) return;
  const std::int64_t failures = s > 1 ? control_.local_save_failures() : 0;
  Index idx;
  idx.step = pending_;
  idx.num_servers = static_cast<std::uint32_t>(s);
  idx.layout_hash = job_.layout().hash();
  idx.arena = job_.layout().size();
  for (int k = 0; k < s; ++k) {
    const Shard& sh = job_.plan().shard(k);
    const auto sum = k == 0 ? my_sum_ : control_.local_shard_sum(k);
    idx.shards.push_back({sh.offset, sh.size, sum, shard_path({}, pending_, k, s, pending_gen_).filename().string()});
  }
  const auto& co = job_.options().checkpoint;
  std::string problem = failures > 0 ? std::to_string(failures) + " other server(s) could not write their shard" : "";
  if (problem.empty()) {
    try {
      write_index(co.dir, idx);  // the commit point
    } catch (const std::exception& e) {
      problem = e.what();
    }
  }
  if (s > 1) control_.reset_save(s, failures);
  if (!problem.empty()) {  // no index: this save never happened (its shards are pruned later)
    warn_not_saved(pending_, problem);
    pending_ = -1;
    return;
  }
  last_indexed_ = pending_;
  rows_saved_ = pending_rows_;
  indexed_.push_back(pending_);
  // a save of a step saved before: the shards the replaced index named are no one's now (here
  // every server's; the others remove their own too, told by the committed slots)
  std::vector<std::string> named;
  for (const auto& e : idx.shards) named.push_back(e.file);
  remove_step_shards(co.dir, pending_, /*server=*/-1, s, named);
  if (s > 1) control_.set_committed(pending_, pending_gen_);
  pending_ = -1;
  prune(co.keep);
}

void ServerCheckpointer::prune(int keep) {
  const auto& co = job_.options().checkpoint;
  try {
    prune_checkpoints(co.dir, keep, job_.roles().rank, job_.roles().num_servers, indexed_, sharded_);
  } catch (const std::exception& e) {  // old files left behind: a warning, never the job's end
    log(LogLevel::Warning, "old checkpoints in " + co.dir.string() + " were not all removed (" + e.what() +
                               "); training goes on, the next save tries again");
  }
}

void ServerCheckpointer::warn_not_saved(std::int64_t step, const std::string& why) const {
  log(LogLevel::Warning, "the checkpoint of global step " + std::to_string(step) + " was not saved (" + why +
                             "); training goes on, the next save tries again and the checkpoints saved before are "
                             "intact");
}

std::string ServerCheckpointer::save_now(const std::function<void()>& progress, double seconds) {
  if (!enabled_ || job_.roles().rank != 0) return {};
  if (pending_ < 0 && changed_since_save()) request_save(control_.local_step());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (pending_ >= 0 && std::chrono::steady_clock::now() < deadline) {
    progress();
    try_commit();
    if (pending_ >= 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (pending_ >= 0 || indexed_.empty()) return {};
  return index_path(job_.options().checkpoint.dir, last_indexed_).string();
}

void ServerCheckpointer::answer_request() {
  const Roles& roles = job_.roles();
  if (control_.read_save_state().serial <= last_serial_) return;
  const SaveState v = control_.read_save_state();  // (read again: see ControlBlock::read_save_state)
  last_serial_ = v.serial;
  if (v.committed_generation >= 0)  // this server's shards of the last committed step that its index does not name
    remove_step_shards(job_.options().checkpoint.dir, v.committed_step, roles.rank, roles.num_servers,
                       {shard_path({}, v.committed_step, roles.rank, roles.num_servers, v.committed_generation)
                            .filename()
                            .string()});
  std::uint64_t sum = 0;
  try {
    sum = write_my_shard(v.request, v.generation, v.shadow_valid);
  } catch (const std::exception& e) {  // acked all the same (server 0 waits for every ack), as a failure
    warn_not_saved(v.request, e.what());
    control_.ack_failed_save();
    return;
  }
  control_.ack_save(roles.rank, sum);
  prune(job_.options().checkpoint.keep);
}

void ServerCheckpointer::after_final(std::int64_t final_step, std::int64_t generation, bool index_written,
                                     int extra_kept) {
  const auto& co = job_.options().checkpoint;
  const Roles& roles = job_.roles();
  std::error_code ec;
  // Saves labelled past the final step hold no more than it (a claim given back): drop them.
  for (auto* steps : {&indexed_, &sharded_})
    for (std::int64_t st : *steps)
      if (st > final_step) {
        if (steps == &indexed_) fs::remove(index_path(co.dir, st), ec);
        else remove_step_shards(co.dir, st, roles.rank, roles.num_servers);
      }
  std::erase_if(indexed_, [&](std::int64_t st) { return st > final_step; });
  std::erase_if(sharded_, [&](std::int64_t st) { return st > final_step; });
  if (index_written) {
    // the final index names the .final shards: the step's other shards are unreferenced (server 0
    // removes every server's, as after any save of a step saved before; each server its own)
    std::vector<std::string> named;  // the final index's shards
    for (int k = 0; k < roles.num_servers; ++k)
      named.push_back(final_shard_path({}, final_step, k, roles.num_servers, generation).filename().string());
    remove_step_shards(co.dir, final_step, roles.rank == 0 ? -1 : roles.rank, roles.num_servers, named);
    if (roles.rank == 0) indexed_.push_back(final_step);
  }
  prune(co.keep + extra_kept);
}

void ServerCheckpointer::tick() {
  if (!enabled_) return;
  if (job_.roles().rank != 0) {
    if (++polls_since_check_ >= 10) {  // one small atomic read every ~10 ticks (about 100 ms)
      polls_since_check_ = 0;
      answer_request();
    }
    return;
  }
  if (pending_ >= 0) {
    try_commit();
    return;
  }
  const double every = job_.options().checkpoint.save_secs;
  const auto now = std::chrono::steady_clock::now();
  if (every <= 0 || std::chrono::duration<double>(now - last_save_).count() < every) return;
  last_save_ = now;
  if (changed_since_save()) request_save(control_.local_step());
}

FinalState finish_job(const JobFacts& job, ControlBlock& control, ServerCheckpointer* ckpt) {
  const Roles& roles = job.roles();
  const auto& co = job.options().checkpoint;
  std::int64_t state[5] = {0, 0, 0, 0, 0};  // step, halted, shadow valid, save, its generation
  if (roles.rank == 0) {
    state[0] = control.local_step();
    state[1] = control.local_halt();
    state[2] = control.local_shadow_valid();
    // a final save whenever this run took a step (a periodic save of the same step may have
    // missed updates that were still in flight when it was taken), and always with tables: their
    // rows move without the dense step (push_rows outside claimed steps)
    state[3] = !co.dir.empty() && ckpt && (state[0] != ckpt->restored_step() || !job.layout().tables().empty());
    if (state[3]) state[4] = ckpt->take_generation(state[0]);
  }
  ASYNCPS_MPI_CHECK(MPI_Bcast(state, 5, MPI_INT64_T, 0, job.comm()));
  FinalState out{state[0], state[1] != 0, state[1] >= ControlBlock::kTerminatedHalt, {}};
  if (!state[3]) return out;
  // every server writes its shard of the final step; rank 0 gathers the checksums, and what
  // went wrong where: a final save that fails ends the job with an error on every rank (the
  // training it would have kept is lost, unlike a periodic one's), the older checkpoints intact
  unsigned long long sum = 0;
  std::string failure;
  if (roles.is_server() && ckpt) try {
      sum = ckpt->write_my_shard(state[0], state[4], state[2] != 0, /*final_save=*/true);
    } catch (const std::exception& e) {  // gathered: every rank reaches the same verdict
      failure = job.describe_rank(roles.rank) + ": " + e.what();
    }
  std::vector<unsigned long long> sums(static_cast<std::size_t>(roles.size));
  ASYNCPS_MPI_CHECK(MPI_Gather(&sum, 1, MPI_UNSIGNED_LONG_LONG, sums.data(), 1, MPI_UNSIGNED_LONG_LONG, 0, job.comm()));
  std::string problem;
  for (const auto& f : gather_strings(job.comm(), failure))
    if (!f.empty()) problem += (problem.empty() ? "" : "; ") + f;
  if (roles.rank == 0 && problem.empty()) {
    Index idx;
    idx.step = state[0];
    idx.num_servers = static_cast<std::uint32_t>(roles.num_servers);
    idx.layout_hash = job.layout().hash();
    idx.arena = job.layout().size();
    for (int k = 0; k < roles.num_servers; ++k) {
      const Shard& sh = job.plan().shard(k);
      idx.shards.push_back({sh.offset, sh.size, sums[static_cast<std::size_t>(k)],
                            final_shard_path({}, state[0], k, roles.num_servers, state[4]).filename().string()});
    }
    try {
      write_index(co.dir, idx);  // atomically replaces a periodic index of the same step
      out.saved = index_path(co.dir, state[0]).string();
    } catch (const std::exception& e) {
      problem = e.what();
    }
  }
  bcast_string(job.comm(), problem);  // also orders every server's pruning behind the index
  if (!problem.empty())
    throw CheckpointError("the final checkpoint of global step " + std::to_string(state[0]) +
                          " could not be saved (" + problem + "); the checkpoints saved before are intact");
  // after a worker's halt the final save holds a model that was going wrong: it does not push out
  // the older checkpoints (kept: keep + 1). A halt for SIGTERM holds a sound one.
  if (roles.is_server() && ckpt)
    ckpt->after_final(state[0], state[4], true, /*extra_kept=*/out.halted && !out.terminated ? 1 : 0);
  return out;
}

}  // namespace asyncps::detail
