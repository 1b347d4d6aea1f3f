// cpu_simd(): the CPU's extensions, read once, less what TENAX_CPU_SIMD turns off.
#include "tenax/kernels/detail/cpu_simd.hpp"

#include <cstdlib>
#include <optional>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/text.hpp"

namespace tenax::kernels::cpu {
namespace {

CpuSimd native_simd() {
  CpuSimd simd;
#if defined(__x86_64__) && defined(__GNUC__)
  simd.avx2 = __builtin_cpu_supports("avx2") != 0;
  simd.fma = simd.avx2 && __builtin_cpu_supports("fma") != 0;
  simd.f16c = simd.avx2 && __builtin_cpu_supports("f16c") != 0;
  // libgcc sets the AVX-512 features only where XCR0 says the kernel saves the wider registers.
  simd.avx512 = simd.avx2 && __builtin_cpu_supports("avx512f") != 0 &&
                __builtin_cpu_supports("avx512vl") != 0 &&
                __builtin_cpu_supports("avx512dq") != 0 && __builtin_cpu_supports("avx512bw") != 0;
#endif
  return simd;
}

struct SimdSetting {
  std::optional<CpuSimd> simd;  // nullopt when TENAX_CPU_SIMD is not a setting
  std::string value;            // TENAX_CPU_SIMD as given
};

SimdSetting simd_from_environment() {
  const char* value = std::getenv("TENAX_CPU_SIMD");
  if (value == nullptr) return {native_simd(), {}};
  const std::string setting = lower(trim(value));
  if (setting.empty() || setting == "native") return {native_simd(), value};
  if (setting == "baseline") return {CpuSimd{}, value};
  return {std::nullopt, value};
}

}  // namespace

const CpuSimd& cpu_simd() {
  static const SimdSetting setting = simd_from_environment();
  if (!setting.simd) {
    throw UsageError("TENAX_CPU_SIMD='" + setting.value + "' is not a setting",
                     "set TENAX_CPU_SIMD to native (the default: the extensions this CPU has) or "
                     "baseline (baseline x86-64 code only), or unset it");
  }
  return *setting.simd;
}

}  // namespace tenax::kernels::cpu
