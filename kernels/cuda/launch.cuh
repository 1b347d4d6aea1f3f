// CUDA launchers for the bodies of elementwise_bodies.hpp: grid-stride loops on the stream of
// the tensors' device context. Launch errors go through Context::check, so a sticky fault
// poisons the context. Private to kernels/cuda.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>

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

// Per-device scratch of the synchronous kernels (reductions, any-of scans): device memory that
// grows to the largest request and is kept, and a pinned host slot for the results. A call
// takes nothing from the memory pool after the first of its size (Workload::commit_step() runs
// where the pool refuses allocations) and copies its result back without pageable staging.
// The calls wait for their stream before they return, so one buffer per device serves every
// caller in turn, under lock() from the first launch to the stream synchronize.
class SyncScratch {
 public:
  static constexpr std::size_t kHostSlotDoubles = 64;
  [[nodiscard]] static SyncScratch& of(Device device);
  [[nodiscard]] std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }
  // At least `count` doubles of device memory (the lock held; the contents are undefined).
  [[nodiscard]] double* device_doubles(const Launch& launch, std::size_t count);
  // kHostSlotDoubles doubles of pinned host memory (the lock held).
  [[nodiscard]] double* host_slot(const Launch& launch);

 private:
  std::mutex mutex_;
  double* device_ = nullptr;
  std::size_t capacity_ = 0;
  double* host_ = nullptr;
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
  SyncScratch& scratch = SyncScratch::of(device);
  const std::unique_lock<std::mutex> hold = scratch.lock();
  int* found = reinterpret_cast<int*>(scratch.device_doubles(launch, 1));
  int* host = reinterpret_cast<int*>(scratch.host_slot(launch));
  launch.check(cudaMemsetAsync(found, 0, sizeof(int), launch.stream), "cudaMemsetAsync");
  for_each_any_kernel<<<grid_for(n), kThreads, 0, launch.stream>>>(body, n, found);
  launch.check(what);
  launch.check(cudaMemcpyAsync(host, found, sizeof(int), cudaMemcpyDeviceToHost, launch.stream),
               "cudaMemcpyAsync");
  launch.check(cudaStreamSynchronize(launch.stream), "cudaStreamSynchronize");
  return *host != 0;
}

}  // namespace tenax::kernels::cuda::detail
