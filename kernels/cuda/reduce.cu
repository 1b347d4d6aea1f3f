// CUDA backend of the reductions, in the fixed order of reduce_bodies.hpp: each reduction block
// is folded by a group of kReduceLanes threads (thread j of the group is lane j, reading 64
// contiguous bytes per step together with its group; then a shuffle halving tree), then one
// thread block combines the partials level by level. Every operation happens in the same order
// as on the CPU, so the bits are equal to the CPU backend's.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "launch.cuh"
#include "tenax/kernels/detail/dispatch.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"
#include "tenax/kernels/reduce_bodies.hpp"

namespace tenax::kernels::cuda {

namespace {

constexpr int kReduceThreads = 256;
constexpr int kGroupsPerBlock = kReduceThreads / kReduceLanes;
static_assert(32 % kReduceLanes == 0, "a lane group lies within one warp");
constexpr std::int64_t kMaxReduceGrid = 1 << 20;
constexpr int kCombineThreads = 1024;

// Steps 2-3: partials[b] for every reduction block b.
template <class Map, class Combine>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_blocks_kernel(Map map, Combine f, std::int64_t n, double* partials) {
  const int lane = static_cast<int>(threadIdx.x) % kReduceLanes;
  const int group = static_cast<int>(threadIdx.x) / kReduceLanes;
  const std::int64_t blocks = reduce_block_count(n);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kGroupsPerBlock;
  // The loop bound is uniform over the thread block, so every thread of a warp reaches the
  // shuffles; groups past the last reduction block fold nothing and write nothing.
  for (std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kGroupsPerBlock; first < blocks;
       first += stride) {
    const std::int64_t b = first + group;
    const std::int64_t begin = b * kReduceBlock;
    const std::int64_t end = begin + kReduceBlock < n ? begin + kReduceBlock : n;
    double acc = Combine::identity();
    for (std::int64_t i = begin + lane; i < end; i += kReduceLanes) acc = f(acc, map(i));
    for (int s = kReduceLanes / 2; s > 0; s /= 2) {
      acc = f(acc, __shfl_down_sync(0xffffffffu, acc, s, kReduceLanes));
    }
    if (lane == 0 && b < blocks) partials[b] = acc;
  }
}

// Step 4 in one thread block, ping-ponging between p and q; writes the result to *result.
template <class Combine>
__global__ void combine_partials_kernel(double* p, double* q, std::int64_t m, Combine f,
                                        double* result) {
  double* src = p;
  double* dst = q;
  while (m > 1) {
    const std::int64_t pairs = m / 2;
    for (std::int64_t i = threadIdx.x; i < pairs; i += blockDim.x) {
      dst[i] = f(src[2 * i], src[2 * i + 1]);
    }
    if (threadIdx.x == 0 && m % 2 != 0) dst[pairs] = src[m - 1];
    __syncthreads();  // makes this level's global writes visible to the whole block
    double* swap = src;
    src = dst;
    dst = swap;
    m = pairs + m % 2;
  }
  if (threadIdx.x == 0) *result = m == 0 ? Combine::identity() : src[0];
}

template <class Map, class Combine>
double reduce(Device device, std::int64_t n, const Map& map, Combine f, const char* what) {
  if (n == 0) return Combine::identity();
  const detail::Launch launch(device);
  const std::int64_t blocks = reduce_block_count(n);
  // [partials | ping-pong space | result]
  const Tensor scratch = Tensor::empty({2 * blocks + 1}, DType::f64, device);
  double* partials = static_cast<double*>(scratch.data());
  double* result = partials + 2 * blocks;
  const auto grid = static_cast<unsigned>(
      std::min((blocks + kGroupsPerBlock - 1) / kGroupsPerBlock, kMaxReduceGrid));
  reduce_blocks_kernel<<<grid, kReduceThreads, 0, launch.stream>>>(map, f, n, partials);
  launch.check(what);
  combine_partials_kernel<<<1, kCombineThreads, 0, launch.stream>>>(partials, partials + blocks,
                                                                    blocks, f, result);
  launch.check(what);
  double host = 0.0;
  launch.check(
      cudaMemcpyAsync(&host, result, sizeof(double), cudaMemcpyDeviceToHost, launch.stream),
      "cudaMemcpyAsync");
  launch.check(cudaStreamSynchronize(launch.stream), "cudaStreamSynchronize");
  return host;
}

}  // namespace

double sum(const Tensor& x) {
  return kernels::detail::dispatch_float(x.dtype(), "sum", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return reduce(x.device(), x.numel(), ValueMap<S>{static_cast<const S*>(x.data())},
                  PlusCombine{}, "sum kernel");
  });
}

double dot(const Tensor& x, const Tensor& y) {
  return kernels::detail::dispatch_float(x.dtype(), "dot", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return reduce(x.device(), x.numel(),
                  ProductMap<S>{static_cast<const S*>(x.data()), static_cast<const S*>(y.data())},
                  PlusCombine{}, "dot kernel");
  });
}

double nrm2(const Tensor& x) {
  return std::sqrt(kernels::detail::dispatch_float(x.dtype(), "nrm2", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return reduce(x.device(), x.numel(), SquareMap<S>{static_cast<const S*>(x.data())},
                  PlusCombine{}, "nrm2 kernel");
  }));
}

double max(const Tensor& x) {
  return kernels::detail::dispatch_float(x.dtype(), "max", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return reduce(x.device(), x.numel(), ValueMap<S>{static_cast<const S*>(x.data())}, MaxCombine{},
                  "max kernel");
  });
}

std::int64_t count_nonfinite(const Tensor& x) {
  return kernels::detail::dispatch_float(x.dtype(), "count_nonfinite", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return static_cast<std::int64_t>(reduce(x.device(), x.numel(),
                                            NonfiniteMap<S>{static_cast<const S*>(x.data())},
                                            PlusCombine{}, "count_nonfinite kernel"));
  });
}

}  // namespace tenax::kernels::cuda
