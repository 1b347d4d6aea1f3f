// CUDA backend of the fused Krylov kernels: the *Body functors of krylov_bodies.hpp (the
// arithmetic the CPU backend runs) folded in the fixed order of reduce_bodies.hpp by
// reduce_launch.cuh, as reduce.cu folds its maps. A reduction block is a group of kReduceLanes
// threads, thread j of the group being lane j: it updates the elements j, j + L, ... of the block
// (adjacent threads touch adjacent elements, so the accesses coalesce) and folds their dot terms;
// a shuffle halving tree ends the block, and one thread block per dot product combines the
// partials level by level. Every addition happens in the CPU's order, so the results are the CPU
// backend's bits.
#include <cstdint>

#include "launch.cuh"
#include "reduce_launch.cuh"
#include "tenax/kernels/detail/krylov_bodies.hpp"
#include "tenax/kernels/detail/krylov_kernels.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"
#include "tenax/kernels/detail/stencil_bodies.hpp"

namespace tenax::kernels::cuda {
namespace {

// Runs body(i) for i in [0, n) and returns its K dot products (waits for the stream).
template <int K, class Body>
detail::ReduceTerms<K> fused_reduce(Device device, std::int64_t n, const Body& body,
                                    const char* what) {
  return detail::reduce_terms<K>(device, n, body, PlusCombine{}, what);
}

template <class T, class I>
double spmv_dot_typed(const SpmvDotArgs& s) {
  const SpmvDotBody<T, I> body{s.a.row_ptr().data_as<const I>(),
                               s.a.col_idx().data_as<const I>(),
                               s.a.values().data_as<const T>(),
                               s.p.data_as<const T>(),
                               s.q.data_as<T>(),
                               s.pair};
  return fused_reduce<1>(s.q.device(), s.a.rows(), body, "spmv_dot kernel").v[0];
}

template <class T>
double spmv_dot_values(const SpmvDotArgs& s) {
  if (s.a.index_dtype() == DType::i64) return spmv_dot_typed<T, std::int64_t>(s);
  return spmv_dot_typed<T, std::int32_t>(s);
}

template <class T, class I>
ops::SpmvDots spmv_dots_typed(const SpmvDotsArgs& s) {
  const SpmvDotsBody<T, I> body{s.a.row_ptr().data_as<const I>(), s.a.col_idx().data_as<const I>(),
                                s.a.values().data_as<const T>(),  s.p.data_as<const T>(),
                                s.w.data_as<const T>(),           s.q.data_as<T>()};
  const detail::ReduceTerms<2> dots =
      fused_reduce<2>(s.q.device(), s.a.rows(), body, "spmv_dots kernel");
  return {dots.v[0], dots.v[1]};
}

template <class T>
ops::SpmvDots spmv_dots_values(const SpmvDotsArgs& s) {
  if (s.a.index_dtype() == DType::i64) return spmv_dots_typed<T, std::int64_t>(s);
  return spmv_dots_typed<T, std::int32_t>(s);
}

template <class T>
double laplacian_5pt_dot_typed(const StencilDotArgs& s) {
  const StencilArgs& g = s.grid;
  const Laplacian5ptDotBody<T> body{
      g.u.data_as<const T>(), g.out.data_as<T>(), g.ny, g.nx, laplacian_coefficients<T>(g.hy, g.hx),
      static_cast<T>(s.scale)};
  return fused_reduce<1>(g.out.device(), g.ny * g.nx, body, "laplacian_5pt_dot kernel").v[0];
}

template <class T>
double laplacian_7pt_dot_typed(const StencilDotArgs& s) {
  const StencilArgs& g = s.grid;
  const Laplacian7ptDotBody<T> body{g.u.data_as<const T>(),
                                    g.out.data_as<T>(),
                                    g.nz,
                                    g.ny,
                                    g.nx,
                                    laplacian_coefficients<T>(g.hz, g.hy, g.hx),
                                    static_cast<T>(s.scale)};
  return fused_reduce<1>(g.out.device(), g.nz * g.ny * g.nx, body, "laplacian_7pt_dot kernel").v[0];
}

template <class T>
double cg_update_typed(const CgUpdateArgs& s) {
  const CgUpdateBody<T> body{s.p.data_as<const T>(), s.q.data_as<const T>(), s.x.data_as<T>(),
                             s.r.data_as<T>(), static_cast<T>(s.alpha)};
  return fused_reduce<1>(s.r.device(), s.r.numel(), body, "cg_update kernel").v[0];
}

template <class T>
ops::PcgDots pcg_jacobi_typed(const PcgJacobiArgs& s) {
  const PcgJacobiBody<T> body{
      s.p.data_as<const T>(), s.q.data_as<const T>(), s.inv_diag.data_as<const T>(),
      s.x.data_as<T>(),       s.r.data_as<T>(),       s.z.data_as<T>(),
      static_cast<T>(s.alpha)};
  const detail::ReduceTerms<2> dots =
      fused_reduce<2>(s.r.device(), s.r.numel(), body, "pcg_jacobi_update kernel");
  return {dots.v[0], dots.v[1]};
}

template <class T>
void xpay_typed(const XpayArgs& s) {
  if (s.beta == 0.0) {
    const detail::Launch launch(s.p.device());
    launch.check(cudaMemcpyAsync(s.p.data(), s.z.data(), s.p.nbytes(), cudaMemcpyDeviceToDevice,
                                 launch.stream),
                 "cudaMemcpyAsync");
    return;
  }
  detail::for_each(s.p.device(), s.p.numel(),
                   XpayBody<T>{s.z.data_as<const T>(), s.p.data_as<T>(), static_cast<T>(s.beta)},
                   "xpay kernel");
}

template <class T>
void bicgstab_direction_typed(const BicgstabDirectionArgs& s) {
  const T* r = s.r.data_as<const T>();
  const T* v = s.v.data_as<const T>();
  T* p = s.p.data_as<T>();
  const T beta = static_cast<T>(s.beta);
  const T omega = static_cast<T>(s.omega);
  if (s.inv_diag.defined()) {
    detail::for_each(s.p.device(), s.p.numel(),
                     BicgstabDirectionBody<T, true>{r, v, s.inv_diag.data_as<const T>(), p,
                                                    s.p_hat.data_as<T>(), beta, omega},
                     "bicgstab_direction kernel");
    return;
  }
  detail::for_each(s.p.device(), s.p.numel(),
                   BicgstabDirectionBody<T, false>{r, v, nullptr, p, nullptr, beta, omega},
                   "bicgstab_direction kernel");
}

template <class T, bool kJacobi>
ops::PcgDots residual_update_run(const ResidualUpdateArgs& s) {
  constexpr int K = ResidualUpdateBody<T, kJacobi>::kTerms;
  const ResidualUpdateBody<T, kJacobi> body{
      s.v.data_as<const T>(), kJacobi ? s.inv_diag.data_as<const T>() : nullptr, s.r.data_as<T>(),
      kJacobi ? s.z.data_as<T>() : nullptr, static_cast<T>(s.alpha)};
  const detail::ReduceTerms<K> dots =
      fused_reduce<K>(s.r.device(), s.r.numel(), body, "residual_update kernel");
  return {dots.v[0], dots.v[K - 1]};
}

template <class T>
ops::PcgDots residual_update_typed(const ResidualUpdateArgs& s) {
  return s.inv_diag.defined() ? residual_update_run<T, true>(s) : residual_update_run<T, false>(s);
}

template <class T>
void cg_advance_typed(const CgAdvanceArgs& s) {
  const T* z = s.z.data_as<const T>();
  T* p = s.p.data_as<T>();
  T* x = s.x.data_as<T>();
  const T alpha = static_cast<T>(s.alpha);
  const T beta = static_cast<T>(s.beta);
  if (s.beta == 0.0) {
    detail::for_each(s.p.device(), s.p.numel(), CgAdvanceBody<T, true>{z, p, x, alpha, beta},
                     "cg_advance kernel");
    return;
  }
  detail::for_each(s.p.device(), s.p.numel(), CgAdvanceBody<T, false>{z, p, x, alpha, beta},
                   "cg_advance kernel");
}

template <class T, bool kSeparateSHat>
ops::BicgstabDots bicgstab_update_run(const BicgstabUpdateArgs& s) {
  const BicgstabUpdateBody<T, kSeparateSHat> body{
      s.p_hat.data_as<const T>(), kSeparateSHat ? s.s_hat.data_as<const T>() : nullptr,
      s.t.data_as<const T>(),     s.r_hat.data_as<const T>(),
      s.x.data_as<T>(),           s.r.data_as<T>(),
      static_cast<T>(s.alpha),    static_cast<T>(s.omega)};
  const detail::ReduceTerms<2> dots =
      fused_reduce<2>(s.r.device(), s.r.numel(), body, "bicgstab_update kernel");
  return {dots.v[0], dots.v[1]};
}

template <class T>
ops::BicgstabDots bicgstab_update_typed(const BicgstabUpdateArgs& s) {
  return s.s_hat.defined() ? bicgstab_update_run<T, true>(s) : bicgstab_update_run<T, false>(s);
}

}  // namespace

double spmv_dot(const SpmvDotArgs& args) {
  if (args.a.dtype() == DType::f64) return spmv_dot_values<double>(args);
  return spmv_dot_values<float>(args);
}

ops::SpmvDots spmv_dots(const SpmvDotsArgs& args) {
  if (args.a.dtype() == DType::f64) return spmv_dots_values<double>(args);
  return spmv_dots_values<float>(args);
}

void bicgstab_direction(const BicgstabDirectionArgs& args) {
  if (args.p.dtype() == DType::f64) {
    bicgstab_direction_typed<double>(args);
  } else {
    bicgstab_direction_typed<float>(args);
  }
}

ops::PcgDots residual_update(const ResidualUpdateArgs& args) {
  if (args.r.dtype() == DType::f64) return residual_update_typed<double>(args);
  return residual_update_typed<float>(args);
}

void cg_advance(const CgAdvanceArgs& args) {
  if (args.p.dtype() == DType::f64) {
    cg_advance_typed<double>(args);
  } else {
    cg_advance_typed<float>(args);
  }
}

ops::BicgstabDots bicgstab_update(const BicgstabUpdateArgs& args) {
  if (args.r.dtype() == DType::f64) return bicgstab_update_typed<double>(args);
  return bicgstab_update_typed<float>(args);
}

double laplacian_5pt_dot(const StencilDotArgs& args) {
  if (args.grid.u.dtype() == DType::f64) return laplacian_5pt_dot_typed<double>(args);
  return laplacian_5pt_dot_typed<float>(args);
}

double laplacian_7pt_dot(const StencilDotArgs& args) {
  if (args.grid.u.dtype() == DType::f64) return laplacian_7pt_dot_typed<double>(args);
  return laplacian_7pt_dot_typed<float>(args);
}

double cg_update(const CgUpdateArgs& args) {
  if (args.r.dtype() == DType::f64) return cg_update_typed<double>(args);
  return cg_update_typed<float>(args);
}

ops::PcgDots pcg_jacobi_update(const PcgJacobiArgs& args) {
  if (args.r.dtype() == DType::f64) return pcg_jacobi_typed<double>(args);
  return pcg_jacobi_typed<float>(args);
}

void xpay(const XpayArgs& args) {
  if (args.p.dtype() == DType::f64) {
    xpay_typed<double>(args);
  } else {
    xpay_typed<float>(args);
  }
}

}  // namespace tenax::kernels::cuda
