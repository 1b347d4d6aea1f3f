// The Runner's public face: its option checks, its result's words, and the Impl it drives
// (runner_impl.hpp: the loop, the step transaction and the checkpoints each in a file of their
// own).
#include "tenax/runtime/runner.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

#include "runner_impl.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/regular_file.hpp"
#include "tenax/io/run_config.hpp"

namespace tenax::runtime {

std::string_view to_string(RepeatedAnomaly policy) noexcept {
  return policy == RepeatedAnomaly::skip ? "skip" : "stop";
}

RepeatedAnomaly parse_repeated_anomaly(std::string_view text) {
  if (text == "stop") return RepeatedAnomaly::stop;
  if (text == "skip") return RepeatedAnomaly::skip;
  throw UsageError("--on-repeated-anomaly " + std::string(text) + " is not a policy",
                   "use stop (the run stops) or skip (the step is skipped)");
}

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
    case RunStatus::corrupted:
      return "corrupted";
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
  add(events.corruptions, "state digest mismatch", "state digest mismatches");
  add(events.rollbacks, "rollback", "rollbacks",
      " (" + std::to_string(events.steps_recomputed) + " steps computed again)");
  add(events.oom_retries, "out-of-memory retry", "out-of-memory retries");
  add(events.backoffs, "micro-batch backoff", "micro-batch backoffs");
  add(events.regrowths, "micro-batch regrowth", "micro-batch regrowths");
  add(events.peer_retries, "step computed again for another rank",
      "steps computed again for other ranks");
  add(events.steps_skipped, "step skipped on overflow", "steps skipped on overflow");
  add(events.anomalous_steps_skipped, "step skipped after a repeated anomaly",
      "steps skipped after repeated anomalies");
  add(events.loss_scale_changes, "loss-scale raise", "loss-scale raises");
  add(events.checkpoint_failures, "checkpoint failed", "checkpoints failed");
  add(events.checkpoints_skipped, "invalid checkpoint skipped", "invalid checkpoints skipped");
  return text.empty() ? std::string("no faults") : text;
}

Runner::Impl::Impl(Workload& workload, RunnerOptions options,
                   std::shared_ptr<Communicator> communicator)
    : workload(workload),
      options(std::move(options)),
      communicator(std::move(communicator)),
      rank(this->communicator->rank()),
      world(this->communicator->size()),
      faults(this->options.faults, rank),
      console(rank, world, this->options.option_flags),
      telemetry(this->options.telemetry_seconds, rank, workload),
      context(faults),
      micro(this->options.min_micro_batch, this->options.regrow_micro_batch_after),
      anomalies(this->options.max_anomaly_retries),
      schedule(this->options.checkpoint_every, this->options.checkpoint_seconds) {}

Runner::Runner(Workload& workload, RunnerOptions options,
               std::shared_ptr<Communicator> communicator) {
  TENAX_EXPECTS(!options.run_dir.empty(), UsageError, "the runner was given no run directory",
                "set RunnerOptions::run_dir (e.g. runs/heat2d)");
  TENAX_EXPECTS(options.total_steps >= 1, UsageError,
                "RunnerOptions::total_steps is " + std::to_string(options.total_steps) +
                    ": the run would end before its first step",
                "set RunnerOptions::total_steps to the step the run ends at, "
                "at least 1; a workload that ends by itself (finished()) still needs a limit");
  TENAX_EXPECTS(options.checkpoint_every >= 0 && options.checkpoint_seconds >= 0, UsageError,
                "RunnerOptions::checkpoint_every (" + std::to_string(options.checkpoint_every) +
                    ") and RunnerOptions::checkpoint_seconds (" +
                    std::to_string(options.checkpoint_seconds) + ") must not be negative",
                "use 0 to turn a trigger off");
  TENAX_EXPECTS(options.keep_last >= 1, UsageError,
                "RunnerOptions::keep_last is " + std::to_string(options.keep_last),
                "keep at least one checkpoint (>= 1; the default is 3)");
  TENAX_EXPECTS(options.min_micro_batch >= 1, UsageError,
                "RunnerOptions::min_micro_batch is " + std::to_string(options.min_micro_batch),
                "use a floor of at least 1");
  TENAX_EXPECTS(options.max_micro_batch == 0 || options.max_micro_batch >= options.min_micro_batch,
                UsageError,
                "RunnerOptions::max_micro_batch is " + std::to_string(options.max_micro_batch) +
                    ", below min_micro_batch " + std::to_string(options.min_micro_batch),
                "use 0 (the workload's units) or a micro-batch of at least min_micro_batch");
  TENAX_EXPECTS(options.regrow_micro_batch_after >= 0, UsageError,
                "RunnerOptions::regrow_micro_batch_after is " +
                    std::to_string(options.regrow_micro_batch_after),
                "use 0 (never regrow) or a count of steps >= 1");
  TENAX_EXPECTS(
      options.anomaly_check_every >= 0, UsageError,
      "RunnerOptions::anomaly_check_every is " + std::to_string(options.anomaly_check_every),
      "use 1 (scan after every step), N > 1 (every N steps) or 0 (only before "
      "checkpoints and at the end)");
  TENAX_EXPECTS(options.digest_every >= -1, UsageError,
                "RunnerOptions::digest_every is " + std::to_string(options.digest_every),
                "use -1 (automatic: about 1% of the step time), N >= 1 (digest the state every N "
                "steps) or 0 (only at checkpoints and at the end)");
  TENAX_EXPECTS(
      options.max_anomaly_retries >= 0, UsageError,
      "RunnerOptions::max_anomaly_retries is " + std::to_string(options.max_anomaly_retries),
      "use a count >= 0");
  {
    char given[32];
    std::snprintf(given, sizeof(given), "%g", options.telemetry_seconds);
    TENAX_EXPECTS(std::isfinite(options.telemetry_seconds) && options.telemetry_seconds >= 0 &&
                      options.telemetry_seconds <= 7 * 86400.0,
                  UsageError, "RunnerOptions::telemetry_seconds is " + std::string(given),
                  "use 0 (no telemetry) or a number of seconds up to a week (the default is 10)");
  }
  if (!options.profile_path.empty()) {
    require_output_path_before_the_job(options.profile_path, "RunnerOptions::profile_path");
  }
  TENAX_EXPECTS(communicator != nullptr, UsageError, "the runner was given a null communicator",
                "pass a communicator or use the default single-rank one");
  io::check_allowed_changes(options.config, options.config_policy);
  impl_ = std::make_unique<Impl>(workload, std::move(options), std::move(communicator));
}

Runner::~Runner() = default;

RunResult Runner::run() { return impl_->run(); }

}  // namespace tenax::runtime
