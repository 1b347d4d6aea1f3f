/// Backend kernels of the linear-algebra ops, declared once and implemented per backend:
/// tenax::kernels::cpu in kernels/cpu/, tenax::kernels::cuda in kernels/cuda/ (or, in a build
/// without CUDA, by the stubs in kernels/stub/ that throw NotCompiledError).
/// @file
/// Kernels trust their arguments: the ops front end (kernels/src/ops_linalg.cpp) has already
/// checked devices, dtypes, shapes and aliasing. Not a public header.
#pragma once

#include <cstdint>
#include <vector>

#include "tenax/core/context.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/csr_matrix.hpp"

namespace tenax::kernels {

/// c[m, n] = alpha * op(a) * op(b) + beta * c, all contiguous row-major. op(a) is [m, k] and is
/// a^T when transpose_a (then a is stored [k, m]); likewise b. a and b share one dtype; c has
/// that dtype, or f32 when a and b are f16/bf16. With beta == 0, c is not read.
struct GemmArgs {
  Tensor a;
  Tensor b;
  Tensor c;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  bool transpose_a = false;
  bool transpose_b = false;
  double alpha = 1.0;
  double beta = 0.0;
  /// Optional [n] row in C's dtype added to every row of C (ops::addmm): with it beta is 0 and
  /// C = alpha * op(A) * op(B) + bias, with the bits of C's rows filled with bias followed by the
  /// product with beta = 1. Only the CPU backend takes it.
  Tensor bias;
};

/// y[rows] = alpha * a * x[cols] + beta * y; x, y and a.values() share one dtype (f64 or f32).
struct SpmvArgs {
  CsrMatrix a;
  Tensor x;
  Tensor y;
  double alpha = 1.0;
  double beta = 0.0;
};

/// out = Laplacian(u) on a [nz, ny, nx] grid (nz = 1 and hz unused for the 2-D 5-point form),
/// Dirichlet-zero boundaries, f64 or f32, out not overlapping u.
struct StencilArgs {
  Tensor u;
  Tensor out;
  std::int64_t nz = 1;
  std::int64_t ny = 0;
  std::int64_t nx = 0;
  double hz = 1.0;
  double hy = 1.0;
  double hx = 1.0;
};

/// out[r] = c * L(u)[row_offset + r] + u[row_offset + r] for the `rows` rows of out, u a [ny, nx]
/// grid (see ops::laplacian_5pt_update).
struct StencilUpdateArgs {
  Tensor u;
  Tensor out;
  std::int64_t ny = 0;
  std::int64_t nx = 0;
  std::int64_t row_offset = 0;
  std::int64_t rows = 0;
  double c = 0.0;
  double hy = 1.0;
  double hx = 1.0;
};

}  // namespace tenax::kernels

// X(name, Args) for every kernel; used to declare each backend and to generate the stubs.
#define TENAX_LINALG_KERNELS(X)              \
  X(gemm, GemmArgs)                          \
  X(spmv, SpmvArgs)                          \
  X(laplacian_5pt, StencilArgs)              \
  X(laplacian_5pt_update, StencilUpdateArgs) \
  X(laplacian_7pt, StencilArgs)

#define TENAX_LINALG_DECLARE_KERNEL(name, Args) void name(const ::tenax::kernels::Args& args);
#define TENAX_LINALG_DECLARE_CPU_KERNEL_WITH_CONTEXT(name, Args) \
  void name(::tenax::CpuContext& context, const ::tenax::kernels::Args& args);

/// The CPU backend, the reference. The overloads without a context use CpuContext::instance();
/// results never depend on the context's thread count (bit for bit).
namespace tenax::kernels::cpu {
TENAX_LINALG_KERNELS(TENAX_LINALG_DECLARE_KERNEL)
TENAX_LINALG_KERNELS(TENAX_LINALG_DECLARE_CPU_KERNEL_WITH_CONTEXT)
/// Each product of `products` (checked, non-empty) as gemm computes it: small ones spread over the
/// context's threads, one thread each; larger ones one after the other on every thread.
void gemm_batched(::tenax::CpuContext& context, const std::vector<GemmArgs>& products);
void gemm_batched(const std::vector<GemmArgs>& products);
/// Whether gemm computes each row of C from its own row of op(A) alone, by the same sequence of
/// operations whatever the product's row count (the AMX path: fixed k blocks, no split by m).
[[nodiscard]] bool gemm_rows_independent(DType dtype);
}  // namespace tenax::kernels::cpu

/// The CUDA backend: runs on the tensors' device, ordered on its context's stream.
namespace tenax::kernels::cuda {
TENAX_LINALG_KERNELS(TENAX_LINALG_DECLARE_KERNEL)
}  // namespace tenax::kernels::cuda

#undef TENAX_LINALG_DECLARE_KERNEL
#undef TENAX_LINALG_DECLARE_CPU_KERNEL_WITH_CONTEXT
