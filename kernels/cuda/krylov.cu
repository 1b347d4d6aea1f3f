// CUDA backend of the fused Krylov kernels: the *Body functors of krylov_bodies.hpp (the
// arithmetic the CPU backend runs) folded in the fixed order of reduce_bodies.hpp, as reduce.cu
// folds its maps. A reduction block is a group of kReduceLanes threads, thread j of the group
// being lane j: it updates the elements j, j + L, ... of the block (adjacent threads touch
// adjacent elements, so the accesses coalesce) and folds their dot terms; a shuffle halving tree
// ends the block, and one thread block per dot product combines the partials level by level.
// Every addition happens in the CPU's order, so the results are the CPU backend's bits.
#include <algorithm>
#include <cstdint>

#include "launch.cuh"
#include "tenax/kernels/detail/krylov_kernels.hpp"
#include "tenax/kernels/krylov_bodies.hpp"
#include "tenax/kernels/reduce_bodies.hpp"
#include "tenax/kernels/stencil_bodies.hpp"

namespace tenax::kernels::cuda {
namespace {

constexpr int kReduceThreads = 256;
constexpr int kGroupsPerBlock = kReduceThreads / kReduceLanes;
static_assert(32 % kReduceLanes == 0, "a lane group lies within one warp");
constexpr std::int64_t kMaxReduceGrid = 1 << 20;
constexpr int kCombineThreads = 1024;

// Steps 2-3 for every reduction block b: partials[k * blocks + b] is the block's partial of dot
// product k.
template <int K, class Body>
__global__ void __launch_bounds__(kReduceThreads)
    fused_blocks_kernel(Body body, std::int64_t n, std::int64_t blocks, double* partials) {
  const int lane = static_cast<int>(threadIdx.x) % kReduceLanes;
  const int group = static_cast<int>(threadIdx.x) / kReduceLanes;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kGroupsPerBlock;
  // The loop bound is uniform over the thread block, so every thread of a warp reaches the
  // shuffles; groups past the last reduction block update nothing and write nothing.
  for (std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kGroupsPerBlock; first < blocks;
       first += stride) {
    const std::int64_t b = first + group;
    const std::int64_t begin = b * kReduceBlock;
    const std::int64_t end = begin + kReduceBlock < n ? begin + kReduceBlock : n;
    double acc[K];
    for (int k = 0; k < K; ++k) acc[k] = 0.0;
    for (std::int64_t i = begin + lane; i < end; i += kReduceLanes) {
      const KrylovTerms<K> t = body(i);
      for (int k = 0; k < K; ++k) acc[k] += t.v[k];
    }
    for (int s = kReduceLanes / 2; s > 0; s /= 2) {
      for (int k = 0; k < K; ++k) acc[k] += __shfl_down_sync(0xffffffffu, acc[k], s, kReduceLanes);
    }
    if (lane == 0 && b < blocks) {
      for (int k = 0; k < K; ++k) partials[k * blocks + b] = acc[k];
    }
  }
}

// Step 4: thread block k combines partials[k * m .. (k + 1) * m), ping-ponging with the same
// range of `spare`, and writes the sum to result[k].
__global__ void combine_partials_kernel(double* partials, double* spare, std::int64_t m,
                                        double* result) {
  double* src = partials + blockIdx.x * m;
  double* dst = spare + blockIdx.x * m;
  while (m > 1) {
    const std::int64_t pairs = m / 2;
    for (std::int64_t i = threadIdx.x; i < pairs; i += blockDim.x) {
      dst[i] = src[2 * i] + src[2 * i + 1];
    }
    if (threadIdx.x == 0 && m % 2 != 0) dst[pairs] = src[m - 1];
    __syncthreads();  // makes this level's global writes visible to the whole block
    double* swap = src;
    src = dst;
    dst = swap;
    m = pairs + m % 2;
  }
  if (threadIdx.x == 0) result[blockIdx.x] = m == 0 ? 0.0 : src[0];
}

// Runs body(i) for i in [0, n) and returns its K dot products (waits for the stream).
template <int K, class Body>
KrylovTerms<K> fused_reduce(Device device, std::int64_t n, const Body& body, const char* what) {
  KrylovTerms<K> host{};
  if (n == 0) return host;
  const detail::Launch launch(device);
  const std::int64_t blocks = reduce_block_count(n);
  // [partials (K * blocks) | ping-pong space (K * blocks) | results (K)]
  const Tensor scratch = Tensor::empty({2 * K * blocks + K}, DType::f64, device);
  double* partials = static_cast<double*>(scratch.data());
  double* result = partials + 2 * K * blocks;
  const auto grid = static_cast<unsigned>(
      std::min((blocks + kGroupsPerBlock - 1) / kGroupsPerBlock, kMaxReduceGrid));
  fused_blocks_kernel<K><<<grid, kReduceThreads, 0, launch.stream>>>(body, n, blocks, partials);
  launch.check(what);
  combine_partials_kernel<<<K, kCombineThreads, 0, launch.stream>>>(partials, partials + K * blocks,
                                                                    blocks, result);
  launch.check(what);
  launch.check(
      cudaMemcpyAsync(host.v, result, K * sizeof(double), cudaMemcpyDeviceToHost, launch.stream),
      "cudaMemcpyAsync");
  launch.check(cudaStreamSynchronize(launch.stream), "cudaStreamSynchronize");
  return host;
}

template <class T, class I>
double spmv_dot_typed(const SpmvDotArgs& s) {
  const SpmvDotBody<T, I> body{s.a.row_ptr().data_as<const I>(), s.a.col_idx().data_as<const I>(),
                               s.a.values().data_as<const T>(), s.p.data_as<const T>(),
                               s.q.data_as<T>()};
  return fused_reduce<1>(s.q.device(), s.a.rows(), body, "spmv_dot kernel").v[0];
}

template <class T>
double spmv_dot_values(const SpmvDotArgs& s) {
  if (s.a.index_dtype() == DType::i64) return spmv_dot_typed<T, std::int64_t>(s);
  return spmv_dot_typed<T, std::int32_t>(s);
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
  const KrylovTerms<2> dots =
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

}  // namespace

double spmv_dot(const SpmvDotArgs& args) {
  if (args.a.dtype() == DType::f64) return spmv_dot_values<double>(args);
  return spmv_dot_values<float>(args);
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
