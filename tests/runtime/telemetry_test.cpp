// The telemetry's pieces: the event-log fields of a sample (GPU fields only where NVML gave
// them), the host's resident memory, and the warnings TelemetryMonitor reads from injected
// readings (throttling, ECC errors, a leak, fragmentation, a slow rank), each said once per
// episode.
#include "tenax/runtime/telemetry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace tenax::runtime {
namespace {

constexpr std::int64_t kMiB = 1 << 20;

std::vector<std::string> kinds(const std::vector<TelemetryWarning>& warnings) {
  std::vector<std::string> out;
  for (const TelemetryWarning& w : warnings) {
    EXPECT_FALSE(w.cause.empty()) << w.kind;
    EXPECT_FALSE(w.fix.empty()) << w.kind;
    out.push_back(w.kind);
  }
  return out;
}

TelemetrySample gpu_sample() {
  TelemetrySample s;
  s.device = Device::cuda(0);
  s.gpu.emplace();
  s.gpu->temperature_celsius = 60;
  s.gpu->throttle_reasons = 0;
  s.gpu->ecc_corrected = 0;
  s.gpu->ecc_uncorrected = 0;
  return s;
}

bool has_field(const std::vector<EventLog::Field>& fields, std::string_view key) {
  return std::any_of(fields.begin(), fields.end(),
                     [&](const EventLog::Field& f) { return f.first == key; });
}

TEST(Telemetry, FieldsHoldThePoolAndHostFiguresAndGpuFieldsOnlyWithReadings) {
  TelemetrySample s;
  s.step = 7;
  s.trigger = "interval";
  s.pool.allocated_bytes.increase(3 * kMiB);
  s.pool.reserved_bytes.increase(4 * kMiB);
  s.host_resident_bytes = 100 * kMiB;
  const std::vector<EventLog::Field> cpu = telemetry_fields(s);
  for (const char* key :
       {"step", "trigger", "steps_per_second", "pool_allocated", "pool_reserved", "pool_peak",
        "pool_largest_free", "pool_fragmentation", "host_rss", "device"}) {
    EXPECT_TRUE(has_field(cpu, key)) << key;
  }
  EXPECT_FALSE(has_field(cpu, "gpu_temperature"));
  const std::string line = EventLog::format("telemetry", cpu, false);
  EXPECT_NE(line.find("\"pool_allocated\":3145728"), std::string::npos) << line;
  EXPECT_NE(line.find("\"host_rss\":104857600"), std::string::npos) << line;

  TelemetrySample g = gpu_sample();
  g.gpu->utilization_percent = 97;
  g.gpu->power_watts = 612.5;
  g.gpu->sm_clock_mhz = 1980;
  g.gpu->memory_used = 80 * kMiB;
  const std::string gpu_line = EventLog::format("telemetry", telemetry_fields(g), false);
  for (const char* text :
       {"\"gpu_temperature\":60", "\"gpu_utilization\":97", "\"gpu_power_watts\":612.5",
        "\"gpu_sm_clock_mhz\":1980", "\"gpu_memory_used\":83886080", "\"gpu_throttle_reasons\":0",
        "\"gpu_ecc_uncorrected\":0"}) {
    EXPECT_NE(gpu_line.find(text), std::string::npos) << text << " in " << gpu_line;
  }
}

TEST(Telemetry, HostResidentMemoryIsThisProcesssSet) {
  const std::int64_t before = host_resident_bytes();
  ASSERT_GT(before, 0);
  std::vector<char> touched(64 * kMiB, 1);
  EXPECT_GE(host_resident_bytes(), before + 32 * kMiB) << static_cast<int>(touched[kMiB]);
}

TEST(Telemetry, AHostDeviceHasNoNvmlReadingsAndSaysWhy) {
  const DeviceReadings readings(Device::cpu());
  EXPECT_FALSE(readings.read().has_value());
  EXPECT_NE(readings.unavailable().find("host device"), std::string::npos);
}

TEST(TelemetryMonitor, ThrottlingIsWarnedWhenItStartsAndAgainOnlyAfterItCleared) {
  TelemetryMonitor monitor;
  TelemetrySample s = gpu_sample();
  EXPECT_TRUE(monitor.observe(s).empty());
  s.gpu->throttle_reasons = nvml::kHardwareThermalSlowdown;
  s.gpu->temperature_celsius = 91;
  const std::vector<TelemetryWarning> hot = monitor.observe(s);
  ASSERT_EQ(kinds(hot), std::vector<std::string>{"thermal_throttle"});
  EXPECT_NE(hot[0].cause.find("91 C"), std::string::npos) << hot[0].cause;
  EXPECT_TRUE(monitor.observe(s).empty());  // still hot: said once
  s.gpu->throttle_reasons = nvml::kSoftwarePowerCap;
  s.gpu->power_watts = 700;
  EXPECT_EQ(kinds(monitor.observe(s)), std::vector<std::string>{"power_throttle"});
  s.gpu->throttle_reasons = nvml::kSoftwareThermalSlowdown | nvml::kHardwareSlowdown;
  EXPECT_EQ(kinds(monitor.observe(s)),
            (std::vector<std::string>{"thermal_throttle", "hardware_slowdown"}));
}

TEST(TelemetryMonitor, RisingEccCountsAreWarned) {
  TelemetryMonitor monitor;
  TelemetrySample s = gpu_sample();
  s.gpu->ecc_corrected = 5;  // counts before the job started are not news
  EXPECT_TRUE(monitor.observe(s).empty());
  s.gpu->ecc_corrected = 9;
  const std::vector<TelemetryWarning> corrected = monitor.observe(s);
  ASSERT_EQ(kinds(corrected), std::vector<std::string>{"ecc_errors"});
  EXPECT_NE(corrected[0].cause.find("from 5 to 9"), std::string::npos) << corrected[0].cause;
  EXPECT_TRUE(monitor.observe(s).empty());
  s.gpu->ecc_uncorrected = 1;
  const std::vector<TelemetryWarning> uncorrected = monitor.observe(s);
  ASSERT_EQ(kinds(uncorrected), std::vector<std::string>{"ecc_errors"});
  EXPECT_NE(uncorrected[0].cause.find("uncorrectable"), std::string::npos);
}

TEST(TelemetryMonitor, SteadyGrowthIsALeakButAPlateauIsNot) {
  TelemetryMonitor monitor;
  TelemetrySample s;
  std::vector<std::string> said;
  // A plateau with noise: never six rises in a row.
  for (int i = 0; i < 20; ++i) {
    s.pool.allocated_bytes.current = (100 + (i % 3)) * kMiB;
    for (const std::string& k : kinds(monitor.observe(s))) said.push_back(k);
  }
  EXPECT_TRUE(said.empty());
  // 100 MiB growing by 4 MiB a sample: warned at the sixth rise, once.
  for (int i = 0; i < 12; ++i) {
    s.pool.allocated_bytes.current = (100 + 4 * i) * kMiB;
    s.step = i;
    const std::vector<TelemetryWarning> w = monitor.observe(s);
    if (!w.empty()) {
      EXPECT_EQ(i, 6);
      EXPECT_NE(w[0].cause.find("100.00 MiB to 124.00 MiB"), std::string::npos) << w[0].cause;
    }
    for (const std::string& k : kinds(w)) said.push_back(k);
  }
  EXPECT_EQ(said, std::vector<std::string>{"memory_growth"});
  // Small steady growth (a few KiB a sample) is below the thresholds.
  TelemetryMonitor quiet;
  for (int i = 0; i < 30; ++i) {
    s.pool.allocated_bytes.current = 100 * kMiB + i * 4096;
    EXPECT_TRUE(quiet.observe(s).empty());
  }
  // The host's resident set is watched the same way.
  TelemetryMonitor host;
  TelemetrySample h;
  said.clear();
  for (int i = 0; i < 8; ++i) {
    h.host_resident_bytes = (200 + 10 * i) * kMiB;
    for (const std::string& k : kinds(host.observe(h))) said.push_back(k);
  }
  EXPECT_EQ(said, std::vector<std::string>{"host_memory_growth"});
}

TEST(TelemetryMonitor, AFragmentedPoolIsWarnedWhenEnoughIsFree) {
  TelemetryMonitor monitor;
  TelemetrySample s;
  s.pool.fragmentation = 0.8;
  s.pool.reserved_unallocated = 8 * kMiB;  // too little free to matter
  EXPECT_TRUE(monitor.observe(s).empty());
  s.pool.reserved_unallocated = 512 * kMiB;
  s.pool.largest_free_block = 100 * kMiB;
  const std::vector<TelemetryWarning> w = monitor.observe(s);
  ASSERT_EQ(kinds(w), std::vector<std::string>{"fragmentation"});
  EXPECT_NE(w[0].cause.find("80% fragmented"), std::string::npos) << w[0].cause;
  EXPECT_NE(w[0].cause.find("100.00 MiB"), std::string::npos) << w[0].cause;
}

TEST(TelemetryMonitor, ARankMuchSlowerThanThisOneIsNamed) {
  TelemetryMonitor monitor;
  TelemetrySample s;
  s.rank = 0;
  s.step_seconds = 0.031;  // this rank waited for rank 3: its step is as long, its compute is not
  s.compute_seconds = 0.010;
  s.slowest_rank = 3;
  s.slowest_compute_seconds = 0.012;  // within 1.5x: load imbalance, not a slow rank
  EXPECT_TRUE(monitor.observe(s).empty());
  s.slowest_compute_seconds = 0.031;
  const std::vector<TelemetryWarning> w = monitor.observe(s);
  ASSERT_EQ(kinds(w), std::vector<std::string>{"slow_rank"});
  EXPECT_NE(w[0].cause.find("rank 3 computes 3.1 times as long"), std::string::npos) << w[0].cause;
  s.slowest_rank = 0;  // this rank is the slowest: nothing to say about others
  EXPECT_TRUE(monitor.observe(s).empty());
}

TEST(TelemetryMonitor, TinyComputeTimesAreNotASlowRankWhateverTheirRatio) {
  TelemetryMonitor monitor;
  TelemetrySample s;
  s.rank = 0;
  s.compute_seconds = 2e-6;  // a step whose work is all in collectives on this rank
  s.slowest_rank = 1;
  s.slowest_compute_seconds = 40e-6;  // 20 times as long, but 38 microseconds
  EXPECT_TRUE(monitor.observe(s).empty());
}

}  // namespace
}  // namespace tenax::runtime
