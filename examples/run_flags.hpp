// The command-line flags every example job shares: where the run lives, when it checkpoints,
// which faults to inject, how it reports progress, which configuration changes a resume may
// accept. Each example embeds a RunFlags (with its own defaults), registers them with
// add_run_flags and builds its RunnerOptions with runner_options, so the flags mean the same in
// every program. None of these flags changes results, so none of them is part of the
// configuration an example stores in its checkpoints.
//
// The run directory is locked by the job that runs in it (a second job on it is refused, naming
// the first one's pid). A resume checks the stored configuration against the current flags
// (tenax/io/run_config.hpp): each example names its free keys (changed with a notice, e.g.
// --steps) and its safe keys, which change only with --allow-config-change KEY; any other
// change is refused, listing what changed.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tenax/app/app.hpp"
#include "tenax/app/problem_size.hpp"
#include "tenax/core/checked_size.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/fault_injection.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/io/run_config.hpp"
#include "tenax/runtime/communicator.hpp"
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
  std::vector<std::string> allow_config_change;
  std::string comm = "auto";
  double comm_timeout = 300;
  double telemetry_seconds = 10;
  std::string profile;
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
  app.add_option("--allow-config-change", flags.allow_config_change,
                 "resume even though configuration key KEY changed, for a key that is safe to "
                 "change (the refusal of a resume names them); repeat it or separate keys with "
                 "commas")
      ->type_name("KEY")
      ->delimiter(',')
      ->allow_extra_args(false);
  app.add_option("--comm", flags.comm,
                 "how ranks talk: auto (MPI when started by mpirun or srun, else one rank), "
                 "single, mpi or nccl")
      ->capture_default_str();
  app.add_option("--profile", flags.profile,
                 "write a profile of the run to FILE.json (spans of every step and its phases, "
                 "checkpoints, NaN scans and waits, Chrome trace format: open it in Perfetto); "
                 "rank r > 0 writes FILE.rank-<r>.json")
      ->type_name("FILE");
  app.add_option("--telemetry-seconds", flags.telemetry_seconds,
                 "seconds between telemetry lines in events.jsonl (memory pool, host memory, "
                 "step rate, and GPU utilisation, temperature, power, clocks and ECC where NVML "
                 "loads); also written at every fault and at the end (0: off)")
      ->capture_default_str();
  app.add_option("--comm-timeout", flags.comm_timeout,
                 "seconds a collective may take before the job is declared hung (it then exits "
                 "75 naming the call and the ranks that did not arrive, for a restart)")
      ->capture_default_str();
}

// The communicator of --comm and --comm-timeout. `ranks_supported`: whether the program splits
// its work across ranks; one that does not refuses a launch of several processes, which would
// otherwise run the whole job once per rank.
inline std::shared_ptr<runtime::Communicator> make_communicator(const RunFlags& flags,
                                                                std::string_view program,
                                                                bool ranks_supported) {
  runtime::CommOptions options;
  options.timeout_seconds = flags.comm_timeout;
  char given[32];
  std::snprintf(given, sizeof(given), "%g", flags.comm_timeout);
  TENAX_EXPECTS(std::isfinite(flags.comm_timeout) && flags.comm_timeout > 0 &&
                    flags.comm_timeout <= 7 * 86400.0,
                UsageError, "--comm-timeout " + std::string(given),
                "use a positive number of seconds up to a week (the default is 300)");
  std::shared_ptr<runtime::Communicator> comm =
      runtime::make_communicator(runtime::parse_comm_kind(flags.comm), options);
  TENAX_EXPECTS(ranks_supported || comm->size() == 1, UsageError,
                std::string(program) + " was started as " + std::to_string(comm->size()) +
                    " ranks, but it does not divide its work across ranks yet: every rank "
                    "would compute the whole job",
                "run it as one process (without mpirun or srun)");
  return comm;
}

// --inject is TENAX_FAULTS by another name: a malformed spec is rejected here, before anything
// runs, and the variable is set so that allocations and restarted processes see the plan too.
// Call it before the first allocation.
inline void apply_inject_flag(const RunFlags& flags) {
  if (flags.inject.empty()) return;
  (void)FaultPlan::parse(flags.inject);
  ::setenv("TENAX_FAULTS", flags.inject.c_str(), 1);
}

// The Runner's options from the flags, for `program` with its configuration (built with
// io::ConfigWriter) and the policy of what may change in it on resume (the flags add what the
// user allowed).
inline runtime::RunnerOptions runner_options(const RunFlags& flags, std::int64_t total_steps,
                                             std::string program, std::string config,
                                             io::ConfigPolicy policy) {
  runtime::RunnerOptions options;
  options.program = std::move(program);
  policy.allowed = flags.allow_config_change;
  options.config_policy = std::move(policy);
  options.run_dir = flags.run_dir;
  options.total_steps = total_steps;
  options.checkpoint_every = flags.checkpoint_every;
  options.checkpoint_seconds = flags.checkpoint_seconds;
  options.keep_last = flags.keep_last;
  options.async_checkpoints = flags.async;
  options.config = std::move(config);
  options.progress = runtime::parse_progress_mode(flags.progress);
  options.anomaly_check_every = flags.anomaly_check_every;
  options.telemetry_seconds = flags.telemetry_seconds;
  options.profile_path = flags.profile;
  return options;
}

// The checks of a problem's size and the end of a program are the app layer's
// (tenax/app/problem_size.hpp, tenax/app/app.hpp), as heat2d and the tutorial use them.
using app::expect_fits_memory;
using app::expect_grid_fits;
using app::run_program;

}  // namespace tenax::examples
