/// Runner: drives a Workload to completion and keeps the promise that no work is lost.
/// @file
/// It owns the step loop and, around it:
///  - the run directory's lock (io::RunDirectoryLock), taken for this rank before anything in
///    RUN_DIR is read or written and held until run() returns: a second job on the same
///    directory is refused (UsageError naming the holder's pid, host and program);
///  - resume: at start, the newest valid checkpoint in RUN_DIR is loaded (newer broken ones are
///    skipped and reported); without one the workload is initialised and checkpointed as step 0,
///    so that there is always a state to roll back to. With a configuration (`config`), the one
///    stored in the checkpoint must match it under `config_policy` (io::check_resume_config):
///    accepted changes are printed ("tenax: resuming with steps changed 100 -> 200") and logged
///    as config_changed events; any other change throws UsageError before the state is loaded,
///    and the run directory is left as it was (a rollback does not check again);
///  - checkpoints every `checkpoint_every` steps and/or `checkpoint_seconds` seconds, at the end,
///    and on SIGTERM/SIGINT (the current step finishes, the state is checkpointed, and the run
///    returns the restart exit code 75 so a supervisor resumes it);
///  - fault policies, each decided through one Communicator::agree() call so that all ranks act
///    alike:
///    - out_of_memory: empty the device cache and retry the step; then halve the micro-batch and
///      retry (same result, more micro-steps); at min_micro_batch, checkpoint and stop with the
///      memory summary. The learned micro-batch is saved in every checkpoint. With
///      regrow_micro_batch_after = K > 0, K steps in a row without an out-of-memory error at a
///      reduced micro-batch double it again (up to work_units()), so a transient shortage
///      (a peak, another process) does not slow the rest of the run.
///    - anomaly (NaN/Inf in any floating tensor of the state, Workload::check(), or an
///      AnomalyError thrown by Workload::step(), e.g. a non-finite loss): roll back to the last
///      checkpoint and redo the steps; stop after max_anomaly_retries consecutive failures.
///    - device_fault / comm_fault: nothing more is written from device memory; the run returns
///      the restart code 75 at once, and the supervisor restarts it from the last checkpoint.
///    - overflow (an OverflowError thrown by Workload::step: gradients overflow at the minimum
///      loss scale): the state, unchanged by the step, is checkpointed and the run stops with
///      the error's advice (status overflow, exit code 1).
///  - RUN_DIR/events.jsonl: a line per step and per event (see EventLog), and telemetry lines
///    with the warnings read from them (telemetry_seconds, telemetry.hpp);
///  - a progress line on a terminal, plain log lines otherwise.
///
/// Injected faults (TENAX_FAULTS or RunnerOptions::faults), with S the step being taken
/// (counted from 1): `oom@step=S` fails the step as an allocation would; `nan@step=S` /
/// `inf@step=S` write a non-finite value into the state after the step; `device@step=S` and
/// `comm@step=S` raise those faults; `kill@step=S` kills the process with SIGKILL before the
/// step; `hang@step=S` stops the rank in step S until its peers give up on it. An item with
/// `xM` after S fires M times at step S (`oom@step=Sx3`: three attempts of step S fail in a row,
/// which drives the backoff), then never again in the process; faults that end the process
/// (kill, device, comm, hang) fire only in the first attempt of a job (TENAX_RESTART_COUNT unset
/// or 0), so that a restarted job proves its recovery.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "tenax/core/fault_injection.hpp"
#include "tenax/io/run_config.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/option_flags.hpp"
#include "tenax/runtime/workload.hpp"

namespace tenax::runtime {

/// How the step loop shows its progress (Progress, on rank 0 only): `terminal`, one line
/// rewritten in place; `log`, a plain line at every tenth of the run; `quiet`, nothing;
/// `automatic`, the line when stderr is a terminal and log lines otherwise.
enum class ProgressMode { automatic, terminal, log, quiet };
/// "auto", "terminal", "log" or "quiet" (a `--progress` flag); UsageError naming them otherwise.
[[nodiscard]] ProgressMode parse_progress_mode(std::string_view text);

/// What the Runner does with an anomaly that repeats at the same step after a rollback
/// (RunnerOptions::repeated_anomaly).
enum class RepeatedAnomaly : std::uint8_t {
  stop,  ///< stop the run at once (nothing is lost: the last good checkpoint is kept)
  skip   ///< skip the step (Workload::skip_step) and go on
};

/// "stop" or "skip".
[[nodiscard]] std::string_view to_string(RepeatedAnomaly policy) noexcept;
/// "stop" or "skip" (a `--on-repeated-anomaly` flag); UsageError naming them otherwise.
[[nodiscard]] RepeatedAnomaly parse_repeated_anomaly(std::string_view text);

/// What a Runner does, and where. The Runner's constructor checks them (UsageError naming the
/// option); the ranks of a job pass the same values.
struct RunnerOptions {
  std::filesystem::path run_dir;  ///< holds checkpoints/ and events.jsonl; created when missing
  /// The run is done when the state reaches this step (>= 1; the constructor refuses 0, a run
  /// that would take no step).
  std::int64_t total_steps = 0;
  std::int64_t checkpoint_every = 0;  ///< steps between checkpoints; 0: no step-count trigger
  double checkpoint_seconds = 0;      ///< seconds between checkpoints; 0: no time trigger
  int keep_last = 3;                  ///< committed checkpoints kept, >= 1
  bool async_checkpoints = false;     ///< write checkpoints on a background thread (1 rank only)
  int max_anomaly_retries = 3;        ///< consecutive rollbacks before the run stops
  /// What a step that fails again after a rollback, at the same step with the same data, does:
  /// such an anomaly is deterministic (a bad sample, say), so another rollback could only repeat
  /// it. stop (the default) stops the run at once, naming the step and what it read
  /// (Workload::describe_step); skip asks the workload to skip the step (Workload::skip_step:
  /// its state stays that of the step before) and goes on, a fault the run survived (said on the
  /// console, an event, counted in the closing line and the report). Only a step that failed
  /// before its commit (a non-finite loss or gradients) can be skipped; a state that turned
  /// unhealthy after the commit stops the run either way. `--on-repeated-anomaly`.
  RepeatedAnomaly repeated_anomaly = RepeatedAnomaly::stop;
  /// Steps between scans of the state's tensors for NaN/Inf: 1 scans after every step (a NaN is
  /// caught at the step that made it); N > 1 every N steps; 0 only before checkpoints, at the end
  /// and on a signal. A scan reads the whole state, as much memory traffic as a memory-bound
  /// step's, so long cheap steps may space them out. Whatever the setting, the state is scanned
  /// before every checkpoint and an unhealthy one is never written (a NaN found late rolls back
  /// further), and Workload::check() runs after every step.
  std::int64_t anomaly_check_every = 1;
  /// Steps between digests of the state (io/state_digest.hpp): the ranks compare the digests of
  /// what they hold alike (a replicated state; the unsharded entries of a sharded one) in the
  /// state agreement after the step. A rank that differs from the majority (both, with two
  /// ranks) is named and the run rolls back to its last checkpoint; the same rank differing
  /// again stops the run naming its host and device (RunStatus::corrupted). The agreed digest
  /// is written into that step's line of the event log (what `tenax replay` compares), and
  /// every checkpoint records the digest of its state, which a resume and `tenax ckpt verify`
  /// check. A digest reads the whole state once. -1 (the default): as often as digests cost
  /// about 1% of the step time, measured as the run goes (every step for a model whose steps
  /// compute much on a small state; every ~100 steps for a memory-bound stencil), at most every
  /// kMaxAutoDigestEvery steps; 0: only at checkpoints and at the end; N >= 1: every N steps.
  std::int64_t digest_every = -1;
  std::int64_t min_micro_batch = 1;  ///< floor of the out-of-memory backoff
  /// The micro-batch a fresh run starts with and the ceiling of regrowth: 0 for
  /// Workload::work_units(), else the smaller of the two (a program's `--micro-batch`, so that the
  /// micro-batch reported and saved is the one that runs).
  std::int64_t max_micro_batch = 0;
  /// Regrowth after an out-of-memory backoff: when > 0, after this many consecutive steps
  /// completed (and found healthy) without an out-of-memory error at a micro-batch smaller than
  /// Workload::work_units(), the micro-batch doubles, capped at work_units(), from the next step
  /// on (a "regrow" event in events.jsonl and a line on stderr). The count restarts after each
  /// growth and after each out-of-memory error (even one a cache retry absorbed; the step with the
  /// error does not count). It is saved in checkpoints with the micro-batch, so a resumed run
  /// regrows where an uninterrupted one would; a rollback keeps it with the micro-batch it keeps.
  /// The results do not change (Workload::step's contract), only the speed. 0: never regrow.
  std::int64_t regrow_micro_batch_after = 0;
  /// Run configuration stored in checkpoints: a flat JSON object with "program" (build it with
  /// io::ConfigWriter), or "" for none (then nothing is checked on resume).
  std::string config;
  /// Which changes of `config` a resume accepts (free keys, safe keys the user allowed with
  /// `--allow-config-change`). The constructor refuses an allowed key that is not a safe or free
  /// key of `config`.
  io::ConfigPolicy config_policy;
  /// The program's name, recorded in the run directory's lock so that a refused second job is
  /// told who holds it ("" records the process's command name).
  std::string program;
  ProgressMode progress = ProgressMode::automatic;  ///< the display on rank 0 (the others: none)
  /// Seconds between "telemetry" lines in events.jsonl (this rank's memory pool, host memory,
  /// step rate and, for a CUDA device with NVML, its utilisation, temperature, power, clocks,
  /// throttle reasons and ECC counts; see telemetry.hpp). One is also written at the start, at
  /// every event that changes the run (out-of-memory retry or backoff, anomaly, fault) and at the
  /// end; the warnings read from them (throttling, ECC errors, a leak, fragmentation, a slow rank)
  /// are "warning" events and console lines. 0: no telemetry at all; at most a week (604800).
  double telemetry_seconds = 10;
  const FaultPlan* faults = nullptr;  ///< nullptr: the process plan (TENAX_FAULTS)
  /// Where to write a profile of the run (tenax/core/profiler.hpp: spans of each step and its
  /// phases, checkpoints, NaN scans and waits, in Chrome's trace event format for Perfetto), or ""
  /// for none (the default: then a span costs one atomic load). Rank r > 0 writes
  /// `STEM.rank-R.EXT` beside it (`profile.rank-1.json` for `profile.json`). Written when the run
  /// ends, however it ends; its directory must exist (checked before the run starts).
  std::filesystem::path profile_path;
  /// The program's flags for API options (option_flags.hpp): the console's messages name the
  /// flag beside an option they mention. The app layer fills it from the settings' declarations.
  OptionFlags option_flags;
};

/// The longest stretch between two digests when RunnerOptions::digest_every is automatic (-1).
inline constexpr std::int64_t kMaxAutoDigestEvery = 1000;

/// How a run ended (RunResult::status; the `status` of the `exit` event).
enum class RunStatus {
  completed,      ///< reached total_steps, or the workload reported Workload::finished()
  interrupted,    ///< SIGTERM/SIGINT: checkpointed, resume by running again
  restart,        ///< device or communication fault: resume by running again (elsewhere)
  out_of_memory,  ///< OOM at the smallest micro-batch: checkpointed and stopped
  anomaly,        ///< non-finite state after max_anomaly_retries rollbacks
  overflow,       ///< the step threw OverflowError (f16 loss scale at its minimum): checkpointed
  corrupted,      ///< a rank's state differed from its peers' twice: its hardware is suspect
};

/// What changed a run on its way, as this process saw it (a resumed process counts from its
/// resume). Each is also a line on the console and an event in events.jsonl when it happens.
struct RunEvents {
  std::int64_t resumes = 0;           ///< 1 when the run started from a checkpoint
  std::int64_t rollbacks = 0;         ///< anomalies and corruptions rolled back
  std::int64_t corruptions = 0;       ///< ranks' state digests that disagreed (rolled back)
  std::int64_t steps_recomputed = 0;  ///< steps computed again after those rollbacks
  std::int64_t oom_retries = 0;       ///< out-of-memory: cache emptied, the step tried again
  std::int64_t backoffs = 0;          ///< out-of-memory: the micro-batch halved
  std::int64_t regrowths = 0;         ///< the micro-batch doubled again after clean steps
  std::int64_t peer_retries = 0;      ///< a step computed again for another rank's fault
  std::int64_t steps_skipped = 0;     ///< training steps skipped on overflow (Trainer)
  /// Steps skipped after repeating an anomaly (RunnerOptions::repeated_anomaly = skip).
  std::int64_t anomalous_steps_skipped = 0;
  std::int64_t loss_scale_changes = 0;   ///< loss-scale raises after clean steps (Trainer)
  std::int64_t checkpoint_failures = 0;  ///< checkpoints that could not be written
  std::int64_t checkpoints_skipped = 0;  ///< invalid checkpoints passed over when loading
};

/// "1 rollback (10 steps computed again), 2 out-of-memory retries", or "no faults".
[[nodiscard]] std::string describe(const RunEvents& events);

/// What Runner::run() returns: how the run ended, and what to tell the user.
struct RunResult {
  RunStatus status = RunStatus::completed;  ///< how the run ended
  int exit_code = 0;      ///< 0 (completed), 75 (interrupted, restart) or 1 (the other statuses)
  std::int64_t step = 0;  ///< step the state had reached
  std::int64_t micro_batch = 0;  ///< the micro-batch at the end (after backoffs and regrowths)
  std::string message;           ///< what happened and what to do (empty when completed)
  RunEvents events;              ///< what changed the run on its way
};

/// Drives one Workload through the step loop under the policies of the file. Every rank of a
/// job makes its Runner with the same options and calls run(), which is collective. The
/// Runner holds `workload` by reference (it must outlive the Runner) and shares the
/// communicator.
class Runner {
 public:
  /// Throws UsageError for inconsistent options (naming the option and the fix), a null
  /// communicator, or a `--allow-config-change` key (config_policy.allowed) that the
  /// configuration does not accept. Nothing in the run directory is touched yet.
  Runner(Workload& workload, RunnerOptions options,
         std::shared_ptr<Communicator> communicator = std::make_shared<SingleRankCommunicator>());
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  /// Runs to completion or to the first fault the policies cannot absorb. Throws only for errors
  /// outside the policies (usage errors, an unusable run directory, a run directory in use by
  /// another job, a resume with a configuration the policy refuses, async_checkpoints with
  /// several ranks, three checkpoints in a row that failed). Rank 0 logs to
  /// `RUN_DIR/events.jsonl`, rank r > 0 to `RUN_DIR/events-rank-R.jsonl`.
  [[nodiscard]] RunResult run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The enumerator's name (`"completed"`, `"out_of_memory"`, ...), as in the `exit` event.
[[nodiscard]] std::string_view to_string(RunStatus status) noexcept;

}  // namespace tenax::runtime
