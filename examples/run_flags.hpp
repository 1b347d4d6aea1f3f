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

// Refuses, before anything is built, a problem whose smallest footprint (`bytes`, the arrays it
// cannot run without) exceeds what the memory pool of `device` may hold: TENAX_MEMORY_LIMIT, or
// the device's memory. `what` names the flags ("--n 20000 --dim 2"), `fix` the largest size
// that fits. Without this a grid of 20000^2 would reach the pool only after gigabytes of host
// assembly, or the kernel's OOM killer.
inline void expect_fits_memory(Device device, std::int64_t bytes, const std::string& what,
                               const std::string& fix) {
  const std::size_t capacity = memory_stats(device).capacity;
  if (capacity == 0 || static_cast<std::uint64_t>(bytes) <= capacity) return;
  throw OutOfMemoryError(what + " needs at least " + format_bytes(static_cast<std::size_t>(bytes)) +
                             " on " + to_string(device) + ", more than the " +
                             format_bytes(capacity) +
                             " this process may use there (TENAX_MEMORY_LIMIT, or the memory "
                             "the device has)",
                         fix + ", or raise TENAX_MEMORY_LIMIT where the machine has the memory");
}

// The points of a grid with `side` points along each of `dims` axes, checked: UsageError when
// side^dims * bytes_per_point overflows, and expect_fits_memory's refusal when it exceeds the
// pool of `device`, both naming `flag` ("--n 6074001000") and the largest side that fits.
// `bytes_per_point`: the smallest footprint per point (the arrays the program cannot run
// without).
inline std::int64_t expect_grid_fits(Device device, const std::string& flag, std::int64_t side,
                                     int dims, std::int64_t bytes_per_point) {
  const std::size_t capacity = memory_stats(device).capacity;
  const auto limit = static_cast<std::int64_t>(
      std::min<std::uint64_t>(capacity == 0 ? INT64_MAX : capacity, INT64_MAX));
  const std::string largest = "use at most " +
                              std::to_string(largest_root(limit / bytes_per_point, dims)) +
                              " points per side here";
  std::int64_t points = 1;
  for (int axis = 0; axis < dims; ++axis) {
    points = size_product(flag + ": the grid's points", {points, side}, largest);
  }
  const std::int64_t bytes =
      size_product(flag + ": the grid's bytes", {points, bytes_per_point}, largest);
  expect_fits_memory(device, bytes,
                     flag + " (" + std::to_string(points) + " points, " +
                         std::to_string(bytes_per_point) + " bytes each)",
                     largest);
  return points;
}

// Runs a program's body and reports what escapes it on stderr, prefixed with the program's
// name, with the exit status of its fault class. A std::bad_alloc (a host allocation outside the
// memory pool) is an out-of-memory report and a std::length_error (a container asked for more
// than it can index) a usage error: neither ends the process with an uncaught exception.
template <class Body>
int run_program(const char* program, Body&& body) {
  try {
    return body();
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return exit_code_for(e.fault_class());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "%s: tenax out_of_memory error: a host allocation outside the memory pool "
                 "failed (std::bad_alloc) -- fix: lower the problem size, free host memory, or "
                 "run on a machine with more\n",
                 program);
    return exit_code_for(FaultClass::out_of_memory);
  } catch (const std::length_error& e) {
    std::fprintf(stderr,
                 "%s: tenax usage error: a size computed from the input is larger than a "
                 "container can hold (%s) -- fix: lower the problem size\n",
                 program, e.what());
    return exit_code_for(FaultClass::usage);
  }
}

}  // namespace tenax::examples
