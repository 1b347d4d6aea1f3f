// The fixed reduction order of reduce_bodies.hpp on the GPU, shared by reduce.cu (one map),
// krylov.cu (the dot products of a fused update) and mixed_precision.cu (sum of squares and
// non-finite count): a group of kReduceLanes threads per reduction block (thread j of the group
// is lane j, so adjacent threads read adjacent elements), a shuffle halving tree per block, then
// one thread block per result combines the block partials level by level. Every operation happens
// in the CPU backend's order, so the results are its bits. Private to kernels/cuda.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "launch.cuh"
#include "tenax/kernels/detail/reduce_bodies.hpp"

namespace tenax::kernels::cuda::detail {

using kernels::ReduceTerms;

inline constexpr int kReduceThreads = 256;
inline constexpr int kGroupsPerBlock = kReduceThreads / kReduceLanes;
static_assert(32 % kReduceLanes == 0, "a lane group lies within one warp");
inline constexpr std::int64_t kMaxReduceGrid = 1 << 20;
inline constexpr int kCombineThreads = 1024;

// Steps 2-3 for every reduction block b: partials[k * blocks + b] is the block's partial of
// reduction k. terms(i) returns the K values of element i in `v` (a ReduceTerms<K>, or the
// KrylovTerms<K> of krylov_bodies.hpp), and may update element i as it goes.
template <int K, class Terms, class Combine>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_blocks_kernel(Terms terms, Combine f, std::int64_t n, std::int64_t blocks,
                         double* partials) {
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
    for (int k = 0; k < K; ++k) acc[k] = Combine::identity();
    for (std::int64_t i = begin + lane; i < end; i += kReduceLanes) {
      const auto t = terms(i);
      for (int k = 0; k < K; ++k) acc[k] = f(acc[k], t.v[k]);
    }
    for (int s = kReduceLanes / 2; s > 0; s /= 2) {
      for (int k = 0; k < K; ++k) {
        acc[k] = f(acc[k], __shfl_down_sync(0xffffffffu, acc[k], s, kReduceLanes));
      }
    }
    if (lane == 0 && b < blocks) {
      for (int k = 0; k < K; ++k) partials[k * blocks + b] = acc[k];
    }
  }
}

// Step 4: thread block k combines partials[k * m .. (k + 1) * m), ping-ponging with the same
// range of `spare`, and writes the result to result[k].
template <class Combine>
__global__ void combine_partials_kernel(double* partials, double* spare, std::int64_t m, Combine f,
                                        double* result) {
  double* src = partials + blockIdx.x * m;
  double* dst = spare + blockIdx.x * m;
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
  if (threadIdx.x == 0) result[blockIdx.x] = m == 0 ? Combine::identity() : src[0];
}

// Folds terms(i).v[k] for i in [0, n) with f, in the fixed order, for each of the K reductions
// and returns the K results (the identity when n == 0); waits for the stream of `device`. `what`
// names the kernel in launch errors. Inside a ShardedReductionScope a shardable reduction copies
// its block partials to the host and combines them with every rank's (finish_reduction).
template <int K, bool kShardable = true, class Terms, class Combine>
ReduceTerms<K> reduce_terms(Device device, std::int64_t n, const Terms& terms, Combine f,
                            const char* what) {
  ReduceTerms<K> host;
  for (int k = 0; k < K; ++k) host.v[k] = Combine::identity();
  if (n == 0) {
    // An empty shard still takes part in its ranks' reduction.
    if (kShardable && ShardedReductionScope::active() != nullptr)
      return finish_reduction<K>(nullptr, 0, 0, f);
    return host;
  }
  const Launch launch(device);
  const std::int64_t blocks = reduce_block_count(n);
  // [partials (K * blocks) | ping-pong space (K * blocks) | results (K)], kept per device.
  static_assert(K <= static_cast<int>(SyncScratch::kHostSlotDoubles));
  SyncScratch& scratch = SyncScratch::of(device);
  std::unique_lock<std::mutex> hold = scratch.lock();
  double* partials = scratch.device_doubles(launch, static_cast<std::size_t>(2 * K * blocks + K));
  double* result = partials + 2 * K * blocks;
  const auto grid = static_cast<unsigned>(
      std::min((blocks + kGroupsPerBlock - 1) / kGroupsPerBlock, kMaxReduceGrid));
  reduce_blocks_kernel<K>
      <<<grid, kReduceThreads, 0, launch.stream>>>(terms, f, n, blocks, partials);
  launch.check(what);
  if (kShardable && ShardedReductionScope::active() != nullptr) {
    std::vector<double> host_partials(static_cast<std::size_t>(K * blocks));
    launch.check(cudaMemcpyAsync(host_partials.data(), partials, K * blocks * sizeof(double),
                                 cudaMemcpyDeviceToHost, launch.stream),
                 "cudaMemcpyAsync");
    launch.check(cudaStreamSynchronize(launch.stream), "cudaStreamSynchronize");
    // Combining with the other ranks waits for them, and ranks may be threads sharing this
    // device (and its scratch): let go of the scratch first.
    hold.unlock();
    return finish_reduction<K>(host_partials.data(), blocks, n, f);
  }
  combine_partials_kernel<<<K, kCombineThreads, 0, launch.stream>>>(partials, partials + K * blocks,
                                                                    blocks, f, result);
  launch.check(what);
  double* slot = scratch.host_slot(launch);
  launch.check(
      cudaMemcpyAsync(slot, result, K * sizeof(double), cudaMemcpyDeviceToHost, launch.stream),
      "cudaMemcpyAsync");
  launch.check(cudaStreamSynchronize(launch.stream), "cudaStreamSynchronize");
  std::copy(slot, slot + K, host.v);
  return host;
}

}  // namespace tenax::kernels::cuda::detail
