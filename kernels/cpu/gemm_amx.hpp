// bf16 GEMM on the AMX tiles of x86-64 CPUs that have AMX-BF16 (gemm_amx.cpp, compiled for
// AMX and AVX-512; gemm.cpp calls it where cpu_simd().amx_bf16 says the CPU and the operating
// system run it).
//
// C = alpha op(A) op(B) + beta C with A and B bf16 and C f32 or bf16: every product of two bf16
// values is exact in f32 and the tiles accumulate in f32 (TDPBF16PS), k in ascending blocks of
// 32, so a row of C depends on its own row of op(A) and on op(B) only: not on the number of rows,
// their position or the thread count (the micro-batch and rank independence of bf16 training).
// The order within a block is the instruction's, so the bits differ from the widening path's
// (Eigen's f32 kernels), and from one CPU kind to another as that path's do; bf16 subnormal inputs
// count as zero and subnormal sums flush to zero (the instruction's rule). alpha and beta are
// applied in f32 after the sum: alpha * sum + beta * c, then one rounding to a bf16 C.
#pragma once

#include "tenax/core/context.hpp"
#include "tenax/kernels/detail/linalg_kernels.hpp"

namespace tenax::kernels::cpu {

/// C = alpha op(A) op(B) + beta C on the AMX tiles; A and B bf16, C f32 or bf16 (see above).
/// Only where cpu_simd().amx_bf16.
void amx_gemm_bf16(CpuContext& context, const GemmArgs& g);

}  // namespace tenax::kernels::cpu
