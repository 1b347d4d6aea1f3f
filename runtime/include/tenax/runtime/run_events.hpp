/// The event log's vocabulary: the name of every event the Runner and the supervisor write to
/// `RUN_DIR/events.jsonl`, and of the fields they carry. Written once here; the Runner writes
/// with these names and `tenax report` and `tenax watch` read with them, so a reader never
/// misses an event that was renamed. Every line is `{"event": NAME, "time": SECONDS, FIELDS...}`
/// (see EventLog); the fields each event carries are listed with it.
/// @file
#pragma once

#include <string_view>

/// The names of the events in an event log.
namespace tenax::runtime::event {

/// A fresh run began: `total_steps`, `micro_batch`, `ranks`, `device` (the workload's).
inline constexpr std::string_view started = "started";
/// A run continued from its newest valid checkpoint: `step`, `micro_batch`, `device`.
inline constexpr std::string_view resumed = "resumed";
/// The resumed checkpoint was written by another number of ranks: `step`, `from_ranks`,
/// `to_ranks`.
inline constexpr std::string_view resharded = "resharded";
/// A committed step (not fdatasync'ed): `step`, `micro_batch`, `seconds` (the whole step),
/// `compute_seconds` (less the waits in collectives), `slowest_compute_seconds`, `slowest_rank`,
/// `allocated`, `reserved`, `metric_<name>` for each Workload::step_metrics() entry, and at the
/// steps whose state the ranks digested (RunnerOptions::digest_every) `digest`: the state digest
/// the ranks agreed on (io/state_digest.hpp), 16 hex digits.
inline constexpr std::string_view step = "step";
/// A telemetry sample (not fdatasync'ed): `trigger`, `step`, rates, memory and device readings.
inline constexpr std::string_view telemetry = "telemetry";
/// A telemetry warning (a slow rank, a hot or throttled GPU, ...): `step`, `kind`, `cause`, `fix`.
inline constexpr std::string_view warning = "warning";
/// A checkpoint committed: `step`, `seconds`, `async`.
inline constexpr std::string_view checkpoint_written = "checkpoint_written";
/// A checkpoint that did not commit (the previous one is kept): `step`, `reason`.
inline constexpr std::string_view checkpoint_failed = "checkpoint_failed";
/// A damaged or incomplete checkpoint passed over when loading: `step`, `reason`.
inline constexpr std::string_view checkpoint_skipped = "checkpoint_skipped";
/// The state was found unhealthy after a step (or the step met a NaN/Inf): `step` (the step
/// whose result was bad), `reason`, `where` (the source of the error, when one was raised).
inline constexpr std::string_view anomaly = "anomaly";
/// The ranks' digests of a replicated state disagreed after a step (silent data corruption):
/// `step`, `suspects` (the ranks, comma-separated: the minority, or every rank when there is no
/// majority), `digest` (this rank's common part) and `majority` (the most ranks' common part).
inline constexpr std::string_view digest_mismatch = "digest_mismatch";
/// The state was loaded from a checkpoint after an anomaly or a digest mismatch: `step` (the
/// checkpoint's),
/// `micro_batch`, `recompute` (the steps to compute again: the anomalous step less this one).
inline constexpr std::string_view rollback = "rollback";
/// A step ran out of memory and is tried again with the same micro-batch after the device
/// cache was emptied: `step`, `micro_batch` (or `reason` when building or loading the state).
inline constexpr std::string_view oom_retry = "oom_retry";
/// A step ran out of memory again and its micro-batch was halved: `step`, `micro_batch`.
inline constexpr std::string_view backoff = "backoff";
/// The micro-batch was doubled after enough clean steps: `step`, `micro_batch`,
/// `previous_micro_batch`, `clean_steps`.
inline constexpr std::string_view regrow = "regrow";
/// Another rank's fault made this rank compute the step again: `step`, `rank`, `decision`.
inline constexpr std::string_view peer_retry = "peer_retry";
/// A training step whose gradients overflowed in reduced precision was skipped (the loss scale
/// was lowered; nothing is lost): `step`, `loss_scale`.
inline constexpr std::string_view step_skipped = "step_skipped";
/// A step that failed again after a rollback, with the same inputs, was skipped for good
/// (RunnerOptions::repeated_anomaly = skip; the state stayed that of the step before): `step`,
/// `reason`, `inputs` (what the step read: Workload::describe_step, possibly empty).
inline constexpr std::string_view anomalous_step_skipped = "anomalous_step_skipped";
/// The training loss scale changed: `step`, `loss_scale`, `previous_loss_scale`.
inline constexpr std::string_view loss_scale_changed = "loss_scale_changed";
/// A fault that ends the process or the run (kill, hang, device, comm, ...): `kind`, `step`,
/// and where known `rank`, `reason`, `where`.
inline constexpr std::string_view fault = "fault";
/// A stop signal reached a rank; the run checkpoints and exits for a restart: `step`, `signal`,
/// `rank`.
inline constexpr std::string_view signal = "signal";
/// The run stopped on an overflow that loss scaling cannot absorb: `step`, `rank`, `reason`.
inline constexpr std::string_view overflow = "overflow";
/// A step failed with an error that is not a fault the Runner handles: `step`, `rank`, `reason`,
/// `where`.
inline constexpr std::string_view error = "error";
/// The run's configuration differs from the one its checkpoint was written with, and the change
/// is refused: `step`, `reason`.
inline constexpr std::string_view config_refused = "config_refused";
/// An accepted change of configuration at resume: `step`, `key`, `old`, `new`, `allowed`.
inline constexpr std::string_view config_changed = "config_changed";
/// The end of a Runner::run(): `status` (a RunStatus's name, or "failed" when an error the
/// Runner does not handle ends it: a checkpoint that failed again and again, a refused state),
/// `exit_code`, `step`, `message`.
inline constexpr std::string_view exit = "exit";
/// The program ended with a non-zero exit status after its Runner completed (a solve that broke
/// down or met a non-finite residual: the steps ran, the job failed): `exit_code`, `program`.
/// Written by the app layer (tenax::App), on rank 0.
inline constexpr std::string_view program_exit = "program_exit";

/// `tenax run` began supervising a job: `command`, `max_restarts`, `restart_delay_s`, ...
inline constexpr std::string_view supervisor_start = "supervisor_start";
/// `tenax run` restarts the job: `attempt`, `exit_code`, ...
inline constexpr std::string_view restart = "restart";
/// `tenax run` ended: `exit_code`, `restarts`, ...
inline constexpr std::string_view supervisor_exit = "supervisor_exit";

/// The prefix of a step metric's field in a `step` event (`metric_loss`).
inline constexpr std::string_view metric_prefix = "metric_";

}  // namespace tenax::runtime::event
