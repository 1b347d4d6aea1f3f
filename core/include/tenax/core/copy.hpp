/// Byte copies between any two devices. Host<->CUDA copies of pageable memory are staged through
/// pinned buffers so that they run at full link speed. @file
#pragma once

#include <cstddef>

#include "tenax/core/device.hpp"
#include "tenax/core/stream.hpp"

namespace tenax {

/// Copies `bytes` bytes from `src` on `src_device` to `dst` on `dst_device` and returns when the
/// destination holds them (synchronous), except between two places on one CUDA device: that
/// copy is enqueued on the device's context stream, where every later use through tenax (a
/// kernel, a copy to the host) is ordered after it. Nothing happens for `bytes` == 0. A copy
/// between two CPU pointers is a memmove (the ranges may overlap); any other pair goes to
/// cuda::copy_bytes, which orders the copy after the work queued on the devices' context streams.
/// Throws NotCompiledError for CUDA devices in a build without CUDA, EnvironmentError when a CUDA
/// device does not exist or CUDA is unusable, DeviceFaultError on a device failure.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                std::size_t bytes);

}  // namespace tenax
