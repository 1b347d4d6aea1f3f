/// Telemetry: what the job's device and host look like over time, as "telemetry" lines in
/// RUN_DIR/events.jsonl (the Runner writes one every RunnerOptions::telemetry_seconds and at every
/// event that changes the run), and the warnings read from them.
/// @file
/// A sample holds, for this rank's device: the memory pool's allocated / reserved / peak bytes,
/// its largest free block and fragmentation; the host's resident set; the step rate and step time
/// over the interval (this rank's and the slowest rank's); and, for a CUDA device where the
/// driver's NVML loads, its utilisation, memory used, temperature, power, SM clock, throttle
/// reasons and ECC counts. Each rank logs its own device in its own log.
///
/// TelemetryMonitor turns samples into warnings, each with a cause and a fix: a GPU throttling
/// for temperature or power, ECC errors rising, memory growing steadily over many samples (a
/// leak), a fragmented pool, a rank much slower than this one. A warning is said once when its
/// condition starts and again only after the condition has cleared; ECC errors are warned at
/// every rise of the counts.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tenax/core/device.hpp"
#include "tenax/core/memory/memory_stats.hpp"
#include "tenax/runtime/event_log.hpp"
#include "tenax/runtime/nvml.hpp"

namespace tenax::runtime {

/// One telemetry reading of this rank (a `"telemetry"` line: telemetry_fields()). Sizes in bytes,
/// times in seconds.
struct TelemetrySample {
  std::string trigger;      ///< "interval", "started", "resumed", "exit", or the event that asked
  double wall_seconds = 0;  ///< since this process started the run
  std::int64_t step = 0;    ///< the state's step
  double steps_per_second = 0;  ///< over the interval since the previous sample; 0 without steps
  double step_seconds = 0;      ///< this rank's mean step time over the interval
  /// This rank's mean compute time per step over the interval: the step time less the waits in
  /// collectives (the slow-rank warning compares it across ranks).
  double compute_seconds = 0;
  double slowest_compute_seconds = 0;  ///< the slowest rank's mean compute time over the interval
  int rank = 0;                        ///< this process's rank
  int slowest_rank = 0;                ///< the rank slowest in the last step of the interval
  /// The interval holds the first steps of this process (first touches of memory, first
  /// checkpoint): too few and too uneven for the slow-rank comparison, which skips it.
  bool warm_up = false;
  std::int64_t host_resident_bytes = -1;   ///< -1 when the system does not say
  Device device;                           ///< the workload's device
  MemoryStats pool;                        ///< the device's memory pool (memory_stats())
  std::optional<nvml::DeviceReading> gpu;  ///< CUDA devices with NVML only
};

/// The sample as event-log fields (keys: step, trigger, wall_seconds, steps_per_second, ...,
/// pool_allocated, pool_reserved, pool_peak, pool_largest_free, pool_fragmentation, host_rss,
/// and gpu_* where NVML gave them). The values own their text; the keys are literals.
[[nodiscard]] std::vector<EventLog::Field> telemetry_fields(const TelemetrySample& sample);

/// This process's resident set in bytes (/proc/self/statm), -1 when it cannot be read.
[[nodiscard]] std::int64_t host_resident_bytes();

/// NVML readings of one device for the telemetry: opened once, never throws. Without CUDA, for a
/// host device, or where NVML does not load, read() gives nothing and unavailable() says why.
class DeviceReadings {
 public:
  /// Opens NVML and finds `device` in it by its PCI bus id (CUDA and NVML number GPUs
  /// differently); keeps the library open while alive. Never throws: a failure is kept for
  /// unavailable().
  explicit DeviceReadings(Device device);
  ~DeviceReadings();
  DeviceReadings(const DeviceReadings&) = delete;
  DeviceReadings& operator=(const DeviceReadings&) = delete;
  /// The device's readings now (nvml::Library::read()), or nullopt when NVML is unavailable.
  [[nodiscard]] std::optional<nvml::DeviceReading> read() const;
  /// Why read() gives nothing (empty when NVML serves the device).
  [[nodiscard]] const std::string& unavailable() const noexcept { return why_; }

 private:
  std::unique_ptr<nvml::Library> library_;
  std::optional<nvml::Library::Device> handle_;
  std::string why_;
};

/// When TelemetryMonitor warns.
struct TelemetryThresholds {
  /// A pool is fragmented above this MemoryStats::fragmentation (a fraction in [0, 1])...
  double fragmentation = 0.5;
  /// ... when at least this many bytes are reserved but unallocated in it (64 MiB).
  std::int64_t fragmentation_min_free = 64LL << 20;
  /// Memory (the pool's allocated bytes, the host's resident set) leaks when it rose in this
  /// many samples in a row...
  int growth_samples = 6;
  /// ... by at least this fraction of the value before the rise...
  double growth_fraction = 0.10;
  /// ... and by at least this many bytes (16 MiB).
  std::int64_t growth_min_bytes = 16LL << 20;
  /// Another rank is slow when its mean compute time per step (TelemetrySample::compute_seconds)
  /// exceeds this rank's by this factor...
  double slow_rank_ratio = 1.5;
  /// ... and by at least this many seconds (two tiny times differ by large ratios).
  double slow_rank_min_seconds = 1e-3;
};

/// A condition a sample showed; the Runner logs it as a `"warning"` event and a console line.
struct TelemetryWarning {
  std::string kind;   ///< thermal_throttle, power_throttle, hardware_slowdown, ecc_errors,
                      ///< memory_growth, host_memory_growth, fragmentation, slow_rank
  std::string cause;  ///< what was seen, on which device or rank, with the numbers
  std::string fix;    ///< what to do about it
};

/// Reads successive samples of one rank and says which warnings they start (see the file). Keeps
/// the state of each condition between samples; not thread-safe.
class TelemetryMonitor {
 public:
  /// A monitor with no condition active yet.
  explicit TelemetryMonitor(TelemetryThresholds thresholds = {}) : limits_(thresholds) {}
  /// The warnings `sample` starts (a condition already warned and not yet cleared is silent;
  /// ECC errors warn at every rise).
  [[nodiscard]] std::vector<TelemetryWarning> observe(const TelemetrySample& sample);

 private:
  struct Growth {
    std::int64_t first = 0;
    std::int64_t last = 0;
    int rising = 0;  ///< samples in a row above the one before
  };
  /// Whether `value` extends a steady rise long and large enough to warn.
  [[nodiscard]] bool rises(Growth& growth, std::int64_t value) const;
  /// Whether `active` is a condition starting now (and remembers it under `kind`).
  [[nodiscard]] bool starts(const std::string& kind, bool active);

  TelemetryThresholds limits_;
  Growth pool_growth_;
  Growth host_growth_;
  std::optional<std::uint64_t> ecc_corrected_;
  std::optional<std::uint64_t> ecc_uncorrected_;
  std::vector<std::string> active_;
};

}  // namespace tenax::runtime
