// cpu_simd(): the CPU's extensions, read once, less what TENAX_CPU_SIMD turns off.
#include "tenax/kernels/detail/cpu_simd.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <cstdlib>
#include <optional>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/text.hpp"

namespace tenax::kernels::cpu {
namespace {

#if defined(__x86_64__) && defined(__GNUC__)
// AMX-TILE and AMX-BF16 (CPUID leaf 7: EDX bits 24 and 22), the tile registers enabled by the
// operating system (XCR0 bits 17 and 18), and on Linux the tile data granted to this process: it
// must ask once before its first tile instruction, which would otherwise stop it with SIGILL.
// Asked only where the CPU has AVX-512, which implies XSAVE and so xgetbv.
bool amx_bf16_granted() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  if ((edx & (1U << 24)) == 0 || (edx & (1U << 22)) == 0) return false;
  unsigned xcr0_low = 0, xcr0_high = 0;
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  if ((xcr0_low & (3U << 17)) != (3U << 17)) return false;
#if defined(__linux__)
  constexpr long kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
  constexpr long kTileData = 18;               // XFEATURE_XTILEDATA
  return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
#else
  return false;
#endif
}
#endif

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
  simd.amx_bf16 = simd.avx512 && amx_bf16_granted();
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
