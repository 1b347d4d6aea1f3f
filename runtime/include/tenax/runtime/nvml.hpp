/// NVML, the NVIDIA driver's management library (what nvidia-smi reads): temperatures,
/// utilisation, power, clocks, throttle reasons and ECC counts of a GPU. It ships with the
/// driver, so it is loaded at run time with dlopen and never linked: tenax starts without a
/// driver, and every reading is optional (a field a device does not support stays empty).
/// @file
/// One Library serves the doctor's health findings and the runner's telemetry; a reading takes a
/// few hundred microseconds of driver calls, so telemetry samples it every few seconds, not every
/// step.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace tenax::runtime::nvml {

/// @name Clock event reasons
/// Bits of NVML's clock event ("throttle") reasons (DeviceReading::throttle_reasons) that mean
/// the GPU runs slower than it could.
///@{
inline constexpr std::uint64_t kSoftwarePowerCap = 0x4;  ///< held to the power limit by the driver
inline constexpr std::uint64_t kHardwareSlowdown = 0x8;  ///< slowed by the hardware (heat, power)
inline constexpr std::uint64_t kSoftwareThermalSlowdown = 0x20;  ///< slowed by the driver: heat
inline constexpr std::uint64_t kHardwareThermalSlowdown = 0x40;  ///< slowed by the hardware: heat
inline constexpr std::uint64_t kHardwarePowerBrake = 0x80;       ///< power brake (external signal)
///@}

/// One GPU as NVML sees it now. Memory in bytes, power in watts, clocks in MHz.
struct DeviceReading {
  std::string name;                                    ///< the product name (empty when unknown)
  std::optional<unsigned> temperature_celsius;         ///< the GPU die's temperature
  std::optional<unsigned> utilization_percent;         ///< compute, over the driver's last sample
  std::optional<unsigned> memory_utilization_percent;  ///< memory controller busy
  std::optional<std::uint64_t> memory_used;            ///< by every process on the device
  std::optional<std::uint64_t> memory_total;           ///< the device's memory
  std::optional<double> power_watts;                   ///< the board's power draw now
  std::optional<unsigned> sm_clock_mhz;                ///< the streaming multiprocessors' clock
  std::optional<std::uint64_t> throttle_reasons;       ///< kSoftwarePowerCap, ... and other bits
  std::optional<bool> ecc_enabled;                     ///< ECC is on now (the current mode)
  std::optional<bool> ecc_pending_change;              ///< a mode change waits for a reboot
  std::optional<std::uint64_t> ecc_corrected;          ///< since the driver loaded
  std::optional<std::uint64_t> ecc_uncorrected;        ///< since the driver loaded
};

/// @name NVML status codes
/// NVML status codes (Library::open()'s `status`, describe()'s argument) that callers explain
/// differently.
///@{
inline constexpr int kSuccess = 0;          ///< NVML_SUCCESS
inline constexpr int kNotSupported = 3;     ///< NVML_ERROR_NOT_SUPPORTED: the device lacks it
inline constexpr int kDriverNotLoaded = 9;  ///< NVML_ERROR_DRIVER_NOT_LOADED: no NVIDIA driver
/// NVML_ERROR_LIB_RM_VERSION_MISMATCH: the library and the kernel driver are of different
/// versions (typically a driver update without a reboot).
inline constexpr int kLibRmVersionMismatch = 18;
///@}

/// NVML loaded and initialised: the owner of the dlopen handle, shut down and unloaded on
/// destruction. Non-copyable. The methods keep no state of their own (NVML's calls are
/// thread-safe).
class Library {
 public:
  /// NVML's device handle (nvmlDevice_t), valid while the Library lives.
  using Device = struct DeviceOpaque*;

  /// Loads libnvidia-ml.so.1 and initialises NVML. nullptr when it cannot: `why` then says why
  /// (the dlopen error, missing functions, or the failed nvmlInit's status in `status`, one of
  /// the codes above or another NVML code; -1 when the library did not load or bind).
  [[nodiscard]] static std::unique_ptr<Library> open(std::string& why, int& status);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  /// The driver's version, e.g. `"550.54.15"`; `"unknown"` when NVML cannot tell.
  [[nodiscard]] std::string driver_version() const;
  /// The GPUs NVML sees (every GPU of the machine, whatever CUDA_VISIBLE_DEVICES says); 0 on
  /// error.
  [[nodiscard]] unsigned device_count() const;
  /// The device of NVML index `index`, in [0, device_count()); nullopt with describe()'s text
  /// in `why` on failure. NVML numbers every GPU, CUDA only the visible ones, so a CUDA device
  /// is found by its PCI bus id instead (by_pci_bus_id()).
  [[nodiscard]] std::optional<Device> by_index(unsigned index, std::string& why) const;
  /// The device of PCI bus id `bus_id` ("0000:3B:00.0", the key CUDA gives); nullopt with
  /// describe()'s text in `why` on failure.
  [[nodiscard]] std::optional<Device> by_pci_bus_id(const std::string& bus_id,
                                                    std::string& why) const;
  /// Everything NVML tells of `device` now; a field whose query fails or is not supported
  /// stays empty. Never throws for NVML errors. A few hundred microseconds of driver calls.
  [[nodiscard]] DeviceReading read(Device device) const;
  /// "NVML error 9: Driver Not Loaded".
  [[nodiscard]] std::string describe(int status) const;

 private:
  struct Functions;
  explicit Library(std::unique_ptr<Functions> functions);
  std::unique_ptr<Functions> functions_;
};

}  // namespace tenax::runtime::nvml
