// The Runner's step loop. Every step is a transaction across ranks:
//   1. each rank computes the step (Workload::step stages the result; nothing visible changes);
//   2. the ranks agree on its outcome (one collective): proceed, or the most severe fault any
//      rank met, with that rank and the reason;
//   3. proceed: every rank commits; otherwise every rank discards its staged result and all act
//      on the same decision (retry, back off, roll back, stop, restart);
//   4. after the commit, the ranks agree on the state (one collective): its health (the NaN
//      scan and Workload::check), a stop signal seen by any rank, the checkpoint trigger of any
//      rank, finished(), and the slowest rank's step time.
// The policies live in their own files (micro_batch_policy, anomaly_policy,
// checkpoint_schedule, stop_signals, collective_checkpoint); this file only sequences them.
#include "tenax/runtime/runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "anomaly_policy.hpp"
#include "checkpoint_schedule.hpp"
#include "collective_checkpoint.hpp"
#include "micro_batch_policy.hpp"
#include "step_clock.hpp"
#include "stop_signals.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/memory/history_resource.hpp"
#include "tenax/core/memory/pool_resource.hpp"
#include "tenax/core/profiler.hpp"
#include "tenax/io/async_checkpointer.hpp"
#include "tenax/io/checkpoint_store.hpp"
#include "tenax/io/run_config.hpp"
#include "tenax/io/run_directory_lock.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/event_log.hpp"
#include "tenax/runtime/progress.hpp"
#include "tenax/runtime/telemetry.hpp"

namespace tenax::runtime {

std::string_view to_string(RunStatus status) noexcept {
  switch (status) {
    case RunStatus::completed:
      return "completed";
    case RunStatus::interrupted:
      return "interrupted";
    case RunStatus::restart:
      return "restart";
    case RunStatus::out_of_memory:
      return "out_of_memory";
    case RunStatus::anomaly:
      return "anomaly";
    case RunStatus::overflow:
      return "overflow";
  }
  return "unknown";
}

std::string describe(const RunEvents& events) {
  std::string text;
  const auto add = [&](std::int64_t count, const char* one, const char* many,
                       const std::string& detail = {}) {
    if (count == 0) return;
    if (!text.empty()) text += ", ";
    text += std::to_string(count) + " " + (count == 1 ? one : many) + detail;
  };
  add(events.resumes, "resume", "resumes");
  add(events.rollbacks, "rollback", "rollbacks",
      " (" + std::to_string(events.steps_recomputed) + " steps computed again)");
  add(events.oom_retries, "out-of-memory retry", "out-of-memory retries");
  add(events.backoffs, "micro-batch backoff", "micro-batch backoffs");
  add(events.regrowths, "micro-batch regrowth", "micro-batch regrowths");
  add(events.peer_retries, "step computed again for another rank",
      "steps computed again for other ranks");
  add(events.checkpoint_failures, "checkpoint failed", "checkpoints failed");
  add(events.checkpoints_skipped, "invalid checkpoint skipped", "invalid checkpoints skipped");
  return text.empty() ? std::string("no faults") : text;
}

namespace {

using detail::AnomalyPolicy;
using detail::CheckpointSchedule;
using detail::MicroBatchPolicy;
using detail::StopSignals;

bool first_attempt() {
  const char* restarts = std::getenv("TENAX_RESTART_COUNT");
  return restarts == nullptr || std::string_view(restarts).empty() ||
         std::string_view(restarts) == "0";
}

// The plan, less its kill items when the process must not end itself (a restarted attempt).
FaultPlan without_process_ending_faults(const FaultPlan& plan, bool may_end_process) {
  if (may_end_process) return plan;
  std::vector<FaultSpec> kept;
  for (const FaultSpec& spec : plan.faults()) {
    if (spec.kind != FaultKind::kill) kept.push_back(spec);
  }
  return FaultPlan(std::move(kept));
}

// A non-finite value written into the first element of the first floating tensor of the state.
void poison_state(const StateDict& state, double value) {
  for (const auto& [name, entry] : state.entries()) {
    const Tensor* tensor = std::get_if<Tensor>(&entry);
    if (tensor != nullptr && is_floating(tensor->dtype()) && tensor->numel() > 0) {
      ops::fill(tensor->reshape({tensor->numel()}).slice(0, 1), value);
      return;
    }
  }
}

std::string signal_name(int signal_number) {
  switch (signal_number) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "signal " + std::to_string(signal_number);
  }
}

// "SIGTERM (signal 15)".
std::string describe_signal(int signal_number) {
  return signal_name(signal_number) + " (signal " + std::to_string(signal_number) + ")";
}

// The event-log field of a step metric: "metric_<name>", the name checked against the rule of
// Workload::step_metrics.
std::string metric_field(const std::string& name) {
  const bool valid =
      !name.empty() && name.size() <= 32 && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
      });
  TENAX_EXPECTS(valid, UsageError,
                "the workload's step_metrics() named a metric '" + name +
                    "'; names are 1 to 32 characters of a-z, 0-9 and _",
                "rename the metric in step_metrics()");
  return "metric_" + name;
}

// The profile file of `rank`: the path itself for rank 0, "<stem>.rank-<r><extension>" beside it
// for the others.
std::filesystem::path profile_file(const std::filesystem::path& path, int rank) {
  if (rank == 0) return path;
  return path.parent_path() /
         (path.stem().string() + ".rank-" + std::to_string(rank) + path.extension().string());
}

// Records a profile for the length of a run when RunnerOptions::profile_path is set, and writes it
// when the run ends, however it ends (a crash's profile is the one most wanted). A profile
// already recording in this process (another rank's thread) is left to its owner.
class ProfileSession {
 public:
  ProfileSession(const std::filesystem::path& path, int rank)
      : path_(path.empty() ? path : profile_file(path, rank)), rank_(rank) {
    owner_ = !path_.empty() && profiling::start();
  }
  ProfileSession(const ProfileSession&) = delete;
  ProfileSession& operator=(const ProfileSession&) = delete;
  ~ProfileSession() {
    if (!owner_) return;
    try {
      const std::size_t spans = profiling::stop_and_write(path_, rank_);
      std::fprintf(stderr, "tenax: profile of %zu spans written to %s (open it in Perfetto)\n",
                   spans, path_.c_str());
    } catch (const Error& e) {
      std::fprintf(stderr, "tenax: warning: %s -- fix: %s\n", e.cause().c_str(), e.fix().c_str());
    }
  }

 private:
  std::filesystem::path path_;
  int rank_;
  bool owner_ = false;
};

// events.jsonl for rank 0 (and a single rank); events-rank-<r>.jsonl for the others, so that no
// rank ever writes into another's log.
std::filesystem::path event_log_path(const std::filesystem::path& run_dir, int rank) {
  return rank == 0 ? run_dir / "events.jsonl"
                   : run_dir / ("events-rank-" + std::to_string(rank) + ".jsonl");
}

// The run directory belongs to this job until run() returns. Taken before anything in it is
// opened, so a second job on the same directory is refused before it reads or writes anything.
io::RunDirectoryLock lock_run_directory(const RunnerOptions& options,
                                        const Communicator& communicator) {
  return io::RunDirectoryLock::acquire(options.run_dir, communicator.rank(), options.program);
}

// At resume (not at a rollback): the configuration stored with the checkpoint against this
// run's. Accepted changes are printed and logged; a refused one is logged and thrown before the
// checkpoint's state is loaded, so the run directory keeps the run it holds.
void check_resumed_config(const io::LoadedCheckpoint& loaded, const RunnerOptions& options,
                          EventLog& events) {
  if (options.config.empty()) return;
  std::vector<io::ConfigChange> changes;
  try {
    changes = io::check_resume_config(loaded.metadata.config, options.config, options.config_policy,
                                      options.run_dir);
  } catch (const UsageError& e) {
    events.append("config_refused", {{"step", loaded.step}, {"reason", e.cause()}});
    throw;
  }
  for (const io::ConfigChange& change : changes) {
    std::fprintf(stderr, "tenax: resuming with %s changed %s -> %s%s\n", change.key.c_str(),
                 change.old_value.c_str(), change.new_value.c_str(),
                 change.allowed ? " (--allow-config-change)" : "");
    events.append("config_changed", {{"step", loaded.step},
                                     {"key", change.key},
                                     {"old", change.old_value},
                                     {"new", change.new_value},
                                     {"allowed", change.allowed}});
  }
}

// The workload's shards under the name its state has in a checkpoint ("workload/<name>").
std::vector<io::TensorShard> prefixed(std::vector<io::TensorShard> shards) {
  for (io::TensorShard& s : shards) s.name = "workload/" + s.name;
  return shards;
}

}  // namespace

struct Runner::Impl {
  Impl(Workload& workload, RunnerOptions options, std::shared_ptr<Communicator> communicator)
      : workload(workload),
        options(std::move(options)),
        communicator(std::move(communicator)),
        rank(this->communicator->rank()),
        world(this->communicator->size()),
        may_end_process(first_attempt()),
        faults((this->options.faults != nullptr ? *this->options.faults : process_fault_plan())
                   .for_rank(rank)),
        checkpoint_faults(without_process_ending_faults(faults, may_end_process)),
        micro(this->options.min_micro_batch, this->options.regrow_micro_batch_after),
        anomalies(this->options.max_anomaly_retries),
        schedule(this->options.checkpoint_every, this->options.checkpoint_seconds) {}

  Workload& workload;
  RunnerOptions options;
  std::shared_ptr<Communicator> communicator;
  const int rank;
  const int world;
  const bool may_end_process;
  FaultPlan faults;                                 // the items for this rank
  FaultPlan checkpoint_faults;                      // what the checkpoint store may inject
  std::map<const FaultSpec*, std::uint64_t> fired;  // times each plan item fired here

  std::optional<EventLog> events;
  std::optional<io::CheckpointStore> store;
  std::optional<io::AsyncCheckpointer> async;
  std::optional<Progress> progress;

  MicroBatchPolicy micro;
  AnomalyPolicy anomalies;
  CheckpointSchedule schedule;

  std::int64_t step = 0;
  std::int64_t saved_step = -1;    // newest step checkpointed (asynchronously: write started)
  std::int64_t scanned_step = -1;  // newest step whose state was scanned for NaN/Inf
  int checkpoint_failures = 0;
  RunEvents counted;        // what changed the run, for RunResult and the closing line
  StateLayout layout;       // the workload's split across the ranks
  std::string shard_table;  // every rank's shards (JSON), stored with each checkpoint

  // Telemetry (options.telemetry_seconds): the interval's step counts, the readings' source.
  std::optional<DeviceReadings> readings;
  TelemetryMonitor monitor;
  std::chrono::steady_clock::time_point started_at = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point sampled_at = started_at;
  std::int64_t interval_steps = 0;
  double interval_seconds = 0;          // this rank's step time summed over the interval
  double interval_compute_seconds = 0;  // this rank's compute time (StepClock), summed
  double interval_slowest_seconds = 0;  // the slowest rank's compute time, summed
  int interval_slowest_rank = 0;

  // A line on stderr, prefixed with the rank in a job of several, written with one call so that
  // ranks sharing a terminal never interleave within a line.
  template <class... Args>
  void say(const char* format, Args... args) {
    if (progress) progress->clear_line();  // above the progress line, not glued to it
    char body[2048];
    std::snprintf(body, sizeof(body), format, args...);
    char line[2200];
    if (world > 1) {
      std::snprintf(line, sizeof(line), "tenax [rank %d/%d]: %s\n", rank, world, body);
    } else {
      std::snprintf(line, sizeof(line), "tenax: %s\n", body);
    }
    std::fputs(line, stderr);
    std::fflush(stderr);
  }

  // A telemetry line for `trigger` and the warnings it starts (each an event and a console line).
  void record_telemetry(const std::string& trigger) {
    if (options.telemetry_seconds == 0 || !events) return;
    const profiling::Span span("telemetry");
    if (!readings) readings.emplace(workload.device());
    const auto now = std::chrono::steady_clock::now();
    TelemetrySample sample;
    sample.trigger = trigger;
    sample.wall_seconds = std::chrono::duration<double>(now - started_at).count();
    sample.step = step;
    const double interval = std::chrono::duration<double>(now - sampled_at).count();
    if (interval_steps > 0) {
      sample.steps_per_second = interval > 0 ? static_cast<double>(interval_steps) / interval : 0;
      sample.step_seconds = interval_seconds / static_cast<double>(interval_steps);
      sample.compute_seconds = interval_compute_seconds / static_cast<double>(interval_steps);
      sample.slowest_compute_seconds =
          interval_slowest_seconds / static_cast<double>(interval_steps);
    }
    sample.rank = rank;
    sample.slowest_rank = interval_slowest_rank;
    sample.host_resident_bytes = host_resident_bytes();
    sample.device = workload.device();
    sample.pool = memory_stats(sample.device);
    sample.gpu = readings->read();
    const std::vector<EventLog::Field> fields = telemetry_fields(sample);
    events->append("telemetry", fields, /*durable=*/false);
    for (const TelemetryWarning& warning : monitor.observe(sample)) {
      events->append(
          "warning",
          {{"step", step}, {"kind", warning.kind}, {"cause", warning.cause}, {"fix", warning.fix}});
      say("warning: %s -- fix: %s", warning.cause.c_str(), warning.fix.c_str());
    }
    sampled_at = now;
    interval_steps = 0;
    interval_seconds = 0;
    interval_compute_seconds = 0;
    interval_slowest_seconds = 0;
  }

  // Counts a completed step into the interval and writes a telemetry line when one is due.
  void after_step_telemetry(double seconds, double compute_seconds, double slowest_compute_seconds,
                            int slowest_rank) {
    if (options.telemetry_seconds == 0) return;
    ++interval_steps;
    interval_seconds += seconds;
    interval_compute_seconds += compute_seconds;
    interval_slowest_seconds += slowest_compute_seconds;
    interval_slowest_rank = slowest_rank;
    const double since =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - sampled_at).count();
    if (since >= options.telemetry_seconds) record_telemetry("interval");
  }
  // The micro-batch a fresh run starts with and regrowth returns to: the workload's units, or
  // fewer when the program asked for fewer (RunnerOptions::max_micro_batch).
  [[nodiscard]] std::int64_t full_micro_batch() const {
    const std::int64_t units = workload.work_units();
    return options.max_micro_batch > 0 ? std::min(options.max_micro_batch, units) : units;
  }
  [[nodiscard]] std::string on_rank(int who) const {
    return world > 1 && who >= 0 ? " on rank " + std::to_string(who) : std::string();
  }

  // True when the plan asks for `kind` at step `step_number`. An item S[xM] fires M times at
  // step S (for oom: M attempts of the step in a row), then never again in this process.
  bool inject(FaultKind kind, std::int64_t step_number) {
    for (const FaultSpec& spec : faults.faults()) {
      if (spec.kind != kind || spec.point != FaultPoint::step) continue;
      if (static_cast<std::uint64_t>(step_number) != spec.first) continue;
      const bool ends_process = kind == FaultKind::kill || kind == FaultKind::device ||
                                kind == FaultKind::comm || kind == FaultKind::hang;
      if (ends_process && !may_end_process) continue;
      std::uint64_t& times = fired[&spec];
      if (times >= spec.count) continue;
      ++times;
      return true;
    }
    return false;
  }

  StateDict checkpoint_state() const {
    StateDict state;
    state.merge("workload", workload.save_state());
    state.set("runner/step", step);
    state.set("runner/micro_batch", micro.micro_batch());
    state.set("runner/regrow_clean_steps", micro.clean_steps());
    state.set("runner/total_steps", options.total_steps);
    if (!shard_table.empty()) state.set(detail::kShardTableEntry, shard_table);
    return state;
  }

  // Writes a checkpoint of the current state, which the ranks agreed is healthy. A failure on
  // any rank is reported on every rank and the run goes on (the previous checkpoint is intact);
  // three failures in a row end the run.
  void checkpoint(bool wait_for_it) {
    const profiling::Span span("checkpoint", step);
    const AllocationTag tag("checkpoint");
    io::FileMetadata metadata;
    metadata.config = options.config;
    const auto start = std::chrono::steady_clock::now();
    bool written = true;
    std::string reason;
    if (async) {
      try {
        metadata.rank = rank;
        metadata.world_size = world;
        StateDict state;
        {
          const profiling::Span snapshot("checkpoint.state");
          state = checkpoint_state();
        }
        async->save(step, state, metadata);
        if (wait_for_it) async->wait();
      } catch (const IoError& e) {
        written = false;
        reason = e.what();
      }
    } else {
      StateDict state;
      {
        const profiling::Span snapshot("checkpoint.state");
        state = checkpoint_state();
      }
      const detail::CheckpointOutcome outcome =
          detail::write_collective_checkpoint(*store, *communicator, step, state, metadata);
      written = outcome.committed;
      if (!written) reason = outcome.reason + on_rank(outcome.failed_rank);
    }
    schedule.checkpointed(step);
    if (written) {
      checkpoint_failures = 0;
      saved_step = step;
      events->append(
          "checkpoint_written",
          {{"step", step},
           {"seconds",
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()},
           {"async", async.has_value() && !wait_for_it}});
      return;
    }
    ++checkpoint_failures;
    ++counted.checkpoint_failures;
    events->append("checkpoint_failed", {{"step", step}, {"reason", reason}});
    const std::string kept =
        saved_step >= 0 ? "the checkpoint of step " + std::to_string(saved_step) + " is kept"
                        : std::string("there is no earlier checkpoint");
    say("checkpoint of step %lld failed, %s: %s", static_cast<long long>(step), kept.c_str(),
        reason.c_str());
    if (checkpoint_failures >= 3) {
      throw IoError("3 checkpoints in a row failed; the last: " + reason,
                    "free space in or fix " + options.run_dir.string() +
                        ", then run again: the job resumes from the newest valid checkpoint");
    }
  }

  // Loads the newest checkpoint valid on every rank; false when there is none. On a rollback
  // the micro-batch learned since that checkpoint is kept when it is not larger, with its count
  // of clean steps (the two go together: a regrowth since the checkpoint is undone).
  bool restore(const char* event) {
    const profiling::Span span("checkpoint.load");
    const AllocationTag tag("checkpoint_load");
    if (async) {
      try {
        async->wait();
      } catch (const IoError& e) {
        // The newest valid checkpoint on disk is what counts; the failed one never committed.
        ++counted.checkpoint_failures;
        events->append("checkpoint_failed",
                       {{"step", saved_step}, {"reason", std::string(e.what())}});
        say("background checkpoint of step %lld failed: %s", static_cast<long long>(saved_step),
            e.what());
      }
    }
    const std::int64_t learned_micro_batch = micro.micro_batch();
    const std::int64_t learned_clean_steps = micro.clean_steps();
    detail::AgreedCheckpoint agreed =
        detail::load_agreed_checkpoint(*store, *communicator,
                                       {.replicated = workload.replicated_state(),
                                        .shards = prefixed(layout.shards),
                                        .rank_local = layout.rank_local});
    for (const auto& skipped : agreed.skipped) {
      ++counted.checkpoints_skipped;
      events->append("checkpoint_skipped", {{"step", skipped.step}, {"reason", skipped.reason}});
      say("skipped checkpoint of step %lld: %s", static_cast<long long>(skipped.step),
          skipped.reason.c_str());
    }
    if (!agreed.found) return false;
    const io::LoadedCheckpoint& loaded = agreed.loaded;
    if (std::string_view(event) == "resumed") check_resumed_config(loaded, options, *events);
    workload.load_state(loaded.state.scope("workload"));
    step = loaded.state.integer("runner/step");
    std::int64_t micro_batch =
        std::min(loaded.state.integer("runner/micro_batch"), full_micro_batch());
    // Checkpoints written before the regrowth policy existed lack the count.
    std::int64_t clean_steps = loaded.state.contains("runner/regrow_clean_steps")
                                   ? loaded.state.integer("runner/regrow_clean_steps")
                                   : 0;
    if (std::string_view(event) == "rollback" && learned_micro_batch <= micro_batch) {
      micro_batch = learned_micro_batch;
      clean_steps = learned_clean_steps;
    }
    micro.reset(micro_batch, clean_steps);
    schedule.restored(step);
    saved_step = step;
    scanned_step = step;
    events->append(event, {{"step", step}, {"micro_batch", micro_batch}});
    if (std::string_view(event) == "resumed") {
      ++counted.resumes;
      if (loaded.world_size != world) {
        say("resumed from the checkpoint of step %lld, written by %d rank(s), on %d rank(s)",
            static_cast<long long>(step), loaded.world_size, world);
        events->append("resharded", {{"step", step},
                                     {"from_ranks", std::int64_t{loaded.world_size}},
                                     {"to_ranks", std::int64_t{world}}});
      } else {
        say("resumed from the checkpoint of step %lld", static_cast<long long>(step));
      }
    }
    return true;
  }

  RunResult finish(RunStatus status, std::string message) {
    if (async && status != RunStatus::restart) {
      try {
        async->wait();
      } catch (const IoError& e) {
        ++counted.checkpoint_failures;
        events->append("checkpoint_failed",
                       {{"step", saved_step}, {"reason", std::string(e.what())}});
        say("background checkpoint of step %lld failed: %s", static_cast<long long>(saved_step),
            e.what());
        // The state in memory is still good (unless it is the anomaly that ends the run):
        // write it again, synchronously, so the run ends with it on disk.
        saved_step = -1;
        async.reset();
        if (status != RunStatus::anomaly) checkpoint(/*wait_for_it=*/true);
      }
    }
    // The run directory is settled when run() returns: no removal of old checkpoints is left
    // running behind the caller (who may inspect, copy or resume it at once).
    // (After a device fault an asynchronous write may still be running on the store: it is
    // left alone, and the Runner's destructor joins it before the store goes.)
    if (store && !(async && status == RunStatus::restart)) store->wait_for_background_work();
    const int exit_code = status == RunStatus::completed ? 0
                          : status == RunStatus::interrupted || status == RunStatus::restart
                              ? kRestartExitCode
                              : 1;
    if (progress) progress->finish();
    record_telemetry("exit");
    events->append("exit", {{"status", std::string(to_string(status))},
                            {"exit_code", std::int64_t{exit_code}},
                            {"step", step},
                            {"message", message}});
    // The closing line counts what changed the run; the events were agreed on by all ranks, so
    // the first rank speaks for the job.
    if (rank == 0) {
      if (status == RunStatus::completed) {
        say("completed at step %lld: %s", static_cast<long long>(step), describe(counted).c_str());
      } else {
        // The stop's own cause was said when it happened; the count is of what came before.
        say("stopped at step %lld (%s); before it in this process: %s",
            static_cast<long long>(step), std::string(to_string(status)).c_str(),
            describe(counted).c_str());
      }
    }
    return {status, exit_code, step, micro.micro_batch(), std::move(message), counted};
  }

  // The allocations, frees and failed requests that led to an out-of-memory stop, and the pool's
  // block map, beside the checkpoints (tenax report draws them). A failure to write is said,
  // never fatal: the stop's own report matters more.
  void write_memory_history() {
    const std::filesystem::path path =
        options.run_dir / (rank == 0 ? std::string("memory-history.json")
                                     : "memory-history-rank-" + std::to_string(rank) + ".json");
    try {
      const std::string json = memory_history_json(workload.device());
      std::FILE* file = std::fopen(path.c_str(), "wb");
      const bool ok =
          file != nullptr && std::fwrite(json.data(), 1, json.size(), file) == json.size();
      if (file != nullptr && std::fclose(file) != 0) throw IoError("close failed", "");
      if (!ok) throw IoError("write failed", "");
      say("the allocations that led to the out-of-memory stop are in %s", path.c_str());
    } catch (const std::exception& e) {
      say("warning: could not write %s (%s)", path.c_str(), e.what());
    }
  }

  // A communication fault (a hung or dead peer, an aborted communicator): nothing more is said
  // to the peers; the job exits for a restart from the newest checkpoint every rank committed.
  RunResult comm_failure(const Error& e) {
    communicator->abort(e.what());
    events->append("fault", {{"kind", std::string("comm_fault")},
                             {"step", step + 1},
                             {"reason", std::string(e.what())}});
    say("communication fault: %s", e.what());
    if (async) async.reset();  // joins a write in flight; its failure is moot now
    return finish(RunStatus::restart, std::string(e.what()) +
                                          "; exiting for a restart from the checkpoint of step " +
                                          std::to_string(saved_step));
  }

  // Runs `action` (building or loading the state), retrying it once after emptying the device
  // cache when it runs out of memory; there is no micro-batch to back off outside a step.
  template <class Action>
  bool with_cache_retry(Action&& action) {
    try {
      return action();
    } catch (const OutOfMemoryError& e) {
      ++counted.oom_retries;
      events->append("oom_retry", {{"step", step}, {"reason", std::string(e.what())}});
      say("out of memory while building or loading the state; device cache emptied, retrying: "
          "%s",
          e.cause().c_str());
      empty_cache(workload.device());
      record_telemetry("oom_retry");
      return action();
    }
  }

  // Why the state is not healthy after a step, or nothing. The state's tensors are scanned when
  // `scan` is set (anomaly_check_every, a checkpoint or the end ahead) or a fault is injected
  // at this step; the workload's own check() runs after every step.
  std::optional<std::string> find_anomaly(bool scan) {
    const bool nan = inject(FaultKind::nan, step);
    const bool inf = inject(FaultKind::inf, step);
    if (scan || nan || inf) {
      const profiling::Span span("nan_scan", step);
      const AllocationTag tag("nan_scan");
      const StateDict state = workload.save_state();
      if (nan) poison_state(state, std::numeric_limits<double>::quiet_NaN());
      if (inf) poison_state(state, std::numeric_limits<double>::infinity());
      scanned_step = step;
      if (auto problem = scan_tensors(state)) return problem;
    }
    return workload.check();
  }

  static std::optional<std::string> scan_tensors(const StateDict& state) {
    for (const auto& [name, entry] : state.entries()) {
      const Tensor* tensor = std::get_if<Tensor>(&entry);
      if (tensor == nullptr || !is_floating(tensor->dtype()) || tensor->numel() == 0) continue;
      const std::int64_t bad = ops::count_nonfinite(*tensor);
      if (bad > 0) {
        return std::to_string(bad) + " non-finite value(s) in state tensor '" + name + "'";
      }
    }
    return std::nullopt;
  }

  // A rank told to hang (hang@step=S): it stops making progress, as a rank stuck in a driver
  // call or a deadlocked kernel would. It leaves only when it can see that the job gave up on it
  // (threads) or when the launcher kills it (MPI: the peers time out and exit).
  void hang() {
    events->append("fault", {{"kind", std::string("hang")}, {"step", step + 1}});
    say("injected hang at step %lld", static_cast<long long>(step + 1));
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::hours(24);
    while (!communicator->abort_seen() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const std::string what = "rank " + std::to_string(rank) + " was hung at step " +
                             std::to_string(step + 1) + " and its peers gave up on it";
    communicator->abort(what);
    throw CommFaultError(what, "none needed: the hang was requested by TENAX_FAULTS");
  }

  // What the step's computation proposes, with the error behind it (kept to rethrow an error
  // outside the policies once every rank knows to stop).
  struct Outcome {
    StepProposal proposal;
    std::string report;
    std::exception_ptr error;
    bool computed = false;  // step() returned: a result is staged
  };

  Outcome compute_step() {
    Outcome outcome;
    outcome.proposal.step = step + 1;
    const auto start = std::chrono::steady_clock::now();
    auto propose = [&](StepDecision decision, StepReason reason, const std::string& report) {
      outcome.proposal.decision = decision;
      outcome.proposal.reason = reason;
      outcome.report = report;
    };
    try {
      if (inject(FaultKind::kill, step + 1)) {
        events->append("fault", {{"kind", std::string("kill")}, {"step", step + 1}});
        std::raise(SIGKILL);
      }
      if (inject(FaultKind::hang, step + 1)) hang();
      if (inject(FaultKind::device, step + 1)) {
        throw DeviceFaultError("injected device fault at step " + std::to_string(step + 1),
                               "none needed: the fault was requested by TENAX_FAULTS");
      }
      if (inject(FaultKind::comm, step + 1)) {
        throw CommFaultError("injected communication fault at step " + std::to_string(step + 1),
                             "none needed: the fault was requested by TENAX_FAULTS");
      }
      if (inject(FaultKind::oom, step + 1)) {
        throw OutOfMemoryError("injected out-of-memory at step " + std::to_string(step + 1),
                               "none needed: the fault was requested by TENAX_FAULTS");
      }
      {
        const profiling::Span span("step.compute", step + 1);
        const AllocationTag tag("step");
        workload.step(step, micro.micro_batch());
      }
      outcome.computed = true;
    } catch (const Error& e) {
      switch (e.fault_class()) {
        case FaultClass::out_of_memory:
          propose(micro.on_out_of_memory(), StepReason::out_of_memory, e.what());
          break;
        case FaultClass::anomaly:
          // The step met a NaN/Inf it could not go on with (a non-finite loss, an anomaly-mode
          // report) and left the state as it was: roll back, as for an unhealthy state.
          propose(StepDecision::rollback, StepReason::anomaly, e.what());
          break;
        case FaultClass::overflow:
          propose(StepDecision::stop, StepReason::overflow, e.what());
          break;
        case FaultClass::device_fault:
          propose(StepDecision::restart, StepReason::device_fault, e.what());
          break;
        case FaultClass::comm_fault:
          // A collective of the step failed (a peer hung or died): the communicator is unusable
          // and the peers learn it from their own collective's timeout or abort.
          if (communicator->aborted()) throw;
          propose(StepDecision::restart, StepReason::comm_fault, e.what());
          break;
        default:
          propose(StepDecision::stop, StepReason::usage, e.what());
          outcome.error = std::current_exception();
          break;
      }
    } catch (const std::exception& e) {
      propose(StepDecision::stop, StepReason::usage, e.what());
      outcome.error = std::current_exception();
    }
    outcome.proposal.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return outcome;
  }

  // The reason a peer's decision is told on this rank.
  [[nodiscard]] std::string peer_report(const StepAgreement& agreed, const Outcome& mine) const {
    if (agreed.asking_rank == rank && !mine.report.empty()) return mine.report;
    return std::string(to_string(agreed.reason)) + " on rank " +
           std::to_string(agreed.asking_rank) + " (its log has the details)";
  }

  // The anomaly policy after an agreed rollback; a RunResult when the run stops.
  std::optional<RunResult> roll_back(std::int64_t anomalous_step, const std::string& reason) {
    events->append("anomaly", {{"step", anomalous_step}, {"reason", reason}});
    record_telemetry("anomaly");
    if (!anomalies.on_anomaly(anomalous_step)) {
      say("anomaly at step %lld (%s), the %d rollbacks allowed are spent; stopping",
          static_cast<long long>(anomalous_step), reason.c_str(), anomalies.max_retries());
      return finish(RunStatus::anomaly,
                    "anomaly at step " + std::to_string(anomalous_step) + " (" + reason +
                        ") after " + std::to_string(anomalies.max_retries()) +
                        " rollbacks; the last good checkpoint is kept. fix: lower the time "
                        "step or learning rate, or check the input data");
    }
    say("anomaly at step %lld (%s); rolling back", static_cast<long long>(anomalous_step),
        reason.c_str());
    if (!restore("rollback")) {
      throw AnomalyError("anomaly at step " + std::to_string(anomalous_step) + " (" + reason +
                             ") and no valid checkpoint to roll back to",
                         "check the run directory " + options.run_dir.string());
    }
    ++counted.rollbacks;
    counted.steps_recomputed += anomalous_step - step;
    say("rolled back to the checkpoint of step %lld (%lld steps to compute again)",
        static_cast<long long>(step), static_cast<long long>(anomalous_step - step));
    return std::nullopt;
  }

  // The state agreement after a commit (or at the start): health, signals, the checkpoint
  // trigger, finished(), timing.
  // `clock`: the step's, whose compute time goes into the proposal (nullptr outside a step).
  StepAgreement agree_on_state(bool scan, const detail::StepClock* clock,
                               std::optional<std::string>& anomaly) {
    anomaly = find_anomaly(scan);
    StepProposal proposal;
    proposal.step = step;
    if (anomaly) {
      proposal.decision = StepDecision::rollback;
      proposal.reason = StepReason::anomaly;
    }
    proposal.signal = StopSignals::pending();
    proposal.checkpoint_due = schedule.due(step);
    proposal.finished = workload.finished();
    proposal.seconds = clock != nullptr ? clock->compute() : 0.0;
    const profiling::Span span("wait.agree_state", step);
    return communicator->agree(proposal);
  }

  [[nodiscard]] bool scan_due(bool checkpoint_ahead) const {
    return options.anomaly_check_every == 1 || checkpoint_ahead || step == options.total_steps ||
           StopSignals::pending() != 0 || workload.finished() ||
           (options.anomaly_check_every > 1 && step % options.anomaly_check_every == 0);
  }

  RunResult run() {
    const io::RunDirectoryLock lock = lock_run_directory(options, *communicator);
    events.emplace(event_log_path(options.run_dir, rank));
    io::CheckpointOptions checkpoint_options;
    checkpoint_options.keep_last = options.keep_last;
    checkpoint_options.fault_plan = &checkpoint_faults;
    store.emplace(options.run_dir, checkpoint_options);
    if (options.async_checkpoints) {
      TENAX_EXPECTS(world == 1, UsageError,
                    "asynchronous checkpoints with " + std::to_string(world) + " ranks",
                    "drop --async: a job of several ranks writes its checkpoints synchronously "
                    "(every rank's file must be durable before rank 0 commits)");
      async.emplace(*store);
    }
    StopSignals signals;
    const ProfileSession profile(options.profile_path, rank);
    try {
      return run_steps();
    } catch (const CommFaultError& e) {
      return comm_failure(e);
    }
  }

  RunResult run_steps() {
    layout = workload.state_layout();
    const io::ShardTable table = detail::gather_shard_table(*communicator, prefixed(layout.shards));
    if (!table.ranks.empty()) shard_table = io::format_shard_table(table);
    const bool resumed = with_cache_retry([&] { return restore("resumed"); });
    if (!resumed) {
      with_cache_retry([&] {
        workload.init();
        return true;
      });
      step = 0;
      micro.reset(full_micro_batch(), 0);
      events->append("started", {{"total_steps", options.total_steps},
                                 {"micro_batch", micro.micro_batch()},
                                 {"ranks", std::int64_t{world}}});
      checkpoint(/*wait_for_it=*/true);  // there is always a state to roll back to
    }
    if (rank == 0) {
      progress.emplace(options.progress, options.total_steps, step);
    } else {
      progress.emplace(ProgressMode::quiet, options.total_steps, step);
    }
    // Metric names are checked before the first step, not after it.
    for (const StepMetric& metric : workload.step_metrics()) (void)metric_field(metric.name);
    record_telemetry(resumed ? "resumed" : "started");
    if (resumed && step > options.total_steps) {
      say("the run in %s is at step %lld, past the %lld steps asked for: nothing to do (its state "
          "stays that of step %lld; a run is never taken back to an earlier step)",
          options.run_dir.string().c_str(), static_cast<long long>(step),
          static_cast<long long>(options.total_steps), static_cast<long long>(step));
    } else if (resumed && step == options.total_steps) {
      say("the run in %s is already at step %lld of %lld: nothing to do",
          options.run_dir.string().c_str(), static_cast<long long>(step),
          static_cast<long long>(options.total_steps));
    }

    std::optional<std::string> anomaly;
    StepAgreement state = agree_on_state(false, nullptr, anomaly);
    while (true) {
      if (state.decision == StepDecision::rollback) {
        const std::string reason =
            anomaly.value_or(std::string("an anomaly") + on_rank(state.asking_rank));
        if (auto stopped = roll_back(step, reason)) return *stopped;
        state = agree_on_state(false, nullptr, anomaly);
        continue;
      }
      if (state.signal != 0) {
        // Rewriting a committed step would uncommit it first; skip it when it is known to be on
        // disk (an asynchronous write may still fail, so it is written again then).
        const std::string who = describe_signal(state.signal) + on_rank(state.signal_rank);
        events->append("signal", {{"step", step},
                                  {"signal", std::int64_t{state.signal}},
                                  {"rank", std::int64_t{state.signal_rank}}});
        say("%s: finishing with a checkpoint of step %lld", who.c_str(),
            static_cast<long long>(step));
        if (async || saved_step != step) checkpoint(/*wait_for_it=*/true);
        return finish(RunStatus::interrupted, "stopped by " + who + " after checkpointing step " +
                                                  std::to_string(step) +
                                                  "; run again (or under `tenax run`) to resume");
      }
      if (step >= options.total_steps || state.finished) break;

      const profiling::Span step_span("step", step + 1);
      const detail::StepClock clock(*communicator);
      set_allocation_step(step + 1);
      communicator->set_step(step + 1);
      micro.begin_step();
      StepAgreement outcome;
      Outcome mine;
      while (true) {
        mine = compute_step();
        {
          const profiling::Span span("wait.agree_step", step + 1);
          outcome = communicator->agree(mine.proposal);
        }
        if (outcome.decision == StepDecision::proceed) break;
        if (mine.computed) workload.discard_step();
        if (outcome.decision != StepDecision::retry && outcome.decision != StepDecision::backoff) {
          break;
        }
        if (mine.proposal.reason == StepReason::out_of_memory) {
          const char* event = micro.apply(mine.proposal.decision);
          events->append(event, {{"step", step + 1}, {"micro_batch", micro.micro_batch()}});
          if (mine.proposal.decision == StepDecision::retry) {
            ++counted.oom_retries;
            empty_cache(workload.device());
            say("out of memory at step %lld; device cache emptied, retrying",
                static_cast<long long>(step + 1));
          } else {
            ++counted.backoffs;
            say("out of memory at step %lld; micro-batch halved to %lld",
                static_cast<long long>(step + 1), static_cast<long long>(micro.micro_batch()));
          }
          record_telemetry(event);
        } else {
          ++counted.peer_retries;
          say("%s at step %lld on rank %d; computing the step again (%s)",
              std::string(to_string(outcome.reason)).c_str(), static_cast<long long>(step + 1),
              outcome.asking_rank, std::string(to_string(outcome.decision)).c_str());
          events->append("peer_retry", {{"step", step + 1},
                                        {"rank", std::int64_t{outcome.asking_rank}},
                                        {"decision", std::string(to_string(outcome.decision))}});
        }
      }

      if (outcome.decision == StepDecision::proceed) {
        // The ranks' staged results combined (collective); an anomaly in the combined data is
        // found alike on every rank.
        std::optional<std::string> combined;
        {
          const profiling::Span span("step.combine", step + 1);
          combined = workload.combine_step();
        }
        if (combined) {
          workload.discard_step();
          anomaly = combined;
          if (auto stopped = roll_back(step + 1, *anomaly)) return *stopped;
          state = agree_on_state(false, nullptr, anomaly);
          continue;
        }
      }
      if (outcome.decision == StepDecision::rollback) {
        anomaly = mine.proposal.decision == StepDecision::rollback
                      ? std::optional<std::string>(mine.report)
                      : std::optional<std::string>(peer_report(outcome, mine));
        if (auto stopped = roll_back(step + 1, *anomaly)) return *stopped;
        state = agree_on_state(false, nullptr, anomaly);
        continue;
      }
      if (outcome.decision == StepDecision::restart) {
        const std::string report = peer_report(outcome, mine);
        std::string kind(to_string(outcome.reason));
        std::replace(kind.begin(), kind.end(), ' ', '_');
        events->append("fault", {{"kind", kind},
                                 {"step", step + 1},
                                 {"rank", std::int64_t{outcome.asking_rank}},
                                 {"reason", report}});
        say("%s at step %lld%s; exiting for a restart",
            std::string(to_string(outcome.reason)).c_str(), static_cast<long long>(step + 1),
            on_rank(outcome.asking_rank).c_str());
        record_telemetry("fault");
        if (outcome.reason == StepReason::comm_fault) communicator->abort(report);
        // Nothing derived from device memory is written after a device fault.
        if (async) async.reset();
        return finish(RunStatus::restart,
                      report + "; exiting for a restart from the checkpoint of step " +
                          std::to_string(saved_step));
      }
      if (outcome.decision == StepDecision::stop) {
        const std::string report = peer_report(outcome, mine);
        if (outcome.reason == StepReason::usage) {
          events->append("error", {{"step", step + 1},
                                   {"rank", std::int64_t{outcome.asking_rank}},
                                   {"reason", report}});
          if (mine.error) std::rethrow_exception(mine.error);
          throw UsageError("step " + std::to_string(step + 1) + " failed" +
                               on_rank(outcome.asking_rank) + ": " + report,
                           "read that rank's message; this rank stopped with it");
        }
        if (async || saved_step != step) checkpoint(/*wait_for_it=*/true);
        if (outcome.reason == StepReason::overflow) {
          events->append("overflow", {{"step", step + 1},
                                      {"rank", std::int64_t{outcome.asking_rank}},
                                      {"reason", report}});
          return finish(RunStatus::overflow,
                        report + on_rank(outcome.asking_rank) + "\nstate checkpointed at step " +
                            std::to_string(step) +
                            "; the run resumes from it once the cause is fixed");
        }
        write_memory_history();
        return finish(RunStatus::out_of_memory,
                      "out of memory at step " + std::to_string(step + 1) +
                          on_rank(outcome.asking_rank) + " even with the smallest micro-batch (" +
                          std::to_string(micro.micro_batch()) + "); state checkpointed at step " +
                          std::to_string(step) + ". " + report + "\n" +
                          memory_summary(workload.device()) +
                          "\nfix: run on a device with more memory, lower the problem size, "
                          "or raise TENAX_MEMORY_LIMIT; the run resumes from its checkpoint");
      }

      // Every rank computed the step: apply it everywhere.
      {
        const profiling::Span span("step.commit", step + 1);
        const NoAllocationScope no_allocation("Workload::commit_step()");
        workload.commit_step();
      }
      ++step;
      const bool checkpoint_ahead = schedule.due(step);
      state = agree_on_state(scan_due(checkpoint_ahead), &clock, anomaly);
      if (state.decision == StepDecision::rollback) continue;
      // The whole step, every phase and the Runner's own work in it; its compute leaves out the
      // waits in collectives, so that ranks compare what they computed.
      const double step_seconds = clock.elapsed();
      const double compute_seconds = clock.compute();
      anomalies.on_healthy(step);

      const MemoryStats memory = memory_stats(workload.device());
      const std::vector<StepMetric> metrics = workload.step_metrics();
      std::vector<std::string> metric_names;
      metric_names.reserve(metrics.size());
      for (const StepMetric& metric : metrics) metric_names.push_back(metric_field(metric.name));
      std::vector<EventLog::Field> fields{
          {"step", step},
          {"micro_batch", micro.micro_batch()},
          {"seconds", step_seconds},
          {"compute_seconds", compute_seconds},
          {"slowest_compute_seconds", state.slowest_seconds},
          {"slowest_rank", std::int64_t{state.slowest_rank}},
          {"allocated", static_cast<std::int64_t>(memory.allocated_bytes.current)},
          {"reserved", static_cast<std::int64_t>(memory.reserved_bytes.current)}};
      for (std::size_t k = 0; k < metrics.size(); ++k) {
        fields.emplace_back(metric_names[k], metrics[k].value);
      }
      events->append("step", fields, /*durable=*/false);
      progress->update(step, memory.reserved_bytes.current);
      after_step_telemetry(step_seconds, compute_seconds, state.slowest_seconds,
                           state.slowest_rank);
      std::int64_t previous = 0;
      if (micro.after_clean_step(full_micro_batch(), step >= options.total_steps, previous)) {
        events->append("regrow", {{"step", step + 1},
                                  {"micro_batch", micro.micro_batch()},
                                  {"previous_micro_batch", previous},
                                  {"clean_steps", micro.clean_steps()}});
        ++counted.regrowths;
        say("%lld steps without running out of memory; micro-batch doubled to %lld",
            static_cast<long long>(micro.clean_steps()),
            static_cast<long long>(micro.micro_batch()));
        micro.grown();
      }
      // The scan before a checkpoint is part of the agreement just taken, so an unhealthy state
      // is never written (a rollback is taken above instead).
      if (state.checkpoint_due && scanned_step != step) {
        std::optional<std::string> late;
        state = agree_on_state(true, &clock, late);
        anomaly = late;
        if (state.decision == StepDecision::rollback) continue;
      }
      if (state.checkpoint_due) checkpoint(/*wait_for_it=*/false);
    }
    if (saved_step != step) checkpoint(/*wait_for_it=*/true);
    return finish(RunStatus::completed, "");
  }
};

Runner::Runner(Workload& workload, RunnerOptions options,
               std::shared_ptr<Communicator> communicator) {
  TENAX_EXPECTS(!options.run_dir.empty(), UsageError, "the runner was given no run directory",
                "set RunnerOptions::run_dir (e.g. --run-dir runs/heat2d)");
  TENAX_EXPECTS(options.total_steps >= 1, UsageError,
                "total_steps is " + std::to_string(options.total_steps) +
                    ": the run would end before its first step",
                "set RunnerOptions::total_steps (a job's --steps) to the step the run ends at, "
                "at least 1; a workload that ends by itself (finished()) still needs a limit");
  TENAX_EXPECTS(options.checkpoint_every >= 0 && options.checkpoint_seconds >= 0, UsageError,
                "checkpoint_every (" + std::to_string(options.checkpoint_every) +
                    ") and checkpoint_seconds (" + std::to_string(options.checkpoint_seconds) +
                    ") must not be negative",
                "use 0 to turn a trigger off");
  TENAX_EXPECTS(options.min_micro_batch >= 1, UsageError,
                "min_micro_batch is " + std::to_string(options.min_micro_batch),
                "use a floor of at least 1");
  TENAX_EXPECTS(options.max_micro_batch == 0 || options.max_micro_batch >= options.min_micro_batch,
                UsageError,
                "max_micro_batch is " + std::to_string(options.max_micro_batch) +
                    ", below min_micro_batch " + std::to_string(options.min_micro_batch),
                "use 0 (the workload's units) or a micro-batch of at least min_micro_batch");
  TENAX_EXPECTS(options.regrow_micro_batch_after >= 0, UsageError,
                "regrow_micro_batch_after is " + std::to_string(options.regrow_micro_batch_after),
                "use 0 (never regrow) or a count of steps >= 1");
  TENAX_EXPECTS(options.anomaly_check_every >= 0, UsageError,
                "anomaly_check_every is " + std::to_string(options.anomaly_check_every),
                "use 1 (scan after every step), N > 1 (every N steps) or 0 (only before "
                "checkpoints and at the end)");
  TENAX_EXPECTS(options.max_anomaly_retries >= 0, UsageError,
                "max_anomaly_retries is " + std::to_string(options.max_anomaly_retries),
                "use a count >= 0");
  {
    char given[32];
    std::snprintf(given, sizeof(given), "%g", options.telemetry_seconds);
    TENAX_EXPECTS(std::isfinite(options.telemetry_seconds) && options.telemetry_seconds >= 0 &&
                      options.telemetry_seconds <= 7 * 86400.0,
                  UsageError, "--telemetry-seconds " + std::string(given),
                  "use 0 (no telemetry) or a number of seconds up to a week (the default is 10)");
  }
  if (!options.profile_path.empty()) {
    const std::filesystem::path& path = options.profile_path;
    const std::filesystem::path folder =
        path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
    std::error_code ec;
    TENAX_EXPECTS(!path.filename().empty() && path.filename() != "." && path.filename() != "..",
                  UsageError, "--profile " + path.string() + " names no file",
                  "give a file name, e.g. --profile profile.json");
    TENAX_EXPECTS(!std::filesystem::is_directory(path, ec), UsageError,
                  "--profile " + path.string() + " is a directory",
                  "give a file name in it, e.g. --profile " + (path / "profile.json").string());
    TENAX_EXPECTS(
        std::filesystem::is_directory(folder, ec), UsageError,
        "--profile " + path.string() + ": the directory " + folder.string() + " does not exist",
        "create it first, or write the profile elsewhere (e.g. --profile profile.json)");
  }
  TENAX_EXPECTS(communicator != nullptr, UsageError, "the runner was given a null communicator",
                "pass a communicator or use the default single-rank one");
  io::check_allowed_changes(options.config, options.config_policy);
  impl_ = std::make_unique<Impl>(workload, std::move(options), std::move(communicator));
}

Runner::~Runner() = default;

RunResult Runner::run() { return impl_->run(); }

ProgressMode parse_progress_mode(std::string_view text) {
  if (text == "auto") return ProgressMode::automatic;
  if (text == "terminal") return ProgressMode::terminal;
  if (text == "log") return ProgressMode::log;
  if (text == "quiet") return ProgressMode::quiet;
  throw UsageError("--progress " + std::string(text) + " is not a progress mode",
                   "use auto, terminal, log or quiet");
}

}  // namespace tenax::runtime
