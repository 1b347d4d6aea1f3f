/// Backend kernels of the fused Krylov ops (ops_krylov.hpp), declared once and implemented per
/// backend: tenax::kernels::cpu in kernels/cpu/krylov.cpp, tenax::kernels::cuda in
/// kernels/cuda/krylov.cu (or, in a build without CUDA, by kernels/stub/krylov_stub.cpp, which
/// throws NotCompiledError).
/// @file
/// Kernels trust their arguments: the ops front end (kernels/src/ops_krylov.cpp) has checked
/// devices, dtypes (f64 or f32; i32 or i64 indices), shapes and aliasing, and returned early for
/// empty operands. Not a public header.
#pragma once

#include <span>

#include "tenax/core/context.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/kernels/detail/linalg_kernels.hpp"
#include "tenax/kernels/ops_krylov.hpp"

namespace tenax::kernels {

/// q = A p for a CSR matrix with rows + pair <= cols; returns p[pair, pair + rows).q.
struct SpmvDotArgs {
  CsrMatrix a;
  Tensor p;
  Tensor q;
  std::int64_t pair = 0;
};

/// q = A p for a CSR matrix of any shape, w of rows() entries; returns {w.q, q.q}.
struct SpmvDotsArgs {
  CsrMatrix a;
  Tensor p;
  Tensor q;
  Tensor w;
};

/// grid.out = scale * Laplacian(grid.u); returns u.out. grid.u is p and grid.out is q.
struct StencilDotArgs {
  StencilArgs grid;
  double scale = 1.0;
};

/// x += alpha p; r -= alpha q; returns r.r.
struct CgUpdateArgs {
  double alpha = 0.0;
  Tensor p;
  Tensor q;
  Tensor x;
  Tensor r;
};

/// x += alpha p; r -= alpha q; z = inv_diag r; returns {r.z, r.r}.
struct PcgJacobiArgs {
  double alpha = 0.0;
  Tensor p;
  Tensor q;
  Tensor x;
  Tensor r;
  Tensor inv_diag;
  Tensor z;
};

/// p = z + beta p (p = z, without reading p, when beta == 0).
struct XpayArgs {
  Tensor z;
  double beta = 0.0;
  Tensor p;
};

/// p = r + beta (p - omega v); p_hat = inv_diag p when inv_diag is defined (then p_hat is too).
struct BicgstabDirectionArgs {
  double beta = 0.0;
  double omega = 0.0;
  Tensor r;
  Tensor v;
  Tensor p;
  Tensor inv_diag;
  Tensor p_hat;
};

/// r -= alpha v; z = inv_diag r when inv_diag is defined (then z is too); returns {r.z, r.r}, with
/// rz = rr when there is no inv_diag. (CG's residual update and BiCGSTAB's s, z being s_hat.)
struct ResidualUpdateArgs {
  double alpha = 0.0;
  Tensor v;
  Tensor r;
  Tensor inv_diag;
  Tensor z;
};

/// x += alpha p; then p = z + beta p (p = z when beta == 0).
struct CgAdvanceArgs {
  double alpha = 0.0;
  Tensor p;
  double beta = 0.0;
  Tensor z;
  Tensor x;
};

/// x += alpha p_hat, then x += omega s_hat (s_hat = r on entry when undefined); r -= omega t;
/// returns {r.r, r_hat.r}.
struct BicgstabUpdateArgs {
  double alpha = 0.0;
  double omega = 0.0;
  Tensor p_hat;
  Tensor s_hat;
  Tensor t;
  Tensor r_hat;
  Tensor x;
  Tensor r;
};

}  // namespace tenax::kernels

// X(return type, name, Args) for every kernel; declares each backend and generates the stubs.
#define TENAX_KRYLOV_KERNELS(X)                                 \
  X(double, spmv_dot, SpmvDotArgs)                              \
  X(::tenax::ops::SpmvDots, spmv_dots, SpmvDotsArgs)            \
  X(double, laplacian_5pt_dot, StencilDotArgs)                  \
  X(double, laplacian_7pt_dot, StencilDotArgs)                  \
  X(double, cg_update, CgUpdateArgs)                            \
  X(::tenax::ops::PcgDots, pcg_jacobi_update, PcgJacobiArgs)    \
  X(void, xpay, XpayArgs)                                       \
  X(::tenax::ops::PcgDots, residual_update, ResidualUpdateArgs) \
  X(void, cg_advance, CgAdvanceArgs)                            \
  X(void, bicgstab_direction, BicgstabDirectionArgs)            \
  X(::tenax::ops::BicgstabDots, bicgstab_update, BicgstabUpdateArgs)

#define TENAX_KRYLOV_DECLARE_KERNEL(ret, name, Args) ret name(const ::tenax::kernels::Args& args);
#define TENAX_KRYLOV_DECLARE_CPU_KERNEL_WITH_CONTEXT(ret, name, Args) \
  ret name(::tenax::CpuContext& context, const ::tenax::kernels::Args& args);

/// The CPU backend, the reference. The overloads without a context use CpuContext::instance();
/// results never depend on the context's thread count (bit for bit).
namespace tenax::kernels::cpu {
TENAX_KRYLOV_KERNELS(TENAX_KRYLOV_DECLARE_KERNEL)
TENAX_KRYLOV_KERNELS(TENAX_KRYLOV_DECLARE_CPU_KERNEL_WITH_CONTEXT)
}  // namespace tenax::kernels::cpu

/// The CUDA backend: runs on the tensors' device, ordered on its context's stream. The kernels
/// that return dot products wait for them (they synchronise the stream); xpay, cg_advance and
/// bicgstab_direction do not.
namespace tenax::kernels::cuda {
TENAX_KRYLOV_KERNELS(TENAX_KRYLOV_DECLARE_KERNEL)
}  // namespace tenax::kernels::cuda

/// Classical Gram-Schmidt against the rows of a basis [K, n] (CPU only; the front end runs CUDA
/// tensors through the separate ops). basis_dots fills out[0, K); basis_subtract returns w.w.
namespace tenax::kernels {
struct BasisArgs {
  Tensor basis;
  Tensor w;
};
}  // namespace tenax::kernels
namespace tenax::kernels::cpu {
void basis_dots(CpuContext& context, const BasisArgs& args, std::span<double> out);
double basis_subtract(CpuContext& context, const BasisArgs& args, std::span<const double> h);
}  // namespace tenax::kernels::cpu

#undef TENAX_KRYLOV_DECLARE_KERNEL
#undef TENAX_KRYLOV_DECLARE_CPU_KERNEL_WITH_CONTEXT
