// CUDA backend of the mixed-precision checks find_nonfinite and unscale_and_measure, running the
// bodies of elementwise_bodies.hpp (the ones the CPU backend runs).
//
// find_nonfinite: a grid-stride pass; each warp sums its threads' counts and takes the smallest
// index by shuffles, then adds them with one atomicAdd per count and an atomicMin for the index.
// Counts and the minimum are exact in any order, so they equal the CPU backend's.
//
// unscale_and_measure: the fixed order of reduce_bodies.hpp, folded by reduce_launch.cuh as
// reduce.cu folds its maps: a group of kReduceLanes threads per reduction block (thread j is lane
// j), a shuffle halving tree per block, then one thread block per result combines the block
// partials level by level. The sum of squares is therefore the CPU backend's bits (and
// ops::dot(t, t)'s).
#include <cstdint>

#include "launch.cuh"
#include "reduce_launch.cuh"
#include "tenax/kernels/detail/dispatch.hpp"
#include "tenax/kernels/detail/elementwise_bodies.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"

namespace tenax::kernels::cuda {
namespace {

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

// The sum-of-squares and non-finite terms of an element as the terms of two reductions.
template <class S>
struct MeasureTermsOf {
  UnscaleMeasureBody<S> body;
  TENAX_HD detail::ReduceTerms<2> operator()(std::int64_t i) const {
    const MeasureTerms t = body(i);
    return {{t.square, t.nonfinite}};
  }
};

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
    const UnscaleMeasureBody<S> body{static_cast<S*>(t.data()),
                                     static_cast<compute_t<S>>(inv_scale), inv_scale != 1.0};
    const detail::ReduceTerms<2> sums = detail::reduce_terms<2, false>(
        t.device(), n, MeasureTermsOf<S>{body}, PlusCombine{}, "unscale_and_measure kernel");
    ops::UnscaleReport report;
    report.sum_of_squares = sums.v[0];
    report.nonfinite_count = static_cast<std::int64_t>(sums.v[1]);
    return report;
  });
}

}  // namespace tenax::kernels::cuda
