#include "tenax/runtime/telemetry.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>

#include "tenax/core/cuda_runtime.hpp"

namespace tenax::runtime {

namespace {

std::int64_t as_int(std::uint64_t value) {
  return static_cast<std::int64_t>(std::min<std::uint64_t>(value, INT64_MAX));
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%%", 100.0 * fraction);
  return text;
}

}  // namespace

std::vector<EventLog::Field> telemetry_fields(const TelemetrySample& s) {
  std::vector<EventLog::Field> f = {
      {"step", s.step},
      {"trigger", s.trigger},
      {"wall_seconds", s.wall_seconds},
      {"steps_per_second", s.steps_per_second},
      {"step_seconds", s.step_seconds},
      {"compute_seconds", s.compute_seconds},
      {"slowest_compute_seconds", s.slowest_compute_seconds},
      {"slowest_rank", std::int64_t{s.slowest_rank}},
      {"rank", std::int64_t{s.rank}},
      {"device", to_string(s.device)},
      {"pool_allocated", as_int(s.pool.allocated_bytes.current)},
      {"pool_reserved", as_int(s.pool.reserved_bytes.current)},
      {"pool_peak", as_int(s.pool.allocated_bytes.peak)},
      {"pool_largest_free", as_int(s.pool.largest_free_block)},
      {"pool_fragmentation", s.pool.fragmentation},
      {"pool_capacity", as_int(s.pool.capacity)},
      {"host_rss", s.host_resident_bytes},
  };
  if (!s.gpu) return f;
  const nvml::DeviceReading& g = *s.gpu;
  auto add = [&](std::string_view key, const auto& value) {
    if (value) f.emplace_back(key, static_cast<std::int64_t>(*value));
  };
  add("gpu_utilization", g.utilization_percent);
  add("gpu_memory_utilization", g.memory_utilization_percent);
  if (g.memory_used) f.emplace_back("gpu_memory_used", as_int(*g.memory_used));
  if (g.memory_total) f.emplace_back("gpu_memory_total", as_int(*g.memory_total));
  add("gpu_temperature", g.temperature_celsius);
  if (g.power_watts) f.emplace_back("gpu_power_watts", *g.power_watts);
  add("gpu_sm_clock_mhz", g.sm_clock_mhz);
  if (g.throttle_reasons) f.emplace_back("gpu_throttle_reasons", as_int(*g.throttle_reasons));
  if (g.ecc_corrected) f.emplace_back("gpu_ecc_corrected", as_int(*g.ecc_corrected));
  if (g.ecc_uncorrected) f.emplace_back("gpu_ecc_uncorrected", as_int(*g.ecc_uncorrected));
  return f;
}

std::int64_t host_resident_bytes() {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return -1;
  long long size = 0;
  long long resident = 0;
  const int read = std::fscanf(statm, "%lld %lld", &size, &resident);
  std::fclose(statm);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (read != 2 || page <= 0) return -1;
  return resident * page;
}

DeviceReadings::DeviceReadings(Device device) {
  if (!device.is_cuda()) {
    why_ = "a host device has no NVML readings";
    return;
  }
  try {
    const cuda::DeviceProperties properties = cuda::device_properties(device.index);
    int status = 0;
    library_ = nvml::Library::open(why_, status);
    if (library_ == nullptr) return;
    handle_ = library_->by_pci_bus_id(properties.pci_bus_id, why_);
    if (!handle_) library_.reset();
  } catch (const std::exception& e) {
    why_ = e.what();
    library_.reset();
  }
}

DeviceReadings::~DeviceReadings() = default;

std::optional<nvml::DeviceReading> DeviceReadings::read() const {
  if (library_ == nullptr || !handle_) return std::nullopt;
  return library_->read(*handle_);
}

bool TelemetryMonitor::rises(Growth& growth, std::int64_t value) const {
  if (value <= 0) return false;
  if (growth.last > 0 && value > growth.last) {
    if (growth.rising == 0) growth.first = growth.last;
    ++growth.rising;
  } else {
    growth.rising = 0;
  }
  growth.last = value;
  const std::int64_t grown = value - growth.first;
  return growth.rising >= limits_.growth_samples && grown >= limits_.growth_min_bytes &&
         static_cast<double>(grown) >= limits_.growth_fraction * static_cast<double>(growth.first);
}

bool TelemetryMonitor::starts(const std::string& kind, bool active) {
  const auto known = std::find(active_.begin(), active_.end(), kind);
  if (!active) {
    if (known != active_.end()) active_.erase(known);
    return false;
  }
  if (known != active_.end()) return false;
  active_.push_back(kind);
  return true;
}

std::vector<TelemetryWarning> TelemetryMonitor::observe(const TelemetrySample& s) {
  std::vector<TelemetryWarning> out;
  const std::string where =
      to_string(s.device) + (s.rank > 0 ? " of rank " + std::to_string(s.rank) : "");
  if (s.gpu && s.gpu->throttle_reasons) {
    const std::uint64_t bits = *s.gpu->throttle_reasons;
    const std::string heat = s.gpu->temperature_celsius
                                 ? " at " + std::to_string(*s.gpu->temperature_celsius) + " C"
                                 : std::string();
    if (starts("thermal_throttle",
               (bits & (nvml::kSoftwareThermalSlowdown | nvml::kHardwareThermalSlowdown)) != 0)) {
      out.push_back({"thermal_throttle",
                     where + " is slowing its clocks for temperature" + heat +
                         ": steps take longer until it cools",
                     "check the node's cooling and airflow (nvidia-smi -q -d "
                     "PERFORMANCE,TEMPERATURE); move the job if it persists"});
    }
    if (starts("power_throttle",
               (bits & (nvml::kSoftwarePowerCap | nvml::kHardwarePowerBrake)) != 0)) {
      out.push_back({"power_throttle",
                     where + " is slowing its clocks at its power limit" +
                         (s.gpu->power_watts
                              ? " (" + std::to_string(static_cast<int>(*s.gpu->power_watts)) + " W)"
                              : std::string()),
                     "check the power cap (nvidia-smi -q -d POWER) and the node's power supply"});
    }
    if (starts("hardware_slowdown", (bits & nvml::kHardwareSlowdown) != 0)) {
      out.push_back({"hardware_slowdown",
                     where + " reports a hardware slowdown (temperature, power brake or a "
                             "failing supply)",
                     "have the node checked: nvidia-smi -q -d PERFORMANCE names the cause"});
    }
  }
  if (s.gpu) {
    const auto rose = [](const std::optional<std::uint64_t>& before,
                         const std::optional<std::uint64_t>& now) {
      return now && *now > before.value_or(0);
    };
    const bool uncorrected = rose(ecc_uncorrected_, s.gpu->ecc_uncorrected);
    const bool corrected = ecc_corrected_ && rose(ecc_corrected_, s.gpu->ecc_corrected);
    if (uncorrected) {
      out.push_back({"ecc_errors",
                     where + " has " + std::to_string(*s.gpu->ecc_uncorrected) +
                         " uncorrectable ECC memory error(s) since the driver loaded: its results "
                         "cannot be trusted and a device fault is likely",
                     "drain the node and have the GPU checked (nvidia-smi -q -d "
                     "ECC,PAGE_RETIREMENT); the job resumes elsewhere from its checkpoint"});
    } else if (corrected) {
      out.push_back({"ecc_errors",
                     where + "'s corrected ECC errors rose from " +
                         std::to_string(*ecc_corrected_) + " to " +
                         std::to_string(*s.gpu->ecc_corrected) +
                         ": the memory is degrading, results are still correct",
                     "schedule the GPU for a check (nvidia-smi -q -d ECC,PAGE_RETIREMENT)"});
    }
    if (s.gpu->ecc_uncorrected) ecc_uncorrected_ = s.gpu->ecc_uncorrected;
    if (s.gpu->ecc_corrected) ecc_corrected_ = s.gpu->ecc_corrected;
  }
  const auto allocated = as_int(s.pool.allocated_bytes.current);
  if (starts("memory_growth", rises(pool_growth_, allocated))) {
    out.push_back({"memory_growth",
                   "memory allocated on " + where + " rose in each of the last " +
                       std::to_string(pool_growth_.rising) + " samples, from " +
                       format_bytes(static_cast<std::size_t>(pool_growth_.first)) + " to " +
                       format_bytes(static_cast<std::size_t>(allocated)) + " at step " +
                       std::to_string(s.step) + ": a leak will end in an out-of-memory error",
                   "look for tensors kept across steps (a growing history, a cache); the "
                   "memory summary in the run directory after an OOM lists them by tag"});
  }
  if (starts("host_memory_growth", rises(host_growth_, s.host_resident_bytes))) {
    out.push_back({"host_memory_growth",
                   "the process's resident memory rose in each of the last " +
                       std::to_string(host_growth_.rising) + " samples, from " +
                       format_bytes(static_cast<std::size_t>(host_growth_.first)) + " to " +
                       format_bytes(static_cast<std::size_t>(s.host_resident_bytes)) +
                       ": a host leak will end with the kernel's OOM killer",
                   "look for host buffers kept across steps (logs, histories, caches)"});
  }
  const bool fragmented = s.pool.fragmentation > limits_.fragmentation &&
                          as_int(s.pool.reserved_unallocated) >= limits_.fragmentation_min_free;
  if (starts("fragmentation", fragmented)) {
    out.push_back({"fragmentation",
                   "the pool of " + where + " is " + percent(s.pool.fragmentation) +
                       " fragmented: " + format_bytes(s.pool.reserved_unallocated) +
                       " free, but its largest block is " +
                       format_bytes(s.pool.largest_free_block) +
                       ", so a large request may fail although memory is free",
                   "allocate the large, long-lived tensors first and reuse them across steps; "
                   "an out-of-memory retry empties the cache, which defragments it"});
  }
  // Compute, not waits: a rank that waits for a slow peer would otherwise look as slow as it. A
  // difference below slow_rank_min_seconds is noise, whatever the ratio of two tiny times; so is
  // the first interval of a process (seen: 2.6x between two ranks of equal work on a loaded
  // 2-core machine, from one rank's first steps).
  const bool slow = !s.warm_up && s.slowest_rank != s.rank && s.compute_seconds > 0 &&
                    s.slowest_compute_seconds > limits_.slow_rank_ratio * s.compute_seconds &&
                    s.slowest_compute_seconds - s.compute_seconds > limits_.slow_rank_min_seconds;
  if (starts("slow_rank", slow)) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.1f", s.slowest_compute_seconds / s.compute_seconds);
    out.push_back({"slow_rank",
                   "rank " + std::to_string(s.slowest_rank) + " computes " + ratio +
                       " times as long per step as rank " + std::to_string(s.rank) +
                       ": every rank waits for it",
                   "check that rank's node (tenax doctor there: a throttling GPU, another job, "
                   "a slower link) or balance the work"});
  }
  return out;
}

}  // namespace tenax::runtime
