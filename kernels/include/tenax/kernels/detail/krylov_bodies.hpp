/// Bodies of the fused Krylov kernels of ops_krylov.hpp, written once for both backends.
/// @file
/// Each kernel maps an element (a vector entry, a CSR row or a grid point) i to its updates and to
/// the terms it adds to its dot products; the terms are folded in the fixed order of
/// reduce_bodies.hpp. The *_point functions hold the arithmetic on values already gathered; the
/// *Body functors gather element i by plain indexing and call them. The CUDA backend runs the
/// functors; the CPU backend calls the *_point functions from loops over __restrict pointers (so
/// that they vectorise), and the functors (or, at grid boundaries, the same laplacian_*_at
/// gathers) where a loop would need bounds tests. Both therefore compute the same expression, in
/// the same order, with the same roundings.
///
/// T is double (f64) or float (f32). Vectors are updated in T; every dot term is
/// double(a) * double(b), the term of ops::dot (ProductMap), so a fused dot returns the bits of
/// ops::dot on the vectors it leaves behind. Internal to the kernels layer.
#pragma once

#include <cstdint>

#include "tenax/core/host_device.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"
#include "tenax/kernels/detail/spmv_body.hpp"
#include "tenax/kernels/detail/stencil_bodies.hpp"

namespace tenax::kernels {

/// The K dot-product terms of one element (K = 1, or 2: pcg_jacobi_update's {r.z, r.r},
/// bicgstab_update's {r.r, r_hat.r}, spmv_dots' {w.q, q.q}).
template <int K>
using KrylovTerms = ReduceTerms<K>;

/// The term of a dot product, as ops::dot forms it.
template <class T>
TENAX_HD inline double dot_term(T a, T b) {
  return static_cast<double>(a) * static_cast<double>(b);
}

// ---- arithmetic on gathered values ----

/// x + alpha p: the bits of ops::axpby(alpha, p, 1, x), because 1 * x == x exactly.
template <class T>
TENAX_HD inline T cg_x_point(T x, T alpha, T p) {
  return x + alpha * p;
}

/// r - alpha q: the bits of ops::axpby(-alpha, q, 1, r), because (-alpha) q == -(alpha q) and
/// (-(alpha q)) + r == r - alpha q exactly.
template <class T>
TENAX_HD inline T cg_r_point(T r, T alpha, T q) {
  return r - alpha * q;
}

/// inv_diag * r: the Jacobi preconditioner, the bits of ops::mul(inv_diag, r).
template <class T>
TENAX_HD inline T jacobi_point(T inv_diag, T r) {
  return inv_diag * r;
}

/// z + beta p: the bits of ops::axpby(1, z, beta, p) for beta != 0.
template <class T>
TENAX_HD inline T xpay_point(T z, T beta, T p) {
  return z + beta * p;
}

/// CG's closing update of one element: x + alpha p, then z + beta p from the old p (z itself with
/// kCopy, as xpay copies when beta == 0).
template <class T, bool kCopy>
TENAX_HD inline void cg_advance_point(T alpha, T beta, T z, T& p, T& x) {
  const T old_p = p;
  x = cg_x_point(x, alpha, old_p);
  p = kCopy ? z : xpay_point(z, beta, old_p);
}

/// r + beta (p - omega v): the BiCGSTAB direction, the bits of ops::axpby(-omega, v, 1, p)
/// followed by ops::axpby(1, r, beta, p), because (-omega) v + p == p - omega v and 1 r == r
/// exactly.
template <class T>
TENAX_HD inline T bicgstab_direction_point(T r, T beta, T p, T omega, T v) {
  return r + beta * (p - omega * v);
}

/// scale * L: the stencil value L, already rounded to T, times the scale, the bits of
/// ops::scale(scale, q) applied after ops::laplacian_*.
template <class T>
TENAX_HD inline T scaled_point(T scale, T laplacian) {
  return scale * laplacian;
}

// ---- element i, gathered by plain indexing ----

/// x[i] += alpha p[i]; r[i] -= alpha q[i]; term r[i] * r[i] of the updated r.
template <class T>
struct CgUpdateBody {
  const T* p;
  const T* q;
  T* x;
  T* r;
  T alpha;
  TENAX_HD KrylovTerms<1> operator()(std::int64_t i) const {
    x[i] = cg_x_point(x[i], alpha, p[i]);
    const T ri = cg_r_point(r[i], alpha, q[i]);
    r[i] = ri;
    return {{dot_term(ri, ri)}};
  }
};

/// cg_update, then z[i] = inv_diag[i] r[i]; terms {r[i] z[i], r[i] r[i]} of the updated r and z.
template <class T>
struct PcgJacobiBody {
  const T* p;
  const T* q;
  const T* inv_diag;
  T* x;
  T* r;
  T* z;
  T alpha;
  TENAX_HD KrylovTerms<2> operator()(std::int64_t i) const {
    x[i] = cg_x_point(x[i], alpha, p[i]);
    const T ri = cg_r_point(r[i], alpha, q[i]);
    const T zi = jacobi_point(inv_diag[i], ri);
    r[i] = ri;
    z[i] = zi;
    return {{dot_term(ri, zi), dot_term(ri, ri)}};
  }
};

/// p[i] = z[i] + beta p[i] (beta != 0; with beta == 0 the backends copy z without reading p).
template <class T>
struct XpayBody {
  const T* z;
  T* p;
  T beta;
  TENAX_HD void operator()(std::int64_t i) const { p[i] = xpay_point(z[i], beta, p[i]); }
};

/// BiCGSTAB's direction: p[i] = r[i] + beta (p[i] - omega v[i]); with kJacobi also
/// p_hat[i] = inv_diag[i] p[i] (the preconditioned direction).
template <class T, bool kJacobi>
struct BicgstabDirectionBody {
  const T* r;
  const T* v;
  const T* inv_diag;  ///< kJacobi only
  T* p;
  T* p_hat;  ///< kJacobi only
  T beta;
  T omega;
  TENAX_HD void operator()(std::int64_t i) const {
    const T pi = bicgstab_direction_point(r[i], beta, p[i], omega, v[i]);
    p[i] = pi;
    if constexpr (kJacobi) p_hat[i] = jacobi_point(inv_diag[i], pi);
  }
};

/// The residual update of CG and BiCGSTAB: r[i] -= alpha v[i] (BiCGSTAB's s, kept in r); with
/// kJacobi also z[i] = inv_diag[i] r[i] (CG's preconditioned residual, BiCGSTAB's s_hat). Terms
/// {r[i] z[i], r[i] r[i]} of the updated vectors with kJacobi, {r[i] r[i]} without.
template <class T, bool kJacobi>
struct ResidualUpdateBody {
  static constexpr int kTerms = kJacobi ? 2 : 1;
  const T* v;
  const T* inv_diag;  ///< kJacobi only
  T* r;
  T* z;  ///< kJacobi only
  T alpha;
  TENAX_HD KrylovTerms<kTerms> operator()(std::int64_t i) const {
    const T ri = cg_r_point(r[i], alpha, v[i]);
    r[i] = ri;
    if constexpr (kJacobi) {
      const T zi = jacobi_point(inv_diag[i], ri);
      z[i] = zi;
      return {{dot_term(ri, zi), dot_term(ri, ri)}};
    } else {
      return {{dot_term(ri, ri)}};
    }
  }
};

/// CG's closing pass: x[i] += alpha p[i], then p[i] = z[i] + beta p[i] (the next direction, from
/// the old p); with kCopy (beta == 0) p[i] = z[i], as xpay copies.
template <class T, bool kCopy>
struct CgAdvanceBody {
  const T* z;
  T* p;
  T* x;
  T alpha;
  T beta;
  TENAX_HD void operator()(std::int64_t i) const {
    cg_advance_point<T, kCopy>(alpha, beta, z[i], p[i], x[i]);
  }
};

/// BiCGSTAB's closing update, with r holding s on entry: x[i] = (x[i] + alpha p_hat[i]) +
/// omega s_hat[i]; r[i] = s[i] - omega t[i]; terms {r[i] r[i], r_hat[i] r[i]} of the updated r.
/// Without kSeparateSHat the preconditioner is the identity and s_hat is s itself (read from r
/// before r is written).
template <class T, bool kSeparateSHat>
struct BicgstabUpdateBody {
  const T* p_hat;
  const T* s_hat;  ///< kSeparateSHat only
  const T* t;
  const T* r_hat;
  T* x;
  T* r;
  T alpha;
  T omega;
  TENAX_HD KrylovTerms<2> operator()(std::int64_t i) const {
    const T si = r[i];
    T sh = si;
    if constexpr (kSeparateSHat) sh = s_hat[i];
    x[i] = cg_x_point(cg_x_point(x[i], alpha, p_hat[i]), omega, sh);
    const T ri = cg_r_point(si, omega, t[i]);
    r[i] = ri;
    return {{dot_term(ri, ri), dot_term(r_hat[i], ri)}};
  }
};

/// q[row] = (A p)[row], summed in storage order by csr_row_dot, the sum ops::spmv stores (it
/// stores alpha * sum with alpha = 1, the same bits); term p[pair + row] q[row].
template <class T, class I>
struct SpmvDotBody {
  const I* row_ptr;
  const I* col_idx;
  const T* values;
  const T* p;
  T* q;
  std::int64_t pair = 0;
  TENAX_HD KrylovTerms<1> operator()(std::int64_t row) const {
    const T v = detail::csr_row_dot(row_ptr, col_idx, values, p, row);
    q[row] = v;
    return {{dot_term(p[pair + row], v)}};
  }
};

/// q[row] = (A p)[row] as SpmvDotBody; terms {w[row] q[row], q[row] q[row]}.
template <class T, class I>
struct SpmvDotsBody {
  const I* row_ptr;
  const I* col_idx;
  const T* values;
  const T* p;
  const T* w;
  T* q;
  TENAX_HD KrylovTerms<2> operator()(std::int64_t row) const {
    const T v = detail::csr_row_dot(row_ptr, col_idx, values, p, row);
    q[row] = v;
    return {{dot_term(w[row], v), dot_term(v, v)}};
  }
};

/// q[i] = scale * (5-point Laplacian of p)[i] on the [ny, nx] grid; term p[i] q[i].
template <class T>
struct Laplacian5ptDotBody {
  const T* p;
  T* q;
  std::int64_t ny;
  std::int64_t nx;
  Laplacian2dCoefficients<T> c;
  T scale;
  TENAX_HD KrylovTerms<1> operator()(std::int64_t i) const {
    const T v = scaled_point(scale, laplacian_5pt_at(p, ny, nx, i / nx, i % nx, c));
    q[i] = v;
    return {{dot_term(p[i], v)}};
  }
};

/// q[i] = scale * (7-point Laplacian of p)[i] on the [nz, ny, nx] grid; term p[i] q[i].
template <class T>
struct Laplacian7ptDotBody {
  const T* p;
  T* q;
  std::int64_t nz;
  std::int64_t ny;
  std::int64_t nx;
  Laplacian3dCoefficients<T> c;
  T scale;
  TENAX_HD KrylovTerms<1> operator()(std::int64_t i) const {
    const std::int64_t row = i / nx;
    const T v = scaled_point(scale, laplacian_7pt_at(p, nz, ny, nx, row / ny, row % ny, i % nx, c));
    q[i] = v;
    return {{dot_term(p[i], v)}};
  }
};

}  // namespace tenax::kernels
