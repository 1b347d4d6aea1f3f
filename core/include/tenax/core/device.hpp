/// Where a tensor lives and where a kernel runs: the CPU or one CUDA device. @file
#pragma once

#include <compare>
#include <string>
#include <string_view>

namespace tenax {

/// The kind of processor a Device names.
enum class DeviceKind : unsigned char {
  cpu,  ///< the host: one device per process, run by CpuContext
  cuda  ///< an NVIDIA GPU, numbered by its CUDA ordinal
};

/// A device: a value type (kind plus ordinal) that compares and orders like a pair, so it can key
/// a map. Making one checks nothing: whether a CUDA ordinal exists is checked where it is used
/// (cuda::require_device, cuda::context, select_device).
struct Device {
  DeviceKind kind = DeviceKind::cpu;  ///< CPU (the default) or CUDA
  int index = 0;                      ///< CUDA ordinal; always 0 for the CPU

  /// The CPU device (the same as a default-constructed Device).
  [[nodiscard]] static constexpr Device cpu() noexcept { return {DeviceKind::cpu, 0}; }
  /// CUDA device `ordinal`, as numbered by the CUDA runtime (after CUDA_VISIBLE_DEVICES).
  [[nodiscard]] static constexpr Device cuda(int ordinal = 0) noexcept {
    return {DeviceKind::cuda, ordinal};
  }
  /// @name Kind tests
  ///@{

  /// Whether `kind` is DeviceKind::cpu, respectively DeviceKind::cuda.
  [[nodiscard]] constexpr bool is_cpu() const noexcept { return kind == DeviceKind::cpu; }
  [[nodiscard]] constexpr bool is_cuda() const noexcept { return kind == DeviceKind::cuda; }
  ///@}

  /// @name Comparison
  ///@{

  /// Member-wise, `kind` first, then `index`: the CPU sorts before every CUDA device.
  friend constexpr bool operator==(const Device&, const Device&) = default;
  friend constexpr auto operator<=>(const Device&, const Device&) = default;
  ///@}
};

/// `"cpu"` or `"cuda:N"` with N the ordinal; parse_device() reads it back.
[[nodiscard]] std::string to_string(const Device& device);

/// Accepts `"cpu"`, `"cuda"` (ordinal 0) and `"cuda:N"` with N a whole number >= 0, exactly (no
/// white space, case-sensitive); throws UsageError otherwise. Whether the device exists is not
/// checked here.
[[nodiscard]] Device parse_device(std::string_view text);

}  // namespace tenax
