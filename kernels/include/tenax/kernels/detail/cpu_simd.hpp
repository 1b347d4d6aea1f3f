/// The instruction-set extensions the CPU kernels pick at run time. @file
///
/// The library is compiled for baseline x86-64; the kernels that gain from wider vectors carry a
/// second copy compiled for AVX2 (element-wise bodies, the sparse products, the f16 conversions
/// with F16C, Eigen's GEMM with AVX2 and FMA) and choose per call; Eigen's GEMM and the grid
/// sweeps of grid_kernel.hpp carry a third for AVX-512 (the sweeps: whole 64-byte lines per
/// store); bf16 GEMM runs on AMX tiles where the CPU has them. Every copy but the GEMMs gives the
/// same bits (lane-wise IEEE operations, no contraction); GEMM with FMA rounds once per
/// multiply-add, and on AMX sums in the instruction's order.
///
/// TENAX_CPU_SIMD=baseline runs every kernel's baseline copy, as on a CPU without the extensions:
/// to rule a vector path out, or to test the baseline copies on a CPU that has AVX2. Unset, empty
/// or `native`: what the CPU has. Not a public header.
#pragma once

namespace tenax::kernels::cpu {

struct CpuSimd {
  bool avx2 = false;  ///< AVX2 (and the AVX it implies)
  bool fma = false;   ///< FMA3 (only with avx2)
  bool f16c = false;  ///< F16C (only with avx2)
  /// AVX-512 F, VL, DQ and BW with the operating system's support for the wider registers (only
  /// with avx2)
  bool avx512 = false;
  /// AMX tiles with bf16 dot products (TDPBF16PS), the operating system having granted this
  /// process the tile state (Linux asks for it once, through arch_prctl); only with avx512.
  /// bf16 GEMMs run on the tiles (gemm_amx.hpp), with the bits of that path.
  bool amx_bf16 = false;
};

/// What the CPU has, less what TENAX_CPU_SIMD turns off; read once. Throws UsageError for a
/// TENAX_CPU_SIMD other than baseline or native (at every call, so the first kernel that asks
/// reports it).
[[nodiscard]] const CpuSimd& cpu_simd();

}  // namespace tenax::kernels::cpu
