// cpu_simd(): what the CPU has, less what TENAX_CPU_SIMD turns off. CTest runs this program as it
// is and again with TENAX_CPU_SIMD=baseline and with a bad value (tests/CMakeLists.txt); each
// case checks the setting its environment asks for.
#include "tenax/kernels/detail/cpu_simd.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax {
namespace {

std::string simd_setting() {
  const char* value = std::getenv("TENAX_CPU_SIMD");
  return value == nullptr ? std::string() : std::string(value);
}

TEST(CpuSimd, FollowsTheEnvironment) {
  const std::string setting = simd_setting();
  if (setting.empty() || setting == "native") {
    const kernels::cpu::CpuSimd& simd = kernels::cpu::cpu_simd();
#if defined(__x86_64__) && defined(__GNUC__)
    EXPECT_EQ(simd.avx2, __builtin_cpu_supports("avx2") != 0);
    EXPECT_EQ(simd.fma, simd.avx2 && __builtin_cpu_supports("fma") != 0);
    EXPECT_EQ(simd.f16c, simd.avx2 && __builtin_cpu_supports("f16c") != 0);
    EXPECT_EQ(simd.avx512, simd.avx2 && __builtin_cpu_supports("avx512f") != 0 &&
                               __builtin_cpu_supports("avx512vl") != 0 &&
                               __builtin_cpu_supports("avx512dq") != 0 &&
                               __builtin_cpu_supports("avx512bw") != 0);
    // AMX also needs the operating system's grant, which a CPU flag does not show: the CPU
    // must at least have it.
    if (simd.amx_bf16) {
      EXPECT_TRUE(simd.avx512);
      EXPECT_NE(__builtin_cpu_supports("amx-bf16"), 0);
      EXPECT_NE(__builtin_cpu_supports("amx-tile"), 0);
    } else if (simd.avx512 && __builtin_cpu_supports("amx-bf16") != 0) {
      std::cout << "this CPU has AMX-BF16 but the operating system did not grant the tile state\n";
    }
#else
    EXPECT_FALSE(simd.avx2);
#endif
  } else if (setting == "baseline") {
    const kernels::cpu::CpuSimd& simd = kernels::cpu::cpu_simd();
    EXPECT_FALSE(simd.avx2);
    EXPECT_FALSE(simd.fma);
    EXPECT_FALSE(simd.f16c);
    EXPECT_FALSE(simd.avx512);
    EXPECT_FALSE(simd.amx_bf16);
  } else {
    // Not a setting: every call says so, naming the value and the fix.
    for (int call = 0; call < 2; ++call) {
      try {
        (void)kernels::cpu::cpu_simd();
        ADD_FAILURE() << "TENAX_CPU_SIMD='" << setting << "' was accepted";
      } catch (const UsageError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("TENAX_CPU_SIMD='" + setting + "'"), std::string::npos) << message;
        EXPECT_NE(message.find("native"), std::string::npos) << message;
        EXPECT_NE(message.find("baseline"), std::string::npos) << message;
      }
    }
  }
}

TEST(CpuSimd, AnOpReportsABadSettingAsAUsageError) {
  // The ops that dispatch on the CPU's extensions surface a bad setting instead of guessing.
  const std::string setting = simd_setting();
  const Tensor x = Tensor::empty({1 << 16}, DType::f32);  // values do not matter
  if (setting.empty() || setting == "native" || setting == "baseline") {
    EXPECT_NO_THROW(ops::scale(2.0, x));
  } else {
    EXPECT_THROW(ops::scale(2.0, x), UsageError);
  }
}

}  // namespace
}  // namespace tenax
