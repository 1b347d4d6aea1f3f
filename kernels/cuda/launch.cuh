// CUDA launchers for the bodies of elementwise_bodies.hpp: grid-stride loops on the stream of
// the tensors' device context. Launch errors go through Context::check, so a sticky fault
// poisons the context. Private to kernels/cuda.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tenax/core/context.hpp"
#include "tenax/core/tensor.hpp"

namespace tenax::kernels::cuda::detail {

inline constexpr int kThreads = 256;
// Enough resident blocks to saturate the memory system of current GPUs; the grid-stride loop
// covers larger arrays.
inline constexpr std::int64_t kMaxBlocks = 8192;

// The active context of `device`, with its stream.
struct Launch {
  tenax::cuda::Context& context;
  cudaStream_t stream;

  explicit Launch(Device device)
      : context(tenax::cuda::context(device)),
        stream(static_cast<cudaStream_t>(context.stream().handle)) {
    context.activate();
  }

  // Raises the error of the last launch or CUDA call, if any, through the context.
  void check(const char* what) const { context.check(static_cast<int>(cudaGetLastError()), what); }
  void check(cudaError_t status, const char* what) const {
    context.check(static_cast<int>(status), what);
  }
};

[[nodiscard]] inline unsigned grid_for(std::int64_t n) {
  return static_cast<unsigned>(
      std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

template <class Body>
__global__ void for_each_kernel(Body body, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    body(i);
  }
}

// Sets *found to 1 when body(i) returns nonzero for some i; every element is visited.
template <class Body>
__global__ void for_each_any_kernel(Body body, std::int64_t n, int* found) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  int any = 0;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    any |= body(i);
  }
  if (__syncthreads_or(any) != 0 && threadIdx.x == 0) *found = 1;
}

// body(i) for every i in [0, n), enqueued on the stream of `device`.
template <class Body>
void for_each(Device device, std::int64_t n, const Body& body, const char* what) {
  if (n == 0) return;
  const Launch launch(device);
  for_each_kernel<<<grid_for(n), kThreads, 0, launch.stream>>>(body, n);
  launch.check(what);
}

// Runs body(i) for every i in [0, n) and returns whether any returned nonzero (waits for the
// stream).
template <class Body>
bool for_each_any(Device device, std::int64_t n, const Body& body, const char* what) {
  if (n == 0) return false;
  const Launch launch(device);
  const Tensor flag = Tensor::empty({1}, DType::i32, device);
  int* found = static_cast<int*>(flag.data());
  launch.check(cudaMemsetAsync(found, 0, sizeof(int), launch.stream), "cudaMemsetAsync");
  for_each_any_kernel<<<grid_for(n), kThreads, 0, launch.stream>>>(body, n, found);
  launch.check(what);
  int host = 0;
  launch.check(cudaMemcpyAsync(&host, found, sizeof(int), cudaMemcpyDeviceToHost, launch.stream),
               "cudaMemcpyAsync");
  launch.check(cudaStreamSynchronize(launch.stream), "cudaStreamSynchronize");
  return host != 0;
}

}  // namespace tenax::kernels::cuda::detail
