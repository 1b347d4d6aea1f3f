// The command-line flags every example job shares: where the run lives, when it checkpoints,
// which faults to inject, how it reports progress. Each example embeds a RunFlags (with its
// own defaults), registers them with add_run_flags and builds its RunnerOptions with
// runner_options, so the flags mean the same in every program.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#include "tenax/core/fault_injection.hpp"
#include "tenax/runtime/runner.hpp"

namespace tenax::examples {

struct RunFlags {
  std::string run_dir;
  std::int64_t checkpoint_every = 0;
  double checkpoint_seconds = 0;
  int keep_last = 3;
  bool async = false;
  std::string inject;
  std::string progress = "auto";
  std::int64_t anomaly_check_every = 1;
};

inline void add_run_flags(CLI::App& app, RunFlags& flags) {
  app.add_option("--run-dir", flags.run_dir,
                 "checkpoints and events.jsonl go here; a run resumes from the newest valid "
                 "checkpoint in it")
      ->capture_default_str();
  app.add_option("--checkpoint-every", flags.checkpoint_every, "steps between checkpoints (0: off)")
      ->capture_default_str();
  app.add_option("--checkpoint-seconds", flags.checkpoint_seconds,
                 "seconds between checkpoints (0: off)")
      ->capture_default_str();
  app.add_option("--keep-last", flags.keep_last, "checkpoints kept")->capture_default_str();
  app.add_flag("--async", flags.async, "write checkpoints on a background thread");
  app.add_option("--inject", flags.inject,
                 "faults to inject, as TENAX_FAULTS (e.g. kill@step=3, nan@step=2, oom@alloc=5)");
  app.add_option("--progress", flags.progress, "auto, terminal, log or quiet")
      ->capture_default_str();
  app.add_option("--anomaly-check-every", flags.anomaly_check_every,
                 "steps between NaN/Inf scans of the state (0: only before checkpoints)")
      ->capture_default_str();
}

// --inject is TENAX_FAULTS by another name: a malformed spec is rejected here, before anything
// runs, and the variable is set so that allocations and restarted processes see the plan too.
// Call it before the first allocation.
inline void apply_inject_flag(const RunFlags& flags) {
  if (flags.inject.empty()) return;
  (void)FaultPlan::parse(flags.inject);
  ::setenv("TENAX_FAULTS", flags.inject.c_str(), 1);
}

// The Runner's options from the flags.
inline runtime::RunnerOptions runner_options(const RunFlags& flags, std::int64_t total_steps,
                                             std::string config) {
  runtime::RunnerOptions options;
  options.run_dir = flags.run_dir;
  options.total_steps = total_steps;
  options.checkpoint_every = flags.checkpoint_every;
  options.checkpoint_seconds = flags.checkpoint_seconds;
  options.keep_last = flags.keep_last;
  options.async_checkpoints = flags.async;
  options.config = std::move(config);
  options.progress = runtime::parse_progress_mode(flags.progress);
  options.anomaly_check_every = flags.anomaly_check_every;
  return options;
}

}  // namespace tenax::examples
