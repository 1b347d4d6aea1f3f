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
#include <vector>

#include "block_reduction.hpp"
#include "csr_rows.hpp"
#include "for_each.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/detail/krylov_kernels.hpp"
#include "tenax/kernels/krylov_bodies.hpp"
#include "tenax/kernels/reduce_bodies.hpp"
#include "tenax/kernels/stencil_bodies.hpp"

namespace tenax::kernels::cpu {
namespace {

constexpr int kLanes = kReduceLanes;

constexpr std::int64_t kMinBlocksPerChunk = kMinReduceBlocksPerChunk;
// Stored entries per chunk below which CSR rows are not worth a worker thread (as ops::spmv).
constexpr std::int64_t kMinEntriesPerChunk = std::int64_t{1} << 15;

// How far ahead of the current point the stencil loops ask for the lines of the grid row (or
// plane) they will read next and of the q they will write. With the hardware prefetchers alone a
// core ran the stencil well below its streaming rate: on a 2-core AMD EPYC VM a 2048^2 f64
// laplacian_5pt_dot ran a quarter to a half faster on one thread with these hints. A prefetch
// never faults and never changes a result.
constexpr std::int64_t kPrefetchBytes = 2048;
constexpr std::int64_t kLineBytes = 64;

// Hints the lines of x[k .. k + kLanes) into the cache, for reading (kWrite = 0) or writing
// (1), when they lie inside x[0 .. n).
template <int kWrite, class T>
inline void prefetch_lanes(const T* x, std::int64_t k, std::int64_t n) {
  constexpr auto kStep = static_cast<std::int64_t>(kLineBytes / sizeof(T));
  for (std::int64_t e = 0; e < kLanes; e += kStep) {
    if (k + e < n) __builtin_prefetch(x + k + e, kWrite, 3);
  }
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
  double rz[kLanes] = {};
  double rr[kLanes] = {};
  std::int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      x[i + j] = cg_x_point(x[i + j], alpha, p[i + j]);
      const T rj = cg_r_point(r[i + j], alpha, q[i + j]);
      const T zj = jacobi_point(inv_diag[i + j], rj);
      r[i + j] = rj;
      z[i + j] = zj;
      rz[j] += dot_term(rj, zj);
      rr[j] += dot_term(rj, rj);
    }
  }
  const PcgJacobiBody<T> body{p, q, inv_diag, x, r, z, alpha};
  for (int j = 0; i + j < end; ++j) {
    const KrylovTerms<2> t = body(i + j);
    rz[j] += t.v[0];
    rr[j] += t.v[1];
  }
  return {{fold_lanes(rz), fold_lanes(rr)}};
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

// ---- spmv_dot ----

template <class T, class I>
KrylovTerms<1> spmv_dot_block(const I* __restrict row_ptr, const I* __restrict col_idx,
                              const T* __restrict values, const T* __restrict p, T* __restrict q,
                              std::int64_t pair, std::int64_t begin, std::int64_t end) {
  const T* paired = p + pair;  // the entries of p the rows pair with in the dot
  double lanes[kLanes] = {};
  std::int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    for (int j = 0; j < kLanes; j += 4) {
      T sums[4];
      csr_four_row_sums(row_ptr, col_idx, values, p, i + j, sums);
      for (int k = 0; k < 4; ++k) {
        q[i + j + k] = sums[k];
        lanes[j + k] += dot_term(paired[i + j + k], sums[k]);
      }
    }
  }
  const SpmvDotBody<T, I> body{row_ptr, col_idx, values, p, q, pair};
  for (int j = 0; i + j < end; ++j) lanes[j] += body(i + j).v[0];
  return {{fold_lanes(lanes)}};
}

template <class T, class I>
double spmv_dot_typed(CpuContext& context, const SpmvDotArgs& s) {
  const I* row_ptr = s.a.row_ptr().data_as<const I>();
  const I* col_idx = s.a.col_idx().data_as<const I>();
  const T* values = s.a.values().data_as<const T>();
  const T* p = s.p.data_as<const T>();
  T* q = s.q.data_as<T>();
  const std::int64_t pair = s.pair;
  const std::int64_t rows = s.a.rows();
  // Blocks per chunk from the average row length, so that small matrices stay on one thread.
  const std::int64_t per_row = std::max<std::int64_t>(1, (s.a.nnz() + rows - 1) / rows);
  const std::int64_t min_blocks =
      std::max<std::int64_t>(1, kMinEntriesPerChunk / (per_row * kReduceBlock));
  return reduce_blocks<1>(context, rows, min_blocks,
                          [=](std::int64_t begin, std::int64_t end) {
                            return spmv_dot_block(row_ptr, col_idx, values, p, q, pair, begin, end);
                          })
      .v[0];
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
  constexpr auto ahead = static_cast<std::int64_t>(kPrefetchBytes / sizeof(T));
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
  constexpr auto ahead = static_cast<std::int64_t>(kPrefetchBytes / sizeof(T));
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

// The overloads without a context run on the process-wide one.
#define TENAX_KRYLOV_CPU_ON_INSTANCE(ret, name, Args) \
  ret name(const Args& args) { return name(CpuContext::instance(), args); }
TENAX_KRYLOV_KERNELS(TENAX_KRYLOV_CPU_ON_INSTANCE)
#undef TENAX_KRYLOV_CPU_ON_INSTANCE

}  // namespace tenax::kernels::cpu
