/// The CUDA launch of a grid kernel (grid_kernel.hpp includes it when nvcc compiles the file that
/// instantiates the kernel): one thread per point, a grid-stride loop, on the stream of the
/// device's context; launch errors go through Context::check, so a sticky fault poisons the
/// context and raises DeviceFaultError. @file
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tenax/core/context.hpp"
#include "tenax/core/device.hpp"

namespace tenax::kernels::cuda::detail {

/// Every point of rows [row_begin, row_begin + rows) of the sweep's block.
template <class Sweep>
__global__ void grid_sweep_kernel(Sweep sweep, std::int64_t row_begin, std::int64_t points) {
  const std::int64_t per_row = sweep.geometry.row_elements();
  const std::int64_t per_line = sweep.geometry.extent[2];
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       p < points; p += stride) {
    const std::int64_t y = row_begin + p / per_row;
    const std::int64_t within = p % per_row;
    sweep.point(y, within / per_line, within % per_line);
  }
}

/// Queues the sweep of rows [row_begin, row_end) on the stream of `device`.
template <class Sweep>
void sweep_on_cuda(Device device, const Sweep& sweep, std::int64_t row_begin,
                   std::int64_t row_end) {
  constexpr int kThreads = 256;
  constexpr std::int64_t kMaxBlocks = 8192;
  const std::int64_t points = (row_end - row_begin) * sweep.geometry.row_elements();
  if (points <= 0) return;
  tenax::cuda::Context& context = tenax::cuda::context(device);
  context.activate();
  const auto stream = static_cast<cudaStream_t>(context.stream().handle);
  const auto blocks = static_cast<unsigned>(
      std::clamp<std::int64_t>((points + kThreads - 1) / kThreads, 1, kMaxBlocks));
  grid_sweep_kernel<<<blocks, kThreads, 0, stream>>>(sweep, row_begin, points);
  context.check(static_cast<int>(cudaGetLastError()), "grid kernel launch");
}

}  // namespace tenax::kernels::cuda::detail
