// Telemetry: what the job's device and host look like over time, as "telemetry" lines in
// RUN_DIR/events.jsonl (the Runner writes one every RunnerOptions::telemetry_seconds and at every
// event that changes the run), and the warnings read from them.
//
// A sample holds, for this rank's device: the memory pool's allocated / reserved / peak bytes,
// its largest free block and fragmentation; the host's resident set; the step rate and step time
// over the interval (this rank's and the slowest rank's); and, for a CUDA device where the
// driver's NVML loads, its utilisation, memory used, temperature, power, SM clock, throttle
// reasons and ECC counts. Each rank logs its own device in its own log.
//
// TelemetryMonitor turns samples into warnings, each with a cause and a fix: a GPU throttling
// for temperature or power, ECC errors rising, memory growing steadily over many samples (a
// leak), a fragmented pool, a rank much slower than this one. A warning is said once when its
// condition starts and again only after the condition has cleared.
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

struct TelemetrySample {
  std::string trigger;              // "interval", "start", "exit", or the event that asked for it
  double wall_seconds = 0;          // since this process started the run
  std::int64_t step = 0;            // the state's step
  double steps_per_second = 0;      // over the interval since the previous sample; 0 without steps
  double step_seconds = 0;          // this rank's mean step time over the interval
  double slowest_step_seconds = 0;  // the slowest rank's mean step time over the interval
  int rank = 0;
  int slowest_rank = 0;                   // the rank slowest in the last step of the interval
  std::int64_t host_resident_bytes = -1;  // -1 when the system does not say
  Device device;
  MemoryStats pool;
  std::optional<nvml::DeviceReading> gpu;  // CUDA devices with NVML only
};

// The sample as event-log fields (keys: step, trigger, wall_seconds, steps_per_second, ...,
// pool_allocated, pool_reserved, pool_peak, pool_largest_free, pool_fragmentation, host_rss,
// and gpu_* where NVML gave them). The values own their text; the keys are literals.
[[nodiscard]] std::vector<EventLog::Field> telemetry_fields(const TelemetrySample& sample);

// This process's resident set in bytes (/proc/self/statm), -1 when it cannot be read.
[[nodiscard]] std::int64_t host_resident_bytes();

// NVML readings of one device for the telemetry: opened once, never throws. Without CUDA, for a
// host device, or where NVML does not load, read() gives nothing and unavailable() says why.
class DeviceReadings {
 public:
  explicit DeviceReadings(Device device);
  ~DeviceReadings();
  DeviceReadings(const DeviceReadings&) = delete;
  DeviceReadings& operator=(const DeviceReadings&) = delete;
  [[nodiscard]] std::optional<nvml::DeviceReading> read() const;
  [[nodiscard]] const std::string& unavailable() const noexcept { return why_; }

 private:
  std::unique_ptr<nvml::Library> library_;
  std::optional<nvml::Library::Device> handle_;
  std::string why_;
};

struct TelemetryThresholds {
  double fragmentation = 0.5;  // pool fragmentation above which a fragmented pool is warned
  std::int64_t fragmentation_min_free = 64LL << 20;  // ... when this much is free in the pool
  int growth_samples = 6;                      // samples in a row each above the one before: a leak
  double growth_fraction = 0.10;               // ... growing by at least this fraction of the first
  std::int64_t growth_min_bytes = 16LL << 20;  // ... and by at least this many bytes
  double slow_rank_ratio = 1.5;                // the slowest rank's step time over this rank's
};

struct TelemetryWarning {
  std::string kind;  // thermal_throttle, power_throttle, hardware_slowdown, ecc_errors,
                     // memory_growth, host_memory_growth, fragmentation, slow_rank
  std::string cause;
  std::string fix;
};

class TelemetryMonitor {
 public:
  explicit TelemetryMonitor(TelemetryThresholds thresholds = {}) : limits_(thresholds) {}
  // The warnings `sample` starts (a condition already warned and not yet cleared is silent).
  [[nodiscard]] std::vector<TelemetryWarning> observe(const TelemetrySample& sample);

 private:
  struct Growth {
    std::int64_t first = 0;
    std::int64_t last = 0;
    int rising = 0;  // samples in a row above the one before
  };
  // Whether `value` extends a steady rise long and large enough to warn.
  [[nodiscard]] bool rises(Growth& growth, std::int64_t value) const;
  // Whether `active` is a condition starting now (and remembers it under `kind`).
  [[nodiscard]] bool starts(const std::string& kind, bool active);

  TelemetryThresholds limits_;
  Growth pool_growth_;
  Growth host_growth_;
  std::optional<std::uint64_t> ecc_corrected_;
  std::optional<std::uint64_t> ecc_uncorrected_;
  std::vector<std::string> active_;
};

}  // namespace tenax::runtime
