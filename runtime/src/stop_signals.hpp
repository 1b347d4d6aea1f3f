// The stop signals a job checkpoints on: SIGTERM (Slurm and Kubernetes before pre-emption,
// `kill`), SIGINT (Ctrl-C), SIGUSR1 (Slurm's `--signal=USR1@T` warning) and SIGHUP (a closed
// terminal or a batch system's hang-up). While a StopSignals object lives, each only records
// the signal; the Runner reads it at the next step boundary, the ranks agree on it, and every
// rank finishes the step, checkpoints once and exits with the restart code.
#pragma once

namespace tenax::runtime::detail {

class StopSignals {
 public:
  StopSignals();   // installs the handlers (and forgets a signal recorded before)
  ~StopSignals();  // restores the previous handlers
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first stop signal received since construction, 0 when none.
  [[nodiscard]] static int pending() noexcept;
};

}  // namespace tenax::runtime::detail
