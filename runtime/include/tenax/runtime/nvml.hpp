// NVML, the NVIDIA driver's management library (what nvidia-smi reads): temperatures,
// utilisation, power, clocks, throttle reasons and ECC counts of a GPU. It ships with the
// driver, so it is loaded at run time with dlopen and never linked: tenax starts without a
// driver, and every reading is optional (a field a device does not support stays empty).
//
// One Library serves the doctor's health findings and the runner's telemetry; a reading takes a
// few hundred microseconds of driver calls, so telemetry samples it every few seconds, not every
// step.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace tenax::runtime::nvml {

// Bits of NVML's clock event ("throttle") reasons that mean the GPU runs slower than it could.
inline constexpr std::uint64_t kSoftwarePowerCap = 0x4;
inline constexpr std::uint64_t kHardwareSlowdown = 0x8;
inline constexpr std::uint64_t kSoftwareThermalSlowdown = 0x20;
inline constexpr std::uint64_t kHardwareThermalSlowdown = 0x40;
inline constexpr std::uint64_t kHardwarePowerBrake = 0x80;

// One GPU as NVML sees it now. Memory in bytes, power in watts, clocks in MHz.
struct DeviceReading {
  std::string name;
  std::optional<unsigned> temperature_celsius;
  std::optional<unsigned> utilization_percent;         // compute, over the driver's last sample
  std::optional<unsigned> memory_utilization_percent;  // memory controller busy
  std::optional<std::uint64_t> memory_used;            // by every process on the device
  std::optional<std::uint64_t> memory_total;
  std::optional<double> power_watts;
  std::optional<unsigned> sm_clock_mhz;
  std::optional<std::uint64_t> throttle_reasons;  // the bits above, and others
  std::optional<bool> ecc_enabled;
  std::optional<bool> ecc_pending_change;        // a mode change waits for a reboot
  std::optional<std::uint64_t> ecc_corrected;    // since the driver loaded
  std::optional<std::uint64_t> ecc_uncorrected;  // since the driver loaded
};

// NVML status codes that the callers explain differently.
inline constexpr int kSuccess = 0;
inline constexpr int kNotSupported = 3;
inline constexpr int kDriverNotLoaded = 9;
inline constexpr int kLibRmVersionMismatch = 18;

class Library {
 public:
  using Device = struct DeviceOpaque*;

  // Loads libnvidia-ml.so.1 and initialises NVML. nullptr when it cannot: `why` then says why
  // (the dlopen error, missing functions, or the failed nvmlInit's status in `status`, one of
  // the codes above or another NVML code; -1 when the library did not load or bind).
  [[nodiscard]] static std::unique_ptr<Library> open(std::string& why, int& status);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  [[nodiscard]] std::string driver_version() const;
  [[nodiscard]] unsigned device_count() const;
  // A device by NVML index or by PCI bus id ("0000:3B:00.0", the key CUDA gives:
  // NVML numbers every GPU, CUDA only the visible ones); nullopt with `why` on failure.
  [[nodiscard]] std::optional<Device> by_index(unsigned index, std::string& why) const;
  [[nodiscard]] std::optional<Device> by_pci_bus_id(const std::string& bus_id,
                                                    std::string& why) const;
  [[nodiscard]] DeviceReading read(Device device) const;
  // "NVML error 9: Driver Not Loaded".
  [[nodiscard]] std::string describe(int status) const;

 private:
  struct Functions;
  explicit Library(std::unique_ptr<Functions> functions);
  std::unique_ptr<Functions> functions_;
};

}  // namespace tenax::runtime::nvml
