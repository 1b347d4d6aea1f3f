// Launch helpers for the grid-stride linear-algebra kernels of kernels/cuda (private to this
// folder).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tenax/core/context.hpp"

namespace tenax::kernels::cuda::linalg_launch {

inline constexpr int kBlockThreads = 256;

// Blocks for n work items with a grid-stride loop: enough to fill the device, never more than
// the items need.
inline unsigned grid_blocks(std::int64_t n) {
  const std::int64_t blocks = (n + kBlockThreads - 1) / kBlockThreads;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, std::int64_t{1} << 20));
}

inline cudaStream_t stream_of(tenax::cuda::Context& context) {
  return static_cast<cudaStream_t>(context.stream().handle);
}

// Reports a failed launch (bad configuration, or a sticky error from earlier work).
inline void check_launch(tenax::cuda::Context& context, const char* kernel) {
  context.check(static_cast<int>(cudaGetLastError()), kernel);
}

}  // namespace tenax::kernels::cuda::linalg_launch
