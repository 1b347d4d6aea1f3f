// The Runner's state and the steps of its work, one file each: runner_loop.cpp sequences the
// steps (the loop, its start and its end), runner_step.cpp is the step transaction (compute,
// agree, the faults a step meets, the state's health), runner_checkpoints.cpp writes and loads
// checkpoints. The policies each live in their own file (micro_batch_policy, anomaly_policy,
// checkpoint_schedule, stop_signals, collective_checkpoint, injected_faults), as do the console
// (run_console), the telemetry (run_telemetry) and the profile (profile_session).
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "anomaly_policy.hpp"
#include "checkpoint_schedule.hpp"
#include "injected_faults.hpp"
#include "micro_batch_policy.hpp"
#include "run_console.hpp"
#include "run_telemetry.hpp"
#include "step_clock.hpp"
#include "step_context.hpp"
#include "tenax/io/async_checkpointer.hpp"
#include "tenax/io/checkpoint_store.hpp"
#include "tenax/io/state_digest.hpp"
#include "tenax/runtime/event_log.hpp"
#include "tenax/runtime/progress.hpp"
#include "tenax/runtime/runner.hpp"

namespace tenax::runtime {

struct Runner::Impl {
  Impl(Workload& workload, RunnerOptions options, std::shared_ptr<Communicator> communicator);

  Workload& workload;
  RunnerOptions options;
  std::shared_ptr<Communicator> communicator;
  const int rank;
  const int world;
  detail::InjectedFaults faults;
  detail::RunConsole console;
  detail::RunTelemetry telemetry;
  detail::StepContext context;  // what the library's components tell the run during a step

  std::optional<EventLog> events;
  std::optional<io::CheckpointStore> store;
  std::optional<io::AsyncCheckpointer> async;
  std::optional<Progress> progress;

  detail::MicroBatchPolicy micro;
  detail::AnomalyPolicy anomalies;
  detail::CheckpointSchedule schedule;

  std::int64_t step = 0;
  std::int64_t saved_step = -1;    // newest step checkpointed (asynchronously: write started)
  std::int64_t scanned_step = -1;  // newest step whose state was scanned for NaN/Inf
  int checkpoint_failures = 0;
  RunEvents counted;                // what changed the run, for RunResult and the closing line
  StateLayout layout;               // the workload's split across the ranks
  io::DigestLayout digest_layout;   // the same, as the state digest needs it
  std::int64_t digested_step = -1;  // the newest step whose state digest the ranks agreed on
  std::uint64_t agreed_digest = 0;  // that digest
  // Automatic cadence (digest_every -1): the ranks' agreed steps between digests, and what this
  // rank measured: its last digest's seconds and its steps' (without a digest), averaged.
  std::int64_t auto_digest_every = 1;
  double digest_seconds = 0;
  double step_seconds = 0;
  std::vector<std::int64_t> suspect_steps;  // per rank: the step its digest first differed at
  std::string shard_table;  // every rank's shards (JSON), stored with each checkpoint

  // ---- runner_loop.cpp: the loop ----
  RunResult run();
  RunResult run_steps();
  // The start: resume from the newest valid checkpoint, or initialise and checkpoint step 0.
  bool start();
  // After an agreed proceed: the step's bookkeeping (its event, progress, telemetry, regrowth,
  // what the components told).
  void record_step(const detail::StepClock& clock, const StepAgreement& state);
  // What the library's components told the run during the step (StepContext).
  void record_notices();
  RunResult finish(RunStatus status, std::string message);
  // A communication fault: the job exits for a restart.
  RunResult comm_failure(const Error& e);
  void write_memory_history();

  // ---- runner_step.cpp: the step transaction ----
  // What the step's computation proposes, with the error behind it (kept to rethrow an error
  // outside the policies once every rank knows to stop).
  struct Outcome {
    StepProposal proposal;
    std::string report;  // what the console says of the error (no source location)
    std::string where;   // the error's source location, for the event log
    std::exception_ptr error;
    bool computed = false;  // step() returned: a result is staged
  };
  Outcome compute_step();
  // An agreed retry or backoff: what this rank does and says before computing the step again.
  void prepare_retry(const StepAgreement& outcome, const Outcome& mine);
  // The reason a peer's decision is told on this rank.
  [[nodiscard]] std::string peer_report(const StepAgreement& agreed, const Outcome& mine) const;
  // An agreed restart or stop: the result the run ends with (or a rethrown usage error).
  RunResult end_step(const StepAgreement& outcome, const Outcome& mine);
  // The anomaly policy after an agreed rollback; a RunResult when the run stops. `staged`: the
  // anomaly was found before the step's commit (the state is still that of the step before), so
  // a repeated one may be skipped (RunnerOptions::repeated_anomaly); then the step counts as
  // taken and nothing is rolled back.
  std::optional<RunResult> roll_back(std::int64_t anomalous_step, const std::string& reason,
                                     const std::string& where, bool staged = false);
  // A repeated anomaly (anomaly_policy.hpp): the step skipped when the policy and the workload
  // allow it (nullopt: the run goes on), else the run's end.
  std::optional<RunResult> on_repeated_anomaly(std::int64_t anomalous_step,
                                               const std::string& reason, bool staged);
  // The state agreement after a commit (or at the start): health, signals, the checkpoint
  // trigger, finished(), timing. `clock`: the step's (nullptr outside a step).
  // `digest`: this rank's digest parts travel with it (the ranks compare them).
  StepAgreement agree_on_state(bool scan, const detail::StepClock* clock,
                               std::optional<std::string>& anomaly, bool digest = false);
  // This rank's parts of the digest of `state` (the workload's), into `proposal`.
  void digest_into(StepProposal& proposal, const StateDict& state);
  // The state's digest agreed now (a collective), unless the ranks agreed on this step's
  // already; false when they disagree (said and logged, as after a step).
  bool agree_on_digest();
  // Ranks whose digests differed: said, counted and logged.
  void report_corruption(const StepAgreement& state);
  // ... and the rollback, or the stop when a rank differs again.
  std::optional<RunResult> on_corruption(const StepAgreement& state);
  [[nodiscard]] bool digest_due(bool checkpoint_ahead) const;
  // The steps between digests this rank asks for under the automatic cadence (0: none yet).
  [[nodiscard]] std::int32_t digest_every_wish() const;
  // Loads the last checkpoint after a bad step (`bad_step`): said, counted and logged.
  void rewind(std::int64_t bad_step);
  std::optional<std::string> find_anomaly(bool scan);
  // The first floating tensor of `state` with NaN/Inf values, said, or nothing.
  static std::optional<std::string> scan_tensors(const StateDict& state);
  [[nodiscard]] bool scan_due(bool checkpoint_ahead) const;
  [[noreturn]] void hang();

  // ---- runner_checkpoints.cpp: checkpoints ----
  StateDict checkpoint_state() const;
  void checkpoint(bool wait_for_it);
  bool restore(std::string_view event);
  void check_loaded_digest(const io::LoadedCheckpoint& loaded);
  // The background write in flight, waited for; its failure counted and said.
  void settle_async_write();
  template <class Action>
  bool with_cache_retry(Action&& action);

  // ---- helpers ----
  [[nodiscard]] std::int64_t full_micro_batch() const {
    const std::int64_t units = workload.work_units();
    return options.max_micro_batch > 0 ? std::min(options.max_micro_batch, units) : units;
  }
  [[nodiscard]] std::string on_rank(int who) const {
    return world > 1 && who >= 0 ? " on rank " + std::to_string(who) : std::string();
  }
  void record_telemetry(const std::string& trigger) {
    if (events) telemetry.record(trigger, step, *events, console);
  }
};

// The workload's shards under the name its state has in a checkpoint ("workload/<name>").
std::vector<io::TensorShard> prefixed(std::vector<io::TensorShard> shards);

}  // namespace tenax::runtime
