// Byte copies between any two devices. Host<->CUDA copies of pageable memory are staged through
// pinned buffers so that they run at full link speed.
#pragma once

#include <cstddef>

#include "tenax/core/device.hpp"
#include "tenax/core/stream.hpp"

namespace tenax {

// Copies `bytes` bytes and returns when the destination holds them. Throws NotCompiledError for
// CUDA devices in a build without CUDA, DeviceFaultError on device failure.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                std::size_t bytes);

}  // namespace tenax
