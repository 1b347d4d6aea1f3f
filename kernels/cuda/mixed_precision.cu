// CUDA backend of the mixed-precision checks find_nonfinite and unscale_and_measure, running the
// bodies of elementwise_bodies.hpp (the ones the CPU backend runs).
//
// find_nonfinite: a grid-stride pass; each warp sums its threads' counts and takes the smallest
// index by shuffles, then adds them with one atomicAdd per count and an atomicMin for the index.
// Counts and the minimum are exact in any order, so they equal the CPU backend's.
//
// unscale_and_measure: the fixed order of reduce_bodies.hpp, as reduce.cu folds its maps: a group
// of kReduceLanes threads per reduction block (thread j is lane j), a shuffle halving tree per
// block, then one thread block per result combines the block partials level by level. The sum of
// squares is therefore the CPU backend's bits (and ops::dot(t, t)'s).
#include <algorithm>
#include <cstdint>

#include "launch.cuh"
#include "tenax/kernels/detail/dispatch.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"
#include "tenax/kernels/elementwise_bodies.hpp"
#include "tenax/kernels/reduce_bodies.hpp"

namespace tenax::kernels::cuda {
namespace {

constexpr int kReduceThreads = 256;
constexpr int kGroupsPerBlock = kReduceThreads / kReduceLanes;
static_assert(32 % kReduceLanes == 0, "a lane group lies within one warp");
constexpr std::int64_t kMaxReduceGrid = 1 << 20;
constexpr int kCombineThreads = 1024;
constexpr long long kNoIndex = 0x7fffffffffffffffLL;

// ---- find_nonfinite ----

// counts[0] = NaNs, counts[1] = infinities, first[0] = smallest index of either (kNoIndex when
// none); all three initialised by the caller.
template <class Map>
__global__ void nonfinite_kernel(Map map, std::int64_t n, unsigned long long* counts,
                                 long long* first) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  unsigned long long nans = 0;
  unsigned long long infs = 0;
  long long lowest = kNoIndex;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const int kind = map(i);
    nans += kind == 1 ? 1 : 0;
    infs += kind == 2 ? 1 : 0;
    if (kind != 0 && i < lowest) lowest = i;
  }
  // Every thread of the (full, 256-thread) block reaches the shuffles.
  for (int s = 16; s > 0; s /= 2) {
    nans += __shfl_down_sync(0xffffffffu, nans, s);
    infs += __shfl_down_sync(0xffffffffu, infs, s);
    const long long other = __shfl_down_sync(0xffffffffu, lowest, s);
    lowest = other < lowest ? other : lowest;
  }
  if (threadIdx.x % 32 == 0) {
    if (nans != 0) atomicAdd(&counts[0], nans);
    if (infs != 0) atomicAdd(&counts[1], infs);
    if (lowest != kNoIndex) atomicMin(first, lowest);
  }
}

__global__ void nonfinite_init_kernel(unsigned long long* counts, long long* first) {
  counts[0] = 0;
  counts[1] = 0;
  *first = kNoIndex;
}

// ---- unscale_and_measure ----

// Steps 2-3: partials[b] (squares) and partials[blocks + b] (non-finite counts) for every
// reduction block b.
template <class Body>
__global__ void __launch_bounds__(kReduceThreads)
    measure_blocks_kernel(Body body, std::int64_t n, std::int64_t blocks, double* partials) {
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
    double squares = 0.0;
    double nonfinite = 0.0;
    for (std::int64_t i = begin + lane; i < end; i += kReduceLanes) {
      const MeasureTerms terms = body(i);
      squares += terms.square;
      nonfinite += terms.nonfinite;
    }
    for (int s = kReduceLanes / 2; s > 0; s /= 2) {
      squares += __shfl_down_sync(0xffffffffu, squares, s, kReduceLanes);
      nonfinite += __shfl_down_sync(0xffffffffu, nonfinite, s, kReduceLanes);
    }
    if (lane == 0 && b < blocks) {
      partials[b] = squares;
      partials[blocks + b] = nonfinite;
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

}  // namespace

ops::NonfiniteReport find_nonfinite(const Tensor& x) {
  return kernels::detail::dispatch_float(x.dtype(), "find_nonfinite", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::int64_t n = x.numel();
    const auto* data = static_cast<const S*>(x.data());
    const detail::Launch launch(x.device());
    // [nan count | inf count | first index]
    const Tensor scratch = Tensor::empty({3}, DType::i64, x.device());
    auto* counts = static_cast<unsigned long long*>(scratch.data());
    auto* first = reinterpret_cast<long long*>(counts + 2);
    nonfinite_init_kernel<<<1, 1, 0, launch.stream>>>(counts, first);
    launch.check("find_nonfinite kernel");
    nonfinite_kernel<<<detail::grid_for(n), detail::kThreads, 0, launch.stream>>>(
        NonfiniteKindMap<S>{data}, n, counts, first);
    launch.check("find_nonfinite kernel");
    long long host[3] = {0, 0, kNoIndex};
    launch.check(cudaMemcpyAsync(host, counts, sizeof(host), cudaMemcpyDeviceToHost, launch.stream),
                 "cudaMemcpyAsync");
    launch.check(cudaStreamSynchronize(launch.stream), "cudaStreamSynchronize");
    ops::NonfiniteReport report;
    report.nan_count = host[0];
    report.inf_count = host[1];
    if (host[2] != kNoIndex) {
      report.first_index = host[2];
      S value;
      launch.check(
          cudaMemcpyAsync(&value, data + host[2], sizeof(S), cudaMemcpyDeviceToHost, launch.stream),
          "cudaMemcpyAsync");
      launch.check(cudaStreamSynchronize(launch.stream), "cudaStreamSynchronize");
      report.first_value = static_cast<double>(load(value));
    }
    return report;
  });
}

ops::UnscaleReport unscale_and_measure(const Tensor& t, double inv_scale) {
  return kernels::detail::dispatch_float(t.dtype(), "unscale_and_measure", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::int64_t n = t.numel();
    const detail::Launch launch(t.device());
    const std::int64_t blocks = reduce_block_count(n);
    // [partials (2 * blocks) | ping-pong space (2 * blocks) | results (2)]
    const Tensor scratch = Tensor::empty({4 * blocks + 2}, DType::f64, t.device());
    double* partials = static_cast<double*>(scratch.data());
    double* result = partials + 4 * blocks;
    const UnscaleMeasureBody<S> body{static_cast<S*>(t.data()),
                                     static_cast<compute_t<S>>(inv_scale), inv_scale != 1.0};
    const auto grid = static_cast<unsigned>(
        std::min((blocks + kGroupsPerBlock - 1) / kGroupsPerBlock, kMaxReduceGrid));
    measure_blocks_kernel<<<grid, kReduceThreads, 0, launch.stream>>>(body, n, blocks, partials);
    launch.check("unscale_and_measure kernel");
    combine_partials_kernel<<<2, kCombineThreads, 0, launch.stream>>>(
        partials, partials + 2 * blocks, blocks, result);
    launch.check("unscale_and_measure kernel");
    double host[2] = {0.0, 0.0};
    launch.check(cudaMemcpyAsync(host, result, sizeof(host), cudaMemcpyDeviceToHost, launch.stream),
                 "cudaMemcpyAsync");
    launch.check(cudaStreamSynchronize(launch.stream), "cudaStreamSynchronize");
    ops::UnscaleReport report;
    report.sum_of_squares = host[0];
    report.nonfinite_count = static_cast<std::int64_t>(host[1]);
    return report;
  });
}

}  // namespace tenax::kernels::cuda
