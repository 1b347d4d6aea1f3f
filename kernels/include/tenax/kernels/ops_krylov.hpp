// Fused kernels for Krylov iterations: each reads and writes its vectors once where the
// textbook sequence of BLAS-1 calls would read them two or three times.
//
// A conjugate-gradient iteration is memory-bound. Written with separate calls it moves the
// operator's bytes plus about 96 N bytes for f64 vectors of length N (dot(p, q), two axpy, one
// dot(r, r), one xpay); with these kernels it moves the operator's bytes plus 72 N:
//   q = A p and p.q in one pass          (apply_dot: the operator's bytes, p.q for free)
//   x += a p, r -= a q and r.r in one    (cg_update: reads x p r q, writes x r = 48 N)
//   p = r + b p                          (xpay:      reads r p, writes p       = 24 N)
//
// Reductions follow the fixed order of reduce_bodies.hpp (blocks of 4096 elements, 16 lanes, a
// pairwise tree over the block partials), so every result is bitwise the same on every backend,
// thread count and run, and equal to ops::dot on the same vectors (each term is
// double(a) * double(b), summed in double, for f32 too).
//
// Every vector result is, bit for bit, what the equivalent separate ops store (stated per op
// below). Scalars (alpha, beta, scale) are rounded to the tensors' dtype first, as ops::axpby and
// ops::scale round theirs. alpha and beta are not checked: a NaN or infinite coefficient flows
// into the returned dot products, where the solver's anomaly checks see it.
//
// Arguments are validated like every tenax::ops call (UsageError naming the op, the operands and
// the fix): one device, one dtype (f64 or f32), one shape for all vectors (any rank; they are
// used flattened), stencil grids of the stencil's rank, outputs not overlapping any other
// operand. Empty operands return 0 and touch nothing. On a CUDA device the ops that return dot
// products wait for them (they synchronise the device's stream); xpay is asynchronous. A build
// without CUDA throws NotCompiledError for CUDA tensors. Safe to call from several threads on
// distinct outputs.
#pragma once

#include <cstdint>

#include "tenax/core/tensor.hpp"
#include "tenax/kernels/csr_matrix.hpp"

namespace tenax::ops {

// q = A p for a CSR matrix with rows + pair <= cols (i32 or i64 indices), and returns the dot of
// q with p's entries [pair, pair + rows()). q is only written (it may hold NaN on entry) and
// equals, bit for bit, ops::spmv(a, p, q) (each row summed in storage order); the result equals
// ops::dot(p, q) on that q for a square matrix (pair 0). (A rank's rows of a distributed matrix
// read [ghosts below | local | ghosts above] columns; its rows pair with the local entries.)
[[nodiscard]] double spmv_dot(const CsrMatrix& a, const Tensor& p, const Tensor& q,
                              std::int64_t pair = 0);

// q = scale * L p with L the 5-point (2-D grid [ny, nx]) or 7-point (3-D grid [nz, ny, nx])
// Dirichlet-zero Laplacian of ops::laplacian_5pt / laplacian_7pt (same arithmetic, same
// spacings), and returns p.q over the flattened grid. scale = -1 gives the SPD operator -L.
// The scale multiplies after the stencil sum: q[i] = scale * L(p)[i], with L(p)[i] rounded to
// the dtype first, so q equals, bit for bit, ops::laplacian_5pt(p, q, hy, hx) followed by
// ops::scale(scale, q) (likewise for 7 points). scale must be finite; q is only written.
[[nodiscard]] double laplacian_5pt_dot(const Tensor& p, const Tensor& q, double hy, double hx,
                                       double scale);
[[nodiscard]] double laplacian_7pt_dot(const Tensor& p, const Tensor& q, double hz, double hy,
                                       double hx, double scale);

// x += alpha p; r -= alpha q; returns r.r of the updated r.
// Per element x = x + alpha * p and r = r - alpha * q: the bits of ops::axpby(alpha, p, 1, x)
// and ops::axpby(-alpha, q, 1, r); the result equals ops::dot(r, r) afterwards.
[[nodiscard]] double cg_update(double alpha, const Tensor& p, const Tensor& q, const Tensor& x,
                               const Tensor& r);

// Preconditioned CG with a diagonal (Jacobi) preconditioner:
// x += alpha p; r -= alpha q; z = inv_diag * r; returns {r.z, r.r} of the updated r and z.
// x and r as cg_update; z = inv_diag * r per element (the bits of ops::mul(inv_diag, r), z only
// written); rz equals ops::dot(r, z) and rr ops::dot(r, r) afterwards.
struct PcgDots {
  double rz = 0.0;
  double rr = 0.0;
};
[[nodiscard]] PcgDots pcg_jacobi_update(double alpha, const Tensor& p, const Tensor& q,
                                        const Tensor& x, const Tensor& r, const Tensor& inv_diag,
                                        const Tensor& z);

// p = z + beta p: the bits of ops::axpby(1, z, beta, p). As there, beta == 0 copies z into p
// without reading p (so p may hold NaN on entry: the first CG direction is xpay(r, 0, p)).
void xpay(const Tensor& z, double beta, const Tensor& p);

}  // namespace tenax::ops
