/// Whole-array conversions between float and the 16-bit storage types, for the CPU kernels that
/// widen operands before a product (GEMM) or narrow a result once at the end.
/// @file
/// The bits are those of half.hpp's scalar conversions for every pattern (round to nearest even,
/// NaN kept quiet with sign and payload). On x86-64 CPUs with F16C and AVX2 the f16 conversions
/// run as VCVTPH2PS/VCVTPS2PH with the rounding given in the instruction (so not the MXCSR's
/// rounding mode; the instructions ignore flush-to-zero, and the denormals-are-zero setting only
/// affects float subnormals, which round to a signed zero either way); the bf16 ones and other CPUs
/// use half.hpp's branch-free code, which the compiler vectorises. half_arrays_test checks every
/// f16 pattern and, in its slow case, every float pattern against the scalar functions.
///
/// Single-threaded: callers split arrays over their workers. Which copy runs follows cpu_simd()
/// (UsageError for a bad TENAX_CPU_SIMD). Not a public header.
#pragma once

#include <cstdint>

#include "tenax/core/dtype.hpp"

namespace tenax::kernels::cpu {

void widen_to_float(const Half* in, float* out, std::int64_t count);
void widen_to_float(const BFloat16* in, float* out, std::int64_t count);
void narrow_from_float(const float* in, Half* out, std::int64_t count);
void narrow_from_float(const float* in, BFloat16* out, std::int64_t count);

/// Whether the f16 conversions above use the F16C instructions on this CPU.
[[nodiscard]] bool half_arrays_use_f16c();

}  // namespace tenax::kernels::cpu
