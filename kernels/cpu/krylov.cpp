// CPU backend of the fused Krylov kernels: one pass over memory per kernel, with the dot products
// accumulated while the data streams, in the order of reduction_order.hpp (the loops of
// block_reduction.hpp), so the bits equal ops::dot's and the CUDA backend's.
//
// The inner loops take __restrict pointers (the front end has rejected overlapping operands) and
// call the *_point arithmetic of krylov_bodies.hpp, so that the compiler vectorises across the
// lanes of a row. The short last row of a block goes through the *Body functors, and stencil
// points on a grid boundary through the bounds-tested laplacian_*_at gathers.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "block_reduction.hpp"
#include "csr_rows.hpp"
#include "for_each.hpp"
#include "prefetch.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/detail/krylov_bodies.hpp"
#include "tenax/kernels/detail/krylov_kernels.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"
#include "tenax/kernels/detail/stencil_bodies.hpp"

namespace tenax::kernels::cpu {
namespace {

constexpr int kLanes = kReduceLanes;

constexpr std::int64_t kMinBlocksPerChunk = kMinReduceBlocksPerChunk;
// Stored entries per chunk below which CSR rows are not worth a worker thread (as ops::spmv).
constexpr std::int64_t kMinEntriesPerChunk = std::int64_t{1} << 15;

// Hints the lines of x[k .. k + kLanes) into the cache (prefetch.hpp).
template <int kWrite, class T>
inline void prefetch_lanes(const T* x, std::int64_t k, std::int64_t n) {
  prefetch_range<kWrite>(x, k, kLanes, n);
}

// The short last row of a block, [i, end), element by element through `body` (the functor the
// CUDA backend runs), then each term's lanes folded: the block's K partials.
template <int K, class Body>
KrylovTerms<K> finish_block(const Body& body, std::int64_t i, std::int64_t end,
                            double (&lanes)[K][kLanes]) {
  for (int j = 0; i + j < end; ++j) {
    const KrylovTerms<K> terms = body(i + j);
    for (int k = 0; k < K; ++k) lanes[k][j] += terms.v[k];
  }
  KrylovTerms<K> partials;
  for (int k = 0; k < K; ++k) partials.v[k] = fold_lanes(lanes[k]);
  return partials;
}

// ---- cg_update and pcg_jacobi_update ----

template <class T>
KrylovTerms<1> cg_update_block(T alpha, const T* __restrict p, const T* __restrict q,
                               T* __restrict x, T* __restrict r, std::int64_t begin,
                               std::int64_t end) {
  double lanes[kLanes] = {};
  std::int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      x[i + j] = cg_x_point(x[i + j], alpha, p[i + j]);
      const T rj = cg_r_point(r[i + j], alpha, q[i + j]);
      r[i + j] = rj;
      lanes[j] += dot_term(rj, rj);
    }
  }
  const CgUpdateBody<T> body{p, q, x, r, alpha};
  for (int j = 0; i + j < end; ++j) lanes[j] += body(i + j).v[0];
  return {{fold_lanes(lanes)}};
}

template <class T>
KrylovTerms<2> pcg_jacobi_block(T alpha, const T* __restrict p, const T* __restrict q,
                                const T* __restrict inv_diag, T* __restrict x, T* __restrict r,
                                T* __restrict z, std::int64_t begin, std::int64_t end) {
  double lanes[2][kLanes] = {};  // {r.z, r.r}
  std::int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      x[i + j] = cg_x_point(x[i + j], alpha, p[i + j]);
      const T rj = cg_r_point(r[i + j], alpha, q[i + j]);
      const T zj = jacobi_point(inv_diag[i + j], rj);
      r[i + j] = rj;
      z[i + j] = zj;
      lanes[0][j] += dot_term(rj, zj);
      lanes[1][j] += dot_term(rj, rj);
    }
  }
  return finish_block(PcgJacobiBody<T>{p, q, inv_diag, x, r, z, alpha}, i, end, lanes);
}

template <class T>
double cg_update_typed(CpuContext& context, const CgUpdateArgs& s) {
  const T alpha = static_cast<T>(s.alpha);
  const T* p = s.p.data_as<const T>();
  const T* q = s.q.data_as<const T>();
  T* x = s.x.data_as<T>();
  T* r = s.r.data_as<T>();
  return reduce_blocks<1>(context, s.r.numel(), kMinBlocksPerChunk,
                          [=](std::int64_t begin, std::int64_t end) {
                            return cg_update_block(alpha, p, q, x, r, begin, end);
                          })
      .v[0];
}

template <class T>
ops::PcgDots pcg_jacobi_typed(CpuContext& context, const PcgJacobiArgs& s) {
  const T alpha = static_cast<T>(s.alpha);
  const T* p = s.p.data_as<const T>();
  const T* q = s.q.data_as<const T>();
  const T* inv_diag = s.inv_diag.data_as<const T>();
  T* x = s.x.data_as<T>();
  T* r = s.r.data_as<T>();
  T* z = s.z.data_as<T>();
  const KrylovTerms<2> dots = reduce_blocks<2>(
      context, s.r.numel(), kMinBlocksPerChunk, [=](std::int64_t begin, std::int64_t end) {
        return pcg_jacobi_block(alpha, p, q, inv_diag, x, r, z, begin, end);
      });
  return {dots.v[0], dots.v[1]};
}

// ---- xpay ----

template <class T>
void xpay_range(const T* __restrict z, T beta, T* __restrict p, std::int64_t begin,
                std::int64_t end) {
  for (std::int64_t i = begin; i < end; ++i) p[i] = xpay_point(z[i], beta, p[i]);
}

template <class T>
void xpay_typed(CpuContext& context, const XpayArgs& s) {
  const T* z = s.z.data_as<const T>();
  T* p = s.p.data_as<T>();
  const std::int64_t n = s.p.numel();
  if (s.beta == 0.0) {
    context.parallel_for(0, n, detail::kMinChunk, [z, p](std::int64_t begin, std::int64_t end) {
      std::memcpy(p + begin, z + begin, static_cast<std::size_t>(end - begin) * sizeof(T));
    });
    return;
  }
  const T beta = static_cast<T>(s.beta);
  context.parallel_for(0, n, detail::kMinChunk, [z, p, beta](std::int64_t begin, std::int64_t end) {
    xpay_range(z, beta, p, begin, end);
  });
}

// ---- BiCGSTAB ----

template <class T, bool kJacobi>
void bicgstab_direction_range(const T* __restrict r, const T* __restrict v,
                              const T* __restrict inv_diag, T* __restrict p, T* __restrict p_hat,
                              T beta, T omega, std::int64_t begin, std::int64_t end) {
  for (std::int64_t i = begin; i < end; ++i) {
    const T pi = bicgstab_direction_point(r[i], beta, p[i], omega, v[i]);
    p[i] = pi;
    if constexpr (kJacobi) p_hat[i] = jacobi_point(inv_diag[i], pi);
  }
}

template <class T>
void bicgstab_direction_typed(CpuContext& context, const BicgstabDirectionArgs& s) {
  const T* r = s.r.data_as<const T>();
  const T* v = s.v.data_as<const T>();
  T* p = s.p.data_as<T>();
  const T beta = static_cast<T>(s.beta);
  const T omega = static_cast<T>(s.omega);
  const std::int64_t n = s.p.numel();
  if (s.inv_diag.defined()) {
    const T* inv_diag = s.inv_diag.data_as<const T>();
    T* p_hat = s.p_hat.data_as<T>();
    context.parallel_for(0, n, detail::kMinChunk, [=](std::int64_t begin, std::int64_t end) {
      bicgstab_direction_range<T, true>(r, v, inv_diag, p, p_hat, beta, omega, begin, end);
    });
    return;
  }
  context.parallel_for(0, n, detail::kMinChunk, [=](std::int64_t begin, std::int64_t end) {
    bicgstab_direction_range<T, false>(r, v, nullptr, p, nullptr, beta, omega, begin, end);
  });
}

// ---- residual_update (CG's r -= a q [, z = D r], BiCGSTAB's s = r - a v [, s^ = D s]) ----

template <class T, bool kJacobi>
KrylovTerms<ResidualUpdateBody<T, kJacobi>::kTerms> residual_update_block(
    T alpha, const T* __restrict v, const T* __restrict inv_diag, T* __restrict r, T* __restrict z,
    std::int64_t begin, std::int64_t end) {
  constexpr int K = ResidualUpdateBody<T, kJacobi>::kTerms;
  double lanes[K][kLanes] = {};  // {r.z, r.r} with kJacobi, {r.r} without
  std::int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const T rj = cg_r_point(r[i + j], alpha, v[i + j]);
      r[i + j] = rj;
      if constexpr (kJacobi) {
        const T zj = jacobi_point(inv_diag[i + j], rj);
        z[i + j] = zj;
        lanes[0][j] += dot_term(rj, zj);
      }
      lanes[K - 1][j] += dot_term(rj, rj);
    }
  }
  return finish_block(ResidualUpdateBody<T, kJacobi>{v, inv_diag, r, z, alpha}, i, end, lanes);
}

template <class T, bool kJacobi>
ops::PcgDots residual_update_run(CpuContext& context, const ResidualUpdateArgs& s) {
  constexpr int K = ResidualUpdateBody<T, kJacobi>::kTerms;
  const T alpha = static_cast<T>(s.alpha);
  const T* v = s.v.data_as<const T>();
  T* r = s.r.data_as<T>();
  const T* inv_diag = kJacobi ? s.inv_diag.data_as<const T>() : nullptr;
  T* z = kJacobi ? s.z.data_as<T>() : nullptr;
  const KrylovTerms<K> dots = reduce_blocks<K>(
      context, s.r.numel(), kMinBlocksPerChunk, [=](std::int64_t begin, std::int64_t end) {
        return residual_update_block<T, kJacobi>(alpha, v, inv_diag, r, z, begin, end);
      });
  return {dots.v[0], dots.v[K - 1]};
}

template <class T>
ops::PcgDots residual_update_typed(CpuContext& context, const ResidualUpdateArgs& s) {
  return s.inv_diag.defined() ? residual_update_run<T, true>(context, s)
                              : residual_update_run<T, false>(context, s);
}

// ---- cg_advance ----

template <class T, bool kCopy>
void cg_advance_range(T alpha, T beta, const T* __restrict z, T* __restrict p, T* __restrict x,
                      std::int64_t begin, std::int64_t end) {
  for (std::int64_t i = begin; i < end; ++i)
    cg_advance_point<T, kCopy>(alpha, beta, z[i], p[i], x[i]);
}

template <class T>
void cg_advance_typed(CpuContext& context, const CgAdvanceArgs& s) {
  const T alpha = static_cast<T>(s.alpha);
  const T beta = static_cast<T>(s.beta);
  const T* z = s.z.data_as<const T>();
  T* p = s.p.data_as<T>();
  T* x = s.x.data_as<T>();
  const bool copy = s.beta == 0.0;
  context.parallel_for(0, s.p.numel(), detail::kMinChunk,
                       [=](std::int64_t begin, std::int64_t end) {
                         if (copy) {
                           cg_advance_range<T, true>(alpha, beta, z, p, x, begin, end);
                         } else {
                           cg_advance_range<T, false>(alpha, beta, z, p, x, begin, end);
                         }
                       });
}

template <class T, bool kSeparateSHat>
KrylovTerms<2> bicgstab_update_block(T alpha, T omega, const T* __restrict p_hat,
                                     const T* __restrict s_hat, const T* __restrict t,
                                     const T* __restrict r_hat, T* __restrict x, T* __restrict r,
                                     std::int64_t begin, std::int64_t end) {
  double lanes[2][kLanes] = {};  // {r.r, r_hat.r}
  std::int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const T sj = r[i + j];
      T shj = sj;
      if constexpr (kSeparateSHat) shj = s_hat[i + j];
      x[i + j] = cg_x_point(cg_x_point(x[i + j], alpha, p_hat[i + j]), omega, shj);
      const T rj = cg_r_point(sj, omega, t[i + j]);
      r[i + j] = rj;
      lanes[0][j] += dot_term(rj, rj);
      lanes[1][j] += dot_term(r_hat[i + j], rj);
    }
  }
  return finish_block(
      BicgstabUpdateBody<T, kSeparateSHat>{p_hat, s_hat, t, r_hat, x, r, alpha, omega}, i, end,
      lanes);
}

template <class T, bool kSeparateSHat>
ops::BicgstabDots bicgstab_update_run(CpuContext& context, const BicgstabUpdateArgs& s) {
  const T alpha = static_cast<T>(s.alpha);
  const T omega = static_cast<T>(s.omega);
  const T* p_hat = s.p_hat.data_as<const T>();
  const T* s_hat = kSeparateSHat ? s.s_hat.data_as<const T>() : nullptr;
  const T* t = s.t.data_as<const T>();
  const T* r_hat = s.r_hat.data_as<const T>();
  T* x = s.x.data_as<T>();
  T* r = s.r.data_as<T>();
  const KrylovTerms<2> dots = reduce_blocks<2>(
      context, s.r.numel(), kMinBlocksPerChunk, [=](std::int64_t begin, std::int64_t end) {
        return bicgstab_update_block<T, kSeparateSHat>(alpha, omega, p_hat, s_hat, t, r_hat, x, r,
                                                       begin, end);
      });
  return {dots.v[0], dots.v[1]};
}

template <class T>
ops::BicgstabDots bicgstab_update_typed(CpuContext& context, const BicgstabUpdateArgs& s) {
  return s.s_hat.defined() ? bicgstab_update_run<T, true>(context, s)
                           : bicgstab_update_run<T, false>(context, s);
}

// ---- classical Gram-Schmidt against the rows of a basis ----
//
// A thread takes whole reduction blocks; within a block it runs over groups of up to
// kBasisGroup basis rows side by side (each row a stream of its own, so the hardware prefetchers
// see several at once; one row after the other ran at half the bandwidth), with w's block held
// in the L1 cache. Each row's terms still fold in element order into its own lanes, and each
// element of w still subtracts the rows in order 0, 1, ..., so the bits are those of the
// separate ops.

constexpr std::int64_t kBasisGroup = 4;

// Blocks of w a row's pass covers before the next row's: 32 blocks are 1 MiB of f64, which stay
// in the L2 cache for the rows after the first, while each row is read in a stream long enough
// for the prefetchers (row after row within one block, or rows side by side, ran at a third to a
// half of this speed: 4 KiB-aliased streams and short bursts).
constexpr std::int64_t kBasisDotBlocks = 32;

template <class T>
double basis_dot_block(const T* __restrict v, const T* __restrict w, std::int64_t begin,
                       std::int64_t end) {
  double lanes[kLanes] = {};
  std::int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lanes[j] += dot_term(w[i + j], v[i + j]);
  }
  for (int j = 0; i + j < end; ++j) lanes[j] += dot_term(w[i + j], v[i + j]);
  return fold_lanes(lanes);
}

template <class T>
void basis_dots_typed(CpuContext& context, const BasisArgs& s, std::span<double> out) {
  const std::int64_t rows = s.basis.shape()[0];
  const std::int64_t n = s.w.numel();
  const T* v = s.basis.data_as<const T>();
  const T* w = s.w.data_as<const T>();
  const std::int64_t blocks = reduce_block_count(n);
  std::vector<double> partials(static_cast<std::size_t>(rows * blocks));
  double* partial = partials.data();
  context.parallel_for(0, blocks, kMinBlocksPerChunk, [=](std::int64_t first, std::int64_t last) {
    for (std::int64_t group = first; group < last; group += kBasisDotBlocks) {
      const std::int64_t group_end = std::min(last, group + kBasisDotBlocks);
      for (std::int64_t k = 0; k < rows; ++k) {
        for (std::int64_t b = group; b < group_end; ++b) {
          const std::int64_t begin = b * kReduceBlock;
          partial[k * blocks + b] =
              basis_dot_block(v + k * n, w, begin, std::min(n, begin + kReduceBlock));
        }
      }
    }
  });
  finish_reduction_terms(partial, static_cast<int>(rows), blocks, n, PlusCombine{}, out);
}

template <class T, int kRows>
void basis_subtract_group(const T* __restrict v, std::int64_t n, const T* __restrict c,
                          T* __restrict w, std::int64_t begin, std::int64_t end) {
  for (std::int64_t i = begin; i < end; ++i) {
    T wi = w[i];
    for (int r = 0; r < kRows; ++r) wi = cg_r_point(wi, c[r], v[r * n + i]);
    w[i] = wi;
  }
}

template <class T>
double basis_subtract_typed(CpuContext& context, const BasisArgs& s, std::span<const double> h) {
  const std::int64_t rows = s.basis.shape()[0];
  const std::int64_t n = s.w.numel();
  const T* v = s.basis.data_as<const T>();
  T* w = s.w.data_as<T>();
  std::vector<T> coefficients(h.size());
  for (std::size_t k = 0; k < h.size(); ++k) coefficients[k] = static_cast<T>(h[k]);
  const T* c = coefficients.data();
  return reduce_blocks<1>(context, n, kMinBlocksPerChunk,
                          [=](std::int64_t begin, std::int64_t end) {
                            for (std::int64_t k = 0; k < rows; k += kBasisGroup) {
                              const T* vk = v + k * n;
                              switch (std::min(kBasisGroup, rows - k)) {
                                case 4:
                                  basis_subtract_group<T, 4>(vk, n, c + k, w, begin, end);
                                  break;
                                case 3:
                                  basis_subtract_group<T, 3>(vk, n, c + k, w, begin, end);
                                  break;
                                case 2:
                                  basis_subtract_group<T, 2>(vk, n, c + k, w, begin, end);
                                  break;
                                default:
                                  basis_subtract_group<T, 1>(vk, n, c + k, w, begin, end);
                                  break;
                              }
                            }
                            const T* __restrict wb = w;
                            double lanes[kLanes] = {};
                            std::int64_t i = begin;
                            for (; i + kLanes <= end; i += kLanes) {
                              for (int j = 0; j < kLanes; ++j)
                                lanes[j] += dot_term(wb[i + j], wb[i + j]);
                            }
                            for (int j = 0; i + j < end; ++j)
                              lanes[j] += dot_term(wb[i + j], wb[i + j]);
                            return KrylovTerms<1>{{fold_lanes(lanes)}};
                          })
      .v[0];
}

// ---- spmv_dot and spmv_dots ----

// Blocks per chunk from the average row length, so that small matrices stay on one thread.
std::int64_t spmv_min_blocks(const CsrMatrix& a) {
  const std::int64_t per_row = std::max<std::int64_t>(1, (a.nnz() + a.rows() - 1) / a.rows());
  return std::max<std::int64_t>(1, kMinEntriesPerChunk / (per_row * kReduceBlock));
}

template <class T, class Rows>
[[gnu::always_inline]] inline KrylovTerms<1> spmv_dot_block(const Rows& entries,
                                                            const T* __restrict p, T* __restrict q,
                                                            std::int64_t pair, std::int64_t begin,
                                                            std::int64_t end) {
  const T* paired = p + pair;  // the entries of p the rows pair with in the dot
  double lanes[1][kLanes] = {};
  std::int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    for (int j = 0; j < kLanes; j += 4) {
      T sums[4];
      entries.four_row_sums(p, i + j, sums);
      for (int k = 0; k < 4; ++k) {
        q[i + j + k] = sums[k];
        lanes[0][j + k] += dot_term(paired[i + j + k], sums[k]);
      }
    }
  }
  // The tail as SpmvDotBody computes a row (its sum is csr_row_dot's).
  const auto body = [&](std::int64_t row) {
    const T v = entries.row_sum(p, row);
    q[row] = v;
    return KrylovTerms<1>{{dot_term(paired[row], v)}};
  };
  return finish_block(body, i, end, lanes);
}

template <class T, class I>
double spmv_dot_typed(CpuContext& context, const SpmvDotArgs& s) {
  const T* p = s.p.data_as<const T>();
  T* q = s.q.data_as<T>();
  const std::int64_t pair = s.pair;
  return with_csr_rows<T, I>(s.a, [&](const auto& entries) {
    return reduce_blocks<1>(context, s.a.rows(), spmv_min_blocks(s.a),
                            [=](std::int64_t begin, std::int64_t end) {
                              return detail::call_best([&]() __attribute__((always_inline)) {
                                return spmv_dot_block(entries, p, q, pair, begin, end);
                              });
                            })
        .v[0];
  });
}

template <class T, class Rows>
[[gnu::always_inline]] inline KrylovTerms<2> spmv_dots_block(const Rows& entries,
                                                             const T* __restrict p,
                                                             const T* __restrict w, T* __restrict q,
                                                             std::int64_t begin, std::int64_t end) {
  double lanes[2][kLanes] = {};  // {w.q, q.q}
  std::int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    for (int j = 0; j < kLanes; j += 4) {
      T sums[4];
      entries.four_row_sums(p, i + j, sums);
      for (int k = 0; k < 4; ++k) {
        q[i + j + k] = sums[k];
        lanes[0][j + k] += dot_term(w[i + j + k], sums[k]);
        lanes[1][j + k] += dot_term(sums[k], sums[k]);
      }
    }
  }
  // The tail as SpmvDotsBody computes a row.
  const auto body = [&](std::int64_t row) {
    const T v = entries.row_sum(p, row);
    q[row] = v;
    return KrylovTerms<2>{{dot_term(w[row], v), dot_term(v, v)}};
  };
  return finish_block(body, i, end, lanes);
}

template <class T, class I>
ops::SpmvDots spmv_dots_typed(CpuContext& context, const SpmvDotsArgs& s) {
  const T* p = s.p.data_as<const T>();
  const T* w = s.w.data_as<const T>();
  T* q = s.q.data_as<T>();
  const KrylovTerms<2> dots = with_csr_rows<T, I>(s.a, [&](const auto& entries) {
    return reduce_blocks<2>(context, s.a.rows(), spmv_min_blocks(s.a),
                            [=](std::int64_t begin, std::int64_t end) {
                              return detail::call_best([&]() __attribute__((always_inline)) {
                                return spmv_dots_block(entries, p, w, q, begin, end);
                              });
                            });
  });
  return {dots.v[0], dots.v[1]};
}

template <class T>
ops::SpmvDots spmv_dots_values(CpuContext& context, const SpmvDotsArgs& s) {
  if (s.a.index_dtype() == DType::i64) return spmv_dots_typed<T, std::int64_t>(context, s);
  return spmv_dots_typed<T, std::int32_t>(context, s);
}

template <class T>
double spmv_dot_values(CpuContext& context, const SpmvDotArgs& s) {
  if (s.a.index_dtype() == DType::i64) return spmv_dot_typed<T, std::int64_t>(context, s);
  return spmv_dot_typed<T, std::int32_t>(context, s);
}

// ---- Laplacian stencils ----
//
// A row of kLanes points takes the branch-free path (laplacian_*_point) when all of them are
// interior points of one grid row; otherwise (grid boundaries, rows that wrap, the short last
// row of a block) each point goes through laplacian_*_at and its bounds tests, as the
// *DotBody functors that the CUDA backend runs do. The grid coordinates of the current point are
// advanced incrementally (indices only grow within a block), so no point costs a division.

template <class T>
KrylovTerms<1> laplacian_5pt_dot_block(const T* __restrict p, T* __restrict q, std::int64_t ny,
                                       std::int64_t nx, const Laplacian2dCoefficients<T>& c,
                                       T scale, std::int64_t begin, std::int64_t end) {
  const std::int64_t n = ny * nx;
  constexpr std::int64_t ahead = kPrefetchAhead<T>;
  double lanes[kLanes] = {};
  std::int64_t y = begin / nx;
  std::int64_t row_begin = y * nx;
  auto seek = [&y, &row_begin, nx](std::int64_t k) {
    while (k >= row_begin + nx) {
      ++y;
      row_begin += nx;
    }
  };
  for (std::int64_t i = begin; i < end; i += kLanes) {
    seek(i);
    const bool interior =
        i + kLanes <= end && y > 0 && y + 1 < ny && i > row_begin && i + kLanes < row_begin + nx;
    if (interior) {
      prefetch_lanes<0>(p, i + nx + ahead, n);
      prefetch_lanes<1>(q, i + ahead, n);
      for (int j = 0; j < kLanes; ++j) {
        const std::int64_t k = i + j;
        const T v = scaled_point(
            scale, laplacian_5pt_point(p[k], p[k - 1], p[k + 1], p[k - nx], p[k + nx], c));
        q[k] = v;
        lanes[j] += dot_term(p[k], v);
      }
    } else {
      for (int j = 0; j < kLanes && i + j < end; ++j) {
        const std::int64_t k = i + j;
        seek(k);
        const T v = scaled_point(scale, laplacian_5pt_at(p, ny, nx, y, k - row_begin, c));
        q[k] = v;
        lanes[j] += dot_term(p[k], v);
      }
    }
  }
  return {{fold_lanes(lanes)}};
}

template <class T>
KrylovTerms<1> laplacian_7pt_dot_block(const T* __restrict p, T* __restrict q, std::int64_t nz,
                                       std::int64_t ny, std::int64_t nx,
                                       const Laplacian3dCoefficients<T>& c, T scale,
                                       std::int64_t begin, std::int64_t end) {
  const std::int64_t plane = ny * nx;
  const std::int64_t n = nz * plane;
  constexpr std::int64_t ahead = kPrefetchAhead<T>;
  double lanes[kLanes] = {};
  const std::int64_t row = begin / nx;
  std::int64_t z = row / ny;
  std::int64_t y = row % ny;
  std::int64_t row_begin = row * nx;
  auto seek = [&z, &y, &row_begin, ny, nx](std::int64_t k) {
    while (k >= row_begin + nx) {
      row_begin += nx;
      if (++y == ny) {
        y = 0;
        ++z;
      }
    }
  };
  for (std::int64_t i = begin; i < end; i += kLanes) {
    seek(i);
    const bool interior = i + kLanes <= end && z > 0 && z + 1 < nz && y > 0 && y + 1 < ny &&
                          i > row_begin && i + kLanes < row_begin + nx;
    if (interior) {
      prefetch_lanes<0>(p, i + plane + ahead, n);
      prefetch_lanes<1>(q, i + ahead, n);
      for (int j = 0; j < kLanes; ++j) {
        const std::int64_t k = i + j;
        const T v =
            scaled_point(scale, laplacian_7pt_point(p[k], p[k - 1], p[k + 1], p[k - nx], p[k + nx],
                                                    p[k - plane], p[k + plane], c));
        q[k] = v;
        lanes[j] += dot_term(p[k], v);
      }
    } else {
      for (int j = 0; j < kLanes && i + j < end; ++j) {
        const std::int64_t k = i + j;
        seek(k);
        const T v = scaled_point(scale, laplacian_7pt_at(p, nz, ny, nx, z, y, k - row_begin, c));
        q[k] = v;
        lanes[j] += dot_term(p[k], v);
      }
    }
  }
  return {{fold_lanes(lanes)}};
}

template <class T>
double laplacian_5pt_dot_typed(CpuContext& context, const StencilDotArgs& s) {
  const StencilArgs& g = s.grid;
  const T* p = g.u.data_as<const T>();
  T* q = g.out.data_as<T>();
  const auto c = laplacian_coefficients<T>(g.hy, g.hx);
  const T scale = static_cast<T>(s.scale);
  const std::int64_t ny = g.ny;
  const std::int64_t nx = g.nx;
  return reduce_blocks<1>(context, ny * nx, kMinBlocksPerChunk,
                          [=](std::int64_t begin, std::int64_t end) {
                            return laplacian_5pt_dot_block(p, q, ny, nx, c, scale, begin, end);
                          })
      .v[0];
}

template <class T>
double laplacian_7pt_dot_typed(CpuContext& context, const StencilDotArgs& s) {
  const StencilArgs& g = s.grid;
  const T* p = g.u.data_as<const T>();
  T* q = g.out.data_as<T>();
  const auto c = laplacian_coefficients<T>(g.hz, g.hy, g.hx);
  const T scale = static_cast<T>(s.scale);
  const std::int64_t nz = g.nz;
  const std::int64_t ny = g.ny;
  const std::int64_t nx = g.nx;
  return reduce_blocks<1>(context, nz * ny * nx, kMinBlocksPerChunk,
                          [=](std::int64_t begin, std::int64_t end) {
                            return laplacian_7pt_dot_block(p, q, nz, ny, nx, c, scale, begin, end);
                          })
      .v[0];
}

}  // namespace

double spmv_dot(CpuContext& context, const SpmvDotArgs& args) {
  if (args.a.dtype() == DType::f64) return spmv_dot_values<double>(context, args);
  return spmv_dot_values<float>(context, args);
}

ops::SpmvDots spmv_dots(CpuContext& context, const SpmvDotsArgs& args) {
  if (args.a.dtype() == DType::f64) return spmv_dots_values<double>(context, args);
  return spmv_dots_values<float>(context, args);
}

void bicgstab_direction(CpuContext& context, const BicgstabDirectionArgs& args) {
  if (args.p.dtype() == DType::f64) {
    bicgstab_direction_typed<double>(context, args);
  } else {
    bicgstab_direction_typed<float>(context, args);
  }
}

ops::PcgDots residual_update(CpuContext& context, const ResidualUpdateArgs& args) {
  if (args.r.dtype() == DType::f64) return residual_update_typed<double>(context, args);
  return residual_update_typed<float>(context, args);
}

void cg_advance(CpuContext& context, const CgAdvanceArgs& args) {
  if (args.p.dtype() == DType::f64) {
    cg_advance_typed<double>(context, args);
  } else {
    cg_advance_typed<float>(context, args);
  }
}

ops::BicgstabDots bicgstab_update(CpuContext& context, const BicgstabUpdateArgs& args) {
  if (args.r.dtype() == DType::f64) return bicgstab_update_typed<double>(context, args);
  return bicgstab_update_typed<float>(context, args);
}

double laplacian_5pt_dot(CpuContext& context, const StencilDotArgs& args) {
  if (args.grid.u.dtype() == DType::f64) return laplacian_5pt_dot_typed<double>(context, args);
  return laplacian_5pt_dot_typed<float>(context, args);
}

double laplacian_7pt_dot(CpuContext& context, const StencilDotArgs& args) {
  if (args.grid.u.dtype() == DType::f64) return laplacian_7pt_dot_typed<double>(context, args);
  return laplacian_7pt_dot_typed<float>(context, args);
}

double cg_update(CpuContext& context, const CgUpdateArgs& args) {
  if (args.r.dtype() == DType::f64) return cg_update_typed<double>(context, args);
  return cg_update_typed<float>(context, args);
}

ops::PcgDots pcg_jacobi_update(CpuContext& context, const PcgJacobiArgs& args) {
  if (args.r.dtype() == DType::f64) return pcg_jacobi_typed<double>(context, args);
  return pcg_jacobi_typed<float>(context, args);
}

void xpay(CpuContext& context, const XpayArgs& args) {
  if (args.p.dtype() == DType::f64) {
    xpay_typed<double>(context, args);
  } else {
    xpay_typed<float>(context, args);
  }
}

void basis_dots(CpuContext& context, const BasisArgs& args, std::span<double> out) {
  if (args.w.dtype() == DType::f64) {
    basis_dots_typed<double>(context, args, out);
  } else {
    basis_dots_typed<float>(context, args, out);
  }
}

double basis_subtract(CpuContext& context, const BasisArgs& args, std::span<const double> h) {
  if (args.w.dtype() == DType::f64) return basis_subtract_typed<double>(context, args, h);
  return basis_subtract_typed<float>(context, args, h);
}

// The overloads without a context run on the process-wide one.
#define TENAX_KRYLOV_CPU_ON_INSTANCE(ret, name, Args) \
  ret name(const Args& args) { return name(CpuContext::instance(), args); }
TENAX_KRYLOV_KERNELS(TENAX_KRYLOV_CPU_ON_INSTANCE)
#undef TENAX_KRYLOV_CPU_ON_INSTANCE

}  // namespace tenax::kernels::cpu
