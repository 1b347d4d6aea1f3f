/// Fused kernels for Krylov iterations: each reads and writes its vectors once where the
/// textbook sequence of BLAS-1 calls would read them two or three times.
/// @file
/// A conjugate-gradient iteration is memory-bound. Written with separate calls it moves the
/// operator's bytes plus about 96 N bytes for f64 vectors of length N (dot(p, q), two axpy, one
/// dot(r, r), one xpay); with these kernels it moves the operator's bytes plus 64 N:
/// ```
/// q = A p and p.q in one pass          (apply_dot: the operator's bytes, p.q for free)
/// r -= a q and r.r in one              (cg_residual: reads r q, writes r         = 24 N)
/// x += a p, then p = r + b p           (cg_advance:  reads x p r, writes x p     = 40 N)
/// ```
/// The x update waits for the next direction so that both read p in one pass (cg_update and xpay
/// do the same work in 72 N; with Jacobi cg_residual also writes z: 80 N against 88 N).
///
/// A BiCGSTAB iteration with separate calls makes about 27 passes over its vectors besides the two
/// products (33 with a Jacobi preconditioner); with these kernels 16 (21):
/// ```
/// p = r + b (p - w v) [, p^ = D p]     (bicgstab_direction: 4 passes [6])
/// v = A p^ and r^.v in one pass        (spmv_dots: the operator's bytes and r^ read)
/// s = r - a v, s.s [, s^ = D s]        (bicgstab_residual: 3 passes [5])
/// t = A s^, s.t and t.t in one pass    (spmv_dots: the operator's bytes and s read)
/// x += a p^ + w s^, r = s - w t, r.r and r^.r of the next iteration in one
///                                      (bicgstab_update: 7 passes [8])
/// ```
///
/// Reductions follow the fixed order of reduction_order.hpp (blocks of 4096 elements, 16 lanes,
/// a pairwise tree over the block partials), so every result is bitwise the same on every
/// backend, thread count and run, and equal to ops::dot on the same vectors (each term is
/// double(a) * double(b), summed in double, for f32 too). Inside a ShardedReductionScope every
/// returned dot product is the global one over all ranks' shards (sharded_reduction.hpp).
///
/// Every vector result is, bit for bit, what the equivalent separate ops store (stated per op
/// below). Scalars (alpha, beta, scale) are rounded to the tensors' dtype first, as ops::axpby and
/// ops::scale round theirs. alpha and beta are not checked: a NaN or infinite coefficient flows
/// into the returned dot products, where the solver's anomaly checks see it.
///
/// Arguments are validated like every tenax::ops call (UsageError naming the op, the operands and
/// the fix): one device, one dtype (f64 or f32), one shape for all vectors (any rank; they are
/// used flattened), stencil grids of the stencil's rank, outputs not overlapping any other
/// operand. Empty operands return 0 and touch nothing. On a CUDA device the ops that return dot
/// products wait for them (they synchronise the device's stream); the ones that return nothing
/// (xpay, cg_advance, bicgstab_direction) are asynchronous. A build without CUDA throws
/// NotCompiledError for CUDA tensors. Safe to call from several threads on distinct outputs.
#pragma once

#include <cstdint>
#include <span>

#include "tenax/core/tensor.hpp"
#include "tenax/kernels/csr_matrix.hpp"

namespace tenax::ops {

/// q = A p for a CSR matrix with rows + pair <= cols (i32 or i64 indices), and returns the dot of
/// q with p's entries [pair, pair + rows()). q is only written (it may hold NaN on entry) and
/// equals, bit for bit, ops::spmv(a, p, q) (each row summed in storage order); the result equals
/// ops::dot(p, q) on that q for a square matrix (pair 0). p is 1-D with cols() entries and q 1-D
/// with rows() entries, both of a's dtype and device; q must not overlap p or a's tensors. (A
/// rank's rows of a distributed matrix read `[ghosts below | local | ghosts above]` columns; its
/// rows pair with the local entries.) UsageError when rows() + pair > cols() or pair < 0.
[[nodiscard]] double spmv_dot(const CsrMatrix& a, const Tensor& p, const Tensor& q,
                              std::int64_t pair = 0);

/// The two dot products spmv_dots returns.
struct SpmvDots {
  double wq = 0.0;  ///< w.q, the bits of ops::dot(w, q)
  double qq = 0.0;  ///< q.q, the bits of ops::dot(q, q)
};
/// q = A p for a CSR matrix of any shape (i32 or i64 indices), and returns {w.q, q.q}: w is a
/// vector of rows() entries that is only read (it may be p itself for a square matrix, or any
/// other vector; it must not overlap q). q equals, bit for bit, ops::spmv(a, p, q); wq equals
/// ops::dot(w, q) and qq ops::dot(q, q) on that q. (A distributed matrix's rank pairs its rows with
/// a local vector w, so no offset is needed.)
[[nodiscard]] SpmvDots spmv_dots(const CsrMatrix& a, const Tensor& p, const Tensor& q,
                                 const Tensor& w);

/// q = scale * L p with L the 5-point (2-D grid [ny, nx]) or 7-point (3-D grid [nz, ny, nx])
/// Dirichlet-zero Laplacian of ops::laplacian_5pt / laplacian_7pt (same arithmetic, same
/// spacings), and returns p.q over the flattened grid. scale = -1 gives the SPD operator -L.
/// The scale multiplies after the stencil sum: q[i] = scale * L(p)[i], with L(p)[i] rounded to
/// the dtype first, so q equals, bit for bit, ops::laplacian_5pt(p, q, hy, hx) followed by
/// ops::scale(scale, q) (likewise for 7 points). scale must be finite; q is only written.
/// Spacings are checked as ops::laplacian_5pt checks them.
[[nodiscard]] double laplacian_5pt_dot(const Tensor& p, const Tensor& q, double hy, double hx,
                                       double scale);
/// The 7-point (3-D grid [nz, ny, nx]) form of laplacian_5pt_dot, with spacings hz, hy, hx: the
/// bits of ops::laplacian_7pt(p, q, hz, hy, hx) followed by ops::scale(scale, q), and p.q.
[[nodiscard]] double laplacian_7pt_dot(const Tensor& p, const Tensor& q, double hz, double hy,
                                       double hx, double scale);

/// x += alpha p; r -= alpha q; returns r.r of the updated r.
/// Per element x = x + alpha * p and r = r - alpha * q: the bits of ops::axpby(alpha, p, 1, x)
/// and ops::axpby(-alpha, q, 1, r); the result equals ops::dot(r, r) afterwards.
[[nodiscard]] double cg_update(double alpha, const Tensor& p, const Tensor& q, const Tensor& x,
                               const Tensor& r);

/// The two dot products of a preconditioned CG residual update.
struct PcgDots {
  double rz = 0.0;  ///< r.z of the updated r and z, the bits of ops::dot(r, z)
  double rr = 0.0;  ///< r.r of the updated r, the bits of ops::dot(r, r)
};
/// Preconditioned CG with a diagonal (Jacobi) preconditioner:
/// x += alpha p; r -= alpha q; z = inv_diag * r; returns {r.z, r.r} of the updated r and z.
/// x and r as cg_update; z = inv_diag * r per element (the bits of ops::mul(inv_diag, r), z only
/// written); rz equals ops::dot(r, z) and rr ops::dot(r, r) afterwards.
[[nodiscard]] PcgDots pcg_jacobi_update(double alpha, const Tensor& p, const Tensor& q,
                                        const Tensor& x, const Tensor& r, const Tensor& inv_diag,
                                        const Tensor& z);

/// p = z + beta p: the bits of ops::axpby(1, z, beta, p). As there, beta == 0 copies z into p
/// without reading p (so p may hold NaN on entry: the first CG direction is xpay(r, 0, p)).
void xpay(const Tensor& z, double beta, const Tensor& p);

/// r -= alpha q, then with inv_diag (and z) defined z = inv_diag * r; returns {r.z, r.r} of the
/// updated vectors (rz equals rr when inv_diag is undefined). Per element the bits of
/// ops::axpby(-alpha, q, 1, r) and ops::mul(inv_diag, r) (z only written); rr and rz equal
/// ops::dot(r, r) and ops::dot(r, z) afterwards. With cg_advance it is cg_update + xpay split at
/// the other place: the first half of a CG vector update, done before beta is known.
[[nodiscard]] PcgDots cg_residual(double alpha, const Tensor& q, const Tensor& r,
                                  const Tensor& inv_diag = {}, const Tensor& z = {});

/// x += alpha p, then p = z + beta p from the p on entry: the bits of ops::axpby(alpha, p, 1, x)
/// followed by ops::xpay(z, beta, p) (beta == 0 copies z into p, as xpay does), in one pass.
/// The second half of a CG vector update, once beta is known.
void cg_advance(double alpha, const Tensor& p, double beta, const Tensor& z, const Tensor& x);

/// @name BiCGSTAB (bicgstab.hpp)
/// inv_diag is the inverse diagonal of a Jacobi preconditioner; when it is undefined (Tensor{}),
/// the preconditioned vectors are not written (the solver applies another preconditioner itself,
/// or none). inv_diag and the preconditioned output are given together or not at all
/// (UsageError otherwise).
///@{

/// p = r + beta (p - omega v): the bits of ops::axpby(-omega, v, 1, p) then ops::axpby(1, r, beta,
/// p). With inv_diag (and p_hat) defined also p_hat = inv_diag * p, the bits of
/// ops::mul(inv_diag, p); p_hat is only written.
void bicgstab_direction(double beta, double omega, const Tensor& r, const Tensor& v,
                        const Tensor& p, const Tensor& inv_diag = {}, const Tensor& p_hat = {});

/// r -= alpha v (BiCGSTAB's s, kept in r) and returns r.r of the updated r: the bits of
/// ops::axpby(-alpha, v, 1, r) and ops::dot(r, r). With inv_diag (and s_hat) defined also
/// s_hat = inv_diag * r, the bits of ops::mul(inv_diag, r); s_hat is only written.
[[nodiscard]] double bicgstab_residual(double alpha, const Tensor& v, const Tensor& r,
                                       const Tensor& inv_diag = {}, const Tensor& s_hat = {});

/// The two dot products bicgstab_update returns.
struct BicgstabDots {
  double rr = 0.0;       ///< r.r of the updated r (the residual norm squared)
  double r_hat_r = 0.0;  ///< r_hat.r of the updated r (the next iteration's rho)
};
/// With r holding s on entry: x += alpha p_hat, then x += omega s_hat; r = s - omega t; returns
/// {r.r, r_hat.r} of the updated r (the next iteration's residual norm and rho). The bits of
/// ops::axpby(alpha, p_hat, 1, x), ops::axpby(omega, s_hat, 1, x), ops::axpby(-omega, t, 1, r),
/// ops::dot(r, r) and ops::dot(r_hat, r). An undefined s_hat stands for s itself (no
/// preconditioner: s_hat is r's value on entry).
[[nodiscard]] BicgstabDots bicgstab_update(double alpha, const Tensor& p_hat, double omega,
                                           const Tensor& s_hat, const Tensor& t,
                                           const Tensor& r_hat, const Tensor& x, const Tensor& r);
///@}

/// @name GMRES (gmres.hpp): classical Gram-Schmidt against several basis vectors at once
/// basis is a 2-D tensor [K, n] (f64 or f32) whose rows are the vectors v_0 .. v_{K-1} (for
/// example the first K rows of a GMRES basis, basis.slice(0, K)); w is a 1-D vector of n entries
/// of the same dtype and device, not overlapping the basis (UsageError otherwise). With K rows
/// these read w once where K separate dots (or axpbys) read it K times. On a CUDA device they run
/// as K separate ops (the same bits, not yet fused).
///@{

/// out[k] = w.v_k for every row k, each the bits of ops::dot(w, v_k); out.size() must be K.
void basis_dots(const Tensor& basis, const Tensor& w, std::span<double> out);

/// w -= h[0] v_0 + h[1] v_1 + ..., subtracted in the order k = 0, 1, ... (per element the bits of
/// ops::axpby(-h[k], v_k, 1, w) for k = 0, 1, ...; each h[k] rounded to the dtype first), and
/// returns w.w of the updated w (the bits of ops::dot(w, w)); h.size() must be K.
[[nodiscard]] double basis_subtract(const Tensor& basis, std::span<const double> h,
                                    const Tensor& w);
///@}

}  // namespace tenax::ops
