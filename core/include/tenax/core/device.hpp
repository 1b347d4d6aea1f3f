// Where a tensor lives and where a kernel runs: the CPU or one CUDA device.
#pragma once

#include <compare>
#include <string>
#include <string_view>

namespace tenax {

enum class DeviceKind : unsigned char { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;  // CUDA ordinal; always 0 for the CPU

  [[nodiscard]] static constexpr Device cpu() noexcept { return {DeviceKind::cpu, 0}; }
  [[nodiscard]] static constexpr Device cuda(int ordinal = 0) noexcept {
    return {DeviceKind::cuda, ordinal};
  }
  [[nodiscard]] constexpr bool is_cpu() const noexcept { return kind == DeviceKind::cpu; }
  [[nodiscard]] constexpr bool is_cuda() const noexcept { return kind == DeviceKind::cuda; }

  friend constexpr bool operator==(const Device&, const Device&) = default;
  friend constexpr auto operator<=>(const Device&, const Device&) = default;
};

// "cpu" or "cuda:N".
[[nodiscard]] std::string to_string(const Device& device);

// Accepts "cpu", "cuda" (ordinal 0) and "cuda:N"; throws UsageError otherwise.
[[nodiscard]] Device parse_device(std::string_view text);

}  // namespace tenax
