#include "tenax/runtime/runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/io/async_checkpointer.hpp"
#include "tenax/io/checkpoint_store.hpp"
#include "tenax/io/run_config.hpp"
#include "tenax/io/run_directory_lock.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/event_log.hpp"
#include "tenax/runtime/progress.hpp"

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

namespace {

// What a step's outcome asks the ranks to do, ordered by severity: agree() returns the most
// severe proposal of all ranks.
enum Decision : std::int64_t {
  kContinue = 0,
  kRetry = 1,     // OOM: retry the step after emptying the cache
  kBackoff = 2,   // OOM again: halve the micro-batch and retry
  kRollback = 3,  // anomaly: reload the last checkpoint
  kStop = 4,      // a policy is exhausted: checkpoint (when the state is good) and stop
  kRestart = 5,   // device or communication fault: exit for a restart at once
};

std::atomic<int> pending_signal{0};

extern "C" void record_signal(int signal_number) { pending_signal.store(signal_number); }

// Installs SIGTERM/SIGINT handlers that only record the signal (the step loop acts on it at the
// next step boundary) and restores the previous handlers when the run ends.
class SignalGuard {
 public:
  SignalGuard() {
    pending_signal.store(0);
    struct sigaction action {};
    action.sa_handler = record_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, &previous_term_);
    sigaction(SIGINT, &action, &previous_int_);
  }
  ~SignalGuard() {
    sigaction(SIGTERM, &previous_term_, nullptr);
    sigaction(SIGINT, &previous_int_, nullptr);
  }
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

 private:
  struct sigaction previous_term_ {};
  struct sigaction previous_int_ {};
};

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

}  // namespace

struct Runner::Impl {
  Impl(Workload& workload, RunnerOptions options, std::shared_ptr<Communicator> communicator)
      : workload(workload),
        options(std::move(options)),
        communicator(std::move(communicator)),
        faults(this->options.faults != nullptr ? *this->options.faults : process_fault_plan()),
        may_end_process(first_attempt()),
        checkpoint_faults(without_process_ending_faults(faults, may_end_process)) {}

  Workload& workload;
  RunnerOptions options;
  std::shared_ptr<Communicator> communicator;
  const FaultPlan& faults;
  const bool may_end_process;
  FaultPlan checkpoint_faults;                      // what the checkpoint store may inject
  std::map<const FaultSpec*, std::uint64_t> fired;  // times each plan item fired here

  std::optional<EventLog> events;
  std::optional<io::CheckpointStore> store;
  std::optional<io::AsyncCheckpointer> async;
  std::optional<Progress> progress;

  std::int64_t step = 0;
  std::int64_t micro_batch = 1;
  // Steps completed in a row without an out-of-memory error at a micro-batch below
  // work_units(), since the last such error or regrowth (RunnerOptions::regrow_micro_batch_after).
  // It travels with the micro-batch: in checkpoints, and through restore().
  std::int64_t clean_steps = 0;
  bool step_had_oom = false;  // the step being taken ran out of memory (agreed by all ranks)
  std::int64_t last_checkpoint_step = -1;  // anchor of the checkpoint_every schedule
  std::int64_t saved_step = -1;    // newest step checkpointed (asynchronously: write started)
  std::int64_t scanned_step = -1;  // newest step whose state was scanned for NaN/Inf
  std::chrono::steady_clock::time_point last_checkpoint_time;
  int checkpoint_failures = 0;

  // True when the plan asks for `kind` at step `step_number`. An item S[xM] fires M times at
  // step S (for oom: M attempts of the step in a row), then never again in this process.
  bool inject(FaultKind kind, std::int64_t step_number) {
    for (const FaultSpec& spec : faults.faults()) {
      if (spec.kind != kind || spec.point != FaultPoint::step) continue;
      if (static_cast<std::uint64_t>(step_number) != spec.first) continue;
      const bool ends_process =
          kind == FaultKind::kill || kind == FaultKind::device || kind == FaultKind::comm;
      if (ends_process && !may_end_process) continue;
      std::uint64_t& times = fired[&spec];
      if (times >= spec.count) continue;
      ++times;
      return true;
    }
    return false;
  }

  std::int64_t agree_decision(std::int64_t decision) {
    StepProposal proposal;
    proposal.step = step + 1;
    proposal.decision = static_cast<StepDecision>(decision);
    return static_cast<std::int64_t>(communicator->agree(proposal).decision);
  }

  StateDict checkpoint_state() const {
    StateDict state;
    state.merge("workload", workload.save_state());
    state.set("runner/step", step);
    state.set("runner/micro_batch", micro_batch);
    state.set("runner/regrow_clean_steps", clean_steps);
    state.set("runner/total_steps", options.total_steps);
    return state;
  }

  // Writes a checkpoint of the current state. A failed write is reported and the run goes on
  // (the previous checkpoint is intact); three failures in a row end the run.
  void checkpoint(bool wait_for_it) {
    // A checkpoint never holds a non-finite value: a state the step loop did not scan (with
    // anomaly_check_every > 1) is scanned now, and an unhealthy one is not written, so the last
    // good checkpoint stays the newest.
    if (scanned_step != step) {
      if (const std::optional<std::string> anomaly = scan_state()) {
        events->append("checkpoint_skipped", {{"step", step}, {"reason", *anomaly}});
        std::fprintf(stderr,
                     "tenax: checkpoint of step %lld skipped, the state is not healthy: %s\n",
                     static_cast<long long>(step), anomaly->c_str());
        return;
      }
    }
    io::FileMetadata metadata;
    metadata.config = options.config;
    metadata.rank = communicator->rank();
    metadata.world_size = communicator->size();
    const auto start = std::chrono::steady_clock::now();
    try {
      if (async) {
        async->save(step, checkpoint_state(), metadata);
        if (wait_for_it) async->wait();
      } else {
        store->write(step, checkpoint_state(), metadata);
      }
      checkpoint_failures = 0;
      saved_step = step;
      events->append(
          "checkpoint_written",
          {{"step", step},
           {"seconds",
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()},
           {"async", async.has_value() && !wait_for_it}});
    } catch (const IoError& e) {
      ++checkpoint_failures;
      events->append("checkpoint_failed", {{"step", step}, {"reason", std::string(e.what())}});
      std::fprintf(stderr, "tenax: checkpoint of step %lld failed, the previous one is kept: %s\n",
                   static_cast<long long>(step), e.what());
      if (checkpoint_failures >= 3) throw;
    }
    last_checkpoint_step = step;
    last_checkpoint_time = std::chrono::steady_clock::now();
  }

  bool checkpoint_due() const {
    if (options.checkpoint_every > 0 && step - last_checkpoint_step >= options.checkpoint_every) {
      return true;
    }
    if (options.checkpoint_seconds > 0) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - last_checkpoint_time)
              .count();
      return elapsed >= options.checkpoint_seconds;
    }
    return false;
  }

  // Loads the newest valid checkpoint into the workload; false when there is none.
  // On a rollback the micro-batch learned since that checkpoint is kept when it is not larger,
  // with its count of clean steps (the two go together: a regrowth since the checkpoint is undone).
  bool restore(const char* event) {
    if (async) {
      try {
        async->wait();
      } catch (const IoError& e) {
        // The newest valid checkpoint on disk is what counts; the failed one never committed.
        events->append("checkpoint_failed",
                       {{"step", saved_step}, {"reason", std::string(e.what())}});
      }
    }
    const std::int64_t learned_micro_batch = micro_batch;
    const std::int64_t learned_clean_steps = clean_steps;
    io::LoadedCheckpoint loaded = store->load_latest(communicator->rank());
    for (const auto& skipped : loaded.skipped) {
      events->append("checkpoint_skipped", {{"step", skipped.step}, {"reason", skipped.reason}});
      std::fprintf(stderr, "tenax: skipped checkpoint of step %lld: %s\n",
                   static_cast<long long>(skipped.step), skipped.reason.c_str());
    }
    if (!loaded.found) return false;
    if (std::string_view(event) == "resumed") check_resumed_config(loaded, options, *events);
    workload.load_state(loaded.state.scope("workload"));
    step = loaded.state.integer("runner/step");
    micro_batch = std::min(loaded.state.integer("runner/micro_batch"), workload.work_units());
    // Checkpoints written before the regrowth policy existed lack the count.
    clean_steps = loaded.state.contains("runner/regrow_clean_steps")
                      ? loaded.state.integer("runner/regrow_clean_steps")
                      : 0;
    if (std::string_view(event) == "rollback" && learned_micro_batch <= micro_batch) {
      micro_batch = learned_micro_batch;
      clean_steps = learned_clean_steps;
    }
    last_checkpoint_step = step;
    saved_step = step;
    events->append(event, {{"step", step}, {"micro_batch", micro_batch}});
    return true;
  }

  RunResult finish(RunStatus status, std::string message) {
    if (async && status != RunStatus::restart) {
      try {
        async->wait();
      } catch (const IoError& e) {
        events->append("checkpoint_failed",
                       {{"step", saved_step}, {"reason", std::string(e.what())}});
        std::fprintf(stderr, "tenax: background checkpoint of step %lld failed: %s\n",
                     static_cast<long long>(saved_step), e.what());
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
    events->append("exit", {{"status", std::string(to_string(status))},
                            {"exit_code", std::int64_t{exit_code}},
                            {"step", step},
                            {"message", message}});
    return {status, exit_code, step, micro_batch, std::move(message)};
  }

  // Runs `action` (building or loading the state), retrying it once after emptying the device
  // cache when it runs out of memory; there is no micro-batch to back off outside a step.
  template <class Action>
  bool with_cache_retry(Action&& action) {
    try {
      return action();
    } catch (const OutOfMemoryError& e) {
      events->append("oom_retry", {{"step", step}, {"reason", std::string(e.what())}});
      empty_cache(workload.device());
      return action();
    }
  }

  // Takes step `step` -> `step + 1` under the out-of-memory policy. Returns kContinue when the
  // step is done, kStop when the policy is exhausted, kRestart when another rank had a device or
  // communication fault.
  Decision take_step_with_oom_policy(std::string& report) {
    step_had_oom = false;
    bool cache_emptied = false;
    while (true) {
      Decision proposal = kContinue;
      try {
        if (inject(FaultKind::oom, step + 1)) {
          throw OutOfMemoryError("injected out-of-memory at step " + std::to_string(step + 1),
                                 "none needed: the fault was requested by TENAX_FAULTS");
        }
        workload.step(step, micro_batch);
      } catch (const OutOfMemoryError& e) {
        report = e.what();
        proposal = !cache_emptied                          ? kRetry
                   : micro_batch > options.min_micro_batch ? kBackoff
                                                           : kStop;
      }
      const auto decision = static_cast<Decision>(agree_decision(proposal));
      switch (decision) {
        case kContinue:
          return kContinue;
        case kRetry:
          empty_cache(workload.device());
          cache_emptied = true;
          clean_steps = 0;
          step_had_oom = true;
          events->append("oom_retry", {{"step", step + 1}, {"micro_batch", micro_batch}});
          break;
        case kBackoff:
          micro_batch = std::max(options.min_micro_batch, micro_batch / 2);
          cache_emptied = false;
          clean_steps = 0;
          step_had_oom = true;
          events->append("backoff", {{"step", step + 1}, {"micro_batch", micro_batch}});
          std::fprintf(stderr, "tenax: out of memory at step %lld; micro-batch halved to %lld\n",
                       static_cast<long long>(step + 1), static_cast<long long>(micro_batch));
          break;
        case kRestart:
          return kRestart;
        default:
          return kStop;
      }
    }
  }

  // Counts a step that passed its health check under the regrowth policy (one that ran out of
  // memory restarted the count and does not count itself) and doubles the micro-batch once
  // regrow_micro_batch_after steps in a row went without running out of memory. Every input is
  // agreed by all ranks (the step's outcome, its health), so all ranks regrow alike.
  void regrow_after_clean_step() {
    const std::int64_t full = workload.work_units();
    if (options.regrow_micro_batch_after <= 0 || micro_batch >= full) {
      clean_steps = 0;
      return;
    }
    if (step_had_oom) return;
    ++clean_steps;
    if (clean_steps < options.regrow_micro_batch_after || step >= options.total_steps) return;
    const std::int64_t previous = micro_batch;
    micro_batch = micro_batch > full / 2 ? full : micro_batch * 2;
    events->append("regrow", {{"step", step + 1},
                              {"micro_batch", micro_batch},
                              {"previous_micro_batch", previous},
                              {"clean_steps", clean_steps}});
    std::fprintf(stderr,
                 "tenax: %lld steps without running out of memory; micro-batch doubled to %lld\n",
                 static_cast<long long>(clean_steps), static_cast<long long>(micro_batch));
    clean_steps = 0;
  }

  // Why the state is not healthy after a step, or nothing. The state's tensors are scanned when
  // `scan` is set (anomaly_check_every) or a fault is injected at this step; the workload's own
  // check() runs after every step.
  std::optional<std::string> find_anomaly(bool scan) {
    const bool nan = inject(FaultKind::nan, step);
    const bool inf = inject(FaultKind::inf, step);
    if (scan || nan || inf) {
      const StateDict state = workload.save_state();
      if (nan) poison_state(state, std::numeric_limits<double>::quiet_NaN());
      if (inf) poison_state(state, std::numeric_limits<double>::infinity());
      if (auto problem = scan_tensors(state)) return problem;
    }
    return workload.check();
  }

  // scan_tensors of the workload's state and its check(); records the step as scanned.
  std::optional<std::string> scan_state() {
    scanned_step = step;
    if (auto problem = scan_tensors(workload.save_state())) return problem;
    return workload.check();
  }

  std::optional<std::string> scan_tensors(const StateDict& state) {
    scanned_step = step;
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

  RunResult run() {
    const io::RunDirectoryLock lock = lock_run_directory(options, *communicator);
    events.emplace(options.run_dir / "events.jsonl");
    io::CheckpointOptions checkpoint_options;
    checkpoint_options.keep_last = options.keep_last;
    checkpoint_options.fault_plan = &checkpoint_faults;
    store.emplace(options.run_dir, checkpoint_options);
    if (options.async_checkpoints) async.emplace(*store);
    SignalGuard signals;

    const bool resumed = with_cache_retry([&] { return restore("resumed"); });
    if (!resumed) {
      with_cache_retry([&] {
        workload.init();
        return true;
      });
      step = 0;
      micro_batch = workload.work_units();
      events->append("started",
                     {{"total_steps", options.total_steps}, {"micro_batch", micro_batch}});
      checkpoint(/*wait_for_it=*/true);  // there is always a state to roll back to
    }
    last_checkpoint_time = std::chrono::steady_clock::now();
    progress.emplace(options.progress, options.total_steps, step);

    int anomalies_in_a_row = 0;
    std::int64_t anomaly_step = -1;  // the furthest step found anomalous
    while (step < options.total_steps && !workload.finished()) {
      if (pending_signal.load() != 0) {
        // Rewriting a committed step would uncommit it first; skip it when it is known to be on
        // disk (an asynchronous write may still fail, so it is written again then).
        if (async || saved_step != step) checkpoint(/*wait_for_it=*/true);
        return finish(RunStatus::interrupted,
                      "stopped by signal " + std::to_string(pending_signal.load()) +
                          " after checkpointing step " + std::to_string(step) +
                          "; run again (or under `tenax run`) to resume");
      }
      std::optional<std::string> step_anomaly;
      try {
        if (inject(FaultKind::kill, step + 1)) {
          events->append("fault", {{"kind", std::string("kill")}, {"step", step + 1}});
          std::raise(SIGKILL);
        }
        if (inject(FaultKind::device, step + 1)) {
          throw DeviceFaultError("injected device fault at step " + std::to_string(step + 1),
                                 "none needed: the fault was requested by TENAX_FAULTS");
        }
        if (inject(FaultKind::comm, step + 1)) {
          throw CommFaultError("injected communication fault at step " + std::to_string(step + 1),
                               "none needed: the fault was requested by TENAX_FAULTS");
        }
        std::string oom_report;
        const Decision outcome = take_step_with_oom_policy(oom_report);
        if (outcome == kRestart) {
          // Already agreed: another rank had a device or communication fault.
          events->append("fault", {{"kind", std::string("peer")}, {"step", step + 1}});
          return finish(RunStatus::restart,
                        "another rank had a device or communication fault at step " +
                            std::to_string(step + 1) +
                            "; exiting for a restart from the checkpoint of step " +
                            std::to_string(saved_step));
        }
        if (outcome == kStop) {
          if (async || saved_step != step) checkpoint(/*wait_for_it=*/true);
          return finish(RunStatus::out_of_memory,
                        "out of memory at step " + std::to_string(step + 1) +
                            " even with the smallest micro-batch (" + std::to_string(micro_batch) +
                            "); state checkpointed at step " + std::to_string(step) + ". " +
                            oom_report + "\n" + memory_summary(workload.device()) +
                            "\nfix: run on a device with more memory, lower the problem size, "
                            "or raise TENAX_MEMORY_LIMIT; the run resumes from its checkpoint");
        }
      } catch (const Error& e) {
        if (e.fault_class() == FaultClass::anomaly) {
          // The step met a NaN/Inf it could not go on with (a non-finite loss, an anomaly-mode
          // report) and left the state as it was: the anomaly policy below decides, as for an
          // unhealthy state after a step.
          step_anomaly = e.what();
        } else if (e.fault_class() == FaultClass::overflow) {
          // The loss scale cannot go lower and the step still overflows: no retry can help. The
          // step changed nothing, so the state is the last good one: keep it and stop.
          (void)agree_decision(kStop);
          events->append("overflow", {{"step", step + 1}, {"reason", std::string(e.what())}});
          if (async || saved_step != step) checkpoint(/*wait_for_it=*/true);
          return finish(RunStatus::overflow, std::string(e.what()) +
                                                 "\nstate checkpointed at step " +
                                                 std::to_string(step) +
                                                 "; the run resumes from it once the cause is "
                                                 "fixed");
        } else {
          if (e.fault_class() != FaultClass::device_fault &&
              e.fault_class() != FaultClass::comm_fault) {
            throw;
          }
          (void)agree_decision(kRestart);
          events->append("fault", {{"kind", std::string(tenax::to_string(e.fault_class()))},
                                   {"step", step + 1},
                                   {"reason", std::string(e.what())}});
          // Nothing derived from device memory is written after a device fault.
          return finish(RunStatus::restart, std::string(e.what()) +
                                                "; exiting for a restart from the checkpoint of "
                                                "step " +
                                                std::to_string(saved_step));
        }
      }
      ++step;

      // Decided once: a time-based trigger could otherwise fire between the scan and the write.
      const bool due = checkpoint_due();
      const bool scan =
          options.anomaly_check_every == 1 || due || step == options.total_steps ||
          pending_signal.load() != 0 || workload.finished() ||
          (options.anomaly_check_every > 1 && step % options.anomaly_check_every == 0);
      const std::optional<std::string> anomaly =
          step_anomaly.has_value() ? step_anomaly : find_anomaly(scan);
      const auto decision =
          static_cast<Decision>(agree_decision(anomaly ? kRollback : kContinue));
      if (decision == kRollback) {
        ++anomalies_in_a_row;
        anomaly_step = std::max(anomaly_step, step);
        const std::string reason = anomaly.value_or("another rank found an anomaly");
        events->append("anomaly", {{"step", step}, {"reason", reason}});
        if (anomalies_in_a_row > options.max_anomaly_retries) {
          return finish(RunStatus::anomaly,
                        "anomaly at step " + std::to_string(step) + " (" + reason + ") after " +
                            std::to_string(options.max_anomaly_retries) +
                            " rollbacks; the last good checkpoint is kept. fix: lower the time "
                            "step or learning rate, or check the input data");
        }
        if (!restore("rollback")) {
          throw AnomalyError("anomaly at step " + std::to_string(step) + " (" + reason +
                                 ") and no valid checkpoint to roll back to",
                             "check the run directory " + options.run_dir.string());
        }
        continue;
      }
      // Only getting past the failing step ends the streak: the steps redone between the
      // checkpoint and that step are healthy every time.
      if (step > anomaly_step) anomalies_in_a_row = 0;

      const MemoryStats memory = memory_stats(workload.device());
      events->append("step",
                     {{"step", step},
                      {"micro_batch", micro_batch},
                      {"allocated", static_cast<std::int64_t>(memory.allocated_bytes.current)},
                      {"reserved", static_cast<std::int64_t>(memory.reserved_bytes.current)}});
      progress->update(step, memory.reserved_bytes.current);
      regrow_after_clean_step();
      if (due) checkpoint(/*wait_for_it=*/false);
    }
    if (saved_step != step) checkpoint(/*wait_for_it=*/true);
    return finish(RunStatus::completed, "");
  }
};

Runner::Runner(Workload& workload, RunnerOptions options,
               std::shared_ptr<Communicator> communicator) {
  TENAX_EXPECTS(!options.run_dir.empty(), UsageError, "the runner was given no run directory",
                "set RunnerOptions::run_dir (e.g. --run-dir runs/heat2d)");
  TENAX_EXPECTS(options.total_steps >= 0, UsageError,
                "total_steps is " + std::to_string(options.total_steps), "use a count >= 0");
  TENAX_EXPECTS(options.checkpoint_every >= 0 && options.checkpoint_seconds >= 0, UsageError,
                "checkpoint_every (" + std::to_string(options.checkpoint_every) +
                    ") and checkpoint_seconds (" + std::to_string(options.checkpoint_seconds) +
                    ") must not be negative",
                "use 0 to turn a trigger off");
  TENAX_EXPECTS(options.min_micro_batch >= 1, UsageError,
                "min_micro_batch is " + std::to_string(options.min_micro_batch),
                "use a floor of at least 1");
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
