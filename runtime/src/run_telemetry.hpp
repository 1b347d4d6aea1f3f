// The Runner's telemetry (RunnerOptions::telemetry_seconds): a `telemetry` line every interval
// and at each event that asks for one, with the interval's step rate and step times, and the
// warnings the TelemetryMonitor raises from the samples (each an event and a console line).
// One idea: when and what the Runner samples.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "run_console.hpp"
#include "tenax/runtime/event_log.hpp"
#include "tenax/runtime/telemetry.hpp"
#include "tenax/runtime/workload.hpp"

namespace tenax::runtime::detail {

// One committed step's times: the whole step on this rank, its compute (less the waits in
// collectives), and the slowest rank's compute with that rank.
struct StepTimes {
  double seconds = 0;
  double compute_seconds = 0;
  double slowest_compute_seconds = 0;
  int slowest_rank = 0;
};

class RunTelemetry {
 public:
  // `every_seconds` 0: no telemetry at all. The workload gives the device to read.
  RunTelemetry(double every_seconds, int rank, const Workload& workload)
      : every_seconds_(every_seconds), rank_(rank), workload_(workload) {}

  // A telemetry line for `trigger` at `step` and the warnings it starts.
  void record(const std::string& trigger, std::int64_t step, EventLog& events,
              const RunConsole& console);

  // Counts a committed step into the interval; records a line when the interval is over.
  void after_step(const StepTimes& times, std::int64_t step, EventLog& events,
                  const RunConsole& console);

 private:
  double every_seconds_;
  int rank_;
  const Workload& workload_;
  std::optional<DeviceReadings> readings_;  // opened at the first sample
  TelemetryMonitor monitor_;
  std::chrono::steady_clock::time_point started_at_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point sampled_at_ = started_at_;
  std::int64_t interval_steps_ = 0;
  bool sampled_steps_ = false;  // a sample with steps was taken: the warm-up is over
  StepTimes interval_;          // summed over the interval (the slowest rank: the last step's)
};

}  // namespace tenax::runtime::detail
